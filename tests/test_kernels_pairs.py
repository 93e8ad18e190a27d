"""The pair-refinement kernels against their NumPy twins (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
import pytest

from anchorstream._kernels.pairs import (
    pairs_diagonal,
    pairs_em_scatter,
    pairs_probabilities,
    pairs_row_sums,
    pairs_upper_from_dense,
)
from anchorstream._kernels.tiles import column_tiles
from tests.naive_pairs import (
    naive_diagonal,
    naive_em_pass,
    naive_em_scatter,
    naive_row_sums,
    naive_upper_from_dense,
)


def rows(indptr):
    """The kernels' ``tiles`` of one tile: each row's pairs as the CSR holds them."""
    return np.stack([indptr[:-1], indptr[1:]]).astype(np.int64)


def symmetric_counts(rng, n, density):
    A = rng.random((n, n)) * (rng.random((n, n)) < density)
    return np.triu(A) + np.triu(A, 1).T


@pytest.mark.parametrize("n, density", [(1, 1.0), (5, 0.0), (7, 0.4), (9, 1.0)])
def test_upper_from_dense_matches_twin(rng, n, density):
    dense = symmetric_counts(rng, n, density)
    for got, want in zip(pairs_upper_from_dense(dense), naive_upper_from_dense(dense)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def _loglik(indptr, indices, data, p):
    """``Σ C log p`` over ordered pairs from the upper triangle's probabilities."""
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return float((data * np.where(rows == indices, 1.0, 2.0)) @ np.log(p))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, K, density", [(1, 1, 1.0), (6, 2, 0.5), (11, 4, 0.3),
                                           (8, 3, 1.0)])
