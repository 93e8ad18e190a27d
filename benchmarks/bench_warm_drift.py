#!/usr/bin/env python
"""How far warm updates of a rectification stray from cold rectifications, round by round.

A warm refresh does not rerun alternating projection (AP): it updates the last cold result to
first order in the data's change (:func:`anchorstream.model.rectify.rectify_update`). This script
measures the price on real text. A co-occurrence over a fixed vocabulary is built from
``--docs`` documents, then ``--rounds`` rounds each add 1% new ones. Every round it prints the
relative Frobenius distance to a cold rectification of the same data (the peer, computed in
the same run) of two kinds of warm update:

- **chain**: each update starts from the previous update's result and data;
- **from cold**: each update starts from the first round's cold result and follows the whole
  change since (what :class:`anchorstream.model.pipeline.AnchorModel` does);

next to the summed change of the data and how far the cold result itself moved since round 0
(the scale of the differences). Typical figures (npm summaries, V = 5000, K = 50): both kinds
stray by about half the summed change, so the daemon keeps the cheaper state (the cold one's)
and bounds the summed change (``model.rectify_warm_change``).

``--rectifier lowrank`` measures the low-rank rectifier's update instead
(:func:`anchorstream.model.lowrank_warm.rectify_lowrank_update`, what the pipeline runs: from
the last cold result over the whole change since, so there is no chain column). Its results
are operators, never ``V x V`` arrays, so the distances are estimated from their products with
32 random vectors (relative error of a few percent); the counts are read as the store holds
them (sparse), weighted as the product weights them (``LENGTH_CAP``; the dense rows use the
papers' estimator they were first measured with).

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_warm_drift.py --corpus ../shared/data/npm_summaries.jsonl.gz
    PYTHONPATH=. python benchmarks/bench_warm_drift.py --rectifier lowrank
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np

from anchorstream.stats.cooccurrence import LENGTH_CAP, cooccurrence
from anchorstream.model.lowrank import rectify_lowrank
from anchorstream.model.lowrank_warm import data_product, probes, rectify_lowrank_update
from anchorstream.model.rectify import rectify, rectify_update
from anchorstream.stats.sparse import SparseCooccurrence
from anchorstream.text.tokenize import Tokenizer, count_matrix, select_vocabulary


def _tokens(path: Path, n: int, seed: int) -> list[list[str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        texts = [json.loads(line).get("text") for line in fh]
    texts = [t for t in texts if isinstance(t, str) and t.strip()]
    order = np.random.default_rng(seed).permutation(len(texts))[:n]
    tokenizer = Tokenizer()
    return [tokenizer(texts[i]) for i in order]


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _rel_operator(a, b, Z: np.ndarray) -> float:
    """``‖a − b‖_F / ‖b‖_F`` estimated from the products with the random columns of ``Z``."""
    az, bz = a @ Z, b @ Z
    return float(np.linalg.norm(az - bz) / np.linalg.norm(bz))


def _lowrank_rounds(state, new, per_round, vocab, args) -> None:
    """The low-rank rectifier's rounds: its update from the first cold result against a cold
    rectification of the same data, each round."""
    Z = np.random.default_rng(args.seed + 1).standard_normal((len(vocab), 32))
    C0 = SparseCooccurrence.from_dense(state)
    cold0 = rectify_lowrank(C0, args.topics, random_state=args.seed)
    G = probes(len(vocab), args.seed)
    product0 = data_product(C0, np.hstack([cold0.factor, G]))
    print(f"{'round':<7}{'summed change':>15}{'cold moved':>12}{'from cold':>11}")
    for r in range(1, args.rounds + 1):
        state = state + cooccurrence(count_matrix(new[(r - 1) * per_round: r * per_round], vocab),
                                     length_cap=LENGTH_CAP)
        C = SparseCooccurrence.from_dense(state)
        cold = rectify_lowrank(C, args.topics, random_state=args.seed)
        once = rectify_lowrank_update(C, cold0.factor, G, product0, max_change=1.0)
        print(f"{r:<7}{once.residual:>15.4f}{_rel_operator(cold.matrix, cold0.matrix, Z):>12.4f}"
              f"{_rel_operator(once.matrix, cold.matrix, Z):>11.4f}", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("../shared/data/npm_summaries.jsonl.gz"))
    p.add_argument("--docs", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--vocab", type=int, default=5000)
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rectifier", choices=("ap", "lowrank"), default="ap",
                   help="whose warm update to measure: the dense rectifier's (alternating "
                        "projection) or the low-rank one's (the default of model.rectify_method)")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    per_round = max(args.docs // 100, 1)
    docs = _tokens(args.corpus, args.docs + per_round * args.rounds, args.seed)
    base, new = docs[: args.docs], docs[args.docs:]
    vocab = select_vocabulary(base, min_df=3, max_size=args.vocab)
    # The dense rows keep the papers' estimator they were measured with; the low-rank ones use
    # the product's document weighting (stats.cooccurrence.LENGTH_CAP).
    state = cooccurrence(count_matrix(base, vocab),
                         length_cap=LENGTH_CAP if args.rectifier == "lowrank" else 2)
    print(f"# bench_warm_drift: {args.corpus.name}, {args.docs:,} documents + {args.rounds} "
          f"rounds of {per_round:,}, V = {len(vocab)}, K = {args.topics} "
          f"(data built in {time.perf_counter() - t0:.1f} s)")
    if args.rectifier == "lowrank":
        _lowrank_rounds(state, new, per_round, vocab, args)
        return 0
    kw = dict(tol=1e-3, dtype=np.float32, random_state=args.seed, refine_eigvecs=False)

    C0 = state.counts / state.num_docs
    cold0 = rectify(C0.copy(), args.topics, **kw)
    chain = (C0.astype(np.float32), cold0.factor, cold0.shift)
    anchored = chain
    print(f"{'round':<7}{'summed change':>15}{'cold moved':>12}{'chain':>10}{'from cold':>11}")
    for r in range(1, args.rounds + 1):
        state = state + cooccurrence(count_matrix(new[(r - 1) * per_round: r * per_round], vocab))
        C = state.counts / state.num_docs
        cold = rectify(C.copy(), args.topics, **kw)
        step = rectify_update(C.copy(), *chain, max_change=1.0)
        chain = (C.astype(np.float32), step.factor, step.shift)
        once = rectify_update(C.copy(), *anchored, max_change=1.0)
        print(f"{r:<7}{_rel(C, C0):>15.4f}{_rel(cold.matrix, cold0.matrix):>12.4f}"
              f"{_rel(step.matrix, cold.matrix):>10.4f}{_rel(once.matrix, cold.matrix):>11.4f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
