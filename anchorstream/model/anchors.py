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

from anchorstream._buffers import given_array
from anchorstream.errors import InputError
from anchorstream.model.lowrank import LowRankCooccurrence

__all__ = ["ANCHOR_CANDIDATES", "ANCHOR_MIN_DF", "WARM_SWAP_MARGIN", "anchor_min_df_for",
           "candidate_words", "fast_anchor_words", "find_anchors", "pivoted_qr_anchors"]

#: Default minimum document frequency of an anchor word: an anchor's row is estimated from the
#: documents it is in, and hull vertices are where noise throws rows of few documents (at 10,
#: 7 of 100 topics of npm summaries were dead). 100 was best or near it on four real corpora
#: (docs/algorithms.md). A count, not a share: a row's reliability is the number of documents
#: behind it; a small corpus falls back to fewer (:func:`anchor_min_df_for`).
ANCHOR_MIN_DF = 100

#: :func:`anchor_min_df_for` keeps at least this many candidates per topic.
_CANDIDATES_PER_TOPIC = 2

#: Default cap on the anchor candidates per topic (:func:`anchor_min_df_for`): the farthest of
#: thousands of rows of a large corpus is a noisy one (docs/algorithms.md; benchmarks/README.md,
#: "Anchor candidates").
ANCHOR_CANDIDATES = 40

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


def candidate_words(doc_freq, min_df: float) -> np.ndarray:
    """Words frequent enough to be anchors.

    Anchor words are vertices of the convex hull of the rows of ``C̄``, and rare words are
    where sampling noise throws rows far out: a minimum document frequency keeps the search to
    rows estimated from enough documents.

    Parameters
    ----------
    doc_freq : array-like of shape (n_words,)
        Number of documents containing each word.
    min_df : float
        Minimum document frequency of a candidate (``>= 0``).

    Returns
    -------
    ndarray of shape (n_words,), bool
        ``doc_freq >= min_df``.

    Raises
    ------
    InputError
        If ``doc_freq`` is not a finite non-negative vector or ``min_df`` is negative.

    Examples
    --------
    >>> candidate_words([3, 0, 12, 5], 5)
    array([False, False,  True,  True])
    """
    df = np.asarray(doc_freq)
    if df.ndim != 1 or not np.issubdtype(df.dtype, np.number):
        raise InputError(f"doc_freq must be a 1-D numeric array, got shape {df.shape}")
    df = df.astype(np.float64)
    if not np.all(np.isfinite(df)) or np.any(df < 0):
        raise InputError("doc_freq must contain finite non-negative counts")
    if not np.isfinite(min_df) or min_df < 0:
        raise InputError(f"min_df must be a finite number >= 0, got {min_df!r}")
    return df >= min_df


