"""End-to-end: the composed pipeline recovers planted topics."""

import numpy as np
import pytest

from anchorstream.stats.cooccurrence import Cooccurrence, cooccurrence
from anchorstream.errors import InputError, NotFittedError
from anchorstream.evaluate import recovery_error
from anchorstream.model.pipeline import AnchorModel, ModelSettings
from anchorstream.synthetic import planted_model, population_cooccurrence, sample_documents

V, K = 120, 6


def population(truth, num_docs=10_000):
    """A Cooccurrence whose normalized matrix is exactly B R Bᵀ."""
    Q = population_cooccurrence(truth.topic_word, truth.topic_topic)
    return Cooccurrence(
        counts=Q * num_docs,
        unigram=Q.sum(axis=1) * num_docs * 50,
        doc_freq=np.full(truth.n_words, float(num_docs)),
        num_docs=num_docs,
        num_tokens=num_docs * 50,
    )


@pytest.fixture(scope="module")
def truth():
    return planted_model(V, K, anchor_mass=0.05, random_state=1)


@pytest.mark.parametrize("anchor_method", ["qr", "fast"])
@pytest.mark.parametrize("recover_method", ["admm", "l2", "kl", "inverse"])
@pytest.mark.parametrize("rectify", [True, False])
def test_population_matrix_recovers_planted_topics(truth, anchor_method, recover_method, rectify):
    model = AnchorModel(
        K, rectify=rectify, anchor_method=anchor_method, recover_method=recover_method,
        anchor_min_df=0, recover_tol=1e-10, recover_max_iter=5000,
    ).fit(population(truth))
    assert set(model.anchors_.tolist()) == set(truth.anchors.tolist())
    _, per_topic, _ = recovery_error(truth.topic_word, model.topic_word_)
    assert per_topic.max() < 1e-3
    np.testing.assert_allclose(model.topic_word_.sum(axis=0), 1.0, atol=1e-9)
    assert model.topic_topic_.shape == (K, K)
    np.testing.assert_allclose(model.prevalence_.sum(), 1.0, atol=1e-9)


@pytest.mark.parametrize("weights", ["chi2", "none"])
def test_either_recovery_weighting_recovers_planted_topics(truth, weights):
    model = AnchorModel(K, anchor_min_df=0, recover_weights=weights).fit(population(truth))
    assert model.get_params()["recover_weights"] == weights
    _, per_topic, _ = recovery_error(truth.topic_word, model.topic_word_)
    assert per_topic.max() < 1e-3


def test_auto_rectifier_is_low_rank_unless_the_recovery_reads_every_entry(truth):
    assert ModelSettings(K).rectify_method == "lowrank"
    assert ModelSettings(K, recover_method="l2").rectify_method == "lowrank"
    assert ModelSettings(K, recover_method="kl").rectify_method == "ap"
    assert ModelSettings(K, rectify_method="ap").rectify_method == "ap"
    model = AnchorModel(K, anchor_min_df=0).fit(population(truth))
    assert model.get_params()["rectify_method"] == "lowrank"  # recorded resolved
    assert model.rectify_data_ is None and model.rectify_factor_ is not None
    with pytest.raises(InputError, match="kl"):  # asked for explicitly, the pair is refused
        AnchorModel(K, anchor_min_df=0, rectify_method="lowrank",
                    recover_method="kl").fit(population(truth))


def test_error_falls_with_more_documents(truth):
    errors = []
    for n_docs in (500, 4000, 32000):
        X, _ = sample_documents(truth, n_docs, doc_length=60, random_state=n_docs)
        model = AnchorModel(K, anchor_min_df=0).fit(cooccurrence(X))
        errors.append(recovery_error(truth.topic_word, model.topic_word_)[0])
    assert errors[0] > errors[1] > errors[2], errors


