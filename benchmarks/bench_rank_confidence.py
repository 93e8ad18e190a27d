#!/usr/bin/env python
"""Top words ranked by a lower confidence bound of ``p(w | k)``: measured, not adopted
(issue 16; benchmarks/README.md, "Top words by a lower confidence bound").

A topic's top words are ranked by ``p(w | k)`` above the background level
(:mod:`anchorstream.model.background`). A word that is rare in the corpus can reach a high
``p(w | k)`` on a handful of tokens, and on held-out text two such words seldom meet. This
script asks whether ranking by a lower confidence bound of ``p(w | k)`` instead, in the
spirit of ranking by the lower bound of an interval rather than by its centre, would publish
better top words. With ``N`` in-vocabulary training tokens, topic ``k`` holds an expected
``n_wk = N p(k) p(w | k)`` tokens of word ``w``; their Poisson lower bound ``max(n_wk − z √n_wk,
0)``, renormalized per topic, replaces ``p(w | k)`` in the ranking (background included). ``z
= 0`` is the published ranking; the model itself is unchanged.

Each corpus is fitted once with ``anchorstream fit`` defaults (as ``bench_quality.py`` fits
it), and every ``z`` re-ranks that snapshot's ``topic_word`` and is scored as the quality
benchmark scores: held-out NPMI@10 / unique@10.

Run from the repository root, in the benchmark environment (corpora as ``bench_quality.py``)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD \\
        benchmarks/.cache/venv/bin/python benchmarks/bench_rank_confidence.py \\
        --corpora quotes,citas,long --z 1,1.96,3
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from anchorstream.model.background import (BACKGROUND_SPREAD, background_level,  # noqa: E402
                                           ranked_top_words)
from benchmarks.quality.corpora import load, training_documents  # noqa: E402
from benchmarks.quality.metrics import (evaluate, read_snapshot_model,  # noqa: E402
                                        read_snapshot_top_words)
from benchmarks.quality.run import heldout_index, run  # noqa: E402

CORPORA = ("short,pypi,pypi12,glosses,quotes,zitate,citas,passages,mail,medium,tech,long,"
           "synth8-100k,synth60-100k")


def confidence_topic_word(topic_word: np.ndarray, prevalence: np.ndarray, n_tokens: float,
                          z: float) -> np.ndarray:
    """Rows ``max(n_wk − z √n_wk, 0)`` renormalized, ``n_wk = N p(k) p(w | k)`` (K × V).

    >>> B = np.array([[0.5, 0.5], [0.9, 0.1]])
    >>> confidence_topic_word(B, np.array([0.5, 0.5]), 200, 0.0).round(2).tolist()
    [[0.5, 0.5], [0.9, 0.1]]
    >>> confidence_topic_word(B, np.array([0.5, 0.5]), 200, 2.0).round(2).tolist()
    [[0.5, 0.5], [0.95, 0.05]]
    """
    joint = prevalence[:, None] * topic_word
    n = n_tokens * joint / joint.sum()
    low = np.maximum(n - z * np.sqrt(n), 0.0)
    return low / np.maximum(low.sum(axis=1, keepdims=True), 1e-300)


def in_vocabulary_tokens(corpus, vocabulary: list[str]) -> int:
    """Training tokens (anchorstream's tokenizer) that are words of ``vocabulary``."""
    words = set(vocabulary)
    return sum(1 for doc in training_documents(corpus) for t in doc if t in words)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default=CORPORA)
    p.add_argument("--z", default="1,1.645,1.96,2.5,3,5",
                   help="comma-separated multiples of the Poisson standard deviation")
    p.add_argument("--topics", "-k", type=int, default=None, help="K (default: the corpus's)")
    a = p.parse_args(argv)
    zs = [float(z) for z in a.z.split(",") if z]
    print("held-out NPMI@10 / unique@10 (published: the snapshot's own ranking, z = 0)\n")
    print("| corpus | K | tokens | published | " + " | ".join(f"z = {z:g}" for z in zs) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(zs))
    for name in [c for c in a.corpora.split(",") if c]:
        corpus = load(name, verbose=False)
        work = Path(tempfile.mkdtemp(prefix="rank-"))
        try:
            row = run(name, [], topics=a.topics, keep=work / "snapshot")
            if row.get("status") != "ok":
                print(f"| {name} | {row.get('status')} |", flush=True)
                continue
            vocabulary, B, prevalence = read_snapshot_model(work / "snapshot")
            published = read_snapshot_top_words(work / "snapshot")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        index = heldout_index(name)
        n_tokens = in_vocabulary_tokens(corpus, vocabulary)
        rankings = [published]
        for z in zs:
            P = confidence_topic_word(B, prevalence, n_tokens, z)
            ranked = ranked_top_words(P, 10, background_level(P, BACKGROUND_SPREAD))
            rankings.append([[vocabulary[i] for i in r] for r in ranked])
        cells = []
        for top in rankings:
            r = evaluate(vocabulary, B, prevalence, index, corpus.truth, top=top)
            cells.append(f"{r['npmi']:+.4f} / {r['unique']:.2f}")
        print(f"| {name} | {B.shape[0]} | {n_tokens:,} | " + " | ".join(cells) + " |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
