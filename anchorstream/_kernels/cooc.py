"""numba kernels of the co-occurrence estimator.

Arrays in, arrays out; the public wrapper in ``anchorstream/stats/cooccurrence.py`` validates input
(canonical CSR: sorted indices, no duplicates; float64 non-negative integer counts). Slow loop
twins live in ``tests/naive_cooc.py``.

Every product is formed as ``w_d * (h_di * h_dj)``: the integer product is exact, so the term
for ``(i, j)`` and ``(j, i)`` is the same float and, summed over documents in the same order,
the matrix is exactly symmetric whichever way :func:`cooc_add_rows` fills it.
"""

from __future__ import annotations

import numba
import numpy as np

from anchorstream._kernels.csr import csr_transpose_positions, lowest_bit


@numba.njit(cache=True)
def doc_scale(n, cap_pairs):
    """The scale ``s`` of a document of ``n >= 2`` tokens, which adds ``s (h hᵀ − diag h)``.

    Its total weight ``s n (n − 1)`` is ``min(n (n − 1), cap_pairs) / cap_pairs``: every word
    pair counts the same up to a document of ``cap_pairs`` ordered pairs, a longer one counts
    as much as that. ``cap_pairs = 2`` is ``1 / (n (n − 1))``, exactly (the unbiased estimator of
    Arora et al.: every document weighs 1); ``inf`` gives every pair ``1/2``.
    """
    pairs = n * (n - 1.0)
    if cap_pairs == np.inf:
        return 0.5
    return (min(pairs, cap_pairs) / cap_pairs) / pairs


@numba.njit(cache=True)
def cooc_transpose(indptr, indices, data, n_words, cap_pairs=2.0):
    """Per-document weights, marginals and the CSC transpose of the counted documents.

    Serial: one counting-sort pass over the non-zeros, O(nnz + n_docs + n_words).

    Parameters
    ----------
    indptr : int ndarray of shape (n_docs + 1,)
    indices : int ndarray of shape (nnz,)
    data : float64 ndarray of shape (nnz,)
    n_words : int
    cap_pairs : float
        The documents' weighting (see ``anchorstream.stats.cooccurrence.pair_scale``): a document's
        total weight is ``min(n_d (n_d - 1), cap_pairs) / cap_pairs``; 2 gives every document
        weight 1, ``inf`` every pair weight 1/2.

    Returns
    -------
    weights : float64 ndarray of shape (n_docs,)
        The scale of ``h_d h_dᵀ − diag h_d`` (``1 / (n_d (n_d - 1))`` with ``cap_pairs=2``)
        for documents with ``n_d >= 2``, else 0 (document skipped).
    col_ptr : int64 ndarray of shape (n_words + 1,)
    col_docs : int64 ndarray of shape (m,)
    col_pos : int64 ndarray of shape (m,)
        Column ``i`` lists, for each counted document ``d`` with ``h_di > 0`` in increasing
        ``d``, the document and the position of its ``(d, i)`` entry in ``indices``/``data``.
    unigram : float64 ndarray of shape (n_words,)
        Sum of counts over counted documents.
    doc_freq : float64 ndarray of shape (n_words,)
        Number of counted documents containing the word.
    num_docs : int
    num_tokens : float
        Sum of ``n_d`` over counted documents.
    """
    n_docs = indptr.shape[0] - 1
    weights = np.zeros(n_docs, dtype=np.float64)
    unigram = np.zeros(n_words, dtype=np.float64)
    doc_freq = np.zeros(n_words, dtype=np.float64)
    col_ptr = np.zeros(n_words + 1, dtype=np.int64)
    num_docs = 0
    num_tokens = 0.0
    for d in range(n_docs):
        n = 0.0
        for k in range(indptr[d], indptr[d + 1]):
            n += data[k]
        if n < 2.0:
            continue
        weights[d] = doc_scale(n, cap_pairs)
        num_docs += 1
        num_tokens += n
        for k in range(indptr[d], indptr[d + 1]):
            if data[k] > 0.0:
                j = indices[k]
                unigram[j] += data[k]
                doc_freq[j] += 1.0
                col_ptr[j + 1] += 1
    for i in range(n_words):
        col_ptr[i + 1] += col_ptr[i]
    m = col_ptr[n_words]
    col_docs = np.empty(m, dtype=np.int64)
    col_pos = np.empty(m, dtype=np.int64)
    fill = col_ptr[:-1].copy()
    for d in range(n_docs):
        if weights[d] == 0.0:
            continue
        for k in range(indptr[d], indptr[d + 1]):
            if data[k] > 0.0:
                j = indices[k]
                col_docs[fill[j]] = d
                col_pos[fill[j]] = k
                fill[j] += 1
    return weights, col_ptr, col_docs, col_pos, unigram, doc_freq, num_docs, num_tokens


