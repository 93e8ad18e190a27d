"""Topic-topic matrix A, Dirichlet α and supertopics on planted models."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.model.correlations as correlations_module
from anchorstream.model.correlations import (
    dirichlet_alpha,
    related_topics,
    supertopics,
    topic_topic,
)
from anchorstream.errors import InputError
from anchorstream.model.recover import recover
from anchorstream.synthetic import (
    dirichlet_second_moment,
    planted_model,
    population_cooccurrence,
)


def _population(V=150, K=6, alpha=0.03, seed=5):
    m = planted_model(V, K, alpha=alpha, random_state=seed)
    return m, population_cooccurrence(m.topic_word, m.topic_topic)


@pytest.mark.parametrize("method", ["diagonal", "pinv"])
def test_true_topics_give_the_planted_topic_topic_matrix(method):
    m, Q = _population()
    A = topic_topic(Q, m.topic_word, m.anchors, method=method)
    np.testing.assert_allclose(A, m.topic_topic, atol=1e-12)


@pytest.mark.parametrize("method", ["diagonal", "pinv"])
def test_recovered_topics_give_the_planted_topic_topic_matrix(method):
    m, Q = _population()
    B = recover(Q, m.anchors, method="admm").topic_word
    A = topic_topic(Q, B, m.anchors, method=method)
    np.testing.assert_allclose(A, m.topic_topic, atol=1e-10)
    np.testing.assert_allclose(A.sum(axis=1), m.topic_topic.sum(axis=1), atol=1e-10)


def test_correlated_topics_are_recovered():
    # A = E[θθᵀ] need not be a Dirichlet moment: any joint-stochastic R comes back.
    m, _ = _population(K=4)
    rng = np.random.default_rng(0)
    R = rng.random((4, 4))
    R = R + R.T + 4 * np.eye(4)
    R /= R.sum()
    Q = population_cooccurrence(m.topic_word, R)
    B = recover(Q, m.anchors, method="admm").topic_word
    np.testing.assert_allclose(topic_topic(Q, B, m.anchors), R, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(V=st.integers(3, 20), K=st.integers(1, 3), seed=st.integers(0, 2**31 - 1),
       method=st.sampled_from(["diagonal", "pinv"]))
def test_result_is_a_joint_distribution(V, K, seed, method):
    rng = np.random.default_rng(seed)
    C = rng.random((V, V))
    C /= C.sum()
    B = rng.dirichlet(np.ones(V), size=K).T
    A = topic_topic(C, B, np.arange(K), method=method)
    assert A.shape == (K, K)
    assert A.min() >= 0
    np.testing.assert_allclose(A, A.T)
    assert abs(A.sum() - 1.0) < 1e-12


def test_topic_topic_errors():
    m, Q = _population(K=3)
    with pytest.raises(InputError, match="method"):
        topic_topic(Q, m.topic_word, m.anchors, method="svd")
    with pytest.raises(InputError, match="square"):
        topic_topic(Q[:, :5], m.topic_word, m.anchors)
    with pytest.raises(InputError, match="topic_word"):
        topic_topic(Q, m.topic_word[:10], m.anchors)
    with pytest.raises(InputError, match="anchors"):
        topic_topic(Q, m.topic_word, [0, 1])
    with pytest.raises(InputError, match="lie in"):
        topic_topic(Q, m.topic_word, [0, 1, 999])
    B = m.topic_word.copy()
    B[0, 0] = 0.0
    with pytest.raises(InputError, match="own anchor word zero"):
        topic_topic(Q, B, m.anchors)


@pytest.mark.parametrize(
    "alpha",
    [np.full(5, 0.03), np.array([0.1, 0.2, 0.3, 0.05]), np.array([2.0, 5.0, 1.0]),
     np.linspace(0.01, 0.5, 20)],
)
def test_alpha_from_an_exact_dirichlet_moment(alpha):
    np.testing.assert_allclose(dirichlet_alpha(dirichlet_second_moment(alpha)), alpha, rtol=1e-8)


def test_alpha_from_a_recovered_topic_topic_matrix():
    alpha = np.array([0.02, 0.05, 0.03, 0.04, 0.06])
    m, Q = _population(K=5, alpha=alpha)
    B = recover(Q, m.anchors, method="l2").topic_word  # default tolerance: approximate B
    A = topic_topic(Q, B, m.anchors)
    np.testing.assert_allclose(dirichlet_alpha(A), alpha, rtol=0.03)


def test_alpha_from_a_noisy_moment_is_close():
    alpha = np.array([0.1, 0.2, 0.3, 0.15])
    A = dirichlet_second_moment(alpha)
    A = A * (1.0 + 0.01 * np.random.default_rng(1).standard_normal(A.shape))
    np.testing.assert_allclose(dirichlet_alpha(A), alpha, rtol=0.05)


def test_alpha_errors():
    with pytest.raises(InputError, match="K >= 2"):
        dirichlet_alpha(np.ones((1, 1)))
    with pytest.raises(InputError, match="square"):
        dirichlet_alpha(np.ones((2, 3)))
    with pytest.raises(InputError, match="non-negative"):
        dirichlet_alpha(-np.ones((2, 2)))
    with pytest.raises(InputError, match="zero prevalence"):
        dirichlet_alpha(np.array([[1.0, 0.0], [0.0, 0.0]]))
    # No self-preference at all: rows identical, α0 would have to be infinite.
    with pytest.raises(InputError, match="unbounded"):
        dirichlet_alpha(np.full((3, 3), 1.0 / 9))
    # Perfectly diagonal: every document a single topic, α0 = 0.
    with pytest.raises(InputError, match="is 0"):
        dirichlet_alpha(np.diag([0.2, 0.3, 0.5]))


def _hierarchy(K=8, n_super=3, seed=0):
    """A topic co-occurrence built from separable supertopics: A = W R Wᵀ."""
    rng = np.random.default_rng(seed)
    W = rng.dirichlet(np.full(K - n_super, 0.3), size=n_super).T * 0.8
    W = np.vstack([np.zeros((n_super, n_super)), W])
    W[np.arange(n_super), np.arange(n_super)] = 0.2  # topic k anchors supertopic k
    W /= W.sum(axis=0)
    R = dirichlet_second_moment(np.array([0.3, 0.5, 0.4]))
    return W, R, W @ R @ W.T


def _true_anchors(C, n):
    return np.arange(n)


def test_supertopics_recover_a_planted_hierarchy():
    W, R, A = _hierarchy()
    weights, A_super = supertopics(A, 3, rectify=False, anchors_fn=_true_anchors)
    np.testing.assert_allclose(weights, W, atol=1e-8)
    np.testing.assert_allclose(A_super, R, atol=1e-8)
    np.testing.assert_allclose(weights.sum(axis=0), 1.0)


def test_supertopics_pass_through_a_rectifier():
    W, R, A = _hierarchy()
    seen = {}

    def rectifier(C, n):
        seen["args"] = (C.shape, n)
        return type("Result", (), {"matrix": C})()  # an object with a .matrix, like RectifyResult

    weights, A_super = supertopics(A, 3, rectify_fn=rectifier, anchors_fn=_true_anchors)
    assert seen["args"] == ((8, 8), 3)
    np.testing.assert_allclose(weights, W, atol=1e-8)
    np.testing.assert_allclose(A_super, R, atol=1e-8)


def test_supertopics_with_the_default_stages():
    W, R, A = _hierarchy()
    weights, A_super = supertopics(A, 3, random_state=0)
    # The anchors may come out in another order: match supertopics by their anchor topic.
    order = np.argmax(weights[:3], axis=1)
    np.testing.assert_allclose(weights[:, order], W, atol=1e-4)
    np.testing.assert_allclose(A_super[np.ix_(order, order)], R, atol=1e-4)


def test_supertopics_errors():
    _, _, A = _hierarchy()
    with pytest.raises(InputError, match="n_super"):
        supertopics(A, 8, anchors_fn=_true_anchors)
    with pytest.raises(InputError, match="n_super"):
        supertopics(A, 0, anchors_fn=_true_anchors)
    with pytest.raises(InputError, match="square"):
        supertopics(A[:3], 2)
    with pytest.raises(InputError, match="anchors_fn returned"):
        supertopics(A, 3, rectify=False, anchors_fn=lambda C, n: [0, 1])
    with pytest.raises(InputError, match="rectify_fn returned"):
        supertopics(A, 3, rectify_fn=lambda C, n: C[:4, :4], anchors_fn=_true_anchors)


def test_docstring_examples():
    assert doctest.testmod(correlations_module).failed == 0


def test_related_topics_rank_by_lift_above_chance():
    p = np.array([0.4, 0.3, 0.2, 0.1])
    A = 0.5 * np.outer(p, p) + 0.5 * np.diag(p)  # every pair below chance (lift 0.5) ...
    for (a, b), lift in {(0, 3): 1.5, (0, 2): 1.1}.items():  # ... but these two
        extra = (lift - 0.5) * p[a] * p[b]
        A[a, b] += extra
        A[b, a] += extra
        A[a, a] -= extra  # row sums (prevalences) unchanged
        A[b, b] -= extra
    rows = related_topics(A, 0)
    assert [r for r, _ in rows] == [3, 2]
    lifts = [lift for _, lift in rows]
    assert lifts == pytest.approx([1.5, 1.1])
    assert all(lift > 1 for lift in lifts) and lifts == sorted(lifts, reverse=True)
    assert related_topics(A, 0, top=1) == rows[:1]
    assert related_topics(A, 1) == []  # nothing above chance
    assert related_topics(np.zeros((3, 3)), 1) == []  # an empty row: no lift at all


def test_related_topics_errors():
    with pytest.raises(InputError, match="square"):
        related_topics(np.ones((2, 3)), 0)
    with pytest.raises(InputError, match="k must be in"):
        related_topics(np.ones((2, 2)), 2)
