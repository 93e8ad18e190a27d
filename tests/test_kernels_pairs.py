"""The pair-refinement kernels against their NumPy twins (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from anchorstream._kernels.pairs import (pairs_em_pass, pairs_em_pass_striped, pairs_loglik,
                                        pairs_upper_from_dense)
from tests.naive_pairs import naive_em_pass, naive_upper_from_dense


def symmetric_counts(rng, n, density):
    A = rng.random((n, n)) * (rng.random((n, n)) < density)
    return np.triu(A) + np.triu(A, 1).T


@pytest.mark.parametrize("n, density", [(1, 1.0), (5, 0.0), (7, 0.4), (9, 1.0)])
def test_upper_from_dense_matches_twin(rng, n, density):
    dense = symmetric_counts(rng, n, density)
    for got, want in zip(pairs_upper_from_dense(dense), naive_upper_from_dense(dense)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n, K, density", [(1, 1, 1.0), (6, 2, 0.5), (11, 4, 0.3),
                                           (8, 3, 1.0)])
def test_em_pass_matches_twin(rng, n, K, density):
    dense = symmetric_counts(rng, n, density)
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = rng.random((n, K)) + 0.05
    R = rng.random((K, K))
    G = np.ascontiguousarray(B @ (R + R.T))
    M = np.zeros((n, K))
    got = pairs_em_pass(indptr, indices, data, G, B, M)
    want, want_M = naive_em_pass(indptr, indices, data, G, B)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(M, want_M, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pairs_loglik(indptr, indices, data, G, B), want, rtol=1e-12,
                               atol=1e-14)


def test_em_pass_zero_probability_pair_is_minus_infinity(rng):
    # Word 0 and word 1 share no topic: their pair is impossible under the model.
    dense = np.array([[1.0, 2.0], [2.0, 0.0]])
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = np.array([[1.0, 0.0], [0.0, 1.0]])
    G = np.ascontiguousarray(B @ np.eye(2))
    M = np.zeros((2, 2))
    got = pairs_em_pass(indptr, indices, data, G, B, M)
    want, want_M = naive_em_pass(indptr, indices, data, G, B)
    assert got == want == pairs_loglik(indptr, indices, data, G, B) == -np.inf
    np.testing.assert_allclose(M, want_M)


@pytest.mark.parametrize("n, K, density", [(1, 1, 1.0), (6, 3, 0.5), (11, 8, 0.3),
                                           (9, 13, 1.0)])
def test_em_pass_in_float32_matches_twin(rng, n, K, density):
    # The refinement's dtype: products, p and M in float32, the log-likelihood in float64.
    dense = symmetric_counts(rng, n, density)
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = (rng.random((n, K)) + 0.05).astype(np.float32)
    R = rng.random((K, K))
    G = np.ascontiguousarray(B @ (R + R.T), dtype=np.float32)
    M = np.zeros((n, K), dtype=np.float32)
    got = pairs_em_pass(indptr, indices, data, G, B, M)
    want, want_M = naive_em_pass(indptr, indices, data, G, B)
    assert M.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(M, want_M, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_em_pass_p_min_makes_a_small_probability_impossible(rng, dtype):
    dense = symmetric_counts(rng, 6, 1.0)
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = (rng.random((6, 2)) + 0.05).astype(dtype)
    G = np.ascontiguousarray(B @ np.eye(2), dtype=dtype)
    p = np.asarray(G, np.float64) @ np.asarray(B, np.float64).T
    # Halfway between two of the pairs' probabilities, so that rounding decides no pair.
    ps = np.sort(p[np.triu_indices(6)])
    p_min = float(ps[10] + ps[11]) / 2
    M = np.zeros((6, 2), dtype=dtype)
    got = pairs_em_pass(indptr, indices, data, G, B, M, p_min)
    want, want_M = naive_em_pass(indptr, indices, data, G, B, p_min)
    assert got == want == -np.inf
    np.testing.assert_allclose(M, want_M, rtol=1e-5)
    assert np.any(M > 0)  # the pairs above p_min still add to M


def test_em_pass_with_no_word_or_no_topic():
    empty = np.zeros((0, 2))
    assert pairs_em_pass(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0), empty,
                         empty, empty.copy()) == 0.0
    indptr, indices, data = pairs_upper_from_dense(np.ones((2, 2)))
    none = np.zeros((2, 0))
    assert pairs_em_pass(indptr, indices, data, none, none, none.copy()) == -np.inf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_stripes", [1, 2, 3, 5, 20])
def test_striped_em_pass_matches_twin(rng, dtype, n_stripes):
    # Rows dealt to stripes, each scattering into its own M, summed in stripe order: the
    # serial pass's result to rounding, and that pass itself with one stripe.
    dense = symmetric_counts(rng, 13, 0.5)
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = (rng.random((13, 4)) + 0.05).astype(dtype)
    R = rng.random((4, 4))
    G = np.ascontiguousarray(B @ (R + R.T).astype(dtype))  # the model's R is symmetric
    M = np.zeros_like(B)
    got = pairs_em_pass_striped(indptr, indices, data, G, B, M, 0.0, n_stripes)
    want, want_M = naive_em_pass(indptr, indices, data, G.astype(np.float64),
                                 B.astype(np.float64))
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=rtol)
    np.testing.assert_allclose(M, want_M, rtol=rtol, atol=1e-12)
    if n_stripes == 1:
        M1 = np.zeros_like(B)
        assert pairs_em_pass(indptr, indices, data, G, B, M1, 0.0) == got
        np.testing.assert_array_equal(M1, M)


def test_striped_em_pass_bits_follow_the_stripes_not_the_threads(rng):
    dense = symmetric_counts(rng, 40, 0.4)
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = (rng.random((40, 8)) + 0.05).astype(np.float32)
    R = rng.random((8, 8))
    G = np.ascontiguousarray(B @ (R + R.T).astype(np.float32))
    results = []
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            M = np.zeros_like(B)
            results.append((pairs_em_pass_striped(indptr, indices, data, G, B, M, 0.0, 3), M))
    finally:
        numba.set_num_threads(before)
    for loglik, M in results[1:]:
        assert loglik == results[0][0]
        np.testing.assert_array_equal(M, results[0][1])


def test_striped_em_pass_zero_probability_pair_is_minus_infinity():
    dense = np.array([[1.0, 2.0, 0.0], [2.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    indptr, indices, data = pairs_upper_from_dense(dense)
    B = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    G = np.ascontiguousarray(B @ np.eye(2))
    M = np.zeros((3, 2))
    want, want_M = naive_em_pass(indptr, indices, data, G, B)
    assert pairs_em_pass_striped(indptr, indices, data, G, B, M, 0.0, 2) == want == -np.inf
    np.testing.assert_allclose(M, want_M)
