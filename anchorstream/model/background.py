"""Background words: corpus-wide words found in the fitted topics and kept out of their labels.

Words such as "provides", "library" or "contains" on technical text are used by every topic.
Anchor recovery does not spread them evenly over the topics (the detectors that compare a word's
topic shares ``p(k | w)`` with the prevalence find none); it gives them a sizeable probability in
many topics, so they fill the top-10 lists of a third of the topics.

The model used here is the background mixture of Chemudugunta et al. (2006, "special words with
background") and SAGE (Eisenstein et al., 2011): each topic is a shared background plus what the
topic adds, ``p(w | k) = g(w) + e_k(w)``. The background level ``g(w)`` is the largest value that
word ``w`` reaches in at least a fraction ``spread`` of the topics, and in two at least (a robust
minimum over topics: the plain minimum is zero as soon as one topic lacks the word; a value one
topic reaches is that topic's own). The model itself (``topic_word``, inference, ℓ1 error) is
unchanged: only the ranking of the top words differs.

Where documents are 25 tokens long or more (``SHORT_DOCUMENTS``), a topic's top words are
ranked by its excess ``max(p(w | k) − g(w), 0)``, ties (words at or below background) by
``p(w | k)``. On shorter documents the ranking (:func:`distinct_top_words`) serves a topic's
label, its first ``LABEL_WORDS`` words, which is there to tell the topic from the others:

* a word labels only topics that raise it above its level (``p(w | k) > (1 + RAISE) g(w)``),
  and at most :func:`label_cap` of them (15 % of the topics, two at least), those where it
  stands highest above the level; elsewhere it moves below the label;
* within those rules the words rank by ``max(p(w | k) − a · g(w), 0)``, then by
  ``p(w | k)``, with the smallest share ``a`` of ``LEVEL_WEIGHTS`` at which the labels are at
  least ``DISTINCT`` (60 %) distinct words: the background is taken out only as far as the
  labels need to be told apart (between a stream's snapshots within a margin of the
  previous share: ``DISTINCT_MARGIN``). Taking out the whole level cost short documents
  held-out NPMI (a corpus-wide word is often the one word a short document shares with its topic's
  others), and ranking by probability let one word label a third of the topics; on longer
  documents, where a topic's own words meet each other, the whole level scores best.

A word is reported as a background word when the background explains at least half of its
corpus probability, ``g(w) ≥ ½ p(w)`` with ``p(w) = Σ_k p(k) p(w | k)``, and ranking by
probability would put it among the top ``n_top`` words of at least two topics. A word used by
fewer than ``max(2, spread · K)`` topics has ``g(w) = 0``, so a model whose words each belong to
a few topics reports nothing and keeps its ranking (but for the cap).

The default ``spread`` (0.33, a third of the topics) and the ranking's constants were chosen on
the quality benchmark (benchmarks/README.md, "Background words" and "Labels that tell the topics
apart").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from anchorstream._kernels.rank import top_by_two_keys
from anchorstream.errors import InputError

__all__ = [
    "BACKGROUND_SPREAD", "Background", "Ranking", "background", "background_level",
    "check_spread", "distinct_top_words", "label_cap", "ranked_top_words",
    "top_words_for_length",
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
#: A topic's label: the first words of its list, the ones a reader (and NPMI@10) reads.
LABEL_WORDS = 10
#: The ranking takes the background out only as far as the labels need to tell the topics
#: apart: it subtracts the smallest of these shares of the level at which at least
#: ``DISTINCT`` of the labels' words are distinct (the whole level where none reaches it;
#: 0.6, the bar issue 16 sets for unique@10) ...
LEVEL_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
DISTINCT = 0.6
#: ... and no word is in the labels of more than this share of the topics (two at least).
LABEL_SHARE = 0.15
#: Between refreshes of a stream a smaller share than the previous snapshot's needs labels
#: ``DISTINCT + DISTINCT_MARGIN`` distinct (hysteresis: a 1 % change of the documents moved
#: the share of the documentation passages back and forth between ¼ and ½).
DISTINCT_MARGIN = 0.04
#: All of this where documents are shorter than this many tokens on average (the bound below
#: which the fit refines whole documents, ``refine.REFINE_AUTO_MAX_LENGTH``); on longer ones
#: the top words rank above the whole level, with no cap (what a longer document's held-out
#: co-occurrences reward: benchmarks/README.md, "Labels that tell the topics apart").
SHORT_DOCUMENTS = 25.0
#: A word labels only the topics that raise it above its level: that add at least this
#: share of the level to it, ``p(w | k) > (1 + RAISE) · level(w)`` (a fitted topic holds a
#: pure background word a little above or below its level).
RAISE = 0.5


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


@dataclass(frozen=True, eq=False)
class Ranking:
    """Top words ranked above a share of the background.

    Attributes
    ----------
    top : ndarray of int64, shape (n_topics, n)
    weight : float
        The share of the background level subtracted (one of ``LEVEL_WEIGHTS``).
    cap : int or None
        The most labels (first ``LABEL_WORDS``) a word is in; None: no cap.
    """

    top: np.ndarray
    weight: float
    cap: int | None


def label_cap(n_topics: int) -> int:
    """The most topics' labels a word may be in: ``LABEL_SHARE`` of them, two at least."""
    return max(MIN_TOPICS, math.ceil(LABEL_SHARE * n_topics - 1e-9))


