"""The word co-occurrence estimator: a mergeable sum over documents.

For a document with word-count vector ``h_d`` and length ``n_d = Σ_i h_di``, the unbiased
estimate of the word-pair distribution (Arora et al. 2013, supplementary D) is

    (h_d h_dᵀ − diag h_d) / (n_d (n_d − 1)),

which sums to 1 over all entries. :func:`cooccurrence` adds it up over the documents with
``n_d ≥ 2`` (shorter ones carry no pair) together with the unigram counts, document frequencies,
number of documents and number of tokens of the same documents.

Every document then weighs the same, a 3-token one as much as a 300-token one, although the
short one's single pair says far less. ``length_cap`` weighs a document by its number of word
pairs up to a document of ``length_cap`` tokens, and a longer one as much as that
(:func:`pair_scale`): inverse-variance weighting in its simplest form, since the pairs of a
short document are its only evidence (the within-document noise, ~``1/(n(n−1))``, dominates),
while a long document's pairs all share one topic mixture (the between-document variation
dominates). ``length_cap=2`` is the unbiased estimator above; ``None`` weighs every pair the
same, which is how the biterm topic model (Yan et al. 2013) treats short texts. Measured on
held-out NPMI across corpora of 6-190 tokens per document (``benchmarks/README.md``). Because every field is a sum
over documents, partial results merge exactly: ``a.merge(b)`` is the result on the union, which
is what streaming, checkpoints and multi-worker ingestion rely on.

The sum is computed by a numba kernel: the CSR batch is transposed to CSC, then each word's row
``Σ_{d ∋ i} w_d h_di h_d`` is built by one thread (race-free, cache-friendly, and the same bits
whatever the thread count). It was measured against ``X̃ᵀ X̃ − diag`` with ``X̃ = diag(√w) X`` in
scipy (a single-threaded sparse product, then densified); see :func:`cooccurrence` for figures.
The kernel is ~3x faster on long documents, on par on short ones (where allocating the dense
result dominates both), and it can add into a running state without a ``V × V`` temporary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from anchorstream._buffers import leading_view
from anchorstream._kernels.cooc import cooc_counts, document_gram_matmul
from anchorstream.errors import InputError
from anchorstream.stats.sums import field_sums

__all__ = ["LENGTH_CAP", "Cooccurrence", "accumulate", "cap_pairs", "cooccurrence",
           "document_pairs_matmul", "pair_scale", "take_square"]

#: The product's document weighting (``anchorstream fit``, ``ingest`` and the daemon's
#: ``store.length_cap``): word pairs count the same up to a 25-token document. Chosen from the
#: held-out NPMI of caps 10-100 on four real corpora of 6-190 tokens per document, two
#: subsamples each (``benchmarks/README.md``). The functions here default to 2, the unbiased
#: estimator of the papers.
LENGTH_CAP = 25.0


def cap_pairs(length_cap: float | None) -> float:
    """The ordered-pair count ``m (m − 1)`` of a document of ``length_cap = m`` tokens (the
    kernels' form of the setting); ``None`` is ``inf`` (no cap).

    Raises
    ------
    InputError
        Unless ``length_cap`` is None or a number >= 2.
    """
    if length_cap is None:
        return float("inf")
    if isinstance(length_cap, bool) or not isinstance(length_cap, (int, float, np.integer,
                                                                   np.floating)):
        raise InputError(f"length_cap must be None or a number >= 2, got {length_cap!r}")
    m = float(length_cap)
    if not m >= 2 or m == float("inf"):
        raise InputError(f"length_cap must be None or a finite number >= 2, got {length_cap!r}")
    return m * (m - 1.0)


def pair_scale(n, length_cap: float | None = 2) -> np.ndarray:
    """Scale ``s`` of each document, which adds ``s (h hᵀ − diag h)``; 0 for ``n < 2``.

    A document's total weight ``s n (n − 1)`` is ``min(n (n − 1), m (m − 1)) / (m (m − 1))``
    with ``m = length_cap``: 1 for every document when ``m = 2`` (``s = 1 / (n (n − 1))``,
    the unbiased estimator), and ``n (n − 1) / 2`` (every pair ``1/2``) when ``m`` is None.
    The kernels compute the same (``anchorstream._kernels.cooc.doc_scale``).

    >>> pair_scale(np.array([1., 2., 4., 10.]), 4).tolist()
    [0.0, 0.08333333333333333, 0.08333333333333333, 0.011111111111111112]
    """
    cap = cap_pairs(length_cap)
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros_like(n)
    used = n >= 2
    pairs = n[used] * (n[used] - 1.0)
    if cap == float("inf"):
        out[used] = 0.5
    else:
        out[used] = (np.minimum(pairs, cap) / cap) / pairs
    return out


def document_pairs_matmul(H, w, Z, delta: np.ndarray | None = None) -> np.ndarray:
    """``P Z`` for the pairs of documents ``P = Σ_d w_d (h_d h_dᵀ − diag h_d)`` (their counts
    ``H``, canonical CSR, one row per document; ``w``: float64, each document's scale, as
    :func:`pair_scale` times any other weight), without forming ``P``: ``Hᵀ diag(w) H Z −
    diag(δ) Z`` with ``δ = Hᵀ w`` (``delta``, where the caller keeps it) in ``O(nnz(H) b)``
    (:func:`~anchorstream._kernels.cooc.document_gram_matmul`)."""
    Z = np.asarray(Z, dtype=np.float64)
    Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1))
    out = np.zeros_like(Z2)
    document_gram_matmul(H.indptr, H.indices, H.data, w, Z2, out)
    out -= (np.asarray(H.T @ w).ravel() if delta is None else delta)[:, None] * Z2
    return out.reshape(Z.shape)


def check_count(name: str, value):
    """A document or token count: a finite number >= 0, as int when whole.

    Counted documents give whole numbers, kept as int; a store with exponential forgetting
    holds decayed sums, which stay float (merge must not round them).
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not np.isfinite(value)
        or value < 0
    ):
        raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
    return int(value) if float(value).is_integer() else float(value)


