"""Readiness names why the daemon is not ready (issue 15): unit tests of the composition, and
the daemon against a broker that is not there (a real process, real HTTP, a closed port).
"""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import pytest
from kafka.errors import KafkaTimeoutError
from test_daemon import DEADLINE, DaemonProcess, http, metric, write_config

from daemon.kafka.broker import free_port
from daemon.settings import parse_config
from daemon.http.health import Readiness
from daemon.kafka.source import KafkaSource


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def unreachable_source(clock: Clock, address: str = "10.9.8.7:9092") -> KafkaSource:
    """A source whose consumer cannot be created, as kafka-python fails without a broker."""
    def no_broker(**_settings):
        raise KafkaTimeoutError(f"Unable to bootstrap from [{address!r}]")

    cfg = parse_config({"kafka": {"bootstrap_servers": address, "topics": ["docs"],
                                  "reconnect_backoff_ms": 1,
                                  "reconnect_backoff_max_ms": 1}}).kafka
    return KafkaSource(cfg, consumer_factory=no_broker, clock=clock)


def test_an_unreachable_broker_is_named_with_its_duration():
    clock = Clock()
    source = unreachable_source(clock)
    ready = Readiness(source=source, clock=clock)
    assert ready() == (False, "connecting to Kafka broker 10.9.8.7:9092 for 0 s")
    errors = []
    source.on_error = errors.append
    assert source.poll_batch(timeout=0) == []
    clock.now += 42
    ok, reason = ready()
    assert not ok and errors == ["connect"]
    assert re.fullmatch(r"Kafka broker 10\.9\.8\.7:9092 unreachable for 42 s \(since "
                        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\): KafkaTimeoutError: .*", reason)
    assert source.lag_age() == 42


def stand_in_source(clock, *, lag, idle, answered=True):
    return SimpleNamespace(
        unreachable_since=None, unreachable_since_wall=None, last_error=None,
        bootstrap_servers="k:9092", started=0.0, last_contact=clock.now if answered else None,
        last_progress=clock.now - idle, lag=lambda: lag)


def test_a_stall_needs_lag_and_no_progress_for_stall_seconds():
    clock = Clock()
    behind = {("docs", 0): 7, ("docs", 1): 0}
    cases = [({}, 500, True), (behind, 59, True), ({("docs", 0): 0}, 500, True),
             (behind, 60, False)]
    for lag, idle, ok in cases:
        ready = Readiness(source=stand_in_source(clock, lag=lag, idle=idle), stall_seconds=60,
                          clock=clock)
        assert ready()[0] is ok, (lag, idle)
    assert ready()[1] == ("ingestion stalled for 60 s with 7 messages of lag "
                          "(health.stall_seconds: 60)")


def test_only_a_subscription_with_no_existing_topic_is_not_ready():
    """One missing topic of two still leaves the other to consume (the log names it)."""
    clock = Clock()
    for missing, ok in [(frozenset(), True), (frozenset({"b"}), True),
                        (frozenset({"a", "b"}), False)]:
        source = stand_in_source(clock, lag={}, idle=0)
        source.missing_topics, source.config = missing, SimpleNamespace(topics=["a", "b"])
        ready = Readiness(source=source, clock=clock)()
        assert ready[0] is ok, missing
    assert ready[1] == ("none of kafka.topics exists on Kafka broker k:9092 (a, b): nothing to "
                        "consume, and the consumer does not create topics")


def test_every_reason_is_given_most_urgent_first():
    clock = Clock()
    loop = SimpleNamespace(healthy=lambda: (False, "checkpoints failing: disk full"))
    publisher = SimpleNamespace(latest_version=None)
    source = stand_in_source(clock, lag={("docs", 0): 3}, idle=90)
    ok, reason = Readiness(loop=loop, source=source, publisher=publisher, clock=clock)()
    assert not ok and reason == ("ingestion stalled for 90 s with 3 messages of lag "
                                 "(health.stall_seconds: 60); checkpoints failing: disk full; "
                                 "no snapshot has been published yet")
    healthy = Readiness(loop=SimpleNamespace(healthy=lambda: (True, "ok")),
                        source=stand_in_source(clock, lag={}, idle=0),
                        publisher=SimpleNamespace(latest_version=3), clock=clock)
    assert healthy() == (True, "ok")


