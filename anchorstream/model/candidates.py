"""Which words may be anchors, and how noisy their rows are.

An anchor's row of the row-normalised co-occurrence ``C̄`` is estimated from the documents the
word is in, and the greedy search (:mod:`anchorstream.model.anchors`) picks the row farthest
from a span: where rows are estimated from few documents, the farthest is often the noisiest.
Two guards, both from document frequencies: a minimum document frequency with a cap on the
number of candidates (:func:`candidate_words`, :func:`anchor_min_df_for`), and each row's
expected squared sampling error (:func:`row_noise`), which the search takes off the distances
it compares.
"""

from __future__ import annotations

import numpy as np

from anchorstream.errors import InputError

__all__ = ["ANCHOR_CANDIDATES", "ANCHOR_MIN_DF", "ANCHOR_NOISE", "CAP_MAX_SHARE",
           "REFERENCE_LENGTH", "anchor_min_df_for", "candidate_words", "row_noise",
           "well_estimated_min_df"]

#: Default minimum document frequency of an anchor word. An anchor's row of the co-occurrence
#: is estimated from the documents it is in, and the convex hull's vertices are where rows
#: estimated from few documents are thrown by noise: at 10 (the old default) 7 of 100 topics
#: of 112k npm summaries were dead (anchors in 10-20 documents). Held-out NPMI of
#: 10 / 25 / 50 / 100 / 200 on four real corpora of 4.8k-112k documents (AP, length_cap 25):
#: short .056 (7 dead) / .042 / .043 / .049 / .040 (no dead topic from 25 on), speeches
#: .140 / .149 / .152 / .152 / .146, technical .211 / .211 / .211 / .218 / .212, manuals
#: .143 / .150 / .154 / .155 / .151. An absolute count, not a share of the corpus: what makes
#: a row reliable is how many documents it is estimated from, whatever the corpus size; a
#: small corpus falls back to fewer (:func:`anchor_min_df_for`), and a small corpus of long
#: documents to :data:`CAP_MAX_SHARE` of them (:func:`well_estimated_min_df`).
ANCHOR_MIN_DF = 100

#: :func:`anchor_min_df_for` keeps at least this many candidates per topic.
_CANDIDATES_PER_TOPIC = 2

#: Default cap on the anchor candidates per topic (:func:`anchor_min_df_for`): on a large
#: corpus of long documents thousands of words reach ``anchor_min_df``, and the farthest of
#: thousands of rows is a noisy one. 100k semi-synthetic 60-token documents, K = 50: ℓ1 error
#: 0.176 with all 4,764 words of >= 100 documents, 0.150-0.156 with the 23-40 K most frequent
#: (docs/algorithms.md; benchmarks/README.md, "Anchor candidates").
ANCHOR_CANDIDATES = 40

#: The cap never raises the threshold above this share of the documents: a word in 5% of them
#: is no rare word of a long tail, whatever its rank. On Ding et al.'s separable model (500
#: words, K = 5, flat frequencies) the 40 K = 200 most frequent words left out every novel
#: word (ranked 390-415, each in 14-16% of the documents): the default's ℓ1 was 0.41 / 0.41 /
#: 0.32 at 200 / 500 / 1000 documents, and is 0.29 / 0.21 / 0.14 with this ceiling. On every
#: corpus of the quality benchmark the capped threshold is below 5% (the most: 493 of
#: 100,000 documents), so none of them changes (benchmarks/README.md, "Seed methods, session
#: 31"). Since session 40 ``min_df`` itself goes down to it where the documents are long
#: (:func:`well_estimated_min_df`): on 599 chapters of ~1,500 tokens (``chapters``) 100
#: documents were 17% of them, the anchors common words, and held-out NPMI rose from +0.131
#: to +0.160 (benchmarks/README.md, "Very long documents").
CAP_MAX_SHARE = 0.05

#: Tokens per document (in the vocabulary) of the corpus where :data:`ANCHOR_MIN_DF` mattered
#: most, the npm summaries (6.5): fewer documents of longer text estimate a row as well
#: (:func:`well_estimated_min_df`).
REFERENCE_LENGTH = 6.5

