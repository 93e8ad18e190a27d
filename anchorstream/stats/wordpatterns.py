"""Streamable statistics of word patterns over documents, for the novel-word methods.

Ding et al. (2014) read each word's *cross-document pattern* (:mod:`anchorstream.model.novelwords`).
Everything their algorithms read is a sum over documents, so it is kept as mergeable state
(``new = update(state, X, doc_ids)``, ``a.merge(b)``):

* :class:`RPSketch` — ``Σ_d g_d x_dᵀ`` for ``P`` Gaussian directions, with ``g_d`` drawn from a
  counter-based hash of ``(seed, document id, projection)``: the same document always gets the
  same direction, whatever batch it arrives in, so a replay or a merge of partial sketches gives
  the same bits as one batch (up to summation order);
* :class:`SplitStatistic` — ``Σ_d x_d^(1) x_d^(2)ᵀ`` and the halves' sums, the DDP statistic,
  with the split of each document into halves drawn from the same kind of hash.

Here ``x_d = h_d / n_d`` is a document's word-frequency vector; ``X̃_i · d`` for a direction
``d`` is ``Σ_d g_d x_di / Σ_d x_di`` — one sketch row divided by the pattern mass.

:mod:`anchorstream.stats.documents` keeps both beside a store's counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels.sketch import (SPLITMIX_GOLDEN, SPLITMIX_M1, SPLITMIX_M2,
                                          project_documents)
from anchorstream.stats.cooccurrence import as_counts_csr, check_count
from anchorstream.errors import InputError
from anchorstream.stats.sums import field_sums

__all__ = [
    "RPSketch",
    "SplitStatistic",
    "merge",
    "project_words",
    "random_directions",
    "rp_sketch",
    "split_documents",
    "split_statistic",
    "update",
]

# --------------------------------------------------------------------------------------------
# Counter-based randomness: a pure function of (seed, document id, counter)
# --------------------------------------------------------------------------------------------

# Distinct streams for the directions and the document split, so they are independent.
_SALT_DIRECTIONS = np.uint64(0x5250)  # "RP"
_SALT_SPLIT = np.uint64(0x444450)  # "DDP"


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer on a uint64 array: a bijective, well-avalanched 64-bit hash.

    A counter-based generator (hash of the coordinates) instead of a seeded Generator per
    document: it is vectorized over a whole batch and needs no state, so the value for a given
    document never depends on batching, order or what came before.
    """
    z = np.asarray(x, dtype=np.uint64) + SPLITMIX_GOLDEN
    z = (z ^ (z >> np.uint64(30))) * SPLITMIX_M1
    z = (z ^ (z >> np.uint64(27))) * SPLITMIX_M2
    return z ^ (z >> np.uint64(31))


def _doc_keys(seed: int, doc_ids: np.ndarray, salt: np.uint64) -> np.ndarray:
    base = _mix(np.array([seed], dtype=np.uint64) ^ salt)
    return _mix(base ^ _mix(doc_ids.astype(np.uint64)))


def _uniform(z: np.ndarray) -> np.ndarray:
    """The top 53 bits of a hash as a float in [0, 1)."""
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def _check_doc_ids(doc_ids, n_docs: int) -> np.ndarray:
    ids = np.asarray(doc_ids)
    if ids.shape != (n_docs,) or not np.issubdtype(ids.dtype, np.integer):
        raise InputError(
            f"doc_ids must be integers of shape ({n_docs},) (one id per document row), got "
            f"dtype {ids.dtype} and shape {ids.shape}"
        )
    if ids.size and ids.min() < 0:
        raise InputError("doc_ids must be non-negative (e.g. partition << 48 | offset)")
    return ids.astype(np.uint64)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not (
        0 <= seed < 2**63
    ):
        raise InputError(f"seed must be an int in [0, 2**63), got {seed!r}")
    return int(seed)


def _check_projections(n_projections) -> int:
    if int(n_projections) != n_projections or n_projections < 1:
        raise InputError(f"n_projections must be a positive integer, got {n_projections!r}")
    return int(n_projections)


