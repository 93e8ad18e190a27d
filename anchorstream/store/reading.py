"""Reading committed store versions: read-only, pinned to one Icechunk snapshot.

A reader densifies the base matrix plus the valid live segments over the active words;
:func:`open_committed` can also bring an earlier read up to date by adding only what changed.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import icechunk
import numpy as np
import zarr

from anchorstream._buffers import leading_view
from anchorstream.errors import InputError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import Cooccurrence
from anchorstream.stats.documents import DocumentState, StoredDocuments
from anchorstream.store.delay import (count_delay, count_delay_pairs, waiting,
                                     with_waiting_windows)
from anchorstream.store.format import BRANCH, META, StoreState, check_format
from anchorstream.store.repository import disk_bytes, open_repo, storage_errors
from anchorstream.store.segments import EntryReader, Fold
from anchorstream.store.settings import length_cap, links, stopwords_label
from anchorstream.store.versionhead import read_head

__all__ = [
    "BaseShards",
    "CatchUp",
    "CommittedState",
    "DenseRead",
    "dense_read_of",
    "fingerprint",
    "merge_committed",
    "open_committed",
    "plan_catch_up",
    "read_committed",
    "read_document_state",
    "read_version",
    "store_info",
]


@dataclass(frozen=True)
class CommittedState:
    """One committed version of a store, densified over the active vocabulary.

    Attributes
    ----------
    cooccurrence : Cooccurrence
        Over the active words, in slot order. With decay ``num_docs`` / ``num_tokens`` are
        decayed sums (floats); after evictions the counts sum to at most ``num_docs``.
    words : list of str
        The active words (row ``i`` is ``words[i]``).
    slots : int64 ndarray of shape (n_words,)
        Their slots in the store.
    offsets : dict
        Source offsets committed with this version.
    version : str
        Icechunk snapshot id.
    clock : float
        Time of the last document (its index, or its timestamp in seconds).
    n_docs_added : int
        Documents ever added (including those too short to count).
    dense : DenseRead
        What the dense counts hold; pass it as ``since`` to :func:`open_committed`, with the
        same array as ``out``, to read a later version by adding only what changed.
    admission : Admission or None
        When each word's counting began (:mod:`anchorstream.stats.admission`), or None where
        not known; :func:`~anchorstream.stats.admission.correct_admission` reads it.
    waiting : SparseCooccurrence or None
        The documents a delay line (``count_delay``) holds back, counted over ``words``
        (:func:`~anchorstream.store.delay.waiting_of_arrays`), which ``cooccurrence`` leaves out;
        a reader that should not lag adds them (:func:`~anchorstream.store.delay.add_waiting`).
    added : scipy.sparse.csr_matrix, PendingSum or None
        Of a sparse read that caught up from an earlier one (``previous`` of
        :func:`~anchorstream.store.sparseread.read_version_sparse`) whose words kept their
        positions, with nothing decayed since: the upper triangle of the counts added to it,
        so that ``cooccurrence`` is that read's counts plus ``added``; where those are the
        pairs of the documents that left the delay line since, checked against the segments'
        probes, a :class:`~anchorstream.stats.pending.PendingSum` of those documents, their
        pairs not counted. None otherwise.
    left : tuple or None
        Where ``added`` is not None: the documents that left the delay line since that read,
        ``(H, w)`` over ``words`` (:func:`~anchorstream.store.delay.documents_left`; None
        where not known), whose pairs ``added`` is where the segments hold only theirs.
    """

    cooccurrence: Any
    words: list
    slots: np.ndarray
    offsets: dict
    version: str
    clock: float
    n_docs_added: int
    dense: DenseRead | None = None
    admission: Any = None
    waiting: Any = None
    added: Any = None
    left: Any = None


@dataclass(frozen=True, eq=False)
class DenseRead:
    """What the dense counts of one read are made of (see ``open_committed(since=)``).

    The live base arrays (each ``(ring slot, window)``, with the compaction that wrote them),
    the segments added to them, the eviction state and the read-out time. A later version
    whose base, live windows and active slots are the same, and which only added segments and
    evicted slots since, differs from these counts by those segments, by zero rows and columns
    for the evicted slots and, with decay, by one factor.
    """

    base: tuple
    segments: frozenset
    active: np.ndarray
    reset_seq: np.ndarray
    seq: int
    clock: float


@dataclass(frozen=True, eq=False)
class _Version:
    """What a reader holds of one committed version: its root group, metadata, state,
    eviction state and active slots."""

    root: Any
    meta: dict
    state: StoreState
    reset_seq: np.ndarray
    active: np.ndarray

    @property
    def forgetting(self) -> Forgetting:
        return Forgetting.from_dict(self.meta["config"]["forgetting"])

    def entry_reader(self) -> EntryReader:
        return EntryReader(self.root, self.reset_seq, self.forgetting, self.state.clock,
                           Fold.of(self.meta, self.state))

    def dense_read(self) -> DenseRead:
        return dense_read_of(self.forgetting, self.state, self.active, self.reset_seq)


def dense_read_of(forgetting: Forgetting, state: StoreState, active: np.ndarray,
                  reset_seq: np.ndarray) -> DenseRead:
    """What a read of the version with ``state``, ``active`` slots and ``reset_seq`` is made
    of (the dense read's and the sparse read's record for a later catch-up)."""
    R = forgetting.ring
    live_base = tuple((r, w) for r, w in enumerate(state.base_window)
                      if w >= 0 and state.live(w, R))
    return DenseRead(
        base=(state.base_seq, state.base_t_ref, live_base),
        segments=frozenset(seg.name for seg in state.live_segments(R)),
        active=active, reset_seq=reset_seq, seq=int(state.seq), clock=float(state.clock))


@dataclass(frozen=True, eq=False)
class CatchUp:
    """How counts read as ``since`` become those of a later version (:func:`plan_catch_up`).

    Attributes
    ----------
    now : DenseRead
        The later version's record.
    gone : int ndarray
        Positions (in the active slots now) of the slots evicted since and active now: their
        rows and columns are zeroed.
    segments : list
        The segments added since, whose valid entries are added.
    factor : float
        Decay between the two read-out times (1.0 without decay): every count is scaled first.
    pos : int ndarray
        Position of each slot in the active slots (``-1`` for an inactive one).
    reader : EntryReader
        Reads those segments' valid entries.
    """

    now: DenseRead
    gone: np.ndarray
    segments: list
    factor: float
    pos: np.ndarray
    reader: EntryReader


def plan_catch_up(root, meta, state: StoreState, active: np.ndarray, reset_seq: np.ndarray,
                  since: DenseRead | None, *, same_slots: bool = True) -> CatchUp | None:
    """How to bring counts read as ``since`` up to the version of ``root`` (``meta``,
    ``state``, ``active``, ``reset_seq``), or None when only a full read can: a compaction
    or an expired window the earlier read cannot follow (below), with ``same_slots`` a change
    of active slots since, or an eviction that could void entries read then. The dense read
    (``open_committed(since=)``, whose buffer is laid out by the active slots) and the sparse one
    (``read_version_sparse(previous=)``, ``same_slots=False``: it moves what it read to the
    new slots' positions) both follow it.

    A slot active now and not then was admitted since (or evicted and admitted again, which
    changes its reset sequence): its valid entries all lie in the segments committed since,
    so counts read then hold none of them.

    A compaction does not stop a catch-up where the earlier read holds everything it moved
    into the base: the catch-up reads no base, only the segments committed since, whole
    (``CatchUp.reader`` has no fold's mask). Where a fold in progress began after the earlier
    read, some of those segments are the fold's, and that read holds none of their entries,
    moved or not; the segments it held it read as they were then. Where a compaction ended
    since (``base_seq`` moved, its segments dropped), it folded only checkpoints the earlier
    read had seen (``base_seq`` before its ``seq``, the units and windows of the base as they
    were): those entries are in that read already. Otherwise (a compaction of checkpoints
    committed after the read, a base converted to new units by decay, a window expired) only
    a full read can. (Any fold begun or ended since used to force one: on a 40,816-word
    store, 4.8-5.8 CPU s for the read instead of 0.6-0.7.)"""
    if since is None:
        return None
    forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
    now = dense_read_of(forgetting, state, active, reset_seq)
    new = now.segments - since.segments
    if now.base == since.base:
        held = since.segments <= now.segments
    else:  # a compaction ended: of checkpoints the read had seen, in the same units
        held = (now.base[1:] == since.base[1:] and now.base[0] < since.seq
                and all(seg.seq >= since.seq for seg in state.segments if seg.name in new))
    if (not held or (same_slots and not np.array_equal(active, since.active))
            or since.reset_seq.shape != reset_seq.shape):
        return None
    evicted = np.flatnonzero(reset_seq != since.reset_seq)
    # An eviction since the read voids every entry of the slot read then: its reset is at
    # least the sequence number of the next checkpoint, after all those segments.
    if np.any(reset_seq[evicted] < since.seq):
        return None
    factor = forgetting.readout(state.clock, since.clock)  # same for every reference time
    pos = np.full(reset_seq.size, -1, dtype=np.int64)
    pos[active] = np.arange(active.size)
    gone = pos[evicted]  # evicted and active again: positions in the new active slots
    return CatchUp(now, gone[gone >= 0], [seg for seg in state.segments if seg.name in new],
                   factor, pos, EntryReader(root, reset_seq, forgetting, state.clock))


def _catch_up(v: _Version, out, since: DenseRead | None):
    """Bring ``out`` (holding the dense read ``since``) up to version ``v`` in place, or
    return None when that is not possible and a full read is needed."""
    n = v.active.size
    counts = leading_view(out, (n, n), np.float64)
    plan = None if counts is None else plan_catch_up(v.root, v.meta, v.state, v.active,
                                                     v.reset_seq, since)
    if plan is None:
        return None
    if plan.factor != 1.0:
        counts *= plan.factor
    counts[plan.gone, :] = 0.0
    counts[:, plan.gone] = 0.0
    plan.reader.add_into(counts, plan.pos, plan.segments)
    return counts, plan.now


def _as_slice(src: np.ndarray, dst: np.ndarray) -> tuple[slice, slice] | None:
    """``(slice of src, slice of dst)`` when both index runs are contiguous, else None."""
    n = src.size
    if n and src[-1] - src[0] == n - 1 and dst[-1] - dst[0] == n - 1:
        return slice(int(src[0]), int(src[0]) + n), slice(int(dst[0]), int(dst[0]) + n)
    return None


class BaseShards:
    """The valid blocks of a version's base matrices (one per live window), one shard at a time.

    Base rows and columns of slots reset after the last compaction hold the words they
    evicted: skipped. In the shards a fold in progress has rewritten, slots reset up to the
    fold's last checkpoint were zeroed and got their new words' entries: kept there. Blocks
    come in true (decayed) units. The dense read (:func:`_densify`) and the sparse one
    (:mod:`anchorstream.store.sparseread`) both walk the base through this.
    """

    def __init__(self, root, meta, state: StoreState, active: np.ndarray,
                 reset_seq: np.ndarray):
        self.root, self.active = root, active
        self.capacity = meta["config"]["capacity"]
        self.shard = meta["config"]["shard_size"]
        forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
        R = forgetting.ring
        self.fold = Fold.of(meta, state)
        self.base_ok = reset_seq <= state.base_seq
        self.folded_ok = (self.base_ok if self.fold is None
                          else reset_seq <= self.fold.seq)
        self.factor = forgetting.readout(state.clock, state.base_t_ref)
        self.live = [r for r in range(R)
                     if state.base_window[r] >= 0 and state.live(state.base_window[r], R)]

    def starts(self) -> range:
        """First slot of every band of shards."""
        return range(0, self.capacity, self.shard)

    def slots(self, start: int) -> np.ndarray:
        """Active slots in the band of shards beginning at slot ``start``."""
        a = self.active
        return a[(a >= start) & (a < start + self.shard)]

    def band(self, r0: int, *, upper: bool = False):
        """``(c0, rows, cols, block)`` for every base shard of row band ``r0`` (window after
        window, then column band after column band; from the diagonal on with ``upper``):
        ``block`` is the shard, ``rows`` and ``cols`` its valid active slots."""
        V, S = self.capacity, self.shard
        rall = self.slots(r0)
        if rall.size == 0:
            return
        for r in self.live:
            arr = self.root[f"counts/{r}"]
            for c0 in range(r0 if upper else 0, V, S):
                call = self.slots(c0)
                folded = self.fold is not None and self.fold.has_folded(r0 // S, c0 // S)
                ok = self.folded_ok if folded else self.base_ok
                rsel, csel = rall[ok[rall]], call[ok[call]]
                if rsel.size == 0 or csel.size == 0:
                    continue
                block = arr[r0 : min(r0 + S, V), c0 : min(c0 + S, V)]
                if self.factor != 1.0:
                    block *= self.factor
                yield c0, rsel, csel, block


def _densify(v: _Version, out=None) -> np.ndarray:
    """Base + valid live segments over the active slots of ``v``, dense, true (decayed)
    values; into ``out``'s first ``n²`` elements when it has room (see :func:`open_committed`)."""
    state, active = v.state, v.active
    n = active.size
    out = leading_view(out, (n, n), np.float64)
    if out is None:
        out = np.zeros((n, n))
    else:
        out.fill(0.0)
    pos = np.full(v.meta["config"]["capacity"], -1, dtype=np.int64)
    pos[active] = np.arange(n)
    shards = BaseShards(v.root, v.meta, state, active, v.reset_seq)
    for r0 in shards.starts():
        for c0, rsel, csel, block in shards.band(r0):
            rs, cs = _as_slice(rsel - r0, pos[rsel]), _as_slice(csel - c0, pos[csel])
            if rs is not None and cs is not None:
                # Every slot of the shard is active (the usual case): plain slices.
                out[rs[1], cs[1]] += block[rs[0], cs[0]]
            else:
                out[np.ix_(pos[rsel], pos[csel])] += block[np.ix_(rsel - r0, csel - c0)]
    v.entry_reader().add_into(out, pos, state.live_segments(v.forgetting.ring))
    return out


def read_version(repo: icechunk.Repository, where: str, version: str | None,
                 out=None, since: DenseRead | None = None) -> CommittedState:
    """Read version ``version`` (the branch head for None) of the store in ``repo``."""
    with storage_errors(f"cannot read store {where!r}"):
        head = read_head(repo, where, version)
        v = _Version(head.root, head.meta, head.state, head.reset_seq, head.active)
        caught_up = _catch_up(v, out, since)
        if caught_up is not None:
            counts, dense = caught_up
        else:
            counts = _densify(v, out)
            dense = v.dense_read()
    # The head's totals are whole numbers without decay and the decayed sums with it, as
    # Cooccurrence keeps them (check_count), and as the sparse read passes them.
    cooc = Cooccurrence(counts, head.unigram, head.doc_freq, head.num_docs, head.num_tokens,
                        length_cap(head.meta["config"]))
    return CommittedState(cooc, head.words, head.active, head.offsets, head.snapshot_id,
                          float(head.state.clock), int(head.state.n_docs_added), dense,
                          head.admission, head.waiting)


def open_committed(url, version: str | None = None, *, out=None,
                   since: DenseRead | None = None,
                   storage_options: Mapping[str, Any] | None = None) -> CommittedState:
    """Read one committed version of a store (the latest by default), read-only.

    Parameters
    ----------
    url : str or path-like
        The store (see module notes for URL forms).
    version : str, optional
        A snapshot id (as returned by :meth:`CooccurrenceStore.checkpoint`).
    out : ndarray, optional
        A C-contiguous float64 array to hold the dense counts (its first ``n_words²``
        elements, overwritten) when it is large enough; else they get a new array. The
        refresher passes the same buffer every time: fresh memory costs a page fault per
        page, which dominated the read on the benchmark machine.
    since : DenseRead, optional
        The ``dense`` of an earlier read whose counts ``out`` still holds, unchanged. When
        this version only added segments and evicted slots since (no compaction, no window
        expired, the same active slots), ``out`` is brought up to date in place, reading only
        the new segments: the result equals a full read (to rounding, with decay). Otherwise
        this is a full read.
    storage_options : mapping, optional
        Keyword arguments of the Icechunk storage (see :mod:`anchorstream.store.location`), e.g.
        ``{"endpoint_url": "http://localhost:9000", "allow_http": True}``.

    Returns
    -------
    CommittedState

    Raises
    ------
    StoreError
        If there is no store there or it cannot be read.
    StoreFormatError
        If it is not an anchorstream store or has another format version.
    InputError
        For an unsupported URL or storage options its storage does not take.
    """
    repo, _ = open_repo(url, storage_options)
    return read_version(repo, os.fspath(url), version, out, since)


def read_committed(url, version: str | None = None, *,
                   storage_options: Mapping[str, Any] | None = None):
    """The committed state as ``(Cooccurrence, words, offsets, version)`` (for ``fit``).

    See :func:`open_committed`; the co-occurrence is dense over the active vocabulary.
    """
    st = open_committed(url, version, storage_options=storage_options)
    return st.cooccurrence, st.words, st.offsets, st.version


def fingerprint(counts: np.ndarray, words: Sequence[str]) -> float:
    """``Σ_ij Q_ij g(w_i) g(w_j)`` with ``g(w) = 1 + (crc32(w) mod 1000) / 1000``.

    Independent of slot order, so stores built from the same documents agree.
    """
    g = np.asarray([1.0 + (zlib.crc32(w.encode("utf-8")) % 1000) / 1000.0 for w in words])
    return float(g @ np.asarray(counts) @ g) if g.size else 0.0


def store_info(url, version: str | None = None, *,
               storage_options: Mapping[str, Any] | None = None) -> dict:
    """Summary of a committed version, as plain JSON values (``anchorstream store-info``).

    ``storage_options`` as for :func:`open_committed`.

    Returns
    -------
    dict
        ``version``, ``num_docs``, ``num_tokens``, ``vocab_size``, ``capacity``, ``length_cap``,
        ``duplicate_memory`` and ``duplicates`` (repeated documents skipped), ``count_delay``,
        ``count_delay_pairs`` and ``waiting`` (documents not counted yet,
        :mod:`anchorstream.store.delay`),
        ``offsets``, ``bytes_on_disk``, ``fingerprint`` (see :func:`fingerprint`, on the counts),
        ``n_docs_added``, ``clock``, ``format_version``, ``segments``, ``versions``.
    """
    repo, local = open_repo(url, storage_options)
    st = read_version(repo, os.fspath(url), version)
    session = repo.readonly_session(snapshot_id=st.version)
    root = zarr.open_group(session.store, mode="r")
    meta = root.attrs[META]
    c = st.cooccurrence
    return {
        "version": st.version,
        "format_version": meta["format_version"],
        "num_docs": c.num_docs,
        "num_tokens": c.num_tokens,
        "vocab_size": len(st.words),
        "capacity": meta["config"]["capacity"],
        "length_cap": c.length_cap,
        "duplicate_memory": int(meta["config"].get("duplicate_memory", 0)),
        "duplicates": int((root.attrs.get("duplicates") or {}).get("skipped", 0)),
        "count_delay": count_delay(meta["config"]),
        "count_delay_pairs": count_delay_pairs(meta["config"]),
        "stopwords": stopwords_label(meta["config"]),
        "links": links(meta["config"]),
        "waiting": waiting(root),
        "offsets": st.offsets,
        "bytes_on_disk": disk_bytes(local, repo),
        "fingerprint": fingerprint(c.counts, st.words),
        "n_docs_added": st.n_docs_added,
        "clock": st.clock,
        "segments": len(root.attrs["state"]["segments"]),
        "versions": sum(1 for _ in repo.ancestry(branch=BRANCH)),
    }


def stored_tokenizing(url, *, storage_options: Mapping[str, Any] | None = None
                      ) -> tuple[frozenset, str]:
    """How the store at ``url`` recorded, when it was created, that its documents were
    tokenized, from one read of its settings: ``(stopwords, links)``, the stopwords never
    counted (empty where it recorded none; what a later ``anchorstream ingest --stopwords
    auto`` tokenizes with) and whether links were words (``"keep"``) or removed (``"drop"``;
    what a later ``ingest`` without ``--links`` tokenizes with)."""
    repo, _ = open_repo(url, storage_options)
    root = zarr.open_group(repo.readonly_session(branch=BRANCH).store, mode="r")
    config = root.attrs[META]["config"]
    return frozenset(config["vocabulary"].get("stopwords") or ()), links(config)


def merge_committed(urls: Iterable) -> tuple[Any, list[str]]:
    """Sum the committed states of several stores (e.g. one per worker) over their words.

    Words are aligned by string, so slot assignments may differ; the union vocabulary lists
    the first store's words, then each later store's new words in its order.

    Returns
    -------
    (Cooccurrence, words)
    """
    states = [open_committed(u) for u in urls]
    if not states:
        raise InputError("merge_committed needs at least one store")
    caps = {st.cooccurrence.length_cap for st in states}
    if len(caps) > 1:
        raise InputError(f"cannot merge stores whose documents are weighted differently "
                         f"(length_cap {sorted(caps, key=str)})")
    index: dict[str, int] = {}
    for st in states:
        for w in st.words:
            index.setdefault(w, len(index))
    V = len(index)
    counts, unigram, doc_freq = np.zeros((V, V)), np.zeros(V), np.zeros(V)
    num_docs = num_tokens = 0
    for st in states:
        p = np.asarray([index[w] for w in st.words], dtype=np.int64)
        c = st.cooccurrence
        counts[np.ix_(p, p)] += c.counts
        unigram[p] += c.unigram
        doc_freq[p] += c.doc_freq
        num_docs += c.num_docs
        num_tokens += c.num_tokens
    out = Cooccurrence(counts, unigram, doc_freq, int(num_docs), int(round(num_tokens)),
                       caps.pop())
    out.num_docs, out.num_tokens = num_docs, num_tokens
    return out, list(index)




def read_document_state(url, version: str, slots, *,
                        storage_options=None) -> DocumentState | None:
    """Read the document statistics of store version ``version`` over ``slots``.

    Use the version :func:`open_committed` returned, so the statistics and the counts come
    from the same commit.

    Parameters
    ----------
    url : str or path-like
        The store.
    version : str
        An Icechunk snapshot id of the store.
    slots : int array of shape (n,)
        Store slots to read (e.g. ``CommittedState.slots``, or a subset), in the order wanted.
    storage_options : mapping, optional
        Options of the store's storage (see :mod:`anchorstream.store.location`).

    Returns
    -------
    DocumentState or None
        None when that version keeps no document statistics.

    Raises
    ------
    StoreError
        If the store cannot be read.
    """
    where = os.fspath(url)
    slots = np.asarray(slots, dtype=np.int64)
    repo, _ = open_repo(url, storage_options)
    with storage_errors(f"cannot read the document statistics of {where!r}"):
        session = repo.readonly_session(snapshot_id=version)
        root = zarr.open_group(session.store, mode="r")
        meta = check_format(root.attrs, where)
        stored = StoredDocuments.read(root, meta["config"])
        if stored is None:
            return None
        return with_waiting_windows(stored.over(slots), root, meta["config"], slots,
                                    length_cap(meta["config"]))
