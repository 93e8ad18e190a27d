"""Ding et al. 2014 (DDP, RP): streamable sketches and recovery of separable planted topics."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream import novelwords as nw
from anchorstream.errors import InputError
from anchorstream.evaluate import recovery_error
from anchorstream.synthetic import planted_model, sample_documents


@pytest.fixture(scope="module")
def small_corpus():
    truth = planted_model(40, 3, random_state=0)
    X, _ = sample_documents(truth, 60, doc_length=20, random_state=1)
    # A one-token document and an empty one exercise the skipped rows.
    X = sp.vstack([X, sp.csr_matrix(([1.0], ([0], [5])), shape=(1, 40)), sp.csr_matrix((1, 40))])
    return X.tocsr(), np.arange(1000, 1000 + X.shape[0])


@pytest.fixture(scope="module")
def planted():
    truth = planted_model(200, 5, alpha=0.1, random_state=2)
    X, _ = sample_documents(truth, 3000, random_state=12)
    ids = np.arange(3000)
    return truth, nw.split_statistic(X, ids, seed=3), nw.rp_sketch(X, ids, 50 * 5, seed=3)


# --- counter-based randomness -------------------------------------------------------------


def test_directions_depend_only_on_document_id():
    a = nw.random_directions(np.array([5, 6, 7]), 4, seed=9)
    b = nw.random_directions(np.array([7, 5]), 4, seed=9)
    np.testing.assert_array_equal(a[[2, 0]], b)
    assert not np.array_equal(a, nw.random_directions(np.array([5, 6, 7]), 4, seed=10))


def test_directions_are_standard_normal():
    g = nw.random_directions(np.arange(20000), 5, seed=1).ravel()
    assert abs(g.mean()) < 0.02
    assert abs(g.std() - 1.0) < 0.02
    assert abs(np.mean(g**4) - 3.0) < 0.15  # Gaussian kurtosis


def test_split_halves_add_up_and_are_balanced(small_corpus):
    X, ids = small_corpus
    first, second = nw.split_documents(X, ids, seed=4)
    np.testing.assert_array_equal((first + second).toarray(), X.toarray())
    n = np.asarray(X.sum(axis=1)).ravel()
    np.testing.assert_array_equal(np.asarray(first.sum(axis=1)).ravel(), n // 2)


def test_split_of_a_document_is_the_same_in_any_batch(small_corpus):
    X, ids = small_corpus
    first, _ = nw.split_documents(X, ids, seed=4)
    rows = np.array([7, 3, 30])
    first_sub, _ = nw.split_documents(X[rows], ids[rows], seed=4)
    np.testing.assert_array_equal(first_sub.toarray(), first[rows].toarray())


# --- streaming equals batch ---------------------------------------------------------------


def _cuts(n_docs):
    return st.lists(st.integers(0, n_docs), max_size=6).map(lambda c: sorted(set(c)))


def _assert_same(a, b):
    for name in vars(a):
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-13, err_msg=name)
        else:
            assert x == y, name


@settings(max_examples=15, deadline=None)
@given(cuts=_cuts(62), order_seed=st.integers(0, 2**16))
def test_rp_sketch_streaming_equals_batch(small_corpus, cuts, order_seed):
    X, ids = small_corpus
    batch = nw.rp_sketch(X, ids, 7, seed=11)
    bounds = [0, *cuts, X.shape[0]]
    parts = [(X[a:b], ids[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    # Any arrival order of the batches gives the same sketch.
    order = np.random.default_rng(order_seed).permutation(len(parts))
    state = nw.RPSketch.zeros(X.shape[1], 7, seed=11)
    for i in order:
        state = nw.update(state, *parts[i])
    _assert_same(state, batch)


@settings(max_examples=15, deadline=None)
@given(cuts=_cuts(62), order_seed=st.integers(0, 2**16))
def test_split_statistic_streaming_equals_batch(small_corpus, cuts, order_seed):
    X, ids = small_corpus
    batch = nw.split_statistic(X, ids, seed=11)
    bounds = [0, *cuts, X.shape[0]]
    parts = [nw.split_statistic(X[a:b], ids[a:b], seed=11) for a, b in zip(bounds[:-1], bounds[1:])]
    order = np.random.default_rng(order_seed).permutation(len(parts))
    state = nw.SplitStatistic.zeros(X.shape[1], seed=11)
    for i in order:
        state = nw.merge(state, parts[i])
    _assert_same(state, batch)


def test_sketch_matches_direct_projection(small_corpus):
    # The sketch is Σ_d g_d x_dᵀ: compare the projected patterns with X̃ G computed densely.
    X, ids = small_corpus
    sketch = nw.rp_sketch(X, ids, 6, seed=2)
    dense = X.toarray()
    n = dense.sum(axis=1)
    keep = n >= 1
    F = dense[keep] / n[keep, None]
    Xt = F.T / F.T.sum(axis=1, keepdims=True).clip(min=1e-300)  # patterns (V, M)
    G = nw.random_directions(ids[keep], 6, seed=2)
    expected = (Xt @ G).T
    expected[:, F.sum(axis=0) == 0] = 0.0
    np.testing.assert_allclose(sketch.projected_patterns(), expected, atol=1e-12)
    assert sketch.num_docs == int(keep.sum())


def test_merge_refuses_other_seed_or_shape():
    with pytest.raises(InputError, match="seed"):
        nw.RPSketch.zeros(5, 3, seed=1).merge(nw.RPSketch.zeros(5, 3, seed=2))
    with pytest.raises(InputError):
        nw.SplitStatistic.zeros(5).merge(nw.SplitStatistic.zeros(6))
    with pytest.raises(InputError):
        nw.merge(nw.RPSketch.zeros(5, 3), nw.SplitStatistic.zeros(5))


def test_update_checks_input(small_corpus):
    X, ids = small_corpus
    with pytest.raises(InputError, match="doc_ids"):
        nw.update(nw.RPSketch.zeros(40, 3), X, ids[:-1])
    with pytest.raises(InputError, match="words"):
        nw.update(nw.SplitStatistic.zeros(41), X, ids)
    with pytest.raises(InputError, match="non-negative"):
        nw.random_directions(np.array([-1]), 2)


# --- recovery on separable planted topics -------------------------------------------------


def test_ddp_recovers_separable_topics(planted):
    truth, split, _ = planted
    result = nw.ddp_topics(split, 5, min_df=60, random_state=0)
    err = recovery_error(truth.topic_word, result.topic_word)[0]
    assert err < 0.12  # measured 0.04
    np.testing.assert_allclose(result.topic_word.sum(axis=0), 1.0)
    assert len(result.groups) == 5 and result.anchors.shape == (5,)
    # The detected novel words are (nearly) exclusive to one topic.
    B = truth.topic_word
    purity = (B / B.sum(axis=1, keepdims=True))[result.novel_words].max(axis=1)
    assert np.median(purity) > 0.95


def test_ddp_threshold_clustering(planted):
    truth, split, _ = planted
    result = nw.ddp_topics(split, 5, min_df=60, cluster="threshold")
    assert recovery_error(truth.topic_word, result.topic_word)[0] < 0.12


def test_rp_recovers_separable_topics(planted):
    truth, split, sketch = planted
    result = nw.rp_topics(sketch, split, 5, min_df=60, random_state=0)
    assert recovery_error(truth.topic_word, result.topic_word)[0] < 0.12  # measured 0.04


def test_rp_error_falls_with_more_documents():
    # Issue #6: averaging RP's clusters as they are stalls at ~0.08 here (0.235 at 50 000
    # documents in the benchmark), because RP's picks stay noisy, nearly novel words however
    # many documents arrive. Re-anchored on each cluster's direction, the error falls.
    truth = planted_model(300, 5, alpha=0.03, random_state=0)
    X, _ = sample_documents(truth, 16000, random_state=100)
    ids = np.arange(16000)
    small = (nw.split_statistic(X[:2000], ids[:2000], seed=1),
             nw.rp_sketch(X[:2000], ids[:2000], 250, seed=1))
    # The large corpus is the small one plus a streamed update.
    large = tuple(nw.update(state, X[2000:], ids[2000:]) for state in small)

    def error(states, **kw):
        split, sketch = states
        res = nw.rp_topics(sketch, split, 5, min_df=0.01 * split.num_docs, random_state=0, **kw)
        return recovery_error(truth.topic_word, res.topic_word)[0]

    err_small, err_large = error(small), error(large)
    assert err_large < 0.06  # measured 0.027
    assert err_large < 0.6 * err_small  # measured 0.057 -> 0.027
    # The paper's plain cluster average: 0.104 -> 0.082.
    assert err_large < 0.5 * error(large, n_extreme=None)


def _population_split(n_docs=400, n_words=30, n_topics=3, seed=0):
    """A noise-free SplitStatistic: both halves hold every document's expected frequencies."""
    rng = np.random.default_rng(seed)
    B = np.zeros((n_words, n_topics))
    B[n_topics:] = rng.dirichlet(np.full(n_topics, 0.3), n_words - n_topics)  # mixed words
    B[np.arange(n_topics), np.arange(n_topics)] = 1.0  # word k is topic k's only novel word
    B /= B.sum(axis=0)
    A = rng.dirichlet(np.full(n_topics, 0.2), n_docs) @ B.T  # (docs, words), rows sum to 1
    mass = A.sum(axis=0)
    split = nw.SplitStatistic(A.T @ A, mass, mass, (A > 0).sum(axis=0), n_docs)
    return split, B


