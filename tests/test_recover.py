"""recover(): planted-model recovery, simplex constraints, warm starts, input errors."""

from __future__ import annotations

import doctest

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anchorstream._kernels.admm as kernels_admm
import anchorstream._kernels.recover as kernels_recover
import anchorstream.model.recover as recover_module
from anchorstream.errors import InputError
from anchorstream.model.recover import (METHODS, RecoverResult, bayes_topic_word, column_weights,
                                        recover, recover_groups, select_groups)
from anchorstream.synthetic import (PlantedModel, planted_model, population_cooccurrence,
                                    sample_documents)
from tests.naive_recover import exact_simplex_least_squares


def _population(V=120, K=6, seed=2):
    m = planted_model(V, K, random_state=seed)
    return m, population_cooccurrence(m.topic_word, m.topic_topic)


def _cooccurrence(X, doc_length):
    """The co-occurrence estimator for documents of equal length, normalized to sum 1."""
    w = 1.0 / (doc_length * (doc_length - 1))
    C = w * (X.T @ X).toarray()
    C[np.diag_indices(X.shape[1])] -= w * np.asarray(X.sum(axis=0)).ravel()
    C = np.clip(C, 0.0, None)  # the diagonal is h² - h >= 0; clip its rounding
    return C / C.sum()


def _empirical(V=80, K=4, n_docs=2000, doc_length=40, seed=0):
    """A planted model and the co-occurrence of documents drawn from it."""
    m = planted_model(V, K, random_state=seed)
    X, _ = sample_documents(m, n_docs, doc_length, random_state=seed + 1)
    return m, _cooccurrence(X, doc_length)


def _l1_per_topic(B, B_true):
    return np.abs(B - B_true).sum(axis=0)


# Per-method settings for exact recovery on the population matrix. The expgrad methods converge
# sublinearly towards coefficients of ~1e-8 (Arora et al. 2013 note the same: "we do not solve
# the optimization problems to perfect optimality"), so L2 gets a tighter gap and more steps.
EXACT = {
    "l2": dict(tol=1e-10, max_iter=2000),
    "kl": dict(),
    "admm": dict(),
    "inverse": dict(),
}


@pytest.mark.parametrize("method", METHODS)
def test_recovers_planted_topics_from_population_matrix(method):
    m, Q = _population()
    res = recover(Q, m.anchors, method=method, **EXACT[method])
    assert isinstance(res, RecoverResult)
    assert _l1_per_topic(res.topic_word, m.topic_word).max() < 1e-3
    # The coefficients are p(z | w) = B[w, k] p(z = k) / p(w).
    prior = m.topic_topic.sum(axis=1)
    true_coef = m.topic_word * prior / (m.topic_word @ prior)[:, None]
    assert np.abs(res.coef - true_coef).sum(axis=1).max() < 5e-3


@pytest.mark.parametrize("method", METHODS)
def test_an_unchecked_input_gives_the_same_answer(method):
    m, Q = _population()
    want = recover(Q, m.anchors, method=method, max_iter=50)
    got = recover(Q, m.anchors, method=method, max_iter=50, check_input=False)
    np.testing.assert_array_equal(got.topic_word, want.topic_word)


@pytest.mark.parametrize("method", METHODS)
def test_row_sums_given_by_the_caller_are_used_as_given(method):
    m, Q = _population()
    want = recover(Q, m.anchors, method=method, max_iter=50)
    got = recover(Q, m.anchors, method=method, max_iter=50, row_sums=Q.sum(axis=1))
    np.testing.assert_array_equal(got.topic_word, want.topic_word)
    hidden = Q.sum(axis=1)
    hidden[m.anchors[0]] = 0.0
    with pytest.raises(InputError, match="zero mass"):
        recover(Q, m.anchors, method=method, row_sums=hidden)
    with pytest.raises(InputError, match="row_sums must have shape"):
        recover(Q, m.anchors, method=method, row_sums=np.ones(3))