def random_directions(doc_ids, n_projections: int, seed: int = 0) -> np.ndarray:
    """Standard Gaussian direction coordinates of documents, a pure function of their ids.

    Row ``d`` holds the ``d``-th document's coordinate on each of the ``P`` directions, so the
    directions of ``R^M`` are the columns; i.i.d. Gaussian columns point uniformly over the
    sphere, and their lengths do not change which word is extreme.

    Parameters
    ----------
    doc_ids : array_like of int, shape (n_docs,)
        Non-negative, unique per document of the stream.
    n_projections : int
        ``P``.
    seed : int

    Returns
    -------
    ndarray of shape (n_docs, n_projections)

    Examples
    --------
    >>> a = random_directions([7, 8], 3, seed=1)
    >>> b = random_directions([8], 3, seed=1)
    >>> bool(np.array_equal(a[1], b[0]))
    True
    """
    ids = _check_doc_ids(doc_ids, len(np.atleast_1d(doc_ids)))
    seed = _check_seed(seed)
    keys = _doc_keys(seed, ids, _SALT_DIRECTIONS)[:, None]
    counter = np.arange(_check_projections(n_projections), dtype=np.uint64)[None, :] * np.uint64(2)
    u1 = _uniform(_mix(keys ^ _mix(counter)))
    u2 = _uniform(_mix(keys ^ _mix(counter + np.uint64(1))))
    # Box–Muller; 1 − u1 lies in (0, 1], so the logarithm is finite.
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def project_words(F, doc_ids, n_projections: int, seed: int = 0) -> np.ndarray:
    """``Σ_d F[d, w] g_d`` for every word ``w``: ``Fᵀ G`` with ``G`` the documents'
    :func:`random_directions`, drawn inside the product (``_kernels/sketch.py``) instead of
    formed (``n_docs × P`` values; on 50,000 documents with ``P`` = 2500 the draw and the
    sparse product took 17 of an RP fit's 37 CPU seconds).

    Parameters
    ----------
    F : sparse matrix of shape (n_docs, n_words)
        Per-document weights of the words (frequencies, or weighted frequencies).
    doc_ids : array_like of int, shape (n_docs,)
    n_projections : int
    seed : int

    Returns
    -------
    ndarray of shape (n_words, n_projections)
        Equal to ``F.T @ random_directions(doc_ids, n_projections, seed)`` up to rounding.
    """
    F = sp.csr_matrix(F)
    ids = _check_doc_ids(doc_ids, F.shape[0])
    seed = _check_seed(seed)
    P = _check_projections(n_projections)
    counter = np.arange(P, dtype=np.uint64) * np.uint64(2)
    out = np.zeros((F.shape[1], P))
    # The hash's products wrap by design; NumPy would warn where the kernel runs without JIT.
    with np.errstate(over="ignore"):
        project_documents(F.indptr, F.indices, np.asarray(F.data, dtype=np.float64),
                          _doc_keys(seed, ids, _SALT_DIRECTIONS), _mix(counter),
                          _mix(counter + np.uint64(1)), out)
    return out


