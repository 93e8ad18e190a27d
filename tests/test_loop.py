"""The ingest loop on a real store, fed by a scripted in-memory record source.

The source here is a stand-in for :class:`daemon.kafka.source.KafkaSource` (which has its own tests
against a real broker); the loop, the store and the offsets logic are the real ones. The whole
chain with a real broker and a real daemon process is in ``tests/test_daemon.py``.
"""

from __future__ import annotations

import json
import math
import threading

import pytest

from anchorstream.errors import StoreError
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.text.language import StopwordCheck
from daemon.ingest.first_documents import FirstDocuments
from anchorstream.text.tokenize import Tokenizer
from daemon.settings import MessageConfig
from daemon.ingest.loop import IngestLoop, LoopError
from daemon.ingest.source import TOPIC_IDS_KEY, kafka_position, offset_key, parse_offset_key
from daemon.metrics import Metrics
from daemon.kafka.source import SourceRecord

WORDS = ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon", "peach", "pear", "plum"]


def doc(i: int) -> bytes:
    words = [WORDS[(i + k) % len(WORDS)] for k in range(4)]
    return json.dumps({"text": " ".join(words)}).encode()


class ScriptedSource:
    """Hands out the given records in batches; remembers commits; like KafkaSource's API."""

    def __init__(self, records, batch=7, topic_ids=None):
        self.records = list(records)
        self.batch = batch
        self.pos = 0
        self.commits = []
        self._ids = dict(topic_ids or {})
        self.offsets_for = None
        self.on_topic_reset = None

    def poll_batch(self, max_records=None, timeout=0.0):
        out = self.records[self.pos:self.pos + self.batch]
        self.pos += len(out)
        return out

    position = staticmethod(kafka_position)
    stopped = False

    def topic_ids(self):
        return dict(self._ids)

    def topic_id(self, topic):
        return self._ids.get(topic)

    def commit(self, offsets):
        self.commits.append(dict(offsets))


class DeadLetters:
    def __init__(self):
        self.sent = []

    def send(self, record, reason, detail=None):
        self.sent.append((record.offset, reason))
        return True


def records(values, topic="docs", partition=0, start=0):
    return [SourceRecord(topic, partition, start + i, v) for i, v in enumerate(values)]


@pytest.fixture
def store(tmp_path):
    return CooccurrenceStore.create(tmp_path / "store", capacity=64, admit_threshold=1)


def make_loop(store, source=None, **kw):
    kw.setdefault("checkpoint_every_docs", 1000)
    kw.setdefault("checkpoint_every_seconds", 3600)
    return IngestLoop(store, source, tokenizer=Tokenizer(),
                      message=kw.pop("message", MessageConfig(max_bytes=200)), **kw)


def test_documents_past_the_token_limit_are_cut_and_counted(store):
    # message.max_tokens cuts a document; how many reached the limit is a metric, so a stream
    # of long documents does not lose their ends silently.
    values = [json.dumps({"text": " ".join(WORDS[: n])}).encode() for n in (2, 3, 4, 6)]
    metrics = Metrics(process=False)
    loop = make_loop(store, ScriptedSource(records(values)), metrics=metrics,
                     message=MessageConfig(max_bytes=200, max_tokens=3))
    while loop.step():
        pass
    assert loop.documents == 4 and loop.documents_at_max_tokens == 3
    reg = metrics.registry
    assert reg.get_sample_value("anchorstream_documents_at_max_tokens_total") == 3
    assert reg.get_sample_value("anchorstream_tokens_accumulated_total") == 2 + 3 + 3 + 3


def test_tokens_of_long_documents_are_counted_apart(store):
    # Where most tokens are in documents of more than 100 tokens, the refinement in windows
    # (model.refine_window) scored higher with many topics: the metric lets an operator see it.
    values = [json.dumps({"text": " ".join(WORDS[i % len(WORDS)] for i in range(n))}).encode()
              for n in (100, 101, 5, 250)]
    metrics = Metrics(process=False)
    loop = make_loop(store, ScriptedSource(records(values)), metrics=metrics,
                     message=MessageConfig(max_bytes=10_000, max_tokens=200))
    while loop.step():
        pass
    reg = metrics.registry
    assert reg.get_sample_value("anchorstream_tokens_accumulated_total") == 100 + 101 + 5 + 200
    # 100 tokens is not long; the 250-token document counts its first max_tokens.
    assert reg.get_sample_value("anchorstream_tokens_in_long_documents_total") == 101 + 200


