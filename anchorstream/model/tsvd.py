"""Thresholded SVD (TSVD) topic recovery for dominant-admixture corpora (Bansal et al. 2014).

TSVD assumes every document has one *dominant* topic and every topic a set of *catchwords*. It
thresholds each word's frequencies at a word-specific level, clusters the documents in the rank-K
SVD projection (k-means++ then Lloyd), finds each cluster's catchwords and averages the documents
richest in them (paper §3.3, with the §4 practical parameters): :func:`tsvd`. It reads
documents, not the co-occurrence, so the daemon runs it over a bounded reservoir of recent
documents. :func:`tsvd_clusters` (steps 1-4) and :func:`cluster_words` give what
``fit_topics(method="tsvd")`` recovers its topics from instead of the document averages. The
steps and the choices: ``docs/algorithms.md`` (TSVD).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

from anchorstream.stats.cooccurrence import as_counts_csr
from anchorstream.errors import InputError
from anchorstream.model.kmeans import KMeansResult, kmeans

__all__ = ["TSVDClusters", "TSVDResult", "cluster_words", "tsvd", "tsvd_clusters",
           "word_thresholds"]


# --------------------------------------------------------------------------------------------
# TSVD
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TSVDResult:
    """What :func:`tsvd` returns.

    Attributes
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
        ``p(word | topic)``; every column sums to 1.
    catchwords : tuple of n_topics int64 ndarrays
        Catchword indices of each topic (may be empty; the topic then averages its cluster).
    labels : ndarray of int64, shape (n_docs,)
        Dominant-topic cluster of every document (-1 for documents with no word at its
        threshold, among them empty ones, and, with ``split=True``, for the threshold half).
    thresholds : ndarray of shape (n_words,)
        Per-word frequency threshold ``ζ_i / m``; ``inf`` for words in no document.
    inertia : float
        Lloyd objective of the chosen clustering.
    """

    topic_word: np.ndarray
    catchwords: tuple
    labels: np.ndarray
    thresholds: np.ndarray
    inertia: float


@dataclass(frozen=True)
class TSVDClusters:
    """What :func:`tsvd_clusters` returns.

    Attributes
    ----------
    labels : ndarray of int64, shape (n_docs,)
        Every document's cluster, as :attr:`TSVDResult.labels`.
    thresholds : ndarray of shape (n_words,)
        As :attr:`TSVDResult.thresholds`.
    inertia : float
        Lloyd objective of the chosen clustering.
    """

    labels: np.ndarray
    thresholds: np.ndarray
    inertia: float


def _column_kth_largest(F: sp.csc_matrix, k: int) -> np.ndarray:
    """The ``k``-th largest entry of every column (implicit zeros included), shape (n_cols,)."""
    n_rows, n_cols = F.shape
    out = np.zeros(n_cols)
    if k > n_rows:
        out[:] = -np.inf
        return out
    counts = np.diff(F.indptr)
    col = np.repeat(np.arange(n_cols), counts)
    # Sort every column segment in decreasing order in one vectorized pass.
    order = np.lexsort((-F.data, col))
    sorted_data = F.data[order]
    has = counts >= k
    out[has] = sorted_data[F.indptr[:-1][has] + k - 1]
    return out  # columns with fewer than k non-zeros have 0 as their k-th largest


def word_thresholds(F, w0: float, eps: float, *, scale: float | None = None) -> np.ndarray:
    """TSVD step 2(a): every word's threshold frequency.

    ``ζ_i`` is the highest value ``t`` among the word's observed non-zero values with
    ``#{j : F_ji > t} >= w0 s / 2`` and ``#{j : F_ji = t} <= 3 ε w0 s`` (paper §3.3). Where no
    value qualifies, ``ζ_i`` is the word's *smallest* non-zero value, so every occurrence is
    kept: what the authors' implementation does (the Python port of Bansal's MATLAB code sets a
    threshold that falls to ``<= 1`` occurrence to the smallest count, and ISLE, the same
    group's C++ rewrite, "throws everything in"). The paper's literal rule drops such a word
    (``√0``): in documents of ~60 tokens, where most counts are 0 or 1, that dropped all but a
    dozen of 5000 words and left the clustering nothing to work on.

    Parameters
    ----------
    F : sparse matrix of shape (n_docs, n_words)
        Word frequencies (counts divided by document length).
    w0 : float
        Smallest probability of a topic being dominant.
    eps : float
        The tie tolerance ``ε``.
    scale : float, optional
        Compare the values on the grid ``round(F · scale)`` (the authors use the mean document
        length: frequencies of documents of different lengths then tie as counts do); the
        returned thresholds are still frequencies. Default: the values as given.

    Returns
    -------
    ndarray of shape (n_words,)
        Thresholds; ``inf`` for a word in no document.
    """
    F = sp.csc_matrix(F)
    s, V = F.shape
    need_above = w0 * s / 2.0
    max_ties = 3.0 * eps * w0 * s
    out = np.full(V, np.inf)
    for i in range(V):
        vals = F.data[F.indptr[i] : F.indptr[i + 1]]
        if scale is not None:
            vals = np.round(vals * scale)
        vals = vals[vals > 0]
        if vals.size == 0:
            continue
        uniq, counts = np.unique(vals, return_counts=True)  # increasing
        uniq, counts = uniq[::-1], counts[::-1]
        above = np.concatenate([[0], np.cumsum(counts)[:-1]])  # #{> uniq[r]}
        ok = np.flatnonzero((above >= need_above) & (counts <= max_ties))
        out[i] = uniq[ok[0]] if ok.size else uniq[-1]
    if scale is not None:
        out = out / scale
    return out


def tsvd(
    X,
    n_topics: int,
    *,
    w0: float | None = None,
    eps: float = 1.0 / 6.0,
    gamma: float = 1.1,
    catchword_fraction: float | None = None,
    pure_fraction: float | None = None,
    n_init: int = 10,
    max_iter: int = 100,
    split: bool = False,
    min_catchword_freq: float = 0.0,
    random_state: int | np.random.Generator | None = None,
) -> TSVDResult:
    """Learn topics from documents with Thresholded SVD (Bansal et al. 2014, §3.3).

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n_docs, n_words)
        Word counts, one row per document (non-negative whole numbers).
    n_topics : int
        ``K``, at least 1 and less than the number of non-empty documents.
    w0 : float, optional
        Smallest probability of a topic being dominant; default ``1 / K`` (paper §4).
    eps : float
        Threshold tie tolerance ``ε``; default 1/6 (paper §4).
    gamma : float
        Catchword margin ``γ`` over every other topic; default 1.1 (paper §4).
    catchword_fraction : float, optional
        ``ε0 w0`` of the catchword step: ``g(i, l)`` is the ``⌊ε0 w0 s / 2⌋``-th highest
        frequency in cluster l. Default ``1 / (3 K)`` (``ε0 = 1/3``, paper §4).
    pure_fraction : float, optional
        ``ε0 w0`` of the topic-vector step: ``⌊ε0 w0 s / 2⌋`` documents are averaged. Default
        ``1 / K`` (the paper's "top 50 %").
    n_init : int
        k-means++ restarts (each followed by Lloyd); the lowest Lloyd objective wins.
    max_iter : int
        Lloyd iterations per run.
    split : bool
        Compute thresholds on a random half and run the rest on the other half (the paper's
        proof device); off by default.
    min_catchword_freq : float
        Absolute lower bound on ``g(i, l)`` for a catchword (the paper's
        ``4 ln(20/ε w0) / (m δ²)``; 0 disables it, as in the paper's experiments).
    random_state : int, Generator or None

    Returns
    -------
    TSVDResult

    Raises
    ------
    InputError
        For malformed counts, ``n_topics`` out of range or parameters outside (0, 1].

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, sample_documents
    >>> truth = planted_model(100, 3, alpha=0.01, random_state=0)
    >>> X, _ = sample_documents(truth, 600, random_state=0)
    >>> tsvd(X, 3, random_state=0).topic_word.shape
    (100, 3)
    """
    X = as_counts_csr(X)
    K, w0, catchword_fraction, pure_fraction = _check_settings(
        n_topics, w0, eps, gamma, catchword_fraction, pure_fraction
    )
    rng = np.random.default_rng(random_state)
    F, half_b, labels, thresholds, inertia = _clustered(X, K, w0, eps, n_init, max_iter, split,
                                                        rng)
    s = half_b.size
    # Step 5: catchwords from each cluster's ⌊ε0 w0 s / 2⌋-th highest word frequency.
    r5 = max(1, int(np.floor(catchword_fraction * s / 2.0)))
    catchwords = _catchwords(F, labels, K, r5, gamma, min_catchword_freq)
    # Step 6: average the ⌊ε0 w0 s / 2⌋ documents richest in the topic's catchwords.
    r6 = max(1, int(np.floor(pure_fraction * s / 2.0)))
    topic_word = _topic_vectors(F, labels, catchwords, r6)

    doc_labels = np.full(X.shape[0], -1, dtype=np.int64)
    doc_labels[half_b] = labels
    return TSVDResult(topic_word, tuple(catchwords), doc_labels, thresholds, inertia)


def tsvd_clusters(
    X,
    n_clusters: int,
    *,
    w0: float | None = None,
    eps: float = 1.0 / 6.0,
    n_init: int = 10,
    max_iter: int = 100,
    split: bool = False,
    random_state: int | np.random.Generator | None = None,
) -> TSVDClusters:
    """TSVD's steps 1-4 alone: threshold, rank-``n_clusters`` SVD, project-and-cluster.

    What ``fit_topics(method="tsvd")`` builds its topics from (with :func:`cluster_words`),
    with more clusters than topics: the clusters stand for dominant topics, not for topics.

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n_docs, n_words)
        Word counts, one row per document.
    n_clusters : int
        At least 1 and less than the number of non-empty documents.
    w0 : float, optional
        Smallest probability of a topic being dominant, which sets the thresholds; default
        ``1 / n_clusters``.
    eps, n_init, max_iter, split, random_state
        As for :func:`tsvd`.

    Returns
    -------
    TSVDClusters

    Raises
    ------
    InputError
        As for :func:`tsvd`.

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, sample_documents
    >>> truth = planted_model(100, 3, alpha=0.01, random_state=0)
    >>> X, _ = sample_documents(truth, 600, random_state=0)
    >>> np.unique(tsvd_clusters(X, 6, w0=1 / 3, random_state=0).labels).tolist()
    [0, 1, 2, 3, 4, 5]
    """
    X = as_counts_csr(X)
    K, w0, _, _ = _check_settings(n_clusters, w0, eps, 1.0, None, None)
    rng = np.random.default_rng(random_state)
    _, half_b, labels, thresholds, inertia = _clustered(X, K, w0, eps, n_init, max_iter, split,
                                                        rng)
    doc_labels = np.full(X.shape[0], -1, dtype=np.int64)
    doc_labels[half_b] = labels
    return TSVDClusters(doc_labels, thresholds, inertia)


def _clustered(X: sp.csr_matrix, K: int, w0: float, eps: float, n_init: int, max_iter: int,
               split: bool, rng: np.random.Generator):
    """Steps 1-4: ``(F, half_b, labels, thresholds, inertia)``, the clustering half's word
    frequencies, its document indices, their clusters (-1: left out), the thresholds and the
    Lloyd objective."""
    lengths = np.asarray(X.sum(axis=1)).ravel()
    docs = np.flatnonzero(lengths > 0)
    F_all = sp.diags(1.0 / np.maximum(lengths, 1.0)) @ X  # word frequencies per document
    F_all = F_all.tocsr()
    half_a, half_b = _halves(docs, split, rng, K)
    s = half_b.size
    F_a, F = F_all[half_a], F_all[half_b]

    # Step 2: thresholds on one part, thresholding on the other, on the grid of counts of a
    # document of mean length (the authors' implementation).
    scale = float(lengths[docs].mean())
    thresholds = word_thresholds(F_a, w0, eps, scale=scale)
    Bt = _thresholded(F, thresholds, scale)
    # Documents with no entry above a threshold are left out of the clustering (as the authors'
    # code does): they all sit at the origin and would take one of the K clusters.
    kept = np.flatnonzero(np.diff(Bt.indptr) > 0)
    if kept.size <= K:
        raise InputError(
            f"TSVD needs more documents than topics with a word above its threshold: {kept.size} "
            f"of {s}, n_topics={K}"
        )
    Bk = Bt[kept]
    # Step 3: rank-K SVD; the projection's coordinates U_K S_K keep the distances of B_(K).
    coords = _top_left_singular(Bk, K, rng)
    # Step 4: project-and-cluster, then Lloyd on the thresholded rows; best of n_init.
    best = _project_and_cluster(Bk, coords, K, n_init, max_iter, rng)
    labels = np.full(s, -1, dtype=np.int64)
    labels[kept] = best.labels
    return F, half_b, labels, thresholds, best.inertia


def cluster_words(X, labels, n_clusters: int, n_words: int = 5, *,
                  candidates=None) -> tuple[np.ndarray, ...]:
    """Each cluster's ``n_words`` words with the largest share of their occurrences in the
    cluster's documents: the words that mark it, a relative form of TSVD's catchwords.

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n_docs, n_words)
        Word counts.
    labels : array_like of int, shape (n_docs,)
        Each document's cluster in ``[0, n_clusters)``; -1 leaves a document out (its words
        still count in the shares' denominators).
    n_clusters : int
    n_words : int
        Words per cluster, the largest share first (ties by word index).
    candidates : bool mask of shape (n_words,) or int indices, optional
        The words that may be chosen (say, those in enough documents to be well estimated).

    Returns
    -------
    tuple of n_clusters int64 ndarrays
        Up to ``n_words`` words each: only words that occur in the cluster; empty for a
        cluster without documents.

    Raises
    ------
    InputError
        For malformed counts or labels, or ``n_words < 1``.

    Examples
    --------
    >>> X = np.array([[2, 0, 1], [1, 0, 1], [0, 3, 1]])
    >>> [g.tolist() for g in cluster_words(X, [0, 0, 1], 2, n_words=2)]
    [[0, 2], [1, 2]]
    """
    X = as_counts_csr(X)
    labels = np.asarray(labels)
    if labels.shape != (X.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise InputError(f"labels must be integers of shape ({X.shape[0]},), got {labels.shape}")
    if isinstance(n_clusters, bool) or int(n_clusters) != n_clusters or n_clusters < 1:
        raise InputError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    if labels.size and (labels.min() < -1 or labels.max() >= n_clusters):
        raise InputError(f"labels must lie in [-1, {int(n_clusters)}), got "
                         f"{labels.min()}..{labels.max()}")
    if isinstance(n_words, bool) or int(n_words) != n_words or n_words < 1:
        raise InputError(f"n_words must be a positive integer, got {n_words!r}")
    V = X.shape[1]
    allowed = np.ones(V, dtype=bool)
    if candidates is not None:
        c = np.asarray(candidates)
        allowed = c.astype(bool) if c.dtype == bool else np.isin(np.arange(V), c)
    total = np.asarray(X.sum(axis=0)).ravel()
    inside = labels >= 0
    member = sp.csr_matrix((np.ones(int(inside.sum())), (labels[inside], np.flatnonzero(inside))),
                           shape=(int(n_clusters), X.shape[0]))
    counts = (member @ X).toarray()
    share = counts / np.maximum(total, 1.0)[None, :]
    out = []
    for row in share:
        ok = np.flatnonzero(allowed & (row > 0))
        out.append(ok[np.lexsort((ok, -row[ok]))[:int(n_words)]].astype(np.int64))
    return tuple(out)


def _check_settings(n_topics, w0, eps, gamma, catchword_fraction, pure_fraction):
    """``(K, w0, catchword_fraction, pure_fraction)`` checked, with the paper's §4 defaults."""
    K = n_topics
    if int(K) != K or K < 1:
        raise InputError(f"n_topics must be a positive integer, got {n_topics!r}")
    K = int(K)
    w0 = 1.0 / K if w0 is None else float(w0)
    catchword_fraction = 1.0 / (3 * K) if catchword_fraction is None else catchword_fraction
    pure_fraction = 1.0 / K if pure_fraction is None else pure_fraction
    for name, value in (
        ("w0", w0),
        ("eps", eps),
        ("catchword_fraction", catchword_fraction),
        ("pure_fraction", pure_fraction),
    ):
        if not 0 < value <= 1:
            raise InputError(f"{name} must lie in (0, 1], got {value!r}")
    if gamma < 1:
        raise InputError(f"gamma must be >= 1, got {gamma!r}")
    return K, w0, catchword_fraction, pure_fraction


