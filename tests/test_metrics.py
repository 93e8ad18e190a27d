"""Prometheus metrics: names, scrape-time sources, helpers, exposition formats."""

from __future__ import annotations

import shutil
import urllib.request

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families

from daemon.metrics import Metrics

#: Every family the issue asks for (names as the text-format parser reports them).
EXPECTED = {
    "anchorstream_messages_consumed",
    "anchorstream_messages_rejected",
    "anchorstream_dead_letter_messages",
    "anchorstream_documents_accumulated",
    "anchorstream_tokens_accumulated",
    "anchorstream_documents_at_max_tokens",
    "anchorstream_tokens_in_long_documents",
    "anchorstream_source_errors",
    "anchorstream_checkpoints",
    "anchorstream_checkpoint_failures",
    "anchorstream_checkpoint_duration_seconds",
    "anchorstream_checkpoint_stage_seconds",
    "anchorstream_checkpoint_size_bytes",
    "anchorstream_refreshes",
    "anchorstream_refresh_failures",
    "anchorstream_refresh_duration_seconds",
    "anchorstream_snapshots_published",
    "anchorstream_vocabulary_admissions",
    "anchorstream_vocabulary_evictions",
    "anchorstream_topic_births",
    "anchorstream_topic_deaths",
    "anchorstream_topic_churn",
    "anchorstream_topic_match_similarity",
    "anchorstream_refresh_kept_bytes",
    "anchorstream_rectification_residual",
    "anchorstream_rectification_iterations",
    "anchorstream_rectification_warm_change",
    "anchorstream_stopword_share",
    "anchorstream_http_requests",
    "anchorstream_build_info",
    "anchorstream_consumer_lag_messages",
    "anchorstream_vocabulary_size_words",
    "anchorstream_snapshot_version",
    "anchorstream_snapshot_age_seconds",
    "anchorstream_snapshot_documents",
    "anchorstream_snapshots_retained",
    "anchorstream_store_size_bytes",
    "anchorstream_accumulator_bytes",
    "anchorstream_documents_waiting",
    "anchorstream_filesystem_free_bytes",
    "anchorstream_filesystem_size_bytes",
    "anchorstream_process_resident_memory_bytes",
}


def scrape(metrics: Metrics) -> dict:
    body, ctype = metrics.exposition()
    assert ctype.startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


def sample(families, name, **labels):
    for fam in families.values():
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    raise KeyError((name, labels))


def bound_metrics() -> Metrics:
    m = Metrics()
    m.bind(
        lag=lambda: {("docs", 0): 5, ("docs", 1): -2},
        vocabulary_size=lambda: 1234,
        snapshot=lambda: (7, 1.0, 99),
        snapshots_retained=lambda: 3,
        store_bytes=lambda: 4096,
        accumulator_bytes=lambda: 512,
        documents_waiting=lambda: 30,
    )
    return m


def test_every_metric_is_exported_with_prefix_and_units(tmp_path):
    m = bound_metrics()
    m.bind_filesystems(store=tmp_path)
    m.messages_consumed.labels("docs").inc()
    m.dead_letters.labels("sent").inc()
    m.source_errors.labels("NoBrokersAvailable").inc()
    m.refresh_failures.labels("rectify").inc()
    m.refresh_duration.labels("total").observe(1.5)
    m.topic_churn.labels("births").set(1)
    m.http_requests.labels("/healthz", "200").inc()
    families = scrape(m)
    assert EXPECTED <= set(families), sorted(EXPECTED - set(families))
    assert all(name.startswith("anchorstream_") for name in families)


def test_scrape_time_values():
    families = scrape(bound_metrics())
    assert sample(families, "anchorstream_consumer_lag_messages", partition="0") == 5
    assert sample(families, "anchorstream_consumer_lag_messages", partition="1") == 0  # clamped
    assert sample(families, "anchorstream_vocabulary_size_words") == 1234
    assert sample(families, "anchorstream_snapshot_version") == 7
    assert sample(families, "anchorstream_snapshot_age_seconds") > 1e9  # created at t = 1 s
    assert sample(families, "anchorstream_snapshot_documents") == 99
    assert sample(families, "anchorstream_store_size_bytes") == 4096
    assert sample(families, "anchorstream_process_resident_memory_bytes") > 0


def test_a_failing_source_is_left_out_not_fatal(caplog):
    m = bound_metrics()

    def broken():
        raise OSError("store is being rewritten")

    m.bind(store_bytes=broken, lag=None)
    families = scrape(m)
    assert "anchorstream_store_size_bytes" not in families
    assert "anchorstream_consumer_lag_messages" not in families
    assert sample(families, "anchorstream_vocabulary_size_words") == 1234
    assert "store_bytes" in caplog.text
    with pytest.raises(TypeError, match="unknown metrics source"):
        m.bind(lagg=lambda: {})


