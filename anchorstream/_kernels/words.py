"""numba kernel of looking words up by their UTF-8 bytes (``anchorstream/text/bags.py``).

Words packed as :func:`anchorstream.zarrio.encode_words` packs them (one byte blob and the
offsets where each word starts) are found in a vocabulary packed the same way through an
open-addressing hash table of its words (32-bit FNV-1a of the bytes, linear probing), without a
Python string a word. Equal strings have equal UTF-8 bytes, so the result is what a
dictionary of the decoded words gives. The slow twin is ``tests/naive_words.py``.
"""

from __future__ import annotations

import numba
import numpy as np

# FNV-1a on 32 bits, in int64 arithmetic: no product overflows (without the JIT NumPy's
# unsigned scalars would warn where the 64-bit hash wraps).
_FNV_OFFSET = np.int64(2166136261)
_FNV_PRIME = np.int64(16777619)
_MASK32 = np.int64(0xFFFFFFFF)


@numba.njit(cache=True)
def _fnv1a(blob, start, end):
    h = _FNV_OFFSET
    for k in range(start, end):
        h = ((h ^ np.int64(blob[k])) * _FNV_PRIME) & _MASK32
    return h


@numba.njit(cache=True)
def _same_bytes(a, a0, a1, b, b0, b1):
    if a1 - a0 != b1 - b0:
        return False
    for k in range(a1 - a0):
        if a[a0 + k] != b[b0 + k]:
            return False
    return True


@numba.njit(cache=True)
def utf8_lookup(vocab_blob, vocab_offsets, blob, offsets):
    """``ids[k]``: the index of the vocabulary word whose bytes are word ``k``'s
    (``blob[offsets[k]:offsets[k + 1]]``), -1 for a word outside it. The vocabulary's words
    must be distinct (the wrapper checks); its table holds each at the first free slot of its
    probe run, twice as many slots as words at least."""
    V = vocab_offsets.shape[0] - 1
    size = 2
    while size < 2 * V:
        size *= 2
    mask = size - 1
    table = np.full(size, -1, dtype=np.int64)
    hashes = np.empty(V, dtype=np.int64)
    for j in range(V):
        h = _fnv1a(vocab_blob, vocab_offsets[j], vocab_offsets[j + 1])
        hashes[j] = h
        i = h & mask
        while table[i] >= 0:
            i = (i + 1) & mask
        table[i] = j
    n = offsets.shape[0] - 1
    ids = np.full(n, -1, dtype=np.int64)
    for k in range(n):
        s, e = offsets[k], offsets[k + 1]
        h = _fnv1a(blob, s, e)
        i = h & mask
        while table[i] >= 0:
            j = table[i]
            if hashes[j] == h and _same_bytes(vocab_blob, vocab_offsets[j],
                                              vocab_offsets[j + 1], blob, s, e):
                ids[k] = j
                break
            i = (i + 1) & mask
    return ids
