"""Fit ``anchorstream fit`` on a quality corpus and score it: the loop for quick experiments.

From Python (the repository root on ``sys.path``)::

    from benchmarks.quality.run import run
    row = run("tech", ["--rectify-tol", "1e-4"])
    row["npmi"], row["unique"], row["dead"], row["seconds"]

From the shell (one row per corpus)::

    python -m benchmarks.quality.run --corpus tech --args='--rectify-tol 1e-4'
    python -m benchmarks.quality.run --corpus short,synth30-30k --json

``anchorstream fit`` runs as a subprocess of this interpreter (``python -m daemon``) with
this checkout first on ``PYTHONPATH``, so the code of the working tree is what is measured,
whatever is installed. The corpus files, the held-out index and its document frequencies are
cached, so a run costs the fit plus well under a second of scoring.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from benchmarks.quality.corpora import REPO, Corpus, cache_root, load
from benchmarks.quality.metrics import (HeldoutIndex, evaluate, read_snapshot_model,
                                        read_snapshot_top_words)


def anchorstream_command(override: str | None = None) -> tuple[list[str], dict]:
    """The command that runs this checkout's CLI and its environment."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if override:
        return shlex.split(override), env
    return [sys.executable, "-m", "daemon"], env


def children_cpu() -> float:
    """User + system CPU seconds of the finished children of this process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@lru_cache(maxsize=None)
def _corpus(name: str) -> Corpus:
    return load(name)


@lru_cache(maxsize=None)
def heldout_index(name: str) -> HeldoutIndex:
    return HeldoutIndex.for_corpus(_corpus(name))


def run(corpus: str, args: Sequence[str] = (), *, topics: int | None = None,
        vocab_size: int | None = None, seed: int = 0, command: str | None = None,
        keep: Path | None = None, train: Path | None = None,
        store: Path | None = None) -> dict:
    """Fit ``anchorstream fit`` on ``corpus``'s training file and return its metrics.

    Parameters
    ----------
    corpus : str
        A name :func:`benchmarks.quality.corpora.load` accepts.
    args : sequence of str
        Extra ``anchorstream fit`` arguments, e.g. ``["--rectify-tol", "1e-4"]``.
    topics, vocab_size : int, optional
        Default: the corpus's suggested K and V.
    seed : int
    command : str, optional
        Another command for the CLI (e.g. ``".venv/bin/anchorstream"``).
    keep : Path, optional
        Write the snapshot there (must not exist) instead of a temporary directory.
    train : Path, optional
        Fit this JSON-lines file instead of the corpus's training file (a subsample of it,
        say); the corpus's held-out documents score it all the same.
    store : Path, optional
        Fit this store (``fit --store``, its own vocabulary) instead of a file.

    Returns
    -------
    dict
        ``corpus``, ``args``, ``status`` (``"ok"`` or ``"failed: ..."``), ``seconds`` (wall,
        process start to snapshot read back), ``cpu_seconds`` (user + system, all threads),
        the metrics of :func:`benchmarks.quality.metrics.evaluate` (``npmi``, ``unique``,
        ``dead``, ``l1``, ``top_words``, ...), ``stages`` (seconds per stage from the
        snapshot manifest), ``rectify_iterations``, ``estimate`` (``TopicFit.estimate``),
        ``n_topics``, ``vocab_size``, ``command``.
    """
    c = _corpus(corpus)
    K = topics or c.n_topics
    V = vocab_size or c.vocab_size
    base, env = anchorstream_command(command)
    scratch = Path(tempfile.mkdtemp(prefix="fit-", dir=cache_root()))
    out = keep or scratch / "snapshot"
    # No --stopwords: the default (auto) must choose the corpus's list; the row says which
    # it chose (``stopwords``), and the peers are given the corpus's.
    train_path = Path(train) if train is not None else c.train_path
    source = (["--store", str(store)] if store is not None else
              ["--input", str(train_path), "--text-field", "text", "--vocab-size", str(V)])
    cmd = base + ["fit", *source, "--topics", str(K), "--seed", str(seed),
                  "--out", str(out), "--quiet", *args]
    row = {"corpus": corpus, "args": list(args), "n_topics": K, "vocab_size": V,
           "command": " ".join(shlex.quote(x) for x in ["anchorstream"] + cmd[len(base):])
           .replace(str(train_path), "train.jsonl").replace(str(out), "OUT")}
    try:
        cpu0, t0 = children_cpu(), time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            row["status"] = f"failed (exit {proc.returncode}): " + " / ".join(tail)
            return row
        vocabulary, topic_word, prevalence = read_snapshot_model(out)
        row["seconds"] = time.perf_counter() - t0
        row["cpu_seconds"] = children_cpu() - cpu0
        manifest = json.loads((out / "manifest.json").read_text())
        extra = manifest.get("extra") or {}
        row["stages"] = extra.get("timings_seconds", {})
        row["rectify_iterations"] = (extra.get("fit") or {}).get("rectify_iterations")
        # Which of its estimates a method with two kept (TSVD, DDP, RP), if any.
        row["estimate"] = (extra.get("fit") or {}).get("estimate")
        # Scored on the top words the snapshot publishes (ranked above the background words).
        row.update(evaluate(vocabulary, topic_word, prevalence, heldout_index(corpus), c.truth,
                            top=read_snapshot_top_words(out),
                            mean_length=c.description.get("mean_tokens_anchorstream")))
        row["background_words"] = extra.get("background_words")
        row["stopwords"] = (manifest.get("settings") or {}).get("stopwords")
        row["status"] = "ok"
        return row
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def compile_sources() -> None:
    """Byte-compile this checkout's packages, as installing a package does for the peers'.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (this machine, many container images) Python
    never writes the bytecode of a checkout's modules, and every timed ``anchorstream`` process
    compiled its ~80 modules from source again: 0.05-0.09 CPU s a fit (session 57), a cost an
    installed anchorstream does not pay and the peers, installed by pip, never paid."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", "anchorstream", "daemon"],
                   env=env, cwd=REPO, stdout=subprocess.DEVNULL, check=False)


