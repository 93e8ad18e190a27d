"""The daemon's configuration: the only reader of ``config.yaml`` and the environment.

:func:`load_config` reads a YAML file, applies environment overrides, validates every value and
returns a frozen :class:`Config` of per-section frozen dataclasses. The rest of the daemon receives
plain values from it and never looks at YAML or ``os.environ`` itself.

Environment overrides
---------------------
``ANCHORSTREAM_<SECTION>__<KEY>=value`` (double underscore between section and key) overrides
``<section>.<key>``. The value is parsed as a YAML scalar or flow sequence, so ``true``, ``42``,
``0.5``, ``null`` and ``[news, posts]`` mean what they mean in the file. Variables that start with
``ANCHORSTREAM_`` but have no ``__`` (for example ``ANCHORSTREAM_CONFIG``) are not overrides and
are ignored; an override naming an unknown section or key is an error, because a typo in a
deployment manifest should not be silently ignored.

Errors
------
Every problem raises :class:`ConfigError` (an ``AnchorstreamError`` and a ``ValueError``) whose
message names the dotted key, the value received and what is allowed, e.g.::

    kafka.security_protocol: got 'SASL'; allowed: one of 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT',
    'SASL_SSL'

Secrets
-------
``kafka.sasl_plain_password`` and ``http.bearer_token`` are held in :class:`Secret`, whose
``repr``/``str`` is ``'***'``; call :meth:`Secret.reveal` where the value is really needed (the
Kafka client, the token comparison). Error messages about a secret never show its value and
:meth:`Config.to_dict` redacts it by default, so logging the effective configuration is safe.

Paths
-----
Relative paths (``store.path``, ``snapshots.path``, ``vocab.seed_file``, ``kafka.ssl_*``) are kept
as written and so are relative to the daemon's working directory.

Example
-------
>>> cfg = load_config(None, env={"ANCHORSTREAM_MODEL__NUM_TOPICS": "30"})
>>> cfg.model.num_topics, cfg.http.host
(30, '127.0.0.1')
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from anchorstream.errors import AnchorstreamError, InputError
from anchorstream.model.registry import (ANCHOR_METHODS, DOCUMENT_ANCHORS, METHODS, MethodSpec,
                                         method_spec)
# Which URLs and storage options a store takes: one table, shared with the store. The module
# is plain Python (Icechunk is imported only when a storage is built), so this stays light.
from anchorstream.store.location import SECRET_OPTIONS, check_storage_options

__all__ = [
    "Config",
    "ConfigError",
    "HttpConfig",
    "KafkaConfig",
    "LoggingConfig",
    "MessageConfig",
    "MetricsConfig",
    "ModelConfig",
    "RefreshConfig",
    "Secret",
    "SnapshotsConfig",
    "StoreConfig",
    "VocabConfig",
    "FrozenMap",
    "ENV_PREFIX",
    "load_config",
    "parse_config",
]

ENV_PREFIX = "ANCHORSTREAM_"

#: Value of ``kafka.bootstrap_servers`` that asks the daemon to start the bundled broker.
EMBEDDED = "embedded"


class ConfigError(AnchorstreamError, ValueError):
    """The configuration file or an environment override is invalid."""


class Secret:
    """A string that never shows itself in ``repr``, ``str``, logs or tracebacks.

    >>> s = Secret("hunter2")
    >>> s, str(s), s.reveal()
    (***, '***', 'hunter2')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        """The secret itself; only for the code that must send or compare it."""
        return self._value

    def __repr__(self) -> str:
        return "***"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


# --------------------------------------------------------------------------------------------
# Validators. Each takes (dotted_key, value, where) and returns the normalized value or raises
# ConfigError. ``where`` says where the value came from ("" for the file, or " (from environment
# variable X)") so that the message points at the place to fix.


class _Invalid(Exception):
    """Raised by a validator with the 'allowed' text; turned into a ConfigError by the caller."""

    def __init__(self, allowed: str, shown: Any = dataclasses.MISSING):
        super().__init__(allowed)
        self.allowed = allowed
        self.shown = shown


