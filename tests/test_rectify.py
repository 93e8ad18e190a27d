"""Rectification by alternating projection (JSMF Algorithm 1) and its truncated eigensolver."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.model.rectify import RectifyResult, rectify, rectify_update, top_eigh
from anchorstream.synthetic import planted_model, population_cooccurrence, sample_documents
from tests.naive_anchor import naive_rectify


def _cooccurrence(X: sp.csr_matrix) -> np.ndarray:
    """Σ_d (h hᵀ − diag h) / (n_d (n_d − 1)) / M, written with X̃ᵀX̃ (X̃ = diag(√w) X)."""
    n = np.asarray(X.sum(axis=1)).ravel()
    X = X[n >= 2]
    n = n[n >= 2]
    w = 1.0 / (n * (n - 1.0))
    Xw = sp.diags(np.sqrt(w)) @ X
    C = (Xw.T @ Xw).toarray()
    C -= np.diag(np.asarray(X.multiply(w[:, None]).sum(axis=0)).ravel())
    return C / X.shape[0]


def _random_symmetric(rng, V, power=3.0):
    A = rng.random((V, V)) ** power
    C = A + A.T
    return C / C.sum()


def _check_invariants(res: RectifyResult, V: int, K: int) -> None:
    M = res.matrix
    assert M.shape == (V, V)
    np.testing.assert_array_equal(M, M.T)
    assert M.min() >= 0.0
    assert M.sum() == pytest.approx(1.0, abs=1e-12)
    assert res.eigvecs.shape == (V, K) and res.eigvals.shape == (K,)
    assert np.all(np.diff(res.eigvals) <= 1e-15)
    # The row statistics handed to the anchor search and the recovery are the matrix's.
    np.testing.assert_allclose(res.row_sums, M.sum(axis=1), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(res.row_sqnorms, (M * M).sum(axis=1), rtol=1e-12, atol=1e-300)


@pytest.fixture(scope="module")
def planted():
    model = planted_model(120, 6, random_state=7)
    return model, population_cooccurrence(model.topic_word, model.topic_topic)


def test_feasible_low_rank_matrix_is_a_fixed_point(planted):
    model, Q = planted
    res = rectify(Q, model.n_topics, tol=1e-12, random_state=0)
    assert res.converged
    assert res.n_iter <= 2
    np.testing.assert_allclose(res.matrix, Q, rtol=1e-9, atol=1e-14 * Q.max())


def test_invariants_on_a_noisy_sampled_matrix(rng):
    model = planted_model(150, 5, random_state=1)
    X, _ = sample_documents(model, 400, 30, random_state=2)
    C = _cooccurrence(X)
    res = rectify(C, 5, max_iter=40, random_state=0)
    _check_invariants(res, 150, 5)
    # The rank-K eigen-part carries nearly all of the rectified matrix.
    assert np.sum(res.eigvals**2) >= 0.99 * np.sum(res.matrix**2)


def test_rectification_moves_a_sampled_matrix_towards_the_population():
    model = planted_model(150, 6, alpha=0.1, random_state=3)
    X, theta = sample_documents(model, 800, 30, random_state=4)
    C = _cooccurrence(X)
    res = rectify(C, 6, random_state=0)
    population = population_cooccurrence(model.topic_word, model.topic_topic)
    assert np.linalg.norm(res.matrix - population) < np.linalg.norm(C - population)
    # Given the drawn topic proportions, E[C] = B (ΘᵀΘ / M) Bᵀ: the sampling noise of the words
    # is what rectification can remove (measured: about 11% of it, Frobenius).
    posterior = population_cooccurrence(model.topic_word, theta.T @ theta / theta.shape[0])
    assert np.linalg.norm(res.matrix - posterior) < 0.95 * np.linalg.norm(C - posterior)


def test_matches_the_textbook_algorithm(rng):
    C = _random_symmetric(rng, 60)
    want, n_iter, change = naive_rectify(C, 4, max_iter=12)
    res = rectify(C, 4, max_iter=12, tol=0.0, eig_tol=1e-12, anderson=0, random_state=0)
    assert res.n_iter == n_iter == 12
    assert not res.converged
    assert res.residual == pytest.approx(change, rel=1e-6)
    np.testing.assert_allclose(res.matrix, want, rtol=1e-7, atol=1e-9 * want.max())


def test_stops_at_tolerance_like_the_textbook_algorithm(rng):
    C = _random_symmetric(rng, 40)
    want, n_iter, _ = naive_rectify(C, 3, max_iter=200, tol=1e-7)
    res = rectify(C, 3, max_iter=200, tol=1e-7, eig_tol=1e-12, anderson=0, random_state=0)
    assert res.converged and res.residual <= 1e-7
    assert abs(res.n_iter - n_iter) <= 1
    np.testing.assert_allclose(res.matrix, want, rtol=1e-5, atol=1e-8 * want.max())


def test_eigvecs_agree_with_scipy_eigh(rng):
    C = _random_symmetric(rng, 80)
    res = rectify(C, 5, max_iter=20, eig_tol=1e-12, random_state=0)
    w, U = scipy.linalg.eigh(res.matrix)
    w, U = w[::-1][:5], U[:, ::-1][:, :5]
    np.testing.assert_allclose(res.eigvals, w, rtol=1e-10, atol=1e-12 * w[0])
    # Signs are fixed: the largest-magnitude entry of every eigenvector is positive.
    U *= np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(5)])
    np.testing.assert_allclose(res.eigvecs, U, atol=1e-8)
    top = res.eigvecs[np.argmax(np.abs(res.eigvecs), axis=0), np.arange(5)]
    assert np.all(top > 0)


def test_warm_start_needs_fewer_eigensolver_products():
    model = planted_model(300, 10, random_state=5)
    C1 = _cooccurrence(sample_documents(model, 3000, 50, random_state=6)[0])
    C2 = _cooccurrence(sample_documents(model, 3000, 50, random_state=7)[0])
    # Plain AP: with Anderson acceleration a different start takes a different path.
    previous = rectify(C1, 10, anderson=0, random_state=0)
    cold = rectify(C2, 10, anderson=0, random_state=0)
    warm = rectify(C2, 10, init_eigvecs=previous.eigvecs, anderson=0, random_state=0)
    assert warm.n_products < cold.n_products
    assert warm.n_iter <= cold.n_iter
    np.testing.assert_allclose(warm.matrix, cold.matrix, rtol=1e-5, atol=1e-7 * cold.matrix.max())


def test_float32_working_precision_stays_close(rng):
    model = planted_model(150, 5, random_state=8)
    C = _cooccurrence(sample_documents(model, 600, 30, random_state=9)[0])
    # Plain AP, whose path does not amplify rounding differences (see the Anderson test).
    exact = rectify(C, 5, max_iter=20, anderson=0, random_state=0)
    fast = rectify(C, 5, max_iter=20, anderson=0, random_state=0, dtype=np.float32)
    _check_invariants(fast, 150, 5)
    assert fast.matrix.dtype == np.float64
    np.testing.assert_allclose(fast.matrix, exact.matrix, rtol=0, atol=1e-4 * exact.matrix.max())
    # Its eigenpairs are those of the returned matrix, to the full tolerance.
    w = scipy.linalg.eigh(fast.matrix, eigvals_only=True)[::-1][:5]
    np.testing.assert_allclose(fast.eigvals, w, rtol=1e-9)
    # Unrefined, they are the last float32 iterate's: the same matrix, eigenpairs to ~1e-6.
    rough = rectify(C, 5, max_iter=20, anderson=0, random_state=0, dtype=np.float32,
                    refine_eigvecs=False)
    np.testing.assert_array_equal(rough.matrix, fast.matrix)
    np.testing.assert_allclose(rough.eigvals, w, rtol=1e-5)
    np.testing.assert_allclose(np.abs(np.sum(rough.eigvecs * fast.eigvecs, axis=0)), 1.0,
                               atol=1e-5)
    assert rough.n_products < fast.n_products
    with pytest.raises(InputError, match="dtype"):
        rectify(C, 5, dtype=np.int64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_anderson_acceleration_reaches_a_fixed_point_of_plain_ap_sooner(dtype):
    model = planted_model(200, 8, alpha=0.1, random_state=12)
    C = _cooccurrence(sample_documents(model, 500, 20, random_state=13)[0])
    plain = rectify(C, 8, tol=1e-6, max_iter=500, anderson=0, dtype=dtype, random_state=0)
    fast = rectify(C, 8, tol=1e-6, max_iter=500, anderson=5, dtype=dtype, random_state=0)
    assert plain.converged and fast.converged
    _check_invariants(fast, 200, 8)
    assert fast.n_iter < 0.6 * plain.n_iter
    # Its limit may differ from plain AP's (AP's limit depends on the path), but it is a fixed
    # point of the plain iteration: one more textbook step barely moves it.
    _, _, change = naive_rectify(fast.matrix, 8, max_iter=1)
    assert change < 1e-5


def test_overwriting_the_input_and_the_factor():
    model = planted_model(120, 5, random_state=14)
    C = _cooccurrence(sample_documents(model, 400, 20, random_state=15)[0])
    plain = rectify(C, 5, dtype=np.float32, random_state=0)
    mine = C.copy()
    res = rectify(mine, 5, dtype=np.float32, random_state=0, overwrite_input=True)
    assert np.shares_memory(res.matrix, mine)
    np.testing.assert_array_equal(res.matrix, plain.matrix)
    # The rank-K core and shift give the result back (up to the float32 iterate's rounding).
    core = np.maximum(res.factor @ res.factor.T + res.shift, 0.0)
    np.testing.assert_allclose(core, res.matrix, rtol=1e-5, atol=1e-7 * res.matrix.max())
    wide = rectify(C, 5, random_state=0)
    core = np.maximum(wide.factor @ wide.factor.T + wide.shift, 0.0)
    np.testing.assert_allclose(core, wide.matrix, rtol=1e-10, atol=1e-14)


def test_deterministic_and_accepts_sparse_input(rng):
    C = _random_symmetric(rng, 30)
    a = rectify(C, 3, max_iter=5, random_state=11)
    b = rectify(sp.csr_matrix(C), 3, max_iter=5, random_state=11)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    np.testing.assert_array_equal(a.eigvecs, b.eigvecs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_sparse_matrix_is_solved_cold_on_a_csr_copy_with_the_same_result(monkeypatch, dtype):
    import anchorstream.model.rectify as module

    # Short documents over many words: few pairs ever co-occur.
    model = planted_model(400, 5, random_state=16)
    X, _ = sample_documents(model, 300, 4, random_state=17)
    C = _cooccurrence(X)
    assert 0 < np.count_nonzero(C) <= module._SPARSE_DENSITY * C.size
    copies = []
    original = module._sparse_copy
    monkeypatch.setattr(module, "_sparse_copy", lambda M: copies.append(original(M)) or copies[-1])
    sparse = rectify(C, 5, dtype=dtype, eig_tol=1e-9 if dtype == np.float64 else None,
                     random_state=0)
    assert len(copies) == 1 and sp.issparse(copies[0])
    monkeypatch.setattr(module, "_SPARSE_DENSITY", 0.0)
    dense = rectify(C, 5, dtype=dtype, eig_tol=1e-9 if dtype == np.float64 else None,
                    random_state=0)
    _check_invariants(sparse, 400, 5)
    distance = np.linalg.norm(sparse.matrix - dense.matrix) / np.linalg.norm(dense.matrix)
    if dtype == np.float64:
        assert sparse.n_iter == dense.n_iter
        # The CSR copy is solved cold by ARPACK, the dense matrix by top_eigh: two solvers
        # meeting eig_tol, whose answers part the paths a little (measured 3.8e-7 here; both
        # lie ~5e-6 from the path of solves to 1e-12).
        assert distance < 1e-6
    else:
        # The dense path's cold products round to float32, the sparse copy's do not: the
        # accelerated paths part by rounding (as in test_float32_working_precision_stays_close).
        assert distance < 1e-4


def test_input_is_not_modified(rng):
    C = _random_symmetric(rng, 25)
    copy = C.copy()
    rectify(C, 2, max_iter=3)
    np.testing.assert_array_equal(C, copy)


@pytest.mark.parametrize(
    "C, K, kwargs, match",
    [
        (np.ones((3, 4)), 1, {}, "square"),
        (np.ones(5), 1, {}, "square"),
        (np.array([[1.0, 2.0], [0.0, 1.0]]), 1, {}, "symmetric"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), 1, {}, "NaN"),
        (np.eye(3), 3, {}, "n_topics"),
        (np.eye(3), 0, {}, "n_topics"),
        (np.eye(3), 1.5, {}, "n_topics"),
        (np.eye(3), 1, {"method": "enn"}, "method"),
        (np.eye(3), 1, {"max_iter": 0}, "max_iter"),
        (np.eye(3), 1, {"anderson": -1}, "anderson"),
        (np.eye(3), 1, {"tol": 1e-8, "dtype": np.float32}, "float32"),
        (np.eye(3), 1, {"anderson": 1.5}, "anderson"),
        (np.eye(3), 1, {"tol": -1.0}, "tol"),
        (np.eye(3), 1, {"eig_tol": 0.0}, "eig_tol"),
        (np.eye(3), 1, {"init_eigvecs": np.ones((2, 1))}, "init_eigvecs"),
        (np.eye(3), 1, {"init_eigvecs": np.full((3, 1), np.inf)}, "init_eigvecs"),
        (np.array([["a", "b"], ["b", "a"]]), 1, {}, "real numbers"),
    ],
)
def test_bad_input(C, K, kwargs, match):
    with pytest.raises(InputError, match=match):
        rectify(C, K, **kwargs)


@settings(max_examples=25, deadline=None)
@given(
    V=st.integers(3, 25),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_psd_inputs_keep_the_invariants(V, data, seed):
    K = data.draw(st.integers(1, V - 1))
    r = np.random.default_rng(seed)
    F = r.random((V, K + 2))
    C = F @ F.T  # PSD, non-negative, of rank K + 2 > K: something to rectify
    C /= C.sum()
    res = rectify(C, K, max_iter=30, random_state=seed)
    _check_invariants(res, V, K)
    assert res.n_iter <= 30


# --------------------------------------------------------------------------------------------
# top_eigh
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, k", [(150, 6), (40, 35), (8, 8)])
def test_top_eigh_matches_scipy_on_indefinite_matrices(rng, n, k):
    A = rng.standard_normal((n, n))
    A = A + A.T  # both ends of the spectrum are large: only the algebraic top is wanted
    calls = []
    theta, X, AX, info = top_eigh(lambda Z: calls.append(1) or A @ Z, n, k, tol=1e-12,
                                  random_state=0)
    w, U = scipy.linalg.eigh(A)
    w, U = w[::-1][:k], U[:, ::-1][:, :k]
    assert info["converged"] and info["n_products"] == len(calls)
    np.testing.assert_allclose(theta[:k], w, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(X[:, :k] * U, axis=0)), 1.0, atol=1e-8)
    np.testing.assert_allclose(AX, A @ X, atol=1e-10)
    np.testing.assert_allclose(X.T @ X, np.eye(X.shape[1]), atol=1e-12)


def _nearby_pair(rng, n=200, k=5):
    """A symmetric ``A``, ``B`` = ``A`` moved by 1e-4, and ``A``'s Ritz vectors (a block)."""
    base = rng.standard_normal((n, n))
    A = base + base.T
    B = A + 1e-4 * (lambda E: E + E.T)(rng.standard_normal((n, n)))
    _, XA, _, _ = top_eigh(lambda Z: A @ Z, n, k, tol=1e-10, random_state=0)
    return A, B, XA


