"""Rectification of a co-occurrence matrix by alternating projection (JSMF Algorithm 1).

An empirical co-occurrence matrix ``C`` is full-rank and indefinite, while the posterior moment
``B A Bᵀ`` it estimates is rank-``K``, positive semidefinite (PSD), non-negative (NN) and sums to
one (NOR). Alternating projection (Lee et al., JSMF Algorithm 1) repeats

1. ``(U, Λ) =`` the ``K`` largest (algebraic) eigenpairs of ``C_NN``; ``C_PSD = U max(Λ, 0) Uᵀ``
2. ``C_NOR = C_PSD + (1 - Σ C_PSD) / V²``
3. ``C_NN = max(C_NOR, 0)``

until ``C_NN`` stops changing, then divides by the sum.

Anderson acceleration (default)
-------------------------------
The iterate is ``C_NN = max(Y Yᵀ + shift, 0)`` with ``Y = U Λ^½``, so AP is a fixed-point
iteration ``Y ← G(Y)`` on a ``V × K`` factor. Type-II Anderson acceleration (Walker & Ni 2011)
combines the last ``anderson`` values of ``G`` (each first rotated onto the current ``Y``: the
factor is only defined up to an orthogonal ``K × K`` matrix) into the next ``Y``; it costs a few
``V K``-sized vector operations per iteration, nothing next to the ``O(V² K)`` projection. The
limit is a fixed point of the same map (a test checks that one textbook step barely moves it),
but AP's limit depends on the path, so it is not plain AP's point. Measured with
``benchmarks/bench_rectify.py`` (8-word semi-synthetic documents, V = 5000, K = 50): at tol 1e-4
plain AP needed 66 / 48 iterations for 20k / 50k documents, the accelerated one 24 / 29, and
the accelerated topics were closer to the truth (ℓ1 1.234 / 1.051 against 1.258 / 1.172, and
against 1.256 / 1.111 for plain AP after 150 iterations). ``anderson=0`` is the published
algorithm.

Warm updates
------------
A refresh after a small change of the data does not rerun the iteration:
:func:`rectify_update` moves the previous result's rank-``K`` core by the change's part
tangent to the rank-``K`` matrices, at the cost of about one iteration without eigensolver.
Starting AP itself next to the previous result was measured to drift (see its docstring).

The cost is dominated by step 1 and by forming ``C_PSD``, both ``O(V² K)``. Step 1 uses a
restarted block Krylov eigensolver (:func:`top_eigh`) seeded with the previous iteration's Ritz
vectors: from one AP iteration to the next the matrix changes little, so Rayleigh–Ritz on the old
basis plus one to three block products meet a tight tolerance (on a 5000-word real corpus with
K = 50: about two extra products per iteration at ``eig_tol=1e-8``, one at ``1e-6``, against
~25 for a cold solve). Steps 2–3, the convergence sums and the first of those products are
fused into one pass over row blocks of the upper triangle of ``C_PSD``, each block formed by a
small GEMM and consumed while it is in cache; the only ``V × V`` array allocated is the iterate
itself.

Measured alternatives (same 5000 × 5000 matrices, tolerance 1e-9 against
``scipy.linalg.eigh``): scipy's ``lobpcg`` needed about as many block products but 2-3x the
time, ARPACK ``eigsh`` (which accepts a single start vector only) took ~100-280 memory-bound
matrix-vector products per solve on the dense matrix (but on a sparse CSR copy, where a
product with one vector is cheap, it wins the cold solve: :func:`_sparse_top_eigh`), and plain subspace iteration stalled on the clustered
spectrum of an unrectified real-corpus matrix (its 50th and 51st eigenvalues differ by 2%).
How exact must the inner solves be? Measured on that corpus against solves to 1e-10, after 50
iterations (relative Frobenius distance of the iterates): 6e-7 at ``eig_tol=1e-8``, 4e-6 at
1e-7, 2e-5 at 1e-6, but 2e-3 at 1e-5, and a tolerance tied to the current AP change (loose in
the first iterations) moved the iterate by 7e-3 after 40: loose early solves change the
algorithm, because AP's limit depends on its path. So the default inner tolerance is
``tol / 100`` clipped to ``[1e-8, 1e-6]``: the deviation stays well below the change at which
the caller declared convergence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream._buffers import leading_view
from anchorstream._kernels.rectify import (
    anchor_dense_to_csr,
    anchor_rectify_clip,
    anchor_update_difference,
)
from anchorstream.errors import InputError

log = logging.getLogger(__name__)

__all__ = ["AndersonMixer", "RectifyResult", "fix_signs", "rectify", "rectify_update",
           "top_eigh"]

#: Rows per block of the fused projection pass: a block of ``C_PSD`` should stay in cache (a
#: few MiB) while it is clipped and multiplied by the eigensolver basis.
_BLOCK_BYTES = 4 << 20

#: Largest fraction of nonzero entries of ``C`` at which the cold eigensolve runs on a CSR
#: copy (ARPACK, :func:`_sparse_top_eigh`) instead of the dense matrix (~20 block products).
#: Measured at V = 5000 with 60-column blocks: a product with 3% nonzeros took 0.011 s
#: against 0.02-0.05 s dense, 9% about broke even with a float32 dense one; the copy itself
#: costs ~0.1 s.
_SPARSE_DENSITY = 0.05

#: Seconds between INFO progress lines of a long rectification.
_PROGRESS_SECONDS = 10.0

#: Side of the square tiles compared by the symmetry check.
_TILE = 256

#: Smallest eigensolver tolerance inside the loop when it runs in float32 (see ``dtype``).
_FLOAT32_EIG_TOL = 1e-6

#: Bounds of the default inner eigensolver tolerance ``tol / 100`` (see :func:`rectify`); the
#: lower one is also the tolerance of the returned eigenpairs.
_FINAL_EIG_TOL = 1e-8
_MAX_EIG_TOL = 1e-6


@dataclass(frozen=True, eq=False)
class RectifyResult:
    """The outcome of :func:`rectify`.

    Attributes
    ----------
    matrix : ndarray of shape (n_words, n_words)
        The rectified co-occurrence: symmetric, non-negative, summing to 1.
    eigvecs : ndarray of shape (n_words, n_topics)
        Eigenvectors of the ``n_topics`` largest eigenvalues of ``matrix``, each with its
        largest-magnitude entry positive. Pass them as ``init_eigvecs`` to warm-start the next
        rectification.
    eigvals : ndarray of shape (n_topics,)
        Those eigenvalues, in decreasing order.
    n_iter : int
        Alternating-projection iterations run.
    residual : float
        Relative change of the last iteration, ``‖C_NN⁽ᵗ⁾ − C_NN⁽ᵗ⁻¹⁾‖_F / ‖C_NN⁽ᵗ⁻¹⁾‖_F``.
    converged : bool
        Whether ``residual <= tol`` was reached within ``max_iter`` iterations.
    n_products : int
        Products of the matrix with a block of at most ``n_topics + oversample`` vectors spent
        by the eigensolver (the first solve on ``C`` included), beyond the one fused into every
        iteration; what a warm start saves.
    factor, shift : ndarray of shape (n_words, n_topics), float
        The rank-``K`` core of the result: ``matrix = max(factor factorᵀ + shift, 0)`` (up to
        the float32 rounding of the iterate with ``dtype=float32``). With the input, the state
        :func:`rectify_update` needs to follow a small change of the data.
    row_sums, row_sqnorms : ndarray of shape (n_words,)
        ``matrix``'s row sums and squared row norms, taken in the pass that forms it: the
        anchor search and the recovery need them, and on the dense V x V result each
        costs a pass over memory.
    """

    matrix: np.ndarray
    eigvecs: np.ndarray
    eigvals: np.ndarray
    n_iter: int
    residual: float
    converged: bool
    n_products: int = 0
    factor: np.ndarray | None = None
    shift: float = 0.0
    row_sums: np.ndarray | None = None
    row_sqnorms: np.ndarray | None = None


# --------------------------------------------------------------------------------------------
# Truncated symmetric eigensolver
# --------------------------------------------------------------------------------------------


def _orthonormal_complement(Q: np.ndarray | None, Z: np.ndarray) -> np.ndarray:
    """Orthonormal columns spanning the part of ``span(Z)`` orthogonal to ``span(Q)``.

    Columns are scaled to unit norm first, so nearly converged residuals (tiny but still
    informative directions) are not lost to rounding. Orthonormalisation is SVQB (Stathopoulos
    & Wu 2002): ``Z W Λ^{-1/2}`` from the eigendecomposition ``ZᵀZ = W Λ Wᵀ``, dropping
    directions with ``Λ`` at rounding level. It is two GEMMs and a small ``eigh``: measured on a
    loaded 2-core machine, Householder QR of a 5000 × 60 block (many thread synchronisations in
    LAPACK) was 5-30x slower. Doing it twice ("twice is enough") keeps the basis orthogonal to
    working precision.
    """
    norms = np.linalg.norm(Z, axis=0)
    keep = norms > 0
    Z = Z[:, keep] / norms[keep]
    for _ in range(2):
        if Q is not None:
            Z -= Q @ (Q.T @ Z)
        w, W = np.linalg.eigh(Z.T @ Z)
        good = w > 1e-14
        Z = Z @ (W[:, good] / np.sqrt(w[good]))
    return Z


def _sparse_top_eigh(S: sp.csr_array, n_eig: int, tol: float, rng: np.random.Generator):
    """:func:`top_eigh`'s answer for a sparse ``S`` by ARPACK (implicitly restarted Lanczos).

    On a CSR matrix a product with one vector is cheap (~1 ms for 0.8 M nonzeros), so
    ARPACK's many single-vector products cost less than the block solver's Rayleigh–Ritz
    work: measured on the npm corpus (V = 5000, K = 50, 3% nonzero) 0.22-0.24 s for 60
    eigenpairs with residuals ~1e-11, against 0.38-0.46 s for :func:`top_eigh` to 1e-6.
    Returns ``None`` where ARPACK does not apply (a block nearly as wide as the matrix) or
    fails to converge; the caller then uses :func:`top_eigh`.
    """
    from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh

    n = S.shape[0]
    b = _block_size(n, n_eig)
    if 4 * b > n:  # ARPACK needs k < n and is no bargain for a small matrix
        return None
    try:
        theta, X = eigsh(S, k=b, which="LA", tol=tol, v0=rng.standard_normal(n))
    except (ArpackNoConvergence, ArpackError) as exc:
        log.debug("rectify: ARPACK failed on the cold solve (%s); using top_eigh", exc)
        return None
    theta, X = theta[::-1].copy(), np.ascontiguousarray(X[:, ::-1])
    AX = S @ X
    scale = max(float(np.max(np.abs(theta))), np.finfo(float).tiny)
    worst = float(np.max(np.linalg.norm(AX[:, :n_eig] - X[:, :n_eig] * theta[:n_eig], axis=0)))
    worst /= scale
    if not worst <= tol:
        return None
    return theta, X, AX, {"n_products": 1, "residual": worst, "converged": True}


def _block_size(n: int, n_eig: int, oversample: int | None = None) -> int:
    """Columns of :func:`top_eigh`'s block: ``n_eig`` plus ``oversample`` (default
    ``max(10, n_eig // 5)``), at most ``n``."""
    if oversample is None:
        oversample = max(10, n_eig // 5)
    return min(n, n_eig + oversample)


def _upper_matmul(M: np.ndarray, Z: np.ndarray, step: int) -> np.ndarray:
    """``M @ Z`` for a symmetric ``M`` of which only the upper triangle (by row blocks of
    ``step`` rows, from the diagonal block on) is valid; reads half of ``M``."""
    V = M.shape[0]
    Z = Z.astype(M.dtype, copy=False)
    out = np.zeros((V, Z.shape[1]))
    for s in range(0, V, step):
        e = min(s + step, V)
        seg = M[s:e, s:]
        out[s:e] += seg @ Z[s:]
        out[e:] += seg[:, e - s :].T @ Z[s:e]
    return out


def fix_signs(vecs: np.ndarray) -> np.ndarray:
    """Flip each column so that its largest-magnitude entry is positive (in place)."""
    idx = np.argmax(np.abs(vecs), axis=0)
    signs = np.sign(vecs[idx, np.arange(vecs.shape[1])])
    signs[signs == 0] = 1.0
    vecs *= signs
    return vecs


def top_eigh(
    matmul: Callable[[np.ndarray], np.ndarray],
    n: int,
    n_eig: int,
    *,
    init: np.ndarray | None = None,
    init_product: np.ndarray | None = None,
    oversample: int | None = None,
    max_blocks: int = 4,
    tol: float = 1e-10,
    max_products: int = 1000,
    random_state: int | np.random.Generator | None = None,
):
    """The largest (algebraic) eigenpairs of a symmetric operator.

    Restarted block Krylov (block Lanczos with full re-orthogonalisation, implemented as block
    Davidson without preconditioner): a Rayleigh–Ritz step on the basis picks the largest Ritz
    values, the residuals of the wanted pairs that have not converged yet extend the basis (soft
    locking), and once the basis holds ``max_blocks`` blocks it restarts from the current Ritz
    vectors, whose products are known, so a restart costs no product. With a good ``init``
    (eigenvectors of a nearby matrix) one or two products meet a tight tolerance.

    Parameters
    ----------
    matmul : callable
        ``matmul(X)`` returns ``A @ X`` for an ``(n, m)`` array ``X``; ``A`` must be symmetric.
    n : int
        Order of ``A``.
    n_eig : int
        Number of eigenpairs wanted.
    init : ndarray of shape (n, m), optional
        Starting basis (e.g. the previous eigenvectors); completed with Gaussian columns up to
        the block size ``n_eig + oversample``.
    init_product : ndarray of shape (n, m), optional
        ``A @ init`` if the caller already has it; ``init`` must then have orthonormal columns,
        at least the block size of them.
    oversample : int, optional
        Extra block columns beyond ``n_eig`` (default ``max(10, n_eig // 5)``); they speed up
        convergence when eigenvalues cluster around the ``n_eig``-th.
    max_blocks : int
        Blocks in the basis before a restart.
    tol : float
        Converged when every wanted residual ``‖A x − θ x‖`` is at most ``tol · max|θ|``.
    max_products : int
        Budget of block products (one product is ``A`` times one block).
    random_state : int, Generator or None

    Returns
    -------
    eigvals : ndarray of shape (block,)
        Ritz values in decreasing order; the first ``n_eig`` are the answer.
    eigvecs : ndarray of shape (n, block)
        The matching orthonormal Ritz vectors (a warm start for a nearby matrix).
    product : ndarray of shape (n, block)
        ``A @ eigvecs``.
    info : dict
        ``n_products`` (block products used), ``residual`` (largest relative residual of the
        wanted pairs) and ``converged``.
    """
    if not 1 <= n_eig <= n:
        raise InputError(f"need 1 <= n_eig <= n, got n_eig={n_eig}, n={n}")
    b = _block_size(n, n_eig, oversample)
    max_blocks = max(2, int(max_blocks))
    rng = np.random.default_rng(random_state)

    if init_product is not None:
        X = init
        AX = init_product
        n_products = 0
    else:
        cols = [] if init is None else [np.asarray(init, dtype=np.float64)[:, :b]]
        have = 0 if init is None else cols[0].shape[1]
        if have < b:
            cols.append(rng.standard_normal((n, b - have)))
        X = _orthonormal_complement(None, np.hstack(cols))
        while X.shape[1] < b:  # a degenerate init: fill with fresh random directions
            X = np.hstack([X, _orthonormal_complement(X, rng.standard_normal((n, b - X.shape[1])))])
        AX = matmul(X)
        n_products = 1

    # The basis, its product and the projected matrix T = Qᵀ A Q live in preallocated buffers
    # and T grows by the new block's rows only.
    m = X.shape[1]
    m_max = min(n, max(max_blocks * b, m + b))
    Q = np.empty((n, m_max))
    AQ = np.empty((n, m_max))
    T = np.empty((m_max, m_max))
    Q[:, :m] = X
    AQ[:, :m] = AX
    T0 = X.T @ AX
    T[:m, :m] = (T0 + T0.T) * 0.5
    while True:
        theta, S = np.linalg.eigh(T[:m, :m])
        theta, S = theta[::-1][:b], S[:, ::-1][:, :b]
        X = Q[:, :m] @ S
        AX = AQ[:, :m] @ S
        R = AX - X * theta
        scale = max(float(np.max(np.abs(theta))), np.finfo(float).tiny)
        res = np.linalg.norm(R[:, :n_eig], axis=0) / scale
        worst = float(res.max())
        if worst <= tol or n_products >= max_products or b == n:
            break
        if m + b > m_max:
            # Thick restart: keep the Ritz block, whose product and projection are known.
            Q[:, :b] = X
            AQ[:, :b] = AX
            T[:b, :b] = np.diag(theta)
            m = b
        # Soft locking: only the residuals of wanted pairs not yet converged extend the basis.
        # Measured against extending by the whole block: ~25% fewer columns multiplied inside
        # AP and ~45% fewer in a cold solve, for a few more (narrower) products.
        Z = _orthonormal_complement(Q[:, :m], R[:, :n_eig][:, res > tol])[:, : m_max - m]
        p = Z.shape[1]
        if p == 0:  # the residuals lie in the basis: the space is invariant
            break
        AZ = matmul(Z)
        n_products += 1
        Q[:, m : m + p] = Z
        AQ[:, m : m + p] = AZ
        Tn = Q[:, : m + p].T @ AZ
        T[: m + p, m : m + p] = Tn
        T[m : m + p, :m] = Tn[:m].T
        T[m : m + p, m : m + p] = (Tn[m:] + Tn[m:].T) * 0.5
        m += p
    info = {"n_products": n_products, "residual": worst, "converged": worst <= tol or b == n}
    return theta, X, AX, info


# --------------------------------------------------------------------------------------------
# Alternating projection
# --------------------------------------------------------------------------------------------


class AndersonMixer:
    """Anderson acceleration (type II) of the fixed-point map ``Y -> G(Y)`` of AP.

    ``G(Y)`` is ``U Λ^½`` of the PSD projection of ``max(Y Yᵀ + shift, 0)``; it is defined up
    to an orthogonal ``K × K`` factor (eigenvector signs, rotations within clusters), so each
    new ``G`` is first rotated onto the current ``Y`` (orthogonal Procrustes), which changes
    nothing in ``G Gᵀ``. The next ``Y`` is then the combination of the last ``depth + 1``
    values of ``G`` whose residuals ``G − Y`` combine to the least-squares smallest one.
    When the iterate's change grows instead of shrinking, the history is dropped and the
    step is plain AP again.
    """

    def __init__(self, depth: int):
        self.depth = depth
        self.dG: list[np.ndarray] = []  # differences of consecutive G
        self.dF: list[np.ndarray] = []  # differences of consecutive residuals G − Y
        self.previous: tuple[np.ndarray, np.ndarray] | None = None
        self.last = np.inf

    def __call__(self, Y: np.ndarray, G: np.ndarray, residual: float) -> np.ndarray:
        if self.depth == 0:
            return G
        W, _, Zt = np.linalg.svd(G.T @ Y)
        G = G @ (W @ Zt)
        F = G - Y
        if residual > self.last:
            self.dG.clear()
            self.dF.clear()
        self.last = residual
        if self.previous is not None:
            self.dG.append(G - self.previous[0])
            self.dF.append(F - self.previous[1])
            del self.dG[: -self.depth], self.dF[: -self.depth]
        self.previous = (G, F)
        if not self.dF:
            return G
        # min_γ ‖F − Σ γ_i dF_i‖ by its m × m normal equations (m ≤ depth): forming them is
        # m² dot products of length V K, against an SVD of the V K × m matrix for lstsq
        # (measured 25 ms per step at V = 5000, K = 50); the pseudo-inverse's cut-off
        # handles nearly collinear differences.
        gram = np.array([[float(np.vdot(a, b)) for b in self.dF] for a in self.dF])
        rhs = np.array([float(np.vdot(a, F)) for a in self.dF])
        gamma = np.linalg.lstsq(gram, rhs, rcond=1e-12)[0]
        out = G.copy()
        for g, d in zip(gamma, self.dG):
            out -= g * d
        return out


def _square_float64(C) -> np.ndarray:
    """``C`` as a square C-contiguous float64 ndarray (no copy if it is one)."""
    if sp.issparse(C):
        C = C.toarray()
    C = np.asarray(C)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"C must be a square 2-D matrix, got shape {C.shape}")
    if not np.issubdtype(C.dtype, np.number) or np.issubdtype(C.dtype, np.complexfloating):
        raise InputError(f"C must hold real numbers, got dtype {C.dtype}")
    return np.ascontiguousarray(C, dtype=np.float64)


def _check_matrix(C) -> np.ndarray:
    C = _square_float64(C)
    V = C.shape[0]
    step = _block_rows(V)
    scale = 0.0
    # Blockwise, so that checking does not allocate a V x V temporary.
    for start in range(0, V, step):
        rows = C[start : start + step]
        if not np.all(np.isfinite(rows)):
            raise InputError("C contains NaN or infinite entries")
        scale = max(scale, float(np.max(np.abs(rows), initial=0.0)))
    _check_symmetric(C, scale)
    return C


def _check_symmetric(C: np.ndarray, scale: float) -> None:
    """InputError unless ``max |C − Cᵀ| <= 1e-8 scale`` (``scale = max |C|``)."""
    V = C.shape[0]
    worst = 0.0
    # Symmetry tile against mirrored tile (the upper triangle's): both stay in cache, where a
    # row block against its column block reads the latter with a stride of V (measured at
    # V = 5000: 0.03 s against 0.28 s).
    for i in range(0, V, _TILE):
        for j in range(i, V, _TILE):
            diff = np.abs(C[i : i + _TILE, j : j + _TILE] - C[j : j + _TILE, i : i + _TILE].T)
            worst = max(worst, float(np.max(diff, initial=0.0)))
    if worst > 1e-8 * scale:
        raise InputError(
            f"C must be symmetric, but max |C - Cᵀ| = {worst:.3g} (max |C| = {scale:.3g}); "
            "symmetrise it with (C + C.T) / 2 if the asymmetry is rounding"
        )


def _sparse_copy(C: np.ndarray) -> sp.csr_array | None:
    """A CSR copy of ``C`` if at most :data:`_SPARSE_DENSITY` of its entries are nonzero."""
    nnz = int(np.count_nonzero(C))
    if nnz > _SPARSE_DENSITY * C.size:
        return None
    indptr, indices, data = anchor_dense_to_csr(C, nnz)
    return sp.csr_array((data, indices, indptr), shape=C.shape)


def _check_loop_args(V, K, max_iter, anderson, tol, eig_tol, init_eigvecs):
    """The arguments :func:`rectify` and :func:`anchorstream.model.lowrank.rectify_lowrank` share,
    checked; returns ``(eig_tol, init_eigvecs)`` with the default tolerance filled in and the
    start as a float64 array (or None).

    Raises
    ------
    InputError
        Naming the first argument out of range.
    """
    if not isinstance(K, (int, np.integer)) or not 1 <= K < V:
        raise InputError(f"n_topics must be an integer in [1, {V}) for {V} words, got {K!r}")
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise InputError(f"max_iter must be a positive integer, got {max_iter!r}")
    if not isinstance(anderson, (int, np.integer)) or anderson < 0:
        raise InputError(f"anderson must be an integer >= 0, got {anderson!r}")
    if not tol >= 0:
        raise InputError(f"tol must be >= 0, got {tol!r}")
    if eig_tol is None:
        eig_tol = min(_MAX_EIG_TOL, max(_FINAL_EIG_TOL, tol * 1e-2))
    if not eig_tol > 0:
        raise InputError(f"eig_tol must be > 0, got {eig_tol!r}")
    if init_eigvecs is not None:
        init_eigvecs = np.asarray(init_eigvecs, dtype=np.float64)
        if init_eigvecs.ndim != 2 or init_eigvecs.shape[0] != V or init_eigvecs.shape[1] < 1:
            raise InputError(
                f"init_eigvecs must have shape ({V}, m) with m >= 1, got {init_eigvecs.shape}"
            )
        if not np.all(np.isfinite(init_eigvecs)):
            raise InputError("init_eigvecs contains NaN or infinite entries")
    return eig_tol, init_eigvecs


def rectify(
    C,
    n_topics: int,
    *,
    method: str = "ap",
    max_iter: int = 150,
    tol: float = 1e-6,
    init_eigvecs: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = None,
    eig_tol: float | None = None,
    dtype=np.float64,
    anderson: int = 5,
    overwrite_input: bool = False,
    refine_eigvecs: bool = True,
    workspace: np.ndarray | None = None,
) -> RectifyResult:
    """Rectify a co-occurrence matrix by alternating projection (JSMF Algorithm 1).

    Each iteration projects onto rank-``n_topics`` PSD matrices (truncated eigendecomposition
    keeping the ``n_topics`` largest eigenvalues, negative ones clipped to 0), onto matrices
    summing to 1 (adding ``(1 - sum) / V²`` to every entry), then onto non-negative matrices.
    Iteration stops when the relative change of the non-negative iterate,
    ``‖C_NN⁽ᵗ⁾ − C_NN⁽ᵗ⁻¹⁾‖_F / ‖C_NN⁽ᵗ⁻¹⁾‖_F`` (with ``C_NN⁽⁰⁾ = C``), is at most ``tol``, or
    after ``max_iter`` iterations; the result is divided by its sum.

    Parameters
    ----------
    C : ndarray or sparse matrix of shape (n_words, n_words)
        Symmetric co-occurrence matrix (typically summing to 1). Not modified.
    n_topics : int
        Rank ``K`` of the PSD projection; ``1 <= K < n_words``.
    method : {"ap"}
        Alternating projection.
    max_iter : int
        Iteration cap (JSMF runs a fixed 150).
    tol : float
        Convergence threshold on the relative change of ``C_NN``.
    init_eigvecs : ndarray of shape (n_words, m), optional
        Eigenvectors from a previous rectification (of a slightly different matrix); they seed
        the eigensolver of the first iteration. ``m`` need not equal ``n_topics``.
    random_state : int, Generator or None
        Seeds the random part of the eigensolver's starting basis.
    eig_tol : float, optional
        Relative residual tolerance of the truncated eigendecompositions inside the loop (see
        :func:`top_eigh`). Default ``tol / 100`` clipped to ``[1e-8, 1e-6]``; measured on a
        real corpus, the iterates then stay within ~2e-5 (at 1e-6) or ~6e-7 (at 1e-8) of those
        of exact eigendecompositions (relative, Frobenius, after 50 iterations). The returned
        eigenpairs are always solved to ``min(eig_tol, 1e-8)``.
    dtype : {numpy.float64, numpy.float32}
        Working precision of the stored iterate and of its products. float32 halves the memory
        of the iterate and makes an iteration ~1.8x faster (5000 words, K = 50), but rounds
        every entry to ~6e-8 relative: the eigensolver tolerance inside the loop is floored at
        1e-6 and, on a real corpus, the iterate after 30 iterations differs from the float64
        one by ~2e-5 (relative, Frobenius). The result is float64 either way and its
        eigenpairs are computed on it.
    anderson : int
        History length of the Anderson acceleration of the iteration (see the module
        docstring); 0 runs plain alternating projection, JSMF Algorithm 1 as published.
    overwrite_input : bool
        With ``dtype=float32``, write the result into the input's own memory (only if ``C``
        is a C-contiguous float64 array, else into the converted copy) instead of a new array. Saves a V x V float64 allocation when the
        caller has no further use for the input.
    refine_eigvecs : bool
        With ``dtype=float32``, solve the returned eigenpairs again on the float64 result, to
        ``min(eig_tol, 1e-8)``. False returns those of the last float32 iterate (to the loop's
        tolerance, at least 1e-6): enough for a fit, or to seed a later rectification, and it
        saves a V x V product and its Rayleigh-Ritz work (~0.1 s at V = 5000).
    workspace : ndarray, optional
        A C-contiguous array of the working ``dtype`` with at least ``n_words²`` elements
        that holds the iterate (overwritten) instead of a new array: memory a caller has
        already allocated and touched (``anchorstream fit`` prepares it while it reads).
        Not used with float64 (the iterate is then the result, a new array).

    Returns
    -------
    RectifyResult

    Raises
    ------
    InputError
        If ``C`` is not square, symmetric and finite, or ``n_topics`` is not in
        ``[1, n_words)``, or an option is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> B = np.array([[0.6, 0.0], [0.0, 0.5], [0.4, 0.5]])
    >>> Q = B @ np.array([[0.3, 0.2], [0.2, 0.3]]) @ B.T   # already rank 2, PSD, NN, NOR
    >>> res = rectify(Q, 2)
    >>> bool(np.allclose(res.matrix, Q)), res.converged
    (True, True)
    """
    C = _check_matrix(C)
    V = C.shape[0]
    K = n_topics
    if method != "ap":
        raise InputError(f"method must be 'ap', got {method!r}")
    eig_tol, init_eigvecs = _check_loop_args(V, K, max_iter, anderson, tol, eig_tol,
                                             init_eigvecs)
    # The returned eigenpairs are worth a tight solve whatever the loop used.
    final_tol = min(eig_tol, _FINAL_EIG_TOL)
    work = _work_dtype(dtype)
    single = work == np.float32
    if single and 0 < tol < _FLOAT32_EIG_TOL:
        # The iterate's own rounding moves it by ~1e-7 (relative, Frobenius) per iteration:
        # such a tolerance would be met by chance, after erratic iterations, or never.
        raise InputError(
            f"tol={tol!r} is below what a float32 iterate resolves ({_FLOAT32_EIG_TOL:g}); "
            "use dtype float64 for tighter tolerances"
        )
    # float32 products carry ~1e-7 relative rounding, below which no residual can be certified.
    loop_tol = max(eig_tol, _FLOAT32_EIG_TOL) if single else eig_tol
    rng = np.random.default_rng(random_state)

    # The iterate's storage; in float32 it first holds C for a dense cold solve (~20 products),
    # which then costs half. A sparse C is solved cold on a CSR copy instead.
    nn = _iterate_memory(workspace, V, work)
    sparse = _sparse_copy(C) if init_eigvecs is None else None
    if sparse is not None:
        cold = _sparse_top_eigh(sparse, K, loop_tol, rng)
        if cold is None:
            cold = top_eigh(lambda Z: sparse @ Z, V, K, tol=loop_tol, random_state=rng)
        theta, X, AX, info = cold
        del sparse
    elif single:
        np.copyto(nn, C, casting="same_kind")
        theta, X, AX, info = top_eigh(
            lambda Z: nn @ Z.astype(np.float32), V, K, init=init_eigvecs, tol=loop_tol,
            random_state=rng,
        )
    else:
        theta, X, AX, info = top_eigh(
            lambda Z: C @ Z, V, K, init=init_eigvecs, tol=eig_tol, random_state=rng
        )
    n_products = info["n_products"]
    accelerate = AndersonMixer(int(anderson))
    # The iterate is max(Y Yᵀ + shift, 0): Y = U Λ^½ from the PSD projection, or the
    # accelerated combination of the last few of them.
    Y = X[:, :K] * np.sqrt(np.maximum(theta[:K], 0.0))
    old = C
    step = _block_rows(V)
    buf = np.empty(step * V, dtype=work)
    residual = np.inf
    converged = False
    n_iter = 0
    next_report = time.monotonic() + _PROGRESS_SECONDS
    for n_iter in range(1, max_iter + 1):
        shift = _shift(Y, 1.0)
        sums, AX = _form_upper(Y, shift, nn, old, step, buf, X)
        old = nn
        residual = float(np.sqrt(sums[0] / sums[1])) if sums[1] > 0 else 0.0
        converged = residual <= tol
        # Long rectifications (large V) report progress; a short one stays quiet.
        now = time.monotonic()
        if now >= next_report:
            log.info("rectify: iteration %d of at most %d, change %.2e (stops at %.1e)",
                     n_iter, max_iter, residual, tol)
            next_report = now + _PROGRESS_SECONDS
        else:
            log.debug("rectify iteration %d: residual %.3e", n_iter, residual)
        last = converged or n_iter == max_iter
        formed = (Y, shift)
        theta, X, AX, info = top_eigh(
            lambda Z: _upper_matmul(nn, Z, step),
            V,
            K,
            init=X,
            init_product=AX,
            # The eigenpairs of the last iterate are returned (for float64; float32 refines
            # them on the converted matrix below).
            tol=final_tol if last and not single else loop_tol,
            random_state=rng,
        )
        n_products += info["n_products"]
        if converged:
            break
        Y = accelerate(Y, X[:, :K] * np.sqrt(np.maximum(theta[:K], 0.0)), residual)
    nn, total, row_sums, row_sqnorms = _finish(nn, C, step, float(sums[2]), overwrite_input)
    scale = 1.0 / total
    if single and refine_eigvecs:
        # The eigenpairs of the returned float64 matrix, to the full tolerance.
        theta, X, _, info = top_eigh(
            lambda Z: nn @ Z, V, K, init=X, init_product=nn @ X, tol=final_tol, random_state=rng
        )
        n_products += info["n_products"]
        scale = 1.0
    return RectifyResult(
        matrix=nn,
        eigvecs=fix_signs(np.ascontiguousarray(X[:, :K])),
        eigvals=theta[:K] * scale,
        n_iter=n_iter,
        residual=residual,
        converged=converged,
        n_products=n_products,
        factor=formed[0] * np.sqrt(1.0 / total),
        shift=formed[1] / total,
        row_sums=row_sums,
        row_sqnorms=row_sqnorms,
    )


def rectify_update(
    C,
    previous_data,
    factor: np.ndarray,
    shift: float,
    *,
    max_change: float = 0.05,
    dtype=np.float32,
    overwrite_input: bool = False,
    workspace: np.ndarray | None = None,
    check_input: bool = True,
) -> RectifyResult | None:
    """Update a rectified matrix after a small change of the data (warm start of a refresh).

    :func:`rectify`'s result is ``R = max(F Fᵀ + shift, 0)``: a rank-``K`` PSD core ``F Fᵀ``
    (``RectifyResult.factor``) clipped and normalized. When the data the core was fitted to
    (``previous_data``) changes by ``ΔC = C − previous_data``, the core moves, to first order,
    by the part of ``ΔC`` tangent to the rank-``K`` matrices at ``F Fᵀ``: with ``P`` the
    projector onto ``span(F)``, ``P ΔC + ΔC P − P ΔC P``. The rest of ``ΔC`` (~80% of its
    norm on a real corpus after 1% new documents) is what the PSD projection of alternating
    projection removes. The new core is the best rank-``K`` PSD approximation of ``F Fᵀ`` plus
    that tangent part, found exactly in the ``2K``-dimensional space spanned by ``F`` and
    ``ΔC F``; its entries are then shifted (keeping the sum before clipping), clipped and
    normalized as an iterate of :func:`rectify` is. So a change of zero returns ``R`` itself.

    It costs one product of ``ΔC`` with a ``V × K`` basis and one formation of the iterate,
    about one alternating-projection iteration without its eigensolver, against the ~11
    iterations and a cold eigensolve of :func:`rectify` on a real corpus. Why not start
    :func:`rectify` itself next to the previous result: each such run continues
    alternating projection's path a few iterations further, and a chain of refreshes drifts
    to a tighter fixed point with lower held-out coherence (``benchmarks/README.md``,
    "Refresh cold vs warm"), while this update does not iterate at all.

    Parameters
    ----------
    C : ndarray of shape (n_words, n_words)
        The new co-occurrence (symmetric, typically summing to 1).
    previous_data : ndarray of shape (n_words, n_words)
        The co-occurrence ``factor`` was fitted to (a cold :func:`rectify`'s input); float32
        is enough. Words new since have zero rows. Updating from it over the summed change
        of several refreshes was as accurate as a chain of updates, each from the last
        (relative distance to a cold result ~0.5 times the summed change either way, over
        16 rounds of 1% new npm documents).
    factor : ndarray of shape (n_words, n_topics)
        ``RectifyResult.factor`` of that fit (zero rows for new words).
    shift : float
        ``RectifyResult.shift`` of that fit.
    max_change : float
        Largest relative change ``‖ΔC‖_F / ‖previous_data‖_F`` a first-order update is
        trusted with (1% new documents changed a real corpus's matrix by ~0.01); above it
        the function returns None and the caller rectifies from scratch.
    dtype : {numpy.float32, numpy.float64}
        Working precision of the formed iterate, as in :func:`rectify`.
    overwrite_input : bool
        With float32, write the result into ``C``'s memory (if it is a C-contiguous float64
        array), as in :func:`rectify`.
    workspace : ndarray, optional
        Memory for the float32 iterate, as in :func:`rectify`.
    check_input : bool
        False skips the check that ``C`` is symmetric (its finiteness is always checked, in
        the pass over the data): for a matrix symmetric by construction.

    Returns
    -------
    RectifyResult or None
        ``n_iter`` is 0 and ``residual`` the relative change ``‖ΔC‖_F / ‖previous_data‖_F``
        the update absorbed; ``eigvecs`` and ``eigvals`` are those of the new core (divided
        by the result's normalization), an approximation of the result's own. None when the
        change exceeds ``max_change`` or ``previous_data`` is zero.

    Raises
    ------
    InputError
        If the shapes do not match, an input is not finite, or an option is out of range.
    """
    C = _square_float64(C)
    V = C.shape[0]
    previous_data = np.asarray(previous_data)
    if previous_data.shape != (V, V) or previous_data.dtype not in (np.float32, np.float64):
        raise InputError(f"previous_data must be a float32 or float64 array of shape ({V}, {V}), "
                         f"got {previous_data.dtype} {previous_data.shape}")
    factor = np.asarray(factor, dtype=np.float64)
    if factor.ndim != 2 or factor.shape[0] != V or not 1 <= factor.shape[1] < V:
        raise InputError(f"factor must have shape ({V}, K) with 1 <= K < {V}, got {factor.shape}")
    if not (np.all(np.isfinite(factor)) and np.isfinite(shift)):
        raise InputError("factor and shift must be finite")
    if not max_change >= 0:
        raise InputError(f"max_change must be >= 0, got {max_change!r}")
    work = _work_dtype(dtype)
    K = factor.shape[1]

    U = _orthonormal_complement(None, factor)  # an orthonormal basis of span(F)
    # One pass over the data: ΔC (in the working precision: with float32 its rounding is ~1e-9
    # of C's entries, as ΔC is ~1% of C, and the product runs at single-precision speed), ΔC U,
    # the sizes of ΔC and of the previous data, and the finiteness check.
    step = _block_rows(V)
    G = np.empty_like(U)
    U32 = U.astype(work)
    scratch = np.empty(step * V, dtype=work)
    sums = np.zeros(4)
    for s in range(0, V, step):
        e = min(s + step, V)
        diff = scratch[: (e - s) * V].reshape(e - s, V)
        part = anchor_update_difference(C[s:e], previous_data[s:e], diff)
        sums[:3] += part[:3]
        sums[3] = max(sums[3], part[3])
        # A NaN or infinite entry is reported below, after the pass that counts them; whether
        # BLAS warns on it on the way depends on its code path, so it is told not to.
        with np.errstate(invalid="ignore", over="ignore"):
            G[s:e] = diff @ U32
    if sums[2] > 0:
        raise InputError("C or previous_data contains NaN or infinite entries")
    if check_input:
        _check_symmetric(C, float(sums[3]))
    change2, base2 = float(sums[0]), float(sums[1])
    if base2 <= 0:
        return None
    change = float(np.sqrt(change2 / base2))
    if change > max_change:
        log.info("rectify_update: the data changed by %.3g (relative), more than %.3g; "
                 "a cold rectification is needed", change, max_change)
        return None
    # The tangent part U Wᵀ + W Uᵀ, W = ΔC U − U (Uᵀ ΔC U) / 2, and the core F Fᵀ live in
    # span([U, W⊥]): the rank-K truncation is an eigendecomposition of a 2K x 2K matrix.
    W = G - 0.5 * U @ (U.T @ G)
    UW = U.T @ W
    rest = W - U @ UW
    norms = np.linalg.norm(rest, axis=0)
    Q2 = (_orthonormal_complement(U, rest) if float(norms.max(initial=0.0)) > 0
          else np.zeros((V, 0)))
    k = U.shape[1]
    Wc = np.vstack([UW, Q2.T @ W])
    Fc = U.T @ factor
    T = np.zeros((k + Q2.shape[1],) * 2)
    T[:k, :k] = Fc @ Fc.T
    T[:, :k] += Wc
    T[:k, :] += Wc.T
    theta, S = np.linalg.eigh((T + T.T) * 0.5)
    theta, S = theta[::-1][:K], S[:, ::-1][:, :K]
    vecs = U @ S[:k] + Q2 @ S[k:]
    Y = vecs * np.sqrt(np.maximum(theta, 0.0))
    # Keep the sum before clipping: zero change gives the previous result back.
    old_sum, new_sum = factor.sum(axis=0), Y.sum(axis=0)
    new_shift = float(shift) + (float(old_sum @ old_sum) - float(new_sum @ new_sum)) / (V * V)

    nn = _iterate_memory(workspace, V, work)
    buf = np.empty(step * V, dtype=work)
    sums, _ = _form_upper(Y, new_shift, nn, C, step, buf)
    nn, total, row_sums, row_sqnorms = _finish(nn, C, step, float(sums[2]), overwrite_input)
    if vecs.shape[1] < K:  # a core of rank < K: pad with zero columns
        vecs = np.hstack([vecs, np.zeros((V, K - vecs.shape[1]))])
        theta = np.concatenate([theta, np.zeros(K - theta.size)])
    return RectifyResult(
        matrix=nn,
        eigvecs=fix_signs(np.ascontiguousarray(vecs)),
        eigvals=np.maximum(theta, 0.0) / total,
        n_iter=0,
        residual=change,
        converged=True,
        factor=Y * np.sqrt(1.0 / total),
        shift=new_shift / total,
        row_sums=row_sums,
        row_sqnorms=row_sqnorms,
    )


def _block_rows(V: int) -> int:
    """Rows per block of the fused passes over a V x V matrix (:data:`_BLOCK_BYTES`)."""
    return max(1, _BLOCK_BYTES // (8 * max(V, 1)))


def _shift(Y: np.ndarray, target: float) -> float:
    """The constant that makes ``Y Yᵀ + shift`` sum to ``target`` (normalisation step):
    ``Σ_ij (Y Yᵀ)_ij = ‖Yᵀ1‖²``, in O(VK) instead of a pass over V² entries."""
    col_sums = Y.sum(axis=0)
    V = Y.shape[0]
    return (target - float(col_sums @ col_sums)) / (V * V)


def _form_upper(Y, shift, nn, old, step, buf, X=None):
    """The row blocks (from the diagonal on) of ``max(Y Yᵀ + shift, 0)`` into ``nn``.

    Only the upper triangle is formed and stored: half the GEMM work, clipping and memory
    traffic of the full matrix (:func:`_finish` mirrors it). Each block is formed by a small
    GEMM and consumed while it is in cache. Returns the sums of ``anchor_rectify_clip`` over
    the whole symmetric matrix (``Σ (new − old)²``, ``Σ old²``, ``Σ new``) and, given ``X``,
    ``nn @ X`` (the next eigensolver's first product) computed from the cached blocks.
    """
    V = nn.shape[0]
    work = nn.dtype
    Yw = Y.astype(work)
    Xw = None if X is None else X.astype(work, copy=False)
    AX = None if X is None else np.zeros_like(X)
    sums = np.zeros(3)
    for s in range(0, V, step):
        e = min(s + step, V)
        h = e - s
        blk = buf[: h * (V - s)].reshape(h, V - s)
        np.dot(Yw[s:e], Yw[s:].T, out=blk)
        # The diagonal block counts once, the part right of it twice (for its mirror).
        sums += anchor_rectify_clip(blk[:, :h], shift, old[s:e, s:e], nn[s:e, s:e]).sum(0)
        sums += 2.0 * anchor_rectify_clip(blk[:, h:], shift, old[s:e, e:], nn[s:e, e:]).sum(0)
        if Xw is not None:
            AX[s:e] += blk @ Xw[s:]
            AX[e:] += blk[:, h:].T @ Xw[s:e]
    return sums, AX


def _finish(nn, C, step, total, overwrite_input):
    """The formed upper triangle mirrored and divided by its sum, in float64.

    A float64 ``nn`` becomes the result itself; a float32 one is widened row block by row
    block into ``C``'s memory (``overwrite_input``) or a new array, with no V x V temporary,
    and the result's row sums and squared row norms are taken from each block while it is in
    cache. Returns ``(result, total, row_sums, row_sqnorms)``, ``total`` being the sum it
    was divided by.
    """
    V = nn.shape[0]
    # Mirror before any conversion: the lower triangle is stale (C, or uninitialised memory
    # whose bit patterns may be NaN).
    for s in range(0, V, step):
        e = min(s + step, V)
        diag = nn[s:e, s:e]
        # The GEMM sums (i, j) and (j, i) of a diagonal block in different orders.
        diag[...] = (diag + diag.T) * 0.5
        nn[e:, s:e] = nn[s:e, e:].T
    single = nn.dtype == np.float32
    if single:
        total = float(nn.sum(dtype=np.float64))  # storing in float32 rounded every entry
    # total >= 1: the iterate summed to 1 before clipping, which only raises entries.
    scale = 1.0 / total
    if not single:
        nn *= scale
        return nn, total, nn.sum(axis=1), np.einsum("ij,ij->i", nn, nn)
    result = C if overwrite_input else np.empty((V, V))
    rows = np.empty((min(step, V), V))
    row_sums, row_sqnorms = np.empty(V), np.empty(V)
    for s in range(0, V, step):
        e = min(s + step, V)
        block = rows[: e - s]
        block[...] = nn[s:e]  # widen first: a float32 array times a float stays float32
        block *= scale
        result[s:e] = block
        block.sum(axis=1, out=row_sums[s:e])
        np.einsum("ij,ij->i", block, block, out=row_sqnorms[s:e])
    return result, total, row_sums, row_sqnorms


def _work_dtype(dtype) -> np.dtype:
    try:
        work = np.dtype(dtype)
    except TypeError:
        work = None
    if work not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise InputError(f"dtype must be float64 or float32, got {dtype!r}")
    return work


def _iterate_memory(workspace, V: int, work: np.dtype) -> np.ndarray:
    """The iterate's V x V storage: ``workspace`` (float32 only) or a new array."""
    single = work == np.float32
    nn = leading_view(workspace, (V, V), work) if single else None
    if nn is None:
        if workspace is not None and single:
            raise InputError(
                f"workspace must be a writeable C-contiguous {work} array of at least {V * V} "
                f"elements, got {getattr(workspace, 'dtype', type(workspace))} of size "
                f"{getattr(workspace, 'size', '?')}")
        nn = np.empty((V, V), dtype=work)
    return nn
