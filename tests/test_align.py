"""Topic id alignment: permutation invariance, births, deaths, ids never reused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.model.align import align_topics, topic_similarity
from anchorstream.errors import InputError
from anchorstream.synthetic import planted_model

V, K = 120, 8
VOCAB = [f"w{i}" for i in range(V)]


def planted(seed: int, n_topics: int = K) -> np.ndarray:
    return planted_model(V, n_topics, random_state=seed).topic_word  # (V, K)


def perturb(B: np.ndarray, rng: np.random.Generator, scale: float = 0.1) -> np.ndarray:
    """A refresh's worth of change: multiplicative noise, renormalized."""
    noisy = B * np.exp(scale * rng.standard_normal(B.shape))
    return noisy / noisy.sum(axis=0)


def test_similarity_is_one_minus_total_variation(rng):
    A, B = planted(1), planted(2)
    sim = topic_similarity(A, VOCAB, B, VOCAB)
    tv = 0.5 * np.abs(A[:, :, None] - B[:, None, :]).sum(axis=0)
    np.testing.assert_allclose(sim, 1 - tv, atol=1e-12)
    np.testing.assert_allclose(np.diag(topic_similarity(A, VOCAB, A, VOCAB)), 1.0)


def test_similarity_matches_words_not_slots(rng):
    """Reordering the vocabulary (and the rows with it) changes nothing."""
    A = planted(3)
    order = rng.permutation(V)
    sim = topic_similarity(A, VOCAB, A[order], [VOCAB[i] for i in order])
    np.testing.assert_allclose(np.diag(sim), 1.0)


def test_first_model_is_all_births():
    a = align_topics(planted(0), VOCAB)
    assert a.ids.tolist() == list(range(K))
    assert a.births == list(range(K)) and a.deaths == [] and a.matches == []
    assert a.next_id == K
    a = align_topics(planted(0), VOCAB, next_id=100)
    assert a.ids.tolist() == list(range(100, 100 + K))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), perm_seed=st.integers(0, 2**16))
def test_permuting_topics_gives_back_the_same_ids(seed, perm_seed):
    rng = np.random.default_rng(perm_seed)
    prev = planted(seed)
    prev_ids = rng.choice(1000, size=K, replace=False)
    perm = rng.permutation(K)
    new = perturb(prev, rng)[:, perm]
    a = align_topics(new, VOCAB, prev, VOCAB, prev_ids, next_id=1000)
    assert a.ids.tolist() == prev_ids[perm].tolist()
    assert a.births == [] and a.deaths == []
    assert a.next_id == 1000


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_a_new_topic_gets_a_fresh_id(seed):
    rng = np.random.default_rng(seed)
    prev = planted(seed)
    # A theme about words no previous topic uses much: its own block of the vocabulary.
    newborn = np.zeros(V)
    newborn[rng.choice(V, size=10, replace=False)] = 1.0
    newborn /= newborn.sum()
    new = np.column_stack([perturb(prev, rng), newborn])
    a = align_topics(new, VOCAB, prev, VOCAB, list(range(K)), next_id=K + 5)
    assert a.ids.tolist() == list(range(K)) + [K + 5]
    assert a.births == [K + 5]
    assert a.next_id == K + 6


def test_a_vanished_topic_is_a_death():
    prev = planted(7)
    new = prev[:, [0, 1, 2, 4, 5, 6, 7]]
    a = align_topics(new, VOCAB, prev, VOCAB, [10, 11, 12, 13, 14, 15, 16, 17])
    assert a.deaths == [13]
    assert a.ids.tolist() == [10, 11, 12, 14, 15, 16, 17]
    assert a.churn()["deaths"] == [13]


def test_threshold_decides_between_match_and_birth():
    prev = planted(8)
    unrelated = planted(9)
    a = align_topics(unrelated, VOCAB, prev, VOCAB, min_similarity=0.5)
    # Independent planted topics share little mass: every topic is new, every old one dead.
    assert a.births == list(range(K, 2 * K)) and a.deaths == list(range(K))
    a = align_topics(unrelated, VOCAB, prev, VOCAB, min_similarity=0.0)
    assert a.births == [] and sorted(a.ids.tolist()) == list(range(K))


def test_growing_vocabulary_keeps_ids(rng):
    """New words appear and old ones are evicted between refreshes; ids follow the topics."""
    prev = planted(11)
    keep = np.sort(rng.choice(V, size=V - 10, replace=False))
    extra_words = [f"new{i}" for i in range(10)]
    grown = np.vstack([prev[keep], np.full((10, K), 1e-3)])
    grown /= grown.sum(axis=0)
    vocab = [VOCAB[i] for i in keep] + extra_words
    order = rng.permutation(len(vocab))
    a = align_topics(grown[order], [vocab[i] for i in order], prev, VOCAB, list(range(K)))
    assert a.ids.tolist() == list(range(K))
    assert all(m.similarity > 0.8 for m in a.matches)


def block(lo: int, hi: int) -> np.ndarray:
    """Uniform distribution over words lo..hi-1."""
    out = np.zeros(V)
    out[lo:hi] = 1.0 / (hi - lo)
    return out