def test_top_eigh_warm_start_from_nearby_eigenvectors(rng):
    n, k = 200, 5
    _, B, XA = _nearby_pair(rng, n, k)
    _, _, _, cold_b = top_eigh(lambda Z: B @ Z, n, k, tol=1e-10, random_state=0)
    theta, _, _, warm_b = top_eigh(lambda Z: B @ Z, n, k, init=XA, tol=1e-10, random_state=0)
    assert warm_b["n_products"] < cold_b["n_products"]
    np.testing.assert_allclose(theta[:k], scipy.linalg.eigh(B)[0][::-1][:k], rtol=1e-9)


def test_top_eigh_orthonormal_init_is_taken_as_it_is(rng):
    # The low-rank loop passes the last solve's Ritz vectors (orthonormal): used without a
    # second orthonormalization, the solve ends where the default path ends.
    n, k = 200, 5
    _, B, XA = _nearby_pair(rng, n, k)
    seen = []
    theta, X, _, info = top_eigh(lambda Z: seen.append(Z.copy()) or B @ Z, n, k, init=XA,
                                 orthonormal_init=True, tol=1e-10, random_state=0)
    np.testing.assert_array_equal(seen[0], XA)  # the first product is of XA itself
    ref, Xr, _, info_ref = top_eigh(lambda Z: B @ Z, n, k, init=XA, tol=1e-10, random_state=0)
    assert info["n_products"] == info_ref["n_products"]
    np.testing.assert_allclose(theta[:k], ref[:k], rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(X[:, :k] * Xr[:, :k], axis=0)), 1.0, atol=1e-9)
    # Fewer columns than the block: completed and orthonormalized as without the flag.
    narrow, _, _, _ = top_eigh(lambda Z: B @ Z, n, k, init=XA[:, :k], orthonormal_init=True,
                               tol=1e-10, random_state=0)
    np.testing.assert_allclose(narrow[:k], ref[:k], rtol=1e-9)