@numba.njit(parallel=True, cache=True)
def cooc_add_rows(indptr, indices, data, weights, col_ptr, col_docs, col_pos, full, n_stripes, out):
    """Add ``Σ_d w_d (h_d h_dᵀ − diag h_d)`` into ``out``, parallel over rows.

    Row ``i`` of the sum is ``Σ_{d ∋ i} w_d h_di h_d`` with ``h_di² − h_di`` on the diagonal. A
    thread owns whole rows, so no two threads write the same memory (race-free without
    per-thread buffers or atomics), and the row being built stays in cache while the documents
    containing ``i`` stream past.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of shape (n_docs + 1,), (nnz,), (nnz,)
        Canonical: sorted indices within a row, which is what lets the upper triangle start
        right after the ``(d, i)`` entry.
    weights, col_ptr, col_docs, col_pos : outputs of :func:`cooc_transpose`
    full : bool
        Fill whole rows; otherwise only ``j >= i`` (half the work; the caller mirrors it with
        :func:`cooc_mirror_upper`).
    n_stripes : int
        Rows are dealt round-robin to ``n_stripes`` parallel tasks (use the thread count). Work
        per row follows word frequency, which falls along a frequency-sorted vocabulary, so
        contiguous blocks of rows would leave one thread with most of the work.
    out : float64 ndarray of shape (n_words, n_words), C-contiguous
        Accumulated into (``+=``), so a running state can be passed.
    """
    n_words = col_ptr.shape[0] - 1
    for t in numba.prange(n_stripes):
        for i in range(t, n_words, n_stripes):
            for p in range(col_ptr[i], col_ptr[i + 1]):
                d = col_docs[p]
                k0 = col_pos[p]
                w = weights[d]
                h_i = data[k0]
                out[i, i] += w * (h_i * (h_i - 1.0))
                if full:
                    for k in range(indptr[d], k0):
                        out[i, indices[k]] += w * (h_i * data[k])
                for k in range(k0 + 1, indptr[d + 1]):
                    out[i, indices[k]] += w * (h_i * data[k])


@numba.njit(parallel=True, cache=True)
def cooc_mirror_upper(out, n_stripes):
    """Copy the upper triangle of square ``out`` onto its lower triangle, in place.

    Parameters
    ----------
    out : float64 ndarray of shape (n, n)
    n_stripes : int
        Parallel tasks; block rows are dealt round-robin because block row ``b`` holds ``b + 1``
        blocks.
    """
    n = out.shape[0]
    # 64 x 64 tiles: both the rows read and the rows written stay in L1/L2 while a tile is copied.
    tile = 64
    n_tiles = (n + tile - 1) // tile
    for t in numba.prange(n_stripes):
        for bi in range(t, n_tiles, n_stripes):
            i_end = min(n, (bi + 1) * tile)
            for bj in range(bi + 1):
                for i in range(bi * tile, i_end):
                    for j in range(bj * tile, min(i, (bj + 1) * tile)):
                        out[i, j] = out[j, i]


