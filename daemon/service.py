"""The daemon assembled from its parts: store, source, loop, refresher, publisher, API, metrics.

:class:`Daemon` builds everything from a :class:`daemon.settings.Config` and runs the ingest loop
in the calling (main) thread; the refresher, the HTTP server and the Kafka clients have their
own threads.

Shutdown: SIGTERM or SIGINT (handlers installed by :meth:`Daemon.run` when called from the main
thread) set a stop event. The loop notices it within one poll (``poll_timeout``, 0.5 s), commits
what it accumulated with its offsets (:meth:`daemon.ingest.loop.IngestLoop.flush`), and the daemon then
stops the refresher (waiting at most ``refresh_join_seconds``; a refresh still running is
abandoned: publication is atomic, so nothing half-written is ever visible), closes the consumer
(leaving the group), flushes the dead-letter producer, and stops the HTTP server. The time
to exit is bounded by one poll + one checkpoint + ``refresh_join_seconds`` + the clients'
close timeouts (5 s each). A second signal during shutdown stops the embedded broker (when
:attr:`Daemon.broker` is set) and exits at once (status 1); state is still consistent, only
the not yet committed tail is replayed at the next start. The handlers are installed before the
parts are built, so a signal during start-up also stops gracefully.

Exit status of :meth:`Daemon.run`: 0 after a requested stop, 1 when ingestion could not go on
(the store is broken: checkpoints keep failing, or its offsets cannot be read).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable
from typing import Any

from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.documents import DocStatsSettings
from anchorstream.store import CooccurrenceStore, partition_key
from anchorstream.store.delay import defaulted_settings
from anchorstream.store.partdocs import partition_seed
from anchorstream.store.settings import auto_windows
from anchorstream.text.windows import AUTO
from anchorstream.text.tokenize import Tokenizer
from anchorstream.text.vocabulary import read_seed_vocabulary
from daemon.collector import freeze_long_lived
from daemon.http.api import ApiServer
from daemon.kafka import logfilter
from daemon.settings import Config, ConfigError
from daemon.http.health import Readiness
from daemon.ingest.loop import IngestLoop
from daemon.metrics import Metrics
from daemon.publish import Publisher
from daemon.refresh import Refresher

__all__ = ["Daemon", "ROLES", "build_tokenizer", "check_role", "open_store"]

#: What one process does (``anchorstream run --role``).
ROLES = ("all", "ingest", "refresh")

log = logging.getLogger("anchorstream.daemon")


def build_tokenizer(cfg: Config, store=None) -> Tokenizer:
    """The tokenizer of ingestion and ``/v1/infer`` (they must be the same):
    ``vocab.stopwords`` and ``vocab.links`` as set or, for ``auto``, as ``store`` recorded them
    (:func:`daemon_stopwords`, :func:`daemon_links`)."""
    return Tokenizer(stopwords=daemon_stopwords(cfg, store), links=daemon_links(cfg, store))


def daemon_stopwords(cfg: Config, store=None):
    """``vocab.stopwords`` as the daemon tokenizes: the list named (None for ``none``), or for
    ``auto`` (the default) the list ``store`` recorded when it was created (the one
    ``anchorstream ingest --stopwords auto`` chose for a backfill), and the English one for a
    new store, for one that recorded none, or without one (the partitioned layout's)."""
    stop = cfg.vocab.stopwords
    if stop != "auto":
        return None if stop == "none" else stop
    recorded = store.vocabulary.stopwords if store is not None else frozenset()
    return recorded or "english"


def daemon_links(cfg: Config, store=None) -> str:
    """``vocab.links`` as the daemon tokenizes: as set, or for ``auto`` (the default) what
    ``store`` recorded when it was created (``drop`` where ``anchorstream ingest --links
    auto`` backfilled it with posts full of links), and ``keep`` for a new store or without
    one (the partitioned layout's, whose partitions are opened as they are assigned): a
    stream cannot be read ahead to choose."""
    links = cfg.vocab.links
    if links != "auto":
        return links
    return "keep" if store is None else store.links


def check_role(role: str, cfg: Config) -> None:
    """Refuse a role the configuration cannot run, naming what to change."""
    if role not in ROLES:
        raise ConfigError(f"--role: got {role!r}; allowed: {', '.join(ROLES)}")
    if role != "all" and cfg.store.layout != "partitioned":
        raise ConfigError(
            f"--role {role}: needs store.layout partitioned (one store per Kafka partition, "
            f"summed by the refresher); got store.layout {cfg.store.layout!r}")


def open_store(cfg: Config, url=None, *, share: int = 1,
               partition: str | None = None) -> CooccurrenceStore:
    """Open the store of ``cfg.store.path`` (or ``url``: a partition's store of the
    partitioned layout), creating it with the configured settings.

    ``share``: the store gets ``store.accumulator_budget_bytes / share`` of memory for its
    uncommitted delta (a partition's store: the budget is split over the topics' partitions,
    so an instance owning every partition stays within it; half of a store's budget is a
    dense block allocated, and scanned at each checkpoint, whether used or not).

    The tokenizer's stopwords are also given to the store, which records them (and never
    counts them): reopening the store with another ``vocab.stopwords`` list then logs a
    warning, because the stored list stays in force and the counts would mix two
    tokenizations (``auto``, the default, tokenizes with the stored list: no warning). Seed
    words that are stopwords are left out of the seed.

    Over-frequent words: ``vocab.max_df_ratio`` is applied when a model is fitted (the words
    keep their slots, so a word that becomes less common can be used again);
    ``vocab.block_df_ratio`` (off by default) also blocks them in the store, freeing their
    slots. Both the stopwords and ``block_df_ratio`` are creation settings of the store.

    The store keeps the document statistics ``model.method`` / ``model.anchor_method`` need
    (DDP, RP, TSVD) and no others: with a co-occurrence method, statistics a previous run kept
    are dropped, so they cost nothing; after a change of method, new statistics count the
    documents from the current one on (see :mod:`anchorstream.stats.documents`).
    ``partition`` (``kafka:<topic>:<p>``, with ``url``): the partition's statistics get a seed of
    their own (:func:`anchorstream.store.partdocs.partition_seed`), so that documents at the
    same position of two partitions draw independent splits, directions and sample keys.
    """
    s, v = cfg.store, cfg.vocab
    forgetting_kw = s.forgetting_kwargs()
    stopwords = build_tokenizer(cfg).stopwords or frozenset()
    seed = read_seed_vocabulary(v.seed_file) if v.seed_file else []
    if stopwords.intersection(seed):
        log.info("seed vocabulary: %d stopwords left out (the tokenizer drops them)",
                 len(stopwords.intersection(seed)))
        seed = [w for w in seed if w not in stopwords]
    create: dict[str, Any] = {
        "capacity": v.capacity,
        "admit_threshold": v.admit_threshold,
        "seed": seed,
        "stopwords": sorted(stopwords),
        "links": "keep" if v.links == "auto" else v.links,
        "max_df": v.block_df_ratio,
        "forgetting": Forgetting(**forgetting_kw) if forgetting_kw else None,
        "length_cap": s.length_cap,
        "duplicate_memory": s.duplicate_memory,
        "count_delay": s.count_delay_documents(cfg.model.needs_documents),
        "count_delay_pairs": s.count_delay_pairs,
    }
    if s.chunk_size is not None:
        create["chunk_size"] = s.chunk_size
    if s.shard_size is not None:
        create["shard_size"] = s.shard_size
    document_stats = DocStatsSettings.for_method(**cfg.model.document_stats_kwargs())
    if partition is not None:
        document_stats = replace(document_stats,
                                 seed=partition_seed(document_stats.seed, partition))
    if cfg.model.refine_window == AUTO:
        # A new store keeps the windows' pairs; an existing one what it keeps.
        document_stats = auto_windows(replace(document_stats, pair_window=0),
                                      cfg.model.kept_window or 0)
    runtime = s.runtime_kwargs()
    runtime["budget_bytes"] = max(runtime["budget_bytes"] // max(int(share), 1), 1 << 20)
    return CooccurrenceStore.open_or_create(
        s.path if url is None else url, storage_options=s.storage_kwargs(),
        document_stats=document_stats,
        defaulted=(*defaulted_settings(s.count_delay, s.count_delay_pairs),
                   *(key for key in ("stopwords", "links") if getattr(v, key) == "auto")),
        **runtime, **create)


class Daemon:
    """The long-running service.

    Parameters
    ----------
    config : Config
    bootstrap_servers : str or list of str, optional
        Overrides ``config.kafka.bootstrap_servers`` (the embedded broker's address).
    ready_file : path-like, optional
        Written (atomically, JSON) once the HTTP server listens: ``pid``, ``http_url``,
        ``http_port``, ``metrics_port``, ``bootstrap_servers``. For tests and supervisors that
        start the daemon on port 0.
    poll_timeout : float, default 0.5
    refresh_join_seconds : float, default 10
    role : {"all", "ingest", "refresh"}, default "all"
        ``all``: one process does everything. With ``store.layout: partitioned``, ``ingest``
        consumes and checkpoints the partitions the consumer group gives it (no refresher,
        no API: ``/metrics`` alone on ``http.port``), ``refresh`` sums every partition's
        store, publishes and serves the API (no consumer). See docs/daemon.md.
    freeze_gc : bool, default False
        The process is this daemon's (``anchorstream run``, the demo): once its parts are
        assembled, and again once its first snapshot is out (numba's kernels loaded), what
        it holds is frozen out of the garbage collector's full passes
        (:func:`freeze_long_lived`). Left off where the daemon shares its process (tests).
    """

    def __init__(self, config: Config, *, bootstrap_servers=None, ready_file=None,
                 poll_timeout: float = 0.5, refresh_join_seconds: float = 10.0,
                 role: str = "all", freeze_gc: bool = False):
        check_role(role, config)
        self.role = role
        self.freeze_gc = bool(freeze_gc)
        self.partitions = None
        self.watcher = None
        self.config = config
        self.bootstrap_servers = bootstrap_servers
        self.ready_file = Path(ready_file) if ready_file is not None else None
        self.poll_timeout = float(poll_timeout)
        self.refresh_join_seconds = float(refresh_join_seconds)
        self.stop_event = threading.Event()
        self.metrics: Metrics | None = None
        self.store: CooccurrenceStore | None = None
        self.publisher: Publisher | None = None
        self.source = None
        self.dead_letter = None
        self.model_updates = None
        self.loop: IngestLoop | None = None
        self.tokenizer: Tokenizer | None = None  # ingestion's, once it starts
        self.refresher: Refresher | None = None
        self.api: ApiServer | None = None
        self._metrics_server = None
        self._remove_log_filter = None
        self._signals = 0

    # ----------------------------------------------------------------------------------------
    # assembly

    def start(self) -> Daemon:
        """Build every part the role needs and start the background threads (not the loop)."""
        cfg = self.config
        if cfg.logging.level != "DEBUG" and self._remove_log_filter is None:
            # kafka-python logs each reconnection attempt several times while a broker is away.
            self._remove_log_filter = logfilter.install(cfg.logging.kafka_repeat_seconds)
        self.metrics = metrics = Metrics()
        if cfg.store.layout == "partitioned":
            from daemon.scaled import TopicPartitions

            self.partitions = TopicPartitions(cfg, self.bootstrap_servers)
        if self.role != "ingest":
            self._start_refresher()
        if self.role != "refresh":
            self._start_ingest()
        elif self.refresher is not None:
            from daemon.scaled import PartitionWatcher

            self.watcher = PartitionWatcher(cfg, self.partitions, self.refresher).start()
        metrics.bind_filesystems(store=cfg.store.path, snapshots=cfg.snapshots.path)
        if self.freeze_gc:  # before the threads: a refresh's objects in flight are not frozen
            log.debug("garbage collector: %d objects frozen", freeze_long_lived())
        if self.refresher is not None:
            self.refresher.start()
        self._serve()
        return self

    def _start_refresher(self) -> None:
        """The publisher and the refresher (roles all and refresh)."""
        from daemon.kafka.producers import ModelUpdatesProducer

        cfg, k, metrics = self.config, self.config.kafka, self.metrics
        on_publish = None
        if k.model_updates_topic:
            self.model_updates = ModelUpdatesProducer(k, bootstrap_servers=self.bootstrap_servers)
            on_publish = self.model_updates
        if self.freeze_gc:
            on_publish = self._freezing_once(on_publish)
        self.publisher = publisher = Publisher(
            cfg.snapshots.path, keep=cfg.snapshots.keep, keep_seconds=cfg.snapshots.keep_seconds,
            n_top_words=cfg.snapshots.n_top_words,
            background_spread=cfg.snapshots.background_spread, on_publish=on_publish,
            history_max_entries=cfg.snapshots.history_max_entries,
            history_max_age_seconds=cfg.snapshots.history_max_age_seconds,
            trend_settings=cfg.trends.settings())
        reader = None
        if self.partitions is not None:
            from daemon.scaled import partitioned_reader

            reader = partitioned_reader(cfg, self.partitions)
        self.refresher = Refresher(
            cfg.store.path, publisher, model_kwargs=cfg.model.model_kwargs(), metrics=metrics,
            interval_seconds=cfg.refresh.interval_seconds,
            min_new_docs=cfg.refresh.min_new_docs, warm_start=cfg.refresh.warm_start,
            min_df=cfg.vocab.min_df, max_df_ratio=cfg.vocab.max_df_ratio,
            admission_min_share=cfg.vocab.admission_min_share,
            align_min_similarity=cfg.refresh.align_min_similarity,
            supertopics=cfg.model.supertopics, method=cfg.model.method,
            storage_options=cfg.store.storage_kwargs(), reader=reader,
            refine_window=cfg.model.refine_window,
            keep_read_max_bytes=cfg.refresh.keep_read_max_bytes,
            settings={"daemon": {"vocab": cfg.to_dict()["vocab"],
                                 "message": cfg.to_dict()["message"]}},
            source_info={"kafka_topics": list(k.topics), "group_id": k.group_id,
                         "layout": cfg.store.layout})
        metrics.bind_publisher(publisher)

    def _freezing_once(self, then: Callable[[dict], Any] | None) -> Callable[[dict], Any]:
        """The publisher's hook for the first snapshot: freeze what the first refresh loaded
        (:func:`freeze_long_lived`), hand the publisher ``then`` for every later snapshot, and
        pass this one's summary on to it."""
        def first(summary: dict) -> None:
            self.publisher.on_publish = then
            log.debug("garbage collector: %d objects frozen after the first snapshot",
                      freeze_long_lived())
            if then is not None:
                then(summary)
        return first

    def _start_ingest(self) -> None:
        """The store(s), the loop and the consumer (roles all and ingest)."""
        from daemon.kafka.producers import DeadLetterProducer
        from daemon.kafka.source import KafkaSource

        cfg, k, metrics = self.config, self.config.kafka, self.metrics
        if self.partitions is not None:
            from daemon.ingest.partitioned import PartitionStores, PartitionedIngestLoop

            partitions = self.partitions

            def opener(url):
                topic, p = url.rsplit("/", 2)[1:]  # partition_url's last two parts
                return open_store(cfg, url, share=len(partitions() or ()) or 1,
                                  partition=partition_key(topic, int(p)))

            kw = cfg.store.forgetting_kwargs()
            self.store = store = PartitionStores(cfg.store.path, opener,
                                                 forgetting=Forgetting(**kw) if kw else None)
            loop_class = PartitionedIngestLoop
            log.info("partitioned store under %s: partitions are opened as they are assigned",
                     cfg.store.path)
        else:
            self.store = store = open_store(cfg)
            loop_class = IngestLoop
            line = store.delay_line
            log.info("store %s at version %s (%d documents committed%s)", cfg.store.path,
                     store.version, store.n_docs_added,
                     f"; store.count_delay {line.length}: {len(line)} documents waiting to be "
                     "counted" if line.length else "")
        if k.dead_letter_topic:
            self.dead_letter = DeadLetterProducer(
                k, bootstrap_servers=self.bootstrap_servers,
                on_outcome=lambda outcome: metrics.dead_letters.labels(outcome).inc())
        refresher = self.refresher
        # A single store's recorded stopwords and links (auto), for ingestion and /v1/infer.
        self.tokenizer = build_tokenizer(cfg, None if self.partitions is not None else store)
        self.loop = loop = loop_class(
            store, tokenizer=self.tokenizer, message=cfg.message, metrics=metrics,
            dead_letter=self.dead_letter,
            checkpoint_every_docs=cfg.store.checkpoint_every_docs,
            checkpoint_every_seconds=cfg.store.checkpoint_every_seconds,
            max_poll_records=k.max_poll_records, poll_timeout=self.poll_timeout,
            on_checkpoint=None if refresher is None else refresher.notify,
            flush_idle_seconds=cfg.store.count_delay_idle_seconds)
        self.source = source = KafkaSource(
            k, bootstrap_servers=self.bootstrap_servers, max_batch_bytes=cfg.max_batch_bytes,
            lag_refresh_seconds=cfg.health.broker_probe_seconds,
            on_error=lambda kind: metrics.source_errors.labels(kind).inc())
        loop.attach(source)
        metrics.bind(lag=source.lag, lag_age=source.lag_age,
                     vocabulary_size=lambda: loop.vocabulary_size,
                     store_bytes=lambda: loop.store_bytes,
                     accumulator_bytes=lambda: store.pending_bytes,
                     documents_waiting=lambda: store.documents_waiting)
        if refresher is not None:
            # What is committed already counts towards the first refresh after a restart.
            refresher.notify(loop.committed)

    def _serve(self) -> None:
        """The HTTP API (roles all and refresh) or /metrics alone (ingest); the ready file."""
        cfg = self.config
        metrics = self.metrics
        if self.publisher is not None:
            readiness = Readiness(loop=self.loop, source=self.source, publisher=self.publisher,
                                  stall_seconds=cfg.health.stall_seconds)
            self.api = ApiServer(
                self.publisher, host=cfg.http.host, port=cfg.http.port,
                bearer_token=cfg.http.bearer_token, metrics=metrics, ready=readiness,
                tokenizer=self.tokenizer or build_tokenizer(cfg),
                max_body_bytes=cfg.http.max_body_bytes,
                max_wait_seconds=cfg.http.max_wait_seconds,
                max_waiters=cfg.http.max_waiters,
                header_timeout_seconds=cfg.http.header_timeout_seconds,
                body_timeout_seconds=cfg.http.body_timeout_seconds,
                max_infer_documents=cfg.http.max_infer_documents,
                infer_min_weight=cfg.http.infer_min_weight,
                listen_backlog=cfg.http.listen_backlog).start()
            http_url, http_port = self.api.url, self.api.port
        else:
            # An ingest instance serves /metrics alone, on http.port (probes, Prometheus).
            self._metrics_server = metrics.serve(cfg.http.host, cfg.http.port)
            http_port = self._metrics_server.server_address[1]
            http_url = f"http://{cfg.http.host}:{http_port}"
        metrics_port = http_port
        if cfg.metrics.port and self.publisher is not None:
            self._metrics_server = metrics.serve(cfg.metrics.host, cfg.metrics.port)
            metrics_port = self._metrics_server.server_address[1]
        info = {"pid": os.getpid(), "role": self.role, "http_url": http_url,
                "http_port": http_port, "metrics_port": metrics_port,
                "bootstrap_servers": self.bootstrap_servers
                or list(cfg.kafka.bootstrap_servers)}
        log.info("anchorstream daemon up: %s", json.dumps(info))
        if self.ready_file is not None:
            tmp = self.ready_file.with_name(self.ready_file.name + ".tmp")
            tmp.write_text(json.dumps(info))
            os.replace(tmp, self.ready_file)

    # ----------------------------------------------------------------------------------------
    # running

    #: The embedded broker its caller started (``anchorstream run``/``demo``), if any. The
    #: forced exit of a second signal skips the caller's ``finally``, so it stops it first.
    broker = None

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT: stop gracefully; a second one stops the broker and exits at once."""
        def handler(signum, _frame):
            self._signals += 1
            if self._signals > 1:
                log.warning("second signal: exiting without waiting")
                if self.broker is not None:
                    try:
                        self.broker.stop(timeout=2)
                    except Exception:  # noqa: BLE001 - exiting anyway; it dies with us on Linux
                        log.exception("could not stop the embedded broker")
                os._exit(1)
            log.info("signal %s: flushing, checkpointing and stopping",
                     signal.Signals(signum).name)
            self.stop_event.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def run(self, stop_requested: Callable[[], bool] | None = None) -> int:
        """Start (if needed), ingest until stopped, shut down. Returns the exit status.

        ``stop_requested`` tells whether a signal came before the handlers were installed
        (see :class:`daemon.cli.run.StartupSignals`); the daemon then stops at once.
        """
        if threading.current_thread() is threading.main_thread():
            # Before start(): a signal while the parts are built then stops gracefully (the
            # loop returns at once), instead of killing the process mid-start.
            self.install_signal_handlers()
        if stop_requested is not None and stop_requested():
            log.info("signalled during start-up: stopping")
            self.stop_event.set()
            if self.metrics is None:
                self.close()
                return 0
        if self.metrics is None:
            self.start()
        status = 0
        try:
            if self.loop is not None:
                self.loop.run(self.stop_event)
            else:
                self.stop_event.wait()  # --role refresh: the refresher and the API work
        except Exception:
            log.exception("ingestion stopped")
            status = 1
        finally:
            self.close()
        return status

    def stop(self) -> None:
        """Ask :meth:`run` to return (from any thread)."""
        self.stop_event.set()

    def close(self) -> None:
        """Stop every part (the loop must not be running any more)."""
        self.stop_event.set()
        if self.watcher is not None:
            self.watcher.stop()
        if self.partitions is not None:
            self.partitions.close()
        if self.refresher is not None and not self.refresher.stop(self.refresh_join_seconds):
            log.warning("a refresh is still running; abandoning it (nothing was published)")
        if self.source is not None:
            self.source.close()
        for producer in (self.dead_letter, self.model_updates):
            if producer is not None:
                producer.flush(timeout=5)
                producer.close(timeout=5)
        if self.publisher is not None:
            self.publisher.close()  # releases long polls first, so the server stops at once
        if self.api is not None:
            self.api.stop()
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
        log.info("anchorstream daemon stopped")
        if self._remove_log_filter is not None:
            self._remove_log_filter()
            self._remove_log_filter = None
