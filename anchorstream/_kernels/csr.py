"""numba kernels of CSR arithmetic on matrices whose rows have sorted, distinct columns.

The store's reads (``anchorstream/store/sparseread.py``) and the sparse statistics
(``anchorstream/stats/csr.py``) build and combine their upper triangles with them, each
result at its exact size: scipy's sums and selections allocate for the worst case and keep views
that need another copy to trim, and at a refresh's scale (6 V² bytes when every pair is stored)
each copy counts. Callers check dtypes (int64 ``indptr``, int32 ``indices``, float64 ``data``).
Slow loop twins live in ``tests/naive_csr.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def csr_arrays(indptr):
    """Turn the rows' entry counts in ``indptr[1:]`` into offsets, in place, and allocate the
    CSR's ``indices`` (int32) and ``data`` (float64) at the total: the middle of every
    count-then-fill builder (here and in ``store.py``)."""
    for r in range(indptr.shape[0] - 1):
        indptr[r + 1] += indptr[r]
    nnz = indptr[indptr.shape[0] - 1]
    return np.empty(nnz, dtype=np.int32), np.empty(nnz, dtype=np.float64)


@numba.njit(cache=True)
def copy_nonzero(src_indices, src_data, lo, hi, indices, data, k):
    """Append the non-zero entries ``lo:hi`` of a row to ``indices`` and ``data`` from
    position ``k``; returns the position after them. The rest of a row once the other
    operand's is done, in the sums below."""
    for t in range(lo, hi):
        if src_data[t] != 0.0:
            indices[k] = src_indices[t]
            data[k] = src_data[t]
            k += 1
    return k


@numba.njit(cache=True)
def csr_add(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, indices, data):
    """The sum of two CSR matrices of the same shape whose rows have sorted, distinct
    columns, in the same form (sorted, distinct, zeros left out), written into ``indices``
    and ``data`` (each at least as long as both operands' entries together).

    One pass. The caller allocates the outputs for both operands' entries and trims them
    to the sum's (``ndarray.resize``: memory never written is never resident, and a large
    block shrinks where it is): 1.5-1.7x faster than counting first and merging again into
    outputs of the exact size; 0.96-1.37x the time of scipy's sum, which leaves views to trim
    (benchmarks/bench_csr.py).

    Returns
    -------
    indptr : int64 ndarray of shape (n_rows + 1,)
        ``indptr[-1]`` entries of ``indices`` (int32) and ``data`` (float64) are the sum's.
    """
    n_rows = a_indptr.shape[0] - 1
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    k = 0
    for i in range(n_rows):
        p, p_end = a_indptr[i], a_indptr[i + 1]
        q, q_end = b_indptr[i], b_indptr[i + 1]
        while p < p_end and q < q_end:
            ja, jb = a_indices[p], b_indices[q]
            if ja < jb:
                j, v = ja, a_data[p]
                p += 1
            elif jb < ja:
                j, v = jb, b_data[q]
                q += 1
            else:
                j, v = ja, a_data[p] + b_data[q]
                p += 1
                q += 1
            if v != 0.0:
                indices[k] = j
                data[k] = v
                k += 1
        # The rest of one row: no comparisons.
        k = copy_nonzero(a_indices, a_data, p, p_end, indices, data, k)
        k = copy_nonzero(b_indices, b_data, q, q_end, indices, data, k)
        indptr[i + 1] = k
    return indptr


