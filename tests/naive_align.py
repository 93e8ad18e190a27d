"""Slow twin of the alignment kernel (``anchorstream/_kernels/align.py``), in NumPy."""

from __future__ import annotations

import numpy as np


def naive_overlap_matrix(A, ia, sa, B, ib, sb):
    """``Σ_t min(A[ia[t], k] / sa[k], B[ib[t], l] / sb[l])`` for every ``(k, l)`` by
    broadcasting (Ka × Kb × T)."""
    P = (np.asarray(A, dtype=np.float64) / sa)[ia].T
    Q = (np.asarray(B, dtype=np.float64) / sb)[ib].T
    return np.minimum(P[:, None, :], Q[None, :, :]).sum(axis=2)
