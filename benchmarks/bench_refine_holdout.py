#!/usr/bin/env python
"""Stopping the pair refinement on left-out documents (``refine_topics(validation=...)``).

The pair EM (:mod:`anchorstream.model.refine`) runs until the training pairs' likelihood
settles. On a small corpus it then fits those documents' own pairs: the likelihood of
documents it has not seen peaks after a few passes and falls. This script measures, per
quality-benchmark corpus, three refinements of the same anchor model (fitted on every
training document, ``refine="none"``, as ``anchorstream fit`` does before refining):

* ``converged``: the shipped refinement, on every document's pairs;
* ``held out``: on the pairs of 90% of the documents, stopped where the pairs of the other
  10% (a seeded random draw) were most likely (patience 2);
* ``rerun``: on every document's pairs again, for as many passes as ``held out`` chose.

It prints held-out NPMI@10 of the published ranking (the background level at the default
spread, as ``bench_quality.py`` scores snapshots), unique@10, ℓ1 where a truth is known, the
passes and the refinement's CPU seconds.

Run from the repository root, in the benchmark environment::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        benchmarks/.cache/venv/bin/python benchmarks/bench_refine_holdout.py \\
        --corpora quotes,glosses,short,pypi12,passages,synth8-100k
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from anchorstream.model import refine as rf  # noqa: E402
from anchorstream.model.lowrank import DocumentCooccurrence  # noqa: E402
from anchorstream.model.pipeline import AnchorModel  # noqa: E402
from anchorstream.stats.cooccurrence import LENGTH_CAP  # noqa: E402
from benchmarks.quality.corpora import fit_counts, load, training_documents  # noqa: E402
from benchmarks.quality.metrics import (HeldoutIndex, l1_error, npmi,  # noqa: E402
                                        published_top_words, unique)


def scores(corpus, vocab, index, B):
    """``(NPMI, unique@10, ℓ1 or None)`` of topics ``B`` (V, K), published ranking."""
    words = published_top_words(vocab, B.T)
    l1 = None if corpus.truth is None else l1_error(corpus.truth, vocab, B.T)
    return float(np.mean(npmi(words, index))), unique(words), l1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="quotes,glosses,short,pypi12,passages,synth8-100k")
    p.add_argument("--share", type=float, default=0.1, help="documents left out (default 0.1)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    print("| corpus | refinement | passes | held-out NPMI@10 | unique@10 | ℓ1 | refine CPU s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in [c for c in a.corpora.split(",") if c]:
        corpus = load(name, verbose=False)
        vocab, X = fit_counts(training_documents(corpus), corpus.vocab_size)
        index = HeldoutIndex.for_corpus(corpus)
        model = AnchorModel(corpus.n_topics, refine="none").fit(
            DocumentCooccurrence(X, length_cap=LENGTH_CAP))
        B, R = model.topic_word_, model.topic_topic_ / model.topic_topic_.sum()
        left_out = np.random.default_rng(a.seed).random(X.shape[0]) < a.share
        everything = rf.pair_counts(DocumentCooccurrence(X, length_cap=LENGTH_CAP))
        kept = rf.pair_counts(DocumentCooccurrence(X[~left_out], length_cap=LENGTH_CAP))
        valid = rf.pair_counts(DocumentCooccurrence(X[left_out], length_cap=LENGTH_CAP))

        def row(label, fit, cpu):
            npmi_, uniq, l1 = scores(corpus, vocab, index, fit.topic_word)
            l1 = "–" if l1 is None else f"{l1:.3f}"
            print(f"| {name} | {label} | {fit.n_iter} | {npmi_:+.4f} | {uniq:.3f} | {l1} "
                  f"| {cpu:.1f} |", flush=True)

        t = time.process_time()
        converged = rf.refine_topics(everything, B, R, method="joint")
        row("converged", converged, time.process_time() - t)
        t = time.process_time()
        held = rf.refine_topics(kept, B, R, method="joint", validation=valid)
        row(f"held out ({a.share:.0%})", held, time.process_time() - t)
        t = time.process_time()
        rerun = rf.refine_topics(everything, B, R, method="joint", max_iter=held.n_iter)
        row("rerun, that many passes", rerun, time.process_time() - t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
