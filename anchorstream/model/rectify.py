"""Rectification of a co-occurrence matrix by alternating projection (JSMF Algorithm 1).

An empirical co-occurrence ``C`` is full-rank and indefinite, while the moment ``B A Bᵀ`` it
estimates is rank-``K``, positive semidefinite, non-negative and sums to one. :func:`rectify`
alternates the projections onto those sets (Lee et al., JSMF), on the factor ``Y`` of the
iterate ``max(Y Yᵀ + shift, 0)`` and with Anderson acceleration by default;
:func:`rectify_update` follows a small change of the data without iterating. The method, the
choices and why: ``docs/algorithms.md``; measured figures: ``benchmarks/README.md``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels.rectify import anchor_dense_to_csr
from anchorstream.errors import InputError
from anchorstream.model.anderson import AndersonMixer
from anchorstream.model.eigen import fix_signs, sparse_top_eigh, top_eigh, upper_matmul
from anchorstream.model.rectify_core import (
    FINAL_EIG_TOL,
    FLOAT32_EIG_TOL,
    RectifyResult,
    block_rows,
    check_loop_args,
    check_matrix,
    finish,
    form_upper,
    iterate_memory,
    normalizing_shift,
    work_dtype,
)
from anchorstream.model.rectify_warm import rectify_update

log = logging.getLogger(__name__)

__all__ = ["AndersonMixer", "RectifyResult", "fix_signs", "rectify", "rectify_update",
           "top_eigh"]

#: Largest fraction of nonzero entries of ``C`` at which the cold eigensolve runs on a CSR
#: copy (ARPACK, :func:`sparse_top_eigh`) instead of the dense matrix (~20 block products).
#: Measured at V = 5000 with 60-column blocks: a product with 3% nonzeros took 0.011 s
#: against 0.02-0.05 s dense, 9% about broke even with a float32 dense one; the copy itself
#: costs ~0.1 s.
_SPARSE_DENSITY = 0.05

#: Seconds between INFO progress lines of a long rectification.
_PROGRESS_SECONDS = 10.0


def _sparse_copy(C: np.ndarray) -> sp.csr_array | None:
    """A CSR copy of ``C`` if at most :data:`_SPARSE_DENSITY` of its entries are nonzero."""
    nnz = int(np.count_nonzero(C))
    if nnz > _SPARSE_DENSITY * C.size:
        return None
    indptr, indices, data = anchor_dense_to_csr(C, nnz)
    return sp.csr_array((data, indices, indptr), shape=C.shape)


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
    C = check_matrix(C)
    V = C.shape[0]
    K = n_topics
    if method != "ap":
        raise InputError(f"method must be 'ap', got {method!r}")
    eig_tol, init_eigvecs = check_loop_args(V, K, max_iter, anderson, tol, eig_tol,
                                             init_eigvecs)
    # The returned eigenpairs are worth a tight solve whatever the loop used.
    final_tol = min(eig_tol, FINAL_EIG_TOL)
    work = work_dtype(dtype)
    single = work == np.float32
    loop_tol = _loop_tolerance(tol, eig_tol, single)
    rng = np.random.default_rng(random_state)

    # The iterate's storage; in float32 it first holds C for a dense cold solve.
    nn = iterate_memory(workspace, V, work)
    theta, X, AX, info = _first_eigenpairs(C, nn, K, init_eigvecs, single, loop_tol, eig_tol, rng)
    n_products = info["n_products"]
    accelerate = AndersonMixer(int(anderson))
    # The iterate is max(Y Yᵀ + shift, 0): Y = U Λ^½ from the PSD projection, or the
    # accelerated combination of the last few of them.
    Y = X[:, :K] * np.sqrt(np.maximum(theta[:K], 0.0))
    old = C
    step = block_rows(V)
    buf = np.empty(step * V, dtype=work)
    residual = np.inf
    converged = False
    n_iter = 0
    next_report = time.monotonic() + _PROGRESS_SECONDS
    for n_iter in range(1, max_iter + 1):
        shift = normalizing_shift(Y, 1.0)
        sums, AX = form_upper(Y, shift, nn, old, step, buf, X)
        old = nn
        residual = float(np.sqrt(sums[0] / sums[1])) if sums[1] > 0 else 0.0
        converged = residual <= tol
        next_report = _report_progress(n_iter, max_iter, residual, tol, next_report)
        last = converged or n_iter == max_iter
        formed = (Y, shift)
        theta, X, AX, info = top_eigh(
            lambda Z: upper_matmul(nn, Z, step),
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
    nn, total, row_sums, row_sqnorms = finish(nn, C, step, float(sums[2]), overwrite_input)
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


def _loop_tolerance(tol: float, eig_tol: float, single: bool) -> float:
    """The eigensolver tolerance inside the loop; InputError for a ``tol`` float32 cannot meet."""
    if single and 0 < tol < FLOAT32_EIG_TOL:
        # The iterate's own rounding moves it by ~1e-7 (relative, Frobenius) per iteration:
        # such a tolerance would be met by chance, after erratic iterations, or never.
        raise InputError(
            f"tol={tol!r} is below what a float32 iterate resolves ({FLOAT32_EIG_TOL:g}); "
            "use dtype float64 for tighter tolerances"
        )
    # float32 products carry ~1e-7 relative rounding, below which no residual can be certified.
    return max(eig_tol, FLOAT32_EIG_TOL) if single else eig_tol


def _first_eigenpairs(C, nn, K, init_eigvecs, single, loop_tol, eig_tol, rng):
    """The eigensolve of ``C`` that starts the loop: ``top_eigh``'s ``(theta, X, AX, info)``.

    In float32 ``nn`` first holds ``C`` for a dense cold solve (~20 products), which then costs
    half. A sparse ``C`` is solved cold on a CSR copy instead.
    """
    V = C.shape[0]
    sparse = _sparse_copy(C) if init_eigvecs is None else None
    if sparse is not None:
        cold = sparse_top_eigh(sparse, K, loop_tol, rng)
        if cold is None:
            cold = top_eigh(lambda Z: sparse @ Z, V, K, tol=loop_tol, random_state=rng)
        return cold
    if single:
        np.copyto(nn, C, casting="same_kind")
        return top_eigh(
            lambda Z: nn @ Z.astype(np.float32), V, K, init=init_eigvecs, tol=loop_tol,
            random_state=rng,
        )
    return top_eigh(lambda Z: C @ Z, V, K, init=init_eigvecs, tol=eig_tol, random_state=rng)


def _report_progress(n_iter, max_iter, residual, tol, next_report):
    """Long rectifications (large V) report progress at INFO; a short one stays quiet.
    Returns when the next INFO line is due."""
    now = time.monotonic()
    if now >= next_report:
        log.info("rectify: iteration %d of at most %d, change %.2e (stops at %.1e)",
                 n_iter, max_iter, residual, tol)
        return now + _PROGRESS_SECONDS
    log.debug("rectify iteration %d: residual %.3e", n_iter, residual)
    return next_report
