"""The embedded broker never outlives the process that started it.

``kafka.bootstrap_servers: embedded`` makes ``anchorstream run`` start a Tansu broker as a child
process in its own session (so a terminal's Ctrl-C does not reach it directly). These tests run
the real thing — a real broker, a real ``python -m daemon run`` process with a temporary config
(embedded broker, temporary store and snapshot directories, HTTP on port 0) — and end the
daemon every way it can end: a clean SIGTERM, a second signal during shutdown (the forced
exit), a signal during start-up, and SIGKILL (which no handler sees: the broker goes through
its parent-death signal, see :func:`daemon.kafka.broker._die_with_parent`).

Every process a test starts is killed at its end if it is still there, broker included.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml

from daemon.kafka.broker import BrokerError, EmbeddedBroker, resolve_binary

REPO = Path(__file__).resolve().parents[1]
# Upper bounds that only turn a hang into a failure; nothing is asserted about speed. An
# orphaned broker gets SIGKILL from the kernel at once; GONE only bounds how long a busy
# machine may take to schedule its exit.
DEADLINE = 120.0
GONE = 60.0

try:
    resolve_binary()
    _NO_BROKER = None
except BrokerError as exc:
    _NO_BROKER = str(exc)

pytestmark = [
    pytest.mark.skipif(_NO_BROKER is not None, reason=f"no embedded broker: {_NO_BROKER}"),
]
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="the parent-death signal (prctl PR_SET_PDEATHSIG) is Linux-only")


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (dead, not yet reaped by its new parent) is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, timeout: float = GONE) -> bool:
    end = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def is_broker(pid: int, port: int) -> bool:
    """``pid`` is a Tansu broker listening on ``port`` (guards against a reused pid)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"broker" in cmd and any(c.endswith(f":{port}".encode()) for c in cmd)


@pytest.fixture
def reaper():
    """Collects pids; kills whichever is still alive when the test ends, pass or fail."""
    pids: list[int] = []
    yield pids
    for pid in reversed(pids):
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            wait_gone(pid)


# ----------------------------------------------------------------------------------------------
# the broker alone