def test_extreme_words_finds_the_corner_from_impure_groups():
    split, B = _population_split()
    share = B / B.sum(axis=1, keepdims=True)  # p(topic | word)
    mixed = np.arange(3, B.shape[0])
    # Groups of mixed words that only lean to their topic; the novel word is left out.
    groups = [mixed[share[mixed].argmax(axis=1) == k] for k in range(3)]
    assert all(g.size for g in groups)
    found = nw.extreme_words(split, groups, 1)
    assert [int(g[0]) for g in found] == [0, 1, 2]
    more = nw.extreme_words(split, groups, 4)
    assert all(g.size == 4 and g[0] == k for k, g in enumerate(more))


def test_extreme_words_scores_match_the_correlation_matrix(planted):
    _, split, sketch = planted
    novel = nw.rp_novel_words(sketch, min_df=60)
    groups = nw.cluster_novel_words(split, novel, 5, random_state=0)
    found = nw.extreme_words(split, groups, 7, min_df=60)
    # Dense oracle: min of C Avgᵀ and Cᵀ Avgᵀ over the candidates, best first.
    C = split.correlation()
    cand = np.flatnonzero((split.mass_first > 0) & (split.mass_second > 0)
                          & (split.doc_freq >= 60))
    for k, g in enumerate(groups):
        score = np.minimum(C[cand][:, g].mean(axis=1), C[g][:, cand].mean(axis=0))
        np.testing.assert_array_equal(found[k], cand[np.lexsort((cand, -score))[:7]])


