"""Column tiles of a CSR matrix: where each row crosses into each tile of columns.

A pass over the upper triangle of a symmetric matrix that reads and writes the rows of its
columns' words at random (the refinement's E-step, the counts' symmetric product) visits the
entries one tile of columns at a time, so that those rows stay in the core's cache; the policy
(how wide a tile) is :mod:`anchorstream.stats.tiles`'. Slow twin: ``tests/naive_tiles.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def column_tiles(indptr, indices, width):
    """Where each row of a CSR crosses into each tile of ``width`` columns: the ``tiles`` that
    the passes over a symmetric matrix's upper triangle visit tile by tile
    (:func:`~anchorstream._kernels.pairs.pairs_em_scatter`,
    :func:`~anchorstream._kernels.cooc.cooc_symmetric_matmul`).

    Parameters
    ----------
    indptr : int ndarray of shape (n_words + 1,)
    indices : int ndarray of shape (nnz,)
        Columns, sorted within each row.
    width : int
        Columns per tile (>= 1); the last tile takes what remains.

    Returns
    -------
    int64 ndarray of shape (ceil(n_words / width) + 1, n_words)
        ``out[s, i]``: the first entry of row ``i`` whose column is at least ``s * width`` (the
        row's end where none is); ``out[0]`` is ``indptr[:-1]``, ``out[-1]`` ``indptr[1:]``.
        With no words, shape ``(2, 0)``.
    """
    n = indptr.size - 1
    n_tiles = max((n + width - 1) // width, 1)
    out = np.empty((n_tiles + 1, n), dtype=np.int64)
    for i in range(n):
        t, end = indptr[i], indptr[i + 1]
        out[0, i] = t
        for s in range(1, n_tiles):
            while t < end and indices[t] < s * width:
                t += 1
            out[s, i] = t
        out[n_tiles, i] = end
    return out


@numba.njit(cache=True)
def sorted_within_rows(indptr, indices):
    """Whether every row's columns strictly increase (a canonical CSR's do): one pass, no
    temporary (a NumPy ``diff`` of 23M columns took 1.6 s, most of it the kernel zeroing the
    pages of its temporaries)."""
    for i in range(indptr.size - 1):
        for t in range(indptr[i] + 1, indptr[i + 1]):
            if indices[t] <= indices[t - 1]:
                return False
    return True
