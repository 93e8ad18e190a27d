"""Readiness: whether the daemon does its job now, and if not, every reason why.

``/readyz`` answers 503 with a reason an operator can act on. :class:`Readiness` composes it from
the state the parts already keep (no I/O, safe from the HTTP threads):

* **the broker does not answer** — no consumer could be created, or the periodic end-offsets
  probe failed (:attr:`daemon.kafka.source.KafkaSource.unreachable_since`); the reason names the
  brokers, for how long and since when, and the client's error;
* **no subscribed topic exists** — every topic of ``kafka.topics`` is missing from the broker's
  metadata (:attr:`daemon.kafka.source.KafkaSource.missing_topics`: a misspelled name, or
  topics not created yet; the consumer never creates them);
* **ingestion stalled** — the lag is above 0 and nothing was consumed or skipped for
  ``health.stall_seconds`` (a stuck partition, a blocked loop);
* **the store is unwritable** — checkpoints fail (:meth:`daemon.ingest.loop.IngestLoop.healthy`), or
  the source stopped for good;
* **no snapshot yet** — nothing to serve.

The reasons are joined with ``"; "``, most urgent first. ``Readiness()`` is the ``ready``
callable :class:`daemon.http.api.ApiServer` receives.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

__all__ = ["Readiness"]


def _since(wall: float | None) -> str:
    if wall is None:
        return ""
    stamp = dt.datetime.fromtimestamp(wall, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f" (since {stamp})"


class Readiness:
    """``ready()`` -> ``(ok, reason)`` from the loop, the source and the publisher.

    Parameters
    ----------
    loop : daemon.ingest.loop.IngestLoop, optional
        Its ``healthy()`` reports failing checkpoints and a stopped source.
    source : daemon.kafka.source.KafkaSource, optional
        Reachability (``unreachable_since``, ``last_error``), ``lag()``, ``last_progress``,
        ``started`` and ``bootstrap_servers``, read on the source's own clock.
    publisher : daemon.publish.Publisher, optional
        ``latest_version`` (None before the first snapshot).
    stall_seconds : float, default 60
    clock : callable, default time.monotonic
        The source's clock.
    """

    def __init__(self, *, loop=None, source=None, publisher=None, stall_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        self.loop = loop
        self.source = source
        self.publisher = publisher
        self.stall_seconds = float(stall_seconds)
        self._clock = clock

    def reasons(self) -> list[str]:
        """Why the daemon is not ready (empty when it is)."""
        out: list[str] = []
        source = self.source
        if source is not None:
            out += self._source_reasons(source)
        if self.loop is not None:
            ok, reason = self.loop.healthy()
            if not ok:
                out.append(reason)
        if self.publisher is not None and self.publisher.latest_version is None:
            out.append("no snapshot has been published yet")
        return out

    def _source_reasons(self, source) -> list[str]:
        now = self._clock()
        since = source.unreachable_since
        if since is not None:
            return [f"Kafka broker {source.bootstrap_servers} unreachable for "
                    f"{now - since:.0f} s{_since(source.unreachable_since_wall)}: "
                    f"{source.last_error}"]
        if source.last_contact is None:
            return [f"connecting to Kafka broker {source.bootstrap_servers} for "
                    f"{now - source.started:.0f} s"]
        missing = getattr(source, "missing_topics", frozenset())
        topics = getattr(getattr(source, "config", None), "topics", ())
        if missing and set(topics) <= missing:
            return [f"none of kafka.topics exists on Kafka broker {source.bootstrap_servers} "
                    f"({', '.join(sorted(missing))}): nothing to consume, and the consumer does "
                    "not create topics"]
        lag = sum(source.lag().values())
        idle = now - source.last_progress
        if lag > 0 and idle >= self.stall_seconds:
            return [f"ingestion stalled for {idle:.0f} s with {lag} messages of lag "
                    f"(health.stall_seconds: {self.stall_seconds:g})"]
        return []

    def __call__(self) -> tuple[bool, str]:
        reasons = self.reasons()
        return (not reasons, "; ".join(reasons) if reasons else "ok")
