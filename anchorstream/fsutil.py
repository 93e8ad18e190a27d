"""File-system helpers shared by the snapshot writer and the publisher."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_dir"]


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
