"""The warm update of a low-rank rectification, alone and as the warm refit of the pipeline."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.evaluate import recovery_error
from anchorstream.model.lowrank import DocumentCooccurrence, rectify_lowrank
from anchorstream.model.lowrank_warm import data_product, probes, rectify_lowrank_update
from anchorstream.model.pipeline import AnchorModel
from anchorstream.synthetic import planted_model, sample_documents

V, K = 150, 6


def state(C, factor):
    """What a cold fit keeps for an update: the probes and the data's product with both."""
    G = probes(V)
    return G, data_product(C, np.hstack([factor, G]))


@pytest.fixture(scope="module")
def corpus():
    truth = planted_model(V, K, anchor_mass=0.05, random_state=1)
    X, _ = sample_documents(truth, 20000, doc_length=10, random_state=3)
    return truth, X


def test_no_change_returns_the_cold_result(corpus):
    _, X = corpus
    C = DocumentCooccurrence(X)
    cold = rectify_lowrank(C, K, tol=1e-8, random_state=0)
    up = rectify_lowrank_update(C, cold.factor, *state(C, cold.factor))
    assert up is not None and up.n_iter == 0 and up.residual == pytest.approx(0.0, abs=1e-12)
    a, b = up.matrix.toarray(), cold.matrix.toarray()
    np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9 * b.max())
    np.testing.assert_allclose(up.row_sums, b.sum(axis=1), rtol=1e-9, atol=1e-15)


def test_an_update_after_one_percent_is_near_the_cold_result(corpus):
    _, X = corpus
    before = DocumentCooccurrence(X[:19800])
    old = rectify_lowrank(before, K, tol=1e-8, random_state=0)
    C = DocumentCooccurrence(X)
    cold = rectify_lowrank(C, K, tol=1e-8, random_state=0)
    up = rectify_lowrank_update(C, old.factor, *state(before, old.factor))
    assert up is not None and 0 < up.residual < 0.05
    # The estimated change is the Frobenius one, within the probes' error.
    b, n = before @ np.eye(V), C @ np.eye(V)
    exact = np.linalg.norm(n - b) / np.linalg.norm(b)
    assert 0.6 * exact < up.residual < 1.6 * exact
    a, b, o = up.matrix.toarray(), cold.matrix.toarray(), old.matrix.toarray()
    # Closer to the cold result on the new data than the old result is.
    assert np.linalg.norm(a - b) < 0.5 * np.linalg.norm(o - b)


def test_words_new_since_the_cold_fit_count_in_the_change(corpus):
    """A word admitted after the cold fit has no factor or probe row (the pipeline moves the
    state with the words and gives a new word zeros). Its own co-occurrences must still count
    in the estimated change: a theme made only of new words is invisible to the update's
    first-order step, so only a cold rectification can find it, and the bound must see it."""
    _, X = corpus
    new = 20
    old_words = np.arange(V - new)
    X = X.tolil()
    X[:, V - new:] = 0
    rng = np.random.default_rng(7)
    theme = rng.dirichlet(np.full(new, 0.5))
    rows = [np.bincount(rng.choice(new, size=12, p=theme), minlength=new) for _ in range(1500)]
    block = np.zeros((1500, V))
    block[:, V - new:] = rows
    before = DocumentCooccurrence(sp.csr_matrix(X[:18500]))
    after = DocumentCooccurrence(sp.vstack([sp.csr_matrix(X[:18500]), sp.csr_matrix(block)]))
    cold = rectify_lowrank(before.subset(old_words), K, random_state=0)
    factor = np.zeros((V, K))
    factor[old_words] = cold.factor
    G = np.zeros((V, probes(V).shape[1]))
    G[old_words] = probes(V - new)
    prev = np.zeros((V, K + G.shape[1]))
    prev[old_words] = data_product(before.subset(old_words), np.hstack([cold.factor,
                                                                        G[old_words]]))
    b, n = before @ np.eye(V), after @ np.eye(V)
    exact = np.linalg.norm(n - b) / np.linalg.norm(b)
    up = rectify_lowrank_update(after, factor, G, prev, max_change=1.0)
    assert up is not None and 0.6 * exact < up.residual < 1.6 * exact, (up.residual, exact)
    assert rectify_lowrank_update(after, factor, G, prev, max_change=0.5 * exact) is None


