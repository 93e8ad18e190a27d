"""Sparse reads of a store (anchorstream/store/sparseread.py) and the sparse statistics
(anchorstream/stats/sparse.py): the same matrix as the dense read, and no V x V array.

The equality is checked on small stores driven through everything that changes what a reader
must take (segments, whole and stepped compaction, evictions, decay, windows); the memory
check fits from a store whose dense read would be several times the largest allocation the
low-rank path may make, with tracemalloc counting numpy's allocations.
"""

from __future__ import annotations

import tracemalloc
import uuid

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError, StoreError
from anchorstream.model.pipeline import AnchorModel
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.stats.sparse import (SparseCooccurrence, canonical_csr, check_upper_counts,
                                       upper_csr, upper_matmul_once, upper_matmul_through)
from anchorstream.store import CooccurrenceStore, open_committed, open_committed_sparse
from anchorstream.synthetic import planted_model, sample_documents
from tests.naive_store import scripted_history

FORGETTING = {
    "none": Forgetting(),
    "decay": Forgetting(half_life=9.0),
    "windows": Forgetting(window=12, n_windows=3),
}


def _assert_same_read(sparse_state, dense_state):
    s, d = sparse_state.cooccurrence, dense_state.cooccurrence
    assert sparse_state.words == dense_state.words
    np.testing.assert_array_equal(sparse_state.slots, dense_state.slots)
    assert sparse_state.version == dense_state.version
    assert sparse_state.offsets == dense_state.offsets
    scale = max(float(np.abs(d.counts).max(initial=0.0)), 1e-300)
    np.testing.assert_allclose(s.counts_dense(), d.counts, rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(s.unigram, d.unigram, rtol=1e-12)
    np.testing.assert_allclose(s.doc_freq, d.doc_freq, rtol=1e-12)
    assert s.num_docs == pytest.approx(d.num_docs, rel=1e-12)
    assert s.num_tokens == pytest.approx(d.num_tokens, rel=1e-12)
    assert s.length_cap == d.length_cap
    if d.num_docs and d.total_weight() > 0:
        assert s.total_weight() == pytest.approx(d.total_weight(), rel=1e-12)
        Z = np.random.default_rng(0).standard_normal((d.n_words, 3))
        want = d.normalized() @ Z
        np.testing.assert_allclose(s @ Z, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
        np.testing.assert_allclose(s.row_sums(), d.normalized().sum(axis=1), rtol=1e-10,
                                   atol=1e-14)
    # Canonical, at its exact size: a catch-up's sum is not canonicalized again.
    U = s.upper
    assert U.data.size == U.indices.size == U.nnz and np.all(U.data != 0)
    assert all(np.all(np.diff(U.indices[a:b]) > 0) for a, b in zip(U.indptr, U.indptr[1:]))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), capacity=st.sampled_from([6, 17, 40]),
       forgetting=st.sampled_from(sorted(FORGETTING)), stepped=st.booleans(),
       length_cap=st.sampled_from([2, 5.0]))
def test_sparse_read_equals_the_dense_read(seed, capacity, forgetting, stepped, length_cap):
    rng = np.random.default_rng(seed)
    url = f"memory://sparse-{uuid.uuid4().hex}"
    runtime = ({"compact_step_seconds": 1e-9, "max_segments": 2} if stepped
               else {"max_segments": 3})
    store = CooccurrenceStore.create(url, capacity=capacity, chunk_size=4, shard_size=8,
                                     admit_threshold=1, forgetting=FORGETTING[forgetting],
                                     length_cap=length_cap, **runtime)
    words = [f"w{i}" for i in range(50)]
    for k in range(10):
        docs = [[str(w) for w in rng.choice(words[: 15 + 4 * k], size=rng.integers(0, 9))]
                for _ in range(int(rng.integers(1, 8)))]
        store.add(docs)
        if k % 4 == 3:
            active = [w for w in store.vocabulary.words if w]
            if active:
                store.evict(str(rng.choice(active)))
        store.checkpoint({"k": k})
        if k == 6 and not stepped:
            store.compact()
        _assert_same_read(open_committed_sparse(url), open_committed(url))


def test_an_empty_store_reads_as_empty_sparse_counts():
    url = f"memory://sparse-empty-{uuid.uuid4().hex}"
    CooccurrenceStore.create(url, capacity=8, seed=["a", "b"])
    st_ = open_committed_sparse(url)
    assert st_.words == ["a", "b"] and st_.cooccurrence.upper.nnz == 0
    assert st_.cooccurrence.num_docs == 0 and st_.dense.segments == frozenset()
    np.testing.assert_array_equal(st_.cooccurrence @ np.ones((2, 1)), np.zeros((2, 1)))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_words=st.integers(2, 12),
       length_cap=st.sampled_from([2, 4.0, None]))
