"""Document statistics kept with the store (DDP/RP split statistic and sketch, TSVD reservoir).

Real stores on disk throughout. The statistics read back from a committed version are held
against: the batch functions of :mod:`anchorstream.stats.wordpatterns` (streaming equals batch, any
cuts, checkpoints and crashes), a per-document slow twin that applies the eviction, decay and
window rules literally, and a writer killed with SIGKILL mid-stream. Refreshes with every
method run on planted corpora through the real refresher and publisher.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.model.lowrank import DocumentCooccurrence
from anchorstream.stats import wordpatterns as wp
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import pair_scale
from anchorstream.text.tokenize import count_matrix
from anchorstream.text.windows import window_documents
from anchorstream.stats.documents import DocStatsSettings, reservoir_keys
from anchorstream.errors import InputError
from anchorstream.evaluate import recovery_error
from anchorstream.store import CooccurrenceStore, open_committed, read_document_state
from anchorstream.synthetic import planted_model, sample_documents
from daemon.publish import Publisher
from daemon.refresh import Refresher

ROOT = Path(__file__).resolve().parents[1]
WORDS = [f"w{i}" for i in range(30)]
ALL = DocStatsSettings(split=True, n_projections=6, reservoir=40, seed=5, pair_window=3)


def corpus(rng, n_docs, words=WORDS, max_len=11, zipf=False):
    p = None
    if zipf:
        p = 1.0 / np.arange(1, len(words) + 1)
        p /= p.sum()
    return [[str(w) for w in rng.choice(words, size=rng.integers(0, max_len + 1), p=p)]
            for _ in range(n_docs)]


def slot_matrix(store, docs) -> sp.csr_matrix:
    """Counts of ``docs`` over the store's slots (valid when no slot was ever reused)."""
    slot = {w: i for i, w in enumerate(store.vocabulary.words) if w is not None}
    rows, cols = [], []
    for i, doc in enumerate(docs):
        for t in doc:
            if t in slot:
                rows.append(i)
                cols.append(slot[t])
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(docs), store.capacity))


def read_all(store):
    return read_document_state(store.url, open_committed(store.url).version,
                               np.arange(store.capacity))


def assert_close(a, b, rtol=1e-11):
    """Two SplitStatistic / RPSketch objects agree."""
    for name in vars(a):
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            scale = max(float(np.abs(y).max(initial=0.0)), 1e-300)
            np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol * scale, err_msg=name)
        elif isinstance(x, float) or isinstance(y, float):
            assert x == pytest.approx(y, rel=rtol), name
        else:
            assert x == y, name


# ------------------------------------------------------------------ streaming equals batch


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), ops=st.lists(
    st.tuples(st.integers(1, 40), st.sampled_from(["add", "checkpoint", "crash"])),
    min_size=1, max_size=8))
def test_streaming_with_checkpoints_and_crashes_equals_batch(tmp_path_factory, seed, ops):
    """Random batches, checkpoints and crashes (a writer dropped with its pending documents,
    reopened, and the lost tail replayed from the committed offset) give the batch statistic."""
    rng = np.random.default_rng(seed)
    docs = corpus(rng, 150)
    url = str(tmp_path_factory.mktemp("s") / "store")
    kw = {"capacity": 64, "admit_threshold": 1, "max_segments": 2}
    s = CooccurrenceStore.create(url, document_stats=ALL, **kw)
    i = 0
    for size, action in ops:
        s.add(docs[i : i + size])
        i = min(i + size, len(docs))
        if action == "checkpoint":
            s.checkpoint({"n": i})
        elif action == "crash":
            s = CooccurrenceStore.open_or_create(url, document_stats=ALL, **kw)
            i = int(s.offsets.get("n", 0))
    s.add(docs[i:])
    s.checkpoint({"n": len(docs)})
    state = read_all(s)
    X, ids = slot_matrix(s, docs), np.arange(len(docs))
    assert_close(state.split, wp.split_statistic(X, ids, seed=ALL.seed))
    assert_close(state.sketch, wp.rp_sketch(X, ids, ALL.n_projections, seed=ALL.seed))
    # The reservoir: the 40 non-empty documents of smallest key, in stream order.
    keys = reservoir_keys(ids, ids.astype(float), Forgetting(), ALL.seed)
    nonempty = np.flatnonzero(np.diff(X.indptr) > 0)
    expected = np.sort(nonempty[np.argsort(keys[nonempty], kind="stable")[:40]])
    np.testing.assert_array_equal(state.positions, expected)
    np.testing.assert_array_equal(state.documents.toarray(), X[expected].toarray())
    # The windows' pairs: `fit --input --refine-window`'s, over the store's slots.
    slots = [w if w is not None else f"\0{i}" for i, w in enumerate(s.vocabulary.words)]
    batch = DocumentCooccurrence(count_matrix(window_documents(docs, ALL.pair_window), slots))
    got = state.window_pairs
    np.testing.assert_allclose(got.upper.toarray(), batch.upper_counts().toarray(), rtol=1e-11,
                               atol=1e-13)
    assert (got.num_docs, got.num_tokens) == pytest.approx((batch.num_docs, batch.num_tokens))


