"""Slow, loop-based twins of the co-occurrence kernels in ``anchorstream/_kernels_cooc.py``.

Written for clarity, not speed: plain Python loops over the CSR arrays, straight from the
definition ``Q = Σ_d (h_d h_dᵀ − diag h_d) / (n_d (n_d − 1))`` over documents with ``n_d ≥ 2``.
Each document adds ``w_d * (h_di * h_dj)``, visiting documents in increasing order, which is
the order the kernels use, so results agree to the last bit.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def doc_scale(n, cap_pairs=2.0):
    """Twin of ``_kernels_cooc.doc_scale``: total weight min(n(n-1), cap) / cap."""
    pairs = n * (n - 1.0)
    if cap_pairs == np.inf:
        return 0.5
    return (min(pairs, cap_pairs) / cap_pairs) / pairs


def cooc_transpose(indptr, indices, data, n_words, cap_pairs=2.0):
    """Twin of ``_kernels_cooc.cooc_transpose``."""
    n_docs = len(indptr) - 1
    weights = np.zeros(n_docs)
    unigram = np.zeros(n_words)
    doc_freq = np.zeros(n_words)
    columns = [[] for _ in range(n_words)]
    num_docs = 0
    num_tokens = 0.0
    for d in range(n_docs):
        entries = range(indptr[d], indptr[d + 1])
        n = sum(float(data[k]) for k in entries)
        if n < 2:
            continue
        weights[d] = doc_scale(n, cap_pairs)
        num_docs += 1
        num_tokens += n
        for k in entries:
            if data[k] > 0:
                unigram[indices[k]] += data[k]
                doc_freq[indices[k]] += 1
                columns[indices[k]].append((d, k))
    col_ptr = np.zeros(n_words + 1, dtype=np.int64)
    for i in range(n_words):
        col_ptr[i + 1] = col_ptr[i] + len(columns[i])
    col_docs = np.array([d for col in columns for d, _ in col], dtype=np.int64)
    col_pos = np.array([k for col in columns for _, k in col], dtype=np.int64)
    return weights, col_ptr, col_docs, col_pos, unigram, doc_freq, num_docs, num_tokens


def cooc_add_rows(indptr, indices, data, weights, col_ptr, col_docs, col_pos, full, n_stripes, out):
    """Twin of ``_kernels_cooc.cooc_add_rows`` (``n_stripes`` and the transpose unused)."""
    n_docs = len(indptr) - 1
    for d in range(n_docs):
        w = weights[d]
        if w == 0.0:
            continue
        for a in range(indptr[d], indptr[d + 1]):
            i, h_i = indices[a], data[a]
            if h_i <= 0:
                continue
            for b in range(indptr[d], indptr[d + 1]):
                j, h_j = indices[b], data[b]
                if i == j:
                    out[i, i] += w * (h_i * (h_i - 1.0))
                elif full or j > i:
                    out[i, j] += w * (h_i * h_j)


def cooc_mirror_upper(out, n_stripes):
    """Twin of ``_kernels_cooc.cooc_mirror_upper``."""
    n = out.shape[0]
    for i in range(n):
        for j in range(i):
            out[i, j] = out[j, i]


def cooc_counts(indptr, indices, data, full, n_stripes, out, cap_pairs=2.0):
    """Twin of ``_kernels_cooc.cooc_counts``, from the definition with a dense ``h_d``.

    ``full`` and ``n_stripes`` only change how the kernel works, not the result.
    """
    n_words = out.shape[0]
    unigram = np.zeros(n_words)
    doc_freq = np.zeros(n_words)
    num_docs = 0
    num_tokens = 0.0
    for d in range(len(indptr) - 1):
        h = np.zeros(n_words)
        for k in range(indptr[d], indptr[d + 1]):
            h[indices[k]] += data[k]
        n = h.sum()
        if n < 2:
            continue
        w = doc_scale(n, cap_pairs)
        for i in range(n_words):
            if h[i] == 0:
                continue
            unigram[i] += h[i]
            doc_freq[i] += 1
            for j in range(n_words):
                if h[j] == 0:
                    continue
                out[i, j] += w * (h[i] * (h[j] - 1.0) if i == j else h[i] * h[j])
        num_docs += 1
        num_tokens += n
    return unigram, doc_freq, num_docs, num_tokens


def weighted_cooccurrence(X, length_cap) -> np.ndarray:
    """The normalized co-occurrence under ``length_cap``, one dense document at a time from the
    definition: a document's pairs count fully up to a ``length_cap``-token document, a longer
    one as much as that (every pair the same with None); divided by the sum."""
    X = X.tocsr().astype(np.float64)
    V = X.shape[1]
    out = np.zeros((V, V))
    for d in range(X.shape[0]):
        h = X[d].toarray().ravel()
        n = h.sum()
        if n < 2:
            continue
        pairs = n * (n - 1)
        weight = pairs if length_cap is None else min(pairs, length_cap * (length_cap - 1))
        out += weight / pairs * (np.outer(h, h) - np.diag(h))
    return out / out.sum()


def naive_symmetric_matmul(indptr, indices, data, Z, out):
    """Twin of ``cooc_symmetric_matmul`` (and, in float64, of ``cooc_symmetric_matmul32``):
    the symmetric matrix written out entry by entry."""
    n = len(indptr) - 1
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j, v = int(indices[k]), float(data[k])
            out[i] += v * Z[j]
            if j != i:
                out[j] += v * Z[i]


def naive_document_gram_matmul(indptr, indices, data, weights, Z, out):
    """Twin of ``document_gram_matmul``: each document's ``w_d h_d h_dᵀ`` written out densely."""
    n_words = Z.shape[0]
    for d in range(len(indptr) - 1):
        h = np.zeros(n_words)
        for t in range(indptr[d], indptr[d + 1]):
            h[int(indices[t])] += float(data[t])
        out += weights[d] * np.outer(h, h) @ Z


def naive_document_gram_upper(indptr, indices, data, weights, n_words):
    """Twin of ``document_gram_upper``: each document's ``w_d (h_d h_dᵀ − diag h_d)`` written out
    densely, the sum's upper triangle as canonical CSR arrays without stored zeros."""
    total = np.zeros((n_words, n_words))
    for d in range(len(indptr) - 1):
        h = np.zeros(n_words)
        for t in range(indptr[d], indptr[d + 1]):
            h[int(indices[t])] += float(data[t])
        total += weights[d] * (np.outer(h, h) - np.diag(h))
    U = sp.csr_matrix(np.triu(total))
    U.eliminate_zeros()
    U.sort_indices()
    return U.indptr.astype(np.int64), U.indices.astype(np.int32), U.data


def naive_document_gram_upper_into(indptr, indices, data, weights, a_indptr, a_indices, a_data,
                                   keep):
    """Twin of ``document_gram_upper_into``: :func:`naive_document_gram_upper` added into ``a``
    by ``naive_csr_add_into``; ``(a's data after, what was added to the diagonal, to the kept
    row sums, the rest as CSR arrays)``."""
    from tests.naive_csr import naive_csr_add_into

    n = len(a_indptr) - 1
    g_indptr, g_indices, g_data = naive_document_gram_upper(indptr, indices, data, weights, n)
    after, left, diagonal, sums = naive_csr_add_into(a_indptr, a_indices, a_data, g_indptr,
                                                     g_indices, g_data, keep)
    rows_of = np.repeat(np.arange(n), np.diff(g_indptr))
    rest_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows_of[left], minlength=n), out=rest_indptr[1:])
    return after, diagonal, sums, (rest_indptr, g_indices[left], g_data[left])
