"""The demo's printed snapshot header and trends line (daemon/cli/demo_output.py)."""

from __future__ import annotations

import datetime as dt
import io
from types import SimpleNamespace

from anchorstream.model.trends import HistoryEntry, compute_trends
from daemon.cli.demo_output import Style, format_snapshot, format_trends


def test_the_trends_line_names_new_and_rising_topics_with_anchors():
    rows = [HistoryEntry(v, f"2026-01-01T00:00:0{v}Z", {0: 0.5, 1: 0.5}) for v in (1, 2, 3)]
    rows += [HistoryEntry(v, f"2026-01-01T00:00:0{v}Z",
                          {0: 0.5 * 0.7 ** (v - 3), 1: 0.5, 7: 0.01 * 2 ** (v - 3)})
             for v in range(4, 10)]
    style = Style(io.StringIO())  # not a terminal: no colours
    line = format_trends(compute_trends(rows), style, {7: "vaccine", 0: "war"})
    assert line.startswith("trends (last 9 snapshots): new: 7 vaccine (z +")
    assert "rising" not in line  # 7 is listed once, as new
    flat = [HistoryEntry(v, f"2026-01-01T00:00:0{v}Z", {0: 0.5, 1: 0.5}) for v in (1, 2, 3, 4)]
    assert format_trends(compute_trends(flat), style, {}) == \
        "trends (last 4 snapshots): nothing new or rising"


def test_the_header_counts_the_replayed_documents_and_says_how_many_were_repeats():
    snap = SimpleNamespace(
        topics=[{"id": 0, "prevalence": 1.0, "anchor": "war",
                 "top_words": [("war", 0.5), ("peace", 0.5)]}],
        extra={}, created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), num_docs=2399,
        vocab_size=400)
    style = Style(io.StringIO())
    text = format_snapshot(5, snap, None, style, replayed=2400)
    assert "snapshot 5 | 2,400 documents (1 repeated, skipped) | 400 words" in text
    assert "snapshot 5 | 2,399 documents | 400 words" in format_snapshot(5, snap, None, style)
