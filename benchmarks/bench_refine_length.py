#!/usr/bin/env python
"""Where ``model.refine: auto`` should refine: the pair refinement against none, by document
length (issue 16, item 4).

The corpora of the quality benchmark differ in more than their documents' length. Here the
length alone changes: each corpus's training documents, tokenized as ``anchorstream fit``
does, are cut into consecutive windows of ``N`` tokens (``--windows``; 0 keeps the documents
whole), and each set of windows is fitted twice in this process, with ``refine="none"`` and
with ``refine="joint"`` (converged, as ``auto`` runs it), everything else the default. Each
fit is scored on the corpus's held-out documents, whole, as ``bench_quality.py`` scores
(held-out NPMI@10 of the top words the snapshot would publish, ranked above the background
words; the most probable words in brackets), with its dead topics (prevalence < 0.001) and
CPU seconds. "fit length" is what ``auto`` compares with ``REFINE_AUTO_MAX_LENGTH``: tokens
in the vocabulary per document of at least 2.

Run from the repository root, in the benchmark environment (corpora as ``bench_quality.py``)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD \\
        benchmarks/.cache/venv/bin/python benchmarks/bench_refine_length.py \\
        --corpora tech,long,medium,pypi12 --windows 12,18,24,0
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from anchorstream.model.lowrank import DocumentCooccurrence  # noqa: E402
from anchorstream.model.pipeline import AnchorModel  # noqa: E402
from anchorstream.stats.cooccurrence import LENGTH_CAP  # noqa: E402
from benchmarks.quality.corpora import fit_counts, load, training_documents  # noqa: E402
from benchmarks.quality.metrics import (HeldoutIndex, npmi, published_top_words,  # noqa: E402
                                        top_word_strings, unique)


def windows(docs: list[list[str]], n: int) -> list[list[str]]:
    """Consecutive windows of ``n`` tokens (``n = 0``: the documents), those of >= 2 tokens."""
    cut = [d[s:s + n] for d in docs for s in range(0, len(d), n)] if n else docs
    return [w for w in cut if len(w) >= 2]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="tech,long,medium,pypi12")
    p.add_argument("--windows", default="12,18,24,0",
                   help="comma-separated window lengths in tokens (0: whole documents)")
    a = p.parse_args(argv)
    print("| corpus | window | documents | fit length | none: NPMI (most probable) / unique "
          "/ dead / CPU s | joint: NPMI (most probable) / unique / dead / CPU s | joint − none |")
    print("|---|---:|---:|---:|---|---|---:|")
    for name in [c for c in a.corpora.split(",") if c]:
        corpus = load(name, verbose=False)
        docs = training_documents(corpus)
        index = HeldoutIndex.for_corpus(corpus)
        K = corpus.n_topics
        for n in [int(x) for x in a.windows.split(",") if x]:
            texts = windows(docs, n)
            vocab, X = fit_counts(texts, corpus.vocab_size)
            lengths = np.asarray(X.sum(axis=1)).ravel()
            fit_length = float(lengths[lengths >= 2].mean())
            cells, scores = [], []
            for refine in ("none", "joint"):
                t = time.process_time()
                m = AnchorModel(K, refine=refine).fit(
                    DocumentCooccurrence(X, length_cap=LENGTH_CAP), warm_state=False)
                cpu = time.process_time() - t
                B = m.topic_word_.T
                top = published_top_words(vocab, B)
                score = float(np.mean(npmi(top, index)))
                plain = float(np.mean(npmi(top_word_strings(vocab, B), index)))
                prev = m.prevalence_ / m.prevalence_.sum()
                dead = int((prev < 1e-3).sum())
                scores.append(score)
                cells.append(f"{score:+.4f} ({plain:+.4f}) / {unique(top):.3f} / {dead} / "
                             f"{cpu:.1f}")
            print(f"| {name} | {n or 'whole'} | {len(texts):,} | {fit_length:.1f} | "
                  f"{cells[0]} | {cells[1]} | {scores[1] - scores[0]:+.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
