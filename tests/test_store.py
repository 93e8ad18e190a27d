"""The co-occurrence store on real Icechunk storage: equals batch, atomic, forgetting, failure.

A conformance class runs against every storage backend (local disk and Icechunk's in-memory
storage); a hypothesis state machine holds the store against the plain numpy model of
``tests/naive_store.py`` across checkpoints, reopens, compactions and evictions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import icechunk
import numpy as np
import pytest
import zarr
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import anchorstream.store.reading as reading_mod
import anchorstream.zarrio as zarrio
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import LENGTH_CAP, cooccurrence
from anchorstream.errors import InputError, StoreError, StoreFormatError
from anchorstream.store import (
    CooccurrenceStore,
    fingerprint,
    merge_committed,
    open_committed,
    read_committed,
    store_info,
)
from anchorstream.store.repository import create_repository, open_repo, storage
from anchorstream.text.tokenize import count_matrix
from tests.naive_store import (NaiveStoreModel, NaiveVocabulary, align, naive_cooccurrence,
                               scripted_history)

WORDS = [f"w{i}" for i in range(12)]


def corpus(rng, n_docs, max_len=9, words=WORDS):
    return [
        [str(w) for w in rng.choice(words, size=rng.integers(0, max_len + 1))]
        for _ in range(n_docs)
    ]


def assert_matches(cooc, words, ref_counts, ref_words=None, *, unigram=None, rtol=1e-12):
    """Compare a store's dense counts with a reference, aligning words."""
    if ref_words is not None:
        ref_counts = align(ref_words, ref_counts, words)
        if unigram is not None:
            unigram = align(ref_words, unigram, words)
    scale = max(float(np.abs(ref_counts).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(cooc.counts, ref_counts, rtol=rtol, atol=rtol * scale)
    if unigram is not None:
        np.testing.assert_allclose(cooc.unigram, unigram, rtol=rtol, atol=rtol)


def assert_equals_batch(state_or_tuple, docs):
    """The committed matrix equals the batch estimator over the store's active words."""
    if hasattr(state_or_tuple, "cooccurrence"):
        state_or_tuple = (state_or_tuple.cooccurrence, state_or_tuple.words)
    cooc, words = state_or_tuple[:2]
    ref = cooccurrence(count_matrix(docs, words), length_cap=cooc.length_cap)
    assert_matches(cooc, words, ref.counts, unigram=ref.unigram)
    np.testing.assert_allclose(cooc.doc_freq, ref.doc_freq)
    assert cooc.num_docs == ref.num_docs and cooc.num_tokens == ref.num_tokens


@pytest.fixture(params=["local", "memory"])
def url(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "store")
    return f"memory://test-{uuid.uuid4().hex}"


# ------------------------------------------------------------------------- conformance


class TestConformance:
    """What every storage backend must do."""

    def test_new_store_is_empty(self, url):
        s = CooccurrenceStore.create(url, capacity=8, seed=["a", "b"])
        c, words, offsets, version = read_committed(url)
        assert words == ["a", "b"] and offsets == {} and version == s.version
        assert c.num_docs == 0 and c.counts.shape == (2, 2) and not c.counts.any()

    def test_checkpoint_equals_batch(self, url, rng):
        docs = corpus(rng, 120)
        s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1, chunk_size=4,
                                     shard_size=8)
        s.add(docs[:50])
        v1 = s.checkpoint({"p0": 50})
        s.add(docs[50:])
        v2 = s.checkpoint({"p0": 120, "p1": 7})
        assert v1 != v2
        st_ = open_committed(url)
        assert st_.offsets == {"p0": 120, "p1": 7} and st_.version == v2
        assert_equals_batch(read_committed(url), docs)
        assert st_.n_docs_added == 120
        info = store_info(url)
        assert info["bytes_on_disk"] > 0 and info["version"] == v2 and info["segments"] == 2

    def test_reopen_yields_exactly_the_last_commit(self, url, rng):
        docs = corpus(rng, 60)
        s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1)
        s.add(docs[:30])
        s.checkpoint({"k": 30})
        s.add(docs[30:])  # never committed: a crash would lose it
        assert s.has_pending and s.pending_docs == 30
        again = CooccurrenceStore.open(url)
        assert again.offsets == {"k": 30} and again.n_docs_added == 30
        assert not again.has_pending
        assert_equals_batch(again.read(), docs[:30])
        # the reopened writer continues where the commit left off
        again.add(docs[30:])
        again.checkpoint({"k": 60})
        assert_equals_batch(read_committed(url), docs)

    def test_consistent_read_of_an_old_version(self, url, rng):
        docs = corpus(rng, 40)
        s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1, max_segments=1)
        s.add(docs[:20])
        v1 = s.checkpoint({"n": 20})
        old = open_committed(url, v1)
        s.add(docs[20:])
        s.checkpoint({"n": 40})  # also compacts (max_segments=1)
        again = open_committed(url, v1)
        assert again.offsets == {"n": 20}
        np.testing.assert_array_equal(again.cooccurrence.counts, old.cooccurrence.counts)
        assert_equals_batch(again, docs[:20])

    def test_compaction_keeps_the_content(self, url, rng):
        docs = corpus(rng, 90)
        s = CooccurrenceStore.create(url, capacity=16, admit_threshold=1, chunk_size=2,
                                     shard_size=4)
        for k in range(3):
            s.add(docs[30 * k : 30 * (k + 1)])
            s.checkpoint({"n": 30 * (k + 1)})
        before = s.read()
        v = s.compact()
        after = open_committed(url)
        assert after.version == v and open_committed(url).offsets == {"n": 90}
        np.testing.assert_allclose(after.cooccurrence.counts, before.cooccurrence.counts,
                                   rtol=1e-12, atol=1e-14)
        root = zarr.open_group(
            icechunk.Repository.open(storage(url)[0]).readonly_session(
                branch="main").store, mode="r")
        assert len(root.attrs["state"]["segments"]) == 0
        assert_equals_batch((after.cooccurrence, after.words), docs)

    def test_evictions_zero_rows_and_columns(self, url, rng):
        docs = corpus(rng, 150, words=[f"v{i}" for i in range(10)])
        kw = {"capacity": 5, "admit_threshold": 2.0, "sketch_size": 3}
        s = CooccurrenceStore.create(url, max_segments=2, chunk_size=2, shard_size=2, **kw)
        model = NaiveStoreModel(NaiveVocabulary(**kw))
        for k in range(5):
            part = docs[30 * k : 30 * (k + 1)]
            s.add(part)
            for d in part:
                model.add(d)
            s.checkpoint({"n": 30 * (k + 1)})
        st_ = open_committed(url)
        words, Q, uni, df = model.by_word()
        assert sorted(st_.words) == sorted(words)
        assert_matches(st_.cooccurrence, st_.words, Q, words, unigram=uni)
        assert st_.cooccurrence.num_docs == model.docs

    def test_create_refuses_an_existing_store(self, url):
        CooccurrenceStore.create(url, capacity=4)
        with pytest.raises(StoreError):
            CooccurrenceStore.create(url, capacity=4)
        assert isinstance(CooccurrenceStore.open_or_create(url, capacity=99), CooccurrenceStore)
        assert CooccurrenceStore.open(url).capacity == 4

    def test_missing_store(self, url):
        with pytest.raises(StoreError, match="no store"):
            CooccurrenceStore.open(url)
        with pytest.raises(StoreError):
            read_committed(url)

    def test_an_unknown_version_is_a_store_error_naming_the_store(self, url):
        from anchorstream.store.sparseread import open_committed_sparse

        s = CooccurrenceStore.create(url, capacity=4)
        s.add([["a", "b"]])
        version = s.checkpoint()
        # Both readers: the dense one and the sparse one a refresh and fit --store use.
        for read in (open_committed, open_committed_sparse):
            with pytest.raises(StoreError, match="cannot read store") as err:
                read(url, "0" * 20)
            assert os.fspath(url) in str(err.value)
            assert read(url).version == version

    def test_nothing_to_commit_keeps_the_version(self, url):
        s = CooccurrenceStore.create(url, capacity=4)
        v = s.version
        assert s.checkpoint() == v
        assert s.checkpoint({"x": 1}) != v  # offsets alone are worth a commit


