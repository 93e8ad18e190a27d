"""The daemon as users run it: a real broker, a real ``python -m daemon run`` process, real HTTP.

Every test starts the daemon as a child process with a generated ``config.yaml`` (``http.port:
0``) and reads its address from ``--ready-file``. Sizes are small (K = 6 planted topics over
300 words, a few thousand short documents) and nothing is asserted about timing; the generous
deadlines only turn a hang into a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from kafka_broker import FAST_GROUP, produce, read_topic, unique_name
from prometheus_client.parser import text_string_to_metric_families

from anchorstream.store import store_info
from anchorstream.synthetic import planted_model, sample_documents
from daemon.kafka.broker import BrokerError, EmbeddedBroker, resolve_binary

REPO = Path(__file__).resolve().parents[1]
K = 6
DEADLINE = 120.0


def corpus(n_docs: int, seed: int) -> list[bytes]:
    """JSON messages whose words ``w0000``..``w0299`` come from K planted topics."""
    truth = planted_model(300, K, random_state=0)
    X, _ = sample_documents(truth, n_docs, doc_length=30, random_state=seed)
    out = []
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        words = [f"w{j:04d}" for j, c in zip(X.indices[lo:hi], X.data[lo:hi])
                 for _ in range(int(c))]
        out.append(json.dumps({"text": " ".join(words), "id": f"{seed}-{i}"}).encode())
    return out


def write_config(tmp: Path, bootstrap: str, topic: str, **sections) -> Path:
    cfg = {
        "kafka": {"bootstrap_servers": bootstrap, "topics": [topic],
                  "group_id": unique_name("daemon"), **FAST_GROUP,
                  "reconnect_backoff_max_ms": 1000},
        "message": {"max_bytes": 4000},
        "store": {"path": str(tmp / "store"), "checkpoint_every_docs": 300,
                  "checkpoint_every_seconds": 0.5},
        "vocab": {"capacity": 500, "min_df": 3, "admit_threshold": 2},
        "model": {"num_topics": K, "anchor_min_df": 5},
        "refresh": {"interval_seconds": 0.5, "min_new_docs": 1},
        "snapshots": {"path": str(tmp / "snapshots"), "keep": 5},
        "http": {"port": 0},
    }
    for name, values in sections.items():
        cfg.setdefault(name, {}).update(values)
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


class DaemonProcess:
    """``python -m daemon run --config ...`` as a child process."""

    def __init__(self, tmp: Path, config: Path, name: str = "daemon"):
        self.ready = tmp / f"{name}.ready.json"
        self.ready.unlink(missing_ok=True)
        self.log_path = tmp / f"{name}.log"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daemon", "run", "--config", str(config),
                 "--ready-file", str(self.ready)],
                cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        end = time.monotonic() + DEADLINE
        while not self.ready.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited with {self.proc.returncode}:\n"
                                     + self.log())
            assert time.monotonic() < end, "the daemon did not start:\n" + self.log()
            time.sleep(0.05)
        self.info = json.loads(self.ready.read_text())
        self.url = self.info["http_url"]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stacks(self, timeout: float = 60.0) -> str:
        """Every thread's stack, as the daemon writes it on SIGUSR1 (for failure messages)."""
        return stack_dump(self.proc, self.log_path, timeout)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self, timeout: float = 60.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def stack_dump(proc: subprocess.Popen, log_path: Path, timeout: float = 60.0) -> str:
    """Every thread's stack, as a daemon process writes it into its log on SIGUSR1.

    The dump is written thread by thread, the main thread (the oldest) last, and under
    ``python -m daemon`` the main thread's outermost frame is runpy's ``_run_module_as_main``:
    the dump is complete once that frame is in it."""
    if proc.poll() is not None:
        return f"(the process exited with {proc.returncode})"
    start = log_path.stat().st_size
    proc.send_signal(signal.SIGUSR1)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        dump = log_path.read_bytes()[start:]
        if b"_run_module_as_main" in dump:
            return dump.decode(errors="replace")
        time.sleep(0.1)
    return "(no complete stack dump within %g s)" % timeout


