"""Publishing topic-model snapshots: versions, the ``LATEST`` pointer, retention, history.

Layout under ``snapshots.path``::

    0000000001/        one immutable snapshot per version (anchorstream.snapshot format)
    0000000002/
    LATEST             "0000000002\\n": the newest published version
    HISTORY.jsonl      every published topic's prevalence, anchor and top words, one line per
                       version, kept longer than the snapshots (daemon/history.py)

A version is a positive integer, one more than the largest version ever found in the directory,
so versions stay monotonic across restarts (the newest snapshot is never pruned, so the largest
directory name survives). Directory names are zero-padded to ten digits so that ``ls`` sorts them.

Why a ``LATEST`` file and not a ``latest`` symlink: replacing a small file with ``os.replace`` is
atomic on every platform Python supports and on network and FUSE file systems that do not do
symlinks (SMB shares, many object-store mounts, Windows without developer mode); a reader needs
one ``read()`` rather than ``readlink`` plus path resolution; and a copied or synced snapshot
directory (``rsync``, ``aws s3 sync``) keeps it as a plain file. The snapshot directory itself is
written by :func:`anchorstream.snapshot.write_snapshot` under a temporary name and renamed into
place, so a reader who follows ``LATEST`` always finds a complete snapshot. The pointer is only
moved after the directory is complete and fsynced, and the file and its directory are fsynced
too, so after a crash ``LATEST`` names a complete snapshot.

Retention: after each publication the newest ``keep`` snapshots are kept, and of those any older
than ``keep_seconds`` (by their manifest's ``created_at``) are dropped as well; the latest is
never dropped. A pruned directory is first renamed to a hidden ``.trash-*`` name (so it leaves
the listing at once) and then deleted.

History and trends: each publication appends the snapshot's topics to the history
(:class:`daemon.history.History`) and :meth:`Publisher.trends` computes
:func:`anchorstream.model.trends.compute_trends` over it (cached per version); the
``on_publish`` summary (:func:`daemon.summary.compact_summary`) carries them in brief. A crash
between the snapshot and its history line is repaired at the next start: retained snapshots
newer than the history's last line are appended then.

Threads: :meth:`Publisher.publish` may run in the refresher thread while the HTTP server's
threads call the read methods; all shared state is guarded by one :class:`threading.Condition`,
which :meth:`Publisher.wait_for_newer` waits on for long polls.

Usage::

    pub = Publisher("snapshots", keep=20, on_publish=send_summary_to_kafka)
    info = pub.publish(vocabulary=words, topic_word=B.T, topic_topic=A, anchors=anchor_words,
                       topic_ids=alignment.ids, num_docs=n, settings=..., source=...)
    pub.latest()                     # the Snapshot object (arrays included), or None
    pub.wait_for_newer(info.version, timeout=30)
"""

from __future__ import annotations

import collections
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anchorstream.fsutil import write_atomically
from anchorstream.errors import SnapshotError, SnapshotNotFoundError
from anchorstream.model.correlations import related_topics
from anchorstream.model.trends import Trends, TrendSettings, compute_trends
from anchorstream.model.background import BACKGROUND_SPREAD
from anchorstream.snapshot import Snapshot, read_snapshot, write_snapshot
from anchorstream.text.decode import parse_timestamp
from daemon.history import History, entry_from_topics
from daemon.summary import compact_summary

__all__ = ["LATEST_FILE", "Publisher", "SnapshotInfo", "version_name"]

log = logging.getLogger("anchorstream.publisher")

LATEST_FILE = "LATEST"
VERSION_DIGITS = 10
_VERSION_RX = re.compile(r"\d{1,20}")


def version_name(version: int) -> str:
    """Directory name of a version: ``7`` -> ``"0000000007"``."""
    return f"{int(version):0{VERSION_DIGITS}d}"


