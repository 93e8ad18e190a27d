"""numba kernels of the sparse counts' dense head block (:mod:`anchorstream.stats.headblock`).

Arrays in, arrays out, over the upper triangle ``U`` (diagonal included) of a symmetric matrix in
canonical CSR. Slow loop twins live in ``tests/naive_headblock.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def head_row_entries(indptr, indices):
    """Entries of each row of the full symmetric matrix ``U + Uᵀ − diag U``.

    Parameters
    ----------
    indptr : int ndarray of shape (n + 1,)
    indices : int ndarray of shape (nnz,)

    Returns
    -------
    int64 ndarray of shape (n,)
    """
    n = indptr.shape[0] - 1
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            out[i] += 1
            if j != i:
                out[j] += 1
    return out


@numba.njit(cache=True)
def head_block_entries(indptr, indices, rank):
    """``out[b]``: the entries of ``U`` inside the block of the words ranked ``0..b``.

    An entry ``(i, j)`` lies inside the block of the ``b + 1`` first-ranked words exactly when
    ``max(rank[i], rank[j]) <= b``: a histogram of that maximum, summed.

    Parameters
    ----------
    indptr, indices : int ndarrays (CSR of ``U``)
    rank : int ndarray of shape (n,)
        A permutation of ``0..n-1``: each word's place in the order.

    Returns
    -------
    int64 ndarray of shape (n,), non-decreasing
    """
    n = indptr.shape[0] - 1
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        ri = rank[i]
        for k in range(indptr[i], indptr[i + 1]):
            out[max(ri, rank[indices[k]])] += 1
    for b in range(1, n):
        out[b] += out[b - 1]
    return out


@numba.njit(cache=True)
def head_block_split(indptr, indices, data, pos, block):
    """Splits ``U`` into the block of the words with a position and the rest.

    Each entry ``(i, j)`` whose row and column both have a position is written into
    ``block``, mirrored (``block[pos[i], pos[j]] = block[pos[j], pos[i]] = U[i, j]``); every
    other entry goes, in order, into the CSR arrays returned.

    Parameters
    ----------
    indptr, indices, data : CSR of ``U``
    pos : int ndarray of shape (n,)
        Each word's row of ``block``, ``-1`` for words outside it.
    block : float ndarray of shape (m, m), zero; written

    Returns
    -------
    (indptr of shape (n + 1,), indices, data)
        The entries outside the block as CSR: index arrays of the input's types, values of
        ``block``'s dtype.
    """
    n = indptr.shape[0] - 1
    rest_ptr = np.zeros(n + 1, dtype=indptr.dtype)
    for i in range(n):
        kept = 0
        pi = pos[i]
        for k in range(indptr[i], indptr[i + 1]):
            if pi < 0 or pos[indices[k]] < 0:
                kept += 1
        rest_ptr[i + 1] = rest_ptr[i] + kept
    rest_idx = np.empty(rest_ptr[n], dtype=indices.dtype)
    rest_val = np.empty(rest_ptr[n], dtype=block.dtype)
    for i in range(n):
        pi = pos[i]
        t = rest_ptr[i]
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            pj = pos[j]
            if pi < 0 or pj < 0:
                rest_idx[t] = j
                rest_val[t] = data[k]
                t += 1
            else:
                block[pi, pj] = data[k]
                block[pj, pi] = data[k]
    return rest_ptr, rest_idx, rest_val
