"""Novel words into topic groups: Algorithm 3 of Ding et al. 2014 and the steps around it.

The detected novel words (:mod:`anchorstream.model.novelwords`) are clustered
(:func:`cluster_novel_words`, the paper's Algorithm 3), each cluster is re-anchored on the words
most extreme along its mean pattern (:func:`extreme_words`), and when more clusters were cut
than there are topics the groups that lie farthest apart are kept (:func:`distinct_groups`).
:func:`novel_groups` composes the three for :func:`~anchorstream.model.novelwords.ddp_topics`
and :func:`~anchorstream.model.novelwords.rp_topics`. The method notes: ``docs/algorithms.md``
(Novel words).
"""

from __future__ import annotations

import numpy as np
import scipy.cluster.hierarchy
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.csgraph
import scipy.spatial.distance

from anchorstream.errors import InputError
from anchorstream.stats.wordpatterns import SplitStatistic

__all__ = [
    "cluster_novel_words",
    "distinct_groups",
    "extreme_words",
    "novel_groups",
    "pattern_distances",
]


def candidate_words(n_words, masses, doc_freq, candidates, min_df) -> np.ndarray:
    """Indices of the words with mass in every one of ``masses`` and ``doc_freq >= min_df``,
    restricted further to ``candidates`` (a bool mask or indices) when given."""
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


def check_n_topics(n_topics) -> int:
    """``n_topics`` as an int, or an InputError unless it is a positive integer."""
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


def cluster_novel_words(
    split: SplitStatistic,
    novel,
    n_topics: int,
    *,
    method: str = "spectral",
    threshold: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, ...]:
    """Algorithm 3: group novel words into ``n_topics`` groups.

    ``n_topics`` is the number of groups cut; :func:`ddp_topics` and :func:`rp_topics` may ask
    for more than they keep (``n_clusters``) and choose among them with
    :func:`distinct_groups`.

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
    K = check_n_topics(n_topics)
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
        from anchorstream.model.kmeans import kmeans

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


def _group_averages(groups) -> tuple[np.ndarray, np.ndarray]:
    """The words of the groups (sorted, distinct) and the ``(n_words, n_groups)`` matrix whose
    column ``k`` averages group ``k``'s words (``1 / |g|`` per occurrence)."""
    words = np.unique(np.concatenate(groups))
    col = np.searchsorted(words, np.concatenate(groups))
    owner = np.repeat(np.arange(len(groups)), [g.size for g in groups])
    avg = np.zeros((words.size, len(groups)))
    np.add.at(avg, (col, owner), np.concatenate([np.full(g.size, 1.0 / g.size) for g in groups]))
    return words, avg