@dataclass(eq=False)
class Cooccurrence:
    """Summed co-occurrence statistics of a set of documents.

    Every field is a sum over the documents with at least two tokens, so two instances over
    disjoint document sets merge by addition.

    Parameters
    ----------
    counts : ndarray of shape (n_words, n_words), float64
        ``Σ_d (h_d h_dᵀ − diag h_d) / (n_d (n_d − 1))``; symmetric, non-negative, sums to
        ``num_docs``.
    unigram : ndarray of shape (n_words,), float64
        ``Σ_d h_d``, the word counts of the same documents.
    doc_freq : ndarray of shape (n_words,), float64
        Number of those documents containing each word.
    num_docs : int
        Number of documents with ``n_d ≥ 2`` (a float when a caller stores decayed sums).
    num_tokens : int
        ``Σ_d n_d`` over those documents (likewise).
    length_cap : float or None, default 2
        How documents were weighted (:func:`pair_scale`); 2, every document the same, is the
        estimator above, whose ``counts`` sum to ``num_docs``.
    mass : float, optional
        What ``counts`` sums to, the documents' total weight, where known (see
        :meth:`total_weight`).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> a = cooccurrence(sp.csr_matrix([[1.0, 1.0, 0.0]]))
    >>> b = cooccurrence(sp.csr_matrix([[0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]))
    >>> (a + b).counts
    array([[0. , 0.5, 0. ],
           [0.5, 1. , 0. ],
           [0. , 0. , 0. ]])
    >>> (a + b).num_docs, (a + b).num_tokens
    (2, 4)
    """

    counts: np.ndarray
    unigram: np.ndarray
    doc_freq: np.ndarray
    num_docs: int
    num_tokens: int
    length_cap: float | None = 2
    mass: float | None = None

    def __post_init__(self) -> None:
        cap_pairs(self.length_cap)  # validates
        self.counts = np.asarray(self.counts, dtype=np.float64)
        self.unigram = np.asarray(self.unigram, dtype=np.float64)
        self.doc_freq = np.asarray(self.doc_freq, dtype=np.float64)
        V = self.unigram.shape[0] if self.unigram.ndim == 1 else -1
        if self.counts.shape != (V, V) or self.doc_freq.shape != (V,):
            raise InputError(
                "Cooccurrence needs counts of shape (n_words, n_words) and unigram, doc_freq of "
                f"shape (n_words,); got {self.counts.shape}, {self.unigram.shape}, "
                f"{self.doc_freq.shape}"
            )
        for name in ("num_docs", "num_tokens"):
            setattr(self, name, check_count(name, getattr(self, name)))

    @classmethod
    def zeros(cls, n_words: int, length_cap: float | None = 2) -> Cooccurrence:
        """The empty state over ``n_words`` words (the identity of :meth:`merge` for states
        weighted by ``length_cap``)."""
        if isinstance(n_words, bool) or not isinstance(n_words, (int, np.integer)) or n_words < 0:
            raise InputError(f"n_words must be an int >= 0, got {n_words!r}")
        return cls(
            np.zeros((n_words, n_words)), np.zeros(n_words), np.zeros(n_words), 0, 0,
            length_cap, None if length_cap == 2 else 0.0,
        )

    @property
    def n_words(self) -> int:
        """Vocabulary size ``V``."""
        return self.unigram.shape[0]

    def merge(self, other: Cooccurrence) -> Cooccurrence:
        """Statistics of the union of both document sets (a new object; inputs unchanged).

        Raises
        ------
        InputError
            If ``other`` is not a Cooccurrence over the same number of words.
        """
        if not isinstance(other, Cooccurrence):
            raise InputError(f"can only merge a Cooccurrence, got {type(other).__name__}")
        if other.n_words != self.n_words:
            raise InputError(
                f"cannot merge co-occurrences over {self.n_words} and {other.n_words} words; "
                "align both to one vocabulary first"
            )
        if other.length_cap != self.length_cap:
            raise InputError(
                f"cannot merge co-occurrences weighted differently (length_cap "
                f"{self.length_cap} and {other.length_cap})")
        return Cooccurrence(
            *field_sums(self, other, ("counts", "unigram", "doc_freq", "num_docs", "num_tokens")),
            self.length_cap,
            None if self.mass is None and other.mass is None
            else self.total_weight() + other.total_weight(),
        )

    def __add__(self, other: Cooccurrence) -> Cooccurrence:
        if not isinstance(other, Cooccurrence):
            return NotImplemented
        return self.merge(other)

    def __radd__(self, other: object) -> Cooccurrence:
        # Lets the builtin sum() start from its default 0: sum(parts) merges them all.
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    def total_weight(self) -> float:
        """What ``normalized`` divides by: the documents' total weight.

        ``mass`` where given; else ``num_docs`` for ``length_cap=2`` (each document weighs 1,
        and after evictions the counts sum to less), and the sum of ``counts`` for another
        weighting (a store keeps no separate total for it).
        """
        if self.mass is not None:
            return float(self.mass)
        if self.length_cap == 2:
            return float(self.num_docs)
        return float(np.sum(self.counts))

    def normalized(self) -> np.ndarray:
        """The co-occurrence matrix ``C = counts / total_weight()`` used for inference.

        Returns
        -------
        ndarray of shape (n_words, n_words)
            Symmetric, non-negative, sums to 1 (up to rounding); a new array.

        Raises
        ------
        InputError
            If no document with at least two tokens has been counted.
        """
        total = self.total_weight()
        if self.num_docs == 0 or not total > 0:
            raise InputError(
                "the co-occurrence is empty (no document with at least two tokens); "
                "there is nothing to normalise"
            )
        return self.counts / total


