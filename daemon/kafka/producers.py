"""Kafka out: :class:`DeadLetterProducer` forwards a rejected record's raw value with a ``reason``
header (plus ``error``, ``source_topic``, ``source_partition``, ``source_offset``), and
:class:`ModelUpdatesProducer` sends :func:`daemon.summary.compact_summary` JSON (its ``trends``:
rising, new, falling and gone ids with scores, :func:`daemon.summary.trends_summary`) as a
``Publisher(on_publish=...)`` hook. Both connect lazily, retry with backoff, and report each
send's outcome (``"sent"``/``"failed"``) to an optional callback (e.g. a metrics counter).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from daemon.kafka.client import (
    Backoff,
    KafkaConfigurationError,
    KafkaError,
    KafkaProducer,
    SourceError,
    client_settings,
    create_client,
)
from daemon.kafka.source import SourceRecord
from daemon.settings import KafkaConfig

__all__ = ["DeadLetterProducer", "ModelUpdatesProducer", "Paced"]

log = logging.getLogger("anchorstream.source")


class _Sink:
    """A lazily created KafkaProducer for one topic, retried with backoff."""

    def __init__(self, config: KafkaConfig, topic: str, *,
                 bootstrap_servers: str | list[str] | None = None,
                 on_outcome: Callable[[str], None] | None = None,
                 producer_factory: Callable[..., KafkaProducer] = KafkaProducer,
                 max_block_seconds: float = 5.0):
        self.topic = topic
        self.on_outcome = on_outcome
        self._settings = {
            **client_settings(config, bootstrap_servers),
            "acks": "all",
            "compression_type": config.compression_type,
            # send() blocks at most this long when the broker is away; ingestion must go on.
            "max_block_ms": int(max_block_seconds * 1000),
            "bootstrap_timeout_ms": min(config.request_timeout_ms, 10000),
        }
        self.max_request_size = 1024 * 1024
        self._factory = producer_factory
        self._producer: KafkaProducer | None = None
        self._backoff = Backoff(config.reconnect_backoff_ms / 1000,
                                config.reconnect_backoff_max_ms / 1000)
        self._retry_at = 0.0

    def _outcome(self, outcome: str) -> None:
        if self.on_outcome is not None:
            try:
                self.on_outcome(outcome)
            except Exception:  # noqa: BLE001 - a metrics hook must not break sending
                log.debug("on_outcome hook failed", exc_info=True)

    def _get(self) -> KafkaProducer | None:
        if self._producer is None and time.monotonic() >= self._retry_at:
            try:
                self._producer = create_client(self._factory, self._settings)
                self._backoff.reset()
            except KafkaConfigurationError as exc:
                raise SourceError(f"invalid Kafka producer settings: {exc}") from exc
            except (KafkaError, OSError) as exc:
                delay = self._backoff.next()
                self._retry_at = time.monotonic() + delay
                log.warning("cannot create a producer for %r (%s); retrying in %.1f s",
                            self.topic, exc, delay)
        return self._producer

    def _send(self, value: bytes, *, key: bytes | None = None,
              headers: list[tuple[str, bytes]] | None = None) -> bool:
        producer = self._get()
        if producer is None:
            self._outcome("failed")
            return False
        try:
            future = producer.send(self.topic, value=value, key=key, headers=headers or [])
        except KafkaError as exc:
            log.warning("cannot send to %r: %s", self.topic, exc)
            self._outcome("failed")
            return False
        def failed(exc):
            log.warning("send to %r failed: %s", self.topic, exc)
            self._outcome("failed")

        future.add_callback(lambda _meta: self._outcome("sent"))
        future.add_errback(failed)
        return True

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything sent so far is acknowledged (or failed)."""
        if self._producer is not None:
            try:
                self._producer.flush(timeout=timeout)
            except KafkaError as exc:
                log.warning("flushing %r failed: %s", self.topic, exc)

    def close(self, timeout: float = 5.0) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=timeout)
            except Exception:  # noqa: BLE001 - closing is best effort
                log.debug("error closing a producer", exc_info=True)


