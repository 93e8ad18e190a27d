"""The on-disk co-occurrence store: Zarr v3 arrays in an Icechunk repository.

Why Icechunk
------------
A checkpoint must write counts, vocabulary and source offsets so that a crash at any instant
leaves exactly the previous checkpoint or the new one. Icechunk gives that for Zarr: a commit
writes new chunk, manifest and snapshot objects and then swaps one branch reference, so
readers see whole commits only; read-only sessions pin one version while writing continues;
``expire_snapshots`` + ``garbage_collect`` bound the disk; the same code runs on a local disk
and on object stores. A hand-made manifest would re-implement all of that.

Layout (format version 2)
-------------------------
::

    /                    attrs: anchorstream_store (format, settings), state (with a fold
                         in progress, if any), offsets
    counts/<r>           (V, V) float64 base matrix of window ring slot r: sharded, zstd
    segments/<name>/     rows, cols (int32), vals (float64): upper-triangle deltas, one per
                         checkpoint and window, not yet folded into counts/<r>
    unigram, doc_freq    (R, V) float64 per ring slot;  totals (R, 2): documents, tokens
    reset_seq            (V,) int64: first checkpoint whose contributions to a slot are valid
    vocab/...            the streaming vocabulary (slot words, frequencies, sketch, blocked)
    docstats/...         optional: document statistics for DDP, RP and TSVD
                         (:mod:`anchorstream.stats.documents`), in the same commits

``V`` is the vocabulary capacity, ``R`` the number of windows kept (1 without windows). The
matrix stored is ``Σ_d s_d (h_d h_dᵀ − diag h_d)`` in the scaled units of
:mod:`anchorstream.stats.accumulator`; the true value is the base plus the valid segments, times the
read-out factor of the decay.

Checkpoints write deltas; compaction folds them (measured)
----------------------------------------------------------
At V = 20,000 with 256² chunks, 10,000 short Zipf-distributed documents touch 96 % of the
chunks. Read-modify-write through Zarr costs ~3.7 ms per 256² chunk and ~75 ms per 2048² shard
on this machine, so folding every checkpoint into the matrix would take 7-22 s, while the
delta itself is ~260,000 upper-triangle entries (4 MB, ~0.1 s to write). A checkpoint therefore
commits the sparse delta as a new *segment* (plus the small vectors, vocabulary and offsets),
and a separate *compaction* commit folds all segments into the dense base once they exceed
``compact_bytes`` or ``max_segments``, rewriting only the shards they touch (an LSM tree with
one level). Readers add the segments to the base; the logical content is the same before and
after compaction, so a crash during it is harmless.

A whole compaction at V = 20,000 rewrites ~100 shards (5-11 s), which would make one
checkpoint in ~64 miss the 2 s a checkpoint may take. Without decay or windows it therefore
runs in steps (format version 2): the state's ``folding`` names the segments of one
generation and how many upper shard pairs ``(a, b)``, ``a <= b``, it has folded; each step,
one commit after a checkpoint, rewrites pairs ``(a, b)`` and ``(b, a)`` for about
``compact_step_seconds``. Readers skip the generation's entries in the pairs done, so every
commit holds the same matrix; the last step drops the generation's segments. (Decay converts
the whole base to new units and windows recreate whole arrays, so those compactions stay one
commit.)

Measured with ``benchmarks/bench_store.py`` (V = 20,000, a shared 2-core VM under load, wall
time): a checkpoint after 10,000 short documents takes ~0.2 s and writes ~0.7 MB; a compaction
that touches all 100 shards ~6-11 s (with the defaults, about once per 64 checkpoints); 1M short
documents leave 43 MB on disk; reopening a writer takes < 0.1 s, while reading the dense
20,000 × 20,000 matrix takes ~15 s, most of it first-touching the 3.2 GB result.

Eviction costs nothing on disk at once: ``reset_seq[s]`` records the checkpoint sequence
number from which slot ``s`` holds its new word. Segment entries older than the reset of
either of their slots, and base rows and columns reset after the last compaction, are ignored
by readers and dropped (zeroed) by the next compaction.

Slots: the vocabulary hands out the lowest free slot, so the frequent words admitted early sit
in the first rows (the hot shards); an evicted slot is reused by the word that evicted it. There
is no re-ordering of slots yet: under heavy churn, rare words can end up in low slots.

Document statistics (the split-document statistic and RP sketch of Ding et al., a reservoir
of documents for TSVD) are kept only when the store is opened with
``document_stats=DocStatsSettings(...)``; they follow the same rules (same commit, same
``reset_seq``, same forgetting) and are described in :mod:`anchorstream.stats.documents`.

Window roll-over is also done by compaction (an expired window's base array is recreated
empty). With decay, every stored array carries its own reference time (the base, each segment,
the vectors and vocabulary), so renormalizing the units when weights grow large only touches
memory; compaction converts the base to the newest units (all factors ≤ 1, so nothing can
overflow) and readers convert each array as they add it up.

Failure handling
----------------
A failed checkpoint (unwritable path, full disk, any storage error) raises
:class:`~anchorstream.errors.StoreError` and changes nothing in memory, so it can be retried;
the store still holds the previous commit. A store of another format version is refused with
:class:`~anchorstream.errors.StoreFormatError`. Durability against power loss is Icechunk's
(on a local disk objects are written to a temporary file and renamed into place); a process
killed at any instant is covered, and tested.

Retention and garbage collection
--------------------------------
Every checkpoint and compaction is a commit, and every commit keeps its objects until it is
expired. :meth:`CooccurrenceStore.collect_garbage` expires all but the last ``keep_versions``
commits and deletes what no kept commit references (including the debris of a writer killed
mid-commit), never touching anything younger than ``gc_min_age``. It runs after a checkpoint
every ``gc_every`` checkpoints, when ``gc_interval_seconds`` have passed since the last one (the
time is recorded in the store, so it holds across restarts), and at the first checkpoint of
every writer whose branch holds expirable commits, so that short runs and frequent restarts
keep the disk bounded too. The checkpoint's stage timings
(:attr:`CooccurrenceStore.last_checkpoint_seconds`) show what it cost.

Storage URLs
------------
A local path (or ``file://``), or an fsspec-style URL mapped onto Icechunk's own storage
(:mod:`anchorstream.store.location`): ``s3://`` / ``s3a://`` (AWS and S3-compatible servers),
``gs://`` / ``gcs://``, ``az://`` / ``abfs://`` / ``abfss://`` / ``azure://``, and
``memory://name`` (in-process, for tests). ``storage_options`` (``region``, ``endpoint_url``,
``allow_http``, ``anonymous``, ...) go to the Icechunk constructor; credentials come from the
environment by default. Other schemes are refused with the list of supported ones.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
import math
import os
import shutil
import time
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import icechunk
import numpy as np
import zarr
from zarr.codecs import ZstdCodec
from zarr.core.sync import sync as zarr_sync  # runs a coroutine on Zarr's own event loop

from anchorstream._buffers import leading_view
from anchorstream._kernels.store import store_scatter_symmetric
from anchorstream.stats.accumulator import Accumulator, Delta, Forgetting
from anchorstream.stats.cooccurrence import cap_pairs
from anchorstream.stats.documents import GROUP as _DOCSTATS
from anchorstream.stats.documents import MAX_SEGMENTS as MAX_DOCSTATS_SEGMENTS
from anchorstream.stats.documents import DocStatsSettings, DocumentStatistics
from anchorstream.errors import InputError, StoreError, StoreFormatError
from anchorstream.store.location import icechunk_storage
from anchorstream.text.vocabulary import StreamingVocabulary, decode_words, encode_words

__all__ = [
    "FORMAT_VERSION",
    "CommittedState",
    "CooccurrenceStore",
    "DenseRead",
    "fingerprint",
    "merge_committed",
    "open_committed",
    "read_committed",
    "store_info",
]

log = logging.getLogger(__name__)

if "ICECHUNK_LOG" not in os.environ:
    # Icechunk's local-disk backend warns, on every open, that it does not arbitrate concurrent
    # commits. This store has one writer by design (see CooccurrenceStore), so the line is
    # noise in every command; setting ICECHUNK_LOG brings Icechunk's own filters back.
    icechunk.set_logs_filter("warn,icechunk::storage::object_store=error")

FORMAT_VERSION = 2
# Version 2 added the state's "folding" (a compaction in steps, see _fold_step). A version 1
# store reads the same (it has no fold in progress); it is marked version 2 by its first
# folding step, so an older anchorstream refuses it instead of adding folded entries twice.
_READABLE_FORMATS = (1, 2)
_BRANCH = "main"
_META = "anchorstream_store"
_MEMORY: dict[str, icechunk.Storage] = {}


# ---------------------------------------------------------------------------------- storage
def _storage(url: str | os.PathLike, storage_options: Mapping[str, Any] | None = None
             ) -> tuple[icechunk.Storage, str | None]:
    """Icechunk storage for a URL, and the local directory when there is one.

    See :mod:`anchorstream.store.location` for the URL forms and ``storage_options``.
    """
    return icechunk_storage(url, storage_options, memory=_MEMORY)


def _wrap(exc: BaseException, what: str) -> StoreError:
    return StoreError(f"{what}: {type(exc).__name__}: {exc}")


def _pass_through(exc: BaseException) -> None:
    """Re-raise what is not a storage failure (Ctrl-C, exit); Icechunk's Rust panics are one.

    A panic surfaces as ``pyo3_runtime.PanicException``, a ``BaseException`` (not importable
    before the first panic, hence the check by name).
    """
    if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
        raise exc


def _zstd() -> ZstdCodec:
    # Level 1: the matrix is mostly zeros in its rare-word corner, which any level squeezes;
    # higher levels cost write time on every compaction for little gain.
    return ZstdCodec(level=1)


async def _put_async(agroup, name: str, data: np.ndarray) -> None:
    """(Re)create a small array ``name`` in ``agroup`` holding ``data`` entirely."""
    data = np.ascontiguousarray(data)
    chunks = (max(1, min(data.shape[0], 1 << 20)),) + data.shape[1:]
    arr = await agroup.create_array(
        name, shape=data.shape, dtype=data.dtype, chunks=chunks, compressors=_zstd(),
        fill_value=data.dtype.type(0).item(), overwrite=True,
    )
    if data.size:
        await arr.setitem(Ellipsis, data)


def _put_many(items: Iterable[tuple[zarr.Group, str, np.ndarray]]) -> None:
    """Write many small arrays concurrently, in one trip to Zarr's event loop.

    One synchronous Zarr call per array cost ~4 ms (thread hand-off plus metadata), which made
    a checkpoint of ~20 small arrays take ~90 ms; gathered, they take a fraction of that.
    """

    async def run() -> None:
        results = await asyncio.gather(
            *(_put_async(g._async_group, name, data) for g, name, data in items),
            return_exceptions=True,
        )
        for r in results:
            if isinstance(r, BaseException):
                raise r

    zarr_sync(run())


def _words_items(group: zarr.Group, name: str, words: Sequence[str | None]) -> list:
    blob, offsets = encode_words(words)
    return [(group, f"{name}_utf8", blob), (group, f"{name}_offsets", offsets)]


def _get(group: zarr.Group, name: str) -> np.ndarray:
    return np.asarray(group[name][...])


def _get_words(group: zarr.Group, name: str) -> list[str]:
    return decode_words(_get(group, f"{name}_utf8"), _get(group, f"{name}_offsets"))


# ---------------------------------------------------------------------------------- reading
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
    """

    cooccurrence: Any
    words: list
    slots: np.ndarray
    offsets: dict
    version: str
    clock: float
    n_docs_added: int
    dense: DenseRead | None = None


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


