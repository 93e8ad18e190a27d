"""The partitioned layout: per-partition stores sum to one store; the fence between writers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError, StoreConflictError
from anchorstream.store import (
    CooccurrenceStore,
    open_committed,
    partition_url,
    pin_partitions,
    read_partitions,
)

WORDS = [f"w{i}" for i in range(12)]


def _by_word(state):
    """The counts, unigram and doc_freq as dicts keyed by word (pairs for the matrix)."""
    c, w = state.cooccurrence, state.words
    pairs = {(w[i], w[j]): c.counts[i, j] for i in range(len(w)) for j in range(len(w))
             if c.counts[i, j] != 0.0}
    return pairs, dict(zip(w, c.unigram)), dict(zip(w, c.doc_freq)), c.num_docs, c.num_tokens


def _assert_same(a, b, rtol=1e-9):
    pa, ua, da, na, ta = _by_word(a)
    pb, ub, db, nb, tb = _by_word(b)
    assert (na, ta) == (nb, tb)
    assert set(pa) == set(pb)
    for k in pa:
        assert pa[k] == pytest.approx(pb[k], rel=rtol, abs=1e-300)
    for x, y in ((ua, ub), (da, db)):
        assert {k for k, v in x.items() if v} == {k for k, v in y.items() if v}
        for k, v in x.items():
            assert v == pytest.approx(y.get(k, 0.0), rel=rtol, abs=1e-300)


def _store(url, **kw):
    return CooccurrenceStore.create(url, capacity=32, admit_threshold=1, chunk_size=4,
                                    shard_size=8, length_cap=kw.pop("length_cap", 25.0), **kw)


documents = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=9),
                     min_size=1, max_size=40)


def _fill_partitions(root, docs, data) -> int:
    """Spread ``docs`` over 1-4 partition stores under ``root`` (owners and checkpoint cadence
    drawn from ``data``), each checkpointed with its offset at the end; returns their number."""
    n_parts = data.draw(st.integers(1, 4), label="partitions")
    owner = data.draw(st.lists(st.integers(0, n_parts - 1), min_size=len(docs),
                               max_size=len(docs)), label="owners")
    every = data.draw(st.integers(1, 7), label="checkpoint every")
    stores = {p: _store(partition_url(root, "t", p)) for p in range(n_parts)}
    for i, (doc, p) in enumerate(zip(docs, owner)):
        stores[p].add([doc])
        if i % every == 0:
            stores[p].checkpoint({f"kafka:t:{p}": i + 1})
    for p, s in stores.items():
        s.checkpoint({f"kafka:t:{p}": len(docs)})
    return n_parts


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=documents, data=st.data())
def test_any_split_over_partitions_sums_to_one_store(tmp_path_factory, docs, data):
    """Vocabulary not binding (admit at first sight, room for every word): the summed
    partition states equal one store fed all documents, to 1e-9 relative."""
    root = tmp_path_factory.mktemp("parts")
    n_parts = _fill_partitions(root, docs, data)
    single = _store(root / "single")
    single.add(docs)
    single.checkpoint()
    summed = read_partitions(root, [("t", p) for p in range(n_parts)])
    _assert_same(summed, open_committed(root / "single"))
    assert summed.n_docs_added == len(docs)
    assert set(summed.partitions) == {f"kafka:t:{p}" for p in range(n_parts)}


def test_missing_partitions_count_as_empty_and_pins_name_the_version(tmp_path, rng):
    s = _store(partition_url(tmp_path, "t", 1))
    s.add([["w1", "w2", "w3"], ["w2", "w3"]])
    v = s.checkpoint({"kafka:t:1": 2, "kafka:topic_ids": {"t": "id1"}})
    pins = pin_partitions(tmp_path, [("t", 0), ("t", 1)])
    assert pins == {"kafka:t:0": None, "kafka:t:1": v}
    state = read_partitions(tmp_path, [("t", 0), ("t", 1)], versions=pins)
    assert state.partitions["kafka:t:0"]["version"] is None
    assert state.partitions["kafka:t:1"] == {"version": v, "offset": 2, "n_docs_added": 2,
                                             "n_words": 3, "n_pairs": None}
    assert state.offsets == {"kafka:t:1": 2, "kafka:topic_ids": {"t": "id1"}}
    # The same pins give the same id; a new commit a new one.
    assert read_partitions(tmp_path, [("t", 0), ("t", 1)]).version == state.version
    s.add([["w1", "w4"]])
    s.checkpoint({"kafka:t:1": 3})
    assert read_partitions(tmp_path, [("t", 0), ("t", 1)]).version != state.version


def test_max_words_keeps_the_most_frequent_words_of_the_union(tmp_path):
    a = _store(partition_url(tmp_path, "t", 0))
    a.add([["w1", "w2"], ["w1", "w3"], ["w1", "w2"]])
    a.checkpoint()
    b = _store(partition_url(tmp_path, "t", 1))
    b.add([["w2", "w4"], ["w5", "w4"]])
    b.checkpoint()
    state = read_partitions(tmp_path, [("t", 0), ("t", 1)], max_words=3)
    # document frequencies: w2 3, w1 3, w4 2, w3 1, w5 1
    assert sorted(state.words) == ["w1", "w2", "w4"]
    full = read_partitions(tmp_path, [("t", 0), ("t", 1)])
    i = [full.words.index(w) for w in state.words]
    assert np.array_equal(state.cooccurrence.counts, full.cooccurrence.counts[np.ix_(i, i)])


def test_partitions_weighted_differently_or_forgetting_are_refused(tmp_path):
    for p, cap in ((0, 25.0), (1, 2)):
        s = _store(partition_url(tmp_path, "t", p), length_cap=cap)
        s.add([["w1", "w2"]])
        s.checkpoint()
    with pytest.raises(InputError, match="length_cap"):
        read_partitions(tmp_path, [("t", 0), ("t", 1)])
    with pytest.raises(InputError, match="cannot name a directory"):
        partition_url(tmp_path, "a/b", 0)


def test_a_stale_writer_is_fenced_and_never_rebases(tmp_path):
    """Two owners of one partition (a rebalance): the one whose branch moved cannot commit,
    whichever commits first, and its failed checkpoint changes nothing committed."""
    url = partition_url(tmp_path, "t", 0)
    _store(url).checkpoint()
    old = CooccurrenceStore.open(url)
    new = CooccurrenceStore.open(url)
    old.add([["w1", "w2"]])
    new.add([["w3", "w4"]])
    v_new = new.checkpoint({"kafka:t:0": 1})
    with pytest.raises(StoreConflictError, match="another writer committed first"):
        old.checkpoint({"kafka:t:0": 1})
    state = open_committed(url)
    assert state.version == v_new and sorted(state.words) == ["w3", "w4"]
    # The new owner goes on; the old one reopens and resumes from the stored offsets.
    reopened = CooccurrenceStore.open(url)
    assert reopened.offsets == {"kafka:t:0": 1} and reopened.version == v_new
    new.add([["w1", "w3"]])
    new.checkpoint({"kafka:t:0": 2})
    with pytest.raises(StoreConflictError):
        reopened.checkpoint({"kafka:t:0": 5})


def _dense_of(sparse_state):
    """A sparse partitioned read with its counts densified (for comparing by word)."""
    return sparse_state.__class__(sparse_state.cooccurrence.to_dense(),
                                  *[getattr(sparse_state, f) for f in
                                    ("words", "slots", "offsets", "version", "clock",
                                     "n_docs_added", "dense", "partitions")])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=documents, data=st.data())
def test_the_sparse_sum_equals_the_dense_sum(tmp_path_factory, docs, data):
    """The low-rank refresh's read (each partition read shard by shard, summed as CSR in the
    union's positions) equals the dense read_partitions: counts, vectors, offsets, the kept
    words under max_words, to 1e-9 relative. Small shards and a small capacity so that
    partitions span several shards and their vocabularies differ in order."""
    from anchorstream.stats.sparse import SparseCooccurrence

    root = tmp_path_factory.mktemp("sparse")
    n_parts = _fill_partitions(root, docs, data)
    max_words = data.draw(st.one_of(st.none(), st.integers(1, len(WORDS))), label="max_words")
    parts = [("t", p) for p in range(n_parts)]
    pins = pin_partitions(root, parts)
    dense = read_partitions(root, parts, versions=pins, max_words=max_words)
    sparse = read_partitions(root, parts, versions=pins, max_words=max_words, sparse=True)
    assert isinstance(sparse.cooccurrence, SparseCooccurrence)
    assert sparse.words == dense.words
    _assert_same(_dense_of(sparse), dense)
    c, d = sparse.cooccurrence, dense.cooccurrence
    assert np.allclose(c.counts_dense(), d.counts, rtol=1e-9, atol=0)
    assert c.length_cap == d.length_cap and c.total_weight() == pytest.approx(d.total_weight())
    # The same partitions' entries, but the stored pairs, which only a sparse read counts.
    pairs = [i.pop("n_pairs") for i in sparse.partitions.values()]
    assert [i.pop("n_pairs") for i in dense.partitions.values()] == [None] * len(pairs)
    assert (sparse.offsets, sparse.partitions, sparse.version, sparse.n_docs_added) == (
        dense.offsets, dense.partitions, dense.version, dense.n_docs_added)
    if max_words is None:  # every stored pair of the sum is one of some partition's
        assert sum(pairs) >= c.upper.nnz


def test_the_sparse_read_refuses_what_the_dense_read_refuses(tmp_path):
    for p, cap in ((0, 25.0), (1, 2)):
        s = _store(partition_url(tmp_path, "t", p), length_cap=cap)
        s.add([["w1", "w2"]])
        s.checkpoint()
    with pytest.raises(InputError, match="length_cap"):
        read_partitions(tmp_path, [("t", 0), ("t", 1)], sparse=True)


@pytest.mark.parametrize("sparse", [False, True])
def test_the_partitions_waiting_documents_sum_as_counting_them_would(tmp_path, sparse):
    """Partitions with delay lines (``count_delay``): the sum's ``waiting`` added to its
    counts equals the sum of the partitions once each has counted its waiting documents, by
    the one-time read and by the reader that reads only what moved."""
    from anchorstream.store.delay import add_waiting
    from anchorstream.store.partread import PartitionReader

    rng = np.random.default_rng(5)
    stores = {p: _store(partition_url(tmp_path, "t", p), count_delay=7 + 5 * p)
              for p in range(3)}
    reader = PartitionReader(tmp_path, sparse=sparse)
    parts = [("t", p) for p in stores]
    for step in range(2):
        for p, s in stores.items():
            s.add([list(rng.choice(WORDS, size=rng.integers(0, 8))) for _ in range(30)])
            s.checkpoint({f"kafka:t:{p}": 30 * (step + 1)})
        got = [read_partitions(tmp_path, parts, sparse=sparse), reader.read(parts)]
    for p, s in stores.items():
        assert len(s.delay_line) == 7 + 5 * p
        s.flush_delayed()
        s.checkpoint()
    want = read_partitions(tmp_path, parts)
    assert want.waiting is None
    for state in got:
        assert state.waiting is not None and state.words == want.words
        seen = add_waiting(state.cooccurrence, state.waiting)
        if sparse:
            seen = seen.to_dense()
        np.testing.assert_allclose(seen.counts, want.cooccurrence.counts, rtol=1e-12,
                                   atol=1e-15)
        np.testing.assert_allclose(seen.doc_freq, want.cooccurrence.doc_freq, rtol=1e-12)
        assert seen.num_docs == want.cooccurrence.num_docs
        assert seen.num_tokens == want.cooccurrence.num_tokens
