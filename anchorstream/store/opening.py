"""Creating and opening a writer: a new store's first commit, an existing store's last one.

A mixin of :class:`~anchorstream.store.CooccurrenceStore`, whose constructor takes what
:meth:`Opening._load` reads.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Self

import icechunk
import zarr

from anchorstream.errors import StoreConflictError, StoreError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.documents import GROUP as DOCSTATS_GROUP
from anchorstream.stats.documents import DocStatsSettings, DocumentStatistics
from anchorstream.store.delay import count_delay, count_delay_pairs, load_delay_line
from anchorstream.store.format import BRANCH, check_format, holds_store, initialize, load_arrays
from anchorstream.store import repository
from anchorstream.store.debris import clear_creation_debris
from anchorstream.store.repository import (
    await_creation,
    create_repository,
    open_repo,
    pass_through,
    remove_creation_debris,
    repo_exists,
    storage,
    storage_errors,
    wrap,
)
from anchorstream.store.settings import (
    RUNTIME_DEFAULTS,
    build_config,
    check_runtime,
    choose_docstats,
    requested_docstats,
    warn_other_settings,
)
from anchorstream.store.settings import length_cap as stored_length_cap
from anchorstream.text.vocabulary import MAX_DF_MIN_DOCS

__all__ = ["Opening"]

log = logging.getLogger("anchorstream.store")


def _initialized(repo: icechunk.Repository) -> bool:
    """Whether the repository's branch holds an anchorstream store (its first commit done)."""
    try:
        session = repo.readonly_session(branch=BRANCH)
    except Exception:  # noqa: BLE001 - no branch yet: no store
        return False
    return holds_store(session.store)