def test_splits_and_merges_are_recorded():
    prev = np.column_stack([block(0, 40), block(40, 80), block(80, 120)])
    # Topic 0 splits in two: one half keeps most of its mass (similarity 0.9) and its id,
    # the other (similarity 0.5) is born as a split of it.
    kept = 0.6 * block(0, 20) + 0.4 * block(20, 40)
    new = np.column_stack([kept, block(20, 40), prev[:, 1], prev[:, 2]])
    a = align_topics(new, VOCAB, prev, VOCAB, min_similarity=0.4)
    assert a.ids.tolist() == [0, 3, 1, 2] and a.births == [3]
    assert a.splits == [(3, 0, pytest.approx(0.5))]
    assert a.churn()["splits"] == [{"id": 3, "parent": 0, "similarity": 0.5}]
    # And back: the two halves merge into one; the smaller one's id dies into the survivor.
    b = align_topics(prev, VOCAB, new, VOCAB, a.ids, next_id=a.next_id, min_similarity=0.4)
    assert b.ids.tolist() == [0, 1, 2] and b.deaths == [3]
    assert b.merges == [(3, 0, pytest.approx(0.5))]
    assert b.next_id == 4


@settings(max_examples=10, deadline=None)
@given(seeds=st.lists(st.integers(0, 2**16), min_size=2, max_size=6),
       sizes=st.lists(st.integers(2, 10), min_size=6, max_size=6))
def test_ids_are_never_reused(seeds, sizes):
    """Across a run of unrelated and related models, no id is ever handed out twice."""
    rng = np.random.default_rng(seeds[0])
    models = []
    for s, k in zip(seeds, sizes, strict=False):
        if models and rng.random() < 0.5:
            B = perturb(models[-1], rng, 0.3)[:, rng.permutation(models[-1].shape[1])]
        else:
            B = planted_model(V, k, random_state=s).topic_word
        models.append(B)
    prev = prev_ids = None
    next_id, ever_born = None, []
    for B in models:
        a = align_topics(B, VOCAB, prev, None if prev is None else VOCAB, prev_ids,
                         next_id=next_id)
        assert len(set(a.ids.tolist())) == B.shape[1]
        assert not set(a.births) & set(ever_born)
        assert all(b >= (next_id or 0) for b in a.births)
        ever_born += a.births
        assert set(a.ids.tolist()) <= set(ever_born)
        prev, prev_ids, next_id = B, a.ids, a.next_id


def test_float32_snapshot_input_is_renormalized():
    prev = planted(13)
    a = align_topics(prev, VOCAB, prev.T.astype(np.float32).T, VOCAB, [5, 6, 7, 8, 9, 10, 11, 12])
    assert a.ids.tolist() == [5, 6, 7, 8, 9, 10, 11, 12]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"prev_ids": [0, 0, 1, 2, 3, 4, 5, 6]}, "distinct"),
        ({"prev_ids": [0, 1]}, "2 ids for 8"),
        ({"next_id": 3}, "never reused"),
        ({"min_similarity": 1.5}, "min_similarity"),
    ],
)
def test_bad_arguments(kwargs, match):
    B = planted(14)
    with pytest.raises(InputError, match=match):
        align_topics(B, VOCAB, B, VOCAB, **kwargs)


def test_bad_shapes_and_values():
    B = planted(15)
    with pytest.raises(InputError, match="rows but its vocabulary"):
        align_topics(B.T, VOCAB)
    with pytest.raises(InputError, match="non-negative"):
        align_topics(-B, VOCAB)
    with pytest.raises(InputError, match="prev_vocabulary"):
        align_topics(B, VOCAB, B)
    with pytest.raises(InputError, match="duplicate"):
        topic_similarity(B, VOCAB[:-1] + ["w0"], B, VOCAB)
    with pytest.raises(InputError, match="duplicate"):  # the same list on both sides
        topic_similarity(B, VOCAB[:-1] + ["w0"], B, VOCAB[:-1] + ["w0"])
    with pytest.raises(InputError, match="duplicate"):
        topic_similarity(B, VOCAB, B, VOCAB[:-1] + ["w0"])


def test_same_vocabulary_as_the_general_path():
    """Equal vocabularies take the identity for the shared words; a copy with one word renamed
    (not shared) takes the general path, and both give what the definition says."""
    B = planted(16)
    A = planted(17)
    same = topic_similarity(A, VOCAB, B, list(VOCAB))
    Bn, An = B / B.sum(axis=0), A / A.sum(axis=0)
    expect = 1.0 - 0.5 * np.abs(An[:, :, None] - Bn[:, None, :]).sum(axis=0)
    np.testing.assert_allclose(same, np.clip(expect, 0, 1), atol=1e-12)
    renamed = list(VOCAB)
    renamed[0] = "not-a-word"
    partial = topic_similarity(A, VOCAB, B, renamed)
    expect = 1.0 - 0.5 * (np.abs(An[1:, :, None] - Bn[1:, None, :]).sum(axis=0)
                          + An[0][:, None] + Bn[0][None, :])
    np.testing.assert_allclose(partial, np.clip(expect, 0, 1), atol=1e-12)
