"""The configuration's sections: one frozen pydantic model per section of ``config.yaml``.

A field's type is the kind of value it takes (:mod:`daemon.settings.checks`), its default the
shipped default and its description the one line that ``config.yaml`` and the README's table
explain it with. Unknown keys are refused (``extra="forbid"``); rules between keys of one
section are the section's ``rules`` (:mod:`daemon.settings.rules`), checked once its values are.
"""

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from anchorstream.model.anchorfree import ANCHORFREE_SLACK, ANCHORFREE_WORDS
from anchorstream.model.background import BACKGROUND_SPREAD, SHORT_DOCUMENTS
from anchorstream.model.refine import (REFINE_AUTO_MAX_LENGTH, REFINE_MAX_ITER, REFINE_METHODS,
                                       REFINE_WARM_MAX_ITER, REFINE_WARM_NEW_MAX_ITER)
from anchorstream.model.rectify_warm import RECTIFY_WARM_CHANGE
from anchorstream.model.registry import (ANCHOR_METHODS, METHODS, RECOVER_WEIGHTS,
                                         RECTIFY_METHODS, MethodSpec, method_spec)
from anchorstream.stats.admission import MIN_SHARE
from anchorstream.store.delay import COUNT_DELAY_PAIRS, resolve_count_delay
from anchorstream.text.links import LINKS
from anchorstream.text.windows import AUTO, WINDOWS_AUTO_SIZE, auto_rule
from daemon.ingest.records import MAX_BYTES, MAX_TOKENS
from daemon.settings import rules
from daemon.settings.checks import (EMBEDDED, Bool, Bootstrap, Choice, CountDelay,
                                    ExistingFile, Float, FrozenMap, Int, LogLevel, OptionalTopic,
                                    RefineWindow, Secret, SecretText, StorageOptions, Stopwords,
                                    Text, Topics, shipped_stopword_lists)


