"""AnchorFree: topics without anchor words (Huang, Fu, Sidiropoulos 2016).

The word co-occurrence ``P = C E Cᵀ`` (``C`` word-topic with columns on the simplex, ``E`` the
topic-topic correlation) identifies ``C`` and ``E`` up to permutation by

    minimize |det E|  subject to  P = C E Cᵀ,  Cᵀ1 = 1,  C ≥ 0

whenever ``C`` is *sufficiently scattered* — a much weaker condition than one anchor word per
topic (paper, Theorem 1). The algorithm (paper, Algorithm 2):

1. a square-root factor ``P ≈ B Bᵀ`` with ``B = U Λ^{1/2}`` of shape (V, K), from the K leading
   eigenpairs of the (rectified) co-occurrence — rectification hands them over, so no second
   eigendecomposition is needed;
2. ``C = B M`` for a K×K matrix ``M`` maximizing ``|det M|`` subject to ``B M ≥ 0`` and
   ``1ᵀ B M = 1ᵀ``; solved by alternating over the columns of ``M``: with the other columns
   fixed ``det M`` is linear in column f (cofactor expansion), so each update is two small
   linear programs (maximize and minimize ``aᵀx`` over ``{x : Bx ≥ 0, 1ᵀBx = 1}``), keeping
   the one of larger ``|aᵀx|``; stop when a sweep raises ``log |det M|`` by less than ``tol``;
3. ``E = (CᵀC)⁻¹ Cᵀ P C (CᵀC)⁻¹``.

Implementation choices (measurements in ``benchmarks/README.md``, "AnchorFree"):

* The LPs are solved in the orthonormal basis ``y = Λ^{1/2} x`` (``Bx = Uy``), where
  every feasible point has ``‖y‖₂ = ‖Uy‖₂ ≤ ‖Uy‖₁ = 1``: the box ``|y_i| ≤ 1`` is redundant
  for the full LP and keeps any relaxation bounded. Each LP is solved by **cutting planes**:
  HiGHS on the box and a working set of word constraints, the most violated words added
  until none is; the working set is kept across columns and sweeps. Only the few hundred
  words on the boundary of the feasible cone ever enter it, so an LP has hundreds of rows,
  not V.
* **Warm starts.** Each of the 2K LPs of a sweep (a column of ``M``, a sign) keeps its own
  HiGHS model from sweep to sweep (HiGHS's own Python class, ``highspy``), so the simplex
  restarts from that LP's last optimal basis; without it each LP is a cold
  ``scipy.optimize.linprog`` call, to the same optimum at about twice the CPU
  (benchmarks/README.md, "AnchorFree" (e)).
* **Noise slack.** On a sampled co-occurrence the factor's span is itself noisy, and the true
  topics lie in it only up to that noise: on a Gibbs-LDA semi-synthetic corpus (K = 50, 50k
  documents of 60 words) the truth projected on the span has about a third of its entries on
  the 300 most frequent words below 0. ``C ≥ 0`` then cuts the true topics out of the feasible
  set, and the determinant criterion settles on vertices pulled inwards, each a mixture of
  topics (every topic off by ℓ1 ≈ 0.33; the same read-out from the truth's own vertices:
  0.15). The constraint of word v is therefore ``C(v, k) ≥ -c σ_v`` with ``σ_v`` the
  first-order sampling noise of row v of ``U Y`` (:func:`noise_slack`): a rare word's row and
  a direction of small eigenvalue are noisy. ``c`` (``anchorfree_slack``, default 0.003) is
  the median of the truth's own violation in these units, which was 0.0028-0.0035 across
  corpora of 10k-150k documents of 30 and 60 words and 0.0022 on a small planted model; with
  it the Gibbs-truth corpus is recovered with ℓ1 0.195 ± 0.003 over 8 draws against 0.340
  without (the default pipeline: 0.199).
* **Constraint words.** The constraints are the ``constraint_words`` words of largest mass
  (``fit_topics``: ``anchorfree_words`` × K, default 6 K), in the spirit of the anchor
  methods' ``anchor_min_df``: without the slack, rare words' rows cut the topics out (every
  word: ℓ1 0.95); with it more words help (10 K: 0.164, 20 K: 0.156) at more LP rows (CPU
  1.6× and 2.5× the 6 K run's). The exact population case is unaffected when every word is
  used (the default of :func:`anchor_free`).
* **Read-out.** ``readout="regression"`` (default) reads ``p(topic | word)`` for every word as
  the simplex-constrained least-squares fit of the word's co-occurrence row by the topics'
  rows (RecoverL2 with the AnchorFree topics as virtual anchors, solved in the K-dimensional
  span), started from the paper's ``C = BM``; on exact input it returns ``BM`` itself, on
  sampled input it keeps rare words on the simplex instead of clipping them.
  ``readout="factor"`` is the paper's ``C = BM`` with negatives clipped.

A refresh is warm-started from the previous word-topic matrix: ``Y₀ = Uᵀ C_prev`` maps it into
the new factor's basis (the eigenbasis itself can rotate between refreshes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anchorstream.errors import InputError
from anchorstream.model.patternregression import project_simplex_rows

__all__ = [
    "ANCHORFREE_SLACK",
    "ANCHORFREE_WORDS",
    "AnchorFreeResult",
    "READOUTS",
    "anchor_free",
    "noise_slack",
    "square_root_factor",
]

#: ``fit_topics`` constrains the LPs by the ``ANCHORFREE_WORDS * K`` most frequent words
#: (setting ``anchorfree_words``; benchmarks/README.md, "AnchorFree").
ANCHORFREE_WORDS = 6
#: The noise slack ``c`` of ``C(v, k) >= -c σ_v`` (setting ``anchorfree_slack``; ``σ_v`` the
#: sampling-noise scale of word v's row, see :func:`noise_slack`): the median over the most
#: frequent words of the truth's own violation in these units was 0.0028-0.0035 on Gibbs-truth
#: corpora of 10k-150k documents of 30 and 60 tokens and 0.0022 on a planted model.
ANCHORFREE_SLACK = 0.003
READOUTS = ("regression", "factor")


@dataclass(frozen=True)
class AnchorFreeResult:
    """What :func:`anchor_free` returns.

    Attributes
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
        ``p(word | topic)``; every column sums to 1.
    topic_topic : ndarray of shape (n_topics, n_topics)
        ``E``, symmetric, normalized to sum to 1 (like a co-occurrence of topics).
    mixing : ndarray of shape (n_topics, n_topics)
        ``M`` in the basis of ``factor`` (``C = factor @ mixing`` before the read-out).
    factor : ndarray of shape (n_words, n_topics)
        ``B`` with ``P ≈ B Bᵀ``.
    n_iter : int
        Alternating sweeps over the columns of ``M``.
    converged : bool
        Whether ``|det M|`` stopped improving by more than the tolerance.
    log_det : float
        ``log |det M|`` at the end (larger is better).
    n_lp : int
        Linear programs solved (cutting-plane rounds included).
    """

    topic_word: np.ndarray
    topic_topic: np.ndarray
    mixing: np.ndarray
    factor: np.ndarray
    n_iter: int
    converged: bool
    log_det: float
    n_lp: int = 0


def noise_slack(c: float, num_tokens: float) -> float:
    """The ``slack`` argument of :func:`anchor_free` for a co-occurrence of ``num_tokens``
    tokens: ``c / sqrt(N)``. The constraint of word v becomes ``C(v, k) >= -c σ_v`` with
    ``σ_v = sqrt(Σ_j (P U²)_vj / (λ_j² N))``, the first-order perturbation of row v of the
    eigenvectors by a sampling error of variance ``∝ P_vw / N`` in each entry: rows of rare
    words and directions of small eigenvalue are the noisy ones."""
    return float(c) / np.sqrt(max(float(num_tokens), 1.0)) if c else 0.0


def _check_matrix(P) -> np.ndarray:
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise InputError(f"the co-occurrence must be a square (V, V) matrix, got {P.shape}")
    if not np.all(np.isfinite(P)):
        raise InputError("the co-occurrence contains NaN or infinity")
    return (P + P.T) / 2.0


def _top_eigenpairs(P: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """The K largest eigenpairs of symmetric ``P``, decreasing: a Krylov solver for a large
    matrix (a full ``eigh`` of 5000 words costs ~30 CPU seconds), LAPACK for a small one."""
    V = P.shape[0]
    if V <= 4 * (K + 10):
        import scipy.linalg

        vals, vecs = scipy.linalg.eigh(P, subset_by_index=[V - K, V - 1])
        return vals[::-1], vecs[:, ::-1]
    from anchorstream.model.eigen import top_eigh

    res = top_eigh(lambda Z: P @ Z, V, K, tol=1e-10, random_state=0)
    return np.asarray(res[0][:K]), np.asarray(res[1][:, :K])


def _signed(vecs: np.ndarray) -> np.ndarray:
    idx = np.argmax(np.abs(vecs), axis=0)
    return vecs * np.where(vecs[idx, np.arange(vecs.shape[1])] < 0, -1.0, 1.0)


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
    vals, vecs = _top_eigenpairs(P, int(n_topics))
    return _signed(vecs) * np.sqrt(np.maximum(vals, 0.0))[None, :]


def _cofactor_direction(Y: np.ndarray, f: int) -> np.ndarray:
    """The direction of the cofactor column ``a`` of ``det Y = aᵀ Y[:, f]`` (up to sign).

    The cofactor column is orthogonal to every other column of ``Y``; its direction is the
    last column of a complete QR of those columns. Only the direction matters here (both
    ``max aᵀx`` and ``min aᵀx`` are solved), and the QR avoids K determinants of minors.
    """
    others = np.delete(Y, f, axis=1)
    Q, _ = np.linalg.qr(others, mode="complete")
    return Q[:, -1]


def _highs_class():
    """HiGHS's Python class (``highspy``, a dependency) and its "optimal" status; ``None``
    where it cannot be imported (each LP is then a cold ``scipy.optimize.linprog`` call, ~2×
    the CPU).

    The class is the solver's own binding (``highspy._Highs``) where it exists: the public
    ``highspy.Highs`` wraps it with callbacks that it enables in its constructor, which
    prints HiGHS's banner ("Running HiGHS ...: Copyright ...") to standard output before any
    option can turn logging off, into the output of ``anchorstream fit`` and the daemon's log.
    The methods used here (columns, rows, costs, ``run``, the solution) are the binding's."""
    try:
        import highspy
    except ImportError:
        return None
    return getattr(highspy, "_Highs", highspy.Highs), highspy.HighsModelStatus.kOptimal


