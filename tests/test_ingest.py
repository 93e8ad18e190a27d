"""``anchorstream ingest`` and the daemon's loop accept and reject the same records.

Both run :class:`daemon.ingest.loop.IngestLoop` (files through :class:`daemon.ingest.files.FileSource`, Kafka
through :class:`daemon.kafka.source.KafkaSource`); these tests hold them together on a real store on
disk: the same lines give the same documents and the same rejections by reason, and no line
stops ``ingest`` (issue 15).
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pytest

from anchorstream.stats.documents import DocStatsSettings
from anchorstream.stats.accumulator import Forgetting
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.text.tokenize import Tokenizer, load_stopwords
from daemon.cli import main
from daemon.cli.ingest import file_key, ingest_files, register
from daemon.settings import MessageConfig
from daemon.ingest.files import FileSource
from daemon.ingest.loop import IngestLoop
from daemon.ingest.source import RecordSource, kafka_position, offset_key
from daemon.kafka.source import SourceRecord

SECONDS = Forgetting(half_life=3600, unit="seconds")

#: Lines every one of which once stopped one ingest path or the other, between good lines.
ADVERSARIAL = [
    b'{"text": "apple banana", "ts": -5}',
    b'{"text": "apple banana", "ts": NaN}',
    b'{"text": "apple banana", "ts": 1e999}',
    b'{"text": "apple banana", "ts": "2024-13-45"}',
    b'{"text": "apple banana", "ts": 1700000000, "n": 1' + b"0" * 5000 + b"}",
    b'{"text": ["ok\\ud800", "okay", "fine"], "ts": 1700000000}',
    b'{"text": "ok\\udc00 fine", "ts": 1700000000}',
    b'{"text": ["line\\nbreak", "okay"], "ts": 1700000000}',
    b'{"text": "apple banana"}',
    b'{"text": "apple banana", "ts": 1700000000, "deep": ' + b"[" * 100_000 + b"]" * 100_000
    + b"}",
    b'{"text": "apple banana", "ts": 1700000000, "pad": "' + b"x" * 400_000 + b'"}',
]


def good(i: int) -> bytes:
    return json.dumps({"text": f"apple banana cherry{i % 3}", "ts": 1_700_000_000 + i}).encode()


def lines() -> list[bytes]:
    out = []
    for i, bad in enumerate(ADVERSARIAL):
        out += [good(2 * i), bad, good(2 * i + 1)]
    return out


def new_store(path):
    return CooccurrenceStore.create(path, capacity=64, admit_threshold=1, forgetting=SECONDS)


def test_issue15_negative_timestamp_is_rejected_by_ingest_which_goes_on(tmp_path, capsys):
    # `"ts": -5` once made the whole batch raise InputError: `ingest` aborted, and rerunning it
    # aborted again on the same line. The daemon rejected it (as wrong_type) and went on.
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join([good(0), b'{"text": "apple banana", "ts": -5}', good(1)])
                     + b"\n")
    url = str(tmp_path / "store")
    assert main(["ingest", str(path), "--store", url, "--timestamp-field", "ts",
                 "--time-unit", "seconds", "--half-life", "3600", "--admit-threshold", "1",
                 "-q"]) == 0
    assert 'ingested 2 documents (1 rejected: {"bad_timestamp": 1}' in capsys.readouterr().err
    st = open_committed(url)
    assert st.n_docs_added == 2 and st.offsets[file_key(path)] == path.stat().st_size
    # The daemon's loop rejects it for the same reason.
    store = new_store(tmp_path / "daemon")
    loop = IngestLoop(store, tokenizer=Tokenizer(), message=MessageConfig(timestamp_field="ts"))
    loop.process([SourceRecord("docs", 0, 0, b'{"text": "apple banana", "ts": -5}',
                               timestamp=1_700_000_000_000)])
    assert loop.rejected == {"bad_timestamp": 1}


def test_issue15_both_paths_accept_and_reject_the_same_lines(tmp_path):
    data = lines()
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(data) + b"\n")
    message = MessageConfig(timestamp_field="ts", max_bytes=300_000)
    stats = ingest_files(new_store(tmp_path / "files"), [path], tokenizer=Tokenizer(),
                         timestamp_field="ts", max_bytes=300_000, checkpoint_every=7,
                         batch_size=5)
    store = new_store(tmp_path / "kafka")
    loop = IngestLoop(store, tokenizer=Tokenizer(), message=message)
    # Kafka records have a timestamp of their own, but a document field that is there and bad
    # is rejected, not replaced; only a missing field falls back to it (the one difference).
    loop.process([SourceRecord("docs", 0, i, v, timestamp=None) for i, v in enumerate(data)])
    assert loop.checkpoint()
    assert stats["rejected"] == dict(loop.rejected) == {
        "bad_timestamp": 4, "invalid_json": 2, "invalid_unicode": 2, "invalid_token": 1,
        "missing_field": 1, "oversized": 1}
    assert stats["documents"] == loop.documents == 2 * len(ADVERSARIAL)
    a, b = open_committed(tmp_path / "files"), open_committed(tmp_path / "kafka")
    assert a.n_docs_added == b.n_docs_added == 2 * len(ADVERSARIAL)
    assert a.words == b.words
    # Batched and checkpointed differently, so equal up to rounding.
    np.testing.assert_allclose(a.cooccurrence.counts, b.cooccurrence.counts, rtol=1e-12)
    assert a.offsets[file_key(path)] == path.stat().st_size


def test_ingest_limits_are_the_daemons(tmp_path, capsys):
    # --max-bytes rejects as oversized, --max-tokens cuts, with the daemon's defaults.
    path = tmp_path / "docs.jsonl"
    words = " ".join(f"w{k:03d}" for k in range(50))
    path.write_text(json.dumps({"text": words}) + "\n" + json.dumps({"text": "x " * 600}) + "\n"
                    + json.dumps({"text": "apple banana"}) + "\n", encoding="utf-8")
    url = str(tmp_path / "store")
    assert main(["ingest", str(path), "--store", url, "--max-bytes", "1000", "--max-tokens",
                 "10", "--admit-threshold", "1", "-q"]) == 0
    assert ('ingested 2 documents (1 rejected: {"oversized": 1}; 1 at --max-tokens 10, tokens '
            'past it not counted)') in capsys.readouterr().err
    st = open_committed(url)
    assert sorted(st.words) == sorted(["apple", "banana"] + [f"w{k:03d}" for k in range(10)])
    assert st.cooccurrence.num_tokens == 12
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["ingest", "f", "--store", "s"])
    assert (args.max_bytes, args.max_tokens) == (MessageConfig().max_bytes,
                                                 MessageConfig().max_tokens)


def test_ingest_keeps_windows_for_a_new_store_and_leaves_an_existing_one_as_it_keeps(
        tmp_path, capsys):
    """--refine-window auto (the default): a new store keeps the pairs of windows of 24 tokens
    (what fit --store --refine-window auto refines in); an existing store keeps what it
    keeps; a size or none changes that from the next document on."""
    long_doc = " ".join(f"w{k % 40:03d}" for k in range(150))
    files = iter(range(100))

    def ingest(store, *flags):
        # A new file each time: a file ingested before is not read again.
        path = tmp_path / f"docs{next(files)}.jsonl"
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in
                                [long_doc, "apple banana cherry date fig", long_doc]),
                        encoding="utf-8")
        assert main(["ingest", str(path), "--store", str(tmp_path / store), "--admit-threshold",
                     "1", "-q", *flags]) == 0
        return CooccurrenceStore.open(tmp_path / store).document_stats

    assert ingest("new") == DocStatsSettings(pair_window=24)
    assert ingest("new") == DocStatsSettings(pair_window=24)
    assert ingest("whole", "--refine-window", "none") is None
    assert ingest("whole") is None  # not started for the documents from now on only
    assert ingest("whole", "--refine-window", "12") == DocStatsSettings(pair_window=12)
    assert ingest("whole", "--refine-window", "auto") == DocStatsSettings(pair_window=12)
    assert "note:" not in capsys.readouterr().err


def test_ingest_says_nothing_of_windows_for_short_documents(tmp_path, capsys):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": f"apple banana cherry{i}"}) + "\n"
                            for i in range(5)), encoding="utf-8")
    assert main(["ingest", str(path), "--store", str(tmp_path / "store"), "--admit-threshold",
                 "1", "-q"]) == 0
    assert "note:" not in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["json", "tokens", "text"])
def test_ingest_never_aborts_on_a_line_of_any_format(tmp_path, fmt):
    path = tmp_path / "docs.txt"
    path.write_bytes(b"\n".join(ADVERSARIAL + [b"\xff\xfe", b"[1, 2]", b"null"]) + b"\n")
    store = CooccurrenceStore.create(tmp_path / "s", capacity=64, admit_threshold=1)
    stats = ingest_files(store, [path], tokenizer=Tokenizer(), format=fmt, max_bytes=1000)
    n = len(ADVERSARIAL) + 3
    assert stats["documents"] + sum(stats["rejected"].values()) == n
    assert open_committed(tmp_path / "s").n_docs_added == stats["documents"]


#: Hostile records: bad UTF-8, bad JSON, oversized, a bad field, a token the store cannot keep,
#: between good ones.
HOSTILE = [
    b'{"text": "caf\xc3 ok"}',                      # bad UTF-8
    b"\xff\xfe\xfd",                                 # bad UTF-8, not even JSON
    b'{"text": "apple banana"',                      # bad JSON
    b"[1, 2, 3]",                                    # JSON, not an object
    b'{"text": "' + b"apple " * 400 + b'"}',         # oversized under max_bytes=1000
    b'{"text": 5}',                                  # wrongly typed field
    b'{"other": "no text"}',                         # missing field
    b'{"text": ["line\\nbreak", "okay"]}',           # a token the store cannot keep
    b'{"text": "the of and"}',                       # only stopwords: still a document
]


class KafkaRecords:
    """The records of one partition as the daemon's loop gets them (a RecordSource)."""

    def __init__(self, values, batch=4):
        self.records = [SourceRecord("docs", 0, i, v, timestamp=None)
                        for i, v in enumerate(values)]
        self.batch, self.pos, self.commits = batch, 0, []

    def poll_batch(self, max_records=1000, timeout=0.0):
        out = self.records[self.pos:self.pos + min(self.batch, max_records)]
        self.pos += len(out)
        return out

    position = staticmethod(kafka_position)
    stopped = False
    offsets_for = on_topic_reset = on_skip = None

    def topic_ids(self):
        return {}

    def topic_id(self, topic):
        return None

    def commit(self, offsets):
        self.commits.append(dict(offsets))

    def close(self):
        pass