@numba.njit(cache=True)
def cooc_counts(indptr, indices, data, full, n_stripes, out, cap_pairs=2.0):
    """The whole estimator: add a CSR batch's co-occurrence into ``out``, return marginals.

    Parameters
    ----------
    indptr : int ndarray of shape (n_docs + 1,)
    indices : int ndarray of shape (nnz,)
    data : float64 ndarray of shape (nnz,)
        Canonical CSR of non-negative integer counts.
    full : bool
        Compute whole rows (cheaper for short documents) or the upper triangle and mirror it
        (cheaper when the pair work ``Σ_d nnz_d²`` is large against ``n_words²``). Both give
        bit-identical results.
    n_stripes : int
        Number of parallel tasks, normally the numba thread count.
    out : float64 ndarray of shape (n_words, n_words)
        ``Σ_d (h_d h_dᵀ − diag h_d) / (n_d (n_d − 1))`` over documents with ``n_d ≥ 2`` is added
        into it. With ``full=False`` its lower triangle is overwritten by its upper one, so it
        must be symmetric on entry.
    cap_pairs : float
        The documents' weighting, as for :func:`cooc_transpose`.

    Returns
    -------
    unigram : float64 ndarray of shape (n_words,)
    doc_freq : float64 ndarray of shape (n_words,)
    num_docs : int
    num_tokens : float
    """
    n_words = out.shape[0]
    weights, col_ptr, col_docs, col_pos, unigram, doc_freq, num_docs, num_tokens = (
        cooc_transpose(indptr, indices, data, n_words, cap_pairs)
    )
    cooc_add_rows(
        indptr, indices, data, weights, col_ptr, col_docs, col_pos, full, n_stripes, out
    )
    if not full:
        cooc_mirror_upper(out, n_stripes)
    return unigram, doc_freq, num_docs, num_tokens


@numba.njit(cache=True, inline="always")
def _symmetric_pair(out, Z, i, j, v):
    """``out[i] += v Z[j]`` and, off the diagonal, ``out[j] += v Z[i]``."""
    for c in range(Z.shape[1]):
        out[i, c] += v * Z[j, c]
    if j != i:
        for c in range(Z.shape[1]):
            out[j, c] += v * Z[i, c]


@numba.njit(cache=True)
def cooc_symmetric_matmul(tiles, indices, data, Z, out):
    """``out += (U + Uᵀ − diag U) Z`` for the upper triangle ``U`` of a symmetric matrix.

    One pass over ``U``'s entries, each used for its own row and, off the diagonal, for its
    mirror image: the transpose is never formed (a CSR copy of ``Uᵀ`` costs 12 bytes per stored
    entry, as much as ``U`` itself). Serial: the mirror images scatter into other rows. The
    entries are visited one tile of columns at a time (``tiles``, from
    :func:`~anchorstream._kernels.tiles.column_tiles`), so that the rows of ``Z`` and ``out``
    that a tile's columns read and write at random stay in the core's cache; no row of ``out``
    gets its terms in another order than row by row (a column's mirror terms all come in its
    tile, from the rows before its own), so the result is the same to the bit.

    Parameters
    ----------
    tiles : int64 ndarray of shape (n_tiles + 1, n)
        Row ``i``'s entries in column tile ``s`` are at ``tiles[s, i] <= k < tiles[s + 1, i]``
        (one tile: ``indptr[:-1]`` over ``indptr[1:]``).
    indices : int ndarray of shape (nnz,)
        Column of each entry, at least its row (upper triangle, diagonal included).
    data : float ndarray of shape (nnz,)
    Z : float ndarray of shape (n, b), C-contiguous, of ``data``'s dtype
    out : float ndarray of shape (n, b), C-contiguous, of ``data``'s dtype; added into
    """
    for s in range(tiles.shape[0] - 1):
        for i in range(tiles.shape[1]):
            for k in range(tiles[s, i], tiles[s + 1, i]):
                _symmetric_pair(out, Z, i, indices[k], data[k])