@pytest.mark.parametrize("method", METHODS)
def test_anchor_products_given_by_the_caller_give_the_same_answer(method):
    m, Q = _population()
    Cbar = Q / Q.sum(axis=1, keepdims=True)
    want = recover(Q, m.anchors, method=method, max_iter=50)
    got = recover(Q, m.anchors, method=method, max_iter=50,
                  anchor_products=Cbar @ Cbar[m.anchors].T)
    np.testing.assert_allclose(got.topic_word, want.topic_word, rtol=1e-8, atol=1e-12)
    if method in ("l2", "admm"):  # the methods that use them
        with pytest.raises(InputError, match="anchor_products must have shape"):
            recover(Q, m.anchors, method=method, anchor_products=np.ones((3, 3)))


def test_admm_and_inverse_are_exact_on_population_matrix():
    m, Q = _population(V=200, K=10, seed=3)
    for method in ("admm", "inverse"):
        res = recover(Q, m.anchors, method=method)
        np.testing.assert_allclose(res.topic_word, m.topic_word, atol=1e-10)
        assert res.converged == 1.0


def test_anchor_rows_are_unit_vectors():
    m, C = _empirical()
    for method in METHODS:
        res = recover(C, m.anchors, method=method)
        np.testing.assert_array_equal(res.coef[m.anchors], np.eye(len(m.anchors)))


@pytest.mark.parametrize("method", ["l2", "admm"])
def test_l2_methods_solve_the_same_problem_exactly(method):
    # Against an independent oracle: exact simplex least squares by support enumeration.
    m, C = _empirical(V=30, K=3, n_docs=500, doc_length=20)
    res = recover(C, m.anchors, method=method, tol=1e-12, max_iter=20000)
    p = C.sum(axis=1)
    U = C[m.anchors] / p[m.anchors, None]
    G = U @ U.T
    for i in np.flatnonzero(p[3:] > 0) + 3:
        exact = exact_simplex_least_squares(G, U @ (C[i] / p[i]))
        np.testing.assert_allclose(res.coef[i], exact, atol=1e-4 if method == "l2" else 1e-7)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), K=st.integers(2, 4))
def test_chi2_weights_solve_the_weighted_problem_exactly(seed, K):
    # min_y Σ_j d_j (C̄_ij − (yᵀ C̄_S)_j)² on the simplex, d_j = 1 / p(j) up to scale: the
    # same exact oracle on the Gram matrices of the columns scaled by sqrt(d).
    m, C = _empirical(V=24, K=K, n_docs=300, doc_length=15, seed=seed)
    res = recover(C, m.anchors, method="admm", weights="chi2", tol=1e-12, max_iter=20000)
    p = C.sum(axis=1)
    d = np.zeros_like(p)
    d[p > 0] = 1.0 / p[p > 0]
    U = C[m.anchors] / p[m.anchors, None]
    G = (U * d) @ U.T
    for i in np.flatnonzero(p > 0):
        if i in m.anchors:
            continue
        exact = exact_simplex_least_squares(G, (U * d) @ (C[i] / p[i]))
        np.testing.assert_allclose(res.coef[i], exact, atol=1e-7)


def test_chi2_weights_recover_planted_topics_from_population_matrix():
    m, Q = _population(V=200, K=10, seed=3)
    res = recover(Q, m.anchors, method="admm", weights="chi2")
    np.testing.assert_allclose(res.topic_word, m.topic_word, atol=1e-10)
    assert res.converged == 1.0


def test_chi2_weights_read_a_low_rank_matrix_as_its_dense_array():
    from anchorstream.model.lowrank import rectify_lowrank

    m, C = _empirical(V=80, K=4, n_docs=1500, doc_length=30, seed=4)
    low = rectify_lowrank(C, 4, random_state=0).matrix
    dense = low.toarray()
    got = recover(low, m.anchors, method="admm", weights="chi2")
    want = recover(dense, m.anchors, method="admm", weights="chi2")
    np.testing.assert_allclose(got.coef, want.coef, atol=1e-8)
    # The weights change the answer on sampled data (else this test could not fail).
    plain = recover(dense, m.anchors, method="admm")
    assert np.abs(plain.coef - want.coef).max() > 1e-4


@given(st.lists(st.one_of(st.just(0.0), st.floats(1e-9, 1e3)), min_size=1, max_size=30),
       st.floats(1e-3, 1e3))
def test_column_weights_are_the_inverse_masses_whatever_their_scale(mass, scale):
    mass = np.array(mass)
    d = column_weights(mass)
    np.testing.assert_allclose(column_weights(mass * scale), d, rtol=1e-10)
    has = mass > 0
    assert np.all(d[~has] == 0)
    if has.any():
        np.testing.assert_allclose(d[has].mean(), 1.0)
        np.testing.assert_allclose(d[has] * mass[has], (d[has] * mass[has])[0], rtol=1e-10)


