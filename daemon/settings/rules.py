"""Rules that involve more than one key, one small function each.

A rule takes a section whose values are valid (or, for the rules between sections, the whole
:class:`~daemon.settings.Config`) and returns the message of its violation, worded like a bad
value (``<section>.<key>: got ...; allowed: ...``), or None. :func:`check` runs a section's
rules and raises one pydantic error carrying every violated rule's message, so that they join
the report of bad values (:func:`daemon.settings.loading.report`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from pydantic_core import PydanticCustomError

from anchorstream.errors import InputError
from anchorstream.model.registry import DOCUMENT_ANCHORS
from anchorstream.store.location import check_storage_options, parse_store_url

Rule = Callable[[Any], "str | None"]

# Mechanisms that need only a user name and password; GSSAPI/OAUTHBEARER/AWS_MSK_IAM need
# client-side plumbing (Kerberos, token providers) the daemon does not offer yet.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def check(rules: Iterable[Rule], subject: Any) -> None:
    """Raise one ``config_rules`` error listing the messages of the rules ``subject`` breaks."""
    messages = [m for m in (rule(subject) for rule in rules) if m is not None]
    if messages:
        raise PydanticCustomError("config_rules", "{messages}", {"messages": messages})


# --------------------------------------------------------------------------------------------
# model


def anchors_need_method_anchor(m) -> str | None:
    if m.method != "anchor" and m.anchor_method in DOCUMENT_ANCHORS:
        return (f"model.anchor_method: got {m.anchor_method!r} with model.method={m.method!r}; "
                "allowed: 'qr' or 'fast' (ignored), because anchor finders apply only to "
                "model.method 'anchor' (set model.method: anchor to use the novel words "
                f"{m.anchor_method!r})")
    return None


def tsvd_needs_more_documents_than_topics(m) -> str | None:
    if m.method == "tsvd" and m.tsvd_documents <= m.num_topics:
        return (f"model.tsvd_documents: got {m.tsvd_documents} with model.num_topics="
                f"{m.num_topics}; allowed: more documents than topics (TSVD clusters the "
                "documents into num_topics groups; thousands are usual)")
    return None


def document_seed_fits(m) -> str | None:
    if anchors_need_method_anchor(m) is not None:
        return None  # the registry has no entry for that combination: reported above
    if m.needs_documents and m.random_state >= 2**62:
        return (f"model.random_state: got {m.random_state}; allowed: an integer < 2**62 with "
                f"model.method={m.method!r} and model.anchor_method={m.anchor_method!r} (it "
                "seeds the document statistics kept with the store)")
    return None


def float32_tolerance(m) -> str | None:
    if m.rectify_dtype == "float32" and 0 < m.rectify_tol < 1e-6:
        return (f"model.rectify_tol: got {m.rectify_tol!r} with model.rectify_dtype='float32'; "
                "allowed: 0 or >= 1e-6 (a float32 iterate's own rounding is ~1e-7), or set "
                "model.rectify_dtype: float64 for tighter tolerances")
    return None


def fewer_supertopics_than_topics(m) -> str | None:
    if m.supertopics and not m.supertopics < m.num_topics:
        return (f"model.supertopics: got {m.supertopics} with model.num_topics={m.num_topics}; "
                "allowed: 0 (off) or fewer supertopics than topics")
    return None


MODEL = (anchors_need_method_anchor, tsvd_needs_more_documents_than_topics, document_seed_fits,
         float32_tolerance, fewer_supertopics_than_topics)


# --------------------------------------------------------------------------------------------
# kafka


def sasl_credentials(k) -> str | None:
    """SASL needs a mechanism, then the user name and password it sends."""
    if not k.security_protocol.startswith("SASL_"):
        return None
    if k.sasl_mechanism is None:
        return (f"kafka.sasl_mechanism: got None with kafka.security_protocol="
                f"{k.security_protocol!r}; allowed: one of "
                + ", ".join(repr(m) for m in SASL_MECHANISMS))
    if k.sasl_plain_username is None or k.sasl_plain_password is None:
        missing = "sasl_plain_username" if k.sasl_plain_username is None else "sasl_plain_password"
        return (f"kafka.{missing}: got None with kafka.security_protocol="
                f"{k.security_protocol!r}; allowed: the credential for SASL mechanism "
                f"{k.sasl_mechanism!r}")
    return None


def no_clear_text_password(k) -> str | None:
    if (k.security_protocol == "SASL_PLAINTEXT" and k.sasl_mechanism == "PLAIN"
            and not k.allow_plaintext_sasl):
        return ("kafka.security_protocol: got 'SASL_PLAINTEXT' with kafka.sasl_mechanism="
                "'PLAIN', which sends the password in clear text; allowed: 'SASL_SSL', a SCRAM "
                "mechanism, or set kafka.allow_plaintext_sasl: true to accept the risk")
    return None


def heartbeat_within_session(k) -> str | None:
    if k.heartbeat_interval_ms >= k.session_timeout_ms:
        return (f"kafka.heartbeat_interval_ms: got {k.heartbeat_interval_ms}; allowed: less "
                f"than kafka.session_timeout_ms ({k.session_timeout_ms})")
    return None


def reconnect_backoff_order(k) -> str | None:
    if k.reconnect_backoff_max_ms < k.reconnect_backoff_ms:
        return (f"kafka.reconnect_backoff_max_ms: got {k.reconnect_backoff_max_ms}; allowed: at "
                f"least kafka.reconnect_backoff_ms ({k.reconnect_backoff_ms})")
    return None


def _not_consumed(key: str) -> Rule:
    """The rule that topic ``kafka.<key>`` is not one the daemon consumes."""
    def rule(k) -> str | None:
        topic = getattr(k, key)
        if topic is not None and topic in k.topics:
            # Consuming our own output would loop forever (a rejected message rejected again).
            return (f"kafka.{key}: got {topic!r}, which is also in kafka.topics; allowed: a "
                    "topic the daemon does not consume")
        return None

    rule.__name__ = f"{key}_not_consumed"
    return rule


KAFKA = (sasl_credentials, no_clear_text_password, heartbeat_within_session,
         reconnect_backoff_order, _not_consumed("dead_letter_topic"),
         _not_consumed("model_updates_topic"))


# --------------------------------------------------------------------------------------------
# store


def shards_hold_whole_chunks(s) -> str | None:
    if s.shard_size is not None and s.shard_size % (s.chunk_size or 256) != 0:
        return (f"store.shard_size: got {s.shard_size}; allowed: a multiple of store.chunk_size "
                f"({s.chunk_size or '256, the default'})")
    return None


def storage_takes_the_options(s) -> str | None:
    """The store's own check of the URL, then of the options for that URL."""
    try:
        check_storage_options(s.path, None)
    except InputError as exc:
        return f"store.path: {exc}"
    try:
        check_storage_options(s.path, s.storage_kwargs())
    except InputError as exc:
        return f"store.storage_options (with store.path {s.path!r}): {exc}"
    return None


