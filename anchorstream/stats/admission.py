"""Correcting a streaming vocabulary's counts for the documents each word pair missed.

Why
---
A store whose vocabulary admits words as they arrive (``vocab.admit_threshold``, see
:mod:`anchorstream.text.vocabulary`) counts a word's co-occurrences only from the document
that admitted it on, and a word evicted and admitted again only from its latest admission. On
``tech`` (K = 50, V = 5000) that loss alone moved the topics by a matched ℓ1 of 0.17-0.21 from
the batch fit on the same documents (``benchmarks/README.md``, "Streaming equals batch" and
"Admission correction").

The correction
--------------
Pair ``(i, j)`` is counted over the documents after both words were admitted. Let ``i`` be the
one admitted later. Every document before ``i``'s admission that holds ``i`` is missing from
the pair's count, and every one after it is there; their number ``m_i`` is known: the
sketch's count of ``i`` before the admitting document (a lower bound when the sketch had
pruned, so never an over-correction from that side), recorded with the slot. If the stream
is stationary, the missed documents of ``i`` hold ``j`` as often as the observed ones, so the
ratio estimator ``C_ij (d_i + m_i) / d_i`` (``d_i`` the store's document frequency of ``i``)
removes the bias: the pair's count is divided by the later word's observed share
``q_i = d_i / (d_i + m_i)``. The diagonal and the unigram counts of ``i`` use ``q_i`` and the
document frequency becomes ``d_i + m_i``.

Why not the share of the stream's weight before the admission, ``W / (W − W(t_ij))`` (an
inverse-inclusion weight on time): a word is admitted *by* its ``admit_threshold``-th
document, so the admission time is a stopping time of the word's own occurrences, and the
admitting document is always there. That estimator adds about ``W / (W − W(t_i))`` documents
to every word (a factor-sized bias for the words admitted late). The known count ``m_i`` has
no such bias.

Exact and not
-------------
- With every word admitted at the start (``ingest --vocabulary first-pass``, seed words) every
  ``m_i`` is 0 and the counts are returned unchanged, bit for bit.
- Exponential decay: ``m_i`` is kept in the store's scaled units and rescaled with them, so it
  is the decayed frequency before admission, as ``d_i`` is after.
- ``m_i`` counts every document, the store only those with two words of the vocabulary, so
  on very short documents the correction is a little too large. A drifting stream is not
  stationary. A store with a delay line (``count_delay``) is not corrected: the documents
  waiting when a word was admitted counted it. Tumbling windows are not corrected (the
  store keeps no admission per window; :func:`anchorstream.store.open_committed` reports
  none), nor the partitioned layout's sum
  (each partition admits words on its own documents; the correction would have to be applied
  to each partition's counts before the sum, which the refresher does not hold apart).
- A pair observed over a small share of its documents rests on few of them, and its factor
  ``1 / q`` would multiply their noise: the share is floored at ``min_share`` (the factor is at
  most ``1 / min_share``); ``min_share`` 1 is no correction at all.

What it is worth: off by default
--------------------------------
On ``tech`` streamed into a store of capacity 5000 (``benchmarks/bench_streaming.py --parts
store,admission``, and ``--shuffle 0`` for a stationary order), the recorded ``m_i`` are right
(the store's document frequencies plus ``m_i`` fit exactly as the exact ones do) and with
the batch fit's anchors pinned the corrected counts give topics closer to the batch fit's
(matched ℓ1 0.162 → 0.079-0.114 in the file's order, 0.064 → 0.052-0.054 shuffled). But the
free fit, what ``fit --store`` and the daemon publish, moves by whole anchors, and no share
brought it closer in both orders (0.9: 0.206 → 0.184 in the file's order, 0.171 → 0.219
shuffled; every other share worse in both). :data:`MIN_SHARE` is therefore 1 (no
correction); the store keeps the admissions, so it can be turned on where a stream is known
to be stationary and the anchors stable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.stats.cooccurrence import Cooccurrence

__all__ = ["MIN_SHARE", "Admission", "correct_admission"]

#: The default floor of the observed share: 1, no correction. Chosen from the matched ℓ1 to
#: the batch fit on ``tech`` at shares 1-0.1 (``benchmarks/README.md``, "Admission
#: correction"): no share improved it consistently, most made it worse.
MIN_SHARE = 1.0

_BLOCK_ROWS = 256


@dataclass(frozen=True, eq=False)
class Admission:
    """When each word's counting began, and what it had missed by then.

    Parameters
    ----------
    points : float ndarray of shape (n_words,)
        The stream's weight before each word's (latest) admission: only their order is read.
    missed : float ndarray of shape (n_words,)
        Each word's document frequency before that admission (0: counted from the start), in
        the units of the counts' ``doc_freq``.

    Examples
    --------
    >>> a = Admission([0.0, 5.0], [0.0, 3.0])
    >>> a.pair_share(np.array([4.0, 1.0]), 0.1).tolist()
    [[1.0, 0.25], [0.25, 0.25]]
    """

    points: np.ndarray
    missed: np.ndarray

    def __post_init__(self) -> None:
        p = np.asarray(self.points, dtype=np.float64)
        m = np.asarray(self.missed, dtype=np.float64)
        if p.ndim != 1 or m.shape != p.shape:
            raise InputError(f"Admission needs points and missed of one shape (n_words,); got "
                             f"{p.shape} and {m.shape}")
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(m))) or np.any(m < 0):
            raise InputError("Admission points and missed frequencies must be finite, "
                             "missed >= 0")
        object.__setattr__(self, "points", p)
        object.__setattr__(self, "missed", m)

    @property
    def n_words(self) -> int:
        return self.points.shape[0]

    def subset(self, words) -> Admission:
        """The same over ``words`` (indices, in that order)."""
        idx = np.asarray(words, dtype=np.int64)
        return Admission(self.points[idx], self.missed[idx])

    def word_share(self, doc_freq: np.ndarray, floor: float) -> np.ndarray:
        """``q_i = d_i / (d_i + m_i)`` floored at ``floor`` (1 where nothing was missed or
        nothing observed), shape (n_words,)."""
        d = np.asarray(doc_freq, dtype=np.float64)
        q = np.ones_like(d)
        ok = (self.missed > 0) & (d > 0)
        q[ok] = d[ok] / (d[ok] + self.missed[ok])
        return np.maximum(q, floor)

    def pair_share(self, doc_freq: np.ndarray, floor: float, rows=None, cols=None):
        """The share of pair ``(i, j)``: that of the word admitted later (the smaller of the
        two on a tie), for ``rows`` × ``cols`` (indices; all words when None), dense."""
        q = self.word_share(doc_freq, floor)
        r = slice(None) if rows is None else np.asarray(rows)
        c = slice(None) if cols is None else np.asarray(cols)
        pr, pc = self.points[r][:, None], self.points[c][None, :]
        qr, qc = q[r][:, None], q[c][None, :]
        return np.where(pr > pc, qr, np.where(pr < pc, qc, np.minimum(qr, qc)))

    def entry_share(self, doc_freq: np.ndarray, floor: float, rows, cols) -> np.ndarray:
        """The share of the entries ``(rows[k], cols[k])``, shape (n_entries,)."""
        q = self.word_share(doc_freq, floor)
        pr, pc = self.points[rows], self.points[cols]
        return np.where(pr > pc, q[rows], np.where(pr < pc, q[cols],
                                                   np.minimum(q[rows], q[cols])))


def _check_min_share(min_share) -> float:
    if (isinstance(min_share, bool) or not isinstance(min_share, (int, float, np.integer,
                                                                  np.floating))
            or not 0.0 < float(min_share) <= 1.0):
        raise InputError(f"min_share must be a number in (0, 1] (1 = no correction), "
                         f"got {min_share!r}")
    return float(min_share)


def correct_admission(cooc, admission: Admission | None, *, min_share: float = MIN_SHARE):
    """The counts corrected for the documents each pair missed before its words' admission.

    Parameters
    ----------
    cooc : Cooccurrence or SparseCooccurrence
        Counts over ``admission.n_words`` words. A dense one is corrected **in place** (the
        caller's own copy) and returned; a sparse one is returned as a new object (its counts
        copied), the input unchanged.
    admission : Admission or None
        Over the same words, ``missed`` in the units of ``cooc.doc_freq``. None: nothing known
        (a store written before admissions were recorded, or one with tumbling windows),
        ``cooc`` is returned unchanged.
    min_share : float in (0, 1], default :data:`MIN_SHARE`
        Floor of the observed share: no factor exceeds ``1 / min_share``; 1 = no correction.

    Returns
    -------
    Cooccurrence or SparseCooccurrence
        Counts, unigram counts and document frequencies divided by their observed share (the
        document frequency of a word above the floor is then ``d_i + m_i`` exactly);
        ``num_docs``, ``num_tokens`` and ``mass`` unchanged (every document was seen).

    Raises
    ------
    InputError
        For a ``min_share`` outside (0, 1] or an ``admission`` over another number of words.
    """
    floor = _check_min_share(min_share)
    if admission is not None and admission.n_words != cooc.n_words:
        raise InputError(f"admission over {admission.n_words} words for counts over "
                         f"{cooc.n_words}")
    if admission is None or floor >= 1.0:
        return cooc
    if not np.any(admission.missed > 0):
        return cooc  # every word counted from the start: nothing to correct, bit for bit
    df = np.asarray(cooc.doc_freq, dtype=np.float64)
    word = 1.0 / admission.word_share(df, floor)
    if isinstance(cooc, Cooccurrence):
        counts = cooc.counts
        for r0 in range(0, cooc.n_words, _BLOCK_ROWS):
            r1 = min(r0 + _BLOCK_ROWS, cooc.n_words)
            counts[r0:r1] /= admission.pair_share(df, floor, rows=np.arange(r0, r1))
        cooc.unigram = cooc.unigram * word
        cooc.doc_freq = df * word
        return cooc
    U = sp.csr_matrix(cooc.upper_counts(), copy=True)
    rows = np.repeat(np.arange(U.shape[0]), np.diff(U.indptr))
    U.data /= admission.entry_share(df, floor, rows, U.indices)
    return type(cooc)(U, cooc.unigram * word, df * word, cooc.num_docs, cooc.num_tokens,
                      cooc.length_cap, cooc.mass)