# ------------------------------------------------------------------------- properties


def assert_close_rel(actual, ref, rtol=1e-12):
    """``actual`` equals ``ref`` to ``rtol`` relative to the largest entry of ``ref``.

    No floor of 1 on the scale (unlike :func:`assert_matches`): with decay every value may be
    far below 1, and a tolerance of 1e-12 absolute would then check nothing.
    """
    ref = np.asarray(ref, dtype=np.float64)
    scale = float(np.abs(ref).max(initial=0.0))
    np.testing.assert_allclose(actual, ref, rtol=rtol, atol=rtol * scale + 1e-300)


def assert_equals_weighted(state, docs, weights):
    """The committed state equals the explicitly weighted sum over its active words."""
    Q, uni, df, n_docs, n_tok = naive_cooccurrence(docs, state.words, weights,
                                                   state.cooccurrence.length_cap)
    c = state.cooccurrence
    assert_close_rel(c.counts, Q)
    assert_close_rel(c.unigram, uni)
    assert_close_rel(c.doc_freq, df)
    assert_close_rel(c.num_docs, n_docs)
    assert_close_rel(c.num_tokens, n_tok)


def stream(url, docs, bounds, *, compact_after=(), reopen_after=(), timestamps=None,
           **create):
    """Create a store at ``url`` and add ``docs`` in the batches ``docs[a:b]`` of consecutive
    ``bounds``, checkpointing after each (offset ``n``: documents so far), compacting or
    reopening the writer after the batches listed. Returns the writer."""
    s = CooccurrenceStore.create(url, **create)
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        s.add(docs[a:b], None if timestamps is None else timestamps[a:b])
        s.checkpoint({"n": b})
        if k in compact_after:
            s.compact()
        if k in reopen_after:
            s = CooccurrenceStore.open(url)
    return s


def crash_and_replay(tmp_path, docs, lost_until: int, reopened=None, **create):
    """``(calm, replayed)``: a writer that adds ``docs`` with a checkpoint every 25, and one
    that commits documents 0-40 and 40-70, adds those up to ``lost_until`` without
    committing and dies, its successor (given to ``reopened`` first) replaying from the
    committed offset to the end, as the daemon does after a SIGKILL."""
    calm = stream(str(tmp_path / "calm"), docs, list(range(0, len(docs), 25)) + [len(docs)],
                  **create)
    url = str(tmp_path / "crash")
    s = CooccurrenceStore.create(url, **create)
    for a, b in ((0, 40), (40, 70)):
        s.add(docs[a:b])
        s.checkpoint({"n": b})
    s.add(docs[70:lost_until])  # lost
    del s
    s = CooccurrenceStore.open(url)
    assert s.offsets == {"n": 70}
    if reopened is not None:
        reopened(s)
    s.add(docs[s.offsets["n"]:])
    s.checkpoint({"n": len(docs)})
    return calm, s


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(0, 80), max_size=5),
    compact_after=st.sets(st.integers(0, 5)),
    reopen_after=st.sets(st.integers(0, 5)),
    half_life=st.one_of(st.none(), st.floats(1.0, 60.0)),
    window=st.one_of(st.none(), st.integers(5, 40)),
    length_cap=st.sampled_from([2, 3.5, 25, None]),
)
def test_streaming_any_split_equals_batch(seed, cuts, compact_after, reopen_after, half_life,
                                          window, length_cap):
    # Without forgetting the reference is the library's batch estimator; with decay (in
    # documents) and/or tumbling windows it is the explicitly weighted sum over the documents
    # of the live windows, each weighted 2^-(T - t)/h.
    rng = np.random.default_rng(seed)
    docs = corpus(rng, 80)
    url = f"memory://prop-{uuid.uuid4().hex}"
    forgetting = Forgetting(half_life=half_life, window=window,
                            n_windows=1 if window is None else 2)
    stream(url, docs, sorted({0, len(docs), *cuts}), compact_after=compact_after,
           reopen_after=reopen_after, capacity=len(WORDS), admit_threshold=1, chunk_size=2,
           shard_size=4, forgetting=forgetting, length_cap=length_cap)
    if half_life is None and window is None:
        assert_equals_batch(read_committed(url), docs)
        return
    t = np.arange(len(docs), dtype=np.float64)
    T = t[-1]
    live = np.ones(len(docs), dtype=bool) if window is None else t // window > T // window - 2
    w = np.ones(len(docs)) if half_life is None else 0.5 ** ((T - t) / half_life)
    assert_equals_weighted(open_committed(url), [d for d, k in zip(docs, live) if k], w[live])


