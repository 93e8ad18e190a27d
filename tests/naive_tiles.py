"""Slow twin of the column-tiles kernel (``anchorstream/_kernels/tiles.py``), by NumPy's
``searchsorted`` on every row."""

from __future__ import annotations

import numpy as np


def naive_column_tiles(indptr, indices, width):
    """Where each row's pairs cross into each tile of ``width`` columns, by ``searchsorted``
    on every row: ``out[s, i]`` the first pair of row ``i`` at or after column ``s * width``."""
    n = indptr.size - 1
    n_tiles = max(-(-n // width), 1)
    out = np.empty((n_tiles + 1, n), dtype=np.int64)
    for i in range(n):
        cols = np.asarray(indices[indptr[i]:indptr[i + 1]])
        out[:n_tiles, i] = indptr[i] + np.searchsorted(cols, np.arange(n_tiles) * width)
        out[n_tiles, i] = indptr[i + 1]
    return out


def naive_sorted_within_rows(indptr, indices):
    """Twin of ``sorted_within_rows``: each row's columns by ``np.diff``."""
    return all(np.all(np.diff(indices[indptr[i]:indptr[i + 1]]) > 0)
               for i in range(len(indptr) - 1))
