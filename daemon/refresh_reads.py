"""The refresher's reads of the store, and what it keeps of them between refreshes.

A refresh pins one committed version and reads it (:meth:`RefreshReads.read`): through the
partitioned layout's reader, sparse counts for the low-rank rectifier, or dense counts in the
memory of the last read. Warm, a read catches up from the last one, kept for it: the dense
counts in a buffer reused from refresh to refresh, or the last sparse read while it is at most
``keep_read_max_bytes`` (:func:`~daemon.refresh_inputs.keeps_read`).
:meth:`RefreshReads.word_counts` then takes the modelled words' counts with the documents the
store's delay line holds back, holding at most two copies of the counts (deploy/README.md,
"Resources"). The refresher itself is :mod:`daemon.refresh`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from anchorstream.stats.sparse import upper_matmul_through
from anchorstream.store import open_committed, open_committed_sparse
from anchorstream.store.delay import add_waiting, select_with_waiting
from daemon.refresh_inputs import KEEP_READ_MAX_BYTES, Buffers, keeps_read, subset

__all__ = ["FollowedProduct", "RefreshReads"]


@dataclass(frozen=True, eq=False)
class FollowedProduct:
    """The product of a kept read's counts with the basis a warm update multiplies by.

    ``version`` is the kept read's store version, ``idx`` the words of the fit (positions in
    that read), ``basis`` the fit's ``Z`` (rows ``idx``) and ``counts`` the read's counts over
    ``idx`` times ``basis``: the waiting documents left out, so that the next read, which adds
    the segments committed since to these counts, has its product for the cost of those
    segments' and the waiting documents' (:meth:`RefreshReads.word_counts`)."""

    version: str
    idx: np.ndarray
    basis: np.ndarray
    counts: np.ndarray

    def lift(self, n_words: int) -> np.ndarray:
        """The basis over all ``n_words`` words of the read, zero outside ``idx``."""
        return _lifted(self.basis, self.idx, n_words)


def _lifted(basis: np.ndarray, idx: np.ndarray, n_words: int) -> np.ndarray:
    """``basis`` (rows ``idx``) over ``n_words`` words, zero elsewhere: its products with a
    read's counts, rows ``idx`` taken, are those of the counts of the words ``idx``."""
    out = np.zeros((n_words, basis.shape[1]))
    out[idx] = basis
    return out


