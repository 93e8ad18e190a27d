"""Repeated documents: the same tokens again, counted once.

Real streams repeat themselves: a template summary shared by a family of packages, a
retweet, a wire story republished, a bot posting one message all day. The npm summaries in
``../shared/data`` hold 177,251 lines of 162,319 distinct texts, one of them 423 times. Each
copy adds its word pairs again, so a message repeated a few hundred times becomes a block of
co-occurrence that the anchor search takes for a topic of its own, and it pulls the others'
words with it: with 2 % of a corpus's documents repeated (Zipf multiplicities up to 300, ~12 %
of the documents copies) held-out NPMI@10 fell from +0.155 to +0.033 on the speeches and from
+0.133 to -0.187 on the 12-token PyPI summaries, and the peers (anchortopics, tomotopy) fell as
far; counting each text once restored it (benchmarks/README.md, "Repeated documents").

:class:`DuplicateFilter` keeps the keys of the last ``memory`` distinct documents and drops a
document whose key it holds: memory is ``24 · memory`` bytes (a ring of keys in arrival order
and a hash set over them), bounded whatever the stream. The key is a 64-bit BLAKE2b hash of
the document's tokens in order (:func:`document_key`), so documents that differ only in what
the tokenizer drops (case, punctuation, numbers, stopwords) are the same document; with 10⁶
keys held, two different documents share a key with probability ~3·10⁻⁸. A document of fewer
than two tokens holds no word pair: it is always kept and never remembered.

The filter's state (:attr:`DuplicateFilter.ring`, :attr:`DuplicateFilter.cursor`) is what a
store commits with its counts, so a replay after a crash drops exactly what the first run
dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from anchorstream._kernels.duplicates import duplicates_filter, duplicates_rebuild
from anchorstream.errors import InputError

__all__ = ["DEFAULT_MEMORY", "DuplicateFilter", "document_key"]

#: Distinct documents remembered by default: 24 MB of memory, and the whole of every
#: benchmark corpus (the largest holds 300,000 documents).
DEFAULT_MEMORY = 1_000_000

_SEPARATOR = "\x1f"  # the unit separator: no tokenizer keeps it inside a token


def document_key(tokens: Sequence[str]) -> int:
    """A document's key: the BLAKE2b hash (8 bytes) of its tokens, never 0.

    >>> document_key(["topic", "model"]) == document_key(["topic", "model"])
    True
    >>> document_key(["topic", "model"]) == document_key(["model", "topic"])
    False
    """
    # surrogatepass: a key for any str (a lone surrogate is refused before a store, not here).
    text = _SEPARATOR.join(tokens).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(text, digest_size=8).digest()
    return int.from_bytes(digest, "little") or 1


class DuplicateFilter:
    """Which documents repeat one of the last ``memory`` distinct documents.

    Parameters
    ----------
    memory : int
        Distinct documents remembered (>= 0); 0 keeps every document.
    ring : ndarray of uint64, shape (memory,), optional
        A saved :attr:`ring` (with its ``cursor``) to start from.
    cursor : int, default 0
        How many documents have entered the memory so far.

    Examples
    --------
    >>> f = DuplicateFilter(2)
    >>> f.keep([["a", "b"], ["c", "d"], ["a", "b"], ["x"], ["x"]]).tolist()
    [True, True, False, True, True]
    >>> f.keep([["e", "f"], ["a", "b"]]).tolist()  # ["a", "b"] was forgotten for ["e", "f"]
    [True, True]
    """

    def __init__(self, memory: int, ring: np.ndarray | None = None, cursor: int = 0):
        if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory < 0:
            raise InputError(f"duplicate memory must be an integer >= 0, got {memory!r}")
        if isinstance(cursor, bool) or not isinstance(cursor, (int, np.integer)) or cursor < 0:
            raise InputError(f"the duplicate filter's cursor must be an integer >= 0, "
                             f"got {cursor!r}")
        self.memory = int(memory)
        self.cursor = int(cursor)
        #: Documents :meth:`distinct` dropped.
        self.skipped = 0
        m = max(self.memory, 1)
        # A power of 2 at least twice the ring: the set is at most half full.
        self._table = np.zeros(1 << (2 * m - 1).bit_length(), dtype=np.uint64)
        if ring is None:
            self.ring = np.zeros(m, dtype=np.uint64)
            if self.cursor:
                raise InputError("a duplicate filter with a cursor needs its ring")
        else:
            ring = np.asarray(ring)
            if ring.dtype != np.uint64 or ring.shape != (self.memory,):
                raise InputError(f"the duplicate filter's ring must be {self.memory} uint64 "
                                 f"keys, got {ring.shape} {ring.dtype}")
            held = min(self.cursor, self.memory)
            if np.any(ring[:held] == 0) or np.unique(ring[:held]).size != held:
                raise InputError("the duplicate filter's ring holds a zero or repeated key")
            self.ring = ring.copy()
            # Keys held are ring[:held] in some rotation: all of it once the ring has wrapped.
            duplicates_rebuild(self._table, self.ring, held)

    @property
    def enabled(self) -> bool:
        return self.memory > 0

    def keep(self, documents: Sequence[Sequence[str]]) -> np.ndarray:
        """Which of ``documents`` (token lists, in stream order) to count: False for one whose
        tokens repeat a remembered document's, or an earlier one's in ``documents``; the kept
        ones of two tokens or more are remembered."""
        n = len(documents)
        keep = np.ones(n, dtype=bool)
        if not self.enabled or n == 0:
            return keep
        pairs = [t for t, d in enumerate(documents) if len(d) >= 2]
        if not pairs:
            return keep
        keys = np.fromiter((document_key(documents[t]) for t in pairs), dtype=np.uint64,
                           count=len(pairs))
        kept = np.empty(len(pairs), dtype=bool)
        self.cursor = int(duplicates_filter(self._table, self.ring, self.cursor, keys, kept))
        keep[np.asarray(pairs, dtype=np.int64)] = kept
        return keep

    def distinct(self, documents: Iterable[Sequence[str]], *, batch: int = 4096
                 ) -> Iterator[Sequence[str]]:
        """The documents :meth:`keep` keeps, in order, decided ``batch`` at a time (one call
        per document cost 0.6 of 2.3 CPU s reading 300,000 short ones); how many were
        dropped adds up in :attr:`skipped`."""
        pending: list[Sequence[str]] = []
        for document in documents:
            pending.append(document)
            if len(pending) >= batch:
                yield from self._kept(pending)
        yield from self._kept(pending)

    def _kept(self, pending: list) -> Iterator[Sequence[str]]:
        keep = self.keep(pending)
        self.skipped += int(keep.size - np.count_nonzero(keep))
        kept = [d for d, k in zip(pending, keep) if k]
        pending.clear()
        yield from kept

    def changed_since(self, cursor: int) -> list[tuple[int, int]]:
        """The slices ``[a, b)`` of :attr:`ring` written since the filter was at ``cursor``:
        none, one, two where the writes wrapped around the ring's end, or the whole ring once
        they went all the way round."""
        if self.cursor == cursor or not self.enabled:
            return []
        if self.cursor - cursor >= self.memory:
            return [(0, self.memory)]
        a, b = cursor % self.memory, self.cursor % self.memory
        if a < b:
            return [(a, b)]
        return [(a, self.memory)] + ([(0, b)] if b else [])
