"""Warm update of a rectified co-occurrence after a small change of the data.

:func:`rectify_update` moves the previous result's rank-``K`` core by the change's part tangent
to the rank-``K`` matrices, at the cost of about one alternating-projection iteration without
eigensolver (why not restart the iteration itself: ``docs/algorithms.md``).
"""

from __future__ import annotations

import logging

import numpy as np

from anchorstream._kernels.rectify import anchor_update_difference
from anchorstream.errors import InputError
from anchorstream.model.eigen import fix_signs, orthonormal_complement
from anchorstream.model.rectify_core import (
    RectifyResult,
    block_rows,
    check_symmetric,
    finish,
    form_upper,
    iterate_memory,
    square_float64,
    work_dtype,
)

# The logger of the module that exports it, as before the split (log filters name it).
log = logging.getLogger("anchorstream.model.rectify")

__all__ = ["RECTIFY_WARM_CHANGE", "rectify_update"]

#: The largest relative change of the data (Frobenius, since the last cold rectification) a
#: warm update follows; beyond it the caller rectifies cold. The default of
#: ``model.rectify_warm_change`` and of the warm update functions (:func:`rectify_update`,
#: :func:`~anchorstream.model.lowrank_warm.rectify_lowrank_update`); why 0.06:
#: :class:`~anchorstream.model.pipeline.ModelSettings`.
RECTIFY_WARM_CHANGE = 0.06


def rectify_update(
    C,
    previous_data,
    factor: np.ndarray,
    shift: float,
    *,
    max_change: float = RECTIFY_WARM_CHANGE,
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
        the function returns None and the caller rectifies from scratch. The default is
        ``model.rectify_warm_change``'s.
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
    C = square_float64(C)
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
    work = work_dtype(dtype)
    K = factor.shape[1]

    U = orthonormal_complement(None, factor)  # an orthonormal basis of span(F)
    step = block_rows(V)
    G, sums = _difference_pass(C, previous_data, U, work, step, check_input)
    change2, base2 = float(sums[0]), float(sums[1])
    if base2 <= 0:
        return None
    change = float(np.sqrt(change2 / base2))
    if change > max_change:
        log.info("rectify_update: the data changed by %.3g (relative), more than %.3g; "
                 "a cold rectification is needed", change, max_change)
        return None
    theta, vecs, Y = _tangent_core(U, G, factor, K)
    # Keep the sum before clipping: zero change gives the previous result back.
    old_sum, new_sum = factor.sum(axis=0), Y.sum(axis=0)
    new_shift = float(shift) + (float(old_sum @ old_sum) - float(new_sum @ new_sum)) / (V * V)

    nn = iterate_memory(workspace, V, work)
    buf = np.empty(step * V, dtype=work)
    sums, _ = form_upper(Y, new_shift, nn, C, step, buf)
    nn, total, row_sums, row_sqnorms = finish(nn, C, step, float(sums[2]), overwrite_input)
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


def _difference_pass(C, previous_data, U, work, step, check_input):
    """One pass over the data: ``ΔC U`` and the sums ``(‖ΔC‖², ‖previous_data‖², non-finite
    count, max |C|)``, checking finiteness (and, with ``check_input``, symmetry) on the way.

    ΔC is formed in the working precision: with float32 its rounding is ~1e-9 of C's entries,
    as ΔC is ~1% of C, and the product runs at single-precision speed.
    """
    V = C.shape[0]
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
        check_symmetric(C, float(sums[3]))
    return G, sums


def _tangent_core(U, G, factor, K):
    """The rank-``K`` truncation of ``F Fᵀ`` plus the tangent part of ΔC (``G = ΔC U``):
    ``(theta, vecs, Y)`` with ``Y = vecs √max(theta, 0)``."""
    V = U.shape[0]
    # The tangent part U Wᵀ + W Uᵀ, W = ΔC U − U (Uᵀ ΔC U) / 2, and the core F Fᵀ live in
    # span([U, W⊥]): the rank-K truncation is an eigendecomposition of a 2K x 2K matrix.
    W = G - 0.5 * U @ (U.T @ G)
    UW = U.T @ W
    rest = W - U @ UW
    norms = np.linalg.norm(rest, axis=0)
    Q2 = (orthonormal_complement(U, rest) if float(norms.max(initial=0.0)) > 0
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
    return theta, vecs, Y
