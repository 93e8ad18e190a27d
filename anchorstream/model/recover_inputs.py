"""What :mod:`anchorstream.model.recover` checks of its inputs before it solves: the
co-occurrence (square, finite, non-negative up to rounding, not all zero; a low-rank rectified
matrix as it is), the anchors (distinct word indices), the groups that stand in for anchors, a
warm start (rows on the simplex, a new word's row uniform) and the method with its column
weighting. Each raises :class:`~anchorstream.errors.InputError` naming what is wrong."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.model.lowrank import LowRankCooccurrence
from anchorstream.model.registry import RECOVER_WEIGHTS

__all__ = ["NEGATIVE_SLACK", "check_method", "checked_anchors", "checked_cooccurrence",
           "checked_groups", "checked_init"]

# Negative entries of C down to this fraction of its largest entry are rounding and are clipped.
NEGATIVE_SLACK = 1e-12


def checked_cooccurrence(C, check: bool = True) -> np.ndarray | LowRankCooccurrence:
    """``C`` as recovery reads it: a float64 array (negative rounding clipped), or a low-rank
    rectified matrix as it is; with ``check`` False a float64 2-D array is taken unchecked."""
    if not check and isinstance(C, np.ndarray) and C.dtype == np.float64 and C.ndim == 2:
        return C
    if isinstance(C, LowRankCooccurrence):
        return C  # rectified: its rows are what recovery reads, through C[S] and C @ Z
    if sp.issparse(C):
        C = C.toarray()
    # No contiguous copy here (a V×V copy is 200 MB at V = 5000); only the KL kernel needs one.
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"C must be a square (V, V) matrix, got shape {C.shape}")
    if not np.all(np.isfinite(C)):
        raise InputError("C contains NaN or infinite entries")
    lowest = C.min() if C.size else 0.0
    if lowest < 0:
        # The estimator's diagonal (h² - h) w can come out at -1e-24 by rounding; that is zero.
        if lowest < -NEGATIVE_SLACK * np.abs(C).max():
            raise InputError(
                f"C has negative entries (min {lowest:.3g}); recovery needs a non-negative "
                "co-occurrence: rectify it first or clip it"
            )
        C = np.clip(C, 0.0, None)
    if C.sum() <= 0:
        raise InputError("C sums to zero: there is no co-occurrence to recover topics from")
    return C


def checked_anchors(anchors, V: int) -> np.ndarray:
    """The anchors as distinct int64 word indices in ``[0, V)``."""
    a = np.asarray(anchors)
    if a.ndim != 1 or a.size == 0:
        raise InputError(
            f"anchors must be a non-empty 1-D array of word indices, got shape {a.shape}"
        )
    if not np.issubdtype(a.dtype, np.integer):
        if np.issubdtype(a.dtype, np.floating) and np.all(a == np.round(a)):
            a = a.astype(np.int64)
        else:
            raise InputError(f"anchors must be integer word indices, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if a.min() < 0 or a.max() >= V:
        raise InputError(f"anchors must lie in [0, {V}), got min {a.min()} and max {a.max()}")
    if np.unique(a).size != a.size:
        raise InputError(f"anchors must be distinct, got {a.tolist()}")
    if a.size > V:
        raise InputError(f"more anchors ({a.size}) than words ({V})")
    return a


def checked_init(init, V: int, K: int) -> np.ndarray:
    """A warm start as a fresh C-ordered ``(V, K)`` array whose rows lie on the simplex."""
    # C order whatever the caller's: the kernels take it so, and an F-ordered start (a warm
    # refresh's columns picked by fancy indexing) compiled them a second time (ADMM's: 7.5
    # CPU s on a first warm refresh, session 87).
    y = np.array(init, dtype=np.float64, order="C", copy=True)
    if y.shape != (V, K):
        raise InputError(
            f"init must be the coefficient matrix of shape (n_words, n_topics) = ({V}, {K}), "
            f"got {y.shape}"
        )
    if not np.all(np.isfinite(y)) or y.min() < 0:
        raise InputError("init must be finite and non-negative (rows on the simplex)")
    sums = y.sum(axis=1)
    # A zero row (a word new since the previous model) carries no information: start it uniform.
    y[sums <= 0] = 1.0 / K
    sums[sums <= 0] = 1.0
    return y / sums[:, None]


def check_method(method: str, weights: str, allowed: tuple, why: str = "") -> None:
    """Refuses a method outside ``allowed`` (``why`` says why) and a weighting it does not take."""
    if method not in allowed:
        raise InputError(f"method must be one of {allowed}{why}, got {method!r}")
    if weights not in RECOVER_WEIGHTS:
        raise InputError(f"weights must be one of {RECOVER_WEIGHTS}, got {weights!r}")
    if weights != "none" and method != "admm":
        raise InputError(f"weights={weights!r} applies to method 'admm' only; method "
                         f"{method!r} keeps its paper's loss (use weights='none')")


def checked_groups(groups, V: int) -> list[np.ndarray]:
    """The groups as sorted, distinct int64 word indices in ``[0, V)``, none empty."""
    try:
        out = [np.asarray(g).ravel() for g in groups]
    except TypeError:
        raise InputError("groups must be a sequence of arrays of word indices") from None
    if not out:
        raise InputError("groups must hold at least one group")
    for k, g in enumerate(out):
        if g.size == 0 or not np.issubdtype(g.dtype, np.integer):
            raise InputError(f"group {k} must be a non-empty array of integer word indices, "
                             f"got {g!r}")
        if g.min() < 0 or g.max() >= V:
            raise InputError(f"group {k}'s words must lie in [0, {V}), got min {g.min()} and "
                             f"max {g.max()}")
    if len(out) > V:
        raise InputError(f"more groups ({len(out)}) than words ({V})")
    return [np.unique(g.astype(np.int64)) for g in out]
