"""numba kernels of the co-occurrence store.

Arrays in, arrays out; the callers in ``anchorstream/stats/accumulator.py``,
``anchorstream/stats/sparse.py`` and ``anchorstream/store/`` (``segments.py``, ``sparseread.py``)
check dtypes and shapes. Slow loop twins live in
``tests/naive_store.py``. Serial on purpose: the ingest path is budgeted to one core, and a
serial kernel is also safe in a process that forks.
"""

from __future__ import annotations

import numba
import numpy as np

from anchorstream._kernels.csr import csr_arrays, csr_transpose_positions, lowest_bit
from anchorstream._kernels.rectify import anchor_dense_to_csr
from anchorstream._kernels.sorting import sort_by_key


@numba.njit(cache=True)
def store_unique_counts(indptr, slots, n_slots):
    """Collapse each document's token slots into distinct ``(slot, count)`` pairs.

    Parameters
    ----------
    indptr : int64 ndarray of shape (n_docs + 1,)
    slots : int32 ndarray of shape (n_tokens,)
        Slot of every in-vocabulary token, documents concatenated; values in ``[0, n_slots)``.
    n_slots : int

    Returns
    -------
    uindptr : int64 ndarray of shape (n_docs + 1,)
    uslots : int32 ndarray of shape (m,)
        Distinct slots of each document, in order of first appearance.
    ucounts : float64 ndarray of shape (m,)
        How often each appears in its document.
    """
    n_docs = indptr.shape[0] - 1
    pos = np.full(n_slots, -1, dtype=np.int64)
    uindptr = np.zeros(n_docs + 1, dtype=np.int64)
    uslots = np.empty(slots.shape[0], dtype=np.int32)
    ucounts = np.empty(slots.shape[0], dtype=np.float64)
    m = 0
    for d in range(n_docs):
        start = m
        for k in range(indptr[d], indptr[d + 1]):
            s = slots[k]
            p = pos[s]
            # pos[s] >= start means the slot was already seen in *this* document; stale
            # positions from earlier documents are all < start, so pos never needs resetting.
            if p >= start:
                ucounts[p] += 1.0
            else:
                pos[s] = m
                uslots[m] = s
                ucounts[m] = 1.0
                m += 1
        uindptr[d + 1] = m
    return uindptr, uslots[:m].copy(), ucounts[:m].copy()


def store_pair_delta(uindptr, uslots, ucounts, doc_scale, n_slots, dense, prev=None):
    """Add ``Σ_d s_d (h_d h_dᵀ − diag h_d)``, upper triangle: hot rows densely, the rest as CSR.

    Rows ``i < H`` (``H = dense.shape[0]``, the hot slots of frequent words) are added straight
    into ``dense``; rows ``i >= H`` are returned as CSR, built by Gustavson's algorithm: each
    document's distinct slots are sorted, documents are transposed to slot → (document,
    position) lists, and row ``i`` is accumulated in a dense work row from the documents
    containing ``i``, reading each only from ``i``'s position on (the ``j >= i`` half). The
    row's columns are marked in a bitmap and emitted in order by scanning it (cheaper than
    sorting them: a row of ``r`` columns costs ``r`` bit extractions plus one word per 64
    columns of its span). Documents are visited in order. The work is
    ``Σ_d m_d (m_d + 1) / 2`` multiply-adds for ``m_d`` distinct slots.

    ``prev``, a CSR of the same form, is added in the same pass (its row is scattered into the
    work row first), so that the accumulator's running delta needs no separate sparse
    addition.

    Parameters
    ----------
    uindptr, uslots, ucounts : as returned by :func:`store_unique_counts`
        A slot of ``-1`` marks a voided entry (its word was evicted) and is skipped.
    doc_scale : float64 ndarray of shape (n_docs,)
        ``w_d / (n_d (n_d − 1))``; 0 skips the document.
    n_slots : int
    dense : float64 ndarray of shape (H, n_slots), C-contiguous, ``0 <= H <= n_slots``
        Added into (upper triangle only: ``dense[i, j]`` with ``j >= i``).
    prev : (indptr int64, indices int32, data float64), optional
        A previous result of this kernel with the same ``H`` and ``n_slots`` (rows ``< H``
        empty, columns increasing within a row), added into the result; None for nothing.

    Returns
    -------
    indptr : int64 ndarray of shape (n_slots + 1,)
        Rows ``< H`` are empty.
    indices : int32 ndarray of shape (nnz,)
        Column ``j >= i`` of each entry of row ``i``, increasing within a row.
    data : float64 ndarray of shape (nnz,)
    """
    if prev is None:
        prev = (np.zeros(n_slots + 1, np.int64), np.empty(0, np.int32), np.empty(0))
    return _pair_delta(uindptr, uslots, ucounts, doc_scale, n_slots, dense, *prev)


