"""The pieces of the document statistics: a sum over documents (:class:`Part`), the buffer of
pending documents, the reservoir, and reading stored segments back.

Used by :mod:`anchorstream.stats.documents`, which describes what is stored and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.windowpairs import window_pair_entries
from anchorstream.stats.windows import is_live
from anchorstream.stats.wordpatterns import project_words, split_documents

__all__ = ["Part", "Pending", "Reservoir", "document_delta", "read_segments"]


# ---------------------------------------------------------------------------------- a sum
@dataclass(eq=False)
class Part:
    """The statistics of some documents over store slots (unsummed duplicates allowed).

    ``rows, cols, vals``: cross entries; ``slots`` with ``vecs`` (k, n) and ``sketch`` (n, P)
    or None: per-slot columns; ``pairs``: the windows' pairs (rows, cols, vals; upper
    triangle, :mod:`anchorstream.stats.windowpairs`); ``docs``: [split documents, sketch
    documents, windows, the windows' tokens] (weighted).
    """

    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    slots: np.ndarray
    vecs: np.ndarray
    sketch: np.ndarray | None
    docs: np.ndarray = field(default_factory=lambda: np.zeros(4))
    pairs: tuple = field(default_factory=lambda: _no_pairs())

    @classmethod
    def empty(cls, n_vecs: int, n_projections: int) -> Part:
        return cls(
            np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0), np.empty(0, np.int32),
            np.empty((n_vecs, 0)), np.empty((0, n_projections)) if n_projections else None,
        )

    @classmethod
    def concat(cls, parts: Sequence[Part]) -> Part:
        sk = [p.sketch for p in parts]
        return cls(
            np.concatenate([p.rows for p in parts]).astype(np.int32),
            np.concatenate([p.cols for p in parts]).astype(np.int32),
            np.concatenate([p.vals for p in parts]),
            np.concatenate([p.slots for p in parts]).astype(np.int32),
            np.concatenate([p.vecs for p in parts], axis=1),
            None if sk[0] is None else np.concatenate(sk, axis=0),
            np.sum([p.docs for p in parts], axis=0),
            tuple(np.concatenate([p.pairs[i] for p in parts]) for i in range(3)),
        )

    def scaled(self, factor: float) -> Part:
        if factor == 1.0:
            return self
        return Part(self.rows, self.cols, self.vals * factor, self.slots, self.vecs * factor,
                     None if self.sketch is None else self.sketch * factor, self.docs * factor,
                     (*self.pairs[:2], self.pairs[2] * factor))

    def coalesced(self, capacity: int) -> Part:
        """Duplicates summed, entries sorted, explicit zeros dropped from the cross entries."""
        cross = _summed(self.rows, self.cols, self.vals, capacity)
        pairs = _summed(*self.pairs, capacity)
        slots, inv = np.unique(self.slots, return_inverse=True)
        vecs = np.zeros((self.vecs.shape[0], slots.size))
        for i in range(self.vecs.shape[0]):
            vecs[i] = np.bincount(inv, weights=self.vecs[i], minlength=slots.size)
        sketch = None
        if self.sketch is not None:
            sketch = np.zeros((slots.size, self.sketch.shape[1]))
            np.add.at(sketch, inv, self.sketch)
        return Part(cross.row.astype(np.int32), cross.col.astype(np.int32), cross.data,
                     slots.astype(np.int32), vecs, sketch, self.docs.copy(),
                     (pairs.row.astype(np.int32), pairs.col.astype(np.int32), pairs.data))


def _no_pairs() -> tuple:
    return np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0)


def _summed(rows, cols, vals, capacity: int) -> sp.coo_matrix:
    """Entries with duplicates summed, sorted, explicit zeros dropped."""
    m = sp.coo_matrix((vals, (rows, cols)), shape=(capacity, capacity)).tocsr()
    m.sum_duplicates()
    m.eliminate_zeros()
    return m.tocoo()


def _void_mask(M: sp.csr_matrix, doc_index: np.ndarray, evict_pos: np.ndarray) -> np.ndarray:
    """Entries of ``M`` (rows = documents) whose slot was evicted after their document."""
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    return doc_index[rows] < evict_pos[M.indices]


def _scaled_rows(M: sp.csr_matrix, scale: np.ndarray, void: np.ndarray) -> sp.csr_matrix:
    """``diag(scale) M`` with the ``void`` entries zeroed and every zero dropped."""
    out = M.copy()
    out.data = out.data * np.repeat(scale, np.diff(out.indptr))
    out.data[void] = 0.0
    out.eliminate_zeros()
    return out


def document_delta(X, ids, weights, doc_index, evict_pos, settings) -> Part:
    """The statistics of some pending documents (one window), voided entries zeroed.

    Exactly :func:`~anchorstream.stats.wordpatterns.split_statistic` and
    :func:`~anchorstream.stats.wordpatterns.rp_sketch` of ``X`` when every weight is 1 and
    nothing was evicted (tested), so streaming through the store equals the batch statistic.
    """
    lengths = np.asarray(X.sum(axis=1)).ravel()
    indicator = X.copy()
    indicator.data = np.ones_like(indicator.data)
    void_x = _void_mask(X, doc_index, evict_pos)

    first, second = split_documents(X, ids, settings.seed)
    keep2 = lengths >= 2
    halves = []
    # The first half carries the document's weight, the second not: w_d x⁽¹⁾ x⁽²⁾ᵀ.
    for half, w in ((first, weights), (second, np.ones_like(weights))):
        size = np.asarray(half.sum(axis=1)).ravel()
        scale = np.where(keep2, w / np.maximum(size, 1.0), 0.0)
        halves.append(_scaled_rows(half.tocsr(), scale, _void_mask(half, doc_index, evict_pos)))
    F1, F2 = halves
    cross = (F1.T @ F2).tocoo()
    df2 = _scaled_rows(indicator, np.where(keep2, weights, 0.0), void_x)
    columns = [np.asarray(F1.sum(axis=0)).ravel(), np.asarray(F2.T @ weights).ravel(),
               np.asarray(df2.sum(axis=0)).ravel()]
    docs = [float(weights[keep2].sum()), 0.0, 0.0, 0.0]
    sketch_cols = None
    if settings.sketch:
        keep1 = lengths >= 1
        F = _scaled_rows(X, np.where(keep1, weights / np.maximum(lengths, 1.0), 0.0), void_x)
        df1 = _scaled_rows(indicator, np.where(keep1, weights, 0.0), void_x)
        columns += [np.asarray(F.sum(axis=0)).ravel(), np.asarray(df1.sum(axis=0)).ravel()]
        docs[1] = float(weights[keep1].sum())
        rows = np.flatnonzero(keep1)
        touched = np.flatnonzero(np.diff(F.tocsc().indptr))
        proj = project_words(F[rows][:, touched], ids[rows], settings.n_projections,
                             settings.seed)
        sketch_cols = (touched, proj)
    vecs = np.vstack(columns)
    slots = np.flatnonzero(np.any(vecs != 0.0, axis=0))
    sketch = None
    if sketch_cols is not None:
        touched, proj = sketch_cols
        sketch = np.zeros((slots.size, settings.n_projections))
        sketch[np.searchsorted(slots, touched)] = proj
    return Part(cross.row.astype(np.int32), cross.col.astype(np.int32), cross.data,
                 slots.astype(np.int32), vecs[:, slots], sketch, np.asarray(docs))


# ---------------------------------------------------------------------------------- buffers
class Pending:
    """Documents added since the last checkpoint: their slot counts where ``documents`` (for
    the split and sketch), and their windows' slot counts (rows of ``W``, each with its
    document) where given, for the windows' pairs (:mod:`anchorstream.stats.windowpairs`),
    with ``length_cap`` the store's."""

    def __init__(self, capacity: int, length_cap=2, documents: bool = True):
        self.capacity = capacity
        self.length_cap = length_cap
        self.documents = documents
        self.clear()

    def clear(self) -> None:
        self.parts: list[sp.csr_matrix] = []
        self.ids: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.windows: list[np.ndarray] = []
        self.window_parts: list[sp.csr_matrix] = []
        self.window_docs: list[np.ndarray] = []
        self.n = 0
        # Entries of slot s in pending documents before index evict_pos[s] are void.
        self.evict_pos = np.zeros(self.capacity, dtype=np.int64)

    def add(self, X, ids, weights, windows, evictions, W=None, window_doc=None) -> None:
        base = self.n
        for d, slot in evictions:
            self.evict_pos[int(slot)] = base + int(d)
        if self.documents:
            self.parts.append(X)
        self.ids.append(np.asarray(ids, dtype=np.int64))
        self.weights.append(np.asarray(weights, dtype=np.float64).copy())
        self.windows.append(np.asarray(windows, dtype=np.int64))
        if W is not None:
            self.window_parts.append(W)
            self.window_docs.append(base + np.asarray(window_doc, dtype=np.int64))
        self.n += X.shape[0]

    def evict(self, slot: int) -> None:
        self.evict_pos[int(slot)] = self.n

    @property
    def nbytes(self) -> int:
        return sum(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
                   for X in self.parts + self.window_parts) + 28 * self.n + sum(
            d.nbytes for d in self.window_docs)

    def rescale(self, factor: float) -> None:
        self.weights = [w * factor for w in self.weights]

    def deltas(self, settings, current_window: int, ring: int) -> dict[int, Part]:
        """One :class:`Part` per live window with pending documents."""
        if not self.n:
            return {}
        X = sp.vstack(self.parts, format="csr") if self.documents else None
        ids, w, win = (np.concatenate(a) for a in (self.ids, self.weights, self.windows))
        if self.window_parts:
            W = sp.vstack(self.window_parts, format="csr")
            wdoc = np.concatenate(self.window_docs)
        out = {}
        for window in np.unique(win).tolist():
            if not is_live(window, current_window, ring):
                continue
            sel = np.flatnonzero(win == window)
            part = (document_delta(X[sel], ids[sel], w[sel], sel, self.evict_pos, settings)
                    if self.documents else Part.empty(0, 0))
            if self.window_parts:
                rows = np.flatnonzero(win[wdoc] == window)
                Wsel = W[rows]
                void = _void_mask(Wsel, wdoc[rows], self.evict_pos)
                *entries, docs = window_pair_entries(Wsel, w[wdoc[rows]], self.length_cap, void)
                part.pairs = tuple(entries)
                part.docs[2:] = docs
            out[window] = part
        return out