def one_half_life(s) -> str | None:
    if s.half_life_docs is not None and s.half_life_seconds is not None:
        return (f"store.half_life_seconds: got {s.half_life_seconds} while store.half_life_docs "
                f"is {s.half_life_docs}; allowed: at most one of the two")
    return None


def windows_set_together(s) -> str | None:
    if (s.window_docs is None) != (s.windows is None):
        missing = "windows" if s.windows is None else "window_docs"
        return (f"store.{missing}: got None; allowed: an integer >= 1, because "
                "store.window_docs and store.windows are set together")
    return None


def windows_count_documents(s) -> str | None:
    if s.window_docs is not None and s.half_life_seconds is not None:
        # The store measures decay and windows in one unit (documents or seconds).
        return (f"store.half_life_seconds: got {s.half_life_seconds} with windows counted in "
                "documents (store.window_docs); allowed: store.half_life_docs together with "
                "windows, or no windows")
    return None


STORE = (shards_hold_whole_chunks, storage_takes_the_options, one_half_life,
         windows_set_together, windows_count_documents)


# --------------------------------------------------------------------------------------------
# between sections (on the whole Config)


def batch_holds_a_message(c) -> str | None:
    k = c.kafka
    if k.max_batch_bytes is not None and k.max_batch_bytes < c.message.max_bytes:
        return (f"kafka.max_batch_bytes: got {k.max_batch_bytes}; allowed: null or at least "
                f"message.max_bytes ({c.message.max_bytes}), or a batch holding one message of "
                "an accepted size would be skipped")
    return None