def test_a_warm_refit_updates_the_rectification_and_agrees(truth):
    X, _ = sample_documents(truth, 20000, doc_length=10, random_state=3)
    settings = dict(anchor_min_df=0, rectify_tol=1e-8, rectify_dtype="float64")
    cold = AnchorModel(K, **settings).fit(cooccurrence(X[:19800]))
    full = cooccurrence(X)
    again_cold = AnchorModel(K, **settings).fit(full)
    warm = AnchorModel(K, **settings).fit(full, init=cold)
    # No alternating projection: a first-order update of the previous rectification.
    assert warm.n_iter_["rectify"] == 0 and again_cold.n_iter_["rectify"] > 10
    assert warm.rectify_warm_chain_ == 1 and 0 < warm.rectify_change_ < 0.05
    assert warm.rectify_residual_ == cold.rectify_residual_  # the state's cold fit's
    # Each anchor is the cold refit's, or the previous fit's kept by the warm search's margin.
    either = set(again_cold.anchors_.tolist()) | set(cold.anchors_.tolist())
    assert set(warm.anchors_.tolist()) <= either
    assert recovery_error(again_cold.topic_word_, warm.topic_word_)[0] < 0.02
    # The rectified core reproduces the matrix the topics were recovered from.
    np.testing.assert_allclose(warm.topic_word_.sum(axis=0), 1.0, atol=1e-9)


def test_a_chain_of_warm_refits_ends_with_a_cold_one(truth):
    X, _ = sample_documents(truth, 20000, doc_length=10, random_state=3)
    settings = dict(anchor_min_df=0, rectify_dtype="float64", rectify_warm_limit=2)
    model = AnchorModel(K, **settings).fit(cooccurrence(X[:19400]))
    assert model.rectify_warm_chain_ == 0 and model.n_iter_["rectify"] > 0
    for chain, n in enumerate((19600, 19800), start=1):
        model = AnchorModel(K, **settings).fit(cooccurrence(X[:n]), init=model)
        assert model.n_iter_["rectify"] == 0, n
        assert model.rectify_warm_chain_ == chain
    # The limit reached, the next rectification starts cold (the eigenvectors still seed it).
    model = AnchorModel(K, **settings).fit(cooccurrence(X), init=model)
    assert model.rectify_warm_chain_ == 0 and model.n_iter_["rectify"] > 0
    assert model.rectify_change_ == 0.0
    # rectify_warm_limit = 0: every refit rectifies cold.
    never = AnchorModel(K, **{**settings, "rectify_warm_limit": 0})
    never.fit(cooccurrence(X), init=model)
    assert never.n_iter_["rectify"] > 0 and never.rectify_warm_chain_ == 0


def test_warm_refits_follow_the_change_since_the_cold_fit(truth):
    X, _ = sample_documents(truth, 20000, doc_length=10, random_state=3)
    settings = dict(anchor_min_df=0, rectify_dtype="float64")
    cold = AnchorModel(K, **settings).fit(cooccurrence(X[:19400]))
    one = AnchorModel(K, **settings).fit(cooccurrence(X[:19700]), init=cold)
    # The state stays the cold rectification's: shared, not copied, and unchanged.
    assert one.rectify_data_ is cold.rectify_data_
    assert one.rectify_factor_ is cold.rectify_factor_
    assert one.rectify_shift_ == cold.rectify_shift_
    two = AnchorModel(K, **settings).fit(cooccurrence(X), init=one)
    assert two.rectify_warm_chain_ == 2 and two.rectify_change_ > one.rectify_change_
    # So the second update is the one a single update from the cold fit makes.
    direct = AnchorModel(K, **settings).fit(cooccurrence(X), init=cold)
    np.testing.assert_array_equal(two.eigvecs_, direct.eigvecs_)
    assert two.rectify_change_ == direct.rectify_change_
    # rectify_warm_change bounds that summed change.
    bound = (one.rectify_change_ + two.rectify_change_) / 2
    capped = AnchorModel(K, **settings, rectify_warm_change=bound)
    assert capped.fit(cooccurrence(X[:19700]), init=cold).rectify_warm_chain_ == 1
    again = capped.fit(cooccurrence(X), init=one)
    assert again.rectify_warm_chain_ == 0 and again.n_iter_["rectify"] > 0


def test_a_large_change_rectifies_cold(truth):
    X, _ = sample_documents(truth, 20000, doc_length=10, random_state=3)
    settings = dict(anchor_min_df=0, rectify_dtype="float64")
    small = AnchorModel(K, **settings).fit(cooccurrence(X[:2000]))
    big = AnchorModel(K, **settings).fit(cooccurrence(X), init=small)
    assert big.n_iter_["rectify"] > 0 and big.rectify_warm_chain_ == 0


def test_absent_words_get_zero_rows(truth):
    X, _ = sample_documents(truth, 3000, doc_length=60, random_state=4)
    X = X.tolil()
    X[:, V - 1] = 0  # a word nobody uses
    model = AnchorModel(K, anchor_min_df=0).fit(cooccurrence(X.tocsr()))
    assert np.all(model.topic_word_[V - 1] == 0)
    assert V - 1 not in model.anchors_