def test_top_eigh_bad_size():
    with pytest.raises(InputError, match="n_eig"):
        top_eigh(lambda Z: Z, 3, 4)


def _noisy(Q, rng, scale):
    noise = rng.normal(scale=scale, size=Q.shape)
    C = Q + (noise + noise.T)
    return C / C.sum()


def test_an_update_with_no_change_returns_the_previous_result():
    truth = planted_model(80, 4, random_state=3)
    C = _noisy(population_cooccurrence(truth.topic_word, truth.topic_topic),
               np.random.default_rng(3), 2e-5)
    for dtype in (np.float64, np.float32):
        cold = rectify(C, 4, random_state=0, dtype=dtype)
        same = rectify_update(C, C.astype(np.float32) if dtype == np.float32 else C,
                              cold.factor, cold.shift, dtype=dtype)
        _check_invariants(same, 80, 4)
        assert same.n_iter == 0 and same.residual <= 1e-7
        np.testing.assert_allclose(same.matrix, cold.matrix, rtol=1e-5,
                                   atol=1e-7 * cold.matrix.max())


def test_an_update_follows_a_change_within_the_model_exactly():
    """New data from the same rank-K family (another topic-topic matrix): the change lies in
    the tangent space, and the update lands on the new population matrix itself."""
    truth = planted_model(90, 5, random_state=4)
    B, R = truth.topic_word, truth.topic_topic
    Q1 = population_cooccurrence(B, R)
    R2 = 0.97 * R + 0.03 * np.diag(R.sum(axis=1))  # still symmetric, PSD, summing to 1
    Q2 = population_cooccurrence(B, R2)
    cold = rectify(Q1, 5, tol=1e-12, random_state=0)
    got = rectify_update(Q2, Q1, cold.factor, cold.shift, dtype=np.float64)
    assert got is not None and got.residual > 1e-3  # a real change
    np.testing.assert_allclose(got.matrix, Q2, rtol=1e-8, atol=1e-12 * Q2.max())
    np.testing.assert_allclose(got.factor @ got.factor.T, Q2, atol=1e-12 * Q2.max())