def test_repeated_messages_are_skipped_and_counted_apart(tmp_path):
    # A bot posting one message all day: the store counts it once (store.duplicate_memory),
    # the loop's documents and tokens leave the copies out, and a metric counts them.
    store = CooccurrenceStore.create(tmp_path / "store", capacity=64, admit_threshold=1,
                                     duplicate_memory=100)
    spam = json.dumps({"text": "buy cheap watches now"}).encode()
    values = [doc(i) for i in range(10)] + [spam] * 30 + [doc(3)]
    metrics = Metrics(process=False)
    loop = make_loop(store, ScriptedSource(records(values), batch=7), metrics=metrics)
    while loop.step():
        pass
    loop.flush()
    repeats = 29 + 1  # the spam's copies, and doc(3) again
    assert loop.duplicates == repeats and loop.documents == len(values) - repeats
    reg = metrics.registry
    assert reg.get_sample_value("anchorstream_documents_duplicate_total") == repeats
    assert reg.get_sample_value("anchorstream_documents_accumulated_total") == loop.documents
    assert open_committed(tmp_path / "store").n_docs_added == loop.documents


def test_offset_keys_round_trip():
    assert parse_offset_key(offset_key("a.b-c_d", 12)) == ("a.b-c_d", 12)
    assert parse_offset_key(TOPIC_IDS_KEY) is None
    assert parse_offset_key("file:/x") is None


def test_bad_records_are_counted_forwarded_and_skipped(store):
    bad = {
        2: b"{not json",
        5: b'{"text": 5}',
        7: b'{"text": "   "}',
        9: b"\xff\xfe\xfd",
        11: b'{"text": "' + b"x" * 300 + b'"}',
        13: b"[1, 2]",
        15: b'{"body": "no text field"}',
        17: None,
    }
    values = [bad.get(i, doc(i)) for i in range(20)]
    metrics, dead = Metrics(process=False), DeadLetters()
    source = ScriptedSource(records(values), topic_ids={"docs": "id-1"})
    loop = make_loop(store, source, metrics=metrics, dead_letter=dead)
    while loop.step():
        pass
    assert loop.documents == 12 and loop.records == 20
    assert dict(loop.rejected) == {"invalid_json": 1, "wrong_type": 1, "empty": 2,
                                   "invalid_utf8": 1, "oversized": 1, "not_an_object": 1,
                                   "missing_field": 1}
    assert sorted(o for o, _ in dead.sent) == sorted(bad)
    reg = metrics.registry
    assert reg.get_sample_value("anchorstream_messages_rejected_total",
                                {"reason": "empty"}) == 2
    assert reg.get_sample_value("anchorstream_messages_consumed_total", {"topic": "docs"}) == 20
    assert reg.get_sample_value("anchorstream_documents_accumulated_total") == 12
    assert reg.get_sample_value("anchorstream_vocabulary_admissions_total") == len(WORDS)
    assert loop.flush()
    st = open_committed(store.url)
    # Bad records advance the offset like good ones.
    assert st.offsets[offset_key("docs", 0)] == 20
    assert st.offsets[TOPIC_IDS_KEY] == {"docs": "id-1"}
    assert st.n_docs_added == 12
    assert source.commits[-1] == {("docs", 0): 20}
    assert reg.get_sample_value("anchorstream_checkpoints_total") == 1


def test_checkpoints_every_n_records_and_on_stop(store):
    source = ScriptedSource(records([doc(i) for i in range(50)]), batch=10)
    versions = []
    loop = make_loop(store, source, checkpoint_every_docs=20, on_checkpoint=versions.append)
    for _ in range(5):
        loop.step()
    assert [c.n_docs for c in versions] == [20, 40]
    stop = threading.Event()
    stop.set()
    loop.run(stop)  # returns at once and commits the rest
    assert [c.n_docs for c in versions] == [20, 40, 50]
    assert loop.committed.n_docs == 50
    assert open_committed(store.url).offsets[offset_key("docs", 0)] == 50