def test_extreme_words_checks_input(planted):
    _, split, _ = planted
    with pytest.raises(InputError, match="n_words"):
        nw.extreme_words(split, [[0], [1]], 0)
    with pytest.raises(InputError, match="non-empty"):
        nw.extreme_words(split, [[0], []], 2)
    with pytest.raises(InputError, match="lie in"):
        nw.extreme_words(split, [[0], [500]], 2)
    with pytest.raises(InputError, match="candidate"):
        nw.extreme_words(split, [[0], [1]], 2, min_df=1e9)
    empty = nw.SplitStatistic.zeros(split.n_words)
    with pytest.raises(InputError, match="both document halves"):
        nw.extreme_words(empty, [[0], [1]], 2)


def test_rp_paper_average_keeps_the_clusters(planted):
    _, split, sketch = planted
    paper = nw.rp_topics(sketch, split, 5, min_df=60, n_extreme=None, random_state=0)
    assert paper.groups == paper.clusters
    default = nw.rp_topics(sketch, split, 5, min_df=60, random_state=0)
    assert [g.tolist() for g in default.clusters] == [g.tolist() for g in paper.clusters]
    assert all(g.size == 5 for g in default.groups)


def test_estimation_from_true_anchors(planted):
    truth, split, _ = planted
    topic_word, coef = nw.estimate_topics(split, [[k] for k in range(5)])
    assert recovery_error(truth.topic_word, topic_word)[0] < 0.12
    np.testing.assert_allclose(coef.sum(axis=1), 1.0)


def test_explicit_threshold_needs_enough_components(planted):
    _, split, _ = planted
    novel = nw.ddp_novel_words(split, 5, min_df=60)
    with pytest.raises(InputError, match="components"):
        nw.cluster_novel_words(split, novel, 5, method="threshold", threshold=1e12)


def test_deterministic(planted):
    _, split, sketch = planted
    a = nw.rp_topics(sketch, split, 5, min_df=60, random_state=1)
    b = nw.rp_topics(sketch, split, 5, min_df=60, random_state=1)
    np.testing.assert_array_equal(a.topic_word, b.topic_word)


def test_too_few_candidates(planted):
    _, split, sketch = planted
    with pytest.raises(InputError, match="candidate"):
        nw.ddp_novel_words(split, 5, min_df=1e9)
    with pytest.raises(InputError, match="candidate"):
        nw.rp_novel_words(sketch, min_df=1e9)
    with pytest.raises(InputError, match="novel words"):
        nw.cluster_novel_words(split, [0, 1], 5)
