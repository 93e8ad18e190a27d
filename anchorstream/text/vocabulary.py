"""A bounded vocabulary that grows with the stream and forgets its weakest words.

Slots
-----
The vocabulary has a fixed number of *slots* (its capacity ``V``), the rows and columns of the
co-occurrence matrix. A word in the vocabulary owns one slot; a word that leaves frees its slot,
and the store zeroes that slot's row and column before anyone else uses it. Free slots are
handed out lowest first, and words are admitted roughly in order of frequency (the frequent
ones cross the admission threshold first), so frequent words get low slots and the hot part of
the matrix stays in few chunks.

Admission: a Space-Saving sketch
--------------------------------
Words outside the vocabulary are counted, by document frequency, in a bounded sketch of at most
``2 × sketch_size`` entries (Metwally et al.'s Space-Saving, with amortised batch pruning: when
the table reaches twice its size it keeps the ``sketch_size`` largest counts; a word entering
later starts at the largest count dropped so far, the *floor*, and records it as its possible
error). ``count − error`` is a guaranteed lower bound of the word's document frequency since it
entered the sketch, and a word is admitted once that bound reaches ``admit_threshold``. So
memory stays bounded however many distinct tokens arrive, and a word is never admitted on the
strength of other words' counts.

When the vocabulary is full, a candidate replaces the weakest evictable word (lowest document
frequency, lowest slot on ties) only if its lower bound is strictly larger; the evicted word
goes back into the sketch with its count, so it can return. Seed words are pinned (never evicted
automatically) unless ``pin_seed=False``.

Stopwords are never counted. With ``max_df``, every ``maintain_every`` documents (once
``max_df_min_docs`` have been seen) words in more than that fraction of the documents are
evicted and *blocked*; a blocked word's frequency is still tracked and it is unblocked (back to
the sketch) when it falls under the limit.

Decay
-----
All frequencies are in the store's scaled units: a document observed with weight ``w`` adds
``w``, and the true decayed frequency is the stored value divided by the weight of a document
arriving now. The admission test compares ``count − error`` with ``admit_threshold × w``;
:meth:`StreamingVocabulary.rescale` applies the store's renormalization.

Each slot also records its admission: ``total_weight`` and the word's sketched frequency
before the document that admitted it (0, 0 for seeds), read by :mod:`anchorstream.stats.admission`.

Everything is deterministic given the sequence of documents (no hash-order dependence), which
is what makes crash-and-replay reproduce the same slots.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence

import numpy as np

from anchorstream._kernels.store import store_add_doc_freq
from anchorstream.errors import InputError

__all__ = ["MAX_DF_MIN_DOCS", "StreamingVocabulary", "read_seed_vocabulary"]

#: Default documents to see before ``max_df`` applies (``max_df_min_docs``).
MAX_DF_MIN_DOCS = 1000

_STOP = -2
_BLOCKED = -3


def read_seed_vocabulary(path) -> list[str]:
    """Read a seed vocabulary file: one word per line, most frequent first, ``#`` comments.

    Raises
    ------
    InputError
        If the file cannot be read or repeats a word.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read seed vocabulary {str(path)!r}: {exc}") from exc
    words = [w for w in (line.split("#", 1)[0].strip() for line in lines) if w]
    if len(set(words)) != len(words):
        dupes = sorted({w for w in words if words.count(w) > 1})[:10]
        raise InputError(f"seed vocabulary {str(path)!r} repeats words: {dupes}")
    return words


def _check_number(name, value, low, *, allow_none=False, integer=False, low_open=False):
    if value is None and allow_none:
        return
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    bad = isinstance(value, bool) or not isinstance(value, kinds)
    if not bad:
        bad = not math.isfinite(value) or (value <= low if low_open else value < low)
    if bad:
        op = ">" if low_open else ">="
        raise InputError(f"{name} must be {'an int' if integer else 'a number'} {op} {low}"
                         f"{' or None' if allow_none else ''}, got {value!r}")


