"""The Kafka source and producers against a real broker (Tansu), and `anchorstream replay`."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import threading
import time

import pytest
from kafka_broker import (
    FAST_GROUP,
    committed_offset,
    produce,
    read_topic,
    unique_name,
)

from daemon.cli import replay as cmd_replay
from daemon.kafka.broker import EmbeddedBroker, free_port
from daemon.settings import parse_config
from daemon.kafka.client import client_settings
from daemon.kafka.producers import DeadLetterProducer, ModelUpdatesProducer
from daemon.kafka.source import KafkaSource, SourceError, SourceRecord


def kafka_config(bootstrap: str, topics, **extra):
    return parse_config({"kafka": {
        "bootstrap_servers": bootstrap, "topics": list(topics),
        "group_id": unique_name("group"), **FAST_GROUP, **extra}}).kafka


def consume_all(source: KafkaSource, n: int, *, deadline_s: float = 60.0, max_records=None):
    """Poll until ``n`` records arrived (or fail after a generous deadline)."""
    got: list[SourceRecord] = []
    end = time.monotonic() + deadline_s
    while len(got) < n:
        assert time.monotonic() < end, (
            f"only {len(got)} of {n} records arrived (assigned {sorted(source.assignment())}, "
            f"delivered up to {source.positions()}, topic ids {source.topic_ids()})")
        got += source.poll_batch(max_records=max_records, timeout=0.5)
    return got


@pytest.fixture
def two_partitions(kafka_broker):  # noqa: F811 - the fixture imported above
    topic = unique_name("docs")
    kafka_broker.create_topics({topic: 2})
    values = {p: [f"p{p}-{i}".encode() for i in range(60)] for p in (0, 1)}
    values[1][7] = b"\xff\xfe not utf-8"  # raw bytes pass through untouched
    for p in (0, 1):
        produce(kafka_broker.bootstrap_servers, topic, values[p], partition=p)
    return kafka_broker, topic, values


def test_consumes_every_message_raw_in_order(two_partitions):
    broker, topic, values = two_partitions
    with KafkaSource(kafka_config(broker.bootstrap_servers, [topic])) as source:
        got = consume_all(source, 120, max_records=25)
        assert len(got) == 120
        for p in (0, 1):
            recs = [r for r in got if r.partition == p]
            assert [r.offset for r in recs] == list(range(60))
            assert [r.value for r in recs] == values[p]
            assert all(r.topic == topic and isinstance(r.timestamp, int) for r in recs)
        assert source.positions() == {(topic, 0): 60, (topic, 1): 60}
        assert source.assignment() == {(topic, 0), (topic, 1)}
        assert source.lag() == {(topic, 0): 0, (topic, 1): 0}
        assert source.poll_batch(timeout=0.2) == []
        assert source.connected and source.last_delivery is not None
        assert set(source.topic_ids()) == {topic}


def test_seeks_to_the_stored_offsets_on_assignment(two_partitions):
    broker, topic, values = two_partitions
    stored = {(topic, 0): 45, (topic, 1): None}
    asked = []

    def offsets_for(t, p):
        asked.append((t, p))
        return stored[(t, p)]

    with KafkaSource(kafka_config(broker.bootstrap_servers, [topic]),
                     offsets_for=offsets_for) as source:
        got = consume_all(source, 15 + 60)
        assert sorted(asked) == [(topic, 0), (topic, 1)]
        assert [r.offset for r in got if r.partition == 0] == list(range(45, 60))
        assert [r.offset for r in got if r.partition == 1] == list(range(60))


def test_reassignment_never_redelivers_what_was_delivered(two_partitions):
    """A rebalance while records sit uncheckpointed must not seek back to the checkpoint."""
    broker, topic, values = two_partitions
    with KafkaSource(kafka_config(broker.bootstrap_servers, [topic]),
                     offsets_for=lambda t, p: 10) as source:
        first = consume_all(source, 100)
        assert len(first) == 100
        # What kafka-python's I/O thread does when the group rebalances: the listener fires.
        from kafka import TopicPartition

        tps = {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        source._revoked(tps)
        source._assigned(tps)
        assert source.poll_batch(timeout=0.5) == []
        produce(broker.bootstrap_servers, topic, [b"late"], partition=0)
        (late,) = consume_all(source, 1)
        assert (late.partition, late.offset, late.value) == (0, 60, b"late")


def test_lag_is_reported_while_behind(two_partitions):
    broker, topic, values = two_partitions
    cfg = kafka_config(broker.bootstrap_servers, [topic], max_poll_records=10)
    with KafkaSource(cfg, lag_refresh_seconds=0.0) as source:
        consume_all(source, 10, max_records=10)
        lag = source.lag()
        assert lag and sum(lag.values()) > 0 and all(v >= 0 for v in lag.values())
        consume_all(source, 110, max_records=10)
        assert source.lag() == {(topic, 0): 0, (topic, 1): 0}


def test_a_failing_store_is_fatal(two_partitions):
    broker, topic, _ = two_partitions

    def broken(t, p):
        raise OSError("store unreadable")

    with KafkaSource(kafka_config(broker.bootstrap_servers, [topic]),
                     offsets_for=broken) as source:
        end = time.monotonic() + 60
        with pytest.raises(SourceError, match="store unreadable"):
            while time.monotonic() < end:
                source.poll_batch(timeout=0.5)
        with pytest.raises(SourceError):  # and stays fatal
            source.poll_batch(timeout=0)


def test_informational_commit(two_partitions):
    broker, topic, _ = two_partitions
    cfg = kafka_config(broker.bootstrap_servers, [topic])
    with KafkaSource(cfg) as source:
        consume_all(source, 120)
        source.commit({(topic, 0): 60, (topic, 1): 60, ("other", 0): 5})
        # The commit is asynchronous: poll (which lets it complete) until the group has it.
        end = time.monotonic() + 60
        while committed_offset(broker.bootstrap_servers, cfg.group_id, topic, 0) != 60:
            assert time.monotonic() < end, "the group never got the committed offset"
            source.poll_batch(timeout=0.5)
    assert committed_offset(broker.bootstrap_servers, cfg.group_id, topic, 0) == 60


def test_dead_letter_carries_the_reason(kafka_broker):  # noqa: F811
    dlq = unique_name("dead")
    kafka_broker.create_topics([dlq])
    cfg = kafka_config(kafka_broker.bootstrap_servers, ["docs"], dead_letter_topic=dlq)
    outcomes = []
    producer = DeadLetterProducer(cfg, on_outcome=outcomes.append)
    producer.max_value_bytes = 100  # exercise truncation without a megabyte message
    bad = SourceRecord("docs", 3, 17, b"{not json", key=b"k1")
    big = SourceRecord("docs", 0, 18, b"x" * 500)
    assert producer.send(bad, "invalid_json", "Expecting property name: line 1 column 2")
    assert producer.send(big, "oversized")
    producer.flush(30)
    producer.close()
    assert outcomes == ["sent", "sent"]
    first, second = read_topic(kafka_broker.bootstrap_servers, dlq, 2)
    assert first.value == b"{not json" and first.key == b"k1"
    headers = dict(first.headers)
    assert headers["reason"] == b"invalid_json"
    assert headers["source_topic"] == b"docs" and headers["source_offset"] == b"17"
    assert headers["source_partition"] == b"3" and headers["error"].startswith(b"Expecting")
    assert second.value == b"x" * 100 and dict(second.headers)["truncated_from"] == b"500"


def test_model_updates_hook(kafka_broker):  # noqa: F811
    updates = unique_name("updates")
    kafka_broker.create_topics([updates])
    cfg = kafka_config(kafka_broker.bootstrap_servers, ["docs"], model_updates_topic=updates)
    hook = ModelUpdatesProducer(cfg)
    hook({"version": 3, "topics": [{"id": 1, "top_words": ["a", "b"]}]})
    hook.flush(30)
    hook.close()
    (record,) = read_topic(kafka_broker.bootstrap_servers, updates, 1)
    assert json.loads(record.value) == {
        "version": 3, "topics": [{"id": 1, "top_words": ["a", "b"]}]}
    assert record.key == cfg.group_id.encode()


def test_model_updates_carry_the_trends(kafka_broker, tmp_path):  # noqa: F811
    """The publisher's summaries, through the real broker, name what is new and rising."""
    from daemon.publish import Publisher
    from tests.test_trends_api import stream

    updates = unique_name("updates")
    kafka_broker.create_topics([updates])
    cfg = kafka_config(kafka_broker.bootstrap_servers, ["docs"], model_updates_topic=updates)
    hook = ModelUpdatesProducer(cfg)
    pub = Publisher(tmp_path, on_publish=hook)
    stream(pub)  # ten snapshots; topic 9 born at version 4 and growing
    hook.flush(30)
    hook.close()
    records = read_topic(kafka_broker.bootstrap_servers, updates, 10)
    last = json.loads(records[-1].value)
    assert last["version"] == 10 and last["trends"]["window"] == [1, 10]
    trends = pub.trends()
    assert last["trends"]["new"] == [{"id": 9, "score": round(trends.new[0].score, 4)}]
    assert last["trends"]["rising"][0]["id"] == 9
    assert [g["id"] for g in last["trends"]["gone"]] == [2, 3]
    assert json.loads(records[0].value)["trends"]["new"] == []


