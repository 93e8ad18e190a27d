"""The rate limiter for the Kafka client's repeated log messages (issue 15)."""

from __future__ import annotations

import logging

from daemon.kafka import logfilter
from daemon.kafka.logfilter import RepeatFilter


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def record(name="kafka.net.manager", msg="Connection failed: %s", args=("ECONNREFUSED",)):
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, None)


def test_one_line_per_message_per_interval_with_the_count():
    clock = Clock()
    f = RepeatFilter(60, clock=clock)
    assert f.filter(record())
    other = [f.filter(record(msg="Bootstrap %s not ready", args=(f"b-{i}",))) for i in range(3)]
    assert other == [True, False, False]  # another message is limited on its own
    for i in range(1, 50):
        clock.now = i
        assert not f.filter(record())
    clock.now = 60.0
    passed = record(args=("ETIMEDOUT",))
    assert f.filter(passed)
    assert passed.getMessage() == ("Connection failed: ETIMEDOUT "
                                   "[49 more like this in the last 60 s]")
    clock.now = 61.0
    assert not f.filter(record())


def test_only_the_kafka_loggers_are_limited():
    f = RepeatFilter(60, clock=Clock())
    for _ in range(3):
        assert f.filter(record(name="anchorstream.source"))
        assert f.filter(record(name="kafkaesque"))
    assert f.filter(record(name="kafka")) and not f.filter(record(name="kafka"))


def test_zero_interval_lets_everything_through():
    f = RepeatFilter(0)
    assert all(f.filter(record()) for _ in range(5))


def test_install_on_every_handler_and_remove():
    logger = logging.getLogger("test_logfilter.root")
    logger.propagate = False
    seen = [[], []]

    class Keep(logging.Handler):
        def __init__(self, out):
            super().__init__()
            self.out = out

        def emit(self, rec):
            self.out.append(rec.getMessage())

    handlers = [Keep(seen[0]), Keep(seen[1])]
    for h in handlers:
        logger.addHandler(h)
    try:
        remove = logfilter.install(60, logger=logger)
        for _ in range(5):
            rec = record()
            for h in handlers:  # what Logger.callHandlers does with one record
                h.handle(rec)
        # Both handlers show the first record: a record is decided once, not once a handler.
        assert seen == [["Connection failed: ECONNREFUSED"]] * 2
        remove()
        for h in handlers:
            h.handle(record())
        assert [len(s) for s in seen] == [2, 2]
    finally:
        for h in handlers:
            logger.removeHandler(h)


def _failing_record(name):
    try:
        None.recv(4096)  # the race kafka-python 3.0.12 logs while its consumer closes
    except AttributeError:
        import sys
        return logging.LogRecord(name, logging.ERROR, __file__, 1,
                                 "%s: Error receiving network data closing socket",
                                 ("<conn>",), sys.exc_info())


def test_kafka_client_tracebacks_become_one_line_and_ours_are_kept():
    # A CI run failed on this: kafka-python's log.exception at shutdown put a traceback of the
    # client's internals into the daemon's log. Formatted as the daemon's handler formats.
    fmt = logging.Formatter("%(name)s: %(message)s")
    for interval in (60, 0):
        f = RepeatFilter(interval, clock=Clock())
        kafka = _failing_record("kafka.net.transport")
        assert f.filter(kafka)
        text = fmt.format(kafka)
        assert "Traceback" not in text and "\n" not in text
        assert text == ("kafka.net.transport: <conn>: Error receiving network data closing "
                        "socket [AttributeError: 'NoneType' object has no attribute 'recv']")
        ours = _failing_record("anchorstream.source")
        assert f.filter(ours)
        assert "Traceback" in fmt.format(ours)
    # Repeats with another exception are still repeats of the same message.
    f = RepeatFilter(60, clock=Clock())
    assert f.filter(_failing_record("kafka.net.transport"))
    assert not f.filter(_failing_record("kafka.net.transport"))


def test_install_with_zero_interval_still_folds_tracebacks():
    logger = logging.getLogger("test_logfilter.zero")
    logger.propagate = False
    out = []

    class Keep(logging.Handler):
        def emit(self, rec):
            out.append(self.format(rec))

    h = Keep()
    logger.addHandler(h)
    try:
        remove = logfilter.install(0, logger=logger)
        for _ in range(3):
            h.handle(_failing_record("kafka.net.transport"))
        assert len(out) == 3 and all("Traceback" not in line for line in out)
        remove()
        h.handle(_failing_record("kafka.net.transport"))
        assert "Traceback" in out[-1]
    finally:
        logger.removeHandler(h)
