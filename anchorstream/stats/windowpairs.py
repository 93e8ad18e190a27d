"""The word pairs of documents' windows, kept with the store for the pair refinement.

``anchorstream fit --input --refine-window N`` counts the refinement's pairs inside windows of
``N`` consecutive tokens of each document (:mod:`anchorstream.text.windows`): a
:class:`~anchorstream.model.lowrank.DocumentCooccurrence` whose documents are the windows.
A store does the same as documents arrive (``model.refine_window``, ``ingest
--refine-window``): each window ``u`` of a document of decay weight ``w_d`` adds
``w_d s(n_u) (x_u x_uᵀ − diag x_u)``, with ``x_u`` its in-vocabulary word counts, ``n_u``
their sum and ``s`` the store's document weighting
(:func:`~anchorstream.stats.cooccurrence.pair_scale` with its ``length_cap``), and the
number and tokens of windows of at least two tokens (what ``--refine auto`` decides by). The
sums are kept sparse, upper triangle only, in the document statistics' segments
(:mod:`anchorstream.stats.documents`), which give them exactly-once commits, decay, time
windows and eviction; :func:`window_cooccurrence` hands them to a fit.

A window's length is taken before evicted slots are voided, as the counts keep a document's
length (see :mod:`anchorstream.stats.documents`, "Evicted slots").
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.stats.cooccurrence import pair_scale
from anchorstream.stats.sparse import SparseCooccurrence, upper_csr
from anchorstream.text.windows import window_rows

__all__ = ["WindowPairs", "window_counts", "window_pair_entries", "window_cooccurrence"]


def window_counts(indptr, slots, token_positions, size: int, capacity: int):
    """``(W, window_doc)``: the windows of documents given as slots (``indptr``, ``slots``,
    ``token_positions`` as :meth:`~anchorstream.text.vocabulary.StreamingVocabulary.observe_batch`
    returns them) as rows of word counts over ``capacity`` slots, and each window's document.

    >>> W, doc = window_counts([0, 3], [4, 4, 1], [0, 1, 5], 2, 6)
    >>> W.toarray().tolist(), doc.tolist()
    ([[0.0, 0.0, 0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]], [0, 0])
    """
    w_indptr, window_doc = window_rows(indptr, token_positions, size)
    slots = np.array(slots, dtype=np.int32)  # a copy: summing duplicates sorts in place
    W = sp.csr_matrix((np.ones(slots.size), slots, w_indptr),
                      shape=(window_doc.size, int(capacity)))
    W.sum_duplicates()
    return W, window_doc


def window_pair_entries(W: sp.csr_matrix, weights: np.ndarray, length_cap, void: np.ndarray):
    """The upper triangle of ``Σ_u weights_u s(n_u) (x_u x_uᵀ − diag x_u)`` over the rows
    ``x_u`` of ``W``, with the ``void`` entries of ``W`` (evicted slots) left out after the
    lengths ``n_u`` were taken: ``(rows, cols, vals, [windows, tokens])``, the last two summed
    over windows of at least two tokens with their weights.

    >>> W = sp.csr_matrix(np.array([[1., 2.], [1., 0.]]))
    >>> r, c, v, docs = window_pair_entries(W, np.ones(2), 2, np.zeros(W.nnz, bool))
    >>> r.tolist(), c.tolist(), [round(x, 4) for x in v.tolist()], docs.tolist()
    ([0, 1], [1, 1], [0.3333, 0.3333], [1.0, 3.0])
    """
    lengths = np.asarray(W.sum(axis=1)).ravel()
    used = lengths >= 2
    scale = np.asarray(weights, dtype=np.float64) * pair_scale(lengths, length_cap)
    F = W.copy()
    F.data[void] = 0.0
    F.eliminate_zeros()
    upper = sp.triu(sp.csr_matrix(F.T) @ sp.csr_matrix(F.multiply(scale[:, None])), k=1).tocoo()
    # The diagonal, x (x − 1) per window, exactly (not x² − x: a difference of sums).
    same = F.copy()
    same.data = same.data * (same.data - 1.0)
    diagonal = np.asarray(same.T @ scale).ravel()
    on = np.flatnonzero(diagonal > 0)
    rows = np.concatenate([upper.row, on]).astype(np.int32)
    cols = np.concatenate([upper.col, on]).astype(np.int32)
    vals = np.concatenate([upper.data, diagonal[on]])
    keep = vals > 0
    docs = np.array([float(np.sum(weights[used])), float(np.sum((weights * lengths)[used]))])
    return rows[keep], cols[keep], vals[keep], docs


class WindowPairs:
    """The windows' pairs over chosen words (a :class:`~anchorstream.stats.documents.DocumentState`
    field): ``upper`` (CSR, upper triangle), ``num_docs`` and ``num_tokens`` (windows of at least
    two tokens, weighted)."""

    def __init__(self, upper: sp.csr_matrix, num_docs: float, num_tokens: float):
        self.upper = upper
        self.num_docs = float(num_docs)
        self.num_tokens = float(num_tokens)

    @classmethod
    def from_entries(cls, rows, cols, vals, n: int, docs) -> WindowPairs:
        return cls(upper_csr(rows, cols, vals, n), docs[0], docs[1])

    def subset(self, idx) -> WindowPairs:
        """Over the words ``idx`` (positions), in that order; the windows' count unchanged."""
        idx = np.asarray(idx, dtype=np.int64)
        sub = self.upper[idx][:, idx].tocoo()
        return WindowPairs(upper_csr(sub.row, sub.col, sub.data, idx.size), self.num_docs,
                           self.num_tokens)


def window_cooccurrence(pairs: WindowPairs, cooc) -> SparseCooccurrence:
    """What ``AnchorModel.fit(refine_cooc=...)`` takes: the windows' pairs over ``cooc``'s words
    (the same words, in the same order), as ``fit --input --refine-window`` builds it.

    The refinement reads only the pairs and the windows' count and tokens; the per-word
    ``unigram`` and ``doc_freq`` are ``cooc``'s (the windows hold the documents' tokens)."""
    if pairs.upper.shape[0] != cooc.n_words:
        raise ValueError(f"window pairs over {pairs.upper.shape[0]} words, the counts over "
                         f"{cooc.n_words}")
    # Copies: a fit may overwrite ``cooc`` (the daemon's overwrite_cooc).
    return SparseCooccurrence(pairs.upper, np.array(cooc.unigram, dtype=np.float64),
                              np.array(cooc.doc_freq, dtype=np.float64), pairs.num_docs,
                              pairs.num_tokens, cooc.length_cap)