Validator = Callable[[Any], Any]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def v_int(lo: int | None = None, hi: int | None = None, optional: bool = False) -> Validator:
    def check(v):
        if v is None and optional:
            return None
        if not _is_int(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = ("an integer" + (f" >= {lo}" if lo is not None else "")
                   + (f" and <= {hi}" if hi is not None else ""))
            raise _Invalid(rng + (" or null" if optional else ""))
        return int(v)

    return check


def v_float(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
            optional: bool = False) -> Validator:
    def check(v):
        if v is None and optional:
            return None
        ok = _is_number(v) and v == v and abs(v) != float("inf")
        if ok and lo is not None:
            ok = v > lo if lo_open else v >= lo
        if ok and hi is not None:
            ok = v <= hi
        if not ok:
            text = "a finite number"
            if lo is not None:
                text += f" {'>' if lo_open else '>='} {lo}"
            if hi is not None:
                text += f" and <= {hi}"
            raise _Invalid(text + (" or null" if optional else ""))
        return float(v)

    return check


def v_bool() -> Validator:
    def check(v):
        if not isinstance(v, bool):
            raise _Invalid("true or false")
        return v

    return check


def v_str(*, optional: bool = False, pattern: str | None = None, what: str = "a non-empty string",
          secret: bool = False) -> Validator:
    rx = re.compile(pattern) if pattern else None

    def check(v):
        if v is None and optional:
            return None
        # A secret's value is never echoed: only its type is shown.
        shown = f"<a {type(v).__name__}>" if secret else dataclasses.MISSING
        if not isinstance(v, str) or not v or (rx is not None and not rx.fullmatch(v)):
            raise _Invalid(what + (" or null" if optional else ""), shown)
        return Secret(v) if secret else v

    return check


def v_choice(*allowed: Any, optional: bool = False) -> Validator:
    def check(v):
        if v is None and optional:
            return None
        if v not in allowed:
            text = "one of " + ", ".join(repr(a) for a in allowed)
            raise _Invalid(text + (" or null" if optional else ""))
        return v

    return check


_TOPIC_RX = r"[A-Za-z0-9._-]{1,249}"
_TOPIC_TEXT = "a Kafka topic name (1-249 characters of letters, digits, '.', '_', '-')"


def v_topic(optional: bool = False) -> Validator:
    return v_str(optional=optional, pattern=_TOPIC_RX, what=_TOPIC_TEXT)


def v_topics() -> Validator:
    def check(v):
        items = [v] if isinstance(v, str) else v
        if (not isinstance(items, list) or not items
                or not all(isinstance(t, str) and re.fullmatch(_TOPIC_RX, t) for t in items)):
            raise _Invalid("a non-empty list of Kafka topic names (letters, digits, '.', '_', '-')")
        if len(set(items)) != len(items):
            raise _Invalid("a list of distinct topic names")
        return tuple(items)

    return check


_HOSTPORT_RX = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})")


def v_bootstrap() -> Validator:
    def check(v):
        if v == EMBEDDED:
            return (EMBEDDED,)
        items = [s.strip() for s in v.split(",")] if isinstance(v, str) else v
        allowed = (f"'{EMBEDDED}', or HOST:PORT, or a list / comma-separated string of "
                   "HOST:PORT addresses")
        if not isinstance(items, list) or not items:
            raise _Invalid(allowed)
        for item in items:
            m = _HOSTPORT_RX.fullmatch(item) if isinstance(item, str) else None
            if m is None or not 0 < int(m.group(2)) < 65536:
                raise _Invalid(allowed)
        return tuple(items)

    return check


def v_existing_file(optional: bool = True) -> Validator:
    def check(v):
        if v is None and optional:
            return None
        if not isinstance(v, str) or not v:
            raise _Invalid("a path to an existing file" + (" or null" if optional else ""))
        if not Path(v).is_file():
            raise _Invalid(f"a path to an existing file (no file at {str(Path(v).resolve())!r})")
        return v

    return check


def v_stopwords() -> Validator:
    def check(v):
        if v is None or v == "none":
            return "none"
        if not isinstance(v, str) or not v:
            raise _Invalid("'english' (a shipped list), 'none', or a path to a file of "
                           "stopwords (one per line)")
        return v

    return check


