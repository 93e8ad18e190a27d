"""A store that skips repeated documents (``duplicate_memory``): streaming in any split, with
reopens and compactions, equals the batch estimator over the documents the filter keeps, and a
writer that crashes and replays from its last commit skips exactly what an uninterrupted one
skips (the filter's memory is committed with the counts)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.store import CooccurrenceStore, read_committed, store_info
from anchorstream.text.duplicates import DuplicateFilter
from tests.test_store import WORDS, assert_equals_batch, corpus, crash_and_replay, stream


def with_repeats(rng, n_docs: int) -> list[list[str]]:
    """Short random documents (some equal by chance) and copies of earlier ones."""
    docs = corpus(rng, n_docs, max_len=4)
    for i in rng.integers(0, n_docs, size=n_docs // 2):
        docs.insert(int(rng.integers(i, len(docs) + 1)), list(docs[i]))
    return docs


def kept(docs, memory: int) -> list[list[str]]:
    keep = DuplicateFilter(memory).keep(docs)
    return [d for d, k in zip(docs, keep) if k]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    memory=st.integers(1, 8),
    cuts=st.lists(st.integers(0, 90), max_size=5),
    compact_after=st.sets(st.integers(0, 5)),
    reopen_after=st.sets(st.integers(0, 5)),
)
def test_streaming_any_split_equals_batch_over_the_documents_kept(seed, memory, cuts,
                                                                  compact_after, reopen_after):
    rng = np.random.default_rng(seed)
    docs = with_repeats(rng, 60)
    url = f"memory://dup-{uuid.uuid4().hex}"
    s = stream(url, docs, sorted({0, len(docs), *cuts}), compact_after=compact_after,
               reopen_after=reopen_after, capacity=len(WORDS), admit_threshold=1,
               chunk_size=2, shard_size=4, duplicate_memory=memory)
    want = kept(docs, memory)
    assert_equals_batch(read_committed(url), want)
    assert s.n_docs_added == len(want)
    assert CooccurrenceStore.open(url).n_duplicates == len(docs) - len(want)


@pytest.mark.parametrize("memory", [3, 1000])
def test_a_crash_and_replay_skips_what_an_uninterrupted_run_skips(tmp_path, memory):
    rng = np.random.default_rng(7)
    docs = with_repeats(rng, 120)
    calm, s = crash_and_replay(tmp_path, docs, 110, capacity=len(WORDS), admit_threshold=1,
                               chunk_size=2, shard_size=4, duplicate_memory=memory)
    want = kept(docs, memory)
    for store in (calm, s):
        assert_equals_batch(read_committed(store.url), want)
        reopened = CooccurrenceStore.open(store.url)
        assert reopened.n_duplicates == len(docs) - len(want)
        assert reopened.duplicates.cursor == calm.duplicates.cursor
        np.testing.assert_array_equal(reopened.duplicates.ring, calm.duplicates.ring)
        info = store_info(store.url)
        assert info["duplicate_memory"] == memory
        assert info["duplicates"] == len(docs) - len(want)


def test_a_store_without_the_setting_counts_every_copy(tmp_path):
    docs = [["a", "b"]] * 5 + [["c", "d"]]
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=8, admit_threshold=1)
    assert not s.duplicates.enabled
    assert s.add(docs) == 6 and s.n_duplicates == 0 and not s.last_repeats.any()
    s.checkpoint({"n": 6})
    assert_equals_batch(read_committed(s.url), docs)


def test_repeats_are_reported_per_call_and_take_no_stream_position(tmp_path):
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=8, admit_threshold=1,
                                 duplicate_memory=10)
    assert s.add([["a", "b"], ["a", "b"], ["c"], ["c"], ["d", "e"]]) == 4
    assert s.last_repeats.tolist() == [False, True, False, False, False]
    assert s.add([["d", "e"], ["a", "b"]]) == 0
    assert s.last_repeats.tolist() == [True, True]
    assert s.n_docs_added == 4 and s.n_duplicates == 3
