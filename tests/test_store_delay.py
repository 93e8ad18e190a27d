"""A store that counts each document ``count_delay`` documents after it arrived
(:mod:`anchorstream.store.delay`): in any split, with reopens, compactions and evictions, it
counts what a one-document-at-a-time model of the rule counts; a crash and replay from its
last commit (with documents waiting) counts what an uninterrupted run counts; the words a
stream admits late count in the documents that waited; and a reader that adds the waiting
documents (dense or sparse, whole or a subset of the words) sees what the store holds once
they are counted."""

from __future__ import annotations

import uuid
from collections import deque

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.documents import DocStatsSettings
from anchorstream.store import (CooccurrenceStore, open_committed, open_committed_sparse,
                                read_document_state, store_info)
from anchorstream.stats.sparse import PendingSum, upper_matmul_through
from anchorstream.store.delay import (DelayLine, Waiting, add_waiting, documents_left,
                                      selection_marginals)
from tests.naive_store import NaiveStoreModel, NaiveVocabulary
from tests.test_store import WORDS, assert_close_rel, corpus, crash_and_replay, stream


def drifting(rng, n_docs: int = 120) -> list[list[str]]:
    """Documents whose words drift (document i draws from WORDS[k:k+6], k = 7i/n): words are
    admitted all along the stream, and with a small capacity evicted."""
    return [corpus(rng, 1, words=WORDS[i * 7 // n_docs: i * 7 // n_docs + 6])[0]
            for i in range(n_docs)]


def naive_delayed(docs, delay: int, *, flush: bool = False, max_pairs=None,
                  **vocab) -> NaiveStoreModel:
    """The rule spelled out: the vocabulary observes each document on arrival (evictions
    zero their slot at once); a document is counted with the slots of its tokens in the
    vocabulary when ``delay`` more have arrived, or earlier where the line would hold more
    than ``max_pairs`` pairs, n (n - 1) / 2 of a document's n tokens (with ``flush``, the
    rest at the end)."""
    model = NaiveStoreModel(NaiveVocabulary(**vocab))
    line: deque = deque()
    for doc in docs:
        _, evicted = model.vocab.observe(doc, 1.0)
        for s in evicted:
            model.evict_slot(s)
        line.append(doc)
        while line and (len(line) > delay or max_pairs is not None
                        and pairs(line) > max_pairs):
            model.count(model.lookup(line.popleft()))
    while flush and line:
        model.count(model.lookup(line.popleft()))
    return model


def pairs(docs) -> int:
    return sum(len(d) * (len(d) - 1) // 2 for d in docs)


def assert_state_is(url, model: NaiveStoreModel) -> None:
    state = open_committed(url)
    words, Q, uni, df = model.by_word()
    assert state.words == words
    c = state.cooccurrence
    assert_close_rel(c.counts, Q)
    assert_close_rel(c.unigram, uni)
    assert_close_rel(c.doc_freq, df)
    assert c.num_docs == pytest.approx(model.docs)
    assert c.num_tokens == pytest.approx(model.tokens)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    delay=st.integers(0, 30),
    cuts=st.lists(st.integers(0, 120), max_size=6),
    compact_after=st.sets(st.integers(0, 6)),
    reopen_after=st.sets(st.integers(0, 6)),
    capacity=st.sampled_from([4, 6, 12]),
    admit_threshold=st.sampled_from([1.0, 2.0, 3.0]),
    max_df=st.sampled_from([None, 0.3]),
    max_pairs=st.one_of(st.none(), st.integers(1, 200)),
)
def test_streaming_any_split_counts_each_document_delay_documents_late(
        seed, delay, cuts, compact_after, reopen_after, capacity, admit_threshold, max_df,
        max_pairs):
    rng = np.random.default_rng(seed)
    docs = drifting(rng)
    # With max_df the vocabulary's maintenance (every 10 documents here) evicts too.
    vocab = {"capacity": capacity, "admit_threshold": admit_threshold, "max_df": max_df,
             "max_df_min_docs": 10, "maintain_every": 10}
    url = f"memory://delay-{uuid.uuid4().hex}"
    s = stream(url, docs, sorted({0, len(docs), *cuts}), compact_after=compact_after,
               reopen_after=reopen_after, chunk_size=2, shard_size=4, count_delay=delay,
               count_delay_pairs=max_pairs, **vocab)
    assert_state_is(url, naive_delayed(docs, delay, max_pairs=max_pairs, **vocab))
    assert s.n_docs_added == len(docs)
    held = 0  # the newest documents that fit the line
    while (held < min(delay, len(docs)) and (
            max_pairs is None or pairs(docs[len(docs) - held - 1:]) <= max_pairs)):
        held += 1
    line = CooccurrenceStore.open(url).delay_line
    assert [list(d.tokens) for d in line] == docs[len(docs) - held:]
    assert line.pairs == pairs(docs[len(docs) - held:])
    # The end of a finite input counts the rest with the vocabulary of then.
    s = CooccurrenceStore.open(url)
    assert s.flush_delayed() == held
    s.checkpoint()
    assert_state_is(url, naive_delayed(docs, delay, flush=True, max_pairs=max_pairs,
                                       **vocab))
    assert len(CooccurrenceStore.open(url).delay_line) == 0


def test_late_admissions_count_in_the_documents_that_waited(tmp_path, rng):
    # Every word needs 3 documents to be admitted: counted on arrival its first two
    # documents miss it; counted 10 documents later they hold it.
    docs = drifting(rng, 200)
    counts = {}
    for delay in (0, 10):
        url = str(tmp_path / f"d{delay}")
        s = stream(url, docs, [0, 77, 200], capacity=12, admit_threshold=3.0,
                   count_delay=delay)
        s.flush_delayed()
        s.checkpoint()
        st = open_committed(url)
        counts[delay] = st.cooccurrence.num_tokens
        # The admission correction's misses counted the documents that waited: not reported.
        assert (st.admission is None) == (delay > 0)
    assert counts[10] > counts[0]
    batch = sum(len(d) for d in docs if len(d) >= 2)
    assert counts[10] <= batch


@pytest.mark.parametrize("delay, max_pairs", [(5, None), (40, None), (40, 100)])
def test_a_crash_and_replay_counts_what_an_uninterrupted_run_counts(tmp_path, rng, delay,
                                                                     max_pairs):
    docs = drifting(rng, 150)

    def reopened(s):  # the committed line came back with the commit
        tokens = [list(d.tokens) for d in s.delay_line]
        assert tokens == docs[70 - len(tokens):70]
        assert len(tokens) == delay if max_pairs is None else 0 < len(tokens) < delay
        assert s.delay_line.pairs == pairs(tokens)

    calm, s = crash_and_replay(tmp_path, docs, 130, reopened, capacity=6, admit_threshold=2.0,
                               chunk_size=2, shard_size=4, count_delay=delay,
                               count_delay_pairs=max_pairs)
    model = naive_delayed(docs, delay, max_pairs=max_pairs, capacity=6, admit_threshold=2.0)
    for store in (calm, s):
        assert_state_is(store.url, model)
        assert list(CooccurrenceStore.open(store.url).delay_line) == list(calm.delay_line)


def test_decayed_documents_weigh_what_their_time_says_when_counted(tmp_path, rng):
    # With decay (in documents) a document counted late still weighs 2^((t - T) / h) by its
    # own arrival t: the same as one counted on arrival, where the vocabulary is the same.
    docs = corpus(rng, 90)
    seed = list(WORDS)  # every word from the start: the delay changes no token
    counts = []
    for delay in (0, 17):
        url = str(tmp_path / f"d{delay}")
        s = stream(url, docs, [0, 31, 90], capacity=12, seed=seed, count_delay=delay,
                   forgetting=Forgetting(half_life=20.0))
        s.flush_delayed()
        s.checkpoint()
        counts.append(open_committed(url).cooccurrence)
    assert_close_rel(counts[1].counts, counts[0].counts)
    assert_close_rel(counts[1].unigram, counts[0].unigram)
    assert counts[1].num_docs == pytest.approx(counts[0].num_docs)


@pytest.mark.parametrize("cuts", [[0, 6], [0, 1, 6], [0, 2, 3, 6]])
def test_a_document_of_a_window_expired_by_a_waiting_one_is_late_in_any_split(tmp_path,
                                                                             cuts):
    # Tumbling windows of 4 seconds, 2 kept; a delay of 3. A document of window 25 waits
    # when one of window 0 arrives: late (as if the first had been counted), in one batch
    # as in any split, and the vocabulary never sees it.
    docs = [["w0", "w1"], ["w7", "w8"], ["w0", "w9"], ["w0", "w1"], ["w2", "w3"], ["w1"]]
    stamps = [100.0, 1.0, 101.0, 102.0, 103.0, 104.0]
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=12, admit_threshold=1.0,
                                 count_delay=3,
                                 forgetting=Forgetting(window=4.0, n_windows=2,
                                                       unit="seconds"))
    for a, b in zip(cuts[:-1], cuts[1:]):
        s.add(docs[a:b], timestamps=stamps[a:b])
    assert s.n_skipped_late == 1
    assert "w7" not in s.vocabulary.words  # the late document's words
    assert [d.position for d in s.delay_line] == [3, 4, 5]
    s.checkpoint()
    assert open_committed(s.url).cooccurrence.num_docs == pytest.approx(2.0)


def test_the_setting_is_checked_and_kept(tmp_path):
    with pytest.raises(InputError, match="count_delay"):
        CooccurrenceStore.create(str(tmp_path / "bad"), capacity=4, count_delay=-1)
    with pytest.raises(InputError, match="count_delay"):
        CooccurrenceStore.create(str(tmp_path / "bad2"), capacity=4, count_delay=1.5)
    url = str(tmp_path / "s")
    CooccurrenceStore.create(url, capacity=4, count_delay=7)
    assert CooccurrenceStore.open(url).delay_line.length == 7
    assert store_info(url)["count_delay"] == 7


def test_the_line_keeps_any_token_through_a_commit(tmp_path):
    url = str(tmp_path / "s")
    s = CooccurrenceStore.create(url, capacity=4, count_delay=5)
    odd = [["", "a b", "\n", "ü", "日本"], [], ["x"]]
    s.add(odd)
    s.checkpoint()
    line = CooccurrenceStore.open(url).delay_line
    assert [list(d.tokens) for d in line] == odd
    assert [d.position for d in line] == [0, 1, 2]


def test_the_line_pushes_out_the_oldest():
    line = DelayLine(2)
    docs = [Waiting((str(i),), float(i), 0, i) for i in range(4)]
    assert [line.push(d) for d in docs] == [[], [], [docs[0]], [docs[1]]]
    assert line.drain() == docs[2:] and len(line) == 0 and line.pairs == 0
    assert DelayLine(0).push(docs[0]) == [docs[0]]


def test_the_line_holds_at_most_its_pairs():
    # Documents of 2, 3, 4, 5 tokens (1, 3, 6, 10 pairs) in a line of 10 documents and 10
    # pairs: a long one pushes out as many of the oldest as it takes; one holding more than
    # the bound leaves at once.
    docs = [Waiting(tuple("abcde"[:n]), float(n), 0, n) for n in range(2, 6)]
    line = DelayLine(10, max_pairs=10)
    assert [line.push(d) for d in docs] == [[], [], [], docs[:3]]
    assert list(line) == [docs[3]] and line.pairs == 10
    big = Waiting(tuple("abcdef"), 9.0, 0, 9)  # 15 pairs
    assert line.push(big) == [docs[3], big] and len(line) == 0 and line.pairs == 0
    with pytest.raises(InputError, match="count_delay_pairs must be an integer >= 1"):
        DelayLine(10, max_pairs=0)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    delay=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 120), max_size=4),
    compact_after=st.sets(st.integers(0, 4)),
    capacity=st.sampled_from([4, 6, 12]),
    half_life=st.one_of(st.none(), st.floats(5.0, 60.0)),
)
def test_a_reader_adds_the_waiting_documents_as_counting_them_would(
        seed, delay, cuts, compact_after, capacity, half_life):
    rng = np.random.default_rng(seed)
    docs = drifting(rng)
    url = f"memory://reader-{uuid.uuid4().hex}"
    forgetting = Forgetting(half_life=half_life) if half_life else None
    s = stream(url, docs, sorted({0, len(docs), *cuts}), compact_after=compact_after,
               capacity=capacity, admit_threshold=2.0, chunk_size=2, shard_size=4,
               count_delay=delay, forgetting=forgetting)
    dense, sparse = open_committed(url), open_committed_sparse(url)
    before = sparse.cooccurrence.upper.copy()
    seen = [add_waiting(dense.cooccurrence, dense.waiting),
            add_waiting(sparse.cooccurrence, sparse.waiting).to_dense()]
    # The sparse read itself is left as it was (a refresher keeps it for its next read).
    assert (sparse.cooccurrence.upper != before).nnz == 0
    if sparse.waiting is not None:
        # The waiting documents' counts times a basis, through their documents (a warm
        # refresh's followed product), as through their pairs.
        Z = rng.standard_normal((sparse.waiting.n_words, 3))
        assert sparse.waiting.documents is not None
        product = sparse.waiting.counts_dense() @ Z
        np.testing.assert_allclose(sparse.waiting.counts_product(Z), product, rtol=1e-10,
                                   atol=1e-12 * max(np.abs(product).max(), 1.0))
    s.flush_delayed()
    s.checkpoint()
    flushed = open_committed(url)
    assert flushed.waiting is None and flushed.words == dense.words
    want = flushed.cooccurrence
    for got in seen:
        assert_close_rel(got.counts, want.counts)
        assert_close_rel(got.unigram, want.unigram)
        assert_close_rel(got.doc_freq, want.doc_freq)
        assert got.num_docs == pytest.approx(want.num_docs, rel=1e-12)
        assert got.num_tokens == pytest.approx(want.num_tokens, rel=1e-12)
        assert got.total_weight() == pytest.approx(want.total_weight(), rel=1e-12)
    # The words a model uses, and their statistics, as the refresher takes them.
    marginals = selection_marginals(dense.cooccurrence, dense.waiting)
    np.testing.assert_allclose(marginals.doc_freq, want.doc_freq, rtol=1e-12)
    idx = np.flatnonzero(want.doc_freq >= 3)
    sub = add_waiting(open_committed_sparse(url, dense.version).cooccurrence.subset(
        idx, keep_total=False), sparse.waiting, idx).to_dense()
    sub_want = want.counts[np.ix_(idx, idx)]
    assert_close_rel(sub.counts, sub_want)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    delay=st.integers(1, 40),
    sizes=st.lists(st.integers(0, 50), min_size=1, max_size=5),
    capacity=st.sampled_from([4, 12]),
    max_pairs=st.sampled_from([None, 40]),
    half_life=st.one_of(st.none(), st.floats(5.0, 60.0)),
)
@example(seed=1, delay=30, sizes=[15, 20], capacity=12, max_pairs=None, half_life=None)
def test_the_documents_that_left_the_line_made_the_segments_a_read_adds(
        seed, delay, sizes, capacity, max_pairs, half_life):
    # Between two sparse reads of a store, the segments the later one adds are the pairs of
    # the documents that left the line (documents_left): the read takes those documents
    # instead of the segments' entries where the segments' probes say so (catch_up_upper),
    # and a warm refresh multiplies them (upper_matmul_through), only where a probe finds
    # them the same. Where no word was admitted or evicted and nothing decays, they always
    # are; either way the counts are a full read's and the product the segments'.
    rng = np.random.default_rng(seed)
    docs = [d for d in corpus(rng, 20 + sum(sizes)) if len(d) >= 2]
    url = f"memory://left-{uuid.uuid4().hex}"
    forgetting = Forgetting(half_life=half_life) if half_life else None
    s = CooccurrenceStore.create(url, capacity=capacity, admit_threshold=2.0, chunk_size=2,
                                 shard_size=4, count_delay=delay, count_delay_pairs=max_pairs,
                                 forgetting=forgetting)
    s.add(docs[:20])
    s.checkpoint()
    before, start, taken = open_committed_sparse(url), 20, 0
    for size in sizes:
        s.add(docs[start:start + size])
        s.checkpoint()
        start += size
        after = open_committed_sparse(url, previous=before)
        full = open_committed_sparse(url).cooccurrence
        assert_close_rel(after.cooccurrence.row_sums(), full.row_sums())
        assert_close_rel(after.cooccurrence.diagonal(), full.diagonal())
        documents = isinstance(after.added, PendingSum)
        if after.added is not None and (documents or after.added.nnz):
            left = documents_left(before.waiting, after.waiting,
                                  after.n_docs_added - before.n_docs_added)
            # The read says which documents left, where its words stayed (what a refresher
            # multiplies: CommittedState.left).
            if before.words != after.words or left is None:
                assert after.left is None
            else:
                assert (after.left[0] != left[0]).nnz == 0
                np.testing.assert_array_equal(after.left[1], left[1])
            Z = rng.standard_normal((after.cooccurrence.n_words, 3))
            got, through = upper_matmul_through(after.added, Z, left)
            U = (after.added.form() if documents else after.added).toarray()
            want = (U + U.T - np.diag(np.diag(U))) @ Z
            np.testing.assert_allclose(got, want, rtol=0,
                                       atol=1e-5 * max(np.abs(want).max(), 1e-300))
            # Four slots: a word may be evicted and admitted again between the reads. More
            # documents than the line holds: some arrived and left between them, unread.
            if (left is not None and before.words == after.words and capacity == 12
                    and forgetting is None and max_pairs is None):
                assert through and documents
                taken += 1
        assert_close_rel(after.cooccurrence.counts_dense(), full.counts_dense())
        before = after
    if (seed, delay, sizes) == (1, 30, [15, 20]):
        assert taken == 2


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    delay=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 120), max_size=3),
    capacity=st.sampled_from([4, 12]),
    half_life=st.one_of(st.none(), st.floats(5.0, 60.0)),
    window=st.integers(2, 5),
)
def test_a_reader_of_the_windows_pairs_adds_the_waiting_documents_windows(
        seed, delay, cuts, capacity, half_life, window):
    # The refinement's windows' pairs cover the documents the read's counts do: the waiting
    # ones' windows, as counting them would add, on a subset of the slots too.
    rng = np.random.default_rng(seed)
    docs = drifting(rng)
    url = f"memory://windows-{uuid.uuid4().hex}"
    forgetting = Forgetting(half_life=half_life) if half_life else None
    s = stream(url, docs, sorted({0, len(docs), *cuts}), capacity=capacity,
               admit_threshold=2.0, count_delay=delay, forgetting=forgetting,
               document_stats=DocStatsSettings(pair_window=window))
    st_ = open_committed(url)
    slots = st_.slots[::-1][: max(2, len(st_.slots) - 1)]  # another order, one word fewer
    got = read_document_state(url, st_.version, slots).window_pairs
    s.flush_delayed()
    s.checkpoint()
    flushed = open_committed(url)
    want = read_document_state(url, flushed.version, slots).window_pairs
    assert flushed.words == st_.words
    assert got.num_docs == pytest.approx(want.num_docs, rel=1e-12)
    assert got.num_tokens == pytest.approx(want.num_tokens, rel=1e-12)
    assert_close_rel(got.upper.toarray(), want.upper.toarray())


