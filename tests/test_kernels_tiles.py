"""The column-tiles kernel against its NumPy twin (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
import pytest

from anchorstream._kernels.pairs import pairs_upper_from_dense
from anchorstream._kernels.tiles import column_tiles, sorted_within_rows
from tests.naive_tiles import naive_column_tiles, naive_sorted_within_rows


@pytest.mark.parametrize("n, density", [(0, 0.0), (1, 1.0), (7, 0.0), (9, 0.4), (12, 1.0)])
@pytest.mark.parametrize("width", [1, 2, 5, 12, 100])
def test_column_tiles_match_twin(rng, n, density, width):
    A = rng.random((n, n)) * (rng.random((n, n)) < density)
    indptr, indices, _ = pairs_upper_from_dense(A + A.T)
    got = column_tiles(indptr, indices, width)
    want = naive_column_tiles(indptr, indices, width)
    assert got.dtype == np.int64 and got.shape == want.shape == (max(-(-n // width), 1) + 1, n)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[0], indptr[:-1])
    np.testing.assert_array_equal(got[-1], indptr[1:])
    # Each tile's entries of a row have its columns, and together they are the row.
    last = got.shape[0] - 2
    for s in range(last + 1):
        for i in range(n):
            cols = indices[got[s, i]:got[s + 1, i]]
            assert np.all(cols >= s * width) and (s == last or np.all(cols < (s + 1) * width))


@pytest.mark.parametrize("indptr, indices", [
    ([0], []), ([0, 0], []), ([0, 3, 5], [0, 2, 7, 1, 4]), ([0, 3, 5], [0, 2, 2, 1, 4]),
    ([0, 3, 5], [0, 3, 2, 1, 4]), ([0, 2, 4], [3, 4, 0, 1]), ([0, 1, 3], [5, 2, 1])])
def test_sorted_within_rows_matches_twin(indptr, indices):
    indptr, indices = np.array(indptr, np.int64), np.array(indices, np.int32)
    assert sorted_within_rows(indptr, indices) == naive_sorted_within_rows(indptr, indices)
