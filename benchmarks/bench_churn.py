#!/usr/bin/env python
"""Topic churn between refreshes: do births mean something? (issue 19, item 1)

For each corpus this script fits the daemon's model (:class:`AnchorModel`, the shipped
settings, length cap 25) on a random 90 % of the documents and then refits as the daemon
does, aligning ids with :func:`anchorstream.model.align.align_topics` (``min_similarity``
0.5, ``refresh.align_min_similarity``):

* **same data, warm**: a refresh with nothing new (the refresher skips this case, but a
  restart on an unchanged store refits cold, the next row);
* **same data, cold** with the same seed (a restart) and with another seed (how much a
  cold fit reshuffles by itself);
* **+1 % warm** ×5: five refreshes, each after 1 % more documents, warm-started (the daemon's
  steady state), then the trends of those six snapshots (:func:`compute_trends`, shipped
  settings): raw births against the topics reported *new*;
* **+1 % cold**: a restart one refresh later;
* **random halves, cold**: two fits on disjoint halves (the issue's 19-29 of 100 unmatched).

Each row prints births and deaths, and the least and median similarity (1 - TV) of the
matched topics; for births, the best similarity each had to a previous topic (how close a
lower threshold would have to be to keep them). Run from the repository root::

    nice -n 10 .venv/bin/python benchmarks/bench_churn.py                 # both corpora
    nice -n 10 .venv/bin/python benchmarks/bench_churn.py --corpora sample --vocab 2000
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from anchorstream.model.align import align_topics  # noqa: E402
from anchorstream.model.pipeline import AnchorModel  # noqa: E402
from anchorstream.model.trends import HistoryEntry, compute_trends  # noqa: E402
from anchorstream.stats.cooccurrence import cooccurrence  # noqa: E402
from anchorstream.text.tokenize import Tokenizer, count_matrix, select_vocabulary  # noqa: E402

CORPORA = {
    "sample": (REPO / "daemon/data/sample.jsonl.gz", 20),
    "npm": (Path("/work/shared/data/npm_summaries.jsonl.gz"), 50),
}


def load(path: Path, limit: int | None) -> list[list[str]]:
    tok = Tokenizer()
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            doc = tok(json.loads(line)["text"])
            if len(doc) >= 2:
                out.append(doc)
            if limit and len(out) >= limit:
                break
    return out


def fit(X, K: int, seed: int = 0, init: AnchorModel | None = None) -> AnchorModel:
    model = AnchorModel(n_topics=K, random_state=seed)
    model.fit(cooccurrence(X, length_cap=25), init=init)
    return model


def row(name: str, a, seconds: float) -> None:
    sims = [m.similarity for m in a.matches]
    best = (a.similarity.max(axis=0)[[i for i, t in enumerate(a.ids) if t in set(a.births)]]
            if a.births and a.similarity.size else [])
    print(f"  {name:28s} births {len(a.births):3d}  deaths {len(a.deaths):3d}  "
          f"matched sim min {min(sims, default=float('nan')):.3f} "
          f"median {float(np.median(sims)) if sims else float('nan'):.3f}  "
          f"births' best sim {np.round(np.sort(best)[::-1][:5], 2).tolist()}  ({seconds:.1f} s)")


def churn(name: str, docs: list[list[str]], K: int, vocab_size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(docs))
    docs = [docs[i] for i in order]
    vocab = list(select_vocabulary(docs, min_df=5, max_df=0.5, max_size=vocab_size))
    X = count_matrix(docs, vocab).tocsr()
    n = X.shape[0]
    base = int(0.9 * n)
    print(f"{name}: {n:,} documents, V = {len(vocab):,}, K = {K}, base {base:,} (90 %), "
          f"steps of {int(0.01 * n):,} (1 %)")
    t = time.perf_counter()
    m0 = fit(X[:base], K, seed)
    print(f"  cold fit on the base: {time.perf_counter() - t:.1f} s")
    ids0 = np.arange(K)

    def align(model, prev, prev_ids):
        return align_topics(model.topic_word_, vocab, prev.topic_word_, vocab, prev_ids,
                            min_similarity=0.5)

    for label, kwargs in (("same data, warm", {"init": m0.remapped(vocab, vocab)}),
                          ("same data, cold, same seed", {}),
                          ("same data, cold, seed + 1", {"seed": seed + 1})):
        t = time.perf_counter()
        m = fit(X[:base], K, **{"seed": seed, **kwargs})
        row(label, align(m, m0, ids0), time.perf_counter() - t)

    history = [HistoryEntry(1, "2026-01-01T00:00:01Z", dict(enumerate(m0.prevalence_.tolist())),
                            _words(m0, vocab, ids0))]
    prev, prev_ids, next_id, births = m0, ids0, K, 0
    for step in range(1, 6):
        t = time.perf_counter()
        m = fit(X[:base + step * int(0.01 * n)], K, seed, init=prev.remapped(vocab, vocab))
        a = align_topics(m.topic_word_, vocab, prev.topic_word_, vocab, prev_ids,
                         next_id=next_id, min_similarity=0.5)
        row(f"+{step} % warm", a, time.perf_counter() - t)
        births += len(a.births)
        history.append(HistoryEntry(step + 1, f"2026-01-01T00:00:{step + 1:02d}Z",
                                    dict(zip(a.ids.tolist(), m.prevalence_.tolist())),
                                    _words(m, vocab, a.ids)))
        prev, prev_ids, next_id = m, a.ids, a.next_id
    tr = compute_trends(history)
    print(f"  over the 5 warm refreshes: {births} raw births; /v1/trends: {len(tr.new)} new, "
          f"{len(tr.rising)} rising, {len(tr.falling)} falling, {len(tr.gone)} gone")

    t = time.perf_counter()
    m = fit(X[:base + int(0.01 * n)], K, seed)
    row("+1 % cold (a restart)", align(m, m0, ids0), time.perf_counter() - t)
    half = n // 2
    t = time.perf_counter()
    a, b = fit(X[:half], K, seed), fit(X[half:2 * half], K, seed)
    row("random halves, cold", align(b, a, ids0), time.perf_counter() - t)


def _words(model, vocab, ids) -> dict[int, list[str]]:
    top = np.argsort(-model.topic_word_, axis=0)[:10]
    return {int(i): [vocab[w] for w in top[:, k]] for k, i in enumerate(ids)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="sample,npm")
    p.add_argument("--vocab", type=int, default=3000)
    p.add_argument("--limit", type=int, default=60000, help="documents read per corpus")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    for name in a.corpora.split(","):
        path, K = CORPORA[name]
        churn(name, load(path, a.limit), K, a.vocab, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
