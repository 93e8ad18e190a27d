#!/usr/bin/env python
"""How far a quality figure moves when 1 % of the training documents change: the noise under
``bench_quality.py``'s table (issue 16).

The quality benchmark prints one number per method and corpus (anchorstream's and
anchortopics' fits are deterministic). But the anchor search chooses among near ties and the
peers' solvers have their own paths, so a slightly different sample of the same text moves held-out NPMI, and a
difference between two methods smaller than that movement says nothing about which one is
better. For each corpus this script fits anchorstream's default and the peers on the whole
training file and on ``--draws`` random subsamples of it (each keeps ``--share`` of the
documents, the same subsample for every method), scores every fit on the corpus's held-out
documents as ``bench_quality.py`` does, and prints each method's NPMI on all the data and over
the draws, then anchorstream's lead over the best peer, paired draw by draw.

Run from the repository root, in the benchmark environment (corpora as ``bench_quality.py``)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD \\
        benchmarks/.cache/venv/bin/python benchmarks/bench_quality_noise.py \\
        --corpora quotes,citas,passages,long,medium --draws 5 --peers anchortopics
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
from benchmarks.quality.metrics import evaluate  # noqa: E402
from benchmarks.quality.peers import fit_peer  # noqa: E402
from benchmarks.quality.run import heldout_index, run  # noqa: E402

CORPORA = "quotes,zitate,citas,passages,mail,medium,tech,long,pypi12"


def subsample(train: Path, share: float, seed: int, out: Path) -> Path:
    """``out``: a seeded random ``share`` of ``train``'s lines, in their order."""
    lines = train.read_bytes().splitlines(keepends=True)
    n = max(1, round(share * len(lines)))
    keep = np.sort(np.random.default_rng(seed).choice(len(lines), size=n, replace=False))
    out.write_bytes(b"".join(lines[i] for i in keep))
    return out


def fit_npmi(method: str, corpus, train: Path, work: Path, vocab_size: int | None = None
             ) -> float:
    """Held-out NPMI@10 of ``method`` (``anchorstream`` or a peer) fitted on ``train``, with
    ``vocab_size`` words at most (default: the corpus's V)."""
    V = vocab_size or corpus.vocab_size
    if method == "anchorstream":
        row = run(corpus.name, [], train=train, vocab_size=V)
        return row["npmi"] if row["status"] == "ok" else float("nan")
    out = Path(tempfile.mkdtemp(prefix=f"{method}-", dir=work)) / "out"
    r = fit_peer(method, train, out, topics=corpus.n_topics, vocab_size=V,
                 stopwords=corpus.stopwords)
    if r["status"] != "ok":
        return float("nan")
    return evaluate(r["vocabulary"], r["topic_word"], r["prevalence"],
                    heldout_index(corpus.name))["npmi"]


def spread(x: np.ndarray) -> str:
    return f"{x.mean():+.4f} ± {x.std(ddof=1):.4f} ({x.min():+.4f} … {x.max():+.4f})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default=CORPORA)
    p.add_argument("--draws", type=int, default=5, help="subsamples per corpus (>= 2)")
    p.add_argument("--share", type=float, default=0.99, help="documents each subsample keeps")
    p.add_argument("--peers", default="anchortopics",
                   help="comma-separated peers (anchortopics, tomotopy, gensim)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first subsample")
    p.add_argument("--vocab-size", "-V", type=int, default=None,
                   help="V for every corpus and method (default: each corpus's own)")
    a = p.parse_args(argv)
    if a.draws < 2 or not 0 < a.share < 1:
        p.error("need --draws >= 2 and 0 < --share < 1")
    methods = ["anchorstream", *[x for x in a.peers.split(",") if x]]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    at = f"; V = {a.vocab_size}" if a.vocab_size else ""
    print(f"{started}; {a.draws} draws of {a.share:.0%} of the training documents{at}; held-out "
          "NPMI@10 as mean ± sd (min … max) over the draws\n")
    print("| corpus | method | all documents | draws |")
    print("|---|---|---:|---|")
    results = {}
    for name in [c for c in a.corpora.split(",") if c]:
        corpus = load(name, verbose=False)
        work = Path(tempfile.mkdtemp(prefix="noise-", dir=cache_root()))
        try:
            trains = [corpus.train_path] + [
                subsample(corpus.train_path, a.share, a.seed + d, work / f"train-{d}.jsonl")
                for d in range(a.draws)]
            scores = {m: np.array([fit_npmi(m, corpus, t, work, a.vocab_size)
                                   for t in trains])
                      for m in methods}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        results[name] = {m: s.tolist() for m, s in scores.items()}
        for m, s in scores.items():
            print(f"| {name} | {m} | {s[0]:+.4f} | {spread(s[1:])} |", flush=True)
        if len(methods) > 1:
            best = np.max([scores[m] for m in methods[1:]], axis=0)
            lead = scores["anchorstream"] - best
            ahead = int(np.sum(lead[1:] > 0))
            print(f"| {name} | lead over the best peer | {lead[0]:+.4f} | {spread(lead[1:])}; "
                  f"ahead in {ahead} of {a.draws} |", flush=True)
    out = cache_root() / "results" / f"noise-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"started": started, "share": a.share, "draws": a.draws,
                               "seed": a.seed, "vocab_size": a.vocab_size,
                               "npmi": results}, indent=1))
    print(f"\nresults: {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