# --------------------------------------------------------------------------------------------
# the daemon


@pytest.mark.integration  # a daemon process (tests/conftest.py marks the others by module)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_unreachable_broker_at_start_gives_503_naming_it_and_few_log_lines(tmp_path):
    """Operator finding: /readyz said only "no snapshot yet", and 153 of 168 log lines in two
    minutes were the Kafka client's reconnection noise."""
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    config = write_config(tmp_path, address, "docs", kafka={"request_timeout_ms": 3000})
    daemon = DaemonProcess(tmp_path, config)
    try:
        start = time.monotonic()
        end = start + DEADLINE
        while True:
            status, _, body = http(daemon.url + "/readyz")
            if "unreachable" in body.get("reason", ""):
                break
            assert time.monotonic() < end, f"/readyz never named the broker: {body}"
            time.sleep(0.2)
        assert status == 503 and body["ready"] is False
        assert f"Kafka broker {address} unreachable for" in body["reason"]
        assert "no snapshot has been published yet" in body["reason"]
        # Several connection attempts, each of which kafka-python logs several times.
        while metric(daemon, "anchorstream_source_errors_total", {"kind": "connect"}) < 4:
            assert daemon.proc.poll() is None, daemon.log()
            assert time.monotonic() < end, "fewer than 4 connection attempts:\n" + daemon.log()
            time.sleep(0.5)
        assert metric(daemon, "anchorstream_consumer_lag_age_seconds") > 0
        elapsed = time.monotonic() - start
        assert daemon.terminate() == 0
    finally:
        daemon.close()
    lines = daemon.log_path.read_text().splitlines()
    kafka_lines = [line for line in lines if " kafka." in line]
    # One line per repeated message per minute (logging.kafka_repeat_seconds): kafka-python has
    # about five messages for a refused connection; without the limit every attempt logs them.
    assert len(kafka_lines) <= 8 * (1 + int(elapsed // 60)), "\n".join(kafka_lines)
    source_lines = [line for line in lines if "anchorstream.source" in line]
    assert len(source_lines) == 1, source_lines  # the first failure; the repeats are DEBUG


def test_a_misspelled_topic_is_named_and_not_created(kafka_broker, tmp_path):
    """kafka-python used to have the broker create every subscribed topic: a typo in
    kafka.topics became an empty topic and a daemon that was "ready" with nothing to read."""
    from kafka import KafkaAdminClient
    from kafka_broker import unique_name

    topic = unique_name("typo")
    config = write_config(tmp_path, kafka_broker.bootstrap_servers, topic)
    daemon = DaemonProcess(tmp_path, config)
    try:
        end = time.monotonic() + DEADLINE
        while True:
            status, _, body = http(daemon.url + "/readyz")
            if "none of kafka.topics exists" in body.get("reason", ""):
                break
            assert daemon.proc.poll() is None, daemon.log()
            assert time.monotonic() < end, f"/readyz never named the missing topic: {body}"
            time.sleep(0.2)
        assert status == 503 and topic in body["reason"]
        # kill -USR1 dumps every thread's stack into the log and the daemon goes on.
        dump = daemon.stacks()
        assert "most recent call first" in dump and "daemon/cli/run.py" in dump, dump
        assert daemon.proc.poll() is None
        assert daemon.terminate() == 0
    finally:
        daemon.close()
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        assert topic not in admin.list_topics()
    finally:
        admin.close()
    assert "kafka.topics names topics the broker does not have" in daemon.log_path.read_text()