@pytest.mark.slow  # 10-40 s: `make test` runs it, `make test-fast` does not
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(0, 120), max_size=6),
    compact_after=st.sets(st.integers(0, 6)),
    reopen_after=st.sets(st.integers(0, 6)),
    capacity=st.integers(3, 8),
    admit_threshold=st.sampled_from([1.0, 2.0]),
    sketch_size=st.integers(2, 6),
)
def test_streaming_any_split_with_evictions_equals_one_batch(
    seed, cuts, compact_after, reopen_after, capacity, admit_threshold, sketch_size
):
    # With a capacity below the corpus's 12 words, which words are in the vocabulary (and so
    # which tokens count) depends on the stream: there is no batch estimator over a fixed
    # vocabulary to compare with. "Batch" here is the same documents in one add() through an
    # identical store: split points, checkpoints, compactions and reopens must change nothing,
    # neither the slots the words got nor the matrix (nor the vocabulary's sketch, which
    # decides later admissions). The dense numpy model of tests/naive_store.py, fed one
    # document at a time, is a second reference.
    rng = np.random.default_rng(seed)
    # The topic drifts (document i draws from WORDS[k:k+6], k = 7i/120): words fall out of use
    # and newer ones overtake them, so every example evicts (checked below).
    docs = [corpus(rng, 1, words=WORDS[i * 7 // 120 : i * 7 // 120 + 6])[0] for i in range(120)]
    kw = {"capacity": capacity, "admit_threshold": admit_threshold, "sketch_size": sketch_size}
    split_url = f"memory://split-{uuid.uuid4().hex}"
    one_url = f"memory://one-{uuid.uuid4().hex}"
    split = stream(split_url, docs, sorted({0, len(docs), *cuts}), compact_after=compact_after,
                   reopen_after=reopen_after, chunk_size=2, shard_size=4, **kw)
    stream(one_url, docs, [0, len(docs)], chunk_size=2, shard_size=4, **kw)
    a, b = open_committed(split_url), open_committed(one_url)
    # Evictions really happened (an evicted slot records the checkpoint it is valid from).
    assert (split._reset_seq > 0).any()
    assert a.words == b.words and np.array_equal(a.slots, b.slots)
    assert_close_rel(a.cooccurrence.counts, b.cooccurrence.counts)
    assert_close_rel(a.cooccurrence.unigram, b.cooccurrence.unigram)
    np.testing.assert_array_equal(a.cooccurrence.doc_freq, b.cooccurrence.doc_freq)
    assert a.cooccurrence.num_docs == b.cooccurrence.num_docs
    assert a.cooccurrence.num_tokens == b.cooccurrence.num_tokens
    assert CooccurrenceStore.open(split_url).vocabulary.sketch_items() == \
        CooccurrenceStore.open(one_url).vocabulary.sketch_items()
    model = NaiveStoreModel(NaiveVocabulary(**kw))
    for d in docs:
        model.add(d)
    words, Q, uni, df = model.by_word()
    assert words == a.words
    assert_close_rel(a.cooccurrence.counts, Q)
    assert_close_rel(a.cooccurrence.unigram, uni)
    assert a.cooccurrence.num_docs == model.docs


def test_checkpoints_keep_the_accumulators_hot_block(tmp_path, rng):
    s = CooccurrenceStore.create(tmp_path / "s", capacity=len(WORDS), admit_threshold=1)
    docs = corpus(rng, 60)
    blocks = []
    for a in (0, 20, 40):
        s.add(docs[a:a + 20])
        (acc,) = s._accs.values()
        acc.delta()  # folds: the hot block exists from here on
        blocks.append(acc._dense)
        s.checkpoint({"n": a + 20})
    # One block for every interval (allocating it afresh cost page faults each time), and the
    # counts are still the batch ones.
    assert blocks[0] is not None and all(b is blocks[0] for b in blocks)
    assert_equals_batch(read_committed(s.url), docs)


FORGETTINGS = {
    "none": Forgetting(),
    "decay": Forgetting(half_life=9.0),
    "windows": Forgetting(window=12, n_windows=3),
}


@pytest.mark.slow  # 5-10 s: `make test` runs it, `make test-fast` does not
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(0, 90), min_size=1, max_size=5),
    compact_after=st.sets(st.integers(0, 6)),
    evict_after=st.sets(st.integers(0, 6)),
    forgetting=st.sampled_from(sorted(FORGETTINGS)),
    capacity=st.sampled_from([6, 12]),
)
def test_a_read_that_catches_up_equals_a_full_read(seed, cuts, compact_after, evict_after,
                                                   forgetting, capacity):
    # The refresher's incremental read: the previous read's counts plus what was committed
    # since must equal reading this version from scratch, whatever happened in between
    # (evictions by a full vocabulary or by hand, compaction, decay, windows expiring).
    rng = np.random.default_rng(seed)
    docs = corpus(rng, 90)
    url = f"memory://catch-up-{uuid.uuid4().hex}"
    s = CooccurrenceStore.create(url, capacity=capacity, admit_threshold=1, chunk_size=2,
                                 shard_size=4, sketch_size=4,
                                 forgetting=FORGETTINGS[forgetting])
    buffer = np.empty(capacity * capacity)
    previous = None
    for _ in scripted_history(s, docs, cuts, evict_after, compact_after):
        full = open_committed(url)
        read = open_committed(url, out=buffer, since=previous)
        assert read.words == full.words
        assert_matches(read.cooccurrence, read.words, full.cooccurrence.counts)
        previous = read.dense


def test_a_read_catches_up_by_reading_only_the_new_segments(tmp_path, rng, monkeypatch):
    docs = corpus(rng, 60)
    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=len(WORDS), admit_threshold=1)
    s.add(docs[:40])
    s.checkpoint()
    buffer = np.empty(len(WORDS) ** 2)
    first = open_committed(url, out=buffer)
    s.add(docs[40:])
    s.checkpoint()

    def no_full_read(*args, **kwargs):
        raise AssertionError("a full read")

    monkeypatch.setattr(reading_mod, "_densify", no_full_read)
    again = open_committed(url, out=buffer, since=first.dense)
    assert np.shares_memory(again.cooccurrence.counts, buffer)
    assert_equals_batch(again, docs)


