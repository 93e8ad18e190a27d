"""How wide the column tiles are, and the tiles of one matrix kept by width
(``anchorstream/stats/tiles.py``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.stats.tiles import ColumnTiles, tile_width
from tests.naive_tiles import naive_column_tiles


def test_tile_width():
    # Rows of 416 bytes (K = 100 in float32, padded to 104): 768 KiB hold 945 words' B and M.
    assert tile_width(8000, 416) == 945
    assert tile_width(2500, 416) == 2500  # all the rows in 2 MiB: one tile
    assert tile_width(50_000, 416) == 945  # 53 tiles
    assert tile_width(100_000, 416) == 1563  # at most 64 tiles
    assert tile_width(5000, 160) == 5000  # 1.6 MB: untiled
    assert tile_width(5000, 240) == 1638  # 2.4 MB: tiles of 768 KiB
    assert tile_width(10, 1 << 30) == 1  # at least one word
    assert tile_width(0, 8) == 1


def test_column_tiles_kept_by_width(rng):
    A = sp.random(30, 30, density=0.4, random_state=1, format="csr")
    U = sp.triu(A + A.T).tocsr()
    U.sort_indices()
    kept = ColumnTiles(U.indptr, U.indices)
    assert kept.sorted
    first = kept(4)
    np.testing.assert_array_equal(first, naive_column_tiles(U.indptr, U.indices, 4))
    assert kept(4) is first  # kept
    kept(7)
    assert kept(4) is first  # the two used last are kept
    kept(7), kept(9)
    assert kept(4) is not first  # the oldest of three is dropped
    np.testing.assert_array_equal(kept(4), first)


def test_rows_out_of_order_are_passed_as_they_are():
    indptr = np.array([0, 3, 4])
    indices = np.array([1, 0, 1, 1], dtype=np.int32)  # row 0's columns out of order
    kept = ColumnTiles(indptr, indices)
    assert not kept.sorted
    np.testing.assert_array_equal(kept(1), [[0, 3], [3, 4]])  # one tile: the rows
