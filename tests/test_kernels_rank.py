"""The ranking kernel against its NumPy twin (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream._kernels.rank import top_by_two_keys
from tests.naive_rank import naive_top_by_two_keys


@st.composite
def rows(draw):
    """Keys on a coarse grid (many ties of either key and of both), zeros of either sign."""
    K = draw(st.integers(1, 4))
    V = draw(st.integers(1, 30))
    grid = st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, -2.0, -1.75])
    first = np.array(draw(st.lists(grid, min_size=K * V, max_size=K * V))).reshape(K, V)
    second = np.array(draw(st.lists(grid, min_size=K * V, max_size=K * V))).reshape(K, V)
    return first, second, draw(st.integers(1, V))


@settings(max_examples=300, deadline=None)
@given(rows())
def test_top_by_two_keys_matches_twin(case):
    first, second, n = case
    out = np.full((first.shape[0], n), -1, dtype=np.int64)
    top_by_two_keys(first, second, n, out)
    np.testing.assert_array_equal(out, naive_top_by_two_keys(first, second, n))


def test_every_column_of_a_row_in_its_order():
    first = np.array([[0.0, 2.0, 2.0, 1.0, 2.0]])
    second = np.array([[9.0, 1.0, 3.0, 0.0, 1.0]])
    out = np.empty((1, 5), dtype=np.int64)
    top_by_two_keys(first, second, 5, out)
    assert out.tolist() == [[2, 1, 4, 3, 0]]