def test_sparse_statistics_equal_the_dense_ones(seed, n_words, length_cap):
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(rng.poisson(0.7, size=(15, n_words)).astype(float))
    dense = cooccurrence(X, length_cap=length_cap)
    S = SparseCooccurrence.from_dense(dense)
    if dense.num_docs == 0:
        return
    C = dense.normalized()
    Z = rng.standard_normal((n_words, 4))
    np.testing.assert_allclose(S @ Z, C @ Z, atol=1e-12)
    np.testing.assert_allclose(S @ Z[:, 0], C @ Z[:, 0], atol=1e-12)
    np.testing.assert_allclose(S.row_sums(), C.sum(axis=1), atol=1e-12)
    np.testing.assert_allclose(S.to_dense().counts, dense.counts, atol=1e-12)
    # A subset in any order is those rows and columns of the normalized matrix.
    words = rng.permutation(n_words)[: max(1, n_words // 2)]
    sub = S.subset(words)
    np.testing.assert_allclose(sub @ Z[words], C[np.ix_(words, words)] @ Z[words], atol=1e-12)
    np.testing.assert_allclose(sub.doc_freq, dense.doc_freq[words])
    # Without the total, it normalizes as a dense Cooccurrence of the sub-matrix does.
    alone = S.subset(np.sort(words), keep_total=False)
    ref = dense.counts[np.ix_(np.sort(words), np.sort(words))]
    if alone.total_weight() > 0:
        want = ref / (dense.num_docs if length_cap == 2 else ref.sum())
        np.testing.assert_allclose(alone.normalized(), want, atol=1e-12)


def test_upper_csr_sums_both_triangles_into_one():
    U = upper_csr([0, 2, 1, 1], [2, 0, 1, 1], [1.0, 2.0, 3.0, 0.5], 3)
    np.testing.assert_array_equal(U.toarray(), [[0, 0, 3], [0, 3.5, 0], [0, 0, 0]])


def test_sparse_statistics_refuse_a_lower_triangle_and_bad_shapes():
    with pytest.raises(InputError, match="upper triangle"):
        SparseCooccurrence(sp.csr_matrix(np.array([[0.0, 0.0], [1.0, 0.0]])), np.ones(2),
                           np.ones(2), 1, 2)
    with pytest.raises(InputError, match="shape"):
        SparseCooccurrence(sp.csr_matrix((3, 3)), np.ones(2), np.ones(2), 1, 2)
    with pytest.raises(InputError, match="non-negative"):
        SparseCooccurrence(sp.csr_matrix(np.array([[-1.0]])), np.ones(1), np.ones(1), 1, 2)
    with pytest.raises(InputError, match="non-negative"):
        SparseCooccurrence(sp.csr_matrix(np.array([[np.inf]])), np.ones(1), np.ones(1), 1, 2)
    # check=False (counts summed from checked ones) takes them as they are.
    lower = sp.csr_matrix(np.array([[0.0, 0.0], [1.0, 0.0]]))
    assert SparseCooccurrence(lower, np.ones(2), np.ones(2), 1, 2, check=False).upper is not None
    with pytest.raises(InputError, match="upper triangle"):
        check_upper_counts(lower)


def test_a_catch_up_says_what_it_added_where_nothing_moved():
    from anchorstream.store.repository import open_repo
    from anchorstream.store.sparseread import read_version_sparse

    url = f"memory://sparse-added-{uuid.uuid4().hex}"
    s = CooccurrenceStore.create(url, capacity=5, admit_threshold=1, chunk_size=2, shard_size=4)
    s.add([["a", "b"], ["b", "c"]])
    s.checkpoint()
    repo, _ = open_repo(url)
    first = read_version_sparse(repo, url, None)
    assert first.added is None  # a full read
    s.checkpoint()
    same = read_version_sparse(repo, url, None, previous=first)
    assert same.added is not None and same.added.nnz == 0  # nothing since
    s.add([["a", "c", "c"]])
    s.checkpoint()
    more = read_version_sparse(repo, url, None, previous=same)
    np.testing.assert_allclose((same.cooccurrence.upper + more.added).toarray(),
                               more.cooccurrence.upper.toarray())
    s.add([["d", "a"]])  # a word admitted: the words move
    s.checkpoint()
    assert read_version_sparse(repo, url, None, previous=more).added is None


def test_a_product_through_documents_is_taken_only_where_they_made_the_pairs():
    rng = np.random.default_rng(5)
    H = sp.csr_matrix(rng.poisson(0.6, size=(30, 12)).astype(float))
    w = rng.uniform(0.5, 2.0, 30)
    pairs = (H.T @ sp.diags(w) @ H).toarray() - np.diag(H.T @ w)
    upper = canonical_csr(sp.csr_matrix(np.triu(pairs)))
    Z = rng.standard_normal((12, 4))
    got, through = upper_matmul_through(upper, Z, (H, w))
    assert through
    np.testing.assert_allclose(got, pairs @ Z, rtol=1e-12, atol=1e-12)
    # Not those documents: one left out, one weighed otherwise, another vocabulary, none.
    w_other = w.copy()
    w_other[7] *= 1.01
    for documents in [(H[1:], w[1:]), (H, w_other), (H[:, :11], w), None]:
        got, through = upper_matmul_through(upper, Z, documents)
        assert not through
        np.testing.assert_array_equal(got, upper_matmul_once(upper, Z))
    got, through = upper_matmul_through(canonical_csr(sp.csr_matrix((12, 12))), Z, (H, w))
    assert not through and not got.any()


def test_a_product_known_to_the_counts_is_returned_for_its_basis_only():
    rng = np.random.default_rng(3)
    dense = cooccurrence(sp.csr_matrix(rng.poisson(0.8, size=(40, 9)).astype(float)))
    S = SparseCooccurrence.from_dense(dense)
    Z, other = rng.standard_normal((9, 5)), rng.standard_normal((9, 5))
    want = dense.normalized() @ Z
    # In float32 over the pairs, as a single product is.
    np.testing.assert_allclose(upper_matmul_once(S.upper, Z), dense.counts @ Z, rtol=1e-5,
                               atol=1e-5 * np.abs(dense.counts @ Z).max())
    np.testing.assert_allclose(S.matmul_once(Z), want, rtol=1e-5, atol=1e-6)
    assert S.last_product[0] is not None and np.array_equal(S.last_product[0], Z)
    S.known_product = (Z.copy(), np.full((9, 5), 7.0))
    np.testing.assert_array_equal(S.matmul_once(Z), 7.0 / S.total_weight())
    assert S.last_product[1] is S.known_product[1]
    np.testing.assert_allclose(S.matmul_once(other), dense.normalized() @ other, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(S @ Z, want, rtol=1e-12)  # products of a fit multiply


@pytest.mark.parametrize("seed", range(12))
def test_a_pending_sum_is_formed_once_and_reads_as_the_sum(seed):
    # Counts given as a PendingSum (a read plus the waiting documents, the read moved to the
    # words selected or not) read as the formed sum: the diagonal to the bit, row sums and
    # products to rounding, the sum formed at the first use of the entries, once.
    from anchorstream.stats.sparse import PendingSum, csr_moved_sum

    rng = np.random.default_rng(900 + seed)
    n = int(rng.integers(2, 10))

    def upper(size):
        return sp.csr_matrix(np.triu(rng.random((size, size)) * (rng.random((size, size)) < 0.5)))

    if seed % 2:
        a, to, b = upper(n), None, upper(n)
        want = (a + b).toarray()
    else:
        m = n + int(rng.integers(0, 4))
        a = upper(m)
        keep = np.sort(rng.choice(m, size=n, replace=False))
        to = np.full(m, -1)
        to[keep] = np.arange(n)
        b = upper(n)
        want = csr_moved_sum(a, to, b).toarray()
    pend = PendingSum(a, to, b)
    S = SparseCooccurrence(pend, np.ones(n), np.ones(n), 3, 9, check=False)
    assert S.nbytes == pend.nbytes and S._upper is pend  # not formed yet
    np.testing.assert_array_equal(S.diagonal(), np.diag(want))
    full = want + want.T - np.diag(np.diag(want))
    np.testing.assert_allclose(S.row_sums(), full.sum(axis=1) / 3, rtol=1e-12)
    assert S._upper is pend  # row sums and the diagonal come from the parts
    formed = S.upper
    np.testing.assert_allclose(formed.toarray(), want, rtol=1e-15)
    assert S.upper is formed and S.nbytes == formed.data.nbytes + formed.indices.nbytes + (
        formed.indptr.nbytes)
    Z = rng.standard_normal((n, 3))
    np.testing.assert_allclose(S @ Z, full @ Z / 3, rtol=1e-12, atol=1e-15)


def test_a_catch_up_checks_the_segments_it_adds(monkeypatch):
    # A catch-up's counts are not checked whole (the read they start from was checked when
    # read): what it adds is, and a bad count there fails the read, naming the store.
    import anchorstream.store.sparseread as sparse_mod
    from anchorstream.store.repository import open_repo

    url = f"memory://sparse-catch-up-check-{uuid.uuid4().hex}"
    s = CooccurrenceStore.create(url, capacity=5, admit_threshold=1, chunk_size=2, shard_size=4)
    s.add([["a", "b"], ["b", "c"]])
    s.checkpoint()
    repo, _ = open_repo(url)
    previous = sparse_mod.read_version_sparse(repo, url, None)
    s.add([["a", "c"]])
    s.checkpoint()
    read = sparse_mod._segments_upper

    def negated(*args):
        upper = read(*args)
        upper.data *= -1.0
        return upper

    monkeypatch.setattr(sparse_mod, "_segments_upper", negated)
    with pytest.raises(StoreError, match="cannot read store .*non-negative"):
        sparse_mod.read_version_sparse(repo, url, None, previous=previous)


def test_a_dense_only_rectifier_refuses_sparse_statistics():
    truth = planted_model(60, 3, random_state=0)
    X, _ = sample_documents(truth, 300, random_state=0)
    S = SparseCooccurrence.from_dense(cooccurrence(X))
    with pytest.raises(InputError, match="rectify_method='lowrank'"):
        AnchorModel(3, anchor_min_df=0, rectify_method="ap").fit(S)


# ---------------------------------------------------------------------------- memory


def _big_store(url, n_words: int, n_topics: int):
    """A store whose every slot is an active word, from documents of a planted model."""
    truth = planted_model(n_words, n_topics, random_state=1)
    X, _ = sample_documents(truth, 3000, doc_length=30, random_state=1)
    vocab = [f"w{i}" for i in range(n_words)]
    store = CooccurrenceStore.create(url, capacity=n_words, admit_threshold=1, seed=vocab,
                                     chunk_size=256, shard_size=512)
    X = sp.csr_matrix(X)
    docs = [[vocab[j] for j, c in zip(X.indices[X.indptr[d]:X.indptr[d + 1]],
                                      X.data[X.indptr[d]:X.indptr[d + 1]]) for _ in range(int(c))]
            for d in range(X.shape[0])]
    store.add(docs[:2000])
    store.checkpoint({"n": 2000})
    store.compact()  # the base holds most of it, segments the rest
    store.add(docs[2000:])
    store.checkpoint({"n": 3000})
    return store


def test_the_low_rank_fit_from_a_store_never_allocates_a_v_by_v_array(tmp_path):
    # V = 6000: a dense read is 288 MB (float64), the rectifier's float32 iterate 144 MB. The
    # low-rank path holds the sparse counts (~12 bytes per stored pair; products never form
    # the transpose) and the V x (10 K + 1000) corrections: all O(V K + nnz). Its
    # peak must stay below 4 V² bytes, so not even a float32 V x V array can be among them.
    V, K = 6000, 5
    url = str(tmp_path / "store")
    _big_store(url, V, K)
    tracemalloc.start()
    try:
        st_ = open_committed_sparse(url)
        model = AnchorModel(K, rectify_method="lowrank", anchor_min_df=0).fit(st_.cooccurrence)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(st_.words) == V and model.topic_word_.shape == (V, K)
    dense_bytes = 8 * V * V
    assert peak < dense_bytes / 2, (
        f"peak {peak / 1e6:.0f} MB, a dense V x V read is {dense_bytes / 1e6:.0f} MB")
    # The check can fail: the dense read of the same store exceeds the bound.
    tracemalloc.start()
    try:
        open_committed(url)
        _, dense_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert dense_peak >= dense_bytes


def test_a_sparse_read_holds_about_one_copy_of_the_counts(tmp_path):
    # A store where every pair is stored (the worst case a deployment sizes for), several
    # bands of shards, and a live segment after the compaction: the read writes the result
    # band by band at its exact size, so numpy's allocations peak below twice the result
    # (1.5 times; stacking the bands and adding the segment to the whole matrix, as the read
    # did before, peaked at 3.4 times here).
    # The numba kernels' band pieces are not traced: they are one band at a time.
    V = 600
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(V)])
    store = CooccurrenceStore.create(str(tmp_path / "store"), capacity=V, chunk_size=64,
                                     shard_size=128, admit_threshold=1)
    store.add([list(words)])
    store.add([list(words[rng.choice(V, 60, replace=False)]) for _ in range(300)])
    store.checkpoint({"t:0": 1})
    store.compact()
    store.add([list(words[rng.choice(V, 60, replace=False)]) for _ in range(10)])
    store.checkpoint({"t:0": 2})
    open_committed_sparse(store.url)  # kernels compiled or loaded before anything is counted
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        st_ = open_committed_sparse(store.url)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    U = st_.cooccurrence.upper
    assert U.nnz > 0.95 * V * (V + 1) / 2  # (nearly) every pair stored
    result = U.data.nbytes + U.indices.nbytes + U.indptr.nbytes
    assert peak < 2 * result, f"peak {peak / result:.2f} times the result"
    np.testing.assert_allclose(st_.cooccurrence.counts_dense(),
                               open_committed(store.url).cooccurrence.counts, rtol=1e-12)


def test_canonical_csr_trims_what_holds_more_and_copies_nothing_else():
    rng = np.random.default_rng(1)
    U = sp.triu(sp.random(50, 50, density=0.3, random_state=2, format="csr")).tocsr()
    U.sum_duplicates()
    # scipy's arrays are views of arrays of their own size: nothing to trim, nothing copied
    # (a copy of a refresh's counts is 6 V² bytes where every pair is stored).
    assert U.data.base is not None
    same = canonical_csr(U)
    assert np.shares_memory(same.data, U.data) and np.shares_memory(same.indices, U.indices)
    # A sum's arrays are as long as both operands': trimmed to the entries.
    W = U + sp.triu(sp.random(50, 50, density=0.3, random_state=3, format="csr")).tocsr()
    long = sp.csr_matrix((np.r_[W.data, rng.random(7)], np.r_[W.indices, np.zeros(7, np.int32)],
                          W.indptr), shape=W.shape)
    for m in (long, sp.csr_matrix((W.data[:W.nnz], W.indices[:W.nnz], W.indptr),
                                  shape=W.shape)):
        got = canonical_csr(m)
        assert got.data.size == got.nnz == W.nnz
        root = got.data
        while isinstance(root.base, np.ndarray):
            root = root.base
        assert root.nbytes == 8 * W.nnz
        np.testing.assert_array_equal(got.toarray(), W.toarray())


def _read_with_waiting(tmp_path, *, seed: int, V: int = 1000):
    """A sparse read of a store of ``V`` words, 141 documents and 20 of them still waiting in
    its delay line. (``V`` large enough that the lower-triangle check's blocks, 65,536
    entries, weigh little beside the counts.)"""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(V)])
    store = CooccurrenceStore.create(str(tmp_path / "store"), capacity=V, admit_threshold=1,
                                     count_delay=20)
    store.add([list(words)])
    store.add([list(words[rng.choice(V, 150, replace=False)]) for _ in range(140)])
    store.checkpoint({"t:0": 1})
    st_ = open_committed_sparse(store.url)
    assert st_.waiting is not None and st_.waiting.num_docs == 20
    return st_


