"""Topic proportions of new documents (anchorstream.model.infer)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import anchorstream.model.infer as infer_mod
from anchorstream.errors import InputError
from anchorstream.model.infer import infer_topics
from anchorstream.synthetic import planted_model, sample_documents

V, K = 150, 5


@pytest.fixture(scope="module")
def truth():
    return planted_model(V, K, random_state=11)


def _single_topic_docs(model, topic, n_docs, length, seed):
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(length, model.topic_word[:, topic], size=n_docs).astype(float)
    return sp.csr_matrix(counts)


@pytest.mark.parametrize("topic", range(K))
def test_documents_from_one_topic_put_most_mass_on_it(truth, topic):
    X = _single_topic_docs(truth, topic, 20, 80, seed=topic)
    theta = infer_topics(truth.topic_word, X)
    assert theta.shape == (20, K)
    assert np.all(theta.argmax(axis=1) == topic)
    assert theta[:, topic].mean() > 0.9


def test_rows_on_simplex_and_close_to_the_drawn_proportions(truth):
    X, theta_true = sample_documents(truth, 200, doc_length=200, random_state=1)
    theta = infer_topics(truth.topic_word, X)
    assert np.all(theta >= 0)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, atol=1e-12)
    # Sampling noise of 200 words, not the solver, limits this.
    assert np.abs(theta - theta_true).sum(axis=1).mean() < 0.25


def test_single_document_batch_and_dense_agree(truth):
    X, _ = sample_documents(truth, 30, doc_length=50, random_state=2)
    batch = infer_topics(truth.topic_word, X)
    dense = infer_topics(truth.topic_word, X.toarray())
    np.testing.assert_array_equal(batch, dense)
    for d in (0, 7, 29):
        one = infer_topics(truth.topic_word, X[d].toarray().ravel())
        assert one.shape == (K,)
        np.testing.assert_allclose(one, batch[d], atol=1e-12)


def test_deterministic_and_input_untouched(truth):
    X, _ = sample_documents(truth, 40, doc_length=30, random_state=3)
    before = X.copy()
    a = infer_topics(truth.topic_word, X)
    b = infer_topics(truth.topic_word, X)
    np.testing.assert_array_equal(a, b)
    assert (X != before).nnz == 0


def test_snapshot_orientation_float32_transpose_works(truth):
    X, _ = sample_documents(truth, 10, doc_length=40, random_state=4)
    stored = np.ascontiguousarray(truth.topic_word.T, dtype=np.float32)  # (K, V) as on disk
    theta = infer_topics(stored.T, X)
    np.testing.assert_allclose(theta, infer_topics(truth.topic_word, X), atol=1e-4)


def test_chunking_does_not_change_the_result(truth, monkeypatch):
    X, _ = sample_documents(truth, 60, doc_length=40, random_state=5)
    whole = infer_topics(truth.topic_word, X)
    monkeypatch.setattr(infer_mod, "_CHUNK_ELEMENTS", 7 * K)  # a few documents per chunk
    np.testing.assert_allclose(infer_topics(truth.topic_word, X), whole, atol=1e-12)


def test_converges_to_the_optimum(truth):
    X, _ = sample_documents(truth, 30, doc_length=60, random_state=6)
    loose = infer_topics(truth.topic_word, X, alpha=0.5, tol=1e-3)
    tight = infer_topics(truth.topic_word, X, alpha=0.5, tol=1e-10, max_iter=5000)
    assert np.abs(loose - tight).max() < 0.02
    # At the MAP optimum the stationarity condition θ_k = (θ_k g_k + α) / (n + Kα) holds.
    B = truth.topic_word
    for d in range(5):
        idx, cnt = X[d].indices, X[d].data
        g = (cnt / (B[idx] @ tight[d])) @ B[idx]
        fixed = (tight[d] * g + 0.5) / (cnt.sum() + K * 0.5)
        np.testing.assert_allclose(fixed, tight[d], atol=1e-8)


def test_alpha_keeps_every_topic_possible(truth):
    X = _single_topic_docs(truth, 0, 5, 40, seed=9)
    ml = infer_topics(truth.topic_word, X)
    smoothed = infer_topics(truth.topic_word, X, alpha=1.0)
    assert smoothed.min() >= 1.0 / (40 + K * 1.0) - 1e-12
    assert ml.min() < smoothed.min()


def test_empty_document_gets_uniform_or_raises(truth):
    X = sp.csr_matrix(([2.0], ([1], [5])), shape=(3, V))
    theta = infer_topics(truth.topic_word, X)
    np.testing.assert_allclose(theta[[0, 2]], 1.0 / K)
    assert theta[1].max() > 1.0 / K
    with pytest.raises(InputError, match="row 0"):
        infer_topics(truth.topic_word, X, on_empty="raise")
    np.testing.assert_allclose(infer_topics(truth.topic_word, np.zeros(V)), 1.0 / K)


def test_words_no_topic_generates_are_ignored(truth):
    B = truth.topic_word.copy()
    B[-1] = 0.0  # word V-1 is outside every topic
    B /= B.sum(axis=0, keepdims=True)
    counts = np.zeros(V)
    counts[0] = 5.0  # anchor of topic 0
    with_dead = counts.copy()
    with_dead[-1] = 100.0
    np.testing.assert_allclose(infer_topics(B, with_dead), infer_topics(B, counts), atol=1e-12)
    only_dead = np.zeros(V)
    only_dead[-1] = 3.0
    np.testing.assert_allclose(infer_topics(B, only_dead), 1.0 / K)
    with pytest.raises(InputError):
        infer_topics(B, only_dead, on_empty="raise")


@pytest.mark.parametrize(
    ("topic_word", "counts", "kwargs", "match"),
    [
        (np.ones((V, K)) / V, np.ones(V + 1), {}, "same vocabulary"),
        (np.ones((V, K)) / V, -np.ones(V), {}, "non-negative"),
        (np.ones((V, K)) / V, np.full(V, np.nan), {}, "non-negative"),
        (np.ones((V, K)) / V, np.ones((2, 2, V)), {}, "shape"),
        (np.ones(V), np.ones(V), {}, "shape"),
        (-np.ones((V, K)), np.ones(V), {}, "non-negative"),
        (np.ones((V, K)) / V, np.ones(V), {"alpha": -1.0}, "alpha"),
        (np.ones((V, K)) / V, np.ones(V), {"max_iter": 0}, "max_iter"),
        (np.ones((V, K)) / V, np.ones(V), {"tol": 0.0}, "tol"),
        (np.ones((V, K)) / V, np.ones(V), {"on_empty": "skip"}, "on_empty"),
        (np.ones((V, K)) / V, ["a"] * V, {}, "numeric"),
    ],
)
def test_bad_input_raises_input_error(topic_word, counts, kwargs, match):
    with pytest.raises(InputError, match=match):
        infer_topics(topic_word, counts, **kwargs)
