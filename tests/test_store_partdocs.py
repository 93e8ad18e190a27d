"""Document statistics of the partitioned layout: split statistic and sketch sum exactly over
the partitions; the reservoirs merge by key into a sample of the union."""

from __future__ import annotations

import uuid
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from anchorstream.stats import wordpatterns as wp
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.documents import DocStatsSettings, reservoir_keys
from anchorstream.store import CooccurrenceStore, partition_url, read_partitions
from anchorstream.store.partdocs import (
    documents_over,
    partition_seed,
    read_partition_documents,
)
from anchorstream.store.partread import PartitionReader

WORDS = [f"w{i}" for i in range(30)]
ALL = DocStatsSettings(split=True, n_projections=6, reservoir=15, seed=5)


def _stores(root, rng, sizes):
    """Partition stores of ``sizes`` documents each (room for every word: no eviction), each
    with its partition seed; returns ``{p: (store, docs)}``."""
    out = {}
    for p, n in enumerate(sizes):
        key = f"kafka:t:{p}"
        settings = replace(ALL, seed=partition_seed(ALL.seed, key))
        s = CooccurrenceStore.create(partition_url(root, "t", p), capacity=64,
                                     admit_threshold=1, document_stats=settings)
        docs = [list(rng.choice(WORDS[p * 5:p * 5 + 15], size=rng.integers(0, 9)))
                for _ in range(n)]
        s.add(docs[: n // 2])
        s.checkpoint({key: n // 2})
        s.add(docs[n // 2:])
        s.checkpoint({key: n})
        out[p] = (s, docs)
    return out


def _by_union(store, docs, words):
    """``docs`` as counts over the store's slots, and the union position of each slot."""
    slot = {w: i for i, w in enumerate(store.vocabulary.words) if w is not None}
    X = sp.lil_matrix((len(docs), store.capacity))
    for i, doc in enumerate(docs):
        for t in doc:
            X[i, slot[t]] += 1
    pos = np.full(store.capacity, -1)
    for w, s in slot.items():
        pos[s] = words.index(w)
    return X.tocsr(), pos


def test_combined_statistics_are_the_partitions_batch_statistics_summed(rng):
    root = f"memory://partdocs-{uuid.uuid4().hex}"
    parts = _stores(root, rng, [40, 70, 25])
    state = read_partitions(root, [("t", p) for p in parts])
    got = read_partition_documents(root, state, ALL)
    n = len(state.words)
    cross, m1, m2, df = np.zeros((n, n)), np.zeros(n), np.zeros(n), np.zeros(n)
    proj, mass, df1 = np.zeros((ALL.n_projections, n)), np.zeros(n), np.zeros(n)
    keys, rows, split_docs, sketch_docs = [], [], 0, 0
    for p, (s, docs) in parts.items():
        seed = partition_seed(ALL.seed, f"kafka:t:{p}")
        X, pos = _by_union(s, docs, state.words)
        ids = np.arange(len(docs))
        split = wp.split_statistic(X, ids, seed=seed)
        used = np.flatnonzero(pos >= 0)
        cross[np.ix_(pos[used], pos[used])] += split.cross[np.ix_(used, used)]
        for total, part in ((m1, split.mass_first), (m2, split.mass_second),
                            (df, split.doc_freq)):
            total[pos[used]] += part[used]
        split_docs += split.num_docs
        sketch = wp.rp_sketch(X, ids, ALL.n_projections, seed=seed)
        proj[:, pos[used]] += sketch.projections[:, used]
        mass[pos[used]] += sketch.mass[used]
        df1[pos[used]] += sketch.doc_freq[used]
        sketch_docs += sketch.num_docs
        keys.append(reservoir_keys(ids, ids.astype(float), Forgetting(), seed))
        dense = np.zeros((len(docs), n))
        dense[:, pos[used]] = X[:, used].toarray()
        rows.append(dense)
    for a, b in ((got.split.cross, cross), (got.split.mass_first, m1),
                 (got.split.mass_second, m2), (got.split.doc_freq, df),
                 (got.sketch.projections, proj), (got.sketch.mass, mass),
                 (got.sketch.doc_freq, df1)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
    assert got.split.num_docs == split_docs and got.sketch.num_docs == sketch_docs
    # The reservoir: the 15 non-empty documents of smallest key over every partition.
    keys, rows = np.concatenate(keys), np.vstack(rows)
    nonempty = np.flatnonzero(rows.sum(axis=1) > 0)
    chosen = nonempty[np.argsort(keys[nonempty], kind="stable")[:ALL.reservoir]]
    np.testing.assert_array_equal(np.sort(got.keys), np.sort(keys[chosen]))
    by_key = {k: r for k, r in zip(keys[chosen], rows[chosen])}
    for k, r in zip(got.keys, got.documents.toarray()):
        np.testing.assert_array_equal(r, by_key[k])


def test_statistics_over_a_subset_and_under_the_incremental_reader(rng):
    root = f"memory://partdocs-{uuid.uuid4().hex}"
    parts = _stores(root, rng, [30, 30])
    plist = [("t", p) for p in parts]
    full = read_partitions(root, plist)
    inc = PartitionReader(root).read(plist)  # its own word order
    a = read_partition_documents(root, full, ALL)
    b = read_partition_documents(root, inc, ALL)
    at = np.asarray([inc.words.index(w) for w in full.words])
    b = documents_over(b, at)
    np.testing.assert_allclose(b.split.cross, a.split.cross, rtol=1e-13)
    np.testing.assert_allclose(b.sketch.projections, a.sketch.projections, rtol=1e-13)
    np.testing.assert_array_equal(np.sort(b.keys), np.sort(a.keys))
    sub = documents_over(a, np.arange(5))
    np.testing.assert_array_equal(sub.split.cross, a.split.cross[:5, :5])
    assert sub.documents.shape[1] == 5 and (np.diff(sub.documents.indptr) > 0).all()


def test_a_partition_without_statistics_gives_none(rng, tmp_path):
    parts = _stores(tmp_path, rng, [20])
    plain = CooccurrenceStore.create(partition_url(tmp_path, "t", 1), capacity=64,
                                     admit_threshold=1)
    plain.add([["w1", "w2"]])
    plain.checkpoint({"kafka:t:1": 1})
    state = read_partitions(tmp_path, [("t", 0), ("t", 1)])
    assert read_partition_documents(tmp_path, state, ALL) is None
    assert parts[0][0].n_docs_added == 20


@pytest.mark.parametrize("sizes", [(20, 60, 120)])
def test_merged_reservoirs_include_every_partition_in_proportion(sizes):
    # With a seed per partition the keys are independent across partitions, so the merged
    # sample (the smallest keys over every partition) takes each partition's documents in
    # proportion to its size: 400 trials of 20 documents out of 200, shares 0.1, 0.3, 0.6,
    # each within 0.02 (about five standard deviations). One seed for all would give
    # documents at the same position the same key.
    counts = np.zeros(len(sizes))
    trials, size = 400, 20
    for trial in range(trials):
        keys = np.concatenate([
            reservoir_keys(np.arange(n), np.arange(n, dtype=float), Forgetting(),
                           partition_seed(trial, f"kafka:t:{p}"))
            for p, n in enumerate(sizes)])
        owner = np.repeat(np.arange(len(sizes)), sizes)
        counts += np.bincount(owner[np.argsort(keys)[:size]], minlength=len(sizes))
    shares = counts / (trials * size)
    np.testing.assert_allclose(shares, np.asarray(sizes) / sum(sizes), atol=0.02)
    same = [reservoir_keys(np.arange(3), np.arange(3.0), Forgetting(), 7) for _ in sizes]
    assert np.array_equal(same[0], same[1])  # why each partition needs its own seed


def single_weight(n: int, half_life: float) -> float:
    """Σ 2^-(k/h) over one second apart documents, the last at the clock."""
    return float(sum(2.0 ** (-k / half_life) for k in range(n)))


def test_with_a_decay_in_seconds_each_partition_is_brought_to_the_latest_clock(rng):
    # The split statistic of partition p read at its own clock, times 2^-(T - clock_p)/h,
    # summed over the union's words (reservoir keys hold absolute times: merged unchanged).
    from anchorstream.store import open_committed, read_document_state

    decay = Forgetting(half_life=30.0, unit="seconds")
    root = f"memory://partdocs-{uuid.uuid4().hex}"
    plist, single = [("t", 0), ("t", 1)], []
    for p, t0 in ((0, 0.0), (1, 100.0)):
        key = f"kafka:t:{p}"
        s = CooccurrenceStore.create(partition_url(root, "t", p), capacity=64,
                                     admit_threshold=1, forgetting=decay,
                                     document_stats=replace(ALL, seed=partition_seed(5, key)))
        docs = [list(rng.choice(WORDS[:12], size=rng.integers(2, 9))) for _ in range(30)]
        s.add(docs, (t0 + np.arange(30.0)).tolist())
        s.checkpoint({key: 30})
        single.append(s)
    state = read_partitions(root, plist)
    got = read_partition_documents(root, state, ALL)
    assert state.clock == 129.0
    n = len(state.words)
    cross, seen_keys, plain = np.zeros((n, n)), [], 0.0
    for s in single:
        one = open_committed(s.url)
        d = read_document_state(s.url, one.version, one.slots)
        pos = np.asarray([state.words.index(w) for w in one.words])
        cross[np.ix_(pos, pos)] += d.split.cross * 2.0 ** (-(state.clock - one.clock) / 30.0)
        seen_keys.append(d.keys)
        plain += d.split.num_docs
    np.testing.assert_allclose(got.split.cross, cross, rtol=1e-12, atol=1e-12 * cross.max())
    # Partition 0 (clock 29) decayed by 2^-(100/30) more: less than its own weight remains.
    assert got.split.num_docs < plain - 0.5 * single_weight(30, 30.0)
    keys = np.sort(np.concatenate(seen_keys))[:ALL.reservoir]
    np.testing.assert_array_equal(np.sort(got.keys), keys)
