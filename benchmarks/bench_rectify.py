#!/usr/bin/env python
"""Rectification benchmark: Anderson-accelerated against plain alternating projection.

The peer is plain alternating projection (JSMF Algorithm 1 as published,
``rectify(..., anderson=0)``), measured in the same run on the same matrices. Both run the
same code otherwise (float32 working precision, the same eigensolver), and both are followed by
the same pivoted-QR anchors and ADMM recovery, so differences in the recovered topics come from
the rectified matrix alone.

Corpus: semi-synthetic documents with a known truth. The truth is the topics that
``AnchorModel`` (plain AP) learns from the real corpus (``--data``, the V most frequent words);
documents of ``--doc-length`` words are drawn from it with θ ~ Dirichlet(``--alpha``). Short
documents make the co-occurrence noisy, as real short texts are, and rectification matters.
Printed per corpus size and setting: iterations, seconds and the mean ℓ1 recovery error per
topic after optimal matching (:func:`anchorstream.evaluate.recovery_error`).

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_rectify.py
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from anchorstream.model.anchors import candidate_words, find_anchors  # noqa: E402
from anchorstream.stats.cooccurrence import cooccurrence  # noqa: E402
from anchorstream.evaluate import recovery_error  # noqa: E402
from anchorstream.model.pipeline import AnchorModel  # noqa: E402
from anchorstream.model.recover import recover  # noqa: E402
from anchorstream.model.rectify import rectify  # noqa: E402
from anchorstream.synthetic import PlantedModel, dirichlet_second_moment, sample_documents  # noqa: E402
from anchorstream.text.tokenize import Tokenizer, count_matrix, select_vocabulary  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "npm_summaries.jsonl.gz"


def truth_from_corpus(path: Path, n_docs: int, V: int, K: int, seed: int) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        texts = [t for t in (json.loads(line).get("text") for line in fh) if isinstance(t, str)]
    order = np.random.default_rng(seed).permutation(len(texts))[:n_docs]
    tokenizer = Tokenizer()
    docs = [d for d in (tokenizer(texts[i]) for i in order) if d]
    vocabulary = select_vocabulary(docs, min_df=5, max_df=0.5, max_size=V)
    model = AnchorModel(K, rectify_anderson=0, random_state=seed).fit(
        cooccurrence(count_matrix(docs, vocabulary)))
    B = model.topic_word_
    return B / B.sum(axis=0, keepdims=True)


def fit_error(X: sp.csr_matrix, B: np.ndarray, K: int, **rectify_kw) -> tuple[int, float, float]:
    c = cooccurrence(X)
    C = c.normalized()
    active = np.flatnonzero(C.sum(axis=1) > 0)
    C = C[np.ix_(active, active)]
    t0 = time.perf_counter()
    res = rectify(C, K, dtype=np.float32, random_state=0, **rectify_kw)
    seconds = time.perf_counter() - t0
    anchors = find_anchors(res.matrix, K, method="qr",
                           candidates=candidate_words(c.doc_freq[active], 10))
    est = np.zeros((B.shape[0], K))
    est[active] = recover(res.matrix, anchors, method="admm").topic_word
    return res.n_iter, seconds, float(recovery_error(B, est)[0])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--truth-docs", type=int, default=50_000)
    p.add_argument("--vocab-size", type=int, default=5000)
    p.add_argument("--topics", "-k", type=int, default=50)
    p.add_argument("--docs", default="20000,50000", help="comma-separated corpus sizes")
    p.add_argument("--doc-length", type=int, default=8)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--tols", default="1e-4,1e-5", help="comma-separated rectify tolerances")
    p.add_argument("--max-iter", type=int, default=150)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    K = args.topics
    print(f"# bench_rectify ({time.strftime('%Y-%m-%d %H:%M')}): V = {args.vocab_size}, K = {K}, "
          f"{args.doc_length}-word documents, alpha = {args.alpha}, max_iter = {args.max_iter}")
    B = truth_from_corpus(args.data, args.truth_docs, args.vocab_size, K, args.seed)
    alpha = np.full(K, args.alpha)
    truth = PlantedModel(B, np.full(K, -1), dirichlet_second_moment(alpha), alpha)
    sizes = sorted(int(s) for s in args.docs.split(","))
    rng = np.random.default_rng(args.seed + 1)
    chunks, left = [], sizes[-1]
    while left > 0:  # sample_documents builds a dense (docs, V) array: draw in chunks
        n = min(left, 5000)
        chunks.append(sample_documents(truth, n, args.doc_length, random_state=rng)[0])
        left -= n
    X_all = sp.vstack(chunks, format="csr")
    print("| documents | tol | plain AP (peer): iterations, s, ℓ1 | Anderson (depth 5): "
          "iterations, s, ℓ1 |")
    print("|---:|---:|---|---|")
    for n in sizes:
        for tol in (float(t) for t in args.tols.split(",")):
            cells = []
            for depth in (0, 5):
                it, sec, err = fit_error(X_all[:n], B, K, tol=tol, anderson=depth,
                                         max_iter=args.max_iter)
                cells.append(f"{it}, {sec:.1f}, {err:.3f}")
            print(f"| {n:,} | {tol:g} | {cells[0]} | {cells[1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