def distinct_top_words(topic_word, n: int, level: np.ndarray,
                       previous: float | None = None) -> Ranking:
    """Each topic's ``n`` top words, above as little of the background as tells them apart.

    Tries the shares ``LEVEL_WEIGHTS`` of ``level`` from the smallest and keeps the first at
    which the labels (the first ``LABEL_WORDS`` words, whatever ``n`` is) are at least
    ``DISTINCT`` distinct words, the whole level where none is; every ranking caps the labels
    a word is in at :func:`label_cap` (see :func:`ranked_top_words`).

    ``previous``: the share the previous snapshot of the same stream chose (ignored unless
    one of ``LEVEL_WEIGHTS``). Shares below it need ``DISTINCT + DISTINCT_MARGIN``: the
    labels do not flip between two shares with every refresh of a model that sits at the
    bound, and never fall under it.
    """
    B = _as_rows(topic_word)
    cap = label_cap(B.shape[0])
    if previous not in LEVEL_WEIGHTS:
        previous = None
    # What every share's ranking shares is found once (a snapshot at K = 50, V = 5000: the
    # whole ranking 20 -> 7 ms with the kernel's ranks).
    capped = _CappedRanking(B, n, level, cap)
    for weight in LEVEL_WEIGHTS:
        need = DISTINCT + (DISTINCT_MARGIN if previous is not None and weight < previous else 0)
        label, top = capped.at(weight)
        if np.unique(label).size >= need * label.size:
            break
    return Ranking(top, float(weight), cap)


def top_words_for_length(topic_word, n: int, level: np.ndarray, mean_length: float | None,
                         previous: float | None = None) -> Ranking:
    """Each topic's ``n`` top words as a snapshot ranks them for documents of ``mean_length``
    tokens on average: under :data:`SHORT_DOCUMENTS`, :func:`distinct_top_words` (with
    ``previous``); otherwise (or unknown, None) above the whole level, no cap."""
    if mean_length is not None and mean_length < SHORT_DOCUMENTS:
        return distinct_top_words(topic_word, n, level, previous)
    return Ranking(ranked_top_words(topic_word, n, level), 1.0, None)


