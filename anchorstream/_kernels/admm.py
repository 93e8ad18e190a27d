"""numba kernel of the ADMM recovery (JSMF Algorithm 3) with its warm active-set start.

Same contract as the kernels of ``anchorstream._kernels.recover``: one loop iteration per word,
arrays in and out, checked by ``anchorstream.model.recover.recover``, which runs
:func:`recover_admm_dr_into` on disjoint words in threads. Slow loop twins live in
``tests/naive_recover.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from anchorstream._kernels.recover import recover_matvec, recover_project_simplex, recover_quadratic

# Support changes the active-set search of a warm ADMM start may make before it gives up and
# iterates (each one an |S|³ solve, |S| ~ 11 on the npm corpus against ~50 ADMM iterations of
# K² each).
_ACTIVE_SET_STEPS = 10



@njit(cache=True)
def _recover_kkt_solve(G, h, idx, m, A, b, y, done=0):
    """Solve ``[[G_SS, 1], [1ᵀ, 0]] [y_S; μ] = [h_S; 1]`` on the support ``S = idx[:m]``
    (``A``, ``b``: scratch of at least ``(m + 1)²`` and ``m + 1``); ``y`` gets ``y_S`` (zeros
    elsewhere). Returns ``μ``, or NaN when ``G_SS`` is (numerically) singular.

    ``done``: the first rows of the factor ``L`` already in ``A``, from an earlier solve whose
    support began with ``idx[:done]`` (row ``r`` of ``L`` depends on ``idx[:r + 1]`` only), so
    only the rows after are computed: a search that adds words to a support factors them
    alone, ``m²/2`` multiply-adds each, and one that drops some refactors from the first.

    By the Cholesky factor ``L`` of ``G_SS`` (a principal block of the anchors' Gram matrix,
    positive definite): ``u = G_SS⁻¹ h_S`` and ``v = G_SS⁻¹ 1``, then ``μ = (Σu − 1) / Σv`` and
    ``y_S = u − μ v``. ``m³/6`` multiply-adds against the ``(m + 1)³/3`` of Gaussian elimination
    with partial pivoting on the whole system, which it replaced (session 79): 3,000 solves
    from a warm refresh's supports 28 → 15 ms at ``m`` ~ 28 (planted 100-token documents),
    13 → 8 ms at ``m`` ~ 11 (npm summaries), the solutions within 1e-14. ``L`` is in ``A``'s
    lower triangle, ``u`` in ``b[:m]``, ``v`` in ``A[m, :m]``.
    """
    if m == 0:
        return np.nan
    scale = 0.0
    for r in range(m):
        if G[idx[r], idx[r]] > scale:
            scale = G[idx[r], idx[r]]
    if not scale > 0.0:
        return np.nan
    for r in range(done):  # the rows kept, checked against this support's scale
        if not A[r, r] * A[r, r] > 1e-12 * scale:
            return np.nan
    for r in range(done, m):
        for c in range(r + 1):
            s = G[idx[r], idx[c]]
            for k in range(c):
                s -= A[r, k] * A[c, k]
            if c < r:
                A[r, c] = s / A[c, c]
            elif s > 1e-12 * scale:
                A[r, r] = np.sqrt(s)
            else:
                return np.nan
    for r in range(m):  # L z = h_S, L w = 1
        s = h[idx[r]]
        t = 1.0
        for k in range(r):
            s -= A[r, k] * b[k]
            t -= A[r, k] * A[m, k]
        b[r] = s / A[r, r]
        A[m, r] = t / A[r, r]
    for r in range(m - 1, -1, -1):  # Lᵀ u = z, Lᵀ v = w
        s = b[r]
        t = A[m, r]
        for k in range(r + 1, m):
            s -= A[k, r] * b[k]
            t -= A[k, r] * A[m, k]
        b[r] = s / A[r, r]
        A[m, r] = t / A[r, r]
    su = 0.0
    sv = 0.0
    for r in range(m):
        su += b[r]
        sv += A[m, r]
    if not sv > 0.0:
        return np.nan
    mu = (su - 1.0) / sv
    for k in range(y.shape[0]):
        y[k] = 0.0
    for r in range(m):
        y[idx[r]] = b[r] - mu * A[m, r]
    return mu


@njit(cache=True)
def _recover_simplex_start(x, out, work):
    """``x`` projected onto the simplex into ``out``, or copied where it is on it already
    (non-negative, summing to 1 within rounding): a warm start's rows are, and the projection's
    sort was a quarter of a warm recovery's search (5 of 20 ms, K = 50, V = 5000)."""
    K = x.shape[0]
    total = 0.0
    for k in range(K):
        if not x[k] >= 0.0:
            recover_project_simplex(x, out, work)
            return
        total += x[k]
    if abs(total - 1.0) > 1e-12:
        recover_project_simplex(x, out, work)
        return
    for k in range(K):
        out[k] = x[k]