def split_documents(X, doc_ids, seed: int = 0) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Split every document's tokens at random into two halves (DDP's ``X`` and ``X'``).

    Each token gets a hash of ``(seed, document id, word, occurrence)``; the ``⌊n_d/2⌋`` tokens
    of smallest hash form the first half. The split of a document is therefore the same in any
    batch, and both halves are non-empty when ``n_d >= 2``.

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n_docs, n_words)
        Word counts (non-negative whole numbers).
    doc_ids : array_like of int, shape (n_docs,)
    seed : int

    Returns
    -------
    first, second : scipy.sparse.csr_matrix of shape (n_docs, n_words)
        Counts of the halves; ``first + second == X``.
    """
    X = as_counts_csr(X)
    ids = _check_doc_ids(doc_ids, X.shape[0])
    seed = _check_seed(seed)
    n_docs, V = X.shape
    counts = X.data.astype(np.int64)
    rows = np.repeat(np.arange(n_docs), np.diff(X.indptr))
    tok_doc = np.repeat(rows, counts)
    tok_word = np.repeat(X.indices.astype(np.int64), counts)
    # Occurrence number of each token among the copies of its (doc, word) entry.
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    occ = np.arange(tok_doc.size) - starts
    key = _doc_keys(seed, ids, _SALT_SPLIT)[tok_doc]
    h = _mix(key ^ _mix((tok_word.astype(np.uint64) << np.uint64(24)) ^ occ.astype(np.uint64)))
    order = np.lexsort((h, tok_doc))
    lengths = np.bincount(tok_doc, minlength=n_docs)
    doc_start = np.cumsum(lengths) - lengths
    rank = np.empty(tok_doc.size, dtype=np.int64)
    rank[order] = np.arange(tok_doc.size) - doc_start[tok_doc[order]]
    first = rank < (lengths // 2)[tok_doc]

    def build(mask):
        m = sp.csr_matrix(
            (np.ones(int(mask.sum())), (tok_doc[mask], tok_word[mask])), shape=(n_docs, V)
        )
        m.sum_duplicates()
        return m

    return build(first), build(~first)


def _frequencies(X: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    lengths = np.asarray(X.sum(axis=1)).ravel()
    F = sp.diags(1.0 / np.maximum(lengths, 1.0)) @ X
    return F.tocsr(), lengths


# --------------------------------------------------------------------------------------------
# Streaming state
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class RPSketch:
    """Random projections of every word's cross-document pattern, as sums over documents.

    Parameters
    ----------
    projections : ndarray of shape (n_projections, n_words)
        ``Σ_d g_d x_dᵀ``: ``g_d`` is document d's row of :func:`random_directions`, ``x_d`` its
        word-frequency vector.
    mass : ndarray of shape (n_words,)
        ``Σ_d x_d``, the normalizer of the patterns.
    doc_freq : ndarray of shape (n_words,)
        Number of counted documents containing each word.
    num_docs : int
        Documents counted (those with at least one token).
    seed : int
        Seed of the directions; sketches merge only with the same seed.
    """

    projections: np.ndarray
    mass: np.ndarray
    doc_freq: np.ndarray
    num_docs: int
    seed: int = 0

    def __post_init__(self):
        self.projections = np.asarray(self.projections, dtype=np.float64)
        self.mass = np.asarray(self.mass, dtype=np.float64)
        self.doc_freq = np.asarray(self.doc_freq, dtype=np.float64)
        V = self.mass.shape[0] if self.mass.ndim == 1 else -1
        if (
            self.projections.ndim != 2
            or self.projections.shape[1] != V
            or self.doc_freq.shape != (V,)
        ):
            raise InputError(
                "RPSketch needs projections of shape (n_projections, n_words) and mass, "
                f"doc_freq of shape (n_words,); got {self.projections.shape}, "
                f"{self.mass.shape}, {self.doc_freq.shape}"
            )
        self.num_docs = check_count("num_docs", self.num_docs)
        self.seed = _check_seed(self.seed)

    @classmethod
    def zeros(cls, n_words: int, n_projections: int, seed: int = 0) -> RPSketch:
        """The empty sketch (identity of :meth:`merge`)."""
        n_projections = _check_projections(n_projections)
        if int(n_words) != n_words or n_words < 0:
            raise InputError(f"n_words must be an int >= 0, got {n_words!r}")
        V, P = int(n_words), int(n_projections)
        return cls(np.zeros((P, V)), np.zeros(V), np.zeros(V), 0, seed)

    @property
    def n_words(self) -> int:
        return self.mass.shape[0]

    @property
    def n_projections(self) -> int:
        return self.projections.shape[0]

    def merge(self, other: RPSketch) -> RPSketch:
        """The sketch of the union of both document sets (documents must be disjoint)."""
        if not isinstance(other, RPSketch):
            raise InputError(f"can only merge an RPSketch, got {type(other).__name__}")
        if other.projections.shape != self.projections.shape or other.seed != self.seed:
            raise InputError(
                "cannot merge sketches of different shape or seed: "
                f"{self.projections.shape} seed {self.seed} vs {other.projections.shape} "
                f"seed {other.seed}"
            )
        return RPSketch(
            *field_sums(self, other, ("projections", "mass", "doc_freq", "num_docs")), self.seed)

    def __add__(self, other):
        return self.merge(other) if isinstance(other, RPSketch) else NotImplemented

    def projected_patterns(self) -> np.ndarray:
        """``X̃_i · g_p`` for every projection and word, shape (n_projections, n_words).

        Words that never occurred get 0.
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self.projections / self.mass[None, :]
        out[:, self.mass <= 0] = 0.0
        return out


