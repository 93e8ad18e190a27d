"""Algorithm 4 of Ding et al. (2014): topics from the novel words' groups, by regression.

Every word's cross-document pattern is regressed on the groups' mean patterns over the simplex;
the two document halves of the split statistic make the squared loss unbiased. Split out of
:mod:`anchorstream.model.novelwords` (which re-exports :func:`estimate_topics`) because it is
the one step that reads the whole ``V × V`` correlation, and a solver of its own.
"""

from __future__ import annotations

import numpy as np

from anchorstream.errors import InputError
from anchorstream.stats.wordpatterns import SplitStatistic

__all__ = ["estimate_topics", "project_simplex_rows"]


def project_simplex_rows(Y: np.ndarray) -> np.ndarray:
    """Euclidean projection of every row onto the probability simplex (sort-based); also
    AnchorFree's regression read-out's."""
    n, K = Y.shape
    U = -np.sort(-Y, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    ks = np.arange(1, K + 1)
    cond = U - css / ks > 0
    rho = K - 1 - np.argmax(cond[:, ::-1], axis=1)
    tau = css[np.arange(n), rho] / (rho + 1)
    return np.maximum(Y - tau[:, None], 0.0)


def estimate_topics(
    split: SplitStatistic,
    groups,
    *,
    max_iter: int = 2000,
    tol: float = 1e-10,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 4: regress every word's pattern on the groups' average patterns.

    For word ``i`` it minimizes ``M (X̃_i − bY)(X̃'_i − bY')ᵀ`` over the simplex, where row k of
    ``Y`` (``Y'``) is the mean pattern of group k in the first (second) half; expanded, this is
    the quadratic ``bᵀ G b − bᵀ h_i + c`` with ``G`` and ``h_i`` block means of the correlation
    ``C``. The Gram ``G`` is made positive semidefinite (sampling noise can break that), and all
    words are solved together by accelerated projected gradient (FISTA with restarts). Then
    ``β̂_i = (Σ_d x_di / M) b_i`` and the columns are normalized.

    Parameters
    ----------
    split : SplitStatistic
    groups : sequence of n_topics int arrays
        Novel words per topic (from :func:`cluster_novel_words`, or one anchor each).
    max_iter : int
    tol : float
        Stop when the largest coefficient change of an iteration is below ``tol``.

    Returns
    -------
    topic_word : ndarray of shape (n_words, n_topics)
        Columns sum to 1.
    coef : ndarray of shape (n_words, n_topics)
        The regression coefficients ``b_i`` (rows on the simplex), ≈ ``p(topic | word)``.
    """
    groups = _check_groups(split, groups)
    Cs, Avg = _symmetric_correlation(split), _averaging_matrix(groups, split.n_words)
    G, H, L = _quadratic(Cs, Avg)
    b = _fista_simplex(G, H, L, max_iter, tol)
    return _topic_word(split, b), b


def _check_groups(split: SplitStatistic, groups) -> list[np.ndarray]:
    if not isinstance(split, SplitStatistic):
        raise InputError(f"split must be a SplitStatistic, got {type(split).__name__}")
    groups = [np.asarray(g, dtype=np.int64).ravel() for g in groups]
    K = len(groups)
    V = split.n_words
    if K < 1 or any(g.size == 0 for g in groups):
        raise InputError("groups must be a non-empty sequence of non-empty word arrays")
    if any(g.min() < 0 or g.max() >= V for g in groups):
        raise InputError(f"group words must lie in [0, {V})")
    if split.num_docs == 0:
        raise InputError("the split statistic is empty: no documents of >= 2 tokens")
    return groups


def _symmetric_correlation(split: SplitStatistic) -> np.ndarray:
    C = split.correlation()
    return (C + C.T) / 2.0


def _averaging_matrix(groups: list[np.ndarray], V: int) -> np.ndarray:
    """Row k is uniform over group k. The paper finds the average "more noise resilient than
    choosing a single point" (§4.3); measured here too."""
    Avg = np.zeros((len(groups), V))
    for k, g in enumerate(groups):
        Avg[k, g] = 1.0 / g.size
    return Avg


def _quadratic(Cs: np.ndarray, Avg: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The Gram ``G`` made positive semidefinite, the linear terms ``H`` and the Lipschitz ``L``."""
    G = Avg @ Cs @ Avg.T
    G = (G + G.T) / 2.0
    w, Q = np.linalg.eigh(G)
    w = np.maximum(w, max(w.max(), 0.0) * 1e-10)
    G = (Q * w) @ Q.T
    H = 2.0 * (Cs @ Avg.T)  # (V, K): h_i = (Y X̃'_iᵀ + Y' X̃_iᵀ) M
    L = 2.0 * w.max()
    if L <= 0:
        raise InputError("the group patterns are all zero; the statistic holds no signal")
    return G, H, L


def _fista_simplex(G: np.ndarray, H: np.ndarray, L: float, max_iter, tol) -> np.ndarray:
    """Minimize ``bᵀ G b − bᵀ h_i`` for every row over the simplex: FISTA with restarts."""
    V, K = H.shape
    b = np.full((V, K), 1.0 / K)
    z, t = b.copy(), 1.0
    for _ in range(int(max_iter)):
        grad = 2.0 * z @ G - H
        b_new = project_simplex_rows(z - grad / L)
        delta = float(np.max(np.abs(b_new - b)))
        # Gradient restart: drop momentum when it points uphill (keeps FISTA monotone-ish).
        if np.sum((z - b_new) * (b_new - b)) > 0:
            t = 1.0
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        z = b_new + ((t - 1.0) / t_new) * (b_new - b)
        b, t = b_new, t_new
        if delta < tol:
            break
    return b


def _topic_word(split: SplitStatistic, b: np.ndarray) -> np.ndarray:
    """``β̂_i = (Σ_d x_di / M) b_i``, columns normalized."""
    mass = (split.mass_first + split.mass_second) / 2.0
    topic_word = b * mass[:, None]
    sums = topic_word.sum(axis=0)
    if np.any(sums <= 0):
        raise InputError("a topic received no mass; the groups do not separate the words")
    return topic_word / sums
