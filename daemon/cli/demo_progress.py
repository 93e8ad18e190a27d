"""How far the demo's replay is, in messages: what a snapshot covers, and the pacing that keeps
the replay a step ahead of the newest snapshot (``daemon/cli/demo.py``).

Measured in messages, by the store's committed offsets, not in the documents the store
counted: a repeated document is skipped (``store.duplicate_memory``), so the documents counted
fall behind the messages sent.
"""

from __future__ import annotations

import time

from daemon.ingest.source import parse_offset_key

__all__ = ["covered", "hold_ahead", "messages"]


def messages(offsets) -> int:
    """Messages consumed by committed ``offsets`` (the demo's topic is new: its partitions'
    offsets count from 0). A repeated document is skipped, not counted in the store's
    documents, so the replay's progress is measured in messages, which the offsets count
    whatever the store kept."""
    return sum(int(v) for k, v in dict(offsets or {}).items()
               if parse_offset_key(str(k)) is not None)


def covered(snapshot) -> int:
    """The replayed messages a snapshot covers (its store's committed offsets)."""
    return messages((snapshot.manifest.get("source") or {}).get("offsets"))


def hold_ahead(publisher, ahead: int, *, patience: float = 300.0):
    """``hold(n)`` for :class:`~daemon.kafka.producers.Paced`: document ``n`` waits while the newest snapshot covers
    ``ahead`` or more fewer messages, so the stream moves on a step per refresh whatever the
    machine's speed (the first refresh, compiling, takes longest). A snapshot that does not come
    within ``patience`` seconds (a refresh skipped: too few words) releases the stream."""
    state = {"version": None, "since": time.monotonic()}

    def hold(n: int) -> bool:
        latest = publisher.latest()
        version = None if latest is None else latest[0]
        if version != state["version"]:
            state["version"], state["since"] = version, time.monotonic()
        done = 0 if latest is None else covered(latest[1])
        return n >= done + ahead and time.monotonic() - state["since"] < patience

    return hold
