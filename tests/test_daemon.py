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

from anchorstream.synthetic import planted_model, sample_documents
from daemon.broker import BrokerError, EmbeddedBroker, resolve_binary

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

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self, timeout: float = 60.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()


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
        assert time.monotonic() < end, (
            f"no snapshot with {num_docs} documents (last: {status}):\n" + daemon.log())


def metric(daemon: DaemonProcess, name: str, labels: dict | None = None) -> float:
    """One sample of the daemon's ``/metrics`` (0 when absent)."""
    status, _, raw = http(daemon.url + "/metrics")
    assert status == 200
    for family in text_string_to_metric_families(raw.decode()):
        for s in family.samples:
            if s.name == name and (labels is None or s.labels == labels):
                return s.value
    return 0.0


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
    result = {}

    def poll():
        result["r"] = http(daemon.url + "/v1/snapshots/latest?wait=60",
                           headers={"If-None-Match": etag})

    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(0.3)
    produce(boot, topic, corpus(200, seed=2))
    waiter.join(DEADLINE)
    status, hdrs, body = result["r"]
    assert status == 200 and body["version"] > snap["version"] and hdrs["ETag"] != etag
    snap = wait_for_docs(daemon, 1700)

    # Inference under the latest snapshot.
    text = json.loads(valid[0])["text"]
    status, _, body = http(daemon.url + "/v1/infer", "POST", {"text": text})
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
    topic = unique_name("docs")
    kafka_broker.create_topics({topic: 2})
    boot = kafka_broker.bootstrap_servers
    valid = corpus(3000, seed=3)
    chunks = [valid[i:i + 75] + [BAD["invalid_json"]] for i in range(0, len(valid), 75)]
    config = write_config(tmp_path, boot, topic,
                          store={"checkpoint_every_docs": 200, "checkpoint_every_seconds": 0.3})
    done = threading.Event()

    def producer():
        for chunk in chunks:
            produce(boot, topic, chunk)
            time.sleep(0.3)
        done.set()

    feeder = threading.Thread(target=producer, daemon=True)
    feeder.start()
    killed_mid_stream = 0
    for i in range(3):
        daemon = DaemonProcess(tmp_path, config, name=f"run{i}")
        cleanup.append(daemon)
        # Kill once this run has committed some progress of its own, while it is likely
        # holding uncommitted documents in memory (lost with the process, replayed later).
        base = metric(daemon, "anchorstream_checkpoints_total")
        end = time.monotonic() + DEADLINE
        while metric(daemon, "anchorstream_checkpoints_total") < base + 2:
            assert time.monotonic() < end, daemon.log()
            time.sleep(0.05)
        time.sleep(0.1 * i)
        killed_mid_stream += not done.is_set()
        daemon.kill()
    assert killed_mid_stream >= 1
    daemon = DaemonProcess(tmp_path, config, name="final")
    cleanup.append(daemon)
    feeder.join(DEADLINE)
    assert done.is_set()
    snap = wait_for_docs(daemon, len(valid))
    assert snap["num_docs"] == 3000
    # Each restart resumed from a checkpoint of the run before (not from the beginning). The
    # final run can publish from the store before its group join has even positioned the
    # partitions (when run2 checkpointed everything), so wait for its line rather than read once.
    end = time.monotonic() + DEADLINE
    while ("starting at offset" not in (tmp_path / "final.log").read_text()
           and time.monotonic() < end):
        time.sleep(0.1)
    for name in ("run1", "run2", "final"):
        assert "starting at offset" in (tmp_path / f"{name}.log").read_text(), name
    status, _, raw = http(daemon.url + "/metrics")
    families = {f.name: f for f in text_string_to_metric_families(raw.decode())}
    assert "anchorstream_messages_rejected" in families
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