def test_store_without_statistics_keeps_none(tmp_path, rng):
    s = CooccurrenceStore.create(tmp_path / "s", capacity=40, admit_threshold=1)
    s.add(corpus(rng, 20))
    s.checkpoint()
    assert s.document_stats is None
    assert read_all(s) is None


# ------------------------------------------------------------------ eviction, decay, windows


def naive_statistics(records, evictions, capacity, cfg: DocStatsSettings, T=None,
                     forgetting=Forgetting()):
    """Per-document slow twin: each document's split and sketch terms (library functions on
    its own row), entries of slots evicted after it dropped, weighted by its decay, documents
    of expired windows left out. ``records``: (position, time, slots) per counted document;
    ``evictions``: (position, slot), slot evicted before the document at that position."""
    last = np.zeros(capacity, dtype=np.int64)
    for p, slot in evictions:
        last[slot] = max(last[slot], p)
    V, P = capacity, cfg.n_projections
    cross, m1, m2, df2, docs2 = np.zeros((V, V)), np.zeros(V), np.zeros(V), np.zeros(V), 0.0
    proj, mass, df1, docs1 = np.zeros((P, V)), np.zeros(V), np.zeros(V), 0.0
    pairs, windows = np.zeros((V, V)), np.zeros(2)
    times = [t for _, t, _, _ in records]
    T = max(times) if T is None else T
    current = forgetting.window_of(T)
    for pos, t, slots, where in records:
        if not forgetting.window_of(t) > current - forgetting.ring:
            continue
        w = 2.0 ** (-(T - t) / forgetting.half_life) if forgetting.decays else 1.0
        x = np.bincount(np.asarray(slots, dtype=np.int64), minlength=V).astype(float)
        valid = last <= pos
        # Each window: its length before the evicted slots go, its pairs without them.
        cut = np.asarray(where, dtype=np.int64) // max(cfg.pair_window, 1)
        for u in np.unique(cut):
            xu = np.bincount(np.asarray(slots, dtype=np.int64)[cut == u], minlength=V) * 1.0
            scale = w * float(pair_scale(np.array([xu.sum()]), 2)[0])
            xu = xu * valid
            pairs += scale * (np.outer(xu, xu) - np.diag(xu))
            windows += [w, w * (cut == u).sum()] if (cut == u).sum() >= 2 else [0.0, 0.0]
        n = x.sum()
        if n >= 2:
            a, b = wp.split_documents(sp.csr_matrix(x), [pos], seed=cfg.seed)
            f1 = a.toarray()[0] / a.sum() * valid
            f2 = b.toarray()[0] / b.sum() * valid
            cross += w * np.outer(f1, f2)
            m1 += w * f1
            m2 += w * f2
            df2 += w * ((x > 0) & valid)
            docs2 += w
        if n >= 1:
            f = x / n * valid
            g = wp.random_directions([pos], P, seed=cfg.seed)[0]
            proj += w * np.outer(g, f)
            mass += w * f
            df1 += w * ((x > 0) & valid)
            docs1 += w
    return (wp.SplitStatistic(cross, m1, m2, df2, docs2, cfg.seed),
            wp.RPSketch(proj, mass, df1, docs1, cfg.seed), (np.triu(pairs), windows))


class Recorder:
    """Records what the store's own vocabulary reports (slots, evictions) for every batch."""

    def __init__(self, store):
        self.records, self.evictions, self.position = [], [], store.n_docs_added
        real = store.vocabulary.observe_batch

        def observe(docs, w, positions=False):
            indptr, slots, evictions, where = real(docs, w, positions=True)
            base = self.position
            for d, slot in evictions:
                self.evictions.append((base + d, slot))
            for d in range(len(docs)):
                self.records.append((base + d, float(base + d),
                                     slots[indptr[d] : indptr[d + 1]].tolist(),
                                     where[indptr[d] : indptr[d + 1]].tolist()))
            self.position += len(docs)
            return (indptr, slots, evictions, where) if positions else (indptr, slots,
                                                                        evictions)

        store.vocabulary.observe_batch = observe


