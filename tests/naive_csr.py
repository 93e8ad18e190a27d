"""Slow loop twins of the CSR kernels (``anchorstream/_kernels/csr.py``), for
``tests/test_kernels_csr.py``: rows as lists and dicts, no cleverness."""

from __future__ import annotations

import numpy as np


def csr_of_rows(rows, n_rows):
    """CSR arrays (int64 indptr, int32 indices, float64 data) of ``rows``: row ``i`` is a
    list of ``(column, value)``."""
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    indices, data = [], []
    for i in range(n_rows):
        indptr[i + 1] = indptr[i] + len(rows[i])
        indices += [j for j, _ in rows[i]]
        data += [v for _, v in rows[i]]
    return indptr, np.asarray(indices, dtype=np.int32), np.asarray(data, dtype=np.float64)


def naive_csr_add(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data):
    """Twin of ``csr_add``: both matrices as dicts of rows, summed entry by entry."""
    n_rows = len(a_indptr) - 1
    rows = {}
    for i in range(n_rows):
        row = {}
        for ptr, idx, dat in ((a_indptr, a_indices, a_data), (b_indptr, b_indices, b_data)):
            for k in range(ptr[i], ptr[i + 1]):
                row[int(idx[k])] = row.get(int(idx[k]), 0.0) + float(dat[k])
        rows[i] = sorted((j, v) for j, v in row.items() if v != 0.0)
    return csr_of_rows(rows, n_rows)


def naive_csr_move(indptr, indices, data, to, n):
    """Twin of ``csr_move``: every entry's row and column mapped through ``to`` (dropped
    at -1), gathered as rows of sorted columns."""
    rows = {i: [] for i in range(n)}
    for i in range(len(indptr) - 1):
        for k in range(indptr[i], indptr[i + 1]):
            r, c = int(to[i]), int(to[indices[k]])
            if r >= 0 and c >= 0:
                rows[r].append((c, float(data[k])))
    return csr_of_rows({r: sorted(v) for r, v in rows.items()}, n)


def naive_csr_move_add(indptr, indices, data, to, n, b_indptr, b_indices, b_data):
    """Twin of ``csr_move_add``: the moved matrix's rows, then ``naive_csr_add``."""
    moved = naive_csr_move(indptr, indices, data, to, n)
    return naive_csr_add(*moved, b_indptr, b_indices, b_data)


def naive_lowest_bit(x: int) -> int:
    """Twin of ``lowest_bit``: the position of the lowest set bit, by shifting."""
    n = 0
    while not (x >> n) & 1:
        n += 1
    return n


def naive_csr_transpose_positions(indptr, indices, n_cols):
    """Twin of ``csr_transpose_positions``: for every column, the (row, position) of each
    entry in it, rows in increasing order, as CSR-like arrays."""
    lists = [[] for _ in range(n_cols)]
    for r in range(len(indptr) - 1):
        for k in range(indptr[r], indptr[r + 1]):
            lists[int(indices[k])].append((r, k))
    col_ptr = np.cumsum([0] + [len(x) for x in lists])
    pairs = [p for x in lists for p in x]
    return (col_ptr, np.asarray([p[0] for p in pairs], dtype=np.int64),
            np.asarray([p[1] for p in pairs], dtype=np.int64))


def naive_csr_upper_check(indptr, indices, data):
    """Twin of ``csr_upper_check``: the first bad entry in row order decides the code."""
    for r in range(len(indptr) - 1):
        for k in range(indptr[r], indptr[r + 1]):
            if not (0.0 <= float(data[k]) < np.inf):
                return 1
            if int(indices[k]) < r:
                return 2
    return 0


def naive_csr_kept_symmetric_row_sums(indptr, indices, data, keep):
    """Twin of ``csr_kept_symmetric_row_sums``: the symmetric matrix, entry by entry."""
    n = len(indptr) - 1
    full = np.zeros((n, n))
    for r in range(n):
        for k in range(indptr[r], indptr[r + 1]):
            full[r, int(indices[k])] = full[int(indices[k]), r] = float(data[k])
    full[~np.asarray(keep, dtype=bool)] = 0.0
    full[:, ~np.asarray(keep, dtype=bool)] = 0.0
    return full.sum(axis=1)


def naive_csr_add_into(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, keep):
    """Twin of ``csr_add_into``: ``(a's data after, left, what was added to the diagonal,
    to the kept row sums)``, each entry of ``b`` looked up in a dict of ``a``'s positions."""
    data = np.array(a_data, dtype=np.float64)
    n = len(a_indptr) - 1
    where = {(i, int(a_indices[k])): k for i in range(n)
             for k in range(a_indptr[i], a_indptr[i + 1])}
    left = np.zeros(len(b_indices), dtype=bool)
    added = np.zeros((n, max(n, int(np.max(b_indices, initial=-1)) + 1)))
    for i in range(len(b_indptr) - 1):
        for q in range(b_indptr[i], b_indptr[i + 1]):
            k = where.get((i, int(b_indices[q])))
            if k is None:
                left[q] = True
            else:
                data[k] += float(b_data[q])
                added[i, int(b_indices[q])] += float(b_data[q])
    diagonal = np.array([added[i, i] for i in range(n)])
    full = added[:, :n] + added[:, :n].T - np.diag(diagonal)
    kept = np.asarray(keep, dtype=bool)[:n]
    sums = (full * kept[None, :]).sum(axis=1) * kept
    return data, left, diagonal, sums
