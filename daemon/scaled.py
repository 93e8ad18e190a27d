"""The parts of the scaled-out daemon (``store.layout: partitioned``; docs/daemon.md,
"Scaling out").

* :class:`TopicPartitions` — every partition of the consumed topics, from the brokers'
  metadata (a client outside the consumer group): what the refresher sums.
* :func:`partitioned_reader` — the refresher's reader: pin every partition store's head and
  sum them (:class:`anchorstream.store.partread.PartitionReader`: only the partitions that
  moved since the last refresh are read, from their new segments), at most
  ``vocab.capacity`` words; sparse counts for the low-rank refresh
  (``model.rectify_method: lowrank``). Its ``documents(state, idx)`` combines every
  partition's document statistics (``ddp``, ``rp``, ``tsvd``) at the same versions
  (:mod:`anchorstream.store.partdocs`).
* :class:`PartitionWatcher` — for ``--role refresh``, which has no ingest loop to tell it
  about checkpoints: counts the documents committed to the partition stores every few seconds
  and notifies the refresher.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from anchorstream.stats.documents import DocStatsSettings
from anchorstream.store import committed_docs
from anchorstream.store.partdocs import documents_over, read_partition_documents
from anchorstream.store.partread import PartitionReader
from daemon.settings import Config

__all__ = ["PartitionWatcher", "TopicPartitions", "partitioned_reader"]

log = logging.getLogger("anchorstream.daemon")


class TopicPartitions:
    """``{(topic, partition)}`` of the consumed topics, asked of the brokers.

    The answer is cached for ``max_age`` seconds; while the brokers cannot be reached the
    last answer is used (None before the first one).
    """

    def __init__(self, cfg: Config, bootstrap_servers=None, *, max_age: float = 30.0):
        self.cfg = cfg
        self.bootstrap_servers = bootstrap_servers
        self.max_age = float(max_age)
        self._consumer = None
        self._known: set[tuple[str, int]] | None = None
        self._at = -float("inf")
        self._lock = threading.Lock()

    def __call__(self) -> set[tuple[str, int]] | None:
        with self._lock:
            if time.monotonic() - self._at < self.max_age and self._known:
                return set(self._known)
            try:
                self._known = self._ask()
                self._at = time.monotonic()
            except Exception as exc:  # noqa: BLE001 - keep the last answer during an outage
                log.warning("cannot list the partitions of %s: %s", list(self.cfg.kafka.topics),
                            exc)
            return None if self._known is None else set(self._known)

    def _ask(self) -> set[tuple[str, int]]:
        from daemon.kafka.client import KafkaConsumer, client_settings, create_client

        if self._consumer is None:
            self._consumer = create_client(
                KafkaConsumer, client_settings(self.cfg.kafka, self.bootstrap_servers))
        out = set()
        for topic in self.cfg.kafka.topics:
            parts = self._consumer.partitions_for_topic(topic)
            if not parts:
                raise LookupError(f"no partitions known for topic {topic!r}")
            out |= {(topic, int(p)) for p in parts}
        return out

    def close(self) -> None:
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None


def partitioned_reader(cfg: Config, partitions: Callable[[], set | None]):
    """The refresher's reader over every partition store (see module notes): a
    :class:`~anchorstream.store.partread.PartitionReader` kept between refreshes, so each
    refresh reads only the partitions whose head moved, from their new segments."""
    readers: dict[bool, PartitionReader] = {}

    def read(version=None, sparse=False):
        # A partitioned read pins every head now (``version`` names no single store);
        # ``sparse`` (the low-rank refresh) sums sparse counts, no V x V array.
        parts = partitions()
        if parts is None:
            raise RuntimeError("the partitions of the consumed topics are not known yet "
                               "(no broker answered)")
        if sparse not in readers:
            readers.clear()  # one kind of read at a time: the other's memory goes
            readers[sparse] = PartitionReader(cfg.store.path, max_words=cfg.vocab.capacity,
                                              storage_options=cfg.store.storage_kwargs(),
                                              sparse=sparse, max_kept_bytes=(
                                                  cfg.refresh.partition_reads_max_bytes))
        return readers[sparse].read(parts)

    settings = DocStatsSettings.for_method(**cfg.model.document_stats_kwargs())

    def documents(st, idx):
        # Every partition's statistics at the versions ``st`` pinned, over its words ``idx``.
        docs = read_partition_documents(cfg.store.path, st, settings,
                                        storage_options=cfg.store.storage_kwargs())
        return None if docs is None else documents_over(docs, idx)

    read.documents = documents
    # Whether the last read's sum stays the reader's (kept for the next read): if not, the
    # refresher lets go of it as of its own reads.
    read.keeps = lambda: any(r.last.get("kept", False) for r in readers.values())
    read.kept_bytes = lambda: sum(r.kept_bytes() for r in readers.values())
    return read


@dataclass(frozen=True)
class _Committed:
    n_docs: int


class PartitionWatcher:
    """Notify ``refresher`` of the documents committed to the partition stores, every
    ``every`` seconds, in a thread of its own."""

    def __init__(self, cfg: Config, partitions: Callable[[], set | None], refresher, *,
                 every: float = 2.0):
        self.cfg = cfg
        self.partitions = partitions
        self.refresher = refresher
        self.every = float(every)
        self.committed = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> int:
        parts = self.partitions()
        if parts:
            self.committed = committed_docs(self.cfg.store.path, parts,
                                            storage_options=self.cfg.store.storage_kwargs())
            self.refresher.notify(_Committed(self.committed))
        return self.committed

    def start(self) -> PartitionWatcher:
        def run():
            while not self._stop.is_set():
                try:
                    self.check()
                except Exception:  # noqa: BLE001 - retried at the next tick
                    log.warning("cannot count the committed documents", exc_info=True)
                self._stop.wait(self.every)

        self._thread = threading.Thread(target=run, name="anchorstream-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
