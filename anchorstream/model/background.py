"""Background words: corpus-wide words found in the fitted topics and kept out of their top words.

Words such as "provides", "library" or "contains" on technical text are used by every topic.
Anchor recovery does not spread them evenly over the topics (the detectors that compare a word's
topic shares ``p(k | w)`` with the prevalence find none); it gives them a sizeable probability in
many topics, so they fill the top-10 lists of a third of the topics.

The model used here is the background mixture of Chemudugunta et al. (2006, "special words with
background") and SAGE (Eisenstein et al., 2011): each topic is a shared background plus what the
topic adds, ``p(w | k) = g(w) + e_k(w)``. The background level ``g(w)`` is the largest value that
word ``w`` reaches in at least a fraction ``spread`` of the topics, and in two at least (a robust
minimum over topics: the plain minimum is zero as soon as one topic lacks the word; a value one
topic reaches is that topic's own). A topic's top words are ranked by its excess
``max(p(w | k) − g(w), 0)``, ties (words at or below background) by ``p(w | k)``.
The model itself (``topic_word``, inference, ℓ1 error) is unchanged: only the ranking differs.

A word is reported as a background word when the background explains at least half of its
corpus probability, ``g(w) ≥ ½ p(w)`` with ``p(w) = Σ_k p(k) p(w | k)``, and ranking by
probability would put it among the top ``n_top`` words of at least two topics: the repeated top
words that the ranking above the background keeps out. A word used by fewer than
``max(2, spread · K)`` topics has ``g(w) = 0``, so a model whose words each belong to a few
topics reports nothing and keeps its ranking.

The default ``spread`` (0.33, a third of the topics) was chosen on the quality benchmark
(benchmarks/README.md, "Background words").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from anchorstream.errors import InputError

__all__ = [
    "BACKGROUND_SPREAD", "Background", "background", "background_level", "check_spread",
    "ranked_top_words",
]

#: Fraction of the topics a word must reach its background level in (see the module docstring).
BACKGROUND_SPREAD = 0.33
#: ... and at least this many of them: a level reached in one topic alone is that topic's
#: word (with K = 2 or 3, a third of the topics is one topic, and every word was reported).
MIN_TOPICS = 2
#: A word is reported when the background holds at least this share of its probability ...
REPORT_SHARE = 0.5
#: ... and it is among the most probable words of at least this many topics.
REPORT_TOPICS = 2


def check_spread(spread) -> float | None:
    """``spread`` as a float in (0, 1], or None (no background); else InputError."""
    if spread is None:
        return None
    if (isinstance(spread, bool) or not isinstance(spread, (int, float, np.floating))
            or not math.isfinite(spread) or not 0 < spread <= 1):
        raise InputError(
            f"background spread must be a fraction of the topics in (0, 1] or None (off), "
            f"got {spread!r}")
    return float(spread)


@dataclass(frozen=True, eq=False)
class Background:
    """The background of a fitted model.

    Attributes
    ----------
    level : ndarray of shape (n_words,)
        ``g(w)``: the probability the word has in at least ``spread`` of the topics.
    share : ndarray of shape (n_words,)
        ``g(w) / p(w)`` (0 for a word without probability).
    words : ndarray of int64
        The background words (``share ≥ 1/2`` and among the ``n_top`` most probable words of
        at least two topics), by decreasing ``level``.
    in_top : ndarray of int64, shape (n_words,)
        Of how many topics' ``n_top`` most probable words each word is one.
    spread : float
    n_top : int
    """

    level: np.ndarray
    share: np.ndarray
    words: np.ndarray
    in_top: np.ndarray
    spread: float
    n_top: int

    def report(self, vocabulary, limit: int = 100) -> dict:
        """What a snapshot's ``extra["background_words"]`` holds: the settings, the count and the
        first ``limit`` words as ``[word, level, share, topics]`` (``topics``: in how many
        topics' ``n_top`` most probable words it is)."""
        return {
            "spread": self.spread,
            "report_share": REPORT_SHARE,
            "report_topics": REPORT_TOPICS,
            "n_top": self.n_top,
            "count": int(self.words.size),
            "words": [[vocabulary[i], float(self.level[i]), round(float(self.share[i]), 4),
                       int(self.in_top[i])] for i in self.words[:limit]],
        }


def _as_rows(topic_word) -> np.ndarray:
    B = np.asarray(topic_word, dtype=np.float64)
    if B.ndim != 2 or min(B.shape) < 1 or not np.all(np.isfinite(B)) or B.min() < 0:
        raise InputError("topic_word must be a finite, non-negative (n_topics, n_words) array")
    return B


def background_level(topic_word, spread: float) -> np.ndarray:
    """``g(w)``: the ``max(2, ceil(spread · K))``-th largest ``p(w | k)`` over the K topics
    (the largest where K = 1).

    ``topic_word`` is (n_topics, n_words), rows are topics.
    """
    return _level(_as_rows(topic_word), check_spread(spread))


def _level(B: np.ndarray, spread: float) -> np.ndarray:
    """:func:`background_level` of a checked ``B`` and ``spread``."""
    K = B.shape[0]
    rank = min(K, max(MIN_TOPICS, math.ceil(spread * K - 1e-9)))
    # The rank-th largest is the (K - rank)-th smallest (0-based).
    return np.partition(B, K - rank, axis=0)[K - rank]


def background(topic_word, prevalence, spread: float = BACKGROUND_SPREAD,
               n_top: int = 20) -> Background:
    """The background of a model: levels, shares and the background words.

    Parameters
    ----------
    topic_word : array_like of shape (n_topics, n_words)
        Rows are ``p(w | k)``.
    prevalence : array_like of shape (n_topics,)
        ``p(k)``, any non-negative scale.
    spread : float in (0, 1]
    n_top : int
        The top-word lists a reported word must be in (by probability), two at least.
    """
    B = _as_rows(topic_word)
    spread = check_spread(spread)
    prev = np.maximum(np.asarray(prevalence, dtype=np.float64), 0.0)
    if prev.shape != (B.shape[0],) or not np.all(np.isfinite(prev)):
        raise InputError(f"prevalence must be finite and of shape ({B.shape[0]},)")
    prev = prev / prev.sum() if prev.sum() > 0 else np.full(B.shape[0], 1.0 / B.shape[0])
    level = _level(B, spread)
    pw = prev @ B
    share = np.divide(level, pw, out=np.zeros_like(level), where=pw > 0)
    n_top = max(1, min(int(n_top), B.shape[1]))
    most = np.argpartition(-B, n_top - 1, axis=1)[:, :n_top]
    in_top = np.bincount(most.ravel(), minlength=B.shape[1]).astype(np.int64)
    flagged = np.flatnonzero((share >= REPORT_SHARE) & (level > 0) & (in_top >= REPORT_TOPICS))
    words = flagged[np.lexsort((flagged, -level[flagged]))].astype(np.int64)
    return Background(level, share, words, in_top, float(spread), n_top)


def ranked_top_words(topic_word, n: int, level: np.ndarray | None = None) -> np.ndarray:
    """Each topic's ``n`` top words, ranked by ``max(p(w | k) − level(w), 0)``, then by
    ``p(w | k)``, then by index; ``level=None`` ranks by probability alone.

    Returns an int64 array of shape (n_topics, min(n, n_words)).

    Only the words that can be among a topic's ``n`` are sorted: those at or above the
    ``n``-th largest excess, or, where fewer than ``n`` words have an excess, those words and
    the others at or above the probability that completes the ``n`` (ties kept). The
    thresholds of every topic come from one partition over the rows (a snapshot ranks every
    topic: 7.8 → 5.3 ms at K = 50, V = 5000, against a partition per topic).
    """
    B = _as_rows(topic_word)
    K, V = B.shape
    n = min(int(n), V)
    excess = np.zeros_like(B) if level is None else np.maximum(B - level[None, :], 0.0)
    out = np.empty((K, n), dtype=np.int64)
    if n == 0:
        return out
    if n == V:
        candidates = np.ones_like(B, dtype=bool)
    else:
        # The n-th largest as the n-th smallest of the negation: numpy's selection takes a
        # third of the time that way round on rows of mostly zero excess.
        candidates = excess >= -np.partition(-excess, n - 1, axis=1)[:, n - 1, None]
        # Topics where fewer than n words have an excess: those words, then the others by
        # probability (key: infinite for a word with an excess).
        few = np.flatnonzero(np.count_nonzero(excess > 0, axis=1) < n)
        if few.size:
            key = np.where(excess[few] > 0, -np.inf, -B[few])
            candidates[few] = key <= np.partition(key, n - 1, axis=1)[:, n - 1, None]
    for k in range(K):
        words = np.flatnonzero(candidates[k])
        out[k] = words[np.lexsort((words, -B[k, words], -excess[k, words]))[:n]]
    return out