def _halves(docs, split: bool, rng, K: int) -> tuple[np.ndarray, np.ndarray]:
    """The threshold half and the clustering half (both ``docs`` unless ``split``)."""
    if split:
        perm = rng.permutation(docs)
        half_a, half_b = np.sort(perm[: perm.size // 2]), np.sort(perm[perm.size // 2 :])
    else:
        half_a = half_b = docs
    s = half_b.size
    if not K < s:
        raise InputError(
            f"TSVD needs more documents than topics: {s} usable documents, n_topics={K}"
        )
    return half_a, half_b


def _thresholded(F, thresholds: np.ndarray, scale: float | None = None) -> sp.csr_matrix:
    """``√ζ_i`` where a document's frequency reaches word i's threshold, 0 elsewhere.

    "Reaches" (``>=``), as in the authors' implementation (ISLE: "throw in freq counts that are
    >= zeta, as opposed to the paper which uses > zeta"): with a threshold at a word's smallest
    value, ``>`` would drop exactly the occurrences the threshold was lowered to keep. With
    ``scale`` the comparison is on the rounded grid of :func:`word_thresholds`.
    """
    s, V = F.shape
    finite = np.isfinite(thresholds) & (thresholds > 0)
    Fc = F.tocoo()
    limit = np.where(finite, thresholds, np.inf)[Fc.col]
    if scale is None:
        keep = finite[Fc.col] & (Fc.data >= limit)
    else:
        keep = finite[Fc.col] & (np.round(Fc.data * scale) >= np.round(limit * scale))
    # Scale √ζ_i: √(t_i m) up to the common factor √m, which changes neither SVD nor k-means.
    return sp.csr_matrix(
        (np.sqrt(thresholds[Fc.col[keep]]), (Fc.row[keep], Fc.col[keep])), shape=(s, V)
    )


def _project_and_cluster(Bt, coords, K: int, n_init, max_iter, rng) -> KMeansResult:
    """k-means++ in the projection, Lloyd on the thresholded rows; the best of ``n_init``."""
    best = None
    for _ in range(int(n_init)):
        seed = kmeans(coords, K, n_init=1, max_iter=max_iter, random_state=rng)
        run = kmeans(Bt, K, init=seed.labels, max_iter=max_iter)
        if best is None or run.inertia < best.inertia:
            best = run
    return best


def _catchwords(F, labels, K: int, r5: int, gamma, min_catchword_freq) -> list[np.ndarray]:
    """Words whose ``r5``-th highest frequency in a cluster beats ``γ`` times every other's."""
    V = F.shape[1]
    g = np.empty((K, V))
    for lbl in range(K):
        members = np.flatnonzero(labels == lbl)
        g[lbl] = _column_kth_largest(F[members].tocsc(), r5)
    catchwords = []
    for lbl in range(K):
        others = np.delete(g, lbl, axis=0)
        rival = gamma * others.max(axis=0) if K > 1 else np.zeros(V)
        catch = np.flatnonzero((g[lbl] > np.maximum(min_catchword_freq, rival)) & (g[lbl] > 0))
        catchwords.append(catch.astype(np.int64))
    return catchwords


def _topic_vectors(F, labels, catchwords, r6: int) -> np.ndarray:
    """Each topic: the mean of the ``r6`` documents richest in its catchwords."""
    s, V = F.shape
    K = len(catchwords)
    topic_word = np.empty((V, K))
    for lbl in range(K):
        catch = catchwords[lbl]
        if catch.size:
            score = np.asarray(F[:, catch].sum(axis=1)).ravel()
            # Stable sort on -score: ties go to the earlier document, so reruns agree.
            chosen = np.argsort(-score, kind="stable")[:r6]
        else:
            # No catchwords: the cluster itself is the best available estimate of the topic.
            chosen = np.flatnonzero(labels == lbl)
            if chosen.size == 0:
                chosen = np.arange(s)
        topic_word[:, lbl] = np.asarray(F[chosen].mean(axis=0)).ravel()
    topic_word /= topic_word.sum(axis=0, keepdims=True)
    return topic_word


def _top_left_singular(B: sp.csr_matrix, k: int, rng: np.random.Generator) -> np.ndarray:
    """``U_k S_k`` of the rank-k SVD of ``B`` (shape (n_rows, k)), deterministic given ``rng``."""
    n, m = B.shape
    if min(n, m) <= max(2 * k, 50) or B.nnz == 0:
        U, S, _ = scipy.linalg.svd(B.toarray(), full_matrices=False)
        U, S = U[:, :k], S[:k]
    else:
        v0 = rng.standard_normal(min(n, m))
        U, S, _ = scipy.sparse.linalg.svds(B, k=k, v0=v0)
        order = np.argsort(-S)
        U, S = U[:, order], S[order]
    # Fixed signs (largest-magnitude entry positive) so the output does not depend on the
    # solver's arbitrary choice; k-means distances are unchanged by it.
    idx = np.argmax(np.abs(U), axis=0)
    signs = np.sign(U[idx, np.arange(U.shape[1])])
    signs[signs == 0] = 1.0
    return U * (S * signs)[None, :]
