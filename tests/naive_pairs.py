"""Slow twins of the pair-refinement kernels (``anchorstream/_kernels/pairs.py``), in NumPy and
SciPy: the same quantities computed by whole-array operations on the full symmetric matrix, so a
kernel that mis-indexes, double-counts the diagonal or drops a triangle disagrees."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def naive_em_pass(indptr, indices, data, G, B, p_min=0.0):
    """``(loglik, M)``: ``p = G Bᵀ`` on the full symmetric pattern, ``M = (C / p) B``; a pair
    with ``p <= p_min`` makes ``loglik`` ``-inf`` and adds nothing to ``M``. In float64
    whatever the input's dtype."""
    G, B = np.asarray(G, dtype=np.float64), np.asarray(B, dtype=np.float64)
    n = indptr.size - 1
    U = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    full = (U + sp.triu(U, 1).T).tocoo()
    keep = full.data != 0
    rows, cols, c = full.row[keep], full.col[keep], full.data[keep]
    p = np.einsum("ij,ij->i", G[rows], B[cols])
    bad = ~(p > p_min)
    with np.errstate(divide="ignore"):
        loglik = -np.inf if bad.any() else float(np.sum(c * np.log(p)))
    w = np.where(bad, 0.0, c / np.where(bad, 1.0, p))
    W = sp.csr_matrix((w, (rows, cols)), shape=(n, n))
    return loglik, np.asarray(W @ B)


def naive_em_scatter(indptr, indices, data, G, B, p_min, row0, row1):
    """``(M, p, impossible)`` of the pairs stored in rows ``row0 <= i < row1``: ``p`` per
    stored pair (1 where its count is 0 or ``p <= p_min``), ``M`` the scatter of those pairs
    alone into both of their words' rows, in float64."""
    G, B = np.asarray(G, dtype=np.float64), np.asarray(B, dtype=np.float64)
    n = indptr.size - 1
    t0, t1 = indptr[row0], indptr[row1]
    rows = np.repeat(np.arange(n), np.diff(indptr))[t0:t1]
    cols = np.asarray(indices[t0:t1], dtype=np.int64)
    c = np.asarray(data[t0:t1], dtype=np.float64)
    p = np.einsum("ij,ij->i", G[rows], B[cols])
    live = (c != 0) & (p > p_min)
    impossible = bool(np.any((c != 0) & ~(p > p_min)))
    w = np.where(live, c / np.where(live, p, 1.0), 0.0)
    W = sp.coo_matrix((w, (rows, cols)), shape=(n, n)).tocsr()
    W = W + sp.triu(W, 1).T  # each off-diagonal pair adds to both words' rows
    return np.asarray(W @ B), np.where(live, p, 1.0), impossible


def naive_diagonal(indptr, indices):
    """Twin of ``pairs_diagonal``: the positions whose column is their row."""
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return np.flatnonzero(np.asarray(indices) == rows)


def naive_row_sums(indptr, indices, data):
    """Twin of ``pairs_row_sums``: each entry's row and its mirror's by two ``bincount``."""
    n = len(indptr) - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    cols = np.asarray(indices)
    off = cols != rows
    return (np.bincount(rows, weights=data, minlength=n)
            + np.bincount(cols[off], weights=np.asarray(data)[off], minlength=n))


def naive_upper_from_dense(dense):
    """CSR arrays of ``triu(dense)`` by SciPy."""
    U = sp.csr_matrix(np.triu(dense))
    U.sort_indices()
    return U.indptr.astype(np.int64), U.indices.astype(np.int32), U.data.astype(np.float64)