def as_counts_csr(X: object) -> sp.csr_array | sp.csr_matrix:
    """Validate ``X`` and return it as canonical CSR with float64 data."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise InputError(f"counts must be 2-D (n_docs, n_words), got shape {X.shape}")
        if X.format != "csr":
            X = X.tocsr()
    elif isinstance(X, np.ndarray) or isinstance(X, (list, tuple)):
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise InputError(f"counts must be 2-D (n_docs, n_words), got shape {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise InputError(f"counts must be numeric, got dtype {arr.dtype}")
        X = sp.csr_matrix(arr)
    else:
        raise InputError(
            "counts must be a scipy sparse matrix/array (CSR preferred) or a 2-D ndarray of "
            f"shape (n_docs, n_words), got {type(X).__name__}"
        )
    if X.dtype == np.bool_ or np.issubdtype(X.dtype, np.integer) or np.issubdtype(
        X.dtype, np.floating
    ):
        if X.dtype != np.float64:
            X = X.astype(np.float64)
    else:
        raise InputError(f"counts must be real numbers, got dtype {X.dtype}")
    if not X.has_canonical_format:
        # Duplicate (row, column) entries would be squared separately by the kernel and give a
        # wrong diagonal; summing them first is the documented meaning of a duplicate.
        X = X.copy()
        X.sum_duplicates()
    data = X.data
    if data.size:
        if not np.isfinite(data).all():
            raise InputError("counts contain NaN or infinity")
        if data.min() < 0:
            raise InputError(f"counts must be non-negative, found {data.min()!r}")
        if not np.array_equal(data, np.floor(data)):
            bad = data[data != np.floor(data)][0]
            raise InputError(
                f"counts must be whole numbers of tokens, found {bad!r}; the estimator "
                "h hᵀ − diag h is unbiased only for integer counts"
            )
    return X


# Pair work Σ_d nnz_d² above this multiple of n_words² selects the upper-triangle kernel plus a
# mirror pass (half the pair work, one extra sweep over the matrix) over whole rows. Measured on
# 2 cores: whole rows win for short documents (npm summaries, ~6 distinct words each), the
# triangle for long ones (100-token synthetic documents, ~90 distinct words each).
_TRIANGLE_MIN_PAIRS_PER_CELL = 0.4


def _counts_into(
    X, out: np.ndarray, full: bool | None = None, length_cap: float | None = 2
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Run the kernel on validated CSR ``X``, adding into symmetric ``out``; return marginals.

    ``full`` forces the whole-row (True) or upper-triangle (False) kernel; both give identical
    bits, so the choice only affects speed.
    """
    if X.shape[1] != out.shape[0]:
        raise InputError(
            f"counts have {X.shape[1]} columns (words) but the state has {out.shape[0]} words"
        )
    if full is None:
        nnz_per_doc = np.diff(X.indptr).astype(np.float64)
        pairs = float(nnz_per_doc @ nnz_per_doc)
        full = pairs <= _TRIANGLE_MIN_PAIRS_PER_CELL * float(out.shape[0]) ** 2
    unigram, doc_freq, num_docs, num_tokens = cooc_counts(
        np.ascontiguousarray(X.indptr),
        np.ascontiguousarray(X.indices),
        np.ascontiguousarray(X.data),
        bool(full),
        numba.get_num_threads(),
        out,
        cap_pairs(length_cap),
    )
    return unigram, doc_freq, int(num_docs), int(round(num_tokens))


