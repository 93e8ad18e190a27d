"""The sorting kernels against their slow twins (``tests/naive_sorting.py``).

Sizes are tiny so that the file also runs with NUMBA_DISABLE_JIT=1 (kernels as plain Python).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream._kernels.sorting import sort_by_key, sort_floats
from tests.naive_sorting import naive_sort_by_key, naive_sort_floats


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.integers(0, 12), max_size=90), data=st.data())
def test_sort_by_key_is_the_stable_argsort(keys, data):
    # Few distinct keys: many ties, whose order the values (their positions) show.
    keys = np.array(keys, dtype=np.int32)
    values = np.arange(keys.size, dtype=np.float64)
    lo = data.draw(st.integers(0, keys.size))
    hi = data.draw(st.integers(lo, keys.size))
    want_keys, want_values = naive_sort_by_key(keys, values, lo, hi)
    scratch = max(hi - lo, 0)
    sort_by_key(keys, values, lo, hi, np.empty(scratch, np.int32), np.empty(scratch))
    np.testing.assert_array_equal(keys, want_keys)
    np.testing.assert_array_equal(values, want_values)


@settings(max_examples=300, deadline=None)
@given(x=st.lists(st.floats(-1e6, 1e6) | st.sampled_from([0.0, -0.0, 1.0, 2.0]), max_size=120),
       data=st.data())
def test_sort_floats_is_ndarray_sort(x, data):
    x = np.array(x, dtype=np.float64)
    n = data.draw(st.integers(0, x.size))
    want = naive_sort_floats(x, n)
    sort_floats(x, n)
    np.testing.assert_array_equal(x, want)


def test_sorted_and_reversed_runs_longer_than_a_run():
    for keys in (np.arange(100, dtype=np.int32), np.arange(100, dtype=np.int32)[::-1].copy()):
        values = keys.astype(np.float64)
        sort_by_key(keys, values, 0, 100, np.empty(100, np.int32), np.empty(100))
        np.testing.assert_array_equal(keys, np.arange(100))
        np.testing.assert_array_equal(values, np.arange(100.0))


def test_sort_floats_on_long_sorted_reversed_and_constant_arrays():
    rng = np.random.default_rng(0)
    for x in (rng.random(3000), np.arange(3000.0), np.arange(3000.0)[::-1].copy(),
              np.ones(3000), rng.integers(0, 3, 3000).astype(np.float64)):
        want = naive_sort_floats(x, x.size)
        sort_floats(x, x.size)
        np.testing.assert_array_equal(x, want)
