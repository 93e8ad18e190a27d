"""Reading Kafka record batches safely: bounded decompression, and undecodable batches as values.

kafka-python decompresses a whole record batch at once and has two failure modes a producer can
trigger (found by fault injection, issue 15):

* **Unbounded inflation.** ``fetch_max_bytes`` bounds the *compressed* bytes of a fetch; a 200 MB
  message gzip-compressed to 200 KB passes it and is inflated in full (with two copies: resident
  memory rose by 637 MB). The decoders here stop once a batch's decompressed size passes a bound
  (:func:`batch_limit`) and raise :class:`BatchTooLarge`.
* **A batch it cannot read stops its partition.** An unknown or missing codec
  (``UnsupportedCodecError``), compressed data that does not decompress (``BadGzipFile``,
  ``zlib.error``, an LZ4/zstd/snappy error), a failed CRC or a broken record raise out of
  ``KafkaConsumer.poll()`` once, naming neither the partition nor the offsets (only the CRC
  message names them, as text). The generator that raised is left behind as the partition's
  next-in-line records and yields nothing any more: every later ``poll()`` spins on it
  (kafka-python 3.0.12, seen here: one exception, then 100 % CPU and no records from any
  partition). :func:`install` wraps the generator (``Fetcher.PartitionRecords._unpack_records``)
  so that any failure inside a batch is raised as one :class:`UndecodableBatch` carrying the
  topic, partition, the first offset not delivered and the offset after the batch; the caller
  (:class:`daemon.kafka.source.KafkaSource`) seeks past it, which also makes the fetcher drop the dead
  generator (its offset no longer matches the position).

Both hooks replace kafka-python internals: module-level names (``gzip_decode`` ... in
``kafka.codec`` and the record modules that imported them) and one private method. Nothing in
kafka-python's public API offers either. :func:`install` checks that every hooked name exists
and, if one does not (a kafka-python whose internals moved), logs an error and leaves the client
as it is; ``tests/test_batches.py`` fails on such a version.

Every codec Kafka defines is readable when the optional libraries are installed (they are core
dependencies in pyproject.toml): gzip (standard library), snappy (``python-snappy``, on cramjam),
lz4 (``lz4``), zstd (``zstandard``).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import logging
import threading
import warnings
import zlib
from collections.abc import Iterator

with warnings.catch_warnings():
    # kafka-python 3.0's import-time DeprecationWarning (see daemon/kafka/client.py).
    warnings.filterwarnings("ignore", "(read|open)_text is deprecated", DeprecationWarning)
    from kafka.errors import KafkaError, UnsupportedCodecError

__all__ = ["KINDS", "BatchTooLarge", "UndecodableBatch", "batch_limit", "decompress", "install"]

log = logging.getLogger("anchorstream.batches")

#: ``kind`` of an :class:`UndecodableBatch` (also a label of ``anchorstream_source_errors_total``).
KINDS = ("unsupported_codec", "corrupt_batch", "batch_too_large")

# Decompressed bytes one batch may have in the current thread; None = no bound. A context
# variable, not a module global: kafka-python decompresses in the thread that calls poll(), so
# each consumer's bound applies to its own polls only.
_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("batch_limit", default=None)
_CHUNK = 1 << 20


class BatchTooLarge(ValueError):
    """A batch decompresses to more than the bound of :func:`batch_limit`."""


class UndecodableBatch(KafkaError):
    """A record batch of one partition could not be read; the caller should seek past it.

    Attributes
    ----------
    topic, partition : str, int
    offset : int
        First offset that was not delivered (records of the batch before a broken one were).
    next_offset : int
        Offset after the batch (``offset + 1`` when the batch's header itself was unreadable).
    kind : str
        One of :data:`KINDS`.
    detail : str
        The underlying error, for the log.
    """

    retriable = False

    def __init__(self, topic: str, partition: int, offset: int, next_offset: int, kind: str,
                 detail: str):
        super().__init__(f"{topic}[{partition}] offsets {offset}..{next_offset - 1}: {kind}: "
                         f"{detail}")
        self.topic, self.partition = topic, int(partition)
        self.offset, self.next_offset = int(offset), int(next_offset)
        self.kind, self.detail = kind, detail

    @property
    def count(self) -> int:
        """Offsets skipped (messages, unless the topic is compacted)."""
        return self.next_offset - self.offset


@contextlib.contextmanager
def batch_limit(max_bytes: int | None) -> Iterator[None]:
    """Bound the decompressed size of every batch read in this thread within the block."""
    token = _LIMIT.set(None if max_bytes is None else int(max_bytes))
    try:
        yield
    finally:
        _LIMIT.reset(token)


# --------------------------------------------------------------------------------------------
# bounded decoders (same input and output as kafka.codec's, plus the bound)


def _room(out: bytearray, limit: int) -> int:
    if len(out) > limit:
        raise BatchTooLarge(f"record batch decompresses to more than {limit} bytes")
    return limit + 1 - len(out)


def _gzip(payload, limit: int) -> bytes:
    # Members one after the other, zero padding allowed after the last: what gzip.GzipFile
    # (kafka.codec.gzip_decode) accepts.
    out = bytearray()
    data = payload
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not d.eof:
            chunk = d.decompress(data, min(_room(out, limit), _CHUNK))
            out += chunk
            data = d.unconsumed_tail
            if not chunk and not data:
                break
        _room(out, limit)
        if not d.eof:
            raise EOFError("gzip data ended before the end-of-stream marker")
        data = d.unused_data.lstrip(b"\0")
        if not data:
            return bytes(out)


def _lz4(payload, limit: int) -> bytes:
    import lz4.frame

    out = bytearray()
    data = bytes(payload)
    while True:
        d = lz4.frame.LZ4FrameDecompressor()
        while not d.eof:
            out += d.decompress(data, max_length=min(_room(out, limit), _CHUNK))
            data = b""
            if d.needs_input and not d.eof:
                raise EOFError("lz4 frame ended early")
        _room(out, limit)
        data = d.unused_data
        if not data:
            return bytes(out)


def _zstd(payload, limit: int) -> bytes:
    import zstandard

    out = bytearray()
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bytes(payload)),
                                                        read_across_frames=True)
    with reader:
        while chunk := reader.read(min(_room(out, limit), _CHUNK)):
            out += chunk
    _room(out, limit)
    return bytes(out)


def _snappy_length(block) -> int:
    """Uncompressed length a raw snappy block declares (its leading varint)."""
    n = shift = 0
    for byte in bytes(block[:10]):
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return n
        shift += 7
    raise ValueError("snappy block without a valid length")


def _snappy(payload, limit: int) -> bytes:
    import snappy

    from kafka.codec import _detect_xerial_stream

    payload = bytes(payload)
    if _detect_xerial_stream(payload):
        # xerial framing (the Java client's): 16-byte header, then (int32 length, block)*.
        blocks, pos = [], 16
        while pos < len(payload):
            size = int.from_bytes(payload[pos:pos + 4], "big", signed=True)
            if size < 0 or pos + 4 + size > len(payload):
                raise ValueError("truncated xerial snappy block")
            blocks.append(payload[pos + 4:pos + 4 + size])
            pos += 4 + size
    else:
        blocks = [payload]
    # Every block says how large it becomes: refuse before inflating anything.
    total = sum(_snappy_length(b) for b in blocks)
    if total > limit:
        raise BatchTooLarge(f"record batch decompresses to {total} bytes, more than {limit}")
    return b"".join(snappy.decompress(b) for b in blocks)


_DECODERS = {"gzip": _gzip, "snappy": _snappy, "lz4": _lz4, "zstd": _zstd}


def decompress(codec: str, payload, limit: int | None = None) -> bytes:
    """Decompress a Kafka batch payload, raising :class:`BatchTooLarge` past ``limit`` bytes.

    Parameters
    ----------
    codec : {"gzip", "snappy", "lz4", "zstd"}
    payload : bytes-like
        The compressed records section of a batch, as kafka-python passes it.
    limit : int, optional
        Default: the bound of the enclosing :func:`batch_limit` (none outside one).

    >>> import gzip
    >>> decompress("gzip", gzip.compress(b"x" * 10))
    b'xxxxxxxxxx'
    >>> decompress("gzip", gzip.compress(b"x" * 10), limit=9)
    Traceback (most recent call last):
    ...
    daemon.kafka.batches.BatchTooLarge: record batch decompresses to more than 9 bytes
    """
    if limit is None:
        limit = _LIMIT.get()
    return _DECODERS[codec](payload, (1 << 62) if limit is None else int(limit))


def _bounded(codec: str):
    def decode(payload):
        return decompress(codec, payload)

    decode.__name__ = f"bounded_{codec}_decode"
    return decode


# --------------------------------------------------------------------------------------------
# the hooks


class _TrackedRecords:
    """A MemoryRecords that remembers the batch it returned last (None while reading one)."""

    def __init__(self, records):
        self._records = records
        self.batch = None

    def next_batch(self, *args, **kwargs):
        self.batch = None
        self.batch = self._records.next_batch(*args, **kwargs)
        return self.batch

    def __getattr__(self, name):
        return getattr(self._records, name)


def _kind(exc: BaseException) -> str:
    if isinstance(exc, BatchTooLarge):
        return "batch_too_large"
    if isinstance(exc, (UnsupportedCodecError, NotImplementedError)):
        return "unsupported_codec"
    return "corrupt_batch"


def _wrap_unpack(original):
    def _unpack_records(self, tp, records, key_deserializer, value_deserializer):
        tracked = _TrackedRecords(records)
        try:
            yield from original(self, tp, tracked, key_deserializer, value_deserializer)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the batch cannot be read
            start = max(int(self.next_fetch_offset), int(self.fetch_offset))
            batch = tracked.batch
            end = None
            if batch is not None:
                end = getattr(batch, "next_offset", None)
                if end is None:  # a legacy (v0/v1) wrapper message carries its last offset
                    end = batch.base_offset + 1
            if end is None or end <= start:
                end = start + 1
            raise UndecodableBatch(tp.topic, tp.partition, start, end, _kind(exc),
                                   f"{type(exc).__name__}: {exc}") from exc

    _unpack_records.__wrapped__ = original
    _unpack_records._anchorstream = True
    return _unpack_records


_installed = False
_install_lock = threading.Lock()


def install() -> bool:
    """Hook the bounded decoders and the batch-failure wrapper into kafka-python (idempotent).

    Returns whether the hooks are in place. Call before consuming (``KafkaSource`` does).
    """
    global _installed
    with _install_lock:
        if _installed:
            return True
        import kafka.codec as codec
        import kafka.record.default_records as default_records
        import kafka.record.legacy_records as legacy_records
        from kafka.consumer.fetcher import Fetcher

        names = {codec: ("gzip_decode", "snappy_decode", "lz4_decode", "zstd_decode"),
                 default_records: ("gzip_decode", "snappy_decode", "lz4_decode", "zstd_decode"),
                 legacy_records: ("gzip_decode", "snappy_decode", "lz4_decode")}
        partition_records = getattr(Fetcher, "PartitionRecords", None)
        unpack = getattr(partition_records, "_unpack_records", None)
        missing = [f"{m.__name__}.{n}" for m, ns in names.items() for n in ns
                   if not hasattr(m, n)]
        if unpack is None:
            missing.append("kafka.consumer.fetcher.Fetcher.PartitionRecords._unpack_records")
        if missing:
            log.error("this kafka-python has no %s: record batches are read without a size "
                      "bound, and one that cannot be read stops its partition",
                      ", ".join(missing))
            return False
        for module, ns in names.items():
            for name in ns:
                # lz4_decode of kafka.codec is also what lz4_decode_old_kafka (v0 batches) calls.
                setattr(module, name, _bounded(name.split("_")[0]))
        if not getattr(unpack, "_anchorstream", False):
            partition_records._unpack_records = _wrap_unpack(unpack)
        _installed = True
        return True