class Reservoir:
    """A weighted sample without replacement of ``size`` documents (see the module notes)."""

    _FIELDS = ("key", "pos", "seq", "window")

    def __init__(self, size: int, capacity: int, arrays: Mapping | None = None):
        self.size = int(size)
        self.capacity = int(capacity)
        if arrays is None:
            self.key = np.empty(0)
            self.pos = np.empty(0, np.int64)
            self.seq = np.empty(0, np.int64)
            self.window = np.empty(0, np.int64)
            self.docs = sp.csr_matrix((0, capacity))
        else:
            self.key = np.asarray(arrays["key"], np.float64)
            self.pos = np.asarray(arrays["pos"], np.int64)
            self.seq = np.asarray(arrays["seq"], np.int64)
            self.window = np.asarray(arrays["window"], np.int64)
            self.docs = sp.csr_matrix(
                (np.asarray(arrays["counts"], np.float64), np.asarray(arrays["slots"], np.int32),
                 np.asarray(arrays["indptr"], np.int64)), shape=(self.key.size, capacity))
        self.changed = False

    def offer(self, keys, pos, seq, window, X: sp.csr_matrix) -> None:
        """Offer documents (rows of ``X``; empty ones are never kept)."""
        cand = np.flatnonzero(np.diff(X.indptr) > 0)
        if self.key.size >= self.size and self.key.size:
            worst = self.key.max()
            cand = cand[keys[cand] < worst]
        if cand.size == 0:
            return
        key = np.concatenate([self.key, keys[cand]])
        p = np.concatenate([self.pos, pos[cand]])
        s = np.concatenate([self.seq, np.broadcast_to(seq, cand.size)])
        w = np.concatenate([self.window, window[cand]])
        docs = sp.vstack([self.docs, X[cand]], format="csr")
        best = np.lexsort((p, key))[: self.size]
        order = best[np.argsort(p[best], kind="stable")]  # kept in stream order
        self.key, self.pos, self.seq, self.window = key[order], p[order], s[order], w[order]
        self.docs = docs[order]
        self.changed = True

    def void(self, evict_abs: np.ndarray) -> None:
        """Drop entries of slot ``s`` in documents before stream position ``evict_abs[s]``."""
        d = self.docs
        if not d.nnz:
            return
        mask = _void_mask(d, self.pos, evict_abs)
        if mask.any():
            d = d.copy()
            d.data[mask] = 0.0
            d.eliminate_zeros()
            self.docs = d
            self.changed = True

    def drop_windows(self, current: int, ring: int) -> None:
        keep = self.window > current - ring
        if not keep.all():
            idx = np.flatnonzero(keep)
            self.key, self.pos = self.key[idx], self.pos[idx]
            self.seq, self.window = self.seq[idx], self.window[idx]
            self.docs = self.docs[idx]
            self.changed = True

    def arrays(self) -> dict:
        d = self.docs
        return {"key": self.key, "pos": self.pos, "seq": self.seq, "window": self.window,
                "indptr": d.indptr.astype(np.int64), "slots": d.indices.astype(np.int32),
                "counts": d.data.astype(np.float64)}

    def copy(self) -> Reservoir:
        out = Reservoir(self.size, self.capacity, self.arrays())
        out.docs = self.docs.copy()
        return out