@dataclass(eq=False)
class SplitStatistic:
    """DDP's split-document statistic, as sums over documents.

    Parameters
    ----------
    cross : ndarray of shape (n_words, n_words)
        ``Σ_d x_d^(1) x_d^(2)ᵀ`` over the two halves' frequency vectors (not symmetric).
    mass_first, mass_second : ndarray of shape (n_words,)
        ``Σ_d x_d^(1)`` and ``Σ_d x_d^(2)``.
    doc_freq : ndarray of shape (n_words,)
        Number of counted documents containing each word.
    num_docs : int
        Documents counted (those with at least two tokens, so both halves are non-empty).
    seed : int
        Seed of the split; statistics merge only with the same seed.
    """

    cross: np.ndarray
    mass_first: np.ndarray
    mass_second: np.ndarray
    doc_freq: np.ndarray
    num_docs: int
    seed: int = 0

    def __post_init__(self):
        self.cross = np.asarray(self.cross, dtype=np.float64)
        self.mass_first = np.asarray(self.mass_first, dtype=np.float64)
        self.mass_second = np.asarray(self.mass_second, dtype=np.float64)
        self.doc_freq = np.asarray(self.doc_freq, dtype=np.float64)
        V = self.mass_first.shape[0] if self.mass_first.ndim == 1 else -1
        if (
            self.cross.shape != (V, V)
            or self.mass_second.shape != (V,)
            or self.doc_freq.shape != (V,)
        ):
            raise InputError(
                "SplitStatistic needs cross of shape (n_words, n_words) and vectors of shape "
                f"(n_words,); got {self.cross.shape}, {self.mass_first.shape}, "
                f"{self.mass_second.shape}, {self.doc_freq.shape}"
            )
        self.num_docs = check_count("num_docs", self.num_docs)
        self.seed = _check_seed(self.seed)

    @classmethod
    def zeros(cls, n_words: int, seed: int = 0) -> SplitStatistic:
        """The empty statistic (identity of :meth:`merge`)."""
        if int(n_words) != n_words or n_words < 0:
            raise InputError(f"n_words must be an int >= 0, got {n_words!r}")
        V = int(n_words)
        return cls(np.zeros((V, V)), np.zeros(V), np.zeros(V), np.zeros(V), 0, seed)

    @property
    def n_words(self) -> int:
        return self.mass_first.shape[0]

    def merge(self, other: SplitStatistic) -> SplitStatistic:
        """The statistic of the union of both document sets (documents must be disjoint)."""
        if not isinstance(other, SplitStatistic):
            raise InputError(f"can only merge a SplitStatistic, got {type(other).__name__}")
        if other.n_words != self.n_words or other.seed != self.seed:
            raise InputError(
                f"cannot merge split statistics over {self.n_words} and {other.n_words} words "
                f"or with seeds {self.seed} and {other.seed}"
            )
        summed = ("cross", "mass_first", "mass_second", "doc_freq", "num_docs")
        return SplitStatistic(*field_sums(self, other, summed), self.seed)

    def __add__(self, other):
        return self.merge(other) if isinstance(other, SplitStatistic) else NotImplemented

    def correlation(self, words: np.ndarray | None = None) -> np.ndarray:
        """``C[i, j] = M ⟨X̃_i, X̃'_j⟩`` between the halves' normalized patterns.

        Parameters
        ----------
        words : ndarray of int, optional
            Restrict to these words (rows and columns); default all.

        Returns
        -------
        ndarray of shape (n_sel, n_sel)
            Not symmetric (first half rows, second half columns); 0 where a word has no mass
            in a half.
        """
        idx = np.arange(self.n_words) if words is None else np.asarray(words, dtype=np.int64)
        a = self.mass_first[idx]
        b = self.mass_second[idx]
        inv_a = np.divide(1.0, a, out=np.zeros_like(a), where=a > 0)
        inv_b = np.divide(1.0, b, out=np.zeros_like(b), where=b > 0)
        return self.num_docs * (inv_a[:, None] * self.cross[np.ix_(idx, idx)] * inv_b[None, :])