def ranked_top_words(topic_word, n: int, level: np.ndarray | None = None,
                     cap: int | None = None, weight: float = 1.0) -> np.ndarray:
    """Each topic's ``n`` top words, ranked by ``max(p(w | k) − weight · level(w), 0)``, then
    by ``p(w | k)``, then by index; ``level=None`` ranks by probability alone.

    With a ``cap``, a word heads only the lists of the topics that raise it above its whole
    level (``p(w | k) > (1 + RAISE) · level(w)``, or ``level(w)`` is 0): elsewhere it comes
    after every other word. And it is in the labels (the first ``LABEL_WORDS`` words) of at
    most ``cap`` topics, those where it stands highest above the level (then by probability,
    then the lower topic index); in the others it moves below the label and the next words
    take its place.

    Returns an int64 array of shape (n_topics, min(n, n_words)).
    """
    B = _as_rows(topic_word)
    n = min(int(n), B.shape[1])
    if level is None:
        return _ranked(B, np.zeros_like(B), n)
    if cap is None or n == 0:
        return _ranked(B, np.maximum(B - weight * level[None, :], 0.0), n)
    return _CappedRanking(B, n, level, cap).at(weight)[1]


class _CappedRanking:
    """:func:`ranked_top_words` with a ``cap``, of a checked ``B``, at any share of the level:
    what does not depend on the share is found once."""

    def __init__(self, B: np.ndarray, n: int, level: np.ndarray, cap: int):
        self.B, self.level, self.cap = B, level, int(cap)
        self.n = min(int(n), B.shape[1])
        self.m = min(B.shape[1], LABEL_WORDS)  # the label whatever n is: the first words agree
        # Kept out of every list's head: the words a topic does not raise above their level,
        # by probability after the others (their probability less 2, no excess).
        self.kept_out = (B <= level[None, :] * (1 + RAISE)) & (level[None, :] > 0)
        self.below = np.where(self.kept_out, B - 2.0, B)
        self.above = B - level[None, :]

    def at(self, weight: float) -> tuple[np.ndarray, np.ndarray]:
        """``(the labels, the top n words)`` ranked above ``weight`` times the level."""
        excess = np.where(self.kept_out, 0.0,
                          np.maximum(self.B - weight * self.level[None, :], 0.0))
        below = self.below.copy()  # the label's rounds change it
        n, m = self.n, self.m
        rest = _ranked(below, excess, n + m) if n > m else None
        label = _capped_label(self.B, self.above, below, excess, m, self.cap)
        if rest is None:
            return label, label[:, :n]
        # Each topic's label, then the first words of the rest that are not in it.
        inside = (rest[:, :, None] == label[:, None, :]).any(axis=2)
        order = np.argsort(inside, axis=1, kind="stable")[:, : n - m]
        return label, np.concatenate([label, np.take_along_axis(rest, order, axis=1)], axis=1)


def _capped_label(B: np.ndarray, above: np.ndarray, B_: np.ndarray, excess_: np.ndarray,
                  m: int, cap: int) -> np.ndarray:
    """The first ``m`` words of every topic, no word in more than ``cap`` of them.

    ``B_`` and ``excess_`` (changed here) rank the words kept out below the others; ``above``
    is ``B`` less the whole level. Each round moves every word over the cap out of the labels
    where it stands lowest above its level, as the words kept out are; the words taking its
    places may pass the cap in turn, so it repeats until none does (or none moves: too few
    words to fill the labels otherwise).
    """
    V = B.shape[1]
    while True:
        label = _ranked(B_, excess_, m)
        over = np.flatnonzero(np.bincount(label.ravel(), minlength=V) > cap)
        moved = False
        for w in over:
            topics = np.flatnonzero((label == w).any(axis=1) & (B_[:, w] >= 0))
            order = np.lexsort((topics, -B[topics, w], -above[topics, w]))
            drop = topics[order[cap:]]
            moved = moved or drop.size > 0
            B_[drop, w] -= 2.0
            excess_[drop, w] = 0.0
        if not moved:
            return label


def _ranked(B: np.ndarray, excess: np.ndarray, n: int) -> np.ndarray:
    """:func:`ranked_top_words` without a cap, of a checked ``B`` and its ``excess``: each
    row's words by excess, then by probability, then by index, in one pass over the row
    (:func:`~anchorstream._kernels.rank.top_by_two_keys`)."""
    K, V = B.shape
    n = min(int(n), V)
    out = np.empty((K, n), dtype=np.int64)
    if n:
        top_by_two_keys(np.ascontiguousarray(excess), np.ascontiguousarray(B), n, out)
    return out
