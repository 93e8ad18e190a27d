"""numba kernels of the exponentiated-gradient recovery (RecoverL2, RecoverKL; Arora et al. 2013).

Each kernel solves, for each word ``i`` in ``rows``, ``min_{y in simplex} loss(C̄_i, yᵀ C̄_S)``
and writes ``y`` into row ``i`` of ``coef``; words are independent, so the loop over them is a
``prange`` and each iteration owns its output row. The simplex helpers here are shared with the
ADMM kernel (``anchorstream._kernels.admm``). Arrays in, arrays out: the public wrapper
``anchorstream.model.recover.recover`` checks them. Slow loop twins: ``tests/naive_recover.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from anchorstream._kernels.sorting import sort_floats

# Armijo sufficient-decrease and Wolfe curvature constants of the exponentiated-gradient line
# search (Arora et al. 2013, supplementary D.2, after Nocedal & Wright): the usual textbook values.
_RECOVER_ARMIJO_C1 = 1e-4
_RECOVER_WOLFE_C2 = 0.9
# Largest multiplicative change of any coordinate ratio in one step: η is capped at this value
# over max(λ). Without the cap a long early step (η = 50 on the KL loss, whose gradient is O(1))
# can drive a coordinate to 1e-20 while it still lowers the loss; if that topic is needed later,
# a multiplicative update takes thousands of steps to bring it back (or never, once its share is
# below rounding of the others). The cap only binds while the gradient is large.
_RECOVER_MAX_EXPONENT = 1.0
# Halvings of the step before a line search gives up (the step has then shrunk by 2^-60 and the
# iterate can no longer move in floating point, so the word stops, unconverged).
_RECOVER_MAX_HALVINGS = 60
# Incremental updates of ``G y`` (or of ``Uᵀ y``) drift by rounding; recompute them exactly every
# this many accepted steps.
_RECOVER_REFRESH_EVERY = 32


@njit(cache=True)
def recover_project_simplex(x, out, work):
    """Euclidean projection of ``x`` onto the probability simplex, written into ``out``.

    Sort-based algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008): with ``u`` sorted
    descending, ``rho`` is the largest ``j`` with ``u_j > (Σ_{l<=j} u_l - 1) / j`` and the result
    is ``max(x - θ, 0)`` for ``θ = (Σ_{l<=rho} u_l - 1) / rho``. ``work`` is scratch of ``x``'s
    size; ``out`` may be ``x`` itself.
    """
    K = x.shape[0]
    for k in range(K):
        work[k] = x[k]
    sort_floats(work, K)
    csum = 0.0
    theta = 0.0
    for j in range(K):
        u = work[K - 1 - j]
        csum += u
        t = (csum - 1.0) / (j + 1)
        # The indices satisfying the test form a prefix, so the last one that passes is rho.
        if u - t > 0.0:
            theta = t
    for k in range(K):
        v = x[k] - theta
        out[k] = v if v > 0.0 else 0.0


@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def recover_matvec(G, y, out):
    K = y.shape[0]
    for a in range(K):
        s = 0.0
        for b in range(K):
            s += G[a, b] * y[b]
        out[a] = s


@njit(cache=True)
def recover_quadratic(G, h, y, tmp):
    """``½ yᵀ G y − hᵀ y`` (``tmp`` is scratch of length K)."""
    recover_matvec(G, y, tmp)
    s = 0.0
    for k in range(y.shape[0]):
        s += y[k] * (0.5 * tmp[k] - h[k])
    return s


@njit(cache=True)
def _recover_expgrad_step(y, g, eta, y_new):
    """Multiplicative update ``y e^{-η g}`` followed by the ℓ1 normalization (the projection).

    The gradient is shifted by its minimum first: this leaves the normalized result unchanged and
    keeps every exponent <= 0, so nothing overflows.
    """
    K = y.shape[0]
    gmin = g[0]
    for k in range(1, K):
        if g[k] < gmin:
            gmin = g[k]
    total = 0.0
    for k in range(K):
        y_new[k] = y[k] * np.exp(-eta * (g[k] - gmin))
        total += y_new[k]
    for k in range(K):
        y_new[k] /= total


@njit(cache=True)
def _recover_step_cap(g, eta):
    """``min(η, _RECOVER_MAX_EXPONENT / (max g - min g))``."""
    K = g.shape[0]
    gmin = g[0]
    gmax = g[0]
    for k in range(1, K):
        if g[k] < gmin:
            gmin = g[k]
        if g[k] > gmax:
            gmax = g[k]
    spread = gmax - gmin
    if spread * eta > _RECOVER_MAX_EXPONENT:
        return _RECOVER_MAX_EXPONENT / spread
    return eta


@njit(cache=True)
def _recover_slope(g, d):
    """``(g - min g)ᵀ d``: the directional derivative along a step ``d`` that sums to zero.

    In exact arithmetic ``Σd = 0`` and this equals ``gᵀd``. In floating point ``Σd`` is a
    rounding error, and near the optimum the gradient's common part (about -1 for the KL loss)
    times that error is larger than the slope itself, which would stall the line search.
    """
    K = g.shape[0]
    gmin = g[0]
    for k in range(1, K):
        if g[k] < gmin:
            gmin = g[k]
    s = 0.0
    for k in range(K):
        s += (g[k] - gmin) * d[k]
    return s


@njit(cache=True)
def _recover_gap(y, g):
    """The duality gap ``λᵀy`` with ``λ = g - min(g)`` (KKT complementary slackness)."""
    K = y.shape[0]
    gmin = g[0]
    for k in range(1, K):
        if g[k] < gmin:
            gmin = g[k]
    gap = 0.0
    for k in range(K):
        gap += y[k] * (g[k] - gmin)
    return gap


@njit(cache=True, inline="always")
def _recover_line_search(y, g, eta, y_new, d, kl, G, Gd, Ut, cols, v, r, s):
    """The backtracking step-size search shared by the exponentiated-gradient kernels.

    From the (capped) step ``eta``, tries ``y_new = expgrad_step(y, g, eta)`` with ``d = y_new -
    y`` and halves ``eta`` until the loss's Armijo test holds (:func:`_recover_kl_accepts` with
    ``Ut, cols, v, r, s`` if ``kl``, else :func:`_recover_l2_accepts` with ``G, Gd``; the other
    loss's arrays are unused), at most ``_RECOVER_MAX_HALVINGS`` times. Returns ``(accepted,
    eta, gᵀd)``; ``y_new`` and ``d`` hold the accepted step. (The test is picked by a flag, not
    passed as a function: a kernel that passes a function cannot be cached by numba.)
    """
    gd = 0.0
    for _ in range(_RECOVER_MAX_HALVINGS):
        _recover_expgrad_step(y, g, eta, y_new)
        for k in range(y.shape[0]):
            d[k] = y_new[k] - y[k]
        gd = _recover_slope(g, d)
        if kl:
            accepted = _recover_kl_accepts(g, d, gd, Ut, cols, v, r, s)
        else:
            accepted = _recover_l2_accepts(g, d, gd, G, Gd)
        if accepted:
            return True, eta, gd
        eta *= 0.5
    return False, eta, gd


@njit(cache=True)
def _recover_l2_accepts(g, d, gd, G, Gd):
    """Armijo test of the L2 loss for the step ``d`` (``Gd`` gets ``G d``)."""
    recover_matvec(G, d, Gd)
    dGd = 0.0
    for k in range(d.shape[0]):
        dGd += d[k] * Gd[k]
    # f(y + d) - f(y) = gᵀd + dᵀGd exactly (gᵀd taken as the slope); written this way it does
    # not cancel two nearly equal objective values.
    return gd + dGd <= _RECOVER_ARMIJO_C1 * gd


@njit(cache=True)
def _recover_l2_word(G, h, y, stop, max_iter, step, lift):
    """One word of :func:`recover_expgrad_l2`: ``y`` (the start) is overwritten by the
    solution; returns ``(accepted steps, converged)``."""
    K = y.shape[0]
    unused, unused_2d, unused_cols = np.empty(0), np.empty((0, 0)), np.empty(0, dtype=np.int64)
    y_new = np.empty(K)
    d = np.empty(K)
    Gy = np.empty(K)
    Gd = np.empty(K)
    g = np.empty(K)
    recover_matvec(G, y, Gy)
    for k in range(K):
        g[k] = 2.0 * (Gy[k] - h[k])
    eta = step
    it = 0
    done = False
    if lift > 0.0 and not _recover_gap(y, g) < stop:
        for k in range(K):
            y[k] = (1.0 - lift) * y[k] + lift / K
        recover_matvec(G, y, Gy)
        for k in range(K):
            g[k] = 2.0 * (Gy[k] - h[k])
    while True:
        if _recover_gap(y, g) < stop:
            done = True
            break
        if it >= max_iter:
            break
        eta = _recover_step_cap(g, eta)
        accepted, eta, gd = _recover_line_search(
            y, g, eta, y_new, d, False, G, Gd, unused_2d, unused_cols, unused, unused, unused
        )
        if not accepted:
            break
        it += 1
        if it % _RECOVER_REFRESH_EVERY == 0:
            recover_matvec(G, y_new, Gy)
        else:
            for k in range(K):
                Gy[k] += Gd[k]
        for k in range(K):
            g[k] = 2.0 * (Gy[k] - h[k])
            y[k] = y_new[k]
        # Weak Wolfe curvature condition: if the slope along the step is still steep the
        # step was too short; lengthen the next one.
        if _recover_slope(g, d) < _RECOVER_WOLFE_C2 * gd:
            eta *= 2.0
    return it, done


@njit(cache=True, parallel=True)
def recover_expgrad_l2(G, H, vnorm2, init, rows, tol, max_iter, step, lift):
    """RecoverL2 by exponentiated gradient for every word in ``rows``.

    Minimizes ``‖C̄_i - yᵀC̄_S‖² = const - 2 yᵀh + yᵀGy`` over the simplex, with the Gram
    matrices ``G = C̄_S C̄_Sᵀ`` and ``h = H[i] = C̄_S C̄_iᵀ`` precomputed, so an iteration costs
    O(K²) whatever the vocabulary size (Arora et al. 2013, §3 and Algorithm 5).

    Parameters
    ----------
    G : float64 array of shape (K, K)
    H : float64 array of shape (V, K)
    vnorm2 : float64 array of shape (V,)
        ``‖C̄_i‖²``, the loss at ``y = 0``: the gap is measured relative to it.
    init : float64 array of shape (V, K)
        Starting point per word, rows on the simplex.
    rows : int64 array of shape (n,)
        Words to solve; other rows of the output are left at zero.
    tol : float
        Stop a word when its duality gap ``λᵀy`` falls below ``tol * vnorm2[i]`` (the gap bounds
        the suboptimality, so this is a relative accuracy and does not depend on V).
    max_iter : int
    step : float
        Initial step size η of the line search, per word.
    lift : float
        If the start does not already meet the tolerance, it is first mixed with this share of
        the uniform vector: a multiplicative update can never move an exact zero. (The gap is a
        valid bound with zeros too, so an optimal start with zeros stops at once, unlifted.)

    Returns
    -------
    coef : float64 array of shape (V, K)
    n_iter : int64 array of shape (V,)
        Accepted steps per word.
    converged : bool array of shape (V,)
    """
    V, K = H.shape
    coef = np.zeros((V, K))
    n_iter = np.zeros(V, dtype=np.int64)
    converged = np.zeros(V, dtype=np.bool_)
    for r in prange(rows.shape[0]):
        i = rows[r]
        y = init[i].copy()
        n_iter[i], converged[i] = _recover_l2_word(
            G, H[i], y, tol * vnorm2[i], max_iter, step, lift
        )
        for k in range(K):
            coef[i, k] = y[k]
    return coef, n_iter, converged


@njit(cache=True)
def _recover_kl_residual(Ut, y, cols, out):
    """``out[c] = (Uᵀ y)[cols[c]]`` over a word's support columns."""
    K = y.shape[0]
    for c in range(cols.shape[0]):
        j = cols[c]
        s = 0.0
        for k in range(K):
            s += Ut[j, k] * y[k]
        out[c] = s


