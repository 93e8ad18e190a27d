"""Pair-likelihood refinement (anchorstream/model/refine.py): EM never lowers the likelihood, and
from an exact population matrix it keeps the topics the anchor pipeline recovered."""

from __future__ import annotations

import copy
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.evaluate import recovery_error
from anchorstream.model.lowrank import DocumentCooccurrence
from anchorstream.model.pipeline import AnchorModel
from anchorstream.model.refine import (
    REFINE_AUTO_MAX_LENGTH,
    REFINE_SMOOTHING,
    REFINE_WARM_MAX_ITER,
    PairCounts,
    pair_counts,
    pair_em_step,
    pair_loglik,
    refine_method_for,
    refine_topics,
    smoothed_start,
)
from anchorstream.stats.cooccurrence import Cooccurrence, cooccurrence
from anchorstream.stats.sparse import SparseCooccurrence
from anchorstream.synthetic import planted_model, population_cooccurrence, sample_documents
from anchorstream.text.tokenize import count_matrix
from anchorstream.text.windows import window_documents


def population(B, R, num_docs=10_000):
    Q = population_cooccurrence(B, R)
    return Cooccurrence(counts=Q * num_docs, unigram=Q.sum(axis=1) * num_docs * 50,
                        doc_freq=np.full(B.shape[0], float(num_docs)), num_docs=num_docs,
                        num_tokens=num_docs * 50)


@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    V = draw(st.integers(2, 12))
    K = draw(st.integers(1, 4))
    density = draw(st.sampled_from([0.2, 0.5, 1.0]))
    A = rng.random((V, V)) * (rng.random((V, V)) < density)
    A[0, 0] = 1.0  # at least one pair
    C = np.triu(A) + np.triu(A, 1).T
    B = rng.random((V, K)) * (rng.random((V, K)) < 0.7)
    B[:, B.sum(axis=0) == 0] = 1.0
    B /= B.sum(axis=0)
    R = rng.random((K, K))
    R = (R + R.T) * (rng.random((K, K)) < 0.8)
    R = R + R.T + np.diag(np.full(K, 0.1))
    R /= R.sum()
    method = draw(st.sampled_from(["pairs", "joint"]))
    smoothing = draw(st.sampled_from([0.0, 1e-3, 0.1]))
    accelerate = draw(st.booleans())
    return C, B, R, method, smoothing, accelerate


@settings(max_examples=200)
@given(problems())
def test_em_never_decreases_the_pair_loglik(problem):
    # Plain EM by its nature; SQUAREM because it keeps an extrapolated point only where it
    # gains over the two plain steps it extrapolates.
    C, B, R, method, smoothing, accelerate = problem
    pairs = pair_counts(C)
    fit = refine_topics(pairs, B, R, method=method, max_iter=12, tol=0.0,
                        smoothing=smoothing, accelerate=accelerate)
    trace = np.array(fit.loglik)
    finite = trace[np.isfinite(trace)]
    # Once finite it stays finite, and each step gains (up to rounding).
    assert np.all(np.isfinite(trace[np.argmax(np.isfinite(trace)):])) or finite.size == 0
    # (The E-step runs in float32: up to its rounding, ~1e-7 of each pair's log-probability.
    # The pairs' weights sum to 1, so that is ~1e-7 absolute where the log-likelihood is
    # near 0, e.g. -0.0057 on two words whose pairs are almost all one pair.)
    assert np.all(np.diff(finite) >= -1e-6 * np.maximum(np.abs(finite[1:]), 1.0) - 1e-12)
    assert np.allclose(fit.topic_word.sum(axis=0), 1.0)
    assert np.isclose(fit.topic_topic.sum(), 1.0) and fit.topic_topic.min() >= 0
    if smoothing > 0:
        assert np.all(np.isfinite(trace))


