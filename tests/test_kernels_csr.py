"""The CSR kernels (``anchorstream/_kernels/csr.py``) against their loop twins in
``tests/naive_csr.py`` and scipy.

Sizes are tiny so that the file also runs quickly with ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from anchorstream._kernels.csr import (csr_add, csr_add_into, csr_kept_symmetric_row_sums, csr_move,
                                       csr_move_add, csr_transpose_positions, csr_upper_check,
                                       lowest_bit)
from anchorstream.stats.sparse import csr_add as sparse_add
from anchorstream.stats.sparse import csr_add_all
from anchorstream.stats.csr import csr_add_into as add_into
from anchorstream.stats.sparse import csr_moved, csr_moved_sum, csr_sum
from tests.naive_csr import (naive_csr_add, naive_csr_add_into,
                             naive_csr_kept_symmetric_row_sums, naive_csr_move,
                             naive_csr_move_add, naive_csr_transpose_positions,
                             naive_csr_upper_check, naive_lowest_bit)


def _into_sentinels(kernel, args, n_entries):
    """Run a summing ``kernel`` into outputs for ``n_entries`` and one more, filled with a
    sentinel to see that nothing is written past the sum's; returns its ``(indptr, indices,
    data)``, trimmed to the sum."""
    indices, data = np.full(n_entries + 1, -7, dtype=np.int32), np.full(n_entries + 1, -7.0)
    indptr = kernel(*args, indices, data)
    nnz = indptr[-1]
    assert np.all(indices[nnz:] == -7) and np.all(data[nnz:] == -7.0)
    return indptr, indices[:nnz], data[:nnz]


def _sparse_block(rng, shape, density):
    block = rng.random(shape)
    block[rng.random(shape) > density] = 0.0
    return block


@pytest.mark.parametrize("seed", range(8))
def test_csr_add_matches_twin_and_scipy(seed):
    rng = np.random.default_rng(400 + seed)
    a = sp.csr_matrix(_sparse_block(rng, (6, 8), [0.0, 0.2, 0.6, 1.0][seed % 4]))
    b = sp.csr_matrix(_sparse_block(rng, (6, 8), [0.5, 0.0, 0.3, 1.0][seed % 4]))
    if seed % 2:
        # Entries that cancel: left out of the sum, as canonical CSR leaves zeros out.
        cancel = a.toarray() * (rng.random(a.shape) < 0.5)
        b = sp.csr_matrix(np.where(cancel != 0, -cancel, b.toarray()))
        b.eliminate_zeros()
    args = (a.indptr.astype(np.int64), a.indices.astype(np.int32), a.data,
            b.indptr.astype(np.int64), b.indices.astype(np.int32), b.data)
    # Outputs for both operands' entries; the kernel says how many are the sum's.
    got = _into_sentinels(csr_add, args, a.nnz + b.nnz)
    nnz = got[0][-1]
    want = naive_csr_add(*args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # The wrapper trims them in place: arrays of their own, no longer than the sum.
    summed = csr_sum(args[:3], args[3:])
    for g, w in zip(summed, want):
        np.testing.assert_array_equal(g, w)
    assert all(x.base is None and x.size == nnz for x in summed[1:])
    total = sp.csr_matrix((got[2], got[1], got[0]), shape=(6, 8))
    np.testing.assert_allclose(total.toarray(), (a + b).toarray(), rtol=0, atol=1e-15)
    assert np.all(total.data != 0) and total.has_sorted_indices


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 7, 16])
def test_csr_add_all_is_the_sum_and_adds_two_or_three_in_order(count):
    rng = np.random.default_rng(40 + count)
    mats = [sp.csr_matrix(_sparse_block(rng, (5, 7), 0.4)) for _ in range(count)]
    given = list(mats)
    got = csr_add_all(given)
    # Summed in place: the list ends with the sum alone, the parts let go.
    assert len(given) == min(count, 1) and all(g is got for g in given)
    if count == 0:
        assert got is None
        return
    want = sum((m.toarray() for m in mats), np.zeros((5, 7)))
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-14)
    assert got.has_canonical_format and np.all(got.data != 0)
    if count <= 3:  # as a running sum adds them: the same bits
        running = mats[0]
        for m in mats[1:]:
            running = sparse_add(running, m)
        np.testing.assert_array_equal(got.toarray(), running.toarray())


@pytest.mark.parametrize("seed", range(6))
def test_csr_move_matches_twin_and_keeps_rows_sorted_and_upper(seed):
    rng = np.random.default_rng(500 + seed)
    m = int(rng.integers(1, 9))
    A = sp.random(m, m, density=0.5, random_state=rng, format="csr")
    U = sp.triu(A + A.T, format="csr")
    U.sum_duplicates()
    # Slots kept in order, some dropped, spread over a larger (or smaller) new range.
    kept = rng.random(m) < 0.7
    n = int(kept.sum()) + int(rng.integers(0, 4))
    to = np.full(m, -1, dtype=np.int64)
    to[kept] = np.sort(rng.choice(n, int(kept.sum()), replace=False))
    got = csr_move(U.indptr.astype(np.int64), U.indices.astype(np.int32), U.data, to, n)
    want = naive_csr_move(U.indptr, U.indices, U.data, to, n)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    M = sp.csr_matrix((got[2], got[1], got[0]), shape=(n, n))
    assert M.has_sorted_indices and sp.tril(M, -1).nnz == 0
    # The same matrix as moving the dense one.
    D = np.zeros((n, n))
    D[np.ix_(to[kept], to[kept])] = U.toarray()[np.ix_(kept, kept)]
    np.testing.assert_array_equal(M.toarray(), D)


@pytest.mark.parametrize("seed", range(10))
def test_csr_move_add_matches_twin_and_moving_then_adding(seed):
    # Rows and columns kept, dropped and new (an empty slot), entries that cancel, stored
    # zeros: the fused pass is the moved matrix plus b, bit for bit.
    rng = np.random.default_rng(900 + seed)
    m = sp.csr_matrix(np.triu(_sparse_block(rng, (8, 8), [0.0, 0.3, 0.7, 1.0][seed % 4])))
    if seed % 3 == 1 and m.nnz:
        m.data[rng.integers(m.nnz)] = 0.0  # a stored zero: left out
    keep = np.sort(rng.choice(8, size=int(rng.integers(1, 9)), replace=False))
    n = keep.size + int(seed % 2)  # one more slot than kept rows: a new word's
    slots = np.sort(rng.choice(n, size=keep.size, replace=False))
    to = np.full(8, -1, dtype=np.int64)
    to[keep] = slots
    b = sp.csr_matrix(np.triu(_sparse_block(rng, (n, n), [0.4, 0.0, 0.2, 0.8][seed % 4])))
    moved = csr_moved(m, to, n)
    if seed % 2 == 0 and b.nnz and moved.nnz:
        # Cancel one of the moved entries.
        dense = b.toarray()
        r, c = moved.nonzero()[0][0], moved.indices[0]
        dense[r, c] = -moved[r, c]
        b = sp.csr_matrix(dense)
    args = (m.indptr.astype(np.int64), m.indices.astype(np.int32), m.data, to, n,
            b.indptr.astype(np.int64), b.indices.astype(np.int32), b.data)
    want = naive_csr_move_add(*args)
    for g, w in zip(_into_sentinels(csr_move_add, args, m.nnz + b.nnz), want):
        np.testing.assert_array_equal(g, w)
    fused, composed = csr_moved_sum(m, to, b), sparse_add(moved, b)
    for g, w in zip((fused.indptr, fused.indices, fused.data),
                    (composed.indptr, composed.indices, composed.data)):
        np.testing.assert_array_equal(g, w)
    root = fused.data  # at the sum's exact size (scipy may hold a view of it)
    while isinstance(root.base, np.ndarray):
        root = root.base
    assert root.nbytes == 8 * fused.nnz


@pytest.mark.parametrize("bit", [0, 1, 5, 31, 32, 33, 62, 63])
def test_lowest_bit_matches_twin(bit):
    for above in (0, 1, 0b1011):
        x = (above << (bit + 1)) | (1 << bit)
        if x < 2**64:
            assert lowest_bit(np.uint64(x)) == naive_lowest_bit(x) == bit


@pytest.mark.parametrize("seed", range(6))
def test_csr_transpose_positions_matches_twin(seed):
    rng = np.random.default_rng(500 + seed)
    m = sp.csr_matrix(_sparse_block(rng, (7, 9), [0.0, 0.2, 0.6, 1.0, 0.4, 0.1][seed]))
    got = csr_transpose_positions(m.indptr.astype(np.int64), m.indices, m.nnz, 9)
    want = naive_csr_transpose_positions(m.indptr, m.indices, 9)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # Each position holds its column, and the rows of a column increase.
    col_ptr, rows, pos = got
    for c in range(9):
        np.testing.assert_array_equal(m.indices[pos[col_ptr[c]:col_ptr[c + 1]]], c)
        assert np.all(np.diff(rows[col_ptr[c]:col_ptr[c + 1]]) > 0)


@pytest.mark.parametrize("seed", range(40))
def test_csr_upper_check_matches_twin(seed):
    # Upper triangles, full matrices (an entry below the diagonal) and bad values (negative,
    # infinite, NaN), alone and together: the first bad entry in row order decides.
    rng = np.random.default_rng(600 + seed)
    n = int(rng.integers(1, 9))
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    if seed % 2 == 0:
        dense = np.triu(dense)
    m = sp.csr_matrix(dense)
    bad = seed % 5 == 1 and m.nnz
    if bad:
        m.data[rng.integers(m.nnz)] = [-1.0, np.inf, np.nan][seed % 3]
    got = csr_upper_check(m.indptr, m.indices, m.data)
    assert got == naive_csr_upper_check(m.indptr, m.indices, m.data)
    assert (got == 0) == (not bad and not np.tril(dense, -1).any())


@pytest.mark.parametrize("seed", range(20))
def test_csr_kept_symmetric_row_sums_match_twin(seed):
    # Rows and columns kept or not (none, all), empty rows, an empty matrix.
    rng = np.random.default_rng(800 + seed)
    n = int(rng.integers(1, 10))
    m = sp.csr_matrix(np.triu(rng.random((n, n)) * (rng.random((n, n)) < seed / 20)))
    keep = rng.random(n) < [0.0, 1.0, 0.6][seed % 3]
    out = np.zeros(n)
    csr_kept_symmetric_row_sums(m.indptr, m.indices, m.data, keep, out)
    want = naive_csr_kept_symmetric_row_sums(m.indptr, m.indices, m.data, keep)
    np.testing.assert_allclose(out, want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("seed", range(32))
def test_csr_add_into_matches_twin_and_the_sum(seed):
    # b's entries at positions a stores are added into a, in place, and into the diagonal
    # and kept row sums given; the others are left: a after plus what is left is a before
    # plus b. Densities from empty to full, b's pattern inside a's or not, rows and columns
    # kept or not; from seed 24 on rows long enough to be entered where a column must be
    # (nearly every column stored, a few gaps the entry misses on).
    rng = np.random.default_rng(1900 + seed)
    n = int(rng.integers(1, 9)) if seed < 24 else int(rng.integers(40, 90))
    density = [0.0, 0.3, 0.7, 1.0][seed % 4] if seed < 24 else [1.0, 0.98, 0.95, 0.9][seed % 4]
    a = sp.csr_matrix(_sparse_block(rng, (n, n), density))
    b_dense = _sparse_block(rng, (n, n), [0.0, 0.5, 1.0][seed % 3])
    if seed % 2:  # only where a stores something: nothing left
        b_dense[a.toarray() == 0] = 0.0
    b = sp.csr_matrix(b_dense)
    keep = rng.random(n) < [1.0, 0.6][seed % 2]
    before = a.toarray()
    want_data, want_left, want_diagonal, want_sums = naive_csr_add_into(
        a.indptr, a.indices, a.data, b.indptr, b.indices, b.data, keep)
    data = a.data.copy()
    left, row_left = np.zeros(b.nnz, dtype=np.bool_), np.zeros(n, dtype=np.int64)
    diagonal, sums = np.full(n, 0.5), np.full(n, 0.25)
    n_left = csr_add_into(a.indptr.astype(np.int64), a.indices, data,
                          b.indptr.astype(np.int64), b.indices, b.data, left, row_left, keep,
                          diagonal, sums)
    np.testing.assert_array_equal(data, want_data)
    np.testing.assert_array_equal(left, want_left)
    rows = np.repeat(np.arange(n), np.diff(b.indptr))
    np.testing.assert_array_equal(row_left, np.bincount(rows[want_left], minlength=n))
    np.testing.assert_allclose(diagonal, 0.5 + want_diagonal, rtol=1e-15)
    np.testing.assert_allclose(sums, 0.25 + want_sums, rtol=1e-14)
    assert n_left == want_left.sum() and (seed % 2 == 0 or n_left == 0)
    rest = add_into(a, b)  # through the wrapper, into a itself, nothing else to add to
    np.testing.assert_array_equal(a.data, want_data)
    np.testing.assert_allclose(a.toarray() + rest.toarray(), before + b_dense, rtol=1e-15)
    assert rest.has_canonical_format and rest.nnz == n_left