@njit(cache=True)
def _recover_kl_gradient(Ut, v, r, cols, g):
    """``g = -Σ_j v_j U_{:,j} / r_j``, the gradient of ``KL(v ‖ Uᵀy)`` in ``y``."""
    K = g.shape[0]
    for k in range(K):
        g[k] = 0.0
    for c in range(cols.shape[0]):
        j = cols[c]
        w = v[c] / r[c]
        for k in range(K):
            g[k] -= w * Ut[j, k]


@njit(cache=True)
def _recover_kl_accepts(g, d, gd, Ut, cols, v, r, s):
    """Armijo test of the KL loss for the step ``d`` (``s`` gets ``(Uᵀd)`` on the support)."""
    dsum = 0.0
    for k in range(d.shape[0]):
        dsum += d[k]
    _recover_kl_residual(Ut, d, cols, s)
    # f(y + d) - f(y) = -Σ v_j log(1 + x_j), x = Uᵀd / Uᵀy, computed from the step itself: no
    # cancellation between two nearly equal objective values. Its first-order part is gᵀd, so
    # the rounding Σd carries in is taken out as in the slope (see _recover_slope). The
    # logarithms cost more than the rest of the iteration together, so the upper bound
    # log(1 + x) >= x - x² / (2 min(1, 1 + x)) is tried first: if it passes the Armijo test so
    # does the exact value, and the accept/reject decision is the same as with the exact test.
    shift = -g.min() * dsum
    bound = shift
    for c in range(cols.shape[0]):
        x = s[c] / r[c]
        if x <= -1.0:
            return False  # the step empties a column: infinite loss
        m = 1.0 + x if x < 0.0 else 1.0
        bound -= v[c] * (x - x * x / (2.0 * m))
    if bound <= _RECOVER_ARMIJO_C1 * gd:
        return True
    df = shift
    for c in range(cols.shape[0]):
        df -= v[c] * np.log1p(s[c] / r[c])
    return df <= _RECOVER_ARMIJO_C1 * gd


