"""The semi-synthetic protocols of the seed papers, run by anchorstream with each paper's baseline.

Imported by ``bench_methods.py`` (section (d)); usable alone::

    python benchmarks/paper_protocols.py --only tsvd-nyt --docs 40000,50000,60000
    python benchmarks/paper_protocols.py --only issue --methods "default (qr/admm),ddp,rp"

* **Bansal et al. 2014 (TSVD), Table 2**: topics of a Gibbs LDA fit (K = 50) as the truth,
  documents of 300 (NYT) and 100 (Pubmed) words, θ ~ Dirichlet(0.01), 40,000 / 50,000 / 60,000
  documents; baseline Recover-KL and Recover-L2 (Arora et al. 2013: FastAnchorWords, no
  rectification, the unbiased estimator). The truth here is the tomotopy fit of the ``tech``
  corpus (V = 5000, K = 50; ``benchmarks/quality/synthetic.py``): the same V and K as the
  paper's NYT and Pubmed, another corpus.
* **Ding et al. 2014 (DDP, RP), Fig. 2 (upper)**: their synthetic separable model, W = 500,
  K = 5, a fifth of the words novel (Uniform[0, 1] weights on one topic), every other row uniform
  on the simplex, columns normalized; θ ~ Dirichlet(0.1), N = 100 words, M up to 1000 documents;
  baseline RecoverL2. Also the same α and N on the Gibbs truth (K = 50), where separability
  holds only approximately.
* **The issue's regime**: Gibbs truth, 50,000 documents of 60 words, θ ~ Dirichlet(0.03).

ℓ1: mean over true topics of the ℓ1 distance to the matched estimate (Hungarian matching).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from anchorstream.evaluate import recovery_error  # noqa: E402
from anchorstream.model import methods  # noqa: E402
from anchorstream.model.methods import fit_topics  # noqa: E402
from anchorstream.stats.cooccurrence import cooccurrence  # noqa: E402

#: label -> (fit_topics keyword arguments, co-occurrence length cap). anchor_min_df 100 is
#: `anchorstream fit`'s default; the Arora 2013 baselines use its estimator (cap 2), no
#: rectification, FastAnchorWords.
METHODS: dict[str, tuple[dict, float]] = {
    "default (qr/admm)": (dict(anchor_method="qr", recover_method="admm"), 25),
    "Recover-L2 (Arora 2013)": (dict(anchor_method="fast", recover_method="l2",
                                     rectify=False), 2),
    "Recover-KL (Arora 2013)": (dict(anchor_method="fast", recover_method="kl",
                                     rectify=False), 2),
    "tsvd": (dict(method="tsvd"), 25),
    "tsvd (paper)": (dict(method="tsvd"), 25),
    "ddp": (dict(anchor_method="ddp"), 25),
    "rp": (dict(anchor_method="rp"), 25),
    "ddp (paper)": (dict(anchor_method="ddp"), 25),
    "rp (paper)": (dict(anchor_method="rp"), 25),
    "ddp (Algorithm 4)": (dict(anchor_method="ddp"), 25),
    "rp (Algorithm 4)": (dict(anchor_method="rp"), 25),
    "ddp (K clusters)": (dict(anchor_method="ddp"), 25),
    "rp (K clusters)": (dict(anchor_method="rp"), 25),
}

#: label -> ``anchorstream.model.methods`` settings changed for that fit: TSVD's topics as the
#: paper estimates them (averages of the documents richest in each cluster's catchwords); DDP
#: and RP as the paper describes them (plain cluster averages; RP's detection on the raw
#: projections, the 5 most extreme words of each cluster as before session 15; topics by
#: Algorithm 4), to compare with the defaults; "(Algorithm 4)": the defaults but for the topics
#: (before session 33).
SETTINGS: dict[str, dict] = {
    "tsvd (paper)": {"TSVD_TOPICS": "documents"},
    "ddp (paper)": {"DDP_N_EXTREME": None, "NOVEL_CLUSTERS_PER_TOPIC": 1,
                    "NOVEL_WORD_TOPICS": "patterns"},
    "rp (paper)": {"RP_NOISE_AWARE": False, "RP_N_EXTREME": 5, "NOVEL_CLUSTERS_PER_TOPIC": 1,
                   "NOVEL_WORD_TOPICS": "patterns"},
    "ddp (Algorithm 4)": {"NOVEL_WORD_TOPICS": "patterns"},
    "rp (Algorithm 4)": {"NOVEL_WORD_TOPICS": "patterns"},
    "ddp (K clusters)": {"NOVEL_CLUSTERS_PER_TOPIC": 1},
    "rp (K clusters)": {"NOVEL_CLUSTERS_PER_TOPIC": 1},
}

PAPER = {  # the papers' own figures for the rows of their protocols
    ("tsvd", 300): "NYT: R-KL 0.208 / 0.206 / 0.200, TSVD 0.195 / 0.185 / 0.194 (40k / 50k / 60k)",
    ("tsvd", 100): "Pubmed: R-KL 0.332 / 0.326 / 0.328, TSVD 0.288 / 0.280 / 0.284",
    ("ding", 100): "Fig. 2 (plot, no table): RP and DDP below RecoverL2 at every M ≤ 1000; "
                   "RecoverL2 comparable only near M ≈ 10,000",
}


def draw_counts(B: np.ndarray, n_docs: int, length: int, alpha: float, seed) -> sp.csr_matrix:
    """``n_docs`` documents of ``length`` words from topics ``B`` (V, K), θ ~ Dirichlet(α)."""
    rng = np.random.default_rng(seed)
    V, K = B.shape
    theta = rng.dirichlet(np.full(K, alpha), size=n_docs)
    counts = rng.multinomial(length, theta)
    rows, cols = [], []
    for k in range(K):
        n_k = counts[:, k]
        if n_k.sum():
            rows.append(np.repeat(np.arange(n_docs), n_k))
            cols.append(rng.choice(V, size=int(n_k.sum()), p=B[:, k]))
    r, c = np.concatenate(rows), np.concatenate(cols)
    X = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n_docs, V))
    X.sum_duplicates()
    return X


def ding_model(n_words: int = 500, n_topics: int = 5, novel_fraction: float = 0.2,
               seed=0) -> np.ndarray:
    """Ding et al. 2014 §6.1: separable β with ``novel_fraction · W`` novel words."""
    rng = np.random.default_rng(seed)
    W, K = n_words, n_topics
    n_novel = int(round(novel_fraction * W))
    B = rng.dirichlet(np.ones(K), size=W)  # non-novel rows: uniform on the simplex
    owner = np.arange(n_novel) % K
    B[:n_novel] = 0.0
    B[np.arange(n_novel), owner] = rng.uniform(0.0, 1.0, n_novel)
    return B / B.sum(axis=0, keepdims=True)


def fit_one(label: str, X, B, coocs: dict, seed: int, kl_max_words: int) -> dict:
    """One method on one corpus: ℓ1, CPU seconds, or the error."""
    kw, cap = METHODS[label]
    kw = dict(kw)
    if kw.get("recover_method") == "kl" and X.shape[1] > kl_max_words:
        return {"error": f"skipped (V > {kl_max_words})"}
    if kw.get("method", "anchor") in ("anchor", "tsvd"):
        kw.setdefault("method", "anchor")
        kw["anchor_min_df"] = min(100, max(1, X.shape[0] // 100))
    if cap not in coocs:
        coocs[cap] = cooccurrence(X, length_cap=cap)
    saved = {k: getattr(methods, k) for k in SETTINGS.get(label, {})}
    c0 = time.process_time()
    try:
        for k, v in SETTINGS.get(label, {}).items():
            setattr(methods, k, v)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_topics(B.shape[1], cooc=coocs[cap], documents=X, random_state=seed, **kw)
        err = recovery_error(B, fit.topic_word)[0]
    except Exception as exc:  # a failing method is reported in its cell, the run goes on
        return {"error": f"failed: {type(exc).__name__}: {exc}"[:100]}
    finally:
        for k, v in saved.items():
            setattr(methods, k, v)
    return {"l1": float(err), "cpu": time.process_time() - c0}


def run_grid(name: str, B, rows: list[tuple], labels: list[str], seed: int,
             kl_max_words: int, log=print) -> list[dict]:
    """``rows``: (n_docs, length, alpha) corpora drawn from ``B``; every label on each."""
    out = []
    for i, (n, L, a) in enumerate(rows):
        X = draw_counts(B, n, L, a, [seed, n, L, int(a * 1e6), i])
        coocs: dict = {}
        cells = {}
        for label in labels:
            cells[label] = fit_one(label, X, B, coocs, seed, kl_max_words)
            c = cells[label]
            log(f"  [{name} M={n} N={L} α={a}] {label}: "
                + (c["error"] if "error" in c else f"ℓ1 {c['l1']:.3f} ({c['cpu']:.1f} CPU s)"))
        out.append({"n_docs": n, "length": L, "alpha": a, "cells": cells})
    return out


def markdown(title: str, grid: list[dict], labels: list[str], paper: str | None) -> list[str]:
    lines = [title, "", "| documents | words/doc | α | " + " | ".join(labels) + " |",
             "|---:|---:|---:|" + "---:|" * len(labels)]
    for r in grid:
        cells = []
        for lab in labels:
            c = r["cells"][lab]
            cells.append(c["error"] if "error" in c else f"{c['l1']:.3f} ({c['cpu']:.0f} s)")
        lines.append(f"| {r['n_docs']} | {r['length']} | {r['alpha']} | " + " | ".join(cells)
                     + " |")
    if paper:
        lines += ["", f"Paper: {paper}."]
    return lines


def protocols(args) -> dict[str, tuple[str, np.ndarray, list, list[str], str | None]]:
    """name -> (title, truth, rows, labels, paper figures)."""
    from benchmarks.quality.synthetic import load_truth

    gibbs = load_truth()[0]
    ding = ding_model(seed=args.seed)
    tsvd_labels = ["default (qr/admm)", "Recover-KL (Arora 2013)", "Recover-L2 (Arora 2013)",
                   "tsvd", "tsvd (paper)"]
    ding_labels = ["default (qr/admm)", "Recover-L2 (Arora 2013)", "ddp", "ddp (paper)", "rp",
                   "rp (paper)"]
    every = ["default (qr/admm)", "Recover-L2 (Arora 2013)", "tsvd", "tsvd (paper)", "ddp",
             "ddp (paper)", "rp",
             "rp (paper)"]
    return {
        "tsvd-nyt": ("Bansal et al. 2014, Table 2, NYT-like: Gibbs truth (K = 50, V = 5000), "
                     "300 words/doc, Dirichlet(0.01)", gibbs,
                     [(n, 300, 0.01) for n in args.docs], tsvd_labels, PAPER[("tsvd", 300)]),
        "tsvd-pubmed": ("Bansal et al. 2014, Table 2, Pubmed-like: 100 words/doc", gibbs,
                        [(n, 100, 0.01) for n in args.docs], tsvd_labels,
                        PAPER[("tsvd", 100)]),
        "ding": ("Ding et al. 2014, Fig. 2 (upper): their separable model, W = 500, K = 5, "
                 "20% novel words, N = 100, Dirichlet(0.1)", ding,
                 [(n, 100, 0.1) for n in (200, 500, 1000)], ding_labels, PAPER[("ding", 100)]),
        "ding-gibbs": ("Ding et al. 2014's N = 100 and Dirichlet(0.1) on the Gibbs truth "
                       "(K = 50, V = 5000)", gibbs,
                       [(n, 100, 0.1) for n in (10000, 50000)], ding_labels, None),
        "issue": ("Issue 20's regime: Gibbs truth, 60 words/doc, Dirichlet(0.03)", gibbs,
                  [(50000, 60, 0.03)], every, None),
    }


def warm_up(seed: int = 0) -> None:
    """Compile the numba kernels on a tiny corpus so that no CPU figure includes compiling."""
    B = ding_model(60, 3, seed=seed)
    X = draw_counts(B, 300, 30, 0.1, seed)
    coocs: dict = {}
    for label in METHODS:
        fit_one(label, X, B, coocs, seed, 10**9)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="comma-separated protocols (default: all): "
                   "tsvd-nyt, tsvd-pubmed, ding, ding-gibbs, issue")
    p.add_argument("--docs", type=lambda s: [int(x) for x in s.split(",") if x],
                   default=[40000, 50000, 60000], help="TSVD protocol sizes")
    p.add_argument("--methods", default="",
                   help="comma-separated labels of METHODS run on each protocol's corpora, in "
                        "this order (default: the protocol's own)")
    p.add_argument("--kl-max-words", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    only = [x for x in args.only.split(",") if x]
    chosen = [x for x in args.methods.split(",") if x]
    if unknown := sorted(set(chosen) - set(METHODS)):
        p.error(f"unknown --methods {unknown}; allowed: {', '.join(METHODS)}")
    warm_up(args.seed)
    lines = []
    for name, (title, B, rows, labels, paper) in protocols(args).items():
        if only and name not in only:
            continue
        if chosen:
            labels = chosen
        grid = run_grid(name, B, rows, labels, args.seed, args.kl_max_words)
        lines += markdown(f"#### {title}", grid, labels, paper) + [""]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
