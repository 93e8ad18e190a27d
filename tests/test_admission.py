"""The admission correction (anchorstream.stats.admission): the streaming vocabulary's counts
brought back towards the batch counts, and the admission points the store keeps."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.admission import Admission, correct_admission
from anchorstream.stats.cooccurrence import Cooccurrence, cooccurrence
from anchorstream.stats.sparse import SparseCooccurrence
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.store.sparseread import open_committed_sparse
from anchorstream.synthetic import planted_model, sample_documents
from anchorstream.text.tokenize import count_matrix
from anchorstream.text.vocabulary import StreamingVocabulary


def planted_stream(seed: int, n_docs: int = 3000, n_words: int = 300, length: int = 12):
    """Documents (token lists) drawn i.i.d. from a planted model: a stationary stream whose
    words have very different frequencies (so they are admitted at very different times)."""
    model = planted_model(n_words, 8, word_concentration=0.05, random_state=seed)
    X, _ = sample_documents(model, n_docs, length, random_state=seed + 1)
    X = sp.csr_matrix(X)
    return [[f"w{j}" for j, c in zip(X.indices[X.indptr[d]:X.indptr[d + 1]],
                                      X.data[X.indptr[d]:X.indptr[d + 1]]) for _ in range(int(c))]
            for d in range(n_docs)]


def streamed(docs, *, admit_threshold=5.0, length_cap=None):
    """The streaming vocabulary's counts (each document over the words admitted by then) and
    its admission, as the store would hold them (no eviction: capacity is ample)."""
    vocab = StreamingVocabulary(10_000, admit_threshold=admit_threshold)
    indptr, slots, evictions = vocab.observe_batch(docs)
    assert not evictions
    active = vocab.active_slots()
    X = sp.csr_matrix((np.ones(slots.size), slots, indptr), shape=(len(docs), vocab.capacity))
    X.sum_duplicates()
    cooc = cooccurrence(X[:, active], length_cap=length_cap)
    words = [vocab.words[s] for s in active]
    admission = Admission(vocab.admitted[active, 0], vocab.admitted[active, 1])
    return cooc, words, admission


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("length_cap", [None, 25.0])
def test_corrected_streaming_counts_approach_the_batch_counts(length_cap):
    """On a stationary planted stream (8-token documents, 1000 words: many words are admitted
    late), each word's co-occurrence mass (the row sums, which the anchors and the recovery
    read) and its document frequency come back to the batch ones. Entry by entry the
    counts of rare pairs stay as noisy as the few documents they were observed in (the full
    relative Frobenius error does not improve: the batch counts' own noise on those pairs)."""
    docs = planted_stream(0, n_docs=3000, n_words=1000, length=8)
    cooc, words, admission = streamed(docs, length_cap=length_cap)
    batch = cooccurrence(count_matrix(docs, words), length_cap=length_cap)
    rows_before = rel(cooc.counts.sum(axis=1), batch.counts.sum(axis=1))
    df_before = rel(cooc.doc_freq, batch.doc_freq)
    full_before = rel(cooc.counts, batch.counts)
    fixed = correct_admission(cooc, admission, min_share=0.25)
    assert rows_before > 0.1 and df_before > 0.05
    assert rel(fixed.counts.sum(axis=1), batch.counts.sum(axis=1)) < rows_before / 3
    assert rel(fixed.doc_freq, batch.doc_freq) < df_before / 5
    assert rel(fixed.counts, batch.counts) < 1.1 * full_before


def test_the_correction_is_the_identity_when_every_word_counted_from_the_start():
    docs = planted_stream(1, n_docs=400)
    words = sorted({t for d in docs for t in d})
    cooc = cooccurrence(count_matrix(docs, words), length_cap=25.0)
    counts = cooc.counts.copy()
    none = Admission(np.arange(len(words), dtype=float), np.zeros(len(words)))
    out = correct_admission(cooc, none, min_share=0.01)
    assert out is cooc and np.array_equal(out.counts, counts)
    sparse = SparseCooccurrence.from_dense(cooc)
    assert correct_admission(sparse, none) is sparse


def test_min_share_one_and_none_are_no_correction():
    cooc = Cooccurrence(np.ones((2, 2)), np.ones(2), np.ones(2), 4, 8)
    adm = Admission([0.0, 1.0], [0.0, 9.0])
    assert np.array_equal(correct_admission(cooc, adm, min_share=1.0).counts, np.ones((2, 2)))
    assert np.array_equal(correct_admission(cooc, None).counts, np.ones((2, 2)))
    for bad in (0, 1.5, "0.2", True, float("nan")):
        with pytest.raises(InputError, match="min_share"):
            correct_admission(cooc, adm, min_share=bad)
    with pytest.raises(InputError, match="admission over 3 words"):
        correct_admission(cooc, Admission([0.0, 1.0, 2.0], [0.0, 1.0, 2.0]))
    with pytest.raises(InputError, match="missed >= 0"):
        Admission([0.0], [-1.0])


def test_the_later_word_decides_and_the_factor_is_capped():
    # Word 1 (admitted second) missed 1 of its 2 documents, word 2 (third) 99 of 100.
    cooc = Cooccurrence(np.ones((3, 3)), np.ones(3), np.array([4.0, 1.0, 1.0]), 4, 8)
    adm = Admission([0.0, 5.0, 9.0], [0.0, 1.0, 99.0])
    out = correct_admission(cooc, adm, min_share=0.25)
    expected = np.array([[1, 2, 4], [2, 2, 4], [4, 4, 4]], dtype=float)
    np.testing.assert_allclose(out.counts, expected)
    np.testing.assert_allclose(out.doc_freq, [4.0, 2.0, 4.0])  # d + m = 2 for word 1, capped for 2
    assert out.num_docs == 4
    # A tie (admitted by one document): the smaller share, i.e. the larger factor.
    tie = correct_admission(Cooccurrence(np.ones((2, 2)), np.ones(2), np.ones(2), 4, 8),
                            Admission([3.0, 3.0], [1.0, 0.0]), min_share=0.1)
    np.testing.assert_allclose(tie.counts, [[2, 2], [2, 1]])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 40), floor=st.floats(0.01, 1.0))
