"""Refining anchor topics by the likelihood of the word pairs (after recovery).

The anchor pipeline fits ``C ≈ B R Bᵀ`` by moments: a few anchor rows of the *rectified*
co-occurrence decide every topic. The counts themselves say more: each stored pair ``(i, j)``
with weight ``C_ij`` (raw, length-weighted as stored, normalized to sum 1 over ordered pairs)
is a draw from the model's pair distribution. This module maximizes that pair likelihood

    L(B, R) = Σ_ij C_ij log p_ij

by EM, initialized from the anchor model, on the nonzero pairs only (``O(nnz K)`` per
iteration, never a ``V x V`` array, never documents: the daemon's store holds the same
statistic). Two models of ``p``:

``pairs``
    The biterm mixture (Yan et al. 2013, "A biterm topic model for short texts"):
    ``p_ij = Σ_k π_k B_ik B_jk``, both words of a pair drawn from one topic. Its EM on the
    aggregated pair counts is exactly BTM's EM without documents. The topic-topic matrix of
    that model is ``diag(π)``.
``joint``
    The pair distribution of the anchor model itself (JSMF, Lee et al. 2015):
    ``p_ij = Σ_kl R_kl B_ik B_jl``, a topic pair ``(k, l) ~ R``, one word from each.
    ``pairs`` is the special case of a diagonal ``R``. EM updates ``B`` and ``R`` together,
    so the published ``R`` and prevalences (its row sums) are the ones the topics were fitted
    with.

E-step and M-step (``W = C / p`` on the pairs, ``M = W B``; one pass over the pairs,
:func:`anchorstream.model.pairpass.em_pass`)::

    N = B ⊙ (M R)                          expected word-topic counts
    B ← N / column sums                    both models
    R ← R ⊙ (Bᵀ M), normalized             joint
    π ← column sums of N, normalized       pairs

EM converges slowly (linearly) on these many parameters, and the held-out coherence of short
text kept rising long after the likelihood seemed to settle, so the iteration is accelerated by
SQUAREM (Varadhan & Roland 2008): every two EM steps are extrapolated along their squared
iteration, and the extrapolated point is kept, after one more EM step from it, only where it is
more likely than the plain steps. About five plain passes' progress per pass near convergence.

EM never decreases ``L``, nor does its acceleration (a property test checks both). EM is
multiplicative, so a ``B_ik`` that starts at 0 stays 0, and recovery leaves most of them at 0;
every start therefore mixes a share ``smoothing`` of the pairs' unigram distribution into every
topic (:func:`smoothed_start`): every word can take every topic, and every observed pair is
possible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels.pairs import pairs_diagonal, pairs_row_sums, pairs_upper_from_dense
from anchorstream.errors import InputError
from anchorstream.model.pairpass import em_pass, loglik_pass
from anchorstream.stats.tiles import ColumnTiles

__all__ = ["REFINE_AUTO_MAX_LENGTH", "REFINE_METHODS", "REFINE_MAX_ITER", "REFINE_PATIENCE",
           "REFINE_SMOOTHING", "REFINE_TOL", "REFINE_WARM_MAX_ITER", "REFINE_WARM_NEW_MAX_ITER",
           "PairCounts", "Refined", "pair_counts", "pair_em_step", "pair_loglik",
           "refine_method_for", "refine_topics", "smoothed_start"]

#: ``model.refine`` / ``fit --refine``: none, the biterm mixture, the JSMF pair model, or auto
#: (``joint`` on short documents, else ``none``: :func:`refine_method_for`).
REFINE_METHODS = ("none", "pairs", "joint", "auto")
#: The EM models (what ``refine_topics`` accepts).
_EM_METHODS = ("pairs", "joint")
#: ``auto`` refines (``joint``) where documents hold fewer tokens than this on average (in the
#: vocabulary, documents of >= 2 tokens). From the smoothed start (session 22) the converged
#: refinement gained held-out NPMI on every corpus measured below 22 tokens but ``pypi12``
#: (9.6 tokens, within 0.001): +0.002 to +0.044 on windows of 12-24 tokens cut from the
#: longer corpora, +0.042 on the 20-token ``passages``, +0.05 to +0.07 on the npm and PyPI
#: summaries; it moved the three corpora of 34-173 tokens by -0.003 to +0.010 at 2.5-7x the
#: fit's CPU (benchmarks/README.md, "Where auto refines, from the smoothed start"). 25 lies
#: in the gap between 21 and 34.
REFINE_AUTO_MAX_LENGTH = 25.0
#: Most EM passes over the pairs of a refinement (an accelerated cycle is three). With
#: SQUAREM and REFINE_TOL the refinement stopped after 60 passes on 300k PyPI summaries, 48
#: on the npm summaries and 18 on 8-token semi-synthetic documents; the cap bounds the rest.
REFINE_MAX_ITER = 100
#: EM stops when the log-likelihood gains less than this per pass, relative.
REFINE_TOL = 1e-5
#: Most passes of a refit's refinement when it starts from the previous one
#: (:func:`~anchorstream.model.refine_warm.warm_start`): each refresh continues the EM of the
#: last. One plain EM step kept held-out NPMI as close to a cold refit's as one accelerated
#: cycle (3 passes) and that as close as two, over refreshes after 1% new documents each; the
#: step costs a third of the cycle (benchmarks/README.md, "Session 38: one EM pass per warm
#: refresh").
REFINE_WARM_MAX_ITER = 1
#: Most passes of such a refinement when some topic's anchor is new, so that its topic starts
#: from the anchor model: two EM steps. With the new topics' rows rescaled
#: (:func:`~anchorstream.model.refine_warm.warm_start`) extra passes gained nothing on average
#: over 49 warm refreshes of six short-text corpora, but on the npm summaries' daemon chain at
#: K = 50, where 2-7 of 50 anchors are new each round, warm − cold held-out NPMI went −0.0058
#: (1 pass), +0.0025 (2), +0.0073 (3), +0.0084 (4) (session 77). Two, not three (one
#: accelerated cycle, session 77's choice): over 66 warm refreshes of the six corpora in four
#: draws two passes scored +0.0007 ± 0.0003 over three at 0.052 of a cold fit's CPU against
#: 0.058, and took the daemon's chain from 10.4 % to 9.8 % of a cold refresh (benchmarks/
#: README.md, "Two passes where an anchor is new (session 79)").
REFINE_WARM_NEW_MAX_ITER = 2
#: Share of the pairs' unigram distribution mixed into each topic at every start
#: (:func:`smoothed_start`).
REFINE_SMOOTHING = 1e-3
#: With a validation set (``refine_topics(validation=...)``): steps or cycles without a new
#: best validation likelihood before the EM stops.
REFINE_PATIENCE = 2
#: Accelerate the EM by SQUAREM (:func:`refine_topics`). Held-out NPMI kept rising with
#: plain EM's iterations long after the 30 it was given (PyPI summaries: +0.023 at 30, +0.045
#: at 90, +0.051 at 200); SQUAREM reaches plain EM's likelihood after 150 passes in 30 and
#: its convergence in 50-60 (benchmarks/README.md, "Pair refinement, converged").
REFINE_ACCELERATE = True


@dataclass(frozen=True)
class PairCounts:
    """The nonzero word pairs of a symmetric co-occurrence: its upper triangle (diagonal
    included) as CSR arrays, scaled so that the ordered pairs sum to 1
    (``2 Σ_{i<j} C_ij + Σ_i C_ii = 1``)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_words: int

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    @cached_property
    def tiles(self) -> ColumnTiles:
        """The pairs' column tiles, by width (what the E-step's pass visits them by)."""
        return ColumnTiles(self.indptr, self.indices)

    @cached_property
    def diagonal(self) -> np.ndarray:
        """Positions of the diagonal pairs ``(i, i)`` in ``indices`` and ``data``, sorted."""
        return pairs_diagonal(self.indptr, self.indices)

    def unigram(self) -> np.ndarray:
        """Each word's share of the ordered pairs (the rows of the full matrix, summed)."""
        return pairs_row_sums(self.indptr, self.indices, self.data)

    def dense(self) -> np.ndarray:
        """The full symmetric matrix (``V²`` memory: tests and small problems)."""
        U = sp.csr_matrix((self.data, self.indices, self.indptr),
                          shape=(self.n_words, self.n_words)).toarray()
        return U + U.T - np.diag(np.diag(U))


