#!/usr/bin/env python
"""Where the pair refinement starts: the recovered support alone, or every entry smoothed.

EM is multiplicative, so an entry of ``B`` that starts at 0 stays 0, and recovery leaves most
of them at 0. Until session 22 ``refine_topics`` smoothed the start only where an observed pair
had probability 0 under it; this script shows what each start gives. Per quality-benchmark
corpus it fits the anchor model (``refine="none"``), counts the observed pairs the recovered
start makes impossible, and refines it (``joint``, the shipped EM) from

* ``support``: the recovered ``B`` as it is, the impossible pairs left out of the likelihood
  (what a start without such pairs got before session 22; with none, exactly that);
* ``smoothed S``: ``smoothed_start`` with share ``S`` (1e-3 is ``REFINE_SMOOTHING``).

It prints held-out NPMI@10 of the most probable words, ℓ1 where a truth is known, passes,
the final log-likelihood per pair (``support``'s over the possible pairs, renormalized) and
dead topics. ``--stability`` also refits ``tech`` with 1% of its documents left out and prints
the matched ℓ1 between the two refined fits for each start, and for the rule before session
22 (``support`` where a fit's start had no impossible pair, else smoothed).

Run from the repository root, in the benchmark environment::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        benchmarks/.cache/venv/bin/python benchmarks/bench_refine_start.py \\
        --corpora short,pypi,pypi12,synth8-100k [--stability 0,3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import numpy as np  # noqa: E402

from anchorstream.model import refine as rf  # noqa: E402
from anchorstream.model.lowrank import DocumentCooccurrence  # noqa: E402
from anchorstream.model.pipeline import AnchorModel  # noqa: E402
from anchorstream.stats.cooccurrence import LENGTH_CAP  # noqa: E402
from benchmarks.quality.corpora import fit_counts, load, training_documents  # noqa: E402
from benchmarks.quality.metrics import HeldoutIndex, l1_error, npmi, top_word_strings  # noqa: E402


def possible_pairs(pairs: rf.PairCounts, B: np.ndarray, R: np.ndarray):
    """``pairs`` without the pairs ``(B, R)`` gives probability 0, their number and mass."""
    G = B @ R
    rows = np.repeat(np.arange(pairs.n_words), np.diff(pairs.indptr))
    p = np.empty(pairs.nnz)
    for s in range(0, pairs.nnz, 200_000):
        e = min(s + 200_000, pairs.nnz)
        p[s:e] = np.einsum("ij,ij->i", G[rows[s:e]], B[pairs.indices[s:e]])
    bad = ~(p > 0)
    off = pairs.indices != rows
    mass = 2.0 * pairs.data[bad & off].sum() + pairs.data[bad & ~off].sum()
    kept = rf._normalized(pairs.indptr, pairs.indices, np.where(bad, 0.0, pairs.data),
                          pairs.n_words)
    return kept, int(bad.sum()), float(mass)


def refine_from(start: str, pairs, B, R):
    """Refined topics from one start (``support`` or ``smoothed S``)."""
    if start == "support":
        kept, _, _ = possible_pairs(pairs, B, R)
        return rf.refine_topics(kept, B, R, method="joint", smoothing=0.0)
    return rf.refine_topics(pairs, B, R, method="joint", smoothing=float(start.split()[1]))


def corpus_counts(name: str):
    corpus = load(name)
    vocab, X = fit_counts(training_documents(corpus), corpus.vocab_size)
    return corpus, vocab, X


def anchor_model(X, K):
    return AnchorModel(K, refine="none").fit(DocumentCooccurrence(X, length_cap=LENGTH_CAP))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="short,pypi,pypi12,synth8-100k")
    p.add_argument("--smoothing", default="1e-4,1e-3,1e-2",
                   help="comma-separated shares for the smoothed starts")
    p.add_argument("--stability", default="", metavar="DRAWS",
                   help="comma-separated draws of 1%% of tech's documents left out")
    a = p.parse_args(argv)
    starts = ["support"] + [f"smoothed {s}" for s in a.smoothing.split(",") if s]
    print("| corpus | impossible pairs at the recovered start (mass) | start | held-out NPMI@10 "
          "| ℓ1 | passes | log-likelihood per pair | dead topics | refine CPU s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name in [c for c in a.corpora.split(",") if c]:
        corpus, vocab, X = corpus_counts(name)
        K = corpus.n_topics
        pairs = rf.pair_counts(DocumentCooccurrence(X, length_cap=LENGTH_CAP))
        model = anchor_model(X, K)
        B, R = model.topic_word_, model.topic_topic_ / model.topic_topic_.sum()
        _, n_bad, mass = possible_pairs(pairs, B, R)
        index = HeldoutIndex.for_corpus(corpus)

        def row(label, topic_word, refined=None, cpu=None):
            score = float(np.mean(npmi(top_word_strings(vocab, topic_word.T), index)))
            l1 = ("–" if corpus.truth is None
                  else f"{l1_error(corpus.truth, vocab, topic_word.T):.3f}")
            passes = "–" if refined is None else refined.n_iter
            ll = "–" if refined is None else f"{refined.loglik[-1]:.5f}"
            prev = (model.topic_topic_.sum(axis=1) if refined is None else refined.prevalence)
            dead = int((prev / prev.sum() < 1e-3).sum())
            cpu = "–" if cpu is None else f"{cpu:.1f}"
            print(f"| {name} | {n_bad} of {pairs.nnz:,} ({mass:.1e}) | {label} | {score:+.4f} "
                  f"| {l1} | {passes} | {ll} | {dead} | {cpu} |", flush=True)

        row("none (the anchor model)", B)
        for start in starts:
            t = time.process_time()
            refined = refine_from(start, pairs, B, R)
            row(start, refined.topic_word, refined, time.process_time() - t)
    if a.stability:
        from bench_streaming import compare  # matched ℓ1 over topics, as the causes part

        corpus, vocab, X = corpus_counts("tech")
        K = corpus.n_topics

        def fits(rows):
            Xr = X[rows]
            model = anchor_model(Xr, K)
            pairs = rf.pair_counts(DocumentCooccurrence(Xr, length_cap=LENGTH_CAP))
            B, R = model.topic_word_, model.topic_topic_ / model.topic_topic_.sum()
            out = {"none": model.topic_word_}
            for start in ("support", f"smoothed {rf.REFINE_SMOOTHING:g}"):
                out[start] = refine_from(start, pairs, B, R).topic_word
            n_bad = possible_pairs(pairs, B, R)[1]
            # Before session 22: smoothed only where some observed pair was impossible.
            out["before session 22"] = out["support" if n_bad == 0 else
                                           f"smoothed {rf.REFINE_SMOOTHING:g}"]
            return out, n_bad

        full, n_full = fits(np.arange(X.shape[0]))
        print(f"\ntech, all {X.shape[0]} documents: {n_full} impossible pairs at the start\n")
        print("| draw (1% left out) | impossible pairs | " + " | ".join(full) + " |")
        print("|---|---:|" + "---:|" * len(full))
        for draw in [int(d) for d in a.stability.split(",")]:
            keep = np.random.default_rng(draw).random(X.shape[0]) >= 0.01
            part, n_part = fits(np.flatnonzero(keep))
            cells = " | ".join(f"{compare(part[k], vocab, full[k], vocab)['l1']:.3f}"
                               for k in full)
            print(f"| {draw} | {n_part} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