class RefreshReads:
    """Reads of one store (or of a partitioned layout, through ``reader``) for a refresher.

    Parameters
    ----------
    store_url : str
    sparse : bool
        Read the counts sparse (the low-rank rectifier: no V x V array).
    warm_start : bool
        Keep what a read needs to catch up from it.
    buffers : daemon.refresh_inputs.Buffers
        The refresher's buffers: dense counts live in ``"counts"`` (and the words' subset of
        them in ``"subset"``), reused by every read.
    reader : callable ``(version, sparse) -> state``, optional
        As for :class:`~daemon.refresh.Refresher`: the partitioned layout's reader, which keeps
        its own reads (``keeps()``, ``kept_bytes()``).
    storage_options : mapping, optional
    keep_read_max_bytes : int or None, default 1 GiB
        Sparse reads up to this size (or 2 V²) are kept for the next (``keeps_read``).

    Attributes
    ----------
    dense : DenseRead or None
        What the ``"counts"`` buffer holds, while it still holds it.
    kept : CommittedState or None
        The last sparse read, kept for the next one to catch up from.
    followed : FollowedProduct or None
        The kept read's counts times the basis the last fit multiplied them by once (a warm
        update's, or the one a cold rectification ends with): the next warm update's product
        is that plus the segments' and the waiting documents' (:meth:`word_counts`), not a
        pass over every pair.
    products_followed : int
        Fits whose one product came from ``followed``.
    segments_through_documents : int
        Of those, the ones whose segments were multiplied through the documents that left the
        delay line (:meth:`word_counts`).
    """

    def __init__(self, store_url: str, *, sparse: bool, warm_start: bool, buffers: Buffers,
                 reader: Callable[..., Any] | None = None,
                 storage_options: Mapping[str, Any] | None = None,
                 keep_read_max_bytes: int | None = KEEP_READ_MAX_BYTES):
        self.store_url = str(store_url)
        self.sparse = bool(sparse)
        self.warm_start = bool(warm_start)
        self.buffers = buffers
        self.reader = reader
        self.storage_options = storage_options
        self.keep_read_max_bytes = keep_read_max_bytes
        self.dense = None
        self.kept = None
        self.followed: FollowedProduct | None = None
        self.products_followed = 0
        self.segments_through_documents = 0
        # (read, idx, counts given, their followed product or None) of the fit under way.
        self._follow = None

    def read(self, version: str | None):
        """The committed state of ``version``: from ``reader``, sparse, or dense in the memory
        of the last read's if the vocabulary fits; warm, that read's counts plus the segments
        committed since (``previous`` / ``since`` of the store's reads)."""
        if self.reader is not None:
            return self.reader(version, sparse=self.sparse)
        if self.sparse:
            # Warm, the last read plus the segments committed since (read_version_sparse's
            # catch-up), kept between refreshes (keeps_read): 12 bytes a stored pair.
            since, self.kept = self.kept, None
            followed, self.followed, self._follow = self.followed, None, None
            # The last read is let go: its counts may become this one's, added to in place.
            st = open_committed_sparse(self.store_url, version,
                                       storage_options=self.storage_options, previous=since,
                                       consume_previous=True)
            keep = keeps_read(st.cooccurrence, self.keep_read_max_bytes)
            self.kept = st if self.warm_start and keep else None
            if (self.kept is not None and followed is not None and st.added is not None
                    and since is not None and followed.version == since.version):
                self.followed = followed  # still the product of what st adds to
            return st
        # Until this read succeeds the buffer's contents are unknown.
        since, self.dense = self.dense, None
        st = open_committed(self.store_url, version, out=self.buffers.held("counts"),
                            since=since if self.warm_start else None,
                            storage_options=self.storage_options)
        self.buffers.adopt("counts", st.cooccurrence.counts)
        # Warm, the fit works on a copy (word_counts), so the counts stay this read's.
        self.dense = st.dense if self.warm_start else None
        return st

    def word_counts(self, st, idx):
        """``(st, counts, kept)``: the read ``st``'s counts of the words ``idx`` with the
        documents its delay line holds back (:func:`select_with_waiting`), ``st`` without
        its counts where nothing else holds them (they go with the caller's old ``st``: two
        copies of the counts at most, deploy/README.md, "Resources"), and the sparse read
        kept for the next refresh, if any."""
        cooc_all = st.cooccurrence
        if not self.sparse:
            # Cold with every word selected, the fit may take the counts' memory itself
            # (not a partitioned reader's: it keeps its sum for the next read).
            share = idx.size == cooc_all.n_words and not (self.warm_start or self.reader)
            out = None if share else self.buffers.get("subset", idx.size ** 2, np.float64)
            return st, add_waiting(subset(cooc_all, idx, out=out), st.waiting, idx), None
        # One new copy beside the read: the subset and its sum with the waiting documents in
        # one pass.
        # A read kept for the next one is held anyway: its sum with the waiting documents is
        # formed only if the fit uses its entries (not a warm update whose product is known).
        cooc = select_with_waiting(cooc_all, idx, st.waiting, pending=self.kept is st)
        keeps = getattr(self.reader, "keeps", lambda: self.reader is not None)
        if self.kept is st:
            self._follow_product(st, idx, cooc)
        if self.kept is st or keeps():
            return st, cooc, cooc_all  # kept for the next read (a partitioned reader's sum)
        return replace(st, cooccurrence=None), cooc, None

    def _follow_product(self, st, idx, cooc) -> None:
        """Give ``cooc`` (the read ``st``'s counts of the words ``idx`` with the waiting
        documents) the product a warm update will ask of it, where :attr:`followed` has it:
        that product plus the segments' ``st`` added to it and the waiting documents', each
        multiplied over the read's words (rows ``idx`` taken after: the basis is zero
        elsewhere); the segments' through the documents that left the delay line since, the
        ones that made them, where the catch-up took those instead of the segments (checked
        against the segments' probes, ``st.added`` is then them) or a probe finds them those
        (:func:`upper_matmul_through`: 500 documents of 100 tokens instead of their 1.9 M
        pairs). Arranges for :meth:`fitted` to follow the product either way."""
        self._follow = (st, np.asarray(idx), cooc, None)
        f = self.followed
        if f is None or not np.array_equal(f.idx, idx):
            return
        lifted = f.lift(st.cooccurrence.n_words)
        # The segments' pairs through the documents that made them, where those are known.
        added, through = upper_matmul_through(st.added, lifted, st.left)
        self.segments_through_documents += through
        counts = f.counts + added[f.idx]
        self._follow = (st, f.idx, cooc, counts)
        if st.waiting is not None:
            counts = counts + st.waiting.counts_product(lifted)[f.idx]
        cooc.known_product = (f.basis, counts)

    def fitted(self, cooc) -> None:
        """After a fit of the counts ``cooc`` that :meth:`word_counts` returned: keep the
        product it multiplied them by once (``cooc.last_product``) for the next read, without
        the waiting documents' part. Where it was the product :meth:`word_counts` gave it,
        that product's part from the kept read; otherwise (a cold rectification, another
        basis) the waiting documents' part is multiplied and taken off."""
        follow, self._follow, self.followed = self._follow, None, None
        last = getattr(cooc, "last_product", None)
        # Not counts the fit changed first (correct_admission), nor a read not kept.
        if follow is None or last is None or follow[2] is not cooc or follow[0] is not self.kept:
            return
        st, idx, _, counts = follow
        basis, product = last
        if basis.shape[0] != idx.size:
            return  # the fit multiplied a subset of the words (active_part)
        known = cooc.known_product
        if counts is not None and known is not None and product is known[1]:
            self.products_followed += 1
        else:
            counts = product
            if st.waiting is not None:
                lifted = _lifted(basis, idx, st.cooccurrence.n_words)
                counts = counts - st.waiting.counts_product(lifted)[idx]
        self.followed = FollowedProduct(st.version, idx, basis, counts)

    def kept_bytes(self) -> int:
        """Memory kept for the next refresh: the dense path's V x V buffers, the last sparse
        read and the product followed from it (two V x (K + 16) arrays), or the partitioned
        reader's reads and their sum."""
        read = 0 if self.kept is None else self.kept.cooccurrence.nbytes
        f = self.followed
        product = 0 if f is None else f.counts.nbytes + f.basis.nbytes + f.idx.nbytes
        reader = getattr(self.reader, "kept_bytes", None)
        return self.buffers.nbytes() + read + product + (0 if reader is None else reader())