def distinct_groups(split: SplitStatistic, groups, n_keep: int, *, sizes=None) -> np.ndarray:
    """The ``n_keep`` groups whose mean patterns lie farthest apart (farthest-first traversal).

    Algorithm 3 cut into exactly ``K`` clusters follows the bulk of the novel words: a topic
    with many of them is split in two while a topic with a handful is merged into a neighbour
    and never gets a group (on Gibbs-truth corpora, 3 of 50 topics per draw). Cut into more
    clusters and re-anchored (:func:`extreme_words`), every cluster sits at a corner, several
    at the same one; keeping the corners that lie farthest apart keeps one group per topic,
    the extreme-point principle of the anchor searches applied to the groups. Gonzalez's
    greedy k-center traversal: start from the largest group (``sizes``; default the first),
    then repeatedly add the group farthest from those kept. Distances are the split halves'
    unbiased ``M ‖Ȳ_a − Ȳ_b‖²`` between the groups' mean patterns.

    Parameters
    ----------
    split : SplitStatistic
    groups : sequence of int arrays
        Words per group, at least ``n_keep`` groups.
    n_keep : int
    sizes : array_like, optional
        One weight per group; the traversal starts at the largest (ties: the first).

    Returns
    -------
    ndarray of int64, shape (n_keep,)
        Indices into ``groups``, in the order they were kept.

    Raises
    ------
    InputError
        With fewer groups than ``n_keep``, an empty group or ``sizes`` of the wrong length.
    """
    K = check_n_topics(n_keep)
    groups = [np.asarray(g, dtype=np.int64).ravel() for g in groups]
    if len(groups) < K or any(g.size == 0 for g in groups):
        raise InputError(f"need at least n_keep={K} non-empty groups, got {len(groups)}")
    sizes = np.ones(len(groups)) if sizes is None else np.asarray(sizes, dtype=np.float64)
    if sizes.shape != (len(groups),):
        raise InputError(f"sizes must have one entry per group ({len(groups)})")
    words, avg = _group_averages(groups)
    C = split.correlation(words)
    gram = avg.T @ ((C + C.T) / 2.0) @ avg
    sq = np.diag(gram)
    dist = sq[:, None] + sq[None, :] - 2.0 * gram
    kept = [int(np.argmax(sizes))]
    nearest = dist[kept[0]].copy()
    for _ in range(K - 1):
        nearest[kept] = -np.inf
        nxt = int(np.argmax(nearest))
        kept.append(nxt)
        nearest = np.minimum(nearest, dist[nxt])
    return np.asarray(kept, dtype=np.int64)


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
    cand = candidate_words(V, (a, b), split.doc_freq, candidates, min_df)
    if cand.size == 0:
        raise InputError("no candidate words: the statistic is empty or min_df is too high")
    # Only the columns of the group words are read: O(V · |groups|), not the V × V matrix C.
    words, avg = _group_averages(groups)
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


def novel_groups(split: SplitStatistic, novel, n_topics: int, *, n_clusters: int | None = None,
                 cluster: str = "spectral", threshold: float | None = None,
                 n_extreme: int | None = None, min_df: float = 0.0,
                 random_state: int | np.random.Generator | None = None
                 ) -> tuple[tuple, tuple, tuple]:
    """Algorithm 3 into ``n_clusters`` clusters, re-anchoring, then ``n_topics`` groups.

    Parameters
    ----------
    split : SplitStatistic
    novel : array_like of int
        The detected novel words.
    n_topics : int
    n_clusters : int, optional
        Clusters cut (default ``n_topics``, the paper; at most the number of novel words); with
        more, :func:`distinct_groups` keeps ``n_topics`` of them.
    cluster, threshold, random_state
        As for :func:`cluster_novel_words`.
    n_extreme : int, optional
        Each cluster replaced by its ``n_extreme`` most extreme words (:func:`extreme_words`);
        None keeps the clusters.
    min_df : float
        Candidates of the re-anchoring.

    Returns
    -------
    clusters : tuple of int64 ndarrays
        Algorithm 3's clusters.
    candidates : tuple of int64 ndarrays
        Every cluster after re-anchoring (``clusters`` when ``n_extreme`` is None): what the
        groups were kept from.
    groups : tuple of n_topics int64 ndarrays
        The words of each topic.
    """
    K = check_n_topics(n_topics)
    if n_clusters is not None and (isinstance(n_clusters, bool) or int(n_clusters) != n_clusters
                                   or n_clusters < K):
        raise InputError(f"n_clusters must be an integer >= n_topics={K}, got {n_clusters!r}")
    # More clusters than novel words cannot be cut; fewer than K is cluster_novel_words' error.
    n_cut = K if n_clusters is None else max(K, min(int(n_clusters), np.asarray(novel).size))
    clusters = cluster_novel_words(
        split, novel, n_cut, method=cluster, threshold=threshold, random_state=random_state
    )
    candidates = clusters
    if n_extreme is not None:
        both = (split.mass_first > 0) & (split.mass_second > 0)
        candidates = extreme_words(split, clusters, n_extreme, min_df=min_df, candidates=both)
    groups = candidates
    if n_cut > K:
        kept = distinct_groups(split, candidates, K, sizes=[c.size for c in clusters])
        groups = tuple(candidates[i] for i in kept)
    return clusters, candidates, groups
