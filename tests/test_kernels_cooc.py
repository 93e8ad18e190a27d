"""The co-occurrence kernels against their slow twins in tests/naive_cooc.py.

Sizes are tiny so that the file also runs with NUMBA_DISABLE_JIT=1 (kernels as plain Python).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream._kernels import cooc as kernels
from anchorstream._kernels.tiles import column_tiles
from tests import naive_cooc as naive


def rows(indptr):
    """The symmetric products' ``tiles`` of one tile: each row as the CSR holds it."""
    return np.stack([indptr[:-1], indptr[1:]]).astype(np.int64)


def _random_csr(rng, n_docs, n_words, *, explicit_zeros=False):
    """Canonical CSR counts with empty, one-token and repeated-word documents mixed in."""
    dense = rng.poisson(0.6, size=(n_docs, n_words)).astype(np.float64)
    dense[rng.random(n_docs) < 0.2] = 0.0  # empty documents
    single = rng.random(n_docs) < 0.15  # one-token documents: n_d = 1, ignored
    dense[single] = 0.0
    dense[single, rng.integers(n_words, size=single.sum())] = 1.0
    if n_docs > 1:
        dense[1] = 0.0
        dense[1, 0] = 2.0  # one word twice: n_d = 2, only a diagonal term
    X = sp.csr_matrix(dense)
    if explicit_zeros and X.nnz:
        # A stored 0 is legal canonical CSR; it must not count as an occurrence.
        X.data[rng.random(X.nnz) < 0.2] = 0.0
    return X


CASES = [(1, 1), (3, 1), (5, 4), (12, 7), (20, 9)]


#: The documents' weightings (ordered-pair caps): every document the same (2), pairs up to
#: 3- and 6-token documents (6, 30), every pair the same (inf).
CAPS = [2.0, 6.0, 30.0, np.inf]


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("explicit_zeros", [False, True])
@pytest.mark.parametrize(("n_docs", "n_words"), CASES)
def test_transpose_matches_twin(rng, n_docs, n_words, explicit_zeros, cap):
    X = _random_csr(rng, n_docs, n_words, explicit_zeros=explicit_zeros)
    got = kernels.cooc_transpose(X.indptr, X.indices, X.data, n_words, cap)
    want = naive.cooc_transpose(X.indptr, X.indices, X.data, n_words, cap)
    for g, w in zip(got[:6], want[:6]):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert got[6] == want[6]
    assert got[7] == want[7]


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize(("n_docs", "n_words"), CASES)
def test_add_rows_matches_twin(rng, n_docs, n_words, full):
    X = _random_csr(rng, n_docs, n_words, explicit_zeros=True)
    weights, col_ptr, col_docs, col_pos = kernels.cooc_transpose(
        X.indptr, X.indices, X.data, n_words
    )[:4]
    start = rng.random((n_words, n_words))
    got, want = start.copy(), start.copy()
    args = (X.indptr, X.indices, X.data, weights, col_ptr, col_docs, col_pos, full, 2)
    kernels.cooc_add_rows(*args, got)
    naive.cooc_add_rows(*args, want)
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("n", [1, 2, 5, 70, 130])
@pytest.mark.parametrize("n_stripes", [1, 3])
def test_mirror_matches_twin(rng, n, n_stripes):
    # 70 and 130 cross the 64-wide tile boundaries.
    got = rng.random((n, n))
    want = got.copy()
    kernels.cooc_mirror_upper(got, n_stripes)
    naive.cooc_mirror_upper(want, n_stripes)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, got.T)


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("n_stripes", [1, 2, 5])
@pytest.mark.parametrize(("n_docs", "n_words"), CASES)
def test_counts_matches_twin(rng, n_docs, n_words, full, n_stripes, cap):
    X = _random_csr(rng, n_docs, n_words, explicit_zeros=True)
    sym = rng.random((n_words, n_words))
    start = sym + sym.T  # the kernel may mirror, so a running state must be symmetric
    got_out, want_out = start.copy(), start.copy()
    got = kernels.cooc_counts(X.indptr, X.indices, X.data, full, n_stripes, got_out, cap)
    want = naive.cooc_counts(X.indptr, X.indices, X.data, full, n_stripes, want_out, cap)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(got_out, got_out.T)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == want[2]
    assert got[3] == want[3]