def rp_sketch(X, doc_ids, n_projections: int, seed: int = 0) -> RPSketch:
    """The :class:`RPSketch` of a batch of documents.

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n_docs, n_words)
        Word counts.
    doc_ids : array_like of int, shape (n_docs,)
        Stream-unique ids; they pick each document's random direction coordinates.
    n_projections : int
        ``P``; the paper uses about ``50 K``.
    seed : int

    Returns
    -------
    RPSketch
    """
    X = as_counts_csr(X)
    ids = _check_doc_ids(doc_ids, X.shape[0])
    F, lengths = _frequencies(X)
    keep = np.flatnonzero(lengths >= 1)
    proj = project_words(F[keep], ids[keep], n_projections, seed)
    return RPSketch(
        np.ascontiguousarray(proj.T),
        np.asarray(F[keep].sum(axis=0)).ravel(),
        np.asarray((X[keep] > 0).sum(axis=0), dtype=np.float64).ravel(),
        int(keep.size),
        seed,
    )


def split_statistic(X, doc_ids, seed: int = 0) -> SplitStatistic:
    """The :class:`SplitStatistic` of a batch of documents.

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n_docs, n_words)
        Word counts. Documents with fewer than two tokens are skipped.
    doc_ids : array_like of int, shape (n_docs,)
    seed : int

    Returns
    -------
    SplitStatistic
    """
    X = as_counts_csr(X)
    first, second = split_documents(X, doc_ids, seed)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    keep = np.flatnonzero(lengths >= 2)
    F1, _ = _frequencies(first[keep])
    F2, _ = _frequencies(second[keep])
    cross = (F1.T @ F2).toarray()
    return SplitStatistic(
        cross,
        np.asarray(F1.sum(axis=0)).ravel(),
        np.asarray(F2.sum(axis=0)).ravel(),
        np.asarray((X[keep] > 0).sum(axis=0), dtype=np.float64).ravel(),
        int(keep.size),
        seed,
    )


def update(state, X, doc_ids):
    """``new_state = update(state, X, doc_ids)`` for an :class:`RPSketch` or :class:`SplitStatistic`.

    Parameters
    ----------
    state : RPSketch or SplitStatistic
        Unchanged; its seed (and number of projections) are used for the batch.
    X : sparse matrix or ndarray of shape (n_docs, n_words)
    doc_ids : array_like of int, shape (n_docs,)

    Returns
    -------
    The same type as ``state``, over the documents of both.

    Raises
    ------
    InputError
        For an unknown state type, a width mismatch or malformed input.
    """
    if isinstance(state, RPSketch):
        if np.shape(X)[1] != state.n_words:
            raise InputError(f"X has {np.shape(X)[1]} words, the sketch {state.n_words}")
        return state.merge(rp_sketch(X, doc_ids, state.n_projections, state.seed))
    if isinstance(state, SplitStatistic):
        if np.shape(X)[1] != state.n_words:
            raise InputError(f"X has {np.shape(X)[1]} words, the statistic {state.n_words}")
        return state.merge(split_statistic(X, doc_ids, state.seed))
    raise InputError(f"state must be an RPSketch or a SplitStatistic, got {type(state).__name__}")


def merge(a, b):
    """``a.merge(b)`` for two states of the same type (associative and commutative)."""
    if type(a) is not type(b) or not isinstance(a, (RPSketch, SplitStatistic)):
        raise InputError(f"cannot merge {type(a).__name__} with {type(b).__name__}")
    return a.merge(b)
