"""How far the demo's replay is (daemon/cli/demo_progress.py): in messages, by offsets."""

from __future__ import annotations

from types import SimpleNamespace

from daemon.cli.demo_progress import covered, hold_ahead, messages
from daemon.ingest.source import TOPIC_IDS_KEY


def test_messages_are_counted_by_the_kafka_offsets_alone():
    offsets = {"kafka:documents:0": 1200, "kafka:documents:1": 1199,
               TOPIC_IDS_KEY: {"documents": "abc"}, "file:/x.jsonl": 99}
    assert messages(offsets) == 2399 and messages(None) == 0
    # A snapshot covers its store's offsets, whatever number of documents the store counted.
    snap = SimpleNamespace(num_docs=2000, manifest={"source": {"offsets": offsets}})
    assert covered(snap) == 2399


def test_the_replay_waits_while_it_is_a_step_ahead_of_the_newest_snapshot():
    snap = SimpleNamespace(manifest={"source": {"offsets": {"kafka:documents:0": 600}}})
    publisher = SimpleNamespace(latest=lambda: (3, snap))
    hold = hold_ahead(publisher, 300)
    assert not hold(899) and hold(900)
    assert hold_ahead(SimpleNamespace(latest=lambda: None), 300)(300)
