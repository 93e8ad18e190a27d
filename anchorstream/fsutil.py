"""File-system helpers shared by the snapshot writer, the publisher and the topic history,
and the commands' errors that say what a directory given in the wrong place is."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

__all__ = ["STORE", "SNAPSHOT", "fsync_dir", "kind_of_directory", "write_atomically"]

#: What :func:`kind_of_directory` tells apart.
STORE = "a co-occurrence store"
SNAPSHOT = "a topic-model snapshot"


def kind_of_directory(path: str | os.PathLike | Path) -> str | None:
    """:data:`STORE` for a local Icechunk repository (its ``refs/`` and ``snapshots/``),
    :data:`SNAPSHOT` for a snapshot directory (its ``manifest.json``), else None: for errors
    that name what a path given in the wrong place is."""
    p = Path(path)
    if (p / "refs").is_dir() and (p / "snapshots").is_dir():
        return STORE
    if (p / "manifest.json").is_file():
        return SNAPSHOT
    return None


def fsync_dir(path: str | os.PathLike | Path, *, missing_ok: bool = False) -> None:
    """Flush a directory's entries (a rename or a new file in it) to disk.

    ``missing_ok``: a directory that cannot be opened (platforms without directory file
    descriptors, such as Windows) is skipped instead of raising ``OSError``.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        if not missing_ok:
            raise
        return  # pragma: no cover - platforms without directory fds (Windows)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str | os.PathLike | Path, data: bytes) -> None:
    """Replace the file ``path`` by ``data`` so that a crash leaves the old file or the new one,
    whole: written to ``.<name>.tmp-<random>`` beside it, fsynced, renamed over it with
    ``os.replace``, then the directory fsynced. A temporary file left by a crash before the
    rename keeps that name pattern, for its owner to clean up at start."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent, missing_ok=True)
