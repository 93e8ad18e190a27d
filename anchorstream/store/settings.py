"""A store's settings: the stored configuration, the runtime options and their checks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from anchorstream.errors import InputError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import cap_pairs
from anchorstream.stats.documents import DocStatsSettings, DocumentStatistics
from anchorstream.store.delay import check_count_delay, check_count_delay_pairs
from anchorstream.store.delay import count_delay as stored_count_delay
from anchorstream.store.delay import count_delay_pairs as stored_count_delay_pairs
from anchorstream.store.format import FORMAT_VERSION, VOCAB_SETTINGS
from anchorstream.text.duplicates import DuplicateFilter
from anchorstream.text.links import LINKS
from anchorstream.text.tokenize import shipped_list_name
from anchorstream.text.vocabulary import MAX_DF_MIN_DOCS, StreamingVocabulary
from anchorstream.text.windows import WINDOWS_AUTO_SIZE

__all__ = [
    "RUNTIME_DEFAULTS",
    "build_config",
    "check_runtime",
    "choose_docstats",
    "duplicate_memory",
    "length_cap",
    "links",
    "stopwords_label",
    "vocabulary_of",
    "warn_other_settings",
]

log = logging.getLogger("anchorstream.store")

#: Runtime options of a writer (not stored; see CooccurrenceStore) and their defaults.
RUNTIME_DEFAULTS = {
    "budget_bytes": 256 * 2**20,
    "compact_bytes": 256 * 2**20,
    "max_segments": 64,
    "compact_step_seconds": 0.5,
    "keep_versions": 3,
    "gc_every": 20,
    "gc_interval_seconds": 3600.0,
    "gc_min_age": 60.0,
}


def check_runtime(runtime: Mapping) -> None:
    """Refuse unknown runtime options and values that are not numbers >= 0."""
    for key, value in runtime.items():
        if key not in RUNTIME_DEFAULTS:
            known = sorted(RUNTIME_DEFAULTS)
            raise InputError(f"unknown store option {key!r}; known: {known}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InputError(f"store option {key} must be a number >= 0, got {value!r}")
    if runtime.get("keep_versions", 1) < 1:
        raise InputError("keep_versions must be >= 1")


def length_cap(config: Mapping) -> float | None:
    """A store's document weighting (:func:`~anchorstream.stats.cooccurrence.pair_scale`); stores
    made before it was a setting weigh every document the same (2)."""
    return config.get("length_cap", 2)


def duplicate_memory(config: Mapping) -> int:
    """How many distinct documents a store remembers to skip repeats of
    (:class:`~anchorstream.text.duplicates.DuplicateFilter`); stores made before it was a
    setting count every copy (0)."""
    return int(config.get("duplicate_memory", 0))


def links(config: Mapping) -> str:
    """What the store's documents were tokenized with: ``"drop"`` where their links were
    removed before the split (:class:`~anchorstream.text.tokenize.Tokenizer`); stores made
    before it was a setting kept them (``"keep"``)."""
    return config.get("links", "keep")


def stopwords_label(config: Mapping) -> str:
    """The stopword list the store was created with, in brief: a shipped list's name,
    ``"none"`` (also for stores made before the list was recorded), or ``"N words"``."""
    words = config["vocabulary"].get("stopwords") or ()
    if not words:
        return "none"
    return shipped_list_name(words) or f"{len(words)} words"


def vocabulary_of(config: Mapping) -> StreamingVocabulary:
    """An empty vocabulary with a stored configuration's settings."""
    vcfg = config["vocabulary"]
    return StreamingVocabulary(int(config["capacity"]), **{k: vcfg[k] for k in VOCAB_SETTINGS})


def warn_other_settings(config: Mapping, requested: Mapping, where: str) -> None:
    """Log the settings of ``requested`` (``create`` keywords) that differ from the stored ones.

    They do not apply to an existing store; a silent difference would let an operator believe
    that a changed ``capacity`` or stopword list took effect. Stopwords are compared only when
    the store recorded some: ``anchorstream ingest`` filters them in its tokenizer and gives the
    store none, so an empty stored list says nothing.
    """
    vocab = config["vocabulary"]
    stored = {"capacity": config["capacity"], "chunk_size": config["chunk_size"],
              "shard_size": config["shard_size"], **vocab,
              "forgetting": Forgetting.from_dict(config["forgetting"]).to_dict(),
              "length_cap": length_cap(config), "duplicate_memory": duplicate_memory(config),
              "count_delay": stored_count_delay(config),
              "count_delay_pairs": stored_count_delay_pairs(config)}
    have_links, want_links = links(config), requested.get("links")
    if want_links is not None and want_links != have_links:
        # The tokenizer, not the store, removes links: what is asked for applies from now on.
        log.warning(
            "store %s was counted with links %r; documents added from now on are tokenized "
            "with links %r, so its counts mix the two tokenizations (build a new store to "
            "change it)", where, have_links, want_links)
    diffs = []
    for key, value in requested.items():
        if key == "links":
            continue
        if key not in stored or value is None and key in ("shard_size", "sketch_size"):
            continue  # not a stored setting (seed), or "the default", which depends on others
        have = stored[key]
        if key == "stopwords":
            if isinstance(value, str) or not have:
                continue
            want = set(value)
            added, removed = sorted(want - set(have)), sorted(set(have) - want)
            if added or removed:
                diffs.append(
                    f"stopwords (the store never counts its {len(have)}; asked for "
                    f"{len(added)} more {added[:5]}, {len(removed)} fewer {removed[:5]})")
            continue
        if key == "forgetting":
            if isinstance(value, Forgetting) or value is None:
                value = (value if value is not None else Forgetting()).to_dict()
        if value != have:
            diffs.append(f"{key} {have!r} (asked for {value!r})")
    if diffs:
        log.warning(
            "store %s exists and keeps the settings it was created with, not the ones asked "
            "for: %s. Documents added from now on are counted under the stored settings; to "
            "change them, build a new store (e.g. anchorstream ingest, or replay the topic)",
            where, "; ".join(diffs))


