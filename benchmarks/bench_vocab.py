"""Peak memory and time against the vocabulary size V: anchorstream's low-rank path and anchortopics.

For each V (default 5k, 10k, 20k, 50k), K = 100 topics, in one run:

- ``anchorstream fit --input --rectify-method lowrank`` (file in, snapshot out), and
- anchortopics' ``OTFR`` (package defaults) on the same bag of words (anchorstream's tokenizer
  and ``select_vocabulary`` with the same ``--min-df`` / ``--max-df``), file in, topics out,

each in a fresh process under ``/usr/bin/time -v`` (peak resident memory, wall and CPU time)
and ``prlimit --as`` (a process over the cap fails instead of starving the machine). Then the
daemon's path at the largest V: ``anchorstream ingest`` into a store of that capacity,
``anchorstream fit --store --rectify-method lowrank`` and one refresh of the daemon's
:class:`~daemon.refresh.Refresher` (``model.rectify_method: lowrank``), each measured the same way.
It prints the memory curve of the low-rank path with its increments per word and a linear fit.

The corpus (``mixed``) has enough distinct words for V = 50,000: the train and held-out files
of the quality benchmark's ``tech``, ``long`` and ``medium`` corpora
(:mod:`benchmarks.quality.corpora`) followed by the npm summaries of ``../shared/data``, one
JSON line each, written once under ``benchmarks/.cache/vocab/``.

Run it with the benchmark venv (anchortopics installed there)::

    PYTHONPATH=$PWD nice -n 10 benchmarks/.cache/venv/bin/python benchmarks/bench_vocab.py

Results and this command: benchmarks/README.md ("Large vocabularies").
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CACHE = REPO / "benchmarks" / ".cache" / "vocab"
SIZES = (5000, 10000, 20000, 50000)
#: Address-space cap of every measured process (bytes): the machine is shared.
CAP = 12_000_000_000
#: Wall-clock limit of every measured process (seconds).
TIMEOUT = 1800
MIN_DF, MAX_DF = 2, 0.5
#: The interpreter that runs anchorstream (its CLI needs the daemon's dependencies, which the
#: benchmark venv lacks): this checkout's .venv when there is one.
OURS = REPO / ".venv" / "bin" / "python"
PYTHON = str(OURS) if OURS.exists() else sys.executable


def build_corpus() -> Path:
    """The ``mixed`` corpus (see the module notes), built once."""
    from benchmarks.quality.corpora import SHARED_DATA, load

    path = CACHE / "mixed.jsonl"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for name in ("tech", "long", "medium"):
            corpus = load(name)
            for src in (corpus.train_path, corpus.heldout_path):
                with open(src, encoding="utf-8") as fh:
                    for line in fh:
                        out.write(json.dumps({"text": json.loads(line)["text"]}) + "\n")
        with gzip.open(SHARED_DATA / "npm_summaries.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                out.write(json.dumps({"text": json.loads(line)["text"]}) + "\n")
    tmp.rename(path)
    return path


def bag_of_words(path: Path, vocab_size: int):
    """``(vocabulary, X)`` as ``anchorstream fit`` builds them (default tokenizer and
    stopwords, documents without tokens dropped, ``MIN_DF`` / ``MAX_DF``)."""
    from anchorstream.text.tokenize import Tokenizer, count_matrix, select_vocabulary

    tok = Tokenizer()
    with open(path, encoding="utf-8") as fh:
        docs = [d for d in (tok(json.loads(line)["text"]) for line in fh) if d]
    vocabulary = select_vocabulary(docs, min_df=MIN_DF, max_df=MAX_DF, max_size=vocab_size)
    return docs, list(vocabulary), count_matrix(docs, vocabulary)


def corpus_words(path: Path) -> dict:
    """Documents, tokens and distinct words (anchorstream's tokenizer) of the corpus."""
    from collections import Counter

    from anchorstream.text.tokenize import Tokenizer

    tok, df, n_docs, n_tokens = Tokenizer(), Counter(), 0, 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            words = tok(json.loads(line)["text"])
            n_docs += 1
            n_tokens += len(words)
            df.update(set(words))
    return {"documents": n_docs, "tokens": n_tokens, "distinct": len(df),
            f"df>={MIN_DF}": sum(1 for c in df.values() if c >= MIN_DF)}


# ------------------------------------------------------------------------------ children


def child_anchortopics(args) -> int:
    from anchortopics import OTFR

    _, vocabulary, X = bag_of_words(args.corpus, args.vocab_size)
    model = OTFR(n_topics=args.topics, random_state=0).fit(X)
    B = np.asarray(model.components_)
    print(json.dumps({"n_words": len(vocabulary), "topics": int(B.shape[0])}))
    return 0


def child_refresh(args) -> int:
    """One refresh of the daemon's Refresher from the store, low-rank, as the daemon runs it."""
    from daemon.publish import Publisher
    from daemon.refresh import Refresher
    from daemon.settings import ModelConfig, VocabConfig

    model = ModelConfig(num_topics=args.topics, rectify_method="lowrank")
    # vocab.min_df 1: every active word of the store is modelled (the store's document
    # frequencies count only what came after a word's admission, so 2 would drop ~5,500).
    vocab = VocabConfig(min_df=1)
    with tempfile.TemporaryDirectory() as tmp:
        r = Refresher(str(args.store), Publisher(tmp), model_kwargs=model.model_kwargs(),
                      min_df=vocab.min_df, max_df_ratio=vocab.max_df_ratio)
        result = r.refresh_once()
    print(json.dumps({"n_words": result["n_words"], "sparse": r.sparse,
                      "timings": {k: round(v, 2) for k, v in result["timings"].items()}}))
    return 0


def child_trace(args) -> int:
    """The memory each step of the low-rank path allocates beyond what it started with (its
    peak, tracemalloc, which sees numpy's and scipy's arrays) at one V, from files and from a
    store: where a hidden O(V²) array would show."""
    import tracemalloc

    from anchorstream.model.lowrank import DocumentCooccurrence
    from anchorstream.model.pipeline import AnchorModel
    from anchorstream.snapshot import write_snapshot
    from anchorstream.store import open_committed_sparse
    from anchorstream.text.tokenize import Tokenizer, count_matrix, select_vocabulary

    peaks: dict[str, float] = {}  # MB allocated beyond what was held when the step began
    start: dict[str, float] = {}

    def begin(name):
        tracemalloc.reset_peak()
        start[name] = tracemalloc.get_traced_memory()[0]

    def end(name):
        peaks[name] = (tracemalloc.get_traced_memory()[1] - start[name]) / 1e6

    def step(name, fn):
        begin(name)
        out = fn()
        end(name)
        return out

    def on_stage(name, seconds):
        (begin if seconds is None else end)(name)

    tracemalloc.start()
    tok = Tokenizer()
    with open(args.corpus, encoding="utf-8") as fh:
        docs = step("tokenize", lambda: [d for d in (tok(json.loads(line)["text"])
                                                     for line in fh) if d])
    # The documents bound as defaults: the `del` below frees them, which a name the lambdas
    # looked up when called would hide from a reader (and from pyflakes).
    vocabulary = step("select_vocabulary", lambda d=docs: select_vocabulary(
        d, min_df=MIN_DF, max_df=MAX_DF, max_size=args.vocab_size))
    X = step("count_matrix", lambda d=docs: count_matrix(d, vocabulary))
    del docs
    C = step("DocumentCooccurrence", lambda: DocumentCooccurrence(X, length_cap=25))
    model = AnchorModel(args.topics, rectify_method="lowrank", anchor_min_df=100)
    model.fit(C, on_stage=on_stage)
    with tempfile.TemporaryDirectory() as tmp:
        step("write_snapshot", lambda: write_snapshot(
            Path(tmp) / "snap", vocabulary=list(vocabulary), topic_word=model.topic_word_.T,
            topic_topic=model.topic_topic_, anchors=[vocabulary[a] for a in model.anchors_],
            prevalence=model.prevalence_, num_docs=int(C.num_docs), settings={}, source={}))
    if args.store is not None:
        st_ = step("open_committed_sparse", lambda: open_committed_sparse(args.store))
        peaks["(store nnz, upper)"] = st_.cooccurrence.upper.nnz / 1e6
    V = len(vocabulary)
    print(json.dumps({"n_words": V, "float32_VxV_MB": 4 * V * V / 1e6,
                      "peak_MB": {k: round(v, 1) for k, v in peaks.items()}}))
    return 0


# ------------------------------------------------------------------------------ measuring


def measured(cmd: list[str], *, as_daemon: bool = False) -> dict:
    """Run ``cmd`` under ``prlimit --as`` and ``/usr/bin/time -v``: status, seconds, CPU
    seconds, peak RSS (GB) and the last line it printed. ``as_daemon``: in the environment
    the ``anchorstream`` command gives its own process (``daemon.cli.PROCESS_ENVIRONMENT``),
    for a child that runs the daemon's code without the command."""
    env = dict(os.environ)
    if as_daemon:
        from daemon.cli import PROCESS_ENVIRONMENT

        env = {**PROCESS_ENVIRONMENT, **env}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    full = ["prlimit", f"--as={CAP}", "/usr/bin/time", "-v", "timeout", str(TIMEOUT), *cmd]
    proc = subprocess.run(full, env=env, cwd=REPO, capture_output=True, text=True)
    err = proc.stderr

    def field(name):
        m = re.search(rf"{re.escape(name)}: (.+)", err)
        return m.group(1).strip() if m else None

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)") or "0:0"
    seconds = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    out_lines = [ln for ln in proc.stdout.strip().splitlines() if ln.strip()]
    status = ("ok" if proc.returncode == 0 else f"over {TIMEOUT} s" if proc.returncode == 124
              else f"exit {proc.returncode}")
    if proc.returncode:
        tail = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("\t")]
        status += ": " + " / ".join(tail[-2:])[:300]
    return {"status": status, "seconds": seconds,
            "cpu": float(field("User time (seconds)") or 0) + float(field("System time (seconds)") or 0),
            "rss_gb": int(field("Maximum resident set size (kbytes)") or 0) / 1e6,
            "last": out_lines[-1] if out_lines else ""}