def test_file_and_kafka_sources_treat_hostile_records_identically(tmp_path):
    # The same hostile lines through the one loop, once from a file (FileSource, as
    # `anchorstream ingest` reads) and once as Kafka records (as the daemon reads): the same
    # rejections by reason, the same documents, the same matrix, and each source's position
    # past the last record committed; nothing stops either.
    data = []
    for i, bad in enumerate(HOSTILE):
        data += [good(2 * i), bad, good(2 * i + 1)]
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(data) + b"\n")
    message = MessageConfig(max_bytes=1000)
    tokenizer = Tokenizer(stopwords=load_stopwords("english"))
    results = {}
    for name, source in (("files", FileSource([path])), ("kafka", KafkaRecords(data))):
        assert isinstance(source, RecordSource)
        store = CooccurrenceStore.create(tmp_path / name, capacity=64, admit_threshold=1)
        loop = IngestLoop(store, source, tokenizer=tokenizer, message=message,
                          checkpoint_every_docs=5, checkpoint_every_seconds=math.inf,
                          max_poll_records=4)
        while loop.step():
            pass
        assert loop.flush()
        results[name] = (dict(loop.rejected), loop.documents, open_committed(tmp_path / name))
    (rej_f, docs_f, a), (rej_k, docs_k, b) = results["files"], results["kafka"]
    assert rej_f == rej_k == {"invalid_utf8": 2, "invalid_json": 1, "not_an_object": 1,
                              "oversized": 1,
                              "wrong_type": 1, "missing_field": 1, "invalid_token": 1}
    assert docs_f == docs_k == 2 * len(HOSTILE) + 1
    assert a.n_docs_added == b.n_docs_added == docs_f
    assert a.words == b.words
    np.testing.assert_allclose(a.cooccurrence.counts, b.cooccurrence.counts, rtol=1e-12)
    assert a.offsets[file_key(path)] == path.stat().st_size
    assert b.offsets[offset_key("docs", 0)] == len(data)