def test_probabilities_match_the_twins_loglik_on_every_row_range(rng, dtype, n, K, density):
    dense = symmetric_counts(rng, n, density)
    indptr, indices, data = pairs_upper_from_dense(dense)
    if data.size > 1:
        data[-1] = 0.0  # a stored zero: p 1
    B = rng.random((n, K)) + 0.05
    R = rng.random((K, K))
    G = np.ascontiguousarray(B @ (R + R.T))
    want, _ = naive_em_pass(indptr, indices, data, G, B)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    p = np.full(data.size, np.nan)
    for row0, row1 in [(0, n // 2), (n // 2, n)]:
        t0, t1 = indptr[row0], indptr[row1]
        assert not pairs_probabilities(rows(indptr), indices, data, G.astype(dtype),
                                       B.astype(dtype), 0.0, row0, row1, p[t0:t1])
    assert not np.isnan(p).any()
    if data.size > 1:
        assert p[-1] == 1.0
    np.testing.assert_allclose(_loglik(indptr, indices, data, p), want, **tol)


def test_probabilities_flag_a_pair_at_or_below_p_min():
    # Word 0 and word 1 share no topic: their pair is impossible under the model.
    indptr, indices, data = pairs_upper_from_dense(np.array([[1.0, 2.0], [2.0, 0.0]]))
    B = np.array([[1.0, 0.0], [0.0, 1.0]])
    G = np.ascontiguousarray(B @ np.eye(2))
    p = np.empty(2)
    assert pairs_probabilities(rows(indptr), indices, data, G, B, 0.0, 0, 2, p)
    np.testing.assert_array_equal(p, [1.0, 1.0])  # the impossible pair's log adds 0
    assert not pairs_probabilities(rows(indptr), indices, data, G, B, 0.0, 0, 0, p)
    none = np.zeros((2, 0))  # no topics: every observed pair is impossible
    p[:] = np.nan
    assert pairs_probabilities(rows(indptr), indices, data, none, none, 0.0, 0, 2, p)
    np.testing.assert_array_equal(p, [1.0, 1.0])
    assert naive_em_pass(indptr, indices, data, G, B)[0] == -np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, K, density", [(1, 1, 1.0), (6, 2, 0.5), (11, 4, 0.3), (9, 3, 1.0)])
def test_em_scatter_matches_twin_on_every_row_range(rng, dtype, n, K, density):
    dense = symmetric_counts(rng, n, density)
    dense[0, -1] = dense[-1, 0] = 0.0
    indptr, indices, data = pairs_upper_from_dense(dense)
    if data.size:
        data[0] = 0.0  # a stored zero: p 1, nothing scattered
    B = (rng.random((n, K)) + 0.05).astype(dtype)
    R = rng.random((K, K))
    G = np.ascontiguousarray(B.astype(np.float64) @ (R + R.T)).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for row0, row1 in [(0, n), (0, n // 2), (n // 2, n), (n - 1, n)]:
        M = np.zeros((n, K), dtype=dtype)
        pbuf = np.full(data.size + 3, -7.0, dtype=dtype)
        bad = pairs_em_scatter(rows(indptr), indices, data, G, B, M, 0.0, row0, row1, pbuf)
        want_M, want_p, want_bad = naive_em_scatter(indptr, indices, data, G, B, 0.0, row0,
                                                    row1)
        m = indptr[row1] - indptr[row0]
        assert bad == want_bad
        np.testing.assert_allclose(pbuf[:m], want_p, **tol)
        assert np.all(pbuf[m:] == -7.0)  # nothing written past the range
        np.testing.assert_allclose(M, want_M, **tol)


def test_em_scatter_flags_an_impossible_pair_and_skips_it(rng):
    dense = symmetric_counts(rng, 5, 1.0)
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = rng.random((5, 2)) + 0.1
    B[3] = 0.0  # word 3's pairs have probability 0
    G = np.ascontiguousarray(B @ np.full((2, 2), 0.25))
    M = np.zeros((5, 2))
    pbuf = np.empty(data.size)
    assert pairs_em_scatter(rows(indptr), indices, data, G, B, M, 0.0, 0, 5, pbuf)
    want_M, want_p, want_bad = naive_em_scatter(indptr, indices, data, G, B, 0.0, 0, 5)
    assert want_bad
    np.testing.assert_allclose(pbuf, want_p, rtol=1e-12)
    np.testing.assert_allclose(M, want_M, rtol=1e-12, atol=1e-15)
    # Without any topic every pair with a count is impossible.
    assert pairs_em_scatter(rows(indptr), indices, data, np.zeros((5, 0)), np.zeros((5, 0)),
                            np.zeros((5, 0)), 0.0, 0, 5, pbuf)
    np.testing.assert_array_equal(pbuf, 1.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_em_scatter_p_min_makes_a_small_probability_impossible(rng, dtype):
    dense = symmetric_counts(rng, 6, 1.0)
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = (rng.random((6, 2)) + 0.05).astype(dtype)
    G = np.ascontiguousarray(B @ np.eye(2), dtype=dtype)
    p = np.asarray(G, np.float64) @ np.asarray(B, np.float64).T
    # Halfway between two of the pairs' probabilities, so that rounding decides no pair.
    ps = np.sort(p[np.triu_indices(6)])
    p_min = float(ps[10] + ps[11]) / 2
    M = np.zeros((6, 2), dtype=dtype)
    pbuf = np.empty(data.size)
    assert pairs_em_scatter(rows(indptr), indices, data, G, B, M, p_min, 0, 6, pbuf)
    want_M, want_p, want_bad = naive_em_scatter(indptr, indices, data, G, B, p_min, 0, 6)
    assert want_bad
    np.testing.assert_allclose(pbuf, want_p, rtol=1e-6)
    np.testing.assert_allclose(M, want_M, rtol=1e-5)
    assert np.any(M > 0)  # the pairs above p_min still add to M


def test_em_scatter_over_no_row():
    empty = np.zeros((0, 2))
    pbuf = np.empty(0)
    assert not pairs_em_scatter(rows(np.zeros(1, np.int64)), np.zeros(0, np.int32),
                                np.zeros(0), empty, empty, empty.copy(), 0.0, 0, 0, pbuf)
    assert not pairs_probabilities(rows(np.zeros(1, np.int64)), np.zeros(0, np.int32),
                                   np.zeros(0), empty, empty, 0.0, 0, 0, pbuf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 3, 4, 13])
def test_the_pass_by_column_tiles_is_the_row_pass_to_the_bit(rng, dtype, width):
    """Tiles change the order the pairs are visited in, not the order any row of ``M`` gets
    its terms, nor where a pair's probability goes: ``M``, ``pbuf`` and the flag are the
    row-by-row pass's exactly, on every row range."""
    n, K = 13, 5
    dense = symmetric_counts(rng, n, 0.6)
    indptr, indices, data = pairs_upper_from_dense(dense)
    data[1] = 0.0  # a stored zero
    B = (rng.random((n, K)) + 0.05).astype(dtype)
    B[4, :] = 0.0  # word 4's pairs are impossible
    R = rng.random((K, K))
    G = np.ascontiguousarray(B.astype(np.float64) @ (R + R.T)).astype(dtype)
    tiles = column_tiles(indptr, indices, width)
    for row0, row1 in [(0, n), (0, 5), (5, n), (n - 1, n), (3, 3)]:
        out = []
        for t in (rows(indptr), tiles):
            M = np.zeros((n, K), dtype=dtype)
            pbuf = np.full(data.size, -7.0)
            bad = pairs_em_scatter(t, indices, data, G, B, M, 0.0, row0, row1, pbuf)
            p = np.full(data.size, -7.0)
            bad_p = pairs_probabilities(t, indices, data, G, B, 0.0, row0, row1, p)
            out.append((M, pbuf, bad, p, bad_p))
        (M0, p0, bad0, q0, badq0), (M1, p1, bad1, q1, badq1) = out
        np.testing.assert_array_equal(M1, M0)
        np.testing.assert_array_equal(p1, p0)
        np.testing.assert_array_equal(q1, q0)
        want_M, want_p, want_bad = naive_em_scatter(indptr, indices, data, G, B, 0.0, row0,
                                                    row1)
        assert bad1 == bad0 == badq1 == badq0 == want_bad
        m = indptr[row1] - indptr[row0]
        tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12)
        np.testing.assert_allclose(p1[:m], want_p, **tol)
        np.testing.assert_allclose(M1, want_M, **tol)


@pytest.mark.parametrize("n, density", [(0, 0.0), (1, 1.0), (6, 0.0), (9, 0.4), (12, 1.0)])
def test_diagonal_and_row_sums_match_twins_to_the_bit(rng, n, density):
    dense = symmetric_counts(rng, n, density)
    if n > 3:
        dense[2, 2] = 0.0  # a row without its diagonal
    indptr, indices, data = pairs_upper_from_dense(dense)
    got = pairs_diagonal(indptr, indices)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, naive_diagonal(indptr, indices))
    np.testing.assert_array_equal(pairs_row_sums(indptr, indices, data),
                                  naive_row_sums(indptr, indices, data))
    np.testing.assert_allclose(pairs_row_sums(indptr, indices, data), dense.sum(axis=1),
                               rtol=1e-12)