def test_rejection_reasons_start_at_zero():
    families = scrape(Metrics())
    assert sample(families, "anchorstream_messages_rejected_total", reason="invalid_json") == 0
    m = Metrics()
    m.observe_rejected("invalid_json")
    assert sample(scrape(m), "anchorstream_messages_rejected_total", reason="invalid_json") == 1


def test_refresh_stage_times_and_counts_failures():
    m = Metrics()
    with m.refresh_stage("rectify"):
        pass
    with pytest.raises(ValueError):
        with m.refresh_stage("recover"):
            raise ValueError("diverged")
    f = scrape(m)
    assert sample(f, "anchorstream_refresh_duration_seconds_count", stage="rectify") == 1
    assert sample(f, "anchorstream_refresh_duration_seconds_count", stage="recover") == 1
    assert sample(f, "anchorstream_refresh_failures_total", stage="recover") == 1


def test_churn_and_checkpoint_helpers():
    m = Metrics()
    m.observe_churn({"births": [5, 6], "deaths": [1],
                     "matched": [{"id": 0, "similarity": 0.8}, {"id": 2, "similarity": 0.6}],
                     "splits": [], "merges": []})
    m.observe_checkpoint(0.25, 10_000)
    m.observe_checkpoint(0.5, None, {"delta": 0.1, "write": 0.2, "commit": 0.05,
                                     "compact": 0.0, "gc": 0.15})
    f = scrape(m)
    assert sample(f, "anchorstream_topic_births_total") == 2
    assert sample(f, "anchorstream_topic_deaths_total") == 1
    assert sample(f, "anchorstream_topic_churn", kind="matched") == 2
    assert sample(f, "anchorstream_topic_match_similarity") == pytest.approx(0.7)
    assert sample(f, "anchorstream_checkpoints_total") == 2
    assert sample(f, "anchorstream_checkpoint_size_bytes_sum") == 10_000
    assert sample(f, "anchorstream_checkpoint_duration_seconds_count") == 2
    assert sample(f, "anchorstream_checkpoint_stage_seconds_sum", stage="write") == 0.2
    assert sample(f, "anchorstream_checkpoint_stage_seconds_count", stage="gc") == 1
    # A stage at 0 did not run (no compaction this time): not observed.
    with pytest.raises(KeyError):
        sample(f, "anchorstream_checkpoint_stage_seconds_count", stage="compact")


def test_filesystems_free_and_size_at_scrape_time(tmp_path):
    m = Metrics(process=False)
    store = tmp_path / "data" / "store"
    elsewhere = "s3://bucket/store"
    # The store directory does not exist yet (its parent is measured); the snapshots share
    # its file system (left out: one series per file system); an object store has none.
    m.bind_filesystems(store=f"file://{store}", snapshots=tmp_path / "snapshots",
                       remote=elsewhere)
    f = scrape(m)
    usage = shutil.disk_usage(tmp_path)
    assert sample(f, "anchorstream_filesystem_size_bytes", path="store") == usage.total
    free = sample(f, "anchorstream_filesystem_free_bytes", path="store")
    assert 0 < free <= usage.total
    assert abs(free - usage.free) < 0.1 * usage.total  # other writers share the disk
    series = {s.labels["path"] for s in f["anchorstream_filesystem_free_bytes"].samples}
    assert series == {"store"}
    # Only object stores: nothing to measure, no family at all.
    m.bind_filesystems(store=elsewhere)
    assert "anchorstream_filesystem_free_bytes" not in scrape(m)


def test_registries_are_independent():
    a, b = Metrics(), Metrics(CollectorRegistry(), process=False)
    a.documents_accumulated.inc(3)
    assert sample(scrape(a), "anchorstream_documents_accumulated_total") == 3
    assert sample(scrape(b), "anchorstream_documents_accumulated_total") == 0
    assert "anchorstream_process_resident_memory_bytes" not in scrape(b)


def test_openmetrics_negotiation():
    m = bound_metrics()
    body, ctype = m.exposition("application/openmetrics-text; version=1.0.0")
    assert ctype.startswith("application/openmetrics-text")
    names = {f.name for f in parse_om(body.decode())}
    assert "anchorstream_snapshot_version" in names


def test_separate_metrics_port():
    m = bound_metrics()
    server = m.serve("127.0.0.1", 0)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
            text = resp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert "anchorstream_vocabulary_size_words" in names
