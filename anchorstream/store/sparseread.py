"""Reading a committed store version into sparse counts, shard by shard: no ``V × V`` array.

:func:`~anchorstream.store.reading.open_committed` densifies the counts (``8 V²`` bytes: 20 GB at
a capacity of 50,000 words). :func:`open_committed_sparse` reads the same version into a
:class:`~anchorstream.stats.sparse.SparseCooccurrence` instead: one upper base shard at a time
(``shard_size²`` float64, 32 MB with the defaults), keeping the non-zero entries of the active
words, then the valid segment entries; memory is ``O(nnz)``, 12 bytes per stored word pair,
written band by band into arrays grown in place (one copy of the result, one band being
merged, and the live segments, which compaction bounds).
What it reads is exactly what ``open_committed`` densifies (the same eviction, fold and decay
rules; tests/test_store_sparseread.py checks them against each other), which is what the
low-rank refresh (``model.rectify_method: lowrank``) and ``fit --store --rectify-method lowrank``
fit from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import document_pairs_matmul
from anchorstream._kernels.store import store_block_to_csr, store_entries_to_upper_csr
from anchorstream.stats.sparse import (PendingSum, SparseCooccurrence, canonical_csr,
                                       check_upper_counts, csr_add, csr_add_all, csr_moved,
                                       csr_moved_sum, csr_of, csr_sum, probes_agree)
from anchorstream.store.format import StoreState
from anchorstream.store.reading import BaseShards, CommittedState, dense_read_of, plan_catch_up
from anchorstream.store.repository import open_repo, storage_errors
from anchorstream.store.delay import documents_left
from anchorstream.store.segments import EntryReader, probe_vector, read_batches
from anchorstream.store.settings import length_cap
from anchorstream.store.versionhead import read_head
from anchorstream.zarrio import get_all

__all__ = ["catch_up_upper", "open_committed_sparse", "read_version_sparse",
           "sparse_upper"]


def sparse_upper(root, meta, state: StoreState, active: np.ndarray,
                 reset_seq: np.ndarray) -> sp.csr_matrix:
    """The upper triangle of base + valid live segments over ``active`` slots (true, decayed
    values), as CSR over positions in ``active``; reads one upper base shard at a time.

    The same entries as ``reading``'s dense read: base rows and columns of slots reset after
    the last compaction are skipped (in the shards a fold in progress rewrote, those reset up
    to the fold's last checkpoint are kept), and the segments' entries go through
    :class:`~anchorstream.store.segments.EntryReader`.
    """
    forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
    R = forgetting.ring
    n = active.size
    pos = np.full(meta["config"]["capacity"], -1, dtype=np.int64)
    pos[active] = np.arange(n)
    shards = BaseShards(root, meta, state, active, reset_seq)
    # The live segments first, summed: together they are bounded by the store's compaction
    # settings (store.compact_bytes), not by V², and each band takes its rows of them.
    reader = EntryReader(root, reset_seq, forgetting, state.clock, shards.fold)
    segments = _segments_upper(reader, state.live_segments(R), pos, n)
    out = _Rows(n)
    for r0 in shards.starts():
        rall = shards.slots(r0)
        if rall.size == 0:
            continue
        lo = int(pos[rall[0]])
        band = None  # CSR arrays over the band's rall.size rows
        for c0, rsel, csel, block in shards.band(r0, upper=True):
            # Straight from the dense shard to CSR at its exact size; windows and column
            # bands are summed as they come, so a band holds at most two copies of itself.
            piece = store_block_to_csr(np.ascontiguousarray(block, dtype=np.float64),
                                       rsel - r0, csel - c0, pos[rsel] - lo, pos[csel],
                                       rall.size, lo, c0 == r0)
            band = piece if band is None else csr_sum(band, piece)
        if segments is not None:
            rows = _row_views(segments, lo, lo + rall.size)
            band = rows if band is None else csr_sum(band, rows)
        if band is not None:
            out.put(lo, *band)
    return out.csr()


def _row_views(m: sp.csr_matrix, lo: int, hi: int):
    """Rows ``lo:hi`` of ``m`` as CSR arrays ``(int64 indptr, int32 indices, data)``, the last
    two views of ``m``'s (scipy's row slice copies them: 0.06 CPU s a read of mail's 6.9M
    segment pairs)."""
    a, b = int(m.indptr[lo]), int(m.indptr[hi])
    return (m.indptr[lo : hi + 1].astype(np.int64) - a,
            m.indices[a:b].astype(np.int32, copy=False), m.data[a:b])


def _segments_upper(reader: EntryReader, segments, pos: np.ndarray, n: int):
    """The valid entries of ``segments`` summed into one upper-triangle CSR over the ``n``
    active slots (``pos``: each slot's position, -1 for an inactive one, whose entries are not
    read), or None without segments. The segments are read in batches of at most
    :data:`~anchorstream.store.segments.READ_BATCH_BYTES` (their entries' index arrays are a
    read's largest temporaries), each one trip to Zarr's event loop."""
    no_skip = np.zeros(0, dtype=np.bool_)

    def piece(seg, rows, cols, vals, folded, factor):
        # The factor in the values' own type, as EntryReader's entries are scaled.
        return csr_of(store_entries_to_upper_csr(
            rows, cols, vals, seg.seq, reader.reset, no_skip if folded is None else folded,
            pos, n, vals.dtype.type(factor)), (n, n))

    out = None
    for batch in read_batches(segments):
        # A batch's segments, read together, are summed in pairs, then added to the sum so
        # far: that sum is copied once a batch, not once a segment.
        summed = csr_add_all([piece(*stored) for stored in reader.stored_each(batch)])
        out = summed if out is None else csr_add(out, summed)
    return out


class _Rows:
    """A CSR matrix written band by band, in row order, into arrays that grow in place.

    ``ndarray.resize`` reallocates, and a large block is remapped rather than copied (glibc's
    ``realloc`` of an ``mmap``-ed chunk), so assembling the matrix does not hold two copies
    of it, as concatenating the bands (``scipy.sparse.vstack``) does.
    """

    def __init__(self, n: int):
        self.n = n
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        self.indices = np.empty(0, dtype=np.int32)
        self.data = np.empty(0, dtype=np.float64)
        self.nnz = 0
        self.next_row = 0

    def put(self, lo: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> None:
        """Rows ``lo .. lo + len(indptr) - 2``, after every row written so far."""
        rows = indptr.size - 1
        self.indptr[self.next_row + 1 : lo + 1] = self.nnz  # rows skipped: empty
        need = self.nnz + indices.size
        if need > self.indices.size:
            size = max(need, int(self.indices.size * 1.25))
            self.indices.resize(size, refcheck=False)
            self.data.resize(size, refcheck=False)
        self.indices[self.nnz : need] = indices
        self.data[self.nnz : need] = data
        self.indptr[lo + 1 : lo + rows + 1] = indptr[1:] + self.nnz
        self.nnz, self.next_row = need, lo + rows

    def csr(self) -> sp.csr_matrix:
        self.indptr[self.next_row + 1 :] = self.nnz
        self.indices.resize(self.nnz, refcheck=False)
        self.data.resize(self.nnz, refcheck=False)
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=(self.n, self.n))


#: Parts a catch-up's pending sum holds at most (:func:`catch_up_upper`): the read it started
#: from and the segments since, summed into one where more.
MAX_PENDING_PARTS = 4
#: What the segments a catch-up's pending sum holds after its first part may store, as a
#: share of that part's pairs, before the sum is formed: a kept read holds at most 1.25
#: times its pairs.
MAX_PENDING_SHARE = 0.25
#: Catch-ups whose segments a pending sum holds as the documents that made them, their pairs
#: not counted, before those are counted together and added to its first part.
MAX_DOCUMENT_PARTS = 8


def catch_up_upper(root, meta, state: StoreState, active: np.ndarray, reset_seq: np.ndarray,
                   previous: CommittedState | None, *, in_place: bool = False, left=None):
    """``(upper, added)``: the upper triangle of this version from ``previous`` (an earlier
    sparse read of the same store, with its ``dense`` record), reading only the segments
    committed since, as the dense read's catch-up does
    (:func:`~anchorstream.store.reading.plan_catch_up`); ``(None, None)`` when only a full
    read can. ``added`` is what was added to ``previous``'s counts (the upper triangle of the
    segments since) where its words kept their positions and nothing decayed, so that the
    result is ``previous``'s counts plus ``added`` (None otherwise).

    Where so, ``upper`` is that sum not formed (a :class:`~anchorstream.stats.pending.
    PendingSum` of ``previous``'s counts, kept as they are, and the segments since): a warm
    refresh that never uses the entries does not merge every pair with the few that changed
    (:func:`_pending_plus`). With ``in_place`` (a caller that lets ``previous`` go) the
    segments' pairs that ``previous`` stores are added into its counts in place, and only the
    others are a part of their own: where nearly every pair is stored already, the read
    grows by a few pairs, not by the segments. What it adds to ``previous``'s counts
    (checked when they were read) is checked (:func:`~anchorstream.stats.csr.
    check_upper_counts`), so the result needs no check of its own.

    ``left``: the documents that left the store's delay line since ``previous``, ``(H, w)``
    over the active slots (:func:`~anchorstream.store.delay.documents_left`). Where the
    segments since are exactly their pairs (:func:`_documents_made`: each segment's probe
    against the documents'), the segments are not read: ``added`` is those documents' pairs,
    not counted (a :class:`PendingSum` of documents), and the pending sum holds them so
    (:meth:`PendingSum.plus_documents`)."""
    if previous is None or previous.dense is None:
        return None, None
    plan = plan_catch_up(root, meta, state, active, reset_seq, previous.dense,
                         same_slots=False)
    n = active.size
    cooc = previous.cooccurrence
    then = previous.dense.active
    if plan is None or cooc.shape != (then.size, then.size):
        return None, None
    # What was read, at the positions of the slots active now: rows and columns of the slots
    # evicted since are dropped (they start empty). A copy only where something moves.
    to = plan.pos[then]
    if plan.gone.size:
        to = np.where(np.isin(to, plan.gone), -1, to)
    moved = then.size != n or not np.array_equal(to, np.arange(n))
    if not moved and plan.factor == 1.0 and plan.segments and left is not None:
        made = _documents_made(plan, left, active, int(meta["config"]["capacity"]))
        if made is not None:
            return _pending_plus(cooc, made, in_place), made
    # The segments committed since, summed first (their size is bounded by the store's
    # compaction settings, not by V²): the read holds what it read, that sum and the result,
    # not a copy of the whole matrix per segment.
    new = _segments_upper(plan.reader, plan.segments, plan.pos, n)
    if new is not None:
        check_upper_counts(new)  # what was read before was checked then
    if not moved and plan.factor == 1.0:
        if new is None:
            kept = cooc.pending or canonical_csr(sp.csr_matrix(cooc.upper, copy=True))
            return kept, sp.csr_matrix((n, n))
        return _pending_plus(cooc, new, in_place), new
    upper = cooc.upper
    if new is not None and plan.factor != 1.0:  # only what was read decays: scaled with it
        new.data /= plan.factor                  # after the merge
    # Both slot lists are increasing, so `to` is too where kept: the upper triangle stays
    # upper. Moved and summed in one pass where both (csr_moved_sum: 6.5 -> 3.2 ms a catch-up
    # of 370,000 pairs on npm summaries, where words are admitted at every refresh).
    if moved and new is not None:
        upper = csr_moved_sum(upper, to, new)
    elif moved:
        upper = csr_moved(upper, to, n)
    elif new is not None:
        upper = csr_add(upper, new)
    if new is not None and plan.factor == 1.0:
        return upper, None  # the sum is canonical, at its exact size
    if plan.factor != 1.0:
        if upper is cooc.upper:
            upper = upper.copy()
        upper.data *= plan.factor
        check_upper_counts(upper)  # scaled: checked again
    return canonical_csr(sp.csr_matrix(upper, copy=upper is cooc.upper)), None


def _documents_made(plan, left, active: np.ndarray, n_slots: int) -> PendingSum | None:
    """The pairs of the documents ``left`` (``(H, w)`` over the ``active`` slots), not
    counted, where they are the entries of ``plan.segments``: the sum of the segments'
    probes (``S z``, written with each, :func:`~anchorstream.store.segments.segment_probe`)
    within :data:`~anchorstream.stats.sparse.PROBE_RTOL` of the documents' ``D z``
    (:func:`~anchorstream.stats.sparse.probes_agree`; ``O(nnz(H))``, where the segments hold
    ~40 times as many entries). None where not, or where a segment has no probe (written
    before probes were)."""
    H, w = left
    if H.shape[1] != active.size:
        return None
    try:
        probes = get_all(plan.reader.root,
                         [f"segments/{seg.name}/probe" for seg in plan.segments])
    except KeyError:
        return None
    if any(p.shape != (n_slots,) for p in probes):
        return None
    stored = np.sum(probes, axis=0)
    z = probe_vector(n_slots)
    docs = np.zeros(n_slots)
    docs[active] = document_pairs_matmul(H, w, z[active])
    if not probes_agree(stored, docs):
        return None
    return PendingSum.of_documents(H, w)


def _pending_plus(cooc, new, in_place: bool):
    """``cooc``'s counts plus ``new``, not formed: a :class:`PendingSum` whose first part is
    the counts as last formed, the segments of later catch-ups after it (summed into one
    beyond :data:`MAX_PENDING_PARTS`), formed whole once those hold more than
    :data:`MAX_PENDING_SHARE` of its entries: the first part's pairs are merged once per a
    quarter as many entries added, not once a refresh. ``in_place``: ``new``'s entries at
    pairs the first part stores are added into it (:meth:`PendingSum.added_into_first`),
    only the rest is a new part. ``new`` may be a :class:`PendingSum` of documents
    (:func:`_documents_made`): held as documents up to :data:`MAX_DOCUMENT_PARTS` such parts
    (:meth:`PendingSum.plus_documents`), their pairs then counted together and added so."""
    pending = cooc.pending or PendingSum.of(cooc.upper)
    if isinstance(new, PendingSum):  # documents: kept so, up to MAX_DOCUMENT_PARTS
        pending = pending.plus_documents(new, max_documents=MAX_DOCUMENT_PARTS,
                                         max_parts=MAX_PENDING_PARTS, in_place=in_place)
        if pending.n_documents:
            return pending
    else:
        add = pending.added_into_first if in_place else pending.plus
        pending = add(new, max_parts=MAX_PENDING_PARTS)
    first, *later = pending.parts_nnz
    return pending.form() if sum(later) > MAX_PENDING_SHARE * first else pending


def open_committed_sparse(url, version: str | None = None, *,
                          storage_options: Mapping[str, Any] | None = None,
                          previous: CommittedState | None = None,
                          consume_previous: bool = False) -> CommittedState:
    """Read one committed version of a store with sparse counts (the latest by default).

    As :func:`~anchorstream.store.reading.open_committed`, but the ``cooccurrence`` is a
    :class:`~anchorstream.stats.sparse.SparseCooccurrence` read shard by shard, never a dense
    ``V × V`` array (``dense`` records what it is made of, for
    :func:`read_version_sparse`'s catch-up). ``previous``, an earlier read of this store
    by this function, is brought up to the version by reading only the segments committed
    since, where the store allows (:func:`read_version_sparse`); it is left as it was, but
    with ``consume_previous`` (a caller that lets it go), whose counts may be added to in
    place.

    Raises
    ------
    StoreError, StoreFormatError, InputError
        As :func:`~anchorstream.store.reading.open_committed`.
    """
    repo, _ = open_repo(url, storage_options)
    return read_version_sparse(repo, os.fspath(url), version, previous,
                               consume_previous=consume_previous)


def read_version_sparse(repo, where: str, version: str | None,
                        previous: CommittedState | None = None, *,
                        consume_previous: bool = False) -> CommittedState:
    """:func:`open_committed_sparse` of the store in an open ``repo`` (``where`` names it in
    errors): the partitioned read (:func:`anchorstream.store.read_partitions`) reads each
    partition's pinned version so.

    ``previous``, an earlier sparse read of the same store, is brought up to this version by
    adding the segments committed since (:func:`catch_up_upper`) when the store allows;
    otherwise this is a full read. Either way the result's ``dense`` records what its counts
    are made of, for the next catch-up (``previous`` itself is left as it was, unless
    ``consume_previous``: then its counts may be the result's, added to in place)."""
    with storage_errors(f"cannot read store {where!r}"):
        head = read_head(repo, where, version)
        # The documents that left the delay line since, where the words stayed: the
        # segments since may be theirs (catch_up_upper).
        left = (None if previous is None or previous.words != head.words else documents_left(
            previous.waiting, head.waiting, head.state.n_docs_added - previous.n_docs_added))
        upper, added = catch_up_upper(head.root, head.meta, head.state, head.active,
                                      head.reset_seq, previous, in_place=consume_previous,
                                      left=left)
        full = upper is None
        if full:
            upper = sparse_upper(head.root, head.meta, head.state, head.active, head.reset_seq)
    # A catch-up checked the segments it added to a checked read (catch_up_upper).
    cooc = SparseCooccurrence(upper, head.unigram, head.doc_freq, head.num_docs,
                              head.num_tokens, length_cap(head.meta["config"]), check=full)
    return CommittedState(cooc, head.words, head.active, head.offsets, head.snapshot_id,
                          float(head.state.clock), int(head.state.n_docs_added),
                          dense_read_of(head.forgetting, head.state, head.active,
                                        head.reset_seq), head.admission, head.waiting, added,
                          None if added is None else left)
