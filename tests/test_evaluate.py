"""Evaluation metrics (anchorstream.evaluate) against hand-computed values and planted models."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.evaluate as ev
import anchorstream.evaluate.jsmf as ev_jsmf
from anchorstream.errors import InputError
from anchorstream.synthetic import planted_model, population_cooccurrence, sample_documents

# A reference corpus small enough to count by hand. Words: a=0 b=1 c=2 d=3 e=4 (e never occurs).
#   doc 0: a b        doc 1: a b c (a twice)        doc 2: a c        doc 3: d
# D(a)=3 D(b)=2 D(c)=2 D(d)=1 D(e)=0; D(a,b)=2 D(a,c)=2 D(b,c)=1, every pair with d or e is 0.
A, B_, C_, D_, E_ = range(5)
REF = sp.csr_matrix(
    np.array(
        [
            [1, 1, 0, 0, 0],
            [2, 1, 1, 0, 0],
            [1, 0, 1, 0, 0],
            [0, 0, 0, 3, 0],
        ],
        dtype=float,
    )
)
N_DOCS = 4


@pytest.fixture(scope="module")
def truth():
    return planted_model(120, 6, random_state=5)


# --- top words, coherence ------------------------------------------------------------------


def test_top_words_order_and_ties():
    B = np.array([[0.2, 0.1], [0.5, 0.1], [0.2, 0.8], [0.1, 0.0]])
    np.testing.assert_array_equal(ev.top_words(B, 3), [[1, 0, 2], [2, 0, 1]])
    assert ev.top_words(B, 10).shape == (2, 4)  # more than the vocabulary gives all words
    with pytest.raises(InputError):
        ev.top_words(B, 0)


def test_npmi_by_hand():
    top = np.array([[A, B_, C_], [D_, A, B_]])
    got = ev.npmi_coherence(top, REF)
    npmi_ab = math.log(0.5 / (0.75 * 0.5)) / -math.log(0.5)
    npmi_ac = math.log(0.5 / (0.75 * 0.5)) / -math.log(0.5)
    npmi_bc = math.log(0.25 / (0.5 * 0.5)) / -math.log(0.25)  # independent: 0
    expected = [
        (npmi_ab + npmi_ac + npmi_bc) / 3,
        (-1.0 + -1.0 + npmi_ab) / 3,  # d never co-occurs with a or b
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_npmi_edge_conventions():
    # Words absent from the reference corpus score -1 with everything.
    np.testing.assert_allclose(ev.npmi_coherence(np.array([[E_, A]]), REF), [-1.0])
    # Two words present in every document: perfect co-occurrence, NPMI 1 (not 0/0).
    every = sp.csr_matrix(np.ones((3, 2)))
    np.testing.assert_allclose(ev.npmi_coherence(np.array([[0, 1]]), every), [1.0])


def test_umass_by_hand():
    # Pairs (l < m) condition on the earlier, more probable word v_l: log((D(v_m,v_l)+1)/D(v_l)).
    top = np.array([[B_, A, C_], [A, D_, B_]])
    got = ev.umass_coherence(top, REF)
    expected = [
        (math.log((2 + 1) / 2) + math.log((1 + 1) / 2) + math.log((2 + 1) / 3)) / 3,
        (math.log((0 + 1) / 3) + math.log((2 + 1) / 3) + math.log((0 + 1) / 1)) / 3,
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_umass_epsilon_and_absent_conditioning_word():
    got = ev.umass_coherence(np.array([[E_, A, B_]]), REF, epsilon=0.01)
    # (e, a) and (e, b) condition on e, absent: the floor log(eps / N); (a, b): log((2+eps)/3).
    expected = (2 * math.log(0.01 / N_DOCS) + math.log((2 + 0.01) / 3)) / 3
    np.testing.assert_allclose(got, [expected], rtol=1e-12)


def test_coherence_ignores_word_repetition_and_accepts_dense():
    binary = (REF > 0).astype(float)
    top = np.array([[A, B_, C_, D_]])
    np.testing.assert_allclose(ev.npmi_coherence(top, binary), ev.npmi_coherence(top, REF))
    np.testing.assert_allclose(ev.umass_coherence(top, REF.toarray()), ev.umass_coherence(top, REF))


def test_coherence_matches_a_pairwise_loop(truth, rng):
    X, _ = sample_documents(truth, 300, doc_length=30, random_state=1)
    top = ev.top_words(truth.topic_word, 8)
    Xb = X.toarray() > 0
    n_docs = X.shape[0]
    for k in range(top.shape[0]):
        npmi, umass = [], []
        for i in range(8):
            for j in range(i + 1, 8):
                wi, wj = top[k, i], top[k, j]
                dij = np.sum(Xb[:, wi] & Xb[:, wj])
                di, dj = Xb[:, wi].sum(), Xb[:, wj].sum()
                pij, pi, pj = dij / n_docs, di / n_docs, dj / n_docs
                npmi.append(-1.0 if dij == 0 else math.log(pij / (pi * pj)) / -math.log(pij))
                umass.append(math.log((dij + 1) / di))
        assert ev.npmi_coherence(top, X)[k] == pytest.approx(np.mean(npmi), rel=1e-12)
        assert ev.umass_coherence(top, X)[k] == pytest.approx(np.mean(umass), rel=1e-12)


@pytest.mark.parametrize(
    "top",
    [
        np.array([[0]]),  # one word: no pairs
        np.array([[0, 0]]),  # a repeated word
        np.array([[0, 9]]),  # out of the vocabulary
        np.array([[-1, 2]]),
        np.array([0, 1]),  # not (n_topics, n)
    ],
)
def test_coherence_rejects_bad_top_words(top):
    with pytest.raises(InputError):
        ev.npmi_coherence(top, REF)


def test_unique_word_ratio_and_dissimilarity():
    top = np.array([[0, 1, 2], [2, 3, 4], [5, 6, 0]])
    assert ev.unique_word_ratio(top) == pytest.approx(7 / 9)
    np.testing.assert_array_equal(ev.topic_dissimilarity(top), [1, 2, 2])


# --- recovery error, held-out likelihood --------------------------------------------------


def test_recovery_error_is_invariant_to_topic_order(truth, rng):
    B = truth.topic_word
    noisy = B + rng.uniform(0, 0.002, size=B.shape)
    noisy /= noisy.sum(axis=0, keepdims=True)
    mean, per_topic, matching = ev.recovery_error(B, noisy)
    perm = rng.permutation(B.shape[1])
    mean_p, per_topic_p, matching_p = ev.recovery_error(B, noisy[:, perm])
    assert mean_p == pytest.approx(mean, rel=1e-12)
    np.testing.assert_allclose(per_topic_p, per_topic, rtol=1e-12)
    np.testing.assert_array_equal(perm[matching_p], matching)
    np.testing.assert_array_equal(matching, np.arange(B.shape[1]))
    np.testing.assert_allclose(per_topic, np.abs(B - noisy).sum(axis=0), rtol=1e-12)
    assert ev.recovery_error(B, B[:, perm])[0] == 0.0


def test_recovery_error_shape_mismatch():
    with pytest.raises(InputError, match="shape"):
        ev.recovery_error(np.ones((5, 3)), np.ones((5, 2)))  # a true topic without estimate
    with pytest.raises(InputError, match="same words"):
        ev.recovery_error(np.ones((5, 2)), np.ones((4, 2)))


def test_recovery_error_with_more_estimates_scores_the_matched_ones(truth, rng):
    """Extra estimated topics (a fit with K above the truth's) are left out of the mean, and
    each true topic is matched to its own estimate."""
    B = truth.topic_word
    V, K = B.shape
    extra = rng.dirichlet(np.full(V, 0.1), size=3).T
    perm = rng.permutation(K + 3)
    est = np.hstack([B, extra])[:, perm]
    mean, per_topic, matching = ev.recovery_error(B, est)
    assert mean == 0.0
    np.testing.assert_array_equal(perm[matching], np.arange(K))
    # A duplicate of true topic 0 cannot serve two true topics: topic 1 pays for it.
    dup = np.hstack([B[:, [0, 0]], B[:, 2:], extra])
    mean, per_topic, _ = ev.recovery_error(B, dup)
    assert per_topic[0] == 0.0 and per_topic[1] > 0.0
    assert mean == pytest.approx(per_topic.mean())


def test_heldout_true_model_beats_uniform_and_wrong_models(truth):
    X, _ = sample_documents(truth, 300, doc_length=60, random_state=2)
    V, K = truth.topic_word.shape
    ll_true = ev.heldout_log_likelihood(truth.topic_word, X, random_state=0)
    ll_uniform = ev.heldout_log_likelihood(np.full((V, 1), 1.0 / V), X, random_state=0)
    other = planted_model(V, K, random_state=99).topic_word
    ll_other = ev.heldout_log_likelihood(other, X, random_state=0)
    assert ll_uniform == pytest.approx(-math.log(V), rel=1e-12)
    assert ll_true > ll_other > -np.inf
    assert ll_true > ll_uniform + 0.3


def test_heldout_seeded_per_doc_and_short_documents(truth):
    X, _ = sample_documents(truth, 50, doc_length=20, random_state=3)
    X = sp.vstack([X, sp.csr_matrix(([1.0], ([0], [4])), shape=(1, X.shape[1]))]).tocsr()
    a, per_doc = ev.heldout_log_likelihood(truth.topic_word, X, random_state=7, return_per_doc=True)
    b = ev.heldout_log_likelihood(truth.topic_word, X, random_state=7)
    assert a == b
    assert per_doc.shape == (51,)
    assert np.isnan(per_doc[-1])  # one token: nothing to split, skipped
    # Every document of 20 tokens is scored on 10, so the total is the mean of the documents.
    assert a == pytest.approx(per_doc[:-1].mean(), rel=1e-12)


def test_heldout_zero_probability_word_gives_minus_infinity(truth):
    B = truth.topic_word.copy()
    B[-1] = 0.0
    B /= B.sum(axis=0, keepdims=True)
    V = B.shape[0]
    # Document 1 holds only the word no topic generates, so its evaluation half has it.
    X = sp.csr_matrix(([10.0, 10.0, 50.0], ([0, 0, 1], [0, 7, V - 1])), shape=(2, V))
    assert ev.heldout_log_likelihood(B, X, random_state=0) == -np.inf


@pytest.mark.parametrize(
    "X",
    [
        sp.csr_matrix(np.array([[0.5, 1.5, 0.0]])),  # not integer counts
        sp.csr_matrix(np.array([[1.0, 0.0, 0.0]])),  # no document with 2 tokens
        sp.csr_matrix(np.ones((2, 4))),  # wrong vocabulary size
    ],
)
def test_heldout_bad_input(X):
    with pytest.raises(InputError):
        ev.heldout_log_likelihood(np.full((3, 2), 1.0 / 3), X)


# --- JSMF diagnostics -----------------------------------------------------------------------


def test_sparsity_entropy_specificity_extremes():
    V = 16
    one_hot = np.zeros((V, 2))
    one_hot[3, 0] = 1.0
    one_hot[:, 1] = 1.0 / V
    np.testing.assert_allclose(ev.topic_sparsity(one_hot), [1.0, 0.0], atol=1e-12)
    assert ev.topic_entropy(np.eye(4)) == 0.0
    assert ev.topic_entropy(np.full((5, 4), 0.25)) == pytest.approx(1.0)
    assert ev.topic_entropy(np.vstack([np.eye(4), np.zeros((1, 4))])) == 0.0  # zero rows left out
    unigram = np.arange(1.0, V + 1)
    B = np.column_stack([unigram / unigram.sum(), np.eye(V)[0]])
    spec = ev.topic_specificity(B, unigram)
    assert spec[0] == pytest.approx(0.0, abs=1e-12)
    assert spec[1] == pytest.approx(math.log(unigram.sum() / 1.0))


def test_approximation_and_recovery_vanish_on_the_exact_model(truth, monkeypatch):
    B, R = truth.topic_word, truth.topic_topic
    Q = population_cooccurrence(B, R)
    coef = ev.word_topic_posterior(B, R.sum(axis=1))
    monkeypatch.setattr(ev_jsmf, "_ROW_BLOCK", 7)  # exercise the row blocks
    assert ev.approximation_error(Q, B, R) < 1e-14
    assert ev.recovery_error_rows(Q, truth.anchors, coef) < 1e-10
    assert ev.recovery_error_rows(sp.csr_matrix(Q), truth.anchors, coef) < 1e-10
    # A perturbed C: approximation error is the plain Frobenius norm of the difference.
    E = np.zeros_like(Q)
    E[2, 40] = E[40, 2] = 1e-3
    assert ev.approximation_error(Q + E, B, R) == pytest.approx(np.linalg.norm(E), rel=1e-9)
    assert ev.approximation_error(sp.csr_matrix(Q + E), B, R) == pytest.approx(
        np.linalg.norm(E), rel=1e-9
    )
    assert ev.recovery_error_rows(Q + E, truth.anchors, coef) > 1e-6


def test_word_topic_posterior_is_bayes_rule(truth):
    B = truth.topic_word
    prior = truth.topic_topic.sum(axis=1)
    P = ev.word_topic_posterior(B, prior)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(P[0], np.eye(B.shape[1])[0])  # word 0 is topic 0's anchor


def test_diagnostics_bundle(truth):
    B, R = truth.topic_word, truth.topic_topic
    Q = population_cooccurrence(B, R)
    X, _ = sample_documents(truth, 200, doc_length=40, random_state=4)
    d = ev.diagnostics(Q, B, R, truth.anchors, X_ref=X, n_top_words=10)
    K = B.shape[1]
    for key in ("entropy", "sparsity", "specificity", "dissimilarity", "unique_word_ratio",
                "recovery", "approximation", "npmi", "umass"):
        assert isinstance(d[key], float), key
    assert d["recovery"] < 1e-10 and d["approximation"] < 1e-14
    assert set(d["per_topic"]) == {"sparsity", "specificity", "dissimilarity", "npmi", "umass"}
    assert all(len(v) == K for v in d["per_topic"].values())
    top = ev.top_words(B, 10)
    assert d["npmi"] == pytest.approx(ev.npmi_coherence(top, X).mean())
    bare = ev.diagnostics(Q, B, R)
    assert bare["recovery"] is None and bare["npmi"] is None
    assert "npmi" not in bare["per_topic"]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_specificity_is_the_elementwise_relative_entropy(data):
    """Σ b log b − bᵀ log p is rel_entr(B, p) summed, zeros of either included (inf where a
    topic puts mass on a word of zero frequency)."""
    from scipy.special import rel_entr

    V, K = data.draw(st.integers(2, 30)), data.draw(st.integers(1, 5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    B = rng.random((V, K)) * (rng.random((V, K)) < data.draw(st.floats(0.2, 1.0)))
    B[rng.integers(V, size=K), np.arange(K)] += 0.5  # no empty topic
    unigram = rng.random(V) * (rng.random(V) < data.draw(st.floats(0.3, 1.0)))
    unigram[0] += 1.0
    want = rel_entr(B / B.sum(axis=0), (unigram / unigram.sum())[:, None]).sum(axis=0)
    got = ev.topic_specificity(B, unigram)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-10,
                               atol=1e-12)
