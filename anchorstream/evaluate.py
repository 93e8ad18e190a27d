"""How good is a topic model: coherence, recovery error, held-out likelihood, JSMF diagnostics.

Every function is pure: arrays in, numbers out. Orientation follows the rest of the library:
``topic_word`` is ``B`` of shape ``(n_words, n_topics)`` whose columns are ``p(w | z)``;
``top_idx`` is the ``(n_topics, n)`` array of word indices that :func:`top_words` returns.

The metrics, and where they come from:

- :func:`npmi_coherence`: normalized PMI of top-word pairs over the documents of a reference
  corpus (Bouma 2009).
- :func:`umass_coherence`: Mimno et al. (2011) coherence, used by Arora 2013 and JSMF.
- :func:`unique_word_ratio`: distinct top words over all top words (redundancy across topics).
- :func:`recovery_error`: ℓ1 distance to planted topics after optimal matching (Arora 2013 §5).
- :func:`heldout_log_likelihood`: per-token likelihood by document completion (Wallach et al.
  2009).
- JSMF (Lee et al., §5.1): :func:`topic_entropy` (mean normalized entropy of p(z | w)),
  :func:`topic_sparsity` (Hoyer 2004), :func:`topic_specificity` (KL(p(w | z) ‖ p(w))),
  :func:`topic_dissimilarity` (top words no other topic has), :func:`recovery_error_rows`
  (residual of each word's row as a mix of anchor rows) and :func:`approximation_error`
  (‖C − B A Bᵀ‖_F).

:func:`diagnostics` bundles them for one fitted model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import entr, rel_entr

from anchorstream.errors import InputError
from anchorstream.model.infer import infer_topics

__all__ = [
    "approximation_error",
    "diagnostics",
    "heldout_log_likelihood",
    "npmi_coherence",
    "recovery_error",
    "recovery_error_rows",
    "top_words",
    "topic_dissimilarity",
    "topic_entropy",
    "topic_sparsity",
    "topic_specificity",
    "umass_coherence",
    "unique_word_ratio",
    "word_topic_posterior",
]

# Rows of a dense (n_words, n_words) residual computed at once by the matrix-error metrics, so
# memory stays bounded (512 rows x 20k words x 8 bytes = 80 MiB) whatever the vocabulary.
_ROW_BLOCK = 512


# --------------------------------------------------------------------------------------------
# top words and coherence


def top_words(topic_word: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` most probable words of every topic.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
    n : int
        Words per topic; more than ``n_words`` gives all of them.

    Returns
    -------
    ndarray of int64, shape (n_topics, min(n, n_words))
        Row k lists topic k's words by decreasing probability; ties go to the lower index, so
        the result is deterministic.

    Examples
    --------
    >>> top_words(np.array([[0.1, 0.6], [0.5, 0.2], [0.4, 0.2]]), 2)
    array([[1, 2],
           [0, 1]])
    """
    B = _as_topic_word(topic_word)
    if int(n) != n or n < 1:
        raise InputError(f"n must be an integer >= 1, got {n!r}")
    n = min(int(n), B.shape[0])
    # A stable sort of the negated column keeps equal probabilities in index order.
    order = np.argsort(-B, axis=0, kind="stable")
    return np.ascontiguousarray(order[:n].T).astype(np.int64)


