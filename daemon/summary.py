"""A published snapshot in brief: what the ``on_publish`` hook of
:class:`daemon.publish.Publisher` receives and the ``model_updates`` Kafka topic carries
(:class:`daemon.kafka.producers.ModelUpdatesProducer`): the topics' ids, anchors, prevalences
and first words, the churn, and the trends' ids with their scores."""

from __future__ import annotations

from typing import Any

from anchorstream.model.trends import Trends
from anchorstream.snapshot import Snapshot

__all__ = ["compact_summary", "trends_summary"]


def trends_summary(trends: Trends | None, limit: int = 10) -> dict[str, Any] | None:
    """The trends in brief: ``{"window": [from, to], "rising"|"new"|"falling"|"gone": [{"id",
    "score"}, ...]}`` (at most ``limit`` each, in :class:`Trends`' order), or None."""
    if trends is None:
        return None

    def brief(items):
        return [{"id": t.id, "score": round(t.score, 4)} for t in items[:limit]]

    return {"window": [trends.window[0][0], trends.window[-1][0]],
            "rising": brief(trends.rising), "new": brief(trends.new),
            "falling": brief(trends.falling), "gone": brief(trends.gone)}


def compact_summary(snapshot: Snapshot, version: int, n_words: int = 10,
                    trends: Trends | None = None) -> dict[str, Any]:
    """A small JSON-able description of a snapshot, e.g. for a Kafka "model updates" topic.

    Returns
    -------
    dict
        ``version``, ``created_at``, ``num_docs``, ``num_topics``, ``vocab_size``, ``churn`` (the
        manifest's ``extra["churn"]`` when the publisher was given one) and ``topics``: a list of
        ``{"id", "anchor", "prevalence", "top_words": [word, ...]}`` with ``n_words`` words;
        ``trends``: :func:`trends_summary` (None when not given).
    """
    m = snapshot.manifest
    extra = m.get("extra") or {}
    return {
        "version": int(version),
        "created_at": m["created_at"],
        "num_docs": m["num_docs"],
        "num_topics": m["num_topics"],
        "vocab_size": m["vocab_size"],
        "churn": extra.get("churn"),
        "trends": trends_summary(trends),
        "topics": [
            {
                "id": t["id"],
                "anchor": t["anchor"],
                "prevalence": t["prevalence"],
                "top_words": [w for w, _ in t["top_words"][:n_words]],
            }
            for t in snapshot.topics
        ],
    }
