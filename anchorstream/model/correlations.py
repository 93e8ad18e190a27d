"""Topic-topic co-occurrence A, the Dirichlet α behind it, and supertopics.

``A[k, l] = p(z1 = k, z2 = l)`` is the topic analogue of the word co-occurrence: ``C ≈ B A Bᵀ``
(JSMF, Lee et al., eq. 1). Its row sums are the topic prevalences. Where documents are drawn
from a Dirichlet, ``A`` is that Dirichlet's second moment and gives back ``α``; and because ``A``
is itself a joint-stochastic matrix, factorizing it again (rectify → anchors → recover) gives
supertopics (JSMF §4).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.model.recover import recover

__all__ = ["TOPIC_TOPIC_METHODS", "dirichlet_alpha", "related_topics", "supertopics",
           "topic_topic"]

TOPIC_TOPIC_METHODS = ("diagonal", "pinv")


def _finish(A: np.ndarray) -> np.ndarray:
    """Symmetrize, clip negatives to zero, normalize to sum 1."""
    if not np.all(np.isfinite(A)):
        raise InputError("the topic-topic matrix is not finite: C or topic_word holds NaN or inf")
    A = (A + A.T) / 2.0
    np.clip(A, 0.0, None, out=A)
    total = A.sum()
    if not np.isfinite(total) or total <= 0:
        raise InputError(
            "the topic-topic matrix has no positive mass (the anchors never co-occur)"
        )
    return A / total


def topic_topic(C, topic_word, anchors, *, method: str = "diagonal") -> np.ndarray:
    """The topic co-occurrence ``A`` with ``C ≈ B A Bᵀ``.

    ``"diagonal"`` is JSMF Algorithm 4: by separability ``C[s_k, s_l] = B[s_k, k] A[k, l]
    B[s_l, l]``, so ``A = D⁻¹ C_SS D⁻¹`` with ``D = diag(B[s_k, k])``; it reads only the anchor
    block and is non-negative whenever ``C`` is. ``"pinv"`` is the least-squares fit of Arora et al.
    2013, ``A = B⁺ C B⁺ᵀ``, which uses all of ``C`` but can come out with negative entries on noisy
    data. Either result is symmetrized, its negative entries are clipped to zero (``A`` is a joint
    distribution; leaving them would give negative prevalences and break α and supertopics), and
    it is normalized to sum 1.

    Parameters
    ----------
    C : ndarray or sparse matrix of shape (n_words, n_words)
        The co-occurrence the topics were recovered from (rectified, if it was).
    topic_word : ndarray of shape (n_words, n_topics)
        ``B``, columns summing to 1.
    anchors : array of int of shape (n_topics,)
    method : {"diagonal", "pinv"}

    Returns
    -------
    ndarray of shape (n_topics, n_topics)
        Symmetric, non-negative, summing to 1.

    Raises
    ------
    InputError
        On mismatched shapes, an unknown method, or an anchor with ``B[s_k, k] = 0``.

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, population_cooccurrence
    >>> m = planted_model(40, 3, random_state=0)
    >>> Q = population_cooccurrence(m.topic_word, m.topic_topic)
    >>> bool(np.allclose(topic_topic(Q, m.topic_word, m.anchors), m.topic_topic))
    True
    """
    if method not in TOPIC_TOPIC_METHODS:
        raise InputError(f"method must be one of {TOPIC_TOPIC_METHODS}, got {method!r}")
    if C is None or len(getattr(C, "shape", ())) != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"C must be a square (V, V) matrix, got shape {getattr(C, 'shape', None)}")
    V = C.shape[0]
    B = np.asarray(topic_word, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != V:
        raise InputError(f"topic_word must have shape ({V}, n_topics), got {B.shape}")
    K = B.shape[1]
    S = np.asarray(anchors)
    if S.shape != (K,) or not np.issubdtype(S.dtype, np.integer):
        raise InputError(f"anchors must be {K} integer word indices, got {S!r}")
    if S.min() < 0 or S.max() >= V:
        raise InputError(f"anchors must lie in [0, {V}), got {S.tolist()}")

    if method == "diagonal":
        C_SS = C[S][:, S]
        C_SS = C_SS.toarray() if sp.issparse(C_SS) else np.asarray(C_SS, dtype=np.float64)
        d = B[S, np.arange(K)]
        if np.any(d <= 0):
            raise InputError(
                f"topics {np.flatnonzero(d <= 0).tolist()} give their own anchor word zero "
                "probability, so A = D⁻¹ C_SS D⁻¹ is undefined"
            )
        A = C_SS / d[:, None] / d[None, :]
    else:
        B_pinv = np.linalg.pinv(B)  # (K, V)
        A = B_pinv @ np.asarray(C @ B_pinv.T)
    return _finish(np.asarray(A, dtype=np.float64))


def _alpha_objective(alpha0: float, a: np.ndarray, Abar: np.ndarray) -> float:
    """``Σ_kl ((α0 a_l + δ_kl) / (α0 + 1) - Ā_kl)²``: the row-normalized Dirichlet moment vs Ā."""
    K = a.size
    model = (alpha0 * np.broadcast_to(a, (K, K)) + np.eye(K)) / (alpha0 + 1.0)
    return float(((model - Abar) ** 2).sum())


def dirichlet_alpha(A, *, max_iter: int = 1000, tol: float = 1e-12) -> np.ndarray:
    """Fit a Dirichlet ``α`` to a topic-topic matrix (JSMF Algorithm 4, RECOVER-ALPHA).

    For ``θ ~ Dir(α)``, ``E[θθᵀ]`` has row sums ``a = α / α0`` and row-normalized form
    ``Ā_kl = (α0 a_l + δ_kl) / (α0 + 1)``. So ``α = α0 a``, with ``α0`` fitted by projected
    gradient on ``Σ_kl (Ā_kl(α0) - Ā_kl)²`` from the paper's start: each column's diagonal minus
    its mean off-diagonal entry estimates ``1 / (α0 + 1)``, and the mean of the K resulting
    candidates starts the descent.

    The gradient is the paper's (the derivative times ``(α0 + 1)³ / 2``, a positive factor, so
    its zero is the stationary point). It is affine in ``α0``; its slope ``c1`` is the Lipschitz
    constant, and the step ``1 / c1`` used here lands on the stationary point in one step, after
    which the loop confirms convergence.

    Parameters
    ----------
    A : ndarray of shape (n_topics, n_topics)
        Topic co-occurrence (non-negative, positive row sums; normalized here).
    max_iter : int
    tol : float
        Stop when ``α0`` changes by less than ``tol * max(1, α0)``.

    Returns
    -------
    ndarray of shape (n_topics,), all entries > 0.

    Raises
    ------
    InputError
        If ``A`` is not a square non-negative matrix with at least two topics and positive row
        sums, or if it does not fit a Dirichlet (the least-squares ``α0`` is 0 or unbounded:
        topics co-occur no more with themselves than with others, as correlated topics may).

    Examples
    --------
    >>> from anchorstream.synthetic import dirichlet_second_moment
    >>> alpha = np.array([0.1, 0.2, 0.3])
    >>> bool(np.allclose(dirichlet_alpha(dirichlet_second_moment(alpha)), alpha))
    True
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 2:
        raise InputError(f"A must be a square (K, K) matrix with K >= 2, got shape {A.shape}")
    if not np.all(np.isfinite(A)) or A.min() < 0:
        raise InputError("A must be finite and non-negative")
    K = A.shape[0]
    A = (A + A.T) / 2.0
    A = A / A.sum()
    a = A.sum(axis=1)
    if np.any(a <= 0):
        raise InputError(
            f"topics {np.flatnonzero(a <= 0).tolist()} have zero prevalence; a Dirichlet needs "
            "every α_k > 0"
        )
    Abar = A / a[:, None]

    # The paper's start: per column l, diag(Ā)_l - mean off-diagonal of column l ≈ 1/(α0 + 1).
    off = Abar - np.diag(np.diag(Abar))
    u = off.sum(axis=0) / (K - 1)
    with np.errstate(divide="ignore"):
        candidates = 1.0 / (np.diag(Abar) - u) - 1.0
    good = np.isfinite(candidates) & (candidates > 0)
    # On data far from a Dirichlet some candidates are negative or infinite; start from the
    # sensible ones (or from 1 if there are none; the descent does the rest).
    alpha0 = float(candidates[good].mean()) if good.any() else 1.0

    # Paper's (scaled) gradient: (1 - α0 - K) + α0 K Σa² + (α0 + 1) Σ_k Ā_kk - (α0 + 1) Σ_k (Āa)_k.
    trace = np.trace(Abar)
    cross = (Abar @ a).sum()
    c0 = 1.0 - K + trace - cross
    c1 = K * (a @ a) - 1.0 + trace - cross
    if not c1 > 0:
        raise InputError(
            "A does not fit a Dirichlet: the least-squares concentration α0 is unbounded "
            "(topics co-occur with themselves no more than with others)"
        )
    eta = 1.0 / c1
    for _ in range(max_iter):
        grad = c0 + c1 * alpha0
        new = max(alpha0 - eta * grad, 0.0)
        done = abs(new - alpha0) <= tol * max(1.0, alpha0)
        alpha0 = new
        if done:
            break
    if not alpha0 > 0:
        raise InputError(
            "A does not fit a Dirichlet: the least-squares concentration α0 is 0 (every document "
            "would hold a single topic)"
        )
    return alpha0 * a