def _mass(X, length_cap) -> float | None:
    """The total weight of ``X``'s documents under ``length_cap`` (None for 2: ``num_docs``)."""
    if length_cap == 2:
        return None
    n = np.asarray(X.sum(axis=1)).ravel()
    scale = pair_scale(n, length_cap)
    return float(np.sum(scale * n * (n - 1.0)))


def cooccurrence(X: object, *, out: np.ndarray | None = None,
                 length_cap: float | None = 2) -> Cooccurrence:
    """Co-occurrence statistics of a batch of documents.

    Parameters
    ----------
    X : scipy.sparse matrix or array of shape (n_docs, n_words)
        Word counts, one row per document (CSR preferred; other sparse formats and dense 2-D
        arrays are converted). Non-negative whole numbers of any real dtype. Rows with fewer
        than two tokens are ignored.
    out : float64 ndarray of shape (n_words, n_words), C-contiguous, optional
        Memory for the counts (overwritten; it becomes the result's ``counts``), e.g. prepared
        ahead of time by a caller that knows the size (see ``anchorstream fit``).
    length_cap : float or None, default 2
        How documents are weighted (:func:`pair_scale`); 2 is the unbiased estimator.

    Returns
    -------
    Cooccurrence
        Over ``n_words`` words.

    Raises
    ------
    InputError
        For a non-2-D or non-numeric input, or negative, non-integer, NaN or infinite counts.

    Notes
    -----
    Implementation: a numba kernel parallel over words (``_kernels_cooc.py``). Against the
    scipy formulation ``X̃ᵀX̃ − diag(Σ_d w_d h_d)``, 2 numba threads on a shared 2-core machine,
    V = 5000, 50k documents, best of 3 (medians in brackets):

    - 100-token semi-synthetic documents (4.7M non-zeros): kernel 1.9 s (2.3 s), scipy 5.5 s
      (6.0 s);
    - npm package summaries, ~6 words each (0.29M non-zeros): kernel 0.04 s (0.11 s), scipy
      0.05 s (0.09 s); both are dominated by allocating the 200 MB dense result.
    """
    X = as_counts_csr(X)
    cap_pairs(length_cap)  # validated before the V x V memory is allocated or overwritten
    V = X.shape[1]
    if out is None:
        out = np.zeros((V, V), dtype=np.float64)
    else:
        if not (isinstance(out, np.ndarray) and out.shape == (V, V)
                and out.dtype == np.float64 and out.flags.c_contiguous and out.flags.writeable):
            raise InputError(f"out must be a writeable C-contiguous float64 array of shape "
                             f"({V}, {V}), got {getattr(out, 'dtype', type(out))} "
                             f"{getattr(out, 'shape', '')}")
        out.fill(0.0)
    unigram, doc_freq, num_docs, num_tokens = _counts_into(X, out, length_cap=length_cap)
    return Cooccurrence(out, unigram, doc_freq, num_docs, num_tokens, length_cap,
                        _mass(X, length_cap))