def test_crash_and_replay_counts_every_document_once(tmp_path):
    path = tmp_path / "store"
    values = [doc(i) for i in range(100)] + [b"bad"]
    recs = records(values, partition=1)
    store = CooccurrenceStore.create(path, capacity=64, admit_threshold=1)
    loop = make_loop(store, ScriptedSource(recs[:55], batch=10), checkpoint_every_docs=20)
    while loop.step():
        pass
    # "Crash": the loop and its uncommitted records (40..54) vanish without a flush.
    assert open_committed(path).offsets[offset_key("docs", 1)] == 40
    del loop, store
    store = CooccurrenceStore.open(path)
    source = ScriptedSource([], batch=10)
    loop = make_loop(store, source)
    start = loop.offsets_for("docs", 1)
    assert start == 40 and loop.offsets_for("docs", 0) is None
    source.records = recs[start:]
    while loop.step():
        pass
    loop.flush()
    st = open_committed(path)
    assert st.n_docs_added == 100
    assert st.offsets[offset_key("docs", 1)] == 101
    # The matrix equals the one of a single uninterrupted pass.
    ref = CooccurrenceStore.create(tmp_path / "ref", capacity=64, admit_threshold=1)
    ref_loop = make_loop(ref, ScriptedSource(recs, batch=10))
    while ref_loop.step():
        pass
    ref_loop.flush()
    a, b = st.cooccurrence, open_committed(tmp_path / "ref").cooccurrence
    assert a.num_docs == b.num_docs
    assert abs(a.counts.sum() - b.counts.sum()) < 1e-9


def test_recreated_topic_rewinds_offsets(store):
    source = ScriptedSource(records([doc(i) for i in range(30)]), topic_ids={"docs": "old"})
    loop = make_loop(store, source)
    while loop.step():
        pass
    loop.flush()
    assert loop.offsets_for("docs", 0) == 30
    # While running: the source reports a reset; positions restart at 0.
    loop.on_topic_reset("docs")
    assert loop.offsets()[offset_key("docs", 0)] == 0
    # At start-up: offsets stored under another topic id are ignored.
    source2 = ScriptedSource([], topic_ids={"docs": "new"})
    loop2 = make_loop(store, source2)
    assert loop2.offsets_for("docs", 0) is None


def test_failed_checkpoint_is_retried_then_fatal(store, monkeypatch):
    source = ScriptedSource(records([doc(i) for i in range(10)]), batch=10)
    metrics = Metrics(process=False)
    loop = make_loop(store, source, metrics=metrics, checkpoint_every_docs=5,
                     max_checkpoint_failures=3)
    real = store.checkpoint
    calls = []

    def failing(*a, **kw):
        calls.append(1)
        raise StoreError("disk full")

    monkeypatch.setattr(store, "checkpoint", failing)
    loop.step()
    assert not loop.healthy()[0] and len(calls) == 1
    assert store.pending_docs == 10  # nothing lost in memory
    assert not loop.checkpoint()
    with pytest.raises(LoopError, match="seems broken"):
        loop.checkpoint()
    assert metrics.registry.get_sample_value("anchorstream_checkpoint_failures_total") == 3
    monkeypatch.setattr(store, "checkpoint", real)
    assert loop.checkpoint() and loop.healthy() == (True, "ok")
    assert open_committed(store.url).n_docs_added == 10


# ------------------------------------------------------------------------------------------------
# Issue 15: nothing a producer sends can stop the loop. Each case once stopped the daemon (or
# every checkpoint after it); now each is one rejection by reason, and the checkpoint commits.


def run_one_bad_message(store, bad, message=None, good=doc):
    """Feed good, ``bad``, good; return the loop after a checkpoint that must commit."""
    metrics, dead = Metrics(process=False), DeadLetters()
    source = ScriptedSource(records([good(0), bad, good(1)]))
    loop = make_loop(store, source, metrics=metrics, dead_letter=dead,
                     message=message or MessageConfig())
    before = store.version
    while loop.step():
        pass
    assert loop.checkpoint() and store.version != before
    st = open_committed(store.url)
    assert st.offsets[offset_key("docs", 0)] == 3
    assert st.n_docs_added == loop.documents == 2
    assert sum(loop.rejected.values()) == 1 and dead.sent == [(1, next(iter(loop.rejected)))]
    return loop, metrics


def test_issue15_a_5000_digit_integer_is_rejected_not_fatal(store):
    # json.loads raises a plain ValueError (not JSONDecodeError) past 4300 digits.
    bad = b'{"text": "apple banana", "n": 1' + b"0" * 5000 + b"}"
    loop, metrics = run_one_bad_message(store, bad)
    assert loop.rejected == {"invalid_json": 1}
    assert metrics.registry.get_sample_value("anchorstream_messages_rejected_total",
                                             {"reason": "invalid_json"}) == 1


@pytest.mark.parametrize("tokens", [["\ud800", "okay", "fine"], ["ok\ud800", "okay", "fine"]])
def test_issue15_a_lone_surrogate_in_a_token_list_is_rejected(store, tokens):
    # ["ok\ud800", ...] reached the vocabulary sketch, and every checkpoint after it failed
    # (UnicodeEncodeError) until the daemon gave up; nothing after it was ever committed.
    bad = json.dumps({"text": tokens}).encode()
    assert b"\\ud800" in bad
    loop, _ = run_one_bad_message(store, bad)
    assert loop.rejected == {"invalid_unicode": 1}