@pytest.mark.slow  # 10-40 s: `make test` runs it, `make test-fast` does not
@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    owner=st.lists(st.booleans(), min_size=60, max_size=60),
    cuts_a=st.lists(st.integers(0, 60), max_size=3),
    cuts_b=st.lists(st.integers(0, 60), max_size=3),
)
@example(seed=0, owner=[k < 22 for k in range(60)], cuts_a=[], cuts_b=[])
def test_merging_partial_stores_equals_one_store(seed, owner, cuts_a, cuts_b):
    # Any partition of a corpus between two workers' stores (each checkpointing at its own
    # points; the words get different slots in each, as they first appear in different order)
    # merges into the store of the whole corpus, in either order.
    rng = np.random.default_rng(seed)
    docs = corpus(rng, 60)
    parts = [[d for d, o in zip(docs, owner) if o], [d for d, o in zip(docs, owner) if not o]]
    kw = {"capacity": len(WORDS), "admit_threshold": 1, "chunk_size": 2, "shard_size": 4}
    urls = [f"memory://merge-{name}-{uuid.uuid4().hex}" for name in ("a", "b", "all")]
    for u, part, cuts in zip(urls, parts, (cuts_a, cuts_b)):
        stream(u, part, sorted({0, len(part), *(c for c in cuts if c < len(part))}), **kw)
    stream(urls[2], docs, [0, len(docs)], **kw)
    whole = open_committed(urls[2]).cooccurrence
    whole_words = open_committed(urls[2]).words
    for order in (urls[:2], urls[1::-1]):
        merged, words = merge_committed(order)
        assert sorted(words) == sorted(whole_words)
        assert_close_rel(merged.counts, align(whole_words, whole.counts, words))
        assert_close_rel(merged.unigram, align(whole_words, whole.unigram, words))
        np.testing.assert_array_equal(merged.doc_freq, align(whole_words, whole.doc_freq, words))
        assert merged.num_docs == whole.num_docs and merged.num_tokens == whole.num_tokens
        # the fingerprint does not depend on slot order
        assert fingerprint(merged.counts, words) == pytest.approx(
            fingerprint(whole.counts, whole_words), rel=1e-12, abs=1e-300
        )


@pytest.mark.parametrize("renormalize_above", [2.0**256, 4.0])
def test_decay_equals_explicitly_weighted_sum(tmp_path, rng, renormalize_above):
    h = 7.0
    docs = corpus(rng, 90)
    f = Forgetting(half_life=h, renormalize_above=renormalize_above)
    url = str(tmp_path / "decay")
    s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1, forgetting=f,
                                 chunk_size=4, shard_size=8)
    for a in range(0, 90, 15):
        s.add(docs[a : a + 15])
        s.checkpoint({"n": a + 15})
    st_ = open_committed(url)
    T = len(docs) - 1
    w = 0.5 ** ((T - np.arange(len(docs))) / h)
    Q, uni, df, n_docs, n_tok = naive_cooccurrence(docs, st_.words, w)
    assert_matches(st_.cooccurrence, st_.words, Q, unigram=uni)
    assert st_.cooccurrence.num_docs == pytest.approx(n_docs, rel=1e-12)
    assert st_.cooccurrence.num_tokens == pytest.approx(n_tok, rel=1e-12)
    np.testing.assert_allclose(st_.cooccurrence.doc_freq, df, rtol=1e-12)
    if renormalize_above == 4.0:
        root = zarr.open_group(icechunk.Repository.open(
            icechunk.local_filesystem_storage(url)).readonly_session(branch="main").store,
            mode="r")
        assert root.attrs["state"]["t_ref"] > 0  # renormalization really happened
        # and reopening continues correctly in the rescaled units
        s2 = CooccurrenceStore.open(url)
        s2.add(docs[:10])
        s2.checkpoint()
        all_docs = docs + docs[:10]
        T = len(all_docs) - 1
        w = 0.5 ** ((T - np.arange(len(all_docs))) / h)
        st2 = open_committed(url)
        Q, *_ = naive_cooccurrence(all_docs, st2.words, w)
        assert_matches(st2.cooccurrence, st2.words, Q)


@pytest.mark.slow  # 5-10 s: `make test` runs it, `make test-fast` does not
@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    half_life=st.floats(0.5, 80.0),
    unit=st.sampled_from(["documents", "seconds"]),
    renormalize_above=st.sampled_from([2.0**256, 4.0]),
    cuts=st.lists(st.integers(0, 60), max_size=4),
    compact_after=st.sets(st.integers(0, 4)),
    reopen_after=st.sets(st.integers(0, 4)),
)
def test_decay_equals_explicitly_weighted_sum_property(seed, half_life, unit, renormalize_above,
                                                       cuts, compact_after, reopen_after):
    # Each document weighs 2^-(T - t)/h at the time T of the latest one, whatever the
    # half-life, the split into checkpoints, the renormalizations (renormalize_above=4 moves
    # the units every two half-lives), compactions and reopens. In seconds the timestamps
    # come out of order: T is the largest one, and a document arriving after one with a
    # later timestamp weighs less than it.
    rng = np.random.default_rng(seed)
    docs = corpus(rng, 60)
    if unit == "seconds":
        t = np.round(rng.uniform(0.0, 300.0, size=len(docs)), 3)
    else:
        t = np.arange(len(docs), dtype=np.float64)
    f = Forgetting(half_life=half_life, unit=unit, renormalize_above=renormalize_above)
    url = f"memory://decay-{uuid.uuid4().hex}"
    stream(url, docs, sorted({0, len(docs), *cuts}), compact_after=compact_after,
           reopen_after=reopen_after, timestamps=t if unit == "seconds" else None,
           capacity=len(WORDS), admit_threshold=1, chunk_size=2, shard_size=4, forgetting=f)
    st_ = open_committed(url)
    assert st_.clock == t.max()
    assert_equals_weighted(st_, docs, 0.5 ** ((t.max() - t) / half_life))


def test_decay_in_seconds(tmp_path, rng):
    docs = corpus(rng, 30)
    t = np.sort(rng.uniform(1000.0, 5000.0, size=30))
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=20, admit_threshold=1,
                                 forgetting=Forgetting(half_life=600.0, unit="seconds"))
    with pytest.raises(InputError, match="timestamps"):
        s.add(docs[:3])
    s.add(docs[:12], timestamps=t[:12])
    s.checkpoint()
    s.add(docs[12:], timestamps=t[12:])
    s.checkpoint()
    st_ = s.read()
    w = 0.5 ** ((t.max() - t) / 600.0)
    Q, *_ = naive_cooccurrence(docs, st_.words, w)
    assert_matches(st_.cooccurrence, st_.words, Q)
    # After a long silence (far more than 1024 half-lives) weights would overflow without
    # renormalization; the old documents have decayed to nothing.
    late = t.max() + 600.0 * 5000
    s.add(docs[:5], timestamps=[late + k for k in range(5)])
    s.checkpoint()
    st_ = s.read()
    Q, *_ = naive_cooccurrence(docs[:5], st_.words, 0.5 ** ((4 - np.arange(5)) / 600.0))
    assert_matches(st_.cooccurrence, st_.words, Q)


