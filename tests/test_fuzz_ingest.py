"""Fuzzing the ingest path: no message can stop it, every message is counted once (issue 15).

Hypothesis generates message values — random bytes; JSON of every shape and depth; integers of
thousands of digits, huge floats, NaN and Infinity literals; lone surrogates both as JSON
``\\ud800`` escapes and as raw (invalid UTF-8) bytes; NULs, line breaks and other control
characters; every type in the text and timestamp fields — and drives them through the real
decode → validate → tokenize → accumulate → checkpoint path: :class:`daemon.ingest.loop.IngestLoop` on
a real store on disk, fed by an in-memory list source (the Kafka source has its own tests), for
each message format, with and without a timestamp field, with forgetting in documents or in
seconds.

The property: the loop survives; every message is counted exactly once, as a document or as a
rejection by reason (``documents + sum(rejected) == messages``), and every rejection goes to the
dead-letter sink; the next checkpoint commits (the store's version advances), and the reopened
store holds the documents (``n_docs_added``) and the offset past the last message, with finite
counts.

Each example carries 200 messages and the suite runs 10,000 in all (50 examples). For a longer
run set ``ANCHORSTREAM_FUZZ_MESSAGES``, e.g.
``ANCHORSTREAM_FUZZ_MESSAGES=1000000 pytest tests/test_fuzz_ingest.py`` (5,000 examples).
"""

from __future__ import annotations

import json
import math
import os
import tempfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anchorstream.stats.accumulator import Forgetting
from anchorstream.text.decode import REASONS
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.text.tokenize import Tokenizer
from daemon.settings import MessageConfig
from daemon.ingest.loop import IngestLoop
from daemon.ingest.source import kafka_position
from daemon.kafka.source import SourceRecord

PER_EXAMPLE = 200
MESSAGES = int(os.environ.get("ANCHORSTREAM_FUZZ_MESSAGES", "10000"))

#: Characters that once reached the store or a snapshot: lone surrogates, NUL, line breaks.
NASTY = "\ud800\udbff\udc00\udfff\x00\n\r\x0b\x1c\x85\u2028\u2029\x7f\ufeff\uffff\U0010ffff'\"\\"

# Hypothesis holds at most 8 KiB of choices per example, about 40 bytes per message here, so
# the strategies draw few and small values; the large inputs (a number of 5,000 digits, JSON
# nested 5,000 deep) are built from one drawn integer.
chars = st.one_of(st.characters(), st.sampled_from(NASTY))
words = st.sampled_from(["apple", "banana", "cherry", "grape", "lemon", "ok", "a\ud800b",
                         "x\x00y", "line\nbreak", "Straße", "東京"])
texts = st.one_of(st.text(chars, max_size=6), st.lists(words, max_size=6).map(" ".join))
huge_numbers = st.one_of(
    st.integers(4000, 6000).map(lambda n: "1" + "0" * n),    # past int_max_str_digits
    st.integers(300, 400).map(lambda n: f"-{'9' * n}.5e{n}"),  # overflows to -inf
    st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1e-999", "-0",
                     "253402300800", "1e15"]),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner,
                                                                         max_size=3)),
    max_leaves=4,
)
timestamps = st.one_of(
    scalars,
    st.integers(-10, 2**40),
    st.datetimes().map(lambda d: d.isoformat()),
    st.sampled_from(["2024-01-01T00:00:00Z", "2024-13-45", "yesterday", "-0001-01-01",
                     "1970-01-01", "9999-12-31T23:59:59+14:00", "0001-01-01T00:00:00-14:00"]),
)
contents = st.one_of(texts, st.lists(texts, max_size=4), json_values)


def encode(value, ascii_escapes: bool) -> bytes:
    """JSON bytes; surrogates as ``\\udXXX`` escapes, or raw (invalid UTF-8) without them."""
    text = json.dumps(value, ensure_ascii=ascii_escapes)  # NaN, Infinity literals allowed
    return text.encode("utf-8", "surrogatepass")


def raw_json(value: str, field: str) -> str:
    return f'{{"text": "apple banana", "{field}": {value}}}'


