"""How wide the column tiles of a pass over a symmetric matrix's pairs are, and the tiles of
one matrix kept for its next passes.

A pass over the upper triangle's entries ``(i, j)`` that reads and writes rows ``j`` of dense
``n × b`` arrays at random (the refinement's E-step: ``B`` and ``M``; the counts' symmetric
product: ``Z`` and ``out``) slows down once those rows outgrow a core's L2 cache. Visiting the
entries one tile of columns at a time keeps the rows of one tile there while the rows ``i``
stream by (``_kernels/tiles.column_tiles``), and changes neither result: every row gets its
terms in the same order.
"""

from __future__ import annotations

import numpy as np

from anchorstream._kernels.tiles import column_tiles, sorted_within_rows

__all__ = ["MAX_TILES", "TILE_BYTES", "UNTILED_BYTES", "ColumnTiles", "tile_width"]

#: Bytes of the rows that one tile's columns read and write at random (two rows a word).
#: Session 63, one thread, passes over real pairs: the refinement's E-step on the npm
#: summaries' 0.8M pairs at K = 100, V = 8000 1.33-1.38x faster with tiles of 512-1024 words
#: (0.4-0.9 MB; 1.29x at 2048 words), on the speeches' windows at K = 100 (2.1M pairs, V =
#: 5000) 1.36x, on the long corpora's windows at K = 50 (V = 5000) 1.10-1.13x; the symmetric
#: product of a store's pairs with 120 columns (V = 9,719) 2.27x with tiles of 1024 words,
#: 2.0x at 512, 1.8x at 2048. 768 KiB lies between the best widths measured and within the
#: 1-2 MB of a server core's L2.
TILE_BYTES = 768 << 10
#: ... and no tiles where all the rows take at most this: the symmetric product with 30-60
#: columns gained 0.92-1.08x from tiles where they took 1.6-2.5 MB (V = 5000-10,278), nothing
#: to pay their bounds and a second pass over the rows for.
UNTILED_BYTES = 2 << 20
#: At most this many tiles: their bounds take ``8 (tiles + 1) n`` bytes.
MAX_TILES = 64


def tile_width(n_words: int, row_bytes: int) -> int:
    """Columns per tile of a pass over ``n_words`` words that reads and writes two rows of
    ``row_bytes`` a word: ``n_words`` itself (one tile) where all of them take at most
    :data:`UNTILED_BYTES`, else as many as fill :data:`TILE_BYTES`, in at most
    :data:`MAX_TILES` tiles."""
    rows = 2 * max(int(row_bytes), 1)
    if n_words * rows <= UNTILED_BYTES:
        return max(int(n_words), 1)
    width = max(TILE_BYTES // rows, 1)
    return max(min(width, n_words), -(-n_words // MAX_TILES), 1)


class ColumnTiles:
    """The column tiles of one CSR matrix (``indptr``, ``indices`` sorted within rows), by
    width, computed at the first pass of a width and kept for the next ones (the two widths
    used last: a float32 and a float64 pass, or a product's two widths of block)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = indices
        self._kept: dict[int, np.ndarray] = {}
        # Tiles need each row's columns in order; rows out of order are passed as they are
        # (one tile), which is still right.
        self.sorted = bool(sorted_within_rows(self.indptr, indices))

    def __call__(self, width: int) -> np.ndarray:
        n = self.indptr.size - 1
        width = int(width) if self.sorted else max(n, 1)
        tiles = self._kept.pop(width, None)
        if tiles is None:
            tiles = column_tiles(self.indptr, self.indices, width)
        self._kept[width] = tiles  # the newest last
        while len(self._kept) > 2:
            del self._kept[next(iter(self._kept))]
        return tiles

    def for_rows(self, n_cols: int, itemsize: int) -> np.ndarray:
        """The tiles for a pass over rows of ``n_cols`` values of ``itemsize`` bytes."""
        return self(tile_width(self.indptr.size - 1, n_cols * itemsize))
