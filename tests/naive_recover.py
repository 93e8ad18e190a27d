"""Slow loop twins of the recovery kernels (``anchorstream/_kernels_recover.py``), and an exact
oracle for the simplex-constrained least squares.

The twins run the same algorithms word by word in plain Python, recomputing every quantity from
scratch instead of updating it incrementally, so a kernel that drifts, races or mis-indexes
disagrees with them. Sizes in the tests are tiny.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# The kernels' algorithm constants, restated (tests/test_kernels_recover.py checks they agree).
ARMIJO_C1 = 1e-4
WOLFE_C2 = 0.9
MAX_EXPONENT = 1.0
MAX_HALVINGS = 60


def naive_project_simplex(x):
    """Euclidean projection onto the simplex by the sort-and-threshold rule, in plain loops."""
    u = sorted((float(v) for v in x), reverse=True)
    csum = 0.0
    theta = 0.0
    for j, uj in enumerate(u, start=1):
        csum += uj
        if uj - (csum - 1.0) / j > 0:
            theta = (csum - 1.0) / j
    return np.array([max(float(v) - theta, 0.0) for v in x])


def _matvec(M, y):
    K = len(y)
    return [sum(M[a][b] * y[b] for b in range(K)) for a in range(len(M))]


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def _eg_step(y, g, eta):
    gmin = min(g)
    new = [yk * math.exp(-eta * (gk - gmin)) for yk, gk in zip(y, g)]
    total = sum(new)
    return [v / total for v in new]


def _slope(g, d):
    gmin = min(g)
    return sum((gk - gmin) * dk for gk, dk in zip(g, d))


def _gap(y, g):
    gmin = min(g)
    return sum(yk * (gk - gmin) for yk, gk in zip(y, g))


def _cap(g, eta):
    spread = max(g) - min(g)
    return MAX_EXPONENT / spread if spread * eta > MAX_EXPONENT else eta


def _expgrad(y, grad, delta, stop, max_iter, step, lift):
    """Exponentiated gradient with the kernels' line search; ``delta(y, d)`` is f(y+d) - f(y)."""
    g = grad(y)
    if lift > 0 and not _gap(y, g) < stop:
        y = [(1.0 - lift) * v + lift / len(y) for v in y]
        g = grad(y)
    eta = step
    it = 0
    while True:
        if _gap(y, g) < stop:
            return y, it, True
        if it >= max_iter:
            return y, it, False
        eta = _cap(g, eta)
        for _ in range(MAX_HALVINGS):
            y_new = _eg_step(y, g, eta)
            d = [a - b for a, b in zip(y_new, y)]
            gd = _slope(g, d)
            # The kernels' correction for the rounding in Σd (see _recover_slope).
            if delta(y, d) - min(g) * sum(d) <= ARMIJO_C1 * gd:
                break
            eta *= 0.5
        else:
            return y, it, False
        it += 1
        g_new = grad(y_new)
        if _slope(g_new, d) < WOLFE_C2 * gd:
            eta *= 2.0
        y, g = y_new, g_new


def naive_expgrad_l2(G, H, vnorm2, init, rows, tol, max_iter, step, lift):
    """Twin of ``recover_expgrad_l2``: loss ``yᵀGy - 2hᵀy`` (+ const) per word."""
    V, K = H.shape
    G = G.tolist()
    coef = np.zeros((V, K))
    n_iter = np.zeros(V, dtype=np.int64)
    conv = np.zeros(V, dtype=bool)
    for i in rows:
        h = H[i].tolist()

        def grad(y, h=h):
            Gy = _matvec(G, y)
            return [2.0 * (Gy[k] - h[k]) for k in range(K)]

        def delta(y, d, h=h):
            return _dot(grad(y), d) + _dot(d, _matvec(G, d))

        y, it, ok = _expgrad(init[i].tolist(), grad, delta, tol * vnorm2[i], max_iter, step, lift)
        coef[i], n_iter[i], conv[i] = y, it, ok
    return coef, n_iter, conv


def naive_expgrad_kl(C, p, Ut, valid, init, rows, tol, max_iter, step, lift):
    """Twin of ``recover_expgrad_kl``: loss ``KL(C_i / p_i ‖ Uᵀy)`` over covered support columns."""
    V = C.shape[0]
    K = Ut.shape[1]
    coef = np.zeros((V, K))
    n_iter = np.zeros(V, dtype=np.int64)
    conv = np.zeros(V, dtype=bool)
    for i in rows:
        cols = [j for j in range(V) if C[i, j] > 0 and valid[j]]
        v = [C[i, j] / p[i] for j in cols]
        U = [Ut[j].tolist() for j in cols]

        def resid(y, U=U):
            return [_dot(row, y) for row in U]

        def grad(y, U=U, v=v):
            r = resid(y)
            return [-sum(v[c] * U[c][k] / r[c] for c in range(len(v))) for k in range(K)]

        def delta(y, d, v=v):
            r = resid(y)
            s = resid(d)
            if any(sc / rc <= -1.0 for sc, rc in zip(s, r)):
                return math.inf
            return -sum(v[c] * math.log1p(s[c] / r[c]) for c in range(len(v)))

        y0 = init[i].tolist()
        lift_i = lift
        if not all(rc > 0 for rc in resid(y0)):
            # An uncovered support column: lift before the first gradient (once), as the
            # kernel does.
            y0 = [(1.0 - lift) * v_ + lift / K for v_ in y0]
            lift_i = 0.0
        y, it, ok = _expgrad(y0, grad, delta, tol, max_iter, step, lift_i)
        coef[i], n_iter[i], conv[i] = y, it, ok
    return coef, n_iter, conv


