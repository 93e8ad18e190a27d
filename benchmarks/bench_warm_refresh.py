#!/usr/bin/env python
"""Warm refresh against cold fit: the daemon's refresh after 1% new documents (issue 16).

The daemon refits with the previous model as ``init`` (:class:`anchorstream.model.pipeline.AnchorModel`,
what ``daemon/refresh.py`` calls). This script builds a quality-benchmark corpus's
co-occurrence over 99% of its training documents, fits cold, adds the last 1%, and refits
twice on the whole: warm from the first fit, and cold (the peer, in the same run). It prints
each fit's seconds and CPU seconds (the fit only: the daemon reads its counts from the store),
the held-out NPMI@10 of both refits and of the first fit (the metric of ``bench_quality.py``;
the first fit's shows how much NPMI moves between two cold fits 1% apart), how many of the
first fit's anchors the warm refit kept (its topic ids), and the seconds of each stage of both
refits, for each rectifier.

Run from the repository root, in the benchmark environment (corpora as ``bench_quality.py``)::

    benchmarks/.cache/venv/bin/python benchmarks/bench_warm_refresh.py --corpora medium,tech
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from anchorstream.stats.cooccurrence import LENGTH_CAP, cooccurrence  # noqa: E402
from anchorstream.model.lowrank import DocumentCooccurrence  # noqa: E402
from anchorstream.model import anchors  # noqa: E402
from anchorstream.model.pipeline import AnchorModel  # noqa: E402
from benchmarks.quality.corpora import fit_counts, load, training_documents  # noqa: E402
from benchmarks.quality.metrics import HeldoutIndex, npmi, top_word_strings  # noqa: E402


def _timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="medium,tech")
    p.add_argument("--new", type=float, default=0.01, help="share of documents added")
    p.add_argument("--methods", default="ap,lowrank")
    p.add_argument("--swap-margins", default=None, metavar="M,M",
                   help="compare these warm anchor-swap margins (anchors.WARM_SWAP_MARGIN) "
                        "with the dense rectifier; default: the library's")
    a = p.parse_args(argv)
    print(f"{'corpus':8s} {'rectifier':9s} {'cold 99% s':>10s} {'warm s':>8s} {'cold s':>8s} "
          f"{'warm/cold':>9s} {'warm CPU/cold CPU':>17s} {'NPMI warm':>9s} {'NPMI cold':>9s} "
          f"{'NPMI 99%':>9s} {'kept':>6s}  warm / cold stages (s)")
    for name in a.corpora.split(","):
        corpus = load(name)
        vocab, X = fit_counts(training_documents(corpus), corpus.vocab_size)
        cut = int(round(X.shape[0] * (1 - a.new)))
        index = HeldoutIndex.for_corpus(corpus)
        K = corpus.n_topics
        runs = [(m, None) for m in a.methods.split(",")]
        if a.swap_margins:
            runs = [(m, float(x)) for m in a.methods.split(",") for x in a.swap_margins.split(",")]
        for method, margin in runs:
            if margin is not None:
                anchors.WARM_SWAP_MARGIN = margin
            # Counting is not timed: the daemon reads the counts from its store.
            def fit(rows, init=None):
                # As `fit --input` builds it: the low-rank rectifier never forms V x V.
                cooc = (DocumentCooccurrence(X[:rows], length_cap=LENGTH_CAP)
                        if method == "lowrank" else cooccurrence(X[:rows], length_cap=LENGTH_CAP))
                return _timed(lambda: AnchorModel(K, rectify_method=method).fit(cooc, init=init))

            first, t0, _ = fit(cut)
            warm, tw, cw = fit(X.shape[0], init=first)
            cold, tc, cc = fit(X.shape[0])
            scores = [float(np.mean(npmi(top_word_strings(vocab, m.topic_word_.T), index)))
                      for m in (warm, cold, first)]
            kept = len(set(first.anchors_.tolist()) & set(warm.anchors_.tolist()))
            stages = " / ".join(" ".join(f"{k} {v:.2f}" for k, v in m.timings_.items())
                                + " (iterations " + " ".join(f"{k} {v}" for k, v in
                                                             m.n_iter_.items()) + ")"
                                for m in (warm, cold))
            label = method if margin is None else f"{method} {margin:g}"
            print(f"{name:8s} {label:9s} {t0:10.1f} {tw:8.1f} {tc:8.1f} {tw / tc:9.2f} "
                  f"{cw / cc:17.2f} {scores[0]:+9.4f} {scores[1]:+9.4f} {scores[2]:+9.4f} "
                  f"{kept:3d}/{K:<3d} "
                  f"{stages}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
