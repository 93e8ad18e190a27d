"""Scaled out for real: ingest instances in one consumer group, a refresher, an S3 server.

Real parts only: the bundled broker (a 6-partition topic), moto's S3-compatible HTTP server in
this process, ``python -m daemon run --role ingest|refresh`` child processes, SIGKILL. The
published snapshot must count every produced document exactly once, and the summed partition
stores must equal one store fed the same documents in one process (same tokenizer, same
vocabulary rule: admit at first sight with room for every word) to 1e-9 relative. Nothing is
timed: the deadlines only turn a hang into a failure.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import yaml
from kafka_broker import FAST_GROUP, produce, unique_name
from test_daemon import corpus, http, stack_dump

from anchorstream.store import (
    CooccurrenceStore,
    committed_docs,
    open_committed,
    read_partitions,
)
from anchorstream.store.delay import add_waiting
from daemon.ingest.loop import record_tokens
from daemon.service import build_tokenizer
from daemon.settings import load_config

REPO = Path(__file__).resolve().parents[1]
DEADLINE = 240.0
PARTITIONS = 6
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="module")
def s3_endpoint():
    """moto's S3 server on an ephemeral port, with a bucket (as tests/test_store_urls.py)."""
    server_mod = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    boto3 = pytest.importorskip("boto3")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **KEYS).create_bucket(
        Bucket="anchorstream")
    yield endpoint
    server.stop()


class Cluster:
    """A config for the partitioned layout and the processes started with it."""

    def __init__(self, tmp: Path, bootstrap: str, endpoint: str, topic: str):
        self.tmp = tmp
        self.topic = topic
        self.root = f"s3://anchorstream/scale/{uuid.uuid4().hex}"
        self.options = {"endpoint_url": endpoint, "allow_http": True, "region": "us-east-1",
                        "force_path_style": True, "access_key_id": "testing",
                        "secret_access_key": "testing"}
        cfg = {
            "kafka": {"bootstrap_servers": bootstrap, "topics": [topic],
                      "group_id": unique_name("scale"), **FAST_GROUP,
                      "reconnect_backoff_max_ms": 1000, "max_poll_records": 50},
            "message": {"max_bytes": 4000},
            "store": {"path": self.root, "layout": "partitioned",
                      "storage_options": self.options, "checkpoint_every_docs": 40,
                      "checkpoint_every_seconds": 0.5, "gc_min_age_seconds": 0},
            "vocab": {"capacity": 400, "min_df": 3, "admit_threshold": 1},
            "model": {"num_topics": 6, "anchor_min_df": 5},
            "refresh": {"interval_seconds": 0.5, "min_new_docs": 1},
            "snapshots": {"path": str(tmp / "snapshots"), "keep": 3},
            "http": {"port": 0},
        }
        self.config = tmp / "config.yaml"
        self.config.write_text(yaml.safe_dump(cfg))
        self.cfg = load_config(self.config)
        self.procs: dict[str, subprocess.Popen] = {}
        self.n = 0

    def start(self, role: str) -> str:
        self.n += 1
        name = f"{role}{self.n}"
        ready = self.tmp / f"{name}.ready.json"
        with open(self.tmp / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "daemon", "run", "--config", str(self.config),
                 "--role", role, "--ready-file", str(ready)],
                cwd=self.tmp, env={**os.environ, "PYTHONPATH": str(REPO)},
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        return name

    def ready(self, name: str) -> dict:
        path = self.tmp / f"{name}.ready.json"
        end = time.monotonic() + DEADLINE
        while not path.exists():
            assert self.procs[name].poll() is None, f"{name} exited:\n{self.log(name)}"
            assert time.monotonic() < end, f"{name} did not start:\n{self.log(name)}"
            time.sleep(0.1)
        return json.loads(path.read_text())

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")[-6000:]

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)

    def committed(self) -> int:
        return committed_docs(self.root, self.partitions(), storage_options=self.options)

    def partitions(self):
        return [(self.topic, p) for p in range(PARTITIONS)]

    def wait_committed(self, n: int) -> None:
        end = time.monotonic() + DEADLINE
        while self.committed() < n:
            for name, proc in self.procs.items():
                assert proc.poll() is None, f"{name} died:\n{self.log(name)}"
            assert time.monotonic() < end, self.stall_report(n)
            time.sleep(0.2)

    def stall_report(self, n: int) -> str:
        """What a hang needs explained: the counts by partition, each process's ownership
        changes and the stack of every thread of every process."""
        by_partition = {p: committed_docs(self.root, [(self.topic, p)],
                                          storage_options=self.options)
                        for p in range(PARTITIONS)}
        parts = [f"only {sum(by_partition.values())} of {n} documents committed; by partition: "
                 f"{by_partition}"]
        moves = ("assigned", "revoked", "another instance", "offset", "Error", "error")
        for name, proc in self.procs.items():
            lines = (self.tmp / f"{name}.log").read_text(errors="replace").splitlines()
            parts.append(f"--- {name}: ownership and errors")
            parts.extend(line for line in lines if any(m in line for m in moves))
            parts.append(f"--- {name}: stacks")
            parts.append(stack_dump(proc, self.tmp / f"{name}.log"))
        return "\n".join(parts)

    def close(self) -> None:
        for name in list(self.procs):
            if self.procs[name].poll() is None:
                self.kill(name)

    def reference(self, values: list[bytes], url: Path):
        """One store, one process, every document (the daemon's tokenizer and store
        settings, the same vocabulary rule)."""
        tokenizer = build_tokenizer(self.cfg)
        m = self.cfg.message
        docs = [record_tokens(v, tokenizer, max_bytes=m.max_bytes, max_tokens=m.max_tokens)[1]
                for v in values]
        store = CooccurrenceStore.create(
            url, capacity=self.cfg.vocab.capacity, admit_threshold=1,
            stopwords=sorted(tokenizer.stopwords or ()), length_cap=self.cfg.store.length_cap)
        store.add(docs)
        store.checkpoint()
        return open_committed(url)


