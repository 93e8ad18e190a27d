"""Recovery kernels against their slow loop twins (tests/naive_recover.py).

Tiny sizes: this file also runs with NUMBA_DISABLE_JIT=1, where the kernels are plain Python.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from anchorstream._kernels import admm as ka
from anchorstream._kernels import recover as kr
from tests import naive_recover as naive


def _problem(seed, V=10, K=3, noise=0.3):
    """A small non-negative co-occurrence with anchors 0..K-1 and the recovery's Gram matrices."""
    rng = np.random.default_rng(seed)
    B = rng.dirichlet(np.full(V, 0.5), size=K).T
    B[:K] = 0.0
    B[np.arange(K), np.arange(K)] = 0.1
    B /= B.sum(axis=0)
    R = rng.dirichlet(np.ones(K * K)).reshape(K, K)
    C = B @ (R + R.T) @ B.T + noise * rng.random((V, V)) / V**2
    C = (C + C.T) / C.sum() / 2.0
    p = C.sum(axis=1)
    S = np.arange(K)
    U = C[S] / p[S, None]
    G = U @ U.T
    H = (C @ U.T) / p[:, None]
    vnorm2 = (C**2).sum(axis=1) / p**2
    rows = np.arange(K, V, dtype=np.int64)
    return C, p, U, G, H, vnorm2, rows


def _same_iterations(got, want):
    # The kernels update ``Gy`` / ``Uᵀy`` incrementally and the twins recompute them, so a word
    # whose gap lands next to the tolerance may stop a few steps apart; anything more is a bug.
    assert np.all(np.abs(got - want) <= np.maximum(2, want // 10))


def test_constants_match_the_twins():
    assert kr._RECOVER_ARMIJO_C1 == naive.ARMIJO_C1
    assert kr._RECOVER_WOLFE_C2 == naive.WOLFE_C2
    assert kr._RECOVER_MAX_EXPONENT == naive.MAX_EXPONENT
    assert kr._RECOVER_MAX_HALVINGS == naive.MAX_HALVINGS


@pytest.mark.parametrize("K", [1, 2, 5, 9])
def test_project_simplex_matches_twin(K):
    rng = np.random.default_rng(K)
    for scale in (0.01, 1.0, 10.0):
        x = scale * rng.normal(size=K)
        out = np.empty(K)
        kr.recover_project_simplex(x, out, np.empty(K))
        np.testing.assert_allclose(out, naive.naive_project_simplex(x), atol=1e-14)
        assert out.min() >= 0 and abs(out.sum() - 1.0) < 1e-12


def test_project_simplex_in_place_and_fixed_points():
    y = np.array([0.2, 0.0, 0.8])
    kr.recover_project_simplex(y, y, np.empty(3))  # out may alias x
    np.testing.assert_allclose(y, [0.2, 0.0, 0.8], atol=1e-15)
    x = np.array([3.0, 1.0, -2.0])
    kr.recover_project_simplex(x, x, np.empty(3))
    np.testing.assert_allclose(x, [1.0, 0.0, 0.0])


def _warm_start(V, K, seed):
    """Rows on the simplex with exact zeros, which the expgrad kernels must lift."""
    y = np.random.default_rng(seed).dirichlet(np.ones(K), size=V)
    y[::2, 0] = 0.0
    return y / y.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed, warm", [(0, False), (1, False), (2, True)])
def test_expgrad_l2_matches_twin(seed, warm):
    C, p, U, G, H, vnorm2, rows = _problem(seed)
    V, K = H.shape
    init = _warm_start(V, K, seed) if warm else np.full((V, K), 1.0 / K)
    got = kr.recover_expgrad_l2(G, H, vnorm2, init, rows, 1e-9, 3000, 50.0, 1e-6)
    want = naive.naive_expgrad_l2(G, H, vnorm2, init, rows, 1e-9, 3000, 50.0, 1e-6)
    np.testing.assert_allclose(got[0], want[0], atol=1e-7)
    assert got[2][rows].all() and want[2][rows].all()
    _same_iterations(got[1], want[1])
    assert np.all(got[0][:K] == 0)  # rows not asked for are left alone


@pytest.mark.parametrize("seed, warm", [(0, False), (1, False), (2, True)])
def test_expgrad_kl_matches_twin(seed, warm):
    C, p, U, G, H, vnorm2, rows = _problem(seed)
    C[5, 7] = C[7, 5] = 0.0  # a zero that the support loop must skip
    p = C.sum(axis=1)
    V, K = H.shape
    Ut = np.ascontiguousarray((C[:K] / p[:K, None]).T)
    valid = Ut.max(axis=1) > 0
    init = _warm_start(V, K, seed) if warm else np.full((V, K), 1.0 / K)
    got = kr.recover_expgrad_kl(C, p, Ut, valid, init, rows, 1e-9, 3000, 50.0, 1e-6)
    want = naive.naive_expgrad_kl(C, p, Ut, valid, init, rows, 1e-9, 3000, 50.0, 1e-6)
    np.testing.assert_allclose(got[0], want[0], atol=1e-7)
    assert got[2][rows].all() and want[2][rows].all()
    _same_iterations(got[1], want[1])


@pytest.mark.parametrize("use_init", [False, True])
def test_admm_dr_matches_twin(use_init):
    C, p, U, G, H, vnorm2, rows = _problem(2)
    V, K = H.shape
    gamma, lam = 3.0, 1.9
    F = scipy.linalg.inv(gamma * G + np.eye(K))
    G_pinv = scipy.linalg.pinvh(G)
    init = _warm_start(V, K, 3)
    got = ka.recover_admm_dr(G, H, F, G_pinv, init, use_init, rows, lam, gamma, 1e-10, 2000)
    want = naive.naive_admm_dr(G, H, F, G_pinv, init, use_init, rows, lam, gamma, 1e-10, 2000)
    np.testing.assert_allclose(got[0], want[0], atol=1e-9)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])