def test_adding_the_waiting_documents_copies_the_counts_once(tmp_path):
    # add_waiting's sum is the one new copy (a numba kernel's, at its exact size, traced as
    # numpy's): nothing else of the counts' size beside it. canonical_csr copied the read's
    # arrays first (scipy's views): a third copy at a refresh's peak.
    from anchorstream.store.delay import add_waiting

    st_ = _read_with_waiting(tmp_path, seed=0)
    add_waiting(st_.cooccurrence, st_.waiting)  # kernels compiled or loaded first
    U = st_.cooccurrence.upper
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        total = add_waiting(st_.cooccurrence, st_.waiting)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    counts = U.data.nbytes + U.indices.nbytes
    assert total.upper.nnz >= U.nnz and peak < 1.5 * counts, f"{peak / counts:.2f} copies"
    want = st_.cooccurrence.counts_dense() + st_.waiting.counts_dense()
    np.testing.assert_allclose(total.counts_dense(), want, rtol=1e-12)


@pytest.mark.parametrize("every", [False, True])
def test_selecting_words_with_the_waiting_documents_is_one_copy_and_the_same_sum(tmp_path,
                                                                                 every):
    # select_with_waiting: the words' subset and its sum with the waiting documents in one
    # pass, bit for bit what the subset and add_waiting gave, without the subset's copy.
    from anchorstream.store.delay import add_waiting, select_with_waiting

    V = 1000
    rng = np.random.default_rng(1)
    st_ = _read_with_waiting(tmp_path, seed=1, V=V)
    cooc = st_.cooccurrence
    idx = np.arange(V) if every else np.sort(rng.choice(V, 900, replace=False))
    select_with_waiting(cooc, idx, st_.waiting)  # kernels compiled or loaded first
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        got = select_with_waiting(cooc, idx, st_.waiting)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    want = add_waiting(cooc if every else cooc.subset(idx, keep_total=False), st_.waiting, idx)
    for g, w in zip((got.upper.indptr, got.upper.indices, got.upper.data, got.unigram,
                     got.doc_freq), (want.upper.indptr, want.upper.indices, want.upper.data,
                                     want.unigram, want.doc_freq)):
        np.testing.assert_array_equal(g, w)
    assert (got.num_docs, got.num_tokens, got.mass, got.total_weight()) == (
        want.num_docs, want.num_tokens, want.mass, want.total_weight())
    # tracemalloc counts the room the kernel allocates for both operands' entries (pages never
    # written are never resident, as for csr_sum): the read's and the waiting documents'
    # (1.18x it with the waiting documents' own subset, a third of the read's size here), no
    # subset of the read beside them (which made it 1.63x).
    room = 12 * (cooc.upper.nnz + st_.waiting.upper.nnz)
    assert peak < 1.3 * room, f"{peak / room:.2f} of the read's and the waiting's entries"


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), cuts=st.lists(st.integers(0, 60), min_size=1, max_size=4),
       compact_after=st.sets(st.integers(0, 4)), evict_after=st.sets(st.integers(0, 4)),
       forgetting=st.sampled_from(sorted(FORGETTING)), capacity=st.sampled_from([6, 12]))