class StreamingVocabulary:
    """Word ↔ slot mapping with admission by a bounded sketch and eviction of the weakest.

    Parameters
    ----------
    capacity : int
        Number of slots ``V``.
    admit_threshold : float, default 5.0
        Decayed document frequency (lower bound, counted since the word entered the sketch) at
        which a word is admitted. 1 admits every word at first sight while slots are free.
    sketch_size : int or None, default ``2 * capacity``
        The sketch keeps between ``sketch_size`` and ``2 * sketch_size`` candidate words.
    max_df : float in (0, 1] or None, default None
        Block words in more than this fraction of documents (None: no limit).
    max_df_min_docs : int, default MAX_DF_MIN_DOCS (1000)
        Documents to see before ``max_df`` applies.
    maintain_every : int, default 1000
        ``max_df`` is checked before every ``maintain_every``-th document.
    stopwords : iterable of str, default ()
        Words never counted (the tokenizer usually drops them already).
    seed : sequence of str, default ()
        Initial words, given slots ``0, 1, ...`` in order (most frequent first is best).
    pin_seed : bool, default True
        Seed words are never evicted automatically.
    blocked : iterable of str, default ()
        Words blocked from the start as ``max_df`` blocks them (their frequency tracked from 0):
        what ``anchorstream ingest``'s first pass found in more than ``max_df`` of its files.

    Examples
    --------
    >>> v = StreamingVocabulary(2, admit_threshold=2)
    >>> v.observe(["a", "b"])[0], v.observe(["a", "c"])[0], v.observe(["c", "a"])[0]
    ([], [0], [1, 0])
    >>> v.words
    ['a', 'c']
    """

    def __init__(
        self,
        capacity: int,
        *,
        admit_threshold: float = 5.0,
        sketch_size: int | None = None,
        max_df: float | None = None,
        max_df_min_docs: int = MAX_DF_MIN_DOCS,
        maintain_every: int = 1000,
        stopwords: Iterable[str] = (),
        seed: Sequence[str] = (),
        pin_seed: bool = True,
        blocked: Iterable[str] = (),
    ):
        _check_number("capacity", capacity, 1, integer=True)
        _check_number("admit_threshold", admit_threshold, 0.0, low_open=True)
        _check_number("sketch_size", sketch_size, 1, integer=True, allow_none=True)
        _check_number("max_df_min_docs", max_df_min_docs, 0, integer=True)
        _check_number("maintain_every", maintain_every, 1, integer=True)
        if max_df is not None:
            _check_number("max_df", max_df, 0.0, low_open=True)
            if max_df > 1:
                raise InputError(f"max_df must be a fraction in (0, 1] or None, got {max_df!r}")
        if any(isinstance(words, str) for words in (stopwords, seed, blocked)):
            raise InputError("stopwords, seed and blocked must be collections of words, not a str")
        seed = list(seed)
        if not all(isinstance(w, str) and w for w in seed):
            raise InputError("seed words must be non-empty str")
        if len(set(seed)) != len(seed):
            raise InputError("seed vocabulary repeats words")
        if len(seed) > capacity:
            raise InputError(f"seed vocabulary has {len(seed)} words but capacity is "
                             f"{capacity}; raise the capacity or shorten the seed list")
        self.capacity = int(capacity)
        self.admit_threshold = float(admit_threshold)
        self.sketch_size = int(sketch_size) if sketch_size is not None else 2 * self.capacity
        self.max_df = None if max_df is None else float(max_df)
        self.max_df_min_docs = int(max_df_min_docs)
        self.maintain_every = int(maintain_every)
        self.stopwords = frozenset(stopwords)
        self.pin_seed = bool(pin_seed)
        self.seed = tuple(seed)
        # Lifetime tallies of this object's own decisions (not state: a rollback or a restore
        # keeps them, so a gauge reading them counts what this process did).
        self.admitted_total = 0
        self.evicted_total = 0
        self._reset_state()
        # The empty string marks a free slot in the stored table: never a word.
        self._slot.update(dict.fromkeys([*self.stopwords, ""], _STOP))
        for s, w in enumerate(seed):
            if w in self.stopwords:
                raise InputError(f"seed word {w!r} is also a stopword")
            self._assign(w, s, 0.0)
            self._pinned[s] = self.pin_seed
        self._free = list(range(len(seed), self.capacity))
        for w in blocked:
            if not (isinstance(w, str) and w) or w in self._slot:
                raise InputError(f"blocked word {w!r} is empty, repeated, a stopword or seed")
            self._blocked[w], self._slot[w] = 0.0, _BLOCKED

    def _reset_state(self) -> None:
        V = self.capacity
        self._words: list[str | None] = [None] * V
        self._df = np.zeros(V)
        self._admitted = np.zeros((V, 2))
        self._pinned = np.zeros(V, dtype=bool)
        self._slot: dict[str, int] = {}
        self._free: list[int] = []
        self._sk: dict[str, float] = {}
        self._sk_err: dict[str, float] = {}
        self._floor = 0.0
        self._blocked: dict[str, float] = {}
        self._weak = -math.inf  # lower bound of the weakest evictable frequency
        self._pending = None  # the batch being observed (see observe_batch)
        self._flushed = 0
        self._changes: list | None = None  # (slot, word or None): observe_batch(changes=)
        self.total_weight = 0.0
        self.n_docs_seen = 0

    # ------------------------------------------------------------------ queries
    def config(self) -> dict:
        """Settings as plain JSON values (what the store records)."""
        return {"capacity": self.capacity, "admit_threshold": self.admit_threshold,
                "sketch_size": self.sketch_size, "max_df": self.max_df,
                "max_df_min_docs": self.max_df_min_docs, "maintain_every": self.maintain_every,
                "stopwords": sorted(self.stopwords), "pin_seed": self.pin_seed}

    @property
    def words(self) -> list[str | None]:
        """Word of every slot, ``None`` for a free slot (a copy)."""
        return list(self._words)

    @property
    def admitted(self) -> np.ndarray:
        """Per slot, (weight before, frequency before) its admission, shape (V, 2) (a copy)."""
        return self._admitted.copy()

    @property
    def doc_freq(self) -> np.ndarray:
        """Scaled document frequency of every slot, float64 of shape (capacity,) (a copy)."""
        return self._df.copy()

    def active_slots(self) -> np.ndarray:
        """Slots holding a word, increasing; int64 ndarray."""
        return np.asarray([s for s, w in enumerate(self._words) if w is not None], dtype=np.int64)

    def __len__(self) -> int:
        return self.capacity - len(self._free)

    def __contains__(self, word: object) -> bool:
        return self._slot.get(word, -1) >= 0  # type: ignore[arg-type]

    def slot_of(self, word: str) -> int:
        """Slot of ``word``, or -1 when it is not in the vocabulary."""
        s = self._slot.get(word, -1)
        return s if s >= 0 else -1

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        """Slots of the in-vocabulary tokens, in order (no statistics change)."""
        get = self._slot.get
        return [s for s in (get(t, -1) for t in tokens) if s >= 0]

    def sketch_items(self) -> list[tuple[str, float, float]]:
        """``(word, count, error)`` of every sketch entry, in table order."""
        err = self._sk_err
        return [(w, c, err.get(w, 0.0)) for w, c in self._sk.items()]

    # ------------------------------------------------------------------ updates
    def observe(self, tokens: Sequence[str], weight: float = 1.0) -> tuple[list[int], list[int]]:
        """Count one document and map its tokens to slots.

        Parameters
        ----------
        tokens : sequence of str
        weight : float, default 1.0
            The document's decay weight (scaled units).

        Returns
        -------
        slots : list of int
            Slot of every in-vocabulary token (after this document's own admissions), in order.
        evicted : list of int
            Slots whose word left the vocabulary *before* this document was counted; their row
            and column must be zeroed before the document is added.
        """
        _, slots, evictions = self.observe_batch([tokens], [weight])
        return slots.tolist(), [s for _, s in evictions]

    def observe_batch(
        self, token_lists: Iterable[Sequence[str]], weights: Sequence[float] | float = 1.0,
        *, positions: bool = False, changes: bool = False,
    ) -> tuple:
        """:meth:`observe` over many documents (the fast path): ``(indptr, slots, evictions)``,
        int64 ``indptr`` and int32 ``slots`` of the in-vocabulary tokens, ``(doc_index, slot)``
        evicted before that document; with ``positions`` also each slot's index in its token
        list (what windows are cut by, :mod:`anchorstream.text.windows`); with ``changes``
        last every change of a slot's word, in order: ``(doc_index, slot, word)``, word None
        where it was freed (the table of any moment of the batch, for a delay line)."""
        # Documents whose words are all in the vocabulary (the common case) only record their
        # slots here; their frequency increments are applied in bulk by a kernel at the end,
        # or earlier if a decision that reads frequencies (an eviction, max_df) comes first.
        # Decisions therefore see exactly what a one-document-at-a-time update would give.
        out: list[int] = []
        indptr = [0]
        where: list[int] | None = [] if positions else None
        ws: list[float] = []
        counted: list[bool] = []  # True: increments already applied (the slow path)
        evictions: list[tuple[int, int]] = []
        self._pending = (out, indptr, ws, counted)
        self._flushed = 0
        log: list[tuple[int, int, str | None]] = []
        self._changes = [] if changes else None
        get = self._slot.get
        const = isinstance(weights, (int, float))
        items = (((t, float(weights)) for t in token_lists) if const
                 else zip(token_lists, weights, strict=True))
        try:
            for d, (tokens, w) in enumerate(items):
                if self.n_docs_seen and self.n_docs_seen % self.maintain_every == 0:
                    ev: list[int] = []
                    self._maintain(ev)
                    evictions.extend((d, s) for s in ev)
                self.n_docs_seen += 1
                self.total_weight += w
                sl = [get(t, -1) for t in tokens]
                if sl and min(sl) < 0:
                    ev = []
                    sl = self._observe_slow(tokens, sl, w, ev)
                    if ev:
                        evictions.extend((d, s) for s in ev)
                    counted.append(True)
                else:
                    counted.append(False)
                if self._changes:
                    log += [(d, s, t) for s, t in self._changes]
                    self._changes.clear()
                if where is not None:
                    where += [i for i, s in enumerate(sl) if s >= 0]
                out += [s for s in sl if s >= 0] if counted[-1] else sl
                indptr.append(len(out))
                ws.append(w)
            self._flush()
        finally:
            self._pending = self._changes = None
        result = np.asarray(indptr, dtype=np.int64), np.asarray(out, dtype=np.int32), evictions
        result = result if where is None else (*result, np.asarray(where, dtype=np.int32))
        return (*result, log) if changes else result

    def _flush(self) -> None:
        """Apply the deferred frequency increments of the current batch."""
        if self._pending is None:
            return
        out, indptr, ws, counted = self._pending
        a, b = self._flushed, len(ws)
        if b > a:
            base = indptr[a]
            store_add_doc_freq(
                self._df,
                np.asarray(indptr[a : b + 1], dtype=np.int64) - base,
                np.asarray(out[base : indptr[b]], dtype=np.int32),
                np.asarray(ws[a:b], dtype=np.float64),
                np.asarray(counted[a:b], dtype=np.bool_),
            )
            self._flushed = b

    def _observe_slow(self, tokens, sl: list[int], w: float, evicted: list[int]) -> list[int]:
        """A document with words outside the vocabulary: sketch, admissions, evictions; each
        token's slot, negative where it stays outside."""
        get = self._slot.get
        known = {s for s in sl if s >= 0}
        if known:
            self._df[np.fromiter(known, np.int64, len(known))] += w
        changed = False
        # dict.fromkeys: distinct words in order of first appearance (a set's order would
        # depend on string hashing and differ between processes).
        for t in dict.fromkeys([t for t, s in zip(tokens, sl) if s < 0]):
            code = get(t, -1)
            if code == _STOP:
                continue
            if code == _BLOCKED:
                self._blocked[t] += w
                continue
            if self._count_unknown(t, w, evicted):
                changed = True
        if changed:
            # Map again what was unknown, and what sat in a slot evicted meanwhile (a word of
            # this document may have been the weakest).
            gone = set(evicted)
            sl = [get(t, -1) if (s < 0 or s in gone) else s for t, s in zip(tokens, sl)]
        return sl

    def _count_unknown(self, t: str, w: float, evicted: list[int]) -> bool:
        """Sketch update for a word outside the vocabulary; True if it was admitted."""
        sk = self._sk
        c = sk.get(t)
        if c is None:
            c = self._floor + w
            sk[t] = c
            if self._floor > 0.0:
                self._sk_err[t] = self._floor
            if len(sk) > 2 * self.sketch_size:
                self._prune()  # replaces self._sk
                if t not in self._sk:
                    return False
        else:
            c += w
            sk[t] = c
        lb = c - self._sk_err.get(t, 0.0)
        if lb < self.admit_threshold * w:
            return False
        return self._admit(t, lb, w, evicted)

    def _prune(self) -> None:
        counts = np.fromiter(self._sk.values(), dtype=np.float64, count=len(self._sk))
        keep = np.sort(np.argsort(-counts, kind="stable")[: self.sketch_size])
        mask = np.zeros(counts.size, dtype=bool)
        mask[keep] = True
        dropped = counts[~mask]
        if dropped.size:
            self._floor = max(self._floor, float(dropped.max()))
        items = list(self._sk.items())
        self._sk = {items[k][0]: items[k][1] for k in keep.tolist()}
        err = self._sk_err
        self._sk_err = {w: err[w] for w in self._sk if w in err}

    def _weakest(self) -> tuple[int, float]:
        """Exact weakest evictable slot and its frequency, or (-1, inf)."""
        self._flush()
        df = self._df.copy()
        df[self._pinned] = np.inf
        if self._free:
            df[self._free] = np.inf
        s = int(np.argmin(df))
        val = float(df[s])
        if not math.isfinite(val):
            return -1, math.inf
        self._weak = val
        return s, val

    def _admit(self, t: str, lb: float, w: float, evicted: list[int]) -> bool:
        if self._free:
            slot = heapq.heappop(self._free)
            del self._sk[t]
            self._sk_err.pop(t, None)
        else:
            if lb <= self._weak:
                return False
            slot, val = self._weakest()
            if slot < 0 or lb <= val:
                return False
            # Out of the sketch before the evicted word goes in, so a prune cannot drop it.
            del self._sk[t]
            self._sk_err.pop(t, None)
            self._release(slot, evicted, to_sketch=True)
            heapq.heappop(self._free)  # the slot just released, the only free one
        # This document is counted with the word: the point is the weight before it.
        self._assign(t, slot, lb, (self.total_weight - w, lb - w))
        self._weak = min(self._weak, lb)
        self.admitted_total += 1
        return True

    def _assign(self, t: str, slot: int, df: float, admitted=(0.0, 0.0)) -> None:
        self._words[slot] = t
        self._slot[t] = slot
        self._df[slot] = df
        self._admitted[slot] = np.maximum(admitted, 0.0)
        self._pinned[slot] = False
        if self._changes is not None:
            self._changes.append((slot, t))

    def _release(self, slot: int, evicted: list[int], *, to_sketch: bool) -> str:
        t = self._words[slot]
        df = float(self._df[slot])
        self._words[slot] = None
        del self._slot[t]
        self._df[slot] = 0.0
        self._admitted[slot] = 0.0
        self._pinned[slot] = False
        heapq.heappush(self._free, slot)
        evicted.append(slot)
        if self._changes is not None:
            self._changes.append((slot, None))
        self.evicted_total += 1
        if to_sketch:
            # Back to the sketch with its history; its count is exact, so no error term.
            self._sk[t] = df
            self._sk_err.pop(t, None)
            if len(self._sk) > 2 * self.sketch_size:
                self._prune()
        return t

    def evict(self, word: str) -> int:
        """Remove ``word`` from the vocabulary now (pinned or not); returns its freed slot.

        Raises
        ------
        InputError
            If the word is not in the vocabulary.
        """
        s = self._slot.get(word, -1)
        if s < 0:
            raise InputError(f"{word!r} is not in the vocabulary")
        self._release(s, [], to_sketch=True)
        return s

    def _maintain(self, evicted: list[int]) -> None:
        if self.max_df is None or self.n_docs_seen < self.max_df_min_docs:
            return
        self._flush()
        limit = self.max_df * self.total_weight
        for s in range(self.capacity):
            if self._words[s] is not None and not self._pinned[s] and self._df[s] > limit:
                df = float(self._df[s])
                t = self._release(s, evicted, to_sketch=False)
                self._blocked[t] = df
                self._slot[t] = _BLOCKED
        for t, df in list(self._blocked.items()):
            if df <= limit:
                del self._blocked[t]
                del self._slot[t]
                self._sk[t] = df
                self._sk_err.pop(t, None)
        if len(self._sk) > 2 * self.sketch_size:
            self._prune()

    def rescale(self, factor: float) -> None:
        """Multiply every stored frequency by ``factor`` (the store's renormalization)."""
        f = float(factor)
        self._df = self._df * f
        self._admitted = self._admitted * f
        self._sk = {w: c * f for w, c in self._sk.items()}
        self._sk_err = {w: e * f for w, e in self._sk_err.items()}
        self._blocked = {w: c * f for w, c in self._blocked.items()}
        self._floor *= f
        self._weak *= f
        self.total_weight *= f

    # ------------------------------------------------------------------ persistence
    def get_state(self) -> dict:
        """Everything needed to continue exactly, as arrays and plain scalars."""
        sk_words = list(self._sk)
        err = self._sk_err
        return {
            "slot_words": list(self._words),
            "slot_df": self._df.copy(),
            "slot_admitted": self._admitted.copy(),
            "pinned": self._pinned.copy(),
            "sketch_words": sk_words,
            "sketch_counts": np.fromiter(self._sk.values(), dtype=np.float64, count=len(sk_words)),
            "sketch_errors": np.asarray([err.get(w, 0.0) for w in sk_words], dtype=np.float64),
            "blocked_words": list(self._blocked),
            "blocked_df": np.fromiter(self._blocked.values(), dtype=np.float64,
                                      count=len(self._blocked)),
            "floor": self._floor,
            "total_weight": self.total_weight,
            "n_docs_seen": self.n_docs_seen,
        }

    def set_state(self, state: dict) -> None:
        """Restore what :meth:`get_state` returned (settings are those of ``self``)."""
        words = [w if w else None for w in state["slot_words"]]
        if len(words) != self.capacity:
            raise InputError(f"state has {len(words)} slots but the vocabulary capacity is "
                             f"{self.capacity}")
        stop = self.stopwords
        self._reset_state()
        for w in stop:
            self._slot[w] = _STOP
        self._slot[""] = _STOP
        df = np.asarray(state["slot_df"], dtype=np.float64)
        for s, w in enumerate(words):
            if w is not None:
                self._words[s] = w
                self._slot[w] = s
        self._df = df.copy()
        # Before admission points were recorded: from the start (no correction), as read then.
        admitted = state.get("slot_admitted")
        self._admitted = (np.zeros((self.capacity, 2)) if admitted is None
                          else np.asarray(admitted, dtype=np.float64).copy())
        self._pinned = np.asarray(state["pinned"], dtype=bool).copy()
        self._free = [s for s, w in enumerate(words) if w is None]
        heapq.heapify(self._free)
        counts = np.asarray(state["sketch_counts"], dtype=np.float64).tolist()
        errs = np.asarray(state["sketch_errors"], dtype=np.float64).tolist()
        self._sk = dict(zip(state["sketch_words"], counts, strict=True))
        self._sk_err = {w: e for w, e in zip(state["sketch_words"], errs, strict=True)
                        if e != 0.0}
        bdf = np.asarray(state["blocked_df"], dtype=np.float64).tolist()
        self._blocked = dict(zip(state["blocked_words"], bdf, strict=True))
        self._slot.update(dict.fromkeys(self._blocked, _BLOCKED))
        self._floor = float(state["floor"])
        self.total_weight = float(state["total_weight"])
        self.n_docs_seen = int(state["n_docs_seen"])
