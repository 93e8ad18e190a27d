"""Compaction: folding the committed delta segments into the dense base matrix.

All at once (with decay or windows, which convert or recreate whole arrays), or in steps of
a few shard pairs, one commit after each checkpoint, so no checkpoint pays for a whole
compaction. Either way every commit holds the same logical matrix.
"""

from __future__ import annotations

import math
import time

import numpy as np
import zarr

from anchorstream.errors import InputError
from anchorstream.store.format import FORMAT_VERSION, META, FoldProgress
from anchorstream.store.repository import pass_through, wrap
from anchorstream.store.segments import (
    BandEntries,
    EntryReader,
    Fold,
    ShardGrid,
    fold_into,
    pair_index,
    rewrite_shard,
)
from anchorstream.zarrio import zstd

__all__ = ["Compacting"]


class Compacting:
    """The compaction half of :class:`~anchorstream.store.CooccurrenceStore` (a mixin)."""

    def compact(self) -> str:
        """Fold every committed segment into the base matrix (a commit of its own).

        Also drops expired windows and zeroes the rows and columns of slots evicted since the
        last compaction. With decay the base is brought to the current reference time (which
        rewrites every shard when an in-memory renormalization happened since the last
        compaction). The logical content does not change: readers see the same matrix before
        and after. Returns the new version.

        Raises
        ------
        InputError
            If documents were added since the last checkpoint (checkpoint first: a compaction
            commit must not carry uncommitted vocabulary changes).
        StoreError
            If the commit fails (the store keeps its previous version).
        """
        if self._dirty:
            raise InputError("compact() needs a clean state: call checkpoint() first")
        while self._state.folding:
            # Finish a fold in steps first: its rewritten shards already hold the new words of
            # slots evicted before it began, which this compaction would zero again.
            self._fold_step(math.inf)
        st = self._state
        F, R = self.forgetting, self.forgetting.ring
        grid = ShardGrid(self.capacity, self.shard_size)
        # Everything is converted to the newest units (t_ref): all factors are <= 1.
        base_factor = F.readout(st.t_ref, st.base_t_ref)
        stale = np.flatnonzero(self._reset_seq > st.base_seq)
        base_window = list(st.base_window)
        try:
            session = self.writable_session()
            root = zarr.open_group(session.store, mode="r+")
            reader = EntryReader(root, self._reset_seq, F, st.t_ref)
            counts = root["counts"]
            for r in range(R):
                segs = [s for s in st.segments if s.window % R == r and st.live(s.window, R)]
                target = max([s.window for s in segs], default=base_window[r])
                arr = counts[str(r)]
                cleared = False
                if base_window[r] >= 0 and (
                    base_window[r] != target or not st.live(base_window[r], R)
                ):
                    arr = counts.create_array(
                        str(r), shape=(grid.V, grid.V), dtype="f8",
                        chunks=(self.chunk_size,) * 2, shards=(grid.S, grid.S),
                        compressors=zstd(), fill_value=0.0, overwrite=True,
                    )
                    cleared = True
                base_window[r] = target if segs else (-1 if cleared else base_window[r])
                fold_into(arr, grid, reader.concat(segs),
                          stale=np.empty(0, np.int64) if cleared else stale,
                          factor=1.0 if cleared else base_factor)
            if "segments" in root:
                del root["segments"]
            root.require_group("segments")
            st = st.replace(segments=(), base_seq=st.seq - 1, base_window=tuple(base_window),
                            base_t_ref=st.t_ref)
            root.attrs.update({"state": st.to_json(), "maintenance": self._maintenance})
            version = session.commit(
                f"compact {st.seq - 1}",
                metadata={"kind": "compact", "seq": st.seq - 1, "offsets": self._offsets},
            )
        except BaseException as exc:
            pass_through(exc)
            raise wrap(
                exc, f"compaction of {self.url!r} failed; the store still holds version "
                f"{self.version}"
            ) from exc
        self._state = st
        self.version = version
        return version

    def _folds_in_steps(self) -> bool:
        # Decay converts the whole base to new units and windows recreate whole arrays: those
        # compactions stay one commit.
        F = self.forgetting
        return self.compact_step_seconds > 0 and F.ring == 1 and not F.decays

    def _fold_pairs(self, root, fold: Fold, segs, *, t0: float, budget: float) -> int:
        """Rewrite the upper shard pairs of ``fold`` from the first not done on, until
        ``budget`` seconds have passed since ``t0`` (at least one rewritten pair, unless only
        reading the first band used the time up); returns the number of pairs done then."""
        grid = ShardGrid(self.capacity, self.shard_size)
        S, G = grid.S, grid.G
        n_pairs = G * (G + 1) // 2
        reset = self._reset_seq
        stale = np.flatnonzero(reset > self._state.base_seq)
        stale_bands = set(np.unique(stale // S).tolist())
        arr = root["counts/0"]
        stale_mask = np.zeros(grid.V, dtype=bool)
        stale_mask[stale] = True
        p, a, b = fold.done, 0, 0
        # (a, b) walks the upper pairs in the order of pair_index.
        while pair_index(a, b, G) != p:
            a, b = (a, b + 1) if b + 1 < G else (a + 1, a + 1)
        rewritten = 0
        while p < n_pairs:
            if rewritten and time.perf_counter() - t0 >= budget:
                break
            cache = self._band_cache
            if cache is None or cache.key != (fold.names, a):
                # Kept between steps: reading a band of every segment (~0.5-1.5 s for
                # the first band at V = 20,000) is paid once per band, not per step.
                self._band_cache = cache = BandEntries.read(root, segs, a, S)
                if time.perf_counter() - t0 >= budget:
                    break  # this step only read; the next one rewrites
            entries = cache.pair(b, reset)
            if entries[0].size or a in stale_bands or b in stale_bands:
                for x, y in {(a, b), (b, a)}:
                    rewrite_shard(arr, grid, x, y, [entries],
                                  stale_mask=stale_mask if stale.size else None)
                rewritten += 1
            p += 1
            a, b = (a, b + 1) if b + 1 < G else (a + 1, a + 1)
        return p

    def _fold_step(self, budget: float) -> str:
        """One step of a compaction in steps (starting one if none is in progress).

        The step folds the segments of the compaction ("generation") into the base shard pair
        by shard pair, ``(a, b)`` and its mirror ``(b, a)`` for the upper pairs ``a <= b`` in
        row-major order, until ``budget`` seconds have passed, then commits the shards with
        the number of pairs done. Readers skip the generation's entries in the pairs done
        (:class:`~anchorstream.store.segments.Fold`), so every commit holds the same logical
        matrix. Segments committed meanwhile wait for the next generation. The last step drops
        the generation's segments and moves ``base_seq`` to the generation's last checkpoint;
        until then the base keeps ignoring slots evicted after the previous compaction (as
        readers do), and each step zeroes them in the shards it rewrites. Returns the new
        version.
        """
        if self._dirty:
            raise InputError("a compaction step needs a clean state: call checkpoint() first")
        st = self._state
        grid = ShardGrid(self.capacity, self.shard_size)
        n_pairs = grid.G * (grid.G + 1) // 2
        progress = st.folding or FoldProgress(
            tuple(seg.name for seg in st.segments), st.seq - 1, 0)
        current = Fold(frozenset(progress.segments), int(progress.done), int(progress.seq),
                       grid.S, grid.G)
        segs = [seg for seg in st.segments if seg.name in current.names]
        t0 = time.perf_counter()
        try:
            session = self.writable_session()
            root = zarr.open_group(session.store, mode="r+")
            p = self._fold_pairs(root, current, segs, t0=t0, budget=budget)
            if p == current.done and st.folding:
                return self.version  # nothing rewritten: nothing to commit
            # (A new generation is committed even before its first rewrite, so that the next
            # step folds the same segments and finds them read.)
            if p == n_pairs:
                self._band_cache = None
                for name in current.names:
                    del root[f"segments/{name}"]
                st = st.replace(
                    segments=tuple(s for s in st.segments if s.name not in current.names),
                    base_seq=progress.seq, folding=None)
            else:
                st = st.replace(folding=FoldProgress(progress.segments, progress.seq, p))
            attrs = {"state": st.to_json(), "maintenance": self._maintenance}
            meta = self._meta
            if meta.get("format_version") != FORMAT_VERSION:
                meta = attrs[META] = {**meta, "format_version": FORMAT_VERSION}
            root.attrs.update(attrs)
            done = "done" if p == n_pairs else f"{p}/{n_pairs} shard pairs"
            version = session.commit(
                f"compact {progress.seq} ({done})",
                metadata={"kind": "compact", "seq": progress.seq, "offsets": self._offsets},
            )
        except BaseException as exc:
            pass_through(exc)
            raise wrap(
                exc, f"compaction step of {self.url!r} failed; the store still holds version "
                f"{self.version}"
            ) from exc
        self._state = st
        self._meta = meta  # marked version 2 only once the commit that needs it is in
        self.version = version
        return version
