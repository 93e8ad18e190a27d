"""Truncated symmetric eigensolver of the rectification loop.

:func:`top_eigh` is a restarted block Krylov (Rayleigh–Ritz) solver for the largest algebraic
eigenpairs of a symmetric operator given only by its block product; seeded with the previous
iteration's Ritz vectors it needs one to three products per alternating-projection iteration.
:func:`sparse_top_eigh` is the cold solve on a sparse matrix (ARPACK). Choices and their
measurements: ``docs/algorithms.md`` and ``benchmarks/README.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError

# The rectifier's logger, as before the split.
log = logging.getLogger("anchorstream.model.rectify")

#: :func:`residual_basis` leaves rows whose residual has less than this share of their squared
#: norm (near-dependent: the Gram matrix's rounding) to the caller's row-by-row steps.
_BLOCK_RTOL = 1e-8

__all__ = ["fix_signs", "orthonormal_complement", "residual_basis", "sparse_top_eigh", "top_eigh",
           "upper_matmul"]


def orthonormal_complement(Q: np.ndarray | None, Z: np.ndarray) -> np.ndarray:
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


def residual_basis(B: np.ndarray, Q: np.ndarray, floor: float):
    """Gram–Schmidt of the rows of ``B`` (m × d) after the orthonormal columns ``Q`` (d × k),
    as a block: ``(basis, r2)``, column ``j`` of ``basis`` (d × m) the unit residual of
    ``B[j]`` off ``span(Q, B[:j])`` and ``r2[j]`` its squared norm; None where some ``r2`` is
    at most ``floor`` or too small against its row for the block's rounding (the caller then
    goes row by row, skipping such rows).

    Cholesky QR twice (the Gram matrix's factor, its inverse applied by a GEMM; the second
    pass restores orthogonality to working precision): four GEMMs instead of ``m``
    sequential CGS2 steps, 5 ms against 11 for 50 rows of 5,000 (a warm anchor search's
    start). ``r2`` comes from the first factor, within ``1e-8`` of its row's norm relative
    where the block is accepted; rows nearer dependence than that are left to the caller.
    """
    from scipy.linalg import LinAlgError, cholesky, solve_triangular

    X = np.array(B, dtype=np.float64)  # the rows, m x d (a new array: B is left alone)
    for _ in range(2 if Q.shape[1] else 0):
        X -= (X @ Q) @ Q.T
    norms2 = np.einsum("ij,ij->i", X, X)
    r2 = None
    for _ in range(2):
        try:
            R = cholesky(X @ X.T, lower=False)
        except LinAlgError:
            return None
        if r2 is None:
            r2 = np.diag(R) ** 2
            if not np.all((r2 > floor) & (r2 > _BLOCK_RTOL * norms2)):
                return None
        # R⁻ᵀ (m × m) times the rows: a triangular solve with the m × d block took 4.5 ms
        # against 1.2 (d = 5,000, m = 50), the same to rounding at R's checked conditioning.
        X = solve_triangular(R, np.eye(R.shape[0]), lower=False).T @ X
    return X.T, r2


def sparse_top_eigh(S: sp.csr_array, n_eig: int, tol: float, rng: np.random.Generator):
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


def upper_matmul(M: np.ndarray, Z: np.ndarray, step: int) -> np.ndarray:
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
    orthonormal_init: bool = False,
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
    orthonormal_init : bool
        ``init`` has orthonormal columns, at least the block size of them (the Ritz vectors
        of an earlier call): its first block is taken as it is. Orthonormalizing it again
        (two SVQB passes) cost ~6 ms a call at V = 5000, K = 50, 3% of a fit over the
        low-rank loop's warm-started solves.
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
    elif orthonormal_init and init is not None and init.shape[1] >= b:
        X = np.asarray(init, dtype=np.float64)[:, :b]
        AX = matmul(X)
        n_products = 1
    else:
        cols = [] if init is None else [np.asarray(init, dtype=np.float64)[:, :b]]
        have = 0 if init is None else cols[0].shape[1]
        if have < b:
            cols.append(rng.standard_normal((n, b - have)))
        X = orthonormal_complement(None, np.hstack(cols))
        while X.shape[1] < b:  # a degenerate init: fill with fresh random directions
            X = np.hstack([X, orthonormal_complement(X, rng.standard_normal((n, b - X.shape[1])))])
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
        Z = orthonormal_complement(Q[:, :m], R[:, :n_eig][:, res > tol])[:, : m_max - m]
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