def fit_command(corpus: Path, out: Path, V: int, K: int) -> list[str]:
    return [PYTHON, "-m", "daemon", "fit", "--input", str(corpus), "--out", str(out),
            "--topics", str(K), "--vocab-size", str(V), "--min-df", str(MIN_DF),
            "--max-df", str(MAX_DF), "--rectify-method", "lowrank", "--quiet"]


def _row(label, r) -> str:
    if r is None:
        return f"{label:<34} {'-':>9} {'-':>9} {'-':>9}"
    if not r["status"].startswith("ok"):
        return f"{label:<34} {r['status']}"
    return f"{label:<34} {r['seconds']:9.1f} {r['cpu']:9.1f} {r['rss_gb']:9.2f}"


def memory_curve(sizes, results) -> None:
    """Peak RSS against V, its increments per word and a least-squares line."""
    pts = [(V, r["rss_gb"]) for V, r in zip(sizes, results) if r["status"] == "ok"]
    if len(pts) < 2:
        return
    V = np.array([p[0] for p in pts], dtype=float)
    M = np.array([p[1] for p in pts])
    slope, icpt = np.polyfit(V, M, 1)
    print("\nlow-rank path, peak RSS against V (the curve):")
    print(f"{'V':>7} {'RSS GB':>8} {'line GB':>8} {'KB/word since previous':>24}")
    for i, (v, m) in enumerate(zip(V, M)):
        inc = "" if i == 0 else f"{(m - M[i - 1]) * 1e6 / (v - V[i - 1]):24.1f}"
        print(f"{int(v):7d} {m:8.2f} {icpt + slope * v:8.2f} {inc}")
    print(f"line: {icpt:.2f} GB + {slope * 1e6:.1f} KB x V; largest deviation "
          f"{np.abs(M - (icpt + slope * V)).max():.2f} GB; 8 V² bytes (a dense float64 V x V "
          f"array) at V = {int(V[-1])} would be {8 * V[-1] ** 2 / 1e9:.1f} GB")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=lambda s: tuple(int(x) for x in s.split(",")), default=SIZES)
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--no-peer", action="store_true", help="skip anchortopics")
    p.add_argument("--no-store", action="store_true", help="skip ingest, fit --store, refresh")
    p.add_argument("--only-store", action="store_true",
                   help="only ingest, fit --store and refresh, at the largest of --sizes")
    p.add_argument("--child", choices=("anchortopics", "refresh", "trace"))
    p.add_argument("--corpus", type=Path)
    p.add_argument("--store", type=Path)
    p.add_argument("--vocab-size", type=int)
    args = p.parse_args(argv)
    if args.child == "anchortopics":
        return child_anchortopics(args)
    if args.child == "refresh":
        return child_refresh(args)
    if args.child == "trace":
        return child_trace(args)

    corpus = build_corpus()
    info = corpus_words(corpus)
    print(f"corpus {corpus.relative_to(REPO)}: {info['documents']} documents, {info['tokens']} "
          f"tokens, {info['distinct']} distinct words (anchorstream's tokenizer), "
          f"{info[f'df>={MIN_DF}']} in >= {MIN_DF} documents; K = {args.topics}, "
          f"--min-df {MIN_DF} --max-df {MAX_DF}, each process under prlimit --as={CAP}",
          flush=True)
    print(f"\n{'':<34} {'seconds':>9} {'CPU s':>9} {'peak GB':>9}")
    ours, peers = [], []
    if args.only_store:
        with tempfile.TemporaryDirectory() as tmp:
            store_path(corpus, max(args.sizes), args.topics, Path(tmp))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for V in args.sizes:
            r = measured(fit_command(corpus, Path(tmp) / f"fit-{V}", V, args.topics))
            ours.append(r)
            print(_row(f"V={V:>6} anchorstream lowrank", r), flush=True)
            if not args.no_peer:
                peer = measured([sys.executable, str(Path(__file__).resolve()), "--child",
                                 "anchortopics", "--corpus", str(corpus), "--vocab-size",
                                 str(V), "--topics", str(args.topics)])
                peers.append(peer)
                print(_row(f"V={V:>6} anchortopics OTFR", peer), flush=True)
        memory_curve(args.sizes, ours)
        if not args.no_store:
            store_path(corpus, max(args.sizes), args.topics, Path(tmp))
    return 0


