"""Low-rank rectification: the implicit matrix, the document operator and the iteration."""

from __future__ import annotations

import tracemalloc
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anchorstream.stats.cooccurrence import Cooccurrence, cooccurrence
from anchorstream.errors import InputError
from anchorstream.evaluate import recovery_error
from anchorstream.model import lowrank_corrections
from anchorstream.model.lowrank import (
    DocumentCooccurrence,
    LowRankCooccurrence,
    default_rows,
    rectify_lowrank,
)
from anchorstream.model.pipeline import AnchorModel
from anchorstream.model.rectify import rectify
from anchorstream.synthetic import planted_model, population_cooccurrence, sample_documents
from tests import naive_cooc as naive


@pytest.fixture(scope="module")
def corpus():
    model = planted_model(300, 6, random_state=3)
    X, _ = sample_documents(model, 3000, 12, random_state=4)
    return model, X


# --------------------------------------------------------------------------------------------
# the document operator


@pytest.mark.parametrize("length_cap", [2, 3.5, 6, None])
def test_document_operator_is_the_weighted_cooccurrence(rng, length_cap):
    X = sp.random(40, 15, density=0.3, random_state=1, data_rvs=lambda n: rng.integers(1, 4, n))
    X = sp.csr_matrix(X, dtype=np.float64)
    C = DocumentCooccurrence(X, length_cap=length_cap)
    want = naive.weighted_cooccurrence(X, length_cap)
    np.testing.assert_allclose(C @ np.eye(15), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(C.row_sums(), want.sum(axis=1), rtol=1e-12, atol=1e-15)
    words = np.array([0, 3, 7, 11])
    np.testing.assert_allclose(C.subset(words) @ np.eye(4), want[np.ix_(words, words)],
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("length_cap", [2, 8, None])
def test_document_operator_equals_the_dense_estimator(corpus, length_cap):
    _, X = corpus
    X = X[: 500]
    X = sp.vstack([X, sp.csr_matrix(X[:50].toarray() * 3)]).tocsr()  # some longer documents
    C = DocumentCooccurrence(X, length_cap=length_cap)
    dense = cooccurrence(X, length_cap=length_cap)
    np.testing.assert_allclose(C @ np.eye(X.shape[1]), dense.normalized(),
                               rtol=1e-10, atol=1e-18)
    assert C.total_weight() == pytest.approx(dense.total_weight(), rel=1e-12)


def test_document_operator_rejects_bad_input():
    for bad in (1, 0, -3, float("nan"), float("inf"), "20", True):
        with pytest.raises(InputError, match="length_cap"):
            DocumentCooccurrence(sp.csr_matrix((2, 3)), length_cap=bad)
    with pytest.raises(InputError, match="non-negative"):
        DocumentCooccurrence(sp.csr_matrix(np.array([[1.0, -2.0]])))


# --------------------------------------------------------------------------------------------
# the implicit matrix


@settings(max_examples=40, deadline=None)
@given(V=st.integers(2, 30), k=st.integers(1, 4), shift=st.floats(-1e-2, 1e-2),
       n_scanned=st.integers(0, 30), seed=st.integers(0, 2**16), dense=st.booleans(),
       block=st.sampled_from([3, 128]))
@example(V=19, k=1, shift=0.0, n_scanned=9, seed=582, dense=False, block=128)
@example(V=18, k=3, shift=0.0, n_scanned=9, seed=220, dense=True, block=128)
def test_implicit_matrix_matches_its_dense_form(V, k, shift, n_scanned, seed, dense, block):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((V, k)) * 0.1
    scanned = rng.permutation(V)[: min(n_scanned, V)]
    # The corrections held as a dense block (any share of negative entries) or sparse (none),
    # scanned `block` columns at a time (sparse ones keep each block's entries apart).
    with (mock.patch.object(lowrank_corrections, "_DENSE_SHARE", -1.0 if dense else 2.0),
          mock.patch.object(lowrank_corrections, "_SCAN_COLUMNS", block)):
        M = LowRankCooccurrence(Y, shift, scanned)
        scaled = LowRankCooccurrence(Y.copy(), shift, scanned).scale_(2.5)
    assert M._E.dense == dense
    # The definition, entry by entry: Y Yᵀ + r, negative entries of Y Yᵀ in a scanned row or
    # column corrected to zero (before the shift).
    L = Y @ Y.T
    fix = np.zeros((V, V), dtype=bool)
    fix[scanned, :] = True
    fix[:, scanned] = True
    dense = np.where(fix & (L < 0), 0.0, L) + shift
    # Products and sums first: sparse corrections multiply from their entries until rows are
    # read (below), and through their CSR after.
    Z = rng.standard_normal((V, 3))
    tol = dict(rtol=1e-6, atol=1e-6 * np.abs(dense).max() * V)
    np.testing.assert_allclose(M @ Z, dense @ Z, **tol)
    np.testing.assert_allclose(M @ Z[:, 0], dense @ Z[:, 0], **tol)
    np.testing.assert_allclose(M.sum(axis=1), dense.sum(axis=1), **tol)
    assert M.sum() == pytest.approx(dense.sum(), rel=1e-6, abs=tol["atol"] * V)
    # The corrections are held in float32: a corrected entry keeps a few float32 ulps of its
    # size (1.5e-8 on an entry of -0.072: two ulps, V=18, k=3, seed=220, dense).
    eps32 = float(np.finfo(np.float32).eps)
    np.testing.assert_allclose(M.toarray(), dense,
                               atol=4 * eps32 * max(np.abs(L).max(), 1e-3))
    np.testing.assert_allclose(M @ Z, dense @ Z, **tol)
    np.testing.assert_allclose(M.row_sqnorms(), (dense * dense).sum(axis=1), rtol=1e-5,
                               atol=1e-6 * (dense * dense).sum(axis=1).max())
    idx = rng.integers(0, V, size=min(V, 4))
    np.testing.assert_allclose(M[idx], dense[idx], **tol)
    np.testing.assert_allclose(M[int(idx[0])], dense[idx[0]], **tol)
    # The corrections are held in float32 and scaling rounds them once more: each entry is off
    # by at most half a float32 ulp of 2.5 |L| (1e-7 |L|, the old bound, is below that: it
    # failed for V=19, k=1, shift=0, n_scanned=9, seed=582 by 3.7e-9 against 3.4e-9).
    np.testing.assert_allclose(scaled.toarray(), 2.5 * M.toarray(), rtol=1e-6,
                               atol=np.finfo(np.float32).eps * 2.5 * np.abs(L).max())
    # Products, sums and squared norms scale with the corrections (a dense block is scaled
    # lazily, by a factor its products and rows apply).
    np.testing.assert_allclose(scaled @ Z, 2.5 * (M @ Z), rtol=1e-6, atol=2.5 * tol["atol"])
    np.testing.assert_allclose(scaled.sum(axis=1), 2.5 * M.sum(axis=1), **tol)
    np.testing.assert_allclose(scaled.row_sqnorms(), 2.5**2 * M.row_sqnorms(), rtol=1e-5,
                               atol=1e-5 * (dense * dense).sum(axis=1).max())


# --------------------------------------------------------------------------------------------
# rectification


def test_a_feasible_matrix_is_a_fixed_point():
    model = planted_model(80, 4, random_state=5)
    Q = population_cooccurrence(model.topic_word, model.topic_topic)
    # The eigensolver's random start and the machine's BLAS rounding decide how many
    # iterations pass before the change falls below 1e-10: over 200 starts, 2-5 on one
    # machine, 2-10 on another (seed 0 alone: 5 on the first, at most 3 on the second). So over
    # twenty starts: every one a fixed point in a few iterations, most in two or three.
    iterations = []
    for seed in range(20):
        res = rectify_lowrank(Q, 4, tol=1e-10, random_state=seed)
        assert res.converged and res.n_iter <= 10, (seed, res.n_iter)
        np.testing.assert_allclose(res.matrix.toarray(), Q, rtol=1e-7, atol=1e-12 * Q.max())
        iterations.append(res.n_iter)
    assert np.median(iterations) <= 3, iterations


def test_recovers_planted_topics_from_the_population_matrix():
    model = planted_model(200, 8, random_state=11)
    Q = population_cooccurrence(model.topic_word, model.topic_topic)
    # A million "documents" whose co-occurrence is exactly the population matrix.
    n = 1_000_000
    cooc = Cooccurrence(Q * n, Q.sum(axis=1) * n, np.full(200, 1000.0), n, 10 * n)
    # The rectifier and the recovery are under test, not the pair refinement that `auto` runs
    # on 10-token documents: its smoothed start leaves the planted topics ~1.4e-3 away
    # (tests/test_refine.py bounds that on its own).
    fit = AnchorModel(8, rectify_method="lowrank", anchor_min_df=0, rectify_tol=1e-10,
                      refine="none").fit(cooc)
    _, per_topic, _ = recovery_error(model.topic_word, fit.topic_word_)
    assert per_topic.max() < 1e-3


def test_agrees_with_alternating_projection(corpus):
    model, X = corpus
    C = cooccurrence(X).normalized()
    K = model.n_topics
    dense = rectify(C, K, tol=1e-6, dtype=np.float64, anderson=0, random_state=0)
    low = rectify_lowrank(C, K, rows=C.shape[0], tol=1e-6, anderson=0, random_state=0)
    M = low.matrix.toarray()
    # The two orders of the last two projections differ by the normalization shift only.
    assert np.linalg.norm(M - dense.matrix) / np.linalg.norm(dense.matrix) < 2e-2
    # Scanning every word, nothing is left negative.
    assert M.min() >= -1e-7 * M.max() and low.epsilon == 0.0
    assert M.sum() == pytest.approx(1.0, abs=1e-12)
    a = AnchorModel(K, anchor_min_df=0).fit(cooccurrence(X))
    b = AnchorModel(K, anchor_min_df=0, rectify_method="lowrank",
                    rectify_rows=X.shape[1]).fit(cooccurrence(X))
    assert sorted(a.anchors_) == sorted(b.anchors_)
    err = recovery_error(a.topic_word_, b.topic_word_)[0]
    assert err < 0.05


def test_unscanned_words_stay_within_epsilon(corpus):
    model, X = corpus
    res = rectify_lowrank(DocumentCooccurrence(X), model.n_topics, rows=60, random_state=0)
    M = res.matrix.toarray()
    assert M.min() >= -res.epsilon
    np.testing.assert_allclose(res.row_sums, M.sum(axis=1), rtol=1e-10, atol=1e-18)
    np.testing.assert_allclose(res.row_sqnorms, (M * M).sum(axis=1), rtol=1e-8, atol=1e-20)


def test_dense_and_sparse_corrections_give_the_same_result(corpus):
    model, X = corpus
    C = DocumentCooccurrence(X)
    results = []
    for share in (-1.0, 2.0):  # corrections held dense, then sparse, in every iteration
        with mock.patch.object(lowrank_corrections, "_DENSE_SHARE", share):
            results.append(rectify_lowrank(C, model.n_topics, rows=60, random_state=0))
    dense, sparse = results
    assert dense.matrix._E.dense and not sparse.matrix._E.dense
    assert dense.n_iter == sparse.n_iter
    a, b = dense.matrix.toarray(), sparse.matrix.toarray()
    # The loop scans in float32, the dense form with one GEMM and the sparse one a block of
    # columns at a time, whose sums may round differently in the last bit; the result's dense
    # block is formed in float32 too, its sparse entries in float64 (here 3e-9 of the
    # matrix's norm apart: float32's rounding of entries that are mostly far smaller).
    assert np.linalg.norm(a - b) <= 1e-7 * np.linalg.norm(b)
    np.testing.assert_allclose(dense.row_sqnorms, sparse.row_sqnorms, rtol=1e-6)


def test_a_float32_scan_keeps_its_block_in_float32_and_multiplies_as_float64(rng):
    # The rectifier's loop scans in float32: its dense block stays float32 (half the bytes,
    # float32 GEMMs) and its products and sums come back in float64, close to a float64 scan's.
    V, n = 300, 40
    Y = rng.standard_normal((V, 6))
    scanned = np.sort(rng.choice(V, n, replace=False))
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    wide = lowrank_corrections.Corrections.scan(Y, scanned, outside, dense=True)
    narrow = lowrank_corrections.Corrections.scan(Y.astype(np.float32), scanned, outside,
                                                  dense=True)
    assert wide.dense and narrow.dense  # about half of a random Y Yᵀ is negative
    assert wide.block.dtype == np.float64 and narrow.block.dtype == np.float32
    Z = rng.standard_normal((V, 5))
    got, want = narrow @ Z, wide @ Z
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    np.testing.assert_allclose(narrow.sums, wide.sums, rtol=1e-5)


@pytest.mark.parametrize("negative_share", [0.0, 0.05, 0.5])
def test_an_unhinted_scan_samples_the_form_and_finds_the_same_corrections(rng, negative_share):
    # Without a hint the scan samples columns to choose the form; the corrections are those
    # of either explicit form, and the form is the one the share calls for.
    V, n = 400, 300
    Y = np.abs(rng.standard_normal((V, 4)))
    flip = rng.random(V) < negative_share  # rows pointing the other way: negative products
    Y[flip] *= -1.0
    scanned = np.sort(rng.choice(V, n, replace=False))
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    got = lowrank_corrections.Corrections.scan(Y, scanned, outside)
    share = np.count_nonzero(Y @ Y[scanned].T < 0) / (V * n)
    assert got.dense == (share > lowrank_corrections._DENSE_SHARE)
    Z = rng.standard_normal((V, 3))
    for dense in (True, False):
        want = lowrank_corrections.Corrections.scan(Y, scanned, outside, dense=dense)
        assert want.dense == got.dense  # the form follows the share found, either way
        np.testing.assert_allclose(got @ Z, want @ Z, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.sums, want.sums, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.sqnorms(), want.sqnorms(), rtol=1e-12, atol=1e-12)
        idx = np.array([scanned[0], np.flatnonzero(outside)[0]])
        np.testing.assert_allclose(got.rows(idx), want.rows(idx), rtol=1e-12, atol=1e-12)


def test_a_float64_scan_finds_the_entries_of_the_float64_product(rng):
    # Found by a float32 GEMM and rechecked (negative_entries_rechecked): the same entries as
    # the float64 product's, to its rounding, in the same order (the scan's blocks).
    # A positive first direction: a few negative (rechecked), or many (found in float64 from
    # the first block with more than _RECHECK_SHARE candidates on).
    V, K = 300, 12
    scanned = rng.permutation(V)[:150]
    for first, few in ((20.0, True), (0.5, False)):
        Y = rng.standard_normal((V, K)) * 0.01
        Y[:, 0] = np.abs(Y[:, 0]) * first
        parts = lowrank_corrections._negative_parts(Y, scanned)
        assert len(parts) == -(-scanned.size // lowrank_corrections._SCAN_COLUMNS)
        share = sum(part[3].size for part in parts) / (V * scanned.size)
        assert (share < lowrank_corrections._RECHECK_SHARE) == few
        for start, i, p, values in parts:
            exact = Y @ Y[scanned[start : start + lowrank_corrections._SCAN_COLUMNS]].T
            rows, cols = np.nonzero(exact < 0)
            np.testing.assert_array_equal(i, rows)
            np.testing.assert_array_equal(p, cols)
            np.testing.assert_allclose(values, -exact[rows, cols], rtol=1e-12)
    # One too large for float32's products is scanned in float64 (scaled by a power of two:
    # the same products, scaled).
    big = lowrank_corrections._negative_parts(Y * 2.0**60, scanned)
    for (_, i, p, values), (_, i2, p2, v2) in zip(big, parts):
        np.testing.assert_array_equal(i, i2)
        np.testing.assert_array_equal(p, p2)
        np.testing.assert_allclose(v2 * 2.0**120, values, rtol=1e-12)


def test_sparse_corrections_multiply_from_their_entries_and_build_rows_on_demand(rng):
    # The loop only multiplies and sums: sparse corrections do it from their entries, and the
    # mirrored CSR is built (the entries dropped) only when rows are read. Either way the
    # matrix is E, formed densely here, and scaling leaves the caller's values alone.
    V, n = 200, 30
    Y = np.abs(rng.standard_normal((V, 4)))
    Y[rng.random(V) < 0.03] *= -1.0
    scanned = np.sort(rng.choice(V, n, replace=False))
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    i, p, values = lowrank_corrections._joined(
        lowrank_corrections._negative_parts(Y, scanned))
    E = np.zeros((V, V))
    E[i, scanned[p]] = values
    E[scanned[p[outside[i]]], i[outside[i]]] = values[outside[i]]
    kept = values.copy()
    got = lowrank_corrections.Corrections(i, p, values, scanned, outside)
    assert not got.dense and got._csr is None
    Z = rng.standard_normal((V, 3))
    np.testing.assert_allclose(got @ Z, E @ Z, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got @ Z[:, 0], E @ Z[:, 0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.sums, E.sum(axis=1), rtol=1e-12, atol=1e-15)
    got.scale_(2.0)
    np.testing.assert_array_equal(values, kept)
    before = got @ Z
    assert got._csr is None and got.nbytes > 0
    idx = np.array([scanned[0], np.flatnonzero(outside)[0]])
    np.testing.assert_allclose(got.rows(idx), 2.0 * E[idx], rtol=1e-12, atol=1e-15)
    assert got._csr is not None and got._parts is None
    np.testing.assert_array_equal(got @ Z, before)  # the CSR's product: the same numbers
    np.testing.assert_allclose(got.sqnorms(), 4.0 * np.sum(E * E, axis=1), rtol=1e-12)
    np.testing.assert_allclose(got.sums, 2.0 * E.sum(axis=1), rtol=1e-12, atol=1e-15)


def test_a_result_scan_forms_and_holds_a_dense_block_in_float32(rng):
    # The result's dense corrections are formed and stored in float32, in row parts: each
    # entry within float32's rounding of its K products of the float64 scan's, which decides
    # the same entries negative wherever they are not within that rounding of zero.
    V, n = 5000, 40  # more rows than one part of the scan (_SCAN_ROWS)
    Y = rng.standard_normal((V, 6))
    scanned = np.sort(rng.choice(V, n, replace=False))
    outside = np.ones(V, dtype=bool)
    outside[scanned] = False
    wide = lowrank_corrections.Corrections.scan(Y, scanned, outside, dense=True)
    held = lowrank_corrections.Corrections.scan(Y, scanned, outside, dense=True,
                                                dtype=np.float32)
    assert held.block.dtype == np.float32 and wide.block.dtype == np.float64
    rounding = 8 * np.finfo(np.float32).eps * (np.abs(Y) @ np.abs(Y[scanned]).T)
    assert np.all(np.abs(held.block - wide.block) <= rounding)
    clear = np.abs(Y @ Y[scanned].T) > rounding
    np.testing.assert_array_equal((held.block > 0)[clear], (wide.block > 0)[clear])
    Z = rng.standard_normal((V, 3))
    want = wide @ Z
    np.testing.assert_allclose(held @ Z, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    np.testing.assert_allclose(held.sums, wide.sums, rtol=1e-5)


def test_documents_and_dense_input_give_the_same_result(corpus):
    model, X = corpus
    a = rectify_lowrank(DocumentCooccurrence(X), model.n_topics, random_state=0)
    b = rectify_lowrank(cooccurrence(X).normalized(), model.n_topics, random_state=0)
    np.testing.assert_allclose(a.matrix.toarray(), b.matrix.toarray(), rtol=1e-6,
                               atol=1e-9 * b.matrix.toarray().max())


def test_the_result_does_not_depend_on_the_random_start(corpus):
    # The first eigensolve starts from random vectors; solved to the inner tolerance it
    # reaches the same subspace from every start (here within 1e-6), so a fit is the same for
    # every seed. Stopped at 1e-4 instead, the seeds gave results 1.5e-4 apart, and refined
    # fits that took another EM path per seed (benchmarks/README.md, "Session 28").
    model, X = corpus
    C = DocumentCooccurrence(X)
    results = [rectify_lowrank(C, model.n_topics, random_state=s).matrix.toarray()
               for s in range(3)]
    for other in results[1:]:
        assert np.linalg.norm(other - results[0]) <= 1e-5 * np.linalg.norm(results[0])


def test_warm_start_from_a_perturbed_matrix_converges_to_the_cold_result(corpus):
    model, X = corpus
    K = model.n_topics
    before = rectify_lowrank(DocumentCooccurrence(X[:2700]), K, tol=1e-8, random_state=0)
    C = DocumentCooccurrence(X)
    cold = rectify_lowrank(C, K, tol=1e-8, random_state=0)
    warm = rectify_lowrank(C, K, tol=1e-8, init_eigvecs=before.eigvecs, random_state=0)
    a, b = warm.matrix.toarray(), cold.matrix.toarray()
    # Anderson-accelerated AP settles on a point that depends a little on its path (plain AP
    # agrees to 1e-7 here after 150 iterations, at 7x the cost).
    assert np.linalg.norm(a - b) / np.linalg.norm(b) < 1e-3


def test_never_forms_a_vocabulary_square():
    V, K = 3000, 8
    model = planted_model(V, K, random_state=1)
    X, _ = sample_documents(model, 4000, 20, random_state=2)
    C = DocumentCooccurrence(X)
    square = V * V * 8
    # Compiling and loading the kernels allocates (numba's type system) once per process: not
    # what is measured.
    AnchorModel(K, rectify_method="lowrank", anchor_min_df=5).fit(DocumentCooccurrence(X[:500]))
    tracemalloc.start()
    try:
        # Without the pair refinement (auto runs it on these 20-token documents), which holds
        # the counts' non-zero pairs, 12 bytes each, and no V x V array either.
        fit = AnchorModel(K, rectify_method="lowrank", rectify_rows=200,
                          anchor_min_df=5, refine="none").fit(C)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fit.topic_word_.shape == (V, K)
    # A V x V float64 array would be 72 MB. The fit needs O(V (K + rows)) (the corrections,
    # V x 200, a scan block of V x 128, the eigensolver's basis and the Anderson history:
    # ~14 MB here): a quarter of one at most.
    assert peak < square / 4, f"peak {peak / 1e6:.1f} MB"


def test_default_rows_and_input_errors():
    assert default_rows(50_000, 100) == 2000
    assert default_rows(500, 100) == 500
    C = np.eye(4) / 4
    with pytest.raises(InputError, match="n_topics"):
        rectify_lowrank(C, 4)
    with pytest.raises(InputError, match="rows"):
        rectify_lowrank(C, 2, rows=0)
    with pytest.raises(InputError, match="square"):
        rectify_lowrank(np.ones((3, 4)), 2)
    with pytest.raises(InputError, match="NaN"):
        rectify_lowrank(np.full((4, 4), np.nan), 2)
    with pytest.raises(InputError, match="kl"):
        AnchorModel(2, rectify_method="lowrank", recover_method="kl", anchor_min_df=0).fit(
            cooccurrence(sp.csr_matrix(np.array([[1.0, 2, 1, 0], [0, 1, 2, 1], [2, 0, 1, 1]]))))
