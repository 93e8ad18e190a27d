"""The ingest loop: poll → decode → validate → tokenize → accumulate → checkpoint → commit.

:class:`IngestLoop` drives one record source into one
:class:`anchorstream.store.CooccurrenceStore`, in the calling thread. It is the only ingest
path: the daemon runs it over :class:`daemon.kafka.source.KafkaSource` and ``anchorstream ingest`` over
:class:`daemon.ingest.files.FileSource`, so a record is accepted or rejected for the same reason, under
the same ``message`` limits, whichever way it arrives.

* **Sources** follow :class:`daemon.ingest.source.RecordSource`: ``poll_batch(max_records,
  timeout) -> list`` of records, each with a ``value`` (bytes, or None for a Kafka tombstone)
  and a ``timestamp`` (milliseconds, or None); ``position(record) -> (offsets key, next
  position)``, where the record puts the source's position in the store's offsets (files:
  ``file:<absolute path>`` and the byte offset past the line; Kafka: ``kafka:<topic>:<partition>``
  and offset + 1); ``topic_ids()``, ``topic_id(topic)`` and ``commit(positions)``, which only a
  Kafka source fills (the latter informational); ``stopped``. An empty poll from a finite
  source means it is exhausted.
* **A record can only be rejected, never fatal.** Each record is decoded
  (:func:`anchorstream.text.decode.decode`, with ``message.max_bytes``), timed when the store
  forgets in seconds (:func:`anchorstream.text.decode.parse_timestamp`: the document's field, else
  the record's own time), tokenized with the same tokenizer the HTTP API's ``/v1/infer`` uses,
  cut to ``message.max_tokens`` tokens, and its tokens checked
  (:func:`anchorstream.text.decode.check_tokens`) before anything reaches the store, so nothing a
  record carries can make a later checkpoint or snapshot fail. A rejected record is counted by
  reason (``anchorstream_messages_rejected_total``), forwarded raw to the dead-letter topic when
  one is configured (reason in a header), and skipped — its offset still advances. Tombstones
  are rejected as ``empty``. A record batch the Kafka client cannot read at all (corrupt,
  unknown codec, decompressing past ``kafka.max_batch_bytes``) is skipped by the source and
  reported to :meth:`IngestLoop.skip_batch`: its offsets count as rejected
  (``undecodable_batch``) and the partition's offset moves past it. Any other exception while processing one record rejects that
  record as ``unprocessable``; its traceback is logged, at most once a minute. A document
  whose tokens are all stopwords is still a document: it is added (it counts in the store's
  ``n_docs_added``) and contributes nothing to the matrix. What stops the loop is the store
  (below) or the source (``SourceError``), never a record.
* **Exactly-once effect.** Per offsets key the loop tracks *next position = last record + 1*
  (not a maximum: it goes backwards when a topic is recreated). A checkpoint commits the
  store's delta together with those positions and, for Kafka, the topics' ids (key
  ``kafka:topic_ids``), atomically; the Kafka source seeks to the stored offsets on every
  assignment, ``ingest`` starts each file at its stored offset. The group commit that follows
  is informational only. A crash between checkpoints replays the uncommitted records, whose
  contributions were lost with the process.
* **When to checkpoint:** after ``checkpoint_every_docs`` documents (records, bad ones
  included, so a stream of garbage still moves its offsets forward), after
  ``checkpoint_every_seconds`` with anything pending, when the store's delta reaches its memory
  budget, and on :meth:`IngestLoop.flush`. A failed checkpoint (``StoreError``) changes nothing in
  memory: it is counted and retried with backoff; after ``max_checkpoint_failures`` failures in a
  row the store is considered broken and :class:`LoopError` stops the daemon.
* **Broker outages** are the source's business (it reconnects with backoff and returns no records
  meanwhile); the loop keeps its state and goes on checkpointing on time.
* **A recreated topic** (its topic id changed: a memory-backed broker restarted) is read again
  from the beginning: the source rewinds it while running, and at start-up :meth:`offsets_for`
  ignores stored offsets saved under another topic id.

Threads: :meth:`run` / :meth:`step` run in one thread. :meth:`healthy`, :attr:`committed` and
the cached gauges (vocabulary size, store bytes) are safe to read from others (HTTP, metrics,
refresher).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from anchorstream.text.decode import DecodeError, parse_timestamp
from anchorstream.text.windows import LONG_DOCUMENT_TOKENS
from anchorstream.errors import AnchorstreamError, StoreError
from daemon.ingest.source import (
    TOPIC_IDS_KEY,
    RecordSource,
    kafka_position,
    offset_key,
    parse_offset_key,
)
from daemon.ingest.first_documents import FirstDocuments
from daemon.ingest.records import record_tokens
from daemon.ingest.rejections import RejectionReport
from daemon.settings import MessageConfig

__all__ = ["Committed", "IngestLoop", "LoopError", "UNDECODABLE_BATCH", "record_tokens"]

log = logging.getLogger("anchorstream.loop")

#: Rejection reason of the offsets of a record batch the Kafka client could not read.
UNDECODABLE_BATCH = "undecodable_batch"

#: Seconds between two logged tracebacks of ``unprocessable`` records: a flood of records that
#: all hit the same bug must not flood the log too.
TRACEBACK_EVERY_SECONDS = 60.0


class LoopError(AnchorstreamError, RuntimeError):
    """Ingestion cannot go on (the store keeps failing to commit)."""


@dataclass(frozen=True)
class Committed:
    """What the last successful checkpoint holds (read by the refresher)."""

    version: str
    n_docs: int           # documents ever added, committed
    time: float           # time.monotonic() of the checkpoint


class IngestLoop:
    """Consume documents from a source into the co-occurrence store, checkpointing with offsets.

    Parameters
    ----------
    store : anchorstream.store.CooccurrenceStore
        The writer (this loop is its only user).
    source : daemon.ingest.source.RecordSource, optional
        :class:`daemon.kafka.source.KafkaSource` or :class:`daemon.ingest.files.FileSource`;
        :meth:`attach` routes its ``offsets_for``, ``on_topic_reset`` and ``on_skip`` to this
        loop.
    tokenizer : callable ``str | list[str] -> list[str]``
    message : MessageConfig
        Format, fields and limits of the messages.
    metrics : daemon.metrics.Metrics, optional
    dead_letter : daemon.kafka.source.DeadLetterProducer, optional
    checkpoint_every_docs : int, default 10000
    checkpoint_every_seconds : float, default 30
    max_poll_records : int, default 1000
    poll_timeout : float, default 0.5
        Seconds one poll waits for records; bounds how quickly :meth:`run` notices a stop.
    on_checkpoint : callable ``(Committed) -> None``, optional
        Called (in the loop's thread) after each successful checkpoint, e.g. to wake the
        refresher.
    max_checkpoint_failures : int, default 10
        Consecutive failed checkpoints after which :class:`LoopError` is raised.
    clock : callable, default time.monotonic
    name : str, default "daemon"
        Key of this loop's entry in each checkpoint's metadata (``{name: {"rejected": ...}}``).
    report_rejections : bool, default True
        Log rejected records at WARNING, at most once a minute
        (:class:`daemon.ingest.rejections.RejectionReport`); ``ingest`` prints its own summary.
    flush_idle_seconds : float, default inf
        Where the store holds documents back (``store.count_delay``): when no record has
        arrived for this long, count them and checkpoint (:meth:`flush_waiting`), so that the
        snapshots of a stream that paused do not lag it (``store.count_delay_idle_seconds``).
    """

    def __init__(self, store, source=None, *, tokenizer: Callable, message: MessageConfig,
                 metrics=None, dead_letter=None, checkpoint_every_docs: int = 10000,
                 checkpoint_every_seconds: float = 30.0, max_poll_records: int = 1000,
                 poll_timeout: float = 0.5,
                 on_checkpoint: Callable[[Committed], None] | None = None,
                 max_checkpoint_failures: int = 10, clock: Callable[[], float] = time.monotonic,
                 name: str = "daemon", report_rejections: bool = True,
                 flush_idle_seconds: float = float("inf")):
        self.store = store
        self.source = source
        self.tokenizer = tokenizer
        # The first documents after each start: does the stopword list fit, full of links?
        self._first = FirstDocuments(tokenizer, metrics)
        self.message = message
        self.metrics = metrics
        self.dead_letter = dead_letter
        self.checkpoint_every_docs = int(checkpoint_every_docs)
        self.checkpoint_every_seconds = float(checkpoint_every_seconds)
        self.max_poll_records = int(max_poll_records)
        self.poll_timeout = float(poll_timeout)
        self.on_checkpoint = on_checkpoint
        self.max_checkpoint_failures = int(max_checkpoint_failures)
        self._clock = clock
        self.flush_idle_seconds = float(flush_idle_seconds)
        self._last_record = clock()
        self.name = name
        self._seconds = store.forgetting.unit == "seconds"
        self._position: Callable[[object], tuple[str, int]] = kafka_position
        # Next position per offsets key since start; Kafka partitions from the store's offsets
        # on (files only once read: their positions matter to no one else).
        self._positions: dict[str, int] = {}
        for key, value in store.offsets.items():
            if parse_offset_key(key) is not None and value is not None:
                self._positions[key] = int(value)
        self._stored_topic_ids: dict[str, str] = dict(store.offsets.get(TOPIC_IDS_KEY) or {})
        self._dirty_offsets = False
        self._since_docs = 0
        self._last_checkpoint = clock()
        self._failures = 0
        self._retry_at = 0.0
        self._lock = threading.Lock()
        self._committed = Committed(store.version, store.n_docs_added - store.pending_docs, clock())
        self._next_traceback = float("-inf")
        self._tracebacks_skipped = 0
        # Rejections in the log at WARNING, rate-limited (``ingest`` prints its own summary).
        self._rejections = RejectionReport(message, clock) if report_rejections else None
        self.rejected: Counter[str] = Counter()
        self.documents = 0
        #: Documents the store skipped as repeats of ones it remembers (not in ``documents``).
        self.duplicates = 0
        #: Documents that reached ``message.max_tokens`` (cut there, or exactly that long).
        self.documents_at_max_tokens = 0
        #: Tokens of the documents accumulated, and of those of more than
        #: :data:`~anchorstream.text.windows.LONG_DOCUMENT_TOKENS` tokens.
        self.tokens = 0
        self.tokens_in_long_documents = 0
        self.records = 0
        self._vocab_tally = _tally(store.vocabulary)
        self.vocabulary_size = len(store.vocabulary)
        self.store_bytes: int | None = None
        try:
            self.store_bytes = store.disk_bytes()
        except Exception:  # noqa: BLE001 - only a gauge
            log.debug("cannot measure the store", exc_info=True)
        self.last_checkpoint_error: str | None = None
        if source is not None:
            self.attach(source)

    def attach(self, source: RecordSource) -> None:
        """Use ``source`` and route its seek, topic-reset and skip callbacks to this loop."""
        self.source = source
        self._position = source.position
        source.offsets_for = self.offsets_for
        source.on_topic_reset = self.on_topic_reset
        source.on_skip = self.skip_batch

    # ----------------------------------------------------------------------------------------
    # source callbacks (polling thread)

    def offsets_for(self, topic: str, partition: int) -> int | None:
        """Next offset to read according to the store (None: start per auto_offset_reset).

        Offsets saved under another id of the topic (it was deleted and created again while
        the daemon was down) do not apply to the new topic and are ignored.
        """
        stored_id = self._stored_topic_ids.get(topic)
        current = None if self.source is None else self.source.topic_id(topic)
        if stored_id is not None and current is not None and stored_id != current:
            log.warning("topic %r was recreated since the last checkpoint (id %s -> %s): "
                        "reading it from the beginning", topic, stored_id, current)
            self._forget_topic(topic)
            return None
        offsets = self.store.offsets
        value = offsets.get(offset_key(topic, partition))
        return None if value is None else int(value)

    def skip_batch(self, batch) -> None:
        """A record batch the source could not read and skipped (a :class:`UndecodableBatch`).

        Its offsets are rejected messages (reason ``undecodable_batch``; one dead-letter
        record, with an empty value, names the range when a dead-letter topic is configured),
        and the partition's next offset is the one after the batch.
        """
        from daemon.kafka.source import SourceRecord

        n = batch.count
        self._positions[offset_key(batch.topic, batch.partition)] = batch.next_offset
        self._dirty_offsets = True
        self.rejected[UNDECODABLE_BATCH] += n
        if self.metrics is not None:
            self.metrics.messages_rejected.labels(UNDECODABLE_BATCH).inc(n)
        if self.dead_letter is not None:
            detail = (f"offsets {batch.offset}..{batch.next_offset - 1} skipped: {batch.kind}: "
                      f"{batch.detail}")
            self.dead_letter.send(SourceRecord(batch.topic, batch.partition, batch.offset, b""),
                                  UNDECODABLE_BATCH, detail)

    def on_topic_reset(self, topic: str) -> None:
        """A topic was recreated while consuming: its old positions mean nothing now."""
        self._forget_topic(topic)

    def _forget_topic(self, topic: str) -> None:
        # Offsets restart at 0 in the new topic; the next checkpoint writes 0 for partitions
        # not read yet (the store merges offsets, so a key cannot be removed).
        for key in list(self._positions):
            tp = parse_offset_key(key)
            if tp is not None and tp[0] == topic:
                self._positions[key] = 0
        self._stored_topic_ids.pop(topic, None)
        self._dirty_offsets = True

    # ----------------------------------------------------------------------------------------
    # the loop

    def run(self, stop: threading.Event) -> None:
        """Poll and accumulate until ``stop`` is set, then checkpoint once more.

        Raises
        ------
        daemon.kafka.source.SourceError
            When the source cannot go on (broken store behind ``offsets_for``, bad settings).
        LoopError
            When checkpoints keep failing.
        """
        try:
            while not stop.is_set():
                self.step()
        finally:
            # Whatever stopped the loop, what was accumulated is committed if at all possible.
            self.flush()

    def step(self) -> int:
        """One poll: process its records and checkpoint when due. Returns the records handled."""
        records = self.source.poll_batch(max_records=self.max_poll_records,
                                         timeout=self.poll_timeout)
        if records:
            self.process(records)
            self._last_record = self._clock()
        elif (self.store.documents_waiting
              and self._clock() - self._last_record >= self.flush_idle_seconds):
            self.flush_waiting()
        if self._rejections is not None:
            self._rejections.report_if_due(accepted=self.documents)
        if self._due():
            self.checkpoint()
        return len(records)

    def flush_waiting(self) -> int:
        """Count the documents the store holds back (its delay line), over the words of now,
        and checkpoint. Returns how many were counted."""
        n = self.store.flush_delayed()
        log.info("no record for %.0f s: counted the %d documents held back (store.count_delay)",
                 self._clock() - self._last_record, n)
        self.checkpoint()
        return n

    def process(self, records: Sequence) -> int:
        """Decode, check, tokenize and add records (from the source's ``poll_batch``).

        Every record ends as a document or as a rejection by reason (module notes).

        Returns the number of documents added.
        """
        docs: list[list[str]] = []
        stamps: list[float] = []
        keys: list[str] = []
        per_key: Counter[str] = Counter()
        for r in records:
            key, position = self._position(r)
            per_key[key] += 1
            self._positions[key] = position
            try:
                tokens, stamp = self._document(r)
            except DecodeError as exc:
                self._reject(r, key, exc.reason, str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - one record must never stop the loop
                self._unprocessable(r, key, exc)
                continue
            docs.append(tokens)
            stamps.append(stamp)
            keys.append(key)
        self.records += len(records)
        self._since_docs += len(records)
        self._dirty_offsets = True
        tokens_total = at_cap = long_tokens = repeats = 0
        if docs:
            # Past the checks above this cannot fail for a record's sake; if it raises, the
            # store's memory may be half-updated, and only a restart from the last checkpoint
            # is safe.
            skipped = self.add_documents(docs, stamps, keys)
            repeats = int(skipped.sum())
            if repeats:
                docs = [d for d, s in zip(docs, skipped) if not s]
            for tokens in docs:
                tokens_total += len(tokens)
                at_cap += len(tokens) == self.message.max_tokens
                if len(tokens) > LONG_DOCUMENT_TOKENS:
                    long_tokens += len(tokens)
            self.documents += len(docs)
            self.duplicates += repeats
            self.documents_at_max_tokens += at_cap
            self.tokens += tokens_total
            self.tokens_in_long_documents += long_tokens
            self._observe_vocabulary()
        if self.metrics is not None:
            per_topic: Counter[str] = Counter()
            for key, n in per_key.items():
                tp = parse_offset_key(key)
                if tp is not None:
                    per_topic[tp[0]] += n
            for topic, n in per_topic.items():
                self.metrics.messages_consumed.labels(topic).inc(n)
            if repeats:
                self.metrics.documents_duplicate.inc(repeats)
            if docs:
                self.metrics.documents_accumulated.inc(len(docs))
                self.metrics.tokens_accumulated.inc(tokens_total)
                if long_tokens:
                    self.metrics.tokens_in_long_documents.inc(long_tokens)
                if at_cap:
                    self.metrics.documents_at_max_tokens.inc(at_cap)
        return len(docs)

    def add_documents(self, docs: Sequence, stamps: Sequence, keys: Sequence[str]
                      ) -> np.ndarray:
        """Give the store the documents of one batch (``keys``: each one's offsets key);
        which of them it skipped as repeats of remembered documents (a bool mask)."""
        self.store.add(docs, stamps if self._seconds else None)
        return self.store.last_repeats

    def _document(self, record) -> tuple[list[str], float]:
        """``(tokens, seconds)`` of one record, or :class:`DecodeError` with the reason."""
        m = self.message
        doc, tokens = record_tokens(record.value, self.tokenizer, format=m.format,
                                    text_field=m.text_field, id_field=m.id_field,
                                    timestamp_field=m.timestamp_field, max_bytes=m.max_bytes,
                                    max_tokens=m.max_tokens)
        stamp = parse_timestamp(doc.timestamp, record.timestamp) if self._seconds else 0.0
        if not self._first.done:
            self._first.observe(doc.content)
        return tokens, stamp

    def _reject(self, record, key: str, reason: str, detail: str) -> None:
        self.rejected[reason] += 1
        if self.metrics is not None:
            self.metrics.observe_rejected(reason)
        log.debug("rejected %s before %d: %s (%s)", key, self._positions[key], reason, detail)
        if self._rejections is not None:
            self._rejections.add(reason, detail)
        if self.dead_letter is not None:
            self.dead_letter.send(record, reason, detail)

    def _unprocessable(self, record, key: str, exc: Exception) -> None:
        """A record whose processing raised what no check foresaw (a bug, not bad data)."""
        now = self._clock()
        if now >= self._next_traceback:
            skipped = self._tracebacks_skipped
            log.error("rejected the record of %s before %d as unprocessable%s", key,
                      self._positions[key],
                      f" ({skipped} more since the last traceback)" if skipped else "",
                      exc_info=exc)
            self._next_traceback = now + TRACEBACK_EVERY_SECONDS
            self._tracebacks_skipped = 0
        else:
            self._tracebacks_skipped += 1
        self._reject(record, key, "unprocessable", f"{type(exc).__name__}: {exc}"[:1000])

    def _observe_vocabulary(self) -> None:
        """Admissions and evictions since the last look, from the vocabulary's own tallies.

        A tally that went down (a partition store reopened or handed away, whose vocabulary
        starts its tallies afresh) only moves the baseline: the counters never go back.
        """
        tally = _tally(self.store.vocabulary)
        admitted, evicted = (max(0, new - old) for new, old in zip(tally, self._vocab_tally))
        self._vocab_tally = tally
        self.vocabulary_size = len(self.store.vocabulary)
        if self.metrics is not None:
            if admitted:
                self.metrics.vocabulary_admissions.inc(admitted)
            if evicted:
                self.metrics.vocabulary_evictions.inc(evicted)

    # ----------------------------------------------------------------------------------------
    # checkpoints

    def _due(self) -> bool:
        now = self._clock()
        if now < self._retry_at:
            return False
        if not (self._dirty_offsets or self.store.has_pending):
            return False
        return (self._since_docs >= self.checkpoint_every_docs
                or now - self._last_checkpoint >= self.checkpoint_every_seconds
                or self.store.needs_checkpoint)

    def offsets(self) -> dict:
        """The offsets the next checkpoint will commit."""
        out: dict = dict(self._positions)
        ids = dict(self._stored_topic_ids)
        if self.source is not None:
            ids.update(self.source.topic_ids())
        if ids:
            out[TOPIC_IDS_KEY] = ids
        return out

    def checkpoint(self) -> bool:
        """Commit now. Returns False when the commit failed (it will be retried).

        Raises
        ------
        LoopError
            After ``max_checkpoint_failures`` consecutive failures.
        """
        offsets = self.offsets()
        t0 = time.perf_counter()
        before = self.store_bytes
        before_version = self.store.version
        try:
            version = self.store.checkpoint(offsets, metadata={
                self.name: {"rejected": dict(self.rejected)}})
        except StoreError as exc:
            self._failures += 1
            self.last_checkpoint_error = str(exc)
            if self.metrics is not None:
                self.metrics.checkpoint_failures.inc()
            delay = min(0.5 * 2 ** (self._failures - 1), 30.0)
            self._retry_at = self._clock() + delay
            log.error("checkpoint failed (%d in a row; retrying in %.1f s): %s",
                      self._failures, delay, exc)
            if self._failures >= self.max_checkpoint_failures:
                raise LoopError(
                    f"{self._failures} checkpoint(s) in a row failed; the store at "
                    f"{self.store.url!r} seems broken: {exc}") from exc
            return False
        seconds = time.perf_counter() - t0
        self._failures = 0
        self.last_checkpoint_error = None
        self._since_docs = 0
        self._dirty_offsets = False
        self._last_checkpoint = self._clock()
        self._stored_topic_ids = dict(offsets.get(TOPIC_IDS_KEY, {}))
        try:
            self.store_bytes = self.store.disk_bytes()
        except Exception:  # noqa: BLE001 - a gauge must not fail a checkpoint
            log.debug("cannot measure the store", exc_info=True)
        if self.metrics is not None:
            grown = None
            if before is not None and self.store_bytes is not None:
                grown = max(self.store_bytes - before, 0)
            # The store's own split of that time (delta, write, commit, compact, gc), when this
            # call committed a version: with nothing to commit it returns early and the last
            # split is an earlier checkpoint's.
            stages = None
            if version != before_version:
                stages = self.store.last_checkpoint_seconds
            self.metrics.observe_checkpoint(seconds, grown, stages)
        committed = Committed(version, self.store.n_docs_added, self._clock())
        with self._lock:
            self._committed = committed
        log.debug("checkpoint %s: %d documents, %.3f s", version, committed.n_docs, seconds)
        if self.source is not None:
            kafka = {}
            for key, o in self._positions.items():
                tp = parse_offset_key(key)
                if tp is not None:
                    kafka[tp] = o
            self.source.commit(kafka)
        if self.on_checkpoint is not None:
            self.on_checkpoint(committed)
        return True

    def flush(self) -> bool:
        """Checkpoint whatever is pending (at shutdown). Returns whether all is committed."""
        if not (self._dirty_offsets or self.store.has_pending):
            return True
        self._retry_at = 0.0
        for _ in range(3):
            try:
                if self.checkpoint():
                    return True
            except LoopError:
                return False
            time.sleep(0.2)
        return False

    # ----------------------------------------------------------------------------------------
    # state for other threads

    @property
    def committed(self) -> Committed:
        """The last successful checkpoint."""
        with self._lock:
            return self._committed

    def healthy(self) -> tuple[bool, str]:
        """``(ok, reason)`` for ``/readyz``: checkpoints succeed and the source is usable."""
        if self._failures:
            return False, f"checkpoints failing: {self.last_checkpoint_error}"
        if self.source is not None and self.source.stopped:
            return False, "the Kafka source stopped"
        return True, "ok"


def _tally(vocabulary) -> tuple[int, int]:
    """(admitted, evicted) over the vocabulary's lifetime (see StreamingVocabulary)."""
    return vocabulary.admitted_total, vocabulary.evicted_total
