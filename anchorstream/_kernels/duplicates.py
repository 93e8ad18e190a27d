"""numba kernels of the duplicate filter (``anchorstream/text/duplicates.py``).

The filter remembers the keys (64-bit hashes) of the last ``m`` distinct documents: a ring of
``m`` keys in arrival order, and an open-addressing hash set of the same keys (linear probing,
``0`` marks an empty slot, so a key is never 0) for the lookups. A key that leaves the ring
leaves the set by backward-shift deletion (Knuth, TAOCP vol. 3, 6.4, Algorithm R): no
tombstones, so the set's load stays the ring's. The slow twin is ``tests/naive_duplicates.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def duplicates_insert(table, key):
    """Put ``key`` (not 0, not present) into the hash set ``table`` (size a power of 2)."""
    mask = table.size - 1
    i = np.int64(key & np.uint64(mask))
    while table[i] != 0:
        i = (i + 1) & mask
    table[i] = key


@numba.njit(cache=True)
def duplicates_delete(table, key):
    """Take ``key`` out of ``table``; the entries after it in its probe run move back, so
    every remaining key stays reachable from its home slot. A key not present: nothing."""
    mask = table.size - 1
    i = np.int64(key & np.uint64(mask))
    while table[i] != key:
        if table[i] == 0:
            return
        i = (i + 1) & mask
    j = i
    while True:
        j = (j + 1) & mask
        if table[j] == 0:
            break
        home = np.int64(table[j] & np.uint64(mask))
        # The entry at j may fill the hole at i unless its home lies cyclically in (i, j].
        if i <= j:
            stays = i < home and home <= j
        else:
            stays = home > i or home <= j
        if stays:
            continue
        table[i] = table[j]
        i = j
    table[i] = 0


@numba.njit(cache=True)
def duplicates_filter(table, ring, cursor, keys, keep):
    """Decide, in order, which of ``keys`` are new: ``keep[t]`` is False where ``keys[t]``
    is in the memory (an earlier key of this call included), and a new key enters it.

    Parameters
    ----------
    table : uint64 ndarray, size a power of 2 and more than ``ring.size``
        The hash set of the keys in the ring (updated).
    ring : uint64 ndarray of shape (m,), m >= 1
        The last ``m`` distinct keys, the ``t``-th remembered at ``t % m`` (updated).
    cursor : int
        How many keys have entered the memory so far.
    keys : uint64 ndarray of shape (n,)
        The documents' keys, none 0; a document that is never filtered is left out by the
        caller.
    keep : bool ndarray of shape (n,)
        Written.

    Returns
    -------
    int
        The new cursor.
    """
    mask = table.size - 1
    m = ring.size
    for t in range(keys.size):
        key = keys[t]
        i = np.int64(key & np.uint64(mask))
        found = False
        while table[i] != 0:
            if table[i] == key:
                found = True
                break
            i = (i + 1) & mask
        keep[t] = not found
        if found:
            continue
        pos = cursor % m
        if cursor >= m:
            duplicates_delete(table, ring[pos])
        duplicates_insert(table, key)
        ring[pos] = key
        cursor += 1
    return cursor


@numba.njit(cache=True)
def duplicates_rebuild(table, ring, n):
    """Fill the empty ``table`` with ``ring[:n]`` (a ring read back from a store)."""
    for t in range(n):
        duplicates_insert(table, ring[t])