def test_security_settings_are_passed_through(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    cfg = parse_config({"kafka": {
        "bootstrap_servers": ["b1:9093", "b2:9093"], "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "anchor",
        "sasl_plain_password": "pw", "ssl_cafile": str(ca)}}).kafka
    s = client_settings(cfg)
    assert s["bootstrap_servers"] == ["b1:9093", "b2:9093"]
    assert (s["security_protocol"], s["sasl_mechanism"]) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (s["sasl_plain_username"], s["sasl_plain_password"]) == ("anchor", "pw")
    assert s["ssl_cafile"] == str(ca)
    embedded = parse_config({"kafka": {"bootstrap_servers": "embedded"}}).kafka
    with pytest.raises(SourceError, match="embedded"):
        client_settings(embedded)
    assert client_settings(embedded, "127.0.0.1:1")["bootstrap_servers"] == "127.0.0.1:1"


@pytest.fixture
def refused_connections():
    """For tests that make kafka-python's connections fail on purpose.

    kafka-python 3.0.12 leaves the socket of a refused connection to the garbage collector,
    which reports it as a ResourceWarning (an error in this suite). The sockets are freed by a
    collection at the end of the test, under the warning filter below -- provided nothing else
    holds them: pytest's log capture keeps every record, and kafka-python logs the failures with
    tracebacks that reference the sockets, so its loggers are silenced for the test.
    """
    kafka_log = logging.getLogger("kafka")
    level = kafka_log.level
    kafka_log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        kafka_log.setLevel(level)
        gc.collect()


_REFUSED_SOCKETS = pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning", "ignore::ResourceWarning")


@_REFUSED_SOCKETS
@pytest.mark.usefixtures("refused_connections")
def test_no_broker_is_retried_without_raising():
    threads_before = threading.active_count()
    cfg = kafka_config(f"127.0.0.1:{free_port()}", ["docs"], request_timeout_ms=1000,
                       reconnect_backoff_ms=50, reconnect_backoff_max_ms=200)
    with KafkaSource(cfg) as source:
        for _ in range(3):
            assert source.poll_batch(timeout=0.2) == []
        assert not source.connected and source.errors >= 1
        assert "bootstrap" in source.last_error or "NoBrokers" in source.last_error
    # Failed attempts do not leave kafka-python I/O threads behind.
    assert threading.active_count() <= threads_before


@pytest.mark.slow
@_REFUSED_SOCKETS
@pytest.mark.usefixtures("refused_connections")
def test_broker_outage_and_recovery(caplog):
    """Stop the broker under a live consumer, start it again: consumption resumes."""
    # Failed about once in twenty runs on a loaded machine (no record after the restart within
    # 90 s) until session 47 found why: the consumer's metadata requests had the restarted
    # broker create the topic with four partitions, the rejoin this caused was left unfinished
    # by kafka-python, and the consumer stayed without partitions (daemon.kafka.mends). If it
    # fails again, the source's assignments, seeks and topic-id changes are in the captured log.
    caplog.set_level(logging.INFO, logger="anchorstream.source")
    with EmbeddedBroker() as broker:
        topic = unique_name("outage")
        broker.create_topics({topic: 1})
        produce(broker.bootstrap_servers, topic, [b"before-%d" % i for i in range(5)])
        cfg = kafka_config(broker.bootstrap_servers, [topic], reconnect_backoff_max_ms=500)
        resets = []
        with KafkaSource(cfg, offsets_for=lambda t, p: 5, on_topic_reset=resets.append) as source:
            produce(broker.bootstrap_servers, topic, [b"before-%d" % i for i in range(5, 8)])
            assert [r.value for r in consume_all(source, 3)][-1] == b"before-7"
            broker.stop()
            for _ in range(3):
                assert source.poll_batch(timeout=0.3) == []  # no exception while it is away
            # Memory storage: the restarted broker is empty and its offsets start at 0 again.
            broker.start()
            broker.create_topics({topic: 1})
            # To partition 0 (kafka-python's consumer used to have the broker auto-create the
            # topic with several partitions before create_topics did; see the comment above).
            produce(broker.bootstrap_servers, topic, [b"after-%d" % i for i in range(3)],
                    partition=0)
            after = consume_all(source, 3, deadline_s=90)
            assert {r.partition for r in after} == {0}
            # The old incarnation's offsets (delivered 5, stored 5) were not applied to the new.
            assert [r.value for r in after] == [b"after-0", b"after-1", b"after-2"]
            assert [r.offset for r in after] == [0, 1, 2]
            assert resets == [topic]


def test_a_subscribed_topic_that_does_not_exist_is_not_created(kafka_broker, caplog):  # noqa: F811
    """kafka-python 3.0.12 asks the broker to create subscribed topics whatever the consumer's
    allow_auto_create_topics says (daemon.kafka.mends): a typo in kafka.topics must not."""
    from kafka import KafkaAdminClient

    caplog.set_level(logging.ERROR, logger="kafka.cluster")
    topic = unique_name("typo")
    cfg = kafka_config(kafka_broker.bootstrap_servers, [topic])
    with KafkaSource(cfg) as source:
        end = time.monotonic() + 60
        # The broker answered a metadata request for the topic: "not found" (or, without the
        # mend, a topic it created on the spot, and this loop runs out of time).
        while not any("not found in cluster metadata" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < end, "no metadata answer for the missing topic"
            assert source.poll_batch(timeout=0.2) == []
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        assert topic not in admin.list_topics()
    finally:
        admin.close()


def test_a_rejoin_on_new_partitions_completes(kafka_broker, caplog):  # noqa: F811
    """A subscribed topic created after the group formed makes the leader rejoin (a metadata
    change). kafka-python 3.0.12 could leave that join unfinished when a poll returned while its
    SyncGroup was on the wire, and the consumer then waited forever with no partitions
    (daemon.kafka.mends); short polls make that window likely. Three such rejoins in a row.

    Tansu answers every SyncGroup of a group with its first assignment (the generation stays 0),
    so the new topics' partitions may not be assigned here; what must hold is that every
    rejoin ends with the first topic's partition assigned again."""
    caplog.set_level(logging.INFO, logger="anchorstream.source")
    topics = [unique_name("later") for _ in range(4)]
    kafka_broker.create_topics({topics[0]: 1})
    with KafkaSource(kafka_config(kafka_broker.bootstrap_servers, topics)) as source:
        for n in range(len(topics)):
            if n:
                seen = len(caplog.records)
                kafka_broker.create_topics({topics[n]: 1})
            end = time.monotonic() + 90
            while (n and not any(r.getMessage().startswith("revoked")
                                 for r in caplog.records[seen:])
                   or (topics[0], 0) not in source.assignment()):
                assert time.monotonic() < end, (
                    f"rejoin {n}: assigned {sorted(source.assignment())}")
                source.poll_batch(timeout=0.01)


class _Pending:
    """What a selector's ``wait_write`` returns: suspends the connecting coroutine once."""

    def __await__(self):
        yield


class _Selector:
    def wait_write(self, sock, timeout_at=None):
        return _Pending()


@pytest.mark.parametrize("ending", ["timeout", "cancelled"])
def test_a_connection_that_does_not_complete_closes_its_socket(ending):
    """kafka-python 3.0.12 left the socket of a timed-out or cancelled connection attempt open
    until the garbage collector found it (daemon.kafka.mends.close_failed_connects): a real
    socket, connecting to a real listener on loopback."""
    import errno
    import socket

    from kafka.errors import KafkaTimeoutError
    from kafka.net.inet import KafkaNetSocket

    class StillConnecting(KafkaNetSocket):
        SCHEMES = ()  # kafka-python registers every subclass by its proxy schemes

        def connect_ex(self, sock, sockaddr):
            super().connect_ex(sock, sockaddr)
            return errno.EINPROGRESS  # as on a loaded machine: not connected yet

    with socket.create_server(("127.0.0.1", 0)) as listener:
        addr = (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                listener.getsockname())
        opened: list[socket.socket] = []
        factory = StillConnecting()
        factory.socket = lambda *a: opened.append(socket.socket(*a)) or opened[-1]
        if ending == "timeout":
            attempt = factory.connect(_Selector(), addr, timeout_at=time.monotonic() - 1)
            with pytest.raises(KafkaTimeoutError):
                attempt.send(None)
        else:
            attempt = factory.connect(_Selector(), addr, timeout_at=time.monotonic() + 60)
            attempt.send(None)  # suspended in wait_write
            attempt.close()  # what closing the client does to its pending tasks
        assert len(opened) == 1 and opened[0].fileno() == -1, "the socket was left open"


def test_a_connection_closed_with_a_request_buffered_closes_its_socket():
    """A transport closed while bytes wait to be sent defers its close to its write task;
    kafka-python 3.0.12 never closed the socket when the client's own close cancelled that
    task first (daemon.kafka.mends.close_when_writes_cancelled)."""
    import socket

    from kafka.net.transport import KafkaTCPTransport

    ours, broker = socket.socketpair()
    with broker:
        transport = KafkaTCPTransport(_Selector(), ours, host="broker")
        transport._write_buffer.append(b"a LeaveGroup request")
        transport.close()
        assert ours.fileno() != -1  # deferred until the buffer is flushed
        writing = transport._write_to_sock()
        writing.send(None)  # waits for the socket to be writable
        writing.close()  # the client's close cancels its pending tasks
        assert ours.fileno() == -1, "the socket was left open"


def test_a_consumer_close_that_raises_still_closes_the_client(two_partitions):
    """kafka-python closes its client (connections, wake-up sockets, IO thread) after the group
    coordinator: a coordinator whose close raises left them all open, and a second close
    returns at once (daemon.kafka.mends.close_client)."""
    broker, topic, _ = two_partitions
    source = KafkaSource(kafka_config(broker.bootstrap_servers, [topic]))
    consume_all(source, 1)  # connected to the broker and a member of the group
    consumer = source._consumer
    coordinator_close = consumer._coordinator.close

    def close_then_raise(*args, **kwargs):
        coordinator_close(*args, **kwargs)
        raise RuntimeError("the coordinator failed to close")

    consumer._coordinator.close = close_then_raise
    source.close()
    client = consumer._client
    assert client._manager.closed, "the client's connections were left open"
    assert client._net._closed, "the client's selector was left open"
    assert not any(conn.connected for conn in client._manager._conns.values())


# --------------------------------------------------------------------------------------------
# anchorstream replay


def replay(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cmd_replay.register(parser.add_subparsers())
    args = parser.parse_args(["replay", *argv])
    return args.func(args)


def test_replay_produces_every_line(kafka_broker, tmp_path):  # noqa: F811
    topic = unique_name("replay")
    lines = [json.dumps({"id": i, "text": f"document number {i}"}) for i in range(30)]
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(lines[:10]) + "\n\n" + "\n".join(lines[10:]) + "\n{broken\n")
    start = time.monotonic()
    rc = replay(str(path), "--topic", topic, "--bootstrap-servers",
                kafka_broker.bootstrap_servers, "--create-topic", "1", "--key-field", "id",
                "--rate", "200", "--quiet")
    assert rc == 0
    # Pacing only ever waits, so 31 messages at 200/s take at least 30/200 s.
    assert time.monotonic() - start >= 30 / 200
    records = read_topic(kafka_broker.bootstrap_servers, topic, 31)
    assert [r.value.decode() for r in records] == lines + ["{broken"]  # sent as is
    assert [r.key for r in records[:3]] == [b"0", b"1", b"2"] and records[-1].key is None


def test_replay_text_with_limit_and_config(kafka_broker, tmp_path):  # noqa: F811
    topic = unique_name("replay-text")
    kafka_broker.create_topics([topic])
    path = tmp_path / "posts.txt"
    path.write_bytes(b"first post\nsecond post\n\xff not utf-8\nfourth\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"kafka:\n  bootstrap_servers: {kafka_broker.bootstrap_servers}\n")
    assert replay(str(path), "--topic", topic, "--config", str(config), "--format", "text",
                  "--limit", "3", "--quiet") == 0
    records = read_topic(kafka_broker.bootstrap_servers, topic, 3)
    assert [r.value for r in records] == [b"first post", b"second post", b"\xff not utf-8"]


def test_replay_rejects_bad_arguments(tmp_path):
    from anchorstream.errors import InputError

    with pytest.raises(InputError, match="does not exist"):
        replay(str(tmp_path / "missing.jsonl"), "--topic", "t")
    (tmp_path / "a.txt").write_text("x\n")
    with pytest.raises(InputError, match="--rate"):
        replay(str(tmp_path / "a.txt"), "--topic", "t", "--rate", "0")
    with pytest.raises(InputError, match="--key-field needs"):
        replay(str(tmp_path / "a.txt"), "--topic", "t", "--format", "text", "--key-field", "id")
    # A name Kafka refuses was kafka-python's ValueError at the first send.
    with pytest.raises(SystemExit) as exit_:
        replay(str(tmp_path / "a.txt"), "--topic", "bad topic!")
    assert exit_.value.code == 2
