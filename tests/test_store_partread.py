"""The incremental partitioned read: only the partitions that moved are read, and the sum is
always the full read's (``read_partitions``) of the same pinned versions."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.store.reading as reading_mod
import anchorstream.store.sparseread as sparseread_mod
from anchorstream.errors import InputError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.store import CooccurrenceStore, open_committed, partition_url, read_partitions
from anchorstream.store.partread import PAIR_BYTES, PartitionReader

WORDS = [f"w{i}" for i in range(16)]
PARTS = [("t", p) for p in range(4)]


def _dense(state) -> np.ndarray:
    c = state.cooccurrence
    if hasattr(c, "upper"):
        return c.counts_dense()
    return np.asarray(c.counts)


def assert_same_sum(inc, full, exact_vectors=True):
    """The same words (the reader keeps its own order), vectors, totals, offsets and version
    exactly (to 1e-12 with decay: the factors are taken in another order), and counts to
    1e-12 of the largest count (an in-place update adds and subtracts)."""
    assert sorted(inc.words) == sorted(full.words) and len(set(inc.words)) == len(inc.words)
    assert inc.version == full.version
    assert inc.offsets == full.offsets and inc.partitions == full.partitions
    assert (inc.n_docs_added, inc.clock) == (full.n_docs_added, full.clock)
    a, b = inc.cooccurrence, full.cooccurrence
    assert a.length_cap == b.length_cap
    at = np.asarray([inc.words.index(w) for w in full.words], dtype=np.int64)
    check = (np.testing.assert_array_equal if exact_vectors
             else lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-12))
    check(np.asarray([a.num_docs, a.num_tokens], float), [b.num_docs, b.num_tokens])
    check(a.unigram[at], b.unigram)
    check(a.doc_freq[at], b.doc_freq)
    A, B = _dense(inc)[np.ix_(at, at)], _dense(full)
    assert (A >= 0).all()
    scale = max(float(np.abs(B).max(initial=0.0)), 1e-300)
    np.testing.assert_allclose(A, B, rtol=0, atol=1e-12 * scale)


def _docs(rng, n, lo):
    """``n`` documents drawing from a window of 6 words starting at ``lo`` (a drifting topic:
    with a small capacity, words fall out of use and are evicted)."""
    pool = WORDS[lo:lo + 6]
    return [list(rng.choice(pool, size=rng.integers(0, 8))) for _ in range(n)]


def _create(root, p, capacity):
    return CooccurrenceStore.create(partition_url(root, "t", p), capacity=capacity,
                                    admit_threshold=1, chunk_size=2, shard_size=4,
                                    sketch_size=4, length_cap=25.0)


# Dense and sparse reads apart, eight histories each: two tests that run on two workers,
# where one of 16 histories was the suite's longest test (290 s in CI, 2026-12-06).
@pytest.mark.parametrize("sparse", [False, True])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), max_words=st.sampled_from([None, 9]),
       capacity=st.sampled_from([6, 32]), bound=st.sampled_from([None, None, 0, 3000]))
def test_incremental_reads_equal_full_reads(sparse, seed, max_words, capacity, bound):
    # Random commits to random partitions (partition 3 appears only from step 4 on), with
    # evictions (a full vocabulary of a drifting topic, and by hand: a slot changes word in
    # one partition) and compactions (no catch-up possible): after every step the reader's
    # sum equals a full read of the same heads.
    rng = np.random.default_rng(seed)
    root = f"memory://partread-{uuid.uuid4().hex}"
    stores: dict[int, CooccurrenceStore] = {}
    offsets = dict.fromkeys(range(4), 0)
    # ``bound``: the reader's memory bound; dense, 3000 bytes is passed once the partitions
    # hold about eight words each, so reads go from kept to full and stay full; sparse, once
    # they hold about 60 pairs in all.
    reader = PartitionReader(root, max_words=max_words, sparse=sparse, max_kept_bytes=bound)
    evicted, kept, last_pairs, last_sum = False, False, {}, None
    for step in range(12):
        available = [0, 1, 2] + ([3] if step >= 4 else [])
        movers = sorted(rng.choice(available, size=rng.integers(0, len(available) + 1),
                                   replace=False).tolist())
        for p in movers:
            s = stores.get(p) or stores.setdefault(p, _create(root, p, capacity))
            n = int(rng.integers(1, 6))
            s.add(_docs(rng, n, lo=min(step, 10)))
            offsets[p] += n
            present = [w for w in s.vocabulary.words if w]
            if present and rng.random() < 0.2:
                s.evict(present[0])
                evicted = True
            s.checkpoint({f"kafka:t:{p}": offsets[p]})
            if rng.random() < 0.15:
                s.compact()
        inc = reader.read(PARTS)
        was_kept, kept = kept, reader.last["kept"]
        if sparse:
            # Checked against the last read's stored pairs before a read (a read past it is
            # full; a partition or sum not read yet counts every pair of its words), and
            # against this read's after it (a kept read past it forgets).
            sizes = {k: i["n_words"] for k, i in inc.partitions.items() if i["version"]}
            pairs = sum(last_pairs.get(k, n * (n + 1) // 2) for k, n in sizes.items())
            V = len(inc.words)
            before = PAIR_BYTES * (pairs + 2 * (min(V * (V + 1) // 2, pairs)
                                                if last_sum is None else last_sum))
            last_pairs = {k: inc.partitions[k]["n_pairs"] for k in sizes}
            last_sum = inc.cooccurrence.upper.nnz
            need = PAIR_BYTES * (sum(last_pairs.values()) + 2 * last_sum)
            within = bound is None or before <= bound
            assert kept == (within and (bound is None or need <= bound))
        else:
            need = 8 * (sum(i["n_words"] ** 2 for i in inc.partitions.values())
                        + 2 * len(inc.words) ** 2)
            within = kept
            assert kept == (bound is None or need <= bound)
        # Only a read after a kept read, itself within the bound, reads no more than what moved.
        assert reader.last["moved"] == (len(movers) if was_kept and within
                                        else reader.last["partitions"])
        assert_same_sum(inc, read_partitions(root, PARTS, max_words=max_words, sparse=sparse))
    evicted = evicted or any((s._reset_seq > 0).any() for s in stores.values())
    assert evicted or capacity == 32


@pytest.mark.parametrize("sparse", [False, True])
def test_new_and_dropped_words_move_the_sum_in_place(sparse, rng):
    # Partition 0 gains words no partition had and loses one (evicted) that only it had: the
    # sum's rows move (one gather) instead of being rebuilt, and equal the full read.
    root = f"memory://partread-{uuid.uuid4().hex}"
    stores = _three_partitions(root, rng)
    parts = [("t", p) for p in range(3)]
    stores[0].add([["w9", "w10"]] * 3)
    stores[0].checkpoint({"kafka:t:0": 34})
    reader = PartitionReader(root, sparse=sparse)
    reader.read(parts)
    stores[0].add([["w12", "w13", "w0"], ["w12", "w14"]])
    stores[0].evict("w9")
    stores[0].checkpoint({"kafka:t:0": 36})
    inc = reader.read(parts)
    assert reader.last == {"partitions": 3, "moved": 1, "in_place": True, "kept": True}
    assert {"w12", "w13", "w14"} <= set(inc.words) and "w9" not in inc.words
    assert_same_sum(inc, read_partitions(root, parts, sparse=sparse))


def _three_partitions(root, rng):
    stores = [_create(root, p, 32) for p in range(3)]
    for p, s in enumerate(stores):
        s.add(_docs(rng, 30, lo=0) + [WORDS[:6]])  # every partition holds all six words
        s.checkpoint({f"kafka:t:{p}": 31})
    return stores


@pytest.mark.parametrize("sparse", [False, True])
def test_a_moved_partition_is_caught_up_from_its_new_segments_and_summed_in_place(
        sparse, rng, monkeypatch):
    root = f"memory://partread-{uuid.uuid4().hex}"
    stores = _three_partitions(root, rng)
    parts = [("t", p) for p in range(3)]
    reader = PartitionReader(root, sparse=sparse)
    first = reader.read(parts)
    assert reader.last == {"partitions": 3, "moved": 3, "in_place": False, "kept": True}
    assert reader.read(parts).version == first.version
    assert reader.last["moved"] == 0

    stores[1].add(_docs(rng, 10, lo=0))
    stores[1].checkpoint({"kafka:t:1": 41})

    def no_full_read(*args, **kwargs):
        raise AssertionError("a full read")

    # Only partition 1 is read, from its new segment alone; the sum is updated in place.
    monkeypatch.setattr(reading_mod, "_densify", no_full_read)
    monkeypatch.setattr(sparseread_mod, "sparse_upper", no_full_read)
    inc = reader.read(parts)
    assert reader.last == {"partitions": 3, "moved": 1, "in_place": True, "kept": True}
    monkeypatch.undo()
    assert inc.offsets["kafka:t:1"] == 41
    assert_same_sum(inc, read_partitions(root, parts, sparse=sparse))


def test_a_failed_read_leaves_the_reader_consistent(rng, monkeypatch):
    root = f"memory://partread-{uuid.uuid4().hex}"
    stores = _three_partitions(root, rng)
    parts = [("t", p) for p in range(3)]
    reader = PartitionReader(root)
    reader.read(parts)
    stores[2].add(_docs(rng, 10, lo=2))
    stores[2].checkpoint({"kafka:t:2": 41})

    def broken(*args, **kwargs):
        raise OSError("the object store went away")

    monkeypatch.setattr(reading_mod.EntryReader, "add_into", broken)
    with pytest.raises(OSError):
        reader.read(parts)
    monkeypatch.undo()
    # The half-updated partition is read again in full, the sum rebuilt.
    assert_same_sum(reader.read(parts), read_partitions(root, parts))
    assert reader.last["moved"] == 1 and not reader.last["in_place"]


# ------------------------------------------------------------------------- decay in seconds
SECONDS = Forgetting(half_life=40.0, unit="seconds")


def _timed(rng, n, t0):
    """``n`` documents and their timestamps from ``t0`` on (not in order)."""
    docs = [list(rng.choice(WORDS, size=rng.integers(0, 8))) for _ in range(n)]
    return docs, (t0 + rng.uniform(0, 60, size=n)).tolist()


def _timed_store(url, forgetting=SECONDS):
    return CooccurrenceStore.create(url, capacity=32, admit_threshold=1, chunk_size=2,
                                    shard_size=4, length_cap=25.0, forgetting=forgetting)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_decay_in_seconds_sums_to_one_store_at_the_latest_clock(sparse, rng):
    # Partitions whose clocks differ (partition 2 stops early): every partition is brought to
    # the latest clock, so the sum equals one store fed every document, by the full read and
    # by the incremental reader (the sum decays in place as the latest clock moves).
    root = f"memory://partread-{uuid.uuid4().hex}"
    single = _timed_store(f"memory://single-{uuid.uuid4().hex}")
    stores = [_timed_store(partition_url(root, "t", p)) for p in range(3)]
    parts = [("t", p) for p in range(3)]
    reader = PartitionReader(root, sparse=sparse)
    in_place = []
    for step in range(6):
        for p, s in enumerate(stores):
            if p == 2 and step >= 2 or (step >= 3 and p != step % 2):
                continue
            docs, stamps = _timed(rng, 8, t0=100.0 * step)
            s.add(docs, stamps)
            s.checkpoint({f"kafka:t:{p}": step})
            single.add(docs, stamps)
        single.checkpoint()
        full = read_partitions(root, parts, sparse=sparse)
        one = open_committed(single.url)
        assert full.clock == one.clock
        by_word = np.asarray([one.words.index(w) for w in full.words])
        np.testing.assert_allclose(_dense(full), one.cooccurrence.counts[np.ix_(by_word,
                                                                                by_word)],
                                   rtol=1e-9, atol=1e-12 * one.cooccurrence.counts.max())
        np.testing.assert_allclose(full.cooccurrence.unigram,
                                   one.cooccurrence.unigram[by_word], rtol=1e-9)
        assert full.cooccurrence.num_docs == pytest.approx(one.cooccurrence.num_docs, rel=1e-9)
        assert_same_sum(reader.read(parts), full, exact_vectors=False)
        in_place.append(reader.last["in_place"])
    assert any(in_place)


def test_forgetting_counted_in_documents_or_different_decays_is_refused(tmp_path):
    for name, forgetting in (("docs", Forgetting(half_life=50.0)),
                             ("windows", Forgetting(window=10.0, n_windows=2))):
        s = _timed_store(partition_url(tmp_path / name, "t", 0), forgetting)
        s.add([["w1", "w2"]])
        s.checkpoint()
        with pytest.raises(InputError, match="by windows or by a half-life in documents"):
            read_partitions(tmp_path / name, [("t", 0)])
    for p, h in ((0, 40.0), (1, 80.0)):
        s = _timed_store(partition_url(tmp_path / "mixed", "t", p),
                         Forgetting(half_life=h, unit="seconds"))
        s.add([["w1", "w2"]], [1.0])
        s.checkpoint()
    with pytest.raises(InputError, match="weighted differently \\(forgetting"):
        PartitionReader(tmp_path / "mixed").read([("t", 0), ("t", 1)])


def test_a_dense_reader_past_its_memory_bound_reads_in_full_and_keeps_nothing(rng):
    # Three partitions of six words: kept, they and the sum take 8 (3·36 + 2·36) = 1440
    # bytes. Under a bound of 1500 the reads are kept; once partition 0 has three more words
    # (8 (81 + 72 + 2·81) = 2520) every read is a full one, and equals read_partitions.
    root = f"memory://partread-{uuid.uuid4().hex}"
    stores = _three_partitions(root, rng)
    parts = [("t", p) for p in range(3)]
    reader = PartitionReader(root, max_kept_bytes=1500)
    reader.read(parts)
    assert reader.last == {"partitions": 3, "moved": 3, "in_place": False, "kept": True}
    reader.read(parts)
    assert reader.last["moved"] == 0
    stores[0].add([["w6", "w7", "w8"]] * 2)
    stores[0].checkpoint({"kafka:t:0": 33})
    for _ in range(2):  # nothing kept: every partition is read again, each time
        inc = reader.read(parts)
        assert reader.last == {"partitions": 3, "moved": 3, "in_place": False, "kept": False}
        assert_same_sum(inc, read_partitions(root, parts))
    with pytest.raises(ValueError, match="max_kept_bytes"):
        PartitionReader(root, max_kept_bytes=-1)


def test_a_sparse_reader_past_its_memory_bound_reads_in_full_and_keeps_nothing():
    # Sparse, the need is 12 bytes for each pair every partition stored and twice the sum's,
    # known once read. A partition not read yet counts every pair of its six words (21), more
    # than these store, so under a bound of exactly what the reads need the first read is a
    # full one; the next is kept; once partition 0 has more pairs a kept read finds itself
    # past the bound and lets go of what it kept, and every read after is full.
    root = f"memory://partread-{uuid.uuid4().hex}"
    stores = [_create(root, p, 32) for p in range(3)]
    for p, s in enumerate(stores):
        s.add([WORDS[0:2], WORDS[2:4], WORDS[4:6]] * 10)
        s.checkpoint({f"kafka:t:{p}": 30})
    parts = [("t", p) for p in range(3)]
    first = read_partitions(root, parts, sparse=True)
    assert [i["n_words"] for i in first.partitions.values()] == [6, 6, 6]
    pairs = sum(i["n_pairs"] for i in first.partitions.values())
    need = PAIR_BYTES * (pairs + 2 * first.cooccurrence.upper.nnz)
    assert need < PAIR_BYTES * (3 * 21 + 2 * 21)
    reader = PartitionReader(root, sparse=True, max_kept_bytes=need)
    reader.read(parts)
    assert reader.last == {"partitions": 3, "moved": 3, "in_place": False, "kept": False}
    reader.read(parts)
    assert reader.last == {"partitions": 3, "moved": 3, "in_place": False, "kept": True}
    reader.read(parts)
    assert reader.last["moved"] == 0 and reader.last["kept"]
    stores[0].add([["w6", "w7", "w8", "w0"]] * 2)
    stores[0].checkpoint({"kafka:t:0": 33})
    inc = reader.read(parts)
    assert reader.last["moved"] == 1 and not reader.last["kept"]
    assert reader._parts == {} and reader._counts is None
    assert_same_sum(inc, read_partitions(root, parts, sparse=True))
    inc = reader.read(parts)
    assert reader.last == {"partitions": 3, "moved": 3, "in_place": False, "kept": False}
    assert_same_sum(inc, read_partitions(root, parts, sparse=True))