def _simplex_problem(rng, K):
    """A random positive-definite ``G`` (K × K), ``h``, and the exact simplex minimizer of
    ``½ yᵀGy − hᵀy``."""
    M = rng.normal(size=(K + 3, K))
    G = M.T @ M
    h = rng.normal(size=K)
    return G, h, naive.exact_simplex_least_squares(G, h)


def test_kkt_solve_equals_the_saddle_point_system_and_refuses_a_singular_support():
    """The Cholesky solve gives what a dense solve of ``[[G_SS, 1], [1ᵀ, 0]]`` gives, on any
    support of a positive-definite ``G``; a support whose block is singular is NaN (the search
    then gives up and ADMM iterates)."""
    rng = np.random.default_rng(13)
    for trial in range(60):
        K = int(rng.integers(1, 9))
        G, h, _ = _simplex_problem(rng, K)
        m = int(rng.integers(1, K + 1))
        support = np.sort(rng.choice(K, size=m, replace=False)).astype(np.int64)
        idx = np.concatenate([support, np.zeros(K - m, dtype=np.int64)])
        A, b, y = np.empty((K + 1, K + 1)), np.empty(K + 1), np.full(K, 7.0)
        mu = ka._recover_kkt_solve(G, h, idx, m, A, b, y)
        saddle = np.zeros((m + 1, m + 1))
        saddle[:m, :m] = G[np.ix_(support, support)]
        saddle[:m, m] = saddle[m, :m] = 1.0
        want = np.linalg.solve(saddle, np.append(h[support], 1.0))
        np.testing.assert_allclose(y[support], want[:m], rtol=1e-9, atol=1e-9)
        assert np.all(np.delete(y, support) == 0.0), trial
        np.testing.assert_allclose(mu, want[m], rtol=1e-9, atol=1e-9)
    # Two copies of one row: G_SS is singular on that support.
    M = rng.normal(size=(6, 3))
    M[:, 2] = M[:, 1]
    G = M.T @ M
    idx = np.array([0, 1, 2], dtype=np.int64)
    mu = ka._recover_kkt_solve(G, rng.normal(size=3), idx, 3, np.empty((4, 4)), np.empty(4),
                               np.empty(3))
    assert np.isnan(mu)
    assert np.isnan(ka._recover_kkt_solve(G, np.ones(3), idx, 0, np.empty((4, 4)),
                                          np.empty(4), np.empty(3)))


