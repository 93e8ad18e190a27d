"""Novel words by data-dependent and random projections (Ding, Rohban, Ishwar, Saligrama 2014).

Under separability a topic's novel (anchor) words are the extreme points of the words'
cross-document patterns. This module detects them (Algorithm 1, DDP; Algorithm 2, RP) and runs
the pipelines end to end (:func:`ddp_topics`, :func:`rp_topics`). Algorithm 3, the clustering,
and the steps that turn clusters into one group of words per topic live in
:mod:`anchorstream.model.novelgroups`; Algorithm 4, the topic regression, in
:mod:`anchorstream.model.patternregression`; both are re-exported here. Everything read is mergeable
state (:mod:`anchorstream.stats.wordpatterns`), so the methods stream. The method notes:
``docs/algorithms.md`` (Novel words); measured figures: ``benchmarks/README.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anchorstream.errors import InputError
from anchorstream.model.novelgroups import (
    candidate_words,
    check_n_topics,
    cluster_novel_words,
    distinct_groups,
    extreme_words,
    novel_groups,
    pattern_distances,
)
from anchorstream.model.patternregression import estimate_topics
from anchorstream.stats.wordpatterns import RPSketch, SplitStatistic

__all__ = [
    "NovelWordResult",
    "cluster_novel_words",
    "ddp_novel_words",
    "ddp_topics",
    "distinct_groups",
    "estimate_topics",
    "extreme_words",
    "pattern_distances",
    "rp_novel_words",
    "rp_topics",
    "signal_weights",
]

# --------------------------------------------------------------------------------------------
# Algorithms 1 and 2 (3: anchorstream.model.novelgroups; 4: anchorstream.model.patternregression)
# --------------------------------------------------------------------------------------------


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
    K = check_n_topics(n_topics)
    cand = candidate_words(
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
    cand = candidate_words(sketch.n_words, (sketch.mass,), sketch.doc_freq, candidates, min_df)
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
    clusters : tuple of int64 ndarrays
        Algorithm 3's clusters of ``novel_words`` (``n_clusters`` of them); the same as
        ``groups`` unless they were re-anchored (:func:`extreme_words`) or more were cut than
        kept (:func:`distinct_groups`).
    candidates : tuple of int64 ndarrays
        Every cluster after re-anchoring, the groups' pool (``fit_topics`` selects its own
        ``n_topics`` of them, :func:`~anchorstream.model.recover.select_groups`).
    """

    topic_word: np.ndarray
    coef: np.ndarray
    novel_words: np.ndarray
    groups: tuple
    clusters: tuple = ()
    candidates: tuple = ()

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
    n_clusters: int | None = None,
    random_state: int | np.random.Generator | None = None,
) -> NovelWordResult:
    """DDP end to end: Algorithms 1, 3 and 4 on a :class:`SplitStatistic`.

    Parameters are those of :func:`ddp_novel_words` and :func:`cluster_novel_words`, and, as
    for :func:`rp_topics`, ``n_extreme``: each cluster replaced by its ``n_extreme`` most
    extreme words (:func:`extreme_words`); None (default) averages the clusters (the paper);
    and ``n_clusters``: Algorithm 3 cuts this many clusters (default ``n_topics``, the paper)
    and :func:`distinct_groups` keeps the ``n_topics`` farthest apart.

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
    clusters, candidates, groups = novel_groups(
        split, novel, n_topics, n_clusters=n_clusters, cluster=cluster, threshold=threshold,
        n_extreme=n_extreme, min_df=min_df, random_state=random_state,
    )
    topic_word, coef = estimate_topics(split, groups)
    return NovelWordResult(topic_word, coef, novel, groups, clusters, candidates)


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
    n_clusters: int | None = None,
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
    n_clusters : int, optional
        Algorithm 3 cuts this many clusters (default ``n_topics``, the paper) and
        :func:`distinct_groups` keeps the ``n_topics`` whose groups lie farthest apart.

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
    clusters, candidates, groups = novel_groups(
        split, novel, n_topics, n_clusters=n_clusters, cluster=cluster, threshold=threshold,
        n_extreme=n_extreme, min_df=min_df, random_state=random_state,
    )
    topic_word, coef = estimate_topics(split, groups)
    return NovelWordResult(topic_word, coef, novel, groups, clusters, candidates)
