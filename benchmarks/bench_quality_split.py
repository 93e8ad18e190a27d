#!/usr/bin/env python
"""How much of a quality gap is the held-out split: each method scored on documents held out
at random from its own training text, beside the corpus's held-out pages (issue 16).

``bench_quality.py`` holds out whole pages, speeches or threads, so a topic about a subject
only the training pages discuss (one module's manual, say) finds its words apart in the
held-out documents and scores low, however well it describes the training text. That is the
right test of a topic service, which sees new pages, but it mixes two things: how good the
topics are, and how many of them are about subjects the held-out side lacks. This script
separates them. For each corpus and seed it holds out ``--share`` of the *training*
documents at random, fits anchorstream's default and the peers on the rest, and scores every
fit twice: on the documents held out at random (same pages, no shift) and on the corpus's own
held-out pages, as ``bench_quality.py`` does. A method ahead on the first and behind on the
second chose subjects the held-out pages lack.

Run from the repository root, in the benchmark environment (corpora as ``bench_quality.py``)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD \\
        benchmarks/.cache/venv/bin/python benchmarks/bench_quality_split.py \\
        --corpora passages,long --seeds 3 --peers anchortopics,tomotopy
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from benchmarks.quality.corpora import cache_root, load  # noqa: E402
from benchmarks.quality.metrics import (HeldoutIndex, evaluate,  # noqa: E402
                                        read_snapshot_model, read_snapshot_top_words)
from benchmarks.quality.peers import fit_peer  # noqa: E402
from benchmarks.quality.run import heldout_index, run  # noqa: E402


def random_split(train: Path, share: float, seed: int, out: Path) -> list[str]:
    """Write the training lines that stay to ``out`` (in their order) and return the texts of
    a seeded random ``share`` of them, held out."""
    lines = train.read_bytes().splitlines(keepends=True)
    n = max(1, round(share * len(lines)))
    held = np.zeros(len(lines), dtype=bool)
    held[np.random.default_rng(seed).choice(len(lines), size=n, replace=False)] = True
    out.write_bytes(b"".join(line for line, h in zip(lines, held) if not h))
    return [json.loads(line)["text"] for line, h in zip(lines, held) if h]


def fit_scores(method: str, corpus, train: Path, random_index: HeldoutIndex,
               work: Path) -> tuple[float, float]:
    """Held-out NPMI@10 of ``method`` fitted on ``train``: (random held-out, the corpus's)."""
    out = Path(tempfile.mkdtemp(prefix=f"{method}-", dir=work)) / "out"
    if method == "anchorstream":
        row = run(corpus.name, [], train=train, keep=out)
        if row["status"] != "ok":
            return float("nan"), float("nan")
        vocabulary, topic_word, prevalence = read_snapshot_model(out)
        mine = evaluate(vocabulary, topic_word, prevalence, random_index,
                        top=read_snapshot_top_words(out))["npmi"]
        return mine, row["npmi"]
    r = fit_peer(method, train, out, topics=corpus.n_topics, vocab_size=corpus.vocab_size,
                 stopwords=corpus.stopwords)
    if r["status"] != "ok":
        return float("nan"), float("nan")
    model = (r["vocabulary"], r["topic_word"], r["prevalence"])
    return (evaluate(*model, random_index)["npmi"],
            evaluate(*model, heldout_index(corpus.name))["npmi"])


def spread(x: np.ndarray) -> str:
    return f"{x.mean():+.4f} ± {x.std(ddof=1):.4f}" if x.size > 1 else f"{x[0]:+.4f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="passages,long,medium")
    p.add_argument("--seeds", type=int, default=3, help="random splits per corpus")
    p.add_argument("--share", type=float, default=0.2,
                   help="training documents held out at random")
    p.add_argument("--peers", default="anchortopics,tomotopy",
                   help="comma-separated peers (anchortopics, tomotopy, gensim)")
    a = p.parse_args(argv)
    if a.seeds < 1 or not 0 < a.share < 1:
        p.error("need --seeds >= 1 and 0 < --share < 1")
    methods = ["anchorstream", *[x for x in a.peers.split(",") if x]]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{started}; {a.seeds} random splits holding out {a.share:.0%} of the training "
          "documents; held-out NPMI@10, mean ± sd over the splits\n")
    print("| corpus | method | held out at random | the corpus's held-out |")
    print("|---|---|---:|---:|")
    results = {}
    for name in [c for c in a.corpora.split(",") if c]:
        corpus = load(name, verbose=False)
        work = Path(tempfile.mkdtemp(prefix="split-", dir=cache_root()))
        scores = {m: [] for m in methods}
        try:
            for seed in range(a.seeds):
                train = work / f"train-{seed}.jsonl"
                index = HeldoutIndex.build(random_split(corpus.train_path, a.share, seed,
                                                        train))
                for m in methods:
                    scores[m].append(fit_scores(m, corpus, train, index, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        s = {m: np.array(v) for m, v in scores.items()}
        results[name] = {m: v.tolist() for m, v in s.items()}
        for m, v in s.items():
            print(f"| {name} | {m} | {spread(v[:, 0])} | {spread(v[:, 1])} |", flush=True)
        if len(methods) > 1:
            lead = s["anchorstream"] - np.max([s[m] for m in methods[1:]], axis=0)
            print(f"| {name} | lead over the best peer | {spread(lead[:, 0])} | "
                  f"{spread(lead[:, 1])} |", flush=True)
    out = cache_root() / "results" / f"split-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"started": started, "share": a.share, "seeds": a.seeds,
                               "npmi": results}, indent=1))
    print(f"\nresults: {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