def test_an_update_tracks_a_cold_rectification_of_the_new_data():
    """A small noisy change: the update lands much nearer the new data's cold rectification
    than the previous result is. Not exactly on it: AP's result depends on its path, which
    the new data changes too (measured here: 11-19% of the move left at AP's tol 1e-3, 18-35%
    when AP runs to its limit, up to ~50% on much noisier data)."""
    rng = np.random.default_rng(5)
    truth = planted_model(100, 5, random_state=5)
    Q = population_cooccurrence(truth.topic_word, truth.topic_topic)
    C1 = _noisy(Q, rng, 3e-6)
    C2 = _noisy(C1, rng, 3e-6)
    cold1 = rectify(C1, 5, tol=1e-3, random_state=0)
    cold2 = rectify(C2, 5, tol=1e-3, random_state=0)
    warm = rectify_update(C2, C1, cold1.factor, cold1.shift, dtype=np.float64)
    moved = np.linalg.norm(cold2.matrix - cold1.matrix)
    assert np.linalg.norm(warm.matrix - cold2.matrix) < 0.3 * moved


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), V=st.integers(12, 40), K=st.integers(1, 4),
       scale=st.floats(0.0, 0.05), dtype=st.sampled_from([np.float32, np.float64]))
def test_an_update_keeps_the_rectified_invariants(seed, V, K, scale, dtype):
    rng = np.random.default_rng(seed)
    C1 = _random_symmetric(rng, V)
    C2 = C1 + scale * _random_symmetric(rng, V) * (rng.random() - 0.5)
    C2 = C2 + C2.T
    C2 /= C2.sum()
    cold = rectify(C1, K, max_iter=20, random_state=0)
    got = rectify_update(C2, C1, cold.factor, cold.shift, max_change=np.inf, dtype=dtype)
    _check_invariants(got, V, K)
    core = np.maximum(got.factor @ got.factor.T + got.shift, 0.0)
    np.testing.assert_allclose(core, got.matrix, rtol=1e-4, atol=1e-6 * got.matrix.max())


