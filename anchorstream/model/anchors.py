"""Anchor words: the rows of the row-normalised co-occurrence that span all the others.

Under separability every row of ``C̄`` (``C`` with rows scaled to sum to 1, row ``i`` being
``p(w₂ | w₁ = i)``) is a convex combination of the ``K`` anchor rows, so the anchors are the
vertices of the convex hull of the rows. Both finders here pick them greedily, each time the row
farthest from the span of the rows picked so far:

* :func:`pivoted_qr_anchors` — JSMF Algorithm 2, sparse implicit column-pivoted QR, on the rows
  of ``C̄`` themselves. ``C`` is never modified or normalised into a copy: products with
  ``C̄ = D⁻¹ C`` are products with ``C`` scaled afterwards, so a scipy.sparse ``C`` stays sparse.
* :func:`fast_anchor_words` — Arora et al. 2013 Algorithm 4, FastAnchorWords: the same greedy
  search on a Gaussian random projection of the rows, followed by the cleanup pass that revisits
  each anchor and replaces it by the row farthest from the span of the others.

Both keep an explicit orthonormal basis ``Q`` of the span of the picked rows (``d × k``), the
coordinates ``Y = X Q`` of every row and the squared distances ``u`` of every row to the span.
Picking a row costs one product of the rows with a vector; the cleanup pass and warm starts need
no more than that (see :class:`_SpanSearch`).

Warm starts (``init``): the initial anchors are taken as the starting span in one block product
(one pass over ``C`` instead of one per anchor), missing anchors are added greedily, and a
cleanup pass revisits every non-pinned anchor. A warm start from anchors that are still the
farthest points, e.g. the true anchors of a separable matrix, therefore returns them unchanged
after a single pass over ``C``; a cold start needs ``K`` passes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dger

from anchorstream._buffers import given_array
from anchorstream.errors import InputError
from anchorstream.model.candidates import (ANCHOR_CANDIDATES, ANCHOR_MIN_DF, ANCHOR_NOISE,
                                           anchor_min_df_for, candidate_words, row_noise)
from anchorstream.model.eigen import residual_basis
from anchorstream.model.lowrank import LowRankCooccurrence

__all__ = ["ANCHOR_CANDIDATES", "ANCHOR_MIN_DF", "ANCHOR_NOISE", "WARM_SWAP_MARGIN",
           "anchor_min_df_for", "candidate_words", "fast_anchor_words", "find_anchors",
           "pivoted_qr_anchors", "row_noise"]

#: A row whose squared distance to the span is below this fraction of the largest squared row
#: norm is treated as lying in the span (rounding level of the running distance updates).
_SPAN_RTOL = 1e-13

#: A cleanup replacement must be farther than the current anchor by this relative margin, so
#: that rounding never swaps an anchor for an equally good row (keeps warm starts stable).
_SWAP_RTOL = 1e-9

#: A warm start keeps an anchor unless a row is farther from the others' span by this relative
#: margin (squared distance): hysteresis that keeps a refresh's anchors and topic ids through
#: near ties and saves a pass per kept anchor (benchmarks/README.md, "Warm refresh ...").
WARM_SWAP_MARGIN = 0.05
#: Anchor positions the cleanup pass tests at once (:meth:`_SpanSearch.cleanup`): a V × this
#: block of distances.
_CLEANUP_BLOCK = 32


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _check_cooccurrence(C, check: bool = True, row_sums=None):
    """``C`` as a float64 ndarray or CSR matrix, and its row sums (``row_sums`` if given);
    ``check=False`` trusts a dense ``C`` to be square and finite (a caller's own, already
    checked, matrix)."""
    if (not check and isinstance(C, np.ndarray) and C.dtype == np.float64 and C.ndim == 2) \
            or isinstance(C, LowRankCooccurrence):
        return C, (np.asarray(C.sum(axis=1)) if row_sums is None
                   else given_array(row_sums, (C.shape[0],), "row_sums"))
    if sp.issparse(C):
        C = sp.csr_matrix(C, dtype=np.float64)
        shape = C.shape
        finite = np.all(np.isfinite(C.data))
    else:
        C = np.asarray(C)
        if not np.issubdtype(C.dtype, np.number) or np.issubdtype(C.dtype, np.complexfloating):
            raise InputError(f"C must hold real numbers, got dtype {C.dtype}")
        C = np.asarray(C, dtype=np.float64)
        shape = C.shape
        finite = C.ndim == 2 and np.all(np.isfinite(C))
    if len(shape) != 2 or shape[0] != shape[1]:
        raise InputError(f"C must be a square 2-D matrix, got shape {shape}")
    if not finite:
        raise InputError("C contains NaN or infinite entries")
    if row_sums is None:
        return C, np.asarray(C.sum(axis=1)).ravel()
    return C, given_array(row_sums, (C.shape[0],), "row_sums")


def _check_noise(noise, V: int):
    """``noise`` as a float64 vector of length ``V`` (or None)."""
    if noise is None:
        return None
    out = np.asarray(noise, dtype=np.float64)
    if out.shape != (V,) or np.any(np.isnan(out)) or np.any(out < 0):
        raise InputError(f"noise must be a vector of {V} non-negative numbers, got shape "
                         f"{out.shape}")
    return out


def _check_indices(values, V: int, name: str) -> np.ndarray:
    try:
        idx = np.asarray(values if values is not None else (), dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InputError(f"{name} must be word indices in [0, {V}), got {values!r}") from None
    if idx.size and (np.any(idx != np.round(idx)) or np.any(idx < 0) or np.any(idx >= V)):
        raise InputError(f"{name} must be word indices in [0, {V}), got {values!r}")
    idx = idx.astype(np.int64)
    if np.unique(idx).size != idx.size:
        raise InputError(f"{name} contains duplicate words: {idx.tolist()}")
    return idx


def _prepare(C, n_topics, candidates, pinned, init, check_input=True, row_sums=None):
    """Validate the common arguments; return what the search needs."""
    C, row_sums = _check_cooccurrence(C, check_input, row_sums)
    V = C.shape[0]
    K = n_topics
    if not isinstance(K, (int, np.integer)) or not 1 <= K <= V:
        raise InputError(f"n_topics must be an integer in [1, {V}], got {K!r}")
    if candidates is None:
        allowed = np.ones(V, dtype=bool)
    else:
        allowed = np.asarray(candidates)
        if allowed.shape != (V,) or allowed.dtype != np.bool_:
            raise InputError(
                f"candidates must be a boolean mask of shape ({V},), got dtype "
                f"{allowed.dtype} and shape {allowed.shape}"
            )
        allowed = allowed.copy()
    pinned = _check_indices(pinned, V, "pinned")
    if pinned.size > K:
        raise InputError(f"{pinned.size} pinned anchors but only n_topics={K} topics")
    not_cand = pinned[~allowed[pinned]]
    if not_cand.size:
        raise InputError(
            f"pinned anchors {not_cand.tolist()} are not candidates (e.g. below the minimum "
            "document frequency); relax the candidate mask or unpin them"
        )
    empty = pinned[row_sums[pinned] <= 0]
    if empty.size:
        raise InputError(f"pinned anchors {empty.tolist()} have no co-occurrence mass (zero rows)")
    # A row without positive mass has no conditional distribution p(w2 | w1), so it cannot be
    # an anchor whatever the mask says.
    allowed &= row_sums > 0
    n_allowed = int(allowed.sum())
    if n_allowed < K:
        raise InputError(
            f"only {n_allowed} candidate words (with non-zero rows) for n_topics={K} anchors; "
            "lower the minimum document frequency or the number of topics"
        )
    if init is not None:
        init = _check_indices(init, V, "init")
        if init.size > K:
            raise InputError(f"init has {init.size} anchors but n_topics={K}")
        # A warm start comes from an earlier model whose candidate set may differ: words that
        # are no longer allowed (or are pinned, hence taken already) are simply not used.
        taken = set(pinned.tolist())
        init = np.array([a for a in init if allowed[a] and a not in taken], dtype=np.int64)
    return C, row_sums, allowed, pinned, init


# --------------------------------------------------------------------------------------------
# The greedy span search shared by both finders
# --------------------------------------------------------------------------------------------


class _SpanSearch:
    """Greedy farthest-from-span search over the rows of ``X = D⁻¹ M`` (or a projection).

    ``M`` is the ``(n, d)`` matrix whose rows, divided by ``scale``, are the points: the
    co-occurrence itself (dense or CSR, ``d = n``) or its random projection. Keeps an
    orthonormal basis ``Q`` (``d × k``) of the span of the chosen rows, the coordinates
    ``Y = X Q`` of all rows and their squared distances ``u`` to the span. ``n_passes`` counts
    products of ``M`` with a vector or block (each is one pass over ``M``).
    """

    def __init__(self, M, scale: np.ndarray, allowed: np.ndarray, n_max: int, sqnorm=None,
                 noise=None):
        self.M = M
        # Subtracted from the squared distances when choosing (never from ``u`` itself).
        self.noise = 0.0 if noise is None else noise
        self.inv = np.zeros_like(scale)
        np.divide(1.0, scale, out=self.inv, where=scale > 0)
        self.allowed = allowed
        n, d = M.shape
        if sqnorm is not None:  # the rows' squared norms, known to the caller
            sq = given_array(sqnorm, (n,), "row_sqnorms")
        elif sp.issparse(M):
            sq = np.asarray(M.multiply(M).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", M, M)
        self.sqnorm = sq * self.inv**2
        self.u = self.sqnorm.copy()
        self.Q = np.zeros((d, n_max))
        self.Y = np.zeros((n, n_max))
        self.k = 0
        self.chosen: list[int] = []
        self.n_passes = 0
        self.tiny = _SPAN_RTOL * max(float(self.sqnorm[allowed].max(initial=0.0)), 1e-300)

    # rows and products of X = D⁻¹ M ----------------------------------------------------------

    def row(self, i: int) -> np.ndarray:
        return self.rows([i])[0]

    def rows(self, idx: Sequence[int]) -> np.ndarray:
        """The rows ``idx`` of ``X``, fetched at once (shape ``(len(idx), d)``)."""
        idx = np.asarray(idx, dtype=np.int64)
        r = self.M[idx]
        r = r.toarray() if sp.issparse(r) else np.array(r, dtype=np.float64)
        return r * self.inv[idx, None]

    def product(self, Z: np.ndarray) -> np.ndarray:
        self.n_passes += 1
        out = self.M @ Z
        return out * (self.inv[:, None] if out.ndim == 2 else self.inv)

    # basis updates ----------------------------------------------------------------------------

    def _residual(self, x: np.ndarray, upto: int) -> np.ndarray:
        """``x`` minus its projection on the first ``upto`` basis vectors, twice (CGS2)."""
        Q = self.Q[:, :upto]
        for _ in range(2):
            x = x - Q @ (Q.T @ x)
        return x

    def extend(self, words: Sequence[int], *, strict: bool) -> list[int]:
        """Add rows to the span with a single block product; return the words added.

        A row (numerically) in the span of those before it is skipped, or with ``strict`` an
        error; rows beyond the span's capacity are ignored.
        """
        start = self.k
        added = []
        # Every row at once: one product for the low-rank matrix's rows instead of one each.
        fetched = self.rows(list(words)[: self.Q.shape[1] - start]) if len(words) else None
        block = (residual_basis(fetched, self.Q[:, :start], self.tiny)
                 if fetched is not None and fetched.shape[0] > 1 else None)
        if block is not None:  # every row adds a direction: their basis as a block
            m = block[0].shape[1]
            self.Q[:, start : start + m] = block[0]
            self.k += m
            added = [int(w) for w in list(words)[:m]]
            self.chosen.extend(added)
            words = ()
        for at, w in enumerate(words):
            if self.k == self.Q.shape[1]:
                break  # the span is full: pinned words and an init of K others, say
            x = fetched[at] if at < fetched.shape[0] else self.row(w)
            q = self._residual(x, self.k)
            r2 = float(q @ q)
            if r2 <= self.tiny:
                if strict:
                    raise InputError(
                        f"anchor {w} is (numerically) a combination of the anchors before it"
                    )
                continue
            self.Q[:, self.k] = q / np.sqrt(r2)
            self.k += 1
            self.chosen.append(int(w))
            added.append(int(w))
        if self.k > start:
            Yn = self.product(self.Q[:, start : self.k])
            self.Y[:, start : self.k] = Yn
            self.u -= np.einsum("ij,ij->i", Yn, Yn)
            self._mark_chosen()
        return added

    def _mark_chosen(self) -> None:
        self.u[self.chosen] = 0.0

    def pick_next(self) -> int:
        """Add the allowed row farthest from the span (JSMF Alg. 2, lines 4-7)."""
        score = np.where(self.allowed, self.u, -np.inf)
        score[self.chosen] = -np.inf
        n = int(np.argmax(score - self.noise))
        if not score[n] > self.tiny:
            raise InputError(
                f"the candidate rows span only {self.k} dimensions, fewer than the "
                f"{self.Q.shape[1]} anchors requested; use fewer topics or more candidates"
            )
        q = self._residual(self.row(n), self.k)
        q /= np.linalg.norm(q)
        self.Q[:, self.k] = q
        y = self.product(q)
        self.Y[:, self.k] = y
        self.u -= y * y
        self.k += 1
        self.chosen.append(n)
        self._mark_chosen()
        return n

    def cleanup(self, positions: Sequence[int], margin: float = _SWAP_RTOL) -> None:
        """Arora et al. Alg. 4, second loop, for the anchors at the given positions.

        A replacement must be farther than the anchor by the relative ``margin``.

        The span of all anchors but ``i`` is the full span minus one direction ``w`` (in basis
        coordinates, the unit vector orthogonal to the other anchors' coordinates), so the
        squared distance of every row to it is ``u + (Y w)²``: no pass over ``M`` unless the
        anchor is replaced. A replacement rotates the basis by a Householder reflection that
        sends ``w`` to the last basis vector, which is then swapped for the new row's residual
        (one product).

        Positions are tested a block at a time (:data:`_CLEANUP_BLOCK`): until one is replaced
        nothing changes, so the block's directions come from one solve and their distances
        from one product; after a replacement the test goes on from the next position, as
        the loop one position at a time did (a warm refresh tests 50 and replaces 0-8; the
        tests took 13 ms of its cleanup one position at a time, 6 ms so, at V = 5000).
        """
        K = self.k
        pending = list(positions)
        noise = np.asarray(self.noise, dtype=np.float64)
        noise = noise[:, None] if noise.ndim else noise
        while pending:
            block = pending[:_CLEANUP_BLOCK]
            S = np.asarray(self.chosen)
            G = self.Y[S, :K]  # anchor coordinates, one row per anchor
            E = np.zeros((K, len(block)))
            E[block, np.arange(len(block))] = 1.0
            try:
                W = np.linalg.solve(G, E)  # columns of G⁻¹: orthogonal to the other rows
            except np.linalg.LinAlgError:
                W = np.linalg.lstsq(G, E, rcond=None)[0]
            W /= np.linalg.norm(W, axis=0)
            YW = self.Y[:, :K] @ W
            score = np.where(self.allowed[:, None], self.u[:, None] + YW * YW - noise, -np.inf)
            current = S[block]
            mine = score[current, np.arange(len(block))]
            score[S] = -np.inf  # every anchor but each position's own
            score[current, np.arange(len(block))] = mine
            best = np.argmax(score, axis=0)
            gain = score[best, np.arange(len(block))]
            with np.errstate(invalid="ignore"):  # an anchor outside `allowed` stays: -inf + inf
                swap = (best != current) & (gain > mine + margin * np.abs(mine))
            if not swap.any():
                pending = pending[len(block):]
                continue
            j = int(np.argmax(swap))  # the first position replaced
            self._replace(block[j], int(best[j]), W[:, j])
            pending = pending[j + 1 :]

    def _replace(self, pos: int, n: int, w: np.ndarray) -> None:
        """Anchor ``n`` for the one at ``pos``, whose direction in basis coordinates is ``w``."""
        K = self.k
        # Householder H with H w = ±e_K: H is symmetric orthogonal, Q H spans the same space
        # and its last column is ±Q w, the direction to drop.
        v = w.copy()
        v[-1] += np.copysign(1.0, w[-1])
        v /= np.linalg.norm(v)
        _reflect(self.Q[:, :K], v)
        _reflect(self.Y[:, :K], v)
        self.u += self.Y[:, K - 1] ** 2
        q = self._residual(self.row(n), K - 1)
        q /= np.linalg.norm(q)
        self.Q[:, K - 1] = q
        y = self.product(q)
        self.Y[:, K - 1] = y
        self.u -= y * y
        self.chosen[pos] = n
        self._mark_chosen()


def _reflect(X: np.ndarray, v: np.ndarray) -> None:
    """``X ← X − 2 (X v) vᵀ`` in place (a Householder reflection of ``X``'s columns), by
    BLAS's rank-one update on ``Xᵀ``: no ``X``-sized temporary (V = 5107, K = 50: 1.1 →
    0.23 ms, two of them a replaced anchor)."""
    out = dger(-2.0, v, X @ v, a=X.T, overwrite_a=True)
    if not np.shares_memory(out, X):  # X was not laid out for an update in place
        X[...] = out.T


def _search(X, scale, allowed, pinned, init, K, *, cleanup: bool, sqnorm=None,
            noise=None, margin: float = _SWAP_RTOL) -> _SpanSearch:
    """Pinned first, then ``init``, then greedy up to ``K``; then the optional cleanup pass."""
    s = _SpanSearch(X, scale, allowed, K, sqnorm, _check_noise(noise, X.shape[0]))
    s.extend(pinned.tolist(), strict=True)
    if init is not None and init.size:
        s.extend(init.tolist(), strict=False)
    while s.k < K:
        s.pick_next()
    if cleanup:
        s.cleanup(range(pinned.size, K), margin)
    return s


# --------------------------------------------------------------------------------------------
# Public finders
# --------------------------------------------------------------------------------------------


def pivoted_qr_anchors(
    C,
    n_topics: int,
    *,
    candidates: np.ndarray | None = None,
    pinned: Sequence[int] = (),
    init: Sequence[int] | None = None,
    check_input: bool = True,
    row_sums: np.ndarray | None = None,
    row_sqnorms: np.ndarray | None = None,
    return_products: bool = False,
    noise: np.ndarray | None = None,
    swap_margin: float | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Anchor words by sparse implicit column-pivoted QR (JSMF Algorithm 2).

    Greedily picks the candidate row of ``C̄`` (``C`` row-normalised) with the largest squared
    distance ``u`` to the span of the rows picked so far, then updates ``u`` implicitly,
    ``u ← u − (C̄ q)²`` with ``q`` the new orthonormal direction: one product with ``C`` per
    anchor, ``O(VK)`` extra memory, ``C`` never modified (a scipy.sparse ``C`` stays sparse).

    Parameters
    ----------
    C : ndarray or sparse matrix of shape (n_words, n_words)
        Co-occurrence matrix (rectified or not); row-normalised internally. Rows with no
        positive mass are never anchors.
    n_topics : int
        Number of anchors ``K``.
    candidates : ndarray of shape (n_words,), bool, optional
        Only these words may be anchors (see :func:`candidate_words`). Default: all.
    pinned : sequence of int
        Words that must be anchors; they come first in the result, in this order, and are never
        replaced.
    init : sequence of int, optional
        Warm start, e.g. the previous model's anchors: after the pinned words they are taken as
        the starting span (one block product), further anchors are added greedily, then one
        cleanup pass (as in :func:`fast_anchor_words`) replaces any that is no longer the
        farthest row from the span of the others by ``swap_margin``. Entries that are not
        (non-empty) candidates or are pinned are ignored. The result keeps their order.
    check_input : bool
        False skips the scan of a dense float64 ``C`` for NaN and infinite entries: for a
        matrix the caller produced and checked itself (``AnchorModel.fit``'s rectified one).
    row_sums, row_sqnorms : ndarray of shape (n_words,), optional
        ``C``'s row sums and squared row norms when the caller has them (a
        :class:`~anchorstream.model.rectify.RectifyResult` carries both): each saves a pass over a
        dense ``C``. Trusted as given.
    return_products : bool
        Also return ``C̄ C̄_Sᵀ``, every row-normalised row's inner products with the anchors'
        rows, which the recovery needs (``recover(anchor_products=...)``). The search keeps
        every row's coordinates ``Y = C̄ Q`` in an orthonormal basis ``Q`` of the anchors'
        rows, so the products are ``Y Y_Sᵀ``: ``O(V K²)`` instead of a product with ``C``.
    noise : ndarray of shape (n_words,), optional
        Taken off each row's squared distance to the span when choosing (greedy and cleanup
        steps alike): the rows' expected squared sampling error (:func:`row_noise`), so the
        search compares estimates of the true distances. Default: nothing.
    swap_margin : float
        With ``init``, the cleanup replaces an anchor only by a row farther from the span of
        the others by this relative margin (squared distance; >= 0; None: :data:`WARM_SWAP_MARGIN`).

    Returns
    -------
    anchors : ndarray of shape (n_topics,), int64
        Anchor word indices: pinned, then from ``init``, then in the order found.
    products : ndarray of shape (n_words, n_topics)
        With ``return_products``: ``C̄ C̄_Sᵀ``, column ``k`` for anchor ``k``.

    Raises
    ------
    InputError
        Bad shapes or values, fewer candidates than ``n_topics``, pinned words that are not
        candidates, duplicates in ``pinned`` or ``init``, or candidates spanning fewer than
        ``n_topics`` dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[4., 0., 2.], [0., 4., 2.], [2., 2., 4.]])
    >>> pivoted_qr_anchors(C, 2)
    array([0, 1])
    """
    C, row_sums, allowed, pinned, init = _prepare(C, n_topics, candidates, pinned, init,
                                                  check_input, row_sums)
    if swap_margin is None:
        swap_margin = WARM_SWAP_MARGIN
    if not (isinstance(swap_margin, (int, float, np.floating)) and swap_margin >= 0):
        raise InputError(f"swap_margin must be a number >= 0, got {swap_margin!r}")
    s = _search(C, row_sums, allowed, pinned, init, n_topics, cleanup=init is not None,
                sqnorm=row_sqnorms, noise=noise, margin=max(float(swap_margin), _SWAP_RTOL))
    anchors = np.asarray(s.chosen, dtype=np.int64)
    if not return_products:
        return anchors
    # The anchors' rows lie in span(Q): C̄_S = Y_S Qᵀ, so C̄ C̄_Sᵀ = C̄ Q Y_Sᵀ = Y Y_Sᵀ.
    Y = s.Y[:, : s.k]
    return anchors, Y @ Y[anchors].T


def fast_anchor_words(
    C,
    n_topics: int,
    *,
    candidates: np.ndarray | None = None,
    pinned: Sequence[int] = (),
    init: Sequence[int] | None = None,
    projection_dim: int | None = 1000,
    random_state: int | np.random.Generator | None = None,
    check_input: bool = True,
    row_sums: np.ndarray | None = None,
    row_sqnorms: np.ndarray | None = None,
    noise: np.ndarray | None = None,
) -> np.ndarray:
    """Anchor words by FastAnchorWords (Arora et al. 2013, Algorithm 4).

    Row-normalises ``C``, projects the rows to ``projection_dim`` dimensions with a Gaussian
    random matrix (entries ``N(0, 1/projection_dim)``), picks the row farthest from the origin,
    then repeatedly the row farthest from the span of those picked (Gram–Schmidt), and finally
    runs the cleanup pass: each anchor in turn is replaced by the row farthest from the span of
    the other ``K − 1``.

    Parameters
    ----------
    C : ndarray or sparse matrix of shape (n_words, n_words)
        Co-occurrence matrix; row-normalised internally.
    n_topics : int
        Number of anchors ``K``.
    candidates : ndarray of shape (n_words,), bool, optional
        Only these words may be anchors. Default: all.
    pinned : sequence of int
        Words that must be anchors; first in the result, in this order, never replaced.
    init : sequence of int, optional
        Warm start: taken as the starting span after the pinned words (instead of the greedy
        phase; missing anchors are added greedily), then the cleanup pass runs as usual.
        Entries that are not candidates or are pinned are ignored.
    projection_dim : int or None
        Dimension of the random projection (the paper's practical choice is 1000). ``None`` or
        a value ``>= n_words`` uses the rows unprojected.
    random_state : int, Generator or None
        Seeds the projection.
    check_input, row_sums, row_sqnorms
        As for :func:`pivoted_qr_anchors` (``row_sqnorms`` is used only without projection).
    noise : ndarray of shape (n_words,), optional
        As for :func:`pivoted_qr_anchors` (a random projection keeps squared distances in
        expectation).

    Returns
    -------
    ndarray of shape (n_topics,), int64

    Raises
    ------
    InputError
        As :func:`pivoted_qr_anchors`, or ``projection_dim < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[4., 0., 2.], [0., 4., 2.], [2., 2., 4.]])
    >>> sorted(fast_anchor_words(C, 2, random_state=0).tolist())
    [0, 1]
    """
    C, row_sums, allowed, pinned, init = _prepare(C, n_topics, candidates, pinned, init,
                                                  check_input, row_sums)
    V = C.shape[0]
    if projection_dim is not None:
        if not isinstance(projection_dim, (int, np.integer)) or projection_dim < 1:
            raise InputError(f"projection_dim must be a positive integer or None, got "
                             f"{projection_dim!r}")
    if projection_dim is None or projection_dim >= V:
        X = C
    else:
        row_sqnorms = None  # those of C, not of its projection
        rng = np.random.default_rng(random_state)
        R = rng.standard_normal((V, projection_dim))
        R *= 1.0 / np.sqrt(projection_dim)
        # Projecting C and scaling rows afterwards equals projecting the normalised rows.
        X = np.asarray(C @ R)
    s = _search(X, row_sums, allowed, pinned, init, n_topics, cleanup=True, sqnorm=row_sqnorms,
                noise=noise)
    return np.asarray(s.chosen, dtype=np.int64)


def find_anchors(C, n_topics: int, *, method: str = "qr", **kwargs) -> np.ndarray:
    """Dispatch to :func:`pivoted_qr_anchors` (``"qr"``) or :func:`fast_anchor_words` (``"fast"``).

    Parameters
    ----------
    C : ndarray or sparse matrix of shape (n_words, n_words)
    n_topics : int
    method : {"qr", "fast"}
    **kwargs
        Passed on (``candidates``, ``pinned``, ``init``, ``noise``; for ``"fast"`` also
        ``projection_dim`` and ``random_state``).

    Returns
    -------
    ndarray of shape (n_topics,), int64
    """
    if method == "qr":
        return pivoted_qr_anchors(C, n_topics, **kwargs)
    if method == "fast":
        return fast_anchor_words(C, n_topics, **kwargs)
    raise InputError(f"method must be 'qr' or 'fast', got {method!r}")
