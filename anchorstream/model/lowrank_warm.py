"""Warm update of a low-rank rectification after a small change of the data.

The low-rank twin of :func:`~anchorstream.model.rectify.rectify_update`: the rank-``K`` core
``F Fᵀ`` of the last cold :func:`~anchorstream.model.lowrank.rectify_lowrank` moves by the part
of the data's change ``ΔC`` tangent to the rank-``K`` matrices at ``F Fᵀ``, and the result's
non-negativity corrections are scanned again for the new core. Alternating projection forgets
its input after the first projection, so restarting it from the previous factor would return
the previous result; the update follows the data instead, without iterating.

Where the dense update keeps the previous data (a V × V array), this one keeps only its product
with the factor, ``C_old F`` (V × K): the tangent part of ``ΔC`` in the basis of ``F`` and
``ΔC F`` needs nothing else. The size of the change, which bounds a chain of updates as for
the dense rectifier, is estimated from the products with a few random probe vectors kept
beside the factor. So a warm refresh costs one product of the new co-occurrence with
``K + 16`` vectors, a ``2K``-dimensional eigenproblem and one scan of the corrections, and
memory stays ``O(V K)``.
"""

from __future__ import annotations

import numpy as np

from anchorstream.errors import InputError
from anchorstream.model.eigen import orthonormal_complement
from anchorstream.model.lowrank import LowRankResult, lowrank_result, scan_rows
from anchorstream.model.rectify_warm import RECTIFY_WARM_CHANGE

__all__ = ["PROBES", "data_product", "probes", "rectify_lowrank_update"]

#: Random vectors whose products estimate the Frobenius norm of the data's change
#: (Hutchinson: ``E ‖ΔC g‖² = ‖ΔC‖_F²`` for a standard normal ``g``); with 16 the estimate of
#: the relative change is within ~20%, enough for a bound.
PROBES = 16


def probes(n_words: int, seed: int = 0) -> np.ndarray:
    """The ``n_words × PROBES`` standard normal probe vectors of a cold fit."""
    return np.random.default_rng(seed).standard_normal((n_words, PROBES))


def _probe_new_words(G: np.ndarray) -> np.ndarray:
    """``G`` with fresh standard normal rows for the words that have none (all zero: words
    new since the cold fit, which the state gives zero rows).

    The old data has no entries for those words, so whatever their probe rows are, the old
    product is unchanged; but left at zero they hide the new words' own co-occurrences from
    the estimated change (Hutchinson's estimate needs every word's entries), and a theme made
    of new words, which the first-order update cannot represent (its factor has no rows for
    them), would never trip the bound. Drawn from a seed fixed by the shapes: reproducible."""
    missing = ~np.any(G, axis=1)
    if not missing.any():
        return G
    G = G.copy()
    rng = np.random.default_rng([G.shape[0], int(missing.sum())])
    G[missing] = rng.standard_normal((int(missing.sum()), G.shape[1]))
    return G


def data_product(C, basis: np.ndarray) -> np.ndarray:
    """``C @ basis`` as a float64 array: what a later update needs of the data the factor was
    fitted to, with ``basis`` the factor and the probes side by side (``[F, G]``). Through
    ``C.matmul_once`` where ``C`` has it (the store's sparse counts): an update multiplies
    the new data once."""
    B = np.asarray(basis, dtype=np.float64)
    once = getattr(C, "matmul_once", None)
    return np.asarray(C @ B if once is None else once(B), dtype=np.float64)


def rectify_lowrank_update(
    C,
    factor: np.ndarray,
    probe_vectors: np.ndarray,
    previous_product: np.ndarray,
    *,
    rows: int | None = None,
    max_change: float = RECTIFY_WARM_CHANGE,
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
    probe_vectors : ndarray of shape (n_words, m)
        :func:`probes` of that fit (moved with the words, like ``factor``); rows of zeros, a
        word new since, are drawn afresh so that its co-occurrences count in the change.
    previous_product : ndarray of shape (n_words, n_topics + m)
        :func:`data_product` of the data that rectification was fitted to and
        ``[factor, probe_vectors]``.
    rows : int, optional
        Words whose rows and columns are scanned for negative entries (as in
        :func:`~anchorstream.model.lowrank.rectify_lowrank`).
    max_change : float
        Largest relative change ``‖ΔC‖_F / ‖C_old‖_F`` an update is trusted with, as for the
        dense update, estimated from the probes' products (``‖ΔC G‖_F / ‖C_old G‖_F``); above
        it the function returns None and the caller rectifies from scratch. The default is
        ``model.rectify_warm_change``'s.

    Returns
    -------
    LowRankResult or None
        ``n_iter`` 0, ``residual`` the relative change absorbed. None when the change exceeds
        ``max_change`` or the previous product is zero.
    """
    V = C.shape[0]
    F = np.asarray(factor, dtype=np.float64)
    G = np.asarray(probe_vectors, dtype=np.float64)
    old = np.asarray(previous_product, dtype=np.float64)
    if F.ndim != 2 or F.shape[0] != V or not 1 <= F.shape[1] < V:
        raise InputError(f"factor must have shape ({V}, K) with 1 <= K < {V}, got {F.shape}")
    if G.ndim != 2 or G.shape[0] != V or G.shape[1] < 1:
        raise InputError(f"probe_vectors must have shape ({V}, m) with m >= 1, got {G.shape}")
    K = F.shape[1]
    n_rows = scan_rows(V, K, rows)
    if old.shape != (V, K + G.shape[1]):
        raise InputError(f"previous_product must have shape {(V, K + G.shape[1])} (the "
                         f"factor's and the probes' columns), got {old.shape}")
    if not (np.all(np.isfinite(F)) and np.all(np.isfinite(G)) and np.all(np.isfinite(old))):
        raise InputError("factor, probe_vectors and previous_product must be finite")
    scale = float(np.linalg.norm(old[:, K:]))
    if scale == 0.0 or not np.any(old[:, :K]):
        return None
    G = _probe_new_words(G)
    delta = data_product(C, np.hstack([F, G])) - old
    dCF = delta[:, :K]
    change = float(np.linalg.norm(delta[:, K:])) / scale
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
    scanned = np.argsort(-np.einsum("ij,ij->i", Y, Y), kind="stable")[:n_rows]
    return lowrank_result(Y, scanned, X, theta, n_iter=0, residual=change, converged=True,
                          n_products=1)