def test_a_sparse_read_that_catches_up_equals_a_full_read(seed, cuts, compact_after,
                                                          evict_after, forgetting, capacity):
    # read_version_sparse(previous=): the previous sparse read plus what was committed since
    # (evictions, compactions, decay, windows expiring in between) equals a full read.
    from anchorstream.store.repository import open_repo
    from anchorstream.store.sparseread import read_version_sparse

    rng = np.random.default_rng(seed)
    docs = [list(rng.choice([f"w{i}" for i in range(12)], size=rng.integers(0, 7)))
            for _ in range(60)]
    url = f"memory://sparse-catch-up-{uuid.uuid4().hex}"
    s = CooccurrenceStore.create(url, capacity=capacity, admit_threshold=1, chunk_size=2,
                                 shard_size=4, sketch_size=4, forgetting=FORGETTING[forgetting])
    previous = None
    for _ in scripted_history(s, docs, cuts, evict_after, compact_after):
        repo, _ = open_repo(url)
        kept = None if previous is None else previous.cooccurrence.upper.copy()
        read = read_version_sparse(repo, url, None, previous=previous)
        if previous is not None:  # the previous read is left as it was
            assert (previous.cooccurrence.upper != kept).nnz == 0
        _assert_same_read(read, open_committed(url))
        if read.added is not None:  # what it added to the previous read's counts, as is
            assert previous is not None and read.slots.tolist() == previous.slots.tolist()
            want = read.cooccurrence.upper.toarray()
            np.testing.assert_allclose(kept.toarray() + read.added.toarray(), want,
                                       rtol=1e-12, atol=1e-12 * max(want.max(initial=0), 1))
        previous = read


