"""AnchorFree: topics without anchor words (Huang, Fu, Sidiropoulos 2016).

The word co-occurrence ``P = C E Cᵀ`` (``C`` word-topic with columns on the simplex, ``E`` the
topic-topic correlation) identifies ``C`` and ``E`` up to permutation by

    minimize |det E|  subject to  P = C E Cᵀ,  Cᵀ1 = 1,  C ≥ 0

whenever ``C`` is *sufficiently scattered* — a much weaker condition than one anchor word per
topic (paper, Theorem 1). The algorithm (paper, Algorithm 2):

1. a square-root factor ``P ≈ B Bᵀ`` with ``B`` of shape (V, K), from the K leading
   eigenpairs of the (rectified) co-occurrence;
2. ``C = B M`` for a K×K matrix ``M`` maximizing ``|det M|`` subject to ``B M ≥ 0`` and
   ``1ᵀ B M = 1ᵀ``; solved by alternating over the columns of ``M``: with the other columns
   fixed ``det M`` is linear in column f (cofactor expansion), so each update is two small
   linear programs (maximize and minimize ``aᵀx`` over ``{x : Bx ≥ 0, 1ᵀBx = 1}``), solved
   with scipy's HiGHS, keeping the one of larger ``|aᵀx|``;
3. ``E = (CᵀC)⁻¹ Cᵀ P C (CᵀC)⁻¹``.

The LPs have only K variables, so a sweep costs ``2K`` LPs of V constraints. A refresh is
warm-started from the previous word-topic matrix: ``M₀ = argmin ‖B M − C_prev‖`` maps it into
the new factor's basis (the eigenbasis itself can rotate between refreshes, so a raw ``M`` would
not carry over).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

from anchorstream.errors import InputError

__all__ = ["AnchorFreeResult", "anchor_free", "square_root_factor"]


@dataclass(frozen=True)
class AnchorFreeResult:
    """What :func:`anchor_free` returns.

    Attributes
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
        ``C = B M`` with rounding negatives clipped; every column sums to 1.
    topic_topic : ndarray of shape (n_topics, n_topics)
        ``E``, symmetric, normalized to sum to 1 (like a co-occurrence of topics).
    mixing : ndarray of shape (n_topics, n_topics)
        ``M`` in the basis of ``factor``.
    factor : ndarray of shape (n_words, n_topics)
        ``B`` with ``P ≈ B Bᵀ``.
    n_iter : int
        Alternating sweeps over the columns of ``M``.
    converged : bool
        Whether ``|det M|`` stopped improving by more than the tolerance.
    log_det : float
        ``log |det M|`` at the end (larger is better).
    """

    topic_word: np.ndarray
    topic_topic: np.ndarray
    mixing: np.ndarray
    factor: np.ndarray
    n_iter: int
    converged: bool
    log_det: float


def _check_matrix(P) -> np.ndarray:
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise InputError(f"the co-occurrence must be a square (V, V) matrix, got {P.shape}")
    if not np.all(np.isfinite(P)):
        raise InputError("the co-occurrence contains NaN or infinity")
    return (P + P.T) / 2.0


def square_root_factor(P, n_topics: int) -> np.ndarray:
    """``B`` of shape (V, K) with ``B Bᵀ`` the best rank-K PSD approximation of ``P``.

    ``B = U_K Λ_K^{1/2}`` from the K largest eigenpairs; negative eigenvalues (sampling noise
    of an unrectified matrix) are clipped to 0. Columns get fixed signs (largest-magnitude
    entry positive); the signs do not change the feasible set of ``M`` up to a sign flip.

    Parameters
    ----------
    P : ndarray of shape (n_words, n_words)
        Symmetric co-occurrence.
    n_topics : int

    Returns
    -------
    ndarray of shape (n_words, n_topics)
    """
    P = _check_matrix(P)
    V = P.shape[0]
    K = int(n_topics)
    vals, vecs = scipy.linalg.eigh(P, subset_by_index=[V - K, V - 1])
    vals, vecs = vals[::-1], vecs[:, ::-1]
    idx = np.argmax(np.abs(vecs), axis=0)
    vecs = vecs * np.where(vecs[idx, np.arange(K)] < 0, -1.0, 1.0)
    return vecs * np.sqrt(np.maximum(vals, 0.0))[None, :]


def _cofactor_direction(M: np.ndarray, f: int) -> np.ndarray:
    """The direction of the cofactor column ``a`` of ``det M = aᵀ M[:, f]`` (up to sign).

    The cofactor column is orthogonal to every other column of ``M``; its direction is the
    last column of a complete QR of those columns. Only the direction matters here (both
    ``max aᵀx`` and ``min aᵀx`` are solved), and the QR avoids K determinants of minors.
    """
    others = np.delete(M, f, axis=1)
    Q, _ = np.linalg.qr(others, mode="complete")
    return Q[:, -1]


def _solve_lp(c: np.ndarray, A_ub: np.ndarray, a_eq: np.ndarray) -> np.ndarray | None:
    res = scipy.optimize.linprog(
        c,
        A_ub=A_ub,
        b_ub=np.zeros(A_ub.shape[0]),
        A_eq=a_eq[None, :],
        b_eq=np.array([1.0]),
        bounds=[(None, None)] * c.size,
        method="highs",
    )
    return res.x if res.status == 0 else None


def anchor_free(
    P,
    n_topics: int,
    *,
    init: np.ndarray | None = None,
    max_iter: int = 20,
    tol: float = 1e-8,
    min_mass: float = 0.0,
) -> AnchorFreeResult:
    """Fit word-topic and topic-topic matrices by determinant maximization (AnchorFree).

    Parameters
    ----------
    P : ndarray of shape (n_words, n_words)
        Word co-occurrence, symmetric, summing to 1 — ideally rectified to rank K
        (:func:`anchorstream.model.rectify.rectify`), which is what the square-root factor assumes.
    n_topics : int
        ``K``, ``1 <= K < n_words``.
    init : ndarray of shape (n_words, n_topics), optional
        The previous word-topic matrix (warm start). Default: ``M = I`` (the paper's start).
    max_iter : int
        Maximum alternating sweeps.
    tol : float
        Stop when a sweep raises ``log |det M|`` by less than this.
    min_mass : float
        Words whose row of ``P`` sums to at most this are left out of the LP constraints
        (absent words have zero rows, which constrain nothing); they get zero rows in ``C``.

    Returns
    -------
    AnchorFreeResult

    Raises
    ------
    InputError
        For a malformed ``P``, ``n_topics`` out of range, a malformed ``init`` or when an LP
        fails (``P`` of rank below ``K``).

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, population_cooccurrence
    >>> truth = planted_model(50, 3, random_state=0)
    >>> P = population_cooccurrence(truth.topic_word, truth.topic_topic)
    >>> anchor_free(P, 3).topic_word.shape
    (50, 3)
    """
    P = _check_matrix(P)
    V = P.shape[0]
    if isinstance(n_topics, bool) or int(n_topics) != n_topics or not 1 <= n_topics < V:
        raise InputError(f"n_topics must be an integer in [1, {V - 1}], got {n_topics!r}")
    K = int(n_topics)
    if max_iter < 1:
        raise InputError(f"max_iter must be >= 1, got {max_iter!r}")
    active = np.flatnonzero(P.sum(axis=1) > min_mass)
    if active.size <= K:
        raise InputError(f"only {active.size} words have mass; need more than n_topics={K}")
    Pa = P[np.ix_(active, active)]
    B = square_root_factor(Pa, K)
    ones_B = B.sum(axis=0)
    # Scaling for the LPs: every constraint row to unit length (feasibility is unchanged) so
    # HiGHS's absolute tolerances mean the same for frequent and rare words.
    norms = np.linalg.norm(B, axis=1)
    keep = norms > 0
    A_ub = -(B[keep] / norms[keep, None])

    if init is not None:
        C0 = np.asarray(init, dtype=np.float64)
        if C0.shape != (V, K) or not np.all(np.isfinite(C0)):
            raise InputError(f"init must be a finite ({V}, {K}) word-topic matrix")
        M = np.linalg.lstsq(B, C0[active], rcond=None)[0]
        if abs(np.linalg.det(M)) < 1e-300:
            M = np.eye(K)
    else:
        M = np.eye(K)

    def log_det(M):
        sign, ld = np.linalg.slogdet(M)
        return ld if sign != 0 else -np.inf

    current = log_det(M)
    converged = False
    n_iter = 0
    for n_iter in range(1, int(max_iter) + 1):
        before = current
        for f in range(K):
            a = _cofactor_direction(M, f)
            best_x, best_val = None, -np.inf
            for sign in (1.0, -1.0):
                x = _solve_lp(-sign * a, A_ub, ones_B)
                if x is not None and abs(a @ x) > best_val:
                    best_x, best_val = x, abs(a @ x)
            if best_x is None:
                raise InputError(
                    "AnchorFree's linear program failed: the factor has rank below n_topics "
                    "(too few documents or words for K topics)"
                )
            M[:, f] = best_x
        current = log_det(M)
        if n_iter > 1 and current - before <= tol:
            converged = True
            break

    C = B @ M
    C = np.maximum(C, 0.0)  # LP feasibility tolerance leaves tiny negatives
    C /= C.sum(axis=0, keepdims=True)
    CtC_inv = np.linalg.inv(C.T @ C)
    E = CtC_inv @ C.T @ Pa @ C @ CtC_inv
    E = (E + E.T) / 2.0
    E /= E.sum()
    topic_word = np.zeros((V, K))
    topic_word[active] = C
    factor = np.zeros((V, K))
    factor[active] = B
    return AnchorFreeResult(topic_word, E, M, factor, n_iter, converged, float(current))