def _dense_read(meta, state, reset_seq, active) -> DenseRead:
    R = Forgetting.from_dict(meta["config"]["forgetting"]).ring
    current = state["current_window"]
    live_base = tuple((r, w) for r, w in enumerate(state["base_window"])
                      if w >= 0 and _live(w, current, R))
    return DenseRead(
        base=(state["base_seq"], state["base_t_ref"], live_base),
        segments=frozenset(seg["name"] for seg in state["segments"]
                           if _live(seg["window"], current, R)),
        active=active, reset_seq=reset_seq, seq=int(state["seq"]), clock=float(state["clock"]))


def _catch_up(root, meta, state, reset_seq, active, out, since: DenseRead | None):
    """Bring ``out`` (holding the dense read ``since``) up to this version in place, or
    return None when that is not possible and a full read is needed."""
    if since is None:
        return None
    now = _dense_read(meta, state, reset_seq, active)
    n = active.size
    counts = leading_view(out, (n, n), np.float64)
    fold = _Fold.of(meta, state)
    if (counts is None or now.base != since.base or not since.segments <= now.segments
            or not np.array_equal(active, since.active)
            or since.reset_seq.shape != reset_seq.shape
            # Folding moves entries of its segments into the base: the earlier read must hold
            # those segments whole (then the move changes nothing it holds).
            or (fold is not None and not fold.names <= since.segments)):
        return None
    evicted = np.flatnonzero(reset_seq != since.reset_seq)
    # An eviction since the read voids every entry of the slot read then: its reset is at
    # least the sequence number of the next checkpoint, after all those segments.
    if np.any(reset_seq[evicted] < since.seq):
        return None
    forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
    T = state["clock"]
    factor = forgetting.readout(T, since.clock)  # the same for every stored reference time
    if factor != 1.0:
        counts *= factor
    pos = np.full(reset_seq.size, -1, dtype=np.int64)
    pos[active] = np.arange(n)
    gone = pos[evicted]
    gone = gone[gone >= 0]
    counts[gone, :] = 0.0
    counts[:, gone] = 0.0
    new = now.segments - since.segments
    _add_segments(counts, pos, root, [seg for seg in state["segments"] if seg["name"] in new],
                  reset_seq, forgetting, T, fold)
    return counts, now


def _check_format(attrs: Mapping, where: str) -> dict:
    meta = attrs.get(_META)
    if meta is None:
        raise StoreFormatError(
            f"{where} is an Icechunk repository but not an anchorstream store (no {_META!r} "
            "attributes); if its creation was interrupted, create it again"
        )
    version = meta.get("format_version")
    if version not in _READABLE_FORMATS:
        raise StoreFormatError(
            f"{where} was written with store format version {version!r}; this anchorstream "
            f"reads format versions {', '.join(map(str, _READABLE_FORMATS))}. Use a matching "
            "anchorstream version or rebuild the store (e.g. `anchorstream ingest` from the "
            "sources)."
        )
    return meta


def _open_repo(url, storage_options: Mapping[str, Any] | None = None
               ) -> tuple[icechunk.Repository, str | None]:
    storage, local = _storage(url, storage_options)
    try:
        exists = icechunk.Repository.exists(storage)
    except BaseException as exc:
        _pass_through(exc)
        raise _wrap(exc, f"cannot reach store {os.fspath(url)!r}") from exc
    if not exists:
        if local is not None and os.path.isdir(local) and os.listdir(local):
            raise StoreFormatError(f"{local!r} exists but is not an Icechunk repository")
        raise StoreError(f"no store at {os.fspath(url)!r}")
    try:
        return icechunk.Repository.open(storage), local
    except BaseException as exc:
        _pass_through(exc)
        raise _wrap(exc, f"cannot open store {os.fspath(url)!r}") from exc


def _valid_entries(rows, cols, seq: int, reset_seq: np.ndarray) -> np.ndarray:
    """Mask of segment entries not voided by a later eviction of either slot."""
    return (reset_seq[rows] <= seq) & (reset_seq[cols] <= seq)


def _live(window: int, current: int, ring: int) -> bool:
    return window > current - ring


def _as_slice(src: np.ndarray, dst: np.ndarray) -> tuple[slice, slice] | None:
    """``(slice of src, slice of dst)`` when both index runs are contiguous, else None."""
    n = src.size
    if n and src[-1] - src[0] == n - 1 and dst[-1] - dst[0] == n - 1:
        return slice(int(src[0]), int(src[0]) + n), slice(int(dst[0]), int(dst[0]) + n)
    return None