@njit(cache=True)
def _recover_active_set(G, h, start, tol, max_steps, y):
    """The exact minimizer of ``½ yᵀGy − hᵀy`` on the simplex by an active-set search from
    ``start``'s support: True and the minimizer in ``y``, or False (``y`` is then garbage).

    The support starts as the entries of ``start`` above ``tol`` (and its largest entry): a
    previous ADMM solution leaves dozens of entries below 1e-8, zero at the solver's
    precision, and a first solve on all of them cost more than the rest of the search (PyPI
    summaries after 1% new documents, K = 100: 43 entries above 0 on average, 16 above 1e-8;
    the search over every word took 0.79 s from the first support and 0.08 s from the second,
    and solved 99.95% of the words against 100%).

    On a support ``S`` the optimum solves the KKT system (:func:`_recover_kkt_solve`). It is
    the simplex optimum when ``y_S > 0`` and every multiplier off the support,
    ``ν_j = (G y − h)_j + μ``, is at least ``−tol · G_jj`` (a negative one would move ``y_j``
    off zero by about ``|ν_j| / G_jj``). Otherwise the entries ``≤ 0`` leave ``S`` or, if
    there are none, every violating ``j`` joins it, at most ``max_steps`` times (on the npm
    corpus after 1% new documents: every word solved, in 3.5 steps on average; adding only
    the most violated ``j`` per step solved 96% within 10). The
    answer is only accepted after the full optimality check, so the search path can only cost
    time, never accuracy. A warm start whose support is nearly right (most words after a
    small change of the data) is solved in a few ``|S|³`` steps instead of ADMM iterations.
    A step that adds words factors their rows alone, and one that drops some refactors from
    the first dropped (:func:`_recover_kkt_solve`'s ``done``): the six warm refreshes of
    planted 100-token documents, where 57 % of the 4,950 words change their support of ~26
    topics of 50, recovered in 36-37 ms each instead of 41-42 (best of 11, alternated three
    times), the same coefficients within 6e-16.
    """
    K = h.shape[0]
    support = np.empty(K, dtype=np.bool_)
    top = 0
    for k in range(K):
        support[k] = start[k] > tol
        if start[k] > start[top]:
            top = k
    support[top] = True
    # The support in the order its words joined (the start's in increasing order), so that
    # the factor of a support that grew keeps its rows (_recover_kkt_solve's ``done``).
    idx = np.empty(K, dtype=np.int64)
    m = 0
    for k in range(K):
        if support[k]:
            idx[m] = k
            m += 1
    done = 0
    A = np.empty((K + 1, K + 1))
    b = np.empty(K + 1)
    for _ in range(max_steps):
        mu = _recover_kkt_solve(G, h, idx, m, A, b, y, done)
        if not np.isfinite(mu):
            return False
        kept, first = 0, -1
        for r in range(m):
            k = idx[r]
            if y[k] > 0.0:
                idx[kept] = k
                kept += 1
            else:
                support[k] = False
                if first < 0:
                    first = r
        if first >= 0:
            m, done = kept, first
            continue
        added = m
        for k in range(K):
            if not support[k]:
                g = mu - h[k]
                for r in range(m):
                    g += G[k, idx[r]] * y[idx[r]]
                if g / max(G[k, k], 1e-300) < -tol:
                    support[k] = True
                    idx[added] = k
                    added += 1
        if added == m:
            return True
        m, done = added, m
    return False


