"""Kafka clients: kafka-python imported once (its import-time warning silenced), settings, creation.

Every module that talks to Kafka imports kafka-python's classes from here, so the
``DeprecationWarning`` kafka-python 3.0 raises on import is silenced in one place and the mends
that close the sockets kafka-python leaves open (:func:`daemon.kafka.mends.close_failed_connects`,
:func:`~daemon.kafka.mends.close_when_writes_cancelled`) are applied before any client exists.
:func:`client_settings` turns a :class:`daemon.settings.KafkaConfig` into client keyword
arguments (address and security), :func:`create_client` builds a client without leaking the I/O
thread of a failed attempt, :func:`create_topics` creates topics, and :class:`Backoff` paces
retries.
"""

from __future__ import annotations

import logging
import random
import warnings
from collections.abc import Callable, Mapping
from typing import Any

with warnings.catch_warnings():
    # kafka-python 3.0 reads its protocol schemas with importlib.resources.read_text/open_text,
    # which Python 3.11 deprecates; the warning is theirs, and the test suite turns warnings
    # into errors at import time.
    warnings.filterwarnings("ignore", "(read|open)_text is deprecated", DeprecationWarning)
    from kafka import (
        ConsumerRebalanceListener,
        KafkaConsumer,
        KafkaProducer,
        OffsetAndMetadata,
        TopicPartition,
    )
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import KafkaConfigurationError, KafkaError, TopicAlreadyExistsError
    from kafka.net.compat import KafkaNetClient
    from kafka.net.inet import KafkaNetSocket
    from kafka.net.transport import KafkaTCPTransport

from anchorstream.errors import AnchorstreamError
from daemon.kafka.mends import close_failed_connects, close_when_writes_cancelled
from daemon.settings import KafkaConfig

close_failed_connects(KafkaNetSocket)
close_when_writes_cancelled(KafkaTCPTransport)  # its SSL subclass inherits the wrapper

__all__ = [
    "Backoff",
    "ConsumerRebalanceListener",
    "KafkaConfigurationError",
    "KafkaConsumer",
    "KafkaError",
    "KafkaProducer",
    "OffsetAndMetadata",
    "SourceError",
    "TopicPartition",
    "client_settings",
    "consumer_settings",
    "create_client",
    "create_topics",
]

log = logging.getLogger("anchorstream.source")


class SourceError(AnchorstreamError, RuntimeError):
    """Consuming cannot go on: bad client configuration or a failing ``offsets_for``."""


class Backoff:
    """Exponential backoff with jitter: ``initial * 2**n`` capped at ``maximum``, ±20 %.

    kafka-python retries connections itself; this covers what it does not (creating a client
    while no broker answers, errors that escape ``poll``).
    """

    def __init__(self, initial: float, maximum: float, *, rng: random.Random | None = None):
        self.initial, self.maximum = float(initial), float(maximum)
        self._n = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        delay = min(self.initial * 2.0 ** self._n, self.maximum)
        self._n = min(self._n + 1, 62)
        return delay * self._rng.uniform(0.8, 1.2)

    def reset(self) -> None:
        self._n = 0