@pytest.mark.parametrize("text", ["\ud800 okay fine", "ok\udc00ay fine"])
def test_issue15_a_lone_surrogate_in_text_is_rejected(store, text):
    # The tokenizer happens to drop it; the document is still not Unicode text, and is
    # rejected for the same reason as in a token list, whichever field or format carries it.
    loop, _ = run_one_bad_message(store, json.dumps({"text": text}).encode())
    assert loop.rejected == {"invalid_unicode": 1}
    loop, _ = run_one_bad_message(
        CooccurrenceStore.create(store.url + "-tokens", capacity=64, admit_threshold=1),
        json.dumps([text]).encode(), MessageConfig(format="tokens"),
        good=lambda i: json.dumps(WORDS[i:i + 3]).encode())
    assert loop.rejected == {"invalid_unicode": 1}


@pytest.mark.parametrize("token", ["nul\x00byte", "line\nbreak", "para\u2029graph", "bell\x07",
                                   "x" * 5000])
def test_issue15_tokens_the_store_cannot_hold_are_rejected(store, token):
    # A line break in a word would make every later snapshot fail to publish (one word a line).
    bad = json.dumps({"text": [token, "okay"]}).encode()
    tokenizer_cap = Tokenizer(max_length=10_000)
    source = ScriptedSource(records([doc(0), bad, doc(1)]))
    loop = IngestLoop(store, source, tokenizer=tokenizer_cap, message=MessageConfig(),
                      checkpoint_every_seconds=3600)
    while loop.step():
        pass
    assert loop.rejected == {"invalid_token": 1} and loop.documents == 2
    assert loop.checkpoint()


@pytest.mark.parametrize("ts", [-5, float("nan"), float("inf"), 1e300, "yesterday", True, [1]])
def test_issue15_bad_timestamps_are_rejected_as_bad_timestamp(tmp_path, ts):
    from anchorstream.stats.accumulator import Forgetting

    store = CooccurrenceStore.create(tmp_path / "s", capacity=64, admit_threshold=1,
                                     forgetting=Forgetting(half_life=3600, unit="seconds"))
    good = [json.dumps({"text": "apple banana", "ts": 1_700_000_000 + i}).encode()
            for i in range(2)]
    # json.dumps writes NaN and Infinity literals, which json.loads reads back.
    bad = json.dumps({"text": "apple banana", "ts": ts}).encode()
    source = ScriptedSource(records([good[0], bad, good[1]]))
    loop = make_loop(store, source, message=MessageConfig(timestamp_field="ts"))
    while loop.step():
        pass
    assert loop.rejected == {"bad_timestamp": 1} and loop.documents == 2
    assert loop.checkpoint() and open_committed(store.url).n_docs_added == 2


def test_issue15_an_unexpected_exception_is_one_unprocessable_message(store, caplog):
    # Whatever goes wrong with one message stops only that message; the traceback is logged,
    # but at most once a minute however many messages fail.
    now = [0.0]

    class Brittle(Tokenizer):
        def __call__(self, doc):
            if "banana" in doc:
                raise ZeroDivisionError("a bug in a tokenizer")
            return super().__call__(doc)

    values = [json.dumps({"text": "apple banana" if i % 2 else "cherry grape"}).encode()
              for i in range(10)]
    dead = DeadLetters()
    loop = IngestLoop(store, ScriptedSource(records(values)), tokenizer=Brittle(),
                      message=MessageConfig(), dead_letter=dead, clock=lambda: now[0],
                      checkpoint_every_seconds=3600)
    with caplog.at_level("WARNING", logger="anchorstream.loop"):
        while loop.step():
            pass
        now[0] += 61
        loop.process(records([values[1]], start=10))
    assert loop.rejected == {"unprocessable": 6} and loop.documents == 5
    assert [r for _, r in dead.sent] == ["unprocessable"] * 6
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 2 and "ZeroDivisionError" in caplog.text
    assert loop.checkpoint() and open_committed(store.url).n_docs_added == 5


