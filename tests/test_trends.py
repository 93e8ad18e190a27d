"""The trend score and compute_trends: properties (hypothesis) and calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.model.trends import (MAX_SCORE, MIN_POINTS, PRIOR_DF, HistoryEntry,
                                       TrendSettings, compute_trends, pooled_noise,
                                       trend_score)

prevalences = st.lists(st.floats(1e-4, 1.0), min_size=MIN_POINTS, max_size=30)


@given(prevalences)
def test_reversing_time_negates_the_score(p):
    assert trend_score(p[::-1]) == pytest.approx(-trend_score(p), abs=1e-9)


@given(st.lists(st.floats(1e-4, 1.0), min_size=2, max_size=15))
def test_a_palindrome_is_flat_however_noisy(half):
    # Noise with no direction in time: the series read backwards is itself.
    assert trend_score(half + half[-2::-1]) == 0.0


@given(prevalences, st.floats(0.01, 100.0))
def test_scale_invariance_in_prevalence(p, c):
    p = [min(x, 0.9) for x in p]
    q = [x * c for x in p]
    assert trend_score(q, prevalence_floor=1e-6 * c) == pytest.approx(
        trend_score(p, prevalence_floor=1e-6), rel=1e-6, abs=1e-6)


@given(st.lists(st.floats(1e-3, 1.0), min_size=MIN_POINTS, max_size=30, unique=True))
def test_a_monotone_series_has_the_sign_of_its_direction(p):
    up = sorted(p)
    assert trend_score(up) > 0 and trend_score(up[::-1]) < 0


@given(st.integers(5, 30), st.floats(0.2, 0.5), st.floats(1e-3, 0.05),
       st.lists(st.floats(-1, 1), min_size=30, max_size=30))
def test_a_planted_ramp_is_rising(n, growth, start, noise):
    # Geometric growth of at least 22 % a snapshot over 5 or more, with noise below a quarter
    # of a step; scored alone (no pooled noise), as the least favourable case.
    x = [start * math.exp(growth * t + 0.25 * growth * noise[t]) for t in range(n)]
    assert trend_score(x) >= 3.0


@settings(max_examples=60)
@given(st.lists(prevalences, min_size=1, max_size=6), st.floats(0.0, 20.0))
def test_scores_and_pooled_noise_match_scipy_stats_distributions(series, prior_df):
    # The scores map t through scipy.special's functions, not scipy.stats' wrappers (100x the
    # cost): the same numbers as the distributions, computed here the slow way.
    from scipy import stats

    variances, dfs = [], []
    for p in series:
        x = np.log(np.maximum(p, 1e-3))
        n = x.size
        slopes = [(x[j] - x[i]) / (j - i) for i in range(n) for j in range(i + 1, n)]
        slope = float(np.median(slopes))
        resid = x - slope * np.arange(n)
        resid -= np.median(resid)
        variances.append(float(resid @ resid) / (n - 2))
        dfs.append(n - 2)
    d = float(np.median(dfs))
    want = float(np.median(variances)) / (float(stats.chi2.median(d)) / d)
    got, total = pooled_noise(series)
    assert got == pytest.approx(want, rel=1e-12) and total == sum(dfs)
    p = series[0]
    n = len(p)
    df = n - 2 + prior_df
    noise = max(0.05, math.sqrt((variances[0] * (n - 2) + prior_df * got) / df))
    x = np.log(np.maximum(p, 1e-3))
    slope = float(np.median([(x[j] - x[i]) / (j - i) for i in range(n)
                             for j in range(i + 1, n)]))
    t = slope / (noise * math.sqrt(12.0 / (n * (n * n - 1.0))))
    z = 0.0 if abs(t) < 1e-12 else math.copysign(
        min(float(stats.norm.isf(stats.t.sf(abs(t), df))), MAX_SCORE), t)
    assert trend_score(p, prior_variance=got, prior_df=prior_df) == pytest.approx(
        z, rel=1e-9, abs=1e-9)


@given(st.lists(st.floats(0.05, 0.5), min_size=1, max_size=MIN_POINTS - 1))
def test_too_few_points_score_zero(p):
    assert trend_score(p) == 0.0


@given(prevalences, st.floats(0.0, 1.0))
def test_raising_the_last_point_never_lowers_the_slope_direction(p, bump):
    # The Theil-Sen slope is monotone in the last point; a higher last value cannot turn
    # a rising series into a falling one.
    higher = p[:-1] + [min(p[-1] + bump, 1.0)]
    if trend_score(p) > 0:
        assert trend_score(higher) >= 0


def test_stationary_noise_is_rarely_rising():
    # Calibration: 20 topics with shared lognormal noise, 4,000 windows of each length;
    # a z-score of 3 is exceeded ~0.13 % of the time by a normal variate.
    rng = np.random.default_rng(7)
    for n in (3, 5, 10):
        hits = total = 0
        for _ in range(200):
            series = [0.05 * np.exp(0.3 * rng.standard_normal(n)) for _ in range(20)]
            variance, df = pooled_noise(series)
            for x in series:
                hits += trend_score(x, prior_variance=variance, prior_df=min(4.0, df)) >= 3.0
                total += 1
        assert hits / total < 0.005, (n, hits / total)


def test_the_docstring_example():
    import doctest

    import anchorstream.model.trends as module

    assert doctest.testmod(module).failed == 0


def test_bad_values_are_refused():
    with pytest.raises(InputError, match="finite and non-negative"):
        trend_score([0.1, -0.1, 0.2])
    with pytest.raises(InputError, match="window"):
        TrendSettings(window=1)
    with pytest.raises(InputError, match="empty"):
        compute_trends([])
    with pytest.raises(InputError, match="increase"):
        compute_trends([HistoryEntry(2, "2026-01-01T00:00:00Z", {}),
                        HistoryEntry(1, "2026-01-01T00:00:00Z", {})])


def entries(rows):
    return [HistoryEntry(v, f"2026-01-01T00:00:{v:02d}Z", row) for v, row in rows]


def test_new_needs_a_birth_after_the_first_model_persistence_and_a_rise():
    rows = [(v, {0: 0.5, 1: 0.5}) for v in range(1, 4)]
    rows += [(v, {0: 0.5, 1: 0.5, 5: 0.01 * 2 ** (v - 4)}) for v in range(4, 9)]
    t = compute_trends(entries(rows), TrendSettings(window=8))
    assert [x.id for x in t.new] == [5] and t.topics[5].born_version == 4
    assert t.topics[0].born_version == 1 and not t.topics[0].new  # the first model's topics
    # Two snapshots old: not new yet (new_min_snapshots = 3), however fast it grew.
    t = compute_trends(entries(rows[:5]), TrendSettings(window=8))
    assert t.new == []
    # Born and flat: not new.
    flat = rows[:3] + [(v, {0: 0.5, 1: 0.5, 5: 0.02}) for v in range(4, 9)]
    assert compute_trends(entries(flat)).new == []


def test_history_older_than_kept_gives_no_birth_version():
    rows = [(v, {0: 0.5, 1: 0.5}) for v in range(5, 9)]
    t = compute_trends(entries(rows))
    assert t.topics[0].born_version is None and t.new == []


def test_gone_and_window():
    rows = [(v, {0: 0.5, 1: 0.5}) for v in range(1, 5)] + [(v, {0: 1.0}) for v in range(5, 8)]
    t = compute_trends(entries(rows), TrendSettings(window=5))
    assert [x.id for x in t.gone] == [1] and t.gone[0].series[-1][0] == 4
    assert [w[0] for w in t.window] == [3, 4, 5, 6, 7]
    assert compute_trends(entries(rows), TrendSettings(window=3)).gone == []


def test_a_recut_of_an_established_topic_is_not_new():
    old = [f"a{i}" for i in range(10)]
    fresh = [f"z{i}" for i in range(10)]

    def entry(v, prev, words):
        return HistoryEntry(v, f"2026-01-01T00:00:{v:02d}Z", prev, words)

    rows = [entry(v, {0: 0.5, 1: 0.5}, {0: old, 1: fresh[:2] + old[2:]}) for v in (1, 2, 3)]
    # 5 is born on 1's words (6 of 10 in common) and grows: a re-cut of 1, not news.
    rows += [entry(v, {0: 0.5, 1: 0.3, 5: 0.02 * 2 ** (v - 4)},
                   {0: old, 1: fresh[:2] + old[2:], 5: old[:6] + fresh[6:]}) for v in range(4, 9)]
    t = compute_trends(rows)
    assert t.topics[5].direction == "rising" and t.new == []
    assert [x.id for x in compute_trends(rows, TrendSettings(new_max_overlap=1.0)).new] == [5]
    # On words of its own, the same series is new.
    own = rows[:3] + [entry(e.version, e.prevalence, {**e.words, 5: fresh}) for e in rows[3:]]
    assert [x.id for x in compute_trends(own).new] == [5]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 6), st.floats(1e-4, 1.0), max_size=5),
                min_size=1, max_size=12))
def test_every_score_is_the_series_score_against_the_window_pooled_noise(rows):
    # compute_trends fits each series once for both the pool and the score, the series of one
    # length at once: the same numbers as the public functions, series by series.
    s = TrendSettings(window=6)
    t = compute_trends(entries(list(enumerate(rows, start=1))), s)
    window = rows[-s.window:]
    series = {tid: [r[tid] for r in window if tid in r] for r in window for tid in r}
    variance, df = pooled_noise(list(series.values()))
    assert set(t.topics) == set(series)
    for tid, p in series.items():
        assert t.topics[tid].score == trend_score(p, prior_variance=variance,
                                                  prior_df=min(PRIOR_DF, df))
