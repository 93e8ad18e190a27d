"""The compact topic history beside the snapshots: what trends are computed from.

Snapshots are pruned (``snapshots.keep``), but a trend needs more past than twenty snapshots,
and a topic's birth may be older than any retained snapshot. So every publication also appends
one line to ``<snapshots.path>/HISTORY.jsonl``::

    <crc32 as 8 hex digits> {"version": 7, "created_at": "...", "topics": [
        {"id": 3, "prevalence": 0.0412, "anchor": "vaccine", "top_words": ["vaccine", ...]}, ...]}

about 150 bytes per topic (10 top words: what ``/v1/trends`` shows for a topic that is gone).

Crash safety (why append + checksum, not rewrite-and-rename each time): an append writes a
few kilobytes where a rewrite writes the whole file at every publication. A line is written
with one ``write`` and fsynced; a crash in the middle leaves at most a torn last line, which
fails its CRC-32 (or is not JSON) and is skipped on reading: the earlier lines, already fsynced,
are untouched. Before an append, a file that does not end with a newline (a torn line) gets
one, so the new line stands on its own. Bounding the file is the one rewrite: past
``max_entries`` lines (with 25 % slack, so it happens once per ``max_entries / 4``
publications) or when the oldest entry is older than ``max_age_seconds``, the kept lines go to
a temporary file, fsynced, renamed over the old one with ``os.replace`` and the directory
fsynced, so a crash leaves either the old file or the new one, whole.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from anchorstream.fsutil import write_atomically
from anchorstream.model.trends import HistoryEntry
from anchorstream.text.decode import parse_timestamp

__all__ = ["HISTORY_FILE", "History", "entry_from_topics"]

log = logging.getLogger("anchorstream.history")

HISTORY_FILE = "HISTORY.jsonl"
#: Top words kept per topic and entry.
HISTORY_WORDS = 10


def entry_from_topics(version: int, created_at: str, topics: Iterable[dict]) -> dict[str, Any]:
    """The history record of a snapshot from its ``topics.json`` list."""
    return {
        "version": int(version),
        "created_at": str(created_at),
        "topics": [{"id": int(t["id"]), "prevalence": round(float(t["prevalence"]), 8),
                    "anchor": t.get("anchor"),
                    "top_words": [w for w, _ in t.get("top_words", [])[:HISTORY_WORDS]]}
                   for t in topics],
    }


def _line(record: dict[str, Any]) -> bytes:
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(body), body)


def _parse(line: bytes) -> dict[str, Any] | None:
    """A record from one line, or None when it is torn or corrupt."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:].rstrip(b"\n")
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        record = json.loads(body)
        int(record["version"])
        parse_timestamp(record["created_at"])
        for t in record["topics"]:
            int(t["id"]), float(t["prevalence"])
    except (ValueError, KeyError, TypeError):
        return None
    return record


class History:
    """The history file of one snapshot directory, and its records in memory.

    Parameters
    ----------
    directory : path-like
        The snapshot directory (``snapshots.path``).
    max_entries : int, default 1000
        Records kept (the newest).
    max_age_seconds : float, optional
        Records older than this (by ``created_at``) are dropped too; the newest never is.
    clock : callable, default time.time
    """

    def __init__(self, directory: str | os.PathLike, *, max_entries: int = 1000,
                 max_age_seconds: float | None = None,
                 clock: Callable[[], float] | None = None):
        if int(max_entries) < 2:
            raise ValueError(f"max_entries must be >= 2, got {max_entries!r}")
        self.path = Path(directory) / HISTORY_FILE
        self.max_entries = int(max_entries)
        self.max_age_seconds = None if max_age_seconds is None else float(max_age_seconds)
        self._clock = clock or time.time
        self._lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        self._entries: list[HistoryEntry] = []  # records parsed once, in step with them
        self.skipped = 0
        self._load()

    def _load(self) -> None:
        for tmp in self.path.parent.glob(f".{HISTORY_FILE}.tmp-*"):
            tmp.unlink(missing_ok=True)  # a compaction that died before os.replace
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        last = 0
        for raw in data.splitlines(keepends=True):
            record = _parse(raw)
            if record is None or int(record["version"]) <= last:
                self.skipped += 1
                continue
            last = int(record["version"])
            self._keep(record)
        if self.skipped:
            log.warning("%s: skipped %d torn or corrupt line(s)", self.path, self.skipped)

    def append(self, record: dict[str, Any]) -> None:
        """Add one snapshot's record (durably), then compact when the bounds are passed.

        A record whose version is not above the last one's is ignored (a republish after a
        crash between the snapshot and its history line cannot happen twice).
        """
        with self._lock:
            if self.records and int(record["version"]) <= int(self.records[-1]["version"]):
                return
            line = _line(record)
            with open(self.path, "ab") as fh:
                if fh.tell() > 0:
                    with open(self.path, "rb") as check:
                        check.seek(-1, os.SEEK_END)
                        if check.read(1) != b"\n":
                            fh.write(b"\n")  # a torn last line: keep it apart, it is skipped
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self._keep(record)
            if self._over_bounds():
                self._compact()

    def _over_bounds(self) -> bool:
        if len(self.records) > self.max_entries + max(self.max_entries // 4, 1):
            return True
        if self.max_age_seconds is not None and len(self.records) > 1:
            oldest = parse_timestamp(self.records[0]["created_at"])
            return oldest < self._clock() - self.max_age_seconds
        return False

    def _compact(self) -> None:
        keep = self.records[-self.max_entries:]
        if self.max_age_seconds is not None:
            horizon = self._clock() - self.max_age_seconds
            keep = [r for r in keep[:-1] if parse_timestamp(r["created_at"]) >= horizon] \
                + keep[-1:]
        write_atomically(self.path, b"".join(_line(r) for r in keep))
        kept = {int(r["version"]) for r in keep}
        self.records = keep
        self._entries = [e for e in self._entries if e.version in kept]

    def _keep(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        topics = record["topics"]
        self._entries.append(HistoryEntry(
            int(record["version"]), str(record["created_at"]),
            {int(t["id"]): float(t["prevalence"]) for t in topics},
            {int(t["id"]): list(t.get("top_words") or []) for t in topics}))

    def entries(self) -> list[HistoryEntry]:
        """The records as :class:`anchorstream.model.trends.HistoryEntry`, oldest first."""
        with self._lock:
            return list(self._entries)

    def last_words(self) -> dict[int, tuple[str | None, list[str]]]:
        """Each topic id's anchor and top words as last recorded."""
        with self._lock:
            records = list(self.records)
        out: dict[int, tuple[str | None, list[str]]] = {}
        for r in records:
            for t in r["topics"]:
                out[int(t["id"])] = (t.get("anchor"), list(t.get("top_words") or []))
        return out