def assert_sums_to(summed, single, rtol: float = 1e-9) -> None:
    """Equal as statistics by word (slot orders differ), the documents the partitions' delay
    lines hold back (store.count_delay, auto) added as every read adds them."""
    assert sorted(summed.words) == sorted(single.words)
    a, b = add_waiting(summed.cooccurrence, summed.waiting), single.cooccurrence
    assert (a.num_docs, a.num_tokens) == (b.num_docs, b.num_tokens)
    order = [summed.words.index(w) for w in single.words]
    np.testing.assert_allclose(a.counts[np.ix_(order, order)], b.counts, rtol=rtol, atol=0)
    np.testing.assert_allclose(a.unigram[order], b.unigram, rtol=rtol, atol=0)
    np.testing.assert_allclose(a.doc_freq[order], b.doc_freq, rtol=rtol, atol=0)


def produce_spread(bootstrap: str, topic: str, values: list[bytes], start: int) -> None:
    """Round-robin over the partitions, so each gets its share."""
    for p in range(PARTITIONS):
        part = [v for i, v in enumerate(values) if (start + i) % PARTITIONS == p]
        if part:
            produce(bootstrap, topic, part, partition=p)


def final_snapshot(cluster: Cluster, refresher: str, n: int) -> dict:
    url = cluster.ready(refresher)["http_url"]
    end = time.monotonic() + DEADLINE
    while True:
        status, _, body = http(url + "/v1/snapshots/latest?wait=5")
        if status == 200 and body["num_docs"] == n:
            return body
        assert status in (200, 404) and (status == 404 or body["num_docs"] <= n)
        assert cluster.procs[refresher].poll() is None, cluster.log(refresher)
        assert time.monotonic() < end, f"no snapshot of {n} documents:\n{cluster.log(refresher)}"


