"""The duplicate filter's kernels against their slow twin (tests/naive_duplicates.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream._kernels.duplicates import (duplicates_delete, duplicates_filter,
                                              duplicates_insert)
from tests.naive_duplicates import naive_filter

# Few distinct keys, all of them colliding in a small table's low bits, so probe runs are
# long, wrap around the table's end and are cut by deletions.
KEYS = st.lists(st.sampled_from([1, 2, 3, 9, 17, 33, 64 + 1, 2**63 + 1, 2**64 - 1, 8, 16]),
                max_size=120)


@settings(max_examples=200, deadline=None)
@given(memory=st.integers(1, 6), batches=st.lists(KEYS, min_size=1, max_size=4))
def test_filter_keeps_what_the_twin_keeps_across_calls(memory, batches):
    table = np.zeros(1 << (2 * memory - 1).bit_length(), dtype=np.uint64)
    ring = np.zeros(memory, dtype=np.uint64)
    cursor, history = 0, []
    for batch in batches:
        keys = np.array(batch, dtype=np.uint64)
        keep = np.empty(keys.size, dtype=bool)
        cursor = duplicates_filter(table, ring, cursor, keys, keep)
        want, history = naive_filter(memory, history, batch)
        assert keep.tolist() == want
        assert cursor == len(history)
        held = history[-memory:]
        # The table holds exactly the ring's keys, each once.
        assert sorted(int(k) for k in table[table != 0]) == sorted(held)
        assert sorted(int(k) for k in ring[: min(cursor, memory)]) == sorted(held)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.integers(1, 2**64 - 1), unique=True, min_size=1, max_size=12),
       data=st.data())
def test_delete_keeps_every_other_key_reachable(keys, data):
    table = np.zeros(16, dtype=np.uint64)
    for k in keys:
        duplicates_insert(table, np.uint64(k))
    gone = data.draw(st.sampled_from(keys))
    duplicates_delete(table, np.uint64(gone))
    duplicates_delete(table, np.uint64(gone))  # absent now: nothing happens
    assert sorted(int(k) for k in table[table != 0]) == sorted(set(keys) - {gone})
    # Each remaining key is found by probing from its home slot before an empty one.
    for k in set(keys) - {gone}:
        i = k & 15
        while int(table[i]) != k:
            assert table[i] != 0
            i = (i + 1) & 15