def test_kl_meets_its_optimality_conditions():
    m, C = _empirical(V=40, K=3, n_docs=800, doc_length=20)
    res = recover(C, m.anchors, method="kl", tol=1e-10, max_iter=20000)
    assert res.converged == 1.0
    p = C.sum(axis=1)
    U = C[m.anchors] / p[m.anchors, None]
    for i in np.flatnonzero(p[3:] > 0) + 3:
        v = C[i] / p[i]
        keep = (v > 0) & (U.max(axis=0) > 0)  # columns no anchor covers are a constant
        g = -U[:, keep] @ (v[keep] / (res.coef[i] @ U[:, keep]))
        assert res.coef[i] @ (g - g.min()) < 1e-10  # the KKT duality gap


def test_methods_agree_on_sampled_documents():
    m, C = _empirical(V=100, K=5, n_docs=5000, doc_length=50)
    B = {method: recover(C, m.anchors, method=method).topic_word for method in METHODS}
    assert _l1_per_topic(B["l2"], B["admm"]).max() < 1e-2  # same loss, different solvers
    for method in METHODS:
        assert _l1_per_topic(B[method], m.topic_word).mean() < 0.3


@pytest.mark.parametrize("method", ["l2", "kl", "admm"])
def test_warm_start_from_the_solution_converges_immediately(method):
    m, C = _empirical()
    # ADMM's default tolerance (1e-5, on the coefficients) would let the warm run move by
    # more than this test's 1e-6.
    tol = 1e-8 if method == "admm" else None
    cold = recover(C, m.anchors, method=method, max_iter=20000, tol=tol)
    assert cold.converged == 1.0
    warm = recover(C, m.anchors, method=method, init=cold.coef, max_iter=20000, tol=tol)
    assert warm.converged == 1.0
    # The expgrad gap is checked before any step; ADMM needs one step to see that it is still.
    assert warm.n_iter <= (0 if method != "admm" else 3)
    np.testing.assert_allclose(warm.topic_word, cold.topic_word, atol=1e-6)


@pytest.mark.parametrize("method", ["l2", "kl", "admm"])
def test_warm_start_on_a_perturbed_matrix_reaches_the_cold_answer(method):
    # A streaming refresh: the same documents plus 5% more.
    m = planted_model(80, 4, random_state=0)
    X, _ = sample_documents(m, 2100, 40, random_state=1)
    previous = recover(_cooccurrence(X[:2000], 40), m.anchors, method=method)
    C_new = _cooccurrence(X, 40)
    cold = recover(C_new, m.anchors, method=method, tol=1e-8, max_iter=20000)
    warm = recover(C_new, m.anchors, method=method, init=previous.coef, tol=1e-8, max_iter=20000)
    assert warm.converged == 1.0
    assert _l1_per_topic(warm.topic_word, cold.topic_word).max() < 1e-3


@pytest.mark.parametrize("method", ["l2", "kl", "admm"])
def test_a_warm_start_in_any_memory_order_reuses_the_compiled_kernel(method):
    # A warm refresh picks its start's columns by fancy indexing, which leaves them in F order:
    # passed as they were, ADMM's kernel compiled a second time on every new deployment's
    # first warm refresh (7.5 CPU s, session 87). Same numbers, one compiled kernel.
    m, C = _empirical()
    kernel = {"l2": kernels_recover.recover_expgrad_l2, "kl": kernels_recover.recover_expgrad_kl,
              "admm": kernels_admm.recover_admm_dr_into}[method]
    init = recover(C, m.anchors, method="admm").coef
    c_order = recover(C, m.anchors, method=method, init=np.ascontiguousarray(init))
    compiled = len(kernel.signatures)
    f_order = recover(C, m.anchors, method=method, init=np.asfortranarray(init))
    assert len(kernel.signatures) == compiled
    np.testing.assert_array_equal(f_order.coef, c_order.coef)