def warm_up(candidates: Sequence[Sequence[str]] = ((),), corpus: str = "medium") -> None:
    """This checkout byte-compiled (:func:`compile_sources`), then small fits (K = 10,
    V = 1000) of every candidate on a small real corpus, so that numba's on-disk cache holds
    every kernel those settings use before anything is timed (a toy corpus left some kernels
    uncompiled: the first timed fit then paid 30 s of compilation)."""
    compile_sources()
    for args in candidates:
        run(corpus, list(args), topics=10, vocab_size=1000)


def format_row(row: dict) -> str:
    args = " ".join(row["args"]) or "(defaults)"
    if row.get("status") != "ok":
        return f"{row['corpus']:<14} {args:<28} {row.get('status')}"
    l1 = "" if row["l1"] != row["l1"] else f"  l1 {row['l1']:.3f}"
    return (f"{row['corpus']:<14} {args:<28} NPMI {row['npmi']:+.4f}  unique "
            f"{row['unique']:.3f}  dead {row['dead']:>3}/{row['n_topics']}{l1}  "
            f"{row['seconds']:.1f} s ({row['cpu_seconds']:.1f} CPU s)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Fit anchorstream on quality corpora, print metrics.")
    p.add_argument("--corpus", required=True,
                   help="comma-separated corpus names (benchmarks.quality.corpora.NAMES)")
    p.add_argument("--args", default="",
                   help="extra `anchorstream fit` arguments; write it with '=', e.g. "
                        "--args='--rectify-tol 1e-4'")
    p.add_argument("--topics", "-k", type=int, default=None, help="K (default: the corpus's)")
    p.add_argument("--vocab-size", type=int, default=None, help="V (default: the corpus's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print each row as JSON")
    p.add_argument("--show-topics", type=int, default=0, help="print this many topics")
    a = p.parse_args(argv)
    for name in [x.strip() for x in a.corpus.split(",") if x.strip()]:
        row = run(name, shlex.split(a.args), topics=a.topics, vocab_size=a.vocab_size,
                  seed=a.seed)
        if a.json:
            print(json.dumps(row))
        else:
            print(format_row(row), flush=True)
            for k, words in enumerate(row.get("top_words", [])[: a.show_topics]):
                print(f"    {k}: {' '.join(words)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
