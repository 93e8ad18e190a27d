"""Snapshot publishing: versions, the LATEST pointer, retention, recovery, history, long polls."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time

import numpy as np
import pytest

from anchorstream.errors import InputError, SnapshotNotFoundError
from anchorstream.synthetic import planted_model
from daemon.publish import LATEST_FILE, Publisher, version_name
from daemon.summary import compact_summary
from daemon.history import HISTORY_FILE

V, K = 40, 4
VOCAB = [f"word{i:02d}" for i in range(V)]


def model_kwargs(seed: int = 0, ids=None, **overrides) -> dict:
    """Everything ``Publisher.publish`` needs, from a planted model."""
    m = planted_model(V, K, random_state=seed)
    kw = dict(
        vocabulary=VOCAB,
        topic_word=m.topic_word.T,
        topic_topic=m.topic_topic,
        anchors=[VOCAB[a] for a in m.anchors],
        topic_ids=list(range(K)) if ids is None else ids,
        num_docs=100 + seed,
        settings={"num_topics": K},
        source={"offsets": {"documents": {"0": 100 + seed}}},
    )
    kw.update(overrides)
    return kw


def read_latest(path) -> str:
    return (path / LATEST_FILE).read_text()


def test_publish_writes_a_version_and_moves_latest(tmp_path):
    pub = Publisher(tmp_path)
    assert pub.latest() is None and pub.latest_version is None and pub.list() == []
    info = pub.publish(**model_kwargs(0))
    assert info.version == 1 and info.path == tmp_path / "0000000001"
    assert read_latest(tmp_path) == "0000000001\n"
    version, snap = pub.latest()
    assert version == 1 and snap.num_docs == 100
    assert snap.extra["snapshot_version"] == 1
    np.testing.assert_allclose(snap.topic_word.sum(axis=1), 1.0, atol=1e-5)
    assert pub.publish(**model_kwargs(1)).version == 2
    assert read_latest(tmp_path) == "0000000002\n"
    assert [i.version for i in pub.list()] == [1, 2]
    assert pub.get(1).num_docs == 100


def test_versions_stay_monotonic_across_restarts_and_pruning(tmp_path):
    pub = Publisher(tmp_path, keep=2)
    for seed in range(4):
        pub.publish(**model_kwargs(seed))
    assert [i.version for i in pub.list()] == [3, 4]
    again = Publisher(tmp_path, keep=2)
    assert again.latest_version == 4
    assert again.publish(**model_kwargs(9)).version == 5
    assert version_name(5) == "0000000005"


def test_retention_by_count_never_leaves_trash(tmp_path):
    pub = Publisher(tmp_path, keep=3)
    for seed in range(6):
        pub.publish(**model_kwargs(seed))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "0000000004", "0000000005", "0000000006", HISTORY_FILE, LATEST_FILE]
    with pytest.raises(SnapshotNotFoundError):
        pub.get(1)


def test_retention_by_age_keeps_the_latest(tmp_path):
    now = time.time()
    pub = Publisher(tmp_path, keep=10, keep_seconds=3600, clock=lambda: now)
    old = dt.datetime.fromtimestamp(now - 7200, dt.UTC)
    pub.publish(**model_kwargs(0), created_at=old)
    pub.publish(**model_kwargs(1), created_at=old)
    # Both are past the age limit, but the latest is never pruned.
    assert [i.version for i in pub.list()] == [2]
    pub.publish(**model_kwargs(2))
    assert [i.version for i in pub.list()] == [3]
    pub.publish(**model_kwargs(3))
    assert [i.version for i in pub.list()] == [3, 4]


def test_latest_is_always_a_complete_version_for_a_concurrent_reader(tmp_path):
    pub = Publisher(tmp_path, keep=50)
    pub.publish(**model_kwargs(0))
    seen, bad, stop, reading = set(), [], threading.Event(), threading.Event()

    def reader():
        while not stop.is_set():
            text = read_latest(tmp_path)
            reading.set()
            if not (text.endswith("\n") and text[:-1].isdigit()):
                bad.append(text)
                continue
            seen.add(text)
            if not (tmp_path / text[:-1] / "manifest.json").is_file():
                bad.append(text)

    t = threading.Thread(target=reader)
    t.start()
    try:
        # The reader is reading before the first publication (a busy machine can start a
        # thread late), so that it reads while the versions change.
        assert reading.wait(60), "the reader thread did not start"
        for seed in range(1, 8):
            pub.publish(**model_kwargs(seed))
    finally:
        stop.set()
        t.join()
    assert not bad
    assert seen and read_latest(tmp_path) == "0000000008\n"


def test_recovery_skips_a_corrupt_latest_and_cleans_up(tmp_path):
    pub = Publisher(tmp_path)
    pub.publish(**model_kwargs(0))
    pub.publish(**model_kwargs(1))
    # Corrupt version 2, and leave debris a crash could leave.
    (tmp_path / "0000000002" / "topic_word.npy").write_bytes(b"garbage")
    (tmp_path / ".trash-0000000000-abcd").mkdir()
    (tmp_path / ".0000000003.tmp-xyz").mkdir()
    (tmp_path / f".{LATEST_FILE}.tmp-0123").write_text("00000")
    again = Publisher(tmp_path)
    assert again.latest_version == 1
    assert read_latest(tmp_path) == "0000000001\n"
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())
    # The corrupt directory still holds its number: the next version is 3, not 2.
    assert again.publish(**model_kwargs(2)).version == 3


def test_missing_pointer_falls_back_to_the_newest_directory(tmp_path):
    pub = Publisher(tmp_path)
    pub.publish(**model_kwargs(0))
    pub.publish(**model_kwargs(1))
    os.remove(tmp_path / LATEST_FILE)
    assert Publisher(tmp_path).latest_version == 2
    assert read_latest(tmp_path) == "0000000002\n"


def test_failed_publication_changes_nothing(tmp_path):
    pub = Publisher(tmp_path)
    pub.publish(**model_kwargs(0))
    with pytest.raises(InputError):
        pub.publish(**model_kwargs(1, topic_topic=np.ones((2, 2))))
    assert pub.latest_version == 1 and [i.version for i in pub.list()] == [1]
    assert read_latest(tmp_path) == "0000000001\n"
    with pytest.raises(TypeError, match="path"):
        pub.publish(path=tmp_path / "x", **model_kwargs(1))


def test_topic_history_follows_ids(tmp_path):
    pub = Publisher(tmp_path)
    pub.publish(**model_kwargs(0, ids=[0, 1, 2, 3]))
    pub.publish(**model_kwargs(1, ids=[0, 1, 2, 4]))
    pub.publish(**model_kwargs(2, ids=[4, 1, 2, 5]))
    assert [h["version"] for h in pub.topic_history(0)] == [1, 2]
    assert [h["version"] for h in pub.topic_history(4)] == [2, 3]
    assert [h["version"] for h in pub.topic_history(5)] == [3]
    assert pub.topic_history(99) == []
    entry = pub.topic_history(3)[0]
    assert set(entry) == {"version", "created_at", "anchor", "prevalence", "top_words"}
    assert len(entry["top_words"]) == 10 and all(isinstance(w, str) for w in entry["top_words"])


def test_wait_for_newer(tmp_path):
    pub = Publisher(tmp_path)
    assert pub.wait_for_newer(None, 0.01) is None
    results = []
    # Waits far longer than the joins below: a waiter that returns was released, not timed out.
    waiter = threading.Thread(target=lambda: results.append(pub.wait_for_newer(None, 600)))
    waiter.start()
    pub.publish(**model_kwargs(0))
    waiter.join(60)
    assert not waiter.is_alive() and results == [1]
    assert pub.wait_for_newer(0, 0) == 1
    assert pub.wait_for_newer(1, 0.01) is None
    waiter = threading.Thread(target=lambda: results.append(pub.wait_for_newer(1, 600)))
    waiter.start()
    pub.close()  # shutdown releases waiters at once
    waiter.join(60)
    assert not waiter.is_alive() and results == [1, None]


def test_on_publish_hook_gets_a_compact_summary(tmp_path, caplog):
    got = []
    pub = Publisher(tmp_path, on_publish=got.append)
    pub.publish(**model_kwargs(0), extra={"churn": {"births": [0, 1, 2, 3]}})
    (summary,) = got
    assert summary["version"] == 1 and summary["num_topics"] == K
    assert summary["churn"] == {"births": [0, 1, 2, 3]}
    assert len(summary["topics"]) == K and len(summary["topics"][0]["top_words"]) == 10
    assert summary == compact_summary(pub.get(1), 1, trends=pub.trends())
    # One snapshot: nothing can be rising yet, but the trends are there, window and all.
    assert summary["trends"] == {"window": [1, 1], "rising": [], "new": [], "falling": [],
                                 "gone": []}

    def broken(_summary):
        raise RuntimeError("kafka is down")

    pub.on_publish = broken
    assert pub.publish(**model_kwargs(1)).version == 2  # published anyway, error logged
    assert "on_publish hook failed" in caplog.text


def test_a_file_in_the_way_is_an_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(Exception, match="not a directory"):
        Publisher(tmp_path / "f")


def test_labels_keep_the_previous_share_of_the_background_across_publishes(tmp_path):
    # The publisher hands write_snapshot the share of the background level the latest
    # snapshot's labels were ranked above (short documents), so a model at the bound does
    # not flip its labels with every refresh, across restarts too.
    words = [f"w{i:04d}" for i in range(1000)]

    def publish(pub, mass):
        rng = np.random.default_rng(0)  # 30 topics sharing 60 words (mass of each topic)
        B = np.zeros((30, 1000))
        B[:, :60] = rng.dirichlet(np.ones(60), size=30) * mass
        for k in range(30):
            B[k, 60 + 30 * k:90 + 30 * k] = rng.dirichlet(np.ones(30)) * (1 - mass)
        pub.publish(vocabulary=words, topic_word=B, topic_topic=np.eye(30) / 30,
                    anchors=None, num_docs=100, settings={}, source={}, mean_doc_length=8.0)
        return pub.latest()[1].extra["background_words"]["level_weight"]

    pub = Publisher(tmp_path, background_spread=0.33)
    # A first snapshot chooses as a fit does: 0 at 0.63 (labels 0.63 distinct), 1/4 at 0.66.
    assert publish(pub, 0.63) == 0.0
    assert publish(pub, 0.66) == 0.25
    assert publish(pub, 0.63) == 0.25      # back to 0 only past the bound plus the margin
    pub.close()
    assert publish(Publisher(tmp_path, background_spread=0.33), 0.63) == 0.25  # and restarted
    assert publish(Publisher(tmp_path / "fresh", background_spread=0.33), 0.63) == 0.0
    assert publish(pub := Publisher(tmp_path, background_spread=0.33), 0.58) == 0.0  # 0.71
    pub.close()
