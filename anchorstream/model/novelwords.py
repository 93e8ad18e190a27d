"""Novel words by data-dependent and random projections (Ding, Rohban, Ishwar, Saligrama 2014).

Under separability a topic's novel (anchor) words are the extreme points of the words'
cross-document patterns. This module detects them (Algorithm 1, DDP; Algorithm 2, RP), clusters
them into topics (Algorithm 3), re-anchors RP's clusters along their mean patterns
(:func:`extreme_words`) and runs the pipelines end to end (:func:`ddp_topics`,
:func:`rp_topics`); Algorithm 4, the topic regression, lives in
:mod:`anchorstream.model.patternregression` and is re-exported here. Everything read is mergeable
state (:mod:`anchorstream.stats.wordpatterns`), so the methods stream. The method notes:
``docs/algorithms.md`` (Novel words); measured figures: ``benchmarks/README.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.cluster.hierarchy
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.csgraph
import scipy.spatial.distance

from anchorstream.errors import InputError
from anchorstream.model.patternregression import estimate_topics
from anchorstream.stats.wordpatterns import RPSketch, SplitStatistic

__all__ = [
    "NovelWordResult",
    "cluster_novel_words",
    "ddp_novel_words",
    "ddp_topics",
    "estimate_topics",
    "extreme_words",
    "pattern_distances",
    "rp_novel_words",
    "rp_topics",
    "signal_weights",
]

# --------------------------------------------------------------------------------------------
# Algorithms 1–3 (Algorithm 4, estimate_topics, is in anchorstream.model.patternregression)
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


def signal_weights(sketch: RPSketch, split: SplitStatistic, words) -> np.ndarray:
    """How much of each word's projected spread is topic signal: ``‖Ã_i‖² / ‖X̃_i‖²``.

    A projection ``X̃_i · g`` over random Gaussian ``g`` spreads as ``‖X̃_i‖²`` (signal plus the
    word's sampling noise), estimated by the mean square of the sketch's projections; the
    signal alone, ``‖Ã_i‖²``, by the split halves' unbiased ``C_ii / M``. Rare words are mostly
    noise (weight near 0), a frequent topic-specific word mostly signal (near 1).

    Parameters
    ----------
    sketch : RPSketch
    split : SplitStatistic
        Over the same documents and vocabulary.
    words : array_like of int

    Returns
    -------
    ndarray of shape (len(words),), in [0, 1].
    """
    words = np.asarray(words, dtype=np.int64)
    return _signal_fraction(sketch.projected_patterns()[:, words], split, words)


def _signal_fraction(vals: np.ndarray, split: SplitStatistic, words: np.ndarray) -> np.ndarray:
    total = np.mean(vals**2, axis=0)
    a, b = split.mass_first[words], split.mass_second[words]
    ok = (a > 0) & (b > 0) & (total > 0)
    signal = np.zeros(words.size)
    signal[ok] = split.num_docs * split.cross[words[ok], words[ok]] / (a[ok] * b[ok])
    signal /= max(split.num_docs, 1)
    w = np.divide(signal, total, out=np.zeros_like(signal), where=ok)
    return np.clip(w, 0.0, 1.0)


def rp_novel_words(
    sketch: RPSketch,
    *,
    n_novel: int | None = None,
    min_df: float = 0.0,
    candidates=None,
    split: SplitStatistic | None = None,
) -> np.ndarray:
    """Algorithm 2 (RP): the maximum and minimum of every random projection.

    With ``split``, each word's projections are first scaled by the square root of its
    :func:`signal_weights`: ``X̃_i · g`` rescaled from its whole spread to the spread of its
    signal, ``√(‖Ã_i‖² / ‖X̃_i‖²) X̃_i · g``. Without noise that is the paper's projection; with
    short documents the paper's extremes are the noisiest (rarest) words, not the corners of
    the patterns' hull (``benchmarks/README.md``, seed methods: 1098 of 1100 candidates).

    Parameters
    ----------
    sketch : RPSketch
    n_novel : int, optional
        Keep only the this many most often extreme words.
    min_df : float
        Words in fewer documents are not candidates.
    candidates : bool mask of shape (n_words,) or int indices, optional
    split : SplitStatistic, optional
        Over the same documents; enables the noise-aware scaling above.

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
    if split is not None:
        if not isinstance(split, SplitStatistic) or split.n_words != sketch.n_words:
            raise InputError("split must be a SplitStatistic over the sketch's words")
        vals = vals * np.sqrt(_signal_fraction(vals, split, cand))[None, :]
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
        from anchorstream.model.tsvd import kmeans  # the shared k-means++/Lloyd

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
    n_extreme: int | None = None,
    random_state: int | np.random.Generator | None = None,
) -> NovelWordResult:
    """DDP end to end: Algorithms 1, 3 and 4 on a :class:`SplitStatistic`.

    Parameters are those of :func:`ddp_novel_words` and :func:`cluster_novel_words`, and
    ``n_extreme``: as for :func:`rp_topics`, each cluster replaced by its ``n_extreme`` most
    extreme words (:func:`extreme_words`); None (default) averages the clusters (the paper).

    Returns
    -------
    NovelWordResult

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, sample_documents
    >>> truth = planted_model(100, 3, random_state=0)
    >>> X, _ = sample_documents(truth, 500, random_state=0)
    >>> from anchorstream.stats.wordpatterns import split_statistic
    >>> stat = split_statistic(X, np.arange(500))
    >>> ddp_topics(stat, 3, random_state=0).topic_word.shape
    (100, 3)
    """
    novel = ddp_novel_words(split, n_topics, n_far=n_far, n_novel=n_novel, min_df=min_df)
    groups = cluster_novel_words(
        split, novel, n_topics, method=cluster, threshold=threshold, random_state=random_state
    )
    clusters = groups
    if n_extreme is not None:
        both = (split.mass_first > 0) & (split.mass_second > 0)
        groups = extreme_words(split, clusters, n_extreme, min_df=min_df, candidates=both)
    topic_word, coef = estimate_topics(split, groups)
    return NovelWordResult(topic_word, coef, novel, groups, clusters)


def rp_topics(
    sketch: RPSketch,
    split: SplitStatistic,
    n_topics: int,
    *,
    min_df: float = 0.0,
    cluster: str = "spectral",
    threshold: float | None = None,
    n_extreme: int | None = 5,
    noise_aware: bool = False,
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
    noise_aware : bool
        Detect with the projections scaled to each word's signal (:func:`rp_novel_words` with
        ``split``); False (default) is the paper's detection. ``fit_topics`` uses True.

    Returns
    -------
    NovelWordResult
    """
    if not isinstance(split, SplitStatistic) or split.n_words != getattr(sketch, "n_words", -1):
        raise InputError("rp_topics needs an RPSketch and a SplitStatistic over the same words")
    # A word needs a pattern in both halves for the clustering distances.
    both = (split.mass_first > 0) & (split.mass_second > 0)
    novel = rp_novel_words(
        sketch, min_df=min_df, candidates=both, split=split if noise_aware else None
    )
    clusters = cluster_novel_words(
        split, novel, n_topics, method=cluster, threshold=threshold, random_state=random_state
    )
    groups = clusters
    if n_extreme is not None:
        groups = extreme_words(split, clusters, n_extreme, min_df=min_df, candidates=both)
    topic_word, coef = estimate_topics(split, groups)
    return NovelWordResult(topic_word, coef, novel, groups, clusters)