@pytest.mark.parametrize("max_segments", [1, 64])
def test_tumbling_windows_sum_the_last_w(tmp_path, rng, max_segments):
    docs = corpus(rng, 95)
    f = Forgetting(window=10, n_windows=3)
    url = str(tmp_path / "win")
    s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1, forgetting=f,
                                 chunk_size=4, shard_size=8, max_segments=max_segments)
    for a in range(0, 95, 7):
        s.add(docs[a : a + 7])
        s.checkpoint({"n": min(a + 7, 95)})
        n = min(a + 7, 95)
        current = (n - 1) // 10
        live = [d for i, d in enumerate(docs[:n]) if i // 10 > current - 3]
        st_ = open_committed(url)
        Q, uni, df, nd, nt = naive_cooccurrence(live, st_.words)
        assert_matches(st_.cooccurrence, st_.words, Q, unigram=uni)
        assert st_.cooccurrence.num_docs == nd


def test_late_documents_outside_the_windows_are_skipped(tmp_path):
    f = Forgetting(window=100.0, n_windows=2, unit="seconds")
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=5, admit_threshold=1,
                                 forgetting=f)
    assert s.add([["a", "b"], ["a", "c"]], timestamps=[500.0, 320.0]) == 1
    assert s.n_skipped_late == 1
    with pytest.raises(InputError, match=">= 0"):
        s.add([["a", "b"]], timestamps=[-1.0])


def test_late_documents_of_an_older_window_get_no_dense_block(tmp_path):
    # Half the budget is the current window's dense block of hot rows; an accumulator opened
    # for late documents of an older window gets none, so pending windows stay within budget,
    # and the counts are the same.
    f = Forgetting(window=100.0, n_windows=3, unit="seconds")
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=8, admit_threshold=1,
                                 forgetting=f)
    s.add([["a", "b", "c"]], timestamps=[250.0])
    s.add([["a", "c", "d"], ["b", "d"]], timestamps=[120.0, 130.0])  # window 1, late
    assert s._accs[2].hot_rows > 0 and s._accs[1].hot_rows == 0
    s.checkpoint()
    st_ = open_committed(str(tmp_path / "s"))
    Q, uni, *_ = naive_cooccurrence([["a", "b", "c"], ["a", "c", "d"], ["b", "d"]], st_.words)
    assert_matches(st_.cooccurrence, st_.words, Q, unigram=uni)


# ------------------------------------------------------------------------- failures


def test_failure_in_the_write_path_keeps_the_last_commit(tmp_path, rng, monkeypatch):
    docs = corpus(rng, 60)
    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1)
    s.add(docs[:30])
    v1 = s.checkpoint({"n": 30})
    s.add(docs[30:])
    real_put = zarrio._put_async
    calls = {"n": 0}

    async def failing_put(agroup, name, data):
        calls["n"] += 1
        if calls["n"] == 3:  # among the segment arrays; the others are written concurrently
            raise OSError(28, "No space left on device")
        await real_put(agroup, name, data)

    monkeypatch.setattr(zarrio, "_put_async", failing_put)
    with pytest.raises(StoreError, match="No space left") as info:
        s.checkpoint({"n": 60})
    assert v1 in str(info.value)
    assert isinstance(info.value, OSError)
    st_ = open_committed(url)
    assert st_.version == v1 and st_.offsets == {"n": 30}
    assert_equals_batch((st_.cooccurrence, st_.words), docs[:30])
    # the writer kept everything in memory: retrying succeeds and nothing is lost
    monkeypatch.setattr(zarrio, "_put_async", real_put)
    s.checkpoint({"n": 60})
    assert_equals_batch(read_committed(url), docs)


def test_failure_at_the_commit_keeps_the_last_commit(tmp_path, rng, monkeypatch):
    docs = corpus(rng, 40)
    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1)
    s.add(docs[:20])
    v1 = s.checkpoint({"n": 20})
    s.add(docs[20:])

    def failing_commit(self, *a, **k):
        raise icechunk.IcechunkError("injected: disk full")

    monkeypatch.setattr(icechunk.Session, "commit", failing_commit)
    with pytest.raises(StoreError, match="disk full"):
        s.checkpoint({"n": 40})
    monkeypatch.undo()
    assert open_committed(url).version == v1
    s.checkpoint({"n": 40})
    assert_equals_batch(read_committed(url), docs)


def test_a_store_error_says_the_first_line_of_icechunks_message(tmp_path, rng):
    # Icechunk's messages go on with a span trace ("  x snapshot not found: `...`\n  |
    # context: ..."): the one-line errors of the commands keep the first line.
    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1)
    s.add(corpus(rng, 5))
    s.checkpoint({"n": 5})
    for version, said in (("nonsense", "invalid snapshot id: `nonsense`"),
                          ("1ANPKVTSD4C4M0NR6P3G", "snapshot not found: `1ANPKVTSD4C4M0NR6P3G`")):
        with pytest.raises(StoreError) as err:
            open_committed(url, version)
        assert str(err.value).endswith(f"IcechunkError: {said}"), str(err.value)
        assert "\n" not in str(err.value) and "context" not in str(err.value)


_FULL_DISK_SCRIPT = """
import resource, signal, sys
import numpy as np
from anchorstream.errors import StoreError
from anchorstream.store import CooccurrenceStore, configure_logging, open_committed
configure_logging()  # Icechunk's local-disk warning would go to stdout
url = sys.argv[1]
rng = np.random.default_rng(0)
docs = [[f"w{i}" for i in rng.integers(0, 300, size=20)] for _ in range(300)]
s = CooccurrenceStore.create(url, capacity=400, admit_threshold=1)
s.add(docs[:100])
v1 = s.checkpoint({"n": 100})
s.add(docs[100:])
# The kernel refuses to grow any file past 2 kB (EFBIG), as a full disk refuses (ENOSPC).
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, resource.RLIM_INFINITY))
try:
    s.checkpoint({"n": 300})
    sys.exit("the checkpoint should have failed")
except StoreError as exc:
    assert v1 in str(exc) and "File too large" in str(exc), exc
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
st = open_committed(url)
assert st.version == v1 and st.offsets == {"n": 100}, st.offsets
s.checkpoint({"n": 300})
assert open_committed(url).n_docs_added == 300
print("ok")
"""


