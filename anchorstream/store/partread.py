"""Reading the partitioned layout again and again: only the partitions that moved.

The refresher of the partitioned layout reads the sum of every partition store at each
refresh. :func:`~anchorstream.store.read_partitions` reads every partition in full each time;
a :class:`PartitionReader` keeps, for every partition, the version it read last and that
read (its words, vectors and counts: dense, or the upper triangle as CSR for the low-rank
refresh), and the sum of those reads over the union's words. At the next read it pins every
head again, then:

* a partition whose head has not moved is not read at all (its vocabulary neither);
* a partition whose head moved is brought from its last read up to its new head by reading
  only the segments committed since, as the single store's warm catch-up does
  (:func:`~anchorstream.store.reading.plan_catch_up`: new segments added, evicted slots
  zeroed), or read in full where the store does not allow that (a compaction or a change of
  active slots since);
* the sum's rows keep their words from read to read (a word no longer kept leaves, new ones
  come last), so when few partitions moved (``2 m + 1 <= P`` for ``m`` of ``P``) and no
  partition that did not move has a word newly kept, the sum is updated in place: each moved
  partition's last read is taken out of it, its rows moved to the new words (one gather, only
  when the words changed), the new read added, and rounding residues below zero cleared;
  otherwise the sum is rebuilt from the kept reads, without reading the store again.

The result is :func:`~anchorstream.store.read_partitions` of the same pinned versions: the
same words (in the reader's order, not necessarily the full read's), the same vectors,
offsets and totals, and the same counts to rounding (an in-place update adds and subtracts, so
an entry may differ by a few units in the last place of the largest count it held;
tests/test_store_partread.py checks 1e-12).

Memory: every partition's last read plus the sum, ``8 (Σ_p V_p² + V²)`` bytes dense (the
full read holds the sum and one partition's), and another ``8 V²`` once an in-place update has
moved the sum's rows (the buffer it moves them into, kept for the next), or their non-zeros
sparse. The counts returned belong to the reader and change at its next read: copy what must
outlive it. That memory grows with the partitions and their vocabularies (16 partitions of
5000 words: 3.6 GB), so the reader takes a bound, ``max_kept_bytes``: a read whose kept
reads and sum would need more forgets what it kept and reads every partition in full, one at
a time (:func:`~anchorstream.store.read_partitions`: the sum plus one partition's read), as
long as the bound is exceeded. Dense, the need is ``8 (Σ_p V_p² + 2 V²)`` bytes, known from
the vocabularies before any matrix is read. Sparse, it is :data:`PAIR_BYTES` for each pair the
partitions stored and twice the sum's, known only once read: the stored pairs of the last
read are checked before a read, and a kept read found past the bound after it lets go of what
it kept at once. Sparse reads keep more than one might guess: every partition that saw most
pairs holds them all again (three partitions of 8000 words, every pair stored: 27 V² bytes
held between refreshes, ``benchmarks/bench_refresh_memory.py --partitions 3``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from anchorstream._buffers import held_bytes, leading_view
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import take_square
from anchorstream.stats.sparse import canonical_csr, csr_add
from anchorstream.store.partitions import (
    PartitionedState,
    PartitionSum,
    add_by_rows,
    check_summable,
    common_time,
    keep_words,
    partition_key,
    partition_url,
    pin_partitions,
    read_partitions,
    read_vocabulary,
    partition_entries,
    partition_entry,
    remap_upper,
)
from anchorstream.store.reading import read_version
from anchorstream.store.repository import open_repo
from anchorstream.store.sparseread import read_version_sparse

__all__ = ["PAIR_BYTES", "PartitionReader"]

#: What the sparse reader's kept reads and sum take per stored word pair: a float64 count and
#: an int32 column index (CSR's row pointers aside).
PAIR_BYTES = 12


@dataclass
class _Part:
    """What the reader keeps of one partition: its last read (``state``: None while only its
    vocabulary is known) and the rows of the sum it was added at (None: not in the sum)."""

    version: str
    config: dict
    words: list
    freq: np.ndarray
    clock: float
    state: Any = None
    rows: np.ndarray | None = None
    factor: float = 1.0  # the decay factor it was added to the sum with


def _rows(words: list[str], index: Mapping[str, int]) -> np.ndarray:
    return np.asarray([index.get(w, -1) for w in words], dtype=np.int64)


class PartitionReader:
    """Sums of every partition store under ``root``, read incrementally (see module notes).

    Parameters
    ----------
    root : str or path-like
        The partitioned store's root (path or URL).
    max_words : int, optional
        Keep at most this many words (largest summed document frequency, ties by word).
    storage_options : mapping, optional
        As for :func:`anchorstream.store.open_committed`.
    sparse : bool, default False
        Sparse counts (the low-rank refresh's read), as ``read_partitions(sparse=True)``.
    max_kept_bytes : int, optional
        The most memory the kept reads and the sum may take; a read that would need more is
        a full read that keeps nothing (see module notes). None: no bound.

    Attributes
    ----------
    last : dict
        What the last read did: ``partitions`` (pinned), ``moved`` (read from the store),
        ``in_place`` (whether the sum was updated in place rather than rebuilt), ``kept``
        (whether the reads were kept for the next read: False past ``max_kept_bytes``).
    """

    def __init__(self, root, *, max_words: int | None = None,
                 storage_options: Mapping[str, Any] | None = None, sparse: bool = False,
                 max_kept_bytes: int | None = None):
        self.root = root
        self.max_words = max_words
        self.storage_options = storage_options
        self.sparse = bool(sparse)
        if max_kept_bytes is not None and max_kept_bytes < 0:
            raise ValueError(f"max_kept_bytes must be >= 0 or None, got {max_kept_bytes!r}")
        self.max_kept_bytes = max_kept_bytes
        self._parts: dict[str, _Part] = {}
        self._index: dict[str, int] | None = None
        self._counts = None  # the sum over self._index; None when it must be rebuilt
        self._time = 0.0  # the common time the sum's values are at (decay)
        self._buffer = None  # the dense sum's memory, reused by a rebuild
        self._spare = None  # and a second one for moving its rows (_reindex)
        # Sparse: every partition's stored pairs and the sum's at the last read (kept or
        # not), what max_kept_bytes is checked against before the next read.
        self._pairs: dict[str, int] = {}
        self._sum_pairs: int | None = None
        self.last: dict = {}

    def read(self, partitions: Iterable[tuple[str, int]], *,
             versions: Mapping[str, str | None] | None = None) -> PartitionedState:
        """The sum of the pinned versions (default: the heads now) of ``partitions``.

        As :func:`~anchorstream.store.read_partitions` (same arguments, result and errors),
        reading only what moved since this reader's last read.
        """
        partitions = sorted(set(partitions))
        pins = dict(versions) if versions is not None else pin_partitions(
            self.root, partitions, storage_options=self.storage_options)
        try:
            out = self._read(partitions, pins)
        except BaseException:
            # A moved partition's last read may be half brought up to date: forget them all.
            self._counts = self._index = None
            for key, part in list(self._parts.items()):
                if part.version != pins.get(key):
                    del self._parts[key]
            raise
        if self.sparse:
            self._pairs = {key: i["n_pairs"] for key, i in out.partitions.items()
                           if i["version"] is not None}
            self._sum_pairs = int(out.cooccurrence.upper.nnz)
            sizes = {key: i["n_words"] for key, i in out.partitions.items()}
            if self.last["kept"] and self._too_large(sizes, len(out.words)):
                self._forget()  # what it kept goes now, before the fit (the result stays)
                self.last["kept"] = False
        return out

    def _read(self, partitions: list[tuple[str, int]], pins: Mapping[str, str | None]
              ) -> PartitionedState:
        vocab: dict[str, _Part] = {}
        moved: list[tuple[str, str, Any]] = []
        seen: dict = {}
        for topic, p in partitions:
            key, url = partition_key(topic, p), partition_url(self.root, topic, p)
            pin = pins.get(key)
            if pin is None:
                continue
            part = self._parts.get(key)
            if part is None or part.version != pin:
                repo, _ = open_repo(url, self.storage_options)
                part = _Part(pin, *read_vocabulary(repo, url, pin), state=None)
                moved.append((key, url, repo))
            check_summable(url, part.config, seen)
            vocab[key] = part
        T, factors = common_time((part.config, part.clock) for part in vocab.values())
        factor = dict(zip(vocab, factors))
        kept = keep_words([(part.words, part.freq * factor[k]) for k, part in vocab.items()],
                          self.max_words)
        # The sum's rows keep their words: kept words stay in place, new ones come last.
        old = self._index or {}
        words = [w for w in old if w in kept] + [w for w in kept if w not in old]
        index = {w: i for i, w in enumerate(words)}
        perm = np.asarray([index.get(w, -1) for w in old], dtype=np.int64)
        if self._too_large({key: len(part.words) for key, part in vocab.items()}, len(index)):
            return self._read_full(partitions, pins, len(vocab))
        in_place = self._in_place(vocab, moved, index, perm)
        if in_place:
            self._update(moved, vocab, index, perm, factor, T)
        else:
            self._counts = None
            for key, url, repo in moved:
                self._read_moved(repo, url, self._parts.get(key), vocab[key])
            self._parts = vocab
            for key, part in vocab.items():
                part.factor = factor[key]
            self._rebuild(index)
        self._index, self._time = index, T
        self.last = {"partitions": len(vocab), "moved": len(moved), "in_place": in_place,
                     "kept": True}
        total = PartitionSum(len(index), self.sparse, counts=self._counts)
        info = partition_entries(partitions, self.sparse)
        for key, part in vocab.items():
            total.add(part.state, index, counts=False, factor=factor[key])
            info[key] = partition_entry(part.state, key)
        return total.state(index, pins, info, seen.get("length_cap", {2}).pop())

    def kept_bytes(self) -> int:
        """Memory this reader keeps for its next read: every partition's last read and their
        sum (with the dense sum's spare); 0 once it keeps nothing."""
        reads = [p.state.cooccurrence for p in self._parts.values() if p.state is not None]
        return held_bytes(self._counts, self._buffer, self._spare, *reads)

    def _too_large(self, sizes: Mapping[str, int], V: int) -> bool:
        """Whether keeping every partition's read and the sum would pass ``max_kept_bytes``.

        ``sizes``: each partition's number of words. Dense: the reads of those vocabularies
        and the sum of ``V`` words with the spare for moving its rows, ``8 (Σ_p V_p² + 2 V²)``
        bytes.
        Sparse: :data:`PAIR_BYTES` for each pair the partitions stored at their last read
        and twice the last sum's (an update makes the next sum beside it); a partition not
        read yet counts every pair of its words, and a sum not made yet every pair of ``V``
        words (at most the partitions' pairs), so that a first read past the bound is full."""
        if self.max_kept_bytes is None:
            return False
        if self.sparse:
            pairs = sum(self._pairs.get(key, n * (n + 1) // 2) for key, n in sizes.items())
            total = (min(V * (V + 1) // 2, pairs) if self._sum_pairs is None
                     else self._sum_pairs)
            need = PAIR_BYTES * (pairs + 2 * total)
        else:
            need = 8 * (sum(n * n for n in sizes.values()) + 2 * V * V)
        return need > self.max_kept_bytes

    def _forget(self) -> None:
        """Let go of every partition's kept read and of the sum."""
        self._parts, self._index, self._counts = {}, None, None
        self._buffer = self._spare = None

    def _read_full(self, partitions: list[tuple[str, int]], pins: Mapping[str, str | None],
                   n: int) -> PartitionedState:
        """Forget what is kept and read every partition in full (one at a time)."""
        self._forget()
        self.last = {"partitions": n, "moved": n, "in_place": False, "kept": False}
        return read_partitions(self.root, partitions, versions=pins, max_words=self.max_words,
                               storage_options=self.storage_options, sparse=self.sparse)

    def _in_place(self, vocab: dict[str, _Part], moved: list, index: dict[str, int],
                  perm: np.ndarray) -> bool:
        """Whether the sum can be updated in place: it is valid, every partition in it is still
        read, few moved, and no partition that did not move has a word newly kept (its
        entries of that word are not in the sum)."""
        if self._counts is None or 2 * len(moved) + 1 > len(vocab):
            return False
        moved_keys = {key for key, _, _ in moved}
        for key, part in self._parts.items():
            if part.rows is None or key not in vocab:
                return False
            if key in moved_keys:
                continue
            now = np.where(part.rows >= 0, perm[part.rows], -1)
            if not np.array_equal(now, _rows(part.words, index)):
                return False
        return True

    def _update(self, moved: list, vocab: dict[str, _Part], index: dict[str, int],
                perm: np.ndarray, factor: dict[str, float], T: float) -> None:
        """Decay the sum to the common time ``T`` (one factor for all: the partitions' values
        are at the same time), take the moved partitions' last reads out of it, move its rows
        to ``index`` (``perm``: each old row's new one, -1 for a word no longer kept), read
        the moved partitions and add them (each with its ``factor`` to ``T``), and clear
        rounding residues below zero."""
        some = next(iter(vocab.values()))
        g = Forgetting.from_dict(some.config["forgetting"]).readout(T, self._time)
        if g != 1.0:
            self._counts = self._counts * g if self.sparse else np.multiply(
                self._counts, g, out=self._counts)
            for part in self._parts.values():
                part.factor *= g
        for key, _, _ in moved:
            old = self._parts.get(key)
            if old is not None:
                self._apply(old.state, old.rows, subtract=True, factor=old.factor)
        if perm.size != len(index) or not np.array_equal(perm, np.arange(perm.size)):
            self._reindex(perm, len(index))
        for part in self._parts.values():
            part.rows = np.where(part.rows >= 0, perm[part.rows], -1)
        for key, url, repo in moved:
            part = vocab[key]
            self._read_moved(repo, url, self._parts.get(key), part)
            part.rows, part.factor = _rows(part.state.words, index), factor[key]
            self._apply(part.state, part.rows, factor=part.factor)
        self._parts = vocab
        self._clear_residues()

    def _read_moved(self, repo, url: str, old: _Part | None, part: _Part) -> None:
        """Read a moved partition into ``part``, from its last read ``old`` (brought up to date
        from the segments committed since, where the store allows)."""
        previous = None if old is None else old.state
        if self.sparse:
            part.state = read_version_sparse(repo, url, part.version, previous=previous)
        else:
            part.state = read_version(
                repo, url, part.version,
                out=None if previous is None else previous.cooccurrence.counts,
                since=None if previous is None else previous.dense)

    def _reindex(self, perm: np.ndarray, V: int) -> None:
        """Move the sum's old row ``i`` to row ``perm[i]`` (dropped for -1) of ``V`` rows."""
        if self.sparse:
            self._counts = remap_upper(self._counts, perm, V)
            return
        src = np.full(V, -1, dtype=np.int64)
        have = np.flatnonzero(perm >= 0)
        src[perm[have]] = have
        spare = leading_view(self._spare, (V, V), np.float64)
        if spare is None:
            self._spare = spare = np.empty((V, V))
        self._counts = take_square(self._counts, src, out=spare)
        self._buffer, self._spare = self._spare, self._buffer

    def _apply(self, st, rows: np.ndarray, *, subtract: bool = False,
               factor: float = 1.0) -> None:
        """Add (subtract) one partition's read times ``factor``, whose word ``i`` is row
        ``rows[i]``, to the sum."""
        c = st.cooccurrence
        if self.sparse:
            upper = c.upper if factor == 1.0 else c.upper * factor
            part = remap_upper(upper, rows, self._counts.shape[0])
            if subtract:
                part.data *= -1.0
            self._counts = csr_add(self._counts, part)
        else:
            add_by_rows(self._counts, c.counts, rows, subtract=subtract, scale=factor)

    def _clear_residues(self) -> None:
        """After an in-place update: counts that should be zero or tiny may have come out a
        rounding step below zero; counts are never negative."""
        if self.sparse:
            data = self._counts.data
            if data.size and data.min() < 0:
                data[data < 0] = 0.0
                self._counts = canonical_csr(self._counts)
        else:
            np.maximum(self._counts, 0.0, out=self._counts)

    def _rebuild(self, index: dict[str, int]) -> None:
        """The sum of every kept read over ``index``, in partition order (as the full read)."""
        V = len(index)
        if self.sparse:
            self._counts = sp.csr_matrix((V, V))
        else:
            counts = leading_view(self._buffer, (V, V), np.float64)
            if counts is None:
                counts = self._buffer = np.zeros((V, V))
            else:
                counts.fill(0.0)
            self._counts = counts
        for part in self._parts.values():
            part.rows = _rows(part.state.words, index)
            self._apply(part.state, part.rows, factor=part.factor)
