"""Defects of kafka-python 3.0.12, mended from outside, and what its cluster metadata knows
that the public API does not tell (topic ids, topics that do not exist).

The first two were found by ``tests/test_source.py::test_broker_outage_and_recovery`` failing about once in
twenty runs on a loaded machine (a consumer that never received a partition again after a broker
restart). Everything here reads private attributes, defensively, and does nothing where a
client lacks them.

* **Topics created by a typo.** ``KafkaConsumer(allow_auto_create_topics=False)`` is not passed on
  to the client's cluster metadata, whose own default is ``True``: every metadata request asks the
  broker to create the subscribed topics, and a broker that allows it (Apache Kafka's default,
  Tansu) creates a misspelled topic with its default number of partitions.
  :func:`forbid_auto_create` sets the cluster's setting as the consumer's says.

* **A group join left unfinished.** ``join_group_async`` loops ``while need_rejoin()`` and awaits
  the JoinGroup-SyncGroup task for at most the poll's timeout, leaving it in flight for the next
  poll. When the rejoin was started by a change of the subscribed topics' partitions (not by
  ``rejoin_needed``), the group leader's own assignment makes ``need_rejoin()`` false while the
  SyncGroup is still on the wire; a poll that times out in that window returns, the next one sees
  nothing to do, and the task's assignment is never applied: no ``on_partitions_assigned``,
  heartbeats stay disabled, the broker expires the member, and the consumer waits forever with no
  partitions (kafka-python 2.x checked the pending join as well, PR #1695). :func:`finish_join`
  notices an orphaned task after a poll and asks for the rejoin, whose loop then awaits the same
  task and completes the join as usual.

* **A socket left open by a connection that did not complete.**
  ``KafkaNetSocket.sock_connect`` neither closes its socket when the connection times out or
  fails nor when its task is cancelled (the client closed while connecting): the socket stays
  open until the garbage collector finds it. A daemon retrying a loaded or absent broker holds
  one descriptor per attempt meanwhile, and the test suite, where ``ResourceWarning`` is an
  error, failed on one (``tests/test_source.py``, in CI on a busy machine).
  :func:`close_failed_connects` wraps it once, for every client of the process; it is applied
  where kafka-python is imported (:mod:`daemon.kafka.client`). Likewise a connection closed
  while a request was still buffered (a consumer's LeaveGroup on a loaded machine): the
  transport defers its close to its write task, and closing the client cancels that task
  before it flushes, so the socket was never closed; :func:`close_when_writes_cancelled`
  closes it when the task ends that way.

* **A close that raises leaves the client open.** ``KafkaConsumer.close`` marks the consumer
  closed, closes the group coordinator (the LeaveGroup) and only then the client: its
  connections, its selector's wake-up sockets and its IO thread. A coordinator that raises
  leaves all of them to the garbage collector, and a second ``close`` returns at once.
  :func:`close_client` closes the client itself; the source calls it when ``close`` raised.

And one that only shows once topics are not created for the consumer: ``end_offsets`` raises
``KeyError`` for a partition of a topic the broker does not know (a subscription to a topic not
created yet); :func:`end_offsets` asks only for partitions the consumer's metadata knows.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = [
    "close_client", "close_failed_connects", "close_when_writes_cancelled", "end_offsets",
    "finish_join", "forbid_auto_create", "metadata_topic_id", "unknown_topics",
]

log = logging.getLogger("anchorstream.source")


def _wrap_once(cls: Any, name: str, wrap) -> bool:
    """Replace ``cls.name`` by ``wrap(cls.name)`` unless it was already; True if it was now
    (False also where ``cls`` has no such method)."""
    method = getattr(cls, name, None)
    if method is None or getattr(method, "closes_failed_sockets", False):
        return False
    wrapped = wrap(method)
    wrapped.closes_failed_sockets = True
    wrapped.__wrapped__ = method
    setattr(cls, name, wrapped)
    return True


def close_failed_connects(socket_class: Any) -> bool:
    """Make ``socket_class.sock_connect`` close its socket when it does not return it; True if
    it was wrapped now (False: already wrapped, or no such method)."""

    def wrap(connect):
        async def sock_connect(self, net, sock, *args, **kwargs):
            try:
                return await connect(self, net, sock, *args, **kwargs)
            except BaseException:  # a timeout, a refusal, or GeneratorExit: a cancelled task
                sock.close()
                raise

        return sock_connect

    return _wrap_once(socket_class, "sock_connect", wrap)


def close_when_writes_cancelled(transport_class: Any) -> bool:
    """Make ``transport_class._write_to_sock`` close the socket of a closed transport when the
    task is cancelled or fails before it flushed; True if it was wrapped now."""

    def wrap(write):
        async def _write_to_sock(self):
            try:
                return await write(self)
            except BaseException:  # GeneratorExit: the client closed while bytes were buffered
                sock = getattr(self, "_sock", None)
                if getattr(self, "_closed", False) and sock is not None:
                    # Only the socket: the task is being torn down by the client's own close,
                    # which cancels the rest and closes its selector.
                    self._sock = None
                    sock.close()
                raise

        return _write_to_sock

    return _wrap_once(transport_class, "_write_to_sock", wrap)


def close_client(consumer: Any) -> bool:
    """Close the consumer's network client (after its ``close`` raised); True if it had one.

    Closing a client twice is harmless (its connection manager and selector both remember).
    An error closing it is logged, not raised: closing is best effort."""
    client = getattr(consumer, "_client", None)
    if client is None or not callable(getattr(client, "close", None)):
        return False
    try:
        client.close()
    except Exception:  # noqa: BLE001 - closing is best effort
        log.debug("error closing the consumer's client", exc_info=True)
    return True


def _cluster(consumer: Any, name: str) -> Any:
    """Attribute ``name`` of the consumer's cluster metadata, or None."""
    return getattr(getattr(consumer, "_cluster", None), name, None)


