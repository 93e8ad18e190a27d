#!/usr/bin/env python
"""Where a cold ``anchorstream fit`` spends its CPU time, stage by stage (issue 16).

Runs ``anchorstream fit`` on quality-benchmark corpora, each time in a fresh process as
``bench_quality.py`` does, and prints the CPU seconds (user + system, every thread) of each
phase: process start (interpreter and imports, argument parsing), reading and tokenizing,
choosing the vocabulary, counting (document-term matrix and co-occurrence), the model's stages
(pairs and refine where the fit refines, rectify, anchors, recover, correlations; ``between``
is the glue between them), writing the snapshot, and how much of all that was numba loading
its compiled kernels from the on-disk cache. The phases come from the manifest's
``extra.cpu_seconds``; the numba share is measured by timing numba's dispatcher in the child
process; the total from the operating system. The last column gives the rectifier's
iterations and, where the fit refines, its EM passes (``extra.fit``).

Run from the repository root, in the benchmark environment::

    benchmarks/.cache/venv/bin/python benchmarks/profile_fit.py --corpora medium,long
    ... --repeat 3 --args='--rectify-method lowrank' --topics 50
    ... --store   # fit --store on a store of the training file (ingested first, not timed)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PHASES = ("start", "read", "vocabulary", "count", "between", "pairs", "rectify", "anchors",
          "recover", "correlations", "refine", "write")


def child(argv: list[str]) -> int:
    """``anchorstream fit`` in this process, timing numba's loads of compiled kernels."""
    started = time.process_time()  # the interpreter and this script's imports
    out = Path(argv[0])
    # The command's own environment before numba imports NumPy, as `anchorstream` sets it.
    from daemon.cli import prepare_process

    prepare_process()
    from numba.core.dispatcher import Dispatcher

    spent = [0.0]
    original = Dispatcher._compile_for_args

    def timed(self, *args, **kws):
        t0 = time.process_time()
        try:
            return original(self, *args, **kws)
        finally:
            spent[0] += time.process_time() - t0

    Dispatcher._compile_for_args = timed
    numba_import = time.process_time() - started
    import atexit

    from daemon.cli import entry

    # The command ends the process as `anchorstream` does (daemon.cli.entry), running the exit
    # handlers first: the figures are written by one.
    atexit.register(lambda: out.write_text(
        json.dumps({"numba_load": spent[0], "numba_import": numba_import})))
    sys.argv = ["anchorstream", *argv[1:]]
    entry()
    return 0


def ingest(corpus, V: int, store: Path) -> None:
    """The training file ingested into a new store of ``V`` words (not timed)."""
    from benchmarks.quality.run import anchorstream_command

    base, env = anchorstream_command()
    subprocess.run([*base, "ingest", "--store", str(store), "--quiet", "--capacity", str(V),
                    "--stopwords", corpus.stopwords, str(corpus.train_path)],
                   env=env, cwd=REPO, check=True, capture_output=True)


def run_once(corpus, K: int, V: int, args: list[str], store: Path | None = None) -> dict:
    from benchmarks.quality.run import anchorstream_command, children_cpu

    base, env = anchorstream_command()
    work = Path(tempfile.mkdtemp(prefix="profile-"))
    try:
        source = (["--store", str(store)] if store is not None else
                  ["--input", str(corpus.train_path), "--text-field", "text", "--vocab-size",
                   str(V), "--stopwords", corpus.stopwords])
        cmd = [sys.executable, __file__, "--child", str(work / "numba.json"), "fit",
               *source, "--topics", str(K), "--seed", "0", "--out", str(work / "snap"),
               "--quiet", *args]
        cpu0, t0 = children_cpu(), time.perf_counter()
        subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True)
        wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
        extra = json.loads((work / "snap" / "manifest.json").read_text())["extra"]
        phases = dict(extra["cpu_seconds"])
        numba = json.loads((work / "numba.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # Writing is what the process spent after the manifest's last mark (and exit).
    phases["write"] = cpu - sum(phases.values())
    fit = extra.get("fit") or {}
    # The refinement's EM passes follow its path: the same fit took 51 or 69 passes on `long`
    # at K = 50 after a change that moved its start by 1e-3 (session 57), a second of CPU.
    iterations = str(fit.get("rectify_iterations"))
    if fit.get("refine_iterations") is not None:
        iterations += f" / {fit['refine_iterations']} EM"
    return {"wall": wall, "cpu": cpu, "phases": phases, "numba_load": numba["numba_load"],
            "iterations": iterations}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="medium,long")
    p.add_argument("--topics", "-k", type=int, default=None, help="K (default: the corpus's)")
    p.add_argument("--vocab-size", type=int, default=None)
    p.add_argument("--repeat", type=int, default=1, help="runs per corpus; the median is shown")
    p.add_argument("--args", default="", help="extra `anchorstream fit` arguments, with '='")
    p.add_argument("--store", action="store_true",
                   help="profile `fit --store` on a store the training file was ingested into "
                        "first (`ingest --capacity V`, not timed) instead of `fit --input`")
    a = p.parse_args(argv)
    from benchmarks.quality.corpora import load
    from benchmarks.quality.run import compile_sources

    compile_sources()  # as installed: no timed run compiles this checkout's modules
    print(f"load average {os.getloadavg()[0]:.1f}; `anchorstream fit` {a.args or '(defaults)'}",
          flush=True)
    cols = PHASES + ("total", "numba load")
    print(f"{'corpus':8s} {'K':>3s} " + " ".join(f"{c[:8]:>8s}" for c in cols)
          + "  iterations (rectify / refine)")
    for name in [x for x in a.corpora.split(",") if x]:
        corpus = load(name, verbose=False)
        K, V = a.topics or corpus.n_topics, a.vocab_size or corpus.vocab_size
        with tempfile.TemporaryDirectory(prefix="profile-store-") as tmp:
            store = Path(tmp) / "store" if a.store else None
            if store is not None:
                ingest(corpus, V, store)
            runs = [run_once(corpus, K, V, shlex.split(a.args), store)
                    for _ in range(a.repeat)]
        runs.sort(key=lambda r: r["cpu"])
        r = runs[len(runs) // 2]
        vals = [r["phases"].get(c, 0.0) for c in PHASES] + [r["cpu"], r["numba_load"]]
        print(f"{name:8s} {K:3d} " + " ".join(f"{v:8.2f}" for v in vals)
              + f"  {r['iterations']}   (CPU of every run: "
              + " / ".join(f"{x['cpu']:.2f}" for x in runs) + ")", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