def test_pair_counts_agree_across_inputs(rng):
    truth = planted_model(40, 3, random_state=0)
    X, _ = sample_documents(truth, 300, doc_length=8, random_state=0)
    cooc = cooccurrence(X, length_cap=25)
    dense = pair_counts(cooc.counts)
    assert np.isclose(dense.dense().sum(), 1.0)
    np.testing.assert_allclose(dense.dense(), cooc.normalized(), rtol=1e-12, atol=1e-15)
    for other in (pair_counts(sp.csr_matrix(cooc.counts)),
                  pair_counts(SparseCooccurrence.from_dense(cooc)),
                  pair_counts(DocumentCooccurrence(X, length_cap=25))):
        np.testing.assert_array_equal(other.indptr, dense.indptr)
        np.testing.assert_array_equal(other.indices, dense.indices)
        np.testing.assert_allclose(other.data, dense.data, rtol=1e-12)
    np.testing.assert_allclose(dense.unigram(), cooc.normalized().sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("method", ["pairs", "joint"])
def test_refinement_keeps_planted_topics_from_the_population_matrix(method):
    truth = planted_model(120, 6, anchor_mass=0.05, random_state=1)
    # The biterm mixture's population has each pair from one topic: R = diag(prevalence).
    R = truth.topic_topic if method == "joint" else np.diag(truth.topic_topic.sum(axis=1))
    cooc = population(truth.topic_word, R)
    model = AnchorModel(6, anchor_min_df=0).fit(cooc)
    before, _, _ = recovery_error(truth.topic_word, model.topic_word_)
    assert before < 1e-3
    pairs = pair_counts(cooc.counts)
    # Every start is smoothed (smoothed_start), which moves each topic by at most
    # 2 * REFINE_SMOOTHING; from there EM comes back towards the planted topics: all the way
    # for the biterm mixture, whose factorization is unique, and part of the way for joint,
    # where other factorizations B A Bᵀ of the same matrix lie near the smoothed start.
    smoothed, _, _ = recovery_error(truth.topic_word, smoothed_start(pairs, model.topic_word_))
    assert smoothed > before
    fit = refine_topics(pairs, model.topic_word_, model.topic_topic_, method=method)
    after, per_topic, _ = recovery_error(truth.topic_word, fit.topic_word)
    assert after < smoothed, (before, smoothed, after, fit.n_iter)
    assert per_topic.max() < (1e-3 if method == "pairs" else 2 * REFINE_SMOOTHING), (
        before, smoothed, after, fit.n_iter)
    # The topics keep the anchor model's order, which follows its anchors.
    order = np.argsort([list(model.anchors_).index(a) for a in truth.anchors])
    atol = 1e-4 if method == "pairs" else 2 * REFINE_SMOOTHING * R.max()
    np.testing.assert_allclose(fit.topic_topic[np.ix_(order, order)], R, atol=atol)


def test_refinement_raises_the_loglik_of_a_sampled_corpus():
    truth = planted_model(200, 5, random_state=0)
    X, _ = sample_documents(truth, 3000, doc_length=6, random_state=0)
    cooc = cooccurrence(X, length_cap=25)
    model = AnchorModel(5, anchor_min_df=0, refine="none").fit(cooc)
    pairs = pair_counts(cooc.counts)
    fit = refine_topics(pairs, model.topic_word_, model.topic_topic_, method="joint",
                        smoothing=0.0)
    start = pair_loglik(pairs, model.topic_word_, model.topic_topic_)
    # The trace's first point is the first E-step's, which runs in float32.
    assert fit.loglik[0] == pytest.approx(start, rel=1e-6)
    assert fit.loglik[-1] > start
    assert 1 <= fit.n_iter <= 50
    # Without the final log-likelihood: the same point, the trace one shorter.
    bare = refine_topics(pairs, model.topic_word_, model.topic_topic_, method="joint",
                         smoothing=0.0, final_loglik=False)
    np.testing.assert_array_equal(bare.topic_word, fit.topic_word)
    assert bare.loglik == fit.loglik[:-1] and bare.n_iter == fit.n_iter


@pytest.mark.parametrize("method", ["pairs", "joint"])
def test_squarem_reaches_a_higher_loglik_than_plain_em_in_as_many_passes(method):
    truth = planted_model(300, 8, random_state=3)
    X, _ = sample_documents(truth, 4000, doc_length=6, random_state=3)
    cooc = cooccurrence(X, length_cap=25)
    model = AnchorModel(8, anchor_min_df=0, refine="none").fit(cooc)
    pairs = pair_counts(cooc.counts)
    runs = {acc: refine_topics(pairs, model.topic_word_, model.topic_topic_, method=method,
                               max_iter=30, tol=0.0, accelerate=acc) for acc in (False, True)}
    plain, fast = runs[False], runs[True]
    assert plain.n_iter == fast.n_iter == 30
    # Plain EM needs half as many passes again to reach where SQUAREM is after 30.
    longer = refine_topics(pairs, model.topic_word_, model.topic_topic_, method=method,
                           max_iter=45, tol=0.0, accelerate=False)
    assert fast.loglik[-1] > plain.loglik[-1]
    assert fast.loglik[-1] >= longer.loglik[-1] - 1e-9 * abs(longer.loglik[-1]), (
        plain.loglik[-1], longer.loglik[-1], fast.loglik[-1])
    np.testing.assert_allclose(fast.topic_word.sum(axis=0), 1.0)
    assert fast.topic_word.min() >= 0 and fast.topic_topic.min() >= 0
    np.testing.assert_allclose(fast.topic_topic, fast.topic_topic.T)


@pytest.mark.parametrize("method", ["joint", "pairs"])
def test_a_topic_no_pair_is_given_to_keeps_its_words(method):
    # Topic 1 lives on words 2 and 3, which are in no pair: its expected count is 0, so its
    # column keeps its input while topic 0's is normalized.
    C = np.zeros((4, 4))
    C[0, 0], C[0, 1], C[1, 0], C[1, 1] = 0.2, 0.3, 0.3, 0.2
    B = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.4], [0.0, 0.6]])
    R = np.array([[0.6, 0.0], [0.0, 0.4]])
    B1, R1, ll = pair_em_step(pair_counts(C), B, R, method)
    np.testing.assert_array_equal(B1[:, 1], B[:, 1])
    np.testing.assert_allclose(B1[:, 0].sum(), 1.0)
    assert np.isfinite(ll) and R1[1, 1] == 0.0