def test_remapped_moves_warm_start_by_word(truth):
    X, _ = sample_documents(truth, 3000, doc_length=60, random_state=5)
    # The dense rectifier, whose warm state holds the data itself.
    model = AnchorModel(K, anchor_min_df=0, rectify_method="ap").fit(cooccurrence(X))
    old = [f"w{i}" for i in range(V)]
    new = list(reversed(old)) + ["brand-new"]
    moved = model.remapped(old, new)
    assert moved.topic_word_.shape == (V + 1, K)
    np.testing.assert_array_equal(moved.topic_word_[0], model.topic_word_[V - 1])
    assert np.all(moved.coef_[V] == 0)
    assert [new[a] for a in moved.anchors_] == [old[a] for a in model.anchors_]
    # The rectification's state moves too: zeros for the new word.
    np.testing.assert_array_equal(moved.rectify_factor_[0], model.rectify_factor_[V - 1])
    assert np.all(moved.rectify_factor_[V] == 0)
    assert moved.rectify_data_.shape == (V + 1, V + 1)
    assert moved.rectify_data_[0, 1] == model.rectify_data_[V - 1, V - 2]
    assert not moved.rectify_data_[V].any() and not moved.rectify_data_[:, V].any()
    # The same words (another list of them): every array as it was, the data shared.
    kept = model.remapped(old, list(old))
    np.testing.assert_array_equal(kept.topic_word_, model.topic_word_)
    np.testing.assert_array_equal(kept.rectify_factor_, model.rectify_factor_)
    np.testing.assert_array_equal(kept.anchors_, model.anchors_)
    assert kept.anchors_ is not model.anchors_
    assert kept.rectify_data_ is model.rectify_data_


def test_bad_settings_and_inputs_are_named():
    with pytest.raises(InputError, match="rectify_warm_change must be in"):
        AnchorModel(3, rectify_warm_change=-0.1)
    with pytest.raises(InputError, match="recover_method must be one of"):
        AnchorModel(3, recover_method="magic")
    with pytest.raises(InputError, match="recover_weights must be one of"):
        AnchorModel(3, recover_weights="tfidf")
    with pytest.raises(InputError, match="rectify_warm_limit must be None or an integer >= 0"):
        AnchorModel(3, rectify_warm_limit=-1)
    with pytest.raises(InputError, match="n_topics"):
        AnchorModel(0)
    with pytest.raises(NotFittedError):
        AnchorModel(3).top_words()
    with pytest.raises(InputError, match="expects a Cooccurrence"):
        AnchorModel(3).fit(np.eye(4))
    tiny = Cooccurrence.zeros(4)
    with pytest.raises(InputError, match="no documents"):
        AnchorModel(3).fit(tiny)


def test_overwriting_the_cooccurrence_gives_the_same_model(truth):
    X, _ = sample_documents(truth, 2000, doc_length=30, random_state=8)
    keep = AnchorModel(K, anchor_min_df=0).fit(cooccurrence(X))
    cooc = cooccurrence(X)
    counts = cooc.counts
    mine = AnchorModel(K, anchor_min_df=0).fit(cooc, overwrite_cooc=True)
    np.testing.assert_array_equal(mine.topic_word_, keep.topic_word_)
    np.testing.assert_array_equal(mine.anchors_, keep.anchors_)
    # The fit worked in the counts' memory (they now hold an intermediate matrix).
    assert not np.array_equal(counts, cooccurrence(X).counts)


def test_a_fit_without_warm_state_gives_the_same_model_and_keeps_no_data(truth):
    X, _ = sample_documents(truth, 2000, doc_length=30, random_state=9)
    dense = dict(anchor_min_df=0, rectify_method="ap")  # its warm state is the data itself
    warm = AnchorModel(K, **dense).fit(cooccurrence(X))
    once = AnchorModel(K, **dense).fit(cooccurrence(X), warm_state=False)
    assert warm.rectify_data_ is not None and once.rectify_data_ is None
    np.testing.assert_array_equal(once.topic_word_, warm.topic_word_)
    np.testing.assert_array_equal(once.anchors_, warm.anchors_)
    # A refit from it rectifies cold, its eigenvectors seeding the eigensolver.
    again = AnchorModel(K, anchor_min_df=0).fit(cooccurrence(X), init=once)
    assert recovery_error(warm.topic_word_.T, again.topic_word_.T)[0] < 0.05