class FrozenMap(Mapping):
    """A read-only, hashable mapping: the value of a mapping-valued key in a frozen section.

    >>> m = FrozenMap({"region": "eu-west-1"})
    >>> m["region"], dict(m), m == {"region": "eu-west-1"}
    ('eu-west-1', {'region': 'eu-west-1'}, True)
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None):
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self._data.items())))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def v_storage_options() -> Validator:
    """A mapping of Icechunk storage keyword arguments; credentials are held as Secret.

    An environment override is text: a YAML flow mapping such as
    ``{endpoint_url: "http://minio:9000", allow_http: true}`` is parsed here.
    """
    allowed = ("a mapping of option names to strings, numbers or booleans (keyword arguments "
               "of the Icechunk storage, e.g. {region: eu-west-1, endpoint_url: ...}), or {}")

    def check(v):
        if v is None:
            return FrozenMap()
        if isinstance(v, str):
            try:
                v = yaml.safe_load(v)
            except yaml.YAMLError:
                raise _Invalid(allowed) from None
        if not isinstance(v, Mapping):
            raise _Invalid(allowed)
        out = {}
        for key, value in v.items():
            if not isinstance(key, str) or not key:
                raise _Invalid(allowed + f"; got the option name {key!r}", "<a mapping>")
            if isinstance(value, Mapping):  # Icechunk's `config` (GCS, Azure): str -> str
                if not all(isinstance(a, str) and isinstance(b, str) for a, b in value.items()):
                    raise _Invalid(allowed + f"; option {key!r} must map strings to strings",
                                   "<a mapping>")
                value = FrozenMap(value)
            elif value is not None and not isinstance(value, (str, bool, int, float)):
                shown = "<redacted>" if key in SECRET_OPTIONS else repr(value)
                raise _Invalid(allowed + f"; option {key!r} got {shown}", "<a mapping>")
            if key in SECRET_OPTIONS and isinstance(value, str):
                value = Secret(value)
            out[key] = value
        return FrozenMap(out)

    return check


def v_log_level() -> Validator:
    levels = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

    def check(v):
        if not isinstance(v, str) or v.upper() not in levels:
            raise _Invalid("one of " + ", ".join(repr(s) for s in levels))
        return v.upper()

    return check


def _spec(default: Any, check: Validator, doc: str, *, secret: bool = False) -> Any:
    """A dataclass field carrying its validator and one line of documentation."""
    kwargs: dict[str, Any] = {"metadata": {"check": check, "doc": doc, "secret": secret}}
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable default")  # pragma: no cover - a programming error here
    return field(default=default, **kwargs)


# --------------------------------------------------------------------------------------------
# Sections. Field defaults are the shipped defaults; config.yaml at the repository root lists
# every key with a comment.

_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Mechanisms that need only a user name and password; GSSAPI/OAUTHBEARER/AWS_MSK_IAM need
# client-side plumbing (Kerberos, token providers) the daemon does not offer yet.
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class KafkaConfig:
    """``kafka``: where documents come from and how to talk to the cluster."""

    bootstrap_servers: tuple[str, ...] = _spec(
        (EMBEDDED,), v_bootstrap(),
        "HOST:PORT list, or 'embedded' to start the bundled broker (the default, so a fresh "
        "machine runs without a cluster)")
    topics: tuple[str, ...] = _spec(("documents",), v_topics(), "topics to consume")
    group_id: str = _spec("anchorstream", v_str(), "consumer group id")
    client_id: str = _spec("anchorstream", v_str(), "client id sent to the brokers")
    security_protocol: str = _spec("PLAINTEXT", v_choice(*_SECURITY_PROTOCOLS),
                                   "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    sasl_mechanism: str | None = _spec(None, v_choice(*_SASL_MECHANISMS, optional=True),
                                       "SASL mechanism")
    sasl_plain_username: str | None = _spec(None, v_str(optional=True), "SASL user name")
    sasl_plain_password: Secret | None = _spec(
        None, v_str(optional=True, secret=True), "SASL password (secret)", secret=True)
    ssl_cafile: str | None = _spec(None, v_existing_file(), "CA bundle (PEM)")
    ssl_certfile: str | None = _spec(None, v_existing_file(), "client certificate (PEM)")
    ssl_keyfile: str | None = _spec(None, v_existing_file(), "client private key (PEM)")
    ssl_check_hostname: bool = _spec(True, v_bool(), "verify the broker's host name")
    allow_plaintext_sasl: bool = _spec(
        False, v_bool(), "allow SASL_PLAINTEXT with PLAIN (password in clear text)")
    dead_letter_topic: str | None = _spec(None, v_topic(optional=True),
                                          "topic receiving rejected messages, or null")
    model_updates_topic: str | None = _spec(None, v_topic(optional=True),
                                            "topic receiving a compact JSON per snapshot")
    auto_offset_reset: str = _spec("earliest", v_choice("earliest", "latest"),
                                   "where to start a partition with no stored offset")
    fetch_max_bytes: int = _spec(16 * 1024 * 1024, v_int(1024),
                                 "max bytes of record data per fetch response")
    max_partition_fetch_bytes: int = _spec(1024 * 1024, v_int(1024),
                                           "max bytes per partition per fetch")
    max_poll_records: int = _spec(1000, v_int(1), "max records returned by one poll")
    max_batch_bytes: int | None = _spec(
        None, v_int(1024, optional=True),
        "largest record batch after decompression; larger ones are skipped and counted "
        "(null = 32 x message.max_bytes)")
    session_timeout_ms: int = _spec(6000, v_int(1000), "consumer group session timeout")
    heartbeat_interval_ms: int = _spec(1000, v_int(100), "group heartbeat interval")
    max_poll_interval_ms: int = _spec(60000, v_int(1000),
                                      "max time between polls before leaving the group")
    # kafka-python needs fetch_max_wait_ms (500) < request_timeout_ms < connections_max_idle_ms
    # (540000); the bounds keep any accepted value inside that window.
    request_timeout_ms: int = _spec(30000, v_int(1000, 300000), "broker request timeout")
    reconnect_backoff_ms: int = _spec(100, v_int(1), "first reconnect delay")
    reconnect_backoff_max_ms: int = _spec(10000, v_int(1), "reconnect delay cap")
    retry_backoff_ms: int = _spec(200, v_int(1), "delay before retrying a failed request")
    compression_type: str | None = _spec(
        None, v_choice("gzip", "snappy", "lz4", "zstd", optional=True),
        "compression of what the daemon produces")

    @property
    def embedded(self) -> bool:
        """True when the daemon should start the bundled broker itself."""
        return self.bootstrap_servers == (EMBEDDED,)


@dataclass(frozen=True)
class MessageConfig:
    """``message``: how a Kafka message value becomes a document."""

    format: str = _spec("json", v_choice("json", "text", "tokens"),
                        "json object, UTF-8 text, or a JSON array of tokens")
    text_field: str = _spec("text", v_str(), "JSON field with the text (format json)")
    id_field: str | None = _spec(None, v_str(optional=True), "JSON field with a document id")
    timestamp_field: str | None = _spec(None, v_str(optional=True),
                                        "JSON field with a document timestamp")
    max_bytes: int = _spec(1024 * 1024, v_int(1), "larger messages are rejected as oversized")
    max_tokens: int = _spec(10000, v_int(1), "max tokens counted per document")


@dataclass(frozen=True)
class StoreConfig:
    """``store``: the on-disk co-occurrence store (its format is the store's business)."""

    path: str = _spec(
        "store", v_str(), "store directory, or URL: file://, s3:// (s3a://), gs:// (gcs://), "
        "az:// (abfs://, abfss://, azure://)")
    storage_options: FrozenMap = _spec(
        FrozenMap(), v_storage_options(),
        "keyword arguments of the Icechunk storage of an object-store URL (region, "
        "endpoint_url, allow_http, anonymous, force_path_style, ...); credentials come from "
        "the environment by default")
    chunk_size: int | None = _spec(None, v_int(1, optional=True),
                                   "words per chunk side; null = store default")
    shard_size: int | None = _spec(None, v_int(1, optional=True),
                                   "words per shard side, a multiple of chunk_size; null = "
                                   "store default")
    checkpoint_every_docs: int = _spec(10000, v_int(1), "checkpoint after this many documents")
    checkpoint_every_seconds: float = _spec(30.0, v_float(0, lo_open=True),
                                            "... or after this many seconds")
    accumulator_budget_bytes: int = _spec(256 * 1024 * 1024, v_int(1024 * 1024),
                                          "memory of the in-memory delta before a checkpoint")
    keep_versions: int = _spec(10, v_int(1), "store versions kept before garbage collection")
    gc_every: int = _spec(20, v_int(0),
                          "garbage-collect after this many checkpoints of one run; 0 = not by "
                          "count")
    gc_interval_seconds: float = _spec(
        3600.0, v_float(0), "... or at a checkpoint this long after the last collection (kept "
        "in the store, across restarts); 0 = not by time")
    gc_min_age_seconds: float = _spec(
        60.0, v_float(0), "versions and unreferenced objects younger than this are never "
        "collected (readers of a recent version keep working)")
    compact_bytes: int = _spec(256 * 1024 * 1024, v_int(1),
                               "checkpoint segments (bytes) folded into the matrix past this")
    max_segments: int = _spec(64, v_int(1), "... or past this many segments")
    compact_step_seconds: float = _spec(
        0.5, v_float(0), "without forgetting, fold segments into the matrix in steps of about "
        "this long, one after each checkpoint; 0 = in one step")
    half_life_docs: float | None = _spec(None, v_float(0, lo_open=True, optional=True),
                                         "exponential forgetting: half-life in documents")
    half_life_seconds: float | None = _spec(None, v_float(0, lo_open=True, optional=True),
                                            "exponential forgetting: half-life in seconds")
    length_cap: float | None = _spec(
        25.0, v_float(2, optional=True),  # anchorstream.stats.cooccurrence.LENGTH_CAP (numba-free here)
        "how a document's word pairs are weighted: every pair the same up to a document of "
        "this many tokens, a longer one as much as that; 2 = every document the same (the "
        "papers' estimator), null = every pair the same. Fixed when the store is created")
    window_docs: int | None = _spec(None, v_int(1, optional=True),
                                    "tumbling windows: documents per window")
    windows: int | None = _spec(None, v_int(1, optional=True),
                                "tumbling windows: number of windows summed")

    def forgetting_kwargs(self) -> dict[str, Any] | None:
        """Keyword arguments for ``anchorstream.stats.accumulator.Forgetting``, or None to remember all.

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


@dataclass(frozen=True)
class VocabConfig:
    """``vocab``: the bounded, growing vocabulary."""

    capacity: int = _spec(20000, v_int(2), "vocabulary slots")
    min_df: int = _spec(5, v_int(1), "min document frequency of a word used by the model")
    max_df_ratio: float = _spec(0.5, v_float(0, 1, lo_open=True),
                                "words in a larger share of documents are ignored")
    block_df_ratio: float | None = _spec(
        None, v_float(0, 1, lo_open=True, optional=True),
        "words in a larger share of documents are blocked in the store (no slot, not counted "
        "until they fall below; checked every 1000 documents from the 1000th); null = off. "
        "Set when the store is created")
    admit_threshold: float = _spec(5.0, v_float(0, lo_open=True),
                                   "sketched document frequency that admits a new word")
    seed_file: str | None = _spec(None, v_existing_file(), "words admitted at start, one a line")
    stopwords: str = _spec("english", v_stopwords(), "'english', 'none', or a file path")


@dataclass(frozen=True)
class ModelConfig:
    """``model``: the topic model fitted at every refresh."""

    num_topics: int = _spec(20, v_int(1), "number of topics K")
    method: str = _spec(
        "anchor", v_choice(*METHODS),
        "anchor words, AnchorFree (Huang 2016) or TSVD over a reservoir of documents "
        "(Bansal 2014)")
    rectify: bool = _spec(True, v_bool(), "rectify the co-occurrence (JSMF)")
    rectify_method: str = _spec(
        "ap", v_choice("ap", "lowrank"),
        "ap = alternating projection on the V x V matrix (JSMF Algorithm 1); lowrank = the same "
        "projections on a V x K factor plus sparse corrections (warm-started from the last "
        "refresh's eigenvectors)")
    rectify_rows: int | None = _spec(
        None, v_int(1, optional=True), "lowrank: words whose rows and columns are checked for "
        "negative entries each iteration; null = 10 x num_topics + 1000")
    anchor_method: str = _spec(
        "qr", v_choice(*ANCHOR_METHODS),
        "anchor finder (method anchor): qr, fast, or the novel words ddp, rp (Ding 2014) from "
        "document statistics kept with the store")
    recover_method: str = _spec("admm", v_choice("admm", "l2", "kl", "inverse"),
                                "recovery (anchors qr and fast)")
    anchor_min_df: int = _spec(
        100, v_int(1), "min document frequency of an anchor word; fewer where fewer than 2 x "
        "num_topics words are that frequent (a small or young corpus)")
    random_state: int = _spec(0, v_int(0), "seed")
    rectify_max_iter: int = _spec(150, v_int(1), "rectification iteration cap")
    supertopics: int = _spec(
        0, v_int(0), "supertopics (JSMF §4) stored as a hierarchy in each snapshot; 0 = off")
    rectify_dtype: str = _spec(
        "float32", v_choice("float32", "float64"),
        "working precision of rectification (float32: half the memory, ~1.5x faster)")
    rectify_tol: float = _spec(
        1e-3, v_float(0.0), "rectification stops when an iteration changes the matrix by less "
        "than this (relative, Frobenius); 1e-4: slower, more distinct topics")
    rectify_anderson: int = _spec(
        5, v_int(0), "history length of the Anderson acceleration of rectification; 0 = "
        "plain alternating projection (JSMF Algorithm 1)")
    rectify_warm_change: float = _spec(
        0.04, v_float(0.0, 1.0), "a warm refresh updates the last cold rectification (first "
        "order in the data's change) while the co-occurrence changed less than this since "
        "(relative, Frobenius; 1% new documents ~0.01), else it rectifies cold")
    rectify_warm_limit: int | None = _spec(
        None, v_int(0, optional=True), "most warm refreshes in a row before one rectifies "
        "cold regardless of the change; null = no cap, 0 = always cold")
    rp_projections: int | None = _spec(
        None, v_int(1, optional=True),
        "random projections P of anchors rp; null = 50 x num_topics (the paper)")
    tsvd_documents: int = _spec(
        10000, v_int(2), "documents in the reservoir that method tsvd fits on")

    @property
    def needs_documents(self) -> bool:
        """Whether the store must keep document statistics (anchors ddp/rp, method tsvd)."""
        return self.spec.needs_documents

    @property
    def spec(self) -> MethodSpec:
        """The method registry's entry for the configured method."""
        return method_spec(self.method, self.anchor_method)

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
            "recover_method": self.recover_method,
            "random_state": self.random_state,
        }