def read_segments(group, segments, reset_seq, forgetting: Forgetting, T: float,
                   settings) -> Part:
    """Valid entries of ``segments`` in the units of time ``T`` (not coalesced). Every
    segment's arrays are read in one trip to Zarr's event loop (:func:`get_groups`), each let
    go once its valid entries are taken."""
    from anchorstream.zarrio import get_groups  # Zarr's import: only where a store is read

    n_vecs = (5 if settings.sketch else 3) if settings.split else 0
    parts = [Part.empty(n_vecs, settings.n_projections)]
    names = ("rows", "cols", "vals", "slots", "vecs") + (("sketch",) if settings.sketch else ())
    stored = get_groups(group, [f"segments/{seg['name']}" for seg in segments], names,
                        optional=("pair_rows", "pair_cols", "pair_vals"))
    for seg in segments:
        g = stored.pop(0)
        seq = seg["seq"]
        rows, cols, vals = g["rows"], g["cols"], g["vals"]
        keep = (reset_seq[rows] <= seq) & (reset_seq[cols] <= seq)
        slots = g["slots"]
        ok = reset_seq[slots] <= seq
        vecs = g["vecs"][:, ok]
        sketch = g["sketch"][ok] if settings.sketch else None
        pairs = _no_pairs()
        if "pair_rows" in g:
            pr, pc, pv = g["pair_rows"], g["pair_cols"], g["pair_vals"]
            pk = (reset_seq[pr] <= seq) & (reset_seq[pc] <= seq)
            pairs = (pr[pk], pc[pk], pv[pk])
        part = Part(rows[keep], cols[keep], vals[keep], slots[ok], vecs, sketch,
                     np.array([seg["split_docs"], seg["rp_docs"], seg.get("pair_docs", 0.0),
                               seg.get("pair_tokens", 0.0)], dtype=np.float64), pairs)
        parts.append(part.scaled(forgetting.readout(T, seg["t_ref"])))
    return Part.concat(parts)