def http(url: str, method: str = "GET", body=None, headers=None, timeout: float = 60.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, hdrs, raw = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        status, hdrs, raw = exc.code, dict(exc.headers), exc.read()
    ctype = hdrs.get("Content-Type", "")
    return status, hdrs, (json.loads(raw) if raw and "json" in ctype else raw)


def wait_for_docs(daemon: DaemonProcess, num_docs: int, deadline: float = DEADLINE) -> dict:
    """Long-poll ``/v1/snapshots/latest`` until a snapshot covers ``num_docs`` documents."""
    end = time.monotonic() + deadline
    etag = None
    while True:
        headers = {"If-None-Match": etag} if etag else {}
        status, hdrs, body = http(daemon.url + "/v1/snapshots/latest?wait=5", headers=headers)
        if status == 200:
            etag = hdrs["ETag"]
            assert body["num_docs"] <= num_docs
            if body["num_docs"] == num_docs:
                return body
        assert daemon.proc.poll() is None, "the daemon died:\n" + daemon.log()
        if time.monotonic() >= end:
            raise AssertionError(f"no snapshot with {num_docs} documents (last: {status}):\n"
                                 + daemon.log() + "\nthe daemon's threads:\n" + daemon.stacks())


def metric(daemon: DaemonProcess, name: str, labels: dict | None = None) -> float:
    """One sample of the daemon's ``/metrics`` (0 when absent)."""
    status, _, raw = http(daemon.url + "/metrics")
    assert status == 200
    for family in text_string_to_metric_families(raw.decode()):
        for s in family.samples:
            if s.name == name and (labels is None or s.labels == labels):
                return s.value
    return 0.0


def wait_until(predicate, what: str, daemon: DaemonProcess | None = None,
               deadline: float = DEADLINE):
    """Poll ``predicate`` until it returns something truthy; fail naming ``what`` after
    ``deadline`` seconds (a bound on a hang, not on speed) or when the daemon died."""
    end = time.monotonic() + deadline
    while not (value := predicate()):
        if daemon is not None:
            assert daemon.proc.poll() is None, f"the daemon died waiting for {what}:\n" \
                + daemon.log()
        assert time.monotonic() < end, f"no {what} after {deadline:g} s" + (
            ":\n" + daemon.log() if daemon is not None else "")
        time.sleep(0.05)
    return value


def committed_records(store: Path, topic: str) -> int:
    """Records of ``topic`` (all partitions) before the store's committed offsets."""
    offsets = store_info(str(store))["offsets"]
    return sum(v for k, v in offsets.items() if k.startswith(f"kafka:{topic}:"))


@pytest.fixture
def cleanup():
    items = []
    yield items
    for item in reversed(items):
        item.close()


BAD = {
    "invalid_json": b"{not json",
    "wrong_type": b'{"text": 5}',
    "empty": b'{"text": ""}',
    "invalid_utf8": b'{"text": "\xff\xfe"}',
    "oversized": b'{"text": "' + b"w0001 " * 1000 + b'"}',
    "not_an_object": b'["w0001", "w0002"]',
    "missing_field": b'{"body": "w0001 w0002"}',
}


def test_end_to_end_snapshots_api_metrics_and_bad_input(kafka_broker, tmp_path, cleanup):
    topic, dead = unique_name("docs"), unique_name("dead")
    kafka_broker.create_topics({topic: 2, dead: 1})
    boot = kafka_broker.bootstrap_servers
    valid = corpus(1500, seed=1)
    bad = list(BAD.values())
    # Bad messages interleaved with the valid ones.
    stream = valid[:500] + bad[:3] + valid[500:1000] + bad[3:] + valid[1000:]
    produce(boot, topic, stream)
    config = write_config(tmp_path, boot, topic, kafka={"dead_letter_topic": dead})
    daemon = DaemonProcess(tmp_path, config)
    cleanup.append(daemon)

    snap = wait_for_docs(daemon, 1500)
    assert snap["num_topics"] == K and len(snap["topics"]) == K
    assert sorted(t["id"] for t in snap["topics"]) == list(range(K))
    for t in snap["topics"]:
        assert t["anchor"] and len(t["top_words"]) >= 20 and t["prevalence"] > 0
    assert snap["source"]["store_version"]
    offsets = snap["source"]["offsets"]
    assert sum(v for k, v in offsets.items() if k.startswith(f"kafka:{topic}:")) == len(stream)

    # ETag / 304
    status, hdrs, body = http(daemon.url + "/v1/snapshots/latest")
    etag = hdrs["ETag"]
    assert status == 200 and etag == f'"{body["version"]}"'
    status, _, _ = http(daemon.url + "/v1/snapshots/latest", headers={"If-None-Match": etag})
    assert status == 304

    # Long poll: a waiting request is answered by the snapshot of newly produced documents.
    # (Whether it is already waiting when they are produced or not, its answer is that
    # snapshot: test_api.py checks on the server itself that a waiting request is released.)
    result = {}

    def poll():
        # A wait that times out (304: nothing new yet, on a slow machine) is asked again.
        end = time.monotonic() + DEADLINE
        while True:
            result["r"] = http(daemon.url + "/v1/snapshots/latest?wait=60",
                               headers={"If-None-Match": etag})
            if result["r"][0] != 304 or time.monotonic() > end:
                return

    waiter = threading.Thread(target=poll)
    waiter.start()
    produce(boot, topic, corpus(200, seed=2))
    waiter.join(2 * DEADLINE)
    status, hdrs, body = result["r"]
    assert status == 200 and body["version"] > snap["version"] and hdrs["ETag"] != etag
    snap = wait_for_docs(daemon, 1700)

    # Inference under the latest snapshot.
    text = json.loads(valid[0])["text"]
    status, _, body = http(daemon.url + "/v1/infer", "POST", {"text": text, "min_weight": 0})
    assert status == 200 and len(body["topics"]) == K
    assert abs(sum(t["weight"] for t in body["topics"]) - 1) < 1e-6
    status, _, body = http(daemon.url + "/v1/infer", "POST", {"nope": 1})
    assert 400 <= status < 500 and "error" in body
    assert http(daemon.url + "/readyz")[0] == 200
    status, _, body = http(daemon.url + f"/v1/topics/{snap['topics'][0]['id']}")
    assert status == 200 and len(body["history"]) >= 2

    # Metrics
    status, _, raw = http(daemon.url + "/metrics")
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(raw.decode())}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in families.values() for s in f.samples}
    for name in ("anchorstream_messages_consumed", "anchorstream_messages_rejected",
                 "anchorstream_documents_accumulated", "anchorstream_tokens_accumulated",
                 "anchorstream_consumer_lag_messages", "anchorstream_checkpoint_duration_seconds",
                 "anchorstream_checkpoint_size_bytes", "anchorstream_refresh_duration_seconds",
                 "anchorstream_refresh_failures", "anchorstream_snapshot_version",
                 "anchorstream_snapshot_age_seconds", "anchorstream_vocabulary_size_words",
                 "anchorstream_vocabulary_admissions", "anchorstream_vocabulary_evictions",
                 "anchorstream_topic_churn", "anchorstream_rectification_residual",
                 "anchorstream_store_size_bytes", "anchorstream_process_resident_memory_bytes"):
        assert name in families, name
    for reason in BAD:
        assert samples[("anchorstream_messages_rejected_total", (("reason", reason),))] == 1
    assert samples[("anchorstream_documents_accumulated_total", ())] == 1700
    assert samples[("anchorstream_messages_consumed_total", (("topic", topic),))] == 1707
    stages = {dict(k[1]).get("stage") for k in samples
              if k[0] == "anchorstream_refresh_duration_seconds_count"}
    assert {"rectify", "anchors", "recover", "align", "publish"} <= stages
    assert samples[("anchorstream_snapshot_documents", ())] == 1700

    # Every rejected message went to the dead-letter topic with its reason.
    letters = read_topic(boot, dead, len(BAD))
    reasons = sorted(dict(r.headers)["reason"].decode() for r in letters)
    assert reasons == sorted(BAD)

    assert daemon.terminate() == 0
    assert "anchorstream daemon stopped" in daemon.log()