@numba.njit(cache=True)
def csr_add_into(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, left, row_left,
                 keep, diagonal, sums):
    """Add into ``a_data``, in place, the entries of ``b`` (the same shape; both with sorted,
    distinct columns) at positions ``a`` stores, and mark in ``left`` (bool, one per entry of
    ``b``, False on entry) those it does not store, counted per row in ``row_left``; returns
    how many are left. One pass over ``b``'s entries, each row of ``a`` scanned up to
    ``b``'s last column in it, or, in a row that stores nearly every column of its span,
    entered where each column must be (2.5 M entries into a full upper triangle of 5,000
    words, 12.5 M: 55-66 → 31-38 ms; with 30 % of the pairs missing, scanned: the same 76):
    where ``a`` already stores nearly every pair (a store of long documents), a sum without
    a new matrix.

    What is added also goes into ``diagonal`` (its diagonal entries) and ``sums`` (the row
    sums of the symmetric matrix over the rows and columns where ``keep``), each skipped
    where empty: what was found of ``a`` follows it."""
    n_left = 0
    with_diagonal, with_sums = diagonal.shape[0] > 0, sums.shape[0] > 0
    for i in range(a_indptr.shape[0] - 1):
        p, p_end = a_indptr[i], a_indptr[i + 1]
        # A row that stores nearly every column of its span (a store of long documents:
        # nearly every row) is entered where j must be: a's columns are distinct and sorted,
        # so j is at most j - a_indices[p] places on, and exactly there without a gap between.
        # Elsewhere, and where that misses, the scan.
        n_row = p_end - p
        jump = n_row > 0 and 16 * (a_indices[p_end - 1] - a_indices[p] + 1 - n_row) <= n_row
        for q in range(b_indptr[i], b_indptr[i + 1]):
            j = b_indices[q]
            if p < p_end and a_indices[p] < j:
                t = p + (j - a_indices[p])
                if jump and t < p_end and a_indices[t] == j:
                    p = t
                else:
                    while p < p_end and a_indices[p] < j:
                        p += 1
            if p < p_end and a_indices[p] == j:
                v = b_data[q]
                a_data[p] += v
                p += 1
                if with_diagonal and i == j:
                    diagonal[i] += v
                if with_sums and keep[i] and keep[j]:
                    sums[i] += v
                    if i != j:
                        sums[j] += v
            else:
                left[q] = True
                row_left[i] += 1
                n_left += 1
    return n_left


@numba.njit(cache=True)
def csr_move(indptr, indices, data, to, n):
    """A CSR matrix whose rows and columns have sorted, distinct columns, moved to ``n``
    slots: row and column ``i`` go to ``to[i]``, or are dropped where that is -1. ``to`` must
    increase where it is not -1, so each row's columns stay sorted (and an upper triangle
    stays upper).

    Two linear passes (count, then copy), where selecting the kept rows and columns with
    scipy and building the result from coordinates sorted every row again (a warm refresh's
    read of the npm store after new words were admitted: 9 ms).

    Returns
    -------
    indptr : int64 ndarray of shape (n + 1,)
    indices : int32 ndarray
    data : float64 ndarray
    """
    n_rows = indptr.shape[0] - 1
    out_indptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n_rows):
        t = to[i]
        if t < 0:
            continue
        m = 0
        for k in range(indptr[i], indptr[i + 1]):
            if to[indices[k]] >= 0:
                m += 1
        out_indptr[t + 1] = m
    out_indices, out_data = csr_arrays(out_indptr)
    for i in range(n_rows):
        t = to[i]
        if t < 0:
            continue
        q = out_indptr[t]
        for k in range(indptr[i], indptr[i + 1]):
            c = to[indices[k]]
            if c >= 0:
                out_indices[q] = c
                out_data[q] = data[k]
                q += 1
    return out_indptr, out_indices, out_data