@dataclass(frozen=True)
class RefreshConfig:
    """``refresh``: when the model is re-fitted and how topic ids are carried over."""

    interval_seconds: float = _spec(60.0, v_float(0, lo_open=True), "time between refreshes")
    min_new_docs: int = _spec(1000, v_int(0), "new documents needed for a refresh")
    warm_start: bool = _spec(True, v_bool(), "seed each refresh with the previous model")
    align_min_similarity: float = _spec(
        0.5, v_float(0, 1), "1 - total variation needed to keep a topic id")


@dataclass(frozen=True)
class SnapshotsConfig:
    """``snapshots``: where published models go and how many stay."""

    path: str = _spec("snapshots", v_str(), "snapshot directory")
    keep: int = _spec(20, v_int(1), "newest snapshots kept")
    keep_seconds: float | None = _spec(None, v_float(0, lo_open=True, optional=True),
                                       "also drop snapshots older than this; null = no limit")
    # The snapshot format lists at least 20 words per topic (anchorstream.snapshot).
    n_top_words: int = _spec(20, v_int(20), "top words stored per topic")


@dataclass(frozen=True)
class HealthConfig:
    """``health``: when ``/readyz`` reports that ingestion stopped."""

    stall_seconds: float = _spec(
        60.0, v_float(0, lo_open=True),
        "not ready when the lag is above 0 and nothing was consumed for this long")
    broker_probe_seconds: float = _spec(
        5.0, v_float(0, lo_open=True),
        "how often the broker is asked for the end offsets (lag, and whether it answers)")