def _doc_frequencies(top_idx, X_ref) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Document frequencies of the top words and of their pairs in a reference corpus.

    Only the union of the top words enters the product, so the cost is that of a sparse
    ``(n_docs, U)`` binary matrix times its transpose with ``U <= n_topics * n``.

    Returns ``(pos, df, co_df, n_docs)``: ``pos`` maps ``top_idx`` into ``0..U-1``, ``df`` is
    ``(U,)`` and ``co_df`` the dense ``(U, U)`` co-document frequency.
    """
    top = _check_top_idx(top_idx, min_words=2)
    if not sp.issparse(X_ref):
        X_ref = np.asarray(X_ref)
        if X_ref.ndim != 2:
            raise InputError(f"X_ref must be of shape (n_docs, n_words), got shape {X_ref.shape}")
    X_ref = sp.csc_matrix(X_ref)
    if top.max() >= X_ref.shape[1]:
        raise InputError(
            f"top word index {int(top.max())} is out of range for a reference corpus of "
            f"{X_ref.shape[1]} words; both must use the same vocabulary"
        )
    if X_ref.shape[0] == 0:
        raise InputError("the reference corpus has no documents")
    union, pos = np.unique(top, return_inverse=True)
    sub = X_ref[:, union]
    if sub.nnz and (not np.all(np.isfinite(sub.data)) or sub.data.min() < 0):
        raise InputError("X_ref must hold finite, non-negative counts")
    binary = (sub > 0).astype(np.float64).tocsc()
    co_df = np.asarray((binary.T @ binary).toarray())
    df = np.diag(co_df).copy()
    return pos.reshape(top.shape), df, co_df, X_ref.shape[0]


def npmi_coherence(top_idx: np.ndarray, X_ref) -> np.ndarray:
    """Normalized pointwise mutual information of every topic's top words (Bouma 2009).

    With ``N`` reference documents, ``P(w) = D(w) / N`` and ``P(wi, wj) = D(wi, wj) / N``
    (document frequencies: a document counts once however often it repeats a word), each pair
    of distinct top words scores

        NPMI(wi, wj) = log(P(wi, wj) / (P(wi) P(wj))) / -log P(wi, wj)

    in ``[-1, 1]``. Conventions at the edges: a pair that never co-occurs (including a word
    absent from the reference corpus) scores ``-1``, the limit as ``P(wi, wj) -> 0``; a pair
    that occurs in every document scores ``1``. A topic's coherence is the mean over its
    ``n (n - 1) / 2`` pairs, so values are comparable across ``n``.

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)
        Top words of each topic (from :func:`top_words`), ``n >= 2``.
    X_ref : sparse matrix or array_like of shape (n_docs, n_words)
        Word counts of the reference corpus (held-out documents, usually), same vocabulary.

    Returns
    -------
    ndarray of shape (n_topics,)
        Higher is better.
    """
    pos, df, co_df, n_docs = _doc_frequencies(top_idx, X_ref)
    p = df / n_docs
    p_joint = co_df / n_docs
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(p_joint) - np.log(p)[:, None] - np.log(p)[None, :]
        npmi = pmi / -np.log(p_joint)
    npmi = np.where(co_df == 0, -1.0, npmi)
    npmi = np.where(co_df == n_docs, 1.0, npmi)
    return _mean_over_pairs(npmi, pos)


def umass_coherence(top_idx: np.ndarray, X_ref, *, epsilon: float = 1.0) -> np.ndarray:
    """UMass coherence of every topic's top words (Mimno et al. 2011).

    With top words ``v_1, ..., v_n`` in decreasing probability, each pair ``l < m`` scores

        log((D(v_m, v_l) + epsilon) / D(v_l))

    where ``D`` counts reference documents containing the word(s): the conditioning word is the
    more probable one. ``epsilon = 1`` is Mimno's smoothing; Arora 2013 and JSMF use ``0.01``.
    A pair whose conditioning word never occurs in the reference corpus (possible for a held-out
    corpus, never for the training corpus the metric was designed on) scores the formula's
    floor ``log(epsilon / N)``, as if the word were in all ``N`` documents but never with the
    other — the counterpart of NPMI's ``-1``. A topic's coherence is the mean over its pairs
    (Mimno's sum divided by ``n (n - 1) / 2``).

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)
        Top words of each topic in decreasing probability (from :func:`top_words`), ``n >= 2``.
    X_ref : sparse matrix or array_like of shape (n_docs, n_words)
        Word counts of the reference corpus, same vocabulary.
    epsilon : float, default 1.0
        Smoothing added to the co-document frequency, ``> 0``.

    Returns
    -------
    ndarray of shape (n_topics,)
        At most ``log(1 + epsilon)``; higher is better.
    """
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    pos, df, co_df, n_docs = _doc_frequencies(top_idx, X_ref)
    with np.errstate(divide="ignore"):
        # score[a, b] conditions on word b (column): log((D(a, b) + eps) / D(b)).
        score = np.log(co_df + epsilon) - np.log(df)[None, :]
    score = np.where(df[None, :] == 0, np.log(epsilon / n_docs), score)
    # Pairs l < m: the conditioning word v_l is the more probable of the two.
    l, m = np.triu_indices(pos.shape[1], k=1)
    return score[pos[:, m], pos[:, l]].mean(axis=1)


def _mean_over_pairs(pair_score: np.ndarray, pos: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(pos.shape[1], k=1)
    return pair_score[pos[:, i], pos[:, j]].mean(axis=1)


def unique_word_ratio(top_idx: np.ndarray) -> float:
    """Distinct words among all topics' top words, over ``n_topics * n``.

    1.0 means no topic shares a top word with another; low values flag duplicated topics,
    which coherence alone rewards (JSMF footnote 16).

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)

    Returns
    -------
    float in (0, 1]
    """
    top = _check_top_idx(top_idx)
    return float(np.unique(top).size / top.size)


def topic_dissimilarity(top_idx: np.ndarray) -> np.ndarray:
    """JSMF "Dissimilarity": per topic, how many of its top words are in no other topic's top words.

    Arora 2013 calls the same count "unique words"; JSMF reports its mean over topics with the
    top 20 words.

    Parameters
    ----------
    top_idx : array_like of int, shape (n_topics, n)

    Returns
    -------
    ndarray of int64, shape (n_topics,), each in ``0..n``
        Higher is better.
    """
    top = _check_top_idx(top_idx)
    words, inverse, topics_having = np.unique(top, return_inverse=True, return_counts=True)
    # Top lists have no repeats, so a word's count is the number of topics listing it.
    return (topics_having[inverse.reshape(top.shape)] == 1).sum(axis=1).astype(np.int64)


# --------------------------------------------------------------------------------------------
# against ground truth and held-out documents


def recovery_error(
    topic_word_true: np.ndarray, topic_word_est: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """ℓ1 distance between true and estimated topics after the best one-to-one matching.

    The matching minimizes the total ℓ1 distance (Hungarian algorithm,
    :func:`scipy.optimize.linear_sum_assignment`), so the result does not depend on how either
    model orders its topics (Arora 2013 §5).

    Parameters
    ----------
    topic_word_true, topic_word_est : array_like of shape (n_words, n_topics)
        Columns are topics; the same shape for both.

    Returns
    -------
    mean : float
        Mean over true topics of the ℓ1 distance to the matched estimate (each at most 2 for
        distributions).
    per_topic : ndarray of shape (n_topics,)
        ℓ1 distance of true topic k to its match.
    matching : ndarray of int64, shape (n_topics,)
        ``matching[k]`` is the estimated topic matched to true topic k.
    """
    B_true = _as_topic_word(topic_word_true, "topic_word_true")
    B_est = _as_topic_word(topic_word_est, "topic_word_est")
    if B_true.shape != B_est.shape:
        raise InputError(
            f"topic_word_true has shape {B_true.shape} but topic_word_est has shape "
            f"{B_est.shape}; both must be (n_words, n_topics)"
        )
    # Imported here: scipy.optimize costs ~0.1 s of the start-up of every command otherwise.
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    cost = cdist(B_true.T, B_est.T, metric="cityblock")
    rows, cols = linear_sum_assignment(cost)
    matching = np.empty(B_true.shape[1], dtype=np.int64)
    matching[rows] = cols
    per_topic = cost[np.arange(B_true.shape[1]), matching]
    return float(per_topic.mean()), per_topic, matching


def heldout_log_likelihood(
    topic_word: np.ndarray,
    X_heldout,
    *,
    alpha: float = 0.1,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: int | np.random.Generator | None = None,
    return_per_doc: bool = False,
) -> float | tuple[float, np.ndarray]:
    """Held-out log likelihood per token, by document completion.

    The estimator (Wallach et al. 2009, "document completion"): the tokens of each held-out
    document are split at random into an observed half (``floor(n_d / 2)`` tokens) and an
    evaluation half (the rest). ``θ_d`` is fitted on the observed half with the topics fixed —
    EM for the MAP estimate under a symmetric Dirichlet(1 + alpha) prior, see
    :func:`anchorstream.model.infer.infer_topics`; the pseudo-count keeps every topic possible — and
    the evaluation half is scored under the mixture ``p(w | d) = Σ_k θ_dk B[w, k]``:

        LL = Σ_d Σ_{w in eval half of d} log p(w | d)  /  (number of evaluation tokens)

    Documents with fewer than 2 tokens are skipped. A word no topic can generate has
    probability 0 and makes the result ``-inf``, which is the honest answer (Arora 2013 reports
    the same for Recover); smooth ``topic_word`` first if that is not wanted.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
        Columns ``p(w | z)``.
    X_heldout : sparse matrix or array_like of shape (n_docs, n_words)
        Integer word counts of documents not used in training.
    alpha : float, default 0.1
        Pseudo-count of the θ estimate, ``>= 0``. Values near the corpus' Dirichlet
        concentration score best (a fitted model's ``alpha_`` is a good choice); compare models
        at the same value. ``0`` (maximum likelihood) lets θ rule topics out and easily gives
        ``-inf``.
    max_iter, tol :
        EM settings of the θ fit (see :func:`anchorstream.model.infer.infer_topics`).
    random_state : int, Generator or None
        Seeds the split of tokens into halves.
    return_per_doc : bool, default False
        Also return each document's per-token log likelihood (NaN for skipped documents).

    Returns
    -------
    float, or (float, ndarray of shape (n_docs,)) with ``return_per_doc``
        Higher is better; a uniform model scores ``-log(n_words)``.
    """
    B = _as_topic_word(topic_word)
    if sp.issparse(X_heldout):
        X = sp.csr_matrix(X_heldout, dtype=np.float64, copy=True)
    else:
        X = np.asarray(X_heldout, dtype=np.float64)
        if X.ndim != 2:
            raise InputError(f"X_heldout must be of shape (n_docs, n_words), got shape {X.shape}")
        X = sp.csr_matrix(X)
    if X.shape[1] != B.shape[0]:
        raise InputError(
            f"X_heldout has {X.shape[1]} words per document but topic_word has {B.shape[0]} "
            "rows; both must use the same vocabulary"
        )
    X.sum_duplicates()
    X.eliminate_zeros()
    data = X.data
    if data.size and (
        not np.all(np.isfinite(data)) or data.min() < 0 or np.any(data != np.round(data))
    ):
        raise InputError("X_heldout must hold non-negative integer counts")
    lengths = np.asarray(X.sum(axis=1)).ravel()
    keep = lengths >= 2
    if not keep.any():
        raise InputError("no held-out document has 2 or more tokens")

    # Split every document's tokens uniformly at random: give each token a random key, sort
    # the tokens of each document by key, and observe the first floor(n_d / 2).
    rng = np.random.default_rng(random_state)
    counts = data.astype(np.int64)
    slot_of_token = np.repeat(np.arange(data.size), counts)
    doc_of_slot = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    doc_of_token = doc_of_slot[slot_of_token]
    order = np.lexsort((rng.random(slot_of_token.size), doc_of_token))
    first_token = np.concatenate(([0], np.cumsum(lengths.astype(np.int64))))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size) - first_token[doc_of_token[order]]
    observed_token = rank < (lengths.astype(np.int64) // 2)[doc_of_token]
    observed = np.bincount(slot_of_token[observed_token], minlength=data.size).astype(np.float64)
    held = data - observed

    X_obs = sp.csr_matrix((observed, X.indices, X.indptr), shape=X.shape)[keep]
    X_eval = sp.csr_matrix((held, X.indices, X.indptr), shape=X.shape)[keep]
    X_eval.eliminate_zeros()
    theta = infer_topics(B, X_obs, alpha=alpha, max_iter=max_iter, tol=tol)

    rows = np.repeat(np.arange(X_eval.shape[0]), np.diff(X_eval.indptr))
    p = np.einsum("ij,ij->i", theta[rows], np.asarray(B[X_eval.indices], dtype=np.float64))
    with np.errstate(divide="ignore"):
        token_ll = X_eval.data * np.log(p)
    doc_ll = np.bincount(rows, weights=token_ll, minlength=X_eval.shape[0])
    doc_tokens = np.asarray(X_eval.sum(axis=1)).ravel()
    total = float(doc_ll.sum() / doc_tokens.sum())
    if not return_per_doc:
        return total
    per_doc = np.full(X.shape[0], np.nan)
    per_doc[keep] = doc_ll / doc_tokens
    return total, per_doc


# --------------------------------------------------------------------------------------------
# JSMF diagnostics (Lee et al., §5.1)


def word_topic_posterior(topic_word: np.ndarray, prevalence: np.ndarray) -> np.ndarray:
    """``p(z | w)`` by Bayes' rule from ``p(w | z)`` and ``p(z)``.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
    prevalence : array_like of shape (n_topics,)
        ``p(z)``, e.g. the row sums of the topic-topic matrix.

    Returns
    -------
    ndarray of shape (n_words, n_topics)
        Rows on the simplex; all-zero for words no topic generates.
    """
    B = _as_topic_word(topic_word)
    prior = np.asarray(prevalence, dtype=np.float64)
    if prior.shape != (B.shape[1],) or not np.all(np.isfinite(prior)) or prior.min() < 0:
        raise InputError(
            f"prevalence must be finite, non-negative and of shape ({B.shape[1]},), "
            f"got shape {prior.shape}"
        )
    joint = B * prior[None, :]
    total = joint.sum(axis=1, keepdims=True)
    return np.divide(joint, total, out=np.zeros_like(joint), where=total > 0)


def topic_entropy(word_topic: np.ndarray) -> float:
    """JSMF "Entropy": mean over words of ``H(z | w) / log K``.

    Parameters
    ----------
    word_topic : array_like of shape (n_words, n_topics)
        ``p(z | w)`` (the recovery coefficients, or :func:`word_topic_posterior`); rows are
        normalized here, and all-zero rows (words no topic generates) are left out.

    Returns
    -------
    float in [0, 1]
        0 when every word belongs to one topic, 1 when every word is spread uniformly;
        smaller is better. 0 for a single topic.
    """
    P = np.asarray(word_topic, dtype=np.float64)
    if P.ndim != 2 or not np.all(np.isfinite(P)) or P.min(initial=0) < 0:
        raise InputError("word_topic must be a finite, non-negative (n_words, n_topics) array")
    total = P.sum(axis=1)
    P = P[total > 0] / total[total > 0, None]
    if P.shape[0] == 0:
        raise InputError("word_topic has no word with positive mass")
    if P.shape[1] == 1:
        return 0.0
    return float(entr(P).sum(axis=1).mean() / np.log(P.shape[1]))


def topic_sparsity(topic_word: np.ndarray) -> np.ndarray:
    """JSMF "Sparsity": Hoyer's measure of each topic, ``(√N − ‖b‖₁/‖b‖₂) / (√N − 1)``.

    ``N`` is the number of words. 1 for a topic on a single word, 0 for a uniform topic;
    closer to 1 is better (JSMF mean it over topics).

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)

    Returns
    -------
    ndarray of shape (n_topics,)
    """
    B = _as_topic_word(topic_word)
    n = B.shape[0]
    if n < 2:
        raise InputError("sparsity needs at least 2 words")
    l1 = np.abs(B).sum(axis=0)
    l2 = np.sqrt((B * B).sum(axis=0))
    if np.any(l2 == 0):
        raise InputError("a topic of topic_word is all zeros")
    return (np.sqrt(n) - l1 / l2) / (np.sqrt(n) - 1.0)


def topic_specificity(topic_word: np.ndarray, unigram: np.ndarray) -> np.ndarray:
    """JSMF "Specificity": ``KL(p(w | z = k) ‖ p(w))`` of each topic from the corpus unigram.

    Parameters
    ----------
    topic_word : array_like of shape (n_words, n_topics)
        Columns are normalized here.
    unigram : array_like of shape (n_words,)
        Corpus word frequencies ``p(w)`` (e.g. row sums of the co-occurrence matrix);
        normalized here.

    Returns
    -------
    ndarray of shape (n_topics,)
        In nats; larger is better. ``inf`` when a topic puts mass on a word of zero frequency.
    """
    B = _normalized_columns(_as_topic_word(topic_word))
    p = np.asarray(unigram, dtype=np.float64)
    if p.shape != (B.shape[0],) or not np.all(np.isfinite(p)) or p.min() < 0 or p.sum() <= 0:
        raise InputError(
            f"unigram must be finite, non-negative, not all zero and of shape ({B.shape[0]},), "
            f"got shape {p.shape}"
        )
    return rel_entr(B, (p / p.sum())[:, None]).sum(axis=0)


def recovery_error_rows(C, anchors, word_topic: np.ndarray) -> float:
    """JSMF "Recovery": how well each word's row is a mix of the anchor rows.

    ``(1 / N) Σ_i ‖C̄_i − Σ_k coef[i, k] C̄_{s_k}‖₂`` over the ``N`` words with a non-zero row,
    where ``C̄`` is ``C`` row-normalized (``C̄_i = p(w₂ | w₁ = i)``) and ``s_k`` are the anchors.
    JSMF plot the logarithm of this value, computed on the rectified matrix.

    Parameters
    ----------
    C : array_like or sparse matrix of shape (n_words, n_words)
        The co-occurrence matrix inference used.
    anchors : array_like of int, shape (n_topics,)
    word_topic : array_like of shape (n_words, n_topics)
        The recovery coefficients ``p(z | w)``.

    Returns
    -------
    float
        Smaller is better.
    """
    C = _check_square(C)
    V = C.shape[0]
    S = _check_anchors(anchors, V)
    coef = np.asarray(word_topic, dtype=np.float64)
    if coef.shape != (V, S.size):
        raise InputError(f"word_topic must be of shape ({V}, {S.size}), got {coef.shape}")
    row_sums = _row_sums(C)
    anchor_rows = _dense_rows(C, S) / _nonzero(row_sums[S])[:, None]
    residuals = []
    for start in range(0, V, _ROW_BLOCK):
        stop = min(start + _ROW_BLOCK, V)
        live = row_sums[start:stop] > 0
        block = _dense_rows(C, np.arange(start, stop))[live] / row_sums[start:stop][live, None]
        diff = block - coef[start:stop][live] @ anchor_rows
        residuals.append(np.sqrt(np.einsum("ij,ij->i", diff, diff)))
    residuals = np.concatenate(residuals)
    if residuals.size == 0:
        raise InputError("C has no non-zero row")
    return float(residuals.mean())


def approximation_error(C, topic_word: np.ndarray, topic_topic: np.ndarray) -> float:
    """JSMF "Approximation": the Frobenius norm ``‖C − B A Bᵀ‖_F``.

    Parameters
    ----------
    C : array_like or sparse matrix of shape (n_words, n_words)
    topic_word : array_like of shape (n_words, n_topics)
        ``B``.
    topic_topic : array_like of shape (n_topics, n_topics)
        ``A``.

    Returns
    -------
    float
        Smaller is better.
    """
    C = _check_square(C)
    B = _as_topic_word(topic_word)
    A = np.asarray(topic_topic, dtype=np.float64)
    K = B.shape[1]
    if B.shape[0] != C.shape[0] or A.shape != (K, K):
        raise InputError(
            f"shapes do not match: C {C.shape}, topic_word {B.shape}, topic_topic {A.shape}; "
            "need (V, V), (V, K) and (K, K)"
        )
    BA = B @ A
    total = 0.0
    # Row blocks: B A Bᵀ is as large as C, and only one block of it need exist at a time.
    for start in range(0, C.shape[0], _ROW_BLOCK):
        stop = min(start + _ROW_BLOCK, C.shape[0])
        diff = _dense_rows(C, np.arange(start, stop)) - BA[start:stop] @ B.T
        total += float(np.einsum("ij,ij->", diff, diff))
    return float(np.sqrt(total))


def diagnostics(
    C,
    topic_word: np.ndarray,
    topic_topic: np.ndarray,
    anchors=None,
    *,
    word_topic: np.ndarray | None = None,
    X_ref=None,
    n_top_words: int = 20,
) -> dict[str, Any]:
    """Every metric of this module for one fitted model, as JSMF report them.

    Parameters
    ----------
    C : array_like or sparse matrix of shape (n_words, n_words)
        The co-occurrence matrix the model was fitted on (the rectified one when rectification
        ran, as JSMF measure); its row sums are the unigram ``p(w)``.
    topic_word : array_like of shape (n_words, n_topics)
    topic_topic : array_like of shape (n_topics, n_topics)
        Its row sums are the prevalence ``p(z)``.
    anchors : array_like of int, shape (n_topics,), optional
        Needed for ``recovery``; left out (``None`` in the result) without it.
    word_topic : array_like of shape (n_words, n_topics), optional
        The recovery coefficients ``p(z | w)``; computed by Bayes' rule when not given.
    X_ref : sparse matrix of shape (n_docs, n_words), optional
        Reference documents for coherence; without them the coherence entries are ``None``.
    n_top_words : int, default 20
        Top words per topic for dissimilarity, coherence and unique-word ratio (JSMF use 20).

    Returns
    -------
    dict
        Floats (means over topics or words): ``entropy``, ``sparsity``, ``specificity``,
        ``dissimilarity``, ``unique_word_ratio``, ``recovery``, ``approximation``, ``npmi``,
        ``umass``; and ``per_topic``, a dict of lists of length ``n_topics`` (``sparsity``,
        ``specificity``, ``dissimilarity``, and ``npmi``/``umass`` with ``X_ref``) in the form
        :func:`anchorstream.snapshot.write_snapshot` takes as ``quality``.
    """
    B = _as_topic_word(topic_word)
    A = np.asarray(topic_topic, dtype=np.float64)
    Cm = _check_square(C)
    unigram = _row_sums(Cm)
    coef = word_topic_posterior(B, A.sum(axis=1)) if word_topic is None else word_topic
    top = top_words(B, n_top_words)
    sparsity = topic_sparsity(B)
    specificity = topic_specificity(B, unigram)
    dissimilarity = topic_dissimilarity(top)
    per_topic: dict[str, list[float]] = {
        "sparsity": sparsity.tolist(),
        "specificity": specificity.tolist(),
        "dissimilarity": dissimilarity.astype(float).tolist(),
    }
    result: dict[str, Any] = {
        "entropy": topic_entropy(coef),
        "sparsity": float(sparsity.mean()),
        "specificity": float(specificity.mean()),
        "dissimilarity": float(dissimilarity.mean()),
        "unique_word_ratio": unique_word_ratio(top),
        "recovery": None if anchors is None else recovery_error_rows(Cm, anchors, coef),
        "approximation": approximation_error(Cm, B, A),
        "npmi": None,
        "umass": None,
    }
    if X_ref is not None:
        npmi = npmi_coherence(top, X_ref)
        umass = umass_coherence(top, X_ref)
        result["npmi"] = float(npmi.mean())
        result["umass"] = float(umass.mean())
        per_topic["npmi"] = npmi.tolist()
        per_topic["umass"] = umass.tolist()
    result["per_topic"] = per_topic
    return result


# --------------------------------------------------------------------------------------------
# input checks and helpers


def _as_topic_word(topic_word, name: str = "topic_word") -> np.ndarray:
    B = np.asarray(topic_word, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] < 1 or B.shape[1] < 1:
        raise InputError(f"{name} must be of shape (n_words, n_topics), got shape {B.shape}")
    if not np.all(np.isfinite(B)) or B.min() < 0:
        raise InputError(f"{name} must be finite and non-negative")
    return B


def _normalized_columns(B: np.ndarray) -> np.ndarray:
    total = B.sum(axis=0)
    if np.any(total <= 0):
        raise InputError("a topic of topic_word is all zeros")
    return B / total[None, :]


def _check_top_idx(top_idx, min_words: int = 1) -> np.ndarray:
    top = np.asarray(top_idx)
    if top.ndim != 2 or top.shape[0] < 1 or top.shape[1] < min_words:
        raise InputError(
            f"top_idx must be of shape (n_topics, n) with n >= {min_words}, got shape {top.shape}"
        )
    if not np.issubdtype(top.dtype, np.integer) or top.min() < 0:
        raise InputError("top_idx must hold non-negative integer word indices")
    if np.any(np.diff(np.sort(top, axis=1), axis=1) == 0):
        raise InputError("a topic lists the same top word twice")
    return top.astype(np.int64)


def _check_square(C):
    if sp.issparse(C):
        C = sp.csr_matrix(C, dtype=np.float64)
    else:
        C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"C must be a square (n_words, n_words) matrix, got shape {C.shape}")
    return C


def _check_anchors(anchors, n_words: int) -> np.ndarray:
    S = np.asarray(anchors)
    if S.ndim != 1 or not np.issubdtype(S.dtype, np.integer):
        raise InputError(f"anchors must be a 1-D array of word indices, got {S!r}")
    if S.size and (S.min() < 0 or S.max() >= n_words):
        raise InputError(f"anchors must be word indices in 0..{n_words - 1}, got {S.tolist()}")
    return S.astype(np.int64)


def _row_sums(C) -> np.ndarray:
    return np.asarray(C.sum(axis=1), dtype=np.float64).ravel()


def _dense_rows(C, rows: np.ndarray) -> np.ndarray:
    return C[rows].toarray() if sp.issparse(C) else np.asarray(C[rows])


def _nonzero(x: np.ndarray) -> np.ndarray:
    if np.any(x <= 0):
        raise InputError("an anchor word has an all-zero row in C")
    return x