@njit(cache=True)
def _recover_kl_word(Ci, pi, Ut, valid, y, tol, max_iter, step, lift):
    """One word of :func:`recover_expgrad_kl` (``Ci``: its row of ``C``, ``pi``: its sum):
    ``y`` (the start) is overwritten by the solution; returns ``(accepted steps, converged)``."""
    V = Ci.shape[0]
    K = y.shape[0]
    n = 0
    for j in range(V):
        if Ci[j] > 0.0 and valid[j]:
            n += 1
    cols = np.empty(n, dtype=np.int64)
    v = np.empty(n)
    n = 0
    for j in range(V):
        if Ci[j] > 0.0 and valid[j]:
            cols[n] = j
            v[n] = Ci[j] / pi
            n += 1
    y_new = np.empty(K)
    d = np.empty(K)
    g = np.empty(K)
    r = np.empty(n)
    s = np.empty(n)
    unused, unused_2d = np.empty(0), np.empty((0, 0))
    _recover_kl_residual(Ut, y, cols, r)
    # A start with zeros may leave a column of the word's support uncovered (infinite loss);
    # it is lifted like a start that is not yet optimal.
    covered = True
    for c in range(n):
        if not r[c] > 0.0:
            covered = False
    if covered:
        _recover_kl_gradient(Ut, v, r, cols, g)
    if not covered or (lift > 0.0 and not _recover_gap(y, g) < tol):
        for k in range(K):
            y[k] = (1.0 - lift) * y[k] + lift / K
        _recover_kl_residual(Ut, y, cols, r)
        _recover_kl_gradient(Ut, v, r, cols, g)
    eta = step
    it = 0
    done = False
    while True:
        if _recover_gap(y, g) < tol:
            done = True
            break
        if it >= max_iter:
            break
        eta = _recover_step_cap(g, eta)
        accepted, eta, gd = _recover_line_search(
            y, g, eta, y_new, d, True, unused_2d, unused, Ut, cols, v, r, s
        )
        if not accepted:
            break
        it += 1
        for k in range(K):
            y[k] = y_new[k]
        if it % _RECOVER_REFRESH_EVERY == 0:
            _recover_kl_residual(Ut, y, cols, r)
        else:
            for c in range(n):
                r[c] += s[c]
        _recover_kl_gradient(Ut, v, r, cols, g)
        if _recover_slope(g, d) < _RECOVER_WOLFE_C2 * gd:
            eta *= 2.0
    return it, done