@dataclass(frozen=True)
class HttpConfig:
    """``http``: the JSON API."""

    host: str = _spec("127.0.0.1", v_str(), "bind address")
    port: int = _spec(8080, v_int(0, 65535), "port; 0 = any free port")
    bearer_token: Secret | None = _spec(
        None, v_str(optional=True, secret=True), "require 'Authorization: Bearer <token>'",
        secret=True)
    max_body_bytes: int = _spec(1024 * 1024, v_int(1), "largest accepted request body")
    max_wait_seconds: float = _spec(60.0, v_float(0), "cap on ?wait= long polls")
    max_waiters: int = _spec(
        256, v_int(1), "long polls waiting at once (a thread each); past it a poll that would "
        "wait gets 503 with Retry-After")
    header_timeout_seconds: float = _spec(
        20.0, v_float(0, lo_open=True), "a request's line and headers must arrive within this "
        "(408 otherwise, however slowly they trickle); also closes idle keep-alive connections")
    body_timeout_seconds: float = _spec(
        30.0, v_float(0, lo_open=True), "a request body must arrive within this after the "
        "headers (408 otherwise)")
    listen_backlog: int = _spec(
        1024, v_int(1, 65535), "connections queued before they are accepted (capped by the "
        "kernel's net.core.somaxconn)")