def test_real_write_failure_keeps_the_last_commit(tmp_path):
    # A real OS write error (file size limit) in a child process, so the limit cannot leak.
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_SCRIPT, str(tmp_path / "s")],
        capture_output=True, text=True, timeout=300, cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-3000:]


def test_unwritable_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot create"):
        CooccurrenceStore.create(str(blocker / "store"), capacity=4)
    with pytest.raises(StoreError):
        CooccurrenceStore.create("/proc/anchorstream-no-such-place/store", capacity=4)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory(tmp_path, rng):
    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1)
    s.add(corpus(rng, 10))
    v1 = s.checkpoint()
    s.add(corpus(rng, 10))
    for dirpath, dirnames, _ in os.walk(url):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o555)
    os.chmod(url, 0o555)
    try:
        with pytest.raises(StoreError):
            s.checkpoint()
        assert open_committed(url).version == v1
    finally:
        for dirpath, dirnames, _ in os.walk(url):
            os.chmod(dirpath, 0o755)


def _rewrite_root_attrs(url, fn):
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(url))
    session = repo.writable_session("main")
    root = zarr.open_group(session.store, mode="r+")
    attrs = dict(root.attrs)
    fn(attrs)
    root.attrs.put(attrs)
    session.commit("tamper")


def test_incompatible_format_version_is_refused(tmp_path):
    url = str(tmp_path / "s")
    CooccurrenceStore.create(url, capacity=4)

    def bump(attrs):
        attrs["anchorstream_store"] = {**attrs["anchorstream_store"], "format_version": 99}

    _rewrite_root_attrs(url, bump)
    with pytest.raises(StoreFormatError, match="format version 99"):
        CooccurrenceStore.open(url)
    with pytest.raises(StoreFormatError, match="format version 99"):
        read_committed(url)


def test_not_a_store(tmp_path):
    plain = tmp_path / "plain"
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(plain)))
    session = repo.writable_session("main")
    zarr.open_group(session.store, mode="w")
    session.commit("someone else's data")
    with pytest.raises(StoreFormatError, match="not an anchorstream store"):
        CooccurrenceStore.open(str(plain))
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("hello")
    with pytest.raises(StoreFormatError, match="not an Icechunk repository"):
        read_committed(str(other))
    with pytest.raises(InputError, match="unsupported store URL"):
        CooccurrenceStore.open("ftp://host/x")


def test_repositories_open_without_manifest_preloading_and_keep_no_config(tmp_path):
    """Icechunk's preloading held a session's first read up by 3-25 ms (repository_config);
    the setting is how a store is opened, not written into it."""
    url = str(tmp_path / "s")
    made, _ = create_repository(url, None, lambda repo: None)
    opened, _ = open_repo(url)
    for repo in (made, opened):
        assert repo.config.manifest.preload.max_total_refs == 0
    assert not (tmp_path / "s" / "config.yaml").exists()
    assert icechunk.Repository.open(storage(url)[0]).config.manifest is None


def test_interrupted_initialization_is_completed(tmp_path):
    # An Icechunk repository with only its own first commit (creation killed in between).
    url = str(tmp_path / "s")
    icechunk.Repository.create(icechunk.local_filesystem_storage(url))
    s = CooccurrenceStore.open_or_create(url, capacity=6, admit_threshold=1)
    s.add([["a", "b"]])
    s.checkpoint()
    assert read_committed(url)[1] == ["a", "b"]
    # and leftovers of an interrupted local creation are cleaned up
    (tmp_path / "t.creating-abc").mkdir()
    CooccurrenceStore.open_or_create(str(tmp_path / "t"), capacity=3)
    assert not (tmp_path / "t.creating-abc").exists()


def test_initializing_a_store_twice_is_refused(tmp_path):
    """Two instances creating one store on an object store: one finds the repository holding
    only Icechunk's first commit, and the other initializes it before the first writes. The
    later initialization must not write the layout again over the other's store (it did, as a
    second commit: tests/test_store_urls.py's race failed 5 times in 30 under load)."""
    from anchorstream.errors import StoreConflictError
    from anchorstream.store.format import initialize
    from anchorstream.store.settings import build_config

    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=6, admit_threshold=1)
    s.add([["a", "b"]])
    s.checkpoint()
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(url))
    history = [c.id for c in repo.ancestry(branch="main")]
    meta, vocab, forgetting = build_config(capacity=6, admit_threshold=1)
    with pytest.raises(StoreConflictError, match="initialized by another process"):
        initialize(repo, meta, vocab, forgetting)
    assert [c.id for c in repo.ancestry(branch="main")] == history
    assert read_committed(url)[1] == ["a", "b"]


def test_garbage_collection_bounds_history_and_disk(tmp_path, rng):
    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=20, admit_threshold=1, keep_versions=2,
                                 gc_every=3, gc_min_age=0, max_segments=1)
    docs = corpus(rng, 20)
    sizes = []
    for k in range(24):
        s.add(docs)
        s.checkpoint({"k": k})
        sizes.append(s.disk_bytes())
    info = store_info(url)
    assert info["versions"] <= 2 + 2 * 3 + 1  # kept + made since the last collection + root
    assert max(sizes[12:]) < 2 * max(sizes[:12])
    assert_equals_batch(read_committed(url), docs * 24)


def test_options_are_checked(tmp_path):
    with pytest.raises(InputError, match="unknown store option"):
        CooccurrenceStore.create(str(tmp_path / "a"), capacity=3, bogus=1)
    with pytest.raises(InputError, match="multiple"):
        CooccurrenceStore.create(str(tmp_path / "b"), capacity=3, chunk_size=3, shard_size=4)
    s = CooccurrenceStore.create(str(tmp_path / "c"), capacity=3)
    with pytest.raises(InputError, match="token lists"):
        s.add(["a str is not a document"])
    s.add([["a", "b"]])
    with pytest.raises(InputError, match="checkpoint"):
        s.compact()


# ------------------------------------------------------------------------- state machine