def supertopics(
    A,
    n_super: int,
    *,
    rectify: bool = True,
    rectify_fn: Callable | None = None,
    anchors_fn: Callable | None = None,
    recover_method: str = "admm",
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Group topics into ``n_super`` supertopics by factorizing ``A`` again (JSMF §4).

    ``A`` is treated as a K×K co-occurrence of "words" that are topics: it is rectified to rank
    ``n_super`` (JSMF Algorithm 1), its anchor topics are found, and recovery gives
    ``p(topic | supertopic)`` and the supertopic co-occurrence, ``A ≈ W A_super Wᵀ``.

    Parameters
    ----------
    A : ndarray of shape (n_topics, n_topics)
        Topic co-occurrence (e.g. from :func:`topic_topic`).
    n_super : int
        Number of supertopics, ``1 <= n_super < n_topics``.
    rectify : bool
        Rectify ``A`` before finding anchors (the paper's recursive RAW algorithm does).
    rectify_fn : callable, optional
        ``rectify_fn(C, n_topics)`` returning the rectified matrix or an object with a
        ``matrix`` attribute. Default: :func:`anchorstream.model.rectify.rectify`.
    anchors_fn : callable, optional
        ``anchors_fn(C, n_topics)`` returning ``n_topics`` row indices. Default:
        :func:`anchorstream.model.anchors.find_anchors` (pivoted QR).
    recover_method : str
        Passed to :func:`anchorstream.model.recover.recover`.
    random_state : int, Generator or None
        Passed to the default rectifier.

    Returns
    -------
    weights : ndarray of shape (n_topics, n_super)
        ``p(topic | supertopic)``; every column sums to 1.
    super_topic_topic : ndarray of shape (n_super, n_super)
        Supertopic co-occurrence, symmetric, summing to 1.

    Raises
    ------
    InputError
        On a malformed ``A`` or ``n_super`` out of range.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InputError(f"A must be a square (K, K) matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)) or A.min() < 0 or A.sum() <= 0:
        raise InputError("A must be finite, non-negative and not all zero")
    K = A.shape[0]
    if int(n_super) != n_super or not 1 <= n_super < K:
        raise InputError(f"n_super must be an integer in [1, {K - 1}], got {n_super!r}")
    n_super = int(n_super)
    C = (A + A.T) / 2.0
    C /= C.sum()

    if rectify:
        if rectify_fn is None:
            # Imported here: the rectifier and the anchor finders are separate stages that
            # import this package's recovery, not the other way round.
            from anchorstream.model.rectify import rectify as default_rectify

            out = default_rectify(C, n_super, random_state=random_state)
        else:
            out = rectify_fn(C, n_super)
        C = np.asarray(getattr(out, "matrix", out), dtype=np.float64)
        if C.shape != (K, K):
            raise InputError(f"rectify_fn returned shape {C.shape}, expected ({K}, {K})")
    if anchors_fn is None:
        from anchorstream.model.anchors import find_anchors

        anchors = find_anchors(C, n_super, method="qr")
    else:
        anchors = anchors_fn(C, n_super)
    anchors = np.asarray(anchors, dtype=np.int64)
    if anchors.shape != (n_super,):
        raise InputError(f"anchors_fn returned shape {anchors.shape}, expected ({n_super},)")
    rec = recover(C, anchors, method=recover_method)
    return rec.topic_word, topic_topic(C, rec.topic_word, anchors)


def hierarchy(A, n_super: int, *, topic_ids=None, random_state=0, min_weight: float = 1e-6) -> dict:
    """Supertopics of a topic-topic matrix as a JSON-ready hierarchy (for snapshots).

    Parameters
    ----------
    A : ndarray of shape (n_topics, n_topics)
        Topic co-occurrence.
    n_super : int
        Number of supertopics, ``1 <= n_super < n_topics``.
    topic_ids : sequence of int, optional
        Public id of each topic (row order of ``A``); default ``0..K-1``.
    random_state : int
    min_weight : float
        Topics with a smaller weight in a supertopic are left out of its list.

    Returns
    -------
    dict
        ``{"supertopics": [{"id", "prevalence", "topics": [[topic_id, weight], ...]}, ...]}``
        with each supertopic's topics by decreasing weight ``p(topic | supertopic)``.
    """
    A = np.asarray(A, dtype=np.float64)
    K = A.shape[0]
    if not 1 <= n_super < K:
        raise InputError(f"n_super must be in [1, {K}) for {K} topics, got {n_super!r}")
    ids = list(range(K)) if topic_ids is None else [int(i) for i in topic_ids]
    weights, super_A = supertopics(A, n_super, random_state=random_state)
    return {
        "supertopics": [
            {
                "id": s,
                "prevalence": float(super_A[s].sum()),
                "topics": [[ids[k], float(weights[k, s])]
                           for k in np.argsort(-weights[:, s], kind="stable")
                           if weights[k, s] > min_weight],
            }
            for s in range(n_super)
        ]
    }


def related_topics(A, k: int, *, top: int = 5) -> list[tuple[int, float]]:
    """The topics that share documents with topic ``k`` more than chance, strongest first.

    The strength is the lift ``A[k, l] / (p_k p_l)`` with ``p`` the row sums of ``A`` (the
    prevalences): how many times more often topics ``k`` and ``l`` appear together than if
    documents drew them independently. Only lifts above 1 are listed; ``k`` itself never.

    Parameters
    ----------
    A : ndarray of shape (n_topics, n_topics)
        Topic co-occurrence (a snapshot's ``topic_topic``).
    k : int
        Row of the topic (not its public id).
    top : int
        At most this many topics.

    Returns
    -------
    list of (int, float)
        ``(row, lift)`` pairs.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InputError(f"A must be a square matrix, got shape {A.shape}")
    if not 0 <= int(k) < A.shape[0]:
        raise InputError(f"k must be in [0, {A.shape[0]}), got {k!r}")
    p = A.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = np.where(p[k] * p > 0, A[k] / (p[k] * p), 0.0)
    lift[int(k)] = 0.0
    order = [int(i) for i in np.argsort(-lift, kind="stable") if lift[i] > 1.0]
    return [(i, float(lift[i])) for i in order[:max(int(top), 0)]]