def test_dense_and_sparse_agree_and_match_the_entrywise_formula(seed, n, floor):
    rng = np.random.default_rng(seed)
    A = rng.random((n, n)) * (rng.random((n, n)) < 0.4)
    counts = A + A.T
    points = rng.integers(0, 5, n).astype(float)  # ties included
    missed = rng.random(n) * 10 * (rng.random(n) < 0.7)
    df = rng.random(n) * 10 * (rng.random(n) < 0.9)
    q = np.where((missed > 0) & (df > 0), df / np.maximum(df + missed, 1e-300), 1.0)
    q = np.maximum(q, floor)
    later = np.where(points[:, None] > points[None, :], q[:, None],
                     np.where(points[:, None] < points[None, :], q[None, :],
                              np.minimum.outer(q, q)))
    dense = Cooccurrence(counts.copy(), np.ones(n), df, 10, 20, 25.0)
    sparse = SparseCooccurrence.from_dense(dense)
    adm = Admission(points, missed)
    out = correct_admission(dense, adm, min_share=floor)
    np.testing.assert_allclose(out.counts, counts / later, rtol=1e-12)
    np.testing.assert_allclose(out.doc_freq, df / q, rtol=1e-12)
    sp_out = correct_admission(sparse, adm, min_share=floor)
    np.testing.assert_allclose(sp_out.counts_dense(), out.counts, rtol=1e-12, atol=1e-300)
    # The sparse input is left as it was.
    np.testing.assert_allclose(sparse.counts_dense(), counts)


def test_the_vocabulary_records_admission_points_and_resets_them():
    v = StreamingVocabulary(2, admit_threshold=2, seed=["s"])
    v.observe(["a", "b"])            # doc 1: a, b enter the sketch
    v.observe(["a", "c"])            # doc 2: a admitted (its 2nd document), weight before 1
    # Before the admitting document: weight 1 (doc 1), and a's one document then.
    assert v.slot_of("a") == 1 and v.admitted.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    v.rescale(0.5)
    assert v.admitted.tolist() == [[0.0, 0.0], [0.5, 0.5]]
    state = v.get_state()
    w = StreamingVocabulary(2, admit_threshold=2, seed=["s"])
    w.set_state(state)
    assert w.admitted.tolist() == [[0.0, 0.0], [0.5, 0.5]]
    w.evict("a")
    assert w.admitted.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    old = {k: val for k, val in state.items() if k != "slot_admitted"}
    w.set_state(old)  # a state written before admission points: counted from the start
    assert not w.admitted.any()


@pytest.mark.parametrize("half_life", [None, 500.0])
def test_the_store_keeps_admission_points_across_reopen(tmp_path, half_life):
    docs = planted_stream(3, n_docs=1200)
    url = str(tmp_path / "store")
    forgetting = Forgetting(half_life=half_life, renormalize_above=4.0)
    s = CooccurrenceStore.create(url, capacity=1000, admit_threshold=5, forgetting=forgetting)
    s.add(docs[:700])
    s.checkpoint()
    s = CooccurrenceStore.open(url)  # the writer continues from the committed points
    s.add(docs[700:])
    s.checkpoint()
    st = open_committed(url)
    v = s.vocabulary
    readout = forgetting.readout(st.clock, CooccurrenceStore.open(url)._state.t_ref)
    np.testing.assert_array_equal(st.admission.points, v.admitted[st.slots, 0])
    np.testing.assert_allclose(st.admission.missed, v.admitted[st.slots, 1] * readout,
                               rtol=1e-12)
    assert st.admission.points.max() > 0.3 * v.total_weight  # some words were admitted late
    if half_life is None:
        # Without decay: the exact frequency before admission (no sketch pruning here).
        words = st.words
        first = {}
        for d, doc in enumerate(docs):
            for t in set(doc):
                first.setdefault(t, []).append(d)
        k = int(np.argmax(st.admission.points))
        assert st.admission.missed[k] == 4.0 and len(first[words[k]]) >= 5
    sparse = open_committed_sparse(url)
    np.testing.assert_array_equal(sparse.admission.missed, st.admission.missed)


def test_windows_and_old_stores_report_no_admission(tmp_path):
    docs = planted_stream(4, n_docs=300)
    url = str(tmp_path / "w")
    s = CooccurrenceStore.create(url, capacity=500,
                                 forgetting=Forgetting(window=100.0, n_windows=2))
    s.add(docs)
    s.checkpoint()
    assert open_committed(url).admission is None