class Opening:
    """The constructors of :class:`~anchorstream.store.CooccurrenceStore` (a mixin)."""

    @classmethod
    def create(
        cls,
        url,
        *,
        capacity: int,
        chunk_size: int = 256,
        shard_size: int | None = None,
        admit_threshold: float = 5.0,
        sketch_size: int | None = None,
        max_df: float | None = None,
        max_df_min_docs: int = MAX_DF_MIN_DOCS,
        maintain_every: int = 1000,
        stopwords: Iterable[str] = (),
        seed: Sequence[str] = (),
        pin_seed: bool = True,
        blocked: Iterable[str] = (),
        forgetting: Forgetting | None = None,
        length_cap: float | None = 2,
        duplicate_memory: int = 0,
        count_delay: int = 0,
        count_delay_pairs: int | None = None,
        links: str = "keep",
        document_stats: DocStatsSettings | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **runtime,
    ) -> Self:
        """Create a new, empty store (its first commit holds the layout and the seed words).

        Parameters
        ----------
        url : str or path-like
        capacity : int
            Vocabulary capacity ``V`` (the matrix is ``V × V``).
        chunk_size, shard_size : int
            Zarr chunk (default 256) and shard (default ``8 × chunk_size``) edge lengths of the
            matrix; ``shard_size`` must be a multiple of ``chunk_size``.
        admit_threshold, sketch_size, max_df, max_df_min_docs, maintain_every, stopwords, seed, \
pin_seed, blocked
            Vocabulary settings, see :class:`~anchorstream.text.vocabulary.StreamingVocabulary`
            (``seed`` and ``blocked`` are its initial state, not settings).
        forgetting : Forgetting, optional
            Decay and windows; default none.
        length_cap : float or None, default 2
            How a document's word pairs are weighted
            (:func:`~anchorstream.stats.cooccurrence.pair_scale`): every pair the same up to a
            document of this many tokens, a longer document as much as that; 2 weighs every
            document the same, None every pair. Fixed for the store's life.
        duplicate_memory : int, default 0
            A document whose tokens repeat one of the last this many distinct documents is
            skipped (:class:`~anchorstream.text.duplicates.DuplicateFilter`; its memory is
            committed with the counts); 0 counts every copy. Fixed for the store's life. The
            daemon and ``anchorstream ingest`` create stores with
            :data:`~anchorstream.text.duplicates.DEFAULT_MEMORY`.
        count_delay : int, default 0
            Count each document this many documents after it arrived, so that words admitted
            meanwhile count in it (:mod:`anchorstream.store.delay`); the documents waiting are
            committed with the counts, and readers add them to the counted ones. Fixed for the
            store's life.
        count_delay_pairs : int, optional
            With ``count_delay``: the most word pairs (``n (n - 1) / 2`` of a document's ``n``
            tokens) the waiting documents hold together (the oldest leave early for a long
            one); None = no bound. Fixed for the store's life.
        links : {"keep", "drop"}, default "keep"
            Whether the writer's tokenizer removes links before the split
            (:class:`~anchorstream.text.tokenize.Tokenizer`): recorded, not applied here, so
            that a later ``anchorstream ingest`` tokenizes the same way and a writer that
            does not is warned (:func:`~anchorstream.store.settings.warn_other_settings`).
        document_stats : DocStatsSettings, optional
            Document statistics to keep (DDP, RP, TSVD); see :meth:`open`.
        storage_options : mapping, optional
            Keyword arguments of the Icechunk storage of ``url`` (region, endpoint_url,
            allow_http, anonymous, ...; see :mod:`anchorstream.store.location`); credentials come
            from the environment by default. Not stored: pass them to every open and read.
        **runtime
            Runtime options (see the class notes).

        Raises
        ------
        InputError
            For invalid settings, an unsupported URL or storage options it does not take.
        StoreError
            If something already exists at ``url``, or it cannot be written.
        """
        settings = {
            "capacity": capacity, "chunk_size": chunk_size, "shard_size": shard_size,
            "admit_threshold": admit_threshold, "sketch_size": sketch_size, "max_df": max_df,
            "max_df_min_docs": max_df_min_docs, "maintain_every": maintain_every,
            "stopwords": stopwords, "seed": seed, "pin_seed": pin_seed, "blocked": blocked,
            "forgetting": forgetting, "length_cap": length_cap,
            "duplicate_memory": duplicate_memory, "count_delay": count_delay,
            "count_delay_pairs": count_delay_pairs, "links": links,
        }
        meta, vocab, forgetting = build_config(**settings)
        check_runtime(runtime)
        document_stats = requested_docstats(document_stats, None)
        repo, target = create_repository(
            url, storage_options,
            lambda repo: initialize(repo, meta, vocab, forgetting, document_stats))
        store = cls._load(repo, url, target, runtime, document_stats)
        store._check_history = False  # a new store has no earlier writers' commits
        return store

    @classmethod
    def open(cls, url, *, document_stats: DocStatsSettings | None = None,
             storage_options: Mapping[str, Any] | None = None,
             **runtime) -> Self:
        """Open an existing store for writing, at its last commit.

        Parameters
        ----------
        url : str or path-like
        document_stats : DocStatsSettings or callable, optional
            The document statistics to keep from now on. None (default) keeps what the store
            keeps. Other settings than the stored ones (``DocStatsSettings()`` for none) drop
            the stored statistics at the next checkpoint and start new ones from the current
            document on (logged as a warning); a reader sees their ``since_docs``. A function
            is given the stored settings (``DocStatsSettings()`` for none; ``None`` when the
            store is created) and returns those to keep
            (:func:`~anchorstream.store.settings.auto_windows`).
        storage_options : mapping, optional
            See :meth:`create`.
        **runtime
            Runtime options (see the class notes).

        Raises
        ------
        StoreError
            If there is no store or it cannot be read.
        StoreFormatError
            If it is not an anchorstream store or has another format version.
        InputError
            For an unsupported URL or storage options it does not take.
        """
        check_runtime(runtime)
        repo, local = open_repo(url, storage_options)
        return cls._load(repo, url, local, runtime, document_stats)

    @classmethod
    def open_or_create(cls, url, *, document_stats: DocStatsSettings | None = None,
                       storage_options: Mapping[str, Any] | None = None,
                       defaulted: Collection[str] = (), **kwargs) -> Self:
        """Open the store at ``url`` if there is one, else :meth:`create` it with ``kwargs``.

        An Icechunk repository whose anchorstream initialization never committed (a creation
        interrupted on an object store) is initialized. Settings other than the runtime options
        do not apply when the store exists: the stored ones do, and those that differ from the
        ones given (capacity, chunking, vocabulary settings such as ``stopwords`` and
        ``max_df``, forgetting) are logged as a warning, except those named in ``defaulted``
        (defaults that nobody asked for, such as a ``count_delay`` chosen by ``auto``). A
        store that recorded no stopwords (one made by ``anchorstream ingest`` before it
        recorded its list) is not checked for them.
        """
        backend, local = storage(url, storage_options)
        if local is not None:
            remove_creation_debris(local)
        if not repo_exists(backend, url):
            created = cls._create_or_join(url, backend, local, document_stats, storage_options,
                                          kwargs)
            if created is not None:
                return created
        runtime = {k: kwargs.pop(k) for k in list(kwargs) if k in RUNTIME_DEFAULTS}
        repo, local = open_repo(url, storage_options)
        if not _initialized(repo) and sum(1 for _ in repo.ancestry(branch=BRANCH)) <= 1:
            # Nothing but Icechunk's own first commit: our initialization never happened.
            meta, vocab, forgetting = build_config(**kwargs)
            document_stats = requested_docstats(document_stats, None)
            try:
                initialize(repo, meta, vocab, forgetting, document_stats)
            except BaseException as exc:
                pass_through(exc)
                error = wrap(exc, f"cannot initialize store {os.fspath(url)!r}")
                # Refused because another process initialized it first: that one counts.
                if not (isinstance(error, StoreConflictError) and _initialized(repo)):
                    raise error from exc
        store = cls._load(repo, url, local, runtime, document_stats)
        warn_other_settings(store._meta["config"],
                            {k: v for k, v in kwargs.items() if k not in defaulted}, store.url)
        return store

    @classmethod
    def _create_or_join(cls, url, backend, local, document_stats, storage_options,
                        kwargs) -> Self | None:
        """:meth:`create`; on an object store where another process is creating the same
        store (two instances given one partition), None once its repository exists (open
        it); where a killed creation left objects and no repository, those are removed
        (:func:`~anchorstream.store.debris.clear_creation_debris`) and the creation retried."""
        for attempt in range(2):
            try:
                return cls.create(url, document_stats=document_stats,
                                  storage_options=storage_options, **kwargs)
            except StoreError as exc:
                raced = isinstance(exc, StoreConflictError) or any(
                    m in str(exc) for m in ("clean prefix", "branch update conflict"))
                if local is not None or not raced:
                    raise
                outcome = await_creation(backend, url, lambda: clear_creation_debris(
                    url, storage_options, min_age=repository.CREATION_WAIT_SECONDS))
                if outcome == "exists":
                    log.info("store %s was created by another process meanwhile: opening it",
                             url)
                    return None
                if outcome == "stuck" or attempt:
                    raise StoreError(
                        f"cannot create a store at {os.fspath(url)!r}: its prefix holds "
                        "objects but no repository, and none appeared meanwhile: what a "
                        "creation interrupted there (a process killed while creating the "
                        "store) left, which could not be removed here. Nothing was committed "
                        f"to it: remove every object under that prefix and start again ({exc})"
                    ) from exc
        return None  # not reached: the second attempt returns or raises

    @classmethod
    def _load(cls, repo: icechunk.Repository, url, local, runtime,
              document_stats=None) -> Self:
        where = os.fspath(url)
        with storage_errors(f"cannot open store {where!r}"):
            session = repo.readonly_session(branch=BRANCH)
            root = zarr.open_group(session.store, mode="r")
            meta = check_format(root.attrs, where)
            attrs = {"state": root.attrs["state"], "offsets": root.attrs["offsets"],
                     "maintenance": root.attrs.get("maintenance"),
                     "duplicates": root.attrs.get("duplicates")}
            arrays = load_arrays(root, session.snapshot_id)
            arrays["delay"] = load_delay_line(root, count_delay(meta["config"]),
                                              count_delay_pairs(meta["config"]))
            stored = None
            if DOCSTATS_GROUP in root:
                stored = DocumentStatistics.load(
                    root[DOCSTATS_GROUP], meta["config"]["capacity"],
                    Forgetting.from_dict(meta["config"]["forgetting"]),
                    stored_length_cap(meta["config"]))
        docstats = choose_docstats(stored, document_stats, meta,
                                   attrs["state"]["n_docs_added"], where)
        return cls(repo, url, local, meta, attrs, arrays, dict(runtime), docstats)
