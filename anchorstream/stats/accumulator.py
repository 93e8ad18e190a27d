"""The in-memory delta between two checkpoints, and the arithmetic of forgetting.

What the accumulator holds
--------------------------
Documents arrive as the vocabulary slots of their in-vocabulary tokens. Each contributes
``s_d (h_d h_dᵀ − diag h_d)`` with ``s_d = w_d / (n_d (n_d − 1))`` (``w_d`` is the document's
decay weight, 1 without forgetting), plus ``w_d h_d`` to the unigram mass, ``w_d`` to the
document frequency of each of its words, ``w_d`` to the document count and ``w_d n_d`` to the
token count; documents with ``n_d < 2`` contribute nothing (as in the batch estimator).

Between folds documents sit in a buffer (their distinct slots, counts and scale); folds add
their pair terms into a dense block of hot rows and a sparse CSR for the rest, and evictions are
applied lazily at the next fold. Why this representation (the alternatives were measured):
docs/store.md, "The accumulator".

Forgetting
----------
Exponential decay with half-life ``h`` (in documents or seconds) is applied with a global scale:
a document at time ``t`` is added with weight ``w = 2^{(t − t_ref)/h}``, and everything stored
is read out multiplied by ``2^{−(T − t_ref)/h}`` at the current time ``T``. That is exact (every
document ends up with weight ``2^{−(T − t)/h}``) and costs nothing per document; when ``w``
would grow past ``renormalize_above`` the store rescales what it holds in memory
(:meth:`Accumulator.rescale`) and moves ``t_ref`` forward.
Tumbling windows put each document in window ``⌊t / size⌋`` (``t`` counted from 0 for
documents); the store keeps one delta per window and sums the last ``n_windows``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from anchorstream._kernels.store import (
    store_dense_nonzero,
    store_pair_delta,
    store_unique_counts,
)
from anchorstream.stats.cooccurrence import cap_pairs, pair_scale
from anchorstream.errors import InputError

__all__ = ["Accumulator", "Delta", "Forgetting"]

_UNITS = ("documents", "seconds")


@dataclass(frozen=True)
class Forgetting:
    """How the store forgets: exponential decay, tumbling windows, both or neither.

    Parameters
    ----------
    half_life : float or None, default None
        Half-life of a document's weight, in ``unit``; None for no decay.
    window : float or None, default None
        Length of a tumbling window, in ``unit``; None for a single everlasting window.
    n_windows : int, default 1
        How many of the most recent windows the matrix sums (only with ``window``).
    unit : {"documents", "seconds"}, default "documents"
        What time is measured in: the number of documents added so far, or the documents'
        timestamps (seconds, as passed to the store).
    renormalize_above : float, default 2**256
        Largest document weight before the store rescales what it holds (see module notes).

    Examples
    --------
    >>> f = Forgetting(half_life=10.0)
    >>> f.weight(20.0, 0.0), f.readout(20.0, 0.0)
    (4.0, 0.25)
    """

    half_life: float | None = None
    window: float | None = None
    n_windows: int = 1
    unit: str = "documents"
    renormalize_above: float = 2.0**256

    def __post_init__(self) -> None:
        for name in ("half_life", "window"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float, np.integer, np.floating))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise InputError(f"{name} must be a positive number or None, got {value!r}")
        n = self.n_windows
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InputError(f"n_windows must be an int >= 1, got {n!r}")
        if self.window is None and n != 1:
            raise InputError(f"n_windows={n} needs a window length (window=...)")
        if self.unit not in _UNITS:
            raise InputError(f"unit must be one of {_UNITS}, got {self.unit!r}")
        r = self.renormalize_above
        if not isinstance(r, (int, float)) or not (2.0 <= r <= 2.0**512):
            raise InputError(f"renormalize_above must be in [2, 2**512], got {r!r}")

    @property
    def decays(self) -> bool:
        return self.half_life is not None

    @property
    def ring(self) -> int:
        """Number of windows stored side by side (1 without windows)."""
        return self.n_windows if self.window is not None else 1

    def weight(self, t: float, t_ref: float) -> float:
        """Weight of a document at time ``t`` in units referred to ``t_ref``."""
        if self.half_life is None:
            return 1.0
        return 2.0 ** ((t - t_ref) / self.half_life)

    def needs_renormalize(self, t: float, t_ref: float) -> bool:
        """Whether a document at ``t`` would weigh more than ``renormalize_above``."""
        if self.half_life is None:
            return False
        # In the log domain: 2^x itself overflows past x = 1024.
        return (t - t_ref) / self.half_life > math.log2(self.renormalize_above)

    def readout(self, T: float, t_ref: float) -> float:
        """Factor turning stored values (referred to ``t_ref``) into true values at ``T``."""
        if self.half_life is None:
            return 1.0
        return 2.0 ** (-(T - t_ref) / self.half_life)

    def window_of(self, t: float) -> int:
        """Window id of time ``t`` (0 without windows)."""
        if self.window is None:
            return 0
        return int(math.floor(t / self.window))

    def to_dict(self) -> dict:
        return {
            "half_life": self.half_life,
            "window": self.window,
            "n_windows": int(self.n_windows),
            "unit": self.unit,
            "renormalize_above": float(self.renormalize_above),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Forgetting:
        return cls(**d)


@dataclass(eq=False)
class Delta:
    """The co-occurrence statistics of a set of documents over vocabulary slots, sparse.

    Parameters
    ----------
    rows, cols : int32 ndarray of shape (nnz,)
        Upper-triangle coordinates (``rows <= cols``), sorted by row then column, no duplicates.
    vals : float64 ndarray of shape (nnz,)
        ``Σ_d s_d (h_d h_dᵀ − diag h_d)`` at those coordinates.
    unigram, doc_freq : float64 ndarray of shape (n_slots,)
    num_docs, num_tokens : float
        Weighted sums (plain counts without decay).
    """

    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    unigram: np.ndarray
    doc_freq: np.ndarray
    num_docs: float
    num_tokens: float

    @property
    def n_slots(self) -> int:
        return self.unigram.shape[0]

    @property
    def nnz(self) -> int:
        return self.vals.shape[0]

    def dense(self) -> np.ndarray:
        """The full symmetric matrix, shape (n_slots, n_slots); for tests and small sizes."""
        V = self.n_slots
        out = np.zeros((V, V))
        np.add.at(out, (self.rows, self.cols), self.vals)
        off = self.rows != self.cols
        np.add.at(out, (self.cols[off], self.rows[off]), self.vals[off])
        return out


class Accumulator:
    """Documents added since the last checkpoint, as a sparse co-occurrence delta.

    Parameters
    ----------
    n_slots : int
        Vocabulary capacity ``V``; slots are ``0 .. V-1``.
    budget_bytes : int, default 256 MiB
        Memory the delta may use. Past it :attr:`is_full` turns true and the caller should
        checkpoint; adding more still works (the budget is a signal, never a data loss).
    hot_rows : int, optional
        Rows (slots ``0 .. hot_rows-1``, the frequent words) kept as a dense
        ``(hot_rows, n_slots)`` block; default: what half the budget holds.
    length_cap : float or None, default 2
        How a document's pairs are weighted
        (:func:`~anchorstream.stats.cooccurrence.pair_scale`); 2, every document the same, is the
        unbiased estimator.

    Examples
    --------
    >>> acc = Accumulator(3)
    >>> acc.add(np.array([0, 3]), np.array([0, 1, 1], dtype=np.int32))
    >>> d = acc.delta()
    >>> d.dense()
    array([[0.        , 0.33333333, 0.        ],
           [0.33333333, 0.33333333, 0.        ],
           [0.        , 0.        , 0.        ]])
    >>> d.num_docs, d.num_tokens
    (1.0, 3.0)
    """

    def __init__(
        self, n_slots: int, *, budget_bytes: int = 256 * 2**20, hot_rows: int | None = None,
        length_cap: float | None = 2,
    ):
        cap_pairs(length_cap)  # validates
        if isinstance(n_slots, bool) or not isinstance(n_slots, (int, np.integer)) or n_slots < 1:
            raise InputError(f"n_slots must be an int >= 1, got {n_slots!r}")
        if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, (int, np.integer)) or (
            budget_bytes < 1
        ):
            raise InputError(f"budget_bytes must be a positive int, got {budget_bytes!r}")
        if hot_rows is None:
            hot_rows = budget_bytes // 2 // (8 * n_slots)
        if isinstance(hot_rows, bool) or not isinstance(hot_rows, (int, np.integer)) or (
            hot_rows < 0
        ):
            raise InputError(f"hot_rows must be an int >= 0 or None, got {hot_rows!r}")
        self.n_slots = int(n_slots)
        self.budget_bytes = int(budget_bytes)
        self.hot_rows = int(min(hot_rows, n_slots))
        self.length_cap = length_cap
        self._dense: np.ndarray | None = None
        self.clear()

    # ------------------------------------------------------------------ state
    def clear(self) -> None:
        """Forget everything added (after a successful checkpoint)."""
        V = self.n_slots
        self._uslots = np.empty(1024, dtype=np.int32)
        self._ucounts = np.empty(1024, dtype=np.float64)
        self._m = 0  # used length of _uslots/_ucounts
        self._doc_start: list[int] = [0]
        self._doc_scale: list[float] = []
        self._pair_bound = 0  # Σ c_d (c_d + 1) / 2 over buffered documents, c_d cold slots
        # Folded cold rows as CSR arrays (indptr int64, indices int32, data float64).
        self._folded: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        if self._dense is not None:
            self._dense.fill(0.0)  # kept allocated: the next checkpoint interval needs it too
        self._has_folded = False
        # Evictions are applied lazily, at the next fold: buffer entries of slot s before
        # position _evict_pos[s] are void, and the folded rows/columns in _evicted are zeroed.
        self._evict_pos = np.zeros(V, dtype=np.int64)
        self._evicted: set[int] = set()
        self.unigram = np.zeros(V)
        self.doc_freq = np.zeros(V)
        self.num_docs = 0.0
        self.num_tokens = 0.0
        self.n_added = 0  # documents seen, including those too short to count

    @property
    def is_empty(self) -> bool:
        return self.n_added == 0

    @property
    def nbytes(self) -> int:
        """Bytes held now (buffer, hot block and folded delta; not the (V,) vectors)."""
        folded = 0 if self._folded is None else self._folded[2].size * 12 + (self.n_slots + 1) * 8
        dense = 0 if self._dense is None else self._dense.nbytes
        return self._m * 12 + len(self._doc_scale) * 16 + folded + dense

    @property
    def is_full(self) -> bool:
        """Whether the delta has reached ``budget_bytes`` (time to checkpoint)."""
        return self.nbytes + self._pending_pair_bytes() >= self.budget_bytes

    def _pending_pair_bytes(self) -> int:
        V = self.n_slots
        return min(self._pair_bound, V * (V + 1) // 2) * 12

    # ------------------------------------------------------------------ updates
    def add(
        self,
        indptr: np.ndarray,
        slots: np.ndarray,
        weights: np.ndarray | float = 1.0,
        evictions: Sequence[tuple[int, int]] = (),
    ) -> None:
        """Add documents given as the slots of their in-vocabulary tokens.

        Parameters
        ----------
        indptr : int ndarray of shape (n_docs + 1,)
            Document ``d`` is ``slots[indptr[d]:indptr[d + 1]]``.
        slots : int ndarray of shape (n_tokens,)
            Values in ``[0, n_slots)``; repeats are the word's count in the document.
        weights : float or float64 ndarray of shape (n_docs,), default 1.0
            Decay weight of each document (see :class:`Forgetting`).
        evictions : sequence of (doc_index, slot), default ()
            Slot evicted just before document ``doc_index`` (``0 .. n_docs``), in increasing
            ``doc_index``: the same as :meth:`evict` between two ``add`` calls, without
            splitting the batch (as the vocabulary reports them).

        Raises
        ------
        InputError
            For inconsistent shapes or slots out of range.
        """
        indptr = np.asarray(indptr, dtype=np.int64)
        slots = np.ascontiguousarray(slots, dtype=np.int32)
        if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0 or indptr[-1] != slots.size:
            raise InputError(
                "indptr must start at 0 and end at len(slots); got "
                f"indptr[0]={indptr[:1]}, indptr[-1]={indptr[-1:]}, len(slots)={slots.size}"
            )
        if np.any(np.diff(indptr) < 0):
            raise InputError("indptr must be non-decreasing")
        if slots.size and (slots.min() < 0 or slots.max() >= self.n_slots):
            raise InputError(
                f"slots must lie in [0, {self.n_slots}), got range "
                f"[{slots.min()}, {slots.max()}]"
            )
        n_docs = indptr.size - 1
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), (n_docs,))
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise InputError("weights must be finite and non-negative")
        uindptr, uslots, ucounts = store_unique_counts(indptr, slots, self.n_slots)
        if len(evictions):
            base = self._m
            last = 0
            for d, slot in evictions:
                d, slot = int(d), int(slot)
                if not (last <= d <= n_docs and 0 <= slot < self.n_slots):
                    raise InputError(
                        f"evictions must be (doc_index, slot) with doc_index increasing in "
                        f"[0, {n_docs}] and slot in [0, {self.n_slots}), got {(d, slot)}"
                    )
                last = d
                self.evict(slot)
                self._evict_pos[slot] = base + uindptr[d]
            # This batch's entries before their slot's eviction leave the marginals now; the
            # pair terms are voided at the next fold like the rest of the buffer.
            void = base + np.arange(uslots.size) < self._evict_pos[uslots]
            if void.any():
                uslots = uslots.copy()
                uslots[void] = -1
        n = np.diff(indptr).astype(np.float64)
        counted = n >= 2
        scale = w * pair_scale(n, self.length_cap)  # 0 where n < 2
        self._append(uindptr, uslots, ucounts, scale)
        # Marginals go straight into the (V,) vectors: O(m) work, nothing to defer.
        per_entry_w = np.repeat(np.where(counted, w, 0.0), np.diff(uindptr))
        valid = uslots >= 0
        if not valid.all():
            per_entry_w = np.where(valid, per_entry_w, 0.0)
            uslots_b = np.where(valid, uslots, 0)
        else:
            uslots_b = uslots
        self.unigram += np.bincount(uslots_b, weights=per_entry_w * ucounts,
                                    minlength=self.n_slots)
        self.doc_freq += np.bincount(uslots_b, weights=per_entry_w, minlength=self.n_slots)
        self.num_docs += float(w[counted].sum())
        self.num_tokens += float((w[counted] * n[counted]).sum())
        self.n_added += n_docs
        self._maybe_fold()

    def _append(self, uindptr, uslots, ucounts, scale) -> None:
        m = uslots.size
        need = self._m + m
        if need > self._uslots.size:
            cap = max(need, 2 * self._uslots.size)
            self._uslots = np.resize(self._uslots, cap)
            self._ucounts = np.resize(self._ucounts, cap)
        self._uslots[self._m : need] = uslots
        self._ucounts[self._m : need] = ucounts
        base = self._m
        self._doc_start.extend((uindptr[1:] + base).tolist())
        self._doc_scale.extend(scale.tolist())
        # Only pairs of two cold slots (>= hot_rows) go to the sparse part.
        doc = np.repeat(np.arange(scale.size), np.diff(uindptr))
        cold = np.bincount(doc[uslots >= self.hot_rows], minlength=scale.size)[scale > 0]
        self._pair_bound += int((cold * (cold + 1) // 2).sum())
        self._m = need

    def rescale(self, factor: float) -> None:
        """Multiply everything held by ``factor`` (the store's renormalization of units)."""
        f = float(factor)
        self._doc_scale = [x * f for x in self._doc_scale]
        if self._folded is not None:
            self._folded[2][:] *= f
        if self._dense is not None:
            self._dense *= f
        self.unigram *= f
        self.doc_freq *= f
        self.num_docs *= f
        self.num_tokens *= f

    def evict(self, slot: int) -> None:
        """Void every contribution involving ``slot`` (its word left the vocabulary).

        Row and column ``slot`` become zero in the delta and its unigram and document frequency
        zero; document lengths are unchanged, so every other pair keeps its value.
        """
        slot = int(slot)
        if not 0 <= slot < self.n_slots:
            raise InputError(f"slot must lie in [0, {self.n_slots}), got {slot}")
        # O(1) now (a stream near capacity evicts every few dozen documents); the matrix
        # entries are voided in one vectorized pass at the next fold.
        self._evict_pos[slot] = self._m
        if self._has_folded:
            self._evicted.add(slot)
        self.unigram[slot] = 0.0
        self.doc_freq[slot] = 0.0

    def _apply_evictions(self) -> None:
        if self._m:
            buf = self._uslots[: self._m]
            # Entries never have slot -1 here: voided ones are only marked in this pass.
            void = np.arange(self._m) < self._evict_pos[np.maximum(buf, 0)]
            buf[void] = -1
        self._evict_pos[:] = 0
        if self._evicted:
            gone = np.zeros(self.n_slots, dtype=bool)
            gone[list(self._evicted)] = True
            if self._folded is not None:
                indptr, indices, data = self._folded
                rows = np.repeat(gone, np.diff(indptr))
                data[rows | gone[indices]] = 0.0
            if self._dense is not None:
                self._dense[gone[: self.hot_rows]] = 0.0
                self._dense[:, gone] = 0.0
        self._evicted = set()

    def _maybe_fold(self) -> None:
        # Fold when the buffer's worst case outgrows the folded part: geometric growth keeps
        # the cost of re-adding the folded delta amortised O(1) per entry. (Folding whenever
        # the budget is reached instead would re-add the whole delta on every call; the budget
        # is the caller's signal to checkpoint, see is_full.)
        pending = self._pending_pair_bytes() + self._m * 12
        folded = 0 if self._folded is None else self._folded[2].size * 12
        if pending > max(folded, 8 * 2**20):
            self._fold()

    def _fold(self) -> None:
        self._apply_evictions()
        if not self._doc_scale:
            return
        uindptr = np.asarray(self._doc_start, dtype=np.int64)
        scale = np.asarray(self._doc_scale, dtype=np.float64)
        if self._dense is None:
            self._dense = np.zeros((self.hot_rows, self.n_slots))
        # The kernel adds the folded delta in the same pass (no separate sparse addition).
        self._folded = store_pair_delta(
            uindptr, self._uslots[: self._m], self._ucounts[: self._m], scale, self.n_slots,
            self._dense, self._folded,
        )
        self._has_folded = True
        self._m = 0
        self._doc_start = [0]
        self._doc_scale = []
        self._pair_bound = 0

    def delta(self) -> Delta:
        """Everything added since :meth:`clear`, as a :class:`Delta` (the state is kept).

        Returns
        -------
        Delta
            Upper-triangle COO, sorted, without explicit zeros.
        """
        self._fold()
        V = self.n_slots
        parts = []
        if self._dense is not None:
            # Rows < hot_rows; the block's lower triangle is never written, so it is zero.
            parts.append(store_dense_nonzero(self._dense))
        if self._folded is not None:
            indptr, indices, data = self._folded  # columns already increase within a row
            rows = np.repeat(np.arange(V, dtype=np.int32), np.diff(indptr))
            keep = data != 0.0
            parts.append((rows[keep], indices[keep], data[keep]))
        if len(parts) == 1:
            rows, cols, vals = parts[0]
        elif parts:
            rows, cols, vals = (np.concatenate(x) for x in zip(*parts))
        else:
            rows, cols, vals = np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0)
        return Delta(
            rows, cols, vals, self.unigram.copy(), self.doc_freq.copy(),
            self.num_docs, self.num_tokens,
        )
