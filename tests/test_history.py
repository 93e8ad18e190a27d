"""The topic history file: torn writes, corruption, bounds, restarts."""

from __future__ import annotations

from daemon.history import HISTORY_FILE, History, entry_from_topics


def record(v: int, created: str = "2026-01-01T00:00:00Z"):
    topics = [{"id": i, "prevalence": 0.25, "anchor": f"w{i}",
               "top_words": [[f"w{i}{j}", 0.1] for j in range(12)]} for i in range(4)]
    return entry_from_topics(v, created, topics)


def test_append_and_reload(tmp_path):
    h = History(tmp_path)
    for v in range(1, 6):
        h.append(record(v))
    h.append(record(3))  # not above the last version: ignored
    again = History(tmp_path)
    assert [e.version for e in again.entries()] == [1, 2, 3, 4, 5]
    assert again.last_words()[2] == ("w2", [f"w2{j}" for j in range(10)])


def test_a_torn_last_line_loses_only_itself(tmp_path):
    h = History(tmp_path)
    for v in range(1, 4):
        h.append(record(v))
    path = tmp_path / HISTORY_FILE
    data = path.read_bytes()
    path.write_bytes(data + data.splitlines(keepends=True)[0][:40])  # a crash mid-append
    again = History(tmp_path)
    assert [e.version for e in again.entries()] == [1, 2, 3] and again.skipped == 1
    again.append(record(4))  # goes on its own line, after the torn one
    assert [e.version for e in History(tmp_path).entries()] == [1, 2, 3, 4]


def test_a_corrupt_line_fails_its_checksum(tmp_path):
    h = History(tmp_path)
    for v in range(1, 4):
        h.append(record(v))
    path = tmp_path / HISTORY_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"0.25", b"0.99", 1)  # valid JSON, wrong bytes
    path.write_bytes(b"".join(lines))
    assert [e.version for e in History(tmp_path).entries()] == [1, 3]


def test_bounded_by_entries_with_an_atomic_rewrite(tmp_path):
    h = History(tmp_path, max_entries=4)
    for v in range(1, 12):
        h.append(record(v))
        assert len(h.records) <= 5
    assert [e.version for e in History(tmp_path).entries()][-1] == 11
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_bounded_by_age_keeps_the_newest(tmp_path):
    now = 1_800_000_000.0
    h = History(tmp_path, max_age_seconds=100, clock=lambda: now)
    h.append(record(1, "2020-01-01T00:00:00Z"))
    h.append(record(2, "2020-01-01T00:00:01Z"))
    assert [e.version for e in h.entries()] == [2]  # both old, the newest stays


def test_entries_follow_the_records_through_compaction(tmp_path):
    h = History(tmp_path, max_entries=3)
    for v in range(1, 9):
        h.append(record(v))
    assert [e.version for e in h.entries()] == [int(r["version"]) for r in h.records]
    assert h.entries()[0].words[1] == [f"w1{j}" for j in range(10)]
