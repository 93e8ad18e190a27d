"""Rate-limiting the Kafka client's repeated log messages.

While a broker is away kafka-python logs every reconnection attempt, four lines each (connection
lost, connection failed, bootstrap failed, waiting): 153 of 168 lines in two minutes of an
unreachable broker, burying the daemon's own. :class:`RepeatFilter` lets the first record of each
message (logger and format string, whatever its arguments) through, drops its repeats for
``interval`` seconds, and appends the count of the dropped ones to the next record that passes::

    kafka.net.manager: Connection failed: ... [41 more like this in the last 60 s]

The same filter folds a Kafka client record's traceback into its one line
(``... closing socket [AttributeError: 'NoneType' object has no attribute 'recv']``): kafka-python
logs internal races with ``log.exception`` — for one, while the consumer closes at shutdown —
and a multi-line traceback of the client's internals tells an operator nothing the one line
does not. The daemon's own tracebacks are kept.

Installed by the daemon at start (:func:`install`) on the root logger's handlers — a filter on
the ``kafka`` logger would not see its children's records — and removed when it stops. The
daemon's own account of an outage is in its ``anchorstream.source`` lines and ``/readyz``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["RepeatFilter", "install"]


class RepeatFilter(logging.Filter):
    """Pass one record per (logger, message template) per ``interval`` seconds, with a count.

    Parameters
    ----------
    interval : float
        Seconds; 0 lets everything through.
    prefix : str, default "kafka"
        Only records of this logger and its children are limited.
    clock : callable, default time.monotonic

    Examples
    --------
    >>> now = [0.0]
    >>> f = RepeatFilter(60, clock=lambda: now[0])
    >>> rec = lambda: logging.LogRecord("kafka.net", 30, "", 0, "lost %s", ("x",), None)
    >>> [f.filter(rec()) for _ in range(3)]
    [True, False, False]
    >>> now[0] = 61.0
    >>> r = rec(); f.filter(r), r.getMessage()
    (True, 'lost x [2 more like this in the last 60 s]')
    """

    def __init__(self, interval: float, *, prefix: str = "kafka",
                 clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.interval = float(interval)
        self.prefix = prefix
        self._clock = clock
        self._lock = threading.Lock()
        # (logger, template) -> [time the window opened, records dropped in it]
        self._seen: dict[tuple[str, str], list] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        # A record goes through every handler's filters: decide once, answer the same after.
        decided = getattr(record, "_repeat_filter", None)
        if decided is not None:
            return decided
        name = record.name
        if not (name == self.prefix or name.startswith(self.prefix + ".")):
            return True
        passed = self.interval <= 0 or self._decide(record)  # keyed on the template
        if passed:
            _fold_traceback(record)
        record._repeat_filter = passed
        return passed

    def _decide(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self._clock()
        with self._lock:
            state = self._seen.get(key)
            if state is not None and now - state[0] < self.interval:
                state[1] += 1
                return False
            dropped = state[1] if state is not None else 0
            self._seen[key] = [now, 0]
        if dropped:
            record.msg = (f"{record.getMessage()} [{dropped} more like this in the last "
                          f"{self.interval:g} s]")
            record.args = None
        return True


def _fold_traceback(record: logging.LogRecord) -> None:
    """Replace a record's traceback by ``[Type: message]`` at the end of its message."""
    exc = record.exc_info
    if not exc or exc[1] is None:
        return
    record.msg = f"{record.getMessage()} [{type(exc[1]).__name__}: {exc[1]}]"
    record.args = None
    record.exc_info = None
    record.exc_text = None


def install(interval: float, *, logger: logging.Logger | None = None) -> Callable[[], None]:
    """Add a :class:`RepeatFilter` to every handler of ``logger`` (the root logger).

    Returns a function that removes them again. With ``interval <= 0`` every record passes,
    the Kafka client's tracebacks still folded into one line.
    """
    logger = logger if logger is not None else logging.getLogger()
    # One filter on every handler; it remembers its decision on the record, so a record seen
    # by two handlers is not counted as its own repeat.
    f = RepeatFilter(interval)
    added = [(h, f) for h in logger.handlers]
    for handler, f in added:
        handler.addFilter(f)

    def remove() -> None:
        for handler, f in added:
            handler.removeFilter(f)

    return remove
