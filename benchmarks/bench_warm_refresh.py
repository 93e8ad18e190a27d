#!/usr/bin/env python
"""Warm refresh against cold fit: the daemon's refresh after 1% new documents (issue 16).

The daemon refits with the previous model as ``init`` (:class:`anchorstream.model.pipeline.AnchorModel`,
what ``daemon/refresh.py`` calls). This script builds a quality-benchmark corpus's
co-occurrence over 99% of its training documents, fits cold, adds the last 1%, and refits
twice on the whole: warm from the first fit, and cold (the peer, in the same run). It prints
each fit's seconds and CPU seconds (the fit only: the daemon reads its counts from the store),
the held-out NPMI@10 of both refits and of the first fit (the metric of ``bench_quality.py``;
the first fit's shows how much NPMI moves between two cold fits 1% apart), how many of the
first fit's anchors the warm refit kept (its topic ids), whether the warm refit updated the last
cold rectification or rectified cold again (it does once the data has moved by more than
``model.rectify_warm_change`` since; ``change`` is the relative change it updated across, ">max"
where it rectified cold), and
the seconds of each stage of both refits, for each rectifier.

Before the first timed round of each rectifier the script refits warm once, untimed: that
compiles the warm path's numba kernels (or loads them from the cache), which a cold fit does
not use, so that a checkout with an empty cache times the rounds, not the compiler.

``--rounds R`` runs R refreshes in a row, as the daemon does: a cold fit on all but
``R x --new`` of the documents, then R rounds that each add ``--new`` and refit warm from the
last round's warm fit, and cold (the peer). One row per round; "before" is the fit the round
started from.

``--counts`` says what the fits read. ``store`` (the default) is what the daemon's refresh reads
with the low-rank rectifier: the counts' upper triangle held sparse with the store's marginals
(:class:`~anchorstream.stats.sparse.SparseCooccurrence`, as
:func:`~anchorstream.store.open_committed_sparse` builds it), so the word pairs of the
refinement are read, not recomputed. ``documents`` is what ``fit --input`` reads (the
documents themselves, :class:`~anchorstream.model.lowrank.DocumentCooccurrence`), whose pairs
each fit recounts from the documents. The dense rectifier (``--methods ap``) reads the dense
counts either way.

``--refine-window N`` refines every fit on the pairs of windows of ``N`` tokens of the
documents (``model.refine_window``: what the store keeps, held sparse as the refresh reads it),
warm for ``model.refine_warm_max_iter`` passes.

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
from anchorstream.stats.sparse import SparseCooccurrence  # noqa: E402
from anchorstream.text.tokenize import count_matrix  # noqa: E402
from anchorstream.text.windows import window_documents  # noqa: E402
from benchmarks.quality.corpora import fit_counts, load, training_documents  # noqa: E402
from benchmarks.quality.metrics import HeldoutIndex, npmi, top_word_strings  # noqa: E402


def _timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def store_counts(X) -> SparseCooccurrence:
    """What a store that ingested the documents ``X`` holds: the counts' upper triangle and
    marginals over the documents of at least 2 tokens (the store counts no other)."""
    docs = DocumentCooccurrence(X, length_cap=LENGTH_CAP)
    counted = X[np.asarray(X.sum(axis=1)).ravel() >= 2]
    return SparseCooccurrence(docs.upper_counts(), np.asarray(counted.sum(axis=0)).ravel(),
                              np.asarray((counted > 0).sum(axis=0)).ravel(), docs.num_docs,
                              docs.num_tokens, LENGTH_CAP)


def _score(model, vocab, index) -> float:
    return float(np.mean(npmi(top_word_strings(vocab, model.topic_word_.T), index)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="medium,tech")
    p.add_argument("--new", type=float, default=0.01, help="share of documents added")
    p.add_argument("--rounds", type=int, default=1,
                   help="refreshes in a row, each after --new more documents and warm from "
                        "the last (as the daemon runs them)")
    p.add_argument("--methods", default="ap,lowrank")
    p.add_argument("--counts", choices=("store", "documents"), default="store",
                   help="what the low-rank fits read: the store's sparse counts, as the "
                        "daemon's refresh (default), or the documents, as fit --input")
    p.add_argument("--refine-warm-max-iter", default=None, metavar="N[+M][,...]",
                   help="most EM passes of a warm refit's refinement: N "
                        "(model.refine_warm_max_iter), M where a topic's anchor is new "
                        "(model.refine_warm_new_max_iter; default N); several: one warm chain "
                        "each from the same first fit, against the same cold peers; default: "
                        "the library's")
    p.add_argument("--seed", type=int, default=None,
                   help="shuffle the training documents with this seed before the cuts (a "
                        "draw of which documents arrive last); default: their order in the file")
    p.add_argument("--rectify-warm-change", type=float, default=None, metavar="X",
                   help="the bound on the data's change a warm refit follows before it "
                        "rectifies cold (model.rectify_warm_change); default: the library's")
    p.add_argument("--swap-margins", default=None, metavar="M,M",
                   help="compare these warm anchor-swap margins (anchors.WARM_SWAP_MARGIN); "
                        "default: the library's")
    p.add_argument("--refine-window", type=int, default=None, metavar="TOKENS",
                   help="refine on the pairs of windows of this many tokens (model.refine_window)")
    a = p.parse_args(argv)
    print(f"# counts read by the low-rank fits: {a.counts}")
    passes = [None] if a.refine_warm_max_iter is None else a.refine_warm_max_iter.split(",")
    if a.refine_warm_max_iter is not None:
        print(f"# model.refine_warm_max_iter: {a.refine_warm_max_iter}")
    if a.seed is not None:
        print(f"# training documents shuffled with seed {a.seed}")
    extra = {}
    if a.rectify_warm_change is not None:
        extra["rectify_warm_change"] = a.rectify_warm_change
        print(f"# model.rectify_warm_change: {a.rectify_warm_change:g}")
    if a.rounds < 1 or not 0 < a.new * a.rounds < 1:
        p.error("--rounds must be >= 1 and --new * --rounds in (0, 1)")
    print(f"{'corpus':8s} {'rectifier':9s} {'passes':>6s} {'round':>5s} {'before s':>10s} {'warm s':>8s} "
          f"{'cold s':>8s} {'warm/cold':>9s} {'warm CPU/cold CPU':>17s} {'NPMI warm':>9s} "
          f"{'NPMI cold':>9s} {'NPMI before':>9s} {'kept':>6s} {'rectified':>9s} {'change':>6s}"
          f"  warm / cold stages (s)")
    summary = {}
    compiled = set()  # the rectifiers whose warm path's numba kernels this process compiled
    for name in a.corpora.split(","):
        corpus = load(name)
        docs = training_documents(corpus)
        if a.seed is not None:
            order = np.random.default_rng(a.seed).permutation(len(docs))
            docs = [docs[i] for i in order]
        vocab, X = fit_counts(docs, corpus.vocab_size)
        n = X.shape[0]
        windows = window_ends = None
        if a.refine_window:
            # The windows' rows, and after how many of them each document's windows end.
            windows = count_matrix(window_documents(docs, a.refine_window), vocab)
            per_doc = [-(-len(d) // a.refine_window) for d in docs]
            window_ends = np.concatenate([[0], np.cumsum(per_doc)])
        cuts = [int(round(n * (1 - a.new * (a.rounds - r)))) for r in range(a.rounds + 1)]
        index = HeldoutIndex.for_corpus(corpus)
        K = corpus.n_topics
        runs = [(m, None) for m in a.methods.split(",")]
        if a.swap_margins:
            runs = [(m, float(x)) for m in a.methods.split(",") for x in a.swap_margins.split(",")]
        for method, margin in runs:
            if margin is not None:
                anchors.WARM_SWAP_MARGIN = margin
            # Counting is not timed: the daemon reads the counts from its store.
            def fit(rows, init=None, n_passes=None):
                # The low-rank rectifier never forms V x V: the daemon reads the store's sparse
                # counts, `fit --input` the documents.
                if method != "lowrank":
                    cooc = cooccurrence(X[:rows], length_cap=LENGTH_CAP)
                elif a.counts == "store":
                    cooc = store_counts(X[:rows])
                else:
                    cooc = DocumentCooccurrence(X[:rows], length_cap=LENGTH_CAP)
                refine_cooc = (None if windows is None
                               else store_counts(windows[:window_ends[rows]]))
                kw = dict(extra)
                if n_passes is not None:
                    # N, or N+M: N passes where every anchor is kept, M where one is new.
                    n, _, m = n_passes.partition("+")
                    kw.update(refine_warm_max_iter=int(n), refine_warm_new_max_iter=int(m or n))
                return _timed(lambda: AnchorModel(K, rectify_method=method, **kw).fit(
                    cooc, init=init, refine_cooc=refine_cooc))

            first, t0, _ = fit(cuts[0])
            if method not in compiled:
                # Once per rectifier, untimed: a warm refit compiles (or loads) the warm
                # path's numba kernels, which the cold fit does not use. With an empty cache
                # the first timed warm refit would pay that compilation (seconds).
                _, tw, _ = fit(cuts[1], init=first, n_passes=passes[0])
                compiled.add(method)
                print(f"# {method}: a warm refit first, to compile its kernels: {tw:.1f} s, "
                      "not counted", flush=True)
            # One warm chain per number of passes, all from the first fit.
            chains = {n: (first, t0) for n in passes}
            for r, rows in enumerate(cuts[1:], start=1):
                cold, tc, cc = fit(rows)
                cold_score = _score(cold, vocab, index)
                for n in passes:
                    init, t0 = chains[n]
                    warm, tw, cw = fit(rows, init=init, n_passes=n)
                    scores = [_score(warm, vocab, index), cold_score, _score(init, vocab, index)]
                    kept = len(set(init.anchors_.tolist()) & set(warm.anchors_.tolist()))
                    stages = " / ".join(" ".join(f"{k} {v:.2f}" for k, v in m.timings_.items())
                                        + " (iterations " + " ".join(f"{k} {v}" for k, v in
                                                                     m.n_iter_.items()) + ")"
                                        for m in (warm, cold))
                    # A warm refit updates the last cold rectification (0 iterations) unless
                    # the data moved more than model.rectify_warm_change since.
                    rectified = "warm" if warm.n_iter_.get("rectify", 0) == 0 else "cold"
                    change = f"{warm.rectify_change_:6.3f}" if rectified == "warm" else "   >max"
                    label = method if margin is None else f"{method} {margin:g}"
                    shown = "lib" if n is None else n
                    print(f"{name:8s} {label:9s} {shown:>6s} {r:5d} {t0:10.1f} {tw:8.1f} "
                          f"{tc:8.1f} {tw / tc:9.3f} {cw / cc:17.3f} {scores[0]:+9.4f} "
                          f"{scores[1]:+9.4f} {scores[2]:+9.4f} {kept:3d}/{K:<3d} "
                          f"{rectified:>9s} {change}  {stages}", flush=True)
                    summary.setdefault((label, shown), []).append(
                        (scores[0] - scores[1], cw / cc))
                    chains[n] = (warm, tw)
    if summary:
        print("\nmean over every corpus and round: warm - cold held-out NPMI@10, "
              "warm CPU / cold CPU")
        for (label, shown), rows in summary.items():
            gap, cpu = np.mean(rows, axis=0)
            print(f"{label:9s} passes {shown:>3s}: {gap:+.4f}, {cpu:.3f} ({len(rows)} rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