class StoreMachine(RuleBasedStateMachine):
    """The store against a dense numpy model, across checkpoints, reopens and evictions."""

    KW = {"capacity": 5, "admit_threshold": 1.0, "sketch_size": 4}

    def __init__(self):
        super().__init__()
        self.url = f"memory://machine-{uuid.uuid4().hex}"
        self.store = CooccurrenceStore.create(self.url, chunk_size=2, shard_size=2,
                                              max_segments=3, **self.KW)
        self.model = NaiveStoreModel(NaiveVocabulary(**self.KW))
        self.committed = self.model.copy()
        self.n = 0

    @rule(docs=st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=6), max_size=6))
    def add(self, docs):
        self.store.add(docs)
        for d in docs:
            self.model.add(d)

    @rule()
    def checkpoint(self):
        self.n += 1
        self.store.checkpoint({"n": self.n})
        self.committed = self.model.copy()

    @rule()
    def reopen(self):
        self.store = CooccurrenceStore.open(self.url)
        self.model = self.committed.copy()

    @precondition(lambda self: not self.store.has_pending)
    @rule()
    def compact(self):
        self.store.compact()

    @rule(data=st.data())
    def evict(self, data):
        active = [w for w in self.model.vocab.words if w is not None]
        if not active:
            return
        word = data.draw(st.sampled_from(active))
        slot = self.store.evict(word)
        assert slot == self.model.vocab.words.index(word)
        # the model's vocabulary does what StreamingVocabulary.evict does
        self.model.vocab.sketch.append([word, self.model.vocab.df[slot], 0.0])
        self.model.vocab.words[slot] = None
        self.model.vocab.df[slot] = 0.0
        self.model.vocab.pinned[slot] = False
        self.model.vocab._prune()
        self.model.evict_slot(slot)

    @invariant()
    def committed_state_matches_model(self):
        st_ = open_committed(self.url)
        words, Q, uni, df = self.committed.by_word()
        assert sorted(st_.words) == sorted(words)
        assert_matches(st_.cooccurrence, st_.words, Q, words, unigram=uni)
        np.testing.assert_allclose(st_.cooccurrence.doc_freq, align(words, df, st_.words))
        assert st_.cooccurrence.num_docs == self.committed.docs

    @invariant()
    def vocabulary_matches_model(self):
        assert self.store.vocabulary.words == self.model.vocab.words


StoreMachine.TestCase.settings = settings(
    max_examples=12, stateful_step_count=15, deadline=None
)
TestStoreMachine = StoreMachine.TestCase


# ------------------------------------------------------------------------- commands


def _cli(*argv):
    from daemon.cli import ingest as cmd_ingest
    from daemon.cli import store_info as cmd_store_info

    parser = argparse.ArgumentParser(prog="anchorstream")
    sub = parser.add_subparsers(dest="command")
    cmd_ingest.register(sub)
    cmd_store_info.register(sub)
    args = parser.parse_args(list(argv))
    return args.func(args)


def test_ingest_and_store_info_commands(tmp_path, rng, capsys):
    from anchorstream.text.tokenize import Tokenizer

    docs = [d for d in corpus(rng, 90, words=[
        "market", "stocks", "bank", "rates", "football", "goal", "election", "senate"]) if d]
    lines = [json.dumps({"text": " ".join(d)}) for d in docs[:70]]
    lines.insert(10, "{not json")
    lines.insert(20, json.dumps({"body": "missing field"}))
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    url = str(tmp_path / "store")
    assert _cli("ingest", str(path), "--store", url, "--checkpoint-every", "9",
                "--admit-threshold", "1", "--capacity", "50", "-q") == 0
    err = capsys.readouterr().err
    assert "ingested 70 documents (2 rejected" in err
    assert _cli("store-info", url, "--json") == 0
    info = json.loads(capsys.readouterr().out)
    assert info["offsets"] == {f"file:{path}": path.stat().st_size}
    assert info["n_docs_added"] == 70 and info["vocab_size"] == 8
    tok = Tokenizer()
    docs = [tok(json.loads(x)["text"]) for x in lines if x.startswith('{"text"')]
    c, words, _, _ = read_committed(url)
    assert_equals_batch((c, words), docs)
    assert info["fingerprint"] == pytest.approx(fingerprint(c.counts, words), rel=1e-12)
    assert info["num_docs"] == c.num_docs and info["bytes_on_disk"] > 0
    # running it again counts nothing twice
    assert _cli("ingest", str(path), "--store", url, "-q") == 0
    assert "ingested 0 documents" in capsys.readouterr().err
    assert _cli("store-info", url) == 0
    assert "fingerprint" in capsys.readouterr().out
    # a fingerprint is slot-independent: a store seeded in reverse order agrees
    seed = tmp_path / "seed.txt"
    seed.write_text("\n".join(reversed(words)), encoding="utf-8")
    url2 = str(tmp_path / "store2")
    assert _cli("ingest", str(path), "--store", url2, "--seed-vocabulary", str(seed),
                "--admit-threshold", "1000", "-q") == 0
    info2 = store_info(url2)
    assert info2["fingerprint"] == pytest.approx(info["fingerprint"], rel=1e-12)


def test_ingest_text_format_and_timestamps(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("alpha beta gamma\n\nbeta gamma delta\n", encoding="utf-8")
    url = str(tmp_path / "s")
    assert _cli("ingest", str(path), "--store", url, "--format", "text",
                "--admit-threshold", "1", "--stopwords", "none", "-q") == 0
    assert store_info(url)["n_docs_added"] == 2
    jl = tmp_path / "ts.jsonl"
    jl.write_text(
        json.dumps({"text": "a1 b1", "t": "2024-01-01T00:00:00Z"}) + "\n"
        + json.dumps({"text": "a1 c1", "t": 1704067300}) + "\n"
        + json.dumps({"text": "a1 c1", "t": "yesterday"}) + "\n",
        encoding="utf-8",
    )
    url2 = str(tmp_path / "s2")
    assert _cli("ingest", str(jl), "--store", url2, "--timestamp-field", "t",
                "--time-unit", "seconds", "--half-life", "3600", "--admit-threshold", "1",
                "-q") == 0
    info = store_info(url2)
    assert info["n_docs_added"] == 2 and info["clock"] == 1704067300.0
    with pytest.raises(InputError, match="does not exist"):
        _cli("ingest", str(tmp_path / "nope.jsonl"), "--store", url2, "-q")


def test_ingest_refuses_a_file_listed_twice(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"text": "alpha beta gamma"}) + "\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.jsonl").symlink_to(path)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"text": "beta gamma"}) + "\n", encoding="utf-8")
    url = str(tmp_path / "s")
    # The same name, another spelling of it, or a link to it: each would count it twice.
    for again in (path, tmp_path / "sub" / ".." / "docs.jsonl", tmp_path / "link.jsonl"):
        with pytest.raises(InputError, match="same file") as info:
            _cli("ingest", str(path), str(other), str(again), "--store", url, "-q")
        assert str(path) in str(info.value) and str(again) in str(info.value)
    assert not os.path.exists(url)  # refused before the store was created
    # A store's own writer refuses it too, before adding anything.
    from anchorstream.text.tokenize import Tokenizer
    from daemon.cli.ingest import ingest_files

    s = CooccurrenceStore.create(url, capacity=8, admit_threshold=1)
    with pytest.raises(InputError, match="same file"):
        ingest_files(s, [path, other, path], tokenizer=Tokenizer())
    assert s.n_docs_added == 0 and open_committed(url).n_docs_added == 0


