"""The store's delta segments and their folding into the sharded base matrix.

Shared by the readers (which add the valid segment entries to the base) and compaction
(which folds them in, all at once or shard pair by shard pair).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anchorstream._kernels.store import (store_folded_mask, store_scatter_symmetric,
                                         store_symmetric_matvec)
from anchorstream.stats.accumulator import Forgetting
from anchorstream.store.format import Segment, StoreState
from anchorstream.zarrio import get_all, get_many

__all__ = [
    "READ_BATCH_BYTES",
    "BandEntries",
    "EntryReader",
    "Fold",
    "ShardGrid",
    "fold_into",
    "pair_index",
    "probe_vector",
    "read_batches",
    "rewrite_shard",
    "segment_probe",
    "valid_entries",
]

#: The most bytes of entries one trip to Zarr's event loop reads for
#: :meth:`EntryReader.stored_each` (a segment larger than this is read alone). One trip per
#: segment array cost a thread hand-off and the array's metadata each, seven per segment,
#: and a read takes up to ``store.max_segments`` (64) of them; a batch is what a read holds
#: beyond the one segment it works on (benchmarks/README.md, "Segments read in batches").
READ_BATCH_BYTES = 32 << 20
#: A stored entry's bytes at most: ``int32`` row and column, a ``float64`` value.
_ENTRY_BYTES = 16
_ARRAYS = ("rows", "cols", "vals")
#: The seed of :func:`probe_vector`: the same vector for every segment of every store.
PROBE_SEED = 0x5E9_2026


def probe_vector(n_slots: int) -> np.ndarray:
    """The vector every delta segment's ``probe`` multiplies (:func:`segment_probe`), one
    entry per slot, each in ``[0.5, 1.5)``: positive, so that no entries cancel."""
    return np.random.default_rng(PROBE_SEED).uniform(0.5, 1.5, size=int(n_slots))


def segment_probe(rows, cols, vals, n_slots: int) -> np.ndarray:
    """``S z`` for the symmetric ``S`` whose upper triangle is the entries ``(rows, cols,
    vals)`` over ``n_slots`` slots and ``z`` = :func:`probe_vector`, written beside each delta
    segment (``segments/<name>/probe``). A reader that holds the documents a segment counted
    (the store's delay line, read before they left it) multiplies them by ``z`` and, where
    the two agree, uses them instead of reading the segment's entries
    (:func:`~anchorstream.store.sparseread.catch_up_upper`)."""
    out = np.zeros(int(n_slots))
    store_symmetric_matvec(np.asarray(rows), np.asarray(cols),
                           np.asarray(vals, dtype=np.float64), probe_vector(n_slots), out)
    return out


def read_batches(segs, budget: int | None = None) -> list[list]:
    """``segs`` cut, in order, into runs whose entries (``Segment.nnz``) hold at most
    ``budget`` bytes (:data:`READ_BATCH_BYTES` by default); a segment larger than that is a
    run of its own."""
    budget = READ_BATCH_BYTES if budget is None else int(budget)
    out: list[list] = []
    held = budget + 1  # the first segment opens a run
    for seg in segs:
        size = int(seg.nnz) * _ENTRY_BYTES
        if held + size > budget:
            out.append([])
            held = 0
        out[-1].append(seg)
        held += size
    return out


def valid_entries(rows, cols, seq: int, reset_seq: np.ndarray) -> np.ndarray:
    """Mask of segment entries not voided by a later eviction of either slot."""
    return (reset_seq[rows] <= seq) & (reset_seq[cols] <= seq)


def pair_index(a, b, G: int):
    """Row-major index of the upper shard pair ``(a, b)``, ``a <= b``, among ``G(G+1)/2``
    (the same formula, per entry, in ``_kernels/store.store_folded_mask``)."""
    a = np.asarray(a, dtype=np.int64)
    return a * G - a * (a - 1) // 2 + (np.asarray(b, dtype=np.int64) - a)


@dataclass(frozen=True)
class ShardGrid:
    """The ``V × V`` matrix cut into shards of edge ``S``: ``G`` shards per side."""

    V: int
    S: int

    @property
    def G(self) -> int:
        return -(-self.V // self.S)

    @classmethod
    def of(cls, meta) -> ShardGrid:
        return cls(meta["config"]["capacity"], meta["config"]["shard_size"])


@dataclass(frozen=True)
class Fold:
    """A compaction in progress (state ``"folding"``): the segments it folds into the base,
    and how many upper shard pairs ``(a, b)``, ``a <= b``, in row-major order, it has folded.

    Entries of those segments in a folded pair are in the base already; readers skip them.
    """

    names: frozenset
    done: int
    seq: int  # the generation's last checkpoint
    shard_size: int
    n_shards: int  # G: shards per side

    @classmethod
    def of(cls, meta, state: StoreState) -> Fold | None:
        fold = state.folding
        if not fold:
            return None
        grid = ShardGrid.of(meta)
        return cls(frozenset(fold.segments), int(fold.done), int(fold.seq), grid.S, grid.G)

    def has_folded(self, x: int, y: int) -> bool:
        """Whether base shard ``(x, y)`` has been rewritten by this fold."""
        return bool(pair_index(min(x, y), max(x, y), self.n_shards) < self.done)

    def folded(self, seg: Segment, rows, cols) -> np.ndarray | None:
        """Mask of the entries of ``seg`` already in the base, or None for none."""
        if seg.name not in self.names or self.done == 0:
            return None
        return store_folded_mask(rows, cols, self.shard_size, self.n_shards, self.done)


@dataclass(frozen=True, eq=False)
class EntryReader:
    """Reads the valid entries of segments of ``root``, converted to the units of ``t_ref``.

    Entries of slots evicted after the segment was written (``reset``) are dropped, and so are
    entries that the fold in progress ``fold`` has moved into the base.
    """

    root: object
    reset: np.ndarray
    forgetting: Forgetting
    t_ref: float
    fold: Fold | None = None

    def stored_each(self, segs):
        """Each delta segment of ``segs`` as stored, in order, with what makes its entries
        valid: ``(seg, rows, cols, vals, folded, factor)``, ``folded`` the mask of entries
        already in the base (None for none) and ``factor`` the forgetting's readout to
        ``t_ref``. An entry is valid where neither slot was reset after ``seg.seq``
        (:func:`valid_entries`) and it is not folded. The segments are read in batches of
        :data:`READ_BATCH_BYTES`, each in one trip to Zarr's event loop."""
        for batch in read_batches(segs):
            arrays = get_all(self.root, [f"segments/{seg.name}/{a}"
                                         for seg in batch for a in _ARRAYS])
            for seg in batch:
                # Popped as they go: a batch holds only the segments not yet yielded.
                rows, cols, vals = arrays.pop(0), arrays.pop(0), arrays.pop(0)
                folded = None if self.fold is None else self.fold.folded(seg, rows, cols)
                yield seg, rows, cols, vals, folded, self.forgetting.readout(self.t_ref,
                                                                             seg.t_ref)
                del rows, cols, vals, folded

    def entries_each(self, segs):
        """The valid ``(rows, cols, vals)`` of each delta segment of ``segs``, in order."""
        for seg, rows, cols, vals, folded, factor in self.stored_each(segs):
            yield self._valid(seg, rows, cols, vals, folded, factor)

    def _valid(self, seg: Segment, rows, cols, vals, folded, factor):
        """The valid entries of one segment as read, scaled to ``t_ref``."""
        keep = valid_entries(rows, cols, seg.seq, self.reset)
        if folded is not None:
            keep &= ~folded
        vals = vals[keep]
        if factor != 1.0:
            vals *= factor
        return rows[keep], cols[keep], vals

    def add_into(self, out, pos, segs) -> None:
        """Add the valid entries of ``segs`` (both triangles) into the dense ``out``, whose
        row and column of slot ``s`` is ``pos[s]``."""
        for rows, cols, vals in self.entries_each(segs):
            store_scatter_symmetric(out, pos, pos, rows, cols, vals)

    def concat(self, segs):
        """The valid entries of ``segs``, concatenated."""
        parts = list(self.entries_each(segs))
        if not parts:
            return np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0)
        return tuple(np.concatenate(p) for p in zip(*parts))


