"""Opening and creating the Icechunk repository behind a store, and its storage errors."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import icechunk

from anchorstream.errors import StoreConflictError, StoreError, StoreFormatError
from anchorstream.fsutil import SNAPSHOT, kind_of_directory
from anchorstream.store.location import icechunk_storage

__all__ = [
    "CREATION_WAIT_SECONDS",
    "await_creation",
    "configure_logging",
    "create_repository",
    "disk_bytes",
    "open_repo",
    "pass_through",
    "remove_creation_debris",
    "repository_config",
    "repo_exists",
    "storage",
    "storage_errors",
    "wrap",
]

#: Icechunk's log filter set by :func:`configure_logging`.
LOG_FILTER = "warn,icechunk::storage::object_store=error"
_MEMORY: dict[str, icechunk.Storage] = {}


def repository_config() -> icechunk.RepositoryConfig:
    """How every store's repository is opened: without Icechunk's manifest preloading.

    By default a session starts loading, in the background, the manifests of arrays whose
    names look like coordinates (``times``, the delay line's, among them). A store reads
    what it needs when it needs it, and on a local disk the preload held up the next
    session's first read by 3-25 ms (a `/tmp` loop of sessions on a refresh benchmark's
    store, session 79; 0.2-0.7 ms with it off): a warm refresh's read 50-54 → 42-45 ms."""
    return icechunk.RepositoryConfig(manifest=icechunk.ManifestConfig(
        preload=icechunk.ManifestPreloadConfig(max_total_refs=0)))


def configure_logging(environ: Mapping[str, str] | None = None) -> None:
    """Quiet Icechunk's warning, on every open of a local store, that it does not arbitrate
    concurrent commits, unless ``ICECHUNK_LOG`` is set in ``environ`` (default
    ``os.environ``), which brings Icechunk's own filters back.

    A store has one writer by design (see ``CooccurrenceStore``), so the line is noise in
    every command. Called once where a process starts (the ``anchorstream`` command).
    """
    if "ICECHUNK_LOG" not in (os.environ if environ is None else environ):
        icechunk.set_logs_filter(LOG_FILTER)


def storage(url: str | os.PathLike, storage_options: Mapping[str, Any] | None = None
            ) -> tuple[icechunk.Storage, str | None]:
    """Icechunk storage for a URL, and the local directory when there is one.

    See :mod:`anchorstream.store.location` for the URL forms and ``storage_options``. A local
    path that is a file is refused here (StoreError): Icechunk panics on it.
    """
    store, local = icechunk_storage(url, storage_options, memory=_MEMORY)
    if local is not None and os.path.exists(local) and not os.path.isdir(local):
        raise StoreError(f"{local!r} is a file, not a store directory")
    return store, local


def wrap(exc: BaseException, what: str) -> StoreError:
    """A storage failure as a :class:`StoreError` saying ``what`` failed.

    A commit refused because the branch moved (Icechunk's ``ConflictError``), or a writer
    that found it stale, is a :class:`StoreConflictError`."""
    if isinstance(exc, (icechunk.ConflictError, StoreConflictError)):
        return StoreConflictError(f"{what}: another writer committed first: {_message(exc)}")
    return StoreError(f"{what}: {type(exc).__name__}: {_message(exc)}")


def _message(exc: BaseException) -> str:
    """The first line of ``exc``'s message: Icechunk's errors go on with a span trace
    (``  x snapshot not found: `...`\n  | context: ...``), which the chained exception keeps
    for a log's traceback."""
    lines = str(exc).strip().splitlines()
    first = lines[0].strip() if lines else ""
    return (first[2:] if first.startswith("x ") else first) or type(exc).__name__


def pass_through(exc: BaseException) -> None:
    """Re-raise what is not a storage failure (Ctrl-C, exit); Icechunk's Rust panics are one.

    A panic surfaces as ``pyo3_runtime.PanicException``, a ``BaseException`` (not importable
    before the first panic, hence the check by name).
    """
    if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
        raise exc


@contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Inside the block, a storage failure becomes a :class:`StoreError` saying ``what``
    failed (:func:`wrap`); the store's own errors and what is not a failure
    (:func:`pass_through`) go through as they are."""
    try:
        yield
    except (StoreFormatError, StoreError):
        raise
    except BaseException as exc:
        pass_through(exc)
        raise wrap(exc, what) from exc


def repo_exists(store: icechunk.Storage, url) -> bool:
    """Whether an Icechunk repository is at ``store`` (``url`` names it in errors)."""
    try:
        return icechunk.Repository.exists(store)
    except BaseException as exc:
        pass_through(exc)
        raise wrap(exc, f"cannot reach store {os.fspath(url)!r}") from exc


#: How long a creation that found a prefix written and no repository waits for another
#: process's creation there to finish; objects older than this with no repository are what a
#: creation interrupted left (:func:`anchorstream.store.debris.clear_creation_debris`).
CREATION_WAIT_SECONDS = 30.0


def await_creation(store: icechunk.Storage, url, clear) -> str:
    """After a creation found the prefix written: ``"exists"`` once a repository appears,
    ``"cleared"`` once ``clear()`` removed what an interrupted creation left (create again),
    ``"stuck"`` if neither happened within twice :data:`CREATION_WAIT_SECONDS`.

    An object store has no rename: Icechunk creates a repository in place, writing its first
    snapshot, then its branch. A creation that finds the prefix written and no repository is
    either racing another process's creation (the branch follows within moments) or found
    what a creation interrupted between the two left, which stays until removed.
    """
    end = time.monotonic() + 2.0 * CREATION_WAIT_SECONDS
    while True:
        if repo_exists(store, url):
            return "exists"
        if clear():
            return "cleared"
        if time.monotonic() >= end:
            return "stuck"
        time.sleep(1.0)


def open_repo(url, storage_options: Mapping[str, Any] | None = None
              ) -> tuple[icechunk.Repository, str | None]:
    """The repository at ``url`` and its local directory (None on an object store)."""
    store, local = storage(url, storage_options)
    if not repo_exists(store, url):
        if local is not None and os.path.isdir(local) and os.listdir(local):
            raise StoreFormatError(f"{local!r} exists but is not an Icechunk repository"
                                   + _what_it_is(local))
        raise StoreError(f"no store at {os.fspath(url)!r}")
    try:
        return icechunk.Repository.open(store, config=repository_config()), local
    except BaseException as exc:
        pass_through(exc)
        raise wrap(exc, f"cannot open store {os.fspath(url)!r}") from exc


def _what_it_is(local: str) -> str:
    """`` (it holds a topic-model snapshot)`` where the directory ``local`` does, else ``""``."""
    return f" (it holds {SNAPSHOT})" if kind_of_directory(local) == SNAPSHOT else ""


def check_creatable(local: str | None) -> None:
    """Raise :class:`StoreError` where a store cannot be created at the local path ``local``
    (something other than an empty directory is there); nothing to check on an object store
    (``None``). Callers check before long work, :func:`create_repository` again."""
    if local is not None and os.path.exists(local) and (not os.path.isdir(local)
                                                        or os.listdir(local)):
        raise StoreError(f"cannot create a store at {local!r}: it exists and is not empty"
                         + _what_it_is(local))


def remove_creation_debris(local: str) -> None:
    """Remove what creations of a store at ``local`` that crashed left beside it."""
    parent, name = os.path.split(local)
    if not os.path.isdir(parent or "."):
        return
    for entry in os.listdir(parent or "."):
        if entry.startswith(f"{name}.creating-"):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def create_repository(url, storage_options, initialize) -> tuple[icechunk.Repository,
                                                                  str | None]:
    """Create a repository at ``url`` and ``initialize(repo)`` it; returns it and its local
    directory.

    A local store is built beside its final place and renamed in, so a crash during creation
    leaves no half-made store at the path (only debris, removed next time).
    """
    store, local = storage(url, storage_options)
    target = local
    if local is not None:
        remove_creation_debris(local)
        check_creatable(local)
        tmp = f"{local}.creating-{uuid.uuid4().hex[:12]}"
        try:
            # Checked here because Icechunk panics (with a Rust backtrace) on an uncreatable
            # local path instead of raising.
            os.makedirs(tmp)
        except OSError as exc:
            raise StoreError(
                f"cannot create a store at {local!r}: {exc.strerror or exc}"
            ) from exc
        store = icechunk.local_filesystem_storage(tmp)
    try:
        # Created with Icechunk's defaults (a config given here would be written into the
        # store), then opened as every store is (repository_config).
        repo = icechunk.Repository.create(store)
        initialize(repo)
        if local is not None:
            if os.path.isdir(local):
                os.rmdir(local)  # empty (checked above); rename needs it gone or empty
            os.rename(tmp, local)
            store = icechunk.local_filesystem_storage(local)
        repo = icechunk.Repository.open(store, config=repository_config())
    except BaseException as exc:
        pass_through(exc)
        if local is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise wrap(exc, f"cannot create a store at {target or os.fspath(url)!r}") from exc
    return repo, target


def disk_bytes(local: str | None, repo: icechunk.Repository) -> int:
    """Bytes a store occupies (local disk: every file; object stores: chunks only)."""
    if local is None:
        # Chunks only (what an object store bills for most); metadata objects are small.
        value = repo.chunk_storage_stats().non_virtual_bytes
        # A property in the type stubs, a method in icechunk 1.1's binary: accept both.
        return int(value() if callable(value) else value)
    total = 0
    for dirpath, _, files in os.walk(local):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass  # removed by a concurrent garbage collection
    return total
