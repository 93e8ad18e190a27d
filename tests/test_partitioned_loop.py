"""The partitioned ingest loop: routing by partition, revocation, and the fence in action.

A scripted consumer-group member stands in for KafkaSource (the real one is in
tests/test_scaleout.py): it positions newly assigned partitions through ``offsets_for`` the way
KafkaSource does (the stored offset, or the next delivered one if larger) and honours
``reposition`` / ``forget_delivered``.
"""

from __future__ import annotations

import json

import pytest

from anchorstream.store import CooccurrenceStore, open_committed, partition_url, read_partitions
from anchorstream.text.tokenize import Tokenizer
from daemon.ingest.partitioned import PartitionedIngestLoop, PartitionStores
from daemon.ingest.source import kafka_position
from daemon.kafka.source import SourceRecord
from daemon.metrics import Metrics
from daemon.settings import MessageConfig

TOPIC = "docs"
WORDS = ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon", "peach", "pear", "plum"]


def doc(p: int, i: int) -> bytes:
    return json.dumps({"text": " ".join(WORDS[(p + i + k) % len(WORDS)]
                                        for k in range(3 + i % 3))}).encode()


LOG = {p: [doc(p, i) for i in range(30)] for p in range(3)}


class GroupMember:
    """A consumer-group member over the fixed LOG (see module notes)."""

    def __init__(self, assigned):
        self.assigned = set(assigned)
        self.pending = set(assigned)
        self.next: dict[int, int] = {}
        self.delivered: dict[int, int] = {}
        self.offsets_for = self.on_topic_reset = self.on_skip = None
        self.repositioned = []

    position = staticmethod(kafka_position)
    stopped = False

    def assign(self, partitions):
        self.pending |= set(partitions) - self.assigned
        self.assigned |= set(partitions)

    def revoke(self, partitions):
        self.assigned -= set(partitions)
        self.pending -= set(partitions)

    def poll_batch(self, max_records=None, timeout=0.0, upto=None):
        for p in sorted(self.pending):
            stored = self.offsets_for(TOPIC, p)
            self.next[p] = max([o for o in (stored, self.delivered.get(p)) if o is not None],
                               default=0)
        self.pending.clear()
        out = []
        for p in sorted(self.assigned):
            end = len(LOG[p]) if upto is None else min(upto, len(LOG[p]))
            for i in range(self.next[p], end):
                out.append(SourceRecord(TOPIC, p, i, LOG[p][i]))
            self.next[p] = max(self.next[p], end)
            if out:
                self.delivered[p] = self.next[p]
        return out

    def forget_delivered(self, topic, p):
        self.delivered.pop(p, None)

    def reposition(self, topic, p):
        self.repositioned.append(p)
        self.forget_delivered(topic, p)
        if p in self.assigned:
            self.pending.add(p)

    def assignment(self):
        return {(TOPIC, p) for p in self.assigned}

    def topic_ids(self):
        return {}

    def topic_id(self, topic):
        return None

    def commit(self, offsets):
        pass


def member_loop(root, assigned, metrics=None, **create):
    def opener(url):
        return CooccurrenceStore.open_or_create(url, capacity=32, admit_threshold=1, **create)

    source = GroupMember(assigned)
    loop = PartitionedIngestLoop(PartitionStores(str(root), opener), tokenizer=Tokenizer(),
                                 message=MessageConfig(max_bytes=500), metrics=metrics,
                                 checkpoint_every_docs=10 ** 6, checkpoint_every_seconds=3600)
    loop.attach(source)
    return loop, source


def feed(loop, source, upto=None):
    loop.release_revoked()
    records = source.poll_batch(upto=upto)
    if records:
        loop.process(records)


def reference(tmp_path):
    """Every partition's whole log in one store (admit at first sight: the rule does not bind)."""
    tok = Tokenizer()
    store = CooccurrenceStore.create(tmp_path / "single", capacity=32, admit_threshold=1)
    store.add([tok(json.loads(v)["text"]) for p in sorted(LOG) for v in LOG[p]])
    store.checkpoint()
    return open_committed(tmp_path / "single")


def assert_once(tmp_path, root):
    summed = read_partitions(root, [(TOPIC, p) for p in LOG])
    single = reference(tmp_path)
    assert summed.n_docs_added == sum(len(v) for v in LOG.values())
    assert {k: v["offset"] for k, v in summed.partitions.items()} == {
        f"kafka:{TOPIC}:{p}": len(LOG[p]) for p in LOG}
    assert sorted(summed.words) == sorted(single.words)
    order = [summed.words.index(w) for w in single.words]
    c = summed.cooccurrence.counts[order][:, order]
    assert c == pytest.approx(single.cooccurrence.counts, rel=1e-9)


def test_documents_go_to_their_partitions_store(tmp_path):
    root = tmp_path / "root"
    metrics = Metrics(process=False)
    loop, source = member_loop(root, {0, 1, 2}, metrics)
    feed(loop, source)
    assert loop.checkpoint()
    # Admitted at first sight, never evicted: one admission per word in each partition's store.
    assert metrics.vocabulary_admissions._value.get() == sum(
        len(s.vocabulary) for s in loop.store.stores.values()) > 0
    assert metrics.vocabulary_evictions._value.get() == 0
    for p in LOG:
        state = open_committed(partition_url(root, TOPIC, p))
        assert state.n_docs_added == len(LOG[p]) and state.offsets == {f"kafka:{TOPIC}:{p}": 30}
    assert_once(tmp_path, root)


