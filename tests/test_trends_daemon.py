"""Evidence for /v1/trends (issue 19): a real daemon process, the real broker, real HTTP.

A stream of documents from K planted topics runs stationary for a while (no topic may be
born: a refresh of more of the same data is not news), then the words of a planted new topic
start appearing, in a growing share of the documents; within a bounded number of refreshes
``/v1/trends`` must name a topic made of those words as new and rising. The stream is
produced batch by batch, each batch waited for in a snapshot, so the refreshes are counted,
not timed.
"""

from __future__ import annotations

import json

import numpy as np
from kafka_broker import produce, unique_name

from tests.test_daemon import (DaemonProcess, K, cleanup, corpus, http, metric,  # noqa: F401
                               wait_for_docs, write_config)

NEW_WORDS = [f"n{i:04d}" for i in range(40)]
BATCH = 300


def new_topic_documents(n: int, seed: int) -> list[bytes]:
    """Documents of the planted new topic: 30 words over ``NEW_WORDS`` (a skewed topic)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(len(NEW_WORDS), 0.5))
    return [json.dumps({"text": " ".join(rng.choice(NEW_WORDS, size=30, p=p)),
                        "id": f"new-{seed}-{i}"}).encode() for i in range(n)]


def mixed_batch(share: float, seed: int) -> list[bytes]:
    n_new = int(round(share * BATCH))
    docs = corpus(BATCH - n_new, seed=seed) + new_topic_documents(n_new, seed)
    order = np.random.default_rng(seed).permutation(len(docs))
    return [docs[i] for i in order]


def start(kafka_broker, tmp_path, cleanup, n_topics: int):
    topic = unique_name("docs")
    kafka_broker.create_topics({topic: 1})
    config = write_config(
        tmp_path, kafka_broker.bootstrap_servers, topic,
        model={"num_topics": n_topics, "anchor_min_df": 5},
        vocab={"capacity": 800, "min_df": 3, "admit_threshold": 2},
        refresh={"interval_seconds": 0.5, "min_new_docs": BATCH},
        snapshots={"path": str(tmp_path / "snapshots"), "keep": 3})
    daemon = DaemonProcess(tmp_path, config)
    cleanup.append(daemon)
    return topic, daemon


def feed(kafka_broker, topic, daemon, docs: list[bytes], total: int) -> int:
    """Produce ``docs`` and wait for a snapshot covering them; the new total."""
    produce(kafka_broker.bootstrap_servers, topic, docs)
    total += len(docs)
    wait_for_docs(daemon, total)
    return total


def warm_up(kafka_broker, topic, daemon) -> int:
    """The first 1,500 documents, batch by batch: fed at once, a refresh could come when all
    but fewer than ``BATCH`` of them were checkpointed, and the rest would never be refreshed
    (``refresh.min_new_docs``); CI saw snapshots stop at 1,374 and 1,440."""
    docs, total = corpus(1500, seed=1), 0
    for i in range(0, len(docs), BATCH):
        total = feed(kafka_broker, topic, daemon, docs[i:i + BATCH], total)
    return total


def test_a_stationary_stream_has_no_births_and_nothing_new(kafka_broker, tmp_path, cleanup):
    topic, daemon = start(kafka_broker, tmp_path, cleanup, K)
    total = warm_up(kafka_broker, topic, daemon)
    # The first model's K topics are births (and, if a refresh came while the first documents
    # were still arriving, a young model's reshuffles: timing, not the stream).
    first = metric(daemon, "anchorstream_topic_births_total")
    assert first >= K
    for b in range(6):
        total = feed(kafka_broker, topic, daemon, corpus(BATCH, seed=100 + b), total)
    status, _, trends = http(daemon.url + "/v1/trends")
    assert status == 200 and trends["window"]["snapshots"] >= 7
    assert trends["new"] == [] and trends["gone"] == [], trends
    # Six refreshes of more of the same data: no birth at all.
    assert metric(daemon, "anchorstream_topic_births_total") == first, daemon.log()
    assert metric(daemon, "anchorstream_trend_topics", {"kind": "new"}) == 0


def test_a_planted_new_topic_is_reported_new_and_rising(kafka_broker, tmp_path, cleanup):
    # One topic more than planted, so that the new theme need not displace an old one; the
    # spare topic's reshuffles may be births, but never "new".
    topic, daemon = start(kafka_broker, tmp_path, cleanup, K + 1)
    total = warm_up(kafka_broker, topic, daemon)
    for b in range(3):
        total = feed(kafka_broker, topic, daemon, corpus(BATCH, seed=100 + b), total)
    found, shares = [], (0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.95, 0.95, 0.95)
    for b, share in enumerate(shares):
        total = feed(kafka_broker, topic, daemon, mixed_batch(share, seed=200 + b), total)
        _, _, trends = http(daemon.url + "/v1/trends?limit=100")
        planted = [t for t in trends["new"] if sum(w in NEW_WORDS for w in t["top_words"]) >= 8]
        assert planted == trends["new"], f"a new topic that is not the planted one: {trends}"
        if planted:
            found = planted
            break
    assert found, f"not reported within {len(shares)} refreshes: {trends}"
    t = found[0]
    assert t["direction"] == "rising" and t["score"] >= trends["settings"]["min_score"]
    assert t["id"] in {x["id"] for x in trends["rising"]}
    assert t["born_version"] >= trends["window"]["from_version"]
    assert metric(daemon, "anchorstream_trend_topics", {"kind": "new"}) >= 1
    print(f"new topic {t['id']} reported after {b + 1} shifted batches, score {t['score']}, "
          f"series {[round(p['prevalence'], 4) for p in t['series']]}")
