"""The refresher on a real store and a real snapshot directory (planted topics, small sizes)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from anchorstream.model.background import SHORT_DOCUMENTS, label_cap
from anchorstream.model.pipeline import AnchorModel
from anchorstream.store import CooccurrenceStore
from anchorstream.synthetic import add_background, planted_model, sample_documents
from daemon.ingest.loop import Committed
from daemon.metrics import Metrics
from daemon.publish import Publisher
from daemon.refresh import Refresher, select_words

K = 6


def planted_docs(n_docs: int, seed: int, n_words: int = 300) -> list[list[str]]:
    truth = planted_model(n_words, K, random_state=0)
    X, _ = sample_documents(truth, n_docs, doc_length=40, random_state=seed)
    docs = []
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        docs.append([f"w{j:04d}" for j, c in zip(X.indices[lo:hi], X.data[lo:hi])
                     for _ in range(int(c))])
    return docs


def partitioned_stores(root, docs, n_parts: int, **settings):
    """``docs`` dealt round-robin to ``n_parts`` partitions of a partitioned root (stores of
    capacity 400 with ``settings``), each checkpointed: the partitions and the daemon's
    configuration of that root."""
    from anchorstream.store import partition_url
    from daemon.settings import parse_config

    for p in range(n_parts):
        s = CooccurrenceStore.create(partition_url(root, "docs", p), capacity=400,
                                     admit_threshold=1, **settings)
        s.add(docs[p::n_parts])
        s.checkpoint({f"kafka:docs:{p}": len(docs[p::n_parts])})
    cfg = parse_config({"store": {"path": str(root), "layout": "partitioned"},
                        "vocab": {"capacity": 400}}, env={})
    return {("docs", p) for p in range(n_parts)}, cfg


@pytest.fixture
def setup(tmp_path):
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2)
    pub = Publisher(tmp_path / "snaps", keep=5)
    metrics = Metrics(process=False)
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": K, "anchor_min_df": 5},
                    metrics=metrics, interval_seconds=0.05, min_new_docs=1, min_df=2)
    return store, pub, metrics, ref


def test_refresh_publishes_then_warm_starts_and_keeps_ids(setup):
    store, pub, metrics, ref = setup
    store.add(planted_docs(2000, seed=1))
    v1 = store.checkpoint({"kafka:docs:0": 2000})
    first = ref.refresh_once()
    assert first["version"] == 1 and not first["warm"] and first["store_version"] == v1
    version, snap = pub.latest()
    assert version == 1 and snap.num_docs == 2000 and snap.num_topics == K
    assert snap.source["store_version"] == v1
    assert snap.source["offsets"]["kafka:docs:0"] == 2000
    assert sorted(snap.topic_ids) == list(range(K))
    assert snap.extra["next_topic_id"] == K

    store.add(planted_docs(40, seed=2))  # 2 % new documents
    store.checkpoint({"kafka:docs:0": 2040})
    second = ref.refresh_once()
    assert second["warm"] and second["num_docs"] == 2040
    _, snap2 = pub.latest()
    # The same planted topics keep their ids.
    assert sorted(snap2.topic_ids) == list(range(K))
    assert snap2.extra["churn"]["births"] == [] and snap2.extra["churn"]["deaths"] == []
    by_id = {t["id"]: t["anchor"] for t in snap.topics}
    by_id2 = {t["id"]: t["anchor"] for t in snap2.topics}
    assert sum(by_id[i] == by_id2[i] for i in by_id) >= K - 1
    # Nothing new: skipped.
    assert ref.refresh_once() is None
    reg = metrics.registry
    assert reg.get_sample_value("anchorstream_refreshes_total") == 2
    for stage in ("read", "rectify", "anchors", "recover", "align", "publish", "total"):
        assert reg.get_sample_value("anchorstream_refresh_duration_seconds_count",
                                    {"stage": stage}) == 2
    assert reg.get_sample_value("anchorstream_topic_churn", {"kind": "matched"}) == K
    # What the refresher keeps for the next one (its last sparse read, 12 bytes a pair, and
    # the product of its counts the next warm update follows).
    kept = reg.get_sample_value("anchorstream_refresh_kept_bytes")
    f = ref.reads.followed
    product = f.counts.nbytes + f.basis.nbytes + f.idx.nbytes
    assert kept == ref.kept_bytes() == ref.reads.kept.cooccurrence.nbytes + product > product
    # The second refresh updated the first one's rectification: how far the data moved since.
    change = reg.get_sample_value("anchorstream_rectification_warm_change")
    assert 0 < change < 0.04 and snap2.extra["rectify_warm_change"] == change
    assert snap.extra["rectify_warm_change"] == 0.0


def test_failing_refresh_is_counted_and_last_snapshot_stays(setup, monkeypatch):
    store, pub, metrics, ref = setup
    store.add(planted_docs(1500, seed=3))
    store.checkpoint()
    ref.refresh_once()
    store.add(planted_docs(100, seed=4))
    store.checkpoint()

    def broken(self, *a, **kw):
        raise FloatingPointError("boom")

    monkeypatch.setattr(AnchorModel, "fit", broken)
    with pytest.raises(FloatingPointError):
        ref.refresh_once()
    assert pub.latest_version == 1 and "boom" in ref.last_error
    assert metrics.registry.get_sample_value("anchorstream_refresh_failures_total",
                                             {"stage": "fit"}) == 1


def test_too_little_data_is_skipped_not_failed(setup):
    store, pub, metrics, ref = setup
    store.add([["w0001", "w0002"], ["w0001", "w0002"]])
    store.checkpoint()
    assert ref.refresh_once() is None
    assert pub.latest() is None and ref.failures == 0


def test_background_thread_refreshes_when_notified(setup):
    store, pub, metrics, ref = setup
    ref.start()
    try:
        # Nothing committed: no refresh is due, so the thread cannot start one. (The moment
        # below only gives it a chance to misbehave; the assertion before it is the check.)
        assert not ref.due()
        time.sleep(0.2)
        assert pub.latest() is None
        store.add(planted_docs(1500, seed=5))
        store.checkpoint()
        ref.notify(Committed(store.version, store.n_docs_added, time.monotonic()))
        assert pub.wait_for_newer(None, timeout=120) == 1
    finally:
        assert ref.stop(timeout=60)


def test_select_words_applies_min_and_max_df():
    from anchorstream.stats.cooccurrence import Cooccurrence

    c = Cooccurrence(np.zeros((4, 4)), np.ones(4), np.array([1.0, 5.0, 9.0, 10.0]), 10, 40)
    assert select_words(c, min_df=2, max_df_ratio=0.9).tolist() == [1, 2]
    assert select_words(c, min_df=1, max_df_ratio=1.0).tolist() == [0, 1, 2, 3]


def test_supertopic_hierarchy_is_published_with_public_ids(tmp_path):
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2)
    pub = Publisher(tmp_path / "snaps", keep=5)
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": K, "anchor_min_df": 5},
                    interval_seconds=0.05, min_new_docs=1, min_df=2, supertopics=2)
    store.add(planted_docs(2000, seed=5))
    store.checkpoint()
    assert ref.refresh_once() is not None
    _, snap = pub.latest()
    supers = snap.extra["hierarchy"]["supertopics"]
    assert len(supers) == 2
    members = [topic_id for s in supers for topic_id, _ in s["topics"]]
    assert set(members) <= set(snap.topic_ids) and members
    for s in supers:
        weights = [w for _, w in s["topics"]]
        assert weights == sorted(weights, reverse=True)
        assert sum(weights) == pytest.approx(1.0, abs=1e-4)


def test_refreshes_reuse_their_buffers_and_never_overwrite_the_warm_start(tmp_path):
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2)
    ref = Refresher(store.url, Publisher(tmp_path / "snaps", keep=5),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_warm_limit": 1,
                                  "rectify_method": "ap"},  # the dense rectifier's buffers
                    min_new_docs=1, min_df=2)
    store.add(planted_docs(1500, seed=1))
    store.checkpoint()
    ref.refresh_once()
    states, counts = [], []
    for seed in (2, 3, 4, 5):
        previous = ref._model.rectify_data_.copy()
        prev_array = ref._model.rectify_data_
        store.add(planted_docs(30, seed=seed))
        store.checkpoint()
        result = ref.refresh_once()
        assert result["warm"]
        new = ref._model.rectify_data_
        if ref._model.rectify_warm_chain_:
            # A warm update carries the cold rectification's state on, untouched...
            assert new is prev_array
        else:
            # ...and a cold one writes the other buffer: the warm start read intact memory.
            assert not np.shares_memory(new, prev_array)
        np.testing.assert_array_equal(prev_array, previous)
        states.append(new)
        counts.append(ref._buffers.held("counts"))
    # Two buffers take turns, and the counts are read into the same memory each time.
    assert [np.shares_memory(s, states[0]) for s in states] == [True, False, False, True]
    assert states[2] is states[1]
    assert all(np.shares_memory(c, counts[0]) for c in counts)


def test_warm_refreshes_read_only_what_was_committed_since(setup, monkeypatch):
    import anchorstream.store.reading as store_mod
    from anchorstream.store import open_committed

    store, pub, metrics, _ = setup
    # The dense rectifier's refresh keeps the counts it read (the low-rank one reads sparse).
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": K, "anchor_min_df": 5,
                                                  "rectify_method": "ap"},
                    metrics=metrics, interval_seconds=0.05, min_new_docs=1, min_df=2)
    store.add(planted_docs(1500, seed=1))
    store.checkpoint()
    ref.refresh_once()
    full_reads = []
    densify = store_mod._densify
    monkeypatch.setattr(store_mod, "_densify",
                        lambda *a, **kw: full_reads.append(1) or densify(*a, **kw))
    for seed in (2, 3):
        store.add(planted_docs(30, seed=seed))
        store.checkpoint()
        assert ref.refresh_once()["warm"]
        # The counts the refresher holds are exactly what a full read gives...
        fresh = open_committed(store.url).cooccurrence.counts
        n = fresh.shape[0]
        np.testing.assert_allclose(ref._buffers.held("counts")[: n * n].reshape(n, n), fresh,
                                   rtol=1e-12, atol=1e-12 * fresh.max())
    # ...though the refresher itself never read the whole matrix again (only the test did).
    assert len(full_reads) == 2
    # It keeps its V x V buffers for that, and says so.
    kept = metrics.registry.get_sample_value("anchorstream_refresh_kept_bytes")
    assert kept == ref.kept_bytes() >= ref._buffers.held("counts").nbytes >= 8 * n * n
    # A compaction rewrites the base: the next warm refresh reads everything.
    store.add(planted_docs(30, seed=4))
    store.checkpoint()
    store.compact()
    full_reads.clear()
    assert ref.refresh_once()["warm"] and len(full_reads) == 1


def test_warm_lowrank_refreshes_read_only_the_segments_committed_since(tmp_path, monkeypatch):
    # The low-rank refresher reads sparse; warm, it keeps its last read and catches up from it
    # (read_version_sparse's catch-up), as the dense one does with its counts buffer.
    import anchorstream.store.sparseread as sparse_mod
    from anchorstream.store import open_committed_sparse
    from daemon.refresh_inputs import KEEP_READ_MAX_BYTES

    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2,
                                     length_cap=25)
    ref = Refresher(store.url, Publisher(tmp_path / "snaps", keep=5),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"},
                    min_new_docs=1, min_df=2, keep_read_max_bytes=0)
    store.add(planted_docs(1500, seed=1))
    store.checkpoint()
    # This small store holds most pairs: past SPARSE_KEEP bytes per squared word and past
    # refresh.keep_read_max_bytes (0 here) the read is not kept, and every read is a full one.
    upper = open_committed_sparse(store.url).cooccurrence.upper
    n = upper.shape[0]
    assert upper.data.nbytes + upper.indices.nbytes + upper.indptr.nbytes > 2.0 * n * n
    assert ref.sparse and not ref.refresh_once()["warm"] and ref.reads.kept is None
    # Within the default bound (1 GiB, whatever share of the pairs is stored), it is kept.
    assert ref.reads.keep_read_max_bytes != KEEP_READ_MAX_BYTES
    ref.reads.keep_read_max_bytes = KEEP_READ_MAX_BYTES
    store.add(planted_docs(30, seed=5))
    store.checkpoint()
    full_reads = []
    full = sparse_mod.sparse_upper
    monkeypatch.setattr(sparse_mod, "sparse_upper",
                        lambda *a, **kw: full_reads.append(1) or full(*a, **kw))
    assert ref.refresh_once()["warm"] and ref.reads.kept is not None
    assert len(full_reads) == 1
    for seed in (2, 3):
        store.add(planted_docs(30, seed=seed))
        store.checkpoint()
        assert ref.refresh_once()["warm"]
        # What the refresher holds is exactly a full read of the version...
        held = ref.reads.kept.cooccurrence
        fresh = open_committed_sparse(store.url).cooccurrence
        assert ref.reads.kept.version == store.version
        np.testing.assert_allclose(held.upper.toarray(), fresh.upper.toarray(), rtol=1e-12,
                                   atol=1e-12 * fresh.upper.max())
        np.testing.assert_array_equal(held.doc_freq, fresh.doc_freq)
    # ...though only the test's own reads were full ones.
    assert len(full_reads) == 3
    # A compaction rewrites the base: the next warm refresh reads everything.
    store.add(planted_docs(30, seed=4))
    store.checkpoint()
    store.compact()
    full_reads.clear()
    assert ref.refresh_once()["warm"] and len(full_reads) == 1
    # A refresher that does not warm-start keeps nothing between refreshes.
    cold = Refresher(store.url, Publisher(tmp_path / "cold", keep=5), warm_start=False,
                     model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"},
                     min_new_docs=1, min_df=2)
    assert cold.refresh_once()["version"] == 1 and cold.reads.kept is None


@pytest.mark.parametrize("subset", [False, True])
@pytest.mark.parametrize("keep", [False, True])
def test_a_lowrank_refresh_holds_the_read_and_one_sum_at_most(tmp_path, monkeypatch, keep,
                                                              subset):
    # Memory (deploy/README.md, "Resources"): the counts plus the waiting documents' sum is a
    # second copy of the counts; with the read still held beside it and the fit's, a refresh
    # of a full store peaked at 17.5-18.5 V² instead of ~12 V² (benchmarks/README.md,
    # "Session 68"). The words' subset and that sum are one pass over the read
    # (select_with_waiting), so no copy is made before it, and a read the refresher does not
    # keep is let go before the fit. A read kept for the next warm refresh
    # (refresh.keep_read_max_bytes) stays, and stays as it was.
    import gc
    import weakref

    import daemon.refresh_reads as reads_mod
    from anchorstream.store import open_committed_sparse

    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2,
                                     count_delay=40)
    store.add(planted_docs(640, seed=1))
    store.checkpoint()
    ref = Refresher(store.url, Publisher(tmp_path / "snaps", keep=5),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"},
                    min_new_docs=1, min_df=60 if subset else 0,
                    keep_read_max_bytes=None if keep else 0)
    reads, summed, fitted = [], [], []
    read, fit = ref.reads.read, ref._fit

    def remember(v):
        st = read(v)
        reads.append((weakref.ref(st.cooccurrence), st.cooccurrence.n_words))
        return st

    select = reads_mod.select_with_waiting

    def selecting(cooc, idx, waiting, **kwargs):
        summed.append(cooc is reads[-1][0]())  # the read itself: no copy made before
        assert waiting is not None and waiting.num_docs == 40
        # A read let go is summed at once; one kept, at the first use of the sum's entries.
        assert kwargs == {"pending": keep}
        return select(cooc, idx, waiting, **kwargs)

    def fitting(cooc, *args, **kwargs):
        gc.collect()
        held = reads[-1][0]()
        fitted.append(held is not None and held is not cooc)
        return fit(cooc, *args, **kwargs)

    monkeypatch.setattr(ref.reads, "read", remember)
    monkeypatch.setattr(ref, "_fit", fitting)
    monkeypatch.setattr(reads_mod, "select_with_waiting", selecting)
    result = ref.refresh_once()
    assert ref.sparse and result["version"] == 1
    assert (ref.reads.kept is not None) == keep
    f = ref.reads.followed  # with the read kept, the product of it the next fit follows
    product = 0 if f is None else f.counts.nbytes + f.basis.nbytes + f.idx.nbytes
    assert (f is not None) == keep
    assert ref.kept_bytes() == (ref.reads.kept.cooccurrence.nbytes + product if keep else 0)
    assert (result["n_words"] < reads[-1][1]) == subset and result["n_words"] > 2 * K
    # Beside the counts the fit gets, the read is held only where it is kept.
    assert summed == [True] and fitted == [keep]
    if keep:
        held = ref.reads.kept.cooccurrence
        fresh = open_committed_sparse(store.url).cooccurrence
        assert (held.upper != fresh.upper).nnz == 0


def test_lowrank_refreshes_multiply_through_a_head_block_and_keep_none(tmp_path, monkeypatch):
    # With a dense head block (stats/headblock.py; this small store's is forced by a lower
    # size floor) a refresh publishes the topics it publishes without one, and a read kept
    # for the next warm refresh does not keep the block's memory with it.
    from anchorstream.stats import sparse as sparse_mod

    built = []
    choose = sparse_mod.head_block
    monkeypatch.setattr(sparse_mod, "head_block",
                        lambda *a, **k: built.append(choose(*a, **k)) or built[-1])
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2)
    store.add(planted_docs(1500, seed=1))
    store.checkpoint()
    kw = {"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"}
    published = []
    for floor in (10**6, 2):
        monkeypatch.setattr(sparse_mod.SparseCooccurrence, "head_min_words", floor)
        pub = Publisher(tmp_path / f"snaps{floor}", keep=5)
        ref = Refresher(store.url, pub, model_kwargs=kw, min_new_docs=1, min_df=0,
                        keep_read_max_bytes=None)
        assert ref.refresh_once()["version"] == 1
        held = ref.reads.kept.cooccurrence
        assert held._head is False  # kept without its block
        published.append(np.asarray(pub.latest()[1].topic_word, dtype=np.float64))
    assert built[0] is None and built[-1] is not None  # the second refresh had a block
    assert built[-1].words.size >= 2
    plain, headed = published
    for row in headed:  # every topic is one of the float64 refresh's
        assert np.abs(plain - row).sum(axis=1).min() < 1e-3


def test_lowrank_rectification_on_a_length_capped_store_refreshes_warm(tmp_path):
    # The daemon's model.rectify_method: lowrank path on what a store with the product's
    # document weighting holds: published, then warm-started, the planted topics kept.
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2,
                                     length_cap=25)
    pub = Publisher(tmp_path / "snaps", keep=5)
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": K, "anchor_min_df": 5,
                                                  "rectify_method": "lowrank"},
                    metrics=Metrics(process=False), interval_seconds=0.05, min_new_docs=1,
                    min_df=2)
    store.add(planted_docs(2000, seed=1))
    store.checkpoint({"kafka:docs:0": 2000})
    first = ref.refresh_once()
    assert first["version"] == 1 and not first["warm"]
    _, snap = pub.latest()
    assert snap.settings["rectify_method"] == "lowrank" and snap.num_topics == K
    store.add(planted_docs(40, seed=2))
    store.checkpoint({"kafka:docs:0": 2040})
    second = ref.refresh_once()
    assert second["warm"] and second["num_docs"] == 2040
    _, snap2 = pub.latest()
    assert sorted(snap2.topic_ids) == list(range(K))
    by_id = {t["id"]: t["anchor"] for t in snap.topics}
    assert sum(by_id[t["id"]] == t["anchor"] for t in snap2.topics) >= K - 1


def test_a_lowrank_refresh_reads_the_store_sparse_and_fits_what_the_dense_read_gives(
        tmp_path, monkeypatch):
    # model.rectify_method: lowrank reads the counts shard by shard into a sparse matrix (no
    # V x V array, no V x V buffers) and must fit what the dense counts of the same version,
    # over the same selected words, give.
    import daemon.refresh_reads as reads_mod
    from anchorstream.stats.admission import correct_admission
    from anchorstream.stats.cooccurrence import Cooccurrence
    from anchorstream.store import open_committed

    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2,
                                     length_cap=25)
    pub = Publisher(tmp_path / "snaps", keep=5)
    kw = {"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"}
    ref = Refresher(store.url, pub, model_kwargs=kw, min_new_docs=1, min_df=3,
                    max_df_ratio=0.2, admission_min_share=0.25)
    store.add(planted_docs(2000, seed=1))
    store.checkpoint({"kafka:docs:0": 2000})
    dense_reads = []
    monkeypatch.setattr(reads_mod, "open_committed",
                        lambda *a, **k: dense_reads.append(a) or open_committed(*a, **k))
    assert ref.sparse and ref.refresh_once()["version"] == 1
    assert dense_reads == []
    assert all(ref._buffers.held(name) is None
               for name in ("counts", "subset", "iterate", "state-a", "state-b"))
    _, snap = pub.latest()

    st_ = open_committed(store.url)
    full = st_.cooccurrence
    idx = select_words(full, min_df=3, max_df_ratio=0.2)
    assert 0 < idx.size < full.n_words  # the selection cut words: the subset is exercised
    sub = Cooccurrence(full.counts[np.ix_(idx, idx)], full.unigram[idx], full.doc_freq[idx],
                       full.num_docs, full.num_tokens, full.length_cap)
    # Both read paths correct the counts of the words admitted late alike (admission.py).
    assert st_.admission.missed[idx].any()
    sub = correct_admission(sub, st_.admission.subset(idx), min_share=ref.admission_min_share)
    model = AnchorModel(**kw).fit(sub)
    assert list(snap.vocabulary) == [st_.words[i] for i in idx]
    got = np.asarray(snap.topic_word, dtype=np.float64)  # (K, V), aligned ids
    want = model.topic_word_.T
    for row in got:  # every published topic is one of the dense fit's
        assert np.abs(want - row).sum(axis=1).min() < 1e-4


def test_a_partitioned_lowrank_refresh_sums_sparse_reads_and_fits_the_dense_sum(
        tmp_path, monkeypatch):
    # store.layout: partitioned with model.rectify_method: lowrank: the daemon's partitioned
    # reader sums every partition's sparse read (no partition read dense, no V x V array or
    # buffer) and the published topics are those of a fit on the dense sum of the same pins.
    import anchorstream.store.partitions as partitions_mod
    import anchorstream.store.partread as partread_mod
    from anchorstream.stats.cooccurrence import Cooccurrence
    from anchorstream.stats.sparse import SparseCooccurrence
    from anchorstream.store import read_partitions
    from daemon.scaled import partitioned_reader

    root = tmp_path / "root"
    docs = planted_docs(2000, seed=1)
    parts, cfg = partitioned_stores(root, docs, 3, length_cap=25)
    kw = {"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"}
    reads = []
    read = partitioned_reader(cfg, lambda: parts)
    ref = Refresher(str(root), Publisher(tmp_path / "snaps", keep=5), model_kwargs=kw,
                    min_new_docs=1, min_df=3, max_df_ratio=0.2,
                    reader=lambda v, sparse: reads.append(read(v, sparse=sparse)) or reads[-1])

    def no_dense(*a, **k):
        raise AssertionError("a partition was read dense")

    monkeypatch.setattr(partitions_mod, "read_version", no_dense)
    monkeypatch.setattr(partread_mod, "read_version", no_dense)
    assert ref.sparse and ref.refresh_once()["version"] == 1
    assert isinstance(reads[0].cooccurrence, SparseCooccurrence)
    assert all(ref._buffers.held(name) is None
               for name in ("counts", "subset", "iterate", "state-a", "state-b"))
    _, snap = ref.publisher.latest()
    assert {k: v["offset"] for k, v in snap.source["partitions"].items()} == {
        f"kafka:docs:{p}": len(docs[p::3]) for p in range(3)}
    monkeypatch.undo()

    st_ = read_partitions(root, parts, max_words=400)
    full = st_.cooccurrence
    idx = select_words(full, min_df=3, max_df_ratio=0.2)
    assert 0 < idx.size < full.n_words
    sub = Cooccurrence(full.counts[np.ix_(idx, idx)], full.unigram[idx], full.doc_freq[idx],
                       full.num_docs, full.num_tokens, full.length_cap)
    # The partitioned sum has no admission (each partition admits on its own): uncorrected.
    assert st_.admission is None
    model = AnchorModel(**kw).fit(sub)
    assert list(snap.vocabulary) == [st_.words[i] for i in idx]
    want = model.topic_word_.T
    for row in np.asarray(snap.topic_word, dtype=np.float64):
        assert np.abs(want - row).sum(axis=1).min() < 1e-4


@pytest.mark.parametrize("bound", [None, 0])
def test_a_partitioned_lowrank_refresh_lets_go_of_a_sum_its_reader_does_not_keep(
        tmp_path, monkeypatch, bound):
    # refresh.partition_reads_max_bytes bounds the sparse reader too (every partition's read
    # kept: 46 V² held between refreshes at six partitions of 8000 words, benchmarks/README.md,
    # "Session 69"). Past it the reader keeps nothing, and the refresher lets go of the
    # sum once it has taken its words and the waiting documents from it, as of a single
    # store's read it does not keep.
    import gc
    import weakref

    from daemon.scaled import partitioned_reader

    root = tmp_path / "root"
    parts, cfg = partitioned_stores(root, planted_docs(1200, seed=1), 2, count_delay=30)
    cfg = cfg.model_copy(update={"refresh": cfg.refresh.model_copy(
        update={"partition_reads_max_bytes": bound})})
    read = partitioned_reader(cfg, lambda: parts)
    reads, seen = [], []

    def remember(v, sparse):
        st = read(v, sparse=sparse)
        reads.append(weakref.ref(st.cooccurrence))
        return st

    read_again = remember
    read_again.keeps, read_again.kept_bytes = read.keeps, read.kept_bytes
    ref = Refresher(str(root), Publisher(tmp_path / "snaps", keep=5),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"},
                    min_new_docs=1, min_df=60, reader=read_again)
    fit = ref._fit

    def fitting(cooc, *args, **kwargs):
        gc.collect()
        held = reads[-1]()
        seen.append(held is not None and held is not cooc)
        return fit(cooc, *args, **kwargs)

    monkeypatch.setattr(ref, "_fit", fitting)
    result = ref.refresh_once()
    assert result["version"] == 1 and 2 * K < result["n_words"] < 400  # a subset was taken
    assert read.keeps() == (bound is None) and seen == [bound is None]
    # What the reader keeps is what the refresher reports keeping.
    assert ref.kept_bytes() == read.kept_bytes() and (read.kept_bytes() > 0) == (bound is None)


def test_a_partitioned_refresh_adds_the_waiting_documents_to_its_own_copy_only(tmp_path):
    # The partitioned reader keeps its sum of the partitions' counts for the next read: a
    # refresh adds the documents the partitions' delay lines hold back to a copy, never into
    # that sum (which would count them again at every refresh), even where every pair they
    # make is stored already and an addition in place would fit.
    from anchorstream.store import read_partitions
    from daemon.scaled import partitioned_reader

    root = tmp_path / "root"
    docs = planted_docs(1200, seed=1)
    docs += docs[:60]  # each partition's last 30, held back, repeat its first 30
    parts, cfg = partitioned_stores(root, docs, 2, count_delay=30)
    reads = []
    read = partitioned_reader(cfg, lambda: parts)
    # Every word selected (min_df 0, max_df_ratio 1): the fit's counts start as the sum itself.
    ref = Refresher(str(root), Publisher(tmp_path / "snaps", keep=5),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"},
                    min_new_docs=1, min_df=0, max_df_ratio=1.0,
                    reader=lambda v, sparse: reads.append(read(v, sparse=sparse)) or reads[-1])
    result = ref.refresh_once()
    assert result["num_docs"] == len(docs) and result["n_words"] == reads[-1].cooccurrence.n_words
    assert reads[-1].waiting.num_docs == 60
    counted = read_partitions(root, parts, max_words=400).cooccurrence
    np.testing.assert_allclose(reads[-1].cooccurrence.counts_dense(), counted.counts,
                               rtol=1e-12)


@pytest.mark.parametrize("length", [40, 12])
def test_refresh_reports_background_words_and_keeps_them_out_of_the_top_words(tmp_path, length):
    # The same code path as `fit` (write_snapshot with the publisher's background_spread,
    # and the documents' mean length, which decides how the labels are ranked).
    truth = add_background(planted_model(300, K, random_state=0), 5, 0.3, random_state=0)
    X, _ = sample_documents(truth, 2000 * 40 // length, doc_length=length, random_state=1)
    docs = [[f"w{j:04d}" for j, c in zip(X.indices[X.indptr[i]:X.indptr[i + 1]],
                                           X.data[X.indptr[i]:X.indptr[i + 1]])
             for _ in range(int(c))] for i in range(X.shape[0])]
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2)
    store.add(docs)
    store.checkpoint({"kafka:docs:0": len(docs)})
    planted = {f"w{j:04d}" for j in range(300, 305)}
    for spread, expect in ((0.33, planted), (None, set())):
        pub = Publisher(tmp_path / f"snaps-{spread}", keep=5, background_spread=spread)
        Refresher(store.url, pub, model_kwargs={"n_topics": K, "anchor_min_df": 5},
                  min_new_docs=1, min_df=2).refresh_once()
        _, snap = pub.latest()
        report = (snap.extra.get("background_words") or {"words": []})["words"]
        # The planted words are found (with K = 6, a third of the topics is two, so a few
        # words the planted topics share are reported too).
        assert expect <= {w for w, *_ in report} and (expect or not report)
        in_top = planted & {w for t in snap.topics for w, _ in t["top_words"][:10]}
        assert (not in_top) if expect else in_top
        if spread is not None:
            found = snap.extra["background_words"]
            assert found["label_cap"] == (None if length >= SHORT_DOCUMENTS else label_cap(K))


def test_refresh_refines_by_pairs_as_fit_does(tmp_path):
    # model.refine runs inside AnchorModel.fit, the code path `anchorstream fit` takes: the
    # refresher times its stages and records the setting and its iterations in the snapshot.
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2)
    pub = Publisher(tmp_path / "snaps", keep=5)
    metrics = Metrics(process=False)
    ref = Refresher(store.url, pub, metrics=metrics, min_new_docs=1, min_df=2,
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "refine": "joint",
                                  "refine_max_iter": 5})
    store.add(planted_docs(1500, seed=3))
    store.checkpoint({"kafka:docs:0": 1500})
    assert ref.refresh_once()["version"] == 1
    _, snap = pub.latest()
    assert snap.settings["refine"] == "joint" and snap.settings["refine_max_iter"] == 5
    assert 1 <= snap.extra["iterations"]["refine"] <= 5
    for stage in ("pairs", "refine"):
        assert metrics.registry.get_sample_value("anchorstream_refresh_duration_seconds_count",
                                                 {"stage": stage}) == 1


@pytest.mark.parametrize("share, warm", [(0.25, True), (0.25, False), (1.0, True)])
def test_a_dense_refresh_fits_the_admission_corrected_counts_and_keeps_its_read(
        tmp_path, share, warm):
    # vocab.admission_min_share: each refresh fits what `fit --store` fits (the counts of the
    # words admitted late divided by their observed share, over the selected words), cold and
    # warm; the counts it holds for the next warm read stay the store's (corrected on a copy).
    from anchorstream.stats.admission import correct_admission
    from anchorstream.store import open_committed

    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=3)
    ref = Refresher(store.url, Publisher(tmp_path / "snaps", keep=5),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "ap"},
                    min_new_docs=1, min_df=3, warm_start=warm, admission_min_share=share)
    fitted = []
    fit = ref._fit
    ref._fit = lambda cooc, *a: fitted.append(cooc.counts.copy()) or fit(cooc, *a)
    for n, seed in ((1500, 1), (30, 2)):
        store.add(planted_docs(n, seed=seed))
        store.checkpoint()
        assert ref.refresh_once()["warm"] == (warm and seed == 2)
        st_ = open_committed(store.url)
        full = st_.cooccurrence
        idx = select_words(full, min_df=3, max_df_ratio=1.0)
        assert st_.admission.missed[idx].any()
        plain = full.counts[np.ix_(idx, idx)]
        want = correct_admission(_subset_copy(full, idx), st_.admission.subset(idx),
                                 min_share=share).counts
        np.testing.assert_allclose(fitted[-1], want, rtol=1e-12)
        assert np.array_equal(want, plain) == (share == 1.0)
        if warm:
            n_all = full.n_words
            held = ref._buffers.held("counts")[: n_all * n_all].reshape(n_all, n_all)
            np.testing.assert_allclose(held, full.counts, rtol=1e-12, atol=1e-12)
        _, snap = ref.publisher.latest()
        assert snap.settings["admission_min_share"] == share


def _subset_copy(cooc, idx):
    from anchorstream.stats.cooccurrence import Cooccurrence

    return Cooccurrence(cooc.counts[np.ix_(idx, idx)], cooc.unigram[idx], cooc.doc_freq[idx],
                        cooc.num_docs, cooc.num_tokens, cooc.length_cap)


@pytest.mark.parametrize("bound", [0, None, 12345])
def test_the_daemon_gives_its_refresher_refresh_keep_read_max_bytes(tmp_path, bound):
    # The daemon's assembly (Daemon._start_refresher), without a broker: the refresher gets
    # the configured bound, null included.
    from daemon.metrics import Metrics
    from daemon.refresh_inputs import KEEP_READ_MAX_BYTES
    from daemon.service import Daemon
    from daemon.settings import parse_config

    # The setting's default is the refresher's own.
    assert parse_config({}, env={}).refresh.keep_read_max_bytes == KEEP_READ_MAX_BYTES

    cfg = parse_config({"store": {"path": str(tmp_path / "store")},
                        "snapshots": {"path": str(tmp_path / "snaps")},
                        "refresh": {"keep_read_max_bytes": bound}}, env={})
    daemon = Daemon(cfg)
    daemon.metrics = Metrics()
    daemon._start_refresher()
    assert daemon.refresher.reads.keep_read_max_bytes == bound


def test_a_daemon_that_owns_its_process_freezes_once_assembled_and_after_its_first_snapshot(
        tmp_path, monkeypatch):
    # Daemon(freeze_gc=True), as `anchorstream run` and the demo build it: the first snapshot
    # published freezes again (numba's kernels are loaded by then) and hands the publisher
    # its own hook back; later snapshots do not freeze. The freeze itself is counted here,
    # not done: frozen, this test process's objects would never be collected.
    import daemon.service as service
    from daemon.service import Daemon
    from daemon.settings import parse_config
    from tests.test_publisher import model_kwargs

    frozen = []
    monkeypatch.setattr(service, "freeze_long_lived", lambda: frozen.append(1) or 0)
    cfg = parse_config({"store": {"path": str(tmp_path / "store")},
                        "snapshots": {"path": str(tmp_path / "snaps")}}, env={})
    daemon = Daemon(cfg, freeze_gc=True)
    daemon.metrics = Metrics()
    daemon._start_refresher()
    assert frozen == [] and daemon.publisher.on_publish is not None
    daemon.publisher.publish(**model_kwargs(0))
    assert frozen == [1] and daemon.publisher.on_publish is None
    daemon.publisher.publish(**model_kwargs(1))
    assert frozen == [1]
    # A later hook (the model-updates producer where a topic is set) gets every summary.
    summaries = []
    daemon.publisher.on_publish = daemon._freezing_once(summaries.append)
    daemon.publisher.publish(**model_kwargs(2))
    daemon.publisher.publish(**model_kwargs(3))
    assert frozen == [1, 1] and [s["version"] for s in summaries] == [3, 4]
    # Without freeze_gc nothing is hooked.
    plain = Daemon(parse_config({"store": {"path": str(tmp_path / "s2")},
                                 "snapshots": {"path": str(tmp_path / "p2")}}, env={}))
    plain.metrics = Metrics()
    plain._start_refresher()
    assert plain.publisher.on_publish is None