@pytest.mark.parametrize("warm", [False, True])
def test_admm_in_threads_solves_every_word_as_one_thread_does(monkeypatch, warm):
    # 900 words: three threads of at least _ROWS_PER_THREAD words each.
    m, C = _empirical(V=900, K=6, n_docs=3000)
    init = recover(C, m.anchors, method="admm").coef * 0.9 + 0.1 / 6 if warm else None
    results = []
    for threads in (1, 3):
        monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", threads)
        results.append(recover(C, m.anchors, method="admm", init=init))
    np.testing.assert_array_equal(results[0].coef, results[1].coef)
    assert results[0].n_iter == results[1].n_iter
    assert results[0].converged == results[1].converged


def test_warm_start_zero_rows_start_uniform():
    m, C = _empirical()
    init = recover(C, m.anchors, method="admm").coef
    init[10:20] = 0.0  # words the previous model did not know
    res = recover(C, m.anchors, method="l2", init=init)
    ref = recover(C, m.anchors, method="l2")
    assert _l1_per_topic(res.topic_word, ref.topic_word).max() < 1e-2


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    V=st.integers(2, 25),
    K=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
    method=st.sampled_from(METHODS),
    sparsity=st.floats(0.0, 0.8),
    with_init=st.booleans(),
)
def test_simplex_constraints_hold_on_random_inputs(V, K, seed, method, sparsity, with_init):
    K = min(K, V)
    rng = np.random.default_rng(seed)
    C = rng.random((V, V)) * (rng.random((V, V)) >= sparsity)
    C = C + C.T
    anchors = rng.permutation(V)[:K]
    C[anchors, anchors] += 1e-3  # every anchor must have mass
    C /= C.sum()
    init = rng.dirichlet(np.ones(K), size=V) if with_init else None
    try:
        res = recover(C, anchors, method=method, init=init, max_iter=50)
    except InputError:
        # Only the inversion may refuse, for a singular anchor block.
        assert method == "inverse"
        return
    assert res.coef.shape == res.topic_word.shape == (V, K)
    assert res.coef.min() >= 0 and res.topic_word.min() >= 0
    np.testing.assert_allclose(res.coef.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(res.topic_word.sum(axis=0), 1.0, atol=1e-12)
    assert 0.0 <= res.converged <= 1.0 and res.n_iter >= 0


def test_inverse_clips_negative_probabilities():
    m, C = _empirical(n_docs=200, doc_length=10)
    res = recover(C, m.anchors, method="inverse")
    assert res.topic_word.min() >= 0
    np.testing.assert_allclose(res.topic_word.sum(axis=0), 1.0)
    np.testing.assert_allclose(res.coef.sum(axis=1), 1.0)


def test_inverse_rejects_a_singular_anchor_block():
    C = np.full((4, 4), 1.0 / 16)  # every row alike: the anchor block has rank 1
    with pytest.raises(InputError, match="singular"):
        recover(C, [0, 1], method="inverse")


def test_zero_mass_words_get_uniform_coefficients_and_no_probability():
    m, C = _empirical()
    C[50, :] = 0.0
    C[:, 50] = 0.0
    for method in METHODS:
        res = recover(C, m.anchors, method=method)
        np.testing.assert_allclose(res.coef[50], 1.0 / len(m.anchors))
        np.testing.assert_array_equal(res.topic_word[50], 0.0)


def test_scale_sparse_input_and_rounding_negatives_are_accepted():
    m, C = _empirical()
    ref = recover(C, m.anchors, method="admm")
    scaled = recover(3.0 * C, m.anchors, method="admm")
    np.testing.assert_allclose(scaled.topic_word, ref.topic_word)
    np.testing.assert_allclose(
        recover(sp.csr_matrix(C), m.anchors, method="admm").topic_word, ref.topic_word
    )
    D = C.copy()
    D[5, 5] = -1e-24  # what the estimator's diagonal can round to
    assert recover(D, m.anchors, method="admm").topic_word.min() >= 0


def test_bayes_rule():
    coef = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    p = np.array([0.2, 0.4, 0.4])
    np.testing.assert_allclose(
        bayes_topic_word(coef, p), [[0.5, 0.0], [0.5, 1 / 3], [0.0, 2 / 3]]
    )
    with pytest.raises(InputError, match="no probability mass"):
        bayes_topic_word(coef, np.array([0.0, 0.0, 1.0]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(method="nmf"), "method must be one of"),
        (dict(tol=-1.0), "tol"),
        (dict(max_iter=0), "max_iter"),
        (dict(max_iter=2.5), "max_iter"),
        (dict(step_size=0.0), "step_size"),
        (dict(admm_lambda=2.0), "admm_lambda"),
        (dict(admm_gamma=-1.0), "admm_gamma"),
        (dict(init=np.ones((5, 4))), "shape"),
        (dict(init=-np.ones((80, 4))), "non-negative"),
        (dict(method="admm", weights="tfidf"), "weights must be one of"),
        (dict(method="l2", weights="chi2"), "applies to method 'admm' only"),
    ],
)
def test_bad_arguments(kwargs, match):
    m, C = _empirical()
    with pytest.raises(InputError, match=match):
        recover(C, m.anchors, **kwargs)


