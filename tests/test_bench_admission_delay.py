"""The admission-delay benchmark's token lists are what a stream's store counts (delay 0; and
with a delay line, ``count_delay``, flushed at the end) and the batch count on the stream's
words (no delay limit)."""

import uuid

import numpy as np
import pytest

from anchorstream.stats.cooccurrence import LENGTH_CAP, cooccurrence
from anchorstream.store import CooccurrenceStore, open_committed
from anchorstream.text.bags import count_matrix
from benchmarks.bench_admission_delay import ADMIT_THRESHOLD, delayed
from daemon.cli.options import MAX_DF


def _stream(rng, n_docs=600, n_words=80):
    # Zipf-like word frequencies and a drift (later documents favour later words), so that
    # words are admitted all along the stream, many after some of their documents went by.
    words = [f"w{i}" for i in range(n_words)]
    docs = []
    for d in range(n_docs):
        shift = d * n_words // (2 * n_docs)
        p = 1.0 / (1.0 + np.abs(np.arange(n_words) - shift)) ** 1.3
        docs.append(list(rng.choice(words, size=rng.integers(0, 12), p=p / p.sum())))
    return docs


def _counts(token_lists, words):
    return cooccurrence(count_matrix(token_lists, words), length_cap=LENGTH_CAP)


@pytest.mark.parametrize("delay", [0, 7, 60])
def test_the_stream_stores_count_with_its_delay(rng, delay):
    docs = _stream(rng)
    url = f"memory://delay-{uuid.uuid4().hex}"
    store = CooccurrenceStore.create(url, capacity=200, admit_threshold=ADMIT_THRESHOLD,
                                     max_df=MAX_DF, length_cap=LENGTH_CAP, count_delay=delay)
    store.add(docs[:250])
    store.checkpoint()
    store = CooccurrenceStore.open(url)  # the waiting documents come back
    store.add(docs[250:])
    store.flush_delayed()
    store.checkpoint()
    state = open_committed(url)
    counted, n_words = delayed(docs, 200, delay)
    words = [w for w in state.words if w]
    assert n_words == len(words)
    mine = _counts(counted, words)
    at = [state.words.index(w) for w in words]
    theirs = state.cooccurrence
    # Words were admitted late (their first documents uncounted), so this is not trivial.
    late = _counts(docs, words)
    assert (late.doc_freq > mine.doc_freq).sum() > 10
    np.testing.assert_allclose(mine.counts, theirs.counts[np.ix_(at, at)], rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(mine.doc_freq, theirs.doc_freq[at], rtol=1e-12)
    np.testing.assert_allclose(mine.unigram, theirs.unigram[at], rtol=1e-12)
    assert mine.num_docs == pytest.approx(theirs.num_docs)


def test_no_delay_limit_counts_every_document_with_the_final_vocabulary(rng):
    docs = _stream(rng)
    counted, _ = delayed(docs, 200, np.inf)
    words = sorted({t for doc in counted for t in doc})
    final = _counts(counted, words)
    batch = _counts(docs, words)
    np.testing.assert_array_equal(final.counts, batch.counts)
    np.testing.assert_array_equal(final.doc_freq, batch.doc_freq)
    # And a finite delay lies between: no document counts a word it did not hold.
    some, _ = delayed(docs, 200, 50)
    assert all(set(a) <= set(b) for a, b in zip(some, docs))
    assert sum(map(len, some)) > sum(map(len, delayed(docs, 200, 0)[0]))


def test_a_word_evicted_and_admitted_again_is_refused(rng):
    # Capacity 10: words leave the vocabulary as the drift brings others, and come back.
    with pytest.raises(ValueError, match="admitted again"):
        delayed(_stream(rng), 10, 0)