@dataclass(frozen=True)
class MetricsConfig:
    """``metrics``: Prometheus exposition."""

    port: int = _spec(0, v_int(0, 65535), "0 = serve /metrics on the HTTP API's port")
    host: str = _spec("127.0.0.1", v_str(), "bind address of a separate metrics port")


@dataclass(frozen=True)
class LoggingConfig:
    """``logging``."""

    level: str = _spec("INFO", v_log_level(), "DEBUG, INFO, WARNING, ERROR or CRITICAL")
    kafka_repeat_seconds: float = _spec(
        60.0, v_float(0),
        "a Kafka client message that repeats is logged once per this many seconds, with a "
        "count; 0 = every time")


_SECTIONS: dict[str, type] = {
    "kafka": KafkaConfig,
    "message": MessageConfig,
    "store": StoreConfig,
    "vocab": VocabConfig,
    "model": ModelConfig,
    "refresh": RefreshConfig,
    "snapshots": SnapshotsConfig,
    "health": HealthConfig,
    "http": HttpConfig,
    "metrics": MetricsConfig,
    "logging": LoggingConfig,
}


@dataclass(frozen=True)
class Config:
    """The whole validated configuration; one frozen dataclass per section."""

    kafka: KafkaConfig = field(default_factory=KafkaConfig)
    message: MessageConfig = field(default_factory=MessageConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    vocab: VocabConfig = field(default_factory=VocabConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    refresh: RefreshConfig = field(default_factory=RefreshConfig)
    snapshots: SnapshotsConfig = field(default_factory=SnapshotsConfig)
    health: HealthConfig = field(default_factory=HealthConfig)
    http: HttpConfig = field(default_factory=HttpConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)

    @property
    def max_batch_bytes(self) -> int:
        """``kafka.max_batch_bytes``, or its default: 32 x ``message.max_bytes``.

        A producer's batch holds many messages (librdkafka batches up to 1 MB of them, Java
        producers' batches inflate to several MB at text's compression ratios): 32 messages of
        the largest accepted size leave room for those and bound the memory one batch takes.
        """
        k = self.kafka.max_batch_bytes
        return int(k) if k is not None else 32 * self.message.max_bytes

    def to_dict(self, *, redact: bool = True) -> dict[str, dict[str, Any]]:
        """Plain JSON-able dict of every value; secrets become ``"***"`` unless ``redact=False``.

        The redacted form is what goes into logs and snapshot manifests.
        """
        out: dict[str, dict[str, Any]] = {}
        for name in _SECTIONS:
            section = getattr(self, name)
            values: dict[str, Any] = {}
            for f in dataclasses.fields(section):
                values[f.name] = _plain(getattr(section, f.name), redact)
            out[name] = values
        return out


def _plain(v: Any, redact: bool) -> Any:
    """A JSON value for ``v`` (secrets redacted unless ``redact`` is false)."""
    if isinstance(v, Secret):
        return "***" if redact else v.reveal()
    if isinstance(v, tuple):
        return list(v)
    if isinstance(v, Mapping):
        return {k: _plain(x, redact) for k, x in v.items()}
    return v


def describe_keys() -> dict[str, dict[str, str]]:
    """``{section: {key: one-line doc}}`` for every key; used to keep config.yaml complete."""
    return {
        name: {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}
        for name, cls in _SECTIONS.items()
    }


# --------------------------------------------------------------------------------------------
# Loading


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False):
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                f"duplicate key {key!r} at line {key_node.start_mark.line + 1}; "
                "each key may appear once per section"
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def _suggest(name: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _fmt_value(v: Any) -> str:
    return repr(list(v) if isinstance(v, tuple) else v)


def _env_overrides(env: Mapping[str, str]) -> list[tuple[str, str, Any, str, str]]:
    """``[(section, key, parsed value, raw text, variable name)]`` from override variables."""
    out = []
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX) or "__" not in var:
            continue
        section, _, key = var[len(ENV_PREFIX):].partition("__")
        section, key = section.lower(), key.lower()
        if section not in _SECTIONS:
            raise ConfigError(
                f"environment variable {var}: unknown section {section!r}"
                f"{_suggest(section, list(_SECTIONS))}; allowed sections: "
                + ", ".join(_SECTIONS)
            )
        raw = env[var]
        try:
            value = yaml.load(raw, Loader=_UniqueKeyLoader) if raw.strip() else None
        except yaml.YAMLError:
            # Not valid YAML on its own (e.g. "a: b: c"): take the text verbatim.
            value = raw
        if isinstance(value, dict):
            value = raw  # a 'key: value' looking string is meant literally
        out.append((section, key, value, raw, var))
    return out


def parse_config(data: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> Config:
    """Validate a parsed YAML mapping plus environment overrides into a :class:`Config`.

    Parameters
    ----------
    data : mapping or None
        The YAML document (``None`` or empty means all defaults).
    env : mapping, optional
        Environment; only ``ANCHORSTREAM_<SECTION>__<KEY>`` entries are read.

    Returns
    -------
    Config

    Raises
    ------
    ConfigError
        Naming the dotted key, the value received and what is allowed.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"the configuration must be a mapping of sections, got {type(data).__name__}"
        )
    # Section -> key -> (value, where it came from, raw environment text or None)
    raw: dict[str, dict[str, tuple[Any, str, str | None]]] = {name: {} for name in _SECTIONS}
    for section, values in data.items():
        if section not in _SECTIONS:
            raise ConfigError(
                f"unknown section {section!r}{_suggest(str(section), list(_SECTIONS))}; "
                "allowed sections: " + ", ".join(_SECTIONS)
            )
        if values is None:
            continue
        if not isinstance(values, Mapping):
            raise ConfigError(
                f"{section}: got {_fmt_value(values)}; allowed: a mapping of keys to values"
            )
        for key, value in values.items():
            raw[section][str(key)] = (value, "", None)
    for section, key, value, text, var in _env_overrides(env or {}):
        raw[section][key] = (value, f" (from environment variable {var})", text)

    sections = {}
    for name, cls in _SECTIONS.items():
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, (value, where, text) in raw[name].items():
            if key not in fields:
                raise ConfigError(
                    f"unknown key '{name}.{key}'{where}{_suggest(key, list(fields))}; "
                    f"allowed keys in '{name}': " + ", ".join(fields)
                )
            meta = fields[key].metadata
            try:
                try:
                    kwargs[key] = meta["check"](value)
                except _Invalid:
                    # An environment value is text; YAML may have read a password "123456" or a
                    # topic "2024" as a number. When the parsed value does not fit but the text
                    # does, the text is what was meant.
                    if text is None or isinstance(value, str):
                        raise
                    kwargs[key] = meta["check"](text)
            except _Invalid as exc:
                shown = exc.shown
                if shown is dataclasses.MISSING:
                    shown = "<redacted>" if meta["secret"] else _fmt_value(value)
                raise ConfigError(f"{name}.{key}{where}: got {shown}; allowed: {exc.allowed}") \
                    from None
        sections[name] = cls(**kwargs)
    config = Config(**sections)
    _check_consistency(config)
    return config


def _check_consistency(c: Config) -> None:
    """Rules that involve more than one key."""
    m = c.model
    if m.method != "anchor" and m.anchor_method in DOCUMENT_ANCHORS:
        raise ConfigError(
            f"model.anchor_method: got {m.anchor_method!r} with model.method={m.method!r}; "
            "allowed: 'qr' or 'fast' (ignored), because anchor finders apply only to "
            "model.method 'anchor' (set model.method: anchor to use the novel words "
            f"{m.anchor_method!r})"
        )
    if m.method == "tsvd" and m.tsvd_documents <= m.num_topics:
        raise ConfigError(
            f"model.tsvd_documents: got {m.tsvd_documents} with model.num_topics="
            f"{m.num_topics}; allowed: more documents than topics (TSVD clusters the "
            "documents into num_topics groups; thousands are usual)"
        )
    if m.needs_documents and m.random_state >= 2**62:
        raise ConfigError(
            f"model.random_state: got {m.random_state}; allowed: an integer < 2**62 with "
            f"model.method={m.method!r} and model.anchor_method={m.anchor_method!r} (it seeds "
            "the document statistics kept with the store)"
        )
    if m.rectify_dtype == "float32" and 0 < m.rectify_tol < 1e-6:
        raise ConfigError(
            f"model.rectify_tol: got {m.rectify_tol!r} with model.rectify_dtype='float32'; "
            "allowed: 0 or >= 1e-6 (a float32 iterate's own rounding is ~1e-7), or set "
            "model.rectify_dtype: float64 for tighter tolerances"
        )
    if m.supertopics and not m.supertopics < m.num_topics:
        raise ConfigError(
            f"model.supertopics: got {m.supertopics} with model.num_topics={m.num_topics}; "
            "allowed: 0 (off) or fewer supertopics than topics"
        )
    k = c.kafka
    sasl = k.security_protocol.startswith("SASL_")
    if sasl and k.sasl_mechanism is None:
        raise ConfigError(
            f"kafka.sasl_mechanism: got None with kafka.security_protocol={k.security_protocol!r};"
            " allowed: one of " + ", ".join(repr(m) for m in _SASL_MECHANISMS)
        )
    if sasl and (k.sasl_plain_username is None or k.sasl_plain_password is None):
        missing = "sasl_plain_username" if k.sasl_plain_username is None else "sasl_plain_password"
        raise ConfigError(
            f"kafka.{missing}: got None with kafka.security_protocol={k.security_protocol!r}; "
            f"allowed: the credential for SASL mechanism {k.sasl_mechanism!r}"
        )
    if (k.security_protocol == "SASL_PLAINTEXT" and k.sasl_mechanism == "PLAIN"
            and not k.allow_plaintext_sasl):
        raise ConfigError(
            "kafka.security_protocol: got 'SASL_PLAINTEXT' with kafka.sasl_mechanism='PLAIN', "
            "which sends the password in clear text; allowed: 'SASL_SSL', a SCRAM mechanism, or "
            "set kafka.allow_plaintext_sasl: true to accept the risk"
        )
    if k.heartbeat_interval_ms >= k.session_timeout_ms:
        raise ConfigError(
            f"kafka.heartbeat_interval_ms: got {k.heartbeat_interval_ms}; allowed: less than "
            f"kafka.session_timeout_ms ({k.session_timeout_ms})"
        )
    if k.max_batch_bytes is not None and k.max_batch_bytes < c.message.max_bytes:
        raise ConfigError(
            f"kafka.max_batch_bytes: got {k.max_batch_bytes}; allowed: null or at least "
            f"message.max_bytes ({c.message.max_bytes}), or a batch holding one message of "
            "an accepted size would be skipped"
        )
    if k.reconnect_backoff_max_ms < k.reconnect_backoff_ms:
        raise ConfigError(
            f"kafka.reconnect_backoff_max_ms: got {k.reconnect_backoff_max_ms}; allowed: at least "
            f"kafka.reconnect_backoff_ms ({k.reconnect_backoff_ms})"
        )
    for key in ("dead_letter_topic", "model_updates_topic"):
        topic = getattr(k, key)
        if topic is not None and topic in k.topics:
            # Consuming our own output would loop forever (a rejected message rejected again).
            raise ConfigError(
                f"kafka.{key}: got {topic!r}, which is also in kafka.topics; allowed: a topic "
                "the daemon does not consume"
            )
    s = c.store
    if s.shard_size is not None and s.shard_size % (s.chunk_size or 256) != 0:
        raise ConfigError(
            f"store.shard_size: got {s.shard_size}; allowed: a multiple of store.chunk_size "
            f"({s.chunk_size or '256, the default'})"
        )
    try:
        check_storage_options(s.path, None)
    except InputError as exc:
        raise ConfigError(f"store.path: {exc}") from None
    try:
        check_storage_options(s.path, s.storage_kwargs())
    except InputError as exc:
        raise ConfigError(f"store.storage_options (with store.path {s.path!r}): {exc}") from None
    if s.half_life_docs is not None and s.half_life_seconds is not None:
        raise ConfigError(
            f"store.half_life_seconds: got {s.half_life_seconds} while store.half_life_docs is "
            f"{s.half_life_docs}; allowed: at most one of the two"
        )
    if (s.window_docs is None) != (s.windows is None):
        missing = "windows" if s.windows is None else "window_docs"
        raise ConfigError(
            f"store.{missing}: got None; allowed: an integer >= 1, because store.window_docs and "
            "store.windows are set together"
        )
    if s.window_docs is not None and s.half_life_seconds is not None:
        # The store measures decay and windows in one unit (documents or seconds).
        raise ConfigError(
            f"store.half_life_seconds: got {s.half_life_seconds} with windows counted in "
            "documents (store.window_docs); allowed: store.half_life_docs together with "
            "windows, or no windows"
        )
    if c.model.num_topics >= c.vocab.capacity:
        raise ConfigError(
            f"model.num_topics: got {c.model.num_topics}; allowed: fewer than vocab.capacity "
            f"({c.vocab.capacity})"
        )
    if c.metrics.port != 0 and c.metrics.port == c.http.port:
        raise ConfigError(
            f"metrics.port: got {c.metrics.port}, the same as http.port; allowed: 0 (serve "
            "/metrics on the HTTP port) or a different port"
        )


def load_config(path: str | os.PathLike | None, env: Mapping[str, str] | None = os.environ
                ) -> Config:
    """Read ``path`` (YAML), apply ``ANCHORSTREAM_SECTION__KEY`` overrides from ``env``, validate.

    Parameters
    ----------
    path : path-like or None
        The YAML file; ``None`` uses the defaults (plus ``env``).
    env : mapping, optional
        The environment (default ``os.environ``); pass ``{}`` to ignore it.

    Returns
    -------
    Config

    Raises
    ------
    ConfigError
        For a missing or unreadable file, invalid YAML, unknown keys, bad values or inconsistent
        settings.
    """
    data = None
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                f"configuration file {str(path)!r} does not exist; pass --config with the path "
                "of a config.yaml (the repository root has a commented example)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read configuration file {str(path)!r}: {exc}") from None
        try:
            data = yaml.load(text, Loader=_UniqueKeyLoader)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(data, env)