def test_a_change_above_the_bound_is_left_to_a_cold_rectification(corpus):
    _, X = corpus
    before = DocumentCooccurrence(X[:2000])
    old = rectify_lowrank(before, K, random_state=0)
    C = DocumentCooccurrence(X)
    G, prev = state(before, old.factor)
    assert rectify_lowrank_update(C, old.factor, G, prev, max_change=1e-6) is None
    assert rectify_lowrank_update(C, old.factor, G, np.zeros_like(prev)) is None
    with pytest.raises(InputError, match="previous_product"):
        rectify_lowrank_update(C, old.factor, G, prev[:, :2])
    with pytest.raises(InputError, match="factor"):
        rectify_lowrank_update(C, old.factor[:10], G, prev)
    with pytest.raises(InputError, match="probe_vectors"):
        rectify_lowrank_update(C, old.factor, G[:10], prev)
    with pytest.raises(InputError, match="rows must be a positive integer"):
        rectify_lowrank_update(C, old.factor, G, prev, rows=0)


def test_the_pipeline_refits_warm_and_agrees_with_a_cold_refit(corpus):
    truth, X = corpus
    settings = dict(rectify_method="lowrank", anchor_min_df=0, rectify_tol=1e-8)
    first = AnchorModel(K, **settings).fit(DocumentCooccurrence(X[:19800]))
    assert first.rectify_data_product_.shape == (V, K + first.rectify_probes_.shape[1])
    assert first.rectify_data_ is None
    full = DocumentCooccurrence(X)
    cold = AnchorModel(K, **settings).fit(full)
    warm = AnchorModel(K, **settings).fit(full, init=first)
    assert warm.n_iter_["rectify"] == 0 and cold.n_iter_["rectify"] > 2
    assert warm.rectify_warm_chain_ == 1 and 0 < warm.rectify_change_ < 0.05
    # The state stays the cold fit's along the chain.
    assert warm.rectify_factor_ is first.rectify_factor_
    assert warm.rectify_data_product_ is first.rectify_data_product_
    assert warm.rectify_probes_ is first.rectify_probes_
    assert set(warm.anchors_.tolist()) == set(cold.anchors_.tolist())
    assert recovery_error(cold.topic_word_, warm.topic_word_)[0] < 0.02
    # A one-off fit keeps no state for a warm refit.
    once = AnchorModel(K, **settings).fit(full, warm_state=False)
    assert once.rectify_data_product_ is None


def test_a_low_rank_refit_seeds_its_anchor_search_with_the_previous_anchors(corpus,
                                                                            monkeypatch):
    # Searched cold, the low-rank refits gave 9 topic births in five warm refits of 1% on the
    # demo corpus (benchmarks/README.md, "Low-rank rectification as the default"); seeded, 2.
    from anchorstream.model import stages

    _, X = corpus
    settings = dict(rectify_method="lowrank", anchor_min_df=0)
    first = AnchorModel(K, **settings).fit(DocumentCooccurrence(X[:19800]))
    seeds = []
    find = stages.find_anchors
    monkeypatch.setattr(stages, "find_anchors",
                        lambda *a, **kw: seeds.append(kw.get("init")) or find(*a, **kw))
    AnchorModel(K, **settings).fit(DocumentCooccurrence(X), init=first)
    AnchorModel(K, **settings).fit(DocumentCooccurrence(X))
    warm, cold = seeds
    assert cold is None
    # The seeds are positions among the words that occur in documents of >= 2 tokens.
    long_docs = X[np.asarray(X.sum(axis=1)).ravel() >= 2]
    active = np.flatnonzero(np.asarray(long_docs.sum(axis=0)).ravel() > 0)
    np.testing.assert_array_equal(active[warm], first.anchors_)


def test_remapped_moves_the_product_by_word(corpus):
    _, X = corpus
    model = AnchorModel(K, rectify_method="lowrank", anchor_min_df=0).fit(
        DocumentCooccurrence(X[:3000]))
    old = [f"w{i}" for i in range(V)]
    new = list(reversed(old)) + ["brand-new"]
    moved = model.remapped(old, new)
    np.testing.assert_array_equal(moved.rectify_data_product_[0],
                                  model.rectify_data_product_[V - 1])
    assert not moved.rectify_data_product_[V].any()
    np.testing.assert_array_equal(moved.rectify_probes_[0], model.rectify_probes_[V - 1])