class DeadLetterProducer(_Sink):
    """Forwards rejected records, raw, to the dead-letter topic with the reason in a header.

    Parameters
    ----------
    config : KafkaConfig
    topic : str, optional
        Default ``config.dead_letter_topic``.
    bootstrap_servers : optional override (embedded broker)
    on_outcome : callable, optional
        Called with ``"sent"`` or ``"failed"`` per record (possibly from kafka-python's thread).
    """

    def __init__(self, config: KafkaConfig, topic: str | None = None, **kwargs: Any):
        topic = topic or config.dead_letter_topic
        if not topic:
            raise ValueError("no dead-letter topic: set kafka.dead_letter_topic")
        super().__init__(config, topic, **kwargs)
        # Leave room for headers and batch overhead under the producer's request size limit.
        self.max_value_bytes = self.max_request_size - 16 * 1024

    def send(self, record: SourceRecord, reason: str, detail: str | None = None) -> bool:
        """Forward ``record`` (asynchronously). Returns False when it could not be queued.

        Headers: ``reason``, ``error`` (the detail, at most 1000 characters),
        ``source_topic``, ``source_partition``, ``source_offset``; values larger than the
        producer's request limit are cut and get ``truncated_from`` (the original byte count).
        """
        value = record.value if record.value is not None else b""
        headers = [
            ("reason", reason.encode()),
            ("source_topic", record.topic.encode()),
            ("source_partition", str(record.partition).encode()),
            ("source_offset", str(record.offset).encode()),
        ]
        if detail:
            headers.append(("error", detail[:1000].encode("utf-8", "replace")))
        if len(value) > self.max_value_bytes:
            headers.append(("truncated_from", str(len(value)).encode()))
            value = value[: self.max_value_bytes]
        return self._send(value, key=record.key, headers=headers)


class ModelUpdatesProducer(_Sink):
    """A ``Publisher(on_publish=...)`` hook sending each snapshot's compact JSON summary.

    The message key is ``kafka.group_id``: every summary of one daemon lands on one partition
    in order, and a compacted topic keeps each daemon's latest.
    """

    def __init__(self, config: KafkaConfig, topic: str | None = None, **kwargs: Any):
        topic = topic or config.model_updates_topic
        if not topic:
            raise ValueError("no model-updates topic: set kafka.model_updates_topic")
        super().__init__(config, topic, **kwargs)
        self._key = config.group_id.encode()

    def __call__(self, summary: Mapping[str, Any]) -> None:
        body = json.dumps(summary, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._send(body, key=self._key)


class Paced:
    """The items of ``items`` at ``rate`` per second at most: the one pacing of a replay.

    Used by ``anchorstream replay`` and ``anchorstream demo``. Each item is due at
    ``start + n / rate`` (paced against the start time rather than sleeping a fixed interval per
    item, so that time spent sending does not add up to a lower rate than asked). Iteration ends
    after ``limit`` items, or when ``stop`` is set (then waiting is cut short and
    :attr:`stopped` is true).

    Parameters
    ----------
    items : iterable
    rate : float, optional
        Items per second; None = as fast as possible.
    limit : int, optional
    stop : threading.Event, optional
    hold : callable, optional
        ``hold(n)`` true = item ``n`` (0-based) must wait: it is asked again every
        ``hold_poll`` seconds until false. Time spent held does not count against the rate
        (the schedule restarts after it), so a held stream never bursts to catch up. The demo
        holds its replay a few refreshes ahead of the newest snapshot.
    hold_poll : float
    """

    def __init__(self, items, rate: float | None = None, *, limit: int | None = None,
                 stop=None, hold=None, hold_poll: float = 0.05):
        self.items, self.rate, self.limit, self.stop = items, rate, limit, stop
        self.hold, self.hold_poll = hold, float(hold_poll)
        self.stopped = False
        #: Seconds spent held so far.
        self.held_seconds = 0.0

    def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds``; False when ``stop`` was set meanwhile."""
        if self.stop is None:
            time.sleep(seconds)
            return True
        if self.stop.wait(seconds):
            self.stopped = True
            return False
        return True

    def __iter__(self):
        start, first = time.monotonic(), 0
        for n, item in enumerate(self.items):
            if self.stop is not None and self.stop.is_set():
                self.stopped = True
                return
            if self.limit is not None and n >= self.limit:
                return
            if self.hold is not None and self.hold(n):
                held = time.monotonic()
                while self.hold(n):
                    if not self._wait(self.hold_poll):
                        return
                # The schedule starts again from here: no burst for the time held.
                start, first = time.monotonic(), n
                self.held_seconds += start - held
            if self.rate is not None:
                ahead = start + (n - first) / self.rate - time.monotonic()
                if ahead > 0 and not self._wait(ahead):
                    return
            yield item
