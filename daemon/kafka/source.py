"""Kafka in: the document consumer (producers: :mod:`daemon.kafka.producers`; clients:
:mod:`daemon.kafka.client`).

:class:`KafkaSource` wraps a kafka-python ``KafkaConsumer`` in a consumer group. Raw bytes in
(decoding is the caller's), the store's checkpoint decides where each partition starts (seeks
happen in the polling thread), memory is bounded per fetch and per batch, an unreadable batch
is skipped once, broker outages are survived and probed, lag is cached for the metrics thread.
The reasons for each of these: docs/daemon.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from daemon.ingest.source import kafka_position
from daemon.kafka import batches
from daemon.kafka.batches import UndecodableBatch
from daemon.kafka.client import (
    Backoff,
    ConsumerRebalanceListener,
    KafkaConfigurationError,
    KafkaConsumer,
    KafkaError,
    OffsetAndMetadata,
    SourceError,
    TopicPartition,
    consumer_settings,
    create_client,
)
from daemon.kafka.mends import (
    close_client,
    end_offsets,
    finish_join,
    forbid_auto_create,
    metadata_topic_id,
    unknown_topics,
)
from daemon.settings import KafkaConfig

__all__ = ["KafkaSource", "SourceError", "SourceRecord"]

log = logging.getLogger("anchorstream.source")

OffsetsFor = Callable[[str, int], "int | None"]


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """One Kafka message, undecoded."""

    topic: str
    partition: int
    offset: int
    value: bytes | None
    key: bytes | None = None
    timestamp: int | None = None  # milliseconds since the epoch, as the producer/broker set it
    headers: tuple[tuple[str, bytes], ...] = ()


class _Listener(ConsumerRebalanceListener):
    """Runs on kafka-python's I/O thread: only pauses and records, see the module docstring."""

    def __init__(self, source: KafkaSource):
        self._source = source

    def on_partitions_revoked(self, revoked):
        self._source._revoked(revoked)

    def on_partitions_assigned(self, assigned):
        self._source._assigned(assigned)