@st.composite
def messages(draw) -> bytes | None:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=24))
    if kind == 1:
        return encode(draw(json_values), draw(st.booleans()))
    if kind == 2:  # a huge number, as some field or as the timestamp, or the whole record
        where = draw(st.sampled_from(["n", "ts", "text", None]))
        number = draw(huge_numbers)
        return (number if where is None else raw_json(number, where)).encode()
    if kind == 3:  # deep nesting
        depth = draw(st.integers(1, 5000))
        nest = "[" * depth + "]" * depth
        return draw(st.sampled_from([nest, raw_json(nest, "text"), raw_json(nest, "x")])).encode()
    if kind == 4:
        return None  # a tombstone
    if kind == 5:  # a tokens record
        return encode(draw(st.lists(texts, max_size=4)), draw(st.booleans()))
    if kind == 6:  # text as it comes
        return draw(texts).encode("utf-8", "surrogatepass")
    # A json record of every field type, with and without a timestamp.
    record = {"text": draw(contents)}
    if draw(st.booleans()):
        record["ts"] = draw(timestamps)
    return encode(record, draw(st.booleans()))


FORGETTING = {
    "none": None,
    "decay in documents": Forgetting(half_life=50),
    "decay in seconds": Forgetting(half_life=3600, unit="seconds"),
    "windows in seconds": Forgetting(window=86_400, n_windows=3, unit="seconds"),
}


class ListSource:
    """The records of one example, in polls of ``batch``."""

    def __init__(self, records, batch):
        self.records, self.batch, self.pos = records, batch, 0

    def poll_batch(self, max_records=None, timeout=0.0):
        out = self.records[self.pos:self.pos + self.batch]
        self.pos += len(out)
        return out

    position = staticmethod(kafka_position)
    stopped = False

    def topic_ids(self):
        return {}

    def topic_id(self, topic):
        return None

    def commit(self, offsets):
        pass


class DeadLetters:
    def __init__(self):
        self.sent = []

    def send(self, record, reason, detail=None):
        self.sent.append(reason)
        return True


@settings(max_examples=max(1, math.ceil(MESSAGES / PER_EXAMPLE)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(messages(), min_size=PER_EXAMPLE, max_size=PER_EXAMPLE),
    record_ms=st.lists(st.sampled_from([None, -1, 0, 1_700_000_000_000, 2**62]),
                       min_size=PER_EXAMPLE, max_size=PER_EXAMPLE),
    fmt=st.sampled_from(["json", "text", "tokens"]),
    timestamp_field=st.sampled_from([None, "ts"]),
    forgetting=st.sampled_from(sorted(FORGETTING)),
    batch=st.integers(1, PER_EXAMPLE),
)
def test_no_message_stops_ingestion_and_each_counts_once(values, record_ms, fmt,
                                                        timestamp_field, forgetting, batch):
    records = [SourceRecord("fuzz", 0, i, v, timestamp=t)
               for i, (v, t) in enumerate(zip(values, record_ms))]
    with tempfile.TemporaryDirectory() as tmp:
        url = os.path.join(tmp, "store")
        store = CooccurrenceStore.create(url, capacity=32, admit_threshold=1,
                                         forgetting=FORGETTING[forgetting])
        first = store.version
        dead = DeadLetters()
        loop = IngestLoop(store, ListSource(records, batch), tokenizer=Tokenizer(),
                          message=MessageConfig(format=fmt, timestamp_field=timestamp_field),
                          dead_letter=dead, checkpoint_every_docs=10**9,
                          checkpoint_every_seconds=1e9)
        while loop.step():
            pass
        assert loop.records == len(values)
        assert loop.documents + sum(loop.rejected.values()) == len(values)
        assert set(loop.rejected) <= set(REASONS)
        assert sorted(dead.sent) == sorted(loop.rejected.elements())
        assert loop.checkpoint() and store.version != first
        del loop, store
        reopened = CooccurrenceStore.open(url)
        committed = open_committed(url)
        n_docs = len(values) - len(dead.sent)
        assert reopened.n_docs_added == committed.n_docs_added == n_docs
        assert committed.offsets["kafka:fuzz:0"] == len(values)
        num_docs = committed.cooccurrence.num_docs
        assert np.isfinite(num_docs) and num_docs >= 0
        assert np.isfinite(committed.cooccurrence.counts).all()
        if forgetting == "none":
            # Documents of fewer than two counted tokens are added but hold no pair.
            assert num_docs <= n_docs
