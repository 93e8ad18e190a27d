"""The diagnostics of JSMF (Lee et al., §5.1) for one fitted model: entropy, sparsity and
specificity of the topics, how well words' rows are mixes of anchor rows, and how well
``B A Bᵀ`` approximates ``C``; :func:`diagnostics` bundles them with coherence.

The matrix-error metrics work in row blocks of ``_ROW_BLOCK`` so memory stays bounded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from anchorstream.errors import InputError
from anchorstream.evaluate._checks import (
    as_topic_word,
    check_anchors,
    check_square,
    dense_rows,
    nonzero,
    normalized_columns,
    row_totals,
)
from anchorstream.evaluate.coherence import (
    npmi_coherence,
    top_words,
    topic_dissimilarity,
    umass_coherence,
    unique_word_ratio,
)

__all__ = [
    "approximation_error",
    "diagnostics",
    "recovery_error_rows",
    "topic_entropy",
    "topic_sparsity",
    "topic_specificity",
    "word_topic_posterior",
]

# Rows of a dense (n_words, n_words) residual computed at once by the matrix-error metrics, so
# memory stays bounded (512 rows x 20k words x 8 bytes = 80 MiB) whatever the vocabulary.
_ROW_BLOCK = 512


# --------------------------------------------------------------------------------------------
# JSMF diagnostics (Lee et al., §5.1)


def word_topic_posterior(topic_word: np.ndarray, prevalence: np.ndarray) -> np.ndarray:
    """``p(z | w)`` by Bayes' rule from ``p(w | z)`` and ``p(z)``.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
    prevalence : array_like of shape (n_topics,)
        ``p(z)``, e.g. the row sums of the topic-topic matrix.

    Returns
    -------
    ndarray of shape (n_words, n_topics)
        Rows on the simplex; all-zero for words no topic generates.
    """
    B = as_topic_word(topic_word)
    prior = np.asarray(prevalence, dtype=np.float64)
    if prior.shape != (B.shape[1],) or not np.all(np.isfinite(prior)) or prior.min() < 0:
        raise InputError(
            f"prevalence must be finite, non-negative and of shape ({B.shape[1]},), "
            f"got shape {prior.shape}"
        )
    joint = B * prior[None, :]
    total = joint.sum(axis=1, keepdims=True)
    return np.divide(joint, total, out=np.zeros_like(joint), where=total > 0)


def topic_entropy(word_topic: np.ndarray) -> float:
    """JSMF "Entropy": mean over words of ``H(z | w) / log K``.

    Parameters
    ----------
    word_topic : array_like of shape (n_words, n_topics)
        ``p(z | w)`` (the recovery coefficients, or :func:`word_topic_posterior`); rows are
        normalized here, and all-zero rows (words no topic generates) are left out.

    Returns
    -------
    float in [0, 1]
        0 when every word belongs to one topic, 1 when every word is spread uniformly;
        smaller is better. 0 for a single topic.
    """
    P = np.asarray(word_topic, dtype=np.float64)
    if P.ndim != 2 or not np.all(np.isfinite(P)) or P.min(initial=0) < 0:
        raise InputError("word_topic must be a finite, non-negative (n_words, n_topics) array")
    total = P.sum(axis=1)
    P = P[total > 0] / total[total > 0, None]
    if P.shape[0] == 0:
        raise InputError("word_topic has no word with positive mass")
    if P.shape[1] == 1:
        return 0.0
    from scipy.special import entr  # here: scipy.special costs ~0.05 s of every start-up

    return float(entr(P).sum(axis=1).mean() / np.log(P.shape[1]))


def topic_sparsity(topic_word: np.ndarray) -> np.ndarray:
    """JSMF "Sparsity": Hoyer's measure of each topic, ``(√N − ‖b‖₁/‖b‖₂) / (√N − 1)``.

    ``N`` is the number of words. 1 for a topic on a single word, 0 for a uniform topic;
    closer to 1 is better (JSMF mean it over topics).

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)

    Returns
    -------
    ndarray of shape (n_topics,)
    """
    B = as_topic_word(topic_word)
    n = B.shape[0]
    if n < 2:
        raise InputError("sparsity needs at least 2 words")
    l1 = np.abs(B).sum(axis=0)
    l2 = np.sqrt((B * B).sum(axis=0))
    if np.any(l2 == 0):
        raise InputError("a topic of topic_word is all zeros")
    return (np.sqrt(n) - l1 / l2) / (np.sqrt(n) - 1.0)


def topic_specificity(topic_word: np.ndarray, unigram: np.ndarray) -> np.ndarray:
    """JSMF "Specificity": ``KL(p(w | z = k) ‖ p(w))`` of each topic from the corpus unigram.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
        Columns are normalized here.
    unigram : array_like of shape (n_words,)
        Corpus word frequencies ``p(w)`` (e.g. row sums of the co-occurrence matrix);
        normalized here.

    Returns
    -------
    ndarray of shape (n_topics,)
        In nats; larger is better. ``inf`` when a topic puts mass on a word of zero frequency.
    """
    B = normalized_columns(as_topic_word(topic_word))
    p = np.asarray(unigram, dtype=np.float64)
    if p.shape != (B.shape[0],) or not np.all(np.isfinite(p)) or p.min() < 0 or p.sum() <= 0:
        raise InputError(
            f"unigram must be finite, non-negative, not all zero and of shape ({B.shape[0]},), "
            f"got shape {p.shape}"
        )
    # Σ_w b log b − bᵀ log p: two logs of the sizes of B and p and a product, where the
    # elementwise rel_entr(B, p) took a log per entry of B, five times the time (5.0 against
    # 1.0 ms at V = 5000, K = 50: a warm refresh's publish computes it every time).
    q = p / p.sum()
    log_b = np.zeros_like(B)
    np.log(B, out=log_b, where=B > 0)
    has = q > 0
    log_q = np.zeros_like(q)
    np.log(q, out=log_q, where=has)
    kl = np.einsum("ij,ij->j", B, log_b) - B.T @ log_q
    if not has.all():  # mass on a word of zero frequency: infinitely specific
        kl[(B[~has] > 0).any(axis=0)] = np.inf
    return kl


def recovery_error_rows(C, anchors, word_topic: np.ndarray) -> float:
    """JSMF "Recovery": how well each word's row is a mix of the anchor rows.

    ``(1 / N) Σ_i ‖C̄_i − Σ_k coef[i, k] C̄_{s_k}‖₂`` over the ``N`` words with a non-zero row,
    where ``C̄`` is ``C`` row-normalized (``C̄_i = p(w₂ | w₁ = i)``) and ``s_k`` are the anchors.
    JSMF plot the logarithm of this value, computed on the rectified matrix.

    Parameters
    ----------
    C : array_like or sparse matrix of shape (n_words, n_words)
        The co-occurrence matrix inference used.
    anchors : array_like of int, shape (n_topics,)
    word_topic : array_like of shape (n_words, n_topics)
        The recovery coefficients ``p(z | w)``.

    Returns
    -------
    float
        Smaller is better.
    """
    C = check_square(C)
    V = C.shape[0]
    S = check_anchors(anchors, V)
    coef = np.asarray(word_topic, dtype=np.float64)
    if coef.shape != (V, S.size):
        raise InputError(f"word_topic must be of shape ({V}, {S.size}), got {coef.shape}")
    row_sums = row_totals(C)
    anchor_rows = dense_rows(C, S) / nonzero(row_sums[S])[:, None]
    residuals = []
    for start in range(0, V, _ROW_BLOCK):
        stop = min(start + _ROW_BLOCK, V)
        live = row_sums[start:stop] > 0
        block = dense_rows(C, np.arange(start, stop))[live] / row_sums[start:stop][live, None]
        diff = block - coef[start:stop][live] @ anchor_rows
        residuals.append(np.sqrt(np.einsum("ij,ij->i", diff, diff)))
    residuals = np.concatenate(residuals)
    if residuals.size == 0:
        raise InputError("C has no non-zero row")
    return float(residuals.mean())


def approximation_error(C, topic_word: np.ndarray, topic_topic: np.ndarray) -> float:
    """JSMF "Approximation": the Frobenius norm ``‖C − B A Bᵀ‖_F``.

    Parameters
    ----------
    C : array_like or sparse matrix of shape (n_words, n_words)
    topic_word : array_like of shape (n_words, n_topics)
        ``B``.
    topic_topic : array_like of shape (n_topics, n_topics)
        ``A``.

    Returns
    -------
    float
        Smaller is better.
    """
    C = check_square(C)
    B = as_topic_word(topic_word)
    A = np.asarray(topic_topic, dtype=np.float64)
    K = B.shape[1]
    if B.shape[0] != C.shape[0] or A.shape != (K, K):
        raise InputError(
            f"shapes do not match: C {C.shape}, topic_word {B.shape}, topic_topic {A.shape}; "
            "need (V, V), (V, K) and (K, K)"
        )
    BA = B @ A
    total = 0.0
    # Row blocks: B A Bᵀ is as large as C, and only one block of it need exist at a time.
    for start in range(0, C.shape[0], _ROW_BLOCK):
        stop = min(start + _ROW_BLOCK, C.shape[0])
        diff = dense_rows(C, np.arange(start, stop)) - BA[start:stop] @ B.T
        total += float(np.einsum("ij,ij->", diff, diff))
    return float(np.sqrt(total))


def diagnostics(
    C,
    topic_word: np.ndarray,
    topic_topic: np.ndarray,
    anchors=None,
    *,
    word_topic: np.ndarray | None = None,
    X_ref=None,
    n_top_words: int = 20,
) -> dict[str, Any]:
    """Every metric of this module for one fitted model, as JSMF report them.

    Parameters
    ----------
    C : array_like or sparse matrix of shape (n_words, n_words)
        The co-occurrence matrix the model was fitted on (the rectified one when rectification
        ran, as JSMF measure); its row sums are the unigram ``p(w)``.
    topic_word : array_like of shape (n_words, n_topics)
    topic_topic : array_like of shape (n_topics, n_topics)
        Its row sums are the prevalence ``p(z)``.
    anchors : array_like of int, shape (n_topics,), optional
        Needed for ``recovery``; left out (``None`` in the result) without it.
    word_topic : array_like of shape (n_words, n_topics), optional
        The recovery coefficients ``p(z | w)``; computed by Bayes' rule when not given.
    X_ref : sparse matrix of shape (n_docs, n_words), optional
        Reference documents for coherence; without them the coherence entries are ``None``.
    n_top_words : int, default 20
        Top words per topic for dissimilarity, coherence and unique-word ratio (JSMF use 20).

    Returns
    -------
    dict
        Floats (means over topics or words): ``entropy``, ``sparsity``, ``specificity``,
        ``dissimilarity``, ``unique_word_ratio``, ``recovery``, ``approximation``, ``npmi``,
        ``umass``; and ``per_topic``, a dict of lists of length ``n_topics`` (``sparsity``,
        ``specificity``, ``dissimilarity``, and ``npmi``/``umass`` with ``X_ref``) in the form
        :func:`anchorstream.snapshot.write_snapshot` takes as ``quality``.
    """
    B = as_topic_word(topic_word)
    A = np.asarray(topic_topic, dtype=np.float64)
    Cm = check_square(C)
    unigram = row_totals(Cm)
    coef = word_topic_posterior(B, A.sum(axis=1)) if word_topic is None else word_topic
    top = top_words(B, n_top_words)
    sparsity = topic_sparsity(B)
    specificity = topic_specificity(B, unigram)
    dissimilarity = topic_dissimilarity(top)
    per_topic: dict[str, list[float]] = {
        "sparsity": sparsity.tolist(),
        "specificity": specificity.tolist(),
        "dissimilarity": dissimilarity.astype(float).tolist(),
    }
    result: dict[str, Any] = {
        "entropy": topic_entropy(coef),
        "sparsity": float(sparsity.mean()),
        "specificity": float(specificity.mean()),
        "dissimilarity": float(dissimilarity.mean()),
        "unique_word_ratio": unique_word_ratio(top),
        "recovery": None if anchors is None else recovery_error_rows(Cm, anchors, coef),
        "approximation": approximation_error(Cm, B, A),
        "npmi": None,
        "umass": None,
    }
    if X_ref is not None:
        npmi = npmi_coherence(top, X_ref)
        umass = umass_coherence(top, X_ref)
        result["npmi"] = float(npmi.mean())
        result["umass"] = float(umass.mean())
        per_topic["npmi"] = npmi.tolist()
        per_topic["umass"] = umass.tolist()
    result["per_topic"] = per_topic
    return result