def test_extrapolation_stays_positive_where_em_shrinks_an_entry():
    from anchorstream.model.refine import _extrapolate

    x0 = np.array([0.5, 0.3, 0.2, 0.0])
    x1 = np.array([0.6, 0.3, 0.1, 0.0])
    x2 = np.array([0.66, 0.3, 0.04, 0.0])
    out = _extrapolate(x0, x1, x2, -3.0)
    linear = x0 + 6.0 * (x1 - x0) + 9.0 * (x2 - 2 * x1 + x0)
    assert linear[2] < 0  # the plain extrapolation overshoots...
    assert 0 < out[2] < x2[2]  # ...its logarithms do not, and the entry keeps shrinking
    np.testing.assert_allclose(out[[0, 1]], linear[[0, 1]])
    assert out[3] == 0.0  # a zero stays zero
    assert _extrapolate(x0, x1, x2, -1.0) == pytest.approx(x2)


@pytest.fixture(scope="module")
def refit_problem():
    """A first joint-refined fit on 19,800 planted short documents, and the counts of those
    and 200 more: ``(first, cooc)``."""
    truth = planted_model(600, 10, random_state=2)
    X, _ = sample_documents(truth, 20_000, doc_length=6, random_state=2)
    first = AnchorModel(10, anchor_min_df=0, refine="joint").fit(
        cooccurrence(X[:19_800], length_cap=25))
    return first, cooccurrence(X, length_cap=25)