def test_kkt_solve_from_the_rows_of_an_earlier_factor_equals_a_solve_from_none():
    """The active-set search keeps the factor's first ``done`` rows where the support's first
    words stay (words added after them, or dropped from ``done`` on): the solution is the
    one a whole factorization gives, and kept rows are checked against the new scale."""
    rng = np.random.default_rng(17)
    for trial in range(40):
        K = int(rng.integers(2, 9))
        G, h, _ = _simplex_problem(rng, K)
        order = rng.permutation(K).astype(np.int64)  # the order words joined
        m1 = int(rng.integers(1, K))
        m2 = int(rng.integers(m1 + 1, K + 1))
        A, b, y = np.empty((K + 1, K + 1)), np.empty(K + 1), np.empty(K)
        ka._recover_kkt_solve(G, h, order, m1, A, b, y)
        for m, done in ((m2, m1), (m1, m1), (m2, 0)):
            grown = np.empty(K)
            mu = ka._recover_kkt_solve(G, h, order, m, A, b, grown, done)
            fresh = np.empty(K)
            want = ka._recover_kkt_solve(G, h, order, m, np.empty((K + 1, K + 1)),
                                         np.empty(K + 1), fresh)
            np.testing.assert_allclose(grown, fresh, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(mu, want, rtol=1e-12, atol=1e-12)
            ka._recover_kkt_solve(G, h, order, m1, A, b, y)  # back to the first support
    # A kept pivot that is tiny against a word added after it: singular, as from none.
    G = np.diag([1e-14, 1.0])
    idx = np.array([0, 1], dtype=np.int64)
    A, b, y = np.empty((3, 3)), np.empty(3), np.empty(2)
    assert np.isfinite(ka._recover_kkt_solve(G, np.ones(2), idx, 1, A, b, y))
    assert np.isnan(ka._recover_kkt_solve(G, np.ones(2), idx, 2, A, b, y, 1))
    assert np.isnan(ka._recover_kkt_solve(G, np.ones(2), idx, 2, np.empty((3, 3)),
                                          np.empty(3), y))


def test_a_warm_start_on_the_simplex_is_taken_as_it_is_and_any_other_is_projected():
    rng = np.random.default_rng(7)
    work, out = np.empty(6), np.empty(6)
    for _ in range(20):
        x = rng.dirichlet(np.full(6, 0.3))
        x[rng.random(6) < 0.3] = 0.0
        x /= x.sum()
        ka._recover_simplex_start(x, out, work)
        np.testing.assert_array_equal(out, x)
        for y in (x * 1.5, x - 0.05, rng.normal(size=6)):
            ka._recover_simplex_start(y, out, work)
            np.testing.assert_allclose(out, naive.naive_project_simplex(y), atol=1e-15)


def test_active_set_search_matches_twin_and_the_oracle():
    """From a nearby start (the optimum of a perturbed problem, its support off by an entry
    or two), the search lands on the exact simplex minimizer, as its twin does; it fails
    rather than answer wrongly."""
    rng = np.random.default_rng(11)
    K = 6
    found = 0
    for trial in range(40):
        G, h, exact = _simplex_problem(rng, K)
        start = naive.exact_simplex_least_squares(G, h + 0.3 * rng.normal(size=K))
        y = np.empty(K)
        for steps in (1, 10):
            ok = ka._recover_active_set(G, h, start, 1e-9, steps, y)
            twin = naive.naive_active_set(G, h, start, 1e-9, steps)
            assert ok == (twin is not None), trial
            if ok:
                np.testing.assert_allclose(y, exact, atol=1e-9)
                np.testing.assert_allclose(twin, exact, atol=1e-9)
        found += ok
    assert found >= 30  # the search usually succeeds from such a start


def test_active_set_search_starts_above_the_tolerance():
    """A warm start is an ADMM solution: its zeros come out as tiny positive entries. The
    search starts from the entries above ``tol`` (and the largest), so the optimum's own support
    with such dust around it is solved in one step, by the kernel and its twin alike."""
    rng = np.random.default_rng(12)
    K = 8
    solved = 0
    for trial in range(30):
        G, h, exact = _simplex_problem(rng, K)
        if (exact > 0).all():
            continue  # no zero entry to dust
        start = exact + np.where(exact > 0, 0.0, 1e-12 * rng.random(K))
        start /= start.sum()
        y = np.empty(K)
        ok = ka._recover_active_set(G, h, start, 1e-9, 1, y)
        twin = naive.naive_active_set(G, h, start, 1e-9, 1)
        assert ok and twin is not None, trial
        np.testing.assert_allclose(y, exact, atol=1e-9)
        np.testing.assert_allclose(twin, exact, atol=1e-9)
        solved += 1
    assert solved >= 10


def test_admm_dr_warm_start_at_the_optimum_takes_no_iterations():
    C, p, U, G, H, vnorm2, rows = _problem(6)
    V, K = H.shape
    F = scipy.linalg.inv(G + np.eye(K))
    G_pinv = scipy.linalg.pinvh(G)
    init = np.zeros((V, K))
    for i in rows:
        init[i] = naive.exact_simplex_least_squares(G, H[i] * 1.02)  # a slightly other problem
    got = ka.recover_admm_dr(G, H, F, G_pinv, init, True, rows, 1.9, 1.0, 1e-9, 2000)
    want = naive.naive_admm_dr(G, H, F, G_pinv, init, True, rows, 1.9, 1.0, 1e-9, 2000)
    np.testing.assert_allclose(got[0], want[0], atol=1e-9)
    np.testing.assert_array_equal(got[1], want[1])
    assert np.all(got[1][rows] == 0) and got[2][rows].all()
    for i in rows:
        np.testing.assert_allclose(got[0][i], naive.exact_simplex_least_squares(G, H[i]),
                                   atol=1e-9)


def test_l2_solvers_reach_the_exact_minimizer():
    # Both L2 solvers against the support-enumeration oracle, on a problem with an interior
    # optimum (expgrad converges there in a few hundred steps).
    C, p, U, G, H, vnorm2, rows = _problem(4, noise=1.0)
    V, K = H.shape
    F = scipy.linalg.inv(3.0 * G + np.eye(K))
    admm = ka.recover_admm_dr(
        G, H, F, scipy.linalg.pinvh(G), H, False, rows, 1.9, 3.0, 1e-12, 20000
    )
    eg = kr.recover_expgrad_l2(
        G, H, vnorm2, np.full((V, K), 1.0 / K), rows, 1e-12, 20000, 50.0, 0.0
    )
    for i in rows:
        exact = naive.exact_simplex_least_squares(G, H[i])
        np.testing.assert_allclose(admm[0][i], exact, atol=1e-8)
        np.testing.assert_allclose(eg[0][i], exact, atol=1e-3)


def test_expgrad_kl_lifts_a_start_that_leaves_a_column_uncovered():
    C, p, U, G, H, vnorm2, rows = _problem(5)
    C[0, 8] = C[8, 0] = 0.0  # anchor 0 never meets word 8 ...
    p = C.sum(axis=1)
    V, K = H.shape
    Ut = np.ascontiguousarray((C[:K] / p[:K, None]).T)
    valid = Ut.max(axis=1) > 0
    init = np.zeros((V, K))
    init[:, 0] = 1.0  # ... so a start on topic 0 alone gives word 8 zero probability
    got = kr.recover_expgrad_kl(C, p, Ut, valid, init, rows, 1e-9, 3000, 50.0, 1e-6)
    want = naive.naive_expgrad_kl(C, p, Ut, valid, init, rows, 1e-9, 3000, 50.0, 1e-6)
    np.testing.assert_allclose(got[0], want[0], atol=1e-7)
    assert got[2][rows].all() and want[2][rows].all()
    _same_iterations(got[1], want[1])


def test_admm_dr_cold_finishes_on_the_exact_minimizer():
    # At the default's loose tolerance ADMM's iterate is only near the optimum, but its support
    # is right after a few iterations: the active-set search from it returns the exact
    # minimizer (and ADMM stops long before its own test would stop it).
    C, p, U, G, H, vnorm2, rows = _problem(7)
    V, K = H.shape
    F = scipy.linalg.inv(G + np.eye(K))
    got = ka.recover_admm_dr(G, H, F, scipy.linalg.pinvh(G), H, False, rows, 1.9, 1.0, 1e-5,
                             500)
    want = naive.naive_admm_dr(G, H, F, scipy.linalg.pinvh(G), H, False, rows, 1.9, 1.0, 1e-5,
                               500)
    np.testing.assert_allclose(got[0], want[0], atol=1e-12)
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2][rows].all()
    for i in rows:
        np.testing.assert_allclose(got[0][i], naive.exact_simplex_least_squares(G, H[i]),
                                   atol=1e-9)
    assert got[1][rows].max() <= 16