def test_bad_matrices_and_anchors():
    m, C = _empirical()
    with pytest.raises(InputError, match="square"):
        recover(C[:, :10], m.anchors)
    with pytest.raises(InputError, match="NaN"):
        recover(np.full((4, 4), np.nan), [0, 1])
    bad = C.copy()
    bad[3, 4] = -0.1
    with pytest.raises(InputError, match="negative"):
        recover(bad, m.anchors)
    with pytest.raises(InputError, match="sums to zero"):
        recover(np.zeros((4, 4)), [0, 1])
    with pytest.raises(InputError, match="distinct"):
        recover(C, [0, 0, 1])
    with pytest.raises(InputError, match="lie in"):
        recover(C, [0, 80])
    with pytest.raises(InputError, match="integer"):
        recover(C, [0.5, 1.0])
    with pytest.raises(InputError, match="non-empty"):
        recover(C, [])
    empty = C.copy()
    empty[2, :] = 0.0
    empty[:, 2] = 0.0
    with pytest.raises(InputError, match="zero mass"):
        recover(empty, m.anchors)


def test_docstring_examples():
    assert doctest.testmod(recover_module, optionflags=doctest.ELLIPSIS).failed == 0


# --- recover_groups: a group of novel words in place of each anchor word ---------------------


def _grouped_model(V=120, K=5, per_group=4, seed=5, novel_mass=0.01):
    """A planted model whose topic k has ``per_group`` novel words (k, K + k, 2K + k, ...),
    each occurring in topic k only with ``novel_mass`` before normalization, and the groups."""
    m = planted_model(V, K, random_state=seed)
    B = m.topic_word.copy()
    groups = [np.arange(per_group) * K + k for k in range(K)]
    for k, g in enumerate(groups):
        others = np.delete(np.arange(K), k)
        B[np.ix_(g, others)] = 0.0
        B[g, k] = novel_mass
    B /= B.sum(axis=0)
    return B, m.topic_topic, groups


def _grouped_truth(B, A, groups):
    """The grouped model as a PlantedModel to draw documents from (first words as anchors)."""
    return PlantedModel(B, np.array([g[0] for g in groups]), A, np.full(B.shape[1], 0.1))


@pytest.mark.parametrize("weights", ["none", "chi2"])
def test_groups_recover_planted_topics_from_population_matrix(weights):
    B, A, groups = _grouped_model()
    Q = population_cooccurrence(B, A)
    res = recover_groups(Q, groups, weights=weights)
    np.testing.assert_allclose(res.topic_word, B, atol=1e-8)
    # Every group word is solved (none is pinned), and lands on its own topic.
    for k, g in enumerate(groups):
        np.testing.assert_allclose(res.coef[g, k], 1.0, atol=1e-8)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), method=st.sampled_from(["admm", "l2"]),
       weights=st.sampled_from(["none", "chi2"]))
def test_one_word_groups_are_anchor_words(seed, method, weights):
    if method != "admm":
        weights = "none"
    m, C = _empirical(V=40, K=3, n_docs=400, doc_length=20, seed=seed)
    tight = dict(tol=1e-12, max_iter=20000)
    a = recover(C, m.anchors, method=method, weights=weights, **tight)
    b = recover_groups(C, [[s] for s in m.anchors], method=method, weights=weights, **tight)
    np.testing.assert_allclose(b.topic_word, a.topic_word, atol=1e-4 if method == "l2" else 1e-8)