def fewer_topics_than_words(c) -> str | None:
    if c.model.num_topics >= c.vocab.capacity:
        return (f"model.num_topics: got {c.model.num_topics}; allowed: fewer than "
                f"vocab.capacity ({c.vocab.capacity})")
    return None


def metrics_port_differs(c) -> str | None:
    if c.metrics.port != 0 and c.metrics.port == c.http.port:
        return (f"metrics.port: got {c.metrics.port}, the same as http.port; allowed: 0 (serve "
                "/metrics on the HTTP port) or a different port")
    return None


def partitions_sum_plain_counts(c) -> str | None:
    """Partition stores are summed when read: a decay in seconds sums exactly (every
    partition brought to the latest clock); forgetting counted in documents does not (each
    partition's document count is its own clock). Document statistics combine
    (anchorstream.store.partdocs)."""
    s = c.store
    if s.layout != "partitioned":
        return None
    forgetting = [k for k in ("half_life_docs", "window_docs", "windows")
                  if getattr(s, k) is not None]
    if forgetting:
        return (f"store.{forgetting[0]}: got {getattr(s, forgetting[0])} with store.layout "
                "partitioned; allowed: null, because partition stores are summed and each "
                "partition counts its own documents (a half-life or window in documents "
                "would forget at every partition's own pace); store.half_life_seconds is "
                "allowed")
    return None


def store_and_snapshots_apart(c) -> str | None:
    """A local store and the snapshot directory must not be one directory, nor one inside the
    other: the store is created only in an empty directory, and the publisher's version
    directories and retention would work among the store's files (or the reverse)."""
    try:
        url = parse_store_url(c.store.path)
    except InputError:
        return None  # the store section's own check names it
    if url.scheme != "local":
        return None
    store = os.path.realpath(url.path)
    snaps = os.path.realpath(os.path.abspath(c.snapshots.path))
    inside = os.path.commonpath([store, snaps]) in (store, snaps)
    if inside:
        return (f"snapshots.path: got {c.snapshots.path!r} with store.path "
                f"{c.store.path!r}; allowed: a directory apart from the store's, neither the "
                "same nor one inside the other (the store's files and the published versions "
                "would mix)")
    return None


def admission_correction_without_delay(c) -> str | None:
    """The admission correction (vocab.admission_min_share < 1) divides a word's counts by
    the share of its documents counted since its admission; with a delay line the documents
    still waiting at the admission were counted too, so it would over-correct (the store's
    reads report no admissions there: anchorstream.store.format.read_admission)."""
    share, delay = c.vocab.admission_min_share, c.store.count_delay
    if share < 1 and delay != 0:
        return (f"vocab.admission_min_share: got {share} with store.count_delay {delay!r}; "
                "allowed: 1 (no correction), or set store.count_delay: 0, because the "
                "documents a delay line held back when a word was admitted counted it, which "
                "the correction assumes they did not")
    return None


CONFIG = (batch_holds_a_message, fewer_topics_than_words, metrics_port_differs,
          partitions_sum_plain_counts, store_and_snapshots_apart,
          admission_correction_without_delay)
