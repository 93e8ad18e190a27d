"""Reading documents from files: JSON lines or plain text, optionally gzip-compressed.

Each record comes with the byte offset just past it, so a backfill can store where it stopped
and resume there after a crash. :class:`FileSource` hands the lines of several files to the
ingest loop (:class:`daemon.ingest.loop.IngestLoop`), the one the daemon runs over Kafka.
"""

from __future__ import annotations

import gzip
import io
import itertools
import os
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from anchorstream.errors import InputError

__all__ = ["FileRecord", "FileSource", "file_key", "iter_lines", "open_binary"]


def file_key(path) -> str:
    """Store offsets key of a file: its absolute path, so any working directory resumes it."""
    return f"file:{os.path.abspath(os.fspath(path))}"


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

    Raises
    ------
    InputError
        Where a ``.gz`` file is truncated or not gzip, once the lines before are yielded.
    """
    offset = start
    try:
        with open_binary(path) as fh:
            if start:
                fh.seek(start)
            for line in fh:
                offset += len(line)
                stripped = line.rstrip(b"\r\n")
                if stripped.strip():
                    yield offset, stripped
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        # A truncated or damaged .gz: the lines before it were read; say where it ends.
        raise InputError(f"input file {os.fspath(path)!r} is damaged: {exc} (after byte "
                         f"{offset} of its uncompressed text)") from None


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One non-blank line of a file, as the ingest loop reads records."""

    key: str                # store offsets key of the file (:func:`file_key`)
    end: int                # byte offset just past the line: where a resume starts
    value: bytes            # the line, without its line break
    timestamp: None = None  # a file has no record time; documents carry their own


class FileSource:
    """The lines of ``paths``, in order, each file from its start offset: a source of records.

    A :class:`daemon.ingest.source.RecordSource`. It is finite: :meth:`poll_batch` returns an
    empty list once every file is read through (and then :attr:`exhausted` is true); it never
    waits.

    Parameters
    ----------
    paths : sequence of str or Path
    starts : mapping of offsets key to byte offset, optional
        Where each file starts (its committed offset); missing keys start at 0.
    on_bytes : callable ``int -> None``, optional
        Called with the bytes consumed (blank lines included) before each record, e.g. a
        progress bar's ``update``.
    """

    def __init__(self, paths: Sequence, starts: Mapping[str, int] | None = None, *,
                 on_bytes: Callable[[int], object] | None = None):
        self.paths = list(paths)
        self.starts = dict(starts or {})
        self.on_bytes = on_bytes
        self.exhausted = False
        # Set by the loop (daemon.ingest.source.RecordSource); a file source has no use for them.
        self.offsets_for = self.on_topic_reset = self.on_skip = None
        self._records = self._read()

    def _read(self) -> Iterator[FileRecord]:
        for path in self.paths:
            key = file_key(path)
            last = int(self.starts.get(key, 0))
            for end, line in iter_lines(path, last):
                if self.on_bytes is not None:
                    self.on_bytes(end - last)
                last = end
                yield FileRecord(key, end, line)

    def poll_batch(self, max_records: int = 1000, timeout: float = 0.0) -> list[FileRecord]:
        """The next ``max_records`` lines at most (fewer only at the end of the last file)."""
        out = list(itertools.islice(self._records, max(int(max_records), 1)))
        if not out:
            self.exhausted = True
        return out

    @staticmethod
    def position(record: FileRecord) -> tuple[str, int]:
        """``(file key, byte offset past the line)``: what a checkpoint commits for the file."""
        return record.key, record.end

    def topic_ids(self) -> dict:
        """Files have no topics (the loop asks every source)."""
        return {}

    def topic_id(self, topic: str) -> None:
        """Files have no topics."""
        return None

    @property
    def stopped(self) -> bool:
        """A file source never fails on its own (a file that cannot be read raises)."""
        return False

    def commit(self, offsets) -> None:
        """Nothing to tell anyone: the store's offsets are the only record of progress."""

    def close(self) -> None:
        """Close the file being read, if any."""
        self._records.close()