class _Section(BaseModel):
    """A section: frozen, unknown keys refused, its cross-key rules checked after its values."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The section's rules between keys (functions of the section, :mod:`daemon.settings.rules`).
    RULES: ClassVar[tuple[rules.Rule, ...]] = ()

    @model_validator(mode="after")
    def _check_rules(self):
        rules.check(self.RULES, self)
        return self


_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class KafkaConfig(_Section):
    """``kafka``: where documents come from and how to talk to the cluster."""

    bootstrap_servers: Bootstrap = Field(
        (EMBEDDED,), description="HOST:PORT list, or 'embedded' to start the bundled broker (the "
        "default, so a fresh machine runs without a cluster)")
    topics: Topics = Field(("documents",), description="topics to consume")
    group_id: Text() = Field("anchorstream", description="consumer group id")
    client_id: Text() = Field("anchorstream", description="client id sent to the brokers")
    security_protocol: Choice(*_SECURITY_PROTOCOLS) = Field(
        "PLAINTEXT", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    sasl_mechanism: Choice(*rules.SASL_MECHANISMS, optional=True) = Field(
        None, description="SASL mechanism")
    sasl_plain_username: Text(optional=True) = Field(None, description="SASL user name")
    sasl_plain_password: SecretText = Field(None, description="SASL password (secret)")
    ssl_cafile: ExistingFile = Field(None, description="CA bundle (PEM)")
    ssl_certfile: ExistingFile = Field(None, description="client certificate (PEM)")
    ssl_keyfile: ExistingFile = Field(None, description="client private key (PEM)")
    ssl_check_hostname: Bool = Field(True, description="verify the broker's host name")
    allow_plaintext_sasl: Bool = Field(
        False, description="allow SASL_PLAINTEXT with PLAIN (password in clear text)")
    dead_letter_topic: OptionalTopic = Field(
        None, description="topic receiving rejected messages, or null")
    model_updates_topic: OptionalTopic = Field(
        None, description="topic receiving a compact JSON per snapshot")
    auto_offset_reset: Choice("earliest", "latest") = Field(
        "earliest", description="where to start a partition with no stored offset")
    fetch_max_bytes: Int(1024) = Field(
        16 * 1024 * 1024, description="max bytes of record data per fetch response")
    max_partition_fetch_bytes: Int(1024) = Field(
        1024 * 1024, description="max bytes per partition per fetch")
    max_poll_records: Int(1) = Field(1000, description="max records returned by one poll")
    max_batch_bytes: Int(1024, optional=True) = Field(
        None, description="largest record batch after decompression; larger ones are skipped and "
        "counted (null = 32 x message.max_bytes)")
    session_timeout_ms: Int(1000) = Field(6000, description="consumer group session timeout")
    heartbeat_interval_ms: Int(100) = Field(1000, description="group heartbeat interval")
    max_poll_interval_ms: Int(1000) = Field(
        60000, description="max time between polls before leaving the group")
    # kafka-python needs fetch_max_wait_ms (500) < request_timeout_ms < connections_max_idle_ms
    # (540000); the bounds keep any accepted value inside that window.
    request_timeout_ms: Int(1000, 300000) = Field(30000, description="broker request timeout")
    reconnect_backoff_ms: Int(1) = Field(100, description="first reconnect delay")
    reconnect_backoff_max_ms: Int(1) = Field(10000, description="reconnect delay cap")
    retry_backoff_ms: Int(1) = Field(200, description="delay before retrying a failed request")
    compression_type: Choice("gzip", "snappy", "lz4", "zstd", optional=True) = Field(
        None, description="compression of what the daemon produces")

    RULES = rules.KAFKA

    @property
    def embedded(self) -> bool:
        """True when the daemon should start the bundled broker itself."""
        return self.bootstrap_servers == (EMBEDDED,)


class MessageConfig(_Section):
    """``message``: how a Kafka message value becomes a document."""

    format: Choice("json", "text", "tokens") = Field(
        "json", description="json object, UTF-8 text, or a JSON array of tokens")
    text_field: Text() = Field("text", description="JSON field with the text (format json)")
    id_field: Text(optional=True) = Field(None, description="JSON field with a document id")
    timestamp_field: Text(optional=True) = Field(
        None, description="JSON field with a document timestamp")
    max_bytes: Int(1) = Field(MAX_BYTES, description="larger messages are rejected as oversized")
    max_tokens: Int(1) = Field(MAX_TOKENS, description="max tokens counted per document")


class StoreConfig(_Section):
    """``store``: the on-disk co-occurrence store (its format is the store's business)."""

    path: Text() = Field(
        "store", description="store directory, or URL: file://, s3:// (s3a://), gs:// (gcs://), "
        "az:// (abfs://, abfss://, azure://)")
    layout: Choice("single", "partitioned") = Field(
        "single", description="single: one store for every partition (one daemon); "
        "partitioned: one store per Kafka partition under store.path, for several ingest "
        "instances in one consumer group and one refresher (anchorstream run --role)")
    storage_options: StorageOptions = Field(
        FrozenMap(), description="keyword arguments of the Icechunk storage of an object-store "
        "URL (region, endpoint_url, allow_http, anonymous, force_path_style, ...); credentials "
        "come from the environment by default")
    chunk_size: Int(1, optional=True) = Field(
        None, description="words per chunk side; null = store default")
    shard_size: Int(1, optional=True) = Field(
        None, description="words per shard side, a multiple of chunk_size; null = store default")
    checkpoint_every_docs: Int(1) = Field(
        10000, description="checkpoint after this many documents")
    checkpoint_every_seconds: Float(0, lo_open=True) = Field(
        30.0, description="... or after this many seconds")
    accumulator_budget_bytes: Int(1024 * 1024) = Field(
        256 * 1024 * 1024, description="memory of the in-memory delta before a checkpoint")
    keep_versions: Int(1) = Field(10, description="store versions kept before garbage collection")
    gc_every: Int(0) = Field(
        20, description="garbage-collect after this many checkpoints of one run; 0 = not by "
        "count")
    gc_interval_seconds: Float(0) = Field(
        3600.0, description="... or at a checkpoint this long after the last collection (kept in "
        "the store, across restarts); 0 = not by time")
    gc_min_age_seconds: Float(0) = Field(
        60.0, description="versions and unreferenced objects younger than this are never "
        "collected (readers of a recent version keep working)")
    compact_bytes: Int(1) = Field(
        256 * 1024 * 1024, description="checkpoint segments (bytes) folded into the matrix past "
        "this")
    max_segments: Int(1) = Field(64, description="... or past this many segments")
    compact_step_seconds: Float(0) = Field(
        0.5, description="without forgetting, fold segments into the matrix in steps of about "
        "this long, one after each checkpoint; 0 = in one step")
    half_life_docs: Float(0, lo_open=True, optional=True) = Field(
        None, description="exponential forgetting: half-life in documents")
    half_life_seconds: Float(0, lo_open=True, optional=True) = Field(
        None, description="exponential forgetting: half-life in seconds")
    length_cap: Float(2, optional=True) = Field(
        25.0,  # anchorstream.stats.cooccurrence.LENGTH_CAP (numba-free here)
        description="how a document's word pairs are weighted: every pair the same up to a "
        "document of this many tokens, a longer one as much as that; 2 = every document the same "
        "(the papers' estimator), null = every pair the same. Fixed when the store is created")
    duplicate_memory: Int(0) = Field(
        1_000_000,  # anchorstream.text.duplicates.DEFAULT_MEMORY (numba-free here)
        description="a document whose tokens repeat one of the last this many distinct "
        "documents is skipped (a template, a repost: counted once, not as a topic of its own; "
        "anchorstream_documents_duplicate_total); 24 bytes each in memory; 0 = count every "
        "copy. Fixed when the store is created")
    count_delay: CountDelay = Field(
        "auto", description="count each document this many documents after it arrived, so "
        "that words the vocabulary admits meanwhile count in it (on a stream in time order, "
        "1,000 win back what late admissions cost the topics); refreshes count the documents "
        "held back too (anchorstream_documents_waiting), except with tumbling windows; 0 = "
        "count on arrival; auto = 1000, or 0 with tumbling windows (window_docs), whose "
        "snapshots would lag by it, and with a method that reads document statistics (ddp, "
        "rp, tsvd), which count a document once it is counted. Fixed when the store is "
        "created")
    count_delay_pairs: Int(1, optional=True) = Field(
        COUNT_DELAY_PAIRS, description="with count_delay: the most word pairs (n (n - 1) / 2 "
        "of a document's n tokens) the documents held back hold together; a long document "
        "pushes out as many of the oldest as it takes, so their memory, the checkpoints and "
        "each refresh's recount of them stay bounded (5,000,000 are 1,000 documents of 100 "
        "tokens, ~0.4 s a refresh; 110 of 300); null = no bound. Fixed when the store is "
        "created")
    count_delay_idle_seconds: Float(0) = Field(
        30.0, description="with count_delay: when no message has arrived for this long, the "
        "documents held back are counted (over the words of then) and committed, so that the "
        "snapshots of a stream that paused or ended do not lag it")
    window_docs: Int(1, optional=True) = Field(
        None, description="tumbling windows: documents per window")
    windows: Int(1, optional=True) = Field(
        None, description="tumbling windows: number of windows summed")

    RULES = rules.STORE

    def forgetting_kwargs(self) -> dict[str, Any] | None:
        """Keyword arguments for ``anchorstream.stats.accumulator.Forgetting`` (None: no forgetting).

        >>> StoreConfig(half_life_docs=1e5).forgetting_kwargs()
        {'half_life': 100000.0, 'window': None, 'n_windows': 1, 'unit': 'documents'}
        """
        if self.half_life_docs is None and self.half_life_seconds is None \
                and self.window_docs is None:
            return None
        seconds = self.half_life_seconds is not None
        return {
            "half_life": self.half_life_seconds if seconds else self.half_life_docs,
            "window": None if self.window_docs is None else float(self.window_docs),
            "n_windows": self.windows or 1,
            "unit": "seconds" if seconds else "documents",
        }

    def count_delay_documents(self, reads_documents: bool = False) -> int:
        """``count_delay`` in documents, ``auto`` resolved for a daemon's store (whose
        vocabulary admits words as they arrive) and a model that reads document statistics
        (DDP, RP, TSVD: ``ModelConfig.needs_documents``) or not.

        >>> StoreConfig().count_delay_documents(), StoreConfig(window_docs=10, windows=2
        ...     ).count_delay_documents(), StoreConfig().count_delay_documents(True)
        (1000, 0, 0)
        """
        return resolve_count_delay(self.count_delay, admits_words=True,
                                   tumbling=self.window_docs is not None,
                                   reads_documents=reads_documents)

    def runtime_kwargs(self) -> dict[str, Any]:
        """Runtime options of ``anchorstream.store.CooccurrenceStore`` (not stored in it).

        >>> StoreConfig(gc_every=5).runtime_kwargs()["gc_every"]
        5
        """
        return {
            "budget_bytes": self.accumulator_budget_bytes,
            "keep_versions": self.keep_versions,
            "gc_every": self.gc_every,
            "gc_interval_seconds": self.gc_interval_seconds,
            "gc_min_age": self.gc_min_age_seconds,
            "compact_bytes": self.compact_bytes,
            "max_segments": self.max_segments,
            "compact_step_seconds": self.compact_step_seconds,
        }

    def storage_kwargs(self) -> dict[str, Any] | None:
        """``storage_options`` for the store, secrets revealed; None when there are none."""
        if not self.storage_options:
            return None
        return {k: v.reveal() if isinstance(v, Secret) else
                dict(v) if isinstance(v, Mapping) else v
                for k, v in self.storage_options.items()}


class VocabConfig(_Section):
    """``vocab``: the bounded, growing vocabulary."""

    capacity: Int(2) = Field(20000, description="vocabulary slots")
    min_df: Int(1) = Field(5, description="min document frequency of a word used by the model")
    max_df_ratio: Float(0, 1, lo_open=True) = Field(
        0.5, description="words in a larger share of documents are ignored")
    block_df_ratio: Float(0, 1, lo_open=True, optional=True) = Field(
        None, description="words in a larger share of documents are blocked in the store (no "
        "slot, not counted until they fall below; checked every 1000 documents from the 1000th); "
        "null = off. Set when the store is created")
    admit_threshold: Float(0, lo_open=True) = Field(
        5.0, description="sketched document frequency that admits a new word")
    admission_min_share: Float(0, 1, lo_open=True) = Field(
        MIN_SHARE, description="below 1, a word admitted late has its counts divided by the "
        "share of its documents counted since (at least this share: the factor is at most its "
        "inverse); 1 = no correction, the default (it did not bring the topics closer to the "
        "batch fit's: docs/store.md, \"Admission correction\")")
    seed_file: ExistingFile = Field(None, description="words admitted at start, one a line")
    stopwords: Stopwords = Field("auto", description=(
        f"auto = the list the store recorded when it was created (ingest --stopwords auto "
        f"chooses one from its files), english for a new store, whose stream cannot be read "
        f"ahead; a shipped list ({shipped_stopword_lists()}), 'none', or a file path (one "
        "word per line); the daemon warns when the list removes less than 8% of the first "
        "2000 documents' words (at most 20,000; another language), naming the shipped list "
        "that fits"))
    links: Choice(*LINKS, "auto") = Field("auto", description=(
        "drop = remove links (a scheme and ://, or www., to the next space) before the text is "
        "split, for posts whose links would fill the topics with http, www, com and a "
        "shortener's fragments; keep = they are words (where links name projects they carry "
        "topic words: benchmarks/README.md, \"Links in posts\"); auto = what the store "
        "recorded when it was created (ingest --links auto drops them from files whose first "
        "documents are posts full of links), keep for a new store, whose stream cannot be "
        "read ahead. Recorded when the store is created; a different keep or drop later is "
        "logged as a warning; where half of the first 1000 documents hold a link and they "
        "are kept, the log says so"))


class ModelConfig(_Section):
    """``model``: the topic model fitted at every refresh."""

    num_topics: Int(1) = Field(20, description="number of topics K")
    method: Choice(*METHODS) = Field(
        "anchor", description="anchor words, AnchorFree (Huang 2016) or TSVD over a reservoir of "
        "documents (Bansal 2014)")
    rectify: Bool = Field(True, description="rectify the co-occurrence (JSMF)")
    rectify_method: Choice(*RECTIFY_METHODS) = Field(
        "auto", description="lowrank = alternating projection on a V x K factor plus "
        "corrections of the scanned rows (a warm refresh updates the last cold factor to first "
        "order from the data's product with it; reads the store's counts sparse, never a V x V "
        "array); ap = the same projections on the dense V x V matrix (JSMF Algorithm 1); auto "
        "= lowrank, or ap with recover_method kl (it reads every entry of the matrix)")
    rectify_rows: Int(1, optional=True) = Field(
        None, description="lowrank: words whose rows and columns are checked for negative "
        "entries each iteration; null = 10 x num_topics + 1000")
    anchor_method: Choice(*ANCHOR_METHODS) = Field(
        "qr", description="anchor finder (method anchor): qr, fast, or the novel words ddp, rp "
        "(Ding 2014) from document statistics kept with the store")
    recover_method: Choice("admm", "l2", "kl", "inverse") = Field(
        "admm", description="recovery (anchors qr and fast)")
    recover_weights: Choice(*RECOVER_WEIGHTS) = Field(
        "chi2", description="recover_method admm: chi2 = each column of the least-squares loss "
        "divided by its word's probability (the chi-square distance between rows, each entry "
        "against its sampling noise), none = the unweighted loss of JSMF; l2, kl and inverse "
        "keep their papers' losses")
    anchor_min_df: Int(1) = Field(
        100, description="min document frequency of an anchor word; fewer where fewer than 2 x "
        "num_topics words are that frequent (a small or young corpus), and down to 5% of the "
        "documents where long documents estimate a row from fewer")
    anchor_candidates: Int(0) = Field(
        40, description="anchors qr/fast: at most this many candidates per topic, the most "
        "frequent words (anchor_min_df is raised where more reach it, to 5% of the documents "
        "at most); 0 = no cap")
    refine: Choice(*REFINE_METHODS) = Field(
        "auto", description="every method: after it, EM on the likelihood of the raw "
        "word pairs from its topics; joint = the pair distribution B R Bᵀ (topics and "
        "topic-topic matrix), pairs = the biterm mixture (Yan 2013; diagonal topic-topic "
        "matrix), none = as recovered, auto = joint where documents average fewer than "
        f"{REFINE_AUTO_MAX_LENGTH:g} tokens in the vocabulary, else none")
    refine_max_iter: Int(1) = Field(
        REFINE_MAX_ITER, description="most EM passes of refine, SQUAREM-accelerated (it stops "
        "earlier when a pass gains less than 1e-5 of the log-likelihood, relative)")
    refine_window: RefineWindow = Field(
        "auto", description="count the refinement's word pairs in windows of this many "
        "consecutive tokens of each document, kept by the store as documents arrive (fit "
        "--refine-window); for long documents that move from subject to subject; null = whole "
        f"documents; auto = {auto_rule('num_topics')} (a new store keeps the windows' pairs; "
        "an existing one keeps what it keeps)")
    refine_warm_max_iter: Int(0) = Field(
        REFINE_WARM_MAX_ITER, description="most EM passes of a warm refresh's refine, which "
        "continues the previous refresh's EM on the topics whose anchors are kept; 0 = refine "
        "every refresh from its anchor model, as a cold fit")
    refine_warm_new_max_iter: Int(0) = Field(
        REFINE_WARM_NEW_MAX_ITER, description="most EM passes of a warm refresh's refine where "
        "some topic's anchor is new, so that topic starts from its anchor model (at least "
        "refine_warm_max_iter)")
    anchor_noise: Float(0.0) = Field(
        0.0, description="anchors qr/fast: multiple of each word's estimated sampling noise "
        "taken off its distance to the span when choosing anchors; 0 = plain farthest word")
    anchorfree_words: Int(0) = Field(
        ANCHORFREE_WORDS, description="method anchorfree: the linear programs are constrained by this many "
        "most frequent words per topic; 0 = every word")
    anchorfree_slack: Float(0.0) = Field(
        ANCHORFREE_SLACK, description="method anchorfree: C(v,k) >= -slack x the sampling noise of word "
        "v's row (sigma_v, first order); 0 = the paper's C >= 0")
    random_state: Int(0) = Field(0, description="seed")
    rectify_max_iter: Int(1) = Field(150, description="rectification iteration cap")
    supertopics: Int(0) = Field(
        0, description="supertopics (JSMF §4) stored as a hierarchy in each snapshot; 0 = off")
    rectify_dtype: Choice("float32", "float64") = Field(
        "float32", description="working precision of rectification (float32: half the memory, "
        "~1.5x faster)")
    rectify_tol: Float(0.0) = Field(
        1e-3, description="rectification stops when an iteration changes the matrix by less than "
        "this (relative, Frobenius); 1e-4: slower, more distinct topics")
    rectify_anderson: Int(0) = Field(
        5, description="history length of the Anderson acceleration of rectification; 0 = plain "
        "alternating projection (JSMF Algorithm 1)")
    rectify_warm_change: Float(0.0, 1.0) = Field(
        RECTIFY_WARM_CHANGE, description="a warm refresh updates the last cold rectification "
        "(first order in the data's change) while the co-occurrence changed less than this "
        "since (relative, "
        "Frobenius, estimated; 1% new documents changed it by 0.013-0.045 on the benchmark "
        "corpora of 4,700-300,000 documents, by up to 0.08 and more on one of 12,000 short "
        "quotations), else it rectifies cold")
    rectify_warm_limit: Int(0, optional=True) = Field(
        None, description="most warm refreshes in a row before one rectifies cold regardless of "
        "the change; null = no cap, 0 = always cold")
    rp_projections: Int(1, optional=True) = Field(
        None, description="random projections P of anchors rp; null = 50 x num_topics (the "
        "paper)")
    tsvd_documents: Int(2) = Field(
        10000, description="documents in the reservoir that method tsvd fits on")

    RULES = rules.MODEL

    @property
    def needs_documents(self) -> bool:
        """Whether the store must keep document statistics (anchors ddp/rp, method tsvd)."""
        return self.spec.needs_documents

    @property
    def spec(self) -> MethodSpec:
        """The method registry's entry for the configured method."""
        return method_spec(self.method, self.anchor_method)

    @property
    def kept_window(self) -> int | None:
        """The windows whose pairs a store keeps: refine_window's size, with ``auto`` the
        size ``auto`` refines in (none where nothing is refined, ``refine: none``).

        >>> ModelConfig().kept_window, ModelConfig(refine="none").kept_window
        (24, None)
        """
        if self.refine_window != AUTO:
            return self.refine_window
        return None if self.refine == "none" else WINDOWS_AUTO_SIZE

    def document_stats_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``anchorstream.stats.documents.DocStatsSettings.for_method``.

        >>> ModelConfig(anchor_method="rp", num_topics=4).document_stats_kwargs()["method"]
        'anchor'
        """
        return {
            "method": self.method,
            "anchor_method": self.anchor_method,
            "n_topics": self.num_topics,
            "n_projections": self.rp_projections,
            "reservoir": self.tsvd_documents,
            "seed": self.random_state,
            "pair_window": self.kept_window,
        }

    def model_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``anchorstream.model.pipeline.AnchorModel``."""
        return {
            "n_topics": self.num_topics,
            "rectify": self.rectify,
            "rectify_method": self.rectify_method,
            "rectify_rows": self.rectify_rows,
            "rectify_max_iter": self.rectify_max_iter,
            "rectify_tol": self.rectify_tol,
            "rectify_dtype": self.rectify_dtype,
            "rectify_anderson": self.rectify_anderson,
            "rectify_warm_change": self.rectify_warm_change,
            "rectify_warm_limit": self.rectify_warm_limit,
            "anchor_method": self.anchor_method,
            "anchor_min_df": self.anchor_min_df,
            "anchor_candidates": self.anchor_candidates,
            "anchor_noise": self.anchor_noise,
            "anchorfree_words": self.anchorfree_words,
            "anchorfree_slack": self.anchorfree_slack,
            "recover_method": self.recover_method,
            "recover_weights": self.recover_weights,
            "refine": self.refine,
            "refine_max_iter": self.refine_max_iter,
            "refine_warm_max_iter": self.refine_warm_max_iter,
            "refine_warm_new_max_iter": self.refine_warm_new_max_iter,
            "random_state": self.random_state,
        }


class RefreshConfig(_Section):
    """``refresh``: when the model is re-fitted and how topic ids are carried over."""

    interval_seconds: Float(0, lo_open=True) = Field(60.0, description="time between refreshes")
    min_new_docs: Int(0) = Field(1000, description="new documents needed for a refresh")
    warm_start: Bool = Field(True, description="seed each refresh with the previous model")
    align_min_similarity: Float(0, 1) = Field(
        0.5, description="1 - total variation needed to keep a topic id")
    keep_read_max_bytes: Int(0, optional=True) = Field(
        1024**3, description="store.layout single, low-rank refresh (the default): memory the "
        "refresher may keep of its last read (12 bytes a stored pair) to read only the "
        "segments committed since next time; a read past both this and 2 V² bytes is read "
        "in full at every refresh; null = no bound")
    partition_reads_max_bytes: Int(0, optional=True) = Field(
        2 * 1024**3, description="store.layout partitioned: memory the refresher may keep of "
        "every partition's last read (to read only what moved next time; sparse, 12 bytes a "
        "stored pair); past it each refresh reads every partition in full; null = no bound")


class SnapshotsConfig(_Section):
    """``snapshots``: where published models go and how many stay."""

    path: Text() = Field("snapshots", description="snapshot directory, apart from store.path "
                         "(neither inside the other)")
    keep: Int(1) = Field(20, description="newest snapshots kept")
    keep_seconds: Float(0, lo_open=True, optional=True) = Field(
        None, description="also drop snapshots older than this; null = no limit")
    # The snapshot format lists at least 20 words per topic (anchorstream.snapshot).
    n_top_words: Int(20) = Field(20, description="top words stored per topic")
    background_spread: Float(0, 1, lo_open=True, optional=True) = Field(
        BACKGROUND_SPREAD, description="background words: the fraction of the topics (two at "
        "least) a word keeps its background level in; top words rank above it (on documents "
        f"under {SHORT_DOCUMENTS:g} tokens only as far as the labels need to tell the topics "
        "apart); null = by probability")
    history_max_entries: Int(2) = Field(
        1000, description="versions the topic history (HISTORY.jsonl, what trends are computed "
        "from) keeps; it outlives the snapshots")
    history_max_age_seconds: Float(0, lo_open=True, optional=True) = Field(
        None, description="also drop history older than this; null = no limit")


class TrendsConfig(_Section):
    """``trends``: how ``/v1/trends`` scores topics (docs/trends.md)."""

    window: Int(2) = Field(10, description="snapshots a trend looks at, the latest included")
    min_score: Float(0, lo_open=True) = Field(
        3.0, description="score (a z-score) from which a topic is rising, or falling below "
        "minus it")
    new_min_snapshots: Int(1) = Field(
        3, description="snapshots a topic born in the window must have lived to be new")
    prevalence_floor: Float(0, 1, lo_open=True) = Field(
        0.001, description="prevalences below this count as this (log scale)")
    noise_floor: Float(0, lo_open=True) = Field(
        0.05, description="least noise assumed, in log prevalence per snapshot")
    new_max_overlap: Float(0, 1) = Field(
        0.5, description="a born topic sharing more of its top words with one topic of the "
        "snapshot before its birth is that topic re-cut, not new; 1 = no check")

    def settings(self):
        """The library's :class:`anchorstream.model.trends.TrendSettings`."""
        from anchorstream.model.trends import TrendSettings

        return TrendSettings(window=self.window, min_score=self.min_score,
                             new_min_snapshots=self.new_min_snapshots,
                             prevalence_floor=self.prevalence_floor,
                             noise_floor=self.noise_floor,
                             new_max_overlap=self.new_max_overlap)


class HealthConfig(_Section):
    """``health``: when ``/readyz`` reports that ingestion stopped."""

    stall_seconds: Float(0, lo_open=True) = Field(
        60.0, description="not ready when the lag is above 0 and nothing was consumed for this "
        "long")
    broker_probe_seconds: Float(0, lo_open=True) = Field(
        5.0, description="how often the broker is asked for the end offsets (lag, and whether it "
        "answers)")


class HttpConfig(_Section):
    """``http``: the JSON API."""

    host: Text() = Field("127.0.0.1", description="bind address")
    port: Int(0, 65535) = Field(8080, description="port; 0 = any free port")
    bearer_token: SecretText = Field(None, description="require 'Authorization: Bearer <token>'")
    max_body_bytes: Int(1) = Field(1024 * 1024, description="largest accepted request body")
    max_wait_seconds: Float(0) = Field(60.0, description="cap on ?wait= long polls")
    max_waiters: Int(1) = Field(
        256, description="long polls waiting at once (a thread each); past it a poll that would "
        "wait gets 503 with Retry-After")
    header_timeout_seconds: Float(0, lo_open=True) = Field(
        20.0, description="a request's line and headers must arrive within this (408 otherwise, "
        "however slowly they trickle); also closes idle keep-alive connections")
    body_timeout_seconds: Float(0, lo_open=True) = Field(
        30.0, description="a request body must arrive within this after the headers (408 "
        "otherwise)")
    max_infer_documents: Int(1) = Field(
        256, description="documents one POST /v1/infer batch may hold (400 beyond)")
    infer_min_weight: Float(0, 1) = Field(
        0.01, description="POST /v1/infer lists the strongest topic and the others of at least "
        "this weight, when the request gives no min_weight; the rest sum to omitted_weight")
    listen_backlog: Int(1, 65535) = Field(
        1024, description="connections queued before they are accepted (capped by the kernel's "
        "net.core.somaxconn)")


class MetricsConfig(_Section):
    """``metrics``: Prometheus exposition."""

    port: Int(0, 65535) = Field(0, description="0 = serve /metrics on the HTTP API's port")
    host: Text() = Field("127.0.0.1", description="bind address of a separate metrics port")


class LoggingConfig(_Section):
    """``logging``."""

    level: LogLevel = Field("INFO", description="DEBUG, INFO, WARNING, ERROR or CRITICAL")
    kafka_repeat_seconds: Float(0) = Field(
        60.0, description="a Kafka client message that repeats is logged once per this many "
        "seconds, with a count; 0 = every time")


