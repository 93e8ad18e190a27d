"""The streamable word-pattern statistics of Ding et al. 2014: counter-based randomness, and
streaming (any batching, any merge order) equals batch."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.stats import wordpatterns as wp
from anchorstream.errors import InputError
from anchorstream.synthetic import planted_model, sample_documents


@pytest.fixture(scope="module")
def small_corpus():
    truth = planted_model(40, 3, random_state=0)
    X, _ = sample_documents(truth, 60, doc_length=20, random_state=1)
    # A one-token document and an empty one exercise the skipped rows.
    X = sp.vstack([X, sp.csr_matrix(([1.0], ([0], [5])), shape=(1, 40)), sp.csr_matrix((1, 40))])
    return X.tocsr(), np.arange(1000, 1000 + X.shape[0])



# --- counter-based randomness -------------------------------------------------------------


def test_directions_depend_only_on_document_id():
    a = wp.random_directions(np.array([5, 6, 7]), 4, seed=9)
    b = wp.random_directions(np.array([7, 5]), 4, seed=9)
    np.testing.assert_array_equal(a[[2, 0]], b)
    assert not np.array_equal(a, wp.random_directions(np.array([5, 6, 7]), 4, seed=10))


def test_directions_are_standard_normal():
    g = wp.random_directions(np.arange(20000), 5, seed=1).ravel()
    assert abs(g.mean()) < 0.02
    assert abs(g.std() - 1.0) < 0.02
    assert abs(np.mean(g**4) - 3.0) < 0.15  # Gaussian kurtosis


def test_split_halves_add_up_and_are_balanced(small_corpus):
    X, ids = small_corpus
    first, second = wp.split_documents(X, ids, seed=4)
    np.testing.assert_array_equal((first + second).toarray(), X.toarray())
    n = np.asarray(X.sum(axis=1)).ravel()
    np.testing.assert_array_equal(np.asarray(first.sum(axis=1)).ravel(), n // 2)


def test_split_of_a_document_is_the_same_in_any_batch(small_corpus):
    X, ids = small_corpus
    first, _ = wp.split_documents(X, ids, seed=4)
    rows = np.array([7, 3, 30])
    first_sub, _ = wp.split_documents(X[rows], ids[rows], seed=4)
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
    batch = wp.rp_sketch(X, ids, 7, seed=11)
    bounds = [0, *cuts, X.shape[0]]
    parts = [(X[a:b], ids[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    # Any arrival order of the batches gives the same sketch.
    order = np.random.default_rng(order_seed).permutation(len(parts))
    state = wp.RPSketch.zeros(X.shape[1], 7, seed=11)
    for i in order:
        state = wp.update(state, *parts[i])
    _assert_same(state, batch)


@settings(max_examples=15, deadline=None)
@given(cuts=_cuts(62), order_seed=st.integers(0, 2**16))
def test_split_statistic_streaming_equals_batch(small_corpus, cuts, order_seed):
    X, ids = small_corpus
    batch = wp.split_statistic(X, ids, seed=11)
    bounds = [0, *cuts, X.shape[0]]
    parts = [wp.split_statistic(X[a:b], ids[a:b], seed=11) for a, b in zip(bounds[:-1], bounds[1:])]
    order = np.random.default_rng(order_seed).permutation(len(parts))
    state = wp.SplitStatistic.zeros(X.shape[1], seed=11)
    for i in order:
        state = wp.merge(state, parts[i])
    _assert_same(state, batch)


def test_sketch_matches_direct_projection(small_corpus):
    # The sketch is Σ_d g_d x_dᵀ: compare the projected patterns with X̃ G computed densely.
    X, ids = small_corpus
    sketch = wp.rp_sketch(X, ids, 6, seed=2)
    dense = X.toarray()
    n = dense.sum(axis=1)
    keep = n >= 1
    F = dense[keep] / n[keep, None]
    Xt = F.T / F.T.sum(axis=1, keepdims=True).clip(min=1e-300)  # patterns (V, M)
    G = wp.random_directions(ids[keep], 6, seed=2)
    expected = (Xt @ G).T
    expected[:, F.sum(axis=0) == 0] = 0.0
    np.testing.assert_allclose(sketch.projected_patterns(), expected, atol=1e-12)
    assert sketch.num_docs == int(keep.sum())


def test_merge_refuses_other_seed_or_shape():
    with pytest.raises(InputError, match="seed"):
        wp.RPSketch.zeros(5, 3, seed=1).merge(wp.RPSketch.zeros(5, 3, seed=2))
    with pytest.raises(InputError):
        wp.SplitStatistic.zeros(5).merge(wp.SplitStatistic.zeros(6))
    with pytest.raises(InputError):
        wp.merge(wp.RPSketch.zeros(5, 3), wp.SplitStatistic.zeros(5))


def test_update_checks_input(small_corpus):
    X, ids = small_corpus
    with pytest.raises(InputError, match="doc_ids"):
        wp.update(wp.RPSketch.zeros(40, 3), X, ids[:-1])
    with pytest.raises(InputError, match="words"):
        wp.update(wp.SplitStatistic.zeros(41), X, ids)
    with pytest.raises(InputError, match="non-negative"):
        wp.random_directions(np.array([-1]), 2)
