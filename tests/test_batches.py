"""Record batches as the daemon reads them (issue 15): every codec, bounded inflation, and a
batch that cannot be read skipped and counted instead of stopping its partition.

The broker tests produce through the real broker (Tansu); batches no producer would build
(corrupt, bombs) are put there with :func:`kafka_broker.produce_batch`.
"""

from __future__ import annotations

import gzip
import os
import time
import tracemalloc

import kafka.codec
import pytest
from kafka_broker import FAST_GROUP, gzip_bomb, produce, produce_batch, unique_name

from daemon.kafka import batches
from daemon.kafka.batches import BatchTooLarge, UndecodableBatch, decompress
from daemon.settings import parse_config
from daemon.metrics import SOURCE_ERROR_KINDS
from daemon.kafka.source import KafkaSource

CODECS = ("gzip", "snappy", "lz4", "zstd")
ENCODERS = {"gzip": kafka.codec.gzip_encode, "snappy": kafka.codec.snappy_encode,
            "lz4": kafka.codec.lz4_encode, "zstd": kafka.codec.zstd_encode}


def kafka_config(bootstrap: str, topics, **extra):
    return parse_config({"kafka": {
        "bootstrap_servers": bootstrap, "topics": list(topics),
        "group_id": unique_name("group"), **FAST_GROUP, **extra}}).kafka


def consume(source: KafkaSource, n: int, *, deadline_s: float = 60.0) -> list:
    got: list = []
    end = time.monotonic() + deadline_s
    while len(got) < n:
        assert time.monotonic() < end, f"only {len(got)} of {n} records arrived"
        got += source.poll_batch(timeout=0.5)
    return got


# --------------------------------------------------------------------------------------------
# the bounded decoders


def test_every_codec_library_is_installed():
    """lz4, zstd and snappy batches used to be unreadable: their libraries were optional."""
    assert kafka.codec.has_gzip() and kafka.codec.has_snappy()
    assert kafka.codec.has_lz4() and kafka.codec.has_zstd()


@pytest.mark.parametrize("codec", CODECS)
def test_bounded_decoders_read_what_kafka_python_writes(codec):
    data = b"".join(b"record %d of the batch; " % i for i in range(5000))
    assert decompress(codec, ENCODERS[codec](data), limit=len(data)) == data
    assert decompress(codec, memoryview(ENCODERS[codec](data))) == data  # as the records pass it


def test_gzip_members_and_padding_are_read_like_gzipfile():
    payload = gzip.compress(b"first ") + gzip.compress(b"second") + b"\0\0\0"
    assert decompress("gzip", payload) == kafka.codec.gzip_decode(payload) == b"first second"