def test_a_damaged_gzip_file_is_an_error_naming_it_after_its_good_lines(tmp_path, capsys):
    import gzip

    from anchorstream.errors import InputError
    from daemon.ingest.files import iter_lines

    lines = [json.dumps({"text": f"apple banana cherry {i}"}) for i in range(2000)]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    read = []
    with pytest.raises(InputError, match=r"'.*cut\.jsonl\.gz' is damaged: Compressed file "
                                         r"ended .* \(after byte \d+ of its uncompressed"):
        for _, line in iter_lines(cut):
            read.append(line)
    assert 0 < len(read) < len(lines)
    assert [json.loads(x) for x in read] == [json.loads(x) for x in lines[:len(read)]]
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text(lines[0] + "\n")
    # The commands: one line, no traceback.
    for args in (["fit", "--input", str(cut), "-k", "2", "--out", str(tmp_path / "o")],
                 ["ingest", str(plain), "--store", str(tmp_path / "s")]):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "is damaged" in err and "Traceback" not in err, err
    assert "Not a gzipped file" in err


def test_ingest_with_a_delay_counts_the_words_a_stream_admits_late(tmp_path, capsys):
    """--count-delay: each document counted N documents later, over the words admitted by
    then, across checkpoints; the documents waiting at the end of the files are counted too,
    and a rerun counts nothing twice."""
    from anchorstream.store import store_info

    words = [f"w{i:02d}" for i in range(30)]
    rng = np.random.default_rng(3)
    path = tmp_path / "docs.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for d in range(300):  # drifting: words come into use all along the file
            pool = words[d * 24 // 300: d * 24 // 300 + 6]
            f.write(json.dumps({"text": " ".join(rng.choice(pool, size=5))}) + "\n")
    info = {}
    for delay in (0, 30, 30):
        store = tmp_path / f"d{delay}"
        assert main(["ingest", str(path), "--store", str(store), "--vocabulary", "stream",
                     "--admit-threshold", "3", "--max-df", "none", "--checkpoint-every", "40",
                     "--count-delay", str(delay), "-q"]) == 0
        err = capsys.readouterr().err
        # The first run with a delay counts the last 30 at the end; the rerun reads nothing.
        assert ("the last 30 held back by --count-delay counted at the end" in err) == (
            delay == 30 and "d30" not in info)
        info[f"d{delay}"] = info[delay] = store_info(store)
    assert info[30]["count_delay"] == 30 and info[30]["waiting"] == 0
    assert info[0]["count_delay"] == 0
    assert info[30]["n_docs_added"] == info[0]["n_docs_added"] == 300
    # Counted on arrival, a word's first documents (before its 3rd) miss it; after waiting
    # 30 documents they hold it: every token counts.
    assert info[0]["num_tokens"] < info[30]["num_tokens"] == 300 * 5


def test_ingest_count_delay_auto_holds_back_where_words_are_admitted_late(tmp_path, caplog):
    """The default ``--count-delay auto``: 1000 for a stream store (words admitted as they
    arrive), 0 for a first pass (nothing is admitted late) and for tumbling windows (whose
    readers cannot count the waiting documents); an existing store keeps its own delay,
    with no warning that nobody asked for another."""
    from anchorstream.store import store_info
    from anchorstream.store.delay import AUTO_DELAY, COUNT_DELAY_PAIRS

    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": f"apple banana w{i % 7}"}) + "\n"
                            for i in range(20)))
    cases = {"stream": (["--vocabulary", "stream"], AUTO_DELAY),
             "decay": (["--half-life", "100"], AUTO_DELAY),
             "first": ([], 0),
             "tumbling": (["--window", "10"], 0),
             "explicit": (["--vocabulary", "stream", "--count-delay", "7",
                           "--count-delay-pairs", "none"], 7)}
    for name, (extra, delay) in cases.items():
        store = tmp_path / name
        assert main(["ingest", str(path), "--store", str(store), "-q", *extra]) == 0
        info = store_info(store)
        assert info["count_delay"] == delay, name
        assert info["count_delay_pairs"] == (None if name == "explicit"
                                              else COUNT_DELAY_PAIRS), name
    path = tmp_path / "more.jsonl"
    path.write_text(json.dumps({"text": "cherry apple"}) + "\n")
    with caplog.at_level("WARNING"):
        assert main(["ingest", str(path), "--store", str(tmp_path / "first"), "--vocabulary",
                     "stream", "-q"]) == 0
    assert "count_delay" not in caplog.text
    assert store_info(tmp_path / "first")["count_delay"] == 0
    with caplog.at_level("WARNING"):
        assert main(["ingest", str(path), "--store", str(tmp_path / "first"), "--count-delay",
                     "5", "-q"]) == 0
    assert "count_delay 0 (asked for 5)" in caplog.text
