"""Anchor finding: JSMF sparse implicit pivoted QR and Arora et al. FastAnchorWords."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.model import anchors as anchors_mod
from anchorstream.model.anchors import (
    candidate_words,
    fast_anchor_words,
    find_anchors,
    pivoted_qr_anchors,
)
from anchorstream.errors import InputError
from anchorstream.synthetic import dirichlet_second_moment, planted_model, population_cooccurrence
from tests.naive_anchor import naive_fast_anchor_words, naive_pivoted_qr

METHODS = ["qr", "fast"]


def _population(V, K, seed, **kw):
    model = planted_model(V, K, random_state=seed, **kw)
    return model, population_cooccurrence(model.topic_word, model.topic_topic)


@pytest.fixture(scope="module")
def planted():
    return _population(150, 8, 11)


def _find(method, C, K, **kw):
    if method == "fast":
        kw.setdefault("random_state", 0)
    return find_anchors(C, K, method=method, **kw)


# --------------------------------------------------------------------------------------------
# Planted anchors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("V, K, seed", [(60, 3, 0), (150, 8, 1), (400, 20, 2)])
def test_population_matrix_gives_the_planted_anchors(method, V, K, seed):
    model, Q = _population(V, K, seed)
    got = _find(method, Q, K)
    assert got.dtype == np.int64 and got.shape == (K,)
    assert set(got.tolist()) == set(model.anchors.tolist())


def test_an_unchecked_input_gives_the_same_anchors_and_a_bad_one_is_caught_when_checked(planted):
    model, Q = planted
    init = model.anchors[::-1]
    for finder in (pivoted_qr_anchors, lambda *a, **k: fast_anchor_words(*a, random_state=3, **k)):
        np.testing.assert_array_equal(finder(Q, 8, init=init, check_input=False),
                                      finder(Q, 8, init=init))
    bad = Q.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        pivoted_qr_anchors(bad, 8)


def test_row_statistics_given_by_the_caller_are_used_as_given(planted):
    model, Q = planted
    stats = {"row_sums": Q.sum(axis=1), "row_sqnorms": (Q * Q).sum(axis=1)}
    for finder in (pivoted_qr_anchors, lambda *a, **k: fast_anchor_words(*a, random_state=3, **k),
                   lambda *a, **k: fast_anchor_words(*a, projection_dim=None, **k)):
        want = finder(Q, 8, init=model.anchors[::-1])
        np.testing.assert_array_equal(
            finder(Q, 8, init=model.anchors[::-1], check_input=False, **stats), want)
    # Trusted, not recomputed: a zero row sum keeps a word from being an anchor.
    hidden = stats["row_sums"].copy()
    hidden[model.anchors[0]] = 0.0
    assert model.anchors[0] not in pivoted_qr_anchors(Q, 8, row_sums=hidden)
    with pytest.raises(InputError, match="row_sqnorms must have shape"):
        pivoted_qr_anchors(Q, 8, row_sqnorms=np.ones(3))
    with pytest.raises(InputError, match="row_sums must have shape"):
        pivoted_qr_anchors(Q, 8, check_input=False, row_sums=np.ones(3))


def _products(C, anchors):
    Cbar = C / C.sum(axis=1, keepdims=True)
    return Cbar @ Cbar[anchors].T


@pytest.mark.parametrize("sparse", [False, True])
def test_the_search_returns_the_products_with_the_anchor_rows(rng, sparse):
    C = _noisy(rng, 120)
    M = sp.csr_matrix(C) if sparse else C
    want = pivoted_qr_anchors(M, 7)
    got, products = pivoted_qr_anchors(M, 7, return_products=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(products, _products(C, got), rtol=1e-9, atol=1e-14)
    # Also after a cleanup pass that replaced anchors, and with pinned words first.
    init = np.argsort(C.sum(axis=1))[:7]  # poor anchors: most get replaced
    got, products = pivoted_qr_anchors(M, 7, init=init, pinned=[int(want[3])],
                                       return_products=True)
    # (The pinned word and a full init are K + 1 words: the span takes the first K.)
    assert got.size == 7 and got[0] == want[3]
    assert len(set(got.tolist()) & set(init.tolist())) < 7
    np.testing.assert_allclose(products, _products(C, got), rtol=1e-9, atol=1e-14)


def test_sparse_input_gives_the_same_anchors(planted):
    model, Q = planted
    Q = Q.copy()
    Q[Q < 1e-7] = 0.0  # a genuinely sparse matrix (the anchors are unaffected)
    dense = pivoted_qr_anchors(Q, 8)
    np.testing.assert_array_equal(pivoted_qr_anchors(sp.csr_matrix(Q), 8), dense)
    np.testing.assert_array_equal(pivoted_qr_anchors(sp.csc_matrix(Q), 8), dense)
    np.testing.assert_array_equal(
        fast_anchor_words(sp.csr_matrix(Q), 8, random_state=3),
        fast_anchor_words(Q, 8, random_state=3),
    )


def test_unprojected_fast_anchor_words(planted):
    model, Q = planted
    for dim in (None, 150, 10**6):
        assert set(fast_anchor_words(Q, 8, projection_dim=dim).tolist()) == set(range(8))


@settings(max_examples=20, deadline=None)
@given(
    V=st.integers(20, 80),
    K=st.integers(2, 8),
    alpha=st.floats(0.05, 1.0),
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(METHODS),
)
def test_random_separable_models_with_shuffled_words(V, K, alpha, seed, method):
    rng = np.random.default_rng(seed)
    model = planted_model(V, K, alpha=alpha, anchor_mass=0.1, random_state=rng)
    perm = rng.permutation(V)  # anchors anywhere, not just the first K words
    B = model.topic_word[perm]
    R = dirichlet_second_moment(rng.uniform(0.2, 1.0, K) * alpha * K)
    Q = population_cooccurrence(B, R)
    got = _find(method, Q, K)
    # Small sparse Dirichlet topics can give another word (numerically) zero mass outside one
    # topic, making it an anchor too: any word with p(z | w) one-hot will do, one per topic.
    p_topic = B[got] / B[got].sum(axis=1, keepdims=True)
    assert np.all(p_topic.max(axis=1) >= 1.0 - 1e-12)
    assert sorted(np.argmax(p_topic, axis=1).tolist()) == list(range(K))


# --------------------------------------------------------------------------------------------
# Agreement with the explicit textbook versions
# --------------------------------------------------------------------------------------------


def _noisy(rng, V):
    A = rng.random((V, V)) ** 4
    return A + A.T


def test_pivoted_qr_matches_explicit_qr(rng):
    C = _noisy(rng, 70)
    cand = rng.random(70) < 0.7
    np.testing.assert_array_equal(pivoted_qr_anchors(C, 9), naive_pivoted_qr(C, 9))
    np.testing.assert_array_equal(
        pivoted_qr_anchors(C, 9, candidates=cand), naive_pivoted_qr(C, 9, candidates=cand)
    )


@pytest.mark.parametrize("dim", [None, 20])
def test_fast_anchor_words_matches_least_squares_version(rng, dim):
    V, K = 60, 7
    C = _noisy(rng, V)
    cand = rng.random(V) < 0.8
    points = C / C.sum(axis=1, keepdims=True)
    if dim is not None:
        R = np.random.default_rng(5).standard_normal((V, dim)) / np.sqrt(dim)
        points = points @ R
    want = naive_fast_anchor_words(points, K, candidates=cand)
    got = fast_anchor_words(C, K, candidates=cand, projection_dim=dim, random_state=5)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------------------------
# candidates, pinned, init
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_candidates_restrict_the_anchors(method, planted):
    model, Q = planted
    cand = np.ones(150, dtype=bool)
    cand[[2, 5]] = False
    got = _find(method, Q, 8, candidates=cand)
    assert cand[got].all()
    assert set(got.tolist()) >= {0, 1, 3, 4, 6, 7}


@pytest.mark.parametrize("method", METHODS)
def test_pinned_come_first_in_order(method, planted):
    _, Q = planted
    got = _find(method, Q, 8, pinned=[40, 3])
    assert got[:2].tolist() == [40, 3]
    assert len(set(got.tolist())) == 8


@pytest.mark.parametrize("method", METHODS)
def test_zero_rows_are_never_anchors(method, planted):
    _, Q = planted
    Q = Q.copy()
    Q[9, :] = 0.0
    Q[:, 9] = 0.0
    cand = np.zeros(150, dtype=bool)
    cand[:10] = True  # 9 candidates with mass for 8 topics, plus the empty word 9
    got = _find(method, Q, 8, candidates=cand)
    assert 9 not in got.tolist()


def _passes(monkeypatch):
    """Count passes over the matrix (products of the rows with a vector or block)."""
    counter = []
    original = anchors_mod._SpanSearch.product

    def product(self, Z):
        counter.append(1)
        return original(self, Z)

    monkeypatch.setattr(anchors_mod._SpanSearch, "product", product)
    return counter


@pytest.mark.parametrize("method", METHODS)
def test_warm_start_from_true_anchors_returns_them_in_one_pass(method, planted, monkeypatch):
    _, Q = planted
    init = np.random.default_rng(0).permutation(8)
    counter = _passes(monkeypatch)
    cold = _find(method, Q, 8)
    cold_passes = len(counter)
    counter.clear()
    warm = _find(method, Q, 8, init=init)
    np.testing.assert_array_equal(warm, init)  # same anchors, same topic order
    assert len(counter) == 1 < cold_passes
    assert set(cold.tolist()) == set(init.tolist())


@pytest.mark.parametrize("method", METHODS)
def test_warm_start_repairs_a_wrong_anchor(method, planted):
    _, Q = planted
    init = [0, 1, 2, 77, 4, 5, 6, 7]  # word 77 is not an anchor; topic 3's anchor is missing
    got = _find(method, Q, 8, init=init)
    assert got.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("method", METHODS)
def test_partial_and_stale_warm_starts(method, planted):
    _, Q = planted
    cand = np.ones(150, dtype=bool)
    cand[6] = False
    # Word 6 is no longer a candidate and word 3 is pinned: both are skipped; the rest are
    # kept in order and the missing anchors are found greedily.
    got = _find(method, Q, 8, candidates=cand, pinned=[3], init=[5, 6, 3, 1])
    assert got[:3].tolist() == [3, 5, 1]
    assert 6 not in got.tolist()
    assert set(got.tolist()) >= {0, 1, 2, 3, 4, 5, 7}


@pytest.mark.parametrize("method", METHODS)
def test_pinned_are_kept_by_the_cleanup(method, planted):
    _, Q = planted
    got = _find(method, Q, 8, pinned=[50], init=list(range(7)))
    assert got[0] == 50  # not an anchor, but pinned: the cleanup pass leaves it alone
    # The others are revisited (with word 50 in the span, dropping anchor 0 for anchor 7 can
    # be farther), and each is still a vertex: a true anchor.
    assert len(set(got.tolist())) == 8 and set(got[1:].tolist()) <= set(range(8))


def test_fast_anchor_words_is_deterministic(rng):
    C = _noisy(rng, 80)
    a = fast_anchor_words(C, 6, projection_dim=10, random_state=4)
    b = fast_anchor_words(C, 6, projection_dim=10, random_state=4)
    np.testing.assert_array_equal(a, b)


def test_find_anchors_dispatches(planted):
    _, Q = planted
    np.testing.assert_array_equal(find_anchors(Q, 8), pivoted_qr_anchors(Q, 8))
    np.testing.assert_array_equal(
        find_anchors(Q, 8, method="fast", random_state=1), fast_anchor_words(Q, 8, random_state=1)
    )
    with pytest.raises(InputError, match="method"):
        find_anchors(Q, 8, method="lp")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"candidates": np.arange(150) < 5}, "only 5 candidate"),
        ({"candidates": np.ones(149, dtype=bool)}, "boolean mask"),
        ({"candidates": np.ones(150)}, "boolean mask"),
        ({"pinned": [3, 3]}, "duplicate"),
        ({"pinned": [200]}, r"\[0, 150\)"),
        ({"pinned": [1.5]}, "word indices"),
        ({"pinned": list(range(9))}, "9 pinned"),
        ({"pinned": [7], "candidates": np.arange(150) != 7}, "not candidates"),
        ({"init": [1, 2, 1]}, "duplicate"),
        ({"init": [-1]}, "word indices"),
        ({"init": ["a"]}, "word indices"),
        ({"init": list(range(9))}, "init has 9"),
    ],
)
def test_bad_arguments(method, planted, kwargs, match):
    _, Q = planted
    with pytest.raises(InputError, match=match):
        _find(method, Q, 8, **kwargs)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "C, K, match",
    [
        (np.ones((3, 4)), 1, "square"),
        (np.array([[1.0, np.inf], [1.0, 1.0]]), 1, "NaN"),
        (np.eye(3), 4, "n_topics"),
        (np.eye(3), 0, "n_topics"),
        (np.ones((4, 4)), 2, "span only 1"),
        (np.array([["a"]]), 1, "real numbers"),
    ],
)
def test_bad_matrices(method, C, K, match):
    with pytest.raises(InputError, match=match):
        _find(method, C, K)


def test_bad_projection_dim(planted):
    _, Q = planted
    with pytest.raises(InputError, match="projection_dim"):
        fast_anchor_words(Q, 8, projection_dim=0)


def test_pinned_rows_must_have_mass():
    C = np.diag([1.0, 1.0, 0.0, 1.0])
    with pytest.raises(InputError, match="zero rows"):
        pivoted_qr_anchors(C, 2, pinned=[2])


def test_dependent_pinned_anchors_are_an_error():
    C = np.array([[2.0, 2.0, 0.0], [2.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(InputError, match="combination"):
        pivoted_qr_anchors(C, 2, pinned=[0, 1])


# --------------------------------------------------------------------------------------------
# candidate_words
# --------------------------------------------------------------------------------------------


def test_candidate_words():
    np.testing.assert_array_equal(
        candidate_words(np.array([0.0, 4.0, 5.0, 9.0]), 5), [False, False, True, True]
    )
    assert candidate_words([1, 2], 0).all()


@pytest.mark.parametrize(
    "doc_freq, min_df",
    [([[1, 2]], 1), ([1, -1], 1), ([1, np.nan], 1), (["a"], 1), ([1, 2], -1), ([1, 2], np.inf)],
)
def test_candidate_words_bad_input(doc_freq, min_df):
    with pytest.raises(InputError):
        candidate_words(doc_freq, min_df)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=0, max_size=60), st.integers(1, 20),
       st.integers(1, 300))
def test_anchor_min_df_falls_back_to_keep_two_candidates_per_topic(df, k, min_df):
    from anchorstream.model.anchors import anchor_min_df_for

    got = anchor_min_df_for(df, k, min_df)
    assert got <= min_df
    nonzero = sum(d > 0 for d in df)
    kept = sum(d >= got for d in df)
    # Two candidates per topic where the corpus has them, never a word that occurs nowhere.
    assert got >= min(1, min_df) and kept >= min(2 * k, nonzero)
    if got < min_df:  # lowered only where min_df keeps too few
        assert sum(d >= min_df for d in df) < 2 * k


def test_the_default_anchor_min_df_falls_back_on_a_small_corpus():
    from anchorstream.stats.cooccurrence import cooccurrence
    from anchorstream.model.pipeline import AnchorModel
    from anchorstream.synthetic import planted_model, sample_documents

    X, _ = sample_documents(planted_model(200, 5, random_state=0), 150, 20, random_state=1)
    model = AnchorModel(5).fit(cooccurrence(X))  # 150 documents: no word is in 100 of them?
    df = np.asarray((X > 0).sum(axis=0)).ravel()
    assert model.get_params()["anchor_min_df"] == 100
    assert model.anchor_min_df_ <= 100
    assert (df >= model.anchor_min_df_).sum() >= 10


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=0, max_size=60), st.integers(1, 5),
       st.integers(1, 300), st.integers(0, 6))
def test_anchor_min_df_caps_the_candidates_at_per_topic_times_k(df, k, min_df, per_topic):
    from anchorstream.model.anchors import anchor_min_df_for

    got = anchor_min_df_for(df, k, min_df, per_topic)
    reach = sum(d >= min_df for d in df)
    cap = max(per_topic, 2) * k
    if per_topic and reach > cap:
        # Raised: the cap-th most frequent word's frequency (ties with it stay candidates).
        assert got >= min_df
        assert sum(d >= got for d in df) >= cap > sum(d > got for d in df)
    else:
        assert got == anchor_min_df_for(df, k, min_df)


def test_anchor_min_df_refuses_a_negative_cap():
    from anchorstream.model.anchors import anchor_min_df_for

    with pytest.raises(InputError, match="per_topic"):
        anchor_min_df_for([5, 4, 3], 1, 1, -1)


def test_anchor_candidates_raise_the_threshold_on_a_large_corpus():
    from anchorstream.stats.cooccurrence import cooccurrence
    from anchorstream.model.pipeline import AnchorModel
    from anchorstream.synthetic import planted_model, sample_documents

    X, _ = sample_documents(planted_model(200, 5, random_state=0), 3000, 20, random_state=1)
    df = np.asarray((X > 0).sum(axis=0)).ravel()
    cooc = cooccurrence(X)
    capped = AnchorModel(5, anchor_min_df=10, anchor_candidates=20).fit(cooc)
    assert (df >= 10).sum() > 100  # more than 20 x 5 words reach anchor_min_df
    assert capped.anchor_min_df_ == np.sort(df)[::-1][99] > 10
    assert capped.anchor_min_df_ < 0.05 * 3000  # under the ceiling (test_candidates.py)
    assert np.all(df[capped.anchors_] >= capped.anchor_min_df_)
    # 4 x 5 candidates would need 576 documents: the threshold stops at 5% of them.
    assert np.sort(df)[::-1][19] > 150
    assert AnchorModel(5, anchor_min_df=10, anchor_candidates=4).fit(cooc).anchor_min_df_ == 150
    free = AnchorModel(5, anchor_min_df=10, anchor_candidates=0).fit(cooc)
    assert free.anchor_min_df_ == 10
    with pytest.raises(InputError, match="anchor_candidates"):
        AnchorModel(5, anchor_candidates=-1)


def _near_tie():
    """Rows (after normalisation) e0, e1, 0.98 e2 + 0.02 e0 and e3: word 3 is farther from the
    span of words 0 and 1 than word 2, but by 4% in squared distance, a near tie."""
    C = np.zeros((4, 4))
    C[0, 0] = C[1, 1] = C[3, 3] = 1.0
    C[2, 0], C[2, 2] = 0.02, 0.98
    return C


def test_a_warm_start_keeps_an_anchor_that_another_word_beats_by_less_than_the_margin():
    C = _near_tie()
    assert pivoted_qr_anchors(C, 3, init=[0, 1, 2]).tolist() == [0, 1, 2]
    assert anchors_mod.WARM_SWAP_MARGIN > 0.0417  # (1/0.98)² - 1: the tie this test needs
    # Without the margin the cleanup takes the farther word.
    assert 3 in pivoted_qr_anchors(C, 3, init=[0, 1, 2], swap_margin=0).tolist()
    # A clearly better word replaces it whatever the margin.
    C[2, 0], C[2, 2] = 0.3, 0.7
    assert 3 in pivoted_qr_anchors(C, 3, init=[0, 1, 2]).tolist()


@pytest.mark.parametrize("margin", [-0.1, float("nan"), "0.05"])
def test_a_bad_swap_margin_is_refused(margin):
    with pytest.raises(InputError, match="swap_margin"):
        pivoted_qr_anchors(_near_tie(), 3, init=[0, 1, 2], swap_margin=margin)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), K=st.integers(2, 9), margin=st.sampled_from([0.0, 0.05]))
def test_the_cleanup_decides_as_one_position_at_a_time(seed, K, margin):
    # The cleanup tests a block of positions with one solve; a block of one is the loop of
    # Arora et al. Alg. 4. From a poor init (random words, some replaced) both must end on the
    # same anchors, with pinned words and noise in play.
    rng = np.random.default_rng(seed)
    _, C = _population(60, K, seed % 97)
    init = rng.choice(60, K, replace=False)
    kw = dict(pinned=init[:1], init=init[1:], noise=rng.random(60) * 1e-4, swap_margin=margin)
    found = []
    for block in (1, 3, anchors_mod._CLEANUP_BLOCK):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(anchors_mod, "_CLEANUP_BLOCK", block)
            found.append(pivoted_qr_anchors(C, K, **kw).tolist())
    assert found[0] == found[1] == found[2]


def test_the_cleanup_replaces_several_anchors_of_a_poor_init():
    # The case the test above is about: random init words, most of them replaced.
    _, C = _population(60, 6, 5)
    init = np.random.default_rng(1).choice(60, 6, replace=False)
    got = pivoted_qr_anchors(C, 6, init=init)
    assert len(set(got.tolist()) - set(init.tolist())) >= 3


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_warm_start_as_a_block_finds_what_row_by_row_finds(method, seed, monkeypatch):
    # The search's warm rows enter the span as one block (residual_basis) where each adds a
    # direction; row by row they give the same anchors in the same order.
    _, Q = _population(200, 12, seed)
    C = Q + np.random.default_rng(seed).uniform(0, 2e-5, Q.shape)
    C = (C + C.T) / 2
    init = np.random.default_rng(seed + 10).choice(200, 12, replace=False)
    block = _find(method, C, 12, init=init)
    monkeypatch.setattr(anchors_mod, "residual_basis", lambda *args: None)
    row_by_row = _find(method, C, 12, init=init)
    np.testing.assert_array_equal(block, row_by_row)


@pytest.mark.parametrize("shape, cols", [((40, 7), 7), ((40, 9), 7), ((5, 3), 3)])
def test_reflection_in_place_equals_the_formed_one(rng, shape, cols):
    """The cleanup's Householder update, by BLAS in place, whether the columns are all of the
    array or a slice of it (whose transpose BLAS cannot update in place)."""
    from anchorstream.model.anchors import _reflect

    X = rng.standard_normal(shape)
    v = rng.standard_normal(cols)
    v /= np.linalg.norm(v)
    want = X.copy()
    want[:, :cols] -= 2.0 * np.outer(want[:, :cols] @ v, v)
    _reflect(X[:, :cols], v)
    np.testing.assert_allclose(X, want, rtol=0, atol=1e-13)
