"""Trends: which topics are rising, falling, new or gone, from their prevalence over snapshots.

Input is a *history*: one entry per published snapshot, oldest first, each with the snapshot's
version, ``created_at`` and every topic's ``{id: prevalence}`` (ids are stable across snapshots,
:mod:`anchorstream.model.align`). Nothing here reads files: the daemon keeps the history
(``daemon/history.py``) and calls :func:`compute_trends`.

The score (why this one: docs/trends.md)
----------------------------------------
Over the last ``window`` snapshots, a topic's points ``x_t = log(max(prevalence_t, floor))``,
``t = 0 .. n-1`` in snapshot order (a topic alive in ``n`` of them), give

* the **Theil–Sen slope** ``b = median_{i<j} (x_j - x_i) / (j - i)``: the typical change of log
  prevalence per snapshot; one wild snapshot (a refit that briefly gave the topic 0) moves a
  median of pairwise slopes little, where it moves a least-squares slope a lot;
* the **noise** ``s``: the residual variance about that line (``n - 2`` degrees of freedom),
  *moderated* toward the variance pooled over every topic of the window (:func:`pooled_noise`,
  worth :data:`PRIOR_DF` degrees of freedom; the empirical-Bayes moderated t of Smyth 2004):
  every topic is refitted at every refresh, so they share the refit noise, and three points of
  a young topic alone say almost nothing about it. At least ``noise_floor`` (0.05 = 5 %
  relative), the change too small to matter, which also keeps a perfectly smooth series finite;
* the **score**: ``t = b / (s * sqrt(12 / (n (n² - 1))))`` (the slope over its standard error,
  ``n`` unit-spaced points) with ``n - 2 + PRIOR_DF`` degrees of freedom, reported as the normal
  deviate of the same tail probability, so one threshold means the same for every series
  length. Its sign is the direction; a topic is *rising* at ``score >= min_score`` and
  *falling* at ``score <= -min_score`` (default 3: about 1 in 700 under stationary noise).

Log prevalence, because what a user asks is "what is growing", and a topic going from 0.2 % to
2 % grows more than one going from 10 % to 11 %; ranking by prevalence alone hides exactly the
young topics (the issue's example: the new technology's central topic at prevalence 0.0000).
Fewer than :data:`MIN_POINTS` points give score 0 (flat): two points cannot tell noise from
change.

Emergence
---------
A topic is **new** when it was born within the window (its first version in the history is in the
window and is not the history's first entry, so the first model's topics are never "new"), is
alive in the latest snapshot, has persisted for at least ``new_min_snapshots`` snapshots, is
rising, and is not an old topic re-cut: at most ``new_max_overlap`` of its top words are among
the top words of any one established topic (from the history's first model, or alive for
``new_min_snapshots`` snapshots) of the snapshot before its birth, when the history has words.
A refresh that reshuffles topics gives short-lived births, and a spare topic can split an old
one and take its mass; persistence, a rise and the word check are what make "new" mean
something (measured: docs/trends.md, benchmarks/bench_churn.py). A topic is **gone** when it
appears in the window but not in the latest snapshot.

Example
-------
>>> h = [HistoryEntry(v, f"2026-01-0{v}T00:00:00Z", {0: 0.5, 1: 0.5 - 0.06 * v, 2: 0.02 * v})
...      for v in range(1, 7)]
>>> t = compute_trends(h, TrendSettings(window=6))
>>> [x.id for x in t.rising], [x.id for x in t.falling]
([2], [1])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from anchorstream.errors import InputError

__all__ = ["HistoryEntry", "MAX_SCORE", "MIN_POINTS", "PRIOR_DF", "TopicTrend", "TrendSettings",
           "Trends", "compute_trends", "pooled_noise", "trend_score"]

#: Fewer points than this in the window give score 0.
MIN_POINTS = 3
#: Degrees of freedom the pooled noise counts for in each topic's score (see docs/trends.md).
PRIOR_DF = 4.0
#: Scores are capped here (a tail probability below ~1e-300 is not a number any more).
MAX_SCORE = 30.0


@dataclass(frozen=True)
class TrendSettings:
    """How trends are computed (``trends.*`` in the daemon's configuration).

    Attributes
    ----------
    window : int
        Snapshots the score looks at (the latest included); at least 2.
    min_score : float
        ``|score|`` from which a topic is rising or falling.
    new_min_snapshots : int
        Snapshots a born topic must have lived (its birth included) to be new.
    prevalence_floor : float
        Prevalences below it count as it (log of 0 is not a number; below this a topic is
        as good as absent).
    noise_floor : float
        Least noise assumed, in log prevalence per snapshot.
    new_max_overlap : float
        A born topic whose top words share more than this fraction with the top words of a
        topic of the snapshot before its birth is that topic re-cut (a split, or a successor
        that took its mass), not new. Needs the history's words; 1 turns the check off.
    """

    window: int = 10
    min_score: float = 3.0
    new_min_snapshots: int = 3
    prevalence_floor: float = 1e-3
    noise_floor: float = 0.05
    new_max_overlap: float = 0.5

    def __post_init__(self):
        if int(self.window) < 2:
            raise InputError(f"trends window must be >= 2 snapshots, got {self.window!r}")
        if not float(self.min_score) > 0:
            raise InputError(f"trends min_score must be > 0, got {self.min_score!r}")
        if int(self.new_min_snapshots) < 1:
            raise InputError(f"new_min_snapshots must be >= 1, got {self.new_min_snapshots!r}")
        if not 0 < float(self.prevalence_floor) < 1:
            raise InputError(
                f"prevalence_floor must be in (0, 1), got {self.prevalence_floor!r}")
        if not float(self.noise_floor) > 0:
            raise InputError(f"noise_floor must be > 0, got {self.noise_floor!r}")
        if not 0 <= float(self.new_max_overlap) <= 1:
            raise InputError(f"new_max_overlap must be in [0, 1], got {self.new_max_overlap!r}")


@dataclass(frozen=True)
class HistoryEntry:
    """One published snapshot as the history keeps it."""

    version: int
    created_at: str
    prevalence: Mapping[int, float]
    #: Top words per topic id (optional): what tells a new theme from an old one re-cut.
    words: Mapping[int, Sequence[str]] | None = None


@dataclass(frozen=True)
class TopicTrend:
    """One topic's trend over the window.

    ``series`` holds ``(version, created_at, prevalence)`` for the window's snapshots the topic
    is in, oldest first; ``prevalence`` is the latest (the last seen for a gone topic);
    ``born_version`` is None when the topic is as old as the history.
    """

    id: int
    score: float
    direction: str
    prevalence: float
    born_version: int | None
    alive: bool
    new: bool
    series: list[tuple[int, str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Trends:
    """What :func:`compute_trends` found. Lists are ordered as the API serves them."""

    version: int
    created_at: str
    window: list[tuple[int, str]]
    rising: list[TopicTrend]
    falling: list[TopicTrend]
    new: list[TopicTrend]
    gone: list[TopicTrend]
    topics: dict[int, TopicTrend]

    @property
    def top_score(self) -> float:
        """The highest score of an alive topic (0 when there is none)."""
        return max((t.score for t in self.topics.values() if t.alive), default=0.0)


@functools.lru_cache(maxsize=64)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(n, k=1)``, once per series length (every topic has one)."""
    i, j = np.triu_indices(n, k=1)
    i.flags.writeable = False
    j.flags.writeable = False
    return i, j


def _fit_line(p: np.ndarray, prevalence_floor: float) -> tuple[float, float, int]:
    """Theil–Sen slope of log prevalence, residual sum of squares about that line, points."""
    return _fit_lines([p], prevalence_floor)[0]


def _fit_lines(series: Sequence[np.ndarray], prevalence_floor: float
               ) -> list[tuple[float, float, int]]:
    """:func:`_fit_line` of every series, those of one length at once (a snapshot's topics
    mostly share the window's length: 46 series of 24 points 3.2 -> 0.5 ms), the same values."""
    lines: list[tuple[float, float, int] | None] = [None] * len(series)
    by_length: dict[int, list[int]] = {}
    for at, p in enumerate(series):
        by_length.setdefault(p.size, []).append(at)
    for n, group in by_length.items():
        X = np.log(np.maximum(np.stack([series[at] for at in group]), float(prevalence_floor)))
        i, j = _pairs(n)
        # A median along the rows is each row's median, to the bit (the same two order
        # statistics, averaged alike).
        slopes = np.median((X[:, j] - X[:, i]) / (j - i), axis=1)
        R = X - slopes[:, None] * np.arange(n, dtype=np.float64)
        R -= np.median(R, axis=1)[:, None]
        for at, slope, r in zip(group, slopes, R):
            lines[at] = (float(slope), float(r @ r), n)
    return lines


def _check(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise InputError("prevalence values must be finite and non-negative")
    return p


def pooled_noise(series: Sequence[Sequence[float]], *, prevalence_floor: float = 1e-3
                 ) -> tuple[float, float]:
    """The noise of log prevalence pooled over topics: ``(variance, degrees of freedom)``.

    Every topic of one model is re-estimated at every refresh, so the refit noise is shared;
    pooling the series with at least :data:`MIN_POINTS` points gives a noise estimate that two
    or three points of one young topic cannot. The pool is the *median* of the topics' residual
    variances (over the median of ``χ²_d / d``, which makes it unbiased for normal noise with
    ``d`` the median degrees of freedom), so the few topics that really move, and whose
    residuals about a line are large because their change is not linear, do not pass their
    movement off as everybody's noise. The degrees of freedom are the sum over the topics.
    ``(0.0, 0.0)`` when no series is long enough.
    """
    return _pool(_fit_lines([p for p in map(_check, series) if p.size >= MIN_POINTS],
                            prevalence_floor))


def _pool(lines: Sequence[tuple[float, float, int]]) -> tuple[float, float]:
    """:func:`pooled_noise` of the lines ``(slope, rss, points)`` of the series long enough."""
    variances = [r / (n - 2) for _, r, n in lines]
    dfs = [n - 2 for _, _, n in lines]
    if not variances:
        return 0.0, 0.0
    d = float(np.median(dfs))
    chi2_median = 2.0 * float(special.gammaincinv(d / 2.0, 0.5))  # scipy.stats.chi2.median(d)
    return float(np.median(variances)) / (chi2_median / d), float(sum(dfs))


def trend_score(prevalence: Sequence[float], *, prevalence_floor: float = 1e-3,
                noise_floor: float = 0.05, prior_variance: float = 0.0,
                prior_df: float = 0.0) -> float:
    """The trend score of one topic's prevalence series (oldest first): see the module docstring.

    Parameters
    ----------
    prevalence : sequence of float
        One value per snapshot the topic is in, oldest first; values in [0, 1].
    prevalence_floor, noise_floor : float
        As in :class:`TrendSettings`.
    prior_variance, prior_df : float
        The pooled noise (:func:`pooled_noise`) and the weight it gets, in degrees of freedom
        (:data:`PRIOR_DF`, capped at the pool's own); 0 scores the series on its own noise.

    Returns
    -------
    float
        A z-score: 0.0 for fewer than :data:`MIN_POINTS` points; positive when rising.

    Raises
    ------
    InputError
        For a value that is not finite or is negative.
    """
    p = _check(prevalence)
    if p.size < MIN_POINTS:
        return 0.0
    return _score(_fit_line(p, prevalence_floor), noise_floor, prior_variance, prior_df)


def _score(line: tuple[float, float, int], noise_floor: float, prior_variance: float,
           prior_df: float) -> float:
    """:func:`trend_score` of a series of at least :data:`MIN_POINTS` points from its line
    ``(slope, rss, points)``."""
    slope, rss, n = line
    df = n - 2 + max(float(prior_df), 0.0)
    variance = (rss + max(float(prior_df), 0.0) * max(float(prior_variance), 0.0)) / df
    noise = max(float(noise_floor), math.sqrt(variance))
    t = slope / (noise * math.sqrt(12.0 / (n * (n * n - 1.0))))
    if abs(t) < 1e-12:
        return 0.0
    # The t statistic with df degrees of freedom, as the normal deviate of the same tail
    # probability: one scale for every series length (2 points of t_1 are not 2 of t_30).
    # (scipy.stats.norm.isf(scipy.stats.t.sf(|t|, df)), to the bit, at 1% of its cost: the
    # distributions' wrappers took most of a snapshot's trend scores.)
    z = float(-special.ndtri(special.stdtr(df, -abs(t))))
    return math.copysign(min(z, MAX_SCORE), t)


def _recut(tid: int, born: int, history: Sequence[HistoryEntry], latest: HistoryEntry,
           s: TrendSettings) -> bool:
    """Whether topic ``tid`` (born at version ``born``) shares more than ``new_max_overlap`` of
    its latest top words with an established topic of the snapshot before its birth: one of
    the history's first model, or one that had lived ``new_min_snapshots`` snapshots by then
    (a precursor that lived a snapshot or two is the same emergence, seen early)."""
    words = (latest.words or {}).get(tid)
    before = [e for e in history if int(e.version) < born]
    if not words or not before or not before[-1].words or float(s.new_max_overlap) >= 1:
        return False
    mine = set(words)
    for other, w in before[-1].words.items():
        lived = sum(other in e.prevalence for e in before)
        established = other in history[0].prevalence or lived >= int(s.new_min_snapshots)
        if established and len(mine & set(w)) > float(s.new_max_overlap) * len(mine):
            return True
    return False


def _direction(score: float, min_score: float) -> str:
    if score >= min_score:
        return "rising"
    if score <= -min_score:
        return "falling"
    return "flat"


def compute_trends(history: Sequence[HistoryEntry], settings: TrendSettings | None = None
                   ) -> Trends:
    """Score every topic of the window's snapshots, and sort them into rising/falling/new/gone.

    Parameters
    ----------
    history : sequence of HistoryEntry
        Oldest first, versions increasing; at least one entry.
    settings : TrendSettings, optional

    Returns
    -------
    Trends
        ``rising`` (highest score first), ``falling`` (lowest first), ``new`` (highest score
        first), ``gone`` (most recently seen first, then by id), and every topic in
        ``topics``.

    Raises
    ------
    InputError
        For an empty history or versions that do not increase.
    """
    s = settings or TrendSettings()
    if not history:
        raise InputError("the history is empty: no snapshot has been published")
    versions = [int(e.version) for e in history]
    if any(b <= a for a, b in zip(versions, versions[1:])):
        raise InputError("history versions must increase")
    first_seen: dict[int, int] = {}
    for e in history:
        for tid in e.prevalence:
            first_seen.setdefault(int(tid), int(e.version))
    window = list(history[-int(s.window):])
    latest = window[-1]
    alive_ids = {int(t) for t in latest.prevalence}
    ids = sorted({int(t) for e in window for t in e.prevalence})
    every = {tid: [(int(e.version), str(e.created_at), float(e.prevalence[tid]))
                   for e in window if tid in e.prevalence] for tid in ids}
    # Each series' line once: it gives both the pooled noise and the topic's own score.
    long_enough = {tid: p for tid in ids
                   if (p := _check([v for _, _, v in every[tid]])).size >= MIN_POINTS}
    lines = dict(zip(long_enough, _fit_lines(list(long_enough.values()), s.prevalence_floor)))
    prior_variance, pool_df = _pool(list(lines.values()))
    topics: dict[int, TopicTrend] = {}
    for tid in ids:
        series = every[tid]
        score = (_score(lines[tid], s.noise_floor, prior_variance, min(PRIOR_DF, pool_df))
                 if tid in lines else 0.0)
        born = first_seen[tid]
        born_version = None if born == versions[0] and versions[0] != 1 else born
        alive = tid in alive_ids
        direction = _direction(score, float(s.min_score))
        is_new = (alive and born != versions[0] and born >= int(window[0].version)
                  and len(series) >= int(s.new_min_snapshots) and direction == "rising"
                  and not _recut(tid, born, history, latest, s))
        topics[tid] = TopicTrend(tid, score, direction, series[-1][2], born_version, alive,
                                 is_new, series)
    alive = [t for t in topics.values() if t.alive]
    gone = [t for t in topics.values() if not t.alive]
    return Trends(
        version=int(latest.version), created_at=str(latest.created_at),
        window=[(int(e.version), str(e.created_at)) for e in window],
        rising=sorted((t for t in alive if t.direction == "rising"), key=lambda t: (-t.score, t.id)),
        falling=sorted((t for t in alive if t.direction == "falling"),
                       key=lambda t: (t.score, t.id)),
        new=sorted((t for t in alive if t.new), key=lambda t: (-t.score, t.id)),
        gone=sorted(gone, key=lambda t: (-t.series[-1][0], t.id)),
        topics=topics)
