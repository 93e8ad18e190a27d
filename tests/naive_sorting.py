"""Slow twins of the sorting kernels (``anchorstream/_kernels/sorting.py``), by NumPy."""

from __future__ import annotations

import numpy as np


def naive_sort_by_key(keys, values, lo, hi):
    """Twin of ``sort_by_key``: a stable argsort of the keys, the values gathered by it."""
    keys, values = keys.copy(), values.copy()
    order = np.argsort(keys[lo:hi], kind="stable")
    keys[lo:hi] = keys[lo:hi][order]
    values[lo:hi] = values[lo:hi][order]
    return keys, values


def naive_sort_floats(x, n):
    """Twin of ``sort_floats``: ``ndarray.sort`` of the first ``n``."""
    x = x.copy()
    x[:n].sort()
    return x