def test_a_sparse_catch_up_takes_words_admitted_and_evicted_since(monkeypatch):
    # Words admitted since the previous read (one into a slot freed before it, between two
    # active ones) and a slot evicted and reused since: what was read moves to the new words'
    # positions instead of the whole store being read again.
    import anchorstream.store.sparseread as sparse_mod
    from anchorstream.store.repository import open_repo

    url = f"memory://sparse-catch-up-slots-{uuid.uuid4().hex}"
    s = CooccurrenceStore.create(url, capacity=5, admit_threshold=1, chunk_size=2,
                                 shard_size=4)
    s.add([["b", "d", "d"], ["b", "d", "f"], ["d", "f"]])
    s.checkpoint()
    freed = s.evict("d")
    s.add([["b", "f", "f"], ["f", "b"]])
    s.checkpoint()
    repo, _ = open_repo(url)
    previous = sparse_mod.read_version_sparse(repo, url, None)
    assert previous.words == ["b", "f"] and freed < max(previous.slots)
    full_reads = []
    full = sparse_mod.sparse_upper
    monkeypatch.setattr(sparse_mod, "sparse_upper",
                        lambda *a, **kw: full_reads.append(1) or full(*a, **kw))
    s.add([["a", "b", "c"], ["c", "f", "a"], ["a", "f"]])
    s.checkpoint()
    read = sparse_mod.read_version_sparse(repo, url, None, previous=previous)
    assert full_reads == [] and len(read.words) == 4
    assert freed in read.slots.tolist()  # a new word took the slot between b's and f's
    _assert_same_read(read, open_committed(url))
    s.evict("f")
    s.add([["e", "b"], ["e", "c", "b"]])  # e takes f's slot
    s.checkpoint()
    again = sparse_mod.read_version_sparse(repo, url, None, previous=read)
    assert full_reads == [] and "e" in again.words and "f" not in again.words
    _assert_same_read(again, open_committed(url))


