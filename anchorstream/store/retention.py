"""Retention: what runs after a commit (compaction when due) and garbage collection.

Every commit keeps its objects until it is expired; collection expires all but the last
``keep_versions`` commits and deletes what no kept commit references, on a schedule that keeps
the disk bounded for long runs, slow streams and short runs alike.
"""

from __future__ import annotations

import datetime as _dt
import logging
import time

from anchorstream.errors import StoreError
from anchorstream.store.format import BRANCH
from anchorstream.store.repository import pass_through, wrap

__all__ = ["Retaining"]

log = logging.getLogger("anchorstream.store")


class Retaining:
    """The maintenance half of :class:`~anchorstream.store.CooccurrenceStore` (a mixin)."""

    def _after_commit(self) -> dict[str, float]:
        """Compact and collect garbage when due; returns their seconds (0.0: not run)."""
        seconds = {"compact": 0.0, "gc": 0.0}
        st = self._state
        seg_bytes = 16 * sum(s.nnz for s in st.segments)
        expired = any(not st.live(s.window, self.forgetting.ring) for s in st.segments)
        due = expired or seg_bytes > self.compact_bytes or len(st.segments) > self.max_segments
        if st.folding or due:
            t0 = time.perf_counter()
            try:
                if self._folds_in_steps():
                    self._fold_step(self.compact_step_seconds)
                else:
                    self.compact()
            except StoreError as exc:
                # The checkpoint itself is committed; compaction is retried after the next one.
                log.warning("compaction of %s failed (will retry): %s", self.url, exc)
            seconds["compact"] = time.perf_counter() - t0
        self._commits_since_gc += 1
        t0 = time.perf_counter()
        reason = self._gc_due()
        if reason:
            log.debug("garbage collection of %s: %s", self.url, reason)
            try:
                self.collect_garbage()
            except StoreError as exc:
                log.warning("garbage collection of %s failed (will retry): %s", self.url, exc)
        seconds["gc"] = time.perf_counter() - t0 if reason else 0.0
        return seconds

    def _gc_due(self) -> str | None:
        """Why garbage collection should run now (see the class notes), or None."""
        if self.gc_every and self._commits_since_gc >= self.gc_every:
            return f"{self._commits_since_gc} commits since the last collection"
        if self.gc_interval_seconds and time.time() - self._last_gc >= self.gc_interval_seconds:
            return "gc_interval_seconds passed since the last collection"
        if self._check_history and (self.gc_every or self.gc_interval_seconds):
            # Once per writer: commits left by earlier writers (short runs, restarts).
            self._check_history = False
            grace = _dt.datetime.now(_dt.UTC) - _dt.timedelta(seconds=float(self.gc_min_age))
            try:
                # Newest first; the last entry is the repository's first commit (never expired).
                old = list(self._repo.ancestry(branch=BRANCH))[self.keep_versions:-1]
            except Exception as exc:
                log.warning("cannot list the history of %s: %s", self.url, exc)
                return None
            if any(info.written_at < grace for info in old):
                return "the branch holds commits past keep_versions"
        return None

    def collect_garbage(self) -> dict:
        """Expire all but the last ``keep_versions`` commits (older than ``gc_min_age``) and
        delete unreachable objects, including debris of crashed writers.

        Returns
        -------
        dict
            ``expired`` (count), ``bytes_deleted``, ``objects_deleted``.
        """
        self._commits_since_gc = 0
        self._check_history = False
        now = _dt.datetime.now(_dt.UTC)
        grace = now - _dt.timedelta(seconds=float(self.gc_min_age))
        try:
            ancestry = list(self._repo.ancestry(branch=BRANCH))
            expired: set = set()
            if len(ancestry) > self.keep_versions:
                cutoff = min(ancestry[self.keep_versions - 1].written_at, grace)
                expired = self._repo.expire_snapshots(cutoff)
            summary = self._repo.garbage_collect(grace)
        except BaseException as exc:
            pass_through(exc)
            raise wrap(exc, f"garbage collection of {self.url!r} failed") from exc
        # Recorded in the store with the next commit, for gc_interval_seconds across restarts.
        self._last_gc = now.timestamp()
        self._maintenance = {**self._maintenance, "last_gc": self._last_gc}
        return {
            "expired": len(expired),
            "bytes_deleted": int(summary.bytes_deleted),
            "objects_deleted": int(
                summary.chunks_deleted + summary.manifests_deleted + summary.snapshots_deleted
                + summary.attributes_deleted + summary.transaction_logs_deleted
            ),
        }