def accumulate(state: Cooccurrence, X: object) -> Cooccurrence:
    """Add a batch of documents to a running state: ``state + cooccurrence(X)``.

    The batch is added straight into a copy of ``state.counts``, which saves one
    ``(n_words, n_words)`` temporary over computing ``cooccurrence(X)`` and merging; ``state``
    itself is not modified.

    Parameters
    ----------
    state : Cooccurrence
        Over ``n_words`` words; the batch is weighted as it is (``state.length_cap``).
    X : sparse matrix or array of shape (n_docs, n_words)
        As for :func:`cooccurrence`.

    Returns
    -------
    Cooccurrence
        A new state.

    Raises
    ------
    InputError
        If ``state`` is not a Cooccurrence, the widths differ, or ``X`` is invalid.
    """
    if not isinstance(state, Cooccurrence):
        raise InputError(f"state must be a Cooccurrence, got {type(state).__name__}")
    out = np.array(state.counts, dtype=np.float64, order="C", copy=True)
    X = as_counts_csr(X)
    cap = state.length_cap
    unigram, doc_freq, num_docs, num_tokens = _counts_into(X, out, length_cap=cap)
    added = _mass(X, cap)
    return Cooccurrence(
        out,
        state.unigram + unigram,
        state.doc_freq + doc_freq,
        state.num_docs + num_docs,
        state.num_tokens + num_tokens,
        cap,
        None if state.mass is None and added is None
        else state.total_weight() + (num_docs if added is None else added),
    )


def take_square(matrix: np.ndarray, index, *, out: np.ndarray | None = None) -> np.ndarray:
    """``matrix[np.ix_(index, index)]``, where an index of ``-1`` gives a zero row and column.

    Moves a square word-by-word matrix onto another word list (a subset, a reordering, or a
    vocabulary with new words). Rows are gathered a block at a time and their columns taken
    into the result while the block is in cache: measured at 5000 words, 0.03 s against
    0.2-0.45 s for ``np.ix_`` indexing, which computes a flat index per element.

    Parameters
    ----------
    matrix : ndarray of shape (n, n)
    index : sequence of int, length m
        Row (and column) of ``matrix`` for each row of the result, or -1.
    out : ndarray, optional
        A C-contiguous array of ``matrix``'s dtype whose first ``m²`` elements receive the
        result (used when it is large enough and does not overlap ``matrix``).

    Returns
    -------
    ndarray of shape (m, m), of ``matrix``'s dtype: a view of ``out``, or a new array.
    """
    matrix = np.asarray(matrix)
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise InputError(f"take_square needs a square matrix, got shape {matrix.shape}")
    n = matrix.shape[0]
    if index.size and (index.max() >= n or index.min() < -1):
        raise InputError(f"take_square: indices must lie in [-1, {n}), got "
                         f"[{index.min()}, {index.max()}]")
    missing = index < 0
    src = np.where(missing, 0, index)
    m = index.size
    if out is not None and np.shares_memory(out, matrix):
        out = None
    out = leading_view(out, (m, m), matrix.dtype)
    if out is None:
        out = np.empty((m, m), dtype=matrix.dtype)
    step = max(1, (4 << 20) // (matrix.itemsize * max(n, 1)))
    for start in range(0, m, step):
        rows = matrix[src[start : start + step]]
        # mode="clip" skips the bounds check (done above), which would buffer the output.
        np.take(rows, src, axis=1, out=out[start : start + step], mode="clip")
    if missing.any():
        out[missing] = 0
        out[:, missing] = 0
    return out
