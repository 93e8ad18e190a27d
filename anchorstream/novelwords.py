"""Novel words by data-dependent and random projections (Ding, Rohban, Ishwar, Saligrama 2014).

Ding et al. look at each word's *cross-document pattern*: row ``i`` of the words × documents
frequency matrix, normalized to sum to 1 over documents (``X̃_i``). Under separability the
patterns of a topic's novel (anchor) words all equal the topic's normalized weight pattern
``θ̃_k`` and every other word's pattern is a convex combination of those, so novel words are the
extreme points. The pipeline:

* **DDP** (Algorithm 1): split every document at random into two halves ``X``, ``X'``
  (independent samples of the same distribution) and form ``C = M ⟨X̃_i, X̃'_j⟩``; word ``i`` is
  novel when it is more correlated with itself than with every word far from it. The paper's
  agnostic variant is used: the far set is the ``r = W/2`` most distant words and the top
  ``s = 10 K`` scores are declared novel.
* **RP** (Algorithm 2): project every pattern on ``P ≈ 50 K`` random directions of
  ``R^M``; each direction's maximum and minimum are novel words. With documents of fixed
  length this detection is *not* consistent in ``M`` (the paper omits its analysis): a word's
  sampling noise ``X̃_i − Ã_i`` has ``M‖·‖² ≈ 1/(N p_i)``, the same order as the gaps
  ``M‖Ã_i − Ã_j‖²`` between a topic's corner and its nearly novel words, whatever ``M``, so a
  random direction of ``R^M`` sees both in a fixed ratio and its extremes stay noise picks
  (rare words, ~0.7 topic purity on the benchmark's planted model at 2 000 and 50 000
  documents alike, never the true anchors).
* **Clustering** (Algorithm 3): novel words of one topic have (asymptotically) equal patterns;
  they are grouped into ``K`` clusters by connected components of the distance-threshold graph
  (single linkage cut at ``K`` components when no threshold is given) or by the spectral
  clustering of ``exp(−D/σ)`` the paper suggests.
* **Re-anchoring** (RP only, :func:`extreme_words`): a cluster of RP's picks still points
  at its topic, so its mean pattern is used as a data-dependent direction (the principle of
  DDP): every candidate word is projected on it with the split halves — unbiased, and the
  noise vanishes as ``M`` grows — and the few most extreme words become the topic's novel
  words. ``n_extreme=None`` keeps the paper's plain cluster average.
* **Topic estimation** (Algorithm 4): every word's pattern is regressed on the clusters'
  average patterns over the simplex, using the two halves so the squared loss is unbiased,
  then scaled by the word's frequency and column-normalized.

Streaming. Everything the algorithms read is a sum over documents, so it is kept as mergeable
state (``new = update(state, X, doc_ids)``, ``a.merge(b)``):

* :class:`RPSketch` — ``Σ_d g_d x_dᵀ`` for ``P`` Gaussian directions, with ``g_d`` drawn from a
  counter-based hash of ``(seed, document id, projection)``: the same document always gets the
  same direction, whatever batch it arrives in, so a replay or a merge of partial sketches gives
  the same bits as one batch (up to summation order);
* :class:`SplitStatistic` — ``Σ_d x_d^(1) x_d^(2)ᵀ`` and the halves' sums, the DDP statistic,
  with the split of each document into halves drawn from the same kind of hash.

Here ``x_d = h_d / n_d`` is a document's word-frequency vector; ``X̃_i · d`` for a direction
``d`` is ``Σ_d g_d x_di / Σ_d x_di`` — one sketch row divided by the pattern mass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.cluster.hierarchy
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.csgraph
import scipy.spatial.distance

from anchorstream.cooccurrence import _as_counts_csr, _check_count
from anchorstream.errors import InputError

__all__ = [
    "NovelWordResult",
    "RPSketch",
    "SplitStatistic",
    "cluster_novel_words",
    "ddp_novel_words",
    "ddp_topics",
    "estimate_topics",
    "extreme_words",
    "merge",
    "pattern_distances",
    "random_directions",
    "rp_novel_words",
    "rp_sketch",
    "rp_topics",
    "split_documents",
    "split_statistic",
    "update",
]

# --------------------------------------------------------------------------------------------
# Counter-based randomness: a pure function of (seed, document id, counter)
# --------------------------------------------------------------------------------------------

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# Distinct streams for the directions and the document split, so they are independent.
_SALT_DIRECTIONS = np.uint64(0x5250)  # "RP"
_SALT_SPLIT = np.uint64(0x444450)  # "DDP"


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer on a uint64 array: a bijective, well-avalanched 64-bit hash.

    A counter-based generator (hash of the coordinates) instead of a seeded Generator per
    document: it is vectorized over a whole batch and needs no state, so the value for a given
    document never depends on batching, order or what came before.
    """
    z = np.asarray(x, dtype=np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
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
    if int(n_projections) != n_projections or n_projections < 1:
        raise InputError(f"n_projections must be a positive integer, got {n_projections!r}")
    keys = _doc_keys(seed, ids, _SALT_DIRECTIONS)[:, None]
    counter = np.arange(int(n_projections), dtype=np.uint64)[None, :] * np.uint64(2)
    u1 = _uniform(_mix(keys ^ _mix(counter)))
    u2 = _uniform(_mix(keys ^ _mix(counter + np.uint64(1))))
    # Box–Muller; 1 − u1 lies in (0, 1], so the logarithm is finite.
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


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
    X = _as_counts_csr(X)
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
        self.num_docs = _check_count("num_docs", self.num_docs)
        self.seed = _check_seed(self.seed)

    @classmethod
    def zeros(cls, n_words: int, n_projections: int, seed: int = 0) -> RPSketch:
        """The empty sketch (identity of :meth:`merge`)."""
        if int(n_projections) != n_projections or n_projections < 1:
            raise InputError(f"n_projections must be a positive integer, got {n_projections!r}")
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
            self.projections + other.projections,
            self.mass + other.mass,
            self.doc_freq + other.doc_freq,
            self.num_docs + other.num_docs,
            self.seed,
        )

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
        self.num_docs = _check_count("num_docs", self.num_docs)
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
        return SplitStatistic(
            self.cross + other.cross,
            self.mass_first + other.mass_first,
            self.mass_second + other.mass_second,
            self.doc_freq + other.doc_freq,
            self.num_docs + other.num_docs,
            self.seed,
        )

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
    X = _as_counts_csr(X)
    ids = _check_doc_ids(doc_ids, X.shape[0])
    F, lengths = _frequencies(X)
    keep = np.flatnonzero(lengths >= 1)
    V = X.shape[1]
    proj = np.zeros((int(n_projections), V))
    # Chunked so that the (chunk, P) block of directions stays small whatever P is.
    chunk = max(1, 4_000_000 // max(1, int(n_projections)))
    for start in range(0, keep.size, chunk):
        rows = keep[start : start + chunk]
        G = random_directions(ids[rows], n_projections, seed)
        proj += np.asarray(F[rows].T @ G).T
    return RPSketch(
        proj,
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
    X = _as_counts_csr(X)
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


# --------------------------------------------------------------------------------------------
# Algorithms 1–4
# --------------------------------------------------------------------------------------------


def _candidates(n_words, masses, doc_freq, candidates, min_df) -> np.ndarray:
    ok = np.ones(n_words, dtype=bool)
    for m in masses:
        ok &= m > 0
    if min_df < 0:
        raise InputError(f"min_df must be >= 0, got {min_df!r}")
    ok &= doc_freq >= min_df
    if candidates is not None:
        cand = np.asarray(candidates)
        if cand.dtype == bool:
            if cand.shape != (n_words,):
                raise InputError(f"candidates mask must have shape ({n_words},)")
            ok &= cand
        else:
            mask = np.zeros(n_words, dtype=bool)
            mask[cand.astype(np.int64)] = True
            ok &= mask
    return np.flatnonzero(ok)


def _check_k(n_topics) -> int:
    if isinstance(n_topics, bool) or int(n_topics) != n_topics or n_topics < 1:
        raise InputError(f"n_topics must be a positive integer, got {n_topics!r}")
    return int(n_topics)


def pattern_distances(split: SplitStatistic, words) -> np.ndarray:
    """Eq. (1): ``D_ij = M (X̃_i − X̃_j)(X̃'_i − X̃'_j)ᵀ`` between the given words.

    An unbiased estimate of ``M ‖Ã_i − Ã_j‖²`` (the halves are independent), so it can be
    slightly negative; it is clipped at 0.

    Parameters
    ----------
    split : SplitStatistic
    words : array_like of int, shape (n,)

    Returns
    -------
    ndarray of shape (n, n), symmetric, zero diagonal.
    """
    C = split.correlation(np.asarray(words, dtype=np.int64))
    d = np.diag(C)
    D = d[:, None] + d[None, :] - C - C.T
    np.fill_diagonal(D, 0.0)
    return np.maximum(D, 0.0)


def ddp_novel_words(
    split: SplitStatistic,
    n_topics: int,
    *,
    n_far: int | None = None,
    n_novel: int | None = None,
    min_df: float = 0.0,
    candidates=None,
    block: int = 512,
) -> np.ndarray:
    """Algorithm 1 (DDP), the paper's agnostic variant.

    For every candidate word ``i`` the far set ``J_i`` is the ``n_far`` words of largest
    distance (Eq. 1); the score is ``C_ii − max_{j ∈ J_i} C_ij`` (the margin of Eq. 2, with
    ``C`` symmetrized over the two halves), and the ``n_novel`` best scores are novel.

    Parameters
    ----------
    split : SplitStatistic
    n_topics : int
    n_far : int, optional
        ``r``; default half the candidates (paper: ``W/2``).
    n_novel : int, optional
        ``s``; default ``10 K`` (paper), capped at the number of candidates.
    min_df : float
        Words in fewer documents are not candidates (rare words have the noisiest patterns).
    candidates : bool mask of shape (n_words,) or int indices, optional
        Further restriction of the candidates.
    block : int
        Rows per block of the distance computation (bounds memory at ``block × n``).

    Returns
    -------
    ndarray of int64, shape (n_novel,)
        Word indices, best score first.

    Raises
    ------
    InputError
        If fewer than ``n_topics`` candidates have mass in both halves.
    """
    if not isinstance(split, SplitStatistic):
        raise InputError(f"split must be a SplitStatistic, got {type(split).__name__}")
    K = _check_k(n_topics)
    cand = _candidates(
        split.n_words, (split.mass_first, split.mass_second), split.doc_freq, candidates, min_df
    )
    n = cand.size
    if n < K:
        raise InputError(
            f"only {n} candidate words occur in both document halves (and pass min_df); need "
            f"at least n_topics={K}: lower min_df or add documents"
        )
    r = max(1, n // 2) if n_far is None else int(n_far)
    s = min(n, 10 * K if n_novel is None else int(n_novel))
    if not 1 <= r <= max(1, n - 1) or s < K:
        raise InputError(f"need 1 <= n_far < {n} and n_novel >= n_topics, got {r}, {s}")
    C = split.correlation(cand)
    Cs = (C + C.T) / 2.0
    d = np.diag(C).copy()
    score = np.empty(n)
    for start in range(0, n, block):
        rows = np.arange(start, min(n, start + block))
        D = d[rows, None] + d[None, :] - 2.0 * Cs[rows]
        D[np.arange(rows.size), rows] = -np.inf  # j != i
        far = np.argpartition(-D, r - 1, axis=1)[:, :r]
        score[rows] = d[rows] - np.take_along_axis(Cs[rows], far, axis=1).max(axis=1)
    order = np.lexsort((cand, -score))[:s]
    return cand[order].astype(np.int64)


def rp_novel_words(
    sketch: RPSketch, *, n_novel: int | None = None, min_df: float = 0.0, candidates=None
) -> np.ndarray:
    """Algorithm 2 (RP): the maximum and minimum of every random projection.

    Parameters
    ----------
    sketch : RPSketch
    min_df : float
        Words in fewer documents are not candidates.
    candidates : bool mask of shape (n_words,) or int indices, optional

    Returns
    -------
    ndarray of int64
        The distinct extreme words, most often extreme first (ties by word index).

    Raises
    ------
    InputError
        If there are no candidate words.
    """
    if not isinstance(sketch, RPSketch):
        raise InputError(f"sketch must be an RPSketch, got {type(sketch).__name__}")
    cand = _candidates(sketch.n_words, (sketch.mass,), sketch.doc_freq, candidates, min_df)
    if cand.size == 0:
        raise InputError("no candidate words: the sketch is empty or min_df is too high")
    vals = sketch.projected_patterns()[:, cand]
    hits = np.concatenate([np.argmax(vals, axis=1), np.argmin(vals, axis=1)])
    counts = np.bincount(hits, minlength=cand.size)
    found = np.flatnonzero(counts)
    order = np.lexsort((found, -counts[found]))
    if n_novel is not None:
        order = order[: int(n_novel)]
    return cand[found[order]].astype(np.int64)


def cluster_novel_words(
    split: SplitStatistic,
    novel,
    n_topics: int,
    *,
    method: str = "spectral",
    threshold: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, ...]:
    """Algorithm 3: group novel words into ``n_topics`` topics.

    ``method="threshold"`` is the paper's graph: words ``i, j`` are joined when
    ``D_ij <= d/2`` (``threshold`` is ``d``) and the connected components are the groups (the
    ``K`` largest when there are more). Without a threshold the components are those of the
    smallest ``d`` giving at most ``K`` components: single linkage cut at ``K`` clusters.
    ``method="spectral"`` is the paper's soft variant: weights ``exp(−D_ij / σ)`` with ``σ`` the
    median distance, normalized spectral clustering (Ng, Jordan, Weiss), k-means on the
    row-normalized leading eigenvectors.

    Parameters
    ----------
    split : SplitStatistic
    novel : array_like of int, shape (n_novel,)
        Novel words (from :func:`ddp_novel_words` or :func:`rp_novel_words`).
    n_topics : int
    method : {"spectral", "threshold"}
    threshold : float, optional
        ``d`` of Algorithm 3 (threshold method only).
    random_state : int, Generator or None
        Seeds the k-means of the spectral method.

    Returns
    -------
    tuple of n_topics int64 ndarrays
        The words of each group, ordered by the groups' first word in ``novel`` order.

    Raises
    ------
    InputError
        With fewer novel words than topics, an unknown method, or a threshold giving fewer
        than ``n_topics`` components.
    """
    K = _check_k(n_topics)
    novel = np.asarray(novel, dtype=np.int64)
    if novel.ndim != 1 or np.unique(novel).size != novel.size:
        raise InputError("novel must be a 1-D array of distinct word indices")
    if novel.size < K:
        raise InputError(
            f"only {novel.size} novel words for n_topics={K}: add documents, projections or "
            "lower min_df"
        )
    if method not in ("spectral", "threshold"):
        raise InputError(f"method must be 'spectral' or 'threshold', got {method!r}")
    D = pattern_distances(split, novel)
    n = novel.size
    if K == 1:
        labels = np.zeros(n, dtype=np.int64)
    elif method == "threshold":
        if threshold is None:
            Z = scipy.cluster.hierarchy.linkage(
                scipy.spatial.distance.squareform(D, checks=False), method="single"
            )
            # cut_tree undoes the last K − 1 merges: exactly K components even when
            # distances tie (fcluster's maxclust can return fewer).
            labels = scipy.cluster.hierarchy.cut_tree(Z, n_clusters=K).ravel()
        else:
            adj = sp.csr_matrix(D <= threshold / 2.0)
            _, labels = scipy.sparse.csgraph.connected_components(adj, directed=False)
        sizes = np.bincount(labels)
        if sizes.size < K:
            raise InputError(
                f"the distance graph has {sizes.size} components, fewer than n_topics={K}; "
                "use a smaller threshold or the spectral method"
            )
        # Keep the K largest components (ties: the one holding the earlier novel word).
        first = np.array([np.flatnonzero(labels == c)[0] for c in range(sizes.size)])
        keep = np.lexsort((first, -sizes))[:K]
        remap = np.full(sizes.size, -1)
        remap[keep] = np.arange(K)
        labels = remap[labels]
    else:
        from anchorstream.tsvd import kmeans  # the shared k-means++/Lloyd

        off = D[~np.eye(n, dtype=bool)]
        sigma = float(np.median(off[off > 0])) if np.any(off > 0) else 1.0
        W = np.exp(-D / sigma)
        np.fill_diagonal(W, 0.0)
        deg = W.sum(axis=1)
        inv = 1.0 / np.sqrt(np.maximum(deg, np.finfo(float).tiny))
        L = inv[:, None] * W * inv[None, :]
        vals, vecs = scipy.linalg.eigh((L + L.T) / 2.0, subset_by_index=[n - K, n - 1])
        vecs = vecs[:, ::-1]
        idx = np.argmax(np.abs(vecs), axis=0)
        vecs *= np.where(vecs[idx, np.arange(K)] < 0, -1.0, 1.0)  # fixed signs
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        U = vecs / np.maximum(norms, np.finfo(float).tiny)
        labels = kmeans(U, K, n_init=10, random_state=random_state).labels
    groups = [novel[labels == c] for c in range(K) if np.any(labels == c)]
    if len(groups) < K:
        raise InputError(f"clustering produced {len(groups)} non-empty groups, need {K}")
    position = {w: p for p, w in enumerate(novel.tolist())}
    groups.sort(key=lambda g: min(position[w] for w in g.tolist()))
    return tuple(np.asarray(g, dtype=np.int64) for g in groups)


def extreme_words(
    split: SplitStatistic,
    groups,
    n_words: int = 5,
    *,
    min_df: float = 0.0,
    candidates=None,
) -> tuple[np.ndarray, ...]:
    """The words most extreme along each group's mean pattern: one data-dependent projection.

    Group ``k``'s mean pattern ``Y_k`` is a direction of ``R^M`` inside the span of the topic
    patterns; over the convex hull of the word patterns a linear function is largest at a
    corner, i.e. at a novel word (Proposition 1), the one of the topic ``Y_k`` leans to. Each
    candidate is scored with the split halves, ``M ⟨X̃_i, Y'_k⟩`` and ``M ⟨X̃'_i, Y_k⟩``:
    unbiased, their noise falls like ``1/√M``, so the maximizer converges to the corner even
    when the group itself holds only noisy, nearly novel words (what RP's detection yields).
    The smaller of the two scores is used, which marks down words whose halves disagree
    (rare, noisy ones); the ``n_words`` best words are averaged by :func:`estimate_topics`
    as the paper averages a cluster (§4.3), trading a little bias for noise resilience.

    Parameters
    ----------
    split : SplitStatistic
    groups : sequence of n_topics int arrays
        Novel words per topic (from :func:`cluster_novel_words`).
    n_words : int
        Words kept per group, best first.
    min_df : float
        Words in fewer documents are not candidates.
    candidates : bool mask of shape (n_words,) or int indices, optional
        Further restriction of the candidates.

    Returns
    -------
    tuple of n_topics int64 ndarrays
        Up to ``n_words`` words per group, largest score first (ties by word index); a word
        may serve two groups.

    Raises
    ------
    InputError
        For empty groups, group words without mass in both halves, ``n_words < 1`` or no
        candidates.
    """
    if not isinstance(split, SplitStatistic):
        raise InputError(f"split must be a SplitStatistic, got {type(split).__name__}")
    if isinstance(n_words, bool) or int(n_words) != n_words or n_words < 1:
        raise InputError(f"n_words must be a positive integer, got {n_words!r}")
    V = split.n_words
    groups = [np.asarray(g, dtype=np.int64).ravel() for g in groups]
    if not groups or any(g.size == 0 for g in groups):
        raise InputError("groups must be a non-empty sequence of non-empty word arrays")
    if any(g.min() < 0 or g.max() >= V for g in groups):
        raise InputError(f"group words must lie in [0, {V})")
    a, b = split.mass_first, split.mass_second
    if any(np.any(a[g] <= 0) or np.any(b[g] <= 0) for g in groups):
        raise InputError("every group word needs mass in both document halves")
    cand = _candidates(V, (a, b), split.doc_freq, candidates, min_df)
    if cand.size == 0:
        raise InputError("no candidate words: the statistic is empty or min_df is too high")
    # Only the columns of the group words are read: O(V · |groups|), not the V × V matrix C.
    words = np.unique(np.concatenate(groups))
    col = {w: c for c, w in enumerate(words.tolist())}
    avg = np.zeros((words.size, len(groups)))
    for k, g in enumerate(groups):
        np.add.at(avg[:, k], [col[w] for w in g.tolist()], 1.0 / g.size)
    M = split.num_docs
    # C[i, j] = M cross[i, j] / (a_i b_j):  first = C[cand] Avgᵀ,  second = Cᵀ[cand] Avgᵀ.
    first = (M / a[cand])[:, None] * (split.cross[np.ix_(cand, words)] @ (avg / b[words, None]))
    second = (M / b[cand])[:, None] * (split.cross[np.ix_(words, cand)].T @ (avg / a[words, None]))
    score = np.minimum(first, second)
    keep = min(int(n_words), cand.size)
    return tuple(
        cand[np.lexsort((cand, -score[:, k]))[:keep]].astype(np.int64)
        for k in range(len(groups))
    )


def _project_simplex_rows(Y: np.ndarray) -> np.ndarray:
    """Euclidean projection of every row onto the probability simplex (sort-based)."""
    n, K = Y.shape
    U = -np.sort(-Y, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    ks = np.arange(1, K + 1)
    cond = U - css / ks > 0
    rho = K - 1 - np.argmax(cond[:, ::-1], axis=1)
    tau = css[np.arange(n), rho] / (rho + 1)
    return np.maximum(Y - tau[:, None], 0.0)


def estimate_topics(
    split: SplitStatistic,
    groups,
    *,
    max_iter: int = 2000,
    tol: float = 1e-10,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 4: regress every word's pattern on the groups' average patterns.

    For word ``i`` it minimizes ``M (X̃_i − bY)(X̃'_i − bY')ᵀ`` over the simplex, where row k of
    ``Y`` (``Y'``) is the mean pattern of group k in the first (second) half; expanded, this is
    the quadratic ``bᵀ G b − bᵀ h_i + c`` with ``G`` and ``h_i`` block means of the correlation
    ``C``. The Gram ``G`` is made positive semidefinite (sampling noise can break that), and all
    words are solved together by accelerated projected gradient (FISTA with restarts). Then
    ``β̂_i = (Σ_d x_di / M) b_i`` and the columns are normalized.

    Parameters
    ----------
    split : SplitStatistic
    groups : sequence of n_topics int arrays
        Novel words per topic (from :func:`cluster_novel_words`, or one anchor each).
    max_iter : int
    tol : float
        Stop when the largest coefficient change of an iteration is below ``tol``.

    Returns
    -------
    topic_word : ndarray of shape (n_words, n_topics)
        Columns sum to 1.
    coef : ndarray of shape (n_words, n_topics)
        The regression coefficients ``b_i`` (rows on the simplex), ≈ ``p(topic | word)``.
    """
    if not isinstance(split, SplitStatistic):
        raise InputError(f"split must be a SplitStatistic, got {type(split).__name__}")
    groups = [np.asarray(g, dtype=np.int64).ravel() for g in groups]
    K = len(groups)
    V = split.n_words
    if K < 1 or any(g.size == 0 for g in groups):
        raise InputError("groups must be a non-empty sequence of non-empty word arrays")
    if any(g.min() < 0 or g.max() >= V for g in groups):
        raise InputError(f"group words must lie in [0, {V})")
    if split.num_docs == 0:
        raise InputError("the split statistic is empty: no documents of >= 2 tokens")
    C = split.correlation()
    Cs = (C + C.T) / 2.0
    # Averaging matrix of the groups: row k is uniform over group k. The paper finds the
    # average "more noise resilient than choosing a single point" (§4.3); measured here too.
    Avg = np.zeros((K, V))
    for k, g in enumerate(groups):
        Avg[k, g] = 1.0 / g.size
    G = Avg @ Cs @ Avg.T
    G = (G + G.T) / 2.0
    w, Q = np.linalg.eigh(G)
    w = np.maximum(w, max(w.max(), 0.0) * 1e-10)
    G = (Q * w) @ Q.T
    H = 2.0 * (Cs @ Avg.T)  # (V, K): h_i = (Y X̃'_iᵀ + Y' X̃_iᵀ) M
    L = 2.0 * w.max()
    if L <= 0:
        raise InputError("the group patterns are all zero; the statistic holds no signal")
    b = np.full((V, K), 1.0 / K)
    z, t = b.copy(), 1.0
    for _ in range(int(max_iter)):
        grad = 2.0 * z @ G - H
        b_new = _project_simplex_rows(z - grad / L)
        delta = float(np.max(np.abs(b_new - b)))
        # Gradient restart: drop momentum when it points uphill (keeps FISTA monotone-ish).
        if np.sum((z - b_new) * (b_new - b)) > 0:
            t = 1.0
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        z = b_new + ((t - 1.0) / t_new) * (b_new - b)
        b, t = b_new, t_new
        if delta < tol:
            break
    mass = (split.mass_first + split.mass_second) / 2.0
    topic_word = b * mass[:, None]
    sums = topic_word.sum(axis=0)
    if np.any(sums <= 0):
        raise InputError("a topic received no mass; the groups do not separate the words")
    return topic_word / sums, b


@dataclass(frozen=True)
class NovelWordResult:
    """What :func:`ddp_topics` and :func:`rp_topics` return.

    Attributes
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
        Columns sum to 1.
    coef : ndarray of shape (n_words, n_topics)
        Regression coefficients of Algorithm 4 (rows on the simplex).
    novel_words : ndarray of int64
        Everything the detector declared novel, best first.
    groups : tuple of n_topics int64 ndarrays
        The novel words of each topic that Algorithm 4 averaged; ``groups[k][0]`` serves as
        topic k's anchor.
    clusters : tuple of n_topics int64 ndarrays
        Algorithm 3's clusters of ``novel_words``; the same as ``groups`` unless RP
        re-anchored them (:func:`extreme_words`).
    """

    topic_word: np.ndarray
    coef: np.ndarray
    novel_words: np.ndarray
    groups: tuple
    clusters: tuple = ()

    @property
    def anchors(self) -> np.ndarray:
        """One representative novel word per topic, shape (n_topics,)."""
        return np.array([g[0] for g in self.groups], dtype=np.int64)


def ddp_topics(
    split: SplitStatistic,
    n_topics: int,
    *,
    n_far: int | None = None,
    n_novel: int | None = None,
    min_df: float = 0.0,
    cluster: str = "spectral",
    threshold: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> NovelWordResult:
    """DDP end to end: Algorithms 1, 3 and 4 on a :class:`SplitStatistic`.

    Parameters are those of :func:`ddp_novel_words` and :func:`cluster_novel_words`.

    Returns
    -------
    NovelWordResult

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, sample_documents
    >>> truth = planted_model(100, 3, random_state=0)
    >>> X, _ = sample_documents(truth, 500, random_state=0)
    >>> stat = split_statistic(X, np.arange(500))
    >>> ddp_topics(stat, 3, random_state=0).topic_word.shape
    (100, 3)
    """
    novel = ddp_novel_words(split, n_topics, n_far=n_far, n_novel=n_novel, min_df=min_df)
    groups = cluster_novel_words(
        split, novel, n_topics, method=cluster, threshold=threshold, random_state=random_state
    )
    topic_word, coef = estimate_topics(split, groups)
    return NovelWordResult(topic_word, coef, novel, groups, groups)


def rp_topics(
    sketch: RPSketch,
    split: SplitStatistic,
    n_topics: int,
    *,
    min_df: float = 0.0,
    cluster: str = "spectral",
    threshold: float | None = None,
    n_extreme: int | None = 5,
    random_state: int | np.random.Generator | None = None,
) -> NovelWordResult:
    """RP end to end: Algorithm 2 on the sketch, Algorithm 3, re-anchoring, then Algorithm 4.

    Parameters
    ----------
    sketch : RPSketch
    split : SplitStatistic
        Over the same documents and vocabulary as ``sketch``.
    n_topics : int
    min_df, cluster, threshold, random_state
        As for :func:`rp_novel_words` and :func:`cluster_novel_words`.
    n_extreme : int or None
        Each cluster is replaced by its ``n_extreme`` most extreme words
        (:func:`extreme_words`, same ``min_df``) before Algorithm 4. ``None`` averages the
        clusters as they are (the paper), whose error stops falling with more documents: on
        the separable planted model of ``benchmarks/bench_methods.py`` (V = 500, K = 10, 100
        words per document) the mean ℓ1 error is 0.278 / 0.254 / 0.235 at 2 000 / 10 000 /
        50 000 documents that way, and 0.113 / 0.059 / 0.042 with the default.

    Returns
    -------
    NovelWordResult
    """
    if not isinstance(split, SplitStatistic) or split.n_words != getattr(sketch, "n_words", -1):
        raise InputError("rp_topics needs an RPSketch and a SplitStatistic over the same words")
    # A word needs a pattern in both halves for the clustering distances.
    both = (split.mass_first > 0) & (split.mass_second > 0)
    novel = rp_novel_words(sketch, min_df=min_df, candidates=both)
    clusters = cluster_novel_words(
        split, novel, n_topics, method=cluster, threshold=threshold, random_state=random_state
    )
    groups = clusters
    if n_extreme is not None:
        groups = extreme_words(split, clusters, n_extreme, min_df=min_df, candidates=both)
    topic_word, coef = estimate_topics(split, groups)
    return NovelWordResult(topic_word, coef, novel, groups, clusters)
