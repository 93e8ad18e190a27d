"""Reading a store's delta segments (anchorstream/store/segments.py): in batches, each one trip
to Zarr's event loop, with the same matrix as reading them one at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import anchorstream.store.segments as segments
import anchorstream.zarrio as zarrio
from anchorstream.store import CooccurrenceStore, open_committed, open_committed_sparse
from anchorstream.store.format import Segment
from test_store_sparseread import _assert_same_read


@given(nnz=st.lists(st.integers(0, 50), max_size=30), budget=st.integers(1, 400))
def test_read_batches_cut_the_segments_in_order_within_the_budget(nnz, budget):
    segs = [Segment(f"s{k}", k, 0, n, 0.0) for k, n in enumerate(nnz)]
    batches = segments.read_batches(segs, budget)
    assert [s for b in batches for s in b] == segs
    assert all(batches)
    size = [sum(s.nnz for s in b) * 16 for b in batches]  # 16 bytes an entry at most
    for b, bytes_ in zip(batches, size):
        assert bytes_ <= budget or len(b) == 1
    # Greedy: no batch could have taken the next one's first segment.
    for k in range(len(batches) - 1):
        assert size[k] + batches[k + 1][0].nnz * 16 > budget


def _many_segments(path, n_checkpoints=12, **kwargs):
    store = CooccurrenceStore.create(str(path), capacity=40, chunk_size=4, shard_size=8,
                                     admit_threshold=1, max_segments=10**6, **kwargs)
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(50)]  # more words than slots: evictions void entries
    for k in range(n_checkpoints):
        store.add([list(rng.choice(words, size=rng.integers(2, 9))) for _ in range(6)])
        store.checkpoint({"k": k})
    return store


def test_a_read_takes_all_its_segments_in_one_trip_and_reads_the_same_in_many(tmp_path,
                                                                              monkeypatch):
    store = _many_segments(tmp_path / "store")
    trips = []
    get_all = zarrio.get_all

    def counted(group, names):
        if any(n.startswith("segments/") for n in names):
            trips.append(len(names))
        return get_all(group, names)

    monkeypatch.setattr(segments, "get_all", counted)
    dense, sparse = open_committed(store.url), open_committed_sparse(store.url)
    n_segments = 12  # one a checkpoint, none folded
    assert trips == [3 * n_segments] * 2  # rows, cols, vals of each
    # One segment a trip: the same matrix (the sparse read sums it in another order).
    monkeypatch.setattr(segments, "READ_BATCH_BYTES", 1)
    trips.clear()
    dense1, sparse1 = open_committed(store.url), open_committed_sparse(store.url)
    assert trips == [3] * (2 * n_segments)
    _assert_same_read(sparse, dense)
    _assert_same_read(sparse1, dense1)
    _assert_same_read(sparse1, dense)
    np.testing.assert_array_equal(dense1.cooccurrence.counts, dense.cooccurrence.counts)


@pytest.mark.parametrize("delay", [0, 3])
def test_each_segment_is_written_with_its_product_with_the_probe_vector(tmp_path, delay):
    # segments/<name>/probe is S z for the symmetric S of the segment's entries (both
    # triangles, the diagonal once) and z = probe_vector over every slot: what a reader that
    # holds the documents a segment counted compares theirs with (catch_up_upper). Only a
    # store with a delay line writes it: no reader holds the documents of another.
    import zarr

    from anchorstream.store.format import BRANCH
    from anchorstream.store.repository import open_repo

    store = _many_segments(tmp_path / "store", n_checkpoints=4, count_delay=delay)
    repo, _ = open_repo(store.url)
    root = zarr.open_group(repo.readonly_session(branch=BRANCH).store, mode="r")
    z = segments.probe_vector(40)
    assert z.shape == (40,) and z.min() >= 0.5 and z.max() < 1.5
    np.testing.assert_array_equal(z, segments.probe_vector(40))  # the same every time
    names = list(root["segments"].group_keys())
    assert len(names) == 4
    for name in names:
        g = root["segments"][name]
        assert ("probe" in g) == (delay > 0)
        if not delay:
            continue
        rows, cols, vals = g["rows"][:], g["cols"][:], g["vals"][:]
        S = np.zeros((40, 40))
        S[rows, cols] = vals
        S = S + S.T - np.diag(np.diag(S))
        np.testing.assert_allclose(g["probe"][:], S @ z, rtol=1e-12, atol=1e-300)