@dataclass(frozen=True)
class SnapshotInfo:
    """What a listing says about one published snapshot (read from its manifest only)."""

    version: int
    path: Path
    created_at: str
    num_docs: int
    num_topics: int
    vocab_size: int

    @property
    def created_timestamp(self) -> float:
        """``created_at`` as seconds since the epoch (the one ISO 8601 parser, as for documents).

        Raises :class:`anchorstream.text.decode.DecodeError` (a ValueError) for a bad stamp.
        """
        return parse_timestamp(self.created_at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "created_at": self.created_at,
            "num_docs": self.num_docs,
            "num_topics": self.num_topics,
            "vocab_size": self.vocab_size,
        }


class Publisher:
    """Owner of a snapshot directory: publishes, prunes, lists, and serves what is there.

    Parameters
    ----------
    path : path-like
        The snapshot directory (created if missing).
    keep : int, default 20
        Number of newest snapshots retained.
    keep_seconds : float, optional
        Snapshots older than this are dropped too (the latest never is).
    n_top_words : int, default 20
        Default ``n_top_words`` for :func:`write_snapshot`.
    background_spread : float or None, default BACKGROUND_SPREAD
        Default ``background_spread`` for :func:`write_snapshot` (None: top words by
        probability, no background report).
    on_publish : callable, optional
        Called with :func:`~daemon.summary.compact_summary` of each new snapshot after ``LATEST`` moved. Errors
        are logged and do not undo the publication (the snapshot is already out).
    cache_size : int, default 4
        How many snapshots (arrays included) are kept in memory besides the latest.
    clock : callable, default time.time
        Seconds since the epoch; injectable for retention tests.
    history_max_entries : int, default 1000
        Versions the history keeps (``snapshots.history_max_entries``).
    history_max_age_seconds : float, optional
        The history also drops versions older than this.
    trend_settings : TrendSettings, optional
        How :meth:`trends` scores (``trends.*``).

    Raises
    ------
    SnapshotError
        If ``path`` exists and is not a directory.
    """

    def __init__(self, path: str | os.PathLike, *, keep: int = 20,
                 keep_seconds: float | None = None, n_top_words: int = 20,
                 background_spread: float | None = BACKGROUND_SPREAD,
                 on_publish: Callable[[dict[str, Any]], None] | None = None,
                 cache_size: int = 4, clock: Callable[[], float] = time.time,
                 history_max_entries: int = 1000, history_max_age_seconds: float | None = None,
                 trend_settings: TrendSettings | None = None):
        if int(keep) < 1:
            raise ValueError(f"keep must be >= 1, got {keep!r}")
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise SnapshotError(f"snapshot path {self.path} exists and is not a directory")
        self.path.mkdir(parents=True, exist_ok=True)
        self.keep = int(keep)
        self.keep_seconds = keep_seconds
        self.n_top_words = n_top_words
        self.background_spread = background_spread
        self.on_publish = on_publish
        self._clock = clock
        self._cond = threading.Condition()
        self._publish_lock = threading.Lock()
        self._closed = False
        self._cache: collections.OrderedDict[int, Snapshot] = collections.OrderedDict()
        self._cache_size = max(int(cache_size), 0)
        self._infos: dict[int, SnapshotInfo] = {}
        self._topics: dict[int, list[dict]] = {}
        self._latest: tuple[int, Snapshot] | None = None
        self._max_version = 0
        self.trend_settings = trend_settings or TrendSettings()
        self._trends: tuple[int, Trends] | None = None
        self.history = History(self.path, max_entries=history_max_entries,
                               max_age_seconds=history_max_age_seconds, clock=clock)
        self._recover()
        self._backfill_history()

    # ----------------------------------------------------------------------------------------
    # start-up

    def _version_dirs(self) -> list[int]:
        out = []
        for entry in self.path.iterdir():
            if _VERSION_RX.fullmatch(entry.name) and entry.is_dir():
                out.append(int(entry.name))
        return sorted(out)

    def _recover(self) -> None:
        """Find the latest good snapshot and clean up what a crash may have left behind."""
        for entry in self.path.iterdir():
            # .trash-* are half-deleted prunes; .<version>.tmp-* are snapshots whose writer died
            # before the rename (write_snapshot's temporary names). Neither was ever visible.
            if entry.is_dir() and (entry.name.startswith(".trash-") or (
                    entry.name.startswith(".") and ".tmp-" in entry.name)):
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.is_file() and entry.name.startswith(f".{LATEST_FILE}.tmp-"):
                entry.unlink(missing_ok=True)  # a pointer update that died before os.replace
        versions = self._version_dirs()
        self._max_version = versions[-1] if versions else 0
        pointer = self._read_pointer()
        candidates = sorted(versions, reverse=True)
        if pointer is not None and pointer in versions:
            # LATEST first: a snapshot written after it but before a crash moved it is complete
            # (write_snapshot renames only complete directories), but was never announced;
            # prefer what was announced, then anything newer that reads back fine.
            candidates = [pointer] + [v for v in candidates if v != pointer]
        for v in candidates:
            try:
                snap = read_snapshot(self.path / version_name(v))
            except SnapshotError as exc:  # includes SnapshotNotFoundError
                log.warning("ignoring unreadable snapshot %s: %s", version_name(v), exc)
                continue
            self._latest = (v, snap)
            if pointer != v:
                self._write_pointer(v)
            log.info("serving snapshot %s from %s", version_name(v), self.path)
            break
        for v in versions:
            self._info(v)

    def _read_pointer(self) -> int | None:
        try:
            text = (self.path / LATEST_FILE).read_text(encoding="ascii").strip()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return int(text) if _VERSION_RX.fullmatch(text) else None

    def _level_weight(self) -> float | None:
        """The share of the background level the latest snapshot's labels were ranked above,
        where they were ranked for short documents (``label_cap`` set); else None."""
        latest = self.latest()
        found = ((latest[1].extra or {}) if latest else {}).get("background_words") or {}
        return found.get("level_weight") if found.get("label_cap") is not None else None

    def _write_pointer(self, version: int) -> None:
        write_atomically(self.path / LATEST_FILE, (version_name(version) + "\n").encode("ascii"))

    # ----------------------------------------------------------------------------------------
    # publishing

    def publish(self, **snapshot: Any) -> SnapshotInfo:
        """Write a new snapshot, move ``LATEST`` to it, prune, wake long polls, call the hook.

        Parameters
        ----------
        **snapshot
            Keyword arguments of :func:`anchorstream.snapshot.write_snapshot` except ``path``
            (``vocabulary``, ``topic_word`` (K, V), ``topic_topic``, ``anchors``, ``topic_ids``,
            ``prevalence``, ``num_docs``, ``settings``, ``source``, ``quality``, ``extra``, ...).
            ``extra["snapshot_version"]`` is set to the new version.

        Returns
        -------
        SnapshotInfo

        Raises
        ------
        InputError
            From :func:`write_snapshot` for inconsistent arrays (nothing is published).
        SnapshotError
            If the publisher was closed.
        OSError
            When the disk fails; the previous snapshot stays the latest.
        """
        if "path" in snapshot:
            raise TypeError("publish() chooses the path itself; do not pass path=")
        with self._publish_lock:
            if self._closed:
                raise SnapshotError("the publisher is closed")
            version = max(self._max_version, *self._version_dirs(), self._history_version(),
                          0) + 1
            target = self.path / version_name(version)
            snapshot.setdefault("n_top_words", self.n_top_words)
            snapshot.setdefault("background_spread", self.background_spread)
            snapshot.setdefault("previous_level_weight", self._level_weight())
            snapshot["extra"] = {**(snapshot.get("extra") or {}), "snapshot_version": version}
            write_snapshot(target, **snapshot)
            # Checked as read, not hashed: its checksums were just taken of these bytes.
            snap = read_snapshot(target, verify=False)
            self._write_pointer(version)
            # Before waking readers: whoever sees the new version finds it in the trends.
            self._record_history(version, snap)
            with self._cond:
                self._max_version = version
                self._latest = (version, snap)
                self._remember(version, snap)
                self._cond.notify_all()
            info = self._info(version)
            self._prune()
            trends = self.trends()
        log.info("published snapshot %s (%d topics, %d documents)",
                 version_name(version), snap.num_topics, snap.num_docs)
        if self.on_publish is not None:
            try:
                self.on_publish(compact_summary(snap, version, trends=trends))
            except Exception:  # noqa: BLE001 - the hook is best effort by design
                log.exception("the on_publish hook failed for snapshot %s", version_name(version))
        return info

    def _history_version(self) -> int:
        records = self.history.records
        return int(records[-1]["version"]) if records else 0

    def _record_history(self, version: int, snap: Snapshot) -> None:
        try:
            self.history.append(entry_from_topics(version, snap.manifest["created_at"],
                                                  snap.topics))
        except OSError:  # the snapshot is out; the next start backfills the history from it
            log.exception("could not append snapshot %s to the history", version_name(version))

    def _backfill_history(self) -> None:
        """Append retained snapshots the history lacks (a crash between the two writes)."""
        last = self._history_version()
        for v in self._version_dirs():
            info = self._info(v)
            if v <= last or info is None:
                continue
            try:
                self.history.append(entry_from_topics(v, info.created_at, self.topics(v)))
            except (SnapshotError, OSError) as exc:
                log.warning("could not add snapshot %s to the history: %s", version_name(v), exc)

    def trends(self) -> Trends | None:
        """:func:`compute_trends` over the history (cached per latest version), None before the
        first snapshot."""
        last = self._history_version()
        cached = self._trends
        if last == 0:
            return None
        if cached is not None and cached[0] == last:
            return cached[1]
        trends = compute_trends(self.history.entries(), self.trend_settings)
        self._trends = (last, trends)  # one tuple assignment: safe between threads
        return trends

    def _prune(self) -> None:
        with self._cond:
            latest = self._latest[0] if self._latest else None
        versions = self._version_dirs()
        drop = set(versions[:-self.keep]) if len(versions) > self.keep else set()
        if self.keep_seconds is not None:
            horizon = self._clock() - float(self.keep_seconds)
            for v in versions:
                info = self._info(v)
                if info is not None and info.created_timestamp < horizon:
                    drop.add(v)
        drop.discard(latest)
        for v in sorted(drop):
            src = self.path / version_name(v)
            trash = self.path / f".trash-{version_name(v)}-{uuid.uuid4().hex[:8]}"
            try:
                os.rename(src, trash)
            except FileNotFoundError:
                pass
            shutil.rmtree(trash, ignore_errors=True)
            with self._cond:
                self._cache.pop(v, None)
                self._infos.pop(v, None)
                self._topics.pop(v, None)
            log.info("pruned snapshot %s", version_name(v))

    # ----------------------------------------------------------------------------------------
    # reading

    @property
    def latest_version(self) -> int | None:
        """The newest published version, or None before the first."""
        with self._cond:
            return self._latest[0] if self._latest else None

    def latest(self) -> tuple[int, Snapshot] | None:
        """``(version, Snapshot)`` of the newest snapshot, or None."""
        with self._cond:
            return self._latest

    def latest_info(self) -> SnapshotInfo | None:
        v = self.latest_version
        return None if v is None else self._info(v)

    def has(self, version: int) -> bool:
        """Whether ``version`` is retained (the latest, or a directory still on disk)."""
        with self._cond:
            if self._latest is not None and self._latest[0] == int(version):
                return True
        return (self.path / version_name(version)).is_dir()

    def get(self, version: int) -> Snapshot:
        """The snapshot of ``version`` (cached).

        Raises
        ------
        SnapshotNotFoundError
            If the version was never published or has been pruned.
        SnapshotError
            If its files are corrupt.
        """
        version = int(version)
        with self._cond:
            if self._latest and self._latest[0] == version:
                return self._latest[1]
            if version in self._cache:
                self._cache.move_to_end(version)
                return self._cache[version]
        snap = read_snapshot(self.path / version_name(version))
        with self._cond:
            self._remember(version, snap)
        return snap

    def _remember(self, version: int, snap: Snapshot) -> None:
        if self._cache_size == 0:
            return
        self._cache[version] = snap
        self._cache.move_to_end(version)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def list(self) -> list[SnapshotInfo]:
        """Every retained snapshot, oldest first."""
        return [i for i in (self._info(v) for v in self._version_dirs()) if i is not None]

    def _info(self, version: int) -> SnapshotInfo | None:
        with self._cond:
            if version in self._infos:
                return self._infos[version]
        path = self.path / version_name(version)
        try:
            m = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
            info = SnapshotInfo(version, path, str(m["created_at"]), int(m["num_docs"]),
                                int(m["num_topics"]), int(m["vocab_size"]))
            info.created_timestamp  # noqa: B018 - validates the timestamp now
        except (OSError, ValueError, KeyError, TypeError):
            return None
        with self._cond:
            self._infos[version] = info
        return info

    def topics(self, version: int) -> list[dict]:
        """The parsed ``topics.json`` of a version, without loading its matrices.

        Raises
        ------
        SnapshotNotFoundError
            If the version is not retained.
        """
        with self._cond:
            if version in self._topics:
                return self._topics[version]
            if self._latest and self._latest[0] == version:
                return self._latest[1].topics
        try:
            text = (self.path / version_name(version) / "topics.json").read_text("utf-8")
            topics = json.loads(text)
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"snapshot {version_name(version)} is not retained") \
                from None
        except (OSError, ValueError) as exc:
            raise SnapshotError(f"snapshot {version_name(version)}: topics.json: {exc}") from None
        with self._cond:
            self._topics[version] = topics
        return topics

    def topic_history(self, topic_id: int, n_words: int = 10) -> list[dict[str, Any]]:
        """A topic across every retained snapshot that has it, oldest first.

        Returns
        -------
        list of dict
            ``{"version", "created_at", "anchor", "prevalence", "top_words": [word, ...]}`` per
            snapshot containing ``topic_id``; empty if none does.
        """
        out = []
        for info in self.list():
            try:
                topics = self.topics(info.version)
            except SnapshotError:  # pruned while we looked, or unreadable: skip it
                continue
            for t in topics:
                if t.get("id") == topic_id:
                    out.append({
                        "version": info.version,
                        "created_at": info.created_at,
                        "anchor": t.get("anchor"),
                        "prevalence": t.get("prevalence"),
                        "top_words": [w for w, _ in t.get("top_words", [])[:n_words]],
                    })
                    break
        return out

    def related_topics(self, topic_id: int, top: int = 5) -> list[dict[str, Any]]:
        """The topics of the latest snapshot that share documents with ``topic_id`` more than
        chance (:func:`anchorstream.model.correlations.related_topics`), strongest first.

        Returns
        -------
        list of dict
            ``{"id", "anchor", "lift"}``; empty before the first snapshot, or when the topic is
            not in the latest one.
        """
        latest = self.latest()
        ids = [] if latest is None else latest[1].topic_ids
        if topic_id not in ids:
            return []
        snap = latest[1]
        return [{"id": ids[j], "anchor": snap.topics[j]["anchor"], "lift": lift}
                for j, lift in related_topics(snap.topic_topic, ids.index(topic_id), top=top)]

    # ----------------------------------------------------------------------------------------
    # waiting

    def wait_for_newer(self, version: int | None, timeout: float) -> int | None:
        """Block until a version newer than ``version`` is published, or ``timeout`` passes.

        Parameters
        ----------
        version : int or None
            The version the caller has; None waits for the first snapshot.
        timeout : float
            Seconds.

        Returns
        -------
        int or None
            The latest version if it is newer than ``version``, else None (timed out, or the
            publisher was closed).
        """
        def newer():
            return self._closed or (
                self._latest is not None and (version is None or self._latest[0] > version))

        with self._cond:
            self._cond.wait_for(newer, timeout=max(float(timeout), 0.0))
            if self._latest is not None and (version is None or self._latest[0] > version):
                return self._latest[0]
            return None

    def close(self) -> None:
        """Refuse further publications and release every waiter (used at shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
