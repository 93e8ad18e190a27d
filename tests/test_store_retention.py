"""Store retention across writers, checkpoint stage timings, and settings a reopen cannot change.

Real Icechunk repositories on a temporary local disk. The retention test is the case the
per-process ``gc_every`` count misses: many short runs (``anchorstream ingest`` with a few
checkpoints each, or a daemon that restarts often), each opening and closing the store.
"""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pytest

from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.store import CooccurrenceStore, read_committed, store_info
from anchorstream.text.tokenize import Tokenizer, count_matrix
from daemon.cli.ingest import ingest_files

WORDS = [f"w{i}" for i in range(15)]


def corpus(rng, n_docs):
    return [[str(w) for w in rng.choice(WORDS, size=rng.integers(2, 9))] for _ in range(n_docs)]


def assert_equals_batch(url, docs):
    cooc, words, _, _ = read_committed(url)
    ref = cooccurrence(count_matrix(docs, words), length_cap=cooc.length_cap)
    scale = max(float(np.abs(ref.counts).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(cooc.counts, ref.counts, rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(cooc.unigram, ref.unigram, rtol=1e-12)
    assert cooc.num_docs == ref.num_docs


def test_short_runs_keep_history_and_disk_bounded(tmp_path, rng):
    """Each run ingests one file with 3 checkpoints, far fewer than gc_every: collection comes
    from the first checkpoint of each writer seeing expirable commits in the branch."""
    url = str(tmp_path / "store")
    options = {"capacity": 32, "admit_threshold": 1.0, "keep_versions": 2, "gc_every": 20,
               "gc_min_age": 0.0, "max_segments": 4}
    tokenizer = Tokenizer(stopwords=None)
    all_docs, versions, sizes = [], [], []
    for run in range(12):
        docs = corpus(rng, 30)
        path = tmp_path / f"part{run}.jsonl"
        path.write_text("".join(json.dumps({"text": " ".join(d)}) + "\n" for d in docs))
        all_docs += docs
        store = CooccurrenceStore.open_or_create(url, **options)
        stats = ingest_files(store, [path], tokenizer=tokenizer, checkpoint_every=10)
        assert stats["checkpoints"] == 3 + 1  # every 10 documents, and the final (no-op) one
        del store  # the run ends: nothing else calls collect_garbage()
        info = store_info(url)
        versions.append(info["versions"])
        sizes.append(info["bytes_on_disk"])
    # Kept (2) + this run's commits (3 checkpoints + at most one compaction) + the root.
    assert max(versions) <= 2 + 4 + 1, versions
    # Without collection, 12 runs would leave 12x the objects of the first runs.
    assert max(sizes[6:]) < 1.6 * max(sizes[:6]), sizes
    assert_equals_batch(url, all_docs)


def test_without_the_history_check_short_runs_grow(tmp_path, rng):
    """The control for the test above: with collection by count and time off, history grows."""
    url = str(tmp_path / "store")
    for _ in range(4):
        s = CooccurrenceStore.open_or_create(url, capacity=16, admit_threshold=1.0,
                                             keep_versions=2, gc_every=0,
                                             gc_interval_seconds=0, gc_min_age=0.0)
        for _ in range(3):
            s.add(corpus(rng, 5))
            s.checkpoint()
    assert store_info(url)["versions"] == 1 + 1 + 12  # root, creation, 12 checkpoints


def test_collection_by_time_holds_across_reopens(tmp_path, rng):
    url = str(tmp_path / "store")
    kw = {"keep_versions": 1, "gc_every": 0, "gc_min_age": 0.0}
    s = CooccurrenceStore.create(url, capacity=16, admit_threshold=1.0,
                                 gc_interval_seconds=3600, **kw)
    for _ in range(5):
        s.add(corpus(rng, 5))
        s.checkpoint()
    assert s.last_checkpoint_seconds["gc"] == 0.0  # a new store counts as collected
    assert store_info(url)["versions"] == 7
    # A later writer with a short interval collects at its first checkpoint: the time of the
    # last collection was recorded in the store, not in the process that made it.
    s = CooccurrenceStore.open(url, gc_interval_seconds=0.2, **kw)
    s._check_history = False  # isolate the time rule from the history check
    time.sleep(0.3)
    s.add(corpus(rng, 5))
    s.checkpoint()
    assert s.last_checkpoint_seconds["gc"] > 0.0
    assert store_info(url)["versions"] <= 1 + 1 + 1
    # ... and recorded when it did, with the next commit: a reopen does not collect again.
    s.gc_interval_seconds = 0  # (a slow machine must not collect again before that commit)
    s.add(corpus(rng, 5))
    s.checkpoint()
    reopened = CooccurrenceStore.open(url, gc_interval_seconds=3600, **kw)
    reopened._check_history = False
    assert reopened._last_gc == pytest.approx(s._last_gc)
    reopened.add(corpus(rng, 5))
    reopened.checkpoint()
    assert reopened.last_checkpoint_seconds["gc"] == 0.0


def test_checkpoint_stage_timings(tmp_path, rng):
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=16, admit_threshold=1.0,
                                 max_segments=2, gc_every=0, gc_interval_seconds=0)
    assert s.last_checkpoint_seconds == {}
    stages = ["delta", "write", "commit", "compact", "gc"]
    compacted = []
    for _ in range(4):
        s.add(corpus(rng, 20))
        s.checkpoint({"n": 1})
        t = s.last_checkpoint_seconds
        assert list(t) == stages
        assert all(isinstance(v, float) and v >= 0.0 for v in t.values())
        assert t["commit"] > 0.0 and t["write"] > 0.0 and t["gc"] == 0.0
        compacted.append(t["compact"])
    # max_segments=2: the third checkpoint's segment triggers a compaction, the others do not.
    assert compacted[0] == compacted[1] == 0.0 and compacted[2] > 0.0
    s.checkpoint({"n": 1})  # nothing to commit
    assert s.last_checkpoint_seconds == dict.fromkeys(stages, 0.0)
    s.collect_garbage()
    s.gc_every = 1
    s.add(corpus(rng, 3))
    s.checkpoint()
    assert s.last_checkpoint_seconds["gc"] > 0.0


def test_reopening_with_other_settings_warns(tmp_path, caplog):
    url = str(tmp_path / "s")
    CooccurrenceStore.create(url, capacity=8, stopwords=["the", "a"], max_df=0.5)
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        CooccurrenceStore.open_or_create(url, capacity=8, stopwords=["a", "the"], max_df=0.5)
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        s = CooccurrenceStore.open_or_create(url, capacity=9, stopwords=["a", "of"],
                                             max_df=None)
    text = caplog.text
    assert "capacity 8 (asked for 9)" in text and "max_df 0.5 (asked for None)" in text
    assert "stopwords" in text and "['of']" in text and "['the']" in text
    # The stored settings are the ones in force.
    assert s.capacity == 8 and s.vocabulary.stopwords == {"the", "a"}
    assert s.vocabulary.max_df == 0.5


def test_a_store_records_whether_links_were_words_and_warns_when_told_otherwise(
        tmp_path, caplog):
    from anchorstream.store import stored_tokenizing
    from daemon.service import build_tokenizer, open_store
    from daemon.settings import parse_config

    old = str(tmp_path / "old")
    CooccurrenceStore.create(old, capacity=8)  # a store made before it was recorded
    assert stored_tokenizing(old) == (frozenset(), "keep")
    data = {"store": {"path": str(tmp_path / "s")}, "vocab": {"capacity": 50, "links": "drop"}}
    cfg = parse_config(data, {})
    assert build_tokenizer(cfg)("see http://ow.ly/x") == ["see"]
    open_store(cfg)
    assert stored_tokenizing(data["store"]["path"])[1] == "drop"
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        open_store(cfg)
    assert caplog.records == []
    data["vocab"]["links"] = "keep"
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        open_store(parse_config(data, {}))
    assert "was counted with links 'drop'" in caplog.text and "links 'keep'" in caplog.text
    # auto, the default: the store's recorded choice, silently; keep for a new store.
    data["vocab"]["links"] = "auto"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        dropped = open_store(parse_config(data, {}))
    assert caplog.records == [] and dropped.links == "drop"
    assert build_tokenizer(parse_config(data, {}), dropped)("see http://ow.ly/x") == ["see"]
    fresh = {"store": {"path": str(tmp_path / "new")}, "vocab": {"capacity": 50}}
    new = open_store(parse_config(fresh, {}))
    assert new.links == "keep" and stored_tokenizing(fresh["store"]["path"])[1] == "keep"
    assert "ow" in build_tokenizer(parse_config(fresh, {}), new)("see http://ow.ly/x")
    assert "ow" in build_tokenizer(parse_config(fresh, {}))("see http://ow.ly/x")


def test_a_store_without_recorded_stopwords_is_not_checked(tmp_path, caplog):
    url = str(tmp_path / "s")
    CooccurrenceStore.create(url, capacity=8)  # as `anchorstream ingest` once made them
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        CooccurrenceStore.open_or_create(url, capacity=8, stopwords=["the"])
    assert caplog.records == []


# ------------------------------------------------------------------- the daemon's store


def test_the_daemon_store_gets_the_configured_options(tmp_path, caplog):
    from daemon.settings import parse_config
    from daemon.service import open_store

    seed = tmp_path / "seed.txt"
    seed.write_text("the\nmarket\n")
    data = {
        "store": {"path": str(tmp_path / "store"), "keep_versions": 4, "gc_every": 7,
                  "gc_interval_seconds": 120, "gc_min_age_seconds": 5,
                  "compact_bytes": 2**20, "max_segments": 9,
                  "accumulator_budget_bytes": 2**21},
        "vocab": {"capacity": 50, "block_df_ratio": 0.4, "seed_file": str(seed)},
    }
    s = open_store(parse_config(data, {}))
    assert (s.keep_versions, s.gc_every, s.gc_interval_seconds, s.gc_min_age, s.compact_bytes,
            s.max_segments, s.budget_bytes) == (4, 7, 120.0, 5.0, 2**20, 9, 2**21)
    # Over-frequent words are blocked in the store; the stopwords are recorded (a seed word
    # that is a stopword is left out: the tokenizer would never produce it).
    assert s.vocabulary.max_df == 0.4
    assert "the" in s.vocabulary.stopwords and s.vocabulary.words[0] == "market"
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        open_store(parse_config(data, {}))
    assert caplog.records == []
    data["vocab"] = {**data["vocab"], "stopwords": "none", "block_df_ratio": None}
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        again = open_store(parse_config(data, {}))
    assert "stopwords" in caplog.text and "max_df 0.4 (asked for None)" in caplog.text
    assert again.vocabulary.max_df == 0.4  # the stored setting stays in force


def test_the_daemon_store_holds_documents_back_by_default_except_with_tumbling_windows(
        tmp_path, caplog):
    """``store.count_delay: auto`` (the default) is 1000 for a new store, 0 with tumbling
    windows or a document method; an existing store keeps its own delay, and only one asked for warns."""
    from anchorstream.store.delay import AUTO_DELAY, COUNT_DELAY_PAIRS
    from daemon.settings import ConfigError, parse_config
    from daemon.service import open_store

    def store(name, **settings):
        return {"store": {"path": str(tmp_path / name), **settings}}

    line = open_store(parse_config(store("a"), {})).delay_line
    assert (line.length, line.max_pairs) == (AUTO_DELAY, COUNT_DELAY_PAIRS)
    line = open_store(parse_config(store("u", count_delay_pairs=None), {})).delay_line
    assert (line.length, line.max_pairs) == (AUTO_DELAY, None)
    tumbling = store("b", window_docs=100, windows=3)
    assert open_store(parse_config(tumbling, {})).delay_line.length == 0
    # DDP, RP and TSVD read document statistics, which count a document once it is counted.
    tsvd = {**store("t"), "model": {"method": "tsvd"}}
    assert open_store(parse_config(tsvd, {})).delay_line.length == 0
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        # The tumbling store, opened with windows no more: keeps its 0, warns of the windows.
        assert open_store(parse_config(store("b"), {})).delay_line.length == 0
    assert "count_delay" not in caplog.text and "forgetting" in caplog.text
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        assert open_store(parse_config(store("b", count_delay=50), {})).delay_line.length == 0
    assert "count_delay 0 (asked for 50)" in caplog.text
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        open_store(parse_config(store("a", count_delay_pairs=100), {}))
    assert "count_delay_pairs 5000000 (asked for 100)" in caplog.text
    with pytest.raises(ConfigError, match=r"store.count_delay: got 'soon'; allowed: 'auto' or "
                                          r"an integer >= 0 \(documents\)"):
        parse_config(store("c", count_delay="soon"), {})
    with pytest.raises(ConfigError, match=r"store.count_delay_pairs: got 0; allowed: an "
                                          r"integer >= 1 or null"):
        parse_config(store("c", count_delay_pairs=0), {})


def test_the_daemon_tokenizes_as_its_store_recorded_where_its_settings_are_auto(tmp_path,
                                                                              caplog):
    # The daemon's assembly (Daemon._start_ingest), without a broker: a store backfilled with
    # its links dropped and the German list (`ingest` with --links and --stopwords auto on
    # German posts) is read and fed as it was counted.
    from daemon.metrics import Metrics
    from daemon.service import Daemon, build_tokenizer, open_store
    from daemon.settings import parse_config

    from anchorstream.text.tokenize import load_stopwords

    path = str(tmp_path / "s")
    german = load_stopwords("german")
    CooccurrenceStore.create(path, capacity=50, links="drop", stopwords=german)
    cfg = parse_config({"store": {"path": path}, "snapshots": {"path": str(tmp_path / "p")},
                        "kafka": {"bootstrap_servers": "127.0.0.1:9"}}, env={})
    assert cfg.vocab.links == cfg.vocab.stopwords == "auto"
    daemon = Daemon(cfg)
    daemon.metrics = Metrics()
    with caplog.at_level(logging.WARNING, logger="anchorstream.store"):
        daemon._start_ingest()
    try:
        # Capacity and the like differ from the daemon's defaults; the tokenizing does not.
        assert "stopwords" not in caplog.text and "links" not in caplog.text
        assert daemon.loop.tokenizer is daemon.tokenizer
        assert daemon.tokenizer("see http://ow.ly/x") == ["see"]
        assert daemon.tokenizer.stopwords == german and store_info(path)["stopwords"] == "german"
        assert daemon.tokenizer("der Hund und the dog") == ["hund", "the", "dog"]
    finally:
        daemon.source.close()
    # A new store: the English list, and the links kept.
    fresh = parse_config({"store": {"path": str(tmp_path / "new")}, "vocab": {"capacity": 50}},
                         env={})
    new = open_store(fresh)
    assert new.vocabulary.stopwords == load_stopwords("english")
    assert store_info(str(tmp_path / "new"))["stopwords"] == "english"
    CooccurrenceStore.create(str(tmp_path / "plain"), capacity=8)  # none recorded
    assert store_info(str(tmp_path / "plain"))["stopwords"] == "none"
    assert build_tokenizer(fresh, new)("the dog http://ow.ly/x") == ["dog", "http", "ow", "ly"]