@numba.njit(cache=True)
def cooc_symmetric_matmul32(tiles, indices, data, Z, out):
    """:func:`cooc_symmetric_matmul` in float32 from float64 ``data``: each value rounded to
    float32 as it is read, so the product runs at float32's speed (twice float64's at 46
    columns) without a float32 copy of the values.

    Parameters
    ----------
    tiles, indices : as :func:`cooc_symmetric_matmul`
    data : float64 ndarray of shape (nnz,)
    Z : float32 ndarray of shape (n, b), C-contiguous
    out : float32 ndarray of shape (n, b), C-contiguous; added into
    """
    for s in range(tiles.shape[0] - 1):
        for i in range(tiles.shape[1]):
            for k in range(tiles[s, i], tiles[s + 1, i]):
                _symmetric_pair(out, Z, i, indices[k], np.float32(data[k]))


@numba.njit(cache=True)
def document_gram_matmul(indptr, indices, data, weights, Z, out):
    """``out += Hᵀ diag(w) H Z`` for the documents' count matrix ``H`` (CSR, one row per
    document), without forming ``H Z`` or ``Hᵀ``.

    Per document: ``y = h_dᵀ Z`` (a ``b``-vector), then ``w_d h_di y`` is added to row ``i`` of
    ``out`` for each of its words. Two passes over the document's entries, ``O(nnz(H) b)`` in
    all, like two sparse products, but with nothing of size ``n_docs × b`` in between (278 MB
    for 300,000 documents at ``b = 116``) and 3.5x faster than SciPy's two on the PyPI
    summaries (1.8M entries, ``b = 116``: 0.13 s against 0.46). Serial: every document scatters
    into the rows of its words.

    Parameters
    ----------
    indptr : int ndarray of shape (n_docs + 1,)
    indices : int ndarray of shape (nnz,)
    data : float64 ndarray of shape (nnz,)
    weights : float64 ndarray of shape (n_docs,)
        ``w_d``; documents of weight 0 are skipped.
    Z : float64 ndarray of shape (n_words, b), C-contiguous
    out : float64 ndarray of shape (n_words, b), C-contiguous; added into
    """
    b = Z.shape[1]
    y = np.empty(b)
    for d in range(indptr.shape[0] - 1):
        start, stop = indptr[d], indptr[d + 1]
        w = weights[d]
        if start == stop or w == 0.0:
            continue
        y[:] = 0.0
        for t in range(start, stop):
            x = data[t]
            Zj = Z[indices[t]]
            for c in range(b):
                y[c] += x * Zj[c]
        for t in range(start, stop):
            x = w * data[t]
            oj = out[indices[t]]
            for c in range(b):
                oj[c] += x * y[c]


def document_gram_upper(indptr, indices, data, weights, n_words):
    """The upper triangle (diagonal included) of ``Σ_d w_d (h_d h_dᵀ − diag h_d)`` as CSR
    arrays, rows with sorted columns and no stored zeros.

    Row ``i`` is gathered from the documents holding word ``i`` and, in each, only the words
    after ``i`` in the document's sorted row (Gustavson's sparse product, one triangle only,
    reading each document from ``i``'s position on as the store's ``store_pair_delta`` does):
    no visit to the ``j < i`` half, and no triangle to cut from ``Hᵀ W H`` afterwards. The
    row's columns are marked in a bitmap and emitted in order by scanning it, not sorted. The
    output is written into arrays of an upper bound of its size and trimmed in place (pages
    never written are never resident). The diagonal is ``Σ_d w_d h_di (h_di − 1)``, exactly 0
    where no document holds the word twice. Each entry is summed over the documents in
    increasing order, as before the rewrite of session 70 (the results are the same bytes),
    which took 2.3-4.4x less time on documents of 100-300 tokens (benchmarks/README.md,
    "Session 70").

    Parameters
    ----------
    indptr, indices, data : the documents' counts ``H``, CSR (one row per document), each row's
        columns sorted and distinct (canonical CSR)
    weights : float64 ndarray of shape (n_docs,)
        ``w_d``; documents of weight 0 add nothing.
    n_words : int

    Returns
    -------
    out_indptr : int64 ndarray of shape (n_words + 1,)
    out_indices : int32 ndarray of shape (nnz,)
    out_data : float64 ndarray of shape (nnz,)

    Raises
    ------
    ValueError
        If a row's columns are not sorted and distinct.
    """
    return _gram_upper(_gram_upper_fill, "document_gram_upper", indptr, indices, data,
                       weights, int(n_words))


