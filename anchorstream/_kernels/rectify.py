"""numba kernels of rectification and anchor finding.

Arrays in, arrays out; the public wrappers in ``anchorstream/model/rectify.py`` and
``anchorstream/model/anchors.py`` validate shapes, dtypes and contiguity. Slow loop twins live in
``tests/naive_anchor.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def anchor_rectify_clip(block, shift, old, out):
    """One row block of the normalisation and non-negativity projections of alternating projection.

    For every entry, ``v = max(block + shift, 0)`` is written to both ``block`` (so that the
    caller can multiply the still-cached block by the next eigensolver's basis) and ``out``;
    ``old`` holds the previous iterate of the same rows and may be the same array as ``out``
    (each entry is read before it is overwritten). Fusing the two projections with the
    convergence sums makes it one pass over memory instead of five.

    Serial on purpose: the caller interleaves it with multi-threaded BLAS calls on small blocks,
    and measured on 2 cores an OpenMP-parallel version was 3-10x slower overall, its worker
    threads and OpenBLAS's spinning for the same cores. Per-row partial sums keep the summation
    order fixed.

    Parameters
    ----------
    block : float64 ndarray of shape (n_rows, n_words), C-contiguous
        Rows of the PSD projection ``U Λ Uᵀ``; overwritten with the projected values.
    shift : float
        The normalisation constant ``(1 - Σ U Λ Uᵀ) / n_words²`` added to every entry.
    old : float64 ndarray of shape (n_rows, n_words)
        The same rows of the previous iterate.
    out : float64 ndarray of shape (n_rows, n_words)
        Where the new rows go (may alias ``old``).

    Returns
    -------
    partial : float64 ndarray of shape (n_rows, 3)
        Per row: ``Σ (new - old)²``, ``Σ old²`` and ``Σ new``.
    """
    n_rows, n_cols = block.shape
    partial = np.zeros((n_rows, 3))
    for i in range(n_rows):
        diff2 = 0.0
        old2 = 0.0
        total = 0.0
        for j in range(n_cols):
            v = block[i, j] + shift
            if v < 0.0:
                v = 0.0
            o = old[i, j]
            diff2 += (v - o) * (v - o)
            old2 += o * o
            total += v
            block[i, j] = v
            out[i, j] = v
        partial[i, 0] = diff2
        partial[i, 1] = old2
        partial[i, 2] = total
    return partial


@numba.njit(cache=True)
def anchor_dense_to_csr(dense, nnz):
    """CSR arrays of a dense matrix known to hold ``nnz`` nonzero entries.

    One serial pass over the matrix, writing each nonzero as it is met: scipy's conversion
    (``np.nonzero``, then COO, then CSR) makes three and took 0.10-0.15 s at V = 5000 with
    3% nonzeros, this ~0.03 s.

    Parameters
    ----------
    dense : float64 ndarray of shape (n_rows, n_cols), C-contiguous
    nnz : int
        ``np.count_nonzero(dense)``; the output arrays are allocated at that size.

    Returns
    -------
    indptr : int64 ndarray of shape (n_rows + 1,)
    indices : int32 ndarray of shape (nnz,)
    data : float64 ndarray of shape (nnz,)
        In the order of the rows, and within a row of the columns.
    """
    n_rows, n_cols = dense.shape
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int32)
    data = np.empty(nnz, dtype=dense.dtype)
    k = 0
    for i in range(n_rows):
        for j in range(n_cols):
            v = dense[i, j]
            if v != 0.0:
                indices[k] = j
                data[k] = v
                k += 1
        indptr[i + 1] = k
    return indptr, indices, data


@numba.njit(cache=True)
def anchor_update_difference(rows, previous, diff):
    """One row block of :func:`~anchorstream.model.rectify.rectify_update`'s pass over the data.

    Writes ``diff = rows − previous`` (the data's change, in ``diff``'s precision) and sums
    what the update needs to decide whether it may run: one pass over memory instead of three.
    Serial for the reason :func:`anchor_rectify_clip` is.

    Parameters
    ----------
    rows : float64 ndarray of shape (n_rows, n_words)
        Rows of the new co-occurrence.
    previous : ndarray of shape (n_rows, n_words)
        The same rows of the data the previous result was fitted to.
    diff : ndarray of shape (n_rows, n_words)

    Returns
    -------
    sums : float64 ndarray of shape (4,)
        ``Σ diff²``, ``Σ previous²``, the number of entries of ``rows`` or ``previous`` that
        are not finite, and ``max |rows|``.
    """
    n_rows, n_cols = rows.shape
    change2 = 0.0
    base2 = 0.0
    bad = 0.0
    top = 0.0
    for i in range(n_rows):
        for j in range(n_cols):
            v = rows[i, j]
            if abs(v) > top:
                top = abs(v)
            b = np.float64(previous[i, j])
            if not (np.isfinite(v) and np.isfinite(b)):
                bad += 1.0
            d = v - b
            diff[i, j] = d
            change2 += d * d
            base2 += b * b
    out = np.empty(4)
    out[0] = change2
    out[1] = base2
    out[2] = bad
    out[3] = top
    return out


@numba.njit(cache=True)
def anchor_negative_entries(block):
    """The negative entries of a block of ``Y Y_Iᵀ``, negated: the low-rank rectifier's
    non-negativity corrections (:class:`~anchorstream.model.lowrank.LowRankCooccurrence`).

    Two serial passes (count, then fill) over the block while it is in cache, where
    ``np.nonzero(block < 0)`` and gathering the values made four, with two temporaries.

    Parameters
    ----------
    block : float32 or float64 ndarray of shape (n_rows, n_cols), C-contiguous

    Returns
    -------
    rows, cols : int64 ndarrays of shape (nnz,)
    values : float64 ndarray of shape (nnz,)
        ``-block[rows, cols]`` (positive), in row-major order.
    """
    n_rows, n_cols = block.shape
    nnz = 0
    for i in range(n_rows):
        for j in range(n_cols):
            if block[i, j] < 0:
                nnz += 1
    rows = np.empty(nnz, dtype=np.int64)
    cols = np.empty(nnz, dtype=np.int64)
    values = np.empty(nnz, dtype=np.float64)
    k = 0
    for i in range(n_rows):
        for j in range(n_cols):
            v = block[i, j]
            if v < 0:
                rows[k] = i
                cols[k] = j
                values[k] = -np.float64(v)
                k += 1
    return rows, cols, values


@numba.njit(cache=True)
def negative_entries_rechecked(block, Y, cols_of, bound, floor, max_candidates):
    """The negative entries of ``Y Y_Jᵀ`` (``J = cols_of``), negated, found from ``block``, the
    same product in float32 (``Y`` rounded, then a float32 GEMM), and each recomputed in
    float64: :func:`anchor_negative_entries` of the float64 product, for a float32 GEMM's time
    (the caller's) and a dot product a candidate.

    An entry is a candidate where ``block[i, j] < bound[i] bound[J[j]] + floor``: with
    ``bound[i] = ‖y_i‖ √t`` for ``t`` above the float32 product's relative error bound
    (``(K + 2) 2⁻²⁴`` of ``Σ_k |y_ik y_jk| ≤ ‖y_i‖ ‖y_j‖``) and ``floor`` above its underflow,
    every negative entry is one; a candidate whose float64 dot product is negative is kept.
    Two serial passes: count the candidates, then recompute and keep them; none where there
    are more than ``max_candidates`` (a dot product each costs more than the float64 GEMM
    beyond a few percent of the block).

    Parameters
    ----------
    block : float32 ndarray of shape (n_rows, n_cols), C-contiguous
        Row ``i`` is word ``i``; column ``j`` word ``cols_of[j]``.
    Y : float64 ndarray of shape (n_rows, K), C-contiguous
    cols_of : int64 ndarray of shape (n_cols,)
    bound : float64 ndarray of shape (n_rows,)
    floor : float
    max_candidates : int

    Returns
    -------
    rows, cols : int64 ndarrays of shape (nnz,)
    values : float64 ndarray of shape (nnz,)
        ``−(Y Y_Jᵀ)[rows, cols]`` (positive), in row-major order; empty where there were
        more than ``max_candidates`` candidates.
    n_candidates : int
    """
    n_rows, n_cols = block.shape
    K = Y.shape[1]
    col_bound = np.empty(n_cols)
    for j in range(n_cols):
        col_bound[j] = bound[cols_of[j]]
    # The count, branch-free (vectorized: 3 ms over the blocks of a 5000 x 1500 product), and
    # each row's, so that the second pass visits only rows with candidates.
    row_n = np.zeros(n_rows, dtype=np.int64)
    n = 0
    for i in range(n_rows):
        bi = bound[i]
        c = 0
        for j in range(n_cols):
            c += block[i, j] < bi * col_bound[j] + floor
        row_n[i] = c
        n += c
    if n > max_candidates:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), n
    rows = np.empty(n, dtype=np.int64)
    cols = np.empty(n, dtype=np.int64)
    values = np.empty(n, dtype=np.float64)
    k = 0
    for i in range(n_rows):
        if row_n[i] == 0:
            continue
        bi = bound[i]
        for j in range(n_cols):
            if block[i, j] < bi * col_bound[j] + floor:
                c = cols_of[j]
                v = 0.0
                for q in range(K):
                    v += Y[i, q] * Y[c, q]
                if v < 0:
                    rows[k] = i
                    cols[k] = j
                    values[k] = -v
                    k += 1
    return rows[:k].copy(), cols[:k].copy(), values[:k].copy(), n


@numba.njit(cache=True)
def corrections_csr(rows, cols, values, scanned, outside):
    """The low-rank rectifier's sparse corrections ``E`` as CSR arrays, by a counting sort.

    ``E[rows[t], scanned[cols[t]]] = values[t]``, mirrored to ``E[scanned[cols[t]], rows[t]]``
    where ``outside[rows[t]]`` (a scanned word has its own entry): the entries of
    :func:`anchor_negative_entries` (``cols`` offset to the scanned list). No two entries share
    a position, so nothing is summed; within a row the columns come in the entries' order, not
    sorted (a product does not need them sorted). Two passes, ``O(nnz + V)``, where building
    the matrix from coordinates sorted each row's columns (0.2 of 1.45 s of the medium corpus's
    rectification).

    Parameters
    ----------
    rows, cols : int64 ndarrays of shape (n,)
    values : float64 ndarray of shape (n,)
    scanned : int ndarray of shape (|I|,)
        The scanned words; ``cols`` index it.
    outside : bool ndarray of shape (V,)
        True for the words not scanned.

    Returns
    -------
    indptr, indices : int64 ndarrays of shapes (V + 1,) and (nnz,)
    data : float64 ndarray of shape (nnz,)
    """
    V = outside.size
    indptr = np.zeros(V + 1, dtype=np.int64)
    for t in range(rows.size):
        r = rows[t]
        indptr[r + 1] += 1
        if outside[r]:
            indptr[scanned[cols[t]] + 1] += 1
    for r in range(V):
        indptr[r + 1] += indptr[r]
    nnz = indptr[V]
    indices = np.empty(nnz, dtype=np.int64)
    data = np.empty(nnz, dtype=np.float64)
    fill = indptr[:V].copy()
    for t in range(rows.size):
        r = rows[t]
        c = scanned[cols[t]]
        v = values[t]
        k = fill[r]
        indices[k] = c
        data[k] = v
        fill[r] = k + 1
        if outside[r]:
            k = fill[c]
            indices[k] = r
            data[k] = v
            fill[c] = k + 1
    return indptr, indices, data


@numba.njit(cache=True)
def corrections_sums(rows, cols, values, scanned, outside, sums):
    """``sums +=`` the row sums of the sparse corrections ``E`` given by their entries, as
    :func:`corrections_csr` lays them out (each entry in its row, and mirrored into the row of
    ``scanned[cols[t]]`` where ``outside[rows[t]]``), without building the CSR. Each row adds
    in the entries' order.

    Parameters
    ----------
    rows, cols : int64 ndarrays of shape (n,)
    values : float64 ndarray of shape (n,)
    scanned : int ndarray of shape (>= max(cols) + 1,)
        The scanned words ``cols`` index (a slice of them for one part of the entries).
    outside : bool ndarray of shape (V,)
    sums : float64 ndarray of shape (V,); added to

    Returns
    -------
    float64 ndarray of shape (V,)
        ``sums``
    """
    for t in range(rows.size):
        r = rows[t]
        v = values[t]
        sums[r] += v
        if outside[r]:
            sums[scanned[cols[t]]] += v
    return sums


@numba.njit(cache=True)
def corrections_matmul(rows, cols, values, scanned, outside, Z, out):
    """``out += E @ Z`` for the sparse corrections ``E`` given by their entries (as
    :func:`corrections_sums`), in one pass over them: the low-rank rectifier's loop multiplies
    its corrections a few times an iteration and never reads their rows, so it need not build
    the mirrored CSR (:func:`corrections_csr`) each iteration. Each row of ``out`` adds its
    terms in the entries' order, the order of the CSR's row, so the result is the CSR
    product's. Measured on the technical descriptions at V = 16,726, |I| = 1,200 (0.8-2.9 M
    entries, 30 columns): 11-37 ms against 15-57 ms for SciPy's CSR product, which also needed
    8-68 ms to build (benchmarks/README.md, session 62).

    Parameters
    ----------
    rows, cols, values, scanned, outside :
        The entries, as for :func:`corrections_sums`.
    Z : float64 ndarray of shape (V, b), C-contiguous
    out : float64 ndarray of shape (V, b), C-contiguous; added to
    """
    b = Z.shape[1]
    for t in range(rows.size):
        r = rows[t]
        c = scanned[cols[t]]
        v = values[t]
        for j in range(b):
            out[r, j] += v * Z[c, j]
        if outside[r]:
            for j in range(b):
                out[c, j] += v * Z[r, j]
    return out


@numba.njit(cache=True, fastmath={"reassoc"})
def block_sqnorms(block, outside, scanned):
    """``‖E_i‖²`` of every row of the corrections ``E`` held as their dense block ``N``
    (:class:`~anchorstream.model.lowrank_corrections.Corrections`), in float64.

    Row ``i`` of ``E`` holds ``N[i]`` on the scanned columns and, for a scanned word
    ``scanned[p]``, also its mirrored column ``N[outside, p]``. One pass over ``N`` for both
    sums, where two ``einsum`` calls cast it to float64 twice (18 ms against 2.4 ms at
    V = 5000, |I| = 1500). ``reassoc`` lets each row's sum run in SIMD lanes (the last bits
    differ from a sequential sum).

    Parameters
    ----------
    block : float32 or float64 ndarray of shape (V, |I|), C-contiguous
    outside : bool ndarray of shape (V,)
    scanned : int ndarray of shape (|I|,)

    Returns
    -------
    float64 ndarray of shape (V,)
    """
    V, n = block.shape
    rows = np.zeros(V)
    cols = np.zeros(n)
    for i in range(V):
        row = block[i]
        s = 0.0
        if outside[i]:
            for j in range(n):
                x = np.float64(row[j]) * np.float64(row[j])
                s += x
                cols[j] += x
        else:
            for j in range(n):
                x = np.float64(row[j]) * np.float64(row[j])
                s += x
        rows[i] = s
    for j in range(n):
        rows[scanned[j]] += cols[j]
    return rows


@numba.njit(cache=True, fastmath={"reassoc"})
def clip_block(src, out, outside, row_sums, row_sqs, col_sums, col_sqs):
    """``out = max(src, 0)`` (in ``out``'s dtype; ``out`` may be ``src``) for a block of rows of
    the corrections ``N``, with what :class:`~anchorstream.model.lowrank_corrections.Corrections`
    needs of them, from the values as stored, in float64: the non-zeros counted, each row's sum
    and sum of squares (``row_sums``, ``row_sqs``, written), and the sums and sums of squares of
    the rows of words not scanned (``outside``) added into ``col_sums`` and ``col_sqs`` (the
    mirrored columns of ``E``).

    One pass where ``np.maximum``, the cast to float32, ``count_nonzero``, a row sum, a GEMV and
    :func:`block_sqnorms` took six (a warm refresh's scan of V = 5000 × |I| = 1500).

    Parameters
    ----------
    src : float32 or float64 ndarray of shape (b, n)
        Rows of ``−Y Y_Iᵀ``.
    out : float32 or float64 ndarray of shape (b, n)
    outside : bool ndarray of shape (b,)
    row_sums, row_sqs : float64 ndarrays of shape (b,)
    col_sums, col_sqs : float64 ndarrays of shape (n,)

    Returns
    -------
    int
        The non-zero entries of ``out``.
    """
    b, n = src.shape
    count = 0
    for i in range(b):
        row, dst = src[i], out[i]
        s = 0.0
        q = 0.0
        for j in range(n):
            x = row[j]
            dst[j] = x if x > 0.0 else 0.0
            y = np.float64(dst[j])
            s += y
            q += y * y
            count += y != 0.0
        row_sums[i] = s
        row_sqs[i] = q
        if outside[i]:
            for j in range(n):
                y = np.float64(dst[j])
                col_sums[j] += y
                col_sqs[j] += y * y
    return count


@numba.njit(cache=True)
def block_rows(block, scanned, position, outside, idx, scale, out):
    """Dense rows ``E[idx]`` of the corrections ``E`` held as their dense block ``N``
    (:class:`~anchorstream.model.lowrank_corrections.Corrections`), times ``scale``, into the
    zeroed ``out``.

    Row ``i`` of ``E`` holds ``N[i]`` on the scanned columns and, for a scanned word
    (``position[i] = p >= 0``), also its mirrored column ``N[w, p]`` on every word ``w``
    outside the scanned ones. One pass over ``N``'s rows reads each row once for every asked
    scanned word, where gathering the columns ``N[:, p]`` strides across the whole block
    (an anchor search's 50 rows: 4.2 ms against 0.4 at V = 5500, |I| = 1500).

    Parameters
    ----------
    block : float32 or float64 ndarray of shape (V, |I|), C-contiguous
    scanned : int ndarray of shape (|I|,)
    position : int ndarray of shape (V,)
        ``p`` where ``scanned[p] == i``, else -1.
    outside : bool ndarray of shape (V,)
    idx : int ndarray of shape (m,)
    scale : float
    out : float64 ndarray of shape (m, V), zeroed
    """
    V, n = block.shape
    m = idx.size
    mine = 0
    for r in range(m):
        row = block[idx[r]]
        dest = out[r]
        for p in range(n):
            dest[scanned[p]] = np.float64(row[p]) * scale
        if position[idx[r]] >= 0:
            mine += 1
    if mine == 0:
        return
    rs = np.empty(mine, dtype=np.int64)
    ps = np.empty(mine, dtype=np.int64)
    k = 0
    for r in range(m):
        if position[idx[r]] >= 0:
            rs[k] = r
            ps[k] = position[idx[r]]
            k += 1
    for w in range(V):
        if not outside[w]:
            continue
        row = block[w]
        for k in range(mine):
            out[rs[k], w] += np.float64(row[ps[k]]) * scale
