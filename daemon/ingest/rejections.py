"""The log's account of rejected records: what an operator reads when no snapshot comes.

A rejected record is counted by reason (``anchorstream_messages_rejected_total``), sent to the
dead-letter topic where one is configured, and skipped (:mod:`daemon.ingest.loop`). Each one is
logged at DEBUG only: a stream with a bad message now and then must not fill the log. But a
misconfigured ``message`` section (``format: json`` for plain text, a ``text_field`` the messages
do not have) rejects *every* message, and the daemon then publishes nothing and says nothing at
the default level. :class:`RejectionReport` logs a WARNING at the first rejection and then at
most once a minute, with the count by reason since the last one and an example, and, while no
record has been accepted since the start, what in the ``message`` section to check.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

__all__ = ["REPORT_EVERY_SECONDS", "RejectionReport"]

log = logging.getLogger("anchorstream.loop")

#: Seconds between two reports (the first rejection is reported at once).
REPORT_EVERY_SECONDS = 60.0


class RejectionReport:
    """Counts rejections since the last report; logs them when one is due.

    Parameters
    ----------
    message : daemon.settings.MessageConfig
        The ``message`` section (its ``format`` and ``text_field`` are named in the advice).
    clock : callable
        Monotonic seconds.
    every : float
        Seconds between reports.
    """

    def __init__(self, message, clock: Callable[[], float] = time.monotonic,
                 every: float = REPORT_EVERY_SECONDS):
        self.message = message
        self._clock = clock
        self._every = float(every)
        self._since: Counter[str] = Counter()
        self._example: dict[str, str] = {}
        self._next = float("-inf")
        #: Reports logged so far.
        self.reports = 0

    def add(self, reason: str, detail: str) -> None:
        """Count one rejection (reported by the next :meth:`report_if_due` that is due)."""
        self._since[reason] += 1
        self._example.setdefault(reason, detail)

    def report_if_due(self, *, accepted: int) -> bool:
        """Log what was rejected since the last report, if any and a report is due
        (``accepted``: records accepted since the start, counted after the batch, so that a
        batch of good records and one bad one is not taken for a stream of bad ones)."""
        now = self._clock()
        if not self._since or now < self._next:
            return False
        self._next = now + self._every
        total = sum(self._since.values())
        reason, _ = self._since.most_common(1)[0]
        counts = ", ".join(f"{r} {n}" for r, n in self._since.most_common())
        log.warning("rejected %d record(s) since the last report (%s), counted in "
                    "anchorstream_messages_rejected_total; e.g. %s: %s%s", total, counts,
                    reason, self._example[reason][:300], self._advice(reason, accepted))
        self._since.clear()
        self._example.clear()
        self.reports += 1
        return True

    def _advice(self, reason: str, accepted: int) -> str:
        if accepted:
            return ""
        m = self.message
        if reason == "invalid_json" and m.format == "json":
            return ("; no record accepted since the start: message.format is 'json', and "
                    "plain text needs message.format: text")
        if reason == "missing_field":
            return (f"; no record accepted since the start: none has the field "
                    f"{m.text_field!r} (message.text_field)")
        return "; no record accepted since the start: check the message section of the config"
