"""The planted halves of bench_refit.py: each document redrawn at its length from the truth's
topics, and the oracle counting exactly the words each topic drew."""

from types import SimpleNamespace

import numpy as np

from benchmarks.bench_refit import planted_half


def _truth():
    # Two topics on disjoint words: a document's words say which topic drew them.
    words = ["a0", "a1", "a2", "b0", "b1", "b2"]
    B = np.zeros((6, 2))
    B[:3, 0] = [0.5, 0.3, 0.2]
    B[3:, 1] = [0.6, 0.2, 0.2]
    return SimpleNamespace(topic_word=B, words=words, anchors=["a0", "b0"])


def test_documents_keep_their_lengths_and_the_oracle_counts_every_word():
    truth = _truth()
    docs = [["a0", "a1", "zz"], ["b0", "b1", "b2", "a2"], ["zz"], ["a1", "a1"]]
    drawn, oracle = planted_half(truth, docs, seed=0)
    # Lengths in the truth's vocabulary (the unknown word "zz" does not count).
    assert [len(d) for d in drawn] == [2, 4, 0, 2]
    assert all(w in truth.words for d in drawn for w in d)
    counts = {w: sum(d.count(w) for d in drawn) for w in truth.words}
    # Each column of the oracle is the distribution of the words its topic drew.
    np.testing.assert_allclose(oracle.topic_word.sum(axis=0), 1.0)
    np.testing.assert_allclose(oracle.prevalence.sum(), 1.0)
    n = sum(len(d) for d in drawn)
    blocks = (slice(0, 3), slice(3, 6))
    for k, (own, other) in enumerate((blocks, blocks[::-1])):
        drew = oracle.topic_word[:, k] * oracle.prevalence[k] * n
        np.testing.assert_allclose(drew[own], [counts[w] for w in truth.words[own]])
        assert np.all(drew[other] == 0)
    # A document of one topic's words is redrawn from that topic only.
    assert set(drawn[3]) <= {"a0", "a1", "a2"}


def test_the_same_seed_draws_the_same_half():
    truth = _truth()
    docs = [["a0", "b0", "a1", "b1"]] * 50
    one, two = planted_half(truth, docs, seed=3), planted_half(truth, docs, seed=3)
    assert one[0] == two[0]
    assert planted_half(truth, docs, seed=4)[0] != one[0]