class KafkaSource:
    """A consumer-group member delivering raw records, positioned by the store's offsets.

    Parameters
    ----------
    config : KafkaConfig
    offsets_for : callable ``(topic, partition) -> int | None``, optional
        Next offset to read for a partition according to the store's last checkpoint; None
        (or no callable) means ``config.auto_offset_reset``. Called in the polling thread.
    on_topic_reset : callable ``(topic) -> None``, optional
        Called (in the polling thread) when a topic was deleted and created again under the same
        name (its topic id changed, e.g. a memory-backed broker restarted): its partitions are
        read again from the beginning and their offsets restart, so the caller must track
        "next offset = last delivered + 1" per partition, not a maximum.
    bootstrap_servers : str or list of str, optional
        Overrides ``config.bootstrap_servers`` (e.g. the embedded broker's address).
    consumer_factory : callable, default KafkaConsumer
        ``factory(**settings)``; injectable for tests of the retry path.
    lag_refresh_seconds : float, default 5
        How often ``end_offsets`` is asked (the fetch high watermark is used in between); this
        request is also the probe that tells whether the broker answers.
    max_batch_bytes : int, optional
        Largest decompressed record batch; a larger one is skipped (``batch_too_large``).
        None: no bound.
    on_skip : callable ``(UndecodableBatch) -> None``, optional
        Called in the polling thread for each skipped batch, after the records polled before
        it were returned (at the start of the next :meth:`poll_batch`, or in the same call when
        it returns nothing else), so that offsets only move forward.
    on_error : callable ``(kind) -> None``, optional
        Called for every error met while consuming: ``connect`` (no consumer could be
        created), ``poll`` (a Kafka error escaped ``poll``), ``probe`` (the broker did not
        answer the end-offsets request), or a skipped batch's kind (:data:`daemon.kafka.batches.KINDS`).
    clock : callable, default time.monotonic
    """

    def __init__(self, config: KafkaConfig, *, offsets_for: OffsetsFor | None = None,
                 on_topic_reset: Callable[[str], None] | None = None,
                 bootstrap_servers: str | list[str] | None = None,
                 consumer_factory: Callable[..., KafkaConsumer] = KafkaConsumer,
                 lag_refresh_seconds: float = 5.0, max_batch_bytes: int | None = None,
                 on_skip: Callable[[UndecodableBatch], None] | None = None,
                 on_error: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        batches.install()
        self.config = config
        self.offsets_for = offsets_for
        self.on_topic_reset = on_topic_reset
        self.on_skip = on_skip
        self.on_error = on_error
        self.max_batch_bytes = None if max_batch_bytes is None else int(max_batch_bytes)
        self._clock = clock
        self._settings = consumer_settings(config, bootstrap_servers)
        self._factory = consumer_factory
        self._consumer: KafkaConsumer | None = None
        self._backoff = Backoff(config.reconnect_backoff_ms / 1000,
                                config.reconnect_backoff_max_ms / 1000)
        self._retry_at = 0.0
        self._lock = threading.Lock()  # guards _pending and _assigned_set (listener thread)
        self._pending: set[TopicPartition] = set()
        self._assigned_set: set[TopicPartition] = set()
        self._delivered: dict[tuple[str, int], int] = {}
        self._highwater: dict[tuple[str, int], int] = {}
        self._end: dict[tuple[str, int], int] = {}
        self._lag: dict[tuple[str, int], int] = {}
        self._lag_refresh = float(lag_refresh_seconds)
        self._next_end_refresh = 0.0
        self._topic_ids: dict[str, Any] = {}
        self._reset_topics: set[str] = set()
        self._fatal: BaseException | None = None
        self.last_error: str | None = None
        self.errors = 0
        #: Skipped batches by kind (see :data:`daemon.kafka.batches.KINDS`).
        self.skipped: Counter[str] = Counter()
        self._skips: list[UndecodableBatch] = []
        #: Clock time (``clock()``) this source was created.
        self.started = clock()
        #: ``clock()`` of the last poll that delivered records (None before the first).
        self.last_delivery: float | None = None
        #: ``clock()`` of the last delivery or skip (``started`` before any).
        self.last_progress = self.started
        #: ``clock()`` of the last answer from the broker (None before the first).
        self.last_contact: float | None = None
        #: ``clock()`` and ``time.time()`` of the first failure of the current outage, else None.
        self.unreachable_since: float | None = None
        self.unreachable_since_wall: float | None = None
        #: Subscribed topics the broker had no metadata for at the last two probes.
        self.missing_topics: frozenset[str] = frozenset()
        self._unknown: frozenset[str] = frozenset()
        self._closed = False

    # ----------------------------------------------------------------------------------------
    # connection

    def _connect(self) -> KafkaConsumer | None:
        if self._consumer is not None:
            return self._consumer
        if time.monotonic() < self._retry_at:
            return None
        try:
            consumer = create_client(self._factory, self._settings)
        except KafkaConfigurationError as exc:
            raise SourceError(f"invalid Kafka client settings: {exc}") from exc
        except (KafkaError, OSError) as exc:
            self._note_error("connect", exc)
            return None
        forbid_auto_create(consumer, self._settings["allow_auto_create_topics"])
        consumer.subscribe(list(self.config.topics), listener=_Listener(self))
        self._consumer = consumer
        self._backoff.reset()
        self._answered()  # creating a consumer bootstraps: the broker answered
        log.info("consuming %s as group %r from %s", ", ".join(self.config.topics),
                 self.config.group_id, self._settings["bootstrap_servers"])
        return consumer

    @property
    def bootstrap_servers(self) -> str:
        """The brokers this source talks to, as text (for messages)."""
        servers = self._settings["bootstrap_servers"]
        return servers if isinstance(servers, str) else ",".join(servers)

    def _count_error(self, kind: str) -> None:
        self.errors += 1
        if self.on_error is not None:
            try:
                self.on_error(kind)
            except Exception:  # noqa: BLE001 - a metrics hook must not stop consuming
                log.debug("on_error hook failed", exc_info=True)

    def _unreachable(self, kind: str, exc: BaseException) -> None:
        """The broker did not answer: count it; log the first failure of an outage only."""
        self._count_error(kind)
        self.last_error = f"{type(exc).__name__}: {exc}"
        if self.unreachable_since is None:
            self.unreachable_since, self.unreachable_since_wall = self._clock(), time.time()
            log.warning("Kafka at %s is not answering (%s: %s); retrying until it does",
                        self.bootstrap_servers, kind, self.last_error)
        else:
            log.debug("Kafka at %s still not answering (%s: %s)", self.bootstrap_servers, kind,
                      self.last_error)

    def _answered(self) -> None:
        now = self._clock()
        if self.unreachable_since is not None:
            log.warning("Kafka at %s answers again after %.0f s", self.bootstrap_servers,
                        now - self.unreachable_since)
        self.unreachable_since = self.unreachable_since_wall = None
        self.last_error = None
        self.last_contact = now

    def _note_error(self, where: str, exc: BaseException) -> None:
        self._unreachable(where, exc)
        delay = self._backoff.next()
        self._retry_at = time.monotonic() + delay
        log.debug("kafka %s failed; retrying in %.1f s", where, delay)

    @property
    def connected(self) -> bool:
        """Whether a consumer exists and the broker answered its last request.

        kafka-python hides outages inside ``poll`` (it reconnects and returns nothing); the
        periodic end-offsets probe notices them within ``lag_refresh_seconds`` plus its
        2-second timeout.
        """
        return self._consumer is not None and self.unreachable_since is None

    def lag_age(self) -> float:
        """Seconds since the broker last answered (since this source started, before that).

        The lag of :meth:`lag` is as old as this: it keeps its last value during an outage.
        """
        last = self.last_contact if self.last_contact is not None else self.started
        return max(self._clock() - last, 0.0)

    # ----------------------------------------------------------------------------------------
    # listener side (kafka-python's I/O thread)

    def _assigned(self, partitions) -> None:
        consumer = self._consumer
        with self._lock:
            self._pending |= set(partitions)
            self._assigned_set |= set(partitions)
        if consumer is not None and partitions:
            # Nothing is fetched from these until poll_batch has sought them.
            consumer.pause(*partitions)
        log.info("assigned %s", sorted((tp.topic, tp.partition) for tp in partitions))

    def _revoked(self, partitions) -> None:
        with self._lock:
            self._pending -= set(partitions)
            self._assigned_set -= set(partitions)
        if partitions:
            log.info("revoked %s", sorted((tp.topic, tp.partition) for tp in partitions))

    # ----------------------------------------------------------------------------------------
    # polling thread

    def _position_pending(self, consumer: KafkaConsumer) -> set[TopicPartition]:
        with self._lock:
            pending, self._pending = self._pending, set()
            current = set(self._assigned_set)
        pending &= current
        for tp in sorted(pending):
            key = (tp.topic, tp.partition)
            try:
                # After a topic reset the store's offsets belong to the topic's previous life.
                use_store = self.offsets_for is not None and tp.topic not in self._reset_topics
                stored = self.offsets_for(tp.topic, tp.partition) if use_store else None
            except Exception as exc:  # noqa: BLE001 - any failure here means a broken store
                self._fatal = SourceError(
                    f"cannot read the stored offset of {tp.topic}[{tp.partition}]: {exc}")
                self._fatal.__cause__ = exc
                raise self._fatal from exc
            candidates = [o for o in (stored, self._delivered.get(key)) if o is not None]
            if candidates:
                target = max(int(o) for o in candidates)
                consumer.seek(tp, target)
                log.info("%s[%d]: starting at offset %d (stored %s)", tp.topic, tp.partition,
                         target, stored)
            elif self.config.auto_offset_reset == "earliest":
                consumer.seek_to_beginning(tp)
                log.info("%s[%d]: no stored offset, starting at the beginning", *key)
            else:
                consumer.seek_to_end(tp)
                log.info("%s[%d]: no stored offset, starting at the end", *key)
        if pending:
            consumer.resume(*pending)
        return pending

    def poll_batch(self, max_records: int | None = None, timeout: float = 1.0
                   ) -> list[SourceRecord]:
        """Up to ``max_records`` records, waiting at most about ``timeout`` seconds for some.

        Records of one partition come in offset order. During an outage, or while the
        consumer cannot be created, this returns ``[]`` after waiting (no exception).

        Raises
        ------
        SourceError
            If ``offsets_for`` failed (now or before) or the client settings are invalid.
        """
        if self._fatal is not None:
            raise self._fatal
        if self._closed:
            raise SourceError("the source is closed")
        self._deliver_skips()  # the records returned before them have been handled
        max_records = int(max_records or self.config.max_poll_records)
        deadline = time.monotonic() + max(float(timeout), 0.0)
        consumer = self._connect()
        if consumer is None:
            time.sleep(max(min(self._retry_at, deadline) - time.monotonic(), 0.0))
            return []
        out: list[SourceRecord] = []
        while True:
            remaining = deadline - time.monotonic()
            # Short slices, so that a new assignment is positioned soon after it arrives.
            slice_ms = int(max(min(remaining, 0.1), 0.0) * 1000)
            try:
                with batches.batch_limit(self.max_batch_bytes):
                    polled = consumer.poll(timeout_ms=slice_ms, max_records=max_records)
            except UndecodableBatch as exc:
                self._skip(consumer, exc)
                if out:
                    break  # the skip is handed over after these records, at the next call
                self._deliver_skips()
                continue
            except KafkaError as exc:
                self._note_error("poll", exc)
                time.sleep(max(min(self._retry_at, deadline) - time.monotonic(), 0.0))
                return out
            finish_join(consumer)
            fresh = self._position_pending(consumer) | self._check_topic_ids(consumer)
            for tp, records in polled.items():
                if tp in fresh or not records:
                    continue  # fetched before the seek: refetched from the right offset
                for r in records:
                    out.append(SourceRecord(r.topic, r.partition, r.offset, r.value, r.key,
                                            r.timestamp, tuple(r.headers or ())))
                self._delivered[(tp.topic, tp.partition)] = records[-1].offset + 1
            if out:
                self.last_delivery = self.last_progress = self._clock()
                self._answered()  # records came from the broker
                break
            if time.monotonic() >= deadline:
                break
        self._update_lag(consumer)
        return out

    def _skip(self, consumer: KafkaConsumer, exc: UndecodableBatch) -> None:
        """Seek past a batch kafka-python cannot read (see :mod:`daemon.kafka.batches`)."""
        tp = TopicPartition(exc.topic, exc.partition)
        with self._lock:
            assigned = tp in self._assigned_set
        if assigned:
            # Also makes the fetcher drop the generator that failed, which would otherwise
            # stall every later poll.
            consumer.seek(tp, exc.next_offset)
        self._delivered[(exc.topic, exc.partition)] = exc.next_offset
        self.last_progress = self._clock()
        self.skipped[exc.kind] += 1
        self._count_error(exc.kind)
        self._skips.append(exc)
        log.warning("%s[%d]: skipped offsets %d..%d, a record batch that cannot be read (%s: "
                    "%s)", exc.topic, exc.partition, exc.offset, exc.next_offset - 1, exc.kind,
                    exc.detail)

    def _deliver_skips(self) -> None:
        skips, self._skips = self._skips, []
        if self.on_skip is not None:
            for exc in skips:
                self.on_skip(exc)

    def _check_topic_ids(self, consumer: KafkaConsumer) -> set[TopicPartition]:
        """Detect topics recreated under the same name; rewind their partitions.

        Offsets of a recreated topic start again at 0, so positions from its previous life would
        skip (or wait for) the first messages of the new one. kafka-python keeps the topic ids
        of the metadata responses in its cluster object, which the public consumer API does not
        expose: read defensively (:func:`daemon.kafka.mends.metadata_topic_id`), and do nothing
        on clients or brokers without topic ids.
        """
        rewound: set[TopicPartition] = set()
        for topic in self.config.topics:
            tid = metadata_topic_id(consumer, topic)
            if tid is None:
                continue
            previous = self._topic_ids.get(topic)
            self._topic_ids[topic] = tid
            if previous is None or previous == tid:
                continue
            log.warning("topic %r was recreated (id %s -> %s): reading it from the beginning",
                        topic, previous, tid)
            self._reset_topics.add(topic)
            for key in [k for k in self._delivered if k[0] == topic]:
                self._delivered.pop(key, None)
                self._highwater.pop(key, None)
                self._end.pop(key, None)
            with self._lock:
                tps = {tp for tp in self._assigned_set if tp.topic == topic}
            if tps:
                if self.config.auto_offset_reset == "earliest":
                    consumer.seek_to_beginning(*tps)
                else:
                    consumer.seek_to_end(*tps)
            rewound |= tps
            if self.on_topic_reset is not None:
                self.on_topic_reset(topic)
        return rewound

    def _update_lag(self, consumer: KafkaConsumer) -> None:
        with self._lock:
            assigned = set(self._assigned_set)
        for tp in assigned:
            hw = consumer.highwater(tp)
            if hw is not None:
                self._highwater[(tp.topic, tp.partition)] = hw
        now = time.monotonic()
        if now >= self._next_end_refresh:
            self._next_end_refresh = now + self._lag_refresh
            # Also the probe of the broker: with nothing assigned (yet, or any more) partition 0
            # of each topic is asked, which every topic has.
            probe = list(assigned) or [TopicPartition(t, 0) for t in self.config.topics]
            self._note_missing(unknown_topics(consumer, self.config.topics))
            try:
                ends = end_offsets(consumer, probe, timeout_ms=2000)
            except KafkaError as exc:
                self._unreachable("probe", exc)
            else:
                if ends is not None:  # None: no subscribed topic exists yet, nothing was asked
                    self._answered()
                if assigned and ends is not None:
                    self._end = {(tp.topic, tp.partition): o for tp, o in ends.items()}
        lag = {}
        for tp in assigned:
            key = (tp.topic, tp.partition)
            ends = [o for o in (self._highwater.get(key), self._end.get(key)) if o is not None]
            if not ends:
                continue
            position = self._delivered.get(key)
            if position is None:
                continue
            lag[key] = max(max(ends) - position, 0)
        self._lag = lag  # one reference swap: readers in other threads see old or new

    def _note_missing(self, unknown: frozenset[str]) -> None:
        # Unknown at two probes in a row: not a first metadata answer still on its way.
        missing, self._unknown = unknown & self._unknown, unknown
        if missing - self.missing_topics:
            log.warning("kafka.topics names topics the broker does not have: %s; waiting for "
                        "them (the consumer does not create topics)", ", ".join(sorted(missing)))
        self.missing_topics = missing

    def lag(self) -> dict[tuple[str, int], int]:
        """Messages behind the end of each assigned partition, as of the last poll (>= 0)."""
        return dict(self._lag)

    def topic_ids(self) -> dict[str, str]:
        """Topic id (UUID text) of each consumed topic, as last seen in metadata.

        A checkpoint that stores these next to the offsets lets a restarted daemon notice that
        a topic was recreated while it was down (its offsets would not apply any more).
        """
        return {t: str(tid) for t, tid in self._topic_ids.items()}

    def topic_id(self, topic: str) -> str | None:
        """The topic's id in the latest metadata, or None where unknown.

        The ids of :meth:`topic_ids` are learnt only after the first poll has positioned the
        partitions, too late for the first seek after a restart; kafka-python's cluster
        metadata already has them when the partitions are assigned. Read defensively: private
        in kafka-python 3.0.
        """
        known = self.topic_ids().get(topic)
        return known if known is not None else metadata_topic_id(self._consumer, topic)

    @staticmethod
    def position(record: SourceRecord) -> tuple[str, int]:
        """``(kafka:<topic>:<partition>, offset + 1)``: what a checkpoint commits for it."""
        return kafka_position(record)

    @property
    def stopped(self) -> bool:
        """True once consuming cannot go on (:class:`SourceError` was raised)."""
        return self._fatal is not None

    def assignment(self) -> set[tuple[str, int]]:
        """``{(topic, partition)}`` currently assigned to this member."""
        with self._lock:
            return {(tp.topic, tp.partition) for tp in self._assigned_set}

    def forget_delivered(self, topic: str, partition: int) -> None:
        """Forget what was delivered from a partition: its next positioning uses the stored
        offset alone (a partitioned ingest loop whose in-memory work for it was dropped)."""
        self._delivered.pop((topic, int(partition)), None)

    def reposition(self, topic: str, partition: int) -> None:
        """Seek an assigned partition again from ``offsets_for`` before its next records.

        For a partitioned ingest loop fenced out of a partition's store (another instance
        committed to it): the partition is paused now, records already fetched are dropped,
        and the next :meth:`poll_batch` seeks it to the offset stored with the state it
        reloaded (call in the polling thread)."""
        tp = TopicPartition(topic, int(partition))
        self.forget_delivered(topic, partition)
        with self._lock:
            if tp not in self._assigned_set:
                return
            self._pending.add(tp)
        if self._consumer is not None:
            self._consumer.pause(tp)

    def positions(self) -> dict[tuple[str, int], int]:
        """Next offset after the last delivered record, per partition ever delivered from."""
        return dict(self._delivered)

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Report progress to the group (informational; call after a checkpoint).

        Parameters
        ----------
        offsets : mapping of (topic, partition) to the next offset to read
            Partitions not assigned any more are skipped. Failures are logged, not raised: the
            store, not the group, decides where consumption resumes.
        """
        consumer = self._consumer
        if consumer is None:
            return
        assigned = self.assignment()
        payload = {
            TopicPartition(t, p): OffsetAndMetadata(int(o), "", -1)
            for (t, p), o in offsets.items() if (t, p) in assigned
        }
        if not payload:
            return

        def done(_offsets, response):
            if isinstance(response, Exception):
                log.info("informational offset commit failed: %s", response)

        try:
            consumer.commit_async(payload, callback=done)
        except KafkaError as exc:
            log.info("informational offset commit failed: %s", exc)

    def close(self, timeout: float = 5.0) -> None:
        """Leave the group and close connections (no commit)."""
        self._closed = True
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close(autocommit=False, timeout_ms=int(timeout * 1000))
            except Exception:  # noqa: BLE001 - closing is best effort
                log.debug("error closing the consumer", exc_info=True)
                # kafka-python closes its client last: after a failure it is still open.
                close_client(consumer)

    def __enter__(self) -> KafkaSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