def test_a_refit_refines_from_the_previous_refinement_in_few_passes(refit_problem):
    first, cooc = refit_problem
    cold = AnchorModel(10, anchor_min_df=0, refine="joint").fit(cooc)
    warm = AnchorModel(10, anchor_min_df=0, refine="joint").fit(cooc, init=first)
    assert set(warm.anchors_) == set(first.anchors_)
    # 1% more documents: the warm refinement stops after far fewer passes, near the cold one
    # (EM from two starts settles on two points of a flat optimum: 3e-4 apart here).
    assert warm.n_iter_["refine"] <= cold.n_iter_["refine"] // 2, (warm.n_iter_, cold.n_iter_)
    assert warm.refine_loglik_[1] >= cold.refine_loglik_[1] - 1e-3 * abs(cold.refine_loglik_[1])
    error, _, _ = recovery_error(cold.topic_word_, warm.topic_word_)
    assert error < 0.1
    assert warm.n_iter_["refine"] <= REFINE_WARM_MAX_ITER
    # refine_warm_max_iter 0: the refit refines from its own anchor model, as a cold fit.
    again = AnchorModel(10, anchor_min_df=0, refine="joint", refine_warm_max_iter=0).fit(
        cooc, init=first)
    assert again.n_iter_["refine"] > REFINE_WARM_MAX_ITER
    # A refit that rectifies cold (rectify_warm_limit 0: every one) refines cold as well, so no
    # warm path outlives the cold rectification that ends a chain of warm updates.
    recold = AnchorModel(10, anchor_min_df=0, refine="joint", rectify_warm_limit=0).fit(
        cooc, init=first)
    assert recold.n_iter_["rectify"] > 0 and warm.n_iter_["rectify"] == 0
    assert recold.n_iter_["refine"] > REFINE_WARM_MAX_ITER
    with pytest.raises(InputError, match="refine_warm_max_iter"):
        AnchorModel(10, refine_warm_max_iter=-1)


def test_a_refit_with_a_new_anchor_refines_it_longer(refit_problem):
    first, cooc = refit_problem

    def refit(init, **settings):
        return AnchorModel(10, anchor_min_df=0, refine="joint", **settings).fit(cooc, init=init)

    # Every anchor kept: refine_warm_max_iter passes, whatever refine_warm_new_max_iter says.
    kept = refit(first, refine_warm_new_max_iter=7)
    assert set(kept.anchors_) == set(first.anchors_)
    assert kept.n_iter_["refine"] <= REFINE_WARM_MAX_ITER
    # One topic's anchor new (the previous model's anchor of topic 0 replaced by a word that
    # is no anchor, so no topic of the refit starts from its refinement): up to
    # refine_warm_new_max_iter passes, and no more.
    moved = copy.copy(first)
    moved.anchors_ = first.anchors_.copy()
    moved.anchors_[0] = next(w for w in range(600) if w not in set(first.anchors_.tolist()))
    longer = refit(moved, refine_warm_new_max_iter=7)
    assert len(set(longer.anchors_) & set(moved.anchors_)) == 9
    assert REFINE_WARM_MAX_ITER < longer.n_iter_["refine"] <= 7
    # Never fewer passes than refine_warm_max_iter.
    assert refit(moved, refine_warm_max_iter=4, refine_warm_new_max_iter=0).n_iter_["refine"] == 4
    with pytest.raises(InputError, match="refine_warm_new_max_iter"):
        AnchorModel(10, refine_warm_new_max_iter=-1)


def test_auto_refines_short_documents_only():
    assert refine_method_for("auto", 10, 10 * (REFINE_AUTO_MAX_LENGTH - 0.5)) == "joint"
    assert refine_method_for("auto", 10, 10 * REFINE_AUTO_MAX_LENGTH) == "none"
    assert refine_method_for("auto", 0, 0) == "none"
    for method in ("none", "pairs", "joint"):
        assert refine_method_for(method, 10, 10_000) == method
    with pytest.raises(InputError, match="refine must be one of"):
        refine_method_for("biterm", 10, 60)


