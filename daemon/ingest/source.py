"""What the ingest loop reads from: the record source protocol and the offsets keys.

:class:`daemon.ingest.loop.IngestLoop` drives any :class:`RecordSource`; two exist:
:class:`daemon.kafka.source.KafkaSource` (the daemon) and :class:`daemon.ingest.files.FileSource`
(``anchorstream ingest``). A source hands out batches of :class:`Record` and says, for each, where
it puts the source's position (an offsets key and the next position); the loop commits those
positions with the store's checkpoint, atomically, which is what makes ingestion exactly once.

Offsets keys: ``kafka:<topic>:<partition>`` (:func:`offset_key`, next offset = offset + 1),
``file:<absolute path>`` (:func:`daemon.ingest.files.file_key`, byte offset past the line), and
``kafka:topic_ids`` (:data:`TOPIC_IDS_KEY`) holding the Kafka topics' ids at the checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["TOPIC_IDS_KEY", "Record", "RecordSource", "kafka_position", "offset_key",
           "parse_offset_key"]

#: Store offsets key holding ``{topic: topic id}`` as seen at the checkpoint.
TOPIC_IDS_KEY = "kafka:topic_ids"


class Record(Protocol):
    """One record as the loop reads it."""

    #: The raw bytes (None: a Kafka tombstone, rejected as ``empty``).
    value: bytes | None
    #: The record's own time in milliseconds since the epoch, or None (files have none).
    timestamp: int | None


@runtime_checkable
class RecordSource(Protocol):
    """A source of records for :class:`daemon.ingest.loop.IngestLoop`.

    ``poll_batch`` returns at most ``max_records`` records, waiting at most ``timeout`` seconds
    for them; a finite source returns ``[]`` once it is exhausted. ``position(record)`` is
    ``(offsets key, next position)``: what a checkpoint that includes the record stores. After
    each successful checkpoint the loop calls ``commit`` with the Kafka positions it holds,
    ``{(topic, partition): next offset}`` (informational: the store's offsets are the truth; a
    file source ignores it). ``topic_ids`` and ``topic_id`` name the topics' current ids (empty
    and None for files); ``stopped`` is true once the source cannot go on.

    The loop sets three callbacks on the source when it attaches it (a source may ignore
    them): ``offsets_for(topic, partition)``, ``on_topic_reset(topic)`` and ``on_skip(batch)``.
    """

    offsets_for: Callable[[str, int], int | None] | None
    on_topic_reset: Callable[[str], None] | None
    on_skip: Callable[[Any], None] | None

    def poll_batch(self, max_records: int, timeout: float) -> list: ...

    def position(self, record) -> tuple[str, int]: ...

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None: ...

    def topic_ids(self) -> dict[str, str]: ...

    def topic_id(self, topic: str) -> str | None: ...

    @property
    def stopped(self) -> bool: ...

    def close(self) -> None: ...


def offset_key(topic: str, partition: int) -> str:
    """Store offsets key of a Kafka partition: ``kafka:<topic>:<partition>``.

    Topic names cannot contain ``:``, so the key parses back unambiguously.

    >>> offset_key("news", 3), parse_offset_key("kafka:news:3")
    ('kafka:news:3', ('news', 3))
    """
    return f"kafka:{topic}:{int(partition)}"


def parse_offset_key(key: str) -> tuple[str, int] | None:
    """``(topic, partition)`` of a key made by :func:`offset_key`, else None."""
    if not key.startswith("kafka:") or key == TOPIC_IDS_KEY:
        return None
    topic, _, partition = key[len("kafka:"):].rpartition(":")
    if not topic or not partition.isdigit():
        return None
    return topic, int(partition)


def kafka_position(record) -> tuple[str, int]:
    """Offsets key and next offset of a Kafka record (a :class:`daemon.kafka.source.SourceRecord`)."""
    return offset_key(record.topic, record.partition), record.offset + 1
