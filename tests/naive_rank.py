"""Slow twin of the ranking kernel (``anchorstream/_kernels/rank.py``), in NumPy."""

from __future__ import annotations

import numpy as np


def naive_top_by_two_keys(first, second, n):
    """Each row's first ``n`` columns of ``np.lexsort((columns, -second, -first))``."""
    first, second = np.asarray(first), np.asarray(second)
    columns = np.arange(first.shape[1])
    return np.array([np.lexsort((columns, -second[k], -first[k]))[:n]
                     for k in range(first.shape[0])], dtype=np.int64).reshape(first.shape[0], n)