@njit(cache=True)
def recover_admm_dr(G, H, F, G_pinv, init, use_init, rows, lam, gamma, tol, max_iter):
    """ADMM by Douglas–Rachford splitting for every word in ``rows`` (JSMF Algorithm 3).

    Solves ``min_{y in simplex} ½‖Uy - v‖²`` with ``U = C̄_Sᵀ`` and ``v = C̄_iᵀ`` through
    ``UᵀU = G`` and ``Uᵀv = H[i]``; ``F = (γG + I)⁻¹`` is factored once by the caller, so an
    iteration is one K×K product and one simplex projection.

    After iterations 1, 2, 4, 8, ... an active-set search starts from the iterate's support
    (:func:`_recover_active_set`, at most ``_ACTIVE_SET_STEPS`` support changes) and, where it
    finds the exact optimum (its full optimality check passed), the word is done. ADMM's
    projection finds the support long before its iterates settle: on the npm summaries
    (K = 100, tol 1e-5) ADMM alone ran 314 iterations a word on average, 1.2% of the words
    reaching the cap of 500 (7.6 s); with the search every word was solved exactly after its
    first iteration (0.15 s), closer to a 1e-10 ADMM solve (1.7e-5 against 3.4e-4, largest
    entry difference).

    Parameters
    ----------
    G, H
        As in :func:`recover_expgrad_l2`.
    F : float64 array of shape (K, K)
        ``(γG + I)⁻¹``.
    G_pinv : float64 array of shape (K, K)
        Pseudo-inverse of ``G``, for the least-squares initialization.
    init : float64 array of shape (V, K)
        Warm start, used when ``use_init``.
    use_init : bool
        First an active-set search from ``init``'s support (:func:`_recover_active_set`):
        where it finds the optimum, that exact optimum is returned after 0 iterations. Otherwise start from ``init`` (with
        ``q`` set to the Douglas–Rachford fixed point that belongs to it,
        ``q = y - γ∇f(y)``) where its objective is lower than that of the paper's start, the
        least-squares solution projected onto the simplex (with ``q = y`` in a cold start),
        which is used otherwise.
    rows : int64 array of shape (n,)
    lam, gamma : float
        Relaxation λ and proximal parameter γ.
    tol : float
        Stop when both the change of ``y`` and the primal residual ``p - y`` are below ``tol``
        in the max norm.
    max_iter : int

    Returns
    -------
    coef, n_iter, converged
        As in :func:`recover_expgrad_l2`.

    Serial; :func:`recover_admm_dr_into` solves a subset of the rows into given arrays
    without the GIL, which is how ``anchorstream.model.recover`` spreads the words over
    threads (numba's ``parallel=True`` here doubled the kernel's compilation, 4.7 -> 8.5-10
    CPU s on a new machine's first fit, session 87).
    """
    V, K = H.shape
    coef = np.zeros((V, K))
    n_iter = np.zeros(V, dtype=np.int64)
    converged = np.zeros(V, dtype=np.bool_)
    recover_admm_dr_into(G, H, F, G_pinv, init, use_init, rows, lam, gamma, tol, max_iter, coef,
                         n_iter, converged)
    return coef, n_iter, converged


@njit(cache=True, nogil=True)
def recover_admm_dr_into(G, H, F, G_pinv, init, use_init, rows, lam, gamma, tol, max_iter, coef,
                         n_iter, converged):
    """:func:`recover_admm_dr` for the words ``rows``, into ``coef``, ``n_iter`` and
    ``converged`` (their rows ``rows``; the others untouched), without the GIL: threads may
    solve disjoint rows into the same arrays."""
    K = H.shape[1]
    f = np.empty(K)
    y = np.empty(K)
    q = np.empty(K)
    p = np.empty(K)
    x = np.empty(K)
    y_new = np.empty(K)
    work = np.empty(K)
    for r in range(rows.shape[0]):
        i = rows[r]
        h = H[i]
        it = 0
        done = False
        if use_init:
            _recover_simplex_start(init[i], p, work)
            if _recover_active_set(G, h, p, tol, _ACTIVE_SET_STEPS, y):
                done = True
        if not done:
            for k in range(K):
                f[k] = gamma * h[k]
            # The paper's start: the least-squares solution projected onto the simplex, q = y.
            recover_matvec(G_pinv, h, x)
            recover_project_simplex(x, y, work)
            for k in range(K):
                q[k] = y[k]
            if use_init:
                # The warm start only where its objective ½yᵀGy − hᵀy is lower: after the
                # anchors or the matrix moved, the projected least-squares point is often
                # closer. Either way q is the fixed point that belongs to y, so an optimal y
                # stops at once.
                if recover_quadratic(G, h, p, x) < recover_quadratic(G, h, y, x):
                    for k in range(K):
                        y[k] = p[k]
                recover_matvec(G, y, x)
                for k in range(K):
                    q[k] = y[k] - gamma * (x[k] - h[k])
        while not done and it < max_iter:
            for k in range(K):
                x[k] = 2.0 * y[k] - q[k] + f[k]
            recover_matvec(F, x, p)
            for k in range(K):
                q[k] += lam * (p[k] - y[k])
            recover_project_simplex(q, y_new, work)
            it += 1
            change = 0.0
            for k in range(K):
                a = abs(y_new[k] - y[k])
                b = abs(p[k] - y[k])
                if a > change:
                    change = a
                if b > change:
                    change = b
                y[k] = y_new[k]
            if change < tol:
                done = True
                break
            if it & (it - 1) == 0 and _recover_active_set(G, h, y, tol, _ACTIVE_SET_STEPS,
                                                          y_new):
                # After iterations 1, 2, 4, 8, ...: the iterate's support, solved exactly.
                for k in range(K):
                    y[k] = y_new[k]
                done = True
        for k in range(K):
            coef[i, k] = y[k]
        n_iter[i] = it
        converged[i] = done
