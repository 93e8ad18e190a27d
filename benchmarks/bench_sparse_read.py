#!/usr/bin/env python
"""The low-rank refresh's read of the store: a full sparse read against a catch-up.

A refresher with the low-rank rectifier reads the store's counts sparse
(:func:`anchorstream.store.open_committed_sparse`). Warm, it brings its last read up to the new
version by adding only the segments committed since (``previous=``), where the store allows:
no compaction or expired window since; words admitted or evicted since are moved into place.
This script ingests a corpus's first ``1 − --new`` share into a store of each ``--capacity``,
reads it, ingests the rest, and reads the new version twice: in full (the peer) and as a
catch-up from the first read. It prints the CPU seconds of both, the words and stored pairs,
and the largest difference between the two reads' counts (they must be equal).

Run from the repository root (``--corpus`` is a quality-benchmark corpus, built by
``bench_quality.py``, or a JSONL file with a ``text`` field per line)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_sparse_read.py --corpus pypi \\
        --capacity 20000,50000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from anchorstream.store import CooccurrenceStore, open_committed_sparse  # noqa: E402
from anchorstream.text.tokenize import Tokenizer  # noqa: E402

QUALITY = REPO / "benchmarks" / ".cache" / "quality"


def documents(corpus: str) -> list[list[str]]:
    """A quality-benchmark corpus's training documents (or a JSONL file's), tokenized."""
    path = Path(corpus)
    if not path.exists():
        path = QUALITY / corpus / "train.jsonl"
    tokenize = Tokenizer()
    with open(path, encoding="utf-8") as fh:
        return [tokenize(json.loads(line)["text"]) for line in fh]


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="pypi")
    p.add_argument("--capacity", default="20000,50000")
    p.add_argument("--new", type=float, default=0.01, help="share of documents added")
    a = p.parse_args(argv)
    docs = documents(a.corpus)
    cut = int(round(len(docs) * (1 - a.new)))
    print(f"# {a.corpus}: {len(docs):,} documents, the last {len(docs) - cut:,} added")
    print(f"{'capacity':>9} {'words then':>10} {'words now':>9} {'stored pairs':>12} "
          f"{'full read s':>11} {'catch-up s':>10} {'ratio':>6} {'max |diff|':>10}")
    for capacity in (int(c) for c in a.capacity.split(",")):
        with tempfile.TemporaryDirectory() as work:
            store = CooccurrenceStore.create(Path(work) / "store", capacity=capacity,
                                             admit_threshold=3, length_cap=25)
            for i in range(0, cut, 20_000):
                store.add(docs[i:min(i + 20_000, cut)])
                store.checkpoint()
            first = open_committed_sparse(store.url)
            store.add(docs[cut:])
            store.checkpoint()
            full, t_full = _cpu(lambda: open_committed_sparse(store.url))
            caught, t_up = _cpu(lambda: open_committed_sparse(store.url, previous=first))
            U, W = full.cooccurrence.upper, caught.cooccurrence.upper
            diff = abs(U - W).max() if U.shape == W.shape else float("nan")
            print(f"{capacity:9d} {len(first.words):10,} {len(full.words):9,} {U.nnz:12,} "
                  f"{t_full:11.2f} {t_up:10.2f} {t_up / t_full:6.2f} {diff:10.1e}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