def anchor_min_df_for(doc_freq, n_topics: int, min_df: float,
                      per_topic: int = 0) -> float:
    """The document frequency an anchor needs here: ``min_df``; less where a small corpus
    has fewer than ``2 n_topics`` words that frequent; more where ``per_topic > 0`` and more
    than ``per_topic * n_topics`` words are that frequent.

    The fallback is the document frequency of the ``2 n_topics``-th most frequent word, so the
    search keeps twice as many candidates as topics from the best-estimated rows (and at least
    1: a word that occurs nowhere is never an anchor). The cap is the document frequency of
    the ``per_topic * n_topics``-th most frequent word (words tied with it stay candidates).

    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100)
    100
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 2, 100)
    90.0
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100, per_topic=2)
    300.0
    >>> anchor_min_df_for([500, 300, 120, 90, 40, 8, 0], 1, 100, per_topic=3)
    100
    """
    if per_topic < 0:
        raise InputError(f"per_topic must be >= 0 (0 = no cap), got {per_topic!r}")
    df = np.sort(np.asarray(doc_freq, dtype=np.float64))[::-1]
    reach = np.count_nonzero(df >= min_df)
    cap = max(int(per_topic), _CANDIDATES_PER_TOPIC) * int(n_topics)
    if per_topic and reach > cap:
        return float(df[cap - 1])
    need = _CANDIDATES_PER_TOPIC * int(n_topics)
    if df.size == 0 or reach >= need:
        return min_df
    return float(max(min(min_df, df[min(need, df.size) - 1]), 1.0))


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

    def __init__(self, M, scale: np.ndarray, allowed: np.ndarray, n_max: int, sqnorm=None):
        self.M = M
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
        r = self.M[i]
        r = r.toarray().ravel() if sp.issparse(r) else np.array(r, dtype=np.float64)
        return r * self.inv[i]

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
        for w in words:
            if self.k == self.Q.shape[1]:
                break  # the span is full: pinned words and an init of K others, say
            q = self._residual(self.row(w), self.k)
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
        n = int(np.argmax(score))
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
        """
        K = self.k
        for pos in positions:
            S = np.asarray(self.chosen)
            G = self.Y[S, :K]  # anchor coordinates, one row per anchor
            e = np.zeros(K)
            e[pos] = 1.0
            try:
                w = np.linalg.solve(G, e)  # column pos of G⁻¹: orthogonal to the other rows
            except np.linalg.LinAlgError:
                w = np.linalg.lstsq(G, e, rcond=None)[0]
            w /= np.linalg.norm(w)
            Yw = self.Y[:, :K] @ w
            dist = self.u + Yw * Yw
            score = np.where(self.allowed, dist, -np.inf)
            others = np.delete(S, pos)
            score[others] = -np.inf
            n = int(np.argmax(score))
            current = int(S[pos])
            if n == current or not score[n] > score[current] * (1.0 + margin):
                continue
            # Householder H with H w = ±e_K: H is symmetric orthogonal, Q H spans the same space
            # and its last column is ±Q w, the direction to drop.
            v = w.copy()
            v[-1] += np.copysign(1.0, w[-1])
            v /= np.linalg.norm(v)
            self.Q[:, :K] -= 2.0 * np.outer(self.Q[:, :K] @ v, v)
            self.Y[:, :K] -= 2.0 * np.outer(self.Y[:, :K] @ v, v)
            self.u += self.Y[:, K - 1] ** 2
            q = self._residual(self.row(n), K - 1)
            q /= np.linalg.norm(q)
            self.Q[:, K - 1] = q
            y = self.product(q)
            self.Y[:, K - 1] = y
            self.u -= y * y
            self.chosen[pos] = n
            self._mark_chosen()


def _search(X, scale, allowed, pinned, init, K, *, cleanup: bool, sqnorm=None,
            margin: float = _SWAP_RTOL) -> _SpanSearch:
    """Pinned first, then ``init``, then greedy up to ``K``; then the optional cleanup pass."""
    s = _SpanSearch(X, scale, allowed, K, sqnorm)
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
                sqnorm=row_sqnorms, margin=max(float(swap_margin), _SWAP_RTOL))
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
    s = _search(X, row_sums, allowed, pinned, init, n_topics, cleanup=True, sqnorm=row_sqnorms)
    return np.asarray(s.chosen, dtype=np.int64)


def find_anchors(C, n_topics: int, *, method: str = "qr", **kwargs) -> np.ndarray:
    """Dispatch to :func:`pivoted_qr_anchors` (``"qr"``) or :func:`fast_anchor_words` (``"fast"``),
    passing ``kwargs`` on (``candidates``, ``pinned``, ``init``; for ``"fast"`` also
    ``projection_dim`` and ``random_state``). Returns the ``n_topics`` anchors (int64)."""
    if method == "qr":
        return pivoted_qr_anchors(C, n_topics, **kwargs)
    if method == "fast":
        return fast_anchor_words(C, n_topics, **kwargs)
    raise InputError(f"method must be 'qr' or 'fast', got {method!r}")
