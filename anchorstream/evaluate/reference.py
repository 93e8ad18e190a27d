"""Scores against something outside the model: planted topics (:func:`recovery_error`, ℓ1 after
optimal matching) and held-out documents (:func:`heldout_log_likelihood`, by document
completion).

Kept apart from the coherence metrics because these need ground truth or a document split, and
the likelihood runs inference (:func:`anchorstream.model.infer.infer_topics`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.evaluate._checks import as_topic_word
from anchorstream.model.infer import infer_topics

__all__ = ["heldout_log_likelihood", "recovery_error"]


# --------------------------------------------------------------------------------------------
# against ground truth and held-out documents


def recovery_error(
    topic_word_true: np.ndarray, topic_word_est: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """ℓ1 distance between true and estimated topics after the best one-to-one matching.

    The matching minimizes the total ℓ1 distance (Hungarian algorithm,
    :func:`scipy.optimize.linear_sum_assignment`), so the result does not depend on how either
    model orders its topics (Arora 2013 §5).

    Parameters
    ----------
    topic_word_true : array_like of shape (n_words, n_topics)
        Columns are topics.
    topic_word_est : array_like of shape (n_words, n_est)
        Columns are topics, ``n_est >= n_topics``: a fit with more topics than the truth is
        scored on the ``n_topics`` estimates matched to true ones (the rest are left out), as a
        user who overestimates K would read it; with fewer, some true topic has no estimate
        and the mean is not defined.

    Returns
    -------
    mean : float
        Mean over true topics of the ℓ1 distance to the matched estimate (each at most 2 for
        distributions).
    per_topic : ndarray of shape (n_topics,)
        ℓ1 distance of true topic k to its match.
    matching : ndarray of int64, shape (n_topics,)
        ``matching[k]`` is the estimated topic matched to true topic k.
    """
    B_true = as_topic_word(topic_word_true, "topic_word_true")
    B_est = as_topic_word(topic_word_est, "topic_word_est")
    if B_true.shape[0] != B_est.shape[0] or B_est.shape[1] < B_true.shape[1]:
        raise InputError(
            f"topic_word_true has shape {B_true.shape} but topic_word_est has shape "
            f"{B_est.shape}; both must be over the same words, with at least as many "
            f"estimated topics as true ones"
        )
    # Imported here: scipy.optimize costs ~0.1 s of the start-up of every command otherwise.
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    cost = cdist(B_true.T, B_est.T, metric="cityblock")
    rows, cols = linear_sum_assignment(cost)
    matching = np.empty(B_true.shape[1], dtype=np.int64)
    matching[rows] = cols
    per_topic = cost[np.arange(B_true.shape[1]), matching]
    return float(per_topic.mean()), per_topic, matching


def heldout_log_likelihood(
    topic_word: np.ndarray,
    X_heldout,
    *,
    alpha: float = 0.1,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: int | np.random.Generator | None = None,
    return_per_doc: bool = False,
) -> float | tuple[float, np.ndarray]:
    """Held-out log likelihood per token, by document completion.

    The estimator (Wallach et al. 2009, "document completion"): the tokens of each held-out
    document are split at random into an observed half (``floor(n_d / 2)`` tokens) and an
    evaluation half (the rest). ``θ_d`` is fitted on the observed half with the topics fixed —
    EM for the MAP estimate under a symmetric Dirichlet(1 + alpha) prior, see
    :func:`anchorstream.model.infer.infer_topics`; the pseudo-count keeps every topic possible — and
    the evaluation half is scored under the mixture ``p(w | d) = Σ_k θ_dk B[w, k]``:

        LL = Σ_d Σ_{w in eval half of d} log p(w | d)  /  (number of evaluation tokens)

    Documents with fewer than 2 tokens are skipped. A word no topic can generate has
    probability 0 and makes the result ``-inf``, which is the honest answer (Arora 2013 reports
    the same for Recover); smooth ``topic_word`` first if that is not wanted.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
        Columns ``p(w | z)``.
    X_heldout : sparse matrix or array_like of shape (n_docs, n_words)
        Integer word counts of documents not used in training.
    alpha : float, default 0.1
        Pseudo-count of the θ estimate, ``>= 0``. Values near the corpus' Dirichlet
        concentration score best (a fitted model's ``alpha_`` is a good choice); compare models
        at the same value. ``0`` (maximum likelihood) lets θ rule topics out and easily gives
        ``-inf``.
    max_iter, tol :
        EM settings of the θ fit (see :func:`anchorstream.model.infer.infer_topics`).
    random_state : int, Generator or None
        Seeds the split of tokens into halves.
    return_per_doc : bool, default False
        Also return each document's per-token log likelihood (NaN for skipped documents).

    Returns
    -------
    float, or (float, ndarray of shape (n_docs,)) with ``return_per_doc``
        Higher is better; a uniform model scores ``-log(n_words)``.
    """
    B = as_topic_word(topic_word)
    if sp.issparse(X_heldout):
        X = sp.csr_matrix(X_heldout, dtype=np.float64, copy=True)
    else:
        X = np.asarray(X_heldout, dtype=np.float64)
        if X.ndim != 2:
            raise InputError(f"X_heldout must be of shape (n_docs, n_words), got shape {X.shape}")
        X = sp.csr_matrix(X)
    if X.shape[1] != B.shape[0]:
        raise InputError(
            f"X_heldout has {X.shape[1]} words per document but topic_word has {B.shape[0]} "
            "rows; both must use the same vocabulary"
        )
    X.sum_duplicates()
    X.eliminate_zeros()
    data = X.data
    if data.size and (
        not np.all(np.isfinite(data)) or data.min() < 0 or np.any(data != np.round(data))
    ):
        raise InputError("X_heldout must hold non-negative integer counts")
    lengths = np.asarray(X.sum(axis=1)).ravel()
    keep = lengths >= 2
    if not keep.any():
        raise InputError("no held-out document has 2 or more tokens")

    # Split every document's tokens uniformly at random: give each token a random key, sort
    # the tokens of each document by key, and observe the first floor(n_d / 2).
    rng = np.random.default_rng(random_state)
    counts = data.astype(np.int64)
    slot_of_token = np.repeat(np.arange(data.size), counts)
    doc_of_slot = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    doc_of_token = doc_of_slot[slot_of_token]
    order = np.lexsort((rng.random(slot_of_token.size), doc_of_token))
    first_token = np.concatenate(([0], np.cumsum(lengths.astype(np.int64))))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size) - first_token[doc_of_token[order]]
    observed_token = rank < (lengths.astype(np.int64) // 2)[doc_of_token]
    observed = np.bincount(slot_of_token[observed_token], minlength=data.size).astype(np.float64)
    held = data - observed

    X_obs = sp.csr_matrix((observed, X.indices, X.indptr), shape=X.shape)[keep]
    X_eval = sp.csr_matrix((held, X.indices, X.indptr), shape=X.shape)[keep]
    X_eval.eliminate_zeros()
    theta = infer_topics(B, X_obs, alpha=alpha, max_iter=max_iter, tol=tol)

    rows = np.repeat(np.arange(X_eval.shape[0]), np.diff(X_eval.indptr))
    p = np.einsum("ij,ij->i", theta[rows], np.asarray(B[X_eval.indices], dtype=np.float64))
    with np.errstate(divide="ignore"):
        token_ll = X_eval.data * np.log(p)
    doc_ll = np.bincount(rows, weights=token_ll, minlength=X_eval.shape[0])
    doc_tokens = np.asarray(X_eval.sum(axis=1)).ravel()
    total = float(doc_ll.sum() / doc_tokens.sum())
    if not return_per_doc:
        return total
    per_doc = np.full(X.shape[0], np.nan)
    per_doc[keep] = doc_ll / doc_tokens
    return total, per_doc
