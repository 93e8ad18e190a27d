"""Background words (anchorstream.model.background) and their place in a snapshot."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from anchorstream.errors import InputError
from anchorstream.model.background import (
    DISTINCT,
    DISTINCT_MARGIN,
    LABEL_WORDS,
    LEVEL_WEIGHTS,
    RAISE,
    background,
    background_level,
    check_spread,
    distinct_top_words,
    label_cap,
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


@settings(max_examples=150)
@given(st.integers(1, 6), st.integers(1, 60), st.integers(0, 30), st.integers(1, 6),
       st.sampled_from(LEVEL_WEIGHTS), st.data())
def test_capped_lists_hold_their_promises(K, V, n, cap, weight, data):
    grid = st.sampled_from([0.0, 0.05, 0.1, 0.1, 0.2, 0.5])
    B = data.draw(hnp.arrays(np.float64, (K, V), elements=grid))
    level = data.draw(hnp.arrays(np.float64, (V,), elements=grid))
    got = ranked_top_words(B, n, level, cap, weight)
    n_ = min(n, V)
    assert got.shape == (K, n_) and all(len(set(row)) == n_ for row in got)
    # The first words do not depend on how many are asked for.
    longer = ranked_top_words(B, V, level, cap, weight)
    np.testing.assert_array_equal(got, longer[:, :n_])
    label = longer[:, :min(V, LABEL_WORDS)]
    raised = (B > level * (1 + RAISE)) | (level == 0)
    counts = np.bincount(label.ravel(), minlength=V)
    for k in range(K):
        # A word the topic does not raise is in its label only when every word it raises
        # and leaves out is at the cap, and before those in it only when they are past it.
        in_label = raised[k, label[k]]
        if not in_label.all():
            left = np.setdiff1d(np.flatnonzero(raised[k]), label[k])
            assert (counts[left] >= cap).all()
            first_out = np.argmin(in_label)
            assert (counts[label[k][first_out:][in_label[first_out:]]] > cap).all()
    # No word is in more than cap labels, unless no other raised word was left to take its
    # place: the labels it is in past the cap (by height above the level, probability,
    # index) leave out no raised word below the cap.
    above = B - level
    for w in np.flatnonzero(counts > cap):
        topics = np.flatnonzero((label == w).any(axis=1) & raised[:, w])
        topics = topics[np.lexsort((topics, -B[topics, w], -above[topics, w]))]
        for k in topics[cap:]:
            others = np.setdiff1d(np.flatnonzero(raised[k]), label[k])
            assert others.size == 0 or counts[others].min() >= cap, (w, k)


def test_a_word_over_the_cap_labels_the_topics_that_raise_it_most():
    K, V = 6, 40
    B = np.full((K, V), 0.01)
    B[:, 0] = [0.30, 0.50, 0.20, 0.45, 0.25, 0.35]   # word 0 tops every topic
    B[:, 1:11] += np.linspace(0.02, 0.01, 10)        # then words 1-10 everywhere
    level = np.zeros(V)
    level[0] = 0.05
    got = ranked_top_words(B, 12, level, cap=2)
    assert sorted(np.flatnonzero((got[:, :10] == 0).any(axis=1))) == [1, 3]
    # Elsewhere it moved just below the label (past it, the lists are ranked without a cap).
    assert all(got[k, 10] == 0 for k in (0, 2, 4, 5))
    # Without a cap it tops all six.
    assert (ranked_top_words(B, 1, level) == 0).all()


@pytest.mark.parametrize("seed", [0, 1])
def test_the_ranking_takes_out_the_least_background_that_tells_the_labels_apart(seed):
    B, prev = with_background(seed, mass=0.1)
    found = background(B, prev, 0.33)
    got = distinct_top_words(B, 20, found.level)
    assert got.cap == label_cap(K) == 5 and got.weight in LEVEL_WEIGHTS
    np.testing.assert_array_equal(got.top, ranked_top_words(B, 20, found.level, 5, got.weight))

    def distinct(weight):
        label = ranked_top_words(B, LABEL_WORDS, found.level, 5, weight)
        return np.unique(label).size / label.size

    assert distinct(got.weight) >= DISTINCT or got.weight == LEVEL_WEIGHTS[-1]
    assert all(distinct(w) < DISTINCT for w in LEVEL_WEIGHTS if w < got.weight)
    # The planted background heads no list, whatever share of the level is subtracted.
    assert not np.isin(got.top, found.words).any()


def shared_words(mass: float) -> np.ndarray:
    """Topics that draw ``mass`` of their probability from the same 60 words, unevenly, and
    the rest from 30 words of their own (rows (K, V))."""
    rng = np.random.default_rng(0)
    B = np.zeros((K, V))
    B[:, :60] = rng.dirichlet(np.ones(60), size=K) * mass
    for k in range(K):
        B[k, 60 + 30 * k:90 + 30 * k] = rng.dirichlet(np.ones(30)) * (1 - mass)
    return B


def distinct_at(B, level, weight):
    label = ranked_top_words(B, LABEL_WORDS, level, label_cap(B.shape[0]), weight)
    return np.unique(label).size / label.size


def test_topics_that_share_many_words_take_more_of_the_level_out():
    # 66 % of every topic's mass on the same 60 words: ranked by probability (five labels
    # each at most), 42 % of the labels' words would repeat.
    B = shared_words(0.66)
    found = background(B, np.full(K, 1.0 / K), 0.33)
    assert distinct_at(B, found.level, 0.0) < DISTINCT
    got = distinct_top_words(B, 10, found.level)
    assert got.weight > 0 and np.unique(got.top).size >= DISTINCT * got.top.size
    assert np.bincount(got.top.ravel()).max() <= got.cap


@pytest.mark.parametrize("mass, previous, fresh, kept", [
    (0.63, 0.25, 0.0, 0.25),  # 0 would do (0.63), but not by the margin: the previous stays
    (0.66, 0.0, 0.25, 0.25),  # 0 falls short (0.583): up, as a fresh fit goes
    (0.58, 0.5, 0.0, 0.0),    # 0 clears the bound by the margin (0.71): down
    (0.63, 0.3, 0.0, 0.0),    # not a share the ranking uses: ignored
])
def test_a_refresh_keeps_the_previous_share_within_a_margin(mass, previous, fresh, kept):
    B = shared_words(mass)
    level = background(B, np.full(K, 1.0 / K), 0.33).level
    assert distinct_top_words(B, 10, level).weight == fresh
    got = distinct_top_words(B, 10, level, previous)
    assert got.weight == kept
    # The labels are distinct enough at the share kept, and the smaller ones fall short of
    # the bound plus the margin.
    assert distinct_at(B, level, kept) >= DISTINCT
    assert all(distinct_at(B, level, w) < DISTINCT + DISTINCT_MARGIN
               for w in LEVEL_WEIGHTS if w < kept)
    np.testing.assert_array_equal(got.top, ranked_top_words(B, 10, level, got.cap, kept))


@pytest.mark.parametrize("K_", [1, 2, 6, 7, 20, 100])
def test_the_cap_is_a_share_of_the_topics_two_at_least(K_):
    assert label_cap(K_) == max(2, -(-15 * K_ // 100))


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, float("nan"), True, "0.3"])
def test_bad_spreads_are_named(bad):
    with pytest.raises(InputError, match="fraction of the topics"):
        check_spread(bad)
    assert check_spread(None) is None and check_spread(1) == 1.0


def _write(path, B, prev, spread, length=None):
    words = [f"w{i}" for i in range(B.shape[1])]
    return write_snapshot(path, vocabulary=words, topic_word=B, topic_topic=np.diag(prev / prev.sum()),
                          anchors=None, prevalence=prev / prev.sum(), num_docs=10, settings={},
                          source={}, background_spread=spread, mean_doc_length=length)


def test_short_documents_take_out_less_of_the_level_than_long_ones(tmp_path):
    # A weaker background (10% of each topic's mass) that ranking by probability would put
    # in some labels: on short documents the ranking takes out less of it than the whole
    # level, and the labels stay distinct and capped.
    B, prev = with_background(1, mass=0.1)
    short = read_snapshot(_write(tmp_path / "short", B, prev, 0.33, 8.0))
    long_ = read_snapshot(_write(tmp_path / "long", B, prev, 0.33, 200.0))
    weight = short.extra["background_words"]["level_weight"]
    labels = [[w for w, _ in t["top_words"][:LABEL_WORDS]] for t in short.topics]
    assert weight < 1.0 and len({w for l in labels for w in l}) >= DISTINCT * K * LABEL_WORDS
    assert max(sum(w in l for l in labels) for l in labels for w in l) <= label_cap(K)
    found = background(short.topic_word, prev, 0.33)
    want = ranked_top_words(short.topic_word, 20, found.level, label_cap(K), weight)
    np.testing.assert_array_equal(
        [[short.vocabulary.index(w) for w, _ in t["top_words"]] for t in short.topics], want)
    # More words than stored are ranked the same way, the first ones unchanged.
    for snap in (short, long_):
        for line, t in zip(format_topics(snap, n_words=25).splitlines()[1:],
                           sorted(snap.topics, key=lambda t: -t["prevalence"])):
            assert line.split()[-25:][:20] == [w for w, _ in t["top_words"]]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), True, "8"])
def test_a_bad_document_length_or_previous_share_is_named(tmp_path, bad):
    B, prev = with_background(0)
    with pytest.raises(InputError, match="mean_doc_length"):
        _write(tmp_path / "bad", B, prev, 0.33, bad)
    with pytest.raises(InputError, match="previous_level_weight"):
        write_snapshot(tmp_path / "bad", vocabulary=[f"w{i}" for i in range(B.shape[1])],
                       topic_word=B, topic_topic=np.diag(prev / prev.sum()), anchors=None,
                       num_docs=10, settings={}, source={}, background_spread=0.33,
                       mean_doc_length=8.0, previous_level_weight=bad)
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("length", [None, 40.0, 8.0])
def test_the_snapshot_reports_them_and_its_top_words_leave_them_out(tmp_path, length):
    B, prev = with_background(0)
    snap = read_snapshot(_write(tmp_path / "bg", B, prev, 0.33, length))
    report = snap.extra["background_words"]
    assert report["spread"] == 0.33 and report["count"] == N_BG
    # Short documents: the least of the level that keeps the labels apart, capped; longer
    # ones (or unknown): the whole level, no cap.
    if length == 8.0:
        assert report["label_cap"] == label_cap(K) and report["level_weight"] in LEVEL_WEIGHTS
    else:
        assert report["label_cap"] is None and report["level_weight"] == 1.0
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


def test_short_documents_are_those_the_fit_refines_whole():
    # The same bound, kept as its own literal so that reading a snapshot does not import
    # the refinement's compiled kernels.
    from anchorstream.model.background import SHORT_DOCUMENTS
    from anchorstream.model.refine import REFINE_AUTO_MAX_LENGTH

    assert SHORT_DOCUMENTS == REFINE_AUTO_MAX_LENGTH


@pytest.mark.parametrize("length", [None, 3.0, 24.9, 25.0, 300.0])
def test_top_words_for_length_is_the_distinct_ranking_under_short_documents(length):
    # One choice for a snapshot and for the benchmark's labels of any model: the distinct
    # labels where documents are short, the whole level (no cap) otherwise or unknown.
    from anchorstream.model.background import (BACKGROUND_SPREAD, SHORT_DOCUMENTS,
                                               top_words_for_length)

    rng = np.random.default_rng(3)
    B = rng.dirichlet(np.full(200, 0.1), size=12)
    B[:, :5] += 0.05  # words most topics use
    B /= B.sum(axis=1, keepdims=True)
    level = background_level(B, BACKGROUND_SPREAD)
    got = top_words_for_length(B, 10, level, length, previous=0.5)
    if length is not None and length < SHORT_DOCUMENTS:
        want = distinct_top_words(B, 10, level, 0.5)
        assert (got.weight, got.cap) == (want.weight, want.cap)
        np.testing.assert_array_equal(got.top, want.top)
    else:
        assert (got.weight, got.cap) == (1.0, None)
        np.testing.assert_array_equal(got.top, ranked_top_words(B, 10, level))
