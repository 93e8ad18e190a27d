"""Every Prometheus metric of the daemon, on an injectable registry.

:class:`Metrics` creates all metrics on one :class:`prometheus_client.CollectorRegistry` (a fresh
one unless given, never the global default, so tests and several daemons in one process do not
collide). Names carry the ``anchorstream_`` prefix and their unit.

Two kinds of values:

* **events** the loop, refresher and API record as they happen (counters and histograms):
  ``metrics.messages_consumed.labels(topic).inc()``, ``with metrics.refresh_stage("rectify"):``,
  ``metrics.observe_churn(alignment.churn())``;
* **state read at scrape time** (consumer lag, vocabulary size, snapshot version and age, store
  size, accumulator memory, free disk space) from callables registered with :meth:`Metrics.bind`
  (or :meth:`Metrics.bind_publisher`, :meth:`Metrics.bind_filesystems`); a callable that
  raises is logged and its metric left out of that scrape, so a scrape never fails because the
  store is mid-checkpoint. The callables run in the HTTP thread, so they must be thread-safe and
  cheap — return cached values (e.g. :meth:`daemon.kafka.source.KafkaSource.lag`), do no network I/O.

Process memory and CPU come from prometheus_client's ``ProcessCollector`` under the same prefix
(``anchorstream_process_resident_memory_bytes``; Linux only, where ``/proc`` exists).

=================================================  =========  ===================================
name                                               type       labels
=================================================  =========  ===================================
anchorstream_messages_consumed_total               counter    topic
anchorstream_messages_rejected_total               counter    reason
anchorstream_dead_letter_messages_total            counter    outcome (sent, failed)
anchorstream_documents_accumulated_total           counter
anchorstream_documents_duplicate_total             counter
anchorstream_tokens_accumulated_total              counter
anchorstream_documents_at_max_tokens_total         counter
anchorstream_tokens_in_long_documents_total        counter
anchorstream_source_errors_total                   counter    kind (connect, poll, probe: the
                                                              broker did not answer;
                                                              unsupported_codec, corrupt_batch,
                                                              batch_too_large: a record batch
                                                              was skipped)
anchorstream_checkpoints_total                     counter
anchorstream_checkpoint_failures_total             counter
anchorstream_partitions_fenced_total               counter
anchorstream_checkpoint_duration_seconds           histogram
anchorstream_checkpoint_stage_seconds              histogram  stage (delta, write, commit,
                                                              compact, gc): stages that ran
anchorstream_checkpoint_size_bytes                 histogram
anchorstream_refreshes_total                       counter
anchorstream_refresh_failures_total                counter    stage
anchorstream_refresh_duration_seconds              histogram  stage
anchorstream_snapshots_published_total             counter
anchorstream_vocabulary_admissions_total           counter
anchorstream_vocabulary_evictions_total            counter
anchorstream_topic_births_total                    counter
anchorstream_topic_deaths_total                    counter
anchorstream_topic_churn                           gauge      kind (births, deaths, matched,
                                                              splits, merges): last refresh
anchorstream_topic_match_similarity                gauge      mean similarity of kept topics
anchorstream_refresh_kept_bytes                    gauge      memory the refresher keeps for
                                                              the next refresh (its last read,
                                                              a partitioned reader's reads,
                                                              dense buffers)
anchorstream_rectification_residual                gauge
anchorstream_rectification_iterations              gauge
anchorstream_rectification_warm_change             gauge      change since the last cold
                                                              rectification (0 after one)
anchorstream_stopword_share                        gauge      share of the first 2000 documents'
                                                              words (at most 20,000, since
                                                              start) the stopword list
                                                              removed; NaN until then
                                                              (under 0.08: another language)
anchorstream_http_requests_total                   counter    route, code
anchorstream_build_info                            gauge      version
anchorstream_consumer_lag_messages                 gauge      topic, partition (scrape time)
anchorstream_consumer_lag_age_seconds              gauge      since the broker last answered:
                                                              how old the lag is (scrape time)
anchorstream_vocabulary_size_words                 gauge      (scrape time)
anchorstream_snapshot_version                      gauge      (scrape time)
anchorstream_snapshot_age_seconds                  gauge      (scrape time)
anchorstream_snapshot_documents                    gauge      (scrape time)
anchorstream_snapshots_retained                    gauge      (scrape time)
anchorstream_trend_top_score                       gauge      highest trend score of an alive
                                                              topic (docs/trends.md; scrape
                                                              time)
anchorstream_trend_topics                          gauge      kind (rising, falling, new, gone):
                                                              topics in each /v1/trends list
                                                              (scrape time)
anchorstream_store_size_bytes                      gauge      (scrape time)
anchorstream_accumulator_bytes                     gauge      (scrape time)
anchorstream_documents_waiting                     gauge      documents added but not counted
                                                              yet (store.count_delay; scrape
                                                              time)
anchorstream_filesystem_free_bytes                 gauge      path (store, snapshots): space
                                                              left to the daemon (scrape time)
anchorstream_filesystem_size_bytes                 gauge      path (scrape time)
anchorstream_process_*                             (process)  resident memory, CPU, open fds
=================================================  =========  ===================================
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from anchorstream import __version__
from anchorstream.text.decode import REASONS
from anchorstream.store.location import parse_store_url
from anchorstream.text.windows import LONG_DOCUMENT_TOKENS
from daemon.ingest.loop import UNDECODABLE_BATCH

__all__ = ["CHECKPOINT_STAGES", "PREFIX", "REFRESH_STAGES", "SOURCE_ERROR_KINDS", "Metrics"]

log = logging.getLogger("anchorstream.metrics")

PREFIX = "anchorstream"
#: Stages of a store checkpoint (label values of checkpoint_stage_seconds), as
#: ``CooccurrenceStore.last_checkpoint_seconds`` reports them: accumulators to sparse deltas,
#: arrays written, Icechunk commit, compaction, garbage collection.
CHECKPOINT_STAGES = ("delta", "write", "commit", "compact", "gc")
#: Kinds of source errors (label values of source_errors_total): the broker did not answer
#: (creating the consumer, polling, the periodic end-offsets probe), or a record batch was
#: skipped (daemon.kafka.batches.KINDS).
SOURCE_ERROR_KINDS = ("connect", "poll", "probe", "unsupported_codec", "corrupt_batch",
                      "batch_too_large")

# Checkpoints and refreshes span milliseconds (a few documents) to minutes (V = 20,000).
#: The refresher's stages, each a label of refresh_failures (and of refresh_duration, which
#: also times the whole refresh as "total"); DDP's, RP's and TSVD's word groups add
#: select_groups, TSVD's clusters tsvd_clusters and its choice of estimate choose.
REFRESH_STAGES = ("read", "fit", "pairs", "rectify", "anchors", "recover", "correlations",
                  "refine", "novel_words", "anchorfree", "tsvd", "tsvd_clusters",
                  "select_groups", "choose", "align", "publish")
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
                     600, float("inf"))
_BYTES_BUCKETS = tuple(float(4 ** k * 1024) for k in range(12)) + (float("inf"),)  # 1 KiB..4 GiB


class _ScrapeCollector(Collector):
    """Turns the callables bound to :class:`Metrics` into gauges at every scrape."""

    def __init__(self, metrics: Metrics):
        self._metrics = metrics

    def describe(self):
        # No pre-declaration: the families depend on which callables are bound.
        return []

    def _call(self, name: str) -> Any:
        fn = self._metrics._sources.get(name)
        if fn is None:
            return None
        try:
            return fn()
        except Exception:  # noqa: BLE001 - a failing source must not break the scrape
            log.warning("metrics source %r failed during a scrape", name, exc_info=True)
            return None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        lag = self._call("lag")
        if lag is not None:
            g = GaugeMetricFamily(f"{PREFIX}_consumer_lag_messages",
                                  "Messages behind the partition's high watermark (clamped at 0).",
                                  labels=["topic", "partition"])
            for (topic, partition), value in sorted(lag.items()):
                g.add_metric([str(topic), str(partition)], max(float(value), 0.0))
            yield g
        lag_age = self._call("lag_age")
        if lag_age is not None:
            # Kept next to the lag rather than dropping stale lag series: an alert on the lag
            # would resolve when its series vanish, exactly when ingestion stopped.
            yield GaugeMetricFamily(
                f"{PREFIX}_consumer_lag_age_seconds",
                "Seconds since the broker last answered; the lag is as old as this.",
                value=max(float(lag_age), 0.0))
        simple = (
            ("vocabulary_size", "vocabulary_size_words", "Words in the active vocabulary."),
            ("store_bytes", "store_size_bytes", "Bytes of the co-occurrence store on disk."),
            ("accumulator_bytes", "accumulator_bytes",
             "Memory held by the not yet checkpointed delta."),
            ("documents_waiting", "documents_waiting",
             "Documents added but not counted yet: waiting store.count_delay documents."),
        )
        for source, name, doc in simple:
            value = self._call(source)
            if value is not None:
                yield GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=float(value))
        snap = self._call("snapshot")
        if snap is not None:
            version, created, num_docs = snap
            yield GaugeMetricFamily(f"{PREFIX}_snapshot_version",
                                    "Version of the latest published snapshot.",
                                    value=float(version))
            yield GaugeMetricFamily(f"{PREFIX}_snapshot_age_seconds",
                                    "Seconds since the latest snapshot was created.",
                                    value=max(time.time() - float(created), 0.0))
            yield GaugeMetricFamily(f"{PREFIX}_snapshot_documents",
                                    "Documents the latest snapshot was fitted on.",
                                    value=float(num_docs))
        trends = self._call("trends")
        if trends is not None:
            yield GaugeMetricFamily(f"{PREFIX}_trend_top_score",
                                    "Highest trend score of an alive topic (a z-score).",
                                    value=float(trends.top_score))
            g = GaugeMetricFamily(f"{PREFIX}_trend_topics",
                                  "Topics rising, falling, new and gone over the trend window.",
                                  labels=["kind"])
            for kind in ("rising", "falling", "new", "gone"):
                g.add_metric([kind], float(len(getattr(trends, kind))))
            yield g
        retained = self._call("snapshots_retained")
        if retained is not None:
            yield GaugeMetricFamily(f"{PREFIX}_snapshots_retained",
                                    "Snapshots currently kept on disk.", value=float(retained))
        filesystems = self._call("filesystems")
        if filesystems:
            free = GaugeMetricFamily(
                f"{PREFIX}_filesystem_free_bytes",
                "Bytes left to the daemon (unprivileged) on the file system holding a directory.",
                labels=["path"])
            size = GaugeMetricFamily(f"{PREFIX}_filesystem_size_bytes",
                                     "Size of the file system holding a directory.",
                                     labels=["path"])
            for name, (free_bytes, size_bytes) in filesystems.items():
                free.add_metric([name], float(free_bytes))
                size.add_metric([name], float(size_bytes))
            yield free
            yield size


class Metrics:
    """All metrics of the daemon on one registry.

    Parameters
    ----------
    registry : CollectorRegistry, optional
        Where to register; a fresh registry by default.
    process : bool, default True
        Also export process memory/CPU (``anchorstream_process_*``).

    Attributes
    ----------
    registry : CollectorRegistry
    messages_consumed, messages_rejected, dead_letters, documents_accumulated,
    documents_duplicate, tokens_accumulated, documents_at_max_tokens, tokens_in_long_documents, source_errors,
    checkpoints, checkpoint_failures, partitions_fenced, checkpoint_duration,
    checkpoint_stage_duration, checkpoint_size, refreshes, refresh_failures, refresh_duration,
    refresh_kept_bytes, snapshots_published, vocabulary_admissions, vocabulary_evictions,
    topic_births,
    topic_deaths, topic_churn,
    topic_match_similarity, rectification_residual, rectification_iterations,
    rectification_warm_change, stopword_share, http_requests
        The prometheus_client metric objects (see the module table for names and labels).
    """

    def __init__(self, registry: CollectorRegistry | None = None, *, process: bool = True):
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        p = PREFIX
        self.messages_consumed = Counter(f"{p}_messages_consumed", "Kafka messages consumed.",
                                         ["topic"], registry=r)
        self.messages_rejected = Counter(
            f"{p}_messages_rejected", "Messages skipped as bad input, by reason.", ["reason"],
            registry=r)
        for reason in (*REASONS, UNDECODABLE_BATCH):
            # Present from the start at 0, so rate() and alerts work before the first rejection.
            self.messages_rejected.labels(reason)
        self.dead_letters = Counter(
            f"{p}_dead_letter_messages", "Rejected messages forwarded to the dead-letter topic.",
            ["outcome"], registry=r)
        self.documents_accumulated = Counter(
            f"{p}_documents_accumulated", "Documents added to the co-occurrence state.", registry=r)
        self.documents_duplicate = Counter(
            f"{p}_documents_duplicate",
            "Documents skipped as repeats: their tokens were those of one of the last "
            "store.duplicate_memory distinct documents.", registry=r)
        self.tokens_accumulated = Counter(
            f"{p}_tokens_accumulated", "Tokens of the documents accumulated.", registry=r)
        self.documents_at_max_tokens = Counter(
            f"{p}_documents_at_max_tokens",
            "Documents accumulated that reached message.max_tokens: their later tokens were "
            "not counted.", registry=r)
        self.tokens_in_long_documents = Counter(
            f"{p}_tokens_in_long_documents",
            f"Tokens accumulated from documents of more than {LONG_DOCUMENT_TOKENS} tokens: "
            "over tokens_accumulated, how much of the stream is long documents (where "
            "model.refine_window auto refines in windows).", registry=r)
        self.source_errors = Counter(
            f"{p}_source_errors",
            "Errors met while consuming from Kafka: the broker did not answer (connect, poll, "
            "probe; retried) or a record batch could not be read (skipped).", ["kind"],
            registry=r)
        for kind in SOURCE_ERROR_KINDS:
            self.source_errors.labels(kind)
        self._checkpoint_metrics(r, p)
        self.refreshes = Counter(f"{p}_refreshes", "Successful model refreshes.", registry=r)
        self.refresh_failures = Counter(
            f"{p}_refresh_failures", "Refreshes that failed, by the stage that failed.", ["stage"],
            registry=r)
        for stage in REFRESH_STAGES:  # each at 0 from the start: increase() alerts work at once
            self.refresh_failures.labels(stage)
        self.refresh_duration = Histogram(
            f"{p}_refresh_duration_seconds", "Time per refresh stage.", ["stage"],
            buckets=_DURATION_BUCKETS, registry=r)
        self.snapshots_published = Counter(f"{p}_snapshots_published", "Snapshots published.",
                                           registry=r)
        self.vocabulary_admissions = Counter(f"{p}_vocabulary_admissions",
                                             "Words admitted into the vocabulary.", registry=r)
        self.vocabulary_evictions = Counter(f"{p}_vocabulary_evictions",
                                            "Words evicted from the vocabulary.", registry=r)
        self.topic_births = Counter(f"{p}_topic_births", "Topics born (new ids).", registry=r)
        self.topic_deaths = Counter(f"{p}_topic_deaths", "Topics that disappeared.", registry=r)
        self.topic_churn = Gauge(
            f"{p}_topic_churn", "Topics by fate in the last alignment.", ["kind"], registry=r)
        self.topic_match_similarity = Gauge(
            f"{p}_topic_match_similarity",
            "Mean similarity (1 - total variation) of topics that kept their id.", registry=r)
        self.refresh_kept_bytes = Gauge(
            f"{p}_refresh_kept_bytes",
            "Memory the refresher keeps from one refresh for the next: its last sparse read "
            "(refresh.keep_read_max_bytes), a partitioned reader's reads and their sum "
            "(refresh.partition_reads_max_bytes), or the dense rectifier's V x V buffers.",
            registry=r)
        self.rectification_residual = Gauge(
            f"{p}_rectification_residual", "Residual of the last rectification.", registry=r)
        self.rectification_iterations = Gauge(
            f"{p}_rectification_iterations", "Iterations of the last rectification.", registry=r)
        self.rectification_warm_change = Gauge(
            f"{p}_rectification_warm_change",
            "Relative change of the co-occurrence since the last cold rectification that the "
            "last warm refresh followed (0 after a cold one); past model.rectify_warm_change "
            "the next refresh rectifies cold.", registry=r)
        self.stopword_share = Gauge(
            f"{p}_stopword_share",
            "Share of the words of the first documents since start that the stopword list "
            "removed (NaN until 2000 documents or 20,000 words were seen, or with a custom "
            "list); under 0.08 "
            "the stream is probably in another language.", registry=r)
        self.stopword_share.set(float("nan"))
        self.http_requests = Counter(f"{p}_http_requests", "HTTP API requests.",
                                     ["route", "code"], registry=r)
        build = Gauge(f"{p}_build_info", "anchorstream version (value 1).", ["version"],
                      registry=r)
        build.labels(__version__).set(1)
        self._sources: dict[str, Callable[[], Any]] = {}
        r.register(_ScrapeCollector(self))
        if process:
            ProcessCollector(namespace=p, registry=r)


    def _checkpoint_metrics(self, r: CollectorRegistry, p: str) -> None:
        """The store's commits: counts, failures, fences, durations and sizes."""
        self.checkpoints = Counter(f"{p}_checkpoints", "Store checkpoints committed.", registry=r)
        self.checkpoint_failures = Counter(f"{p}_checkpoint_failures",
                                           "Store checkpoints that failed.", registry=r)
        self.partitions_fenced = Counter(
            f"{p}_partitions_fenced", "Partition checkpoints refused because another ingest "
            "instance committed to the partition first (store.layout partitioned).",
            registry=r)
        self.checkpoint_duration = Histogram(
            f"{p}_checkpoint_duration_seconds", "Time to commit a checkpoint.",
            buckets=_DURATION_BUCKETS, registry=r)
        self.checkpoint_stage_duration = Histogram(
            f"{p}_checkpoint_stage_seconds",
            "Time per checkpoint stage (compact and gc only when they ran).", ["stage"],
            buckets=_DURATION_BUCKETS, registry=r)
        self.checkpoint_size = Histogram(
            f"{p}_checkpoint_size_bytes", "Bytes written by a checkpoint.",
            buckets=_BYTES_BUCKETS, registry=r)

    # ----------------------------------------------------------------------------------------
    # scrape-time sources

    _SOURCES = ("lag", "lag_age", "vocabulary_size", "snapshot", "snapshots_retained",
                "store_bytes", "accumulator_bytes", "documents_waiting", "filesystems", "trends")

    def bind(self, **sources: Callable[[], Any] | None) -> None:
        """Register (or with ``None`` remove) callables read at scrape time.

        Parameters
        ----------
        lag : callable -> mapping of (topic, partition) to int
        lag_age : callable -> float
            Seconds since the broker last answered (:meth:`daemon.kafka.source.KafkaSource.lag_age`).
        vocabulary_size : callable -> int
        snapshot : callable -> (version, created_timestamp, num_docs) or None
        snapshots_retained : callable -> int
        store_bytes : callable -> int
        accumulator_bytes : callable -> int
        documents_waiting : callable -> int
        filesystems : callable -> mapping of name to (free_bytes, size_bytes)
            See :meth:`bind_filesystems`.

        Raises
        ------
        TypeError
            For an unknown source name.
        """
        for name, fn in sources.items():
            if name not in self._SOURCES:
                raise TypeError(f"unknown metrics source {name!r}; known: {self._SOURCES}")
            if fn is None:
                self._sources.pop(name, None)
            else:
                self._sources[name] = fn

    def bind_publisher(self, publisher) -> None:
        """Read snapshot version, age, documents, count and trends from a :class:`Publisher`."""
        def snapshot():
            info = publisher.latest_info()
            return None if info is None else (info.version, info.created_timestamp,
                                              info.num_docs)

        self.bind(snapshot=snapshot, snapshots_retained=lambda: len(publisher.list()),
                  trends=publisher.trends)

    def bind_filesystems(self, **locations: str | os.PathLike | None) -> None:
        """Export free and total bytes of the file systems holding the daemon's directories.

        ``metrics.bind_filesystems(store=cfg.store.path, snapshots=cfg.snapshots.path)`` gives
        ``anchorstream_filesystem_free_bytes{path="store"}`` and ``..._size_bytes``, measured
        with :func:`shutil.disk_usage` at every scrape (one ``statvfs`` call each). A location
        that is a URL of an object store (``s3://``, ``gs://``, ``memory://``) has no file
        system and is left out; ``file://`` URLs are local (read as the store reads them,
        :func:`anchorstream.store.location.parse_store_url`). A location on the same file system
        as one named before it is left out too (one series per file system, so an alert on
        free space fires once), and so is a directory that does not exist yet: its nearest
        existing parent is measured instead.

        Parameters
        ----------
        **locations : path-like, URL or None
            Label value (``path``) to directory.
        """
        dirs = {}
        for name, location in locations.items():
            where = None if location is None else parse_store_url(location)
            if where is not None and where.scheme == "local":
                dirs[name] = where.path

        def filesystems() -> dict[str, tuple[int, int]]:
            out, seen = {}, set()
            for name, path in dirs.items():
                while not os.path.exists(path) and os.path.dirname(path) != path:
                    path = os.path.dirname(path)
                device = os.stat(path).st_dev
                if device in seen:
                    continue
                seen.add(device)
                usage = shutil.disk_usage(path)
                out[name] = (usage.free, usage.total)
            return out

        self.bind(filesystems=filesystems if dirs else None)

    # ----------------------------------------------------------------------------------------
    # event helpers

    @contextlib.contextmanager
    def refresh_stage(self, stage: str) -> Iterator[None]:
        """Time a refresh stage; on an exception count a failure of that stage and re-raise."""
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            self.refresh_failures.labels(stage).inc()
            raise
        finally:
            self.refresh_duration.labels(stage).observe(time.perf_counter() - start)

    def observe_rejected(self, reason: str) -> None:
        self.messages_rejected.labels(reason).inc()

    def observe_refresh(self, model, churn: Mapping[str, Any], kept_bytes: int) -> None:
        """Record a successful refresh: its churn (:meth:`observe_churn`), the fitted
        ``model``'s rectification (None for the methods without one) and the memory the
        refresher keeps for the next refresh."""
        self.refreshes.inc()
        self.snapshots_published.inc()
        self.observe_churn(churn)
        self.refresh_kept_bytes.set(kept_bytes)
        if model is not None:
            self.rectification_residual.set(model.rectify_residual_)
            self.rectification_iterations.set(model.n_iter_.get("rectify", 0))
            self.rectification_warm_change.set(model.rectify_change_)

    def observe_churn(self, churn: Mapping[str, Any]) -> None:
        """Record :meth:`anchorstream.model.align.Alignment.churn` of a refresh."""
        births, deaths = len(churn.get("births", ())), len(churn.get("deaths", ()))
        matched = churn.get("matched", ())
        self.topic_births.inc(births)
        self.topic_deaths.inc(deaths)
        for kind in ("births", "deaths", "matched", "splits", "merges"):
            self.topic_churn.labels(kind).set(len(churn.get(kind, ())))
        if matched:
            self.topic_match_similarity.set(
                sum(m["similarity"] for m in matched) / len(matched))

    def observe_checkpoint(self, seconds: float, nbytes: int | None = None,
                           stages: Mapping[str, float] | None = None) -> None:
        """Record a successful checkpoint.

        Parameters
        ----------
        seconds : float
            The whole checkpoint, as the loop timed it.
        nbytes : int, optional
            How much the store grew.
        stages : mapping of stage to seconds, optional
            ``CooccurrenceStore.last_checkpoint_seconds``. A stage at 0 did not run
            (compaction and garbage collection run every few checkpoints) and is not observed,
            so its histogram describes the runs that happened rather than mostly zeros.
        """
        self.checkpoints.inc()
        self.checkpoint_duration.observe(seconds)
        if nbytes is not None:
            self.checkpoint_size.observe(nbytes)
        for stage, stage_seconds in (stages or {}).items():
            if stage_seconds > 0:
                self.checkpoint_stage_duration.labels(stage).observe(stage_seconds)

    # ----------------------------------------------------------------------------------------
    # exposition

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """``(body, content_type)`` of a scrape, honouring an ``Accept`` header (OpenMetrics)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type

    def serve(self, host: str, port: int):
        """Serve ``/metrics`` on a separate port (``metrics.port`` != 0); returns the server.

        Call ``server.shutdown()`` to stop it.
        """
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        return server