def naive_admm_dr(G, H, F, G_pinv, init, use_init, rows, lam, gamma, tol, max_iter):
    """Twin of ``recover_admm_dr``: JSMF Algorithm 3 word by word."""
    V, K = H.shape
    coef = np.zeros((V, K))
    n_iter = np.zeros(V, dtype=np.int64)
    conv = np.zeros(V, dtype=bool)
    for i in rows:
        h = H[i]
        f = gamma * h
        y = naive_project_simplex(G_pinv @ h)
        q = y.copy()
        if use_init:
            w = naive_project_simplex(init[i])
            if 0.5 * w @ G @ w - h @ w < 0.5 * y @ G @ y - h @ y:
                y = w
            q = y - gamma * (G @ y - h)
        it = 0
        ok = False
        if use_init:
            exact = naive_active_set(G, h, naive_project_simplex(init[i]), tol)
            if exact is not None:
                y, ok = exact, True
        while not ok and it < max_iter:
            p = F @ (2.0 * y - q + f)
            q = q + lam * (p - y)
            y_new = naive_project_simplex(q)
            it += 1
            change = max(np.abs(y_new - y).max(), np.abs(p - y).max())
            y = y_new
            if change < tol:
                ok = True
                break
            if it & (it - 1) == 0:  # iterations 1, 2, 4, ...: the support, solved exactly
                exact = naive_active_set(G, h, y, tol)
                if exact is not None:
                    y, ok = exact, True
        coef[i], n_iter[i], conv[i] = y, it, ok
    return coef, n_iter, conv


def naive_active_set(G, h, start, tol, max_steps=10):
    """Twin of ``_recover_active_set``: the simplex minimizer of ``½yᵀGy − hᵀy`` by an
    active-set search from ``start``'s support (KKT conditions checked), else None."""
    K = len(h)
    S = start > tol
    S[np.argmax(start)] = True
    for _ in range(max_steps):
        idx = np.flatnonzero(S)
        m = idx.size
        if m == 0 or not np.abs(G[np.ix_(idx, idx)]).max() > 0:
            return None
        A = np.zeros((m + 1, m + 1))
        A[:m, :m] = G[np.ix_(idx, idx)]
        A[:m, m] = A[m, :m] = 1.0
        try:
            sol = np.linalg.solve(A, np.append(h[idx], 1.0))
        except np.linalg.LinAlgError:
            return None
        y = np.zeros(K)
        y[idx] = sol[:m]
        if np.any(sol[:m] <= 0):
            S[idx[sol[:m] <= 0]] = False
            continue
        nu = (G @ y - h + sol[m]) / np.maximum(np.diag(G), 1e-300)
        violated = ~S & (nu < -tol)
        if not violated.any():
            return y
        S |= violated
    return None


def exact_simplex_least_squares(G, h):
    """Exact minimizer of ``yᵀGy - 2hᵀy`` on the simplex, by enumerating supports (tiny K only).

    For each support, the stationary point of the equality-constrained problem is a linear
    solve; the minimizer is the feasible one (all entries >= 0) of least objective.
    """
    K = len(h)
    best, best_val = None, np.inf
    for size in range(1, K + 1):
        for support in itertools.combinations(range(K), size):
            s = list(support)
            # KKT of min yᵀG_ss y - 2h_sᵀy s.t. 1ᵀy = 1:  [2G_ss 1; 1ᵀ 0] [y; μ] = [2h_s; 1].
            M = np.zeros((size + 1, size + 1))
            M[:size, :size] = 2.0 * G[np.ix_(s, s)]
            M[:size, size] = 1.0
            M[size, :size] = 1.0
            rhs = np.concatenate([2.0 * h[s], [1.0]])
            try:
                sol = np.linalg.solve(M, rhs)
            except np.linalg.LinAlgError:
                continue
            if np.any(sol[:size] < -1e-12):
                continue
            y = np.zeros(K)
            y[s] = np.clip(sol[:size], 0.0, None)
            y /= y.sum()
            val = y @ G @ y - 2.0 * h @ y
            if val < best_val - 1e-15:
                best, best_val = y, val
    return best