@dataclass(frozen=True, eq=False)
class BandEntries:
    """The entries of a fold's segments whose row lies in one band of shards: per segment, its
    slice (segments are sorted by row), the column band of each entry and the segment's
    checkpoint (for the eviction test). Kept per segment: concatenating and sorting ~10^7
    entries cost more than selecting a column band from each slice."""

    key: tuple  # (segment names, band)
    parts: list  # (rows, cols, vals, column bands, seq) per segment

    @classmethod
    def read(cls, root, segs, band: int, S: int) -> BandEntries:
        """Read the band's slice of every segment, all in one trip to Zarr's event loop."""
        groups = [root[f"segments/{seg.name}"] for seg in segs]
        rows_all = get_many([g["rows"] for g in groups])
        spans = [tuple(int(x) for x in np.searchsorted(r, np.array(
            (band * S, band * S + S), dtype=r.dtype))) for r in rows_all]
        cols = get_many([g["cols"] for g in groups], spans)
        vals = get_many([g["vals"] for g in groups], spans)
        parts = [(r[lo:hi].copy(), c, v, c // S, seg.seq)
                 for r, (lo, hi), c, v, seg in zip(rows_all, spans, cols, vals, segs)]
        return cls((frozenset(seg.name for seg in segs), band), parts)

    def pair(self, b: int, reset: np.ndarray):
        """The valid entries of column band ``b``."""
        out = []
        for rows, cols, vals, col_band, seq in self.parts:
            sel = np.flatnonzero(col_band == b)
            if sel.size:
                r, c = rows[sel], cols[sel]
                keep = valid_entries(r, c, seq, reset)
                out.append((r[keep], c[keep], vals[sel][keep]))
        if not out:
            return np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0)
        return tuple(np.concatenate(x) for x in zip(*out))


