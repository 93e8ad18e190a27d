"""Slow, obviously-correct twins of the head block's kernels
(``anchorstream/_kernels/headblock.py``): the symmetric matrix written out densely."""

from __future__ import annotations

import numpy as np


def _full(indptr, indices, n):
    """Which entries of the full symmetric matrix are stored (a dense boolean matrix)."""
    stored = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = int(indices[k])
            stored[i, j] = stored[j, i] = True
    return stored


def naive_row_entries(indptr, indices):
    """Twin of ``head_row_entries``."""
    n = len(indptr) - 1
    return _full(indptr, indices, n).sum(axis=1).astype(np.int64)


def naive_block_entries(indptr, indices, rank):
    """Twin of ``head_block_entries``: the upper entries among the ``b + 1`` first-ranked
    words, counted for each ``b``."""
    n = len(indptr) - 1
    out = np.zeros(n, dtype=np.int64)
    for b in range(n):
        inside = {i for i in range(n) if rank[i] <= b}
        out[b] = sum(1 for i in inside for k in range(indptr[i], indptr[i + 1])
                     if int(indices[k]) in inside)
    return out


def naive_block_split(indptr, indices, data, pos, m):
    """Twin of ``head_block_split``: ``(block, rest as a dense upper triangle)``."""
    n = len(indptr) - 1
    block = np.zeros((m, m))
    rest = np.zeros((n, n))
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = int(indices[k])
            if pos[i] >= 0 and pos[j] >= 0:
                block[pos[i], pos[j]] = block[pos[j], pos[i]] = data[k]
            else:
                rest[i, j] = data[k]
    return block, rest