@pytest.mark.parametrize("codec", CODECS)
def test_bounded_decoders_stop_past_the_limit_without_inflating(codec):
    bomb = ENCODERS[codec](b"\0" * (64 << 20))  # 64 MiB of zeros, a few KB compressed
    tracemalloc.start()
    try:
        with pytest.raises(BatchTooLarge), batches.batch_limit(1 << 20):
            decompress(codec, bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The bound (1 MiB) plus one chunk and copies, not the 64 MiB.
    assert peak < 8 << 20, peak


@pytest.mark.parametrize("codec", CODECS)
def test_bounded_decoders_reject_garbage(codec):
    with pytest.raises(Exception) as info:  # noqa: PT011 - each library raises its own
        decompress(codec, b"\x1f\x8b\x08\x00 this is not compressed data at all")
    assert not isinstance(info.value, BatchTooLarge)


def test_skip_kinds_are_metric_labels():
    assert set(batches.KINDS) <= set(SOURCE_ERROR_KINDS)


# --------------------------------------------------------------------------------------------
# through the real broker


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_is_consumed_through_the_broker(kafka_broker, codec):  # noqa: F811
    topic = unique_name(f"codec-{codec}")
    kafka_broker.create_topics({topic: 1})
    values = [f'{{"text": "{codec} document {i} " }}'.encode() * 20 for i in range(50)]
    produce(kafka_broker.bootstrap_servers, topic, values, compression_type=codec)
    errors: list[str] = []
    with KafkaSource(kafka_config(kafka_broker.bootstrap_servers, [topic]),
                     max_batch_bytes=1 << 20, on_error=errors.append) as source:
        got = consume(source, 50)
    assert [r.value for r in got] == values
    assert not [e for e in errors if e in batches.KINDS]


def _skipping_source(broker, topic, **kw):
    skips: list[UndecodableBatch] = []
    errors: list[str] = []
    source = KafkaSource(kafka_config(broker.bootstrap_servers, [topic]), on_skip=skips.append,
                         on_error=errors.append, **kw)
    return source, skips, errors


def test_batch_with_a_missing_codec_is_skipped_and_counted(kafka_broker, monkeypatch):  # noqa: F811
    """The operator's first finding: ``UnsupportedCodecError`` retried forever."""
    topic = unique_name("nocodec")
    kafka_broker.create_topics({topic: 1})
    produce(kafka_broker.bootstrap_servers, topic, [b"before-0", b"before-1"])
    produce_batch(kafka_broker.bootstrap_servers, topic, [b"lz4 %d " % i * 50 for i in range(5)],
                  codec="lz4", encode=ENCODERS["lz4"])
    produce(kafka_broker.bootstrap_servers, topic, [b"after-0", b"after-1"], compression_type="gzip")
    # A consumer without the lz4 library: what every install had before it became a dependency.
    monkeypatch.setattr(kafka.codec, "has_lz4", lambda: False)
    source, skips, errors = _skipping_source(kafka_broker, topic)
    with source:
        got = consume(source, 4)
        assert [r.value for r in got] == [b"before-0", b"before-1", b"after-0", b"after-1"]
        assert [r.offset for r in got] == [0, 1, 7, 8]
        source.poll_batch(timeout=0.2)  # hands over a skip still held back
    (skip,) = skips
    assert (skip.topic, skip.partition, skip.offset, skip.next_offset) == (topic, 0, 2, 7)
    assert skip.kind == "unsupported_codec" and "lz4" in skip.detail and skip.count == 5
    assert errors.count("unsupported_codec") == 1 and source.skipped == {"unsupported_codec": 1}
    assert source.positions() == {(topic, 0): 9}


def test_corrupt_batch_is_skipped_not_retried(kafka_broker):  # noqa: F811
    """Compressed data that does not decompress (the CRC is right: it covers the garbage)."""
    topic = unique_name("corrupt")
    kafka_broker.create_topics({topic: 1})
    produce(kafka_broker.bootstrap_servers, topic, [b"good-0"])
    produce_batch(kafka_broker.bootstrap_servers, topic, [b"bad %d " % i * 40 for i in range(3)],
                  codec="gzip", encode=lambda data: b"\x1f\x8b\x08\x00not gzip at all")
    produce(kafka_broker.bootstrap_servers, topic, [b"good-1"])
    source, skips, errors = _skipping_source(kafka_broker, topic)
    with source:
        got = consume(source, 2)
        source.poll_batch(timeout=0.2)
    assert [(r.offset, r.value) for r in got] == [(0, b"good-0"), (4, b"good-1")]
    (skip,) = skips
    assert (skip.offset, skip.next_offset, skip.kind) == (1, 4, "corrupt_batch")
    assert errors == ["corrupt_batch"]


def test_gzip_bomb_is_skipped_past_the_batch_bound(kafka_broker):  # noqa: F811
    """A record that inflates past ``max_batch_bytes`` is never inflated in full."""
    topic = unique_name("bomb")
    kafka_broker.create_topics({topic: 1})
    bomb = gzip_bomb(64 << 20)
    produce_batch(kafka_broker.bootstrap_servers, topic, [b"y" * (2 * len(bomb))], codec="gzip",
                  encode=lambda data: bomb)
    produce(kafka_broker.bootstrap_servers, topic, [b"after"])
    source, skips, errors = _skipping_source(kafka_broker, topic, max_batch_bytes=4 << 20)
    with source:
        got = consume(source, 1)
        source.poll_batch(timeout=0.2)
    assert [(r.offset, r.value) for r in got] == [(1, b"after")]
    (skip,) = skips
    assert (skip.offset, skip.next_offset, skip.kind) == (0, 1, "batch_too_large")
    assert errors == ["batch_too_large"]


# --------------------------------------------------------------------------------------------
# the daemon's memory


def _status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
def test_gzip_bomb_raises_daemon_memory_by_a_bounded_amount(kafka_broker, tmp_path):  # noqa: F811
    """Operator finding: a 200 MB message gzip-compressed to ~200 KB raised resident memory by
    637 MB (fetch limits bound compressed bytes only). Default settings: message.max_bytes
    1 MiB, so batches are bounded at 32 MiB decompressed."""
    from test_daemon import DEADLINE, DaemonProcess, corpus, metric, write_config

    topic = unique_name("bomb")
    kafka_broker.create_topics({topic: 1})
    produce(kafka_broker.bootstrap_servers, topic, corpus(50, seed=11))
    config = write_config(tmp_path, kafka_broker.bootstrap_servers, topic,
                          message={"max_bytes": 1 << 20}, refresh={"min_new_docs": 10**9})
    daemon = DaemonProcess(tmp_path, config)
    try:
        def wait_docs(n):
            end = time.monotonic() + DEADLINE
            while (metric(daemon, "anchorstream_documents_accumulated_total") < n
                   or metric(daemon, "anchorstream_checkpoints_total") < 1):
                assert daemon.proc.poll() is None, daemon.log()
                assert time.monotonic() < end, f"{n} documents not reached:\n" + daemon.log()
                time.sleep(0.2)

        wait_docs(50)  # warm: the store written, numba's kernels compiled
        pid = daemon.proc.pid
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # resets the peak resident set (VmHWM) to the current one
        before = _status_kib(pid, "VmRSS")
        bomb = gzip_bomb(200 << 20)
        assert len(bomb) < 300 << 10
        produce_batch(kafka_broker.bootstrap_servers, topic, [b"y" * (len(bomb) + 1024)],
                      codec="gzip", encode=lambda data: bomb)
        produce(kafka_broker.bootstrap_servers, topic, corpus(1, seed=12))
        wait_docs(51)  # the document after the bomb
        grown_mib = (_status_kib(pid, "VmHWM") - before) / 1024
        print(f"peak resident memory grew by {grown_mib:.0f} MiB over {before / 1024:.0f} MiB")
        assert grown_mib < 150, grown_mib  # 32 MiB bound, its copies and the fetch buffers
        assert metric(daemon, "anchorstream_messages_rejected_total",
                      {"reason": "undecodable_batch"}) == 1
        assert metric(daemon, "anchorstream_source_errors_total",
                      {"kind": "batch_too_large"}) == 1
        assert daemon.terminate() == 0
    finally:
        daemon.close()


def test_loop_counts_a_skipped_batch_and_moves_its_offset_past_it(tmp_path):
    from anchorstream.store import CooccurrenceStore
    from anchorstream.text.tokenize import Tokenizer
    from daemon.settings import MessageConfig
    from daemon.ingest.loop import IngestLoop
    from daemon.ingest.source import offset_key

    class DeadLetters:
        def __init__(self):
            self.sent = []

        def send(self, record, reason, detail=None):
            self.sent.append((record.topic, record.partition, record.offset, reason, detail))
            return True

    store = CooccurrenceStore.create(tmp_path / "store", capacity=64, admit_threshold=1)
    dead = DeadLetters()
    loop = IngestLoop(store, tokenizer=Tokenizer(), message=MessageConfig(), dead_letter=dead)
    loop.skip_batch(UndecodableBatch("docs", 2, 10, 15, "corrupt_batch", "zlib.error: bad"))
    assert loop.offsets()[offset_key("docs", 2)] == 15
    assert loop.rejected == {"undecodable_batch": 5}
    assert dead.sent == [("docs", 2, 10, "undecodable_batch",
                          "offsets 10..14 skipped: corrupt_batch: zlib.error: bad")]
    assert loop.checkpoint() and store.offsets[offset_key("docs", 2)] == 15