def forbid_auto_create(consumer: Any, allow: bool = False) -> bool:
    """Make the consumer's metadata requests carry ``allow``; True if the setting was found."""
    config = _cluster(consumer, "config")
    if not isinstance(config, dict) or "allow_auto_create_topics" not in config:
        return False
    config["allow_auto_create_topics"] = bool(allow)
    return True


def finish_join(consumer: Any) -> bool:
    """Ask for the rejoin that completes an orphaned group join; True if there was one.

    Call from the polling thread between polls (the coordinator's join loop runs only inside
    ``poll``).
    """
    coordinator = getattr(consumer, "_coordinator", None)
    if getattr(coordinator, "_join_task", None) is None:
        return False
    need_rejoin = getattr(coordinator, "need_rejoin", None)
    request_rejoin = getattr(coordinator, "request_rejoin", None)
    if need_rejoin is None or request_rejoin is None or need_rejoin():
        return False
    log.info("completing a consumer-group join that kafka-python left unfinished")
    request_rejoin()
    return True


def end_offsets(consumer: Any, partitions, timeout_ms: int) -> dict | None:
    """``consumer.end_offsets`` of the ``partitions`` the consumer's metadata knows; None if it
    knows none of them (nothing was asked)."""
    known = _cluster(consumer, "partitions_for_topic")
    if known is not None:
        partitions = [tp for tp in partitions if tp.partition in (known(tp.topic) or ())]
    if not partitions:
        return None
    return consumer.end_offsets(partitions, timeout_ms=timeout_ms)


def unknown_topics(consumer: Any, topics) -> frozenset[str]:
    """The ``topics`` the consumer's metadata does not know (the broker has no such topic, or
    has not been asked yet); empty where the client keeps no metadata this way."""
    known = _cluster(consumer, "partitions_for_topic")
    if known is None:
        return frozenset()
    return frozenset(t for t in topics if not known(t))


def metadata_topic_id(consumer: Any, topic: str) -> str | None:
    """The topic's id in the consumer's cluster metadata (text), or None where unknown."""
    lookup = _cluster(consumer, "topic_id")
    if lookup is None:
        return None
    try:
        tid = lookup(topic)
    except Exception:  # noqa: BLE001 - metadata internals: best effort
        return None
    return None if tid is None else str(tid)
