"""The word pairs of documents' windows kept with the store (anchorstream/stats/windowpairs.py),
and the daemon's refresh that refines on them (model.refine_window)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.stats.windowpairs as windowpairs_mod
from anchorstream.model.lowrank import DocumentCooccurrence
from anchorstream.model.pipeline import AnchorModel
from anchorstream.stats.admission import MIN_SHARE, correct_admission
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.stats.documents import DocStatsSettings
from anchorstream.stats.windowpairs import window_counts, window_pair_entries
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.store.delay import add_waiting
from anchorstream.synthetic import planted_model, sample_documents
from anchorstream.text.tokenize import count_matrix
from anchorstream.text.windows import window_documents
from daemon.publish import Publisher
from daemon.refresh import Refresher
from daemon.refresh_inputs import subset


def test_module_doctests():
    result = doctest.testmod(windowpairs_mod)
    assert result.failed == 0 and result.attempted > 0


DOCS = st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=30), max_size=10)


@settings(max_examples=60, deadline=None)
@given(DOCS, st.integers(2, 12), st.sampled_from([2, 5.0, None]))
def test_the_entries_are_the_windows_document_cooccurrence(docs, size, cap):
    """Slots with their token positions (out-of-vocabulary tokens taking places) give
    `fit --input --refine-window`'s windows and their pairs: DocumentCooccurrence's upper
    triangle, windows and tokens."""
    vocab = list("abcdef")  # g and h stand outside
    slot = {w: i for i, w in enumerate(vocab)}
    indptr, slots, where = [0], [], []
    for d in docs:
        for i, t in enumerate(d):
            if t in slot:
                slots.append(slot[t])
                where.append(i)
        indptr.append(len(slots))
    W, window_doc = window_counts(indptr, slots, where, size, len(vocab))
    assert np.all(np.diff(window_doc) >= 0) and np.all(W.sum(axis=1) > 0)
    r, c, v, docs_tokens = window_pair_entries(W, np.ones(W.shape[0]), cap,
                                               np.zeros(W.nnz, bool))
    batch = DocumentCooccurrence(count_matrix(window_documents(docs, size), vocab),
                                 length_cap=cap)
    got = sp.csr_matrix((v, (r, c)), shape=(len(vocab),) * 2).toarray()
    np.testing.assert_allclose(got, batch.upper_counts().toarray(), rtol=1e-12, atol=1e-14)
    assert np.all(r <= c)
    assert docs_tokens.tolist() == pytest.approx([batch.num_docs, batch.num_tokens])


def as_words(X) -> list[list[str]]:
    return [[f"w{j:04d}" for j, c in zip(X.indices[X.indptr[i]:X.indptr[i + 1]],
                                          X.data[X.indptr[i]:X.indptr[i + 1]])
             for _ in range(int(c))] for i in range(X.shape[0])]


@pytest.mark.parametrize("window, delay", [(None, 0), (6, 0), (6, 250)])
def test_a_refresh_refines_on_the_stores_windows_as_a_fit_on_files(tmp_path, window, delay):
    """model.refine_window: the refresh's topics are the anchor model refined on the windows'
    pairs, exactly as AnchorModel.fit(refine_cooc=...) on the batch windows gives them; with
    a delay line (store.count_delay), its waiting documents' counts and windows too."""
    truth = planted_model(60, 3, random_state=2)
    X, _ = sample_documents(truth, 600, doc_length=30, random_state=3)
    rng = np.random.default_rng(4)
    docs = [list(rng.permutation(d)) for d in as_words(X)]
    store = CooccurrenceStore.create(
        tmp_path / "store", capacity=100, admit_threshold=1,
        document_stats=DocStatsSettings(pair_window=window or 0) if window else None,
        count_delay=delay)
    for i in range(0, len(docs), 250):  # several checkpoints
        store.add(docs[i:i + 250])
        store.checkpoint({"n": min(i + 250, len(docs))})
    assert len(store.delay_line) == delay  # the last ones wait: the snapshot counts them
    pub = Publisher(tmp_path / "snaps", keep=2)
    kw = {"n_topics": 3, "anchor_min_df": 5, "refine": "joint"}
    ref = Refresher(store.url, pub, model_kwargs=kw, min_new_docs=1, min_df=1,
                    refine_window=window)
    assert ref.refresh_once() is not None
    _, snap = pub.latest()
    assert snap.settings["refine_window"] == window
    words = list(snap.vocabulary)
    st_ = open_committed(store.url)
    idx = [st_.words.index(w) for w in words]
    idx = np.asarray(idx)
    cooc = correct_admission(add_waiting(subset(st_.cooccurrence, idx), st_.waiting, idx),
                             None if st_.admission is None else st_.admission.subset(idx),
                             min_share=MIN_SHARE)
    assert cooc.num_docs == len(docs)
    refine_cooc = None
    if window:
        refine_cooc = DocumentCooccurrence(count_matrix(window_documents(docs, window), words),
                                           length_cap=cooc.length_cap)
    model = AnchorModel(**kw).fit(cooc, refine_cooc=refine_cooc)
    got = np.asarray(snap.topic_word, np.float64).T
    np.testing.assert_allclose(got, model.topic_word_, rtol=1e-5, atol=1e-7)
    if window:  # and the windows made a difference
        whole = AnchorModel(**kw).fit(cooc).topic_word_
        assert np.abs(got - whole).max() > 1e-3