def build_config(
    capacity, chunk_size=256, shard_size=None, admit_threshold=5.0, sketch_size=None,
    max_df=None, max_df_min_docs=MAX_DF_MIN_DOCS, maintain_every=1000, stopwords=(), seed=(),
    pin_seed=True, forgetting=None, length_cap=2, blocked=(), duplicate_memory=0,
    count_delay=0, count_delay_pairs=None, links="keep",
) -> tuple[dict, StreamingVocabulary, Forgetting]:
    """Validated store metadata, the initial vocabulary and the forgetting settings."""
    if links not in LINKS:
        raise InputError(f"links must be one of {', '.join(LINKS)}, got {links!r}")
    cap_pairs(length_cap)  # validates
    count_delay = check_count_delay(count_delay)
    count_delay_pairs = check_count_delay_pairs(count_delay_pairs)
    DuplicateFilter(duplicate_memory)  # validates
    if shard_size is None:
        shard_size = 8 * chunk_size if isinstance(chunk_size, int) else chunk_size
    for name, value in (("chunk_size", chunk_size), ("shard_size", shard_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be a positive int, got {value!r}")
    if shard_size % chunk_size:
        raise InputError(
            f"shard_size ({shard_size}) must be a multiple of chunk_size ({chunk_size})"
        )
    forgetting = forgetting if forgetting is not None else Forgetting()
    if not isinstance(forgetting, Forgetting):
        raise InputError(f"forgetting must be a Forgetting, got {type(forgetting).__name__}")
    vocab = StreamingVocabulary(
        capacity, admit_threshold=admit_threshold, sketch_size=sketch_size, max_df=max_df,
        max_df_min_docs=max_df_min_docs, maintain_every=maintain_every, stopwords=stopwords,
        seed=seed, pin_seed=pin_seed, blocked=blocked,
    )
    vcfg = vocab.config()
    del vcfg["capacity"]
    meta = {
        "format_version": FORMAT_VERSION,
        "config": {
            "capacity": int(capacity),
            "chunk_size": int(chunk_size),
            "shard_size": int(shard_size),
            "vocabulary": vcfg,
            "forgetting": forgetting.to_dict(),
            "length_cap": None if length_cap is None else float(length_cap),
            "duplicate_memory": int(duplicate_memory),
            "count_delay": count_delay,
            "count_delay_pairs": count_delay_pairs,
            "links": links,
        },
    }
    return meta, vocab, forgetting


def auto_windows(requested: DocStatsSettings, window: int = WINDOWS_AUTO_SIZE
                 ) -> Callable[[DocStatsSettings | None], DocStatsSettings]:
    """The ``document_stats`` of a store opened with ``refine_window: auto``: ``requested``
    with the pairs of windows of ``window`` tokens for a new store; an existing one keeps the
    windows it keeps (none, or their size) while its other statistics stay as they are.

    The result is a function of the settings the store keeps (``None`` for a new store,
    ``DocStatsSettings()`` for one keeping none), as :meth:`CooccurrenceStore.open
    <anchorstream.store.CooccurrenceStore.open>` takes it: starting windows in an existing
    store would count them from the next document only, and changing any statistic restarts
    them all (their earlier documents are not kept), so ``auto`` adds windows only where the
    statistics start anyway.

    >>> choose = auto_windows(DocStatsSettings())
    >>> choose(None).pair_window, choose(DocStatsSettings()).pair_window
    (24, 0)
    >>> choose(DocStatsSettings(pair_window=12)).pair_window
    12
    >>> auto_windows(DocStatsSettings(reservoir=10))(DocStatsSettings()).pair_window
    24
    """
    window = int(window)

    def choose(stored: DocStatsSettings | None) -> DocStatsSettings:
        if stored is not None:
            kept = replace(requested, pair_window=stored.pair_window)
            if kept == stored or not (kept.enabled or stored.enabled):
                return kept
        return replace(requested, pair_window=window)

    return choose


def requested_docstats(document_stats, stored):
    """The settings ``document_stats`` asks for, given those a store keeps (``stored``:
    ``None`` for a new store, ``DocStatsSettings()`` for one keeping none): itself, or what a
    function of them returns (:func:`~anchorstream.store.settings.auto_windows`)."""
    return document_stats(stored) if callable(document_stats) else document_stats


def choose_docstats(stored, requested, meta, n_docs_added: int, where: str):
    """``(DocumentStatistics or None, drop the committed group?)`` for a writer."""
    requested = requested_docstats(
        requested, stored.settings if stored is not None else DocStatsSettings())
    if requested is None or (stored is not None and stored.settings == requested):
        return stored, False
    if not isinstance(requested, DocStatsSettings):
        raise InputError(
            f"document_stats must be a DocStatsSettings or None, got {type(requested).__name__}")
    if stored is not None:
        log.warning(
            "store %s keeps document statistics %s; %s were asked for: the stored ones are "
            "dropped at the next checkpoint and new ones count documents from %d on",
            where, stored.settings.to_dict(), requested.to_dict(), n_docs_added)
    if not requested.enabled:
        return None, stored is not None
    cfg = meta["config"]
    fresh = DocumentStatistics(requested, cfg["capacity"],
                               Forgetting.from_dict(cfg["forgetting"]),
                               since_docs=int(n_docs_added), length_cap=length_cap(cfg))
    return fresh, stored is not None