@pytest.mark.parametrize("n", [2.0, 3.0, 7.0, 40.0])
@pytest.mark.parametrize("cap", CAPS)
def test_doc_scale_matches_twin_and_caps_the_total_weight(n, cap):
    s = kernels.doc_scale(n, cap)
    assert s == naive.doc_scale(n, cap)
    total = s * n * (n - 1)
    if cap == np.inf:
        assert s == 0.5
    else:
        assert total == pytest.approx(min(n * (n - 1), cap) / cap, rel=1e-15)
        assert total <= 1.0 + 1e-15


def test_whole_rows_and_triangle_agree_bitwise(rng):
    X = _random_csr(rng, 30, 11)
    a, b = np.zeros((11, 11)), np.zeros((11, 11))
    kernels.cooc_counts(X.indptr, X.indices, X.data, True, 2, a)
    kernels.cooc_counts(X.indptr, X.indices, X.data, False, 3, b)
    np.testing.assert_array_equal(a, b)


def test_int64_indices(rng):
    X = _random_csr(rng, 8, 5)
    a, b = np.zeros((5, 5)), np.zeros((5, 5))
    kernels.cooc_counts(X.indptr, X.indices, X.data, True, 2, a)
    kernels.cooc_counts(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, True, 2, b)
    np.testing.assert_array_equal(a, b)


def test_no_documents():
    out = np.zeros((3, 3))
    unigram, doc_freq, num_docs, num_tokens = kernels.cooc_counts(
        np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0), True, 2, out
    )
    assert num_docs == 0 and num_tokens == 0.0
    assert not out.any() and not unigram.any() and not doc_freq.any()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("b", [1, 3])
def test_symmetric_matmul_matches_twin_and_the_full_matrix(seed, b):
    rng = np.random.default_rng(500 + seed)
    n = 7
    dense = rng.random((n, n)) * (rng.random((n, n)) < [0.0, 0.3, 1.0][seed % 3])
    U = sp.csr_matrix(np.triu(dense))
    Z = rng.standard_normal((n, b))
    out = np.ones((n, b))  # added into
    kernels.cooc_symmetric_matmul(rows(U.indptr), U.indices, U.data, Z, out)
    want = np.ones((n, b))
    naive.naive_symmetric_matmul(U.indptr, U.indices, U.data, Z, want)
    np.testing.assert_allclose(out, want, rtol=1e-14, atol=1e-14)
    full = np.triu(dense) + np.triu(dense, 1).T
    np.testing.assert_allclose(out, 1.0 + full @ Z, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("b", [1, 3, 8, 11])
def test_symmetric_matmul32_matches_twin_to_float32(seed, b):
    rng = np.random.default_rng(600 + seed)
    n = 9
    dense = rng.random((n, n)) * (rng.random((n, n)) < [0.0, 0.3, 1.0][seed % 3])
    U = sp.csr_matrix(np.triu(dense))  # float64 values, read as float32
    Z = rng.standard_normal((n, b)).astype(np.float32)
    out = np.ones((n, b), dtype=np.float32)  # added into
    kernels.cooc_symmetric_matmul32(rows(U.indptr), U.indices, U.data, Z, out)
    assert out.dtype == np.float32
    want = np.ones((n, b))
    naive.naive_symmetric_matmul(U.indptr, U.indices, U.data, Z.astype(np.float64), want)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("width", [1, 2, 4, 11])
@pytest.mark.parametrize("single", [False, True])
def test_symmetric_matmul_by_column_tiles_is_the_same_to_the_bit(rng, width, single):
    """Tiles change the order the entries are visited in, not the order any row of ``out``
    gets its terms: the product is the row-by-row one exactly (float64 and float32)."""
    n, b = 11, 5
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    U = sp.csr_matrix(np.triu(dense + dense.T))
    tiles = column_tiles(U.indptr.astype(np.int64), U.indices, width)
    kernel = kernels.cooc_symmetric_matmul32 if single else kernels.cooc_symmetric_matmul
    Z = rng.standard_normal((n, b)).astype(np.float32 if single else np.float64)
    want, got = np.ones_like(Z), np.ones_like(Z)
    kernel(rows(U.indptr), U.indices, U.data, Z, want)
    kernel(tiles, U.indices, U.data, Z, got)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("b", [1, 4])
def test_document_gram_matmul_matches_twin_and_the_sparse_products(seed, b):
    rng = np.random.default_rng(700 + seed)
    n_docs, n_words = 9, 6
    X = _random_csr(rng, n_docs, n_words)
    weights = rng.random(n_docs) * (rng.random(n_docs) < 0.8)  # some documents weigh 0
    Z = np.ascontiguousarray(rng.standard_normal((n_words, b)))
    out = np.ones((n_words, b))  # added into
    kernels.document_gram_matmul(X.indptr, X.indices, X.data, weights, Z, out)
    want = np.ones((n_words, b))
    naive.naive_document_gram_matmul(X.indptr, X.indices, X.data, weights, Z, want)
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-13)
    H = X.toarray()
    np.testing.assert_allclose(out, 1.0 + H.T @ (weights[:, None] * (H @ Z)), rtol=1e-13,
                               atol=1e-13)