def _normalized(indptr, indices, data, n: int) -> PairCounts:
    data = np.asarray(data, dtype=np.float64)
    if data.size and (not np.all(np.isfinite(data)) or data.min() < 0):
        raise InputError("the co-occurrence must be finite and non-negative to refine by pairs")
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int32)
    diagonal = pairs_diagonal(indptr, indices)
    total = 2.0 * data.sum() - data[diagonal].sum()
    if not total > 0:
        raise InputError("the co-occurrence holds no pair: nothing to refine the topics on")
    pairs = PairCounts(indptr, indices, data / total, int(n))
    pairs.__dict__["diagonal"] = diagonal  # found here: the cached property's value
    return pairs


def pair_counts(C) -> PairCounts:
    """The nonzero pairs of a co-occurrence, raw (before rectification).

    Parameters
    ----------
    C : ndarray of shape (V, V), sparse matrix, or an operator with ``upper_counts()``
        A dense symmetric matrix (counts or normalized: only the pairs' shares matter), a
        SciPy sparse symmetric matrix, or
        :class:`~anchorstream.stats.sparse.SparseCooccurrence` /
        :class:`~anchorstream.model.lowrank.DocumentCooccurrence` (their upper triangle).
    """
    if hasattr(C, "upper_counts"):
        U = sp.csr_matrix(C.upper_counts())
    elif sp.issparse(C):
        U = sp.triu(sp.csr_matrix(C)).tocsr()
    else:
        dense = np.asarray(C)
        if dense.ndim != 2 or dense.shape[0] != dense.shape[1]:
            raise InputError(f"C must be a square matrix, got shape {dense.shape}")
        if dense.dtype not in (np.float32, np.float64):
            dense = dense.astype(np.float64)
        return _normalized(*pairs_upper_from_dense(np.ascontiguousarray(dense)),
                           dense.shape[0])
    U.sum_duplicates()
    U.eliminate_zeros()
    return _normalized(U.indptr, U.indices, U.data, U.shape[0])