# |y| <= 1 in the LPs, so HiGHS's default 1e-7 would leave C ≥ -1e-7 relative.
_HIGHS_TOLERANCES = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


class _CuttingPlaneLP:
    """``min cᵀy`` over ``{y : A y ≥ 0, u1ᵀy = 1, |y_i| ≤ 1}`` by cutting planes.

    ``A`` holds the constraint words' rows of ``U``, each scaled to unit length (feasibility is
    unchanged; HiGHS's absolute tolerances then mean the same for frequent and rare words).

    **Warm starts.** Each ``slot`` (a column of ``M`` and a sign) keeps its own HiGHS model
    across sweeps: the next sweep's LP of that slot differs only in its objective (and in the
    rows the shared working set gained since), so the simplex restarts from the slot's last
    optimal basis instead of from scratch (on a K = 50 corpus, all 300 rows in each model:
    165 → 114 → 63 → 21 → 8 simplex iterations per LP over five sweeps, against ~130 in
    every sweep cold).
    """

    def __init__(self, A: np.ndarray, u1: np.ndarray, batch: int, tol: float = 1e-9,
                 floor: np.ndarray | None = None):
        self.A = A
        self.floor = np.zeros(A.shape[0]) if floor is None else floor
        self.u1 = u1
        self.active = np.zeros(A.shape[0], dtype=bool)
        self.order: list[int] = []  # the working set, in the order its rows entered
        self.batch = batch
        self.tol = tol
        self.n_lp = 0
        self.highs = _highs_class()
        self.models: dict = {}

    def solve(self, c: np.ndarray, slot=0) -> np.ndarray | None:
        while True:
            y = self._warm(c, slot) if self.highs else self._cold(c)
            self.n_lp += 1
            if y is None:
                return None
            slack = self.A @ y + self.floor
            bad = np.flatnonzero((slack < -self.tol) & ~self.active)
            if bad.size == 0:
                return y
            new = bad[np.argsort(slack[bad])[: self.batch]]
            self.active[new] = True
            self.order.extend(new.tolist())

    def _cold(self, c: np.ndarray) -> np.ndarray | None:
        import scipy.optimize

        rows = np.flatnonzero(self.active)
        res = scipy.optimize.linprog(
            c,
            A_ub=-self.A[rows] if rows.size else None,
            b_ub=self.floor[rows] if rows.size else None,
            A_eq=self.u1[None, :],
            b_eq=np.array([1.0]),
            bounds=[(-1.0, 1.0)] * c.size,
            method="highs",
            options=dict(_HIGHS_TOLERANCES),
        )
        return res.x if res.status == 0 else None

    def _warm(self, c: np.ndarray, slot) -> np.ndarray | None:
        cls, optimal = self.highs
        K = c.size
        if slot not in self.models:
            h = cls()
            for option, value in (("output_flag", False), *_HIGHS_TOLERANCES.items()):
                h.setOptionValue(option, value)
            empty = np.zeros(0, dtype=np.int32)
            h.addCols(K, np.zeros(K), -np.ones(K), np.ones(K), 0, empty, empty, np.zeros(0))
            self.models[slot] = [h, 0]
            self._add_rows(h, self.u1[None, :], np.ones(1), np.ones(1))
        model = self.models[slot]
        h, known = model
        if known < len(self.order):
            new = np.asarray(self.order[known:])
            self._add_rows(h, self.A[new], -self.floor[new], np.full(new.size, h.getInfinity()))
            model[1] = len(self.order)
        cost = np.ascontiguousarray(c, dtype=np.float64)
        h.changeColsCost(K, np.arange(K, dtype=np.int32), cost)
        h.run()
        if h.getModelStatus() != optimal:
            return None
        return np.array(h.getSolution().col_value, dtype=np.float64)

    @staticmethod
    def _add_rows(h, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        n, K = rows.shape
        h.addRows(n, lower, upper, n * K, np.arange(0, n * K, K, dtype=np.int32),
                  np.tile(np.arange(K, dtype=np.int32), n),
                  np.ascontiguousarray(rows, dtype=np.float64).ravel())


def _log_det(Y: np.ndarray) -> float:
    sign, ld = np.linalg.slogdet(Y)
    return float(ld) if sign != 0 else -np.inf


def _maximize_det(lp: _CuttingPlaneLP, Y: np.ndarray, max_iter: int, tol: float):
    """Alternating column updates of ``Y`` (paper, Algorithm 2); returns (Y, sweeps,
    converged, log|det Y|)."""
    K = Y.shape[1]
    current = _log_det(Y)
    converged = False
    n_iter = 0
    for n_iter in range(1, int(max_iter) + 1):
        before = current
        for f in range(K):
            a = _cofactor_direction(Y, f)
            best_y, best_val = None, -np.inf
            for sign in (1.0, -1.0):
                y = lp.solve(-sign * a, slot=(f, sign))
                if y is not None and abs(a @ y) > best_val:
                    best_y, best_val = y, abs(a @ y)
            if best_y is None:
                raise InputError(
                    "AnchorFree's linear program failed: the factor has rank below n_topics "
                    "(too few documents or words for K topics)"
                )
            Y[:, f] = best_y
        current = _log_det(Y)
        if n_iter > 1 and current - before <= tol:
            converged = True
            break
    return Y, n_iter, converged, current


def _row_noise(P_rows: np.ndarray, U: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The scale of the sampling noise of ``C(v, ·) = U_v Y`` for the given rows, up to the
    corpus's ``1/sqrt(N)``: first-order perturbation of the eigenvectors, ``δU_vj =
    Σ_w E_vw U_wj / λ_j`` with ``Var E_vw ∝ P_vw``, gives ``sqrt(Σ_j (P U²)_vj / λ_j²)``."""
    lam = np.where(lam > 0, lam, np.inf)
    return np.sqrt(np.maximum(np.maximum(P_rows, 0.0) @ (U / lam) ** 2, 0.0).sum(axis=1))


def _regression_readout(U, lam, Y, mass, C0, n_iter: int = 300) -> np.ndarray:
    """``p(topic | word)`` by simplex-constrained least squares in the span (FISTA), started
    from the factor read-out ``C0``; returns the word-topic matrix (columns on the simplex).

    In the basis ``U``, word v's conditional row ``P_v / p_v`` has coordinates
    ``q_v = Λ U_vᵀ / p_v`` and topic k's row (``C E e_k / 1ᵀE e_k``, the row an anchor of k
    would have) has ``r_k = Y E e_k / 1ᵀE e_k`` with ``E = Y⁻¹ Λ Y⁻ᵀ``.
    """
    E = np.linalg.solve(Y, np.linalg.solve(Y, np.diag(lam)).T)
    E = (E + E.T) / 2.0
    R = (Y @ E / E.sum(axis=0)).T
    # Words without mass (possible with min_mass < 0) have no conditional row: zero rows.
    ok = mass > 1e-12 * mass.max()
    Q = (U[ok] * lam) / mass[ok, None]
    W = C0[ok] * E.sum(axis=0)  # p(topic | word) ∝ C(v, k) (E1)_k
    sums = W.sum(axis=1, keepdims=True)
    W = np.divide(W, sums, out=np.full_like(W, 1.0 / W.shape[1]), where=sums > 0)
    G = R @ R.T
    L = max(float(np.linalg.eigvalsh(G)[-1]), np.finfo(float).tiny)
    QR = Q @ R.T
    Z, t = W.copy(), 1.0
    for _ in range(n_iter):
        W_next = project_simplex_rows(Z - (Z @ G - QR) / L)
        t_next = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        Z = W_next + ((t - 1.0) / t_next) * (W_next - W)
        W, t = W_next, t_next
    joint = np.zeros_like(C0)
    joint[ok] = W * mass[ok, None]
    return joint / joint.sum(axis=0, keepdims=True)


def anchor_free(
    P,
    n_topics: int,
    *,
    init: np.ndarray | None = None,
    max_iter: int = 20,
    tol: float = 1e-8,
    min_mass: float = 0.0,
    eig: tuple[np.ndarray, np.ndarray] | None = None,
    constraint_words: int | None = None,
    readout: str = "regression",
    slack: float = 0.0,
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
        Words whose row of ``P`` sums to at most this are left out (absent words have zero
        rows, which constrain nothing); they get zero rows in ``C``.
    eig : (eigvals, eigvecs), optional
        The K largest eigenpairs of ``P`` (``RectifyResult.eigvals``/``eigvecs``), so the
        factor costs no eigendecomposition.
    constraint_words : int, optional
        Constrain ``C ≥ 0`` only on this many words of largest mass (see the module notes).
        Default: every word.
    readout : {"regression", "factor"}
        How ``C`` is read from the factor (see the module notes).
    slack : float
        Relax ``C ≥ 0`` to ``C(v, k) ≥ -slack sqrt(Σ_j (P U²)_vj / λ_j²)`` for each
        constraint word (see the module notes; :func:`noise_slack` gives it for a corpus).
        0 (default): the paper's exact constraint.

    Returns
    -------
    AnchorFreeResult

    Raises
    ------
    InputError
        For a malformed ``P``, ``n_topics``, ``init``, ``eig`` or ``readout``, or when an LP
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
    if readout not in READOUTS:
        raise InputError(f"readout must be one of {READOUTS}, got {readout!r}")
    if constraint_words is not None and int(constraint_words) < K:
        raise InputError(f"constraint_words must be >= n_topics={K}, got {constraint_words!r}")
    if not slack >= 0:
        raise InputError(f"slack must be >= 0, got {slack!r}")
    mass = P.sum(axis=1)
    active = np.flatnonzero(mass > min_mass)
    if active.size <= K:
        raise InputError(f"only {active.size} words have mass; need more than n_topics={K}")
    Pa = P[np.ix_(active, active)]
    lam, U = _factor_basis(Pa, K, eig, active, V)
    Y = _start(U, K, init, active, V)

    # A row at rounding level is a zero row (it constrains nothing); scaled to unit length it
    # would be a random constraint.
    norms = np.linalg.norm(U, axis=1)
    rows = np.flatnonzero(norms > 1e-9 * norms.max())
    if constraint_words is not None and rows.size > constraint_words:
        rows = rows[np.argsort(-mass[active][rows], kind="stable")[: int(constraint_words)]]
    floor = slack * _row_noise(Pa[rows], U, lam) / norms[rows] if slack else None
    lp = _CuttingPlaneLP(U[rows] / norms[rows, None], U.sum(axis=0), batch=max(2 * K, 50),
                         floor=floor)
    Y, n_iter, converged, current = _maximize_det(lp, Y, max_iter, tol)

    C = np.maximum(U @ Y, 0.0)  # LP feasibility tolerance leaves tiny negatives
    C /= C.sum(axis=0, keepdims=True)
    if readout == "regression":
        C = _regression_readout(U, lam, Y, mass[active], C)
    CtC_inv = np.linalg.inv(C.T @ C)
    E = CtC_inv @ C.T @ Pa @ C @ CtC_inv
    E = (E + E.T) / 2.0
    E /= E.sum()
    topic_word = np.zeros((V, K))
    topic_word[active] = C
    root = np.sqrt(lam)
    factor = np.zeros((V, K))
    factor[active] = U * root
    M = Y / np.where(root > 0, root, 1.0)[:, None]
    return AnchorFreeResult(topic_word, E, M, factor, n_iter, converged,
                            _log_det(M), lp.n_lp)


def _factor_basis(Pa, K, eig, active, V):
    """``(Λ, U)``: the K leading eigenpairs of ``Pa`` (given or computed), negatives clipped,
    without directions of zero eigenvalue (the LPs need a basis of rank K)."""
    if eig is None:
        lam, U = _top_eigenpairs(Pa, K)
    else:
        lam, U = (np.asarray(x, dtype=np.float64) for x in eig)
        if lam.shape != (K,) or U.shape not in ((V, K), (active.size, K)):
            raise InputError(f"eig must be ({K},) eigenvalues and ({V}, {K}) eigenvectors")
        U = U[active] if U.shape[0] != active.size else U
    lam = np.maximum(lam, 0.0)
    if np.count_nonzero(lam > lam.max() * 1e-12) < K:
        raise InputError(
            "AnchorFree's linear program failed: the factor has rank below n_topics "
            "(too few documents or words for K topics)"
        )
    return lam, _signed(U)


def _start(U, K, init, active, V) -> np.ndarray:
    """The paper's ``Y = I``, or the previous topics mapped into the basis (warm start)."""
    if init is None:
        return np.eye(K)
    C0 = np.asarray(init, dtype=np.float64)
    if C0.shape != (V, K) or not np.all(np.isfinite(C0)):
        raise InputError(f"init must be a finite ({V}, {K}) word-topic matrix")
    Y = U.T @ C0[active]
    return Y if _log_det(Y) > -700 else np.eye(K)