@pytest.mark.parametrize("n_docs, n_words", CASES)
def test_document_gram_upper_matches_twin(rng, n_docs, n_words):
    X = _random_csr(rng, n_docs, n_words)
    weights = rng.random(n_docs) * (rng.random(n_docs) < 0.8)  # some documents weigh 0
    got = kernels.document_gram_upper(X.indptr, X.indices, X.data, weights, n_words)
    want = naive.naive_document_gram_upper(X.indptr, X.indices, X.data, weights, n_words)
    np.testing.assert_array_equal(got[0], want[0])  # the same entries stored: none is 0
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0].dtype == np.int64 and got[1].dtype == np.int32
    np.testing.assert_allclose(got[2], want[2], rtol=1e-13)


@settings(max_examples=40, deadline=None)
@given(n_docs=st.integers(1, 12), n_words=st.integers(1, 150), density=st.floats(0.01, 0.5),
       seed=st.integers(0, 2**32 - 1), zeros=st.booleans())
def test_document_gram_upper_matches_twin_across_bitmap_words(n_docs, n_words, density, seed,
                                                              zeros):
    # Up to 150 words: rows whose columns span several 64-bit words of the kernel's bitmap,
    # repeated words, documents of weight 0 and stored zeros in the counts.
    rng = np.random.default_rng(seed)
    dense = rng.poisson(1.0, size=(n_docs, n_words)) * (rng.random((n_docs, n_words)) < density)
    X = sp.csr_matrix(dense.astype(np.float64))
    if zeros and X.nnz:
        X.data[rng.random(X.nnz) < 0.2] = 0.0
    weights = rng.random(n_docs) * (rng.random(n_docs) < 0.8)
    got = kernels.document_gram_upper(X.indptr, X.indices, X.data, weights, n_words)
    want = naive.naive_document_gram_upper(X.indptr, X.indices, X.data, weights, n_words)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-13)


def test_document_gram_upper_refuses_unsorted_rows():
    X = sp.csr_matrix((np.ones(3), np.array([2, 0, 1]), np.array([0, 3])), shape=(1, 3))
    with pytest.raises(ValueError, match="sorted and distinct"):
        kernels.document_gram_upper(X.indptr, X.indices, X.data, np.ones(1), 3)