def test_each_partitions_store_skips_the_repeats_it_holds(tmp_path, monkeypatch):
    # Every partition's log ends with its first ten documents again: each store skips them
    # (store.duplicate_memory), their offsets still advance, the metric counts them. A text
    # in two partitions is in two stores' memories, and counted in each (docs/store.md).
    for p in LOG:
        monkeypatch.setitem(LOG, p, LOG[p] + LOG[p][:10])
    assert doc(0, 21) == doc(1, 0)
    root = tmp_path / "root"
    metrics = Metrics(process=False)
    loop, source = member_loop(root, {0, 1, 2}, metrics, duplicate_memory=1000)
    feed(loop, source)
    assert loop.checkpoint()
    assert loop.duplicates == 30 and loop.documents == 90
    assert metrics.registry.get_sample_value("anchorstream_documents_duplicate_total") == 30
    for p in LOG:
        state = open_committed(partition_url(root, TOPIC, p))
        assert state.n_docs_added == 30 and state.offsets == {f"kafka:{TOPIC}:{p}": 40}


def test_a_stale_owner_is_fenced_reloads_and_resumes_from_the_stored_offsets(tmp_path):
    root = tmp_path / "root"
    metrics = Metrics(process=False)
    a, sa = member_loop(root, {0, 1, 2}, metrics)
    feed(a, sa, upto=10)
    assert a.checkpoint()
    # A pauses (a long GC, a network partition); the group gives partition 1 to B, which
    # counts 10..19 and commits. A, not told yet, counts 10..24 of partition 1.
    b, sb = member_loop(root, {1})
    feed(b, sb, upto=20)
    assert b.checkpoint()
    feed(a, sa, upto=25)
    assert a.checkpoint()  # partitions 0 and 2 commit; 1 is fenced, not rebased
    assert metrics.partitions_fenced._value.get() == 1 and sa.repositioned == [1]
    assert open_committed(partition_url(root, TOPIC, 1)).offsets[f"kafka:{TOPIC}:1"] == 20
    # A resumes partition 1 from B's offset 20 with B's state; B's next commit is fenced.
    feed(a, sa)
    assert a.checkpoint()
    feed(b, sb)
    assert b.checkpoint()
    assert sb.repositioned == [1]
    # The group finally revokes partition 1 from B: nothing more to commit there.
    sb.revoke({1})
    feed(b, sb)
    assert b.store.stores == {}
    assert_once(tmp_path, root)


def test_revoked_partitions_are_checkpointed_then_released(tmp_path):
    root = tmp_path / "root"
    a, sa = member_loop(root, {0, 1, 2})
    feed(a, sa, upto=12)
    sa.revoke({2})
    a.release_revoked()  # what step() does first
    assert sorted(a.store.stores) == [f"kafka:{TOPIC}:0", f"kafka:{TOPIC}:1"]
    assert open_committed(partition_url(root, TOPIC, 2)).n_docs_added == 12
    b, sb = member_loop(root, {2})
    feed(b, sb)  # resumes at 12
    assert b.checkpoint()
    # Given back to A, whose memory of partition 2 is stale: it reloads at B's state.
    sa.assign({2})
    feed(a, sa)
    assert a.checkpoint()
    assert_once(tmp_path, root)


def test_a_decay_in_seconds_routes_timestamps_and_sums_to_one_store(tmp_path):
    # store.half_life_seconds with the partitioned layout: the loop passes each record's
    # timestamp to its partition's store, and the sum (every partition at the latest clock)
    # equals one store fed the same documents with the same timestamps.
    from anchorstream.stats.accumulator import Forgetting

    decay = Forgetting(half_life=20.0, unit="seconds")

    def opener(url):
        return CooccurrenceStore.open_or_create(url, capacity=32, admit_threshold=1,
                                                forgetting=decay)

    stamp = {p: [1_000_000 * (p + 1) + 7_000 * i for i in range(len(LOG[p]))] for p in LOG}
    source = GroupMember(LOG)
    source.poll_batch = lambda max_records=None, timeout=0.0, upto=None: [
        SourceRecord(TOPIC, p, i, LOG[p][i], timestamp=stamp[p][i])
        for p in sorted(source.pending or ()) for i in range(len(LOG[p]))
        if source.offsets_for(TOPIC, p) is None]
    loop = PartitionedIngestLoop(PartitionStores(str(tmp_path / "root"), opener,
                                                 forgetting=decay),
                                 tokenizer=Tokenizer(), message=MessageConfig(max_bytes=500),
                                 checkpoint_every_docs=10 ** 6, checkpoint_every_seconds=3600)
    loop.attach(source)
    loop.process(source.poll_batch())
    loop.checkpoint()
    summed = read_partitions(tmp_path / "root", [(TOPIC, p) for p in LOG])
    tok = Tokenizer()
    single = CooccurrenceStore.create(tmp_path / "single", capacity=32, admit_threshold=1,
                                      forgetting=decay)
    for p in LOG:
        single.add([tok(json.loads(v)["text"]) for v in LOG[p]], [t / 1000 for t in stamp[p]])
    single.checkpoint()
    one = open_committed(tmp_path / "single")
    assert summed.clock == one.clock == stamp[2][-1] / 1000
    order = [summed.words.index(w) for w in one.words]
    got = summed.cooccurrence.counts[order][:, order]
    assert got == pytest.approx(one.cooccurrence.counts, rel=1e-9, abs=1e-12)
    assert summed.cooccurrence.num_docs == pytest.approx(one.cooccurrence.num_docs, rel=1e-9)
    assert summed.cooccurrence.num_docs < 30  # partitions 0 and 1 decayed to the latest clock
