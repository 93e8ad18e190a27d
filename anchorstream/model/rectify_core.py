"""What the cold and the warm rectifier share: the result, the input checks and the fused
passes that form the iterate ``max(Y Yᵀ + shift, 0)`` block by block and normalize it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream._buffers import leading_view
from anchorstream._kernels.rectify import anchor_rectify_clip
from anchorstream.errors import InputError

__all__ = [
    "FINAL_EIG_TOL", "FLOAT32_EIG_TOL", "MAX_EIG_TOL", "RectifyResult", "block_rows",
    "check_loop_args", "check_matrix", "check_symmetric", "finish", "form_upper",
    "iterate_memory", "normalizing_shift", "square_float64", "work_dtype",
]

#: Rows per block of the fused projection pass: a block of ``C_PSD`` should stay in cache (a
#: few MiB) while it is clipped and multiplied by the eigensolver basis.
BLOCK_BYTES = 4 << 20

#: Side of the square tiles compared by the symmetry check.
_TILE = 256

#: Smallest eigensolver tolerance inside the loop when it runs in float32 (see ``dtype``).
FLOAT32_EIG_TOL = 1e-6

#: Bounds of the default inner eigensolver tolerance ``tol / 100`` (see :func:`rectify`); the
#: lower one is also the tolerance of the returned eigenpairs.
FINAL_EIG_TOL = 1e-8
MAX_EIG_TOL = 1e-6



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



def square_float64(C) -> np.ndarray:
    """``C`` as a square C-contiguous float64 ndarray (no copy if it is one)."""
    if sp.issparse(C):
        C = C.toarray()
    C = np.asarray(C)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"C must be a square 2-D matrix, got shape {C.shape}")
    if not np.issubdtype(C.dtype, np.number) or np.issubdtype(C.dtype, np.complexfloating):
        raise InputError(f"C must hold real numbers, got dtype {C.dtype}")
    return np.ascontiguousarray(C, dtype=np.float64)


def check_matrix(C) -> np.ndarray:
    C = square_float64(C)
    V = C.shape[0]
    step = block_rows(V)
    scale = 0.0
    # Blockwise, so that checking does not allocate a V x V temporary.
    for start in range(0, V, step):
        rows = C[start : start + step]
        if not np.all(np.isfinite(rows)):
            raise InputError("C contains NaN or infinite entries")
        scale = max(scale, float(np.max(np.abs(rows), initial=0.0)))
    check_symmetric(C, scale)
    return C


def check_symmetric(C: np.ndarray, scale: float) -> None:
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


def check_loop_args(V, K, max_iter, anderson, tol, eig_tol, init_eigvecs):
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
        eig_tol = min(MAX_EIG_TOL, max(FINAL_EIG_TOL, tol * 1e-2))
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



def block_rows(V: int) -> int:
    """Rows per block of the fused passes over a V x V matrix (:data:`BLOCK_BYTES`)."""
    return max(1, BLOCK_BYTES // (8 * max(V, 1)))


def normalizing_shift(Y: np.ndarray, target: float) -> float:
    """The constant that makes ``Y Yᵀ + shift`` sum to ``target`` (normalisation step):
    ``Σ_ij (Y Yᵀ)_ij = ‖Yᵀ1‖²``, in O(VK) instead of a pass over V² entries."""
    col_sums = Y.sum(axis=0)
    V = Y.shape[0]
    return (target - float(col_sums @ col_sums)) / (V * V)


def form_upper(Y, shift, nn, old, step, buf, X=None):
    """The row blocks (from the diagonal on) of ``max(Y Yᵀ + shift, 0)`` into ``nn``.

    Only the upper triangle is formed and stored: half the GEMM work, clipping and memory
    traffic of the full matrix (:func:`finish` mirrors it). Each block is formed by a small
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


def finish(nn, C, step, total, overwrite_input):
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


def work_dtype(dtype) -> np.dtype:
    try:
        work = np.dtype(dtype)
    except TypeError:
        work = None
    if work not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise InputError(f"dtype must be float64 or float32, got {dtype!r}")
    return work


def iterate_memory(workspace, V: int, work: np.dtype) -> np.ndarray:
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
