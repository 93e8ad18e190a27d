"""Top words and how well they hang together: NPMI and UMass coherence over a reference corpus,
and redundancy across topics (unique-word ratio, per-topic dissimilarity).

Every function is pure: arrays in, numbers out. ``topic_word`` is ``B`` of shape
``(n_words, n_topics)``; ``top_idx`` is the ``(n_topics, n)`` array :func:`top_words` returns.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.evaluate._checks import as_topic_word, check_top_idx

__all__ = [
    "npmi_coherence",
    "top_words",
    "topic_dissimilarity",
    "umass_coherence",
    "unique_word_ratio",
]


# --------------------------------------------------------------------------------------------
# top words and coherence


def top_words(topic_word: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` most probable words of every topic.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
    n : int
        Words per topic; more than ``n_words`` gives all of them.

    Returns
    -------
    ndarray of int64, shape (n_topics, min(n, n_words))
        Row k lists topic k's words by decreasing probability; ties go to the lower index, so
        the result is deterministic.

    Examples
    --------
    >>> top_words(np.array([[0.1, 0.6], [0.5, 0.2], [0.4, 0.2]]), 2)
    array([[1, 2],
           [0, 1]])
    """
    B = as_topic_word(topic_word)
    if int(n) != n or n < 1:
        raise InputError(f"n must be an integer >= 1, got {n!r}")
    n = min(int(n), B.shape[0])
    # A stable sort of the negated column keeps equal probabilities in index order.
    order = np.argsort(-B, axis=0, kind="stable")
    return np.ascontiguousarray(order[:n].T).astype(np.int64)