@njit(cache=True, parallel=True)
def recover_expgrad_kl(C, p, Ut, valid, init, rows, tol, max_iter, step, lift):
    """RecoverKL by exponentiated gradient for every word in ``rows``.

    Minimizes ``KL(C̄_i ‖ yᵀC̄_S)`` over the simplex (Arora et al. 2013, Algorithm 3 and 5). Only
    columns where ``C̄_i`` is positive enter the loss, and of those only columns some anchor row
    covers (``valid``): a column no anchor covers adds the same infinite constant for every ``y``
    and so cannot change the minimizer. An iteration costs O(nnz(C_i) K).

    Parameters
    ----------
    C : float64 array of shape (V, V)
        Co-occurrence (not row-normalized; row ``i`` is divided by ``p[i]`` on the fly, which
        avoids a second V×V array).
    p : float64 array of shape (V,)
        Row sums of ``C``.
    Ut : float64 array of shape (V, K)
        ``C̄_Sᵀ``: column k is the normalized row of anchor k.
    valid : bool array of shape (V,)
        Columns covered by at least one anchor row.
    tol : float
        Stop a word when its duality gap ``λᵀy`` (in nats) falls below ``tol``.
    init, rows, max_iter, step, lift
        As in :func:`recover_expgrad_l2`.

    Returns
    -------
    coef, n_iter, converged
        As in :func:`recover_expgrad_l2`.
    """
    V = C.shape[0]
    K = Ut.shape[1]
    coef = np.zeros((V, K))
    n_iter = np.zeros(V, dtype=np.int64)
    converged = np.zeros(V, dtype=np.bool_)
    for r_ in prange(rows.shape[0]):
        i = rows[r_]
        y = init[i].copy()
        n_iter[i], converged[i] = _recover_kl_word(
            C[i], p[i], Ut, valid, y, tol, max_iter, step, lift
        )
        for k in range(K):
            coef[i, k] = y[k]
    return coef, n_iter, converged