@pytest.mark.parametrize("forgetting", [
    None,
    Forgetting(half_life=60.0, renormalize_above=4.0),
    Forgetting(window=150.0, n_windows=2),
])
def test_evicted_slots_decay_and_windows_follow_the_counts_rules(tmp_path, rng, forgetting):
    docs = corpus(rng, 500, words=[f"w{i}" for i in range(40)], zipf=True)
    s = CooccurrenceStore.create(tmp_path / "s", capacity=12, admit_threshold=2,
                                 maintain_every=50, max_segments=3, forgetting=forgetting,
                                 document_stats=ALL)
    rec = Recorder(s)
    for i in range(0, 500, 45):
        s.add(docs[i : i + 45])
        if i % 90 == 0:
            s.checkpoint()
    s.evict(next(w for w in s.vocabulary.words if w))  # an eviction through the API
    rec.evictions.append((s.n_docs_added, s.vocabulary.words.index(None)))
    s.add(docs[:30])  # the freed slot may be reused
    s.checkpoint()
    assert len(rec.evictions) >= 5  # the vocabulary did churn
    state = read_all(s)
    split, sketch, (pairs, windows) = naive_statistics(rec.records, rec.evictions, 12, ALL,
                                     forgetting=forgetting or Forgetting())
    assert_close(state.split, split, rtol=1e-9)
    assert_close(state.sketch, sketch, rtol=1e-9)
    # The reservoir: bounded, of live windows only, without evicted words' entries.
    assert 0 < state.documents.shape[0] <= 40
    np.testing.assert_allclose(state.window_pairs.upper.toarray(), pairs, rtol=1e-9,
                               atol=1e-12)
    assert (state.window_pairs.num_docs, state.window_pairs.num_tokens) == pytest.approx(
        tuple(windows), rel=1e-9)
    by_pos = {p: sl for p, _, sl, _ in rec.records}
    last = np.zeros(12, dtype=np.int64)
    for p, slot in rec.evictions:
        last[slot] = max(last[slot], p)
    F = forgetting or Forgetting()
    current = F.window_of(s.n_docs_added - 1)
    for row, pos in enumerate(state.positions.tolist()):
        assert F.window_of(pos) > current - F.ring
        x = np.bincount(np.asarray(by_pos[pos], dtype=np.int64), minlength=12) * (last <= pos)
        np.testing.assert_array_equal(state.documents[row].toarray()[0], x)


# ------------------------------------------------------------------ crash and replay


CHILD = """
import json, sys
from anchorstream.stats.documents import DocStatsSettings
from anchorstream.store import CooccurrenceStore, configure_logging
configure_logging()  # Icechunk's local-disk warning would go to stdout
url, path, kw, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
hold = int(sys.argv[5])
docs = json.load(open(path))
s = CooccurrenceStore.open_or_create(url, document_stats=DocStatsSettings(**cfg), **kw)
i = int(s.offsets.get("n", 0))
while i < len(docs):
    s.add(docs[i : i + 5])
    i = min(i + 5, len(docs))
    if i % 15 == 0:
        s.checkpoint({"n": i})
        print("checkpoint", i, flush=True)
    if i == hold:
        print("holding", i, flush=True)  # pending documents in memory: the test kills it
        sys.stdin.readline()
s.checkpoint({"n": len(docs)})
print("done", flush=True)
"""


