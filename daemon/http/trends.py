"""``GET /v1/trends``: rising, falling, new and gone topics, as JSON (docs/trends.md).

The route in :mod:`daemon.http.api` parses the query and calls :func:`trends_document`, which
reads the publisher's history (:meth:`daemon.publish.Publisher.trends`) and the latest snapshot
for the words of alive topics (the history's last record for topics that are gone).

Response (the contract the topic browser relies on)::

    {"version", "created_at",
     "window": {"snapshots", "from_version", "to_version", "from_created_at", "to_created_at"},
     "settings": {"window", "min_score", "new_min_snapshots", "prevalence_floor", "noise_floor"},
     "rising": [trend, ...], "falling": [...], "new": [...], "gone": [...]}

    trend = {"id", "anchor", "top_words": [10 words], "score", "direction", "prevalence",
             "born_version", "new", "series": [{"version", "created_at", "prevalence"}, ...]}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from anchorstream.model.trends import TopicTrend, Trends, compute_trends

__all__ = ["MAX_LIMIT", "trends_document"]

#: Largest ``?limit=`` (topics per list).
MAX_LIMIT = 1000
N_WORDS = 10


def _trend(t: TopicTrend, words: dict[int, tuple[str | None, list[str]]]) -> dict[str, Any]:
    anchor, top = words.get(t.id, (None, []))
    return {
        "id": t.id,
        "anchor": anchor,
        "top_words": top[:N_WORDS],
        "score": round(t.score, 4),
        "direction": t.direction,
        "prevalence": t.prevalence,
        "born_version": t.born_version,
        "new": t.new,
        "series": [{"version": v, "created_at": c, "prevalence": p} for v, c, p in t.series],
    }


def _words(publisher) -> dict[int, tuple[str | None, list[str]]]:
    """Anchor and top words per topic id: the history's last record, then the latest snapshot."""
    words = publisher.history.last_words()
    latest = publisher.latest()
    if latest is not None:
        for t in latest[1].topics:
            words[int(t["id"])] = (t.get("anchor"), [w for w, _ in t["top_words"][:N_WORDS]])
    return words


def trends_document(publisher, *, limit: int = 10, window: int | None = None,
                    min_score: float | None = None) -> dict[str, Any] | None:
    """The ``/v1/trends`` body, or None before the first snapshot.

    Parameters
    ----------
    publisher : daemon.publish.Publisher
    limit : int
        Topics per list (at most :data:`MAX_LIMIT`).
    window : int, optional
        Snapshots to look at instead of ``trends.window`` (at least 2).
    min_score : float, optional
        Score from which a topic is rising (or falling below minus it) instead of
        ``trends.min_score`` (> 0; a small value lists every topic that goes up at all).
    """
    settings = publisher.trend_settings
    overrides = {k: v for k, v in (("window", window), ("min_score", min_score))
                 if v is not None and v != getattr(settings, k)}
    if not overrides:
        trends: Trends | None = publisher.trends()
    else:
        settings = dataclasses.replace(settings, **overrides)
        entries = publisher.history.entries()
        trends = compute_trends(entries, settings) if entries else None
    if trends is None:
        return None
    words = _words(publisher)
    (first, first_at), (last, last_at) = trends.window[0], trends.window[-1]
    return {
        "version": trends.version,
        "created_at": trends.created_at,
        "window": {"snapshots": len(trends.window), "from_version": first, "to_version": last,
                   "from_created_at": first_at, "to_created_at": last_at},
        "settings": {"window": settings.window, "min_score": settings.min_score,
                     "new_min_snapshots": settings.new_min_snapshots,
                     "prevalence_floor": settings.prevalence_floor,
                     "noise_floor": settings.noise_floor,
                     "new_max_overlap": settings.new_max_overlap},
        **{name: [_trend(t, words) for t in getattr(trends, name)[:limit]]
           for name in ("rising", "falling", "new", "gone")},
    }
