"""Reading documents from files: JSON lines or plain text, optionally gzip-compressed.

Each record comes with the byte offset just past it, so a backfill can store where it stopped
and resume there after a crash.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from pathlib import Path

__all__ = ["iter_lines", "open_binary"]


def open_binary(path: str | Path) -> io.BufferedIOBase:
    """Open a file for binary reading, transparently decompressing ``.gz``."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def iter_lines(path: str | Path, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset_after_line, line_without_newline)`` for each non-blank line.

    Parameters
    ----------
    path : str or Path
    start : int
        Byte offset (in the uncompressed stream) to start from; a value previously yielded
        as ``offset_after_line`` resumes right after that line.
    """
    with open_binary(path) as fh:
        if start:
            fh.seek(start)
        offset = start
        for line in fh:
            offset += len(line)
            stripped = line.rstrip(b"\r\n")
            if stripped.strip():
                yield offset, stripped
