"""The exceptions anchorstream raises.

Every error is an :class:`AnchorstreamError` and also the builtin a caller would naturally
catch (``ValueError`` for bad input, ``FileNotFoundError`` for a missing file), so code that
does not know about anchorstream still handles it sensibly. Messages say what was expected,
what arrived and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "AnchorstreamError",
    "InputError",
    "NotFittedError",
    "SnapshotError",
    "SnapshotNotFoundError",
    "StoreError",
    "StoreFormatError",
]


class AnchorstreamError(Exception):
    """Base class of every error raised on purpose by anchorstream."""


class InputError(AnchorstreamError, ValueError):
    """An argument or an input array is not what the function accepts."""


class NotFittedError(AnchorstreamError, ValueError):
    """A model was used before ``fit`` gave it learned state."""


class SnapshotError(AnchorstreamError, ValueError):
    """A snapshot directory is corrupt, incomplete or of an unknown format version."""


class SnapshotNotFoundError(SnapshotError, FileNotFoundError):
    """A snapshot directory or one of its files does not exist."""


class StoreError(AnchorstreamError, OSError):
    """The co-occurrence store cannot be read or written (disk full, permissions, ...)."""


class StoreConflictError(StoreError):
    """Another writer committed to the store since this writer's version (it is stale).

    Raised by a checkpoint or compaction of a writer whose branch moved under it: a
    partition's state was taken over by another ingest instance. Counts are never rebased
    onto the other writer's commit; the caller drops what it holds, reopens the store and
    resumes from the offsets stored there (see docs/store.md, "Partitioned layout").
    """


class StoreFormatError(AnchorstreamError, ValueError):
    """The store was written by an incompatible format version or is not a store at all."""