def test_sigkill_restarts_count_every_document_exactly_once(kafka_broker, tmp_path, cleanup):
    """Three daemons are SIGKILLed, each holding records it consumed but has not checkpointed;
    the fourth ends with every document counted exactly once.

    Nothing here depends on the machine's speed. The test produces the stream in stages, one
    per run, and the runs checkpoint by record count only (every 200 records, one record
    per poll, no time trigger), so it knows exactly which checkpoints a run makes: it waits
    until the run has consumed every record produced so far and made those checkpoints, then
    kills it with the records after its last checkpoint in memory, and checks that the store
    holds exactly the checkpointed prefix. The final run checkpoints on time as usual.
    """
    topic = unique_name("docs")
    kafka_broker.create_topics({topic: 2})
    boot = kafka_broker.bootstrap_servers
    valid = corpus(3000, seed=3)
    chunks = [valid[i:i + 75] + [BAD["invalid_json"]] for i in range(0, len(valid), 75)]
    stages = [sum(chunks[i:i + 10], []) for i in range(0, len(chunks), 10)]
    assert len(stages) == 4
    every = 200
    store = tmp_path / "store"
    config = write_config(tmp_path, boot, topic, kafka={"max_poll_records": 1},
                          store={"checkpoint_every_docs": every,
                                 "checkpoint_every_seconds": 1e6})
    # The final run: the same store and group, checkpoints on time as the daemon's default.
    final_cfg = yaml.safe_load(config.read_text())
    final_cfg["kafka"].pop("max_poll_records")
    final_cfg["store"].update(checkpoint_every_docs=300, checkpoint_every_seconds=0.3)
    final_config = tmp_path / "final.yaml"
    final_config.write_text(yaml.safe_dump(final_cfg))

    produced = committed = 0
    for i, stage in enumerate(stages[:3]):
        daemon = DaemonProcess(tmp_path, config, name=f"run{i}")
        cleanup.append(daemon)
        # This run starts at the store's committed offsets and checkpoints after every
        # `every` records it consumes (one per poll): it will hold `tail` of them unsaved.
        produce(boot, topic, stage)
        produced += len(stage)
        to_consume = produced - committed
        checkpoints, tail = divmod(to_consume, every)
        assert checkpoints >= 1 and tail > 0, (checkpoints, tail)
        wait_until(lambda: metric(daemon, "anchorstream_messages_consumed_total",
                                  {"topic": topic}) == to_consume,
                   f"run{i} consuming {to_consume} records", daemon)
        wait_until(lambda: metric(daemon, "anchorstream_checkpoints_total") >= checkpoints,
                   f"run{i}'s {checkpoints} checkpoints", daemon)
        daemon.kill()
        # What the killed run committed: exactly its checkpoints, nothing of the tail.
        committed += checkpoints * every
        assert committed_records(store, topic) == committed
    daemon = DaemonProcess(tmp_path, final_config, name="final")
    cleanup.append(daemon)
    produce(boot, topic, stages[3])
    produced += len(stages[3])
    snap = wait_for_docs(daemon, len(valid))
    assert snap["num_docs"] == 3000
    offsets = snap["source"]["offsets"]
    assert sum(v for k, v in offsets.items() if k.startswith(f"kafka:{topic}:")) == produced
    # Each restart resumed from a checkpoint of the run before (not from the beginning). The
    # final run can publish before its group join has positioned the partitions (when the
    # snapshot's documents were all checkpointed before), so wait for its line.
    wait_until(lambda: "starting at offset" in (tmp_path / "final.log").read_text(),
               "'starting at offset' in final.log", daemon)
    for name in ("run1", "run2", "final"):
        assert "starting at offset" in (tmp_path / f"{name}.log").read_text(), name
    status, _, raw = http(daemon.url + "/metrics")
    families = {f.name: f for f in text_string_to_metric_families(raw.decode())}
    assert "anchorstream_messages_rejected" in families
    assert daemon.terminate() == 0


