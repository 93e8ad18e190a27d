"""Anchor candidates and their rows' sampling noise (anchorstream.model.candidates)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.model.anchors import fast_anchor_words, pivoted_qr_anchors
from anchorstream.model.candidates import (CAP_MAX_SHARE, REFERENCE_LENGTH, anchor_min_df_for,
                                          row_noise)
from anchorstream.model.pipeline import AnchorModel
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.synthetic import planted_model, population_cooccurrence, sample_documents


def test_row_noise_is_one_over_documents_times_mean_length_minus_one():
    got = row_noise([4, 40, 0], num_docs=100, num_tokens=600, scale=2.0)
    np.testing.assert_allclose(got[:2], [2.0 / (4 * 5), 2.0 / (40 * 5)])
    assert got[2] == np.inf  # a word in no document is never an anchor
    assert np.all(row_noise([4, 40], 100, 600, scale=0.0) == 0.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"doc_freq": [1, -1]}, "doc_freq"),
    ({"doc_freq": [[1, 2]]}, "doc_freq"),
    ({"scale": -1.0}, "scale"),
    ({"scale": float("nan")}, "scale"),
    ({"num_docs": 0}, "num_docs"),
    ({"num_tokens": 10}, "num_tokens"),  # fewer than 2 tokens a document
])
def test_row_noise_rejects_bad_input(kwargs, match):
    args = {"doc_freq": [3, 4], "num_docs": 10, "num_tokens": 60, **kwargs}
    with pytest.raises(InputError, match=match):
        row_noise(**args)


@pytest.fixture(scope="module")
def planted():
    model = planted_model(150, 8, random_state=11)
    return model, population_cooccurrence(model.topic_word, model.topic_topic)


@pytest.mark.parametrize("finder", [
    pivoted_qr_anchors, lambda *a, **k: fast_anchor_words(*a, random_state=0, **k)])
def test_zero_noise_changes_nothing_and_a_noisy_row_loses_its_place(finder, planted):
    model, Q = planted
    plain = finder(Q, 8)
    assert set(plain.tolist()) == set(model.anchors.tolist())
    np.testing.assert_array_equal(finder(Q, 8, noise=np.zeros(150)), plain)
    # A row whose whole squared norm is (estimated to be) noise is never the farthest.
    noisy = int(model.anchors[3])
    noise = np.zeros(150)
    Qn = Q / Q.sum(axis=1, keepdims=True)
    noise[noisy] = float(Qn[noisy] @ Qn[noisy])
    got = finder(Q, 8, noise=noise)
    assert noisy not in got.tolist()
    # The same holds for a warm start (the cleanup pass compares the same scores).
    warm = pivoted_qr_anchors(Q, 8, init=model.anchors, noise=noise)
    assert noisy not in warm.tolist()


def test_noise_must_be_a_non_negative_vector_of_the_words(planted):
    _, Q = planted
    for bad in (np.zeros(149), -np.ones(150), np.full(150, np.nan)):
        with pytest.raises(InputError, match="noise"):
            pivoted_qr_anchors(Q, 8, noise=bad)


def test_the_model_passes_each_rows_noise_to_the_search():
    model = planted_model(120, 5, random_state=0)
    X, _ = sample_documents(model, 5000, 8, random_state=1)  # short documents: noisy rows
    cooc = cooccurrence(X)
    fits = {x: AnchorModel(5, anchor_min_df=20, rectify=False, anchor_noise=x).fit(cooc)
            for x in (0.0, 3.0)}
    C = cooc.normalized()
    active = np.flatnonzero(C.sum(axis=1) > 0)
    cand = cooc.doc_freq[active] >= 20
    noise = row_noise(cooc.doc_freq[active], cooc.num_docs, cooc.num_tokens, 3.0)
    expected = pivoted_qr_anchors(C[np.ix_(active, active)], 5, candidates=cand, noise=noise)
    np.testing.assert_array_equal(fits[3.0].anchors_, active[expected])
    assert not np.array_equal(fits[0.0].anchors_, fits[3.0].anchors_)
    assert fits[3.0].get_params()["anchor_noise"] == 3.0
    for bad in (-0.5, float("inf"), True, "1"):
        with pytest.raises(InputError, match="anchor_noise"):
            AnchorModel(5, anchor_noise=bad)


@settings(max_examples=300, deadline=None)
@given(df=st.lists(st.integers(0, 1000), min_size=1, max_size=60), K=st.integers(1, 5),
       min_df=st.integers(1, 200), per_topic=st.integers(0, 12),
       num_docs=st.integers(1, 20000), mean=st.floats(1.0, 3000.0))
def test_the_threshold_comes_down_to_five_percent_only_for_long_documents(
        df, K, min_df, per_topic, num_docs, mean):
    num_docs = max(num_docs, max(df))  # no word in more documents than there are
    num_tokens = mean * num_docs
    got = anchor_min_df_for(df, K, min_df, per_topic, num_docs=num_docs, num_tokens=num_tokens)
    before = anchor_min_df_for(df, K, min_df, per_topic, num_docs=num_docs)
    ceiling = max(CAP_MAX_SHARE * num_docs, 1.0)
    assert got <= before  # the length only ever lowers it
    if mean <= REFERENCE_LENGTH:  # short documents: as without the length
        assert got == before
    if mean >= 1.0 + min_df * (REFERENCE_LENGTH - 1.0) / ceiling:
        # Long enough that 5% of the documents estimate a row as well as min_df short ones:
        # every word in 5% of the documents is a candidate.
        assert got <= ceiling
    if per_topic and before > min_df:  # the cap raised it: at most to 5% of the documents
        assert before == max(min(anchor_min_df_for(df, K, min_df, per_topic), ceiling), min_df)


def test_a_flat_vocabulary_keeps_its_rarer_anchors_as_candidates():
    """Ding et al.'s separable model (500 words, K = 5, 100 novel words): every word is in
    many documents, but the novel ones rank 390-415 by frequency, below the 40 K = 200 most
    frequent. A word in 5% of the documents stays a candidate, so each topic gets a novel
    word as its anchor."""
    rng = np.random.default_rng(0)
    W, K, n_novel = 500, 5, 100
    B = rng.dirichlet(np.ones(K), size=W)
    B[:n_novel] = 0.0
    B[np.arange(n_novel), np.arange(n_novel) % K] = rng.uniform(0.0, 1.0, n_novel)
    B /= B.sum(axis=0)
    theta = rng.dirichlet(np.full(K, 0.1), size=1000)
    X = np.stack([rng.multinomial(100, B @ t) for t in theta])
    model = AnchorModel(n_topics=K, anchor_min_df=10).fit(cooccurrence(X))
    assert model.anchor_min_df_ <= CAP_MAX_SHARE * 1000
    owner = np.where((B[model.anchors_] > 0).sum(axis=1) == 1, B[model.anchors_].argmax(axis=1),
                     -1)
    assert sorted(owner) == list(range(K))  # one novel word of each topic


def test_a_small_corpus_of_long_documents_keeps_anchors_below_the_default_threshold():
    """600 documents of 300 tokens, each topic's anchor word in 50-67 of them: under the default
    ``anchor_min_df`` (100) but above 5% of the documents (30). Each row is estimated from
    thousands of tokens, so the threshold comes down to 5% of the documents, the anchors are
    candidates and the search finds every one (at 100 none of them could be an anchor)."""
    rng = np.random.default_rng(0)
    W, K, N, L, mass = 300, 5, 600, 300, 0.002
    B = rng.dirichlet(np.ones(K), size=W)  # every other word in every topic
    B[:K] = 0.0
    B[np.arange(K), np.arange(K)] = mass
    B[K:] *= (1.0 - mass) / B[K:].sum(axis=0)
    theta = rng.dirichlet(np.full(K, 0.1), size=N)
    X = np.stack([rng.multinomial(L, B @ t) for t in theta])
    df = (X > 0).sum(axis=0)
    assert np.all((df[:K] > CAP_MAX_SHARE * N) & (df[:K] < 100))  # the case described
    model = AnchorModel(n_topics=K).fit(cooccurrence(X))
    assert model.anchor_min_df_ == CAP_MAX_SHARE * N
    assert sorted(model.anchors_.tolist()) == list(range(K))
