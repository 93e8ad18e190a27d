"""A dense block of the sparse counts' most connected words, for faster products.

The co-occurrence of real text is dense among its common words and sparse in its tail: in
the counts of the ``mail`` quality corpus (V = 5000, 6.9M stored pairs) 90% of the pairs lie
among 4,327 words, a block 87% full. Held as CSR a stored pair costs 12 bytes and, in a
product ``C @ Z``, two scattered row updates per column of ``Z``
(:func:`~anchorstream._kernels.cooc.cooc_symmetric_matmul`); the same block held dense in
float32 costs 4 bytes an entry and multiplies with BLAS. :func:`head_block` chooses the
largest such block that takes no more memory than its pairs do in the counts (4 bytes per
entry of the square against 12 per stored pair of its upper triangle: a block at least 2/3
full), so the counts and the block together take at most twice the counts' memory, and never
a ``V × V`` array unless every word is in it.

:class:`~anchorstream.stats.sparse.SparseCooccurrence` builds it at its first product and
multiplies the rest sparse, skipping the block's pairs. The block's float32 values and sums
change a product by ~1e-7 of its size (float32's rounding), far below the rectifier's
tolerances; a block of fewer than :data:`MIN_WORDS` words is not worth its BLAS call and is
not built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels.cooc import cooc_symmetric_matmul
from anchorstream._kernels.headblock import head_block_entries, head_block_split, head_row_entries

__all__ = ["MIN_WORDS", "HeadBlock", "head_block"]

#: Fewest words a head block is built for.
MIN_WORDS = 256

#: Bytes of a stored pair in the counts' CSR (float64 value, int32 column) and of an entry of
#: the block (float32).
_PAIR_BYTES, _ENTRY_BYTES = 12, 4


@dataclass(frozen=True)
class HeadBlock:
    """The counts split in two: among ``words`` (increasing), dense and mirrored
    (``block[a, b]`` is the count of ``words[a]`` with ``words[b]``), and every other stored
    pair, ``rest`` (upper triangle, CSR over all the words)."""

    words: np.ndarray
    block: np.ndarray
    rest: sp.csr_matrix

    @property
    def nbytes(self) -> int:
        r = self.rest
        return (self.block.nbytes + self.words.nbytes + r.data.nbytes + r.indices.nbytes
                + r.indptr.nbytes)

    def matmul(self, Z: np.ndarray) -> np.ndarray:
        """The full symmetric counts times ``Z`` (float64, C-contiguous, ``(n, b)``)."""
        r = self.rest
        out = np.zeros_like(Z)
        cooc_symmetric_matmul(r.indptr, r.indices, r.data, Z, out)
        out[self.words] += self.block @ Z[self.words].astype(np.float32)
        return out


def head_block(upper: sp.csr_matrix, *, min_words: int = MIN_WORDS) -> HeadBlock | None:
    """The dense head block of the symmetric matrix whose upper triangle is ``upper``
    (canonical CSR, diagonal included), or None where none of ``min_words`` or more words pays.

    Words are ranked by their entries in the full matrix (ties by index); the block is the
    largest ``b`` first-ranked words whose ``b²`` float32 entries take at most the bytes of the
    stored pairs among them.
    """
    n = upper.shape[0]
    if n < max(int(min_words), 1) or upper.nnz == 0:
        return None
    indptr, indices = upper.indptr, upper.indices
    order = np.argsort(-head_row_entries(indptr, indices), kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    inside = head_block_entries(indptr, indices, rank)
    sizes = np.arange(1, n + 1, dtype=np.float64)
    fits = np.flatnonzero(_ENTRY_BYTES * sizes**2 <= _PAIR_BYTES * inside)
    size = int(fits[-1]) + 1 if fits.size else 0
    if size < min_words:
        return None
    words = np.sort(order[:size])
    pos = np.full(n, -1, dtype=np.int64)
    pos[words] = np.arange(size)
    block = np.zeros((size, size), dtype=np.float32)
    rest = head_block_split(indptr, indices, upper.data, pos, block)
    return HeadBlock(words, block, sp.csr_matrix(rest[::-1], shape=upper.shape))