def test_a_large_change_or_empty_previous_data_asks_for_a_cold_rectification(rng):
    C1 = _random_symmetric(rng, 30)
    C2 = _random_symmetric(rng, 30)
    cold = rectify(C1, 3, max_iter=10, random_state=0)
    assert rectify_update(C2, C1, cold.factor, cold.shift) is None  # ~100% change
    assert rectify_update(C2, C1, cold.factor, cold.shift, max_change=10.0) is not None
    assert rectify_update(C2, np.zeros_like(C1), cold.factor, cold.shift) is None


def test_an_update_welcomes_new_words():
    """A word absent from the previous data (zero row and column, zero factor row) gets a
    row from the rank-K core: close to its row in the population matrix."""
    truth = planted_model(90, 5, random_state=6)
    Q = population_cooccurrence(truth.topic_word, truth.topic_topic)
    new = 89
    assert new not in truth.anchors
    old = Q.copy()
    old[new, :] = old[:, new] = 0.0
    old /= old.sum()
    cold = rectify(old, 5, tol=1e-12, random_state=0)
    assert np.abs(cold.factor[new]).max() < 1e-15
    got = rectify_update(Q, old, cold.factor, cold.shift, max_change=1.0, dtype=np.float64)
    row, want = got.matrix[new, :new], Q[new, :new]
    assert np.linalg.norm(row - want) < 0.1 * np.linalg.norm(want)


