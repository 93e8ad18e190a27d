#!/usr/bin/env python
"""The sparse counts' sum, word subset and documents' pairs against scipy's (the peer).

A low-rank refresh adds the documents a delay line holds back to a copy of the counts
(:func:`anchorstream.stats.sparse.csr_add`, also the store's read merging its bands and
segments) and takes the selected words' rows and columns
(:meth:`anchorstream.stats.sparse.SparseCooccurrence.subset`, :func:`csr_moved`). Both are
built at the result's exact size; scipy's sum leaves arrays as long as both operands' (views
to trim) and its selection of rows, then of columns, holds a third copy between the two. This
script times each against scipy on random upper triangles shaped like a store's counts (one
nearly full, a sparser one, equal halves, a band of rows against another) and checks that
the results are the same matrix. It also times the upper triangle of documents' pairs,
``Σ_d w_d (h_d h_dᵀ − diag h_d)`` (:func:`anchorstream._kernels.cooc.document_gram_upper`:
what ``fit --input`` refines on and every read adds for the documents a delay line holds
back), against scipy's product and ``triu`` on random documents of 5 to 300 Zipf-distributed
tokens. Best of ``--repeat`` runs, milliseconds, one thread.

    NUMPY_MADVISE_HUGEPAGE=0 PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_csr.py
        [--words 5000] [--repeat 5]

``NUMPY_MADVISE_HUGEPAGE=0`` as the ``anchorstream`` command sets it (daemon/cli): with
huge pages a fresh array's first touches cost less, for scipy's arrays and ours alike.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from anchorstream._kernels.cooc import document_gram_upper  # noqa: E402
from anchorstream.stats.sparse import SparseCooccurrence, csr_add  # noqa: E402


def _upper(V: int, density: float, seed: int) -> sp.csr_matrix:
    m = sp.triu(sp.random(V, V, density=density, random_state=seed, format="csr")).tocsr()
    m.sum_duplicates()
    return m


def _documents(n_docs: int, length: int, V: int, seed: int) -> sp.csr_matrix:
    """``n_docs`` documents of ``length`` tokens drawn from a Zipf(1.1) law over ``V`` words."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, V + 1) ** 1.1
    words = rng.choice(V, size=n_docs * length, p=p / p.sum())
    X = sp.csr_matrix((np.ones(words.size), (np.repeat(np.arange(n_docs), length), words)),
                      shape=(n_docs, V))
    X.sum_duplicates()
    return X


def _scipy_gram_upper(X: sp.csr_matrix, w: np.ndarray) -> sp.csr_matrix:
    """The peer: ``triu(Hᵀ W H) − diag(Hᵀ w)``, zeros dropped."""
    G = sp.triu(X.T.tocsr() @ (sp.diags(w) @ X)).tocsr() - sp.diags(X.T @ w, format="csr")
    G.eliminate_zeros()
    return G


def _best(f, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return 1000 * min(times), out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--words", type=int, default=5000, help="V of the matrices (default 5000)")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    V = a.words
    full, sparse_, tiny = _upper(V, 0.9, 1), _upper(V, 0.1, 2), _upper(V, 0.001, 7)
    band_a = sp.random(2048, 4 * V, density=0.3, random_state=5, format="csr")
    band_b = sp.random(2048, 4 * V, density=0.3, random_state=6, format="csr")
    for m in (band_a, band_b):
        m.sum_duplicates()
    sums = {"nearly full + 10 %": (full, sparse_),
            "half + half": (_upper(V, 0.5, 3), _upper(V, 0.5, 4)),
            "band + band": (band_a, band_b),
            "nearly full + 0.1 %": (full, tiny)}
    print(f"V = {V}, best of {a.repeat}, ms")
    print(f"{'sum':<22}{'entries':>24}{'anchorstream':>14}{'scipy':>9}{'ratio':>8}")
    csr_add(*sums["half + half"])  # compiled or loaded before anything is timed
    for name, (x, y) in sums.items():
        ours_ms, ours = _best(lambda: csr_add(x, y), a.repeat)
        peer_ms, peer = _best(lambda: x + y, a.repeat)
        assert abs(ours - peer).max() == 0 and ours.nnz == peer.nnz
        print(f"{name:<22}{f'{x.nnz:,} + {y.nnz:,}':>24}{ours_ms:>14.0f}{peer_ms:>9.0f}"
              f"{ours_ms / peer_ms:>8.2f}")
    print(f"\n{'subset of the words':<22}{'kept':>24}{'anchorstream':>14}{'scipy':>9}{'ratio':>8}")
    rng = np.random.default_rng(0)
    counts = SparseCooccurrence(full, np.ones(V), np.ones(V), 10, 100)
    counts.subset(np.arange(10))
    for share in (0.5, 0.95, 1.0):
        words = np.sort(rng.choice(V, int(share * V), replace=False))
        ours_ms, ours = _best(lambda: counts.subset(words).upper, a.repeat)
        peer_ms, peer = _best(lambda: full[words][:, words], a.repeat)
        assert abs(ours - peer).max() == 0
        print(f"{'increasing':<22}{f'{words.size:,} of {V:,}':>24}{ours_ms:>14.0f}"
              f"{peer_ms:>9.0f}{ours_ms / peer_ms:>8.2f}")
    print(f"\n{'pairs of documents':<22}{'documents x tokens':>24}{'anchorstream':>14}"
          f"{'scipy':>9}{'ratio':>8}")
    for n_docs, length in ((300_000, 5), (50_000, 30), (1_000, 100), (20_000, 100),
                           (5_000, 300)):
        X = _documents(n_docs, length, V, seed=length)
        n = np.asarray(X.sum(axis=1)).ravel()
        w = np.where(n >= 2, 1.0 / np.maximum(n * (n - 1.0), 1.0), 0.0)
        ours_ms, ours = _best(lambda: document_gram_upper(X.indptr, X.indices, X.data, w, V),
                              a.repeat)
        peer_ms, peer = _best(lambda: _scipy_gram_upper(X, w), a.repeat)
        ours = sp.csr_matrix((ours[2], ours[1], ours[0]), shape=(V, V))
        # The peer's diagonal is a difference of two sums (rounding left where it is 0).
        assert ours.nnz <= peer.nnz and abs(ours - peer).max() <= 1e-10 * peer.max()
        print(f"{'':<22}{f'{n_docs:,} x {length}':>24}{ours_ms:>14.0f}{peer_ms:>9.0f}"
              f"{ours_ms / peer_ms:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