def test_a_delay_line_holds_its_documents_back_across_a_restart(kafka_broker, tmp_path,
                                                                  cleanup):
    """``store.count_delay``: each document is counted that many documents after it arrived;
    the waiting ones are committed with the counts (``store-info``'s ``waiting``), shown by
    ``anchorstream_documents_waiting``, and counted after a restart as more arrive; and once
    the stream pauses for ``store.count_delay_idle_seconds``, every one of them."""
    topic = unique_name("docs")
    kafka_broker.create_topics({topic: 1})
    boot = kafka_broker.bootstrap_servers
    docs = corpus(900, seed=5)
    config = write_config(tmp_path, boot, topic, store={"count_delay": 200,
                                                        "count_delay_idle_seconds": 1e6})
    produce(boot, topic, docs[:600])
    daemon = DaemonProcess(tmp_path, config, name="first")
    cleanup.append(daemon)
    # A snapshot's num_docs is the documents added (the stream's position); the refresh
    # counts those waiting too (with the vocabulary of the version it read): no lag.
    snap = wait_for_docs(daemon, 600)
    assert snap["source"]["matrix_docs"] == 600
    wait_until(lambda: metric(daemon, "anchorstream_documents_waiting") == 200,
               "200 documents waiting", daemon)
    assert daemon.terminate() == 0
    info = store_info(tmp_path / "store")
    assert (info["count_delay"], info["waiting"], info["n_docs_added"]) == (200, 200, 600)
    assert info["num_docs"] == 400
    daemon = DaemonProcess(tmp_path, config, name="second")
    cleanup.append(daemon)
    produce(boot, topic, docs[600:])
    snap = wait_for_docs(daemon, 900)
    # The start says what the store holds back.
    assert "(600 documents committed; store.count_delay 200: 200 documents waiting to be " \
        "counted)" in daemon.log(), daemon.log()
    assert snap["source"]["matrix_docs"] == 900
    assert metric(daemon, "anchorstream_documents_waiting") == 200
    assert daemon.terminate() == 0
    assert store_info(tmp_path / "store")["num_docs"] == 700
    # A paused stream: after 0.5 s without a message the 200 are counted and committed.
    config = write_config(tmp_path, boot, topic, store={"count_delay": 200,
                                                        "count_delay_idle_seconds": 0.5})
    daemon = DaemonProcess(tmp_path, config, name="third")
    cleanup.append(daemon)
    wait_until(lambda: metric(daemon, "anchorstream_documents_waiting") == 0
               and store_info(tmp_path / "store")["num_docs"] == 900,
               "the documents held back counted", daemon)
    assert daemon.terminate() == 0