@pytest.mark.integration  # a crash test: a writer process killed with SIGKILL
def test_sigkill_and_replay_equals_no_crash(tmp_path, rng):
    docs = corpus(rng, 600, words=[f"w{i}" for i in range(40)], zipf=True)
    path = tmp_path / "docs.json"
    path.write_text(json.dumps(docs))
    kw = {"capacity": 12, "admit_threshold": 2, "maintain_every": 50, "max_segments": 2}
    url = str(tmp_path / "crashed")
    # Killed between two checkpoints, holding pending documents: the writer stops there and
    # waits to be killed (a kill after a delay would land elsewhere on a busy machine).
    hold = 5 * int(rng.integers(10, 110))
    while hold % 15 == 0:
        hold += 5
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(path), json.dumps(kw), json.dumps(ALL.to_dict()),
         str(hold)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        while not (line := child.stdout.readline()).startswith("holding"):
            assert line, "the writer exited early"
        child.send_signal(signal.SIGKILL)
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(60)
        child.stdin.close()
        child.stdout.close()
    resumed = CooccurrenceStore.open_or_create(url, document_stats=ALL, **kw)
    done = int(resumed.offsets["n"])
    assert done == hold - hold % 15 and 0 < done < len(docs)  # the last checkpoint before
    # What the killed writer committed is whole: the statistics of the committed prefix.
    prefix = CooccurrenceStore.create(tmp_path / "prefix", document_stats=ALL, **kw)
    prefix.add(docs[:done])
    prefix.checkpoint({"n": done})
    assert_close(read_all(resumed).split, read_all(prefix).split, rtol=1e-10)
    for i in range(done, len(docs), 37):
        resumed.add(docs[i : min(i + 37, len(docs))])
    resumed.checkpoint({"n": len(docs)})

    clean = CooccurrenceStore.create(tmp_path / "clean", document_stats=ALL, **kw)
    clean.add(docs[:250])
    clean.checkpoint({"n": 250})
    clean.add(docs[250:])
    clean.checkpoint({"n": len(docs)})
    a, b = read_all(resumed), read_all(clean)
    assert resumed.vocabulary.words == clean.vocabulary.words
    assert_close(a.split, b.split, rtol=1e-10)
    assert_close(a.sketch, b.sketch, rtol=1e-10)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.documents.toarray(), b.documents.toarray())
    ca, cb = open_committed(resumed.url).cooccurrence, open_committed(clean.url).cooccurrence
    np.testing.assert_allclose(ca.counts, cb.counts, rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ settings


def test_settings_for_methods_and_their_checks():
    assert DocStatsSettings.for_method("anchor", "ddp", n_topics=3) == DocStatsSettings(split=True)
    assert DocStatsSettings.for_method("tsvd", n_topics=3, reservoir=99).reservoir == 99
    assert not DocStatsSettings.for_method("anchorfree", "qr", n_topics=3).enabled
    with pytest.raises(InputError, match="split"):
        DocStatsSettings(n_projections=5)
    with pytest.raises(InputError, match="reservoir"):
        DocStatsSettings(reservoir=-1)


def test_changing_the_statistics_restarts_them_and_none_drops_them(tmp_path, rng):
    url = tmp_path / "s"
    s = CooccurrenceStore.create(url, capacity=40, admit_threshold=1, document_stats=ALL)
    s.add(corpus(rng, 50))
    s.checkpoint()
    # Opening without settings keeps them (e.g. `anchorstream ingest` on a daemon's store).
    s = CooccurrenceStore.open(url)
    assert s.document_stats == ALL
    ddp = DocStatsSettings(split=True, seed=5)
    s = CooccurrenceStore.open(url, document_stats=ddp)
    assert read_all(s).settings == ALL  # nothing changes before the next checkpoint
    s.add(corpus(rng, 30))
    s.checkpoint()
    state = read_all(s)
    assert state.settings == ddp and state.since_docs == 50 and state.sketch is None
    assert state.split.num_docs <= 30
    s = CooccurrenceStore.open(url, document_stats=DocStatsSettings())
    s.add(corpus(rng, 5))
    s.checkpoint()
    assert read_all(s) is None and CooccurrenceStore.open(url).document_stats is None


def test_auto_windows_start_with_a_new_store_and_never_restart_an_existing_ones(tmp_path, rng):
    """model.refine_window: auto (anchorstream.store.settings.auto_windows): a new store keeps
    the windows' pairs; an existing one keeps what it keeps, unless its statistics restart
    anyway (another method's), when the windows start with them."""
    from anchorstream.store.settings import auto_windows

    fresh = CooccurrenceStore.create(tmp_path / "new", capacity=40, admit_threshold=1,
                                     document_stats=auto_windows(DocStatsSettings()))
    assert fresh.document_stats == DocStatsSettings(pair_window=24)
    # open_or_create of a new store, with a DDP's statistics: both.
    ddp = DocStatsSettings(split=True, seed=3)
    both = CooccurrenceStore.open_or_create(tmp_path / "ddp", capacity=40, admit_threshold=1,
                                            document_stats=auto_windows(ddp))
    assert both.document_stats == DocStatsSettings(split=True, seed=3, pair_window=24)
    # An existing store without statistics stays without: no windows from document 50 on.
    url = tmp_path / "old"
    old = CooccurrenceStore.create(url, capacity=40, admit_threshold=1)
    old.add(corpus(rng, 50))
    old.checkpoint()
    old = CooccurrenceStore.open(url, document_stats=auto_windows(DocStatsSettings()))
    old.add(corpus(rng, 10))
    old.checkpoint()
    assert old.document_stats is None and read_all(old) is None
    # One keeping DDP's statistics keeps them, and no windows start.
    old = CooccurrenceStore.open(url, document_stats=ddp)
    old.add(corpus(rng, 10))
    old.checkpoint()
    old = CooccurrenceStore.open(url, document_stats=auto_windows(ddp))
    old.add(corpus(rng, 10))
    old.checkpoint()
    assert read_all(old).settings == ddp and read_all(old).since_docs == 60
    # Another method's statistics restart anyway: the windows start with them.
    rp = DocStatsSettings(split=True, n_projections=20, seed=3)
    old = CooccurrenceStore.open(url, document_stats=auto_windows(rp))
    old.add(corpus(rng, 10))
    old.checkpoint()
    state = read_all(old)
    assert state.settings == DocStatsSettings(split=True, n_projections=20, seed=3,
                                              pair_window=24)
    assert state.since_docs == 80


# ------------------------------------------------------------------ refreshes on planted topics


def as_words(X) -> list[list[str]]:
    return [[f"w{j:04d}" for j, c in zip(X.indices[X.indptr[i] : X.indptr[i + 1]],
                                          X.data[X.indptr[i] : X.indptr[i + 1]])
             for _ in range(int(c))] for i in range(X.shape[0])]


def refresh_error(tmp_path, docs, truth, *, method, anchor_method="qr", n_topics, stats=None,
                  anchor_min_df=5):
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=1,
                                     document_stats=stats)
    store.add(docs)
    store.checkpoint({"n": len(docs)})
    pub = Publisher(tmp_path / "snaps", keep=2)
    ref = Refresher(store.url, pub, model_kwargs={
        "n_topics": n_topics, "anchor_min_df": anchor_min_df, "anchor_method": anchor_method},
        method=method, min_new_docs=1, min_df=1)
    assert ref.refresh_once() is not None
    _, snap = pub.latest()
    assert snap.settings["method"] == method
    assert snap.settings["anchor_method"] == (anchor_method if method == "anchor" else None)
    idx = [int(w[1:]) for w in snap.vocabulary]
    B = np.zeros((truth.shape[0], n_topics))
    B[idx] = np.asarray(snap.topic_word, np.float64).T
    return recovery_error(truth, B)[0], snap


