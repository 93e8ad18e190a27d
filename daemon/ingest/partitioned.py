"""Ingest into the partitioned layout: one store per Kafka partition this instance owns.

:class:`PartitionedIngestLoop` is the :class:`daemon.ingest.loop.IngestLoop` of
``store.layout: partitioned`` (``anchorstream run --role ingest``, and ``--role all`` with that
layout). The consumer group decides which partitions an instance owns; the instance keeps one
:class:`anchorstream.store.CooccurrenceStore` per owned partition, at
:func:`anchorstream.store.partition_url`, holding that partition's counts, vocabulary and
offset (and nothing else). :class:`PartitionStores` shows them to the loop as one store:
``add`` routes documents by partition, ``checkpoint`` commits every partition store that has
something new with that partition's offset, in a commit of its own.

Ownership moves (docs/daemon.md, "Scaling out"):

* **Assigned** (``offsets_for``, in the polling thread): the partition's store is opened at its
  branch head and the source seeks to the offset stored there. A partition this instance
  still holds open (revoked and given back) is kept, with its uncommitted work, only when no
  one committed to it meanwhile; otherwise it is reopened and its delivered position
  forgotten, so the source seeks to the stored offset.
* **Revoked** (seen at the next step): the partition's pending work is checkpointed if that
  is still possible, then the store is closed. If the new owner committed first, the
  checkpoint is fenced and the work dropped; the new owner reads those records again.
* **Fenced** (a checkpoint raises :class:`anchorstream.errors.StoreConflictError`: another
  instance committed to the partition since this one's version): nothing is rebased. The
  in-memory work of that partition is dropped, its store reopened at the head, and the
  source told to seek the partition to the offset stored there.

Every partition store commits only on top of the version its writer started from, so each
commit extends exactly the state whose offsets it resumed from: every record counts once,
whichever instance counted it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from anchorstream.errors import StoreConflictError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.store import CooccurrenceStore, partition_url
from daemon.ingest.loop import IngestLoop
from daemon.ingest.source import TOPIC_IDS_KEY, offset_key, parse_offset_key

__all__ = ["PartitionStores", "PartitionedIngestLoop"]

log = logging.getLogger("anchorstream.loop")


class _Vocabularies:
    """The owned partitions' vocabularies, read as one (the loop's gauges)."""

    def __init__(self, stores: dict[str, CooccurrenceStore]):
        self._stores = stores

    @property
    def admitted_total(self) -> int:
        return sum(s.vocabulary.admitted_total for s in self._stores.values())

    @property
    def evicted_total(self) -> int:
        return sum(s.vocabulary.evicted_total for s in self._stores.values())

    def __len__(self) -> int:
        return sum(len(s.vocabulary) for s in self._stores.values())


class PartitionStores:
    """The partition stores one instance owns, with the interface the ingest loop uses.

    Parameters
    ----------
    root : str
        ``store.path``: the partitioned layout's root (path or URL).
    opener : callable ``url -> CooccurrenceStore``
        Opens (or creates) one partition's store with the configured settings.
    forgetting : Forgetting, optional
        The stores' forgetting (none, or a decay in seconds).
    """

    def __init__(self, root: str, opener: Callable[[str], CooccurrenceStore], *,
                 forgetting: Forgetting | None = None):
        self.url = str(root)
        #: The stores' forgetting: none, or a decay in seconds (daemon.settings.rules); the
        #: loop passes the documents' timestamps with the latter.
        self.forgetting = forgetting or Forgetting()
        self._opener = opener
        self.stores: dict[str, CooccurrenceStore] = {}
        self.vocabulary = _Vocabularies(self.stores)
        #: Called with the key of a partition whose checkpoint was fenced, after its store
        #: was reopened (the loop repositions the source).
        self.on_fenced: Callable[[str], None] | None = None
        self.fenced = 0

    # -- ownership
    def open(self, key: str) -> CooccurrenceStore:
        """(Re)open the store of partition ``key`` at its branch head."""
        topic, partition = parse_offset_key(key)
        store = self._opener(partition_url(self.url, topic, partition))
        self.stores[key] = store
        return store

    def close(self, key: str) -> None:
        """Stop holding partition ``key`` (its uncommitted work is dropped)."""
        self.stores.pop(key, None)

    # -- the store interface of IngestLoop
    @property
    def offsets(self) -> dict:
        out: dict = {}
        for store in self.stores.values():
            out.update(store.offsets)
        return out

    @property
    def version(self) -> str:
        pins = sorted((k, s.version) for k, s in self.stores.items())
        return "p" + hashlib.sha256(repr(pins).encode()).hexdigest()[:24]

    @property
    def n_docs_added(self) -> int:
        return sum(s.n_docs_added for s in self.stores.values())

    @property
    def pending_docs(self) -> int:
        return sum(s.pending_docs for s in self.stores.values())

    @property
    def has_pending(self) -> bool:
        return any(s.has_pending for s in self.stores.values())

    @property
    def needs_checkpoint(self) -> bool:
        return any(s.needs_checkpoint for s in list(self.stores.values()))

    @property
    def pending_bytes(self) -> int:
        return sum(s.pending_bytes for s in list(self.stores.values()))

    @property
    def documents_waiting(self) -> int:
        return sum(s.documents_waiting for s in list(self.stores.values()))

    def flush_delayed(self) -> int:
        return sum(s.flush_delayed() for s in list(self.stores.values()))

    @property
    def last_checkpoint_seconds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.stores.values():
            for k, v in s.last_checkpoint_seconds.items():
                out[k] = out.get(k, 0.0) + v
        return out

    def disk_bytes(self) -> int:
        return sum(s.disk_bytes() for s in list(self.stores.values()))

    def add_routed(self, key: str, docs: list, timestamps=None) -> np.ndarray:
        """Add documents of partition ``key`` (none if it is not held any more); which of
        them its store skipped as repeats (:attr:`CooccurrenceStore.last_repeats`)."""
        store = self.stores.get(key)
        if store is None:
            return np.zeros(len(docs), dtype=bool)
        store.add(docs, timestamps)
        return store.last_repeats

    def checkpoint(self, offsets, *, metadata=None) -> str:
        """Checkpoint every held partition with its own offset (and the topics' ids).

        A fenced partition is reopened and reported to :attr:`on_fenced`; the others go on.
        Any other :class:`StoreError` is raised after the partitions before it committed
        (committing those again is a no-op).
        """
        ids = offsets.get(TOPIC_IDS_KEY)
        for key in sorted(self.stores):
            store = self.stores[key]
            own: dict[str, Any] = {}
            if key in offsets:
                own[key] = offsets[key]
            topic = parse_offset_key(key)[0]
            if ids and topic in ids:
                own[TOPIC_IDS_KEY] = {topic: ids[topic]}
            try:
                store.checkpoint(own, metadata=metadata)
            except StoreConflictError as exc:
                self.fenced += 1
                log.warning("%s: another instance committed to this partition; dropping this "
                            "instance's uncommitted work and resuming from the stored state "
                            "(%s)", key, exc)
                self.open(key)
                if self.on_fenced is not None:
                    self.on_fenced(key)
        return self.version


class PartitionedIngestLoop(IngestLoop):
    """The ingest loop over :class:`PartitionStores` (see the module notes)."""

    def __init__(self, stores: PartitionStores, source=None, **kwargs):
        super().__init__(stores, source, **kwargs)
        stores.on_fenced = self._fenced

    # -- ownership (polling thread)
    def offsets_for(self, topic: str, partition: int) -> int | None:
        """Open (or keep) the partition's store; the offset stored with it."""
        key = offset_key(topic, partition)
        store = self.store.stores.get(key)
        if store is not None and not store.is_stale():
            log.debug("%s: held already and no one committed since: keeping its state", key)
        else:
            if store is not None:
                log.info("%s: assigned again after another instance committed: reloading", key)
            store = self.store.open(key)
            self._reset_position(key)
        stored_ids = store.offsets.get(TOPIC_IDS_KEY) or {}
        current = None if self.source is None else self.source.topic_id(topic)
        if stored_ids.get(topic) not in (None, current) and current is not None:
            log.warning("topic %r was recreated since partition %d's last checkpoint (id %s -> "
                        "%s): reading it from the beginning", topic, partition,
                        stored_ids.get(topic), current)
            self._positions[key] = 0
            self._dirty_offsets = True
            return None
        value = store.offsets.get(key)
        return None if value is None else int(value)

    def _reset_position(self, key: str) -> None:
        """Positions of ``key`` come from its store again (memory of it was dropped)."""
        stored = self.store.stores[key].offsets.get(key) if key in self.store.stores else None
        if stored is None:
            self._positions.pop(key, None)
        else:
            self._positions[key] = int(stored)
        if self.source is not None and hasattr(self.source, "forget_delivered"):
            self.source.forget_delivered(*parse_offset_key(key))

    def _fenced(self, key: str) -> None:
        """A checkpoint of ``key`` was fenced: its store was reopened; seek to its offset."""
        self._reset_position(key)
        if self.metrics is not None:
            self.metrics.partitions_fenced.inc()
        if self.source is not None and hasattr(self.source, "reposition"):
            self.source.reposition(*parse_offset_key(key))

    def release_revoked(self) -> None:
        """Checkpoint (if still possible) and close the partitions no longer assigned."""
        if self.source is None or not hasattr(self.source, "assignment"):
            return
        assigned = {offset_key(t, p) for t, p in self.source.assignment()}
        gone = [k for k in self.store.stores if k not in assigned]
        if not gone:
            return
        for key in gone:
            store = self.store.stores[key]
            try:
                if store.has_pending or self._positions.get(key) != store.offsets.get(key):
                    store.checkpoint({key: self._positions[key]} if key in self._positions
                                     else {})
            except Exception as exc:  # noqa: BLE001 - the new owner reads those records again
                log.info("%s: revoked; its uncommitted work is dropped (%s)", key, exc)
            self.store.close(key)
            self._positions.pop(key, None)
            if hasattr(self.source, "forget_delivered"):
                self.source.forget_delivered(*parse_offset_key(key))
            log.info("%s: revoked and released", key)

    # -- the loop
    def step(self) -> int:
        self.release_revoked()
        return super().step()

    def add_documents(self, docs: Sequence, stamps: Sequence, keys: Sequence[str]) -> np.ndarray:
        """Route each document to its partition's store; which were skipped as repeats (each
        partition's store remembers its own documents)."""
        by_key: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            by_key.setdefault(key, []).append(i)
        repeats = np.zeros(len(docs), dtype=bool)
        for key, idx in by_key.items():
            repeats[idx] = self.store.add_routed(
                key, [docs[i] for i in idx], [stamps[i] for i in idx] if self._seconds else None)
        return repeats