@pytest.mark.parametrize("seed", range(16))
def test_a_pending_sum_of_many_parts_reads_as_their_sum(seed):
    # A PendingSum added to (plus) and moved with more added (of_terms), as a kept read's
    # catch-ups (added_into_first: in place where the first part stores the pairs) and a
    # refresh's selection of words do, reads as the dense sum: formed to
    # rounding, the diagonal as the formed sum's to the bit, row sums from the parts. Its
    # first part is the same object all along (a kept read's counts, searched once).
    from anchorstream.stats.sparse import PendingSum

    rng = np.random.default_rng(1300 + seed)

    def upper(size):
        return sp.csr_matrix(np.triu(rng.random((size, size)) * (rng.random((size, size)) < 0.4)))

    n = int(rng.integers(2, 9))
    a, b = upper(n), upper(n)
    want = a.toarray() + b.toarray()
    pend = PendingSum(a, None, b)
    first = pend._parts[0][0]
    for step in range(int(rng.integers(1, 7))):
        if pend._parts[0][1] is None and rng.random() < 0.4:
            # Into the first part where it stores b's pairs (a kept read's catch-up): its
            # diagonal and row sums found so far follow, and so does every sum holding it.
            b = upper(n)
            if rng.random() < 0.5:
                b = sp.csr_matrix(b.multiply(first.m != 0))  # every pair stored already
            pend = pend.added_into_first(b, max_parts=[None, 3][int(rng.integers(0, 2))])
            want = want + b.toarray()
        elif rng.random() < 0.5:
            b = upper(n)
            max_parts = [None, 2, 3][int(rng.integers(0, 3))]
            pend = pend.plus(b, max_parts=max_parts)
            assert max_parts is None or pend.n_parts <= max(max_parts, 2)
            want = want + b.toarray()
        else:
            m = int(rng.integers(1, n + 3))  # words dropped, words added
            keep = np.sort(rng.choice(n, size=min(n, m), replace=False))
            to = np.full(n, -1)
            to[keep] = np.sort(rng.choice(m, size=keep.size, replace=False))
            b = upper(m)
            moved = np.zeros((m, m))
            moved[np.ix_(to[keep], to[keep])] = want[np.ix_(keep, keep)]
            pend = PendingSum.of_terms([(pend, to), (b, None)], b.shape)
            want, n = moved + b.toarray(), m
        assert pend._parts[0][0] is first and pend.shape == (n, n)
        S = SparseCooccurrence(pend, np.ones(n), np.ones(n), 3, 9, check=False)
        formed = pend.form()
        np.testing.assert_allclose(formed.toarray(), want, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(S.diagonal(), formed.diagonal())
        full = want + want.T - np.diag(np.diag(want))
        np.testing.assert_allclose(S.row_sums(), full.sum(axis=1) / 3, rtol=1e-12, atol=1e-15)
        assert S.pending is pend and S.nbytes == pend.nbytes  # read from the parts
        keep = None if pend._parts[0][1] is None else pend._parts[0][1] >= 0
        assert first.row_sums(keep) is first.row_sums(keep)  # found once


WORDS8 = [f"w{i}" for i in range(8)]


def store_of_fixed_words(rng, n_docs: int, **kwargs):
    """``(store, repo, read)``: an in-memory store of :data:`WORDS8`, every word admitted by
    its first document (none moves later), ``n_docs`` random documents of six of them, one
    checkpoint and its sparse read; ``kwargs`` go to ``CooccurrenceStore.create``."""
    from anchorstream.store.repository import open_repo
    from anchorstream.store.sparseread import read_version_sparse

    url = f"memory://fixed-words-{uuid.uuid4().hex}"
    s = CooccurrenceStore.create(url, capacity=10, admit_threshold=1, chunk_size=4,
                                 shard_size=8, **kwargs)
    s.add([WORDS8])
    s.add([list(rng.choice(WORDS8, size=6)) for _ in range(n_docs)])
    s.checkpoint()
    repo, _ = open_repo(url)
    return s, repo, read_version_sparse(repo, url, None)


@pytest.mark.parametrize("share", [0.25, 1.5])
def test_catch_ups_keep_their_sums_unformed_and_read_as_a_full_read(monkeypatch, share):
    # A chain of catch-ups where no word moves, nothing ever asking for the entries: each
    # read is the last one's counts plus the segments since, not formed (the kept read's
    # pairs are not merged with the few that changed), at most MAX_PENDING_PARTS parts, and
    # formed whole once the segments since hold more than MAX_PENDING_SHARE of the read's
    # pairs. Each reads as a full read. (Here every pair is stored and each catch-up adds
    # most of them again: a share above 1 lets the parts pile up.)
    import anchorstream.store.sparseread as sparse_mod
    from anchorstream.store.sparseread import MAX_PENDING_PARTS, read_version_sparse

    monkeypatch.setattr(sparse_mod, "MAX_PENDING_SHARE", share)

    rng = np.random.default_rng(5)
    s, repo, previous = store_of_fixed_words(rng, 30)
    url = s.url
    parts = []
    for _ in range(12):
        s.add([list(rng.choice(WORDS8, size=int(rng.integers(2, 6)))) for _ in range(3)])
        s.checkpoint()
        before = None if previous.cooccurrence.pending is None else (
            previous.cooccurrence.pending.parts_nnz)
        read = read_version_sparse(repo, url, None, previous=previous)
        full = read_version_sparse(repo, url, None).cooccurrence
        got = read.cooccurrence
        pending = got.pending
        parts.append(0 if pending is None else pending.n_parts)
        if pending is not None:
            first, *later = pending.parts_nnz
            assert pending.n_parts <= MAX_PENDING_PARTS and sum(later) <= share * first
        np.testing.assert_array_equal(got.diagonal() > 0, full.diagonal() > 0)
        np.testing.assert_allclose(got.diagonal(), full.diagonal(), rtol=1e-12)
        np.testing.assert_allclose(got.row_sums(), full.row_sums(), rtol=1e-12)
        assert got.pending is pending  # neither formed it
        if pending is not None:
            np.testing.assert_allclose(pending.form().toarray(), full.upper.toarray(),
                                       rtol=1e-12)
        if before is not None:  # the read it started from is left as it was
            assert previous.cooccurrence.pending.parts_nnz == before
        previous = read
    assert 0 in parts[1:] and 2 in parts  # formed once outgrown, not formed before
    assert share < 1 or max(parts) >= 3  # and piled up where allowed to
    _assert_same_read(previous, open_committed(url))


@pytest.mark.parametrize("every", [False, True])
def test_the_waiting_documents_join_a_read_whose_sum_is_pending(tmp_path, every):
    # A catch-up's counts not formed yet (here the read's pairs in two parts with no pair in
    # both, so that every sum is exact) get the waiting documents as more parts, moved to the
    # words selected without being formed; formed, the same sum as the formed read's, bit
    # for bit; the read itself is left unformed.
    from anchorstream.stats.sparse import PendingSum
    from anchorstream.store.delay import add_waiting, select_with_waiting

    V = 300
    rng = np.random.default_rng(2)
    st_ = _read_with_waiting(tmp_path, seed=2, V=V)
    cooc = st_.cooccurrence
    U = cooc.upper
    half = sp.csr_matrix(U.multiply(sp.csr_matrix(rng.random(U.shape) < 0.5)))
    rest = canonical_csr(sp.csr_matrix(U - half))
    half, rest = canonical_csr(half), canonical_csr(rest)
    split = SparseCooccurrence(PendingSum(half, None, rest), cooc.unigram, cooc.doc_freq,
                               cooc.num_docs, cooc.num_tokens, cooc.length_cap, check=False)
    idx = np.arange(V) if every else np.sort(rng.choice(V, 250, replace=False))
    want = select_with_waiting(cooc, idx, st_.waiting)
    for pending in (True, False):
        got = select_with_waiting(split, idx, st_.waiting, pending=pending)
        if pending:
            assert got.pending is not None and got.pending.n_parts == 3
        np.testing.assert_array_equal(got.diagonal(), want.diagonal())
        np.testing.assert_allclose(got.row_sums(), want.row_sums(), rtol=1e-12)
        for g, w in zip((got.upper.indptr, got.upper.indices, got.upper.data),
                        (want.upper.indptr, want.upper.indices, want.upper.data)):
            np.testing.assert_array_equal(g, w)
    assert split.pending is not None and split.pending.n_parts == 2
    got = add_waiting(split, st_.waiting, pending=True)
    assert got.pending is not None and got.pending.n_parts == 3
    np.testing.assert_array_equal(got.upper.data, add_waiting(cooc, st_.waiting).upper.data)


def test_a_catch_up_that_consumes_its_previous_read_adds_into_it_in_place():
    # consume_previous (the refresher, which lets its last read go): the segments' pairs the
    # last read stores are added into its counts in place, the few others a part of their
    # own, so the counts are not copied and grow by those few; each read reads as a full
    # read, and the diagonal and row sums found before follow the additions.
    from anchorstream.store.repository import open_repo
    from anchorstream.store.sparseread import MAX_PENDING_SHARE, read_version_sparse

    rng = np.random.default_rng(6)
    words = [f"w{i}" for i in range(8)]
    url = f"memory://sparse-in-place-{uuid.uuid4().hex}"
    s = CooccurrenceStore.create(url, capacity=10, admit_threshold=1, chunk_size=4,
                                 shard_size=8)
    s.add([words])  # every word admitted, every pair of two words stored
    s.add([list(rng.choice(words, size=6)) for _ in range(30)])
    s.checkpoint()
    repo, _ = open_repo(url)
    previous = read_version_sparse(repo, url, None)
    counts = previous.cooccurrence.upper
    added_into = 0
    for _ in range(10):
        s.add([list(rng.choice(WORDS8, size=int(rng.integers(2, 6)))) for _ in range(3)])
        s.checkpoint()
        read = read_version_sparse(repo, url, None, previous=previous, consume_previous=True)
        full = read_version_sparse(repo, url, None).cooccurrence
        got, pending = read.cooccurrence, read.cooccurrence.pending
        assert pending is not None  # a few new pairs at most: never formed here
        first, *later = pending.parts_nnz
        assert sum(later) <= MAX_PENDING_SHARE * first
        added_into += pending._parts[0][0].m is counts  # the same arrays, added to
        np.testing.assert_array_equal(got.diagonal(), pending.form().diagonal())
        np.testing.assert_allclose(got.diagonal(), full.diagonal(), rtol=1e-12)
        np.testing.assert_allclose(got.row_sums(), full.row_sums(), rtol=1e-12)
        np.testing.assert_allclose(pending.form().toarray(), full.upper.toarray(), rtol=1e-12)
        previous = read
    assert added_into == 10
    _assert_same_read(previous, open_committed(url))


@pytest.mark.parametrize("seed", range(10))
def test_the_pairs_of_documents_are_counted_only_when_their_entries_are_used(seed):
    # PendingSum.of_documents (the delay line's waiting documents): moved to a selection of
    # words and summed with other counts, its diagonal (to the bit) and row sums come from
    # the documents; its pairs are counted when the sum is formed, as the kernel counts them.
    from anchorstream._kernels.cooc import document_gram_upper
    from anchorstream.stats.pending import PendingSum

    rng = np.random.default_rng(2100 + seed)
    n_docs, V = int(rng.integers(1, 12)), int(rng.integers(2, 10))
    H = sp.csr_matrix(rng.integers(0, 4, size=(n_docs, V)) * (rng.random((n_docs, V)) < 0.5),
                      dtype=np.float64)
    w = rng.random(n_docs) * (rng.random(n_docs) < 0.8)
    pend = PendingSum.of_documents(H, w)
    part = pend._parts[0][0]
    indptr, indices, data = document_gram_upper(H.indptr, H.indices, H.data, w, V)
    pairs = sp.csr_matrix((data, indices, indptr), shape=(V, V)).toarray()
    keep = np.sort(rng.choice(V, size=int(rng.integers(1, V + 1)), replace=False))
    to = np.full(V, -1)
    to[keep] = np.arange(keep.size)
    other = sp.csr_matrix(np.triu(rng.random((keep.size, keep.size))))
    summed = PendingSum.of_terms([(other, None), (pend, to)], (keep.size, keep.size))
    S = SparseCooccurrence(summed, np.ones(keep.size), np.ones(keep.size), 3, 9, check=False)
    want = other.toarray() + pairs[np.ix_(keep, keep)]
    full = want + want.T - np.diag(np.diag(want))
    np.testing.assert_allclose(S.row_sums(), full.sum(axis=1) / 3, rtol=1e-12, atol=1e-15)
    diagonal = S.diagonal()
    assert not part.formed and pend.nbytes < H.data.nbytes * 3 + w.nbytes + 8 * (n_docs + 1)
    formed = S.upper
    assert part.formed
    np.testing.assert_array_equal(diagonal, formed.diagonal())
    np.testing.assert_allclose(formed.toarray(), want, rtol=1e-12, atol=1e-15)


def test_a_warm_selection_leaves_the_waiting_documents_pairs_uncounted(tmp_path):
    # A read kept by the refresher plus its waiting documents (select_with_waiting(pending=
    # True)): the diagonal and row sums a warm update reads do not count the waiting
    # documents' pairs; forming the sum does, and gives the sum formed at once.
    from anchorstream.store.delay import select_with_waiting

    V = 400
    st_ = _read_with_waiting(tmp_path, seed=3, V=V)
    idx = np.sort(np.random.default_rng(3).choice(V, 350, replace=False))
    got = select_with_waiting(st_.cooccurrence, idx, st_.waiting, pending=True)
    part = st_.waiting.pending._parts[0][0]
    got.row_sums(), got.diagonal()
    assert not part.formed
    want = select_with_waiting(st_.cooccurrence, idx, st_.waiting)
    assert part.formed
    np.testing.assert_allclose(got.row_sums(), want.row_sums(), rtol=1e-12)
    np.testing.assert_array_equal(got.diagonal(), want.diagonal())
    np.testing.assert_array_equal(got.upper.data, want.upper.data)


@pytest.mark.parametrize("in_place, every_pair", [(False, True), (True, True), (True, False)])
def test_documents_parts_stay_documents_until_more_than_the_bound(in_place, every_pair):
    # plus_documents keeps documents as documents (the diagonal and row sums from them) up
    # to max_documents parts, then counts all of them in one pass and adds them as
    # added_into_first (in place: counted straight into the first part, and where it stores
    # every pair one part is left) or plus does. The sum is the dense one throughout.
    from anchorstream.stats.sparse import PendingSum

    rng = np.random.default_rng(7)
    n = 9
    stored = np.ones((n, n)) if every_pair else rng.random((n, n)) < 0.5
    a = sp.csr_matrix(np.triu((rng.random((n, n)) + 0.5) * stored))
    want = a.toarray()
    pend = PendingSum.of(a)
    first = pend._parts[0][0]
    held = []
    for _ in range(7):
        H = sp.csr_matrix(rng.integers(0, 3, size=(4, n)).astype(np.float64))
        w = rng.random(4)
        docs = PendingSum.of_documents(H, w)
        assert docs.documents is not None and docs.n_documents == 1
        pend = pend.plus_documents(docs, max_documents=3, max_parts=3, in_place=in_place)
        pairs = (H.T @ sp.diags(w) @ H).toarray() - np.diag(H.T @ w)
        want = want + np.triu(pairs)
        held.append(pend.n_documents)
        assert pend._parts[0][0] is first and pend.documents is None
        if in_place and every_pair and not pend.n_documents:
            assert pend.n_parts == 1
        S = SparseCooccurrence(pend, np.ones(n), np.ones(n), 3, 9, check=False)
        np.testing.assert_allclose(S.diagonal(), np.diag(want), rtol=1e-12)
        full = want + want.T - np.diag(np.diag(want))
        np.testing.assert_allclose(S.row_sums(), full.sum(axis=1) / 3, rtol=1e-12)
    assert held == [1, 2, 3, 0, 1, 2, 3]
    np.testing.assert_allclose(pend.form().toarray(), want, rtol=1e-12)


def test_probes_agree_within_their_tolerance_of_the_larger_and_never_when_both_are_zero():
    from anchorstream.stats.sparse import PROBE_RTOL, probes_agree

    a = np.array([0.0, 2.0, -4.0])
    assert probes_agree(a, a) and probes_agree(a, a + [0.0, 0.0, 2 * PROBE_RTOL])
    assert not probes_agree(a, a + [0.0, 0.0, 8 * PROBE_RTOL])
    assert not probes_agree(np.zeros(3), np.zeros(3))  # nothing probed
    assert not probes_agree(a, np.full(3, np.nan))
