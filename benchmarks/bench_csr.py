#!/usr/bin/env python
"""The sparse counts' sum and word subset against scipy's (the peer), time and equality.

A low-rank refresh adds the documents a delay line holds back to a copy of the counts
(:func:`anchorstream.stats.sparse.csr_add`, also the store's read merging its bands and
segments) and takes the selected words' rows and columns
(:meth:`anchorstream.stats.sparse.SparseCooccurrence.subset`, :func:`csr_moved`). Both are
built at the result's exact size; scipy's sum leaves arrays as long as both operands' (views
to trim) and its selection of rows, then of columns, holds a third copy between the two. This
script times each against scipy on random upper triangles shaped like a store's counts (one
nearly full, a sparser one, equal halves, a band of rows against another) and checks that
the results are the same matrix. Best of ``--repeat`` runs, milliseconds, one thread.

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

from anchorstream.stats.sparse import SparseCooccurrence, csr_add  # noqa: E402


def _upper(V: int, density: float, seed: int) -> sp.csr_matrix:
    m = sp.triu(sp.random(V, V, density=density, random_state=seed, format="csr")).tocsr()
    m.sum_duplicates()
    return m


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