#: Default multiple of each row's estimated sampling noise (:func:`row_noise`) taken off its
#: squared distance to the span when the search chooses the next anchor (0: the plain
#: farthest row). See :func:`row_noise` for why and benchmarks/README.md ("Refit stability")
#: for the measurements.
ANCHOR_NOISE = 0.0


def candidate_words(doc_freq, min_df: float) -> np.ndarray:
    """Words frequent enough to be anchors.

    Anchor words are vertices of the convex hull of the rows of ``C̄``, and rare words are
    where sampling noise throws rows far out: a minimum document frequency keeps the search to
    rows estimated from enough documents.

    Parameters
    ----------
    doc_freq : array-like of shape (n_words,)
        Number of documents containing each word.
    min_df : float
        Minimum document frequency of a candidate (``>= 0``).

    Returns
    -------
    ndarray of shape (n_words,), bool
        ``doc_freq >= min_df``.

    Raises
    ------
    InputError
        If ``doc_freq`` is not a finite non-negative vector or ``min_df`` is negative.

    Examples
    --------
    >>> candidate_words([3, 0, 12, 5], 5)
    array([False, False,  True,  True])
    """
    df = np.asarray(doc_freq)
    if df.ndim != 1 or not np.issubdtype(df.dtype, np.number):
        raise InputError(f"doc_freq must be a 1-D numeric array, got shape {df.shape}")
    df = df.astype(np.float64)
    if not np.all(np.isfinite(df)) or np.any(df < 0):
        raise InputError("doc_freq must contain finite non-negative counts")
    if not np.isfinite(min_df) or min_df < 0:
        raise InputError(f"min_df must be a finite number >= 0, got {min_df!r}")
    return df >= min_df


def anchor_min_df_for(doc_freq, n_topics: int, min_df: float,
                      per_topic: int = 0, num_docs: float | None = None,
                      num_tokens: float | None = None) -> float:
    """The document frequency an anchor needs here: ``min_df``; less where a small corpus
    has fewer than ``2 n_topics`` words that frequent; more where ``per_topic > 0`` and more
    than ``per_topic * n_topics`` words are that frequent. With ``num_docs`` and
    ``num_tokens``, ``min_df`` is first lowered towards :data:`CAP_MAX_SHARE` of the
    documents as far as the rows stay as well estimated as ``min_df`` documents of
    :data:`REFERENCE_LENGTH` tokens (:func:`well_estimated_min_df`).

    The fallback is the document frequency of the ``2 n_topics``-th most frequent word, so the
    search keeps twice as many candidates as topics from the best-estimated rows (and at least
    1: a word that occurs nowhere is never an anchor). The cap is the document frequency of
    the ``per_topic * n_topics``-th most frequent word (words tied with it stay candidates),
    but with ``num_docs`` at most :data:`CAP_MAX_SHARE` of the documents.

    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100)
    100
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 2, 100)
    90.0
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100, per_topic=2)
    300.0
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100, per_topic=3)
    100
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100, per_topic=2, num_docs=4000)
    200.0
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100, num_docs=1000,
    ...                   num_tokens=50_000)
    50.0
    """
    if per_topic < 0:
        raise InputError(f"per_topic must be >= 0 (0 = no cap), got {per_topic!r}")
    if num_docs is not None and num_tokens is not None:
        min_df = well_estimated_min_df(min_df, num_docs, num_tokens)
    df = np.sort(np.asarray(doc_freq, dtype=np.float64))[::-1]
    reach = np.count_nonzero(df >= min_df)
    cap = max(int(per_topic), _CANDIDATES_PER_TOPIC) * int(n_topics)
    if per_topic and reach > cap:
        ceiling = np.inf if num_docs is None else CAP_MAX_SHARE * float(num_docs)
        return float(max(min(df[cap - 1], ceiling), min_df))
    need = _CANDIDATES_PER_TOPIC * int(n_topics)
    if df.size == 0 or reach >= need:
        return min_df
    return float(max(min(min_df, df[min(need, df.size) - 1]), 1.0))