@numba.njit(cache=True)
def csr_move_add(indptr, indices, data, to, n, b_indptr, b_indices, b_data, out_indices,
                 out_data):
    """:func:`csr_move` of the first matrix to ``n`` slots (``to`` as there) plus the second,
    an ``n × n`` CSR, in one pass: the sum :func:`csr_add` would give of the moved matrix and
    ``b`` (sorted, distinct columns, zeros left out), written into ``out_indices`` and
    ``out_data`` (each at least as long as both operands' entries together; the caller trims
    them, as for :func:`csr_add`).

    A refresh takes its words' subset of the counts and adds the documents a delay line holds
    back: moved and then summed, the subset was a copy of the counts held beside their sum.

    Returns
    -------
    indptr : int64 ndarray of shape (n + 1,)
    """
    n_rows = indptr.shape[0] - 1
    source = np.full(n, -1, dtype=np.int64)  # the row of the first matrix each slot takes
    for i in range(n_rows):
        if to[i] >= 0:
            source[to[i]] = i
    out_indptr = np.zeros(n + 1, dtype=np.int64)
    k = 0
    for t in range(n):
        q, q_end = b_indptr[t], b_indptr[t + 1]
        i = source[t]
        if i >= 0:
            p, p_end = indptr[i], indptr[i + 1]
            while p < p_end:
                c = to[indices[p]]
                if c < 0:
                    p += 1
                    continue
                if q < q_end and b_indices[q] < c:
                    j, v = b_indices[q], b_data[q]
                    q += 1
                elif q < q_end and b_indices[q] == c:
                    j, v = c, data[p] + b_data[q]
                    p += 1
                    q += 1
                else:
                    j, v = c, data[p]
                    p += 1
                if v != 0.0:
                    out_indices[k] = j
                    out_data[k] = v
                    k += 1
        k = copy_nonzero(b_indices, b_data, q, q_end, out_indices, out_data, k)
        out_indptr[t + 1] = k
    return out_indptr


@numba.njit(cache=True)
def lowest_bit(x):
    """Index of the lowest set bit of a non-zero uint64 (numba has no count-trailing-zeros)."""
    low = x & (~x + np.uint64(1))  # the lowest set bit alone, a power of two
    n = 0
    for shift in (32, 16, 8, 4, 2, 1):
        if low >= (np.uint64(1) << np.uint64(shift)):
            n += shift
            low >>= np.uint64(shift)
    return n


@numba.njit(cache=True)
def csr_transpose_positions(dptr, sl, m, n_slots):
    """The transpose of the documents' sorted entries ``sl[:m]`` (document ``d`` holds
    ``dptr[d]:dptr[d + 1]``): for every slot, the (document, position) pairs containing it,
    in document order, as ``(col_ptr, col_doc, col_pos)``."""
    n_docs = dptr.shape[0] - 1
    col_ptr = np.zeros(n_slots + 1, dtype=np.int64)
    for k in range(m):
        col_ptr[sl[k] + 1] += 1
    for i in range(n_slots):
        col_ptr[i + 1] += col_ptr[i]
    col_doc = np.empty(m, dtype=np.int64)
    col_pos = np.empty(m, dtype=np.int64)
    fill = col_ptr[:-1].copy()
    for d in range(n_docs):
        for k in range(dptr[d], dptr[d + 1]):
            s = sl[k]
            col_doc[fill[s]] = d
            col_pos[fill[s]] = k
            fill[s] += 1
    return col_ptr, col_doc, col_pos


@numba.njit(cache=True)
def csr_upper_check(indptr, indices, data):
    """One pass over a CSR's entries: 0 where every entry is finite and non-negative and none
    lies below the diagonal, 1 where an entry is negative or not finite (NaN included), 2
    where one lies below the diagonal (the first such entry in row order decides). What
    ``SparseCooccurrence`` checks of its counts, which NumPy did in three passes and a row
    array of the entries' size (40 ms at 12.4M entries)."""
    for r in range(indptr.shape[0] - 1):
        for k in range(indptr[r], indptr[r + 1]):
            v = data[k]
            if not (v >= 0.0 and v < np.inf):
                return 1
            if indices[k] < r:
                return 2
    return 0


@numba.njit(cache=True)
def csr_kept_symmetric_row_sums(indptr, indices, data, keep, out):
    """Add into ``out`` (float64, one entry per row) the row sums of the symmetric matrix whose
    upper triangle is the CSR, over its rows and columns where ``keep``: those of the matrix
    moved to the kept words, in one pass over the entries, without moving it."""
    for r in range(indptr.shape[0] - 1):
        if not keep[r]:
            continue
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            if keep[c]:
                v = data[k]
                out[r] += v
                if c != r:
                    out[c] += v