def client_settings(config: KafkaConfig, bootstrap_servers: str | list[str] | None = None
                    ) -> dict[str, Any]:
    """kafka-python settings shared by consumers, producers and admin clients.

    Parameters
    ----------
    config : KafkaConfig
    bootstrap_servers : str or list of str, optional
        Overrides ``config.bootstrap_servers`` (needed when it is ``"embedded"``: pass the
        started broker's address).

    Raises
    ------
    SourceError
        If the configuration says ``embedded`` and no address is given.
    """
    servers = bootstrap_servers if bootstrap_servers is not None else list(config.bootstrap_servers)
    if config.embedded and bootstrap_servers is None:
        raise SourceError("kafka.bootstrap_servers is 'embedded': start the embedded broker and "
                          "pass its address as bootstrap_servers")
    settings: dict[str, Any] = {
        "bootstrap_servers": servers,
        "client_id": config.client_id,
        "security_protocol": config.security_protocol,
        "ssl_check_hostname": config.ssl_check_hostname,
        "request_timeout_ms": config.request_timeout_ms,
        "reconnect_backoff_ms": config.reconnect_backoff_ms,
        "reconnect_backoff_max_ms": config.reconnect_backoff_max_ms,
        "retry_backoff_ms": config.retry_backoff_ms,
    }
    optional = {
        "sasl_mechanism": config.sasl_mechanism,
        "sasl_plain_username": config.sasl_plain_username,
        "sasl_plain_password": (config.sasl_plain_password.reveal()
                                if config.sasl_plain_password is not None else None),
        "ssl_cafile": config.ssl_cafile,
        "ssl_certfile": config.ssl_certfile,
        "ssl_keyfile": config.ssl_keyfile,
    }
    settings.update({k: v for k, v in optional.items() if v is not None})
    return settings


def consumer_settings(config: KafkaConfig, bootstrap_servers) -> dict[str, Any]:
    """The document consumer's settings: :func:`client_settings` and the group's, fetch
    bounds and timeouts from ``config``, offsets never committed automatically, topics never
    created by it."""
    return {
        **client_settings(config, bootstrap_servers),
        "group_id": config.group_id,
        # The store's checkpoint is the source of truth; the group commit is informational and
        # explicit (commit()), never automatic.
        "enable_auto_commit": False,
        "auto_offset_reset": config.auto_offset_reset,
        "fetch_max_bytes": config.fetch_max_bytes,
        "max_partition_fetch_bytes": config.max_partition_fetch_bytes,
        "max_poll_records": config.max_poll_records,
        "session_timeout_ms": config.session_timeout_ms,
        "heartbeat_interval_ms": config.heartbeat_interval_ms,
        "max_poll_interval_ms": config.max_poll_interval_ms,
        # Topics are created by their owners; a typo in kafka.topics must not create one.
        "allow_auto_create_topics": False,
        # Creating the client blocks this long when no broker answers; kept short so that a
        # shutdown during an outage is quick (creation is retried with backoff).
        "bootstrap_timeout_ms": min(config.request_timeout_ms, 10000),
    }


def create_client(factory: Callable[..., Any], settings: Mapping[str, Any]) -> Any:
    """``factory(**settings)``, closing what a failed construction leaves running.

    kafka-python 3.0.12 starts its I/O thread before it bootstraps and does not stop it when the
    bootstrap fails (no broker), so each failed attempt during an outage would leak a thread.
    The client it creates is captured here and closed on failure.
    """
    made: list[KafkaNetClient] = []

    def tracking_client(**kwargs):
        client = KafkaNetClient(**kwargs)
        made.append(client)
        return client

    try:
        return factory(**settings, kafka_client=tracking_client)
    except BaseException:
        for client in made:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - cleaning up after a failure, best effort
                log.debug("closing a half-created Kafka client failed", exc_info=True)
        raise


def create_topics(config: KafkaConfig, topics: Mapping[str, int], *,
                  bootstrap_servers: str | list[str] | None = None) -> list[str]:
    """Create topics (name -> partitions, replication 1); returns the names that were new.

    Existing topics are left as they are. Used by ``anchorstream replay --create-topic`` and
    for the embedded broker (create topics before producing: see :mod:`daemon.kafka.broker`).
    """
    allowed = set(KafkaAdminClient.DEFAULT_CONFIG)
    settings = {k: v for k, v in client_settings(config, bootstrap_servers).items()
                if k in allowed}
    admin = create_client(KafkaAdminClient, settings)
    created = []
    try:
        for name, partitions in topics.items():
            try:
                admin.create_topics([NewTopic(name, int(partitions), 1)])
                created.append(name)
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()
    return created

