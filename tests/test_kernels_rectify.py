"""The rectification kernel against its loop twin (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import pytest

from anchorstream._kernels.rectify import (
    anchor_dense_to_csr,
    block_rows,
    block_sqnorms,
    clip_block,
    corrections_csr,
    corrections_matmul,
    corrections_sums,
    anchor_negative_entries,
    anchor_rectify_clip,
    anchor_update_difference,
    negative_entries_rechecked,
)
from tests.naive_anchor import (
    naive_block_rows,
    naive_block_sqnorms,
    naive_clip_block,
    naive_corrections_csr,
    naive_corrections_matmul,
    naive_corrections_sums,
    naive_dense_to_csr,
    naive_negative_entries,
    naive_negative_entries_rechecked,
    naive_rectify_clip,
    naive_update_difference,
)


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (6, 4)])
@pytest.mark.parametrize("shift", [-0.3, 0.0, 0.25])
def test_rectify_clip_matches_twin(rng, shape, shift):
    block = rng.standard_normal(shape)
    old = rng.standard_normal(shape)
    b1, b2 = block.copy(), block.copy()
    out1, out2 = np.full(shape, np.nan), np.full(shape, np.nan)
    got = anchor_rectify_clip(b1, shift, old, out1)
    want = naive_rectify_clip(b2, shift, old, out2)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(out1, out2)
    assert np.all(out1 >= 0)


def test_rectify_clip_in_place_on_strided_views(rng):
    # rectify passes non-contiguous views and lets `old` alias `out`.
    full = rng.standard_normal((5, 9))
    block = rng.standard_normal((5, 9))[:, 2:6]
    twin_full, twin_block = full.copy(), block.copy()
    got = anchor_rectify_clip(block, 0.1, full[:, 3:7], full[:, 3:7])
    want = naive_rectify_clip(twin_block, 0.1, twin_full[:, 3:7], twin_full[:, 3:7])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_array_equal(full, twin_full)
    np.testing.assert_array_equal(block, twin_block)


@pytest.mark.parametrize("shape, density", [((1, 1), 0.0), ((1, 1), 1.0), ((6, 9), 0.3),
                                            ((9, 6), 0.0), ((7, 7), 1.0)])
def test_dense_to_csr_matches_twin_and_scipy(rng, shape, density):
    import scipy.sparse as sp

    dense = rng.standard_normal(shape) * (rng.random(shape) < density)
    nnz = int(np.count_nonzero(dense))
    got = anchor_dense_to_csr(dense, nnz)
    want = naive_dense_to_csr(dense, nnz)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    csr = sp.csr_array((got[2], got[1], got[0]), shape=shape)
    np.testing.assert_array_equal(csr.toarray(), dense)


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (6, 4)])
@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_update_difference_matches_twin(rng, shape, precision):
    rows = rng.standard_normal(shape)
    previous = rng.standard_normal(shape).astype(precision)
    if shape[0] > 2:
        rows[1, 1] = np.nan
        previous[2, 0] = np.inf
    got_diff, want_diff = np.full(shape, np.nan, precision), np.full(shape, np.nan, precision)
    got = anchor_update_difference(rows, previous, got_diff)
    want = naive_update_difference(rows, previous, want_diff)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(got_diff, want_diff)
    assert got[2] == (2 if shape[0] > 2 else 0)


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (40, 17)])
@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_negative_entries_match_twin(rng, shape, precision):
    block = rng.standard_normal(shape).astype(precision)
    block[0, 0] = 0.0  # zero is not negative
    got = anchor_negative_entries(block)
    want = naive_negative_entries(block)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert np.all(got[2] > 0)


@pytest.mark.parametrize(("V", "K", "n_cols"), [(1, 1, 1), (7, 3, 4), (60, 9, 25)])
def test_rechecked_negative_entries_match_twin_and_the_float64_product(rng, V, K, n_cols):
    # Rows of every scale, some pairs orthogonal to rounding (their product within float32's
    # error of zero), one row zero.
    Y = rng.standard_normal((V, K)) * 10.0 ** rng.uniform(-20, 3, size=(V, 1))
    Y[V // 2] = 0.0
    if V > 2:
        Y[1] = Y[2] - Y[2] @ Y[0] / (Y[0] @ Y[0]) * Y[0]  # y_1 ⟂ y_0
    cols = rng.choice(V, size=min(n_cols, V), replace=False).astype(np.int64)
    Y32 = Y.astype(np.float32)
    block = Y32 @ Y32[cols].T
    bound = np.sqrt(2.0 * (K + 2) * 2.0**-24) * np.linalg.norm(Y, axis=1)
    floor = 4.0 * K * float(np.finfo(np.float32).tiny) * (1.0 + np.abs(Y).max())
    got = negative_entries_rechecked(block, Y, cols, bound, floor, block.size)
    want = naive_negative_entries_rechecked(block, Y, cols, bound, floor, block.size)
    assert got[3] == want[3] >= got[0].size
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)
    assert np.all(got[2] > 0)
    # More candidates than allowed: none.
    for found in (negative_entries_rechecked(block, Y, cols, bound, floor, got[3] - 1),
                  naive_negative_entries_rechecked(block, Y, cols, bound, floor, got[3] - 1)):
        assert found[3] == got[3] and all(a.size == 0 for a in found[:3])
    # The float64 product's negative entries, but those within its own rounding of zero.
    exact = Y @ Y[cols].T
    scale = np.outer(np.linalg.norm(Y, axis=1), np.linalg.norm(Y[cols], axis=1))
    clear = np.abs(exact) > 1e-12 * scale
    found = np.zeros(exact.shape, dtype=bool)
    found[got[0], got[1]] = True
    np.testing.assert_array_equal(found[clear], (exact < 0)[clear])
    err = np.abs(-exact[got[0], got[1]] - got[2])
    assert np.all(err <= 1e-12 * np.abs(got[2]) + 1e-12 * scale[got[0], got[1]])


@pytest.mark.parametrize(("V", "n_scanned", "b"), [(1, 1, 1), (6, 2, 3), (30, 7, 4),
                                                  (30, 30, 2)])
def test_corrections_products_and_sums_match_twins_and_the_csr(rng, V, n_scanned, b):
    scanned = rng.permutation(V)[:n_scanned]
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    block = rng.standard_normal((V, n_scanned))
    rows, cols, values = naive_negative_entries(block)
    Z = rng.standard_normal((V, b))
    out = np.full((V, b), 0.5)  # added to
    got = corrections_matmul(rows, cols, values, scanned, outside, Z, out)
    assert got is out
    want = naive_corrections_matmul(rows, cols, values, scanned, outside, Z)
    np.testing.assert_allclose(got - 0.5, want, rtol=1e-12, atol=1e-12)
    sums = corrections_sums(rows, cols, values, scanned, outside, np.full(V, 0.25)) - 0.25
    np.testing.assert_allclose(sums, naive_corrections_sums(rows, cols, values, scanned,
                                                            outside), rtol=1e-12, atol=0)
    # The product is the CSR's built from the same entries, to the last bit: each row adds
    # its terms in the entries' order, as the CSR's row holds them (SciPy's row sums add in
    # another order).
    indptr, indices, data = corrections_csr(rows, cols, values, scanned, outside)
    E = sp.csr_matrix((data, indices, indptr), shape=(V, V))
    np.testing.assert_array_equal(
        corrections_matmul(rows, cols, values, scanned, outside, Z, np.zeros((V, b))), E @ Z)
    np.testing.assert_allclose(sums, np.asarray(E.sum(axis=1)).ravel(), rtol=1e-13, atol=0)


@pytest.mark.parametrize(("V", "n_scanned"), [(1, 1), (6, 2), (30, 7), (30, 30)])
def test_corrections_csr_matches_twin_and_the_coordinates(rng, V, n_scanned):
    scanned = rng.permutation(V)[:n_scanned]
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    block = rng.standard_normal((V, n_scanned))
    block[np.arange(min(V, n_scanned)), np.arange(min(V, n_scanned))] = 0.0
    rows, cols, values = naive_negative_entries(block)
    got = corrections_csr(rows, cols, values, scanned, outside)
    want = naive_corrections_csr(rows, cols, values, scanned, outside)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    # The matrix it stands for: N on the scanned columns, mirrored onto the rows of scanned
    # words from the words outside.
    indptr, indices, data = got
    E = np.zeros((V, V))
    for r in range(V):
        for k in range(indptr[r], indptr[r + 1]):
            assert E[r, indices[k]] == 0.0  # no position twice
            E[r, indices[k]] = data[k]
    N = np.maximum(-block, 0.0)
    want_E = np.zeros((V, V))
    want_E[:, scanned] = N
    want_E[np.ix_(scanned, np.flatnonzero(outside))] = N[outside].T
    np.testing.assert_array_equal(E, want_E)


@pytest.mark.parametrize(("V", "n_scanned"), [(1, 1), (6, 2), (30, 7), (30, 30)])
@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_block_sqnorms_match_twin(rng, V, n_scanned, precision):
    scanned = rng.permutation(V)[:n_scanned]
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    block = np.maximum(rng.standard_normal((V, n_scanned)), 0.0).astype(precision)
    got = block_sqnorms(block, outside, scanned)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, naive_block_sqnorms(block, outside, scanned), rtol=1e-12)


@pytest.mark.parametrize(("b", "n"), [(1, 1), (5, 3), (17, 9)])
@pytest.mark.parametrize(("source", "held"), [(np.float64, np.float64), (np.float64, np.float32),
                                              (np.float32, np.float32)])
def test_clip_block_matches_twin(rng, b, n, source, held):
    src = rng.standard_normal((b, n)).astype(source)
    src[0, 0] = 1e-50 if source == np.float64 else src[0, 0]  # a positive that float32 loses
    outside = rng.random(b) < 0.5
    rows, rows_sq = np.full(b, np.nan), np.full(b, np.nan)
    cols, cols_sq = np.ones(n), np.ones(n)  # added into, as the scan's accumulators
    want = naive_clip_block(src, held, outside)
    out = src if source == held else np.full((b, n), np.nan, dtype=held)
    count = clip_block(src, out, outside, rows, rows_sq, cols, cols_sq)
    np.testing.assert_array_equal(out, want[0])
    assert count == want[1]
    np.testing.assert_allclose(rows, want[2], rtol=1e-12)
    np.testing.assert_allclose(rows_sq, want[3], rtol=1e-12)
    np.testing.assert_allclose(cols, 1.0 + want[4], rtol=1e-12)
    np.testing.assert_allclose(cols_sq, 1.0 + want[5], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("V, n, m", [(1, 1, 1), (6, 3, 4), (9, 9, 2), (7, 0, 3), (5, 2, 0)])
def test_block_rows_matches_twin(rng, dtype, V, n, m):
    scanned = np.sort(rng.choice(V, n, replace=False)).astype(np.int64)
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    position = np.full(V, -1, dtype=np.int64)
    position[scanned] = np.arange(n)
    block = (rng.random((V, n)) * (rng.random((V, n)) < 0.6)).astype(dtype)
    # Asked rows mix scanned and outside words, and may repeat one.
    idx = rng.integers(0, V, size=m).astype(np.int64)
    if m and n:
        idx[0] = scanned[-1]  # at least one row with a mirrored column
    out = np.zeros((m, V))
    block_rows(block, scanned, position, outside, idx, 0.5, out)
    want = naive_block_rows(block.astype(np.float64), scanned, position, outside, idx, 0.5)
    np.testing.assert_allclose(out, want, rtol=1e-15, atol=0)