def check_exactly_once(cluster: Cluster, refresher: str, values: list[bytes], tmp: Path):
    n = len(values)
    cluster.wait_committed(n)
    snap = final_snapshot(cluster, refresher, n)
    parts = snap["source"]["partitions"]
    assert set(parts) == {f"kafka:{cluster.topic}:{p}" for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        produced = sum(1 for i in range(n) if i % PARTITIONS == p)
        entry = parts[f"kafka:{cluster.topic}:{p}"]
        assert entry["offset"] == produced and entry["n_docs_added"] == produced
    summed = read_partitions(cluster.root, cluster.partitions(),
                             storage_options=cluster.options)
    assert summed.n_docs_added == n
    assert_sums_to(summed, cluster.reference(values, tmp / "single"))
    return snap


def test_three_ingest_instances_a_kill_a_rebalance_and_a_refresher_count_once(
        kafka_broker, s3_endpoint, tmp_path):
    topic = unique_name("scale")
    kafka_broker.create_topics({topic: PARTITIONS})
    boot = kafka_broker.bootstrap_servers
    cluster = Cluster(tmp_path, boot, s3_endpoint, topic)
    values = corpus(1800, seed=11)
    try:
        refresher = cluster.start("refresh")
        ingest = [cluster.start("ingest") for _ in range(3)]
        for name in ingest:
            cluster.ready(name)
        produce_spread(boot, topic, values[:600], 0)
        cluster.wait_committed(150)
        cluster.kill(ingest[0])  # mid-stream: its uncommitted work is lost with it
        cluster.start("ingest")
        produce_spread(boot, topic, values[600:1200], 600)
        cluster.wait_committed(700)
        cluster.ready(cluster.start("ingest"))  # one more member: the group rebalances
        produce_spread(boot, topic, values[1200:], 1200)
        check_exactly_once(cluster, refresher, values, tmp_path)
    finally:
        cluster.close()


@pytest.mark.parametrize("rectify", ["ap", "lowrank"])
def test_role_all_with_the_partitioned_layout_on_a_local_path(kafka_broker, s3_endpoint,
                                                              tmp_path, rectify):
    """One process, the partitioned layout on a shared local path: the same states; with
    ``model.rectify_method: lowrank`` the refresher sums the partitions' sparse reads."""
    topic = unique_name("all")
    kafka_broker.create_topics({topic: PARTITIONS})
    boot = kafka_broker.bootstrap_servers
    cluster = Cluster(tmp_path, boot, s3_endpoint, topic)
    cfg = yaml.safe_load(cluster.config.read_text())
    cfg["store"].update(path=str(tmp_path / "root"), storage_options={})
    cfg["model"]["rectify_method"] = rectify
    cluster.config.write_text(yaml.safe_dump(cfg))
    cluster.root, cluster.options = str(tmp_path / "root"), None
    values = corpus(600, seed=13)
    try:
        name = cluster.start("all")
        cluster.ready(name)
        produce_spread(boot, topic, values, 0)
        snap = check_exactly_once(cluster, name, values, tmp_path)
        assert snap["settings"]["rectify_method"] == rectify
    finally:
        cluster.close()


@pytest.mark.slow
def test_a_kill_storm_loses_and_doubles_nothing(kafka_broker, s3_endpoint, tmp_path):
    """30 SIGKILLs of random working instances (the refresher too), each replaced at once,
    while the corpus is produced in pieces; most kills hit an instance holding uncommitted
    documents (fewer committed than produced at that moment)."""
    topic = unique_name("storm")
    kafka_broker.create_topics({topic: PARTITIONS})
    boot = kafka_broker.bootstrap_servers
    cluster = Cluster(tmp_path, boot, s3_endpoint, topic)
    values = corpus(3000, seed=12)
    rng = random.Random(5)
    kills, mid_stream, sent = 0, 0, 0
    try:
        refresher = cluster.start("refresh")
        for _ in range(3):
            cluster.start("ingest")
        while kills < 30:
            if sent < len(values):
                chunk = values[sent:sent + 100]
                produce_spread(boot, topic, chunk, sent)
                sent += len(chunk)
            time.sleep(rng.uniform(0.5, 3.0))
            # Only instances that are up (ready file written) are worth killing.
            working = sorted(n for n in cluster.procs if (tmp_path / f"{n}.ready.json").exists())
            if not working:
                continue
            victim = rng.choice(working)
            mid_stream += cluster.committed() < sent
            role = "refresh" if victim.startswith("refresh") else "ingest"
            cluster.kill(victim)
            kills += 1
            name = cluster.start(role)
            if role == "refresh":
                refresher = name
        produce_spread(boot, topic, values[sent:], sent)
        assert mid_stream >= 15, f"only {mid_stream} of {kills} kills came mid-stream"
        check_exactly_once(cluster, refresher, values, tmp_path)
    finally:
        cluster.close()
