"""The head block's kernels against their slow twins in tests/naive_headblock.py.

Sizes are tiny so that the file also runs with NUMBA_DISABLE_JIT=1 (kernels as plain Python).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream._kernels import headblock as kernels
from tests import naive_headblock as naive


def _upper(seed: int, n: int, density: float) -> sp.csr_matrix:
    """A random upper triangle (diagonal included) as canonical CSR."""
    rng = np.random.default_rng(seed)
    dense = rng.random((n, n)) * (rng.random((n, n)) < density)
    return sp.csr_matrix(np.triu(dense))


cases = st.tuples(st.integers(0, 2**16), st.integers(1, 9), st.sampled_from([0.0, 0.3, 0.8, 1]))


@given(cases)
@settings(max_examples=60, deadline=None)
def test_row_and_block_entries_match_twins(case):
    seed, n, density = case
    U = _upper(seed, n, density)
    rows = kernels.head_row_entries(U.indptr, U.indices)
    np.testing.assert_array_equal(rows, naive.naive_row_entries(U.indptr, U.indices))
    rank = np.random.default_rng(seed + 1).permutation(n)
    inside = kernels.head_block_entries(U.indptr, U.indices, rank)
    np.testing.assert_array_equal(inside, naive.naive_block_entries(U.indptr, U.indices, rank))
    assert inside[-1] == U.nnz  # every entry lies inside the block of all the words


@given(cases, st.integers(0, 9))
@settings(max_examples=60, deadline=None)
def test_split_matches_twin_and_loses_nothing(case, m):
    seed, n, density = case
    m = min(m, n)
    U = _upper(seed, n, density)
    words = np.sort(np.random.default_rng(seed + 2).permutation(n)[:m])
    pos = np.full(n, -1, dtype=np.int64)
    pos[words] = np.arange(m)
    block = np.zeros((m, m))
    indptr, indices, data = kernels.head_block_split(U.indptr, U.indices, U.data, pos, block)
    assert indptr.dtype == U.indptr.dtype and indices.dtype == U.indices.dtype
    rest = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    want_block, want_rest = naive.naive_block_split(U.indptr, U.indices, U.data, pos, m)
    np.testing.assert_array_equal(block, want_block)
    np.testing.assert_array_equal(rest.toarray(), want_rest)
    assert rest.has_canonical_format or rest.nnz == 0
    # Block and rest are the whole matrix again.
    full = U.toarray() + np.triu(U.toarray(), 1).T
    again = rest.toarray() + np.triu(rest.toarray(), 1).T
    again[np.ix_(words, words)] += block
    np.testing.assert_array_equal(again, full)