def wait_for_readyz(daemon: DaemonProcess, status: int, contains: str = "") -> dict:
    """Poll ``/readyz`` until it answers ``status`` with ``contains`` in its reason."""
    end = time.monotonic() + DEADLINE
    while True:
        code, _, body = http(daemon.url + "/readyz")
        if code == status and contains in body.get("reason", ""):
            return body
        assert daemon.proc.poll() is None, "the daemon died:\n" + daemon.log()
        assert time.monotonic() < end, f"/readyz stayed {code} {body}:\n" + daemon.log()
        time.sleep(0.2)


def test_broker_outage_turns_readyz_503_counts_errors_then_ingestion_resumes(tmp_path, cleanup):
    """Operator finding: during an outage /readyz stayed 200 "ok", the lag froze and
    anchorstream_source_errors_total was never incremented."""
    try:
        resolve_binary()
    except BrokerError as exc:
        pytest.skip(f"no broker: {exc}")
    broker = EmbeddedBroker(log_path=tmp_path / "broker.log").start()
    cleanup.append(broker)
    topic = unique_name("docs")
    broker.create_topics({topic: 1})
    produce(broker.bootstrap_servers, topic, corpus(600, seed=4))
    config = write_config(tmp_path, broker.bootstrap_servers, topic,
                          health={"broker_probe_seconds": 1.0})
    daemon = DaemonProcess(tmp_path, config)
    cleanup.append(daemon)
    wait_for_docs(daemon, 600)
    wait_for_readyz(daemon, 200)
    assert metric(daemon, "anchorstream_source_errors_total", {"kind": "probe"}) == 0

    broker.stop()  # memory storage: the topic and its messages are gone
    body = wait_for_readyz(daemon, 503, f"Kafka broker {broker.bootstrap_servers} unreachable")
    assert body["version"] is not None  # the last snapshot is still served
    assert metric(daemon, "anchorstream_source_errors_total", {"kind": "probe"}) >= 1
    age = metric(daemon, "anchorstream_consumer_lag_age_seconds")
    end = time.monotonic() + DEADLINE
    while metric(daemon, "anchorstream_consumer_lag_age_seconds") <= age:
        assert time.monotonic() < end, "the lag's age does not grow during the outage"
        time.sleep(0.2)
    assert http(daemon.url + "/healthz")[0] == 200
    assert http(daemon.url + "/v1/snapshots/latest")[2]["num_docs"] == 600

    broker.start()
    broker.create_topics({topic: 1})  # a new topic under the old name (new topic id)
    produce(broker.bootstrap_servers, topic, corpus(400, seed=5))
    snap = wait_for_docs(daemon, 1000)
    assert snap["num_docs"] == 1000
    wait_for_readyz(daemon, 200)
    assert "answers again" in daemon.log_path.read_text()
    assert daemon.terminate() == 0