@pytest.fixture(scope="module")
def separable():
    truth = planted_model(200, 5, alpha=0.1, random_state=2)
    X, _ = sample_documents(truth, 3000, random_state=12)
    return truth.topic_word, as_words(X)


@pytest.mark.parametrize("anchor_method, tolerance", [("ddp", 0.12), ("rp", 0.12)])
def test_novel_word_refresh_recovers_separable_topics(tmp_path, separable, anchor_method,
                                                      tolerance):
    truth, docs = separable
    stats = DocStatsSettings.for_method("anchor", anchor_method, n_topics=5, seed=3)
    err, snap = refresh_error(tmp_path, docs, truth, method="anchor",
                              anchor_method=anchor_method, n_topics=5, stats=stats,
                              anchor_min_df=60)
    assert err < tolerance  # the batch fits on the same corpus: 0.04 (ddp), 0.04 (rp)
    assert snap.source["document_stats"]["split_docs"] == 3000


def test_anchorfree_refresh_recovers_planted_topics(tmp_path):
    truth = planted_model(100, 4, alpha=0.03, random_state=2)
    X, _ = sample_documents(truth, 3000, random_state=12)
    err, snap = refresh_error(tmp_path, as_words(X), truth.topic_word, method="anchorfree",
                              n_topics=4)
    assert err < 0.2  # fit_topics(method="anchorfree") on the same documents: 0.13
    assert "document_stats" not in snap.source and snap.settings["rectify"] is True


def test_anchorfree_refresh_is_warm_started_from_the_previous_topics(tmp_path):
    truth = planted_model(100, 4, alpha=0.03, random_state=2)
    X, _ = sample_documents(truth, 3100, random_state=12)
    docs = as_words(X)
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=1)
    store.add(docs[:3000])
    store.checkpoint({"n": 3000})
    pub = Publisher(tmp_path / "snaps", keep=2)
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": 4}, method="anchorfree",
                    min_new_docs=1, min_df=1)
    assert ref.refresh_once()["warm"] is False
    store.add(docs[3000:])
    store.checkpoint({"n": 3100})
    assert ref.refresh_once()["warm"] is True
    _, snap = pub.latest()
    idx = [int(w[1:]) for w in snap.vocabulary]
    B = np.zeros((100, 4))
    B[idx] = np.asarray(snap.topic_word, np.float64).T
    assert recovery_error(truth.topic_word, B)[0] < 0.2
    assert snap.extra["churn"]["matched"] and len(snap.extra["churn"]["matched"]) == 4


