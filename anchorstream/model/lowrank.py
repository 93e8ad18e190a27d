"""Low-rank rectification: alternating projection on an implicit rank-K-plus-sparse matrix.

The rectified co-occurrence of JSMF (:mod:`anchorstream.model.rectify`) is a dense V × V array, which
stops one machine near V = 20,000. Its iterate is ``max(Y Yᵀ + r, 0)`` with ``Y`` a V × K factor,
and the clipping changes few entries: on real corpora ~12% of them after the first iteration,
~1% once the iteration has settled. So the iterate is held here as

    M = Y Yᵀ + r 1 1ᵀ + E,

``E`` symmetric and non-negative: the non-negativity corrections, non-zero only in the rows
and columns of scanned words (below) and held sparse, or as a dense V × |I| block where many
of those entries are negative (short documents). Products with ``M`` cost ``O(V K + nnz(E))``
(or ``O(V |I|)``) per vector, so the eigensolver of each projection never touches a V × V
array, and neither do the anchor search and the recovery, which work from
:class:`LowRankCooccurrence`'s products, rows and row statistics.

Finding ``E`` exactly would scan all V² entries. Following ENN (the "epsilon non-negative"
rectification of Lee, Cho, Dong, Mimno & Bindel, ICML 2021), only the rows and columns of the
``n_rows`` words with the largest factor rows are scanned: an entry of two other words is at
least ``-‖Y_i‖ ‖Y_j‖``, so it is left at most ``ε = max_{i ∉ I} ‖Y_i‖²`` below zero, and the
words left out are the rare ones, whose factor rows are short. The result reports that bound
(``epsilon``) beside the largest entry.

The iteration is the published one (PSD rank-K projection, normalization, non-negativity), with
the same Anderson acceleration and stopping rule as the dense :func:`~anchorstream.model.rectify.rectify`
(the relative change of the iterate, computed here from the factors in ``O(V K² + nnz(E) K)``).
Its input is anything that multiplies a block of vectors: a dense or sparse matrix, or the
co-occurrence of documents never formed at all (:class:`DocumentCooccurrence`); only its first
projection reads it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels.cooc import document_gram_upper
from anchorstream.stats.cooccurrence import cap_pairs, document_pairs_matmul, pair_scale
from anchorstream.errors import InputError
from anchorstream.model.anderson import AndersonMixer
from anchorstream.model.eigen import fix_signs, top_eigh
from anchorstream.model.lowrank_corrections import Corrections
from anchorstream.model.rectify_core import check_loop_args

log = logging.getLogger(__name__)

__all__ = [
    "DocumentCooccurrence",
    "LowRankCooccurrence",
    "LowRankResult",
    "default_rows",
    "lowrank_result",
    "rectify_lowrank",
    "scan_rows",
]

#: Seconds between INFO progress lines of a long rectification.
_PROGRESS_SECONDS = 10.0


def default_rows(n_words: int, n_topics: int) -> int:
    """Words whose rows and columns are scanned for negative entries by default: ``10 K + 1000``
    (the ENN authors' setting), at most ``n_words``."""
    return int(min(n_words, 10 * n_topics + 1000))


def scan_rows(n_words: int, n_topics: int, rows) -> int:
    """The number of words scanned for negative entries: ``rows`` (a positive integer, at most
    ``n_words``) or :func:`default_rows` for None; else InputError."""
    if rows is None:
        rows = default_rows(n_words, n_topics)
    if not isinstance(rows, (int, np.integer)) or rows < 1:
        raise InputError(f"rows must be a positive integer, got {rows!r}")
    return int(min(rows, n_words))


# ---- The input: the co-occurrence of documents, never formed --------------------------------


class DocumentCooccurrence:
    """The normalized co-occurrence of a corpus as an operator, without a V × V array.

    Document ``d`` with word counts ``h_d`` (``n_d`` tokens) contributes
    ``w_d (h_d h_dᵀ − diag h_d)``, and the sum is divided by its total so that the matrix sums
    to 1. With ``H`` the count matrix, ``W = diag(w)`` and ``δ = Σ_d w_d h_d``,

        C = (Hᵀ W H − diag δ) / total,

    so ``C Z`` costs ``O(nnz(H) b)`` for ``b`` vectors: one pass over each document's words
    for ``h_dᵀ Z`` and one to add ``w_d h_d (h_dᵀ Z)`` back
    (:func:`~anchorstream.stats.cooccurrence.document_pairs_matmul`).

    Parameters
    ----------
    counts : sparse matrix of shape (n_docs, n_words)
        Word counts; documents with fewer than 2 tokens contribute nothing.
    length_cap : float or None, default 2
        ``w_d`` is :func:`~anchorstream.stats.cooccurrence.pair_scale`: with the default every
        document weighs the same (the unbiased estimator of Arora et al. 2013); with ``m``
        every word pair counts the same up to an ``m``-token document. The same weighting as
        :func:`~anchorstream.stats.cooccurrence.cooccurrence` with the same ``length_cap``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from anchorstream.stats.cooccurrence import cooccurrence
    >>> X = sp.csr_matrix(np.array([[2., 1., 0.], [0., 1., 3.]]))
    >>> C = DocumentCooccurrence(X)
    >>> bool(np.allclose(C @ np.eye(3), cooccurrence(X).normalized()))
    True
    """

    def __init__(self, counts, *, length_cap: float | None = 2):
        cap_pairs(length_cap)  # validates
        X = sp.csr_matrix(counts, dtype=np.float64)
        if not X.has_canonical_format:  # a word at most once per document
            X = X.copy()
            X.sum_duplicates()
        if X.ndim != 2:
            raise InputError(f"counts must be (n_docs, n_words), got shape {X.shape}")
        if X.nnz and (not np.all(np.isfinite(X.data)) or X.data.min() < 0):
            raise InputError("counts must be finite and non-negative")
        n = np.asarray(X.sum(axis=1)).ravel()
        used = n >= 2
        w = pair_scale(n, length_cap)
        # Each document's matrix sums to n_d (n_d − 1) before weighting.
        total = float(np.sum(w * n * (n - 1.0)))
        self.length_cap = length_cap
        self.num_docs = int(used.sum())
        self.num_tokens = float(n[used].sum())
        self.n_words = X.shape[1]
        self.shape = (self.n_words, self.n_words)
        self.total = total
        self._X = X
        self._w = np.ascontiguousarray(w, dtype=np.float64)
        self._delta = np.asarray(X.T @ w).ravel()
        self.doc_freq = np.asarray((X > 0).sum(axis=0)).ravel()

    def __matmul__(self, Z):
        Z = np.asarray(Z, dtype=np.float64)
        if self.total <= 0:
            return np.zeros_like(Z)
        return document_pairs_matmul(self._X, self._w, Z, self._delta) / self.total

    def _gram(self) -> sp.csr_matrix:
        """``Hᵀ diag(w) H``, sparse (V × V with the pairs' pattern)."""
        return sp.csr_matrix(self._X.T) @ sp.csr_matrix(self._X.multiply(self._w[:, None]))

    def total_weight(self) -> float:
        """The documents' total weight, which the matrix is divided by (as for
        :meth:`Cooccurrence.total_weight <anchorstream.stats.cooccurrence.Cooccurrence.total_weight>`)."""
        return self.total

    def row_sums(self) -> np.ndarray:
        """``C 1``: each word's share of the (weighted) pairs, ``p(w)``."""
        return self @ np.ones(self.n_words)

    def normalized(self) -> np.ndarray:
        """The dense matrix (V² memory: for the methods that need one, and small problems)."""
        C = self._gram().toarray()
        C[np.diag_indices_from(C)] -= self._delta
        if self.total > 0:
            C /= self.total
        return C

    def upper_counts(self) -> sp.csr_matrix:
        """The counts' upper triangle, ``Hᵀ W H − diag δ``, sparse (no stored zeros; the
        diagonal is exactly 0 for a word no document holds twice)."""
        X = self._X if self._X.has_sorted_indices else self._X.sorted_indices()
        indptr, indices, data = document_gram_upper(X.indptr, X.indices, X.data, self._w,
                                                    self.n_words)
        return sp.csr_matrix((data, indices, indptr), shape=self.shape)

    def subset(self, words) -> DocumentCooccurrence:
        """The same matrix restricted to ``words`` (rows and columns), documents' weights and the
        total unchanged: what taking those rows and columns of the dense matrix gives."""
        words = np.asarray(words, dtype=np.int64)
        out = DocumentCooccurrence.__new__(DocumentCooccurrence)
        out.length_cap = self.length_cap
        out.num_docs = self.num_docs
        out.n_words = int(words.size)
        out.shape = (out.n_words, out.n_words)
        out.total = self.total
        out._X = sp.csr_matrix(self._X[:, words])
        out._w = self._w
        out._delta = self._delta[words]
        out.doc_freq = self.doc_freq[words]
        return out


# ---- The output: the rectified matrix, implicit ---------------------------------------------


@dataclass(eq=False)
class LowRankCooccurrence:
    """A symmetric V × V matrix ``Y Yᵀ + r 1 1ᵀ + E`` held by its parts.

    ``E`` is the non-negativity correction of ``Y Yᵀ`` on the rows and columns of the scanned
    words ``I``: ``E = max(−Y Yᵀ, 0)`` there, zero elsewhere, i.e. the entries of
    ``N = max(−Y Y_Iᵀ, 0)`` (V × |I|): ``E[i, j] = N[i, p(j)]`` for ``j`` in ``I`` (``p(j)`` its
    position in ``I``), ``E[i, j] = N[j, p(i)]`` for ``i`` in ``I`` and ``j`` not. It is held
    once (:class:`~anchorstream.model.lowrank_corrections.Corrections`): sparse where few of
    ``N``'s entries are non-zero (~1% on most real corpora; products, sums and rows then cost
    ``O(nnz(E))``), else as ``N`` itself, dense (found and held in float32).

    It quacks enough like the dense co-occurrence for the anchor search, the recovery and the
    topic-topic matrix: ``M @ Z`` (products), ``M[i]`` and ``M[idx]`` (dense rows),
    ``M.sum(axis=1)`` and :meth:`row_sqnorms`.

    Attributes
    ----------
    factor : ndarray of shape (n_words, k)
        ``Y``.
    shift : float
        ``r``.
    scanned : ndarray of int64, shape (n_scanned,)
        ``I``, distinct word indices.
    corrections : Corrections, optional
        ``E``; leave it out to have it scanned from ``Y`` (``O(V K |I|)``): sparse entries
        in ``Y``'s precision, a dense block formed and held in float32.
    """

    factor: np.ndarray
    shift: float
    scanned: np.ndarray
    corrections: Corrections | None = None

    def __post_init__(self):
        V = self.factor.shape[0]
        self.scanned = np.asarray(self.scanned, dtype=np.int64)
        self._outside = np.ones(V, dtype=bool)
        self._outside[self.scanned] = False
        if self.corrections is None:
            self.corrections = Corrections.scan(self.factor, self.scanned, self._outside,
                                                dtype=np.float32)
        self._E = self.corrections

    @property
    def shape(self) -> tuple[int, int]:
        V = self.factor.shape[0]
        return (V, V)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nbytes(self) -> int:
        return int(self.factor.nbytes + self._E.nbytes + self.scanned.nbytes)

    def _correction_matmul(self, Z: np.ndarray) -> np.ndarray:
        """``E @ Z`` for a 2-D ``Z``."""
        return self._E @ Z

    def __matmul__(self, Z):
        Z = np.asarray(Z, dtype=np.float64)
        vector = Z.ndim == 1
        Z2 = Z[:, None] if vector else Z
        Y = self.factor
        out = Y @ (Y.T @ Z2) + self._correction_matmul(Z2) + Z2.sum(axis=0) * self.shift
        return out[:, 0] if vector else out

    def correction_rows(self, idx) -> np.ndarray:
        """Dense rows ``E[idx]``, shape (len(idx), n_words)."""
        return self._E.rows(np.asarray(idx, dtype=np.int64))

    def __getitem__(self, index):
        """Dense rows: ``M[i]`` of shape (n_words,), ``M[idx]`` of shape (len(idx), n_words)."""
        single = isinstance(index, (int, np.integer))
        idx = np.atleast_1d(np.asarray(index))
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise InputError("a LowRankCooccurrence is indexed by a word or an array of words")
        Y = self.factor
        rows = Y[idx] @ Y.T + self.shift + self.correction_rows(idx)
        return rows[0] if single else rows

    def sum(self, axis=None):
        """Row sums (``axis=1`` or 0: the matrix is symmetric), or the total."""
        Y = self.factor
        V = Y.shape[0]
        rows = Y @ Y.sum(axis=0) + self.shift * V + self._correction_sums()
        return float(rows.sum()) if axis is None else rows

    def row_sqnorms(self) -> np.ndarray:
        """Squared Euclidean norm of every row, in ``O(V K² + V |I|)``.

        Where ``E`` is non-zero it equals ``−Y Yᵀ``, so ``⟨(Y Yᵀ + r)_i, E_i⟩ = −‖E_i‖² +
        r Σ_j E_ij`` and ``‖M_i‖² = ‖(Y Yᵀ + r)_i‖² − ‖E_i‖² + 2 r Σ_j E_ij``.
        """
        Y, r = self.factor, self.shift
        V = Y.shape[0]
        G = Y.T @ Y
        m = Y.sum(axis=0)
        low = np.einsum("ij,ij->i", Y @ G, Y) + 2.0 * r * (Y @ m) + r * r * V
        corr = self._E.sqnorms()
        return np.maximum(low - corr + 2.0 * r * self._correction_sums(), 0.0)

    def _correction_sums(self) -> np.ndarray:
        """Row sums of ``E``."""
        return self._E.sums.copy()

    def toarray(self) -> np.ndarray:
        """The dense matrix (for tests and small problems: V² memory)."""
        Y = self.factor
        return Y @ Y.T + self.shift + self.correction_rows(np.arange(Y.shape[0]))

    def scale_(self, c: float) -> LowRankCooccurrence:
        """This matrix times ``c`` (``c > 0``), in place (the corrections can be the largest
        array of a fit: no copy of them); returns it."""
        self.factor *= np.sqrt(c)
        self.shift *= c
        self._E.scale_(c)
        return self


# ---- Alternating projection on the implicit iterate -----------------------------------------


@dataclass(frozen=True, eq=False)
class LowRankResult:
    """The outcome of :func:`rectify_lowrank`.

    Attributes
    ----------
    matrix : LowRankCooccurrence
        The rectified co-occurrence, summing to 1.
    eigvecs : ndarray of shape (n_words, n_topics)
        Eigenvectors of the last projection (a warm start for the next rectification).
    eigvals : ndarray of shape (n_topics,)
    n_iter : int
    residual : float
        Relative change (Frobenius) of the iterate's low-rank part ``Y Yᵀ + r 1 1ᵀ`` in the
        last iteration.
    converged : bool
    n_products : int
        Block products spent by the eigensolver.
    epsilon : float
        Bound on how far an entry between two unscanned words may be below zero (compare with
        the matrix's largest entry).
    row_sums, row_sqnorms : ndarray of shape (n_words,)
    """

    matrix: LowRankCooccurrence
    eigvecs: np.ndarray
    eigvals: np.ndarray
    n_iter: int
    residual: float
    converged: bool
    n_products: int
    epsilon: float
    row_sums: np.ndarray
    row_sqnorms: np.ndarray

    @property
    def factor(self) -> np.ndarray:
        return self.matrix.factor

    @property
    def shift(self) -> float:
        return self.matrix.shift


class _LoopIterate:
    """The iterate ``Y Yᵀ + r 1 1ᵀ + E`` inside :func:`rectify_lowrank`'s loop.

    :class:`LowRankCooccurrence` finds sparse corrections in float64 (the result's, which
    decide what is negative in the published matrix); the loop only
    multiplies and sums through ``E`` (a product costs ``O(V K b + nnz(E) b)``, or two GEMMs
    with a dense ``E``), so here ``E`` is scanned in float32, and held as the last
    iteration's was (``dense``).
    """

    def __init__(self, Y: np.ndarray, scanned: np.ndarray, shift: float = 0.0, *,
                 dense: bool | None = None):
        self.factor = Y
        self.shift = shift
        V = Y.shape[0]
        outside = np.ones(V, dtype=bool)
        outside[scanned] = False
        self.corrections = Corrections.scan(Y.astype(np.float32), scanned, outside,
                                             dense=dense)

    def __matmul__(self, Z: np.ndarray) -> np.ndarray:
        Y = self.factor
        return Y @ (Y.T @ Z) + self.corrections @ Z + Z.sum(axis=0) * self.shift

    def sum(self) -> float:
        Y = self.factor
        V = Y.shape[0]
        col = Y.sum(axis=0)
        return float(col @ col + self.shift * V * V + self.corrections.sums.sum())


def _low_inner(Ya: np.ndarray, ra: float, Yb: np.ndarray, rb: float) -> float:
    """``⟨Ya Yaᵀ + ra 11ᵀ, Yb Ybᵀ + rb 11ᵀ⟩`` (Frobenius) from K × K products."""
    V = Ya.shape[0]
    G = Ya.T @ Yb
    ma, mb = Ya.sum(axis=0), Yb.sum(axis=0)
    return float(np.sum(G * G) + rb * (ma @ ma) + ra * (mb @ mb) + ra * rb * V * V)


def _check_operator(C):
    """``C`` as something with ``shape`` and ``@``: a dense or sparse matrix or an operator."""
    if sp.issparse(C):
        C = sp.csr_matrix(C, dtype=np.float64)
        if not np.all(np.isfinite(C.data)):
            raise InputError("C contains NaN or infinite entries")
    elif isinstance(C, np.ndarray):
        C = np.asarray(C, dtype=np.float64)
        if not np.all(np.isfinite(C)):
            raise InputError("C contains NaN or infinite entries")
    elif not hasattr(C, "__matmul__") or not hasattr(C, "shape"):
        raise InputError(
            f"C must be a matrix or an operator with shape and @, got {type(C).__name__}")
    shape = tuple(C.shape)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise InputError(f"C must be square, got shape {shape}")
    return C


def rectify_lowrank(
    C,
    n_topics: int,
    *,
    rows: int | None = None,
    max_iter: int = 150,
    tol: float = 1e-3,
    anderson: int = 5,
    init_eigvecs: np.ndarray | None = None,
    eig_tol: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> LowRankResult:
    """Rectify a co-occurrence by alternating projection, holding the iterate in low rank.

    Each iteration projects onto rank-``n_topics`` PSD matrices (the top eigenpairs of the
    iterate, negative eigenvalues clipped), onto matrices summing to 1 (the shift ``r``), and
    onto non-negative matrices on the scanned rows and columns (the correction ``E``); it
    stops when the iterate's relative change is at most ``tol`` (as
    :func:`~anchorstream.model.rectify.rectify` does), after ``max_iter`` iterations at the latest.
    The result is divided by its sum. Memory: ``O(V K + nnz(E))``, never ``V²``.

    Parameters
    ----------
    C : ndarray, sparse matrix or operator of shape (n_words, n_words)
        The co-occurrence (summing to 1), e.g. a :class:`DocumentCooccurrence`; an operator
        needs ``shape`` and ``@`` with an ``(n_words, b)`` array. Only the first projection
        reads it.
    n_topics : int
    rows : int, optional
        Words (those with the largest factor rows) whose rows and columns are scanned for
        negative entries each iteration; default :func:`default_rows`. ``n_words`` scans all.
    max_iter, tol, anderson :
        As for :func:`~anchorstream.model.rectify.rectify`.
    init_eigvecs : ndarray of shape (n_words, m), optional
        Eigenvectors of a nearby matrix (a previous rectification): they seed the first
        eigensolve.
    eig_tol : float, optional
        Tolerance of the eigensolves (default ``tol / 100`` clipped to ``[1e-8, 1e-6]``).
    random_state : int, Generator or None

    Returns
    -------
    LowRankResult

    Raises
    ------
    InputError
        On a malformed ``C`` or option.

    Examples
    --------
    >>> B = np.array([[0.6, 0.0], [0.0, 0.5], [0.4, 0.5]])
    >>> Q = B @ np.array([[0.3, 0.2], [0.2, 0.3]]) @ B.T   # rank 2, PSD, NN, NOR already
    >>> res = rectify_lowrank(Q, 2)
    >>> bool(np.allclose(res.matrix.toarray(), Q)), res.converged
    (True, True)
    """
    C = _check_operator(C)
    V = C.shape[0]
    K = n_topics
    eig_tol, init_eigvecs = check_loop_args(V, K, max_iter, anderson, tol, eig_tol,
                                             init_eigvecs)
    rows = scan_rows(V, K, rows)
    rng = np.random.default_rng(random_state)

    theta, X, _, info = top_eigh(lambda Z: C @ Z, V, K, init=init_eigvecs, tol=eig_tol,
                                 random_state=rng)
    n_products = info["n_products"]
    mixer = AndersonMixer(int(anderson))
    Y = X[:, :K] * np.sqrt(np.maximum(theta[:K], 0.0))
    previous: tuple[np.ndarray, float, float] | None = None  # Y, r, ‖Y Yᵀ + r 11ᵀ‖²
    iterate: _LoopIterate | None = None
    residual = np.inf
    converged = False
    n_iter = 0
    next_report = time.monotonic() + _PROGRESS_SECONDS
    for n_iter in range(1, max_iter + 1):
        # Non-negativity, then normalization (the order of ENN): N corrects Y Yᵀ on the
        # scanned rows and columns, and the shift r then makes the iterate sum to 1. Checking
        # Y Yᵀ + r instead would find the whole block of two unscanned (rare) words negative
        # whenever r < 0 (it is about -0.035 / V² on short texts), leaving their rows with
        # negative sums; r only evens out the total, which nothing downstream depends on.
        scanned = np.argsort(-np.einsum("ij,ij->i", Y, Y), kind="stable")[:rows]
        # The corrections' form (dense or sparse) is expected to be the last iteration's
        # (the first one samples it).
        iterate = _LoopIterate(Y, scanned,
                               dense=None if iterate is None else iterate.corrections.dense)
        r = (1.0 - iterate.sum()) / (V * V)
        iterate.shift = r
        # The change of the low-rank part, O(V K²): the corrections follow from it.
        sq = _low_inner(Y, r, Y, r)
        if previous is not None and previous[2] > 0:
            change2 = sq + previous[2] - 2.0 * _low_inner(Y, r, previous[0], previous[1])
            residual = float(np.sqrt(max(change2, 0.0) / previous[2]))
        previous = (Y, r, sq)
        converged = residual <= tol
        now = time.monotonic()
        if now >= next_report:
            log.info("rectify (low rank): iteration %d of at most %d, change %.2e (stops at "
                     "%.1e)", n_iter, max_iter, residual, tol)
            next_report = now + _PROGRESS_SECONDS
        if converged or n_iter == max_iter:
            break
        # X: the last solve's Ritz vectors, orthonormal already.
        theta, X, _, info = top_eigh(iterate.__matmul__, V, K, init=X, orthonormal_init=True,
                                     tol=eig_tol, random_state=rng)
        n_products += info["n_products"]
        Y = mixer(Y, X[:, :K] * np.sqrt(np.maximum(theta[:K], 0.0)), residual)

    return lowrank_result(Y, scanned, X[:, :K], theta[:K], n_iter=n_iter, residual=residual,
                          converged=converged, n_products=n_products)


def lowrank_result(Y: np.ndarray, scanned: np.ndarray, eigvecs: np.ndarray, eigvals: np.ndarray,
                   *, n_iter: int, residual: float, converged: bool,
                   n_products: int) -> LowRankResult:
    """The rectified matrix of the factor ``Y`` (its corrections on the ``scanned`` words),
    divided by its sum, as a :class:`LowRankResult`; ``eigvals`` are divided by the sum too.
    The last step of :func:`rectify_lowrank` and of its warm update."""
    V = Y.shape[0]
    norms = np.einsum("ij,ij->i", Y, Y)
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    epsilon = float(norms[outside].max(initial=0.0))
    # The result is Y Yᵀ + E, without the normalization shift (see rectify_lowrank), divided
    # by its sum; its corrections scanned again, sparse entries in float64, a dense block in
    # float32 (as the loop's: it is held so).
    iterate = LowRankCooccurrence(np.array(Y, dtype=np.float64), 0.0, scanned)
    total = iterate.sum()
    matrix = iterate.scale_(1.0 / total)
    return LowRankResult(
        matrix=matrix,
        eigvecs=fix_signs(np.ascontiguousarray(eigvecs)),
        eigvals=np.asarray(eigvals) / total,
        n_iter=n_iter,
        residual=residual,
        converged=converged,
        n_products=n_products,
        epsilon=epsilon / total,
        row_sums=matrix.sum(axis=1),
        row_sqnorms=matrix.row_sqnorms(),
    )
