"""The writer: add documents in memory, checkpoint them atomically with source offsets.

One writer per store at a time; compaction (:mod:`anchorstream.store.compaction`) and garbage
collection (:mod:`anchorstream.store.retention`) run after its commits. See ``docs/store.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import zarr

from anchorstream.errors import InputError, StoreConflictError
from anchorstream.stats.accumulator import Accumulator, Delta, Forgetting
from anchorstream.stats.documents import GROUP as DOCSTATS_GROUP
from anchorstream.stats.documents import MAX_SEGMENTS as MAX_DOCSTATS_SEGMENTS
from anchorstream.stats.documents import DocStatsSettings, DocumentStatistics
from anchorstream.store.compaction import Compacting
from anchorstream.store.delay import DelayLine, Delaying, count_delay, count_delay_pairs
from anchorstream.store.format import BRANCH, DUPLICATES, Segment, StoreState, vocab_items
from anchorstream.store.reading import CommittedState, read_version
from anchorstream.store.opening import Opening
from anchorstream.store.repository import disk_bytes, pass_through, wrap
from anchorstream.store.retention import Retaining
from anchorstream.store.segments import BandEntries, segment_probe
from anchorstream.store.settings import (RUNTIME_DEFAULTS, duplicate_memory, length_cap,
                                         vocabulary_of)
from anchorstream.store.settings import links as recorded_links
from anchorstream.text.duplicates import DuplicateFilter
from anchorstream.zarrio import put_many

__all__ = ["CooccurrenceStore"]


class CooccurrenceStore(Opening, Compacting, Retaining, Delaying):
    """The writer: add documents, checkpoint atomically with source offsets, compact, GC.

    One writer per store at a time (Icechunk's local-disk storage does not arbitrate
    concurrent commits); any number of readers (:func:`open_committed`).

    Use :meth:`create`, :meth:`open` or :meth:`open_or_create`, not the constructor.

    Runtime options (not stored; may differ between runs)
    ----------------------------------------------------
    budget_bytes : int, default 256 MiB
        Memory for the uncommitted delta; past it :attr:`needs_checkpoint` is true.
    compact_bytes : int, default 256 MiB
        Segment bytes that trigger compaction after a checkpoint.
    max_segments : int, default 64
        Segment count that triggers compaction.
    compact_step_seconds : float, default 0.5
        Without decay or windows, a compaction folds the segments into the base in steps,
        one commit after each checkpoint, each rewriting shards until this much time has
        passed (at least one shard pair), so that no checkpoint pays for a whole compaction
        (all ~100 shards at V = 20,000 take 5-11 s); 0 compacts in one step.
    keep_versions : int, default 3
        Commits kept by garbage collection (older ones are expired).
    gc_every : int, default 20
        Run expiry + garbage collection after every ``gc_every``-th checkpoint of this writer
        (0: not by count).
    gc_interval_seconds : float, default 3600.0
        ... and after a checkpoint when this long has passed since the last collection, as
        recorded in the store (0: not by time), so a slow stream still collects.
    gc_min_age : float, default 60.0
        Seconds: never expire a commit, or delete an unreferenced object, younger than this
        (readers holding a recent version keep working; a concurrent writer's uncommitted
        objects are not collected).

    Garbage collection schedule: besides the two rules above, the first checkpoint of every
    writer (every process that opens the store) collects when the branch holds commits that
    can be expired (more than ``keep_versions`` of them, older than ``gc_min_age``). So short
    runs (``anchorstream ingest`` with a few checkpoints, a daemon that restarts often) keep
    the disk bounded too, although none of them reaches ``gc_every`` on its own; the check
    lists the ancestry once per writer, and runs at the first checkpoint rather than when the
    store is opened, so that reopening stays fast. :meth:`collect_garbage` can be called at
    any time.

    Attributes
    ----------
    last_checkpoint_seconds : dict of str to float
        Wall time of the stages of the last successful :meth:`checkpoint` call: ``"delta"``
        (accumulators to sparse deltas), ``"write"`` (arrays written into the Icechunk
        session), ``"commit"`` (the Icechunk commit), ``"compact"`` and ``"gc"`` (0.0 when no
        compaction or garbage collection ran after it). All 0.0 after a call that had nothing
        to commit; empty before the first call.
    """

    _RUNTIME_DEFAULTS = RUNTIME_DEFAULTS

    #: The stages of :attr:`last_checkpoint_seconds`, in order.
    CHECKPOINT_STAGES = ("delta", "write", "commit", "compact", "gc")

    def __init__(self, repo, url, local, meta, root_attrs, arrays, runtime, docstats=None):
        # root_attrs: "state", "offsets" and "maintenance" of the commit the writer starts at.
        self._repo = repo
        self.url = os.fspath(url)
        self._local = local
        self._meta = meta
        cfg = meta["config"]
        self.capacity = int(cfg["capacity"])
        self.chunk_size = int(cfg["chunk_size"])
        self.shard_size = int(cfg["shard_size"])
        self.forgetting = Forgetting.from_dict(cfg["forgetting"])
        self.length_cap = length_cap(cfg)
        # Repeated documents: the filter's ring and cursor as committed (a store made before
        # the setting has neither and counts every copy).
        seen = dict(root_attrs.get("duplicates") or {})
        memory = duplicate_memory(cfg)
        self.duplicates = DuplicateFilter(
            memory, arrays.get("duplicates") if memory else None,
            int(seen.get("cursor", 0)) if memory else 0)
        self._duplicates_committed = self.duplicates.cursor
        #: Documents skipped as repeats over the store's life (committed with the counts).
        self.n_duplicates = int(seen.get("skipped", 0))
        #: Which documents of the last :meth:`add` were skipped as repeats (bool mask).
        self.last_repeats = np.zeros(0, dtype=bool)
        self.vocabulary = vocabulary_of(cfg)
        self.vocabulary.set_state(arrays["vocab"])
        #: The documents waiting to be counted (``store.count_delay``; none where it is 0).
        line = arrays.get("delay")
        self.delay_line: DelayLine = (line if line is not None else DelayLine(
            count_delay(cfg), max_pairs=count_delay_pairs(cfg)))
        self._state = StoreState.from_json(root_attrs["state"])
        # The entries of the row band a fold in steps is working through (see _fold_step).
        self._band_cache: BandEntries | None = None
        self._offsets = dict(root_attrs["offsets"])
        self._unigram = arrays["unigram"]
        self._doc_freq = arrays["doc_freq"]
        self._totals = arrays["totals"]
        self._reset_seq = arrays["reset_seq"]
        self.version = arrays["version"]
        self._accs: dict[int, Accumulator] = {}
        self._dirty = False
        self._committed_docs = int(self._state.n_docs_added)
        self.n_skipped_late = 0
        self._commits_since_gc = 0
        # Unix time of the last garbage collection (recorded in the store with the next commit;
        # 0 for a store that never recorded one); whether the first checkpoint checks history.
        self._maintenance = dict(root_attrs.get("maintenance") or {})
        self._last_gc = float(self._maintenance.get("last_gc", 0.0))
        self._check_history = True
        self.last_checkpoint_seconds: dict[str, float] = {}
        for key, default in self._RUNTIME_DEFAULTS.items():
            setattr(self, key, runtime.pop(key, default))
        if runtime:
            raise InputError(f"unknown store options: {sorted(runtime)}")
        # (statistics kept, whether the committed docstats group must go at the next checkpoint)
        self._docstats: DocumentStatistics | None
        self._docstats, self._docstats_drop = docstats or (None, False)
        if self._docstats is not None:
            # The store's segment limit bounds the statistics' segments too (at most 8: a
            # refresh reads every segment of the sketch).
            self._docstats.max_segments = min(int(self.max_segments), MAX_DOCSTATS_SEGMENTS)

    # ------------------------------------------------------------------ properties
    @property
    def offsets(self) -> dict:
        """Offsets of the last commit (a copy)."""
        return dict(self._offsets)

    @property
    def needs_checkpoint(self) -> bool:
        """True when the uncommitted delta has reached ``budget_bytes``."""
        return self.pending_bytes >= self.budget_bytes or any(
            a.is_full for a in list(self._accs.values()))

    @property
    def pending_bytes(self) -> int:
        """Memory held by the uncommitted delta (what :attr:`needs_checkpoint` weighs against
        ``budget_bytes``): the accumulators and the documents buffered for their statistics.
        Safe to read from another thread (a metrics scrape) while documents are added."""
        held = sum(a.nbytes for a in list(self._accs.values()))
        docstats = self._docstats
        return held + (docstats.nbytes if docstats is not None else 0)

    @property
    def documents_waiting(self) -> int:
        """Documents added but not counted yet: waiting in the delay line (``count_delay``)."""
        return len(self.delay_line)

    @property
    def n_docs_added(self) -> int:
        """Documents added over the store's life, committed or not."""
        return int(self._state.n_docs_added)

    @property
    def pending_docs(self) -> int:
        """Documents added since the last commit."""
        return int(self._state.n_docs_added) - self._committed_docs

    @property
    def document_stats(self) -> DocStatsSettings | None:
        """The document statistics kept (None: none)."""
        return None if self._docstats is None else self._docstats.settings

    @property
    def links(self) -> str:
        """How its documents' links are tokenized, as recorded at creation: ``"keep"`` (they
        are words) or ``"drop"`` (removed before the split)."""
        return recorded_links(self._meta["config"])

    @property
    def has_pending(self) -> bool:
        """Whether anything was added or evicted since the last commit."""
        return self._dirty

    # ------------------------------------------------------------------ updates
    def add(self, documents: Iterable[Sequence[str]], timestamps=None) -> int:
        """Add tokenized documents (in memory until the next :meth:`checkpoint`).

        Parameters
        ----------
        documents : iterable of sequences of str
            One token list per document (e.g. from :class:`~anchorstream.text.tokenize.Tokenizer`).
        timestamps : sequence of float, optional
            Seconds, one per document; required when forgetting is measured in seconds.

        Returns
        -------
        int
            Number of documents counted; with time windows, documents older than the oldest
            kept window are skipped (see ``n_skipped_late``), and repeats of a remembered
            document always (see :attr:`duplicates` and ``n_duplicates``).

        Raises
        ------
        InputError
            If a document is a str, or timestamps are missing or malformed.
        """
        docs = documents if isinstance(documents, list) else list(documents)
        for d in docs:
            if isinstance(d, str):
                raise InputError("documents must be token lists, got a str; tokenize first")
        self.last_repeats = np.zeros(len(docs), dtype=bool)
        if self.duplicates.enabled and docs:
            docs, timestamps = self._skip_repeats(docs, timestamps)
        n = len(docs)
        if n == 0:
            return 0
        F, st = self.forgetting, self._state
        R = F.ring
        if F.unit == "documents":
            t = np.arange(st.n_docs_added, st.n_docs_added + n, dtype=np.float64)
        else:
            if timestamps is None:
                raise InputError("this store measures time in seconds: pass timestamps=")
            t = np.asarray(timestamps, dtype=np.float64)
            if t.shape != (n,) or not np.all(np.isfinite(t)):
                raise InputError(f"timestamps must be {n} finite numbers, got shape {t.shape}")
            if np.any(t < 0):
                raise InputError("timestamps must be seconds >= 0 (e.g. since the Unix epoch)")
        win = np.floor(t / F.window).astype(np.int64) if F.window else np.zeros(n, np.int64)
        # The newest window of the documents that arrived before (counted or waiting).
        newest = self.delay_line.newest_window
        newest = st.current_window if newest is None else max(newest, st.current_window)
        horizon = np.maximum.accumulate(np.maximum(win, newest))
        keep = win > horizon - R
        first = st.n_docs_added == 0
        positions = st.n_docs_added + np.arange(n, dtype=np.int64)  # stream positions
        self._state = st = st.replace(
            n_docs_added=st.n_docs_added + n,
            clock=float(t.max()) if first else max(float(st.clock), float(t.max())))
        self._dirty = True
        if not keep.all():
            self.n_skipped_late += int((~keep).sum())
            docs = [d for d, k in zip(docs, keep) if k]
            t, win, positions = t[keep], win[keep], positions[keep]
            if not docs:
                return 0
        w = self._weights(t)
        if self.delay_line.length:
            return self._add_delayed(docs, t, win, positions, w)
        # The windows' pairs are cut by where each token stood in its document.
        where = self._keeps_windows()
        observed = self.vocabulary.observe_batch(
            docs, w.tolist() if F.decays else 1.0, positions=where)
        self._count(t, win, w, positions, observed[:3], observed[3] if where else None)
        return int(win.size)

    def _weights(self, t: np.ndarray) -> np.ndarray:
        """Decay weights of documents of times ``t`` in the store's units (moved to ``t``'s
        latest first where they have grown too far); ones without decay."""
        F = self.forgetting
        if not F.decays:
            return np.ones(t.size)
        if F.needs_renormalize(float(t.max()), self._state.t_ref):
            self._renormalize(float(t.max()))
        return np.exp2((t - self._state.t_ref) / F.half_life)

    def _keeps_windows(self) -> bool:
        """Whether the document statistics keep the pairs of windows (cut by where each token
        stood in its document)."""
        return self._docstats is not None and self._docstats.settings.pair_window > 0

    def _count(self, t, win, w, positions, observed, token_positions) -> None:
        """Count documents: ``observed`` (``(indptr, slots, evictions)``) into the
        accumulators, and into the document statistics with their stream ``positions``."""
        indptr, slots, evictions = observed
        self._add_runs(win, w, observed)
        if self._docstats is not None:
            self._docstats.add(positions=positions, times=t, weights=w, windows=win,
                               indptr=indptr, slots=slots, evictions=evictions,
                               seq=self._state.seq, token_positions=token_positions)
            self._docstats.roll(self._state.current_window)

    def _skip_repeats(self, docs: list, timestamps):
        """``docs`` (and their timestamps) without the repeats :attr:`duplicates` finds: a
        repeat is not a document of the store (it takes no position in the stream)."""
        keep = self.duplicates.keep(docs)
        if keep.all():
            return docs, timestamps
        self.last_repeats = ~keep
        self.n_duplicates += int((~keep).sum())
        docs = [d for d, k in zip(docs, keep) if k]
        if timestamps is not None:
            stamps = np.asarray(timestamps)
            # A malformed list is left whole for add's own check to name.
            if stamps.shape == keep.shape:
                timestamps = stamps[keep]
        return docs, timestamps

    def _add_runs(self, win, w, observed) -> None:
        """Give the accumulators the documents ``observed`` by the vocabulary (``(indptr,
        slots, evictions)``): one call per run of documents in the same window (usually the
        whole batch); evictions inside a run go with it, positioned by document, and those
        after the last document (a delay line's) to every window after them."""
        indptr, slots, evictions = observed
        cuts = [0, *(np.flatnonzero(np.diff(win)) + 1).tolist(), win.size]
        k = 0
        for a, b in zip(cuts[:-1], cuts[1:]):
            window = int(win[a])
            self._roll(window)
            acc = self._accs.get(window)
            if acc is None:
                # Half the budget goes to the dense block of hot rows of the current window's
                # accumulator. Late documents (timestamps of an older window) get none, so
                # that however many windows are pending, at most the current one and the one
                # it replaced hold a block: the budget bounds memory.
                late = window < self._state.current_window
                acc = Accumulator(self.capacity, budget_bytes=self.budget_bytes,
                                  hot_rows=0 if late else None, length_cap=self.length_cap)
                self._accs[window] = acc
            run_ev = []
            while k < len(evictions) and evictions[k][0] < b:
                d, s = evictions[k]
                self._evict_slot(s, keep=window)
                run_ev.append((d - a, s))
                k += 1
            acc.add(indptr[a : b + 1] - indptr[a], slots[indptr[a] : indptr[b]], w[a:b], run_ev)
        for _, s in evictions[k:]:
            self._evict_slot(s)

    def _renormalize(self, t_new: float) -> None:
        """Move the units of everything held in memory to ``t_new`` (weights back to ≤ 1).

        Only memory changes: the vectors, the vocabulary's frequencies and the uncommitted
        deltas; they are written in the new units at the next checkpoint. Committed segments
        and the base matrix keep their own reference times (converted when read or compacted).
        """
        f = self.forgetting.readout(t_new, self._state.t_ref)
        self._unigram *= f
        self._doc_freq *= f
        self._totals *= f
        self.vocabulary.rescale(f)
        for acc in self._accs.values():
            acc.rescale(f)
        if self._docstats is not None:
            self._docstats.rescale(f)
        self._state = self._state.replace(t_ref=t_new)
        self._dirty = True

    def _roll(self, window: int) -> None:
        """Make ``window`` current if it is newer; clear its ring slot's vectors if stale."""
        R = self.forgetting.ring
        if window > self._state.current_window:
            self._state = self._state.replace(current_window=window)
            for w in [w for w in self._accs if not self._state.live(w, R)]:
                del self._accs[w]
        r = window % R
        if self._state.vec_window[r] != window:
            self._unigram[r] = 0.0
            self._doc_freq[r] = 0.0
            self._totals[r] = 0.0
            vec_window = list(self._state.vec_window)
            vec_window[r] = window
            self._state = self._state.replace(vec_window=tuple(vec_window))

    def _evict_slot(self, slot: int, keep: int | None = None) -> None:
        """Zero ``slot`` in memory; the accumulator of window ``keep`` is told by the caller."""
        for window, acc in self._accs.items():
            if window != keep:
                acc.evict(slot)
        self._unigram[:, slot] = 0.0
        self._doc_freq[:, slot] = 0.0
        self._reset_seq[slot] = self._state.seq
        self._dirty = True

    def evict(self, word: str) -> int:
        """Remove ``word`` from the vocabulary now; its row and column read as zero from the
        next checkpoint on. Returns the freed slot.
        """
        slot = self.vocabulary.evict(word)
        self._evict_slot(slot)
        if self._docstats is not None:
            self._docstats.evict(slot, self.n_docs_added)
        return slot

    # ------------------------------------------------------------------ commits
    def checkpoint(self, offsets: Mapping[str, Any] | None = None, *, metadata=None) -> str:
        """Commit everything added so far together with ``offsets``, atomically.

        Parameters
        ----------
        offsets : mapping, optional
            Source positions (JSON values), merged into the committed offsets.
        metadata : mapping, optional
            Extra JSON metadata for the commit.

        Returns
        -------
        str
            The new version (snapshot id); the current one if there was nothing to commit.

        Raises
        ------
        StoreError
            If the commit fails. Nothing changes in memory and the store keeps its previous
            version; calling again retries.

        Notes
        -----
        A compaction (when the segments reach ``compact_bytes`` or ``max_segments``) and a
        garbage collection (see the class notes) may follow the commit, in commits of their
        own; their failure is logged and retried later, not raised. The time of each stage
        goes to :attr:`last_checkpoint_seconds`.
        """
        new_offsets = {**self._offsets, **dict(offsets or {})}
        if not self._dirty and new_offsets == self._offsets:
            self.last_checkpoint_seconds = dict.fromkeys(self.CHECKPOINT_STAGES, 0.0)
            return self.version
        t_start = time.perf_counter()
        st = self._state
        seq = st.seq
        R = self.forgetting.ring
        vectors = (self._unigram.copy(), self._doc_freq.copy(), self._totals.copy())
        deltas: list[tuple[int, Delta]] = []
        for window, acc in sorted(self._accs.items()):
            d = acc.delta()
            r = window % R
            vectors[0][r] += d.unigram
            vectors[1][r] += d.doc_freq
            vectors[2][r] += (d.num_docs, d.num_tokens)
            deltas.append((window, d))
        t_delta = time.perf_counter()
        try:
            session = self.writable_session()
            root = zarr.open_group(session.store, mode="r+")
            items: list = []
            segments = list(st.segments)
            probes = self.delay_line.length > 0 and self.forgetting.window is None
            for window, d in deltas:
                if d.nnz == 0:
                    continue
                name = f"s{seq:010d}w{window}"
                g = root.require_group("segments").create_group(name, overwrite=True)
                items += [(g, "rows", d.rows), (g, "cols", d.cols), (g, "vals", d.vals)]
                if probes:  # what a reader holding the line's documents checks them by
                    items.append((g, "probe", segment_probe(d.rows, d.cols, d.vals, d.n_slots)))
                segments.append(Segment(name, seq, window, d.nnz, st.t_ref))
            st = st.replace(segments=tuple(segments), seq=seq + 1)
            prepared = None
            if self._docstats_drop and DOCSTATS_GROUP in root:
                del root[DOCSTATS_GROUP]
            if self._docstats is not None:
                prepared = self._docstats.prepare(
                    root, seq=seq, t_ref=st.t_ref, current_window=st.current_window,
                    reset_seq=self._reset_seq)
            if self.delay_line.length:
                items += self.delay_line.items(root)
            self._write_common(root, items, state=st, offsets=new_offsets, vectors=vectors)
            self._write_duplicates(root)
            meta = {"kind": "checkpoint", "seq": seq, "offsets": new_offsets}
            meta.update(metadata or {})
            t_write = time.perf_counter()
            version = session.commit(f"checkpoint {seq}", metadata=meta)
            t_commit = time.perf_counter()
        except BaseException as exc:
            pass_through(exc)
            raise wrap(
                exc, f"checkpoint {seq} of {self.url!r} failed; the store still holds version "
                f"{self.version}"
            ) from exc
        self._adopt_commit(version, st, new_offsets, vectors, prepared)
        after = self._after_commit()
        self.last_checkpoint_seconds = {
            "delta": t_delta - t_start, "write": t_write - t_delta,
            "commit": t_commit - t_write, **after}
        return self.version

    def is_stale(self) -> bool:
        """Whether another writer has moved the branch since this writer's version."""
        try:
            return self._repo.lookup_branch(BRANCH) != self.version
        except BaseException as exc:
            pass_through(exc)
            raise wrap(exc, f"cannot read the branch of {self.url!r}") from exc

    def writable_session(self):
        """A writable Icechunk session on the branch, which must still be at :attr:`version`.

        The fence between writers: a writer whose branch another writer moved (the new owner
        of a partition, see docs/store.md) gets :class:`StoreConflictError` here, and
        Icechunk refuses its commit (``ConflictError``) if the branch moves after this
        check. Nothing is ever rebased onto another writer's commit.
        """
        session = self._repo.writable_session(BRANCH)
        if session.snapshot_id != self.version:
            raise StoreConflictError(
                f"the branch of {self.url!r} is at {session.snapshot_id}, not at this "
                f"writer's version {self.version}")
        return session

    def _write_common(self, root, items, *, state: StoreState, offsets, vectors) -> None:
        """Write ``items``, the ``vectors`` (unigram, doc_freq, totals), ``reset_seq``, the
        vocabulary and the root attributes into ``root`` (a checkpoint's session)."""
        unigram, doc_freq, totals = vectors
        items = list(items) + [
            (root, "unigram", unigram),
            (root, "doc_freq", doc_freq),
            (root, "totals", totals),
            (root, "reset_seq", self._reset_seq),
        ]
        items += vocab_items(root.require_group("vocab"), self.vocabulary.get_state())
        put_many(items)
        root.attrs.update({"state": state.to_json(), "offsets": offsets,
                           "maintenance": self._maintenance})

    def _write_duplicates(self, root) -> None:
        """The duplicate filter's keys remembered since the last commit (the chunks of its
        ring they fall in), its cursor and the repeats skipped."""
        f = self.duplicates
        if not f.enabled:
            return
        for a, b in f.changed_since(self._duplicates_committed):
            root[DUPLICATES][a:b] = f.ring[a:b]
        root.attrs["duplicates"] = {"cursor": f.cursor, "skipped": self.n_duplicates}

    def _adopt_commit(self, version: str, state: StoreState, offsets, vectors,
                      prepared) -> None:
        """The checkpoint ``version`` committed: it is what memory now starts from."""
        self._duplicates_committed = self.duplicates.cursor
        self._state = state
        self._offsets = offsets
        self._unigram, self._doc_freq, self._totals = vectors
        # The current window's accumulator is cleared, not dropped: its dense block of hot rows
        # (half the budget, 134 MB at 5000 slots) would otherwise be allocated afresh every
        # interval, and first-touching it cost ~0.2-0.4 s of page faults per checkpoint here.
        kept = self._accs.get(state.current_window)
        self._accs.clear()
        if kept is not None:
            kept.clear()
            self._accs[state.current_window] = kept
        self._dirty = False
        self.version = version
        self._committed_docs = state.n_docs_added
        self._docstats_drop = False
        if prepared is not None:
            self._docstats.adopt(prepared)

    def read(self) -> CommittedState:
        """The last committed state (what a reader opening the store now would see)."""
        return read_version(self._repo, self.url, self.version)

    def disk_bytes(self) -> int:
        """Bytes the store occupies (local disk: every file; object stores: chunks only)."""
        return disk_bytes(self._local, self._repo)
