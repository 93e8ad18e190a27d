"""Topic recovery given anchor words: ``p(topic | word)`` for every word, then Bayes' rule.

Under separability every word's row-normalized co-occurrence is a convex combination of the
anchor rows (Arora et al. 2013, §3); recovery finds those coefficients word by word and turns
them into the word-topic matrix, ``B[i, k] ∝ p(z = k | i) p(i)``. Methods: ``"l2"`` and ``"kl"``
(RecoverL2/RecoverKL, exponentiated gradient), ``"admm"`` (JSMF's Douglas–Rachford splitting on
the L2 loss; fast, sparsest, recommended; ``weights="chi2"`` weights the loss's columns by
``1 / p(w)``, the chi-square metric between the rows) and ``"inverse"`` (the original
matrix-inversion Recover, kept as the baseline). All solve the words in parallel (numba kernels in
:mod:`anchorstream._kernels.recover` and :mod:`anchorstream._kernels.admm`) and take a warm start
``init``, which is what makes a streaming refresh cheap. The methods and their choices:
``docs/algorithms.md`` (Recovery); measured figures: ``benchmarks/README.md``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
import scipy.linalg

from anchorstream._buffers import given_array
from anchorstream._kernels.admm import recover_admm_dr_into
from anchorstream._kernels.recover import (
    recover_expgrad_kl,
    recover_expgrad_l2,
)
from anchorstream.errors import InputError
from anchorstream.model.inverse import recover_inverse
from anchorstream.model.lowrank import LowRankCooccurrence
from anchorstream.model.recover_inputs import (check_method, checked_anchors, checked_cooccurrence,
                                               checked_groups, checked_init)
from anchorstream.model.registry import RECOVER_WEIGHTS

__all__ = ["METHODS", "WEIGHTS", "RecoverResult", "bayes_topic_word", "column_weights", "recover",
           "recover_groups", "select_groups"]

METHODS = ("l2", "kl", "admm", "inverse")

#: Column weightings of ADMM's least-squares loss (:func:`column_weights`).
WEIGHTS = RECOVER_WEIGHTS

# Stopping tolerances per method, each in its own unit (see ``recover``'s ``tol``). At these
# values the word-topic matrix is within ~1e-4 ℓ1 per topic of the exact optimum of the same
# loss on sampled data (V = 1000, K = 20), far below the sampling error. ADMM at 1e-5, on the
# rectified npm matrix (V = 5000, K = 50): 2.6e-4 ℓ1 per topic (worst topic) from a 1e-9
# solve, the same top-10 words in every topic, 0.65 s against 0.90 s at 1e-6 and 1.1 s at
# 1e-7 (its previous default), where a fifth of the words still stopped at the iteration cap.
DEFAULT_TOL = {"l2": 1e-6, "kl": 1e-6, "admm": 1e-5, "inverse": 0.0}
DEFAULT_MAX_ITER = 500

# ADMM's words go to threads (numba's thread count, NUMBA_NUM_THREADS) only where each gets at
# least this many: a pool of two threads costs ~0.44 ms to start and join, what 50-90 words'
# solves take (5-10 us each, cold, V = 5000, K = 50; session 87).
_ROWS_PER_THREAD = 256

# How far a warm start that is not already optimal is pulled towards the uniform vector for the
# multiplicative (expgrad) solvers: an exact zero can never grow under ``y e^{-ηg}``, and the
# previous model's zeros need not be zeros of the new problem. Measured on a refresh with 5% new
# documents (V = 5000, K = 50; L2 and KL): 1e-2 gave the most accurate answer after a fixed
# number of iterations; 1e-6 leaves needed topics too deep to climb back in time, 1e-1 throws
# most of the start away.
_WARM_LIFT = 1e-2

# ExpGrad initial learning rate, the best known value from JSMF's experiments; the line search
# halves or doubles it per word from there.
_DEFAULT_STEP = 50.0
# ADMM-DR relaxation and proximal parameters. λ = 1.9 is the paper's ("the widely known best");
# its γ = 3.0 ("not sensitive within γ ∈ [1.0, 5.0]") is replaced by 1.0, the optimal value
# for the scaled loss (see recover()): on the rectified npm matrix (V = 5000, K = 50, tol 1e-5)
# γ = 1 took 0.34 s and at most 201 iterations, γ = 3 0.68 s and 500 (the cap), both within
# 2.8e-4 ℓ1 per topic of a 1e-9 solve.
_DEFAULT_LAMBDA = 1.9
_DEFAULT_GAMMA = 1.0


@dataclass(frozen=True)
class RecoverResult:
    """What :func:`recover` returns.

    Attributes
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
        ``B[i, k] = p(word i | topic k)``; every column sums to 1.
    coef : ndarray of shape (n_words, n_topics)
        ``p(topic k | word i)``; every row lies on the simplex. Anchor rows are unit vectors;
        words of zero mass get the uniform row (there is no evidence about them).
    n_iter : int
        The largest number of iterations any word needed (0 for ``"inverse"``).
    converged : float
        Fraction of the solved (non-anchor, positive-mass) words that met the tolerance.
    """

    topic_word: np.ndarray
    coef: np.ndarray
    n_iter: int
    converged: float


def bayes_topic_word(coef: np.ndarray, word_prob: np.ndarray) -> np.ndarray:
    """Bayes' rule from ``p(topic | word)`` to ``p(word | topic)``.

    ``B[i, k] = coef[i, k] p(i) / Σ_i' coef[i', k] p(i')`` (Arora et al. 2013, §3; JSMF eq. 3).

    Parameters
    ----------
    coef : ndarray of shape (n_words, n_topics)
    word_prob : ndarray of shape (n_words,)
        ``p(i)``, the unigram probabilities (row sums of the co-occurrence).

    Returns
    -------
    ndarray of shape (n_words, n_topics), columns summing to 1.

    Raises
    ------
    InputError
        If a topic receives no mass at all.
    """
    joint = coef * word_prob[:, None]
    mass = joint.sum(axis=0)
    if np.any(mass <= 0):
        raise InputError(
            f"topics {np.flatnonzero(mass <= 0).tolist()} receive no probability mass: every "
            "word with p(topic | word) > 0 has zero frequency"
        )
    return joint / mass


def recover(
    C,
    anchors,
    *,
    method: str = "l2",
    init=None,
    tol: float | None = None,
    max_iter: int = DEFAULT_MAX_ITER,
    step_size: float = _DEFAULT_STEP,
    admm_lambda: float = _DEFAULT_LAMBDA,
    admm_gamma: float = _DEFAULT_GAMMA,
    check_input: bool = True,
    row_sums: np.ndarray | None = None,
    anchor_products: np.ndarray | None = None,
    weights: str = "none",
) -> RecoverResult:
    """Recover ``p(topic | word)`` and the word-topic matrix from a co-occurrence and anchors.

    Parameters
    ----------
    C : ndarray or sparse matrix of shape (n_words, n_words)
        Non-negative co-occurrence, normally summing to 1 (any positive total is divided out).
        ``p(w)`` is taken as its row sums.
    anchors : array of int of shape (n_topics,)
        Distinct word indices; anchor ``k`` defines topic ``k``. Every anchor must have mass.
    method : {"l2", "kl", "admm", "inverse"}
        See the module docstring and ``docs/algorithms.md`` (Recovery).
    init : ndarray of shape (n_words, n_topics), optional
        Warm start: coefficients of a previous model (rows are renormalized; all-zero rows
        start uniform). For the expgrad methods a row that already meets the tolerance is kept
        as it is, and any other row is mixed with a 1e-2 share of the uniform vector so that its
        zeros can move; ADMM first searches for the optimum from its support (an active-set
        search, ``docs/algorithms.md``), then starts from it as given where that fails, with
        its dual variable set to the Douglas–Rachford fixed point of that start. ``"inverse"`` is closed-form: ``init`` is
        checked and otherwise ignored.
    tol : float, optional
        Per-word stopping tolerance, in the method's own unit. ``"l2"``: the duality gap
        ``λᵀy`` relative to the loss at ``y = 0``, ``‖C̄_i‖²`` (default 1e-6; the gap bounds the
        suboptimality, and the relative form does not depend on V). ``"kl"``: the duality gap
        in nats (default 1e-6). ``"admm"``: the max-norm change of ``y`` and of the primal
        residual in one iteration (default 1e-5). Unused for ``"inverse"``.
    max_iter : int
        Iteration cap per word.
    step_size : float
        Initial exponentiated-gradient learning rate (the line search adapts it per word).
    admm_lambda, admm_gamma : float
        ADMM-DR relaxation (in (0, 2)) and proximal parameter (> 0; default 1.0, the
        paper's is 3.0). γ multiplies the loss
        divided by ``sqrt(λmin λmax)`` of ``C̄_S C̄_Sᵀ``: the Gram entries are squared
        probabilities and shrink with V, and on the raw loss the paper's γ = 3 needs ~800
        iterations at V = 5000 where the scaled one needs ~60. The minimizer is unchanged.
    check_input : bool
        False skips the scan of a dense float64 ``C`` for NaN, infinite and negative entries:
        for a matrix the caller produced and checked itself (``AnchorModel.fit``'s rectified
        one, non-negative by construction).
    row_sums : ndarray of shape (n_words,), optional
        ``C``'s row sums when the caller has them (``RectifyResult.row_sums``): saves a pass
        over a dense ``C``. Trusted as given.
    anchor_products : ndarray of shape (n_words, n_topics), optional
        ``C̄ C̄_Sᵀ`` (``C`` row-normalised; column ``k`` for anchor ``k``) when the caller has
        it, as :func:`~anchorstream.model.anchors.pivoted_qr_anchors` does: saves the ``V × V × K``
        product of ``"l2"`` and ``"admm"`` (the others ignore it; so does ``weights="chi2"``,
        whose products are weighted). Trusted as given.
    weights : {"none", "chi2"}
        Column weights of ``"admm"``'s least-squares loss, ``Σ_j d_j (C̄_ij − Σ_k y_k
        C̄_{s_k j})²`` (:func:`column_weights`): ``"none"`` is JSMF's loss (``d_j = 1``),
        ``"chi2"`` divides each column by the word's probability, ``d_j = 1 / p(j)``, the
        chi-square distance between rows of correspondence analysis: each entry's deviation
        measured against its sampling noise, whose variance grows with ``p(j)``, as the KL
        loss does to second order. It costs one block product with ``C``. The other methods
        keep their papers' losses and accept only ``"none"``.

    Returns
    -------
    RecoverResult

    Raises
    ------
    InputError
        On a malformed ``C``, ``anchors`` or ``init``, an unknown method, an anchor word with
        zero mass, or a singular anchor block (``"inverse"``).

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, population_cooccurrence
    >>> m = planted_model(60, 4, random_state=0)
    >>> Q = population_cooccurrence(m.topic_word, m.topic_topic)
    >>> res = recover(Q, m.anchors, method="admm")
    >>> bool(np.abs(res.topic_word - m.topic_word).sum(axis=0).max() < 1e-4)
    True
    """
    check_method(method, weights, METHODS)
    C = checked_cooccurrence(C, check_input)
    V = C.shape[0]
    S = checked_anchors(anchors, V)
    K = S.size
    if init is not None:
        init = checked_init(init, V, K)
    tol, max_iter = _check_solver_settings(method, tol, max_iter, step_size, admm_lambda,
                                           admm_gamma)
    pv, C_total, p = _word_mass(C, S, row_sums)
    if method == "inverse":
        return RecoverResult(*recover_inverse(C, C_total, S), n_iter=0, converged=1.0)
    if isinstance(C, LowRankCooccurrence) and method == "kl":
        raise InputError("recover method 'kl' reads every entry of C; with a low-rank "
                         "rectified matrix use 'admm' or 'l2'")

    is_anchor = np.zeros(V, dtype=bool)
    is_anchor[S] = True
    rows = np.flatnonzero(~is_anchor & (p > 0)).astype(np.int64)
    start = np.full((V, K), 1.0 / K) if init is None else init
    coef, n_iter, conv = _solve(
        method, C, pv, C[S] / pv[S][:, None], start, init is not None, rows, tol, max_iter,
        step_size=step_size, admm_lambda=admm_lambda, admm_gamma=admm_gamma,
        anchor_products=anchor_products, weights=weights,
    )
    return _result(coef, n_iter, conv, S, is_anchor, p, rows)


def recover_groups(
    C,
    groups,
    *,
    method: str = "admm",
    tol: float | None = None,
    max_iter: int = DEFAULT_MAX_ITER,
    step_size: float = _DEFAULT_STEP,
    admm_lambda: float = _DEFAULT_LAMBDA,
    admm_gamma: float = _DEFAULT_GAMMA,
    check_input: bool = True,
    row_sums: np.ndarray | None = None,
    weights: str = "none",
) -> RecoverResult:
    """:func:`recover` with a group of words in place of each anchor word.

    Topic ``k``'s anchor row is the mean of the row-normalized rows ``C̄_w`` of the words of
    ``groups[k]``. Ding et al. 2014's novel words are such groups: every word of a group
    occurs (almost) only in its topic, so each of their rows estimates the same anchor row,
    and their mean has less sampling noise than any one of them. Every word with mass is then
    solved as a mix of the K mean rows, the group words included (none is pinned to its topic:
    a group word is near its group's mean, not on it), and Bayes' rule gives the topics.

    With one word per group this is :func:`recover` up to the solver's tolerance: an anchor's
    row is its own mean row, so its exact solution is the unit vector that ``recover`` pins.

    Parameters
    ----------
    C : ndarray, sparse or low-rank matrix of shape (n_words, n_words)
        As for :func:`recover`.
    groups : sequence of n_topics int arrays
        Word indices per topic; a word may belong to several groups. Words without mass in
        ``C`` are left out of their groups' means.
    method : {"l2", "kl", "admm"}
        As for :func:`recover`; ``"inverse"`` needs single anchor words.
    tol, max_iter, step_size, admm_lambda, admm_gamma, check_input, row_sums, weights
        As for :func:`recover`.

    Returns
    -------
    RecoverResult
        No row of ``coef`` is pinned; ``converged`` counts every word with mass.

    Raises
    ------
    InputError
        On a malformed ``C`` or ``groups`` (empty, out of range, or a group none of whose words
        has mass), or the arguments :func:`recover` refuses.
    """
    check_method(method, weights, tuple(m for m in METHODS if m != "inverse"),
                  " (inverse needs single anchor words)")
    C = checked_cooccurrence(C, check_input)
    V = C.shape[0]
    groups = checked_groups(groups, V)
    K = len(groups)
    tol, max_iter = _check_solver_settings(method, tol, max_iter, step_size, admm_lambda,
                                           admm_gamma)
    pv, _, p = _word_mass(C, np.zeros(0, dtype=np.int64), row_sums)
    U = _group_rows(C, groups, pv)
    if isinstance(C, LowRankCooccurrence) and method == "kl":
        raise InputError("recover method 'kl' reads every entry of C; with a low-rank "
                         "rectified matrix use 'admm' or 'l2'")
    rows = np.flatnonzero(p > 0).astype(np.int64)
    coef, n_iter, conv = _solve(
        method, C, pv, U, np.full((V, K), 1.0 / K), False, rows, tol, max_iter,
        step_size=step_size, admm_lambda=admm_lambda, admm_gamma=admm_gamma,
        anchor_products=None, weights=weights,
    )
    return _result(coef, n_iter, conv, np.zeros(0, dtype=np.int64), np.zeros(V, dtype=bool), p,
                   rows)


def select_groups(C, groups, n_keep: int, *, weights: str = "none", check_input: bool = True,
                  row_sums: np.ndarray | None = None) -> np.ndarray:
    """The ``n_keep`` groups of words whose mean rows lie farthest apart, for
    :func:`recover_groups`: the column-pivoted QR of the groups' mean row-normalized rows
    (JSMF's anchor search on the groups; LAPACK ``geqp3``), in the metric of ``weights``'s loss.
    Each kept group is the farthest from the span of those kept before it, so none is a mix
    of the others, which the recovery would leave without words (a dead topic).

    ``C``, ``groups``, ``weights``, ``check_input`` and ``row_sums`` are as for
    :func:`recover_groups`. Returns the kept groups' indices, in the order chosen; raises
    InputError for malformed arguments or ``n_keep`` outside ``[1, len(groups)]``.
    """
    if weights not in WEIGHTS:
        raise InputError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    C = checked_cooccurrence(C, check_input)
    groups = checked_groups(groups, C.shape[0])
    if isinstance(n_keep, bool) or int(n_keep) != n_keep or not 1 <= n_keep <= len(groups):
        raise InputError(f"n_keep must be an integer in [1, {len(groups)}], got {n_keep!r}")
    pv, _, _ = _word_mass(C, np.zeros(0, dtype=np.int64), row_sums)
    U = _group_rows(C, groups, pv)
    if weights == "chi2":
        U *= np.sqrt(column_weights(pv))
    _, pivots = scipy.linalg.qr(U.T, mode="r", pivoting=True)
    return pivots[: int(n_keep)].astype(np.int64)


def _group_rows(C, groups, pv) -> np.ndarray:
    """Each group's mean row-normalized row over its words with mass."""
    U = np.empty((len(groups), C.shape[0]))
    for k, g in enumerate(groups):
        g = g[pv[g] > 0]
        if g.size == 0:
            raise InputError(f"no word of group {k} has mass in C; each group needs one")
        U[k] = np.asarray(C[g] / pv[g][:, None]).mean(axis=0)
    return U


def _check_solver_settings(method, tol, max_iter, step_size, admm_lambda, admm_gamma):
    """``(tol, max_iter)`` checked, ``tol`` defaulted per method."""
    if tol is None:
        tol = DEFAULT_TOL[method]
    if not (np.isfinite(tol) and tol >= 0):
        raise InputError(f"tol must be a finite number >= 0, got {tol!r}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise InputError(f"max_iter must be a positive integer, got {max_iter!r}")
    max_iter = int(max_iter)
    if not (np.isfinite(step_size) and step_size > 0):
        raise InputError(f"step_size must be > 0, got {step_size!r}")
    if not 0 < admm_lambda < 2:
        raise InputError(f"admm_lambda must lie in (0, 2), got {admm_lambda!r}")
    if not (np.isfinite(admm_gamma) and admm_gamma > 0):
        raise InputError(f"admm_gamma must be > 0, got {admm_gamma!r}")
    return tol, max_iter


def _word_mass(C, S: np.ndarray, row_sums) -> tuple[np.ndarray, float, np.ndarray]:
    """``(row sums, their total, p(w))``; refuses anchors without mass."""
    V = C.shape[0]
    # Bayes' rule and the row normalization are scale invariant; dividing by the total only
    # makes p a probability vector when C does not quite sum to 1.
    if row_sums is None:
        pv = np.asarray(C.sum(axis=1)).ravel()
    else:
        pv = given_array(row_sums, (V,), "row_sums")
    # A low-rank rectified matrix leaves entries between two unscanned (rare) words within
    # its epsilon below zero, which can leave such a word's row sum at or below zero: it then
    # has no mass, like a word that never occurs (a dense non-negative C is unchanged).
    pv = np.maximum(pv, 0.0)
    C_total = pv.sum()
    p = pv / C_total
    if np.any(p[S] <= 0):
        raise InputError(
            f"anchor words {S[p[S] <= 0].tolist()} have zero mass in C; anchors must occur"
        )
    return pv, C_total, p


def column_weights(word_mass: np.ndarray) -> np.ndarray:
    """The chi-square column weights ``d_j = 1 / p(j)`` from the words' masses (any positive
    scale), divided by their mean over the words with mass; 0 for a word without mass (its
    column is 0 in every row). Scaling the loss leaves its minimizer unchanged.

    >>> column_weights(np.array([0.25, 0.5, 0.5, 0.0])).tolist()
    [1.5, 0.75, 0.75, 0.0]
    """
    mass = np.asarray(word_mass, dtype=np.float64)
    d = np.zeros_like(mass)
    np.divide(1.0, mass, out=d, where=mass > 0)
    has = mass > 0
    return d / d[has].mean() if has.any() else d


def _solve(method, C, pv, U, start, warm, rows, tol, max_iter, *, step_size, admm_lambda,
           admm_gamma, anchor_products, weights="none"):
    """Dispatch to the method's kernel: ``(coef, n_iter per word, converged per word)``.

    ``U`` (K × V) holds the row-normalized anchor rows ``C̄_S`` (or the groups' mean rows);
    H = C̄ Uᵀ is formed as (C Uᵀ) scaled by 1/p: no row-normalized V×V copy of C is made."""
    V, K = start.shape
    safe = np.where(pv > 0, pv, 1.0)
    if weights == "chi2":
        # G = C̄_S D C̄_Sᵀ and H = C̄ D C̄_Sᵀ: one block product with C (V × K), so the
        # search's unweighted products cannot be reused.
        d = column_weights(pv)
        UD = U * d
        G = np.ascontiguousarray(UD @ U.T)
        H = np.ascontiguousarray((C @ np.ascontiguousarray(UD.T)) / safe[:, None])
        return _solve_admm(G, H, start, warm, rows, tol, max_iter, admm_lambda, admm_gamma)
    G = np.ascontiguousarray(U @ U.T)
    if method == "kl":
        Ut = np.ascontiguousarray(U.T)
        valid = U.max(axis=0) > 0
        return recover_expgrad_kl(
            np.ascontiguousarray(C), pv, Ut, valid, start, rows, float(tol), max_iter,
            float(step_size), _WARM_LIFT,
        )
    if anchor_products is None:
        H = np.ascontiguousarray((C @ U.T) / safe[:, None])
    else:
        H = np.ascontiguousarray(given_array(anchor_products, (V, K), "anchor_products"))
    if method == "l2":
        # ‖C̄_i‖² without forming C̄: Σ_j C_ij² / p_i².
        implicit = isinstance(C, LowRankCooccurrence)
        sq = C.row_sqnorms() if implicit else np.einsum("ij,ij->i", C, C)
        vnorm2 = sq / safe**2
        return recover_expgrad_l2(
            G, H, vnorm2, start, rows, float(tol), max_iter, float(step_size), _WARM_LIFT
        )
    return _solve_admm(G, H, start, warm, rows, tol, max_iter, admm_lambda, admm_gamma)


def _solve_admm(G, H, start, warm, rows, tol, max_iter, admm_lambda, admm_gamma):
    """ADMM-DR on the loss divided by ``sqrt(λmin λmax)`` of ``G``.

    γ is scale dependent: the Gram entries are squared probabilities, ~1/V for spread-out
    rows, and the paper's γ = 3 on the raw loss then needs thousands of iterations at
    V = 5000. Dividing the loss by sqrt(λmin λmax) of G (which leaves the minimizer
    unchanged) is the scaling under which γ = 1 is the optimal Douglas–Rachford parameter
    for a strongly convex quadratic (Giselsson & Boyd 2017), so the paper's "insensitive
    within γ ∈ [1, 5]" holds whatever V is.
    """
    K = G.shape[0]
    eig = np.linalg.eigvalsh(G)
    scale = np.sqrt(max(eig[0], eig[-1] * 1e-12) * eig[-1])
    Gs = G / scale
    Hs = H / scale
    F = np.linalg.inv(admm_gamma * Gs + np.eye(K))
    F = np.ascontiguousarray((F + F.T) / 2.0)
    G_pinv = np.ascontiguousarray(scipy.linalg.pinvh(Gs))
    V = H.shape[0]
    out = (np.zeros((V, K)), np.zeros(V, dtype=np.int64), np.zeros(V, dtype=np.bool_))
    args = (Gs, Hs, F, G_pinv, start, warm)
    settings = (float(admm_lambda), float(admm_gamma), float(tol), int(max_iter))
    n = min(int(numba.config.NUMBA_NUM_THREADS), rows.size // _ROWS_PER_THREAD)
    if n <= 1:
        recover_admm_dr_into(*args, rows, *settings, *out)
        return out
    # The words are independent: every n-th to each thread (a word's cost varies with its
    # support; interleaved, the threads' shares cost alike), the same numbers whatever n.
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda t: recover_admm_dr_into(*args, rows[t::n].copy(), *settings, *out),
                      range(n)))
    return out


def _result(coef, n_iter, conv, S, is_anchor, p, rows) -> RecoverResult:
    """Anchor rows (``S``, possibly none) set to unit vectors, massless words uniform, then
    Bayes' rule."""
    K = coef.shape[1]
    coef[S] = 0.0
    coef[S, np.arange(S.size)] = 1.0
    zero_mass = ~is_anchor & (p <= 0)
    coef[zero_mass] = 1.0 / K
    topic_word = bayes_topic_word(coef, p)
    return RecoverResult(
        topic_word=topic_word,
        coef=coef,
        n_iter=int(n_iter.max()) if rows.size else 0,
        converged=float(conv[rows].mean()) if rows.size else 1.0,
    )
