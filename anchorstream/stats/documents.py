"""Document statistics kept with the store: what DDP, RP and TSVD need beside the counts.

The co-occurrence is enough for the anchor pipeline and AnchorFree. Three methods of the seed
papers read documents instead (:mod:`anchorstream.model.novelwords`, :mod:`anchorstream.model.tsvd`):

* **DDP** (Ding et al. 2014, Alg. 1, 3, 4) needs the *split-document statistic*
  ``Σ_d w_d x_d⁽¹⁾ x_d⁽²⁾ᵀ`` (a V × V sum, not symmetric) and the halves' masses;
* **RP** (Alg. 2) needs, beside that, the *sketch* ``Σ_d w_d g_d x_dᵀ`` (P × V), with the
  document's direction coordinates ``g_d`` a pure function of its stream position;
* **TSVD** (Bansal et al. 2014) needs documents: a bounded *reservoir* of them;
* the pair refinement, with ``model.refine_window``, counts the pairs of the documents'
  *windows* (:mod:`anchorstream.stats.windowpairs`).

``x_d`` is the word-frequency vector of document ``d`` over its in-vocabulary tokens (the same
tokens the counts see) and ``w_d`` its decay weight (1 without forgetting). The store keeps
these only when asked (:class:`DocStatsSettings`, given to
:meth:`~anchorstream.store.CooccurrenceStore.open` and friends): a store without them pays
nothing.

What is stored where (group ``docstats/`` of the store, in the checkpoint's own commit)
-----------------------------------------------------------------------------------------
::

    docstats/             attrs: config (the settings), state (since_docs, segment list)
    docstats/segments/<name>/
        rows, cols, vals  the split statistic's cross entries (int32, int32, float64)
        slots             (n,) int32: the slots the segment's vectors and sketch rows cover
        vecs              (3 or 5, n): first-half mass, second-half mass, split document
                          frequency (+ sketch mass, sketch document frequency with RP)
        sketch            (n, P): the sketch's columns of those slots, transposed (RP only)
        pair_rows, pair_cols, pair_vals   the windows' pairs, upper triangle (pair_window)
    docstats/reservoir/   key, pos, seq, window (one per document), indptr, slots, counts

A checkpoint writes one *segment* per live window holding the delta of the documents added
since the previous checkpoint, in the same Icechunk commit as the counts, the vocabulary and the
offsets, so the statistics are exactly-once like the counts: a crash loses the uncommitted delta
together with its offsets and the replay adds the same documents at the same stream positions
(hence the same random directions, splits and reservoir keys). When a window has more than
``max_segments`` segments, the checkpoint merges them with the new delta into one segment (an
LSM tree of one level, inside the checkpoint's commit: the logical content is the old segments
plus the delta, whatever happens). Everything is sparse except the sketch, which is dense over
the slots a segment touches: a checkpoint writes ``8 P`` bytes per distinct word it saw.

The delta is computed at the checkpoint from a buffer of the pending documents (their slots,
about 12 bytes per distinct word as in :mod:`anchorstream.stats.accumulator`), so the writer never
holds a P × V or V × V array; a refresh reads the sum over the active words, as dense arrays
(``8 n²`` bytes for the split statistic, ``8 P n`` for the sketch, like the counts).

Evicted slots
-------------
A slot whose word is evicted and given to another word must not carry the old word's mass.
The counts' rule applies unchanged: ``reset_seq[s]`` (kept by the store) is the checkpoint from
which slot ``s`` holds its new word, and a segment entry touching ``s`` written at an earlier
checkpoint is void (readers drop it, merges drop it for good). Within the pending interval the
buffer records, per slot, the position before which its entries are void; the voided entries
are zeroed *after* the documents' frequencies and splits are computed, so a document keeps its
length and its split and every other entry its exact value (as the counts keep ``n_d``).
Reservoir documents drop the entries of an evicted slot at once, and readers also drop entries
of slots reset after the checkpoint that wrote the document.

Forgetting
----------
Decay uses the store's global scale: every document enters with its weight in the store's
current units, a segment records the reference time ``t_ref`` it was written in, readers
multiply by ``Forgetting.readout(clock, t_ref)`` and a renormalization of the store rescales the
buffer. Windows: every segment belongs to one window, readers sum the live ones, and a
checkpoint deletes the segments of expired windows. The reservoir follows the same forgetting:
it is a weighted sample without replacement (Efraimidis and Spirakis 2006) with the document's
decay weight, i.e. it keeps the ``size`` documents of smallest ``log E_d − log w_d`` with
``E_d ~ Exp(1)`` drawn from a hash of the document's position; without decay this is a uniform
sample of the stream, with decay it leans towards recent documents exactly as the counts do,
and documents of expired windows leave it. The sample is reproducible: a replay gives every
document the same key.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream.model.registry import method_spec
from anchorstream.stats.accumulator import Forgetting
from anchorstream.zarrio import put_many, zstd
from anchorstream.errors import InputError, StoreFormatError
from anchorstream.stats.docparts import Part, Pending, Reservoir, read_segments
from anchorstream.stats.windowpairs import WindowPairs, window_counts
from anchorstream.stats.windows import is_live
from anchorstream.stats.wordpatterns import (
    RPSketch,
    SplitStatistic,
    random_directions,
)

__all__ = [
    "DocStatsSettings",
    "DocumentState",
    "DocumentStatistics",
    "StoredDocuments",
]

log = logging.getLogger(__name__)

#: Name of the store group holding the statistics.
GROUP = "docstats"
_FORMAT = 1
#: Segments of one window before a checkpoint merges them into one.
MAX_SEGMENTS = 8
# The reservoir's exponential variates come from RP's counter-based Gaussians (E = (g1² + g2²)/2
# is Exp(1)), on a seed of their own so that they are independent of the sketch's directions.
_RESERVOIR_SALT = 0x5EED_0F_D0C5
#: Bytes of one chunk of a stored sketch (rows of P values).
_SKETCH_CHUNK_BYTES = 4 * 2**20


# ---------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class DocStatsSettings:
    """Which document statistics a store keeps.

    Parameters
    ----------
    split : bool, default False
        The split-document statistic (DDP; RP too).
    n_projections : int, default 0
        Rows ``P`` of the RP sketch; 0 = no sketch. Needs ``split`` (RP clusters and estimates
        topics on the split statistic).
    reservoir : int, default 0
        Documents kept for TSVD; 0 = none.
    seed : int, default 0
        Seed of the splits, the directions and the reservoir keys.
    pair_window : int, default 0
        Keep the word pairs of windows of this many consecutive tokens of each document, for
        the pair refinement (:mod:`anchorstream.stats.windowpairs`); 0 = none, else >= 2.

    Examples
    --------
    >>> DocStatsSettings.for_method("anchor", "rp", n_topics=4)
    DocStatsSettings(split=True, n_projections=200, reservoir=0, seed=0, pair_window=0)
    >>> DocStatsSettings.for_method("anchor", "qr", n_topics=4).enabled
    False
    """

    split: bool = False
    n_projections: int = 0
    reservoir: int = 0
    seed: int = 0
    pair_window: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.split, bool):
            raise InputError(f"split must be a bool, got {self.split!r}")
        for name in ("n_projections", "reservoir", "pair_window"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise InputError(f"{name} must be an int >= 0, got {v!r}")
        s = self.seed
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s < 2**62:
            raise InputError(f"seed must be an int in [0, 2**62), got {s!r}")
        if self.pair_window == 1:
            raise InputError("pair_window must be 0 (no windows) or a window of >= 2 tokens, "
                             "got 1 (a window of one token holds no pair)")
        if self.n_projections and not self.split:
            raise InputError(
                "an RP sketch (n_projections > 0) needs the split statistic too (split=True): "
                "RP clusters the novel words and estimates the topics on it"
            )

    @property
    def enabled(self) -> bool:
        """Whether anything is kept."""
        return self.split or self.reservoir > 0 or self.pair_window > 0

    @property
    def buffers(self) -> bool:
        """Whether the writer buffers pending documents (the split statistic, the windows)."""
        return self.split or self.pair_window > 0

    @property
    def sketch(self) -> bool:
        return self.n_projections > 0

    @classmethod
    def for_method(
        cls, method: str, anchor_method: str = "qr", *, n_topics: int,
        n_projections: int | None = None, reservoir: int = 10_000, seed: int = 0,
        pair_window: int | None = None,
    ) -> DocStatsSettings:
        """What ``method`` / ``anchor_method`` (as in :func:`anchorstream.model.methods.fit_topics`)
        need: the split statistic for ``ddp``, plus a sketch of ``n_projections`` (default
        ``50 K``, the paper's choice) for ``rp``, a reservoir for ``tsvd``, nothing otherwise;
        and the windows' pairs where ``pair_window`` is given (``model.refine_window``).
        """
        statistics = method_spec(method, anchor_method).statistics
        window = int(pair_window or 0)
        if statistics == "reservoir":
            return cls(reservoir=int(reservoir), seed=seed, pair_window=window)
        if statistics == "split":
            return cls(split=True, seed=seed, pair_window=window)
        if statistics == "split+sketch":
            p = 50 * int(n_topics) if n_projections is None else int(n_projections)
            return cls(split=True, n_projections=p, seed=seed, pair_window=window)
        return cls(seed=seed, pair_window=window)

    def to_dict(self) -> dict:
        return {"split": self.split, "n_projections": int(self.n_projections),
                "reservoir": int(self.reservoir), "seed": int(self.seed),
                "pair_window": int(self.pair_window)}

    @classmethod
    def from_dict(cls, d: Mapping) -> DocStatsSettings:
        return cls(bool(d["split"]), int(d["n_projections"]), int(d["reservoir"]),
                   int(d["seed"]), int(d.get("pair_window", 0)))


def reservoir_keys(positions, times, forgetting: Forgetting, seed: int) -> np.ndarray:
    """``log E_d − log w_d`` of documents: smaller is kept (see the module notes).

    ``E_d ~ Exp(1)`` is a pure function of ``(seed, position)``; ``log w_d = t_d ln 2 / h``
    with decay (half-life ``h``), 0 without.

    Examples
    --------
    >>> a = reservoir_keys([3, 4], [3.0, 4.0], Forgetting(), seed=1)
    >>> bool(np.array_equal(a[1:], reservoir_keys([4], [4.0], Forgetting(), seed=1)))
    True
    """
    pos = np.asarray(positions, dtype=np.int64)
    g = random_directions(pos, 2, seed=int(seed) ^ _RESERVOIR_SALT)
    e = 0.5 * (g[:, 0] ** 2 + g[:, 1] ** 2)
    keys = np.log(np.maximum(e, np.finfo(float).tiny))
    if forgetting.decays:
        keys = keys - np.asarray(times, dtype=np.float64) * (math.log(2.0) / forgetting.half_life)
    return keys


# ---------------------------------------------------------------------------------- writer
@dataclass(eq=False)
class _Prepared:
    segments: list
    deleted: list


class DocumentStatistics:
    """The writer's side: buffers documents and writes their statistics at each checkpoint.

    Owned by :class:`~anchorstream.store.CooccurrenceStore`, which calls :meth:`add`,
    :meth:`evict`, :meth:`rescale`, :meth:`roll`, :meth:`prepare` (inside the checkpoint's
    writable session) and :meth:`adopt` (after the commit succeeded). Nothing changes in memory
    before :meth:`adopt`, so a failed checkpoint can be retried.

    Parameters
    ----------
    settings : DocStatsSettings
    capacity : int
        The store's vocabulary capacity ``V``.
    forgetting : Forgetting
    since_docs : int
        Stream position from which documents are counted (0: since the store was created).
    segments : list of dict, optional
        Committed segment descriptors.
    reservoir : mapping, optional
        Committed reservoir arrays.
    max_segments : int, default MAX_SEGMENTS
    length_cap : float or None, default 2
        The store's document weighting, which the windows' pairs are weighted by.
    """

    def __init__(self, settings: DocStatsSettings, capacity: int, forgetting: Forgetting, *,
                 since_docs: int = 0, segments: Sequence[Mapping] = (),
                 reservoir: Mapping | None = None, max_segments: int = MAX_SEGMENTS,
                 length_cap=2):
        self.settings = settings
        self.capacity = int(capacity)
        self.forgetting = forgetting
        self.since_docs = int(since_docs)
        self.max_segments = int(max_segments)
        self._segments = [dict(s) for s in segments]
        self._pending = (Pending(self.capacity, length_cap, documents=settings.split)
                         if settings.buffers else None)
        self._reservoir = (
            Reservoir(settings.reservoir, self.capacity, reservoir)
            if settings.reservoir else None)

    @classmethod
    def load(cls, group, capacity: int, forgetting: Forgetting,
             length_cap=2) -> DocumentStatistics:
        """The committed statistics of a store group (read at open)."""
        config = group.attrs.get("config")
        state = group.attrs.get("state")
        if config is None or state is None or state.get("format") != _FORMAT:
            raise StoreFormatError(
                f"the store's {GROUP!r} group is not in document statistics format {_FORMAT}; "
                "open the store with other document statistics to rebuild them"
            )
        settings = DocStatsSettings.from_dict(config)
        reservoir = None
        if settings.reservoir and "reservoir" in group:
            g = group["reservoir"]
            reservoir = {name: np.asarray(g[name][...]) for name in
                         ("key", "pos", "seq", "window", "indptr", "slots", "counts")}
        return cls(settings, capacity, forgetting, since_docs=state["since_docs"],
                   segments=state["segments"], reservoir=reservoir, length_cap=length_cap)

    @property
    def nbytes(self) -> int:
        """Bytes of the buffer of pending documents (the store counts them in its budget)."""
        return 0 if self._pending is None else self._pending.nbytes

    # ------------------------------------------------------------------ updates
    def add(self, *, positions, times, weights, windows, indptr, slots, evictions,
            seq: int, token_positions=None) -> None:
        """Add documents given as the slots of their in-vocabulary tokens.

        Parameters
        ----------
        positions : int ndarray of shape (n_docs,)
            Stream positions (increasing, unique over the store's life).
        times : float ndarray of shape (n_docs,)
            Document times (the decay clock).
        weights : float ndarray of shape (n_docs,)
            Decay weights in the store's current units.
        windows : int ndarray of shape (n_docs,)
        indptr : int ndarray of shape (n_docs + 1,)
        slots : int ndarray of shape (n_tokens,)
        evictions : sequence of (doc_index, slot)
            Slot evicted just before document ``doc_index`` (as the vocabulary reports them).
        seq : int
            The checkpoint number these documents will be committed with.
        token_positions : int ndarray of shape (n_tokens,), optional
            Where each of ``slots``' tokens stood in its document; needed with
            ``pair_window`` (the windows are cut by it).
        """
        positions = np.asarray(positions, dtype=np.int64)
        n = positions.size
        if n == 0 and not len(evictions):
            return
        X = sp.csr_matrix(  # a copy of the slots: summing duplicates sorts them in place
            (np.ones(len(slots)), np.array(slots, dtype=np.int32),
             np.asarray(indptr, dtype=np.int64)), shape=(n, self.capacity))
        X.sum_duplicates()
        if self._pending is not None:
            W = window_doc = None
            if self.settings.pair_window:
                if token_positions is None:
                    raise InputError("the windows' pairs need token_positions")
                W, window_doc = window_counts(indptr, slots, token_positions,
                                              self.settings.pair_window, self.capacity)
            self._pending.add(X, positions, weights, windows, evictions, W, window_doc)
        if self._reservoir is not None:
            keys = reservoir_keys(positions, times, self.forgetting, self.settings.seed)
            self._reservoir.offer(keys, positions, int(seq), np.asarray(windows, np.int64), X)
            if len(evictions):
                evict_abs = np.zeros(self.capacity, dtype=np.int64)
                end = int(positions[-1]) + 1 if n else 0
                for d, slot in evictions:
                    evict_abs[int(slot)] = int(positions[d]) if d < n else end
                self._reservoir.void(evict_abs)

    def evict(self, slot: int, position: int) -> None:
        """Void ``slot`` in every document before stream ``position`` (its word left)."""
        if self._pending is not None:
            self._pending.evict(slot)
        if self._reservoir is not None:
            evict_abs = np.zeros(self.capacity, dtype=np.int64)
            evict_abs[int(slot)] = int(position)
            self._reservoir.void(evict_abs)

    def rescale(self, factor: float) -> None:
        """The store moved its units (decay renormalization): rescale the buffered weights."""
        if self._pending is not None:
            self._pending.rescale(float(factor))

    def roll(self, current_window: int) -> None:
        """Documents of windows that are no longer live leave the reservoir."""
        if self._reservoir is not None:
            self._reservoir.drop_windows(int(current_window), self.forgetting.ring)

    # ------------------------------------------------------------------ checkpoints
    def prepare(self, root, *, seq: int, t_ref: float, current_window: int,
                reset_seq: np.ndarray) -> _Prepared:
        """Write the pending statistics into ``root`` (a writable session's root group).

        Called inside the store's checkpoint, before its commit. Returns what :meth:`adopt`
        takes once the commit succeeded.
        """
        ring = self.forgetting.ring
        group = root.require_group(GROUP)
        seg_group = group.require_group("segments")
        segments = []
        deleted = []
        for s in self._segments:
            (segments if is_live(s["window"], current_window, ring) else deleted).append(s)
        items: list = []
        deltas = (self._pending.deltas(self.settings, current_window, ring)
                  if self._pending is not None else {})
        for window, delta in sorted(deltas.items()):
            same = [s for s in segments if s["window"] == window]
            if len(same) + 1 > self.max_segments:
                # Merge: the old segments (valid entries, current units) plus the delta.
                old = read_segments(group, same, reset_seq, self.forgetting, t_ref,
                                     self.settings)
                delta = Part.concat([old, delta])
                deleted += same
                segments = [s for s in segments if s["window"] != window]
            delta = delta.coalesced(self.capacity)
            name = f"s{seq:010d}w{window}"
            if name in seg_group:
                del seg_group[name]
            g = seg_group.create_group(name)
            items += [(g, "rows", delta.rows), (g, "cols", delta.cols), (g, "vals", delta.vals),
                      (g, "slots", delta.slots), (g, "vecs", delta.vecs)]
            if self.settings.pair_window:
                items += [(g, f"pair_{k}", a) for k, a in zip(("rows", "cols", "vals"),
                                                               delta.pairs)]
            if delta.sketch is not None:
                _put_chunked(g, "sketch", delta.sketch)
            segments.append({
                "name": name, "seq": int(seq), "window": int(window), "t_ref": float(t_ref),
                "split_docs": float(delta.docs[0]), "rp_docs": float(delta.docs[1]),
                "pair_docs": float(delta.docs[2]), "pair_tokens": float(delta.docs[3]),
                "nnz": int(delta.vals.size), "n": int(delta.slots.size),
            })
        for s in deleted:
            if s["name"] in seg_group:
                del seg_group[s["name"]]
        if self._reservoir is not None and (self._reservoir.changed or "reservoir" not in group):
            rg = group.require_group("reservoir")
            items += [(rg, k, v) for k, v in self._reservoir.arrays().items()]
        if items:
            put_many(items)
        group.attrs.update({
            "config": self.settings.to_dict(),
            "state": {"format": _FORMAT, "since_docs": self.since_docs, "segments": segments},
        })
        return _Prepared(segments, deleted)

    def adopt(self, prepared: _Prepared) -> None:
        """The checkpoint holding ``prepared`` committed: forget the buffer."""
        self._segments = prepared.segments
        if self._pending is not None:
            self._pending.clear()
        if self._reservoir is not None:
            self._reservoir.changed = False


def _put_chunked(group, name: str, data: np.ndarray) -> None:
    """A (n, P) float64 array in row chunks of about 4 MiB (a sketch can be large)."""
    rows = max(1, min(data.shape[0], _SKETCH_CHUNK_BYTES // (8 * max(1, data.shape[1]))))
    arr = group.create_array(name, shape=data.shape, dtype="f8", chunks=(rows, data.shape[1]),
                             compressors=zstd(), fill_value=0.0, overwrite=True)
    if data.size:
        arr[...] = data


# ---------------------------------------------------------------------------------- reading
@dataclass(frozen=True, eq=False)
class DocumentState:
    """The document statistics of one committed store version, over chosen slots.

    Attributes
    ----------
    settings : DocStatsSettings
    since_docs : int
        Stream position from which documents were counted (statistics started later than the
        store when the method changed on an existing store).
    split : SplitStatistic or None
        Over the chosen slots, in their order.
    sketch : RPSketch or None
    documents : scipy.sparse.csr_matrix of shape (n_reservoir, n_slots) or None
        The reservoir's word counts (rows in stream order; documents left with no chosen word
        are dropped).
    positions : int64 ndarray of shape (n_reservoir,) or None
        Stream position of each reservoir row.
    keys : float64 ndarray of shape (n_reservoir,) or None
        Each reservoir row's sample key (:func:`reservoir_keys`: the smallest are kept), by
        which reservoirs merge (:mod:`anchorstream.store.partdocs`).
    window_pairs : WindowPairs or None
        The windows' pairs over the chosen slots (``pair_window``), for the refinement
        (:func:`~anchorstream.stats.windowpairs.window_cooccurrence`).
    """

    settings: DocStatsSettings
    since_docs: int
    split: SplitStatistic | None = None
    sketch: RPSketch | None = None
    documents: sp.csr_matrix | None = None
    positions: np.ndarray | None = None
    keys: np.ndarray | None = None
    window_pairs: WindowPairs | None = None

    def summary(self) -> dict:
        """JSON facts for a snapshot's ``source``."""
        out: dict = {"since_docs": self.since_docs, **self.settings.to_dict()}
        if self.split is not None:
            out["split_docs"] = float(self.split.num_docs)
        if self.sketch is not None:
            out["sketch_docs"] = float(self.sketch.num_docs)
        if self.documents is not None:
            out["reservoir_docs"] = int(self.documents.shape[0])
        if self.window_pairs is not None:
            out["pair_windows"] = self.window_pairs.num_docs
        return out


@dataclass(frozen=True, eq=False)
class StoredDocuments:
    """The document statistics of one committed store version, as read from its root group
    (all slots); :meth:`over` gives them over chosen slots. The store opens and checks the
    version (:func:`anchorstream.store.read_document_state`)."""

    settings: DocStatsSettings
    since_docs: int
    part: Part | None
    reservoir: dict | None
    reset_seq: np.ndarray
    capacity: int
    current_window: int
    ring: int

    @classmethod
    def read(cls, root, config: Mapping) -> StoredDocuments | None:
        """What ``root`` (a store version's root group, of ``config``) holds, or None when
        it keeps no document statistics."""
        if GROUP not in root:
            return None
        group = root[GROUP]
        state = root.attrs["state"]
        st = group.attrs["state"]
        settings = DocStatsSettings.from_dict(group.attrs["config"])
        reset_seq = np.asarray(root["reset_seq"][...])
        forgetting = Forgetting.from_dict(config["forgetting"])
        capacity = int(config["capacity"])
        current, ring, T = state["current_window"], forgetting.ring, float(state["clock"])
        live = [s for s in st["segments"] if is_live(s["window"], current, ring)]
        part = None
        if settings.buffers:
            part = read_segments(group, live, reset_seq, forgetting, T, settings)
        reservoir = None
        if settings.reservoir and "reservoir" in group:
            g = group["reservoir"]
            reservoir = {k: np.asarray(g[k][...]) for k in
                         ("key", "pos", "seq", "window", "indptr", "slots", "counts")}
        return cls(settings, int(st["since_docs"]), part, reservoir, reset_seq, capacity,
                   current, ring)

    def over(self, slots: np.ndarray) -> DocumentState:
        """The statistics over ``slots`` (int64), in their order."""
        settings, part, reset_seq = self.settings, self.part, self.reset_seq
        n = slots.size
        pos = np.full(self.capacity, -1, dtype=np.int64)
        pos[slots] = np.arange(n)
        split = sketch = documents = positions = keys = pairs = None
        if part is not None and settings.pair_window:
            pr, pc, pv = part.pairs
            ok = (pos[pr] >= 0) & (pos[pc] >= 0)
            pairs = WindowPairs.from_entries(pos[pr[ok]], pos[pc[ok]], pv[ok], n, part.docs[2:])
        if part is not None and settings.split:
            ok = (pos[part.rows] >= 0) & (pos[part.cols] >= 0)
            cross = sp.coo_matrix((part.vals[ok], (pos[part.rows[ok]], pos[part.cols[ok]])),
                                  shape=(n, n)).toarray()
            vecs = np.zeros((part.vecs.shape[0], n))
            vsel = pos[part.slots] >= 0
            for i in range(vecs.shape[0]):
                vecs[i] = np.bincount(pos[part.slots[vsel]], weights=part.vecs[i, vsel],
                                      minlength=n)
            split = SplitStatistic(cross, vecs[0], vecs[1], vecs[2], float(part.docs[0]),
                                   settings.seed)
            if settings.sketch:
                proj = np.zeros((n, settings.n_projections))
                np.add.at(proj, pos[part.slots[vsel]], part.sketch[vsel])
                sketch = RPSketch(proj.T, vecs[3], vecs[4], float(part.docs[1]), settings.seed)
        if self.reservoir is not None:
            rv = Reservoir(settings.reservoir, self.capacity, self.reservoir)
            keep_docs = np.flatnonzero(rv.window > self.current_window - self.ring)
            d = rv.docs[keep_docs]
            # Entries of a slot reset after the checkpoint that wrote the document are void.
            doc_seq = rv.seq[keep_docs]
            rows = np.repeat(np.arange(d.shape[0]), np.diff(d.indptr))
            valid = (reset_seq[d.indices] <= doc_seq[rows]) & (pos[d.indices] >= 0)
            M = sp.csr_matrix((d.data[valid], (rows[valid], pos[d.indices[valid]])),
                              shape=(d.shape[0], n))
            nonempty = np.flatnonzero(np.diff(M.indptr) > 0)
            documents = M[nonempty]
            positions = rv.pos[keep_docs][nonempty]
            keys = rv.key[keep_docs][nonempty]
        return DocumentState(settings, self.since_docs, split, sketch, documents, positions,
                             keys, pairs)
