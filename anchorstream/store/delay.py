"""Counting each document a fixed number of documents after it arrived (a *delay line*).

A stream store gives a word a slot once its sketched document frequency reaches the admission
threshold, so a word's first documents, and their pairs, were never counted where documents
are counted on arrival. On a stream in time order, where new words arrive in bursts, that
cost 0.025 of held-out NPMI on the change-log corpus and 0.008 on the medium one
(``benchmarks/bench_admission_delay.py``, benchmarks/README.md). With a delay of ``B``
documents the vocabulary still observes every document on arrival (its sketch, admissions,
evictions and ``max_df`` are unchanged), but a document's tokens are looked up, and its
pairs counted, when ``B`` more documents have arrived: words admitted meanwhile count in it.

The documents waiting are part of the store's state: committed with every checkpoint beside
the vocabulary (:meth:`DelayLine.items`) and restored with it, so a crash and replay counts
what an uninterrupted run counts. Each leaving document is looked up in the vocabulary as it
was when the document that pushed it out arrived, so where a batch ends never changes what is
counted.

Readers need not lag: :func:`waiting_of_arrays` counts a version's waiting documents over its
words, which :func:`add_waiting` adds to a reader's own copy of the counts: what the store
holds once they leave the line with no other document arriving (:meth:`Delaying.
flush_delayed`). See docs/store.md, "The delay line".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat

import numpy as np
import zarr

from anchorstream.errors import InputError
from anchorstream.zarrio import get_all, get_words, words_items

__all__ = ["AUTO", "AUTO_DELAY", "COUNT_DELAY_PAIRS", "GROUP", "DelayLine", "Delaying",
           "Exits", "Waiting", "check_count_delay", "check_count_delay_pairs", "count_delay",
           "count_delay_pairs", "defaulted_settings", "documents_left", "load_delay_line",
           "pairs_of", "resolve_count_delay", "waiting", "with_waiting_windows"]

#: The group of a store's waiting documents.
GROUP = "delay"

#: The setting that lets a store's kind choose its delay (:func:`resolve_count_delay`).
AUTO = "auto"

#: ``auto``'s delay where it holds documents back: on the change log, the speeches and the
#: verses, 1,000 won back all that late admissions cost and 3,000 no more (session 66).
AUTO_DELAY = 1000

#: The daemon's and ``ingest``'s bound on the word pairs waiting: 1,000 documents of 100
#: tokens, whose recount costs a refresh ~0.4 s (benchmarks/README.md, "Session 67").
COUNT_DELAY_PAIRS = 5_000_000


def count_delay(config: Mapping) -> int:
    """Documents a store waits before counting one (stores made before the setting: 0)."""
    return int(config.get("count_delay", 0))


def count_delay_pairs(config: Mapping) -> int | None:
    """The most word pairs a store's line holds (stores made before the setting: no bound)."""
    value = config.get("count_delay_pairs")
    return None if value is None else int(value)


def check_count_delay_pairs(value) -> int | None:
    """``value`` as the line's bound on pairs: an integer >= 1 or None, else InputError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"count_delay_pairs must be an integer >= 1 or None (word pairs), "
                         f"got {value!r}")
    return int(value)


def defaulted_settings(count_delay, count_delay_pairs) -> list[str]:
    """The delay settings of a daemon or ``ingest`` left at their defaults (``auto``,
    :data:`COUNT_DELAY_PAIRS`): an existing store that keeps others departs from nothing asked
    (``CooccurrenceStore.open_or_create(defaulted=...)`` does not warn of them).

    >>> defaulted_settings("auto", COUNT_DELAY_PAIRS), defaulted_settings(0, None)
    (['count_delay', 'count_delay_pairs'], [])
    """
    unset = (("count_delay", isinstance(count_delay, str) and count_delay == AUTO),
             ("count_delay_pairs", count_delay_pairs == COUNT_DELAY_PAIRS))
    return [key for key, default in unset if default]


def pairs_of(doc: Waiting) -> int:
    """A waiting document's word pairs, ``n (n - 1) / 2`` of its ``n`` tokens (those outside
    the vocabulary too: what it costs at most to count, fixed on arrival)."""
    n = len(doc.tokens)
    return n * (n - 1) // 2


def check_count_delay(value) -> int:
    """``value`` as a delay: an integer >= 0, else InputError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InputError(f"count_delay must be an integer >= 0 (documents), got {value!r}")
    return int(value)


