"""The daemon with the document methods: RP novel words, then TSVD, on one store.

A real broker and a real ``python -m daemon run`` process (helpers of ``test_daemon.py``). The
first run finds anchors by random projections, from the split statistic and sketch the store
keeps for it, and recovers their groups with the configured settings; the second run switches
the same store to TSVD, whose reservoir starts with the documents it consumes. Each publishes a
snapshot whose manifest names its method.
"""

from __future__ import annotations

import json

from kafka_broker import produce, unique_name
from test_daemon import DaemonProcess, corpus, wait_for_docs, write_config

from daemon.publish import version_name


def manifest(tmp_path, snap: dict) -> dict:
    path = tmp_path / "snapshots" / version_name(snap["version"]) / "manifest.json"
    return json.loads(path.read_text())


def test_daemon_publishes_rp_then_tsvd_snapshots(kafka_broker, tmp_path):
    topic = unique_name("docs")
    kafka_broker.create_topics({topic: 1})
    boot = kafka_broker.bootstrap_servers
    produce(boot, topic, corpus(1200, seed=7))

    config = write_config(tmp_path, boot, topic,
                          model={"anchor_method": "rp", "recover_weights": "none"})
    daemon = DaemonProcess(tmp_path, config, name="rp")
    try:
        snap = wait_for_docs(daemon, 1200)
        settings = manifest(tmp_path, snap)["settings"]
        assert settings["method"] == "anchor" and settings["anchor_method"] == "rp"
        # The groups were rectified and recovered as configured.
        assert settings["recover_weights"] == "none" and settings["rectify_method"] == "lowrank"
        assert manifest(tmp_path, snap)["extra"]["estimate"] == "recover"
        stats = snap["source"]["document_stats"]
        assert stats["n_projections"] == 50 * 6 and 1100 < stats["split_docs"] <= 1200
        assert len(snap["topics"]) == 6
        assert daemon.terminate() == 0
    finally:
        daemon.close()

    config = write_config(tmp_path, boot, topic,
                          model={"method": "tsvd", "tsvd_documents": 400})
    daemon = DaemonProcess(tmp_path, config, name="tsvd")
    try:
        produce(boot, topic, corpus(600, seed=8))
        snap = wait_for_docs(daemon, 1800)
        settings = manifest(tmp_path, snap)["settings"]
        assert settings["method"] == "tsvd" and settings["reservoir"] == 400
        # Where TSVD keeps its word groups, they are rectified and recovered as configured:
        # the snapshot records those settings and which estimate it kept.
        assert settings["rectify_method"] == "lowrank" and settings["recover_weights"] == "chi2"
        assert manifest(tmp_path, snap)["extra"]["estimate"] in ("documents", "recover")
        stats = snap["source"]["document_stats"]
        # The reservoir started with this run's documents: a sample of 400 of its 600.
        assert stats["since_docs"] == 1200 and stats["reservoir_docs"] == 400
        assert len(snap["topics"]) == 6
        assert daemon.terminate() == 0
    finally:
        daemon.close()
