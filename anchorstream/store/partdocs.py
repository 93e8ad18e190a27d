"""Document statistics of the partitioned layout: each partition's, combined over the union.

With a method that reads documents (``ddp``, ``rp``, ``tsvd``;
:mod:`anchorstream.stats.documents`) every partition store keeps that method's statistics with
its counts and offsets, in the same commits. They combine as the counts do:

* the split-document statistic (DDP, RP) and the RP sketch are sums over documents: each
  partition's is moved onto the union's words and added (with a decay in seconds, brought
  from its clock to the latest partition clock first, as the counts are);
* the TSVD reservoir is a weighted sample without replacement that keeps the documents of
  smallest key (Efraimidis and Spirakis): the union's sample is the ``reservoir`` documents of
  smallest key among every partition's sample, which is exactly the sample the same keys
  would give over the union's documents (a document kept over the union is kept in its own
  partition, which holds fewer).

Both need the documents' random draws (split hashes, directions, keys) to be independent
across partitions. Each is a pure function of ``(seed, position)`` and positions restart at
0 in every partition, so every partition store gets a seed of its own,
:func:`partition_seed` of the configured seed and the partition's key; with one seed for all,
document ``i`` of every partition would share its directions and its key.

:func:`read_partition_documents` reads each partition's statistics at the version a
:class:`~anchorstream.store.PartitionedState` pinned, so they match its counts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import zarr

from anchorstream.errors import InputError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.documents import DocStatsSettings, DocumentState, StoredDocuments
from anchorstream.stats.windowpairs import WindowPairs
from anchorstream.stats.wordpatterns import RPSketch, SplitStatistic
from anchorstream.store.delay import with_waiting_windows
from anchorstream.store.format import check_format
from anchorstream.store.partitions import add_by_rows, partition_url
from anchorstream.store.repository import open_repo, pass_through, wrap
from anchorstream.store.settings import length_cap
from anchorstream.zarrio import get_words

__all__ = ["documents_over", "partition_seed", "read_partition_documents"]


def partition_seed(seed: int, key: str) -> int:
    """The document-statistics seed of partition ``key`` (``kafka:<topic>:<p>``) under the
    configured ``seed``: a hash of both, in ``[0, 2**62)``.

    >>> partition_seed(0, "kafka:news:0") != partition_seed(0, "kafka:news:1")
    True
    """
    digest = hashlib.sha256(f"{int(seed)}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "little") % 2**62


def _read_one(url: str, version: str, storage_options, T: float
             ) -> tuple[DocumentState | None, list, float]:
    """One partition's statistics over its active words, those words, and the decay factor
    from its clock to the common time ``T`` (1.0 without decay)."""
    repo, _ = open_repo(url, storage_options)
    try:
        root = zarr.open_group(repo.readonly_session(snapshot_id=version).store, mode="r")
        meta = check_format(root.attrs, url)
        stored = StoredDocuments.read(root, meta["config"])
        if stored is None:
            return None, [], 1.0
        words_all = get_words(root["vocab"], "slot_words")
        clock = float(root.attrs["state"]["clock"])
        active = np.asarray([s for s, w in enumerate(words_all) if w], dtype=np.int64)
        words = [words_all[s] for s in active]
        docs = with_waiting_windows(stored.over(active), root, meta["config"], active,
                                    length_cap(meta["config"]))
    except BaseException as exc:
        pass_through(exc)
        raise wrap(exc, f"cannot read the document statistics of {url!r}") from exc
    factor = Forgetting.from_dict(meta["config"]["forgetting"]).readout(T, clock)
    return docs, words, factor


class _Combined:
    """The union's statistics, one partition's added at a time."""

    def __init__(self, settings: DocStatsSettings, n: int):
        self.settings, self.n = settings, n
        self.since_docs = 0
        self.split = SplitStatistic.zeros(n, settings.seed) if settings.split else None
        self.sketch = (RPSketch.zeros(n, settings.n_projections, settings.seed)
                       if settings.sketch else None)
        self.docs: list[sp.csr_matrix] = []
        self.positions: list[np.ndarray] = []
        self.keys: list[np.ndarray] = []
        self.pairs: list = []  # (rows, cols, vals) of each partition's windows' pairs
        self.windows = np.zeros(2)

    def add(self, d: DocumentState, rows: np.ndarray, factor: float) -> None:
        """Add one partition's statistics (its word ``i`` at ``rows[i]``), the sums decayed
        by ``factor`` to the common time (reservoir keys need nothing: a document's key holds
        its absolute timestamp)."""
        keep = np.flatnonzero(rows >= 0)
        r = rows[keep]
        self.since_docs += d.since_docs
        if self.split is not None and d.split is not None:
            s, t = d.split, self.split
            add_by_rows(t.cross, s.cross, rows, scale=factor)
            for name in ("mass_first", "mass_second", "doc_freq"):
                getattr(t, name)[r] += factor * getattr(s, name)[keep]
            t.num_docs += factor * s.num_docs if factor != 1.0 else s.num_docs
        if self.sketch is not None and d.sketch is not None:
            s, t = d.sketch, self.sketch
            t.projections[:, r] += factor * s.projections[:, keep]
            t.mass[r] += factor * s.mass[keep]
            t.doc_freq[r] += factor * s.doc_freq[keep]
            t.num_docs += factor * s.num_docs if factor != 1.0 else s.num_docs
        if d.window_pairs is not None:
            u = d.window_pairs.upper.tocoo()
            pr, pc = rows[u.row], rows[u.col]
            ok = (pr >= 0) & (pc >= 0)
            self.pairs.append((pr[ok], pc[ok], factor * u.data[ok]))
            self.windows += factor * np.array([d.window_pairs.num_docs,
                                               d.window_pairs.num_tokens])
        if d.documents is not None:
            m = d.documents.tocoo()
            cols = rows[m.col]
            ok = cols >= 0
            self.docs.append(sp.csr_matrix((m.data[ok], (m.row[ok], cols[ok])),
                                           shape=(m.shape[0], self.n)))
            self.positions.append(np.asarray(d.positions, np.int64))
            self.keys.append(np.asarray(d.keys, np.float64))

    def state(self) -> DocumentState:
        documents = positions = keys = None
        if self.settings.reservoir:
            docs = sp.vstack(self.docs, format="csr") if self.docs else sp.csr_matrix(
                (0, self.n))
            keys = np.concatenate(self.keys) if self.keys else np.empty(0)
            positions = (np.concatenate(self.positions) if self.positions
                         else np.empty(0, np.int64))
            # The reservoir's documents of smallest key, among those left with a kept word.
            nonempty = np.flatnonzero(np.diff(docs.indptr) > 0)
            chosen = nonempty[np.argsort(keys[nonempty], kind="stable")
                              [: self.settings.reservoir]]
            chosen.sort()
            documents, positions, keys = docs[chosen], positions[chosen], keys[chosen]
        pairs = None
        if self.settings.pair_window:
            entries = [np.concatenate([p[i] for p in self.pairs]) if self.pairs
                       else np.empty(0) for i in range(3)]
            pairs = WindowPairs.from_entries(*entries, self.n, self.windows)
        return DocumentState(self.settings, int(self.since_docs), self.split, self.sketch,
                             documents, positions, keys, pairs)


def read_partition_documents(root, state, settings: DocStatsSettings | None, *,
                             storage_options: Mapping[str, Any] | None = None
                             ) -> DocumentState | None:
    """The document statistics of every partition at the versions ``state`` pinned, combined
    over ``state.words`` (see module notes).

    Parameters
    ----------
    root : str or path-like
        The partitioned store's root.
    state : PartitionedState
        A summed read (:func:`~anchorstream.store.read_partitions` or a
        :class:`~anchorstream.store.partread.PartitionReader`'s): its ``partitions`` name each
        partition's version, its ``words`` the union's order.
    settings : DocStatsSettings or None
        The configured statistics (with the configured seed; each partition's store has its
        :func:`partition_seed`); None: whatever the partitions keep, if they all keep the same
        (``fit --store`` reading the windows' pairs of a partitioned root).
    storage_options : mapping, optional
        As for :func:`anchorstream.store.open_committed`.

    Returns
    -------
    DocumentState or None
        None while a partition with commits keeps no statistics (or other ones) yet. Its
        ``since_docs`` is the partitions' sum, its reservoir rows are ordered by partition
        then position (``positions`` are each partition's own).

    Raises
    ------
    StoreError
        If a store cannot be read.
    """
    index = {w: i for i, w in enumerate(state.words)}
    total = None if settings is None else _Combined(settings, len(index))
    for key, entry in sorted(state.partitions.items()):
        if entry.get("version") is None:
            continue
        topic, _, p = key.removeprefix("kafka:").rpartition(":")
        docs, words, factor = _read_one(partition_url(root, topic, int(p)), entry["version"],
                                        storage_options, float(state.clock))
        if docs is None:
            return None
        if total is None:  # the first partition's settings, the configured seed left at 0
            settings = replace(docs.settings, seed=0)
            total = _Combined(settings, len(index))
        if replace(docs.settings, seed=settings.seed) != settings:
            return None
        total.add(docs, np.asarray([index.get(w, -1) for w in words], dtype=np.int64), factor)
    return None if total is None else total.state()


def documents_over(docs: DocumentState, idx: np.ndarray) -> DocumentState:
    """``docs`` over the words ``idx`` (positions in its words), in that order; reservoir
    documents left with none of them are dropped."""
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size != np.unique(idx).size:
        raise InputError("documents_over needs distinct word positions")
    split = sketch = None
    if docs.split is not None:
        s = docs.split
        split = SplitStatistic(s.cross[np.ix_(idx, idx)], s.mass_first[idx], s.mass_second[idx],
                               s.doc_freq[idx], s.num_docs, s.seed)
    if docs.sketch is not None:
        s = docs.sketch
        sketch = RPSketch(s.projections[:, idx], s.mass[idx], s.doc_freq[idx], s.num_docs,
                          s.seed)
    documents, positions, keys = docs.documents, docs.positions, docs.keys
    if documents is not None:
        documents = documents[:, idx].tocsr()
        nonempty = np.flatnonzero(np.diff(documents.indptr) > 0)
        documents, positions = documents[nonempty], positions[nonempty]
        keys = None if keys is None else keys[nonempty]
    pairs = None if docs.window_pairs is None else docs.window_pairs.subset(idx)
    return DocumentState(docs.settings, docs.since_docs, split, sketch, documents, positions,
                         keys, pairs)
