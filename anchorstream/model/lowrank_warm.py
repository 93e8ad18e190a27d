"""Warm update of a low-rank rectification after a small change of the data.

The low-rank twin of :func:`~anchorstream.model.rectify.rectify_update`: the rank-``K`` core
``F Fᵀ`` of the last cold :func:`~anchorstream.model.lowrank.rectify_lowrank` moves by the part
of the data's change ``ΔC`` tangent to the rank-``K`` matrices at ``F Fᵀ``, and the result's
non-negativity corrections are scanned again for the new core. Alternating projection forgets
its input after the first projection, so restarting it from the previous factor would return
the previous result; the update follows the data instead, without iterating.

Where the dense update keeps the previous data (a V × V array), this one keeps only its product
with the factor, ``C_old F`` (V × K): the tangent part of ``ΔC`` in the basis of ``F`` and
``ΔC F`` needs nothing else. So a warm refresh costs one product of the new co-occurrence with
``K`` vectors, a ``2K``-dimensional eigenproblem and one scan of the corrections, and memory
stays ``O(V K)``.
"""

from __future__ import annotations

import numpy as np

from anchorstream.errors import InputError
from anchorstream.model.eigen import orthonormal_complement
from anchorstream.model.lowrank import LowRankResult, default_rows, lowrank_result

__all__ = ["data_product", "rectify_lowrank_update"]


def data_product(C, factor: np.ndarray) -> np.ndarray:
    """``C @ factor`` as a V × K float64 array: what a later update needs of the data
    ``factor`` was fitted to."""
    return np.asarray(C @ np.asarray(factor, dtype=np.float64), dtype=np.float64)


def rectify_lowrank_update(
    C,
    factor: np.ndarray,
    previous_product: np.ndarray,
    *,
    rows: int | None = None,
    max_change: float = 0.04,
) -> LowRankResult | None:
    """Update a low-rank rectification after a small change of the data (warm refresh).

    With ``P`` the projector onto ``span(F)`` and ``ΔC = C − C_old``, the new core is the best
    rank-``K`` PSD approximation of ``F Fᵀ + P ΔC + ΔC P − P ΔC P``, found exactly in the space
    spanned by ``F`` and ``ΔC F`` (on it the tangent part only involves ``ΔC F``: the block of
    the directions orthogonal to ``F`` is zero). Its corrections are then scanned and the
    result normalized as :func:`~anchorstream.model.lowrank.rectify_lowrank`'s last iterate is.

    Parameters
    ----------
    C : ndarray, sparse matrix or operator of shape (n_words, n_words)
        The new co-occurrence (summing to 1), e.g. a
        :class:`~anchorstream.model.lowrank.DocumentCooccurrence`.
    factor : ndarray of shape (n_words, n_topics)
        ``LowRankResult.factor`` of the cold rectification (zero rows for words new since).
    previous_product : ndarray of shape (n_words, n_topics)
        :func:`data_product` of the data that rectification was fitted to and ``factor``.
    rows : int, optional
        Words whose rows and columns are scanned for negative entries (as in
        :func:`~anchorstream.model.lowrank.rectify_lowrank`).
    max_change : float
        Largest relative change ``‖ΔC F‖_F / ‖C_old F‖_F`` an update is trusted with; above
        it the function returns None and the caller rectifies from scratch. The change is
        measured on the core's span, where it moves the result (the dense update measures
        all of ``ΔC``, ~80% of which the PSD projection removes).

    Returns
    -------
    LowRankResult or None
        ``n_iter`` 0, ``residual`` the relative change absorbed. None when the change exceeds
        ``max_change`` or the previous product is zero.
    """
    V = C.shape[0]
    F = np.asarray(factor, dtype=np.float64)
    old = np.asarray(previous_product, dtype=np.float64)
    if F.ndim != 2 or F.shape[0] != V or not 1 <= F.shape[1] < V:
        raise InputError(f"factor must have shape ({V}, K) with 1 <= K < {V}, got {F.shape}")
    if old.shape != F.shape:
        raise InputError(f"previous_product must have the factor's shape {F.shape}, got "
                         f"{old.shape}")
    if not (np.all(np.isfinite(F)) and np.all(np.isfinite(old))):
        raise InputError("factor and previous_product must be finite")
    K = F.shape[1]
    scale = float(np.linalg.norm(old))
    if scale == 0.0:
        return None
    dCF = data_product(C, F) - old
    change = float(np.linalg.norm(dCF)) / scale
    if not change <= max_change:
        return None
    # U = F M orthonormal (SVQB of F), so ΔC U = (ΔC F) M.
    w, W = np.linalg.eigh(F.T @ F)
    good = w > 1e-12 * max(float(w.max()), np.finfo(float).tiny)
    M = W[:, good] / np.sqrt(w[good])
    U = F @ M
    D = dCF @ M
    Z = orthonormal_complement(U, D)
    core = U.T @ F
    A11 = core @ core.T + 0.5 * (U.T @ D + D.T @ U)
    A12 = D.T @ Z
    k, p = U.shape[1], Z.shape[1]
    A = np.zeros((k + p, k + p))
    A[:k, :k] = A11
    A[:k, k:] = A12
    A[k:, :k] = A12.T
    theta, S = np.linalg.eigh(A)
    theta, S = theta[::-1][:K], S[:, ::-1][:, :K]
    X = np.hstack([U, Z]) @ S
    if X.shape[1] < K:  # F had rank < K: pad with zero columns, as a rank-deficient core
        X = np.hstack([X, np.zeros((V, K - X.shape[1]))])
        theta = np.concatenate([theta, np.zeros(K - theta.size)])
    Y = X * np.sqrt(np.maximum(theta, 0.0))
    n_rows = default_rows(V, K) if rows is None else int(min(rows, V))
    scanned = np.argsort(-np.einsum("ij,ij->i", Y, Y), kind="stable")[:n_rows]
    return lowrank_result(Y, scanned, X, theta, n_iter=0, residual=change, converged=True,
                          n_products=1)