def test_document_gram_upper_fills_its_bound(rng):
    # One long document of distinct words: V (V - 1) / 2 pairs from V stored counts, each row
    # as long as its bound allows.
    n_words = 40
    X = sp.csr_matrix(np.ones((1, n_words)))
    indptr, indices, data = kernels.document_gram_upper(X.indptr, X.indices, X.data,
                                                        np.ones(1), n_words)
    assert indptr[-1] == n_words * (n_words - 1) // 2  # the diagonal is 0: not stored
    np.testing.assert_array_equal(data, 1.0)


@settings(max_examples=60, deadline=None)
@given(n_docs=st.integers(1, 12), n_words=st.integers(1, 150), density=st.floats(0.01, 0.6),
       stored=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1), sums=st.booleans())
def test_document_gram_upper_into_is_the_gram_added_into(n_docs, n_words, density, stored,
                                                         seed, sums):
    # The documents' pairs added into an upper triangle that stores a share of them (and
    # pairs they do not have): the same bytes as the gram and csr_add_into in two kernels,
    # and as their twins; rows filled densely (long documents) and sparsely both.
    from anchorstream._kernels.csr import csr_add_into

    rng = np.random.default_rng(seed)
    counts = rng.poisson(1.0, size=(n_docs, n_words)) * (rng.random((n_docs, n_words))
                                                          < density)
    X = sp.csr_matrix(counts.astype(np.float64))
    weights = rng.random(n_docs) * (rng.random(n_docs) < 0.8)
    a = sp.csr_matrix(np.triu(rng.random((n_words, n_words))
                              * (rng.random((n_words, n_words)) < stored)))
    a.sort_indices()
    keep = rng.random(n_words) < 0.8
    diagonal = a.diagonal().copy() if sums else np.zeros(0)
    row_sums = rng.random(n_words) if sums else np.zeros(0)
    a_data = a.data.copy()
    got_d, got_s = diagonal.copy(), row_sums.copy()
    rest = kernels.document_gram_upper_into(X.indptr, X.indices, X.data, weights, a.indptr,
                                            a.indices, a_data, keep, got_d, got_s)
    # The two kernels it replaces.
    g = kernels.document_gram_upper(X.indptr, X.indices, X.data, weights, n_words)
    want_data, want_d, want_s = a.data.copy(), diagonal.copy(), row_sums.copy()
    left = np.zeros(g[1].size, dtype=np.bool_)
    row_left = np.zeros(n_words, dtype=np.int64)
    csr_add_into(a.indptr, a.indices, want_data, *g, left, row_left, keep, want_d, want_s)
    assert np.array_equal(a_data, want_data)
    assert np.array_equal(got_d, want_d) and np.array_equal(got_s, want_s)
    np.testing.assert_array_equal(rest[0][1:], np.cumsum(row_left))
    np.testing.assert_array_equal(rest[1], g[1][left])
    assert np.array_equal(rest[2], g[2][left])
    assert rest[0].dtype == np.int64 and rest[1].dtype == np.int32
    # And the twin.
    t_data, t_diag, t_sums, t_rest = naive.naive_document_gram_upper_into(
        X.indptr, X.indices, X.data, weights, a.indptr, a.indices, a.data, keep)
    np.testing.assert_allclose(a_data, t_data, rtol=1e-13)
    np.testing.assert_array_equal(rest[0], t_rest[0])
    np.testing.assert_array_equal(rest[1], t_rest[1])
    np.testing.assert_allclose(rest[2], t_rest[2], rtol=1e-13)
    if sums:
        np.testing.assert_allclose(got_d - diagonal, t_diag, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_s - row_sums, t_sums, rtol=1e-12, atol=1e-12)


def test_document_gram_upper_into_refuses_unsorted_rows():
    X = sp.csr_matrix((np.ones(3), np.array([2, 0, 1]), np.array([0, 3])), shape=(1, 3))
    a = sp.csr_matrix(np.triu(np.ones((3, 3))))
    with pytest.raises(ValueError, match="sorted and distinct"):
        kernels.document_gram_upper_into(X.indptr, X.indices, X.data, np.ones(1), a.indptr,
                                         a.indices, a.data.copy(), np.ones(3, dtype=bool),
                                         np.zeros(0), np.zeros(0))
