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
   linear programs (maximize and minimize ``aᵀx`` over ``{x : Bx ≥ 0, 1ᵀBx = 1}``), keeping the
   one of larger ``|aᵀx|``; stop when a sweep raises ``log |det M|`` by less than ``tol``;
3. ``E = (CᵀC)⁻¹ Cᵀ P C (CᵀC)⁻¹``.

Implementation choices (measurements in ``benchmarks/README.md``, "AnchorFree"):

* The LPs are solved in the orthonormal basis ``y = Λ^{1/2} x`` (``Bx = Uy``), where every
  feasible point has ``‖y‖₂ = ‖Uy‖₂ ≤ ‖Uy‖₁ = 1``: the box ``|y_i| ≤ 1`` is redundant for the
  full LP and keeps any relaxation bounded. Each LP is solved by **cutting planes**: HiGHS on
  the box and a working set of word constraints, the most violated words added until none is;
  the working set is kept across columns and sweeps. Only the few hundred words on the
  boundary of the feasible cone ever enter it, so an LP has hundreds of rows, not V.
* **Constraint words.** On a sampled co-occurrence the rows of rare words are noisy, and
  ``Bx ≥ 0`` for every word cuts the true topics out of the feasible set: on a Gibbs-LDA
  semi-synthetic corpus (K = 50, 50k documents of 60 words) the determinant criterion over all
  5000 words recovered nothing (ℓ1 0.95). The constraints are therefore the
  ``constraint_words`` words of largest mass (``fit_topics``: ``6 K``, measured best between
  4 K and 8 K), in the spirit of the anchor methods' ``anchor_min_df``; the exact population
  case is unaffected when every word is used (the default of :func:`anchor_free`).
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
    "AnchorFreeResult",
    "CONSTRAINT_WORDS_PER_TOPIC",
    "READOUTS",
    "anchor_free",
    "constraint_words_for",
    "square_root_factor",
]

#: ``fit_topics`` constrains the LPs by the ``CONSTRAINT_WORDS_PER_TOPIC * K`` most frequent
#: words (Gibbs-LDA semi-synthetic corpus, K = 50: ℓ1 0.45 / 0.38 / 0.37 / 0.40 at 4/5/6/8 K).
CONSTRAINT_WORDS_PER_TOPIC = 6
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


def constraint_words_for(n_topics: int) -> int:
    """How many of the most frequent words constrain the LPs in ``fit_topics``."""
    return CONSTRAINT_WORDS_PER_TOPIC * int(n_topics)


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


class _CuttingPlaneLP:
    """``min cᵀy`` over ``{y : A y ≥ 0, u1ᵀy = 1, |y_i| ≤ 1}`` by cutting planes.

    ``A`` holds the constraint words' rows of ``U``, each scaled to unit length (feasibility is
    unchanged; HiGHS's absolute tolerances then mean the same for frequent and rare words).
    """

    def __init__(self, A: np.ndarray, u1: np.ndarray, batch: int, tol: float = 1e-9):
        self.A = A
        self.u1 = u1
        self.active = np.zeros(A.shape[0], dtype=bool)
        self.batch = batch
        self.tol = tol
        self.n_lp = 0

    def solve(self, c: np.ndarray) -> np.ndarray | None:
        import scipy.optimize

        K = c.size
        while True:
            rows = np.flatnonzero(self.active)
            res = scipy.optimize.linprog(
                c,
                A_ub=-self.A[rows] if rows.size else None,
                b_ub=np.zeros(rows.size) if rows.size else None,
                A_eq=self.u1[None, :],
                b_eq=np.array([1.0]),
                bounds=[(-1.0, 1.0)] * K,
                method="highs",
                # |y| <= 1 here, so HiGHS's default 1e-7 would leave C ≥ -1e-7 relative.
                options={"primal_feasibility_tolerance": 1e-10,
                         "dual_feasibility_tolerance": 1e-10},
            )
            self.n_lp += 1
            if res.status != 0:
                return None
            y = res.x
            slack = self.A @ y
            bad = np.flatnonzero((slack < -self.tol) & ~self.active)
            if bad.size == 0:
                return y
            self.active[bad[np.argsort(slack[bad])[: self.batch]]] = True


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
                y = lp.solve(-sign * a)
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
    lp = _CuttingPlaneLP(U[rows] / norms[rows, None], U.sum(axis=0), batch=max(2 * K, 50))
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
