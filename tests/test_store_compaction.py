"""Compaction in steps: every commit of a fold holds the same matrix as a store that never
compacts, through reopens, evictions and incremental reads.

A fold moves the segments of one generation into the base shard pair by shard pair, one commit
per checkpoint (``compact_step_seconds``); readers skip the entries already moved. These tests
use small shards (V = 40, shards of 8: 15 upper shard pairs) and a step budget of ~0, so each
step rewrites exactly one shard pair and a fold spans many checkpoints.
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from hypothesis import example, given, settings
from hypothesis import strategies as st

import anchorstream.store.format as store_format
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.store.repository import open_repo
from test_store_sparseread import _assert_same_read

WORDS = [f"w{i}" for i in range(60)]
STEPS = {"compact_step_seconds": 1e-9, "max_segments": 2}


def _store(path, capacity, **runtime):
    return CooccurrenceStore.create(
        str(path), capacity=capacity, chunk_size=4, shard_size=8, admit_threshold=1,
        **runtime,
    )


def _dense(state):
    """The committed matrix as {(word, word): value} over non-zero entries."""
    c, w = state.cooccurrence.counts, state.words
    i, j = np.nonzero(c)
    return {(w[a], w[b]): c[a, b] for a, b in zip(i.tolist(), j.tolist())}


def _assert_same(got, want):
    a, b = _dense(got), _dense(want)
    assert a.keys() == b.keys()
    for k, v in b.items():
        assert a[k] == pytest.approx(v, rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(got.cooccurrence.unigram, want.cooccurrence.unigram, rtol=1e-12)
    assert got.words == want.words


def _folding(url):
    root = zarr.open_group(
        open_repo(url)[0].readonly_session(branch="main").store, mode="r"
    )
    return root.attrs["state"].get("folding")


def _docs(rng, n, words):
    return [[str(w) for w in rng.choice(words, size=rng.integers(0, 10))] for _ in range(n)]


@pytest.mark.slow  # 10-40 s: `make test` runs it, `make test-fast` does not
@settings(max_examples=3, deadline=None)
# Evictions before a fold began: their new words' entries move into the rewritten shards,
# where readers must take them (a first version lost them until the fold ended).
@example(seed=0, capacity=24, reopen_at=3)
@given(seed=st.integers(0, 2**31 - 1), capacity=st.sampled_from([40, 24]),
       reopen_at=st.integers(3, 10))
def test_every_fold_step_holds_the_matrix_of_a_store_that_never_compacts(
    tmp_path_factory, seed, capacity, reopen_at
):
    # capacity 24 < 60 words: admissions and evictions happen while folds are in progress.
    tmp = tmp_path_factory.mktemp("fold")
    rng = np.random.default_rng(seed)
    stepped = _store(tmp / "stepped", capacity, **STEPS)
    plain = _store(tmp / "plain", capacity, max_segments=10**6)
    from anchorstream.store.sparseread import read_version_sparse

    seen_partial = seen_done = False
    previous = sparse = None
    for k in range(24):
        docs = _docs(rng, int(rng.integers(1, 6)), WORDS[: 20 + 3 * k])
        for s in (stepped, plain):
            s.add(docs)
            s.checkpoint({"k": k})
        if k == reopen_at:
            # A writer that opens the store mid-fold carries the fold on.
            stepped = CooccurrenceStore.open(str(tmp / "stepped"), **STEPS)
        # The incremental read a refresher does (into the previous read's buffer)...
        caught_up = None
        if previous is not None:
            buffer, since = previous
            caught_up = open_committed(str(tmp / "stepped"), out=buffer, since=since)
        # ... agrees with a full read (into a fresh buffer, the base of the next catch-up),
        # which holds the matrix of the store that never compacts.
        n = capacity
        buffer = np.empty(n * n + 16)
        got = open_committed(str(tmp / "stepped"), out=buffer)
        _assert_same(got, open_committed(str(tmp / "plain")))
        if caught_up is not None:
            _assert_same(caught_up, got)
        # The sparse read a low-rank refresher does, each one caught up from the last.
        url = str(tmp / "stepped")
        sparse = read_version_sparse(open_repo(url)[0], url, None, previous=sparse)
        _assert_same_read(sparse, got)
        previous = (buffer, got.dense)
        fold = _folding(str(tmp / "stepped"))
        seen_partial |= bool(fold) and fold["done"] > 0
        seen_done |= fold is None and k > 3
    assert seen_partial, "no fold was ever caught between two steps"
    assert seen_done


@pytest.mark.slow  # 5-10 s: `make test` runs it, `make test-fast` does not
def test_fold_steps_end_by_dropping_the_generation(tmp_path):
    store = _store(tmp_path / "s", 40, **STEPS)
    rng = np.random.default_rng(0)
    messages = []
    for k in range(40):
        store.add(_docs(rng, 4, WORDS[:40]))
        store.checkpoint({"k": k})
    for info in store._repo.ancestry(branch="main"):
        messages.append(info.message)
    partial = [m for m in messages if "shard pairs" in m]
    done = [m for m in messages if m.startswith("compact") and m.endswith("(done)")]
    assert partial and done
    # A fold takes at most one step per shard pair (15), one per checkpoint, so the segments
    # stay bounded: the generation being folded (at most 3 + 15, those that waited for the
    # previous fold) plus those committed meanwhile (15).
    assert len(store._state.segments) <= 3 + 2 * 15
    # An explicit compact() finishes a fold in progress without counting anything twice.
    plain = open_committed(str(tmp_path / "s"))
    store.compact()
    assert _folding(str(tmp_path / "s")) is None and store._state.segments == ()
    _assert_same(open_committed(str(tmp_path / "s")), plain)


def test_a_step_is_bounded_by_its_budget_not_the_matrix(tmp_path):
    # With a budget of ~0 a step either reads the band of segments it works on (kept for the
    # next steps) or rewrites one shard pair: the fold advances without finishing at once.
    store = _store(tmp_path / "s", 40, compact_step_seconds=1e-9, max_segments=1)
    rng = np.random.default_rng(1)
    done = []
    for _ in range(4):
        store.add(_docs(rng, 30, WORDS[:40]))
        store.checkpoint()
        fold = _folding(str(tmp_path / "s"))
        done.append(None if fold is None else fold["done"])
    assert done[0] is None and done[1] == 0  # the generation begins; its first band is read
    assert 1 <= done[2] <= done[3] < 15
    assert store.last_checkpoint_seconds["compact"] > 0


def test_format_1_stores_are_read_and_marked_2_by_their_first_fold_step(tmp_path):
    url = str(tmp_path / "s")
    store = _store(url, 40, **STEPS)
    # Mark it version 1, as stores written before folds in steps are.
    session = store._repo.writable_session("main")
    root = zarr.open_group(session.store, mode="r+")
    meta = dict(root.attrs[store_format.META])
    meta["format_version"] = 1
    root.attrs[store_format.META] = meta
    session.commit("as format 1")
    store = CooccurrenceStore.open(url, **STEPS)
    rng = np.random.default_rng(2)
    for k in range(4):
        store.add(_docs(rng, 5, WORDS[:40]))
        store.checkpoint({"k": k})
    open_committed(url)
    root = zarr.open_group(store._repo.readonly_session(branch="main").store, mode="r")
    assert root.attrs[store_format.META]["format_version"] == store_format.FORMAT_VERSION == 2


def _forbid_full_reads(monkeypatch):
    """Make a full read (dense or sparse) fail the test: only catch-ups may read."""
    import anchorstream.store.reading as reading_mod
    import anchorstream.store.sparseread as sparse_mod

    def no_full_read(*args, **kwargs):
        raise AssertionError("a full read")

    monkeypatch.setattr(reading_mod, "_densify", no_full_read)
    monkeypatch.setattr(sparse_mod, "sparse_upper", no_full_read)


def test_a_read_catches_up_across_the_start_of_a_fold(tmp_path, monkeypatch):
    # A fold begins at a checkpoint with the segment that checkpoint committed, which a read
    # before it never saw: a later incremental read takes that segment whole, also where the
    # fold has moved its entries into shards (the read never reads the base), dense and
    # sparse, without a full read.
    import anchorstream.store.sparseread as sparse_mod

    url = str(tmp_path / "s")
    store = _store(url, 40, compact_step_seconds=1e-9, max_segments=1)
    rng = np.random.default_rng(3)
    store.add(_docs(rng, 30, WORDS[:40]))
    store.checkpoint()
    assert _folding(url) is None
    buffer = np.empty(40 * 40)
    dense_before = open_committed(url, out=buffer)
    repo, _ = open_repo(url)
    sparse_before = sparse_mod.read_version_sparse(repo, url, None)
    for _ in range(2):  # the fold begins (its first band read), then rewrites a shard pair
        store.add(_docs(rng, 30, WORDS[:40]))
        store.checkpoint()
    fold = _folding(url)
    assert fold is not None and fold["done"] >= 1
    assert not set(fold["segments"]) <= dense_before.dense.segments
    full = open_committed(url)

    _forbid_full_reads(monkeypatch)
    dense = open_committed(url, out=buffer, since=dense_before.dense)
    _assert_same(dense, full)
    repo, _ = open_repo(url)
    _assert_same_read(sparse_mod.read_version_sparse(repo, url, None, previous=sparse_before),
                      full)


def test_a_read_catches_up_across_the_end_of_a_fold(tmp_path, monkeypatch):
    # A read made while a fold was in progress holds all the fold's segments; once the fold
    # ends (its segments dropped, the base moved) the next incremental read adds only the
    # segments committed since, dense and sparse, without a full read.
    import anchorstream.store.sparseread as sparse_mod

    url = str(tmp_path / "s")
    store = _store(url, 40, compact_step_seconds=1e-9, max_segments=1)
    rng = np.random.default_rng(4)
    for _ in range(2):
        store.add(_docs(rng, 30, WORDS[:40]))
        store.checkpoint()
    fold = set(_folding(url)["segments"])
    buffer = np.empty(40 * 40)
    dense_before = open_committed(url, out=buffer)
    repo, _ = open_repo(url)
    sparse_before = sparse_mod.read_version_sparse(repo, url, None)
    assert fold <= dense_before.dense.segments
    for _ in range(40):  # one shard pair a checkpoint: 15 pairs
        store.add(_docs(rng, 5, WORDS[:40]))
        store.checkpoint()
        if not fold <= {seg.name for seg in store._state.segments}:
            break
    else:
        raise AssertionError("the fold never ended")
    full = open_committed(url)

    _forbid_full_reads(monkeypatch)
    assert np.array_equal(full.slots, dense_before.slots)  # as the dense catch-up needs
    _assert_same(open_committed(url, out=buffer, since=dense_before.dense), full)
    repo, _ = open_repo(url)
    _assert_same_read(sparse_mod.read_version_sparse(repo, url, None, previous=sparse_before),
                      full)