@pytest.mark.parametrize("doc_length, expected", [(6, "joint"), (40, "none")])
def test_the_default_refines_by_the_mean_document_length(doc_length, expected):
    truth = planted_model(200, 5, random_state=0)
    X, _ = sample_documents(truth, 1500, doc_length=doc_length, random_state=0)
    cooc = cooccurrence(X, length_cap=25)
    model = AnchorModel(5, anchor_min_df=0).fit(cooc)
    assert model.settings.refine == "auto" and model.refine_ == expected
    assert ("refine" in model.n_iter_) == (expected != "none")
    assert ("refine" in model.timings_) == (expected != "none")
    if expected == "joint":
        assert model.refine_loglik_[1] >= model.refine_loglik_[0]
        # The same fit as asking for joint by name.
        named = AnchorModel(5, anchor_min_df=0, refine="joint").fit(cooc)
        np.testing.assert_allclose(model.topic_word_, named.topic_word_)
        # The daemon's fit, without the log-likelihood: the same topics.
        bare = AnchorModel(5, anchor_min_df=0).fit(cooc, refine_loglik=False)
        assert bare.refine_loglik_ is None
        np.testing.assert_array_equal(bare.topic_word_, model.topic_word_)
    else:
        assert model.refine_loglik_ is None


def _token_lists(X, rng):
    """Each row of a count matrix as a shuffled token list (a planted document's words are
    exchangeable, so any order is one its model could have written)."""
    docs = []
    for d in range(X.shape[0]):
        row = X.getrow(d)
        words = np.repeat(row.indices, row.data.astype(np.int64))
        docs.append([str(w) for w in rng.permutation(words)])
    return docs


def test_the_refinement_counts_its_pairs_where_it_is_told():
    truth = planted_model(200, 5, random_state=3)
    X, _ = sample_documents(truth, 3000, doc_length=40, random_state=3)
    cooc = cooccurrence(X, length_cap=25)
    plain = AnchorModel(5, anchor_min_df=0, refine="joint").fit(cooc)
    # The same co-occurrence given as the refinement's: the same fit, dense or implicit.
    same = AnchorModel(5, anchor_min_df=0, refine="joint").fit(cooc, refine_cooc=cooc)
    np.testing.assert_allclose(same.topic_word_, plain.topic_word_, rtol=1e-9, atol=0)
    docs = DocumentCooccurrence(X, length_cap=25)
    lowrank = AnchorModel(5, anchor_min_df=0, refine="joint", rectify_method="lowrank")
    a = lowrank.fit(docs, warm_state=False).topic_word_.copy()
    b = lowrank.fit(docs, warm_state=False, refine_cooc=docs).topic_word_
    np.testing.assert_array_equal(a, b)
    # Windows of 8 tokens: auto decides by the windows' length (8, so it refines, where the
    # whole 40-token documents are not refined), and the refined topics are the planted ones.
    vocab = [str(w) for w in range(200)]
    Xw = count_matrix(window_documents(_token_lists(X, np.random.default_rng(3)), 8), vocab)
    windowed = DocumentCooccurrence(Xw, length_cap=25)
    assert windowed.num_tokens == cooc.num_tokens and windowed.num_docs == 5 * cooc.num_docs
    whole = AnchorModel(5, anchor_min_df=0).fit(cooc)
    model = AnchorModel(5, anchor_min_df=0).fit(cooc, refine_cooc=windowed)
    assert whole.refine_ == "none" and model.refine_ == "joint"
    assert model.refine_loglik_[1] > model.refine_loglik_[0]
    np.testing.assert_array_equal(model.anchors_, whole.anchors_)
    before, _, _ = recovery_error(truth.topic_word, whole.topic_word_)
    after, per_topic, _ = recovery_error(truth.topic_word, model.topic_word_)
    # (0.146 -> 0.093 here: the windows' pairs are a planted document's pairs too.)
    assert after < before and per_topic.max() < 0.15, (before, after, per_topic)
    with pytest.raises(InputError, match="refine_cooc has 10 words, the fit 200"):
        AnchorModel(5, anchor_min_df=0).fit(cooc, refine_cooc=DocumentCooccurrence(X[:, :10]))
    with pytest.raises(InputError, match="refine_cooc must be a co-occurrence"):
        AnchorModel(5, anchor_min_df=0).fit(cooc, refine_cooc=X)


