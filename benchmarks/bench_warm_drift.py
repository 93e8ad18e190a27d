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

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_warm_drift.py --corpus ../shared/data/npm_summaries.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np

from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.model.rectify import rectify, rectify_update
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("../shared/data/npm_summaries.jsonl.gz"))
    p.add_argument("--docs", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--vocab", type=int, default=5000)
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    per_round = max(args.docs // 100, 1)
    docs = _tokens(args.corpus, args.docs + per_round * args.rounds, args.seed)
    base, new = docs[: args.docs], docs[args.docs:]
    vocab = select_vocabulary(base, min_df=3, max_size=args.vocab)
    state = cooccurrence(count_matrix(base, vocab))
    print(f"# bench_warm_drift: {args.corpus.name}, {args.docs:,} documents + {args.rounds} "
          f"rounds of {per_round:,}, V = {len(vocab)}, K = {args.topics} "
          f"(data built in {time.perf_counter() - t0:.1f} s)")
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