def test_groups_average_the_sampling_noise_of_their_words():
    # Each novel word's row estimates its topic's anchor row; their mean is less noisy than
    # any one of them, so the topics come out closer than from the first word alone.
    B, A, groups = _grouped_model(V=150, K=5, per_group=6, seed=7, novel_mass=0.002)
    truth = _grouped_truth(B, A, groups)
    C = _cooccurrence(sample_documents(truth, 1500, 30, random_state=8)[0], 30)
    for weights in ("none", "chi2"):
        one = recover(C, truth.anchors, method="admm", weights=weights)
        many = recover_groups(C, groups, weights=weights)
        assert (_l1_per_topic(many.topic_word, B).mean()
                < 0.7 * _l1_per_topic(one.topic_word, B).mean())


def test_groups_read_a_low_rank_matrix_as_its_dense_array():
    from anchorstream.model.lowrank import rectify_lowrank

    B, A, groups = _grouped_model(V=90, K=4, per_group=3, seed=9)
    X, _ = sample_documents(_grouped_truth(B, A, groups), 1000, 30, random_state=1)
    low = rectify_lowrank(_cooccurrence(X, 30), 4, random_state=0).matrix
    got = recover_groups(low, groups, weights="chi2")
    want = recover_groups(low.toarray(), groups, weights="chi2")
    np.testing.assert_allclose(got.coef, want.coef, atol=1e-8)


def test_group_words_without_mass_are_left_out_of_the_mean():
    B, A, groups = _grouped_model(V=60, K=3, per_group=2, seed=1)
    Q = population_cooccurrence(B, A)
    massless = np.zeros((61, 61))
    massless[:60, :60] = Q
    with_extra = [np.append(g, 60) if k == 0 else g for k, g in enumerate(groups)]
    res = recover_groups(massless, with_extra)
    np.testing.assert_allclose(res.topic_word[:60], B, atol=1e-8)
    assert res.topic_word[60].sum() == 0.0


@pytest.mark.parametrize("groups, kwargs, match", [
    ([], {}, "at least one group"),
    ([[0], []], {}, "group 1 must be a non-empty"),
    ([[0], [0.5]], {}, "integer word indices"),
    ([[0], [999]], {}, r"group 1's words must lie in \[0, 60\)"),
    ([[0], [1]], {"method": "inverse"}, "method must be one of"),
    ([[0], [1]], {"method": "l2", "weights": "chi2"}, "applies to method 'admm' only"),
    ([[0], [1]], {"weights": "sqrt"}, "weights must be one of"),
    (None, {}, "sequence of arrays"),
])
def test_groups_bad_arguments(groups, kwargs, match):
    B, A, _ = _grouped_model(V=60, K=3, per_group=2, seed=1)
    with pytest.raises(InputError, match=match):
        recover_groups(population_cooccurrence(B, A), groups, **kwargs)


def test_a_group_without_mass_is_refused():
    B, A, groups = _grouped_model(V=60, K=3, per_group=2, seed=1)
    padded = np.zeros((61, 61))
    padded[:60, :60] = population_cooccurrence(B, A)
    with pytest.raises(InputError, match="no word of group 2 has mass"):
        recover_groups(padded, [groups[0], groups[1], [60]])


@pytest.mark.parametrize("weights", ["none", "chi2"])
def test_select_groups_keeps_the_corners_not_their_mixtures(weights):
    # Groups of shared words have rows that are mixes of the novel groups' rows: inside the
    # hull, never farther from the span of the corners than a corner left out.
    B, A, groups = _grouped_model(V=120, K=5, per_group=3, seed=2)
    Q = population_cooccurrence(B, A)
    shared = [np.array([40 + 2 * j, 41 + 2 * j]) for j in range(6)]
    pool = shared[:3] + list(groups) + shared[3:]
    kept = select_groups(Q, pool, 5, weights=weights)
    assert sorted(kept.tolist()) == [3, 4, 5, 6, 7]
    res = recover_groups(Q, [pool[i] for i in kept], weights=weights)
    np.testing.assert_allclose(res.topic_word, B[:, [k - 3 for k in kept]], atol=1e-8)


@pytest.mark.parametrize("n_keep", [0, 4, 1.5, True])
def test_select_groups_refuses_a_bad_count(n_keep):
    B, A, groups = _grouped_model(V=60, K=3, per_group=2, seed=1)
    with pytest.raises(InputError, match="n_keep must be an integer in"):
        select_groups(population_cooccurrence(B, A), groups, n_keep)