@linux_only
def test_broker_dies_when_the_process_that_started_it_is_killed(tmp_path, reaper):
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from daemon.kafka.broker import EmbeddedBroker
        broker = EmbeddedBroker().start()
        print(broker.pid, broker.port, flush=True)
        time.sleep(600)
    """)
    # TMPDIR: the broker's log file, which nothing removes after a SIGKILL, lands in tmp_path.
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(tmp_path)})
    reaper.append(parent.pid)
    pid, port = map(int, parent.stdout.readline().split())
    reaper.append(pid)
    assert is_broker(pid, port) and alive(pid)

    parent.kill()  # SIGKILL: no finally, no atexit, no handler runs
    parent.wait(30)
    parent.stdout.close()
    assert wait_gone(pid), f"broker {pid} outlived the SIGKILLed process that started it"


def test_broker_started_off_the_main_thread_outlives_that_thread():
    # The parent-death signal fires when the *thread* that forked the child ends, so start()
    # asks for it only on the main thread: a broker started by a worker that then finishes must
    # keep running until it is stopped.
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("broker", EmbeddedBroker().start()))
    worker.start()
    worker.join()
    broker = box["broker"]
    try:
        # join() returns before the kernel has finished the thread's exit, which is when a
        # parent-death signal would be sent: wait until the thread is gone from the process,
        # then ask the broker to work (a SIGKILLed broker cannot answer).
        task = Path(f"/proc/self/task/{worker.native_id}")
        end = time.monotonic() + DEADLINE
        while task.exists():
            assert time.monotonic() < end, f"thread {worker.native_id} did not exit"
            time.sleep(0.02)
        broker.create_topics(["still-here"])
        assert broker.running()
    finally:
        broker.close()
    assert not broker.running()


# ----------------------------------------------------------------------------------------------
# `anchorstream run` with `kafka.bootstrap_servers: embedded`


class EmbeddedRun:
    """``python -m daemon run`` on the embedded broker, output in ``run.log``."""

    def __init__(self, tmp: Path, reaper: list[int], *, wait_ready: bool = True):
        config = {
            "kafka": {"bootstrap_servers": "embedded", "topics": ["documents"],
                      "session_timeout_ms": 2000, "heartbeat_interval_ms": 500},
            "store": {"path": str(tmp / "store")},
            "snapshots": {"path": str(tmp / "snapshots")},
            "vocab": {"capacity": 500},
            "model": {"num_topics": 3},
            "http": {"port": 0},
            "logging": {"level": "INFO"},
        }
        (tmp / "config.yaml").write_text(yaml.safe_dump(config))
        self.ready = tmp / "ready.json"
        self.log_path = tmp / "run.log"
        # TMPDIR: the broker's log file, which a SIGKILLed daemon leaves, lands in tmp.
        env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daemon", "run", "--config", str(tmp / "config.yaml"),
                 "--ready-file", str(self.ready)],
                cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT)
        reaper.append(self.proc.pid)
        self.broker, self.port = self._wait_for_broker()
        reaper.append(self.broker)
        if wait_ready:
            self._wait_for(self.ready.exists, "the ready file")
            info = json.loads(self.ready.read_text())
            assert info["bootstrap_servers"] == f"127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def _wait_for(self, predicate, what: str):
        end = time.monotonic() + DEADLINE
        while not (value := predicate()):
            if self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited ({self.proc.returncode}) before "
                                     f"{what}:\n{self.log()[-4000:]}")
            assert time.monotonic() < end, f"no {what}:\n{self.log()[-4000:]}"
            time.sleep(0.02)
        return value

    def _wait_for_broker(self) -> tuple[int, int]:
        pattern = re.compile(r"embedded Kafka broker: 127\.0\.0\.1:(\d+) \(pid (\d+)\)")
        m = self._wait_for(lambda: pattern.search(self.log()), "embedded broker line")
        port, pid = int(m.group(1)), int(m.group(2))
        assert is_broker(pid, port), f"pid {pid} is not the broker on port {port}"
        assert int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) \
            == self.proc.pid, "the broker is not the daemon's child"
        return pid, port

    def wait(self) -> int:
        try:
            return self.proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            raise AssertionError("the daemon did not exit:\n" + self.log()[-4000:]) from None


def stopped_line(pid: int) -> str:
    """What :meth:`daemon.kafka.broker.EmbeddedBroker.stop` logs: proof it was stopped on purpose."""
    return f"embedded broker (pid {pid}) stopped"


def test_run_sigterm_stops_daemon_and_broker(tmp_path, reaper):
    run = EmbeddedRun(tmp_path, reaper)
    assert alive(run.broker)
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait() == 0, run.log()
    assert not alive(run.broker)
    assert stopped_line(run.broker) in run.log()
    assert "Traceback" not in run.log()


@linux_only
def test_run_sigkill_takes_the_broker_down_too(tmp_path, reaper):
    run = EmbeddedRun(tmp_path, reaper)
    assert alive(run.broker)
    run.proc.kill()
    run.wait()
    assert wait_gone(run.broker), f"broker {run.broker} outlived the SIGKILLed daemon"


def test_run_second_signal_stops_the_broker_before_exiting_at_once(tmp_path, reaper):
    run = EmbeddedRun(tmp_path, reaper)
    # Two signals that are handled back to back, whatever the machine's speed: while the
    # daemon is stopped both become pending (two different signals, as two SIGTERMs would
    # merge into one), and SIGCONT lets the main thread run both handlers in a row. The first
    # starts the graceful stop, the second is the forced exit.
    run.proc.send_signal(signal.SIGSTOP)
    try:
        run.proc.send_signal(signal.SIGINT)
        run.proc.send_signal(signal.SIGTERM)
    finally:
        run.proc.send_signal(signal.SIGCONT)
    assert run.wait() == 1, run.log()
    log = run.log()
    assert "second signal: exiting without waiting" in log
    # Stopped by the handler itself, not only by the parent-death signal at exit.
    assert stopped_line(run.broker) in log
    assert wait_gone(run.broker)


def test_run_signal_during_startup_stops_the_broker(tmp_path, reaper):
    # Signalled as soon as the broker is up, while the daemon is still importing its parts and
    # building them (numba kernels, the store): the default action of SIGTERM would kill the
    # process there and skip the code that stops the broker.
    run = EmbeddedRun(tmp_path, reaper, wait_ready=False)
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait() == 0, run.log()
    assert stopped_line(run.broker) in run.log()
    assert not alive(run.broker)
    assert "Traceback" not in run.log()
