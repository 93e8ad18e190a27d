"""The original Recover by matrix inversion (Arora et al. 2012b), the baseline of
:func:`anchorstream.model.recover.recover` ``method="inverse"``."""

from __future__ import annotations

import numpy as np

from anchorstream.errors import InputError

__all__ = ["recover_inverse"]

# Anchor blocks worse conditioned than this are refused (solutions would be rounding noise).
_MAX_CONDITION = 1e12


def recover_inverse(C: np.ndarray, total: float, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arora et al. 2012b Recover by matrix inversion (Algorithm 2 of Arora 2013).

    With ``Q = B R Bᵀ`` and the anchor block ``Q_SS = D R D`` (``D = diag(B[s_k, k])``):
    ``z = Q_SS⁻¹ Q_S 1 = D⁻¹ 1``, then ``Bᵀ = (Q_SS diag z)⁻¹ Q_S`` and
    ``R = diag(z) Q_SS diag(z)``. On noisy data ``B`` comes out with negative entries; they are
    clipped to zero and the columns renormalized (the projection the papers describe). The
    coefficients are ``p(z | w) ∝ B[w, k] p(z = k)`` with ``p(z) = R 1`` (clipped likewise).
    ``topic_word`` is the inverted ``B`` itself, not re-derived from ``coef``: this is the
    baseline as published.

    ``C`` is the co-occurrence (only its anchor rows are read), ``total`` its sum and ``S`` the
    anchors. Returns ``(topic_word, coef)``, anchor rows of ``coef`` unit vectors; raises
    InputError for a singular anchor block or a topic left without non-negative mass.
    """
    K = S.size
    Q_S = C[S] / total  # only the anchor rows are ever needed
    Q_SS = Q_S[:, S]
    # numpy's solve, not scipy's: scipy warns on ill-conditioning, and a warning is not the way
    # a library should refuse; the condition number is checked here instead.
    cond = np.linalg.cond(Q_SS)
    if not cond < _MAX_CONDITION:
        raise InputError(
            f"the anchor block C[S, S] is singular (condition number {cond:.3g}); the anchors "
            "are not independent, so matrix inversion cannot recover topics from them"
        )
    z = np.linalg.solve(Q_SS, Q_S.sum(axis=1))
    Bt = np.linalg.solve(Q_SS * z[None, :], Q_S)
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(Bt))):
        raise InputError("the anchor block C[S, S] is singular; the anchors are not independent")
    B = np.clip(Bt.T, 0.0, None)
    mass = B.sum(axis=0)
    if np.any(mass <= 0):
        raise InputError(
            f"matrix inversion left topics {np.flatnonzero(mass <= 0).tolist()} with no "
            "non-negative mass; use a non-negative recovery method"
        )
    B /= mass
    prior = np.clip((z[:, None] * Q_SS * z[None, :]).sum(axis=1), 0.0, None)
    if prior.sum() <= 0:
        prior = np.full(K, 1.0 / K)
    coef = B * prior[None, :]
    sums = coef.sum(axis=1)
    empty = sums <= 0
    coef[empty] = 1.0 / K
    sums[empty] = 1.0
    coef /= sums[:, None]
    coef[S] = 0.0
    coef[S, np.arange(K)] = 1.0
    return B, coef