def test_update_input_errors(rng):
    C = _random_symmetric(rng, 20)
    cold = rectify(C, 3, max_iter=5, random_state=0)
    with pytest.raises(InputError, match="previous_data must be a float32 or float64 array"):
        rectify_update(C, C[:19, :19], cold.factor, cold.shift)
    with pytest.raises(InputError, match="factor must have shape"):
        rectify_update(C, C, cold.factor[:19], cold.shift)
    with pytest.raises(InputError, match="finite"):
        rectify_update(C, C, cold.factor, np.nan)
    with pytest.raises(InputError, match="max_change"):
        rectify_update(C, C, cold.factor, cold.shift, max_change=-1.0)
    with pytest.raises(InputError, match="dtype"):
        rectify_update(C, C, cold.factor, cold.shift, dtype=np.int32)
    bad = C.copy()
    bad[0, 0] = np.inf
    with pytest.raises(InputError, match="C or previous_data contains NaN"):
        rectify_update(C, bad, cold.factor, cold.shift)
    with pytest.raises(InputError, match="C or previous_data contains NaN"):
        rectify_update(bad, C, cold.factor, cold.shift)
    skew = C.copy()
    skew[0, 1] *= 2.0
    with pytest.raises(InputError, match="symmetric"):
        rectify_update(skew, C, cold.factor, cold.shift)
    rectify_update(skew, C, cold.factor, cold.shift, check_input=False)  # trusted: no check
