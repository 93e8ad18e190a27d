"""The store's numba kernels against their loop twins in ``tests/naive_store.py``.

Sizes are tiny so that the file also runs quickly with ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import numpy as np
import pytest

from anchorstream._kernels.store import (
    _entries_in_order_to_upper_csr,
    store_add_doc_freq,
    store_block_to_csr,
    store_dense_nonzero,
    store_entries_to_upper_csr,
    store_folded_mask,
    store_pair_delta,
    store_scatter_symmetric,
    store_symmetric_matvec,
    store_unique_counts,
)
from tests.naive_store import (
    naive_add_doc_freq,
    naive_block_to_csr,
    naive_entries_to_upper_csr,
    naive_folded_mask,
    naive_pair_delta,
    naive_scatter_symmetric,
    naive_symmetric_matvec,
    naive_unique_counts,
)


def _random_docs(rng, n_docs, n_slots, max_len):
    lens = rng.integers(0, max_len + 1, size=n_docs)
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    # Zipf-ish slots so that repeats within a document are common.
    slots = np.minimum(rng.zipf(1.5, size=indptr[-1]) - 1, n_slots - 1).astype(np.int32)
    return indptr, slots


@pytest.mark.parametrize("seed", range(5))
def test_unique_counts_matches_twin(seed):
    rng = np.random.default_rng(seed)
    indptr, slots = _random_docs(rng, 12, 9, 7)
    got = store_unique_counts(indptr, slots, 9)
    want = naive_unique_counts(indptr, slots, 9)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_unique_counts_empty():
    uindptr, uslots, ucounts = store_unique_counts(
        np.zeros(1, np.int64), np.empty(0, np.int32), 4
    )
    assert uindptr.tolist() == [0] and uslots.size == 0 and ucounts.size == 0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("hot", [0, 3, 8])
def test_pair_delta_matches_twin(seed, hot):
    rng = np.random.default_rng(100 + seed)
    n_slots = 8
    indptr, slots = _random_docs(rng, 10, n_slots, 6)
    uindptr, uslots, ucounts = store_unique_counts(indptr, slots, n_slots)
    # Void some entries (evicted words) and give documents varied weights, some zero.
    uslots = uslots.copy()
    uslots[rng.random(uslots.size) < 0.15] = -1
    n = np.diff(indptr).astype(float)
    scale = np.where(n >= 2, rng.uniform(0.5, 2.0, n.size) / np.maximum(n * (n - 1), 1), 0.0)
    start = rng.normal(size=(hot, n_slots))
    got_dense, want_dense = start.copy(), start.copy()
    got = store_pair_delta(uindptr, uslots, ucounts, scale, n_slots, got_dense)
    want = naive_pair_delta(uindptr, uslots, ucounts, scale, n_slots, want_dense)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-14, atol=0)
    np.testing.assert_allclose(got_dense, want_dense, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("hot", [0, 70])
def test_pair_delta_adds_previous_result_across_bitmap_words(seed, hot):
    # 200 slots: rows span several 64-bit words of the kernel's column bitmap (bits 0 and 63
    # included); the second call adds its documents to the first call's CSR.
    rng = np.random.default_rng(200 + seed)
    n_slots = 200
    parts = []
    for _ in range(2):
        lens = rng.integers(0, 9, size=6)
        indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        slots = rng.choice([0, 63, 64, 127, 128, 191, 199, *range(60, 70)], size=indptr[-1])
        uindptr, uslots, ucounts = store_unique_counts(indptr, slots.astype(np.int32), n_slots)
        n = np.diff(indptr).astype(float)
        scale = np.where(n >= 2, 1.0 / np.maximum(n * (n - 1), 1), 0.0)
        parts.append((uindptr, uslots, ucounts, scale))
    got_dense, want_dense = np.zeros((hot, n_slots)), np.zeros((hot, n_slots))
    got = store_pair_delta(*parts[0], n_slots, got_dense)
    want = naive_pair_delta(*parts[0], n_slots, want_dense)
    got = store_pair_delta(*parts[1], n_slots, got_dense, prev=got)
    want = naive_pair_delta(*parts[1], n_slots, want_dense, prev=want)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-14, atol=0)
    np.testing.assert_allclose(got_dense, want_dense, rtol=1e-14, atol=1e-15)


def test_pair_delta_no_documents():
    indptr, indices, data = store_pair_delta(
        np.zeros(1, np.int64), np.empty(0, np.int32), np.empty(0), np.empty(0), 3,
        np.zeros((0, 3)),
    )
    assert indptr.tolist() == [0, 0, 0, 0] and indices.size == 0 and data.size == 0


@pytest.mark.parametrize("hot", [0, 3])
def test_pair_delta_single_word_documents_leave_exact_zero_diagonal(hot):
    # Each document has two distinct words once each: the diagonal must be exactly 0.
    uindptr = np.array([0, 2, 4], np.int64)
    uslots = np.array([0, 1, 1, 2], np.int32)
    ucounts = np.ones(4)
    scale = np.array([0.5, 0.5])
    dense = np.zeros((hot, 3))
    indptr, indices, data = store_pair_delta(uindptr, uslots, ucounts, scale, 3, dense)
    full = np.zeros((3, 3))
    full[:hot] = dense
    for i in range(3):
        for p in range(indptr[i], indptr[i + 1]):
            full[i, indices[p]] = data[p]
    assert full[0, 0] == 0.0 and full[1, 1] == 0.0 and full[2, 2] == 0.0
    assert full[0, 1] == 0.5 and full[1, 2] == 0.5


@pytest.mark.parametrize("seed", range(4))
def test_scatter_symmetric_matches_twin(seed):
    rng = np.random.default_rng(200 + seed)
    n_slots, nnz = 10, 25
    rows = rng.integers(0, n_slots, nnz).astype(np.int32)
    cols = rng.integers(0, n_slots, nnz).astype(np.int32)
    rows, cols = np.minimum(rows, cols), np.maximum(rows, cols)
    vals = rng.normal(size=nnz)
    # A block [2, 7) x [4, 10) of the matrix, so the maps have holes.
    row_map = np.full(n_slots, -1, np.int64)
    col_map = np.full(n_slots, -1, np.int64)
    row_map[2:7] = np.arange(5)
    col_map[4:10] = np.arange(6)
    got = np.zeros((5, 6))
    want = np.zeros((5, 6))
    store_scatter_symmetric(got, row_map, col_map, rows, cols, vals)
    naive_scatter_symmetric(want, row_map, col_map, rows, cols, vals)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_add_doc_freq_matches_twin(seed):
    rng = np.random.default_rng(300 + seed)
    indptr, slots = _random_docs(rng, 9, 6, 7)
    weights = rng.uniform(0.1, 2.0, size=9)
    skip = rng.random(9) < 0.3
    got = np.zeros(6)
    want = np.zeros(6)
    store_add_doc_freq(got, indptr, slots, weights, skip)
    naive_add_doc_freq(want, indptr, slots, weights, skip)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_dense_nonzero_matches_numpy():
    rng = np.random.default_rng(5)
    dense = np.where(rng.random((4, 7)) < 0.4, rng.normal(size=(4, 7)), 0.0)
    rows, cols, vals = store_dense_nonzero(dense)
    r, c = np.nonzero(dense)
    np.testing.assert_array_equal(rows, r)
    np.testing.assert_array_equal(cols, c)
    np.testing.assert_array_equal(vals, dense[r, c])
    assert rows.dtype == np.int32 and store_dense_nonzero(np.zeros((0, 3)))[0].size == 0


def _sparse_block(rng, shape, density):
    block = rng.random(shape)
    block[rng.random(shape) > density] = 0.0
    return block


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("diagonal", [False, True])
def test_block_to_csr_matches_twin_and_scipy(seed, diagonal):
    import scipy.sparse as sp

    rng = np.random.default_rng(300 + seed)
    block = _sparse_block(rng, (7, 7), [0.0, 0.3, 1.0][seed % 3])
    # Some rows and columns of the shard are not selected (inactive or reset slots).
    rloc = np.flatnonzero(rng.random(7) < 0.8).astype(np.int64)
    cloc = np.flatnonzero(rng.random(7) < 0.8).astype(np.int64)
    n_rows = 9
    rpos = np.sort(rng.choice(n_rows, rloc.size, replace=False)).astype(np.int64)
    cpos = np.sort(rng.choice(12, cloc.size, replace=False)).astype(np.int64)
    offset = 3  # the band starts at row 3 of the matrix
    got = store_block_to_csr(block, rloc, cloc, rpos, cpos, n_rows, offset, diagonal)
    want = naive_block_to_csr(block, rloc, cloc, rpos, cpos, n_rows, offset, diagonal)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[1].dtype == np.int32 and got[0].dtype == np.int64
    dense = np.zeros((n_rows, 12))
    dense[np.ix_(rpos, cpos)] = block[np.ix_(rloc, cloc)]
    if diagonal:
        dense = np.triu(dense, k=offset)  # column >= row + offset
    as_csr = sp.csr_matrix((got[2], got[1], got[0]), shape=(n_rows, 12))
    np.testing.assert_array_equal(as_csr.toarray(), dense)


@pytest.mark.parametrize("seed", range(16))
def test_entries_to_upper_csr_matches_twin_and_scipy(seed):
    """A segment's entries (either triangle, in order or not, repeats, zeros, evicted slots,
    folded entries, slots without a position) to canonical upper CSR over the positions."""
    import scipy.sparse as sp

    rng = np.random.default_rng(600 + seed)
    cap, m, seq = 12, int(rng.integers(0, 60)), 5
    rows = rng.integers(0, cap, m).astype(np.int32)
    cols = rng.integers(0, cap, m).astype(np.int32)
    if seed % 2:  # as a writer leaves them: upper, sorted by row and column, distinct
        pairs = sorted({(min(r, c), max(r, c)) for r, c in zip(rows.tolist(), cols.tolist())})
        rows = np.asarray([p[0] for p in pairs], np.int32).reshape(-1)
        cols = np.asarray([p[1] for p in pairs], np.int32).reshape(-1)
    m = rows.size
    dtype = [np.float64, np.float32][seed % 4 // 2]
    vals = np.where(rng.random(m) < 0.1, 0.0, rng.random(m)).astype(dtype)
    reset = np.where(rng.random(cap) < 0.2, seq + 1, rng.integers(0, seq + 1, cap)).astype(np.int64)
    skip = (rng.random(m) < 0.2) if seed % 3 == 0 else np.zeros(0, dtype=bool)
    active = np.flatnonzero(rng.random(cap) < 0.8)
    pos = np.full(cap, -1, dtype=np.int64)
    pos[active] = np.arange(active.size)
    n, factor = active.size, vals.dtype.type([1.0, 0.5][seed % 2])
    args = (rows, cols, vals, seq, reset, skip, pos, n, factor)
    got = store_entries_to_upper_csr(*args)
    want = naive_entries_to_upper_csr(*args)
    if seed % 2:  # in a writer's order: the one-pass path took them
        assert _entries_in_order_to_upper_csr(*args)[0]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6 if vals.dtype == np.float32 else 1e-15)
    assert got[0].dtype == np.int64 and got[1].dtype == np.int32 and got[2].dtype == np.float64
    # What the read did before: mask, map, then scipy's conversion.
    keep = (reset[rows] <= seq) & (reset[cols] <= seq)
    if skip.size:
        keep &= ~skip
    r, c = pos[rows[keep]], pos[cols[keep]]
    inside = (r >= 0) & (c >= 0)
    r, c = r[inside], c[inside]
    ref = sp.csr_matrix(((vals[keep][inside] * factor).astype(np.float64),
                         (np.minimum(r, c), np.maximum(r, c))), shape=(n, n))
    mine = sp.csr_matrix((got[2], got[1], got[0]), shape=(n, n))
    assert mine.has_sorted_indices and np.all(mine.data != 0)
    np.testing.assert_allclose(mine.toarray(), ref.toarray(), rtol=1e-6, atol=0)


@pytest.mark.parametrize("done", [0, 1, 4, 9, 10])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_folded_mask_matches_twin(rng, done, dtype):
    # 4 shards of 5 slots a side: 10 upper shard pairs in row-major order.
    cols = rng.integers(0, 20, size=200).astype(dtype)
    rows = np.minimum(rng.integers(0, 20, size=200), cols).astype(dtype)
    got = store_folded_mask(rows, cols, 5, 4, done)
    want = naive_folded_mask(rows, cols, 5, 4, done)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)
    assert got.all() == (done == 10) and (not got.any()) == (done == 0)
    empty = np.empty(0, dtype)
    assert store_folded_mask(empty, empty, 5, 4, done).shape == (0,)


@pytest.mark.parametrize("seed", range(4))
def test_symmetric_matvec_matches_twin(seed):
    rng = np.random.default_rng(seed)
    n = 7
    upper = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.5))
    rows, cols = (x.astype(np.int32) for x in np.nonzero(upper))
    vals = upper[rows, cols]
    z = rng.uniform(0.5, 1.5, size=n)
    got, want = np.full(n, 2.0), np.full(n, 2.0)  # added into
    store_symmetric_matvec(rows, cols, vals, z, got)
    naive_symmetric_matvec(rows, cols, vals, z, want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got - 2.0, (upper + upper.T - np.diag(np.diag(upper))) @ z,
                               rtol=1e-12)
