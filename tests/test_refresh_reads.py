"""The refresher's reads (daemon/refresh_reads.py): the product a warm update follows from one
read to the next, on a real store with a delay line."""

from __future__ import annotations

import numpy as np

from anchorstream.store import CooccurrenceStore
from daemon.publish import Publisher
from daemon.refresh import Refresher
from tests.test_refresher import K, planted_docs


def _dense_product(counts: np.ndarray, basis: np.ndarray) -> np.ndarray:
    return counts @ basis


def _close(got: np.ndarray, want: np.ndarray) -> None:
    # Products with the pairs run in float32 (upper_matmul_once): ~1e-7 of their size; through
    # documents, in float64.
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(np.abs(want).max(), 1e-300))


def test_a_warm_refresh_follows_its_one_product_from_read_to_read(tmp_path):
    # Warm, a refresh's one product (the update's, with the basis of the last cold
    # rectification) is the last one plus the segments' and the waiting documents' products:
    # at every fit the product the counts are given equals theirs, and what is kept for the
    # next one is the kept read's counts times that basis, through evictions and
    # admissions (which start it afresh) and rounds that rectify cold again.
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2,
                                     count_delay=60)
    ref = Refresher(store.url, Publisher(tmp_path / "snaps", keep=3),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"},
                    min_new_docs=1, min_df=2)
    reads = ref.reads
    fitted, given = reads.fitted, []

    def check_then_fitted(cooc):
        # The counts' known product, where the reads gave one, is theirs (waiting included).
        given.append(cooc.known_product is not None
                     and cooc.last_product[1] is cooc.known_product[1])
        if cooc.known_product is not None:
            basis, counts = cooc.known_product
            _close(counts, _dense_product(cooc.counts_dense(), basis))
        fitted(cooc)

    reads.fitted = check_then_fitted
    store.add(planted_docs(1500, seed=1))
    store.checkpoint()
    assert ref.sparse and ref.refresh_once()["version"] == 1
    followed = []
    for r in range(8):
        store.add(planted_docs(12, seed=10 + r))
        if r == 4:
            store.add([["zz-new", "zz-new", "w0001"]] * 3)  # a word admitted: words move
        store.checkpoint()
        assert ref.refresh_once()["warm"]
        f = reads.followed
        followed.append(f is not None)
        if f is not None:
            kept = reads.kept.cooccurrence.counts_dense()
            assert f.version == reads.kept.version
            _close(f.counts, _dense_product(kept[np.ix_(f.idx, f.idx)], f.basis))
    assert all(followed)
    # The products were followed rather than multiplied, but for the first fit's (cold) and
    # that of the round whose words moved.
    assert given == [False] + [r != 4 for r in range(8)]
    assert reads.products_followed == sum(given)
    # The segments of each followed round were multiplied through the documents that left the
    # delay line (12 a round), as checked.
    assert reads.segments_through_documents == reads.products_followed


def test_counts_changed_before_the_fit_are_not_followed(tmp_path):
    # The refresher may give the fit other counts than the read's (correct_admission): their
    # product says nothing of the kept read, and nothing is followed.
    store = CooccurrenceStore.create(tmp_path / "store", capacity=400, admit_threshold=2)
    ref = Refresher(store.url, Publisher(tmp_path / "snaps", keep=3),
                    model_kwargs={"n_topics": K, "anchor_min_df": 5, "rectify_method": "lowrank"},
                    min_new_docs=1, min_df=2)
    store.add(planted_docs(1500, seed=1))
    store.checkpoint()
    ref.refresh_once()
    assert ref.reads.followed is not None
    st = ref.reads.read(None)
    idx = np.arange(st.cooccurrence.n_words)
    _, cooc, _ = ref.reads.word_counts(st, idx)
    other = type(cooc)(cooc.upper, cooc.unigram, cooc.doc_freq, cooc.num_docs,
                       cooc.num_tokens, cooc.length_cap)
    other.matmul_once(np.ones((idx.size, 2)))
    ref.reads.fitted(other)
    assert ref.reads.followed is None
