"""Where a refit's refinement starts: the previous refinement, wherever its anchors are kept.

A refresh after a few new documents recovers nearly the anchor model it recovered before, and
refining that again from the start costs as many passes as the first time (48 on the npm
summaries). The previous refinement is where those passes led, so the EM that starts there
stops after a few (:func:`warm_start`, what ``stages.refine_stage`` calls).
"""

from __future__ import annotations

import numpy as np

from anchorstream.errors import InputError

__all__ = ["warm_start"]


def warm_start(topic_word, topic_topic, anchors, prev_topic_word, prev_topic_topic,
               prev_anchors, *, rescale_new: bool = True):
    """Where a refit's refinement starts: the previous refinement's topics wherever their
    anchor is still an anchor, this fit's recovered topics elsewhere.

    Topics are matched by their anchor word: topic ``k`` of this fit starts from the previous
    topic with the same anchor, if any (its column renormalized on these words), and the
    topic-topic block of the matched topics is the previous one, scaled to the weight this
    fit's matrix gives that block.

    A topic with a new anchor starts from this fit's recovered topic, and its row of the
    topic-topic matrix from this fit's, rescaled: the EM drives the topic-topic matrix towards
    its diagonal (on short text 95 % of a refined row's weight is its diagonal, against 16 %
    of a recovered one's), and a new topic that started with most of its pairs shared with
    other topics took their words at its first passes, the kept topics losing more held-out
    NPMI than the new one gained (benchmarks/README.md, "The warm refinement where an anchor
    is new (session 77)"). So each new topic's row puts on its diagonal the share of the
    weight the diagonal has in the kept topics' previous rows, and the rest on the other
    topics in this fit's proportions, and the entries of the new topics keep their total
    weight (:func:`_calibrated`). EM keeps a zero entry zero, so the off-diagonal entries are
    scaled down, not removed. That held where the refinement's pairs are the documents' own;
    where they are those of windows of long documents (``model.refine_window``) the recovered
    rows did better (−0.0017 ± 0.0005 held-out NPMI for the rescaled ones over 31 warm
    refreshes of four corpora, the e-mail's chains most), so there the caller passes
    ``rescale_new=False``.

    Parameters
    ----------
    topic_word : ndarray of shape (V, K)
        This fit's recovered topics, columns summing to 1.
    topic_topic : ndarray of shape (K, K)
        This fit's topic-topic matrix.
    anchors : array of shape (K,)
        This fit's anchor words (ids compared with ``prev_anchors``).
    prev_topic_word : ndarray of shape (V, K')
        The previous refined topics on the same V words, in the same order.
    prev_topic_topic : ndarray of shape (K', K')
    prev_anchors : array of shape (K',)
    rescale_new : bool
        Rescale the new topics' rows of the topic-topic matrix (else this fit's, as they are).

    Returns
    -------
    topic_word, topic_topic : ndarray
        The start (columns and matrix summing to 1, the matrix symmetric).
    kept : int
        Topics started from the previous refinement.

    Examples
    --------
    >>> B = np.array([[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]])
    >>> prev = np.array([[0.9], [0.1], [0.0]])
    >>> B0, R0, kept = warm_start(B, np.full((2, 2), 0.25), [7, 9], prev, [[1.0]], [9])
    >>> kept, B0[:, 1].tolist()
    (1, [0.9, 0.1, 0.0])
    """
    B, R, prev_B, prev_R = (np.asarray(x, dtype=np.float64) for x in
                            (topic_word, topic_topic, prev_topic_word, prev_topic_topic))
    K = B.shape[1]
    if (R.shape != (K, K) or prev_B.shape[0] != B.shape[0]
            or prev_R.shape != (prev_B.shape[1],) * 2):
        raise InputError("warm_start: shapes disagree: topic_word (V, K), topic_topic (K, K), "
                         "prev_topic_word (V, K'), prev_topic_topic (K', K')")
    where = {int(a): j for j, a in enumerate(np.asarray(prev_anchors).tolist())}
    match = np.array([where.get(int(a), -1) for a in np.asarray(anchors).tolist()])
    mass = prev_B.sum(axis=0)
    kept = np.array([k for k in range(K) if match[k] >= 0 and mass[match[k]] > 0], dtype=np.int64)
    B0 = B.copy()
    B0[:, kept] = prev_B[:, match[kept]] / mass[match[kept]]
    R0 = R / R.sum()
    R0 = (R0 + R0.T) / 2.0
    if kept.size:
        block = prev_R[np.ix_(match[kept], match[kept])]
        block = (block + block.T) / 2.0
        if block.sum() > 0:
            R0[np.ix_(kept, kept)] = block * (R0[np.ix_(kept, kept)].sum() / block.sum())
            new = np.ones(K, dtype=bool)
            new[kept] = False
            rows = prev_R[match[kept]]  # the kept topics' previous rows, whole
            if rescale_new and new.any() and rows.sum() > 0:
                share = float(np.trace(rows[:, match[kept]]) / rows.sum())
                R0 = _calibrated(R0, new, share)
    return B0, R0 / R0.sum(), int(kept.size)


def _calibrated(R, new, share: float) -> np.ndarray:
    """``R`` (symmetric, summing to 1) with the ``new`` topics' rows and columns rescaled:
    each new row puts ``share`` of its weight on its diagonal (all of it where ``share`` >= 1)
    and the rest on the other topics in ``R``'s proportions (between two new topics, the mean
    of their two rows), and the entries in the new rows and columns keep their total."""
    R = R.copy()
    idx = np.flatnonzero(new)
    touching = new[:, None] | new[None, :]
    m = float(R[touching].sum())
    weight = R[idx].sum(axis=1)
    rows = R[idx].copy()
    rows[np.arange(idx.size), idx] = 0.0
    off = rows.sum(axis=1)
    if share >= 1.0:
        rows[:] = 0.0
    else:
        rows *= np.divide((1.0 - share) * weight, off, out=np.zeros_like(off),
                          where=off > 0)[:, None]
    R[idx] = rows
    R[:, idx] = rows.T
    R[np.ix_(idx, idx)] = (rows[:, idx] + rows[:, idx].T) / 2.0
    off = R[idx].sum(axis=1)  # their diagonal is 0 here
    diagonal = share / (1.0 - share) * off if share < 1.0 else np.zeros_like(off)
    R[idx, idx] = np.where(off > 0, diagonal, weight)  # a row with nothing else: all of it
    if R[touching].sum() > 0:
        R[touching] *= m / R[touching].sum()
    return R