def test_the_first_documents_say_when_the_stopword_list_is_not_their_language(store, caplog):
    # doc() holds fruit names only, so the English list removes none of their words: after
    # the check's documents the loop logs one warning (and not again), and counts on.
    metrics = Metrics(process=False)
    share = "anchorstream_stopword_share"
    assert math.isnan(metrics.registry.get_sample_value(share))  # not known yet
    loop = make_loop(store, ScriptedSource(records([doc(i) for i in range(300)])),
                     metrics=metrics)
    loop._first = FirstDocuments(loop.tokenizer, metrics,
                                 stopwords=StopwordCheck(loop.tokenizer, n_docs=150))
    with caplog.at_level("WARNING", logger="anchorstream.loop"):
        while loop.step():
            pass
    warnings = [r for r in caplog.records if "stopword list" in r.getMessage()]
    assert len(warnings) == 1 and "only 0.0% of the 600 words" in warnings[0].getMessage()
    assert loop.documents == 300 and loop._first.stopwords is None
    assert metrics.registry.get_sample_value(share) == 0.0
    # English documents: no warning.
    caplog.clear()
    english = [json.dumps({"text": f"the {w} and the other {w} are in it"}).encode()
               for w in WORDS * 20]
    loop = make_loop(store, ScriptedSource(records(english, partition=1)), metrics=metrics)
    loop._first = FirstDocuments(loop.tokenizer, metrics,
                                 stopwords=StopwordCheck(loop.tokenizer, n_docs=150))
    with caplog.at_level("WARNING", logger="anchorstream.loop"):
        while loop.step():
            pass
    assert loop._first.stopwords is None
    # 7 of "the W and the other W are in it" are English stopwords.
    assert metrics.registry.get_sample_value(share) == pytest.approx(7 / 9)
    assert not [r for r in caplog.records if "stopword list" in r.getMessage()]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_rejections_are_reported_in_the_log_with_what_to_check(store, caplog):
    # A text_field the messages lack rejects every one: the daemon published nothing and
    # said nothing at the default level. The first rejection is reported at once, then at
    # most once a minute, with what to check while nothing has been accepted.
    clock = Clock()
    lacking = [json.dumps({"body": "apple banana"}).encode()] * 20
    loop = IngestLoop(store, ScriptedSource(records(lacking), batch=5), tokenizer=Tokenizer(),
                      message=MessageConfig(), clock=clock)
    caplog.set_level("WARNING", logger="anchorstream.loop")
    loop.step()
    reports = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    assert len(reports) == 1, reports
    assert reports[0].startswith("rejected 5 record(s) since the last report (missing_field 5)")
    assert "none has the field 'text' (message.text_field)" in reports[0]
    loop.step()
    loop.step()  # 10 more within the minute: counted, not logged
    clock.now = 61.0
    loop.step()
    reports = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    assert len(reports) == 2 and reports[1].startswith("rejected 15 record(s)")
    assert loop.rejected["missing_field"] == 20


def test_a_bad_record_among_good_ones_is_reported_without_the_advice(store, caplog):
    values = [doc(i) for i in range(6)] + [b"{not json"]
    loop = IngestLoop(store, ScriptedSource(records(values), batch=7), tokenizer=Tokenizer(),
                      message=MessageConfig(), clock=Clock())
    caplog.set_level("WARNING", logger="anchorstream.loop")
    loop.step()
    reports = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    assert len(reports) == 1 and "(invalid_json 1)" in reports[0]
    assert "no record accepted" not in reports[0]
    # The advice for JSON refused where the messages are plain text.
    plain = IngestLoop(CooccurrenceStore.create(store.url + "-2", capacity=64,
                                                admit_threshold=1),
                       ScriptedSource(records([b"apple banana"] * 3)), tokenizer=Tokenizer(),
                       message=MessageConfig(), clock=Clock())
    plain.step()
    assert "plain text needs message.format: text" in caplog.records[-1].getMessage()


def test_a_paused_stream_gets_the_documents_held_back_counted(tmp_path):
    """store.count_delay holds documents back; once no record has arrived for
    flush_idle_seconds the loop counts them and commits, so snapshots do not lag a stream
    that paused. Records arriving keep them waiting (the clock is the test's)."""
    store = CooccurrenceStore.create(tmp_path / "store", capacity=64, admit_threshold=1,
                                     count_delay=15)
    source = ScriptedSource(records([doc(i) for i in range(40)]), batch=10)
    now = [0.0]
    versions = []
    loop = make_loop(store, source, clock=lambda: now[0], flush_idle_seconds=30.0,
                     on_checkpoint=versions.append)
    for _ in range(4):
        loop.step()
        now[0] += 29.0  # less than the idle time between batches
    assert store.documents_waiting == 15 and versions == []
    loop.step()  # nothing came for 29 s: not yet
    assert store.documents_waiting == 15
    now[0] += 1.0
    loop.step()  # 30 s
    assert store.documents_waiting == 0
    assert [c.n_docs for c in versions] == [40]
    state = open_committed(store.url)
    assert state.cooccurrence.num_docs == 40
    assert state.offsets[offset_key("docs", 0)] == 40
