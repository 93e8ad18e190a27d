"""The warm-refresh benchmark reads what the daemon reads: the store's sparse counts."""

import numpy as np
import scipy.sparse as sp

from anchorstream.stats.cooccurrence import LENGTH_CAP, cooccurrence
from anchorstream.stats.sparse import SparseCooccurrence
from benchmarks.bench_warm_refresh import store_counts


def test_store_counts_are_the_dense_statistics_held_sparse():
    rng = np.random.default_rng(0)
    # Sparse enough that many documents have fewer than 2 tokens (the store counts none of them).
    X = sp.csr_matrix(rng.poisson(0.05, size=(400, 30)).astype(np.float64))
    assert (np.asarray(X.sum(axis=1)).ravel() < 2).sum() > 50
    got = store_counts(X)
    want = SparseCooccurrence.from_dense(cooccurrence(X, length_cap=LENGTH_CAP))
    Z = rng.standard_normal((30, 4))
    np.testing.assert_allclose(got @ Z, want @ Z, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(got.unigram, want.unigram)
    np.testing.assert_array_equal(got.doc_freq, want.doc_freq)
    assert (got.num_docs, got.num_tokens) == (want.num_docs, want.num_tokens)
    assert np.isclose(got.total_weight(), want.total_weight(), rtol=1e-12)