def _gram_upper(rows, name, indptr, indices, data, weights, n_words, *args):
    """The CSR arrays ``rows`` (:func:`_gram_upper_fill` or :func:`_gram_upper_into`, given
    ``args`` before the output) writes, in arrays of the gram's bound (:func:`
    _gram_upper_bound`) trimmed in place; ValueError naming ``name`` where a document's
    columns are not sorted and distinct."""
    indptr = np.asarray(indptr, dtype=np.int64)
    col_ptr, col_doc, col_pos = csr_transpose_positions(indptr, indices, indices.shape[0],
                                                        n_words)
    bound = _gram_upper_bound(indptr, indices, weights, col_ptr, col_doc, col_pos)
    if bound < 0:
        raise ValueError(f"{name}: each document's columns must be sorted and distinct "
                         "(canonical CSR)")
    out_indptr = np.zeros(n_words + 1, dtype=np.int64)
    out_indices = np.empty(bound, dtype=np.int32)
    out_data = np.empty(bound, dtype=np.float64)
    nnz = rows(indptr, indices, data, weights, col_ptr, col_doc, col_pos, *args, out_indptr,
               out_indices, out_data)
    out_indices.resize(nnz, refcheck=False)
    out_data.resize(nnz, refcheck=False)
    return out_indptr, out_indices, out_data


@numba.njit(cache=True)
def _gram_upper_bound(indptr, indices, weights, col_ptr, col_doc, col_pos):
    """An upper bound of :func:`document_gram_upper`'s entries: row ``i`` holds at most
    ``n_words − i`` of them, and at most one more than the words after ``i`` in the documents
    of non-zero weight holding it. -1 where a document's columns are not increasing."""
    for d in range(indptr.shape[0] - 1):
        for t in range(indptr[d] + 1, indptr[d + 1]):
            if indices[t] <= indices[t - 1]:
                return -1
    n = col_ptr.shape[0] - 1
    total = 0
    for i in range(n):
        r = 1
        for s in range(col_ptr[i], col_ptr[i + 1]):
            d = col_doc[s]
            if weights[d] != 0.0:
                r += indptr[d + 1] - col_pos[s] - 1
        total += min(r, n - i)
    return total


