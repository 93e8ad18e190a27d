"""Background words (anchorstream.model.background) and their place in a snapshot."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from anchorstream.errors import InputError
from anchorstream.model.background import (
    background,
    background_level,
    check_spread,
    ranked_top_words,
)
from anchorstream.snapshot import format_topics, read_snapshot, write_snapshot
from anchorstream.synthetic import add_background, planted_model

K, V, N_BG = 30, 1000, 10


def with_background(seed: int, mass: float = 0.3):
    """Planted sparse topics mixed with one background distribution over N_BG extra words
    (columns V..V+N_BG-1), as rows (K, V + N_BG), and the prevalence."""
    m = add_background(planted_model(V, K, word_concentration=0.05, random_state=seed), N_BG,
                       mass, random_state=seed)
    return m.topic_word.T, m.topic_topic.sum(axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_planted_background_is_found_and_kept_out_of_the_top_words(seed):
    B, prev = with_background(seed)
    found = background(B, prev, 0.33)
    assert sorted(found.words.tolist()) == list(range(V, V + N_BG))
    # Its level is the planted background, to rounding.
    np.testing.assert_allclose(found.level[V:], B[0, V:], rtol=1e-12)
    by_probability = ranked_top_words(B, 10)
    assert np.isin(by_probability, found.words).sum() > K  # without it they crowd every topic
    ranked = ranked_top_words(B, 10, found.level)
    assert not np.isin(ranked, found.words).any()
    # What is left is each topic's own top words (the planted words have small levels too,
    # so a few change places).
    own = ranked_top_words(B[:, :V], 10)
    assert np.mean([np.isin(r, o).mean() for r, o in zip(ranked, own)]) >= 0.95


@settings(max_examples=200)
@given(st.integers(1, 4), st.integers(1, 40), st.integers(0, 45), st.data())
def test_ranked_top_words_is_the_full_sort_cut(K, V, n, data):
    # The ranking sorts only the words that can be in the top n: the same words in the same
    # order as sorting every word by (excess, probability, index), ties included (the values
    # are drawn from a few levels, so ties are everywhere).
    grid = st.sampled_from([0.0, 0.0, 0.1, 0.2, 0.2, 0.5])
    B = data.draw(hnp.arrays(np.float64, (K, V), elements=grid))
    level = data.draw(st.none() | hnp.arrays(np.float64, (V,), elements=grid))
    got = ranked_top_words(B, n, level)
    excess = np.zeros_like(B) if level is None else np.maximum(B - level, 0.0)
    want = [np.lexsort((np.arange(V), -B[k], -excess[k]))[:min(n, V)] for k in range(K)]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.int64).reshape(K, min(n, V)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_model_without_background_reports_nothing(seed):
    m = planted_model(V, K, word_concentration=0.05, random_state=seed)
    B, prev = m.topic_word.T, m.topic_topic.sum(axis=1)
    found = background(B, prev, 0.33)
    assert found.words.size == 0
    # Every word has some probability in every topic here, so the ranking moves a little.
    ranked, by_probability = ranked_top_words(B, 10, found.level), ranked_top_words(B, 10)
    same = np.mean([np.isin(r, p).mean() for r, p in zip(ranked, by_probability)])
    assert same >= 0.95, same


def test_topics_that_share_no_word_keep_their_ranking_exactly():
    rng = np.random.default_rng(0)
    B = np.zeros((K, V))
    for k in range(K):  # topic k's words are its own block (plus a word shared by two)
        B[k, k * 30:(k + 1) * 30] = rng.dirichlet(np.full(30, 0.5))
        B[k, (k * 30 + 30) % V] += 0.05
    B /= B.sum(axis=1, keepdims=True)
    found = background(B, np.full(K, 1.0 / K), 0.33)
    assert found.words.size == 0 and not found.level.any()
    np.testing.assert_array_equal(ranked_top_words(B, 10, found.level), ranked_top_words(B, 10))


def test_the_level_is_the_value_a_fraction_of_the_topics_reach():
    B = np.array([[0.5, 0.0], [0.3, 0.2], [0.1, 0.0], [0.1, 0.8]])  # 4 topics, 2 words
    np.testing.assert_array_equal(background_level(B, 0.5), [0.3, 0.2])   # the 2nd largest
    np.testing.assert_array_equal(background_level(B, 0.75), [0.1, 0.0])  # the 3rd
    np.testing.assert_array_equal(background_level(B, 1.0), [0.1, 0.0])   # the smallest
    # A level reached in one topic is that topic's word, not the background: two at least.
    np.testing.assert_array_equal(background_level(B, 0.25), [0.3, 0.2])


@pytest.mark.parametrize("K", [2, 3])
def test_a_few_topics_that_share_no_word_report_no_background(K):
    # With K = 2 or 3 a third of the topics is one topic: the level was each word's largest
    # probability, so every word of every topic was reported as background.
    B = np.zeros((K, 8 * K))
    for k in range(K):
        B[k, 8 * k:8 * (k + 1)] = np.linspace(1.0, 2.0, 8)
    B /= B.sum(axis=1, keepdims=True)
    found = background(B, np.full(K, 1.0 / K), 0.33)
    assert found.words.size == 0 and not found.level.any()
    np.testing.assert_array_equal(ranked_top_words(B, 5, found.level), ranked_top_words(B, 5))


def test_with_two_topics_the_words_both_use_evenly_are_background():
    B = np.array([[0.4, 0.1, 0.1, 0.0, 0.0, 0.4], [0.0, 0.0, 0.1, 0.4, 0.1, 0.4]])
    found = background(B, [0.5, 0.5], 0.33)
    assert found.words.tolist() == [5, 2]  # by level
    assert ranked_top_words(B, 2, found.level).tolist() == [[0, 1], [3, 4]]


def test_ranking_without_a_level_is_by_probability_ties_by_index():
    B = np.array([[0.2, 0.4, 0.2, 0.2], [0.1, 0.1, 0.1, 0.7]])
    np.testing.assert_array_equal(ranked_top_words(B, 3), [[1, 0, 2], [3, 0, 1]])
    # Excess first, then probability: word 1 is at its level in topic 0.
    np.testing.assert_array_equal(ranked_top_words(B, 4, np.array([0, 0.4, 0, 0])),
                                  [[0, 2, 3, 1], [3, 0, 2, 1]])


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, float("nan"), True, "0.3"])
def test_bad_spreads_are_named(bad):
    with pytest.raises(InputError, match="fraction of the topics"):
        check_spread(bad)
    assert check_spread(None) is None and check_spread(1) == 1.0


def _write(path, B, prev, spread):
    words = [f"w{i}" for i in range(B.shape[1])]
    return write_snapshot(path, vocabulary=words, topic_word=B, topic_topic=np.diag(prev / prev.sum()),
                          anchors=None, prevalence=prev / prev.sum(), num_docs=10, settings={},
                          source={}, background_spread=spread)


def test_the_snapshot_reports_them_and_its_top_words_leave_them_out(tmp_path):
    B, prev = with_background(0)
    snap = read_snapshot(_write(tmp_path / "bg", B, prev, 0.33))
    report = snap.extra["background_words"]
    assert report["spread"] == 0.33 and report["count"] == N_BG
    assert {w for w, *_ in report["words"]} == {f"w{i}" for i in range(V, V + N_BG)}
    background_names = {w for w, *_ in report["words"]}
    for t in snap.topics:
        assert not background_names & {w for w, _ in t["top_words"]}
    # The model is unchanged: topic_word.npy is the input, normalized.
    np.testing.assert_allclose(snap.topic_word, B / B.sum(axis=1, keepdims=True), atol=1e-7)
    # More words than stored are ranked the same way.
    assert not background_names & set(format_topics(snap, n_words=25).split())

    plain = read_snapshot(_write(tmp_path / "plain", B, prev, None))
    assert "background_words" not in (plain.extra or {})
    assert any(background_names & {w for w, _ in t["top_words"]} for t in plain.topics)