def test_tsvd_refresh_recovers_dominant_topics(tmp_path):
    from test_tsvd import dominant_corpus

    X, M, _, _ = dominant_corpus(2000, 150, seed=5)
    stats = DocStatsSettings.for_method("tsvd", n_topics=4, reservoir=2000)
    err, snap = refresh_error(tmp_path, as_words(X), M, method="tsvd", n_topics=4, stats=stats)
    assert err < 0.15  # tsvd() on the same documents: 0.06
    assert snap.source["document_stats"]["reservoir_docs"] == 2000


def test_refresh_waits_for_statistics(tmp_path, rng):
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=1)
    truth = planted_model(100, 3, random_state=0)
    X, _ = sample_documents(truth, 300, random_state=1)
    store.add(as_words(X))
    store.checkpoint()
    pub = Publisher(tmp_path / "snaps", keep=2)
    ref = Refresher(store.url, pub, model_kwargs={"n_topics": 3, "anchor_min_df": 1},
                    method="tsvd", min_new_docs=1, min_df=1)
    assert ref.refresh_once() is None and ref.failures == 0  # no statistics: skipped


def test_module_doctests():
    import doctest

    import anchorstream.stats.documents as docstats_module

    assert doctest.testmod(docstats_module).failed == 0


@pytest.mark.parametrize("method, anchor_method, tolerance",
                         [("anchor", "ddp", 0.12), ("tsvd", "qr", 0.15)])
def test_a_partitioned_refresh_combines_the_partitions_statistics(tmp_path, separable, method,
                                                                  anchor_method, tolerance):
    # store.layout: partitioned with a method that reads documents: the daemon opens each
    # partition's store with a seed of its own, and its refresher combines the partitions'
    # statistics at the pinned versions (the split statistic summed, reservoirs merged by key).
    from anchorstream.store import partition_url
    from anchorstream.store.partdocs import partition_seed
    from daemon.scaled import partitioned_reader
    from daemon.service import open_store
    from daemon.settings import parse_config

    truth, docs = separable
    K = 5
    if method == "tsvd":  # the tsvd refresh test's corpus, one dominant topic a document
        from test_tsvd import dominant_corpus

        X, truth, _, _ = dominant_corpus(2000, 150, seed=5)
        docs, K = as_words(X), 4
    root = tmp_path / "root"
    cfg = parse_config({"store": {"path": str(root), "layout": "partitioned"},
                        "vocab": {"capacity": 400, "admit_threshold": 1, "stopwords": "none"},
                        "model": {"method": method, "anchor_method": anchor_method,
                                  "num_topics": K, "tsvd_documents": 2000,
                                  "random_state": 3}}, env={})
    seeds = set()
    for p in range(3):
        s = open_store(cfg, partition_url(root, "docs", p), partition=f"kafka:docs:{p}")
        s.add(docs[p::3])
        s.checkpoint({f"kafka:docs:{p}": len(docs[p::3])})
        seeds.add(s.document_stats.seed)
        assert s.document_stats.seed == partition_seed(3, f"kafka:docs:{p}")
    assert len(seeds) == 3
    pub = Publisher(tmp_path / "snaps", keep=2)
    ref = Refresher(str(root), pub, model_kwargs={
        "n_topics": K, "anchor_min_df": 60, "anchor_method": anchor_method},
        method=method, min_new_docs=1, min_df=1,
        reader=partitioned_reader(cfg, lambda: {("docs", p) for p in range(3)}))
    assert ref.refresh_once() is not None
    _, snap = pub.latest()
    idx = [int(w[1:]) for w in snap.vocabulary]
    B = np.zeros((truth.shape[0], K))
    B[idx] = np.asarray(snap.topic_word, np.float64).T
    assert recovery_error(truth, B)[0] < tolerance  # as one store's refresh tests
    stats = snap.source["document_stats"]
    if method == "tsvd":
        assert stats["reservoir_docs"] == 2000  # three reservoirs merged: every document
    else:
        assert stats["split_docs"] == 3000
