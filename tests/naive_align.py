"""Slow twin of the alignment kernel (``anchorstream/_kernels/align.py``), in NumPy."""

from __future__ import annotations

import numpy as np


def naive_overlap_matrix(At, Bt):
    """``Σ_s min(At[k, s], Bt[l, s])`` for every ``(k, l)`` by broadcasting (Ka × Kb × S)."""
    At, Bt = np.asarray(At, dtype=np.float64), np.asarray(Bt, dtype=np.float64)
    return np.minimum(At[:, None, :], Bt[None, :, :]).sum(axis=2)