def _doc_frequencies(top_idx, X_ref) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Document frequencies of the top words and of their pairs in a reference corpus.

    Only the union of the top words enters the product, so the cost is that of a sparse
    ``(n_docs, U)`` binary matrix times its transpose with ``U <= n_topics * n``.

    Returns ``(pos, df, co_df, n_docs)``: ``pos`` maps ``top_idx`` into ``0..U-1``, ``df`` is
    ``(U,)`` and ``co_df`` the dense ``(U, U)`` co-document frequency.
    """
    top = check_top_idx(top_idx, min_words=2)
    if not sp.issparse(X_ref):
        X_ref = np.asarray(X_ref)
        if X_ref.ndim != 2:
            raise InputError(f"X_ref must be of shape (n_docs, n_words), got shape {X_ref.shape}")
    X_ref = sp.csc_matrix(X_ref)
    if top.max() >= X_ref.shape[1]:
        raise InputError(
            f"top word index {int(top.max())} is out of range for a reference corpus of "
            f"{X_ref.shape[1]} words; both must use the same vocabulary"
        )
    if X_ref.shape[0] == 0:
        raise InputError("the reference corpus has no documents")
    union, pos = np.unique(top, return_inverse=True)
    sub = X_ref[:, union]
    if sub.nnz and (not np.all(np.isfinite(sub.data)) or sub.data.min() < 0):
        raise InputError("X_ref must hold finite, non-negative counts")
    binary = (sub > 0).astype(np.float64).tocsc()
    co_df = np.asarray((binary.T @ binary).toarray())
    df = np.diag(co_df).copy()
    return pos.reshape(top.shape), df, co_df, X_ref.shape[0]


def npmi_coherence(top_idx: np.ndarray, X_ref) -> np.ndarray:
    """Normalized pointwise mutual information of every topic's top words (Bouma 2009).

    With ``N`` reference documents, ``P(w) = D(w) / N`` and ``P(wi, wj) = D(wi, wj) / N``
    (document frequencies: a document counts once however often it repeats a word), each pair
    of distinct top words scores

        NPMI(wi, wj) = log(P(wi, wj) / (P(wi) P(wj))) / -log P(wi, wj)

    in ``[-1, 1]``. Conventions at the edges: a pair that never co-occurs (including a word
    absent from the reference corpus) scores ``-1``, the limit as ``P(wi, wj) -> 0``; a pair
    that occurs in every document scores ``1``. A topic's coherence is the mean over its
    ``n (n - 1) / 2`` pairs, so values are comparable across ``n``.

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)
        Top words of each topic (from :func:`top_words`), ``n >= 2``.
    X_ref : sparse matrix or array_like of shape (n_docs, n_words)
        Word counts of the reference corpus (held-out documents, usually), same vocabulary.

    Returns
    -------
    ndarray of shape (n_topics,)
        Higher is better.
    """
    pos, df, co_df, n_docs = _doc_frequencies(top_idx, X_ref)
    p = df / n_docs
    p_joint = co_df / n_docs
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(p_joint) - np.log(p)[:, None] - np.log(p)[None, :]
        npmi = pmi / -np.log(p_joint)
    npmi = np.where(co_df == 0, -1.0, npmi)
    npmi = np.where(co_df == n_docs, 1.0, npmi)
    return _mean_over_pairs(npmi, pos)


def umass_coherence(top_idx: np.ndarray, X_ref, *, epsilon: float = 1.0) -> np.ndarray:
    """UMass coherence of every topic's top words (Mimno et al. 2011).

    With top words ``v_1, ..., v_n`` in decreasing probability, each pair ``l < m`` scores

        log((D(v_m, v_l) + epsilon) / D(v_l))

    where ``D`` counts reference documents containing the word(s): the conditioning word is the
    more probable one. ``epsilon = 1`` is Mimno's smoothing; Arora 2013 and JSMF use ``0.01``.
    A pair whose conditioning word never occurs in the reference corpus (possible for a held-out
    corpus, never for the training corpus the metric was designed on) scores the formula's
    floor ``log(epsilon / N)``, as if the word were in all ``N`` documents but never with the
    other — the counterpart of NPMI's ``-1``. A topic's coherence is the mean over its pairs
    (Mimno's sum divided by ``n (n - 1) / 2``).

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)
        Top words of each topic in decreasing probability (from :func:`top_words`), ``n >= 2``.
    X_ref : sparse matrix or array_like of shape (n_docs, n_words)
        Word counts of the reference corpus, same vocabulary.
    epsilon : float, default 1.0
        Smoothing added to the co-document frequency, ``> 0``.

    Returns
    -------
    ndarray of shape (n_topics,)
        At most ``log(1 + epsilon)``; higher is better.
    """
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    pos, df, co_df, n_docs = _doc_frequencies(top_idx, X_ref)
    with np.errstate(divide="ignore"):
        # score[a, b] conditions on word b (column): log((D(a, b) + eps) / D(b)).
        score = np.log(co_df + epsilon) - np.log(df)[None, :]
    score = np.where(df[None, :] == 0, np.log(epsilon / n_docs), score)
    # Pairs l < m: the conditioning word v_l is the more probable of the two.
    l, m = np.triu_indices(pos.shape[1], k=1)
    return score[pos[:, m], pos[:, l]].mean(axis=1)


def _mean_over_pairs(pair_score: np.ndarray, pos: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(pos.shape[1], k=1)
    return pair_score[pos[:, i], pos[:, j]].mean(axis=1)


def unique_word_ratio(top_idx: np.ndarray) -> float:
    """Distinct words among all topics' top words, over ``n_topics * n``.

    1.0 means no topic shares a top word with another; low values flag duplicated topics,
    which coherence alone rewards (JSMF footnote 16).

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)

    Returns
    -------
    float in (0, 1]
    """
    top = check_top_idx(top_idx)
    return float(np.unique(top).size / top.size)


def topic_dissimilarity(top_idx: np.ndarray) -> np.ndarray:
    """JSMF "Dissimilarity": per topic, how many of its top words are in no other topic's top words.

    Arora 2013 calls the same count "unique words"; JSMF reports its mean over topics with the
    top 20 words.

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)

    Returns
    -------
    ndarray of int64, shape (n_topics,), each in ``0..n``
        Higher is better.
    """
    top = check_top_idx(top_idx)
    words, inverse, topics_having = np.unique(top, return_inverse=True, return_counts=True)
    # Top lists have no repeats, so a word's count is the number of topics listing it.
    return (topics_having[inverse.reshape(top.shape)] == 1).sum(axis=1).astype(np.int64)