def test_ingest_progress_counts_one_kind_of_byte(tmp_path, monkeypatch):
    # Offsets are positions in the uncompressed stream; the bar counts the same bytes, against
    # the remaining file sizes when they are known and without a total when a .gz is among
    # the inputs (its compressed size against uncompressed progress read 300 %, 500 %, ...).
    import gzip

    from tqdm import tqdm

    from anchorstream.text.tokenize import Tokenizer
    from daemon.cli import ingest as cmd_ingest

    bars = []

    class Recording(tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(cmd_ingest, "tqdm", Recording)
    text = "".join(json.dumps({"text": "market stocks bank rates " * 8}) + "\n"
                   for _ in range(200)).encode()
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(text)
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(text))
    assert packed.stat().st_size < len(text) / 5
    for paths, total in (([plain], len(text)), ([packed], None), ([plain, packed], None)):
        s = CooccurrenceStore.create(f"memory://progress-{uuid.uuid4().hex}", capacity=8,
                                     admit_threshold=1)
        cmd_ingest.ingest_files(s, paths, tokenizer=Tokenizer(), progress=True)
        bar = bars.pop()
        assert bar.total == total and bar.n == len(text) * len(paths)
    # A resumed run counts what is left.
    s = CooccurrenceStore.create(f"memory://progress-{uuid.uuid4().hex}", capacity=8)
    cut = len(text) // 2 - len(text) // 2 % (len(text) // 200)  # a line boundary
    s.checkpoint({cmd_ingest.file_key(plain): cut})
    cmd_ingest.ingest_files(s, [plain], tokenizer=Tokenizer(), progress=True)
    bar = bars.pop()
    assert bar.total == len(text) - cut and bar.n == len(text) - cut


def test_store_info_fingerprint_is_the_documented_sum(tmp_path, rng, capsys):
    # Computed here from the definition, Σ_ij Q_ij g(w_i) g(w_j) with
    # g(w) = 1 + (crc32(w.encode()) mod 1000) / 1000, over a batch estimate of Q from the
    # same documents, in a plain loop; not with anchorstream.store.fingerprint. Non-ASCII
    # words check that g hashes the UTF-8 bytes.
    import zlib

    from anchorstream.text.tokenize import Tokenizer

    vocab = ["market", "stocks", "café", "naïve", "東京", "über", "election", "senate"]
    texts = [" ".join(d) for d in corpus(rng, 80, words=vocab) if d]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    url = str(tmp_path / "s")
    # --max-df none: every word of 8 is in most of the 80 documents.
    assert _cli("ingest", str(path), "--store", url, "--admit-threshold", "1",
                "--checkpoint-every", "25", "--max-df", "none", "-q") == 0
    capsys.readouterr()
    assert _cli("store-info", url, "--json") == 0
    info = json.loads(capsys.readouterr().out)
    tok = Tokenizer()
    docs = [tok(t) for t in texts]
    words = sorted({w for d in docs for w in d})
    assert info["vocab_size"] == len(words) == len(vocab)
    assert info["length_cap"] == LENGTH_CAP  # ingest's default weighting
    Q = cooccurrence(count_matrix(docs, words), length_cap=LENGTH_CAP).counts
    g = [1.0 + (zlib.crc32(w.encode("utf-8")) % 1000) / 1000.0 for w in words]
    expected = sum(Q[i, j] * g[i] * g[j] for i in range(len(words)) for j in range(len(words)))
    assert info["fingerprint"] == pytest.approx(expected, rel=1e-12)


def test_length_cap_is_kept_by_the_store_and_a_different_one_is_refused(tmp_path, rng, caplog):
    docs = corpus(rng, 40)
    url = str(tmp_path / "store")
    stream(url, docs, [0, 25, 40], capacity=len(WORDS), admit_threshold=1, length_cap=4)
    state = read_committed(url)
    assert state[0].length_cap == 4
    assert_equals_batch(state, docs)
    # Another weighting does not apply to an existing store: it is named in a warning, and
    # documents added from then on are weighted as before.
    with caplog.at_level("WARNING", logger="anchorstream.store"):
        s = CooccurrenceStore.open_or_create(url, capacity=len(WORDS), admit_threshold=1,
                                             length_cap=None)
    assert "length_cap 4.0 (asked for None)" in caplog.text
    more = corpus(rng, 10)
    s.add(more)
    s.checkpoint({"n": 50})
    assert_equals_batch(read_committed(url), docs + more)
    # Stores weighted differently do not merge.
    other = str(tmp_path / "other")
    stream(other, docs, [0, 40], capacity=len(WORDS), admit_threshold=1)
    with pytest.raises(InputError, match="weighted differently"):
        merge_committed([url, other])
    with pytest.raises(InputError, match="length_cap"):
        CooccurrenceStore.create(str(tmp_path / "bad"), capacity=4, length_cap=1)


_IMPORT_SCRIPT = """
import icechunk
calls = []
icechunk.set_logs_filter = lambda directive: calls.append(directive)
import anchorstream.store
assert calls == [], calls  # importing the store changes no global log filter
anchorstream.store.configure_logging({"ICECHUNK_LOG": "debug"})
assert calls == [], calls  # the operator's ICECHUNK_LOG wins
anchorstream.store.configure_logging({})
assert calls == ["warn,icechunk::storage::object_store=error"], calls
print("ok")
"""


def test_importing_the_store_has_no_side_effects():
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", _IMPORT_SCRIPT], capture_output=True, text=True,
                         timeout=120, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-3000:]