def _check(pairs: PairCounts, B, R):
    B = np.ascontiguousarray(B, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != pairs.n_words:
        raise InputError(f"topic_word must have shape ({pairs.n_words}, n_topics), got {B.shape}")
    K = B.shape[1]
    if R.shape != (K, K):
        raise InputError(f"topic_topic must have shape ({K}, {K}), got {R.shape}")
    if not (np.all(np.isfinite(B)) and np.all(np.isfinite(R))) or B.min() < 0 or R.min() < 0:
        raise InputError("topic_word and topic_topic must be finite and non-negative")
    return B, R


def pair_loglik(pairs: PairCounts, topic_word, topic_topic) -> float:
    """``Σ_ij C_ij log p_ij`` over ordered pairs, ``p = B R Bᵀ`` (``-inf`` where an observed
    pair has probability 0), as the E-step computes it
    (:func:`~anchorstream.model.pairpass.loglik_pass`)."""
    B, R = _check(pairs, topic_word, topic_topic)
    return loglik_pass(pairs, B, R)


def refine_method_for(method: str, num_docs: float, num_tokens: float) -> str:
    """The refinement a fit runs: ``method`` itself, or for ``auto`` ``joint`` where the mean
    document (``num_tokens / num_docs``, documents of >= 2 tokens) is shorter than
    :data:`REFINE_AUTO_MAX_LENGTH` tokens, else ``none`` (also with no documents).

    >>> refine_method_for("auto", 100, 600), refine_method_for("auto", 100, 4000)
    ('joint', 'none')
    """
    if method not in REFINE_METHODS:
        raise InputError(f"refine must be one of {REFINE_METHODS}, got {method!r}")
    if method != "auto":
        return method
    short = num_docs > 0 and num_tokens / num_docs < REFINE_AUTO_MAX_LENGTH
    return "joint" if short else "none"


def pair_em_step(pairs: PairCounts, topic_word, topic_topic, method: str = "joint"):
    """One EM iteration from ``(B, R)``; returns ``(B, R, loglik)``, ``loglik`` at the input.

    ``method="pairs"`` reads only the diagonal of ``R`` (the prevalences ``π``) and returns
    ``diag(π)``; ``"joint"`` updates all of ``R``. Columns of ``B`` whose expected count is 0
    (a topic no pair is given to) keep their input; where no observed pair has a positive
    probability, nothing moves.
    """
    if method not in _EM_METHODS:
        raise InputError(f"method must be one of {_EM_METHODS}, got {method!r}")
    B, R = _check(pairs, topic_word, topic_topic)
    if method == "pairs":
        R = np.diag(np.diag(R))
    return _em_update(pairs, B, R, method, em_pass(pairs, B, R))


def _em_update(pairs: PairCounts, B: np.ndarray, R: np.ndarray, method: str, estep):
    """:func:`pair_em_step` from the E-step ``estep = em_pass(pairs, B, R)`` already run."""
    loglik, M = estep
    N = B * (M @ R)
    mass = N.sum(axis=0)
    live = mass > 0
    B_new = np.divide(N, mass, out=N, where=live)  # N is new: normalized in place
    B_new[:, ~live] = B[:, ~live]
    if method == "joint":
        R_new = R * (B.T @ M)
        R_new = (R_new + R_new.T) / 2.0
    else:
        R_new = np.diag(mass)
    total = R_new.sum()
    if not total > 0:  # no observed pair is possible under (B, R): EM cannot move
        return B, R, loglik
    return B_new, R_new / total, loglik


@dataclass
class Refined:
    """What :func:`refine_topics` returns."""

    topic_word: np.ndarray
    topic_topic: np.ndarray
    #: At the start of each iteration, then the end (unless ``final_loglik=False``).
    loglik: list = field(default_factory=list)
    n_iter: int = 0
    #: With a validation set: ``(passes, validation log-likelihood)`` at the start and after
    #: every step or cycle; the result is the best of them (``n_iter`` its passes).
    validation: list = field(default_factory=list)

    @property
    def prevalence(self) -> np.ndarray:
        return self.topic_topic.sum(axis=1)


def _as_float(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def refine_topics(pairs: PairCounts, topic_word, topic_topic, *, method: str = "joint",
                  max_iter: int = REFINE_MAX_ITER, tol: float = REFINE_TOL,
                  smoothing: float = REFINE_SMOOTHING,
                  accelerate: bool = REFINE_ACCELERATE,
                  validation: PairCounts | None = None,
                  patience: int = REFINE_PATIENCE,
                  final_loglik: bool = True) -> Refined:
    """EM on the pair likelihood from a start ``(B, R)``: the anchor model's, another method's, or
    a previous refinement's (:func:`~anchorstream.model.refine_warm.warm_start`).

    Parameters
    ----------
    pairs : PairCounts
        From :func:`pair_counts` on the raw co-occurrence.
    topic_word : ndarray of shape (V, K)
        ``B``, columns summing to 1.
    topic_topic : ndarray of shape (K, K)
        ``R``, summing to 1 (``pairs`` uses its row sums as ``π``).
    method : {"pairs", "joint"}
    max_iter : int
        Most EM passes over the pairs (each one E-step; an accelerated cycle takes three).
    tol : float
        Stop when the log-likelihood gains less than ``tol`` times its size per pass.
    smoothing : float in [0, 1)
        Share of the pairs' unigram distribution mixed into each topic at the start
        (:func:`smoothed_start`); 0 starts from ``B`` as it is.
    accelerate : bool
        SQUAREM (:func:`_squarem_cycle`): two EM steps, an extrapolation along them and a
        third step from there, kept only where it gains over the plain steps, so the
        log-likelihood still never falls. Plain EM otherwise.
    validation : PairCounts, optional
        The pairs of documents left out of ``pairs`` (same vocabulary). Early stopping: their
        log-likelihood (floored, :class:`_ValidationScore`) is computed at the start and after
        every step or cycle, the EM stops once it has not improved on its best for
        ``patience`` of them in a row, and the best point is returned. No fit uses it: that
        likelihood peaks after 0-4 passes on short text, where held-out NPMI keeps rising to
        convergence (npm summaries: stopped +0.054, converged +0.081), so it is kept for the
        benchmark that shows it (benchmarks/README.md, "Stopping the refinement on left-out
        documents").
    patience : int
        Steps or cycles without a new best validation likelihood before stopping.
    final_loglik : bool
        Append the log-likelihood at the returned point to the trace: a pass over the pairs
        (without the scatter) after the last step, whose E-step was at the point before.
        False leaves the trace at the starts of the steps, for a caller that reports no
        log-likelihood (the daemon's refresh).

    Returns
    -------
    Refined
        Topics, topic-topic matrix (``diag(π)`` for ``pairs``), the log-likelihood trace (at
        every accepted point), the EM passes run (up to the returned point) and, with
        ``validation``, its trace.
    """
    if method not in _EM_METHODS:
        raise InputError(f"method must be one of {_EM_METHODS}, got {method!r}")
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise InputError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    if not tol >= 0:
        raise InputError(f"tol must be >= 0, got {tol!r}")
    if not 0 <= smoothing < 1:
        raise InputError(f"smoothing must be in [0, 1), got {smoothing!r}")
    if not isinstance(patience, (int, np.integer)) or patience < 1:
        raise InputError(f"patience must be an integer >= 1, got {patience!r}")
    if validation is not None and validation.n_words != pairs.n_words:
        raise InputError(f"validation pairs are over {validation.n_words} words, the pairs over "
                         f"{pairs.n_words}")
    B, R = _check(pairs, topic_word, topic_topic)
    R = np.diag(R.sum(axis=1)) if method == "pairs" else R / R.sum()
    B = smoothed_start(pairs, B, smoothing)
    # The start's E-step is the first pass's (a warm refit runs a few passes: one E-step
    # fewer is ~1/8 of them).
    start = em_pass(pairs, B, R)
    trace: list[float] = []
    passes = 0
    last = None  # (log-likelihood at the start of the last step or cycle, its passes)
    held: list[tuple[int, float]] = []
    if validation is not None:
        score = _ValidationScore(validation, pairs.unigram(), smoothing)
        best = (score(B, R), B, R, 0, 0)  # (ll, B, R, passes, trace length)
        held.append((0, best[0]))
        worse = 0
    while passes < max_iter:
        if accelerate and max_iter - passes >= 3:
            B, R, lls, used = _squarem_cycle(pairs, B, R, method, start)
        else:
            estep = start if start is not None else em_pass(pairs, B, R)
            B, R, ll = _em_update(pairs, B, R, method, estep)
            lls, used = [ll], 1
        start = None
        passes += used
        trace.extend(lls)
        if validation is not None:
            ll_val = score(B, R)
            held.append((passes, ll_val))
            if ll_val > best[0]:
                best, worse = (ll_val, B, R, passes, len(trace)), 0
            else:
                worse += 1
                if worse >= patience:
                    break
        # Successive starts are accepted points: stop when they gain less than tol per pass.
        if last is not None and lls[0] - last[0] <= tol * abs(lls[0]) * last[1]:
            break
        last = (lls[0], used)
    if validation is not None and best[3] < passes:
        _, B, R, passes, n_trace = best
        del trace[n_trace:]
    if final_loglik:
        trace.append(pair_loglik(pairs, B, R))
    return Refined(B, R, trace, passes, held)


class _ValidationScore:
    """The log-likelihood of left-out pairs under ``(1 − ε) B R Bᵀ + ε q qᵀ``, ``q`` the training
    pairs' unigram distribution and ``ε`` the start's smoothing share (at least 1e-6), per
    pair of left-out weight.

    The floor keeps one pair that the EM has driven to probability 0 from making every point
    ``−inf``; pairs with a word the training pairs never saw (``q = 0``), which no point can
    predict, are left out, so they do not move the comparison between points.
    """

    _CHUNK = 1 << 16

    def __init__(self, validation: PairCounts, unigram: np.ndarray, smoothing: float):
        rows = np.repeat(np.arange(validation.n_words), np.diff(validation.indptr))
        cols = validation.indices.astype(np.int64)
        q = unigram / unigram.sum()
        keep = (q[rows] > 0) & (q[cols] > 0)
        # Ordered pairs: an off-diagonal entry of the upper triangle stands for two.
        weight = validation.data * np.where(rows == cols, 1.0, 2.0)
        self.rows, self.cols, self.weight = rows[keep], cols[keep], weight[keep]
        self.total = float(self.weight.sum())
        self.eps = max(float(smoothing), 1e-6)
        self.floor = self.eps * q[self.rows] * q[self.cols]

    def __call__(self, B: np.ndarray, R: np.ndarray) -> float:
        if not self.total > 0:
            return 0.0
        G = B @ R
        out = 0.0
        for s in range(0, self.rows.size, self._CHUNK):
            e = min(s + self._CHUNK, self.rows.size)
            p = np.einsum("ij,ij->i", G[self.rows[s:e]], B[self.cols[s:e]])
            out += float(self.weight[s:e] @ np.log((1.0 - self.eps) * p + self.floor[s:e]))
        return out / self.total


def smoothed_start(pairs: PairCounts, topic_word, smoothing: float = REFINE_SMOOTHING):
    """``B`` with a share ``smoothing`` of the pairs' unigram distribution mixed into every
    topic: where EM starts, so that every word can take every topic and every observed pair is
    possible.

    EM is multiplicative: a ``B_ik`` that starts at 0 stays 0, and recovery leaves most of them
    at exactly 0 (72% on the technical corpus). Until session 22 the start was smoothed only
    where some observed pair had probability 0 (likelihood ``−∞``), so one pair in millions
    decided whether the EM ran on every entry or only on the support recovery happened to
    give. On the technical corpus 1 pair in 4.0M (mass 6e-8) did; refitted with 1% of the
    documents left out, a copy whose start had no impossible pair was refined 0.47-0.51
    (matched ℓ1) away from the full corpus's refinement, against 0.13-0.21 with both smoothed.
    On the recovered support alone (its 62 impossible pairs left out) the PyPI summaries' EM
    reached held-out NPMI +0.026 with 2 dead topics, smoothed +0.064
    (``benchmarks/bench_refine_start.py``; benchmarks/README.md, "Where the refinement
    starts").
    """
    B = _as_float(topic_word)
    if not smoothing > 0:
        return B
    B = (1.0 - smoothing) * B + smoothing * pairs.unigram()[:, None]
    return B / B.sum(axis=0)


#: Largest SQUAREM step length ``|α|`` (``α = −1`` is two plain EM steps).
_SQUAREM_MAX_STEP = 64.0


def _squarem_cycle(pairs: PairCounts, B: np.ndarray, R: np.ndarray, method: str,
                   start=None):
    """One SQUAREM cycle (Varadhan & Roland 2008, scheme S3) of the pair EM from ``θ = (B, R)``.

    With ``θ1 = F(θ)`` and ``θ2 = F(θ1)`` (``F`` one EM step), ``r = θ1 − θ`` and
    ``v = θ2 − 2 θ1 + θ``, the point ``θ' = θ − 2 α r + α² v`` with ``α = −‖r‖ / ‖v‖`` is
    where the two steps would lead if EM converged geometrically (``α = −1`` gives ``θ2``).
    Its coefficients sum to one, so ``θ'`` keeps the column sums of ``B`` and the sum of
    ``R``, but entries that EM shrinks fast overshoot below zero: those take the same
    extrapolation of their logarithms instead (positive, and small where the entry was
    vanishing; EM's updates are multiplicative, so a zero could never grow again), and the
    columns are renormalized. The cycle returns ``F(θ')`` when ``θ'`` is at least as likely
    as ``θ1`` (then ``F(θ')`` is at least as likely as both), else ``θ2``: the likelihood
    never falls.

    Returns ``(B, R, logliks, passes)``: the next point, the log-likelihoods the passes
    computed at the points they started from (``θ``, ``θ1``, and ``θ'`` where it was
    kept), and the passes run (2 or 3). ``start``: the E-step at ``θ``, where it has run.
    """
    B1, R1, ll0 = _em_update(pairs, B, R, method,
                             start if start is not None else em_pass(pairs, B, R))
    B2, R2, ll1 = pair_em_step(pairs, B1, R1, method)
    if not (np.isfinite(ll0) and np.isfinite(ll1)):
        return B2, R2, [ll0, ll1], 2
    r2 = _sqnorm(B1 - B) + _sqnorm(R1 - R)
    v2 = _sqnorm(B2 - 2.0 * B1 + B) + _sqnorm(R2 - 2.0 * R1 + R)
    if not (r2 > 0 and v2 > 0):
        return B2, R2, [ll0, ll1], 2
    alpha = -min(np.sqrt(r2 / v2), _SQUAREM_MAX_STEP)
    if alpha >= -1.0:
        return B2, R2, [ll0, ll1], 2
    Bx = _extrapolate(B, B1, B2, alpha)
    Rx = _extrapolate(R, R1, R2, alpha)
    mass = Bx.sum(axis=0)
    if not (np.all(mass > 0) and Rx.sum() > 0):
        return B2, R2, [ll0, ll1], 2
    Bx /= mass
    Rx = (Rx + Rx.T) / (2.0 * Rx.sum())
    B3, R3, llx = pair_em_step(pairs, Bx, Rx, method)
    if np.isfinite(llx) and llx >= ll1:
        return B3, R3, [ll0, ll1, llx], 3
    return B2, R2, [ll0, ll1], 3


def _sqnorm(x: np.ndarray) -> float:
    return float(np.vdot(x, x))


def _extrapolate(x0: np.ndarray, x1: np.ndarray, x2: np.ndarray, alpha: float) -> np.ndarray:
    """``x0 − 2 α (x1 − x0) + α² (x2 − 2 x1 + x0)``, and where that is negative the same
    combination of the logarithms, exponentiated (0 where any of the three is 0)."""
    out = x0 - 2.0 * alpha * (x1 - x0) + alpha * alpha * (x2 - 2.0 * x1 + x0)
    neg = out < 0
    if neg.any():
        a, b, c = x0[neg], x1[neg], x2[neg]
        live = (a > 0) & (b > 0) & (c > 0)
        la, lb, lc = (np.log(np.where(live, z, 1.0)) for z in (a, b, c))
        logs = la - 2.0 * alpha * (lb - la) + alpha * alpha * (lc - 2.0 * lb + la)
        out[neg] = np.where(live, np.exp(np.minimum(logs, lc)), 0.0)
    return out