@numba.njit(cache=True)
def _pair_delta(uindptr, uslots, ucounts, doc_scale, n_slots, dense, prev_indptr, prev_indices,
                prev_data):
    n_docs = uindptr.shape[0] - 1
    H = dense.shape[0]
    # Sorted copy of every counted document's valid entries.
    dptr = np.zeros(n_docs + 1, dtype=np.int64)
    sl = np.empty(uslots.shape[0], dtype=np.int32)
    ct = np.empty(uslots.shape[0], dtype=np.float64)
    longest = 0
    for d in range(n_docs):
        longest = max(longest, uindptr[d + 1] - uindptr[d])
    sl_buf = np.empty(longest, dtype=np.int32)
    ct_buf = np.empty(longest, dtype=np.float64)
    m = 0
    bound = prev_indices.shape[0]
    for d in range(n_docs):
        if doc_scale[d] != 0.0:
            start = m
            cold = 0
            for k in range(uindptr[d], uindptr[d + 1]):
                if uslots[k] >= 0:
                    sl[m] = uslots[k]
                    ct[m] = ucounts[k]
                    if uslots[k] >= H:
                        cold += 1
                    m += 1
            if m - start > 1:  # distinct slots: any sort gives np.argsort's order
                sort_by_key(sl, ct, start, m, sl_buf, ct_buf)
            bound += cold * (cold + 1) // 2
        dptr[d + 1] = m
    col_ptr, col_doc, col_pos = csr_transpose_positions(dptr, sl, m, n_slots)
    # Hot rows: straight into the dense block, no bookkeeping.
    for i in range(min(H, n_slots)):
        row = dense[i]
        for p in range(col_ptr[i], col_ptr[i + 1]):
            d = col_doc[p]
            k0 = col_pos[p]
            h_i = ct[k0]
            coef = doc_scale[d] * h_i
            # h_i (h_i − 1) folded in directly, as in the batch estimator, so a word seen
            # once leaves an exact 0 on the diagonal.
            row[i] += coef * (h_i - 1.0)
            for k in range(k0 + 1, dptr[d + 1]):
                row[sl[k]] += coef * ct[k]
    # Cold rows: Gustavson into CSR, the previous CSR's row first.
    indptr = np.zeros(n_slots + 1, dtype=np.int64)
    indices = np.empty(bound, dtype=np.int32)
    data = np.empty(bound, dtype=np.float64)
    acc = np.zeros(n_slots, dtype=np.float64)
    bits = np.zeros((n_slots + 63) // 64, dtype=np.uint64)
    one = np.uint64(1)
    q = 0
    for i in range(H, n_slots):
        hi = -1  # largest column marked in this row
        pa, pb = prev_indptr[i], prev_indptr[i + 1]
        for p in range(pa, pb):
            j = prev_indices[p]
            acc[j] += prev_data[p]
            bits[j >> 6] |= one << np.uint64(j & 63)
        if pb > pa:
            hi = prev_indices[pb - 1]
        for p in range(col_ptr[i], col_ptr[i + 1]):
            d = col_doc[p]
            k0 = col_pos[p]
            h_i = ct[k0]
            coef = doc_scale[d] * h_i
            acc[i] += coef * (h_i - 1.0)
            bits[i >> 6] |= one << np.uint64(i & 63)
            end = dptr[d + 1]
            for k in range(k0 + 1, end):
                j = sl[k]
                acc[j] += coef * ct[k]
                bits[j >> 6] |= one << np.uint64(j & 63)
            if sl[end - 1] > hi:
                hi = sl[end - 1]
        if hi >= 0:
            for w in range(i >> 6, (hi >> 6) + 1):
                b = bits[w]
                if b != 0:
                    bits[w] = 0
                    while b != 0:
                        j = (w << 6) + lowest_bit(b)
                        indices[q] = j
                        data[q] = acc[j]
                        acc[j] = 0.0
                        q += 1
                        b &= b - one
        indptr[i + 1] = q
    return indptr, indices[:q].copy(), data[:q].copy()


@numba.njit(cache=True)
def store_dense_nonzero(dense):
    """Coordinates and values of the non-zeros of a dense block, row-major.

    Parameters
    ----------
    dense : float64 ndarray of shape (n_rows, n_cols)

    Returns
    -------
    rows, cols : int32 ndarray of shape (nnz,)
    vals : float64 ndarray of shape (nnz,)
    """
    n_rows, n_cols = dense.shape
    nnz = 0
    for i in range(n_rows):
        for j in range(n_cols):
            if dense[i, j] != 0.0:
                nnz += 1
    # The row-major scan is the CSR conversion's; its row pointers give the row of each entry.
    indptr, cols, vals = anchor_dense_to_csr(dense, nnz)
    rows = np.empty(nnz, dtype=np.int32)
    for i in range(n_rows):
        rows[indptr[i]:indptr[i + 1]] = i
    return rows, cols, vals


@numba.njit(cache=True)
def store_add_doc_freq(df, indptr, slots, weights, skip):
    """Add each document's weight to the frequency of each distinct slot it contains.

    Parameters
    ----------
    df : float64 ndarray of shape (n_slots,)
        Added into.
    indptr : int64 ndarray of shape (n_docs + 1,)
    slots : int32 ndarray of shape (n_tokens,)
    weights : float64 ndarray of shape (n_docs,)
    skip : bool ndarray of shape (n_docs,)
        Documents already counted (left out).
    """
    seen = np.full(df.shape[0], -1, dtype=np.int64)
    for d in range(indptr.shape[0] - 1):
        if skip[d]:
            continue
        w = weights[d]
        for k in range(indptr[d], indptr[d + 1]):
            s = slots[k]
            if seen[s] != d:
                seen[s] = d
                df[s] += w


@numba.njit(cache=True)
def store_scatter_symmetric(out, row_map, col_map, rows, cols, vals):
    """Add upper-triangle entries and their mirror images into a dense block.

    Entry ``(i, j, v)`` adds ``v`` at ``(row_map[i], col_map[j])`` and, when ``i != j``, at
    ``(row_map[j], col_map[i])``; a position whose map value is ``-1`` is outside the block and
    skipped. With maps ``slot → dense index`` this densifies a whole matrix; with maps
    ``slot → slot − offset`` (or ``-1``) it updates one shard.

    Parameters
    ----------
    out : float64 ndarray of shape (n_rows, n_cols), C-contiguous; added into
    row_map, col_map : int64 ndarray of shape (n_slots,)
    rows, cols : int32 ndarray of shape (nnz,)
    vals : float64 ndarray of shape (nnz,)
    """
    for k in range(rows.shape[0]):
        i = rows[k]
        j = cols[k]
        v = vals[k]
        a = row_map[i]
        b = col_map[j]
        if a >= 0 and b >= 0:
            out[a, b] += v
        if i != j:
            a = row_map[j]
            b = col_map[i]
            if a >= 0 and b >= 0:
                out[a, b] += v


@numba.njit(cache=True)
def store_block_to_csr(block, rloc, cloc, rpos, cpos, n_rows, row_offset, diagonal):
    """The selected entries of one dense base shard as CSR over a band of rows.

    Entry ``(a, b)`` of the selection is ``block[rloc[a], cloc[b]]``, placed at row
    ``rpos[a]`` and column ``cpos[b]``; zeros are left out and, on a diagonal shard, so is
    everything below the diagonal (``cpos[b] < rpos[a] + row_offset``: the band's first row is
    row ``row_offset`` of the whole matrix). Two passes over the selection (count
    per row, then fill), so the output is allocated at its exact size and nothing else is:
    ``np.nonzero`` plus scipy's COO conversion held ~100 bytes per entry of a shard.

    Parameters
    ----------
    block : float64 ndarray of shape (shard rows, shard columns)
    rloc, cloc : int64 ndarray
        Rows and columns of ``block`` to read (increasing).
    rpos : int64 ndarray of shape (rloc.size,)
        Output row of each (in ``[0, n_rows)``).
    cpos : int64 ndarray of shape (cloc.size,)
        Output column of each, increasing, so each row's columns come out sorted.
    n_rows, row_offset : int
    diagonal : bool

    Returns
    -------
    indptr : int64 ndarray of shape (n_rows + 1,)
    indices : int32 ndarray of shape (nnz,)
    data : float64 ndarray of shape (nnz,)
    """
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for a in range(rloc.shape[0]):
        r, p = rloc[a], rpos[a]
        n = 0
        for b in range(cloc.shape[0]):
            if block[r, cloc[b]] != 0.0 and not (diagonal and cpos[b] < p + row_offset):
                n += 1
        indptr[p + 1] = n
    indices, data = csr_arrays(indptr)
    for a in range(rloc.shape[0]):
        r, p = rloc[a], rpos[a]
        k = indptr[p]
        for b in range(cloc.shape[0]):
            v = block[r, cloc[b]]
            if v != 0.0 and not (diagonal and cpos[b] < p + row_offset):
                indices[k] = cpos[b]
                data[k] = v
                k += 1
    return indptr, indices, data


@numba.njit(cache=True)
def _entries_in_order_to_upper_csr(rows, cols, vals, seq, reset_seq, skip, pos, n, factor):
    """:func:`store_entries_to_upper_csr` in one pass where the valid entries come in strictly
    increasing ``(row, column)`` order of their positions (a segment as the store writes it:
    its entries in slot order, and positions increase with slots): ``(True, indptr, indices,
    data)``, or ``(False, ...)`` at the first entry out of that order (the caller then runs
    the general passes). The validity test is spelled out as there (a helper made that
    kernel 5-6x slower). A 1.9 M-entry segment of the planted chain: 27.7 → 10.2 ms, the
    same arrays."""
    m = rows.shape[0]
    use_skip = skip.shape[0] > 0
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = np.empty(m, dtype=np.int32)
    data = np.empty(m, dtype=np.float64)
    last_lo, last_hi = -1, -1
    w = 0
    for k in range(m):
        r, c = rows[k], cols[k]
        if reset_seq[r] > seq or reset_seq[c] > seq or (use_skip and skip[k]):
            continue
        a, b = pos[r], pos[c]
        if a < 0 or b < 0:
            continue
        lo, hi = min(a, b), max(a, b)
        if lo < last_lo or (lo == last_lo and hi <= last_hi):
            return False, indptr, indices[:0], data[:0]
        last_lo, last_hi = lo, hi
        v = vals[k] * factor
        if v != 0.0:
            indices[w] = hi
            data[w] = v
            indptr[lo + 1] += 1
            w += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    if w < m:
        return True, indptr, indices[:w].copy(), data[:w].copy()
    return True, indptr, indices, data


@numba.njit(cache=True)
def store_entries_to_upper_csr(rows, cols, vals, seq, reset_seq, skip, pos, n, factor):
    """The valid entries of one delta segment as canonical upper-triangle CSR over ``n``
    positions: what masking, mapping and scipy's COO conversion did in five passes and
    ~40 bytes per entry of temporaries, here in three passes over the entries.

    Entry ``k`` is kept where neither slot was reset after the segment was written
    (``reset_seq[slot] <= seq``), ``skip`` (empty, or one flag per entry: already in the base)
    does not flag it, and both slots have a position (``pos[slot] >= 0``); it lands at
    ``(min, max)`` of the two positions with value ``vals[k] * factor``. Each row's columns
    come out sorted and distinct (duplicates summed), zeros left out. A CSR's entries moved to
    other positions are read the same way, with ``reset_seq`` all 0 and no ``skip``
    (:func:`anchorstream.stats.sparse.upper_csr`).

    Returns
    -------
    indptr : int64 ndarray of shape (n + 1,)
    indices : int32 ndarray
    data : float64 ndarray
    """
    ordered, indptr, indices, data = _entries_in_order_to_upper_csr(
        rows, cols, vals, seq, reset_seq, skip, pos, n, factor)
    if ordered:
        return indptr, indices, data
    m = rows.shape[0]
    use_skip = skip.shape[0] > 0
    indptr = np.zeros(n + 1, dtype=np.int64)
    # Both passes spell out which entries are read: the test moved into a helper, inlined or
    # not, made the kernel 5-6x slower (0.6-0.7 s against 0.12 on the e-mail store's 6.9M).
    for k in range(m):
        r, c = rows[k], cols[k]
        if reset_seq[r] > seq or reset_seq[c] > seq or (use_skip and skip[k]):
            continue
        a, b = pos[r], pos[c]
        if a < 0 or b < 0:
            continue
        indptr[min(a, b) + 1] += 1
    indices, data = csr_arrays(indptr)  # counts to offsets, in place
    fill = indptr[:n].copy()
    for k in range(m):
        r, c = rows[k], cols[k]
        if reset_seq[r] > seq or reset_seq[c] > seq or (use_skip and skip[k]):
            continue
        a, b = pos[r], pos[c]
        if a < 0 or b < 0:
            continue
        lo, hi = min(a, b), max(a, b)
        indices[fill[lo]] = hi
        data[fill[lo]] = vals[k] * factor
        fill[lo] += 1
    # Rows in order of their columns (a segment written in order needs no sort), duplicates
    # summed and zeros dropped, compacted in place: the write position never passes the read.
    longest = 0
    for i in range(n):
        longest = max(longest, indptr[i + 1] - indptr[i])
    index_buf = np.empty(longest, dtype=indices.dtype)
    data_buf = np.empty(longest, dtype=data.dtype)
    w = 0
    start = 0
    for i in range(n):
        end = indptr[i + 1]
        ordered = True
        for k in range(start + 1, end):
            if indices[k] <= indices[k - 1]:
                ordered = False
                break
        if not ordered:  # stable: a column's duplicates are summed in the order written
            sort_by_key(indices, data, start, end, index_buf, data_buf)
        row_start = w
        k = start
        while k < end:
            j, v = indices[k], data[k]
            k += 1
            while k < end and indices[k] == j:
                v += data[k]
                k += 1
            if v != 0.0:
                indices[w] = j
                data[w] = v
                w += 1
        indptr[i] = row_start
        start = end
    indptr[n] = w
    if w < indices.shape[0]:
        indices, data = indices[:w].copy(), data[:w].copy()
    return indptr, indices, data


@numba.njit(cache=True)
def store_folded_mask(rows, cols, shard_size, n_shards, done):
    """Which segment entries lie in an upper shard pair that a fold in progress has rewritten:
    the pair ``(a, b) = (rows // S, cols // S)`` (``a <= b``) is among the first ``done`` in
    row-major order, ``a G - a (a - 1) / 2 + (b - a) < done`` (``store.segments.pair_index``,
    whose formula it repeats in numba). One pass, where the NumPy
    expression made five temporaries of the entries' size (3.5 s for a 50,000-word store's
    segments, most of it the kernel zeroing their pages).

    Parameters
    ----------
    rows, cols : int ndarray of shape (n,)
        Slots of each entry, ``rows <= cols``.
    shard_size, n_shards, done : int

    Returns
    -------
    bool ndarray of shape (n,)
    """
    out = np.empty(rows.shape[0], dtype=np.bool_)
    for t in range(rows.shape[0]):
        a = np.int64(rows[t]) // shard_size
        b = np.int64(cols[t]) // shard_size
        out[t] = a * n_shards - a * (a - 1) // 2 + (b - a) < done
    return out


@numba.njit(cache=True)
def store_symmetric_matvec(rows, cols, vals, z, out):
    """Add into ``out`` the product ``S z`` of the symmetric ``S`` whose upper-triangle
    entries are ``(rows, cols, vals)`` (``rows <= cols``): ``v z[c]`` into ``out[r]`` and,
    off the diagonal, ``v z[r]`` into ``out[c]``, in the entries' order. One pass (a delta
    segment's probe at a checkpoint, :func:`~anchorstream.store.segments.segment_probe`:
    NumPy's two weighted ``bincount`` took 66 ms for 1.9 M entries)."""
    for k in range(rows.shape[0]):
        r, c, v = rows[k], cols[k], vals[k]
        out[r] += v * z[c]
        if r != c:
            out[c] += v * z[r]
