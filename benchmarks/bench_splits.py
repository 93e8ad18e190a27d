#!/usr/bin/env python
"""Held-out NPMI over several random splits: anchorstream settings against anchortopics.

One split of a corpus makes a noisy judge: on the npm corpus, held-out NPMI@10 of the same
settings moved by 0.02-0.04 from one split to the next, as much as the differences between
settings. This script fits, for each of ``--seeds`` (each a different 50k / 50k split, as in
``bench_fit.py``), anchorstream under every ``--setting`` and the peer anchortopics (OTFR
defaults) on the same bag of words, and prints per split and on average: held-out NPMI@10,
unique@10 and the fit seconds (corpus in memory, co-occurrence included; not end to end: see
``bench_fit.py`` for that).

Run it in the benchmark environment (``make bench``), from the repository root::

    python benchmarks/bench_splits.py --seeds 0,1,2,3 \\
        --setting '{}' --setting '{"rectify_tol": 1e-4}'

A ``--setting`` is a JSON object of :func:`anchorstream.model.methods.fit_topics` keyword arguments
(``ModelSettings`` fields). anchortopics is skipped with a note when it is not importable.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_fit import MAX_DF, MIN_DF, TOP_N, read_texts  # noqa: E402

from anchorstream.stats.cooccurrence import cooccurrence  # noqa: E402
from anchorstream.evaluate import npmi_coherence, unique_word_ratio  # noqa: E402
from anchorstream.model.methods import fit_topics  # noqa: E402
from anchorstream.text.tokenize import Tokenizer, count_matrix, select_vocabulary  # noqa: E402

PEER = "anchortopics"


def score(topic_word: np.ndarray, X_heldout) -> tuple[float, float]:
    """Held-out NPMI@10 and unique@10 of a (K, V) topic-word matrix."""
    top = np.argsort(-topic_word, axis=1, kind="stable")[:, :TOP_N]
    return float(np.mean(npmi_coherence(top, X_heldout))), float(unique_word_ratio(top))


def fit_peer(X, n_topics: int, seed: int) -> np.ndarray | None:
    try:
        from anchortopics import OTFR
    except ImportError:
        return None
    return np.asarray(OTFR(n_topics=n_topics, random_state=seed).fit(X).components_)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path,
                   default=HERE.parent.parent / "shared" / "data" / "npm_summaries.jsonl.gz")
    p.add_argument("--seeds", default="0,1,2,3", help="comma-separated split seeds")
    p.add_argument("--n-train", type=int, default=50_000)
    p.add_argument("--n-heldout", type=int, default=50_000)
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--vocab-size", type=int, default=5000)
    p.add_argument("--setting", action="append", default=None,
                   help="JSON object of fit_topics settings (repeatable; default: '{}')")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    settings = args.setting or ["{}"]
    for s in settings:
        json.loads(s)  # fail before any work on a typo
    texts = read_texts(args.data)
    if args.n_train + args.n_heldout > len(texts):
        sys.exit(f"{args.data} has {len(texts)} documents, fewer than --n-train + --n-heldout")
    tokenizer = Tokenizer()
    rows: dict[str, list[tuple[float, float, float]]] = {s: [] for s in settings + [PEER]}
    print(f"# bench_splits ({time.strftime('%Y-%m-%d %H:%M')}): {args.n_train} training / "
          f"{args.n_heldout} held-out documents per split, V = {args.vocab_size}, "
          f"K = {args.topics}", flush=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        order = np.random.default_rng(seed).permutation(len(texts))
        docs = [d for d in (tokenizer(texts[i]) for i in order[: args.n_train]) if d]
        vocabulary = select_vocabulary(docs, min_df=MIN_DF, max_df=MAX_DF,
                                       max_size=args.vocab_size)
        X = count_matrix(docs, vocabulary)
        held = order[args.n_train: args.n_train + args.n_heldout]
        X_held = count_matrix([tokenizer(texts[i]) for i in held], vocabulary)
        for name in settings + [PEER]:
            t0 = time.perf_counter()
            if name == PEER:
                topic_word = fit_peer(X, args.topics, seed)
                if topic_word is None:
                    rows.pop(PEER, None)
                    continue
            else:
                fit = fit_topics(args.topics, cooc=cooccurrence(X), documents=X,
                                 random_state=seed, overwrite_cooc=True, warm_state=False,
                                 **json.loads(name))
                topic_word = fit.topic_word.T
            seconds = time.perf_counter() - t0
            npmi, unique = score(topic_word, X_held)
            rows[name].append((npmi, unique, seconds))
            print(f"split {seed}: {name}: NPMI {npmi:+.4f}, unique {unique:.3f}, "
                  f"{seconds:.1f} s", flush=True)
    if PEER not in rows:
        print(f"({PEER} is not installed: no peer column)")
    print("\n| setting | held-out NPMI@10 per split | mean ± sd | unique@10 (mean) | "
          "fit seconds (mean) |")
    print("|---|---|---:|---:|---:|")
    for name, r in rows.items():
        a = np.array(r)
        label = f"{PEER} (OTFR defaults)" if name == PEER else f"anchorstream `{name}`"
        per = " / ".join(f"{x:+.4f}" for x in a[:, 0])
        print(f"| {label} | {per} | {a[:, 0].mean():+.4f} ± {a[:, 0].std():.4f} | "
              f"{a[:, 1].mean():.3f} | {a[:, 2].mean():.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