def test_bad_arguments_are_named():
    pairs = pair_counts(np.eye(3))
    B, R = np.full((3, 2), 1 / 3), np.full((2, 2), 0.25)
    with pytest.raises(InputError, match="method"):
        refine_topics(pairs, B, R, method="biterm")
    with pytest.raises(InputError, match="topic_word"):
        refine_topics(pairs, B[:2], R)
    with pytest.raises(InputError, match="topic_topic"):
        pair_em_step(pairs, B, np.ones((3, 3)))
    with pytest.raises(InputError, match="smoothing"):
        refine_topics(pairs, B, R, smoothing=1.0)
    with pytest.raises(InputError, match="no pair"):
        pair_counts(np.zeros((3, 3)))
    with pytest.raises(InputError, match="square"):
        pair_counts(np.ones((2, 3)))
    assert isinstance(pairs, PairCounts) and pairs.nnz == 3


def _small_sample_fit(seed=0, n_train=150, n_valid=1500, V=60, K=4):
    """An anchor model fitted on few short documents of a planted model, the pairs of those
    documents and of documents left out: the setting where the pair EM overfits."""
    truth = planted_model(V, K, random_state=seed)
    X, _ = sample_documents(truth, n_train + n_valid, doc_length=8, random_state=seed + 1)
    train = DocumentCooccurrence(X[:n_train])
    model = AnchorModel(K, anchor_min_df=0, refine="none").fit(train)
    return (pair_counts(train), pair_counts(DocumentCooccurrence(X[n_train:])),
            model.topic_word_, model.topic_topic_)


@pytest.mark.parametrize("seed", range(4))
def test_validation_returns_the_best_point_of_its_trace(seed):
    # Early stopping on left-out documents: the result is the point where their likelihood
    # was best, the same as running that many passes without a validation set, and it stops
    # before the EM converges on the training pairs.
    pairs, valid, B, R = _small_sample_fit(seed)
    fit = refine_topics(pairs, B, R, method="joint", validation=valid, tol=0.0, max_iter=60)
    passes, lls = zip(*fit.validation)
    best = int(np.argmax(lls))
    assert fit.n_iter == passes[best] < 60
    # It stopped `patience` (2) points after its best, or at max_iter.
    assert len(lls) - 1 - best == 2
    again = refine_topics(pairs, B, R, method="joint", tol=0.0, max_iter=fit.n_iter)
    np.testing.assert_allclose(fit.topic_word, again.topic_word, rtol=1e-10, atol=1e-14)
    assert fit.loglik[-1] == pytest.approx(again.loglik[-1])
    # On these 150 documents of 8 words the EM's own optimum is worse on left-out documents.
    full = refine_topics(pairs, B, R, method="joint", tol=0.0, max_iter=60, validation=valid,
                         patience=60)
    assert full.validation[-1][0] == 60 and full.validation[-1][1] < lls[best]


def test_validation_on_the_training_pairs_never_stops_early():
    # EM never lowers the training likelihood, so a validation set equal to the training
    # pairs improves at every point and the run is the one without validation.
    pairs, _, B, R = _small_sample_fit(1)
    for accelerate in (False, True):
        plain = refine_topics(pairs, B, R, max_iter=12, tol=0.0, accelerate=accelerate)
        held = refine_topics(pairs, B, R, max_iter=12, tol=0.0, accelerate=accelerate,
                             validation=pairs)
        assert held.n_iter == plain.n_iter == 12
        np.testing.assert_array_equal(held.topic_word, plain.topic_word)
        lls = [ll for _, ll in held.validation]
        assert all(b > a for a, b in zip(lls, lls[1:]))


def test_validation_arguments_are_checked():
    pairs = pair_counts(np.eye(3))
    B, R = np.full((3, 2), 1 / 3), np.full((2, 2), 0.25)
    with pytest.raises(InputError, match="validation pairs are over 4 words"):
        refine_topics(pairs, B, R, validation=pair_counts(np.eye(4)))
    with pytest.raises(InputError, match="patience"):
        refine_topics(pairs, B, R, validation=pairs, patience=0)