def _densify(root, meta, state, reset_seq, active: np.ndarray, out=None) -> np.ndarray:
    """Base + valid live segments over the ``active`` slots, dense, true (decayed) values;
    into ``out``'s first ``n²`` elements when it has room (see :func:`open_committed`)."""
    V = meta["config"]["capacity"]
    S = meta["config"]["shard_size"]
    forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
    R = forgetting.ring
    T = state["clock"]
    current = state["current_window"]
    n = active.size
    out = leading_view(out, (n, n), np.float64)
    if out is None:
        out = np.zeros((n, n))
    else:
        out.fill(0.0)
    pos = np.full(V, -1, dtype=np.int64)
    pos[active] = np.arange(n)
    fold = _Fold.of(meta, state)
    # Base rows and columns of slots reset after the last compaction hold the words they
    # evicted: skipped. In the shards a fold in progress has rewritten, slots reset up to the
    # fold's last checkpoint were zeroed and got their new words' entries: kept there.
    base_ok = reset_seq <= state["base_seq"]
    folded_ok = base_ok if fold is None else reset_seq <= fold.seq
    base_factor = forgetting.readout(T, state["base_t_ref"])
    for r in range(R):
        w = state["base_window"][r]
        if w < 0 or not _live(w, current, R):
            continue
        arr = root[f"counts/{r}"]
        for r0 in range(0, V, S):
            rall = active[(active >= r0) & (active < r0 + S)]
            if rall.size == 0:
                continue
            for c0 in range(0, V, S):
                csel = active[(active >= c0) & (active < c0 + S)]
                folded = fold is not None and fold.has_folded(r0 // S, c0 // S)
                ok = folded_ok if folded else base_ok
                rsel, csel = rall[ok[rall]], csel[ok[csel]]
                if rsel.size == 0 or csel.size == 0:
                    continue
                block = arr[r0 : min(r0 + S, V), c0 : min(c0 + S, V)]
                if base_factor != 1.0:
                    block *= base_factor
                rs, cs = _as_slice(rsel - r0, pos[rsel]), _as_slice(csel - c0, pos[csel])
                if rs is not None and cs is not None:
                    # Every slot of the shard is active (the usual case): plain slices.
                    out[rs[1], cs[1]] += block[rs[0], cs[0]]
                else:
                    out[np.ix_(pos[rsel], pos[csel])] += block[np.ix_(rsel - r0, csel - c0)]
    _add_segments(out, pos, root, [seg for seg in state["segments"]
                                   if _live(seg["window"], current, R)],
                  reset_seq, forgetting, T, fold)
    return out


def _read(repo: icechunk.Repository, where: str, version: str | None,
          out=None, since: DenseRead | None = None) -> CommittedState:
    from anchorstream.stats.cooccurrence import Cooccurrence

    try:
        if version is None:
            session = repo.readonly_session(branch=_BRANCH)
        else:
            session = repo.readonly_session(snapshot_id=version)
        root = zarr.open_group(session.store, mode="r")
        meta = _check_format(root.attrs, where)
        state = root.attrs["state"]
        offsets = dict(root.attrs["offsets"])
        words_all = _get_words(root["vocab"], "slot_words")
        reset_seq = _get(root, "reset_seq")
        active = np.asarray([s for s, w in enumerate(words_all) if w], dtype=np.int64)
        caught_up = _catch_up(root, meta, state, reset_seq, active, out, since)
        if caught_up is not None:
            counts, dense = caught_up
        else:
            counts = _densify(root, meta, state, reset_seq, active, out)
            dense = _dense_read(meta, state, reset_seq, active)
        forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
        R = forgetting.ring
        live = np.asarray(
            [w >= 0 and _live(w, state["current_window"], R) for w in state["vec_window"]]
        )
        unigram = _get(root, "unigram")[live].sum(axis=0)[active]
        doc_freq = _get(root, "doc_freq")[live].sum(axis=0)[active]
        totals = _get(root, "totals")[live].sum(axis=0)
    except (StoreFormatError, StoreError):
        raise
    except BaseException as exc:
        _pass_through(exc)
        raise _wrap(exc, f"cannot read store {where!r}") from exc
    # Vectors are stored in the units of t_ref; the matrix was converted array by array.
    factor = forgetting.readout(state["clock"], state["t_ref"])
    if factor != 1.0:
        unigram *= factor
        doc_freq *= factor
        totals = totals * factor
    cooc = Cooccurrence(counts, unigram, doc_freq, int(totals[0]), int(round(totals[1])),
                        _length_cap(meta["config"]))
    if forgetting.decays:
        # Decayed sums are not whole numbers; Cooccurrence would truncate them.
        cooc.num_docs = float(totals[0])
        cooc.num_tokens = float(totals[1])
    return CommittedState(
        cooc, [words_all[s] for s in active], active, offsets, session.snapshot_id,
        float(state["clock"]), int(state["n_docs_added"]), dense,
    )


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
    repo, _ = _open_repo(url, storage_options)
    return _read(repo, os.fspath(url), version, out, since)


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


def _disk_bytes(local: str | None, repo: icechunk.Repository) -> int:
    if local is None:
        # Chunks only (what an object store bills for most); metadata objects are small.
        value = repo.chunk_storage_stats().non_virtual_bytes
        # A property in the type stubs, a method in icechunk 1.1's binary: accept both.
        return int(value() if callable(value) else value)
    total = 0
    for dirpath, _, files in os.walk(local):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass  # removed by a concurrent garbage collection
    return total


def store_info(url, version: str | None = None, *,
               storage_options: Mapping[str, Any] | None = None) -> dict:
    """Summary of a committed version, as plain JSON values (``anchorstream store-info``).

    ``storage_options`` as for :func:`open_committed`.

    Returns
    -------
    dict
        ``version``, ``num_docs``, ``num_tokens``, ``vocab_size``, ``capacity``, ``length_cap``,
        ``offsets``, ``bytes_on_disk``, ``fingerprint`` (see :func:`fingerprint`, on the counts),
        ``n_docs_added``, ``clock``, ``format_version``, ``segments``, ``versions``.
    """
    repo, local = _open_repo(url, storage_options)
    st = _read(repo, os.fspath(url), version)
    session = repo.readonly_session(snapshot_id=st.version)
    root = zarr.open_group(session.store, mode="r")
    meta = root.attrs[_META]
    c = st.cooccurrence
    return {
        "version": st.version,
        "format_version": meta["format_version"],
        "num_docs": c.num_docs,
        "num_tokens": c.num_tokens,
        "vocab_size": len(st.words),
        "capacity": meta["config"]["capacity"],
        "length_cap": c.length_cap,
        "offsets": st.offsets,
        "bytes_on_disk": _disk_bytes(local, repo),
        "fingerprint": fingerprint(c.counts, st.words),
        "n_docs_added": st.n_docs_added,
        "clock": st.clock,
        "segments": len(root.attrs["state"]["segments"]),
        "versions": sum(1 for _ in repo.ancestry(branch=_BRANCH)),
    }


def merge_committed(urls: Iterable) -> tuple[Any, list[str]]:
    """Sum the committed states of several stores (e.g. one per worker) over their words.

    Words are aligned by string, so slot assignments may differ; the union vocabulary lists
    the first store's words, then each later store's new words in its order.

    Returns
    -------
    (Cooccurrence, words)
    """
    from anchorstream.stats.cooccurrence import Cooccurrence

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


# ---------------------------------------------------------------------------------- writing
class CooccurrenceStore:
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

    _RUNTIME_DEFAULTS = {
        "budget_bytes": 256 * 2**20,
        "compact_bytes": 256 * 2**20,
        "max_segments": 64,
        "compact_step_seconds": 0.5,
        "keep_versions": 3,
        "gc_every": 20,
        "gc_interval_seconds": 3600.0,
        "gc_min_age": 60.0,
    }

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
        self.length_cap = _length_cap(cfg)
        vcfg = dict(cfg["vocabulary"])
        self.vocabulary = StreamingVocabulary(
            self.capacity,
            admit_threshold=vcfg["admit_threshold"], sketch_size=vcfg["sketch_size"],
            max_df=vcfg["max_df"], max_df_min_docs=vcfg["max_df_min_docs"],
            maintain_every=vcfg["maintain_every"], stopwords=vcfg["stopwords"],
            pin_seed=vcfg["pin_seed"],
        )
        self.vocabulary.set_state(arrays["vocab"])
        self._state = dict(root_attrs["state"])
        # The entries of the row band a fold in steps is working through (see _fold_step).
        self._band_cache: _BandEntries | None = None
        self._offsets = dict(root_attrs["offsets"])
        self._unigram = arrays["unigram"]
        self._doc_freq = arrays["doc_freq"]
        self._totals = arrays["totals"]
        self._reset_seq = arrays["reset_seq"]
        self.version = arrays["version"]
        self._accs: dict[int, Accumulator] = {}
        self._dirty = False
        self._committed_docs = int(self._state["n_docs_added"])
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

    # ------------------------------------------------------------------ construction
    @classmethod
    def create(
        cls,
        url,
        *,
        capacity: int,
        chunk_size: int = 256,
        shard_size: int | None = None,
        admit_threshold: float = 5.0,
        sketch_size: int | None = None,
        max_df: float | None = None,
        max_df_min_docs: int = 1000,
        maintain_every: int = 1000,
        stopwords: Iterable[str] = (),
        seed: Sequence[str] = (),
        pin_seed: bool = True,
        forgetting: Forgetting | None = None,
        length_cap: float | None = 2,
        document_stats: DocStatsSettings | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **runtime,
    ) -> CooccurrenceStore:
        """Create a new, empty store (its first commit holds the layout and the seed words).

        Parameters
        ----------
        url : str or path-like
        capacity : int
            Vocabulary capacity ``V`` (the matrix is ``V × V``).
        chunk_size, shard_size : int
            Zarr chunk (default 256) and shard (default ``8 × chunk_size``) edge lengths of the
            matrix; ``shard_size`` must be a multiple of ``chunk_size``.
        admit_threshold, sketch_size, max_df, max_df_min_docs, maintain_every, stopwords, seed, \
pin_seed
            Vocabulary settings, see :class:`~anchorstream.text.vocabulary.StreamingVocabulary`.
        forgetting : Forgetting, optional
            Decay and windows; default none.
        length_cap : float or None, default 2
            How a document's word pairs are weighted
            (:func:`~anchorstream.stats.cooccurrence.pair_scale`): every pair the same up to a
            document of this many tokens, a longer document as much as that; 2 weighs every
            document the same, None every pair. Fixed for the store's life.
        document_stats : DocStatsSettings, optional
            Document statistics to keep (DDP, RP, TSVD); see :meth:`open`.
        storage_options : mapping, optional
            Keyword arguments of the Icechunk storage of ``url`` (region, endpoint_url,
            allow_http, anonymous, ...; see :mod:`anchorstream.store.location`); credentials come
            from the environment by default. Not stored: pass them to every open and read.
        **runtime
            Runtime options (see the class notes).

        Raises
        ------
        InputError
            For invalid settings, an unsupported URL or storage options it does not take.
        StoreError
            If something already exists at ``url``, or it cannot be written.
        """
        settings = {
            "capacity": capacity, "chunk_size": chunk_size, "shard_size": shard_size,
            "admit_threshold": admit_threshold, "sketch_size": sketch_size, "max_df": max_df,
            "max_df_min_docs": max_df_min_docs, "maintain_every": maintain_every,
            "stopwords": stopwords, "seed": seed, "pin_seed": pin_seed, "forgetting": forgetting,
            "length_cap": length_cap,
        }
        meta, vocab, forgetting = _build_config(**settings)
        _check_runtime(runtime)
        storage, local = _storage(url, storage_options)
        target = local
        if local is not None:
            _remove_creation_debris(local)
            if os.path.exists(local) and (not os.path.isdir(local) or os.listdir(local)):
                raise StoreError(f"cannot create a store at {local!r}: it exists and is not empty")
            # Build the store beside its final place and rename it in: a crash during creation
            # then leaves no half-made store at the path (only debris, removed next time).
            tmp = f"{local}.creating-{uuid.uuid4().hex[:12]}"
            try:
                # Checked here because Icechunk panics (with a Rust backtrace) on an uncreatable
                # local path instead of raising.
                os.makedirs(tmp)
            except OSError as exc:
                raise StoreError(
                    f"cannot create a store at {local!r}: {exc.strerror or exc}"
                ) from exc
            storage = icechunk.local_filesystem_storage(tmp)
        try:
            repo = icechunk.Repository.create(storage)
            _initialize(repo, meta, vocab, forgetting, document_stats)
            if local is not None:
                if os.path.isdir(local):
                    os.rmdir(local)  # empty (checked above); rename needs it gone or empty
                os.rename(tmp, local)
                repo = icechunk.Repository.open(icechunk.local_filesystem_storage(local))
        except BaseException as exc:
            _pass_through(exc)
            if local is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise _wrap(exc, f"cannot create a store at {target or os.fspath(url)!r}") from exc
        store = cls._load(repo, url, target, runtime, document_stats)
        store._check_history = False  # a new store has no earlier writers' commits
        return store

    @classmethod
    def open(cls, url, *, document_stats: DocStatsSettings | None = None,
             storage_options: Mapping[str, Any] | None = None,
             **runtime) -> CooccurrenceStore:
        """Open an existing store for writing, at its last commit.

        Parameters
        ----------
        url : str or path-like
        document_stats : DocStatsSettings, optional
            The document statistics to keep from now on. None (default) keeps what the store
            keeps. Other settings than the stored ones (``DocStatsSettings()`` for none) drop
            the stored statistics at the next checkpoint and start new ones from the current
            document on (logged as a warning); a reader sees their ``since_docs``.
        storage_options : mapping, optional
            See :meth:`create`.
        **runtime
            Runtime options (see the class notes).

        Raises
        ------
        StoreError
            If there is no store or it cannot be read.
        StoreFormatError
            If it is not an anchorstream store or has another format version.
        InputError
            For an unsupported URL or storage options it does not take.
        """
        _check_runtime(runtime)
        repo, local = _open_repo(url, storage_options)
        return cls._load(repo, url, local, runtime, document_stats)

    @classmethod
    def open_or_create(cls, url, *, document_stats: DocStatsSettings | None = None,
                       storage_options: Mapping[str, Any] | None = None,
                       **kwargs) -> CooccurrenceStore:
        """Open the store at ``url`` if there is one, else :meth:`create` it with ``kwargs``.

        An Icechunk repository whose anchorstream initialization never committed (a creation
        interrupted on an object store) is initialized. Settings other than the runtime options
        do not apply when the store exists: the stored ones do, and those that differ from the
        ones given (capacity, chunking, vocabulary settings such as ``stopwords`` and
        ``max_df``, forgetting) are logged as a warning. A store that recorded no stopwords
        (one made by ``anchorstream ingest``, whose tokenizer drops them) is not checked for
        them.
        """
        storage, local = _storage(url, storage_options)
        if local is not None:
            _remove_creation_debris(local)
        try:
            exists = icechunk.Repository.exists(storage)
        except BaseException as exc:
            _pass_through(exc)
            raise _wrap(exc, f"cannot reach store {os.fspath(url)!r}") from exc
        if not exists:
            return cls.create(url, document_stats=document_stats,
                              storage_options=storage_options, **kwargs)
        runtime = {k: kwargs.pop(k) for k in list(kwargs) if k in cls._RUNTIME_DEFAULTS}
        repo, local = _open_repo(url, storage_options)
        try:
            session = repo.readonly_session(branch=_BRANCH)
            initialized = _META in zarr.open_group(session.store, mode="r").attrs
        except Exception:
            initialized = False
        if not initialized and sum(1 for _ in repo.ancestry(branch=_BRANCH)) <= 1:
            # Nothing but Icechunk's own first commit: our initialization never happened.
            meta, vocab, forgetting = _build_config(**kwargs)
            try:
                _initialize(repo, meta, vocab, forgetting, document_stats)
            except BaseException as exc:
                _pass_through(exc)
                raise _wrap(exc, f"cannot initialize store {os.fspath(url)!r}") from exc
        store = cls._load(repo, url, local, runtime, document_stats)
        _warn_other_settings(store._meta["config"], kwargs, store.url)
        return store

    @classmethod
    def _load(cls, repo, url, local, runtime, document_stats=None) -> CooccurrenceStore:
        where = os.fspath(url)
        try:
            session = repo.readonly_session(branch=_BRANCH)
            root = zarr.open_group(session.store, mode="r")
            meta = _check_format(root.attrs, where)
            attrs = {"state": root.attrs["state"], "offsets": root.attrs["offsets"],
                     "maintenance": root.attrs.get("maintenance")}
            vg = root["vocab"]
            arrays = {
                "unigram": _get(root, "unigram"),
                "doc_freq": _get(root, "doc_freq"),
                "totals": _get(root, "totals"),
                "reset_seq": _get(root, "reset_seq"),
                "version": session.snapshot_id,
                "vocab": {
                    "slot_words": _get_words(vg, "slot_words"),
                    "slot_df": _get(vg, "slot_df"),
                    "pinned": _get(vg, "pinned"),
                    "sketch_words": _get_words(vg, "sketch_words"),
                    "sketch_counts": _get(vg, "sketch_counts"),
                    "sketch_errors": _get(vg, "sketch_errors"),
                    "blocked_words": _get_words(vg, "blocked_words"),
                    "blocked_df": _get(vg, "blocked_df"),
                    **vg.attrs["scalars"],
                },
            }
            stored = None
            if _DOCSTATS in root:
                stored = DocumentStatistics.load(
                    root[_DOCSTATS], meta["config"]["capacity"],
                    Forgetting.from_dict(meta["config"]["forgetting"]))
        except (StoreFormatError, StoreError):
            raise
        except BaseException as exc:
            _pass_through(exc)
            raise _wrap(exc, f"cannot open store {where!r}") from exc
        docstats = _choose_docstats(stored, document_stats, meta, attrs["state"], where)
        return cls(repo, url, local, meta, attrs, arrays, dict(runtime), docstats)

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
    def n_docs_added(self) -> int:
        """Documents added over the store's life, committed or not."""
        return int(self._state["n_docs_added"])

    @property
    def pending_docs(self) -> int:
        """Documents added since the last commit."""
        return int(self._state["n_docs_added"]) - self._committed_docs

    @property
    def document_stats(self) -> DocStatsSettings | None:
        """The document statistics kept (None: none)."""
        return None if self._docstats is None else self._docstats.settings

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
            kept window are skipped (see ``n_skipped_late``).

        Raises
        ------
        InputError
            If a document is a str, or timestamps are missing or malformed.
        """
        docs = documents if isinstance(documents, list) else list(documents)
        for d in docs:
            if isinstance(d, str):
                raise InputError("documents must be token lists, got a str; tokenize first")
        n = len(docs)
        if n == 0:
            return 0
        F, st = self.forgetting, self._state
        R = F.ring
        if F.unit == "documents":
            t = np.arange(st["n_docs_added"], st["n_docs_added"] + n, dtype=np.float64)
        else:
            if timestamps is None:
                raise InputError("this store measures time in seconds: pass timestamps=")
            t = np.asarray(timestamps, dtype=np.float64)
            if t.shape != (n,) or not np.all(np.isfinite(t)):
                raise InputError(f"timestamps must be {n} finite numbers, got shape {t.shape}")
            if np.any(t < 0):
                raise InputError("timestamps must be seconds >= 0 (e.g. since the Unix epoch)")
        win = np.floor(t / F.window).astype(np.int64) if F.window else np.zeros(n, np.int64)
        horizon = np.maximum.accumulate(np.maximum(win, st["current_window"]))
        keep = win > horizon - R
        first = st["n_docs_added"] == 0
        positions = st["n_docs_added"] + np.arange(n, dtype=np.int64)  # stream positions
        st["n_docs_added"] += n
        st["clock"] = float(t.max()) if first else max(float(st["clock"]), float(t.max()))
        self._dirty = True
        if not keep.all():
            self.n_skipped_late += int((~keep).sum())
            docs = [d for d, k in zip(docs, keep) if k]
            t, win, positions = t[keep], win[keep], positions[keep]
            if not docs:
                return 0
        if F.decays:
            if F.needs_renormalize(float(t.max()), st["t_ref"]):
                self._renormalize(float(t.max()))
            w = np.exp2((t - st["t_ref"]) / F.half_life)
            indptr, slots, evictions = self.vocabulary.observe_batch(docs, w.tolist())
        else:
            w = np.ones(t.size)
            indptr, slots, evictions = self.vocabulary.observe_batch(docs, 1.0)
        # One accumulator call per run of documents in the same window (usually the whole
        # batch); evictions inside a run go with it, positioned by document.
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
                late = window < self._state["current_window"]
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
        if self._docstats is not None:
            self._docstats.add(positions=positions, times=t, weights=w, windows=win,
                               indptr=indptr, slots=slots, evictions=evictions, seq=st["seq"])
            self._docstats.roll(st["current_window"])
        return int(win.size)

    def _renormalize(self, t_new: float) -> None:
        """Move the units of everything held in memory to ``t_new`` (weights back to ≤ 1).

        Only memory changes: the vectors, the vocabulary's frequencies and the uncommitted
        deltas; they are written in the new units at the next checkpoint. Committed segments
        and the base matrix keep their own reference times (converted when read or compacted).
        """
        st = self._state
        f = self.forgetting.readout(t_new, st["t_ref"])
        self._unigram *= f
        self._doc_freq *= f
        self._totals *= f
        self.vocabulary.rescale(f)
        for acc in self._accs.values():
            acc.rescale(f)
        if self._docstats is not None:
            self._docstats.rescale(f)
        st["t_ref"] = t_new
        self._dirty = True

    def _roll(self, window: int) -> None:
        """Make ``window`` current if it is newer; clear its ring slot's vectors if stale."""
        st, R = self._state, self.forgetting.ring
        if window > st["current_window"]:
            st["current_window"] = window
            for w in [w for w in self._accs if not _live(w, window, R)]:
                del self._accs[w]
        r = window % R
        if st["vec_window"][r] != window:
            self._unigram[r] = 0.0
            self._doc_freq[r] = 0.0
            self._totals[r] = 0.0
            st["vec_window"][r] = window

    def _evict_slot(self, slot: int, keep: int | None = None) -> None:
        """Zero ``slot`` in memory; the accumulator of window ``keep`` is told by the caller."""
        for window, acc in self._accs.items():
            if window != keep:
                acc.evict(slot)
        self._unigram[:, slot] = 0.0
        self._doc_freq[:, slot] = 0.0
        self._reset_seq[slot] = self._state["seq"]
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
        st = dict(self._state)
        seq = st["seq"]
        R = self.forgetting.ring
        unigram, doc_freq, totals = self._unigram.copy(), self._doc_freq.copy(), self._totals.copy()
        deltas: list[tuple[int, Delta]] = []
        for window, acc in sorted(self._accs.items()):
            d = acc.delta()
            r = window % R
            unigram[r] += d.unigram
            doc_freq[r] += d.doc_freq
            totals[r] += (d.num_docs, d.num_tokens)
            deltas.append((window, d))
        segments = list(st["segments"])
        t_delta = time.perf_counter()
        try:
            session = self._repo.writable_session(_BRANCH)
            root = zarr.open_group(session.store, mode="r+")
            items: list = []
            for window, d in deltas:
                if d.nnz == 0:
                    continue
                name = f"s{seq:010d}w{window}"
                g = root.require_group("segments").create_group(name, overwrite=True)
                items += [(g, "rows", d.rows), (g, "cols", d.cols), (g, "vals", d.vals)]
                segments.append(
                    {"name": name, "seq": seq, "window": window, "nnz": d.nnz,
                     "t_ref": st["t_ref"]}
                )
            st["segments"] = segments
            st["seq"] = seq + 1
            prepared = None
            if self._docstats_drop and _DOCSTATS in root:
                del root[_DOCSTATS]
            if self._docstats is not None:
                prepared = self._docstats.prepare(
                    root, seq=seq, t_ref=st["t_ref"], current_window=st["current_window"],
                    reset_seq=self._reset_seq)
            self._write_common(root, st, new_offsets, unigram, doc_freq, totals, items)
            meta = {"kind": "checkpoint", "seq": seq, "offsets": new_offsets}
            meta.update(metadata or {})
            t_write = time.perf_counter()
            version = session.commit(f"checkpoint {seq}", metadata=meta)
            t_commit = time.perf_counter()
        except BaseException as exc:
            _pass_through(exc)
            raise _wrap(
                exc, f"checkpoint {seq} of {self.url!r} failed; the store still holds version "
                f"{self.version}"
            ) from exc
        self._state = st
        self._offsets = new_offsets
        self._unigram, self._doc_freq, self._totals = unigram, doc_freq, totals
        # The current window's accumulator is cleared, not dropped: its dense block of hot rows
        # (half the budget, 134 MB at 5000 slots) would otherwise be allocated afresh every
        # interval, and first-touching it cost ~0.2-0.4 s of page faults per checkpoint here.
        kept = self._accs.get(st["current_window"])
        self._accs.clear()
        if kept is not None:
            kept.clear()
            self._accs[st["current_window"]] = kept
        self._dirty = False
        self.version = version
        self._committed_docs = st["n_docs_added"]
        self._docstats_drop = False
        if prepared is not None:
            self._docstats.adopt(prepared)
        after = self._after_commit()
        self.last_checkpoint_seconds = {
            "delta": t_delta - t_start, "write": t_write - t_delta,
            "commit": t_commit - t_write, **after}
        return self.version

    def _write_common(self, root, st, offsets, unigram, doc_freq, totals, items) -> None:
        items = list(items) + [
            (root, "unigram", unigram),
            (root, "doc_freq", doc_freq),
            (root, "totals", totals),
            (root, "reset_seq", self._reset_seq),
        ]
        items += _vocab_items(root.require_group("vocab"), self.vocabulary.get_state())
        _put_many(items)
        root.attrs.update({"state": st, "offsets": offsets, "maintenance": self._maintenance})

    def _after_commit(self) -> dict[str, float]:
        """Compact and collect garbage when due; returns their seconds (0.0: not run)."""
        seconds = {"compact": 0.0, "gc": 0.0}
        st = self._state
        seg_bytes = 16 * sum(s["nnz"] for s in st["segments"])
        F = self.forgetting
        expired = any(
            not _live(s["window"], st["current_window"], F.ring) for s in st["segments"]
        )
        due = expired or seg_bytes > self.compact_bytes or len(st["segments"]) > self.max_segments
        if st.get("folding") or due:
            t0 = time.perf_counter()
            try:
                if self._folds_in_steps():
                    self._fold_step(self.compact_step_seconds)
                else:
                    self.compact()
            except StoreError as exc:
                # The checkpoint itself is committed; compaction is retried after the next one.
                log.warning("compaction of %s failed (will retry): %s", self.url, exc)
            seconds["compact"] = time.perf_counter() - t0
        self._commits_since_gc += 1
        t0 = time.perf_counter()
        reason = self._gc_due()
        if reason:
            log.debug("garbage collection of %s: %s", self.url, reason)
            try:
                self.collect_garbage()
            except StoreError as exc:
                log.warning("garbage collection of %s failed (will retry): %s", self.url, exc)
        seconds["gc"] = time.perf_counter() - t0 if reason else 0.0
        return seconds

    def _gc_due(self) -> str | None:
        """Why garbage collection should run now (see the class notes), or None."""
        if self.gc_every and self._commits_since_gc >= self.gc_every:
            return f"{self._commits_since_gc} commits since the last collection"
        if self.gc_interval_seconds and time.time() - self._last_gc >= self.gc_interval_seconds:
            return "gc_interval_seconds passed since the last collection"
        if self._check_history and (self.gc_every or self.gc_interval_seconds):
            # Once per writer: commits left by earlier writers (short runs, restarts).
            self._check_history = False
            grace = _dt.datetime.now(_dt.UTC) - _dt.timedelta(seconds=float(self.gc_min_age))
            try:
                # Newest first; the last entry is the repository's first commit (never expired).
                old = list(self._repo.ancestry(branch=_BRANCH))[self.keep_versions:-1]
            except Exception as exc:
                log.warning("cannot list the history of %s: %s", self.url, exc)
                return None
            if any(info.written_at < grace for info in old):
                return "the branch holds commits past keep_versions"
        return None

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
        while self._state.get("folding"):
            # Finish a fold in steps first: its rewritten shards already hold the new words of
            # slots evicted before it began, which this compaction would zero again.
            self._fold_step(math.inf)
        st = dict(self._state)
        F, R, V, S = self.forgetting, self.forgetting.ring, self.capacity, self.shard_size
        current = st["current_window"]
        # Everything is converted to the newest units (t_ref): all factors are <= 1.
        base_factor = F.readout(st["t_ref"], st["base_t_ref"])
        reset = self._reset_seq
        stale = np.flatnonzero(reset > st["base_seq"])
        base_window = list(st["base_window"])
        try:
            session = self._repo.writable_session(_BRANCH)
            root = zarr.open_group(session.store, mode="r+")
            counts = root["counts"]
            for r in range(R):
                segs = [
                    s for s in st["segments"]
                    if s["window"] % R == r and _live(s["window"], current, R)
                ]
                target = max([s["window"] for s in segs], default=base_window[r])
                arr = counts[str(r)]
                cleared = False
                if base_window[r] >= 0 and (
                    base_window[r] != target or not _live(base_window[r], current, R)
                ):
                    arr = counts.create_array(
                        str(r), shape=(V, V), dtype="f8", chunks=(self.chunk_size,) * 2,
                        shards=(S, S), compressors=_zstd(), fill_value=0.0, overwrite=True,
                    )
                    cleared = True
                base_window[r] = target if segs else (-1 if cleared else base_window[r])
                rows, cols, vals = _concat_segments(root, segs, reset, F, st["t_ref"])
                _fold_into(
                    arr, V, S, rows, cols, vals,
                    stale=np.empty(0, np.int64) if cleared else stale,
                    factor=1.0 if cleared else base_factor,
                )
            if "segments" in root:
                del root["segments"]
            root.require_group("segments")
            st["segments"] = []
            st["base_seq"] = st["seq"] - 1
            st["base_window"] = base_window
            st["base_t_ref"] = st["t_ref"]
            root.attrs.update({"state": st, "maintenance": self._maintenance})
            version = session.commit(
                f"compact {st['seq'] - 1}",
                metadata={"kind": "compact", "seq": st["seq"] - 1, "offsets": self._offsets},
            )
        except BaseException as exc:
            _pass_through(exc)
            raise _wrap(
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

    def _fold_step(self, budget: float) -> str:
        """One step of a compaction in steps (starting one if none is in progress).

        The step folds the segments of the compaction ("generation") into the base shard pair
        by shard pair, ``(a, b)`` and its mirror ``(b, a)`` for the upper pairs ``a <= b`` in
        row-major order, until ``budget`` seconds have passed, then commits the shards with
        the number of pairs done. Readers skip the generation's entries in the pairs done
        (:class:`_Fold`), so every commit holds the same logical matrix. Segments committed
        meanwhile wait for the next generation. The last step drops the generation's segments
        and moves ``base_seq`` to the generation's last checkpoint; until then the base keeps
        ignoring slots evicted after the previous compaction (as readers do), and each step
        zeroes them in the shards it rewrites. Returns the new version.
        """
        if self._dirty:
            raise InputError("a compaction step needs a clean state: call checkpoint() first")
        st = dict(self._state)
        V, S = self.capacity, self.shard_size
        G = -(-V // S)
        n_pairs = G * (G + 1) // 2
        fold = dict(st.get("folding") or {
            "segments": [seg["name"] for seg in st["segments"]], "seq": st["seq"] - 1, "done": 0,
        })
        current = _Fold(frozenset(fold["segments"]), int(fold["done"]), int(fold["seq"]), S, G)
        segs = [seg for seg in st["segments"] if seg["name"] in current.names]
        reset = self._reset_seq
        stale = np.flatnonzero(reset > st["base_seq"])
        stale_bands = set(np.unique(stale // S).tolist())
        t0 = time.perf_counter()
        try:
            session = self._repo.writable_session(_BRANCH)
            root = zarr.open_group(session.store, mode="r+")
            arr = root["counts/0"]
            stale_mask = np.zeros(V, dtype=bool)
            stale_mask[stale] = True
            p, a, b = current.done, 0, 0
            # (a, b) walks the upper pairs in the order of _pair_index.
            while _pair_index(a, b, G) != p:
                a, b = (a, b + 1) if b + 1 < G else (a + 1, a + 1)
            rewritten = 0
            while p < n_pairs:
                if rewritten and time.perf_counter() - t0 >= budget:
                    break
                cache = self._band_cache
                if cache is None or cache.key != (current.names, a):
                    # Kept between steps: reading a band of every segment (~0.5-1.5 s for
                    # the first band at V = 20,000) is paid once per band, not per step.
                    self._band_cache = cache = _BandEntries.read(root, segs, a, S)
                    if time.perf_counter() - t0 >= budget:
                        break  # this step only read; the next one rewrites
                entries = cache.pair(b, reset)
                if entries[0].size or a in stale_bands or b in stale_bands:
                    for x, y in {(a, b), (b, a)}:
                        _rewrite_shard(arr, V, S, x, y, [entries],
                                       stale_mask=stale_mask if stale.size else None)
                    rewritten += 1
                p += 1
                a, b = (a, b + 1) if b + 1 < G else (a + 1, a + 1)
            if p == current.done and self._state.get("folding"):
                return self.version  # nothing rewritten: nothing to commit
            # (A new generation is committed even before its first rewrite, so that the next
            # step folds the same segments and finds them read.)
            if p == n_pairs:
                self._band_cache = None
                for name in current.names:
                    del root[f"segments/{name}"]
                st["segments"] = [seg for seg in st["segments"]
                                  if seg["name"] not in current.names]
                st["base_seq"] = fold["seq"]
                st["folding"] = None
            else:
                st["folding"] = {**fold, "done": p}
            attrs = {"state": st, "maintenance": self._maintenance}
            meta = self._meta
            if meta.get("format_version") != FORMAT_VERSION:
                meta = attrs[_META] = {**meta, "format_version": FORMAT_VERSION}
            root.attrs.update(attrs)
            done = "done" if p == n_pairs else f"{p}/{n_pairs} shard pairs"
            version = session.commit(
                f"compact {fold['seq']} ({done})",
                metadata={"kind": "compact", "seq": fold["seq"], "offsets": self._offsets},
            )
        except BaseException as exc:
            _pass_through(exc)
            raise _wrap(
                exc, f"compaction step of {self.url!r} failed; the store still holds version "
                f"{self.version}"
            ) from exc
        self._state = st
        self._meta = meta  # marked version 2 only once the commit that needs it is in
        self.version = version
        return version

    def collect_garbage(self) -> dict:
        """Expire all but the last ``keep_versions`` commits (older than ``gc_min_age``) and
        delete unreachable objects, including debris of crashed writers.

        Returns
        -------
        dict
            ``expired`` (count), ``bytes_deleted``, ``objects_deleted``.
        """
        self._commits_since_gc = 0
        self._check_history = False
        now = _dt.datetime.now(_dt.UTC)
        grace = now - _dt.timedelta(seconds=float(self.gc_min_age))
        try:
            ancestry = list(self._repo.ancestry(branch=_BRANCH))
            expired: set = set()
            if len(ancestry) > self.keep_versions:
                cutoff = min(ancestry[self.keep_versions - 1].written_at, grace)
                expired = self._repo.expire_snapshots(cutoff)
            summary = self._repo.garbage_collect(grace)
        except BaseException as exc:
            _pass_through(exc)
            raise _wrap(exc, f"garbage collection of {self.url!r} failed") from exc
        # Recorded in the store with the next commit, for gc_interval_seconds across restarts.
        self._last_gc = now.timestamp()
        self._maintenance = {**self._maintenance, "last_gc": self._last_gc}
        return {
            "expired": len(expired),
            "bytes_deleted": int(summary.bytes_deleted),
            "objects_deleted": int(
                summary.chunks_deleted + summary.manifests_deleted + summary.snapshots_deleted
                + summary.attributes_deleted + summary.transaction_logs_deleted
            ),
        }

    def read(self) -> CommittedState:
        """The last committed state (what a reader opening the store now would see)."""
        return _read(self._repo, self.url, self.version)

    def disk_bytes(self) -> int:
        """Bytes the store occupies (local disk: every file; object stores: chunks only)."""
        return _disk_bytes(self._local, self._repo)


# ---------------------------------------------------------------------------------- helpers
def _check_runtime(runtime: Mapping) -> None:
    for key, value in runtime.items():
        if key not in CooccurrenceStore._RUNTIME_DEFAULTS:
            known = sorted(CooccurrenceStore._RUNTIME_DEFAULTS)
            raise InputError(f"unknown store option {key!r}; known: {known}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InputError(f"store option {key} must be a number >= 0, got {value!r}")
    if runtime.get("keep_versions", 1) < 1:
        raise InputError("keep_versions must be >= 1")


def _warn_other_settings(config: Mapping, requested: Mapping, where: str) -> None:
    """Log the settings of ``requested`` (``create`` keywords) that differ from the stored ones.

    They do not apply to an existing store; a silent difference would let an operator believe
    that a changed ``capacity`` or stopword list took effect. Stopwords are compared only when
    the store recorded some: ``anchorstream ingest`` filters them in its tokenizer and gives the
    store none, so an empty stored list says nothing.
    """
    vocab = config["vocabulary"]
    stored = {"capacity": config["capacity"], "chunk_size": config["chunk_size"],
              "shard_size": config["shard_size"], **vocab,
              "forgetting": Forgetting.from_dict(config["forgetting"]).to_dict(),
              "length_cap": _length_cap(config)}
    diffs = []
    for key, value in requested.items():
        if key not in stored or value is None and key in ("shard_size", "sketch_size"):
            continue  # not a stored setting (seed), or "the default", which depends on others
        have = stored[key]
        if key == "stopwords":
            if isinstance(value, str) or not have:
                continue
            want = set(value)
            added, removed = sorted(want - set(have)), sorted(set(have) - want)
            if added or removed:
                diffs.append(
                    f"stopwords (the store never counts its {len(have)}; asked for "
                    f"{len(added)} more {added[:5]}, {len(removed)} fewer {removed[:5]})")
            continue
        if key == "forgetting":
            if isinstance(value, Forgetting) or value is None:
                value = (value if value is not None else Forgetting()).to_dict()
        if value != have:
            diffs.append(f"{key} {have!r} (asked for {value!r})")
    if diffs:
        log.warning(
            "store %s exists and keeps the settings it was created with, not the ones asked "
            "for: %s. Documents added from now on are counted under the stored settings; to "
            "change them, build a new store (e.g. anchorstream ingest, or replay the topic)",
            where, "; ".join(diffs))


def _length_cap(config: Mapping) -> float | None:
    """A store's document weighting (:func:`~anchorstream.stats.cooccurrence.pair_scale`); stores
    made before it was a setting weigh every document the same (2)."""
    return config.get("length_cap", 2)


def _build_config(
    capacity, chunk_size=256, shard_size=None, admit_threshold=5.0, sketch_size=None,
    max_df=None, max_df_min_docs=1000, maintain_every=1000, stopwords=(), seed=(),
    pin_seed=True, forgetting=None, length_cap=2,
) -> tuple[dict, StreamingVocabulary, Forgetting]:
    """Validated store metadata, the initial vocabulary and the forgetting settings."""
    cap_pairs(length_cap)  # validates
    if shard_size is None:
        shard_size = 8 * chunk_size if isinstance(chunk_size, int) else chunk_size
    for name, value in (("chunk_size", chunk_size), ("shard_size", shard_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be a positive int, got {value!r}")
    if shard_size % chunk_size:
        raise InputError(
            f"shard_size ({shard_size}) must be a multiple of chunk_size ({chunk_size})"
        )
    forgetting = forgetting if forgetting is not None else Forgetting()
    if not isinstance(forgetting, Forgetting):
        raise InputError(f"forgetting must be a Forgetting, got {type(forgetting).__name__}")
    vocab = StreamingVocabulary(
        capacity, admit_threshold=admit_threshold, sketch_size=sketch_size, max_df=max_df,
        max_df_min_docs=max_df_min_docs, maintain_every=maintain_every, stopwords=stopwords,
        seed=seed, pin_seed=pin_seed,
    )
    vcfg = vocab.config()
    del vcfg["capacity"]
    meta = {
        "format_version": FORMAT_VERSION,
        "config": {
            "capacity": int(capacity),
            "chunk_size": int(chunk_size),
            "shard_size": int(shard_size),
            "vocabulary": vcfg,
            "forgetting": forgetting.to_dict(),
            "length_cap": None if length_cap is None else float(length_cap),
        },
    }
    return meta, vocab, forgetting


def _choose_docstats(stored, requested, meta, state, where):
    """``(DocumentStatistics or None, drop the committed group?)`` for a writer."""
    if requested is None or (stored is not None and stored.settings == requested):
        return stored, False
    if not isinstance(requested, DocStatsSettings):
        raise InputError(
            f"document_stats must be a DocStatsSettings or None, got {type(requested).__name__}")
    if stored is not None:
        log.warning(
            "store %s keeps document statistics %s; %s were asked for: the stored ones are "
            "dropped at the next checkpoint and new ones count documents from %d on",
            where, stored.settings.to_dict(), requested.to_dict(), state["n_docs_added"])
    if not requested.enabled:
        return None, stored is not None
    cfg = meta["config"]
    fresh = DocumentStatistics(requested, cfg["capacity"],
                               Forgetting.from_dict(cfg["forgetting"]),
                               since_docs=int(state["n_docs_added"]))
    return fresh, stored is not None


def _remove_creation_debris(local: str) -> None:
    parent, name = os.path.split(local)
    if not os.path.isdir(parent or "."):
        return
    for entry in os.listdir(parent or "."):
        if entry.startswith(f"{name}.creating-"):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def _vocab_items(g: zarr.Group, vs: dict) -> list:
    """Arrays of the vocabulary state for :func:`_put_many`; sets the scalar attributes."""
    items = _words_items(g, "slot_words", vs["slot_words"])
    items += _words_items(g, "sketch_words", vs["sketch_words"])
    items += _words_items(g, "blocked_words", vs["blocked_words"])
    items += [
        (g, "slot_df", np.asarray(vs["slot_df"], dtype=np.float64)),
        (g, "pinned", np.asarray(vs["pinned"], dtype=bool)),
        (g, "sketch_counts", np.asarray(vs["sketch_counts"], dtype=np.float64)),
        (g, "sketch_errors", np.asarray(vs["sketch_errors"], dtype=np.float64)),
        (g, "blocked_df", np.asarray(vs["blocked_df"], dtype=np.float64)),
    ]
    g.attrs["scalars"] = {
        "floor": float(vs["floor"]),
        "total_weight": float(vs["total_weight"]),
        "n_docs_seen": int(vs["n_docs_seen"]),
    }
    return items


def _initialize(repo, meta, vocab: StreamingVocabulary, forgetting: Forgetting,
                document_stats: DocStatsSettings | None = None) -> str:
    cfg = meta["config"]
    V, R = cfg["capacity"], forgetting.ring
    session = repo.writable_session(_BRANCH)
    root = zarr.open_group(session.store, mode="w")
    counts = root.create_group("counts")
    for r in range(R):
        counts.create_array(
            str(r), shape=(V, V), dtype="f8", chunks=(cfg["chunk_size"],) * 2,
            shards=(cfg["shard_size"],) * 2, compressors=_zstd(), fill_value=0.0,
        )
    root.create_group("segments")
    state = {
        "seq": 1,
        "base_seq": 0,
        "clock": 0.0,
        "t_ref": 0.0,
        "base_t_ref": 0.0,
        "n_docs_added": 0,
        "current_window": 0,
        "base_window": [0] + [-1] * (R - 1),
        "vec_window": [0] + [-1] * (R - 1),
        "segments": [],
    }
    _put_many(
        [
            (root, "unigram", np.zeros((R, V))),
            (root, "doc_freq", np.zeros((R, V))),
            (root, "totals", np.zeros((R, 2))),
            (root, "reset_seq", np.zeros(V, dtype=np.int64)),
        ]
        + _vocab_items(root.create_group("vocab"), vocab.get_state())
    )
    if document_stats is not None and document_stats.enabled:
        # Recorded from the first commit on, so that a writer reopening the store after a
        # crash before its first checkpoint keeps them.
        DocumentStatistics(document_stats, V, forgetting).prepare(
            root, seq=0, t_ref=0.0, current_window=0, reset_seq=np.zeros(V, dtype=np.int64))
    # A new store counts as collected now (see CooccurrenceStore, gc_interval_seconds).
    maintenance = {"last_gc": _dt.datetime.now(_dt.UTC).timestamp()}
    root.attrs.update({_META: meta, "state": state, "offsets": {}, "maintenance": maintenance})
    return session.commit("create anchorstream store", metadata={"kind": "create", "seq": 0})


@dataclass(frozen=True)
class _Fold:
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
    def of(cls, meta, state) -> _Fold | None:
        fold = state.get("folding")
        if not fold:
            return None
        V, S = meta["config"]["capacity"], meta["config"]["shard_size"]
        return cls(frozenset(fold["segments"]), int(fold["done"]), int(fold["seq"]), S,
                   -(-V // S))

    def has_folded(self, x: int, y: int) -> bool:
        """Whether base shard ``(x, y)`` has been rewritten by this fold."""
        return bool(_pair_index(min(x, y), max(x, y), self.n_shards) < self.done)

    def folded(self, seg, rows, cols) -> np.ndarray | None:
        """Mask of the entries of ``seg`` already in the base, or None for none."""
        if seg["name"] not in self.names or self.done == 0:
            return None
        S = self.shard_size
        return _pair_index(rows // S, cols // S, self.n_shards) < self.done


def _pair_index(a, b, G: int):
    """Row-major index of the upper shard pair ``(a, b)``, ``a <= b``, among ``G(G+1)/2``."""
    a = np.asarray(a, dtype=np.int64)
    return a * G - a * (a - 1) // 2 + (np.asarray(b, dtype=np.int64) - a)


def _segment_entries(root, seg, reset, forgetting, t_ref, fold: _Fold | None = None):
    """The valid ``(rows, cols, vals)`` of one delta segment, in the units of ``t_ref``.

    Entries of slots evicted after the segment was written are dropped, and so are entries
    that a fold in progress has moved into the base; decayed values are converted from the
    segment's reference time.
    """
    g = root[f"segments/{seg['name']}"]
    rows, cols, vals = _get(g, "rows"), _get(g, "cols"), _get(g, "vals")
    keep = _valid_entries(rows, cols, seg["seq"], reset)
    folded = None if fold is None else fold.folded(seg, rows, cols)
    if folded is not None:
        keep &= ~folded
    vals = vals[keep]
    factor = forgetting.readout(t_ref, seg["t_ref"])
    if factor != 1.0:
        vals *= factor
    return rows[keep], cols[keep], vals


def _add_segments(out, pos, root, segs, reset, forgetting, t_ref, fold=None) -> None:
    """Add the valid entries of ``segs`` (both triangles) into the dense ``out``, whose row
    and column of slot ``s`` is ``pos[s]``, in the units of ``t_ref``."""
    for seg in segs:
        rows, cols, vals = _segment_entries(root, seg, reset, forgetting, t_ref, fold)
        store_scatter_symmetric(out, pos, pos, rows, cols, vals)


def _concat_segments(root, segs, reset, forgetting, t_ref):
    """Valid entries of ``segs``, values converted to the units of ``t_ref``."""
    parts = [_segment_entries(root, s, reset, forgetting, t_ref) for s in segs]
    if not parts:
        return np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0)
    return tuple(np.concatenate(p) for p in zip(*parts))  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class _BandEntries:
    """The entries of a fold's segments whose row lies in one band of shards: per segment, its
    slice (segments are sorted by row), the column band of each entry and the segment's
    checkpoint (for the eviction test). Kept per segment: concatenating and sorting ~10^7
    entries cost more than selecting a column band from each slice."""

    key: tuple  # (segment names, band)
    parts: list  # (rows, cols, vals, column bands, seq) per segment

    @classmethod
    def read(cls, root, segs, band: int, S: int) -> _BandEntries:
        """Read the band's slice of every segment, all in one trip to Zarr's event loop."""
        groups = [root[f"segments/{seg['name']}"] for seg in segs]
        rows_all = _get_many([g["rows"] for g in groups])
        spans = [tuple(int(x) for x in np.searchsorted(r, np.array(
            (band * S, band * S + S), dtype=r.dtype))) for r in rows_all]
        cols = _get_many([g["cols"] for g in groups], spans)
        vals = _get_many([g["vals"] for g in groups], spans)
        parts = [(r[lo:hi].copy(), c, v, c // S, seg["seq"])
                 for r, (lo, hi), c, v, seg in zip(rows_all, spans, cols, vals, segs)]
        return cls((frozenset(seg["name"] for seg in segs), band), parts)

    def pair(self, b: int, reset: np.ndarray):
        """The valid entries of column band ``b``."""
        out = []
        for rows, cols, vals, col_band, seq in self.parts:
            sel = np.flatnonzero(col_band == b)
            if sel.size:
                r, c = rows[sel], cols[sel]
                keep = _valid_entries(r, c, seq, reset)
                out.append((r[keep], c[keep], vals[sel][keep]))
        if not out:
            return np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0)
        return tuple(np.concatenate(x) for x in zip(*out))


def _get_many(arrays, spans=None) -> list[np.ndarray]:
    """Read many arrays (or the slices ``spans`` of them) in one trip to Zarr's event loop
    (one synchronous call per array costs a thread hand-off each, see :func:`_put_many`)."""
    sel = [slice(None)] * len(arrays) if spans is None else [slice(lo, hi) for lo, hi in spans]

    async def run():
        return await asyncio.gather(*(a._async_array.getitem(s) for a, s in zip(arrays, sel)))

    return [np.asarray(x) for x in zarr_sync(run())]


def _rewrite_shard(arr, V, S, a, b, entries, *, stale_mask=None, factor=1.0) -> None:
    """Read-modify-write shard ``(a, b)`` of ``arr``: rescale, zero the rows and columns of
    stale slots, then add each ``(rows, cols, vals)`` of ``entries`` and its mirror image where
    they fall in the shard."""
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


def _fold_into(arr, V, S, rows, cols, vals, *, stale, factor) -> None:
    """Read-modify-write the shards of ``arr`` that the entries, stale slots or a rescale touch
    (only those in ``only``, a set of shard keys ``a * G + b``, when given)."""
    G = -(-V // S)
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
        _rewrite_shard(arr, V, S, a, b, [(rows[g], cols[g], vals[g]) for g in groups],
                       stale_mask=stale_mask if stale.size else None, factor=factor)
