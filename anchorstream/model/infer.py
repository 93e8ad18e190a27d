"""Topic proportions of new documents under a fixed topic model.

Given a word-topic matrix ``B`` (columns ``p(w | z)``) and a document's word counts ``n``, the
proportions ``θ`` maximize the mixture log likelihood ``Σ_w n_w log Σ_k θ_k B[w, k]`` over the
simplex, optionally with a symmetric Dirichlet(1 + alpha) prior. The maximizer is found by EM
with ``B`` held fixed:

    E-step   r[w, k] = θ_k B[w, k] / Σ_j θ_j B[w, j]
    M-step   θ_k     = (Σ_w n_w r[w, k] + alpha) / (Σ_w n_w + K alpha)

The objective is concave in ``θ``, EM increases it at every step, and starting from the uniform
distribution makes the result a deterministic function of the input. Each document stops on
its own when the Frank-Wolfe duality gap of its objective — an upper bound on the distance to
the optimum — falls below the tolerance (a primal-dual gap test like the one Arora et al. 2013
use for RecoverKL). This is the per-document step the HTTP ``infer`` endpoint serves and the one held-out likelihood uses to fit ``θ`` on the
observed half of each document (:func:`anchorstream.evaluate.heldout_log_likelihood`).

Orientation: ``topic_word`` is ``(n_words, n_topics)`` here, as everywhere in the library
(:mod:`anchorstream.model.recover`, :mod:`anchorstream.evaluate`). A snapshot stores the transpose,
so call ``infer_topics(snapshot.topic_word.T, counts)``; the transpose is a free view.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError

__all__ = ["infer_topics"]

# Work on at most this many (token-slot, topic) pairs at once, so a large batch of documents is
# processed in chunks of bounded memory (2**21 float64 = 16 MiB per temporary).
_CHUNK_ELEMENTS = 1 << 21


def infer_topics(
    topic_word: np.ndarray,
    counts,
    *,
    alpha: float = 0.0,
    max_iter: int = 500,
    tol: float = 1e-4,
    on_empty: str = "uniform",
) -> np.ndarray:
    """Topic proportions of one or many documents by EM with the topics held fixed.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
        ``B[w, k] = p(w | topic k)``, non-negative; columns are expected to sum to 1. For a
        snapshot pass ``snapshot.topic_word.T``.
    counts : array_like of shape (n_words,), or of shape (n_docs, n_words) dense or sparse
        Word counts (or non-negative weights) of the documents, in the vocabulary order of
        ``topic_word``.
    alpha : float, default 0.0
        Pseudo-count added to every topic in the M-step: the result is the MAP estimate under a
        symmetric Dirichlet(1 + alpha) prior, and every proportion is at least
        ``alpha / (n + K alpha)``. ``0`` is the maximum-likelihood estimate.
    max_iter : int, default 500
        Upper bound on EM iterations per document.
    tol : float, default 1e-4
        A document stops once its duality gap per token is at most ``tol``: its objective
        (log likelihood, plus log prior when ``alpha > 0``, per token) is then provably within
        ``tol`` of the maximum. EM converges slowly when the optimum has topics at zero, which
        is why the rule bounds the objective rather than the change in θ.
    on_empty : {"uniform", "raise"}, default "uniform"
        What a document without usable words gets — no counts at all, or only words that no
        topic can generate (all-zero rows of ``topic_word``, which are ignored): the uniform
        distribution (what the symmetric prior says when the data say nothing), or an
        :class:`InputError`.

    Returns
    -------
    ndarray of shape (n_topics,) for a 1-D ``counts``, else of shape (n_docs, n_topics)
        Rows on the probability simplex.

    Raises
    ------
    InputError
        On shapes that do not match, negative or non-finite values, bad settings, or an empty
        document with ``on_empty="raise"``.

    Examples
    --------
    >>> import numpy as np
    >>> B = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.5], [0.0, 0.5]])
    >>> infer_topics(B, np.array([3.0, 1.0, 0.0, 0.0])).round(6)
    array([1., 0.])
    """
    B = _check_topic_word(topic_word)
    n_words, n_topics = B.shape
    if not (np.isfinite(alpha) and alpha >= 0):
        raise InputError(f"alpha must be a finite number >= 0, got {alpha!r}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise InputError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise InputError(f"tol must be a finite number > 0, got {tol!r}")
    if on_empty not in ("uniform", "raise"):
        raise InputError(f"on_empty must be 'uniform' or 'raise', got {on_empty!r}")

    single = False
    if sp.issparse(counts):
        # A copy: the clean-up below works in place and must not touch the caller's matrix.
        X = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    else:
        try:
            arr = np.asarray(counts, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(f"counts must be numeric: {exc}") from None
        if arr.ndim == 1:
            single = True
            arr = arr[None, :]
        if arr.ndim != 2:
            raise InputError(
                f"counts must be of shape (n_words,) or (n_docs, n_words), got shape {arr.shape}"
            )
        X = sp.csr_matrix(arr)
    if X.shape[1] != n_words:
        raise InputError(
            f"counts have {X.shape[1]} words per document but topic_word has {n_words} rows; "
            "both must use the same vocabulary"
        )
    X.sum_duplicates()
    if X.data.size and not (np.all(np.isfinite(X.data)) and X.data.min() >= 0):
        raise InputError("counts must be finite and non-negative")

    # Words no topic can generate carry no information about θ (and would make the E-step
    # divide by zero): drop them before anything else.
    dead = B.sum(axis=1) <= 0
    if dead.any():
        X.data[dead[X.indices]] = 0.0
    X.eliminate_zeros()

    theta = np.full((X.shape[0], n_topics), 1.0 / n_topics)
    empty = np.diff(X.indptr) == 0
    if on_empty == "raise" and empty.any():
        raise InputError(
            f"{int(empty.sum())} document(s) (first: row {int(np.flatnonzero(empty)[0])}) have "
            "no words that any topic can generate; pass on_empty='uniform' to get the uniform "
            "distribution for them"
        )

    for start, stop in _chunks(X.indptr, n_topics):
        theta[start:stop] = _em_chunk(
            X.indptr[start : stop + 1] - X.indptr[start],
            X.indices[X.indptr[start] : X.indptr[stop]],
            X.data[X.indptr[start] : X.indptr[stop]],
            B,
            alpha,
            int(max_iter),
            tol,
        )
    return theta[0] if single else theta


def _check_topic_word(topic_word) -> np.ndarray:
    B = np.asarray(topic_word)
    if B.ndim != 2 or B.shape[1] < 1:
        raise InputError(
            f"topic_word must be of shape (n_words, n_topics), got shape {B.shape}; "
            "a snapshot's topic_word is (n_topics, n_words): pass its transpose"
        )
    if not np.issubdtype(B.dtype, np.floating) and not np.issubdtype(B.dtype, np.integer):
        raise InputError(f"topic_word must be numeric, got dtype {B.dtype}")
    if not np.all(np.isfinite(B)) or B.min(initial=0) < 0:
        raise InputError("topic_word must be finite and non-negative")
    return B


def _chunks(indptr: np.ndarray, n_topics: int):
    """Consecutive document ranges whose token slots times topics stay below the chunk size."""
    n_docs = indptr.size - 1
    limit = max(_CHUNK_ELEMENTS // n_topics, 1)
    start = 0
    while start < n_docs:
        # Largest stop with indptr[stop] - indptr[start] <= limit, but at least one document.
        stop = int(np.searchsorted(indptr, indptr[start] + limit, side="right")) - 1
        stop = min(max(stop, start + 1), n_docs)
        yield start, stop
        start = stop


def _em_chunk(indptr, indices, data, B, alpha, max_iter, tol) -> np.ndarray:
    """EM for the documents of one chunk (CSR pieces re-based to start at 0).

    Each document stops on its own once its duality gap is at most ``tol`` per token.
    """
    n_docs = indptr.size - 1
    n_topics = B.shape[1]
    theta = np.full((n_docs, n_topics), 1.0 / n_topics)
    lengths = np.diff(indptr)
    docs = np.flatnonzero(lengths > 0)
    if docs.size == 0:
        return theta
    rows = np.repeat(np.arange(docs.size), lengths[docs])
    Bd = np.asarray(B[indices], dtype=np.float64)  # (slots, K): only the rows these docs use
    weights = data
    work_indptr = np.concatenate(([0], np.cumsum(lengths[docs])))
    th = theta[docs]
    tiny = np.finfo(np.float64).tiny
    gather, n = _gather(work_indptr, weights)
    for _ in range(max_iter):
        p = np.einsum("ij,ij->i", th[rows], Bd)
        # p > 0 in exact arithmetic (every kept word has a topic with B > 0, and EM keeps
        # that topic's proportion positive); the floor only guards against underflow.
        grad = gather @ (Bd * (weights / np.maximum(p, tiny))[:, None])  # ∂ log-lik / ∂θ
        new = (th * grad + alpha) / (n + n_topics * alpha)[:, None]
        if alpha > 0:
            grad = grad + alpha / np.maximum(th, tiny)
        # Frank-Wolfe duality gap of the concave objective on the simplex (θ·∇ = n + Kα): an
        # upper bound on how far the document's objective is from its maximum.
        gap = (grad.max(axis=1) - (n + n_topics * alpha)) / n
        done = gap <= tol
        # A converged document keeps the θ its gap was certified for.
        th = np.where(done[:, None], th, new)
        if done.all():
            break
        if 4 * done.sum() >= done.size:
            # Drop the converged documents from the working arrays once they are a quarter of
            # them, so the slow ones do not keep the fast ones busy (compacting costs about
            # one iteration).
            theta[docs[done]] = th[done]
            keep = ~done
            slot_keep = keep[rows]
            docs, th = docs[keep], th[keep]
            Bd, weights = Bd[slot_keep], weights[slot_keep]
            kept_lengths = np.diff(work_indptr)[keep]
            work_indptr = np.concatenate(([0], np.cumsum(kept_lengths)))
            rows = np.repeat(np.arange(docs.size), kept_lengths)
            gather, n = _gather(work_indptr, weights)
    theta[docs] = th
    # Renormalize away rounding drift so every row is on the simplex to machine precision.
    theta /= theta.sum(axis=1, keepdims=True)
    return theta


def _gather(indptr: np.ndarray, weights: np.ndarray):
    """The (docs, slots) 0/1 matrix summing each document's slots, and the documents' sizes."""
    gather = sp.csr_matrix(
        (np.ones(weights.size), np.arange(weights.size), indptr),
        shape=(indptr.size - 1, weights.size),
    )
    return gather, np.asarray(gather @ weights).ravel()