def test_long_rectifications_report_progress(rng, monkeypatch, caplog):
    import logging

    import anchorstream.model.rectify as module

    C = _random_symmetric(rng, 30)
    with caplog.at_level(logging.INFO, logger="anchorstream.model.rectify"):
        rectify(C, 3, max_iter=3, tol=0.0)
    assert not any("iteration" in r.getMessage() for r in caplog.records)  # quick: quiet
    monkeypatch.setattr(module, "_PROGRESS_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="anchorstream.model.rectify"):
        rectify(C, 3, max_iter=3, tol=0.0)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert lines[-1].startswith("rectify: iteration 3 of at most 3, change ")


def test_the_sparse_cold_solve_returns_top_eigh_answer(rng):
    from anchorstream.model.eigen import sparse_top_eigh as _sparse_top_eigh

    n, k = 300, 6
    S = sp.random(n, n, density=0.03, random_state=3, format="csr")
    S = sp.csr_array(S + S.T)
    got = _sparse_top_eigh(S, k, 1e-10, np.random.default_rng(0))
    assert got is not None
    theta, X, AX, info = got
    w, U = scipy.linalg.eigh(S.toarray())
    b = X.shape[1]
    assert b == k + 10 and info["converged"] and info["residual"] <= 1e-10
    np.testing.assert_allclose(theta, w[::-1][:b], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(X[:, :k] * U[:, ::-1][:, :k], axis=0)), 1.0,
                               atol=1e-8)
    np.testing.assert_allclose(AX, S @ X, atol=1e-12)
    np.testing.assert_allclose(X.T @ X, np.eye(b), atol=1e-10)
    # A block nearly as wide as the matrix is left to top_eigh.
    assert _sparse_top_eigh(sp.csr_array(np.eye(40)), 6, 1e-10, np.random.default_rng(0)) is None


def test_a_workspace_holds_the_float32_iterate_without_changing_the_result(rng):
    C = _random_symmetric(rng, 40)
    plain = rectify(C, 3, max_iter=8, random_state=1, dtype=np.float32)
    space = np.full(45 * 45, np.nan, dtype=np.float32)  # larger than needed, stale contents
    got = rectify(C, 3, max_iter=8, random_state=1, dtype=np.float32, workspace=space)
    np.testing.assert_array_equal(got.matrix, plain.matrix)
    assert not np.isnan(space[: 40 * 40]).any()  # it was used
    for bad in (np.zeros(40 * 40), np.zeros(39 * 39, np.float32)):
        with pytest.raises(InputError, match="workspace"):
            rectify(C, 3, max_iter=2, dtype=np.float32, workspace=bad)
