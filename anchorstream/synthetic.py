"""Planted topic models and documents drawn from them, for tests and benchmarks.

Everything here has a known ground truth, which is what "recovers planted topics" is tested
against: a separable word-topic matrix with chosen anchor words, its exact population
co-occurrence ``B R Bᵀ``, and semi-synthetic documents sampled from it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError

__all__ = [
    "PlantedModel",
    "add_background",
    "dirichlet_second_moment",
    "planted_model",
    "population_cooccurrence",
    "sample_documents",
]


class PlantedModel:
    """A ground-truth topic model.

    Attributes
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
        ``B[i, k] = p(word i | topic k)``; every column sums to 1.
    anchors : ndarray of shape (n_topics,)
        Word index of topic k's anchor word (a word with mass in topic k only), or -1 for a
        non-separable model.
    topic_topic : ndarray of shape (n_topics, n_topics)
        ``R = E[θ θᵀ]``, the topic co-occurrence of the document prior; sums to 1.
    alpha : ndarray of shape (n_topics,) or None
        Dirichlet parameter of the document prior, when the prior is a Dirichlet.
    """

    def __init__(self, topic_word, anchors, topic_topic, alpha=None):
        self.topic_word = topic_word
        self.anchors = anchors
        self.topic_topic = topic_topic
        self.alpha = alpha

    @property
    def n_words(self) -> int:
        return self.topic_word.shape[0]

    @property
    def n_topics(self) -> int:
        return self.topic_word.shape[1]


def dirichlet_second_moment(alpha: np.ndarray) -> np.ndarray:
    """``E[θ θᵀ]`` for ``θ ~ Dirichlet(alpha)``.

    Parameters
    ----------
    alpha : ndarray of shape (n_topics,)

    Returns
    -------
    ndarray of shape (n_topics, n_topics), summing to 1.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    a0 = alpha.sum()
    return (np.outer(alpha, alpha) + np.diag(alpha)) / (a0 * (a0 + 1.0))


def planted_model(
    n_words: int,
    n_topics: int,
    *,
    anchor_mass: float = 0.05,
    word_concentration: float = 0.1,
    alpha: float | np.ndarray = 0.03,
    separable: bool = True,
    random_state: int | np.random.Generator | None = None,
) -> PlantedModel:
    """Draw a topic model with one anchor word per topic.

    Topic k's word distribution is ``Dirichlet(word_concentration)`` over the non-anchor words,
    scaled to ``1 - anchor_mass``, plus ``anchor_mass`` on its own anchor word (word k).
    With ``separable=False`` the anchor words are left out (no anchors exist).

    Parameters
    ----------
    n_words, n_topics : int
    anchor_mass : float
        Probability of the anchor word under its topic.
    word_concentration : float
        Dirichlet concentration of the shared part of every topic (small = sparse topics).
    alpha : float or ndarray of shape (n_topics,)
        Dirichlet document prior; a scalar means symmetric.
    separable : bool
    random_state : int, Generator or None

    Returns
    -------
    PlantedModel
    """
    if n_topics < 1 or n_words <= n_topics:
        raise InputError(
            f"need 1 <= n_topics < n_words, got n_topics={n_topics}, n_words={n_words}"
        )
    rng = np.random.default_rng(random_state)
    alpha_vec = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_topics,)).copy()
    B = np.zeros((n_words, n_topics))
    rest = np.arange(n_topics, n_words)
    for k in range(n_topics):
        shared = rng.dirichlet(np.full(rest.size, word_concentration))
        if separable:
            B[rest, k] = (1.0 - anchor_mass) * shared
            B[k, k] = anchor_mass
        else:
            B[rest, k] = shared
    anchors = np.arange(n_topics) if separable else np.full(n_topics, -1)
    if not separable:
        B = B[n_topics:]
        B /= B.sum(axis=0, keepdims=True)
    return PlantedModel(B, anchors, dirichlet_second_moment(alpha_vec), alpha_vec)


def add_background(model: PlantedModel, n_background: int, mass: float, *,
                   random_state: int | np.random.Generator | None = None) -> PlantedModel:
    """The model with ``n_background`` corpus-wide words appended (indices ``n_words ..``).

    Every topic becomes ``(1 - mass) p(w | k) + mass b(w)``, one background distribution ``b``
    (near uniform over the new words, ``Dirichlet(50)``) shared by all topics, as in the "special
    words with background" model (Chemudugunta et al., 2006). Anchors keep their indices.
    """
    if not 0 < mass < 1 or n_background < 1:
        raise InputError(f"need 0 < mass < 1 and n_background >= 1, got {mass}, {n_background}")
    b = np.random.default_rng(random_state).dirichlet(np.full(n_background, 50.0))
    V, K = model.topic_word.shape
    B = np.zeros((V + n_background, K))
    B[:V] = (1.0 - mass) * model.topic_word
    B[V:] = mass * b[:, None]
    return PlantedModel(B, model.anchors, model.topic_topic, model.alpha)


def population_cooccurrence(topic_word: np.ndarray, topic_topic: np.ndarray) -> np.ndarray:
    """The exact co-occurrence ``Q = B R Bᵀ`` of a model (what infinitely many documents give).

    Parameters
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
    topic_topic : ndarray of shape (n_topics, n_topics)

    Returns
    -------
    ndarray of shape (n_words, n_words), symmetric, summing to 1.
    """
    return topic_word @ topic_topic @ topic_word.T


def sample_documents(
    model: PlantedModel,
    n_docs: int,
    doc_length: int = 100,
    *,
    logistic_normal_cov: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = None,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Draw bag-of-words documents from a planted model.

    Each document draws θ from the model's Dirichlet prior (or from a logistic normal with
    the given covariance, for correlated topics), then ``doc_length`` words i.i.d. from
    ``B θ``.

    Parameters
    ----------
    model : PlantedModel
    n_docs : int
    doc_length : int
        Words per document (at least 2, so every document enters the estimator).
    logistic_normal_cov : ndarray of shape (n_topics, n_topics), optional
        Covariance of the Gaussian whose softmax is θ (mean zero).
    random_state : int, Generator or None

    Returns
    -------
    counts : scipy.sparse.csr_matrix of shape (n_docs, n_words), float64 word counts
    theta : ndarray of shape (n_docs, n_topics), the drawn topic proportions
    """
    if doc_length < 2:
        raise InputError(f"doc_length must be >= 2, got {doc_length}")
    rng = np.random.default_rng(random_state)
    K = model.n_topics
    if logistic_normal_cov is not None:
        z = rng.multivariate_normal(np.zeros(K), logistic_normal_cov, size=n_docs)
        z -= z.max(axis=1, keepdims=True)
        theta = np.exp(z)
        theta /= theta.sum(axis=1, keepdims=True)
    else:
        theta = rng.dirichlet(model.alpha, size=n_docs)
    word_dist = theta @ model.topic_word.T  # (n_docs, n_words)
    word_dist /= word_dist.sum(axis=1, keepdims=True)
    rows, cols, vals = [], [], []
    for d in range(n_docs):
        c = rng.multinomial(doc_length, word_dist[d])
        nz = np.flatnonzero(c)
        rows.append(np.full(nz.size, d))
        cols.append(nz)
        vals.append(c[nz])
    X = sp.csr_matrix(
        (np.concatenate(vals).astype(np.float64), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_docs, model.n_words),
    )
    return X, theta