def resolve_count_delay(value, *, admits_words: bool, tumbling: bool,
                        reads_documents: bool = False) -> int:
    """``value``, ``'auto'`` or a delay (:func:`check_count_delay`), as a delay.

    ``'auto'`` is :data:`AUTO_DELAY` where the vocabulary admits words as documents arrive
    (there the delay wins their first documents back) and readers count the documents waiting,
    else 0: with tumbling windows (whose snapshots would lag by the delay) and where the model
    reads the document statistics of DDP, RP or TSVD (``reads_documents``), which count a
    document once it leaves the line (reads add the waiting ones to the counts and the
    refinement's windows only).

    >>> resolve_count_delay("auto", admits_words=True, tumbling=False)
    1000
    >>> resolve_count_delay("auto", admits_words=False, tumbling=False)
    0
    >>> resolve_count_delay(50, admits_words=True, tumbling=True)
    50
    """
    if isinstance(value, str) and value == AUTO:
        held = admits_words and not (tumbling or reads_documents)
        return AUTO_DELAY if held else 0
    return check_count_delay(value)


@dataclass(frozen=True)
class Waiting:
    """A document in the line: its tokens, time, tumbling window and stream position."""

    tokens: tuple[str, ...]
    time: float
    window: int
    position: int


@dataclass
class Exits:
    """Documents leaving the line in one :meth:`CooccurrenceStore.add
    <anchorstream.store.CooccurrenceStore.add>`, as the counting takes them: the slots of each
    one's in-vocabulary tokens (and where they stood), and the evictions between them.

    :meth:`take` queues a document; :meth:`settle` looks the queued ones up in the slot table
    of now, all their tokens in one pass (call it before the table changes, and at the end)."""

    times: list[float] = field(default_factory=list)
    windows: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    #: ``(doc_index, slot)``: slot evicted before document ``doc_index`` (``0 .. n``).
    evictions: list[tuple[int, int]] = field(default_factory=list)
    #: Each settled run's tokens as slots (-1: no slot), and every document's token count.
    found: list[np.ndarray] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    pending: list[Waiting] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.times)

    def evicted(self, slots) -> None:
        """Slots evicted now: before the next document leaving."""
        n = len(self.times)
        self.evictions += [(n, int(s)) for s in slots]

    def take(self, doc: Waiting) -> None:
        """``doc`` counted now, over the slots its words have when :meth:`settle` next runs."""
        self.times.append(doc.time)
        self.windows.append(doc.window)
        self.positions.append(doc.position)
        self.lengths.append(len(doc.tokens))
        self.pending.append(doc)

    def settle(self, table: dict) -> None:
        """Look the documents taken since the last call up in ``table`` (word to slot, the
        vocabulary of now)."""
        if not self.pending:
            return
        tokens = list(chain.from_iterable(d.tokens for d in self.pending))
        self.found.append(np.fromiter(map(table.get, tokens, repeat(-1)), dtype=np.int64,
                                      count=len(tokens)))
        self.pending = []

    def arrays(self) -> tuple:
        """``(times, windows, positions, (indptr, slots, evictions), where)`` as the
        counting takes them: each settled document's in-vocabulary tokens' slots and where
        they stood in it."""
        if self.pending:
            raise RuntimeError("Exits.arrays() before settle(): documents not looked up")
        found = np.concatenate(self.found) if self.found else np.zeros(0, dtype=np.int64)
        lengths = np.asarray(self.lengths, dtype=np.int64)
        n = lengths.size
        doc = np.repeat(np.arange(n), lengths)
        keep = found >= 0
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(doc[keep], minlength=n), out=indptr[1:])
        place = np.arange(found.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return (np.asarray(self.times, dtype=np.float64),
                np.asarray(self.windows, dtype=np.int64),
                np.asarray(self.positions, dtype=np.int64),
                (indptr, found[keep].astype(np.int32), list(self.evictions)),
                place[keep].astype(np.int32))


class DelayLine:
    """The documents waiting to be counted, oldest first: at most ``length`` of them, holding
    at most ``max_pairs`` word pairs together (:func:`pairs_of`; None: no bound), so a line
    of long documents holds fewer of them: its memory, its checkpoints and every read's
    recount of them stay bounded."""

    def __init__(self, length: int, waiting=(), max_pairs: int | None = None):
        self.length = check_count_delay(length)
        self.max_pairs = check_count_delay_pairs(max_pairs)
        self._docs: deque[Waiting] = deque(waiting)
        #: The word pairs of the documents waiting.
        self.pairs = sum(map(pairs_of, self._docs))

    def __len__(self) -> int:
        return len(self._docs)

    def __iter__(self):
        return iter(self._docs)

    def push(self, doc: Waiting) -> list[Waiting]:
        """Queue ``doc``; the oldest documents that leave for it (more than ``length``
        waiting, or more than ``max_pairs`` pairs: ``doc`` itself where it alone holds
        more), oldest first."""
        docs = self._docs
        docs.append(doc)
        self.pairs += pairs_of(doc)
        out = []
        while docs and (len(docs) > self.length
                        or self.max_pairs is not None and self.pairs > self.max_pairs):
            gone = docs.popleft()
            self.pairs -= pairs_of(gone)
            out.append(gone)
        return out

    def drain(self) -> list[Waiting]:
        """Every waiting document, oldest first; the line is empty after."""
        out = list(self._docs)
        self._docs.clear()
        self.pairs = 0
        return out

    @property
    def newest_window(self) -> int | None:
        """The newest tumbling window of a waiting document (None: none waits)."""
        return max((d.window for d in self._docs), default=None)

    def items(self, root: zarr.Group) -> list:
        """The arrays of the waiting documents for :func:`~anchorstream.zarrio.put_many`
        (group :data:`GROUP` of ``root``)."""
        g = root.require_group(GROUP)
        docs = list(self._docs)
        ends = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum([len(d.tokens) for d in docs], out=ends[1:])
        return words_items(g, "tokens", [t for d in docs for t in d.tokens]) + [
            (g, "ends", ends),
            (g, "times", np.asarray([d.time for d in docs], dtype=np.float64)),
            (g, "windows", np.asarray([d.window for d in docs], dtype=np.int64)),
            (g, "positions", np.asarray([d.position for d in docs], dtype=np.int64)),
        ]


def waiting(root: zarr.Group) -> int:
    """Documents waiting in the line committed in ``root``."""
    return int(root[GROUP]["ends"].shape[0] - 1) if GROUP in root else 0


def load_delay_line(root: zarr.Group, length: int, max_pairs: int | None = None
                    ) -> DelayLine:
    """The line committed in ``root`` (empty where none was: a new store, or one without a
    delay)."""
    if length <= 0 or GROUP not in root:
        return DelayLine(length, max_pairs=max_pairs)
    g = root[GROUP]
    tokens = get_words(g, "tokens")
    ends, times, windows, positions = get_all(g, ["ends", "times", "windows", "positions"])
    ends = ends.tolist()
    return DelayLine(length, (
        Waiting(tuple(tokens[a:b]), float(t), int(w), int(p))
        for a, b, t, w, p in zip(ends[:-1], ends[1:], times.tolist(), windows.tolist(),
                                 positions.tolist())), max_pairs)


def slot_table(vocabulary) -> dict[str, int]:
    """The slot of every word in ``vocabulary`` now."""
    return {w: s for s, w in enumerate(vocabulary.words) if w is not None}


class Delaying:
    """The counting of :class:`~anchorstream.store.CooccurrenceStore` with a delay line (a
    mixin: uses the writer's vocabulary, state and counting)."""

    def _add_delayed(self, docs, t, win, positions, w) -> int:
        """:meth:`add`'s counting where the store waits ``delay_line.length`` documents: each
        document is observed by the vocabulary on arrival and counted when it leaves the line.
        Returns the documents counted (those leaving).

        None of them is late when it leaves: :meth:`add` skipped, on arrival, every document
        whose window was expired by any document that arrived before it
        (:attr:`DelayLine.newest_window`), and those are all that can be counted before it."""
        line, vocabulary = self.delay_line, self.vocabulary
        exits = Exits()
        # One call observes them all (what one call decides is what one document at a time
        # would); the slot table of each moment is replayed from the changes it reports, so
        # every leaving document sees the table as of the arrival that pushed it out.
        table = slot_table(vocabulary)
        words = {s: word for word, s in table.items()}
        changes = vocabulary.observe_batch(docs, w.tolist(), changes=True)[-1]
        k = 0
        for i, doc in enumerate(docs):
            while k < len(changes) and changes[k][0] == i:
                _, slot, word = changes[k]
                k += 1
                exits.settle(table)  # the documents taken so far, before the table moves
                if word is None:  # freed: its word leaves
                    del table[words.pop(slot)]
                    exits.evicted([slot])
                else:
                    table[word], words[slot] = slot, word
            for gone in line.push(Waiting(tuple(doc), float(t[i]), int(win[i]),
                                          int(positions[i]))):
                exits.take(gone)
        exits.settle(table)
        return self._count_exits(exits)

    def flush_delayed(self) -> int:
        """Count every waiting document now, with the vocabulary of now (the end of a finite
        input, as ``anchorstream ingest`` does at the end of its files). Returns how many."""
        exits = Exits()
        for doc in self.delay_line.drain():
            self._dirty = True
            exits.take(doc)
        exits.settle(slot_table(self.vocabulary))
        return self._count_exits(exits)

    def _count_exits(self, exits: Exits) -> int:
        t, win, positions, observed, where = exits.arrays()
        if not len(exits):
            # Evictions with nothing counted after them: every counted document loses them.
            for _, slot in observed[2]:
                self._evict_slot(slot)
                if self._docstats is not None:
                    self._docstats.evict(slot, self.n_docs_added)
            return 0
        w = (np.exp2((t - self._state.t_ref) / self.forgetting.half_life)
             if self.forgetting.decays else np.ones(t.size))
        self._count(t, win, w, positions, observed, where if self._keeps_windows() else None)
        return len(exits)


# ---- Readers: the waiting documents counted with the vocabulary of the version read -------


def waiting_cooccurrence(X, times, *, length_cap, forgetting, clock: float):
    """The statistics of the waiting documents whose counts over a read's vocabulary (in its
    order) are the rows of ``X`` (canonical CSR) and whose times are ``times``, in true units
    at ``clock``: what counting them at that version adds to its counts, as
    :meth:`Delaying.flush_delayed` would. A
    :class:`~anchorstream.stats.sparse.SparseCooccurrence` (``mass``: what its counts sum to)."""
    from anchorstream.stats.cooccurrence import pair_scale
    from anchorstream.stats.pending import PendingSum
    from anchorstream.stats.sparse import SparseCooccurrence

    n = np.asarray(X.sum(axis=1)).ravel()
    w = np.where(n >= 2, _time_weights(times, forgetting, clock), 0.0)  # < 2 tokens: nothing
    scale = w * pair_scale(n, length_cap)
    # The upper triangle of the documents' pairs (1,000 documents of 100 tokens: 2-3 M) is
    # counted only where the entries are used, by the kernel fit --input's counts use
    # (document_gram_upper); the diagonal, row sums and products come from the documents.
    upper = PendingSum.of_documents(X, scale)
    unigram = X.T @ w
    doc_freq = (X > 0).astype(np.float64).T @ w
    mass = float(scale @ (n * (n - 1.0)))  # what the pairs sum to: Σ_d w_d n_d (n_d − 1)
    num_docs, num_tokens = float(w.sum()), float(w @ n)
    if not forgetting.decays:
        num_docs, num_tokens = int(round(num_docs)), int(round(num_tokens))
    return SparseCooccurrence(upper, unigram, doc_freq, num_docs, num_tokens, length_cap,
                              mass, documents=(X, scale))


def _time_weights(times, forgetting, clock: float) -> np.ndarray:
    """The decay weights in true units at ``clock`` of documents of ``times`` (1 without
    decay)."""
    times = np.asarray(times, dtype=np.float64)
    return (np.exp2((times - clock) / forgetting.half_life) if forgetting.decays
            else np.ones(times.size))


def waiting_window_pairs(docs, words, *, window: int, length_cap, forgetting, clock: float):
    """The pairs of the waiting ``docs``' windows of ``window`` tokens over ``words`` (a
    :class:`~anchorstream.stats.windowpairs.WindowPairs` in true units at ``clock``): what
    counting them adds to the windows' pairs a store keeps for the refinement, as
    :meth:`Delaying.flush_delayed` would. A token outside ``words`` takes its place in its
    window, as the writer's ``token_positions`` say."""
    from anchorstream.stats.windowpairs import (WindowPairs, window_counts,
                                                window_pair_entries)

    exits = Exits()  # the writer's lookup: the words' positions and where they stood
    for d in docs:
        exits.take(d)
    exits.settle({word: i for i, word in enumerate(words)})
    _, _, _, (indptr, slots, _), places = exits.arrays()
    W, window_doc = window_counts(indptr, slots, places, window, len(words))
    w = _time_weights([d.time for d in docs], forgetting, clock)[window_doc]
    *entries, counts = window_pair_entries(W, w, length_cap, np.zeros(W.nnz, dtype=bool))
    return WindowPairs.from_entries(*entries, len(words), counts)


def with_waiting_windows(state, root: zarr.Group, config: Mapping, slots, length_cap):
    """``state`` (a :class:`~anchorstream.stats.documents.DocumentState` read from ``root``
    over its ``slots``) with its windows' pairs counting the committed line's documents too,
    so that the refinement's pairs cover the documents the read's counts do
    (:func:`waiting_of_arrays`); as it is where it keeps no windows' pairs or nothing waits. A
    window's length counts its tokens in every word of the version, as the writer's do."""
    from dataclasses import replace

    from anchorstream.stats.accumulator import Forgetting
    from anchorstream.stats.windowpairs import WindowPairs

    pairs = None if state is None else state.window_pairs
    forgetting = Forgetting.from_dict(config["forgetting"])
    if pairs is None or forgetting.window is not None:
        return state
    line = load_delay_line(root, count_delay(config))
    if not len(line):
        return state
    words_all = get_words(root["vocab"], "slot_words")
    active = [slot for slot, word in enumerate(words_all) if word]
    more = waiting_window_pairs(list(line), [words_all[slot] for slot in active],
                                window=state.settings.pair_window, length_cap=length_cap,
                                forgetting=forgetting, clock=float(root.attrs["state"]["clock"]))
    where = {slot: i for i, slot in enumerate(active)}
    more = more.subset([where[int(slot)] for slot in slots])
    return replace(state, window_pairs=WindowPairs(
        pairs.upper + more.upper, pairs.num_docs + more.num_docs,
        pairs.num_tokens + more.num_tokens))


def waiting_arrays(config: Mapping) -> list[str] | None:
    """The arrays that hold the delay line committed in a version of a store of settings
    ``config`` (absent where no line was committed yet), or None where a reader does not
    count its documents: where nothing waits, or where the store keeps tumbling windows
    (counting them would also expire windows: those readers see the counted documents only).
    A reader fetches them in the same trip to Zarr as the version's other arrays
    (:func:`~anchorstream.zarrio.get_all`, :func:`~anchorstream.store.versionhead.read_head`)
    and counts them with :func:`waiting_of_arrays`."""
    from anchorstream.stats.accumulator import Forgetting

    forgetting = Forgetting.from_dict(config["forgetting"])
    if count_delay(config) <= 0 or forgetting.window is not None:
        return None
    return [f"{GROUP}/{name}" for name in ("tokens_utf8", "tokens_offsets", "ends", "times")]


def waiting_of_arrays(arrays, config: Mapping, *, words, length_cap, clock: float):
    """:func:`waiting_cooccurrence` over ``words`` of the committed line whose arrays
    :func:`waiting_arrays` names, as read; None where nothing waits."""
    from anchorstream.stats.accumulator import Forgetting
    from anchorstream.text.bags import count_runs_utf8

    # Counted from the line's flat tokens, no Waiting per document (1,000 waiting npm
    # summaries 16 -> 10 ms a read), looked up by their bytes, not decoded.
    utf8, offsets, ends, times = arrays
    if ends.size <= 1:
        return None
    X = count_runs_utf8(utf8, offsets, ends, words)
    return waiting_cooccurrence(X, times, length_cap=length_cap,
                                forgetting=Forgetting.from_dict(config["forgetting"]),
                                clock=clock)


def documents_left(before, after, arrived: int):
    """The documents that left a store's delay line between two of its reads over the same
    words, as ``(H, w)`` (the ``documents`` of :func:`waiting_cooccurrence`): ``before`` and
    ``after`` are the reads' waiting statistics (:func:`waiting_of_arrays`; None: nothing
    waited), ``arrived`` the documents added between them. The line is first in, first out,
    so they are the first ``len(before) + arrived − len(after)`` of ``before``'s documents;
    None where that is not a number of them, or no document left.

    What they are said to be is not checked here: a reader that multiplies them in place of
    the segments that counted them checks that they made those segments' pairs
    (:func:`~anchorstream.stats.sparse.upper_matmul_through`)."""
    if before is None or before.documents is None:
        return None
    H, w = before.documents
    waits = 0 if after is None or after.documents is None else after.documents[0].shape[0]
    left = H.shape[0] + int(arrived) - waits
    if not 0 < left <= H.shape[0]:
        return None
    return H[:left], w[:left]


def selection_marginals(cooc, waiting):
    """What choosing the words of a model reads (``doc_freq`` and ``num_docs``) of ``cooc``
    plus the ``waiting`` documents' statistics (None: ``cooc`` itself)."""
    if waiting is None:
        return cooc
    from types import SimpleNamespace

    return SimpleNamespace(doc_freq=np.asarray(cooc.doc_freq) + waiting.doc_freq,
                           num_docs=cooc.num_docs + waiting.num_docs)


def select_with_waiting(cooc, idx, waiting, *, pending: bool = False):
    """The words ``idx`` of a read's ``cooc`` plus the ``waiting`` documents' statistics (over
    the read's words): what ``add_waiting(cooc.subset(idx, keep_total=False), waiting, idx)``
    returns (``cooc`` itself where ``idx`` is every word), bit for bit. Sparse counts are moved
    to the words and summed with the waiting documents' in one pass
    (:func:`~anchorstream.stats.sparse.csr_moved_sum`): the subset is not held beside the sum,
    a copy of the counts fewer at a refresh that keeps its read. With ``pending`` the sum is
    formed at the first use of its entries (a :class:`~anchorstream.stats.pending.PendingSum`,
    which holds ``cooc``'s counts until then: for a reader that keeps them anyway; a warm
    refresh whose one product is known never forms it). A sparse ``cooc`` is left as it is;
    dense counts go through :func:`add_waiting`, which adds to their subset, or to ``cooc``
    itself where ``idx`` is every word, in place."""
    from anchorstream.stats.sparse import PendingSum, SparseCooccurrence

    idx = np.asarray(idx, dtype=np.int64)
    every = idx.size == cooc.n_words
    if (waiting is None or every or not isinstance(cooc, SparseCooccurrence)
            or np.any(np.diff(idx) <= 0)):
        return add_waiting(cooc if every else cooc.subset(idx, keep_total=False), waiting, idx,
                           pending=pending and every)
    to = np.full(cooc.n_words, -1, dtype=np.int64)
    to[idx] = np.arange(idx.size)
    # The waiting documents' statistics over the read's words move with the read; over the
    # words idx already, they are as they are.
    wait_to = to if waiting.n_words == cooc.n_words else None
    # Counts not formed yet (a catch-up's, the waiting documents' pairs) are moved with the
    # rest, not formed.
    summed = PendingSum.of_terms([(cooc.held, to), (waiting.held, wait_to)],
                                 (idx.size, idx.size))
    take = slice(None) if wait_to is None else idx
    return SparseCooccurrence(
        summed if pending else summed.form(),
        np.asarray(cooc.unigram)[idx] + np.asarray(waiting.unigram)[take],
        np.asarray(cooc.doc_freq)[idx] + np.asarray(waiting.doc_freq)[take],
        cooc.num_docs + waiting.num_docs, cooc.num_tokens + waiting.num_tokens,
        cooc.length_cap, check=False)  # a sum of checked counts


def add_waiting(cooc, waiting, idx=None, *, pending: bool = False):
    """``cooc`` plus the ``waiting`` documents' statistics (:func:`waiting_of_arrays`; taken at the
    words ``idx`` of the read, those of ``cooc``, where given). A sparse ``cooc`` is left as it
    is (a new one is returned, at its exact size; with ``pending`` summed at the first use
    of its entries, as :func:`select_with_waiting` says); a dense one's counts are added to in
    place: pass a read's own copy, never counts kept for a later read. None adds nothing."""
    if waiting is None:
        return cooc
    from anchorstream.stats.cooccurrence import Cooccurrence
    from anchorstream.stats.sparse import PendingSum, SparseCooccurrence

    if idx is not None and len(idx) != waiting.n_words:
        waiting = waiting.subset(idx)
    mass = None if cooc.mass is None else cooc.mass + waiting.total_weight()
    vectors = (np.asarray(cooc.unigram) + waiting.unigram,
               np.asarray(cooc.doc_freq) + waiting.doc_freq,
               cooc.num_docs + waiting.num_docs, cooc.num_tokens + waiting.num_tokens)
    if isinstance(cooc, SparseCooccurrence):
        summed = PendingSum.of_terms([(cooc.held, None), (waiting.held, None)],
                                     cooc.shape)
        return SparseCooccurrence(summed if pending else summed.form(), *vectors,
                                  cooc.length_cap, mass, check=False)  # checked counts
    U = waiting.upper.tocoo()  # canonical: each (row, col) once, so += adds every entry
    counts = cooc.counts
    counts[U.row, U.col] += U.data
    off = U.row != U.col
    counts[U.col[off], U.row[off]] += U.data[off]
    return Cooccurrence(counts, *vectors, cooc.length_cap, mass)