def rewrite_shard(arr, grid: ShardGrid, a: int, b: int, entries, *, stale_mask=None,
                  factor=1.0) -> None:
    """Read-modify-write shard ``(a, b)`` of ``arr``: rescale, zero the rows and columns of
    stale slots, then add each ``(rows, cols, vals)`` of ``entries`` and its mirror image where
    they fall in the shard."""
    V, S = grid.V, grid.S
    r0, r1, c0, c1 = a * S, min(a * S + S, V), b * S, min(b * S + S, V)
    block = np.array(arr[r0:r1, c0:c1], dtype=np.float64)
    if factor != 1.0:
        block *= factor
    if stale_mask is not None:
        block[stale_mask[r0:r1], :] = 0.0
        block[:, stale_mask[c0:c1]] = 0.0
    row_map = np.full(V, -1, dtype=np.int64)
    col_map = np.full(V, -1, dtype=np.int64)
    row_map[r0:r1] = np.arange(r1 - r0)
    col_map[c0:c1] = np.arange(c1 - c0)
    for rows, cols, vals in entries:
        if rows.size:
            store_scatter_symmetric(block, row_map, col_map, rows, cols, vals)
    arr[r0:r1, c0:c1] = block


def fold_into(arr, grid: ShardGrid, entries, *, stale, factor) -> None:
    """Read-modify-write the shards of ``arr`` that the ``(rows, cols, vals)`` entries, the
    stale slots or a rescale by ``factor`` touch."""
    rows, cols, vals = entries
    V, S, G = grid.V, grid.S, grid.G
    # Each entry lands in shard (i//S, j//S) and, mirrored, (j//S, i//S).
    si, sj = rows // S, cols // S
    key = np.concatenate([si * G + sj, sj * G + si]).astype(np.int64)
    dirty = set(np.unique(key).tolist())
    if stale.size:
        for b in np.unique(stale // S).tolist():
            dirty.update(b * G + k for k in range(G))
            dirty.update(k * G + b for k in range(G))
    if factor != 1.0:
        dirty = set(range(G * G))
    order = np.argsort(key[: rows.size], kind="stable")
    first_key = key[: rows.size][order]
    # Entries are grouped by their upper shard; the mirrored shard reads the same group.
    starts = np.searchsorted(first_key, np.arange(G * G + 1))
    stale_mask = np.zeros(V, dtype=bool)
    stale_mask[stale] = True
    for k in sorted(dirty):
        a, b = divmod(k, G)
        groups = [order[starts[kk] : starts[kk + 1]] for kk in {a * G + b, b * G + a}]
        rewrite_shard(arr, grid, a, b, [(rows[g], cols[g], vals[g]) for g in groups],
                      stale_mask=stale_mask if stale.size else None, factor=factor)
