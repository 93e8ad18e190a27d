"""Slow twin of the UTF-8 lookup kernel (``anchorstream/_kernels/words.py``): a dictionary of
the decoded words."""

from __future__ import annotations

import numpy as np


def naive_utf8_lookup(vocab_blob, vocab_offsets, blob, offsets):
    def words(b, off):
        data = bytes(np.asarray(b, dtype=np.uint8))
        return [data[off[k]:off[k + 1]] for k in range(len(off) - 1)]

    index = {w: j for j, w in enumerate(words(vocab_blob, vocab_offsets))}
    return np.array([index.get(w, -1) for w in words(blob, offsets)], dtype=np.int64)