def store_path(corpus: Path, V: int, K: int, tmp: Path) -> None:
    """The daemon's path at capacity ``V``: ingest, fit --store, one refresh."""
    store = tmp / "store"
    print(f"\nthe daemon's path, store capacity {V} (--admit-threshold {MIN_DF}):")
    steps = [
        ("ingest", [PYTHON, "-m", "daemon", "ingest", "--store", str(store),
                    "--capacity", str(V), "--admit-threshold", str(MIN_DF), "--quiet",
                    "--checkpoint-every", "50000", str(corpus)]),
        ("fit --store lowrank", [PYTHON, "-m", "daemon", "fit", "--store", str(store),
                                 "--out", str(tmp / "fit-store"), "--topics", str(K),
                                 "--rectify-method", "lowrank", "--quiet"]),
        ("refresh (Refresher, lowrank)", [PYTHON, str(Path(__file__).resolve()),
                                         "--child", "refresh", "--store", str(store),
                                         "--topics", str(K)]),
    ]
    for label, cmd in steps:
        r = measured(cmd, as_daemon=label.startswith("refresh"))
        print(_row(label, r), flush=True)
        if r["last"] and label.startswith(("refresh", "ingest")):
            print(f"    {r['last'][:300]}")
        if not r["status"].startswith("ok") and label == "ingest":
            return
    size = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    print(f"    store on disk: {size / 1e6:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())