def test_a_refresh_before_the_store_keeps_windows_says_it_refined_whole_documents(
        tmp_path, caplog):
    store = CooccurrenceStore.create(tmp_path / "store", capacity=100, admit_threshold=1)
    truth = planted_model(60, 3, random_state=2)
    X, _ = sample_documents(truth, 300, doc_length=30, random_state=3)
    store.add(as_words(X))
    store.checkpoint({"n": 300})
    pub = Publisher(tmp_path / "snaps", keep=2)
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": 3, "anchor_min_df": 5},
                    min_new_docs=1, min_df=1, refine_window=6)
    assert ref.refresh_once() is not None
    assert pub.latest()[1].settings["refine_window"] is None
    assert "keeps no windows' pairs yet" in caplog.text
    # With refine: none nothing is refined, so the windows are not read at all.
    quiet = Refresher(store.url, pub, model_kwargs={"n_topics": 3, "refine": "none"},
                      refine_window=6)
    cooc = open_committed(store.url).cooccurrence
    assert ref._window_for(cooc) == 6 and quiet._window_for(cooc) is None
    assert not (ref.needs_documents or quiet.needs_documents)  # the method reads none


@pytest.mark.parametrize("docs, length, keeps, topics, window", [
    (400, 120, True, 30, 24),     # long documents, many topics, a store keeping windows
    (1100, 120, True, 10, None),  # few topics, 110 documents each
    (1100, 40, True, 10, None),   # documents not long
    (400, 40, True, 10, 24),      # not long, but only 40 documents per topic
    (1100, 40, True, 75, 24),     # many topics (test_text_windows: each clause alone)
    (400, 120, False, 30, None),  # no windows kept: whole documents, and the log says why
])
def test_auto_refines_in_the_stores_windows_where_documents_are_long(tmp_path, caplog, docs,
                                                                     length, keeps, topics,
                                                                     window):
    """model.refine_window: auto decides at each refresh by the stored documents' mean length
    in the vocabulary, their number and the number of topics
    (anchorstream.text.windows.refine_window_for), as fit --refine-window auto does."""
    truth = planted_model(150, topics, random_state=5)
    X, _ = sample_documents(truth, docs, doc_length=length, random_state=6)
    store = CooccurrenceStore.create(
        tmp_path / "store", capacity=200, admit_threshold=1,
        document_stats=DocStatsSettings(pair_window=24) if keeps else None)
    store.add(as_words(X))
    store.checkpoint({"n": docs})
    pub = Publisher(tmp_path / "snaps", keep=2)
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": topics, "anchor_min_df": 5},
                    min_new_docs=1, min_df=1, refine_window="auto")
    assert ref.refresh_once() is not None
    settings_ = pub.latest()[1].settings
    assert settings_["refine_window"] == window
    said = "the documents call for windows, but the store keeps no windows' pairs" in caplog.text
    assert said == (not keeps)


def test_a_partitioned_refresh_sums_the_partitions_windows(tmp_path):
    """store.layout: partitioned with model.refine_window: every partition's store keeps its
    windows (open_store from the configuration), and the refresh sums them by word: the same
    topics as one fit on all the documents' windows."""
    from anchorstream.store import partition_url
    from daemon.scaled import partitioned_reader
    from daemon.service import open_store
    from daemon.settings import parse_config

    truth = planted_model(60, 3, random_state=2)
    X, _ = sample_documents(truth, 600, doc_length=30, random_state=3)
    rng = np.random.default_rng(4)
    docs = [list(rng.permutation(d)) for d in as_words(X)]
    root = tmp_path / "root"
    cfg = parse_config({"store": {"path": str(root), "layout": "partitioned"},
                        "vocab": {"capacity": 100, "admit_threshold": 1, "stopwords": "none"},
                        "model": {"num_topics": 3, "refine_window": 6, "refine": "joint",
                                  "anchor_min_df": 5}}, env={})
    for p in range(3):
        s = open_store(cfg, partition_url(root, "docs", p), partition=f"kafka:docs:{p}")
        assert s.document_stats.pair_window == 6
        s.add(docs[p::3])
        s.checkpoint({f"kafka:docs:{p}": len(docs[p::3])})
    pub = Publisher(tmp_path / "snaps", keep=2)
    kw = {"n_topics": 3, "anchor_min_df": 5, "refine": "joint"}
    ref = Refresher(str(root), pub, model_kwargs=kw, min_new_docs=1, min_df=1,
                    refine_window=cfg.model.refine_window,
                    reader=partitioned_reader(cfg, lambda: {("docs", p) for p in range(3)}))
    assert ref.refresh_once() is not None
    _, snap = pub.latest()
    words = list(snap.vocabulary)
    assert snap.source["document_stats"]["pair_windows"] > 0
    cooc = cooccurrence(count_matrix(docs, words), length_cap=cfg.store.length_cap)
    refine_cooc = DocumentCooccurrence(count_matrix(window_documents(docs, 6), words),
                                       length_cap=cfg.store.length_cap)
    model = AnchorModel(**kw).fit(cooc, refine_cooc=refine_cooc)
    np.testing.assert_allclose(np.asarray(snap.topic_word, np.float64).T, model.topic_word_,
                               rtol=1e-4, atol=1e-6)
