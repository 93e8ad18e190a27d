"""Anderson acceleration (type II, Walker & Ni 2011) of alternating projection's fixed-point map."""

from __future__ import annotations

import numpy as np

__all__ = ["AndersonMixer"]


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