@numba.njit(cache=True)
def _gram_upper_fill(indptr, indices, data, weights, col_ptr, col_doc, col_pos, out_indptr,
                     out_indices, out_data):
    """:func:`document_gram_upper`'s rows, written into ``out_*`` (long enough: its bound);
    returns the entries written. ``col_ptr, col_doc, col_pos``: the transpose of the documents
    with each entry's position (``csr.csr_transpose_positions``)."""
    n = col_ptr.shape[0] - 1
    acc = np.zeros(n)
    bits = np.zeros((n + 63) // 64, dtype=np.uint64)
    one = np.uint64(1)
    q = 0
    for i in range(n):
        hi = _gram_row(i, indptr, indices, data, weights, col_ptr, col_doc, col_pos, acc, bits)
        for word in range(i >> 6, (hi >> 6) + 1 if hi >= 0 else 0):
            b = bits[word]
            if b != 0:
                bits[word] = 0
                while b != 0:
                    j = (word << 6) + lowest_bit(b)
                    if acc[j] != 0.0:
                        out_indices[q] = j
                        out_data[q] = acc[j]
                        q += 1
                    acc[j] = 0.0
                    b &= b - one
        out_indptr[i + 1] = q
    return q


@numba.njit(cache=True)
def _gram_row(i, indptr, indices, data, weights, col_ptr, col_doc, col_pos, acc, bits):
    """Row ``i`` of :func:`document_gram_upper` gathered into the dense ``acc``, its columns
    marked in the bitmap ``bits``: from the documents holding word ``i``, in order, each
    from ``i``'s position on. Returns the largest column marked (-1: none)."""
    one = np.uint64(1)
    hi = -1
    for s in range(col_ptr[i], col_ptr[i + 1]):
        d = col_doc[s]
        w = weights[d]
        if w == 0.0:
            continue
        p = col_pos[s]
        xi = data[p]
        wx = w * xi
        acc[i] += wx * (xi - 1.0)
        bits[i >> 6] |= one << np.uint64(i & 63)
        end = indptr[d + 1]
        for t in range(p + 1, end):
            j = indices[t]
            acc[j] += wx * data[t]
            bits[j >> 6] |= one << np.uint64(j & 63)
        hi = max(hi, indices[end - 1])
    return hi


def document_gram_upper_into(indptr, indices, data, weights, a_indptr, a_indices, a_data,
                             keep, diagonal, sums):
    """:func:`document_gram_upper` of the documents added into the canonical upper triangle
    ``a`` (CSR arrays, ``a_data`` float64, added to in place) where ``a`` stores the entry;
    returns the other entries as CSR arrays (``rest_indptr, rest_indices, rest_data``), so
    that ``a`` before plus the documents' pairs is ``a`` after plus the rest: the same bytes
    as :func:`document_gram_upper` followed by :func:`~anchorstream._kernels.csr.
    csr_add_into`, with ``diagonal``, ``keep`` and ``sums`` as there (skipped where empty),
    without writing the documents' pairs out between. A pending sum's documents are counted
    into its first part so (:meth:`~anchorstream.stats.pending.PendingSum.plus_documents`).

    Raises
    ------
    ValueError
        If a document's columns are not sorted and distinct.
    """
    return _gram_upper(_gram_upper_into, "document_gram_upper_into", indptr, indices, data,
                       weights, a_indptr.shape[0] - 1, a_indptr, a_indices, a_data, keep,
                       diagonal, sums)


@numba.njit(cache=True)
def _gram_upper_into(indptr, indices, data, weights, col_ptr, col_doc, col_pos, a_indptr,
                     a_indices, a_data, keep, diagonal, sums, rest_indptr, rest_indices,
                     rest_data):
    """:func:`document_gram_upper_into`'s rows: each gathered as :func:`_gram_upper_fill`
    gathers it and added into ``a``'s row as :func:`~anchorstream._kernels.csr.csr_add_into`
    adds one, the entries ``a`` does not store written into ``rest_*`` (long enough: the
    gram's bound); returns how many."""
    n = col_ptr.shape[0] - 1
    with_diagonal, with_sums = diagonal.shape[0] > 0, sums.shape[0] > 0
    acc = np.zeros(n)
    bits = np.zeros((n + 63) // 64, dtype=np.uint64)
    one = np.uint64(1)
    q = 0
    for i in range(n):
        hi = _gram_row(i, indptr, indices, data, weights, col_ptr, col_doc, col_pos, acc, bits)
        p, p_end = a_indptr[i], a_indptr[i + 1]
        n_row = p_end - p  # csr_add_into's entry where the row is nearly full, or scan
        jump = n_row > 0 and 16 * (a_indices[p_end - 1] - a_indices[p] + 1 - n_row) <= n_row
        for word in range(i >> 6, (hi >> 6) + 1 if hi >= 0 else 0):
            b = bits[word]
            if b != 0:
                bits[word] = 0
                while b != 0:
                    j = (word << 6) + lowest_bit(b)
                    v = acc[j]
                    acc[j] = 0.0
                    b &= b - one
                    if v == 0.0:
                        continue
                    if p < p_end and a_indices[p] < j:
                        t = p + (j - a_indices[p])
                        if jump and t < p_end and a_indices[t] == j:
                            p = t
                        else:
                            while p < p_end and a_indices[p] < j:
                                p += 1
                    if p < p_end and a_indices[p] == j:
                        # Added as csr_add_into adds, written out here: a call per entry
                        # (with its arrays) took 6x the time.
                        a_data[p] += v
                        p += 1
                        if with_diagonal and i == j:
                            diagonal[i] += v
                        if with_sums and keep[i] and keep[j]:
                            sums[i] += v
                            if i != j:
                                sums[j] += v
                    else:
                        rest_indices[q] = j
                        rest_data[q] = v
                        q += 1
        rest_indptr[i + 1] = q
    return q