def well_estimated_min_df(min_df: float, num_docs: float, num_tokens: float) -> float:
    """``min_df``, lowered towards :data:`CAP_MAX_SHARE` of the documents where the documents
    are long enough that fewer of them estimate a row as well.

    A row's squared sampling error is about ``1 / (df (n̄ − 1))`` (:func:`row_noise`), so
    ``min_df`` documents of :data:`REFERENCE_LENGTH` tokens are matched by
    ``min_df (REFERENCE_LENGTH − 1) / (n̄ − 1)`` documents of ``n̄ = num_tokens / num_docs``.
    The threshold goes down to that, but not below 5% of the documents (a word that common
    is no rare word of a long tail) nor 1. Short documents keep ``min_df``; so does any
    corpus where 5% of the documents are more than ``min_df``.

    >>> well_estimated_min_df(100, 599, 599 * 1400)    # chapters of 1,400 tokens: 5%
    29.950000000000003
    >>> well_estimated_min_df(100, 599, 599 * 30)      # 30 tokens: 19 documents are enough
    29.950000000000003
    >>> well_estimated_min_df(100, 200, 200 * 6)       # a young stream of short documents
    100
    >>> well_estimated_min_df(100, 1500, 1500 * 12)    # 12 tokens: 50 would do, 5% is 75
    75.0
    """
    mean = float(num_tokens) / float(num_docs) if num_docs > 0 else 0.0
    if not mean > REFERENCE_LENGTH:
        return min_df
    enough = min_df * (REFERENCE_LENGTH - 1.0) / (mean - 1.0)
    return min(min_df, max(CAP_MAX_SHARE * float(num_docs), enough, 1.0))


def row_noise(doc_freq, num_docs: float, num_tokens: float, scale: float = 1.0) -> np.ndarray:
    """Expected squared sampling error of each word's row of ``C̄`` (its conditional
    distribution over co-occurring words), times ``scale``.

    Row ``i`` of ``C̄`` is an average, over the ``df_i`` documents containing word ``i``, of
    each document's distribution of the words beside it; a document of ``n`` tokens gives a
    distribution with squared norm about ``1 / (n − 1)``. So the row's squared error is about
    ``1 / (df_i (n̄ − 1))`` with ``n̄ = num_tokens / num_docs`` (a multinomial estimate with
    ``df_i (n̄ − 1)`` draws; it ignores the row's own squared norm, small beside ``1``, and
    the spread of document lengths). The greedy anchor search picks the row farthest from the
    span of the anchors so far, and the squared distance of an estimated row exceeds its
    true one by about this much: without the correction, the search favours rows estimated
    from few documents, whose distance is partly their noise, and two samples of one period
    pick different ones (benchmarks/README.md, "Refit stability").

    Parameters
    ----------
    doc_freq : array-like of shape (n_words,)
        Documents containing each word.
    num_docs, num_tokens : float
        Documents (of ``>= 2`` tokens) and their tokens, as counted by the co-occurrence.
    scale : float
        Multiple of the estimate (``>= 0``; 0 gives zeros).

    Returns
    -------
    ndarray of shape (n_words,)
        ``scale / (df_i (n̄ − 1))``; ``inf`` for words in no document (never anchors).

    Examples
    --------
    >>> row_noise([10, 100, 0], num_docs=1000, num_tokens=6000).round(5).tolist()
    [0.02, 0.002, inf]
    """
    df = np.asarray(doc_freq, dtype=np.float64)
    if df.ndim != 1 or not np.all(np.isfinite(df)) or np.any(df < 0):
        raise InputError("doc_freq must be a 1-D array of finite non-negative counts")
    if not (np.isfinite(scale) and scale >= 0):
        raise InputError(f"scale must be a finite number >= 0, got {scale!r}")
    if not (num_docs > 0 and num_tokens >= 2 * num_docs):
        raise InputError(f"need num_docs > 0 and num_tokens >= 2 num_docs (documents of >= 2 "
                         f"tokens), got {num_docs!r} and {num_tokens!r}")
    per_doc = 1.0 / (num_tokens / num_docs - 1.0)
    out = np.full(df.shape, np.inf)
    np.divide(scale * per_doc, df, out=out, where=df > 0)
    return out