def test_readers_of_a_store_with_windows_see_the_counted_documents_only(tmp_path):
    # Counting the waiting documents of a tumbling-window store would also expire windows.
    s = CooccurrenceStore.create(str(tmp_path / "s"), capacity=12, admit_threshold=1.0,
                                 count_delay=5, forgetting=Forgetting(window=10.0, n_windows=2))
    s.add(corpus(np.random.default_rng(1), 30))
    s.checkpoint()
    assert open_committed(s.url).waiting is None
    assert open_committed_sparse(s.url).waiting is None
    assert len(CooccurrenceStore.open(s.url).delay_line) == 5


@pytest.mark.parametrize("probe", ["written", "wrong", "missing"])
def test_a_chain_of_catch_ups_holds_the_documents_that_left_the_line(monkeypatch, probe):
    # A chain of catch-ups where no word moves (a warm refresh's reads): each takes the
    # documents that left the delay line instead of the segments they made, which their
    # probes say they are, their pairs not counted: at most MAX_DOCUMENT_PARTS (here 2) of
    # them, then all counted together and added into the kept read in place. Where a probe
    # disagrees (here every one, by 1e-6) or is missing (a segment written before probes
    # were: Zarr's KeyError), the segments are read instead. Either way each read is a full
    # read's counts.
    import anchorstream.store.sparseread as sparse_mod
    import anchorstream.store.writer as writer_mod
    from anchorstream.store.sparseread import read_version_sparse
    from tests.test_store_sparseread import WORDS8, store_of_fixed_words

    monkeypatch.setattr(sparse_mod, "MAX_DOCUMENT_PARTS", 2)
    if probe == "wrong":
        written = writer_mod.segment_probe
        monkeypatch.setattr(writer_mod, "segment_probe", lambda *a: written(*a) * (1 + 1e-6))
    if probe == "missing":
        get_all = sparse_mod.get_all

        def without_probes(group, names):
            if any(name.endswith("/probe") for name in names):
                raise KeyError(names[0])
            return get_all(group, names)

        monkeypatch.setattr(sparse_mod, "get_all", without_probes)
    fallback = probe != "written"
    rng = np.random.default_rng(11)
    s, repo, previous = store_of_fixed_words(rng, 20, count_delay=6)
    url = s.url
    held = []
    for _ in range(7):
        s.add([list(rng.choice(WORDS8, size=int(rng.integers(2, 7)))) for _ in range(4)])
        s.checkpoint()
        read = read_version_sparse(repo, url, None, previous=previous, consume_previous=True)
        full = read_version_sparse(repo, url, None).cooccurrence
        got = read.cooccurrence
        assert isinstance(read.added, PendingSum) != fallback
        held.append(0 if got.pending is None else got.pending.n_documents)
        assert_close_rel(got.diagonal(), full.diagonal())
        assert_close_rel(got.row_sums(), full.row_sums())
        previous = read
    assert held == [0] * 7 if fallback else held == [1, 2, 0, 1, 2, 0, 1]
    assert_close_rel(previous.cooccurrence.counts_dense(), full.counts_dense())
