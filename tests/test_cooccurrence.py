"""The co-occurrence estimator: definition, library oracle, merge = batch, input validation."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.stats.cooccurrence as cooc_mod
from anchorstream.stats.cooccurrence import Cooccurrence, accumulate, cooccurrence, take_square
from anchorstream.errors import InputError
from anchorstream.synthetic import planted_model, sample_documents
from tests import naive_cooc as naive


def _counts(rng, n_docs, n_words, rate=0.8):
    """Random counts with some empty and one-token documents."""
    dense = rng.poisson(rate, size=(n_docs, n_words)).astype(np.float64)
    dense[rng.random(n_docs) < 0.1] = 0.0
    single = rng.random(n_docs) < 0.1
    dense[single] = 0.0
    dense[single, rng.integers(n_words, size=single.sum())] = 1.0
    return sp.csr_matrix(dense)


def _oracle(X):
    """``X̃ᵀX̃ − diag(Σ_d w_d h_d)`` with ``X̃ = diag(√w) X``: the library formulation."""
    X = sp.csr_matrix(X, dtype=np.float64)
    n = np.asarray(X.sum(axis=1)).ravel()
    w = np.where(n >= 2, 1.0 / np.maximum(n * (n - 1.0), 1.0), 0.0)
    Xt = sp.diags(np.sqrt(w)) @ X
    Q = (Xt.T @ Xt).toarray()
    Q -= np.diag(np.asarray((sp.diags(w) @ X).sum(axis=0)).ravel())
    counted = n >= 2
    Xc = X[counted]
    return (
        Q,
        np.asarray(Xc.sum(axis=0)).ravel(),
        np.asarray((Xc > 0).sum(axis=0)).ravel().astype(float),
        int(counted.sum()),
        int(n[counted].sum()),
    )


def _assert_same(a: Cooccurrence, b: Cooccurrence, rtol=1e-12):
    np.testing.assert_allclose(a.counts, b.counts, rtol=rtol, atol=0)
    np.testing.assert_allclose(a.unigram, b.unigram, rtol=rtol, atol=0)
    np.testing.assert_array_equal(a.doc_freq, b.doc_freq)
    assert a.num_docs == b.num_docs
    assert a.num_tokens == b.num_tokens
    assert a.length_cap == b.length_cap
    assert a.total_weight() == pytest.approx(b.total_weight(), rel=rtol)


def test_module_doctests():
    result = doctest.testmod(cooc_mod)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize(("n_docs", "n_words"), [(1, 1), (6, 3), (40, 12)])
def test_matches_slow_reference(rng, n_docs, n_words):
    X = _counts(rng, n_docs, n_words)
    got = cooccurrence(X)
    out = np.zeros((n_words, n_words))
    unigram, doc_freq, num_docs, num_tokens = naive.cooc_counts(
        X.indptr, X.indices, X.data, True, 1, out
    )
    np.testing.assert_allclose(got.counts, out, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(got.unigram, unigram)
    np.testing.assert_array_equal(got.doc_freq, doc_freq)
    assert (got.num_docs, got.num_tokens) == (num_docs, num_tokens)


@pytest.mark.parametrize("threshold", [0.0, np.inf])
@pytest.mark.parametrize("doc_length", [3, 40])
def test_matches_library_oracle_on_planted_documents(monkeypatch, doc_length, threshold):
    # The threshold forces the upper-triangle (0) or the whole-row (inf) kernel.
    monkeypatch.setattr(cooc_mod, "_TRIANGLE_MIN_PAIRS_PER_CELL", threshold)
    model = planted_model(30, 4, random_state=1)
    X, _ = sample_documents(model, 200, doc_length, random_state=2)
    got = cooccurrence(X)
    Q, unigram, doc_freq, num_docs, num_tokens = _oracle(X)
    np.testing.assert_allclose(got.counts, Q, rtol=1e-10, atol=1e-15)
    np.testing.assert_array_equal(got.unigram, unigram)
    np.testing.assert_array_equal(got.doc_freq, doc_freq)
    assert (got.num_docs, got.num_tokens) == (num_docs, num_tokens) == (200, 200 * doc_length)


def test_both_kernel_modes_give_identical_bits(rng):
    X = _counts(rng, 50, 9, rate=2.0)
    a, b = np.zeros((9, 9)), np.zeros((9, 9))
    cooc_mod._counts_into(X, a, full=True)
    cooc_mod._counts_into(X, b, full=False)
    np.testing.assert_array_equal(a, b)


def test_symmetric_nonnegative_and_sums_to_num_docs(rng):
    c = cooccurrence(_counts(rng, 60, 15, rate=1.5))
    np.testing.assert_array_equal(c.counts, c.counts.T)
    assert (c.counts >= 0).all()
    assert c.counts.sum() == pytest.approx(c.num_docs, rel=1e-12)
    assert c.normalized().sum() == pytest.approx(1.0, rel=1e-12)
    assert c.unigram.sum() == c.num_tokens
    assert c.n_words == 15


def test_short_documents_are_ignored(rng):
    X = _counts(rng, 20, 6)
    short = sp.csr_matrix(np.array([[0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]]))
    _assert_same(cooccurrence(sp.vstack([short, X, short])), cooccurrence(X), rtol=0)
    only_short = cooccurrence(short)
    assert only_short.num_docs == 0 and only_short.num_tokens == 0
    assert not only_short.counts.any() and not only_short.unigram.any()
    assert not only_short.doc_freq.any()


def test_single_word_twice_is_a_pair():
    c = cooccurrence(sp.csr_matrix([[0.0, 2.0]]))
    np.testing.assert_array_equal(c.counts, [[0.0, 0.0], [0.0, 1.0]])
    assert (c.num_docs, c.num_tokens) == (1, 2)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_docs=st.integers(0, 30),
    n_words=st.integers(1, 8),
    n_cuts=st.integers(0, 6),
    length_cap=st.sampled_from([2, 3, 4.5, None]),
    data=st.data(),
)
def test_any_batching_in_any_order_equals_batch(seed, n_docs, n_words, n_cuts, length_cap,
                                                data):
    rng = np.random.default_rng(seed)
    X = _counts(rng, n_docs, n_words, rate=float(rng.uniform(0.2, 3.0)))
    cuts = sorted(data.draw(st.lists(st.integers(0, n_docs), max_size=n_cuts)))
    bounds = [0, *cuts, n_docs]
    batches = [X[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    order = data.draw(st.permutations(range(len(batches))))
    whole = cooccurrence(X, length_cap=length_cap)

    merged = Cooccurrence.zeros(n_words, length_cap)
    streamed = Cooccurrence.zeros(n_words, length_cap)
    for k in order:
        merged = merged.merge(cooccurrence(batches[k], length_cap=length_cap))
        streamed = accumulate(streamed, batches[k])
    _assert_same(merged, whole)
    _assert_same(streamed, whole)
    if length_cap == 2:
        _assert_same(sum(cooccurrence(batches[k]) for k in order), whole)


@pytest.mark.parametrize("length_cap", [2, 3, 7.5, 30, None])
def test_length_cap_weighs_pairs_up_to_a_document_of_that_length(rng, length_cap):
    X = _counts(rng, 60, 9, rate=0.3)
    X = sp.vstack([X, _counts(rng, 20, 9, rate=4.0)]).tocsr()  # short and long documents
    c = cooccurrence(X, length_cap=length_cap)
    np.testing.assert_allclose(c.normalized(), naive.weighted_cooccurrence(X, length_cap), rtol=1e-12)
    assert c.normalized().sum() == pytest.approx(1.0, rel=1e-12)
    assert c.total_weight() == pytest.approx(c.counts.sum(), rel=1e-12)
    # The store keeps no total for it: the sum of the counts stands in.
    bare = Cooccurrence(c.counts, c.unigram, c.doc_freq, c.num_docs, c.num_tokens, length_cap)
    np.testing.assert_allclose(bare.normalized(), c.normalized(), rtol=1e-12)
    # The marginals do not depend on the weighting.
    base = cooccurrence(X)
    np.testing.assert_array_equal(c.unigram, base.unigram)
    assert (c.num_docs, c.num_tokens) == (base.num_docs, base.num_tokens)


def test_a_cap_above_every_document_is_the_pair_weighting_and_2_the_estimator(rng):
    X = _counts(rng, 40, 8, rate=0.6)
    longest = int(X.sum(axis=1).max())
    np.testing.assert_allclose(cooccurrence(X, length_cap=longest + 1).normalized(),
                               cooccurrence(X, length_cap=None).normalized(), rtol=1e-12)
    np.testing.assert_array_equal(cooccurrence(X, length_cap=2.0).counts,
                                  cooccurrence(X).counts)


def test_differently_weighted_states_do_not_merge(rng):
    X = _counts(rng, 10, 4)
    with pytest.raises(InputError, match="length_cap 2 and 20"):
        cooccurrence(X).merge(cooccurrence(X, length_cap=20))
    for bad in (1.5, 0, float("nan"), float("inf"), "20", True):
        with pytest.raises(InputError, match="length_cap"):
            cooccurrence(X, length_cap=bad)


def test_merge_of_two_halves_equals_vstack(rng):
    Xa, Xb = _counts(rng, 25, 10), _counts(rng, 17, 10)
    _assert_same(cooccurrence(Xa).merge(cooccurrence(Xb)), cooccurrence(sp.vstack([Xa, Xb])))
    _assert_same(cooccurrence(Xa) + cooccurrence(Xb), cooccurrence(sp.vstack([Xb, Xa])))


def test_merge_and_accumulate_leave_inputs_unchanged(rng):
    a, b = cooccurrence(_counts(rng, 10, 4)), cooccurrence(_counts(rng, 10, 4))
    before = [x.copy() for x in (a.counts, a.unigram, a.doc_freq)]
    a.merge(b)
    accumulate(a, _counts(rng, 10, 4, rate=3.0))
    for x, y in zip(before, (a.counts, a.unigram, a.doc_freq)):
        np.testing.assert_array_equal(x, y)


def test_zeros_is_the_identity(rng):
    c = cooccurrence(_counts(rng, 10, 5))
    _assert_same(Cooccurrence.zeros(5) + c, c, rtol=0)
    z = Cooccurrence.zeros(0)
    assert z.n_words == 0 and z.counts.shape == (0, 0)


def test_merge_rejects_mismatch():
    with pytest.raises(InputError, match="3 and 4 words"):
        Cooccurrence.zeros(3).merge(Cooccurrence.zeros(4))
    with pytest.raises(InputError, match="Cooccurrence"):
        Cooccurrence.zeros(3).merge(np.zeros((3, 3)))
    with pytest.raises(TypeError):
        Cooccurrence.zeros(3) + 1
    with pytest.raises(InputError, match="n_words"):
        Cooccurrence.zeros(-1)


def test_constructor_checks_shapes():
    with pytest.raises(InputError, match="shape"):
        Cooccurrence(np.zeros((3, 2)), np.zeros(3), np.zeros(3), 0, 0)
    with pytest.raises(InputError, match="shape"):
        Cooccurrence(np.zeros((3, 3)), np.zeros(3), np.zeros(2), 0, 0)
    with pytest.raises(InputError, match="num_docs"):
        Cooccurrence(np.zeros((3, 3)), np.zeros(3), np.zeros(3), np.nan, 0)
    with pytest.raises(InputError, match="num_tokens"):
        Cooccurrence(np.zeros((3, 3)), np.zeros(3), np.zeros(3), 0, -1)
    with pytest.raises(InputError, match="num_tokens"):
        Cooccurrence(np.zeros((3, 3)), np.zeros(3), np.zeros(3), 0, "7")
    c = Cooccurrence(np.zeros((3, 3)), np.zeros(3), np.zeros(3), np.int64(2), 7.0)
    assert (c.num_docs, c.num_tokens) == (2, 7) and type(c.num_tokens) is int


def test_decayed_totals_stay_fractional_through_merge():
    # A store with forgetting keeps decayed sums; merging must neither reject nor round them.
    a = Cooccurrence(np.eye(2) * 0.75, np.ones(2), np.ones(2), 0.75, 2.25)
    b = Cooccurrence(np.eye(2) * 0.5, np.ones(2), np.ones(2), 0.5, 1.5)
    c = a + b
    assert (c.num_docs, c.num_tokens) == (1.25, 3.75)
    np.testing.assert_allclose(c.normalized(), np.eye(2))


def test_no_words_and_no_documents():
    c = cooccurrence(sp.csr_matrix((3, 0)))
    assert c.counts.shape == (0, 0) and c.num_docs == 0
    c = cooccurrence(sp.csr_matrix((0, 4)))
    assert c.counts.shape == (4, 4) and not c.counts.any() and c.num_docs == 0


def test_normalized_of_empty_state_raises():
    with pytest.raises(InputError, match="empty"):
        Cooccurrence.zeros(3).normalized()


def test_accumulate_checks_its_arguments(rng):
    with pytest.raises(InputError, match="4 columns"):
        accumulate(Cooccurrence.zeros(3), _counts(rng, 5, 4))
    with pytest.raises(InputError, match="state"):
        accumulate(np.zeros((3, 3)), _counts(rng, 5, 3))


@pytest.mark.parametrize(
    "convert",
    [
        lambda X: X.toarray(),
        lambda X: X.toarray().astype(np.int64),
        lambda X: X.toarray().tolist(),
        lambda X: X.tocsc(),
        lambda X: X.tocoo(),
        lambda X: sp.csr_array(X),
        lambda X: X.astype(np.int32),
        lambda X: X.astype(np.float32),
    ],
)
def test_other_formats_and_dtypes_are_converted(rng, convert):
    X = _counts(rng, 15, 6)
    _assert_same(cooccurrence(convert(X)), cooccurrence(X), rtol=0)


def test_bool_counts_are_occurrences():
    X = np.array([[True, True, False], [False, True, True]])
    _assert_same(cooccurrence(X), cooccurrence(X.astype(float)), rtol=0)


def test_non_canonical_csr_is_summed_first():
    # Duplicate (row, column) entries mean their sum; unsorted indices are legal CSR.
    dup = sp.csr_matrix(
        (np.array([1.0, 2.0, 1.0]), np.array([1, 0, 1]), np.array([0, 3])), shape=(1, 2)
    )
    assert not dup.has_canonical_format
    _assert_same(cooccurrence(dup), cooccurrence(np.array([[2.0, 2.0]])), rtol=0)
    assert not dup.has_canonical_format  # the caller's matrix is not modified


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.array([[1.0, -1.0]]), "non-negative"),
        (np.array([[1.0, np.nan]]), "NaN"),
        (np.array([[1.0, np.inf]]), "NaN or infinity"),
        (np.array([[1.0, 0.5]]), "whole numbers"),
        (np.array([[1 + 1j, 0]]), "real numbers"),
        (np.array([["a", "b"]]), "numeric"),
        (np.array([1.0, 2.0]), "2-D"),
        ("counts", "scipy sparse"),
        (None, "scipy sparse"),
    ],
)
def test_bad_input_raises(X, match):
    with pytest.raises(InputError, match=match):
        cooccurrence(X)


def test_complex_sparse_raises():
    with pytest.raises(InputError, match="real numbers"):
        cooccurrence(sp.csr_matrix(np.array([[1 + 0j, 2 + 0j]])))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(-1, n - 1), max_size=15),
    st.sampled_from([np.float64, np.float32]))))
def test_take_square_is_ix_indexing_with_zeros_for_missing(case):
    n, index, dtype = case
    M = np.arange(n * n, dtype=dtype).reshape(n, n) + 1
    got = take_square(M, index)
    idx = np.asarray(index, dtype=np.int64)
    want = np.zeros((idx.size, idx.size), dtype=dtype)
    ok = np.flatnonzero(idx >= 0)
    want[np.ix_(ok, ok)] = M[np.ix_(idx[ok], idx[ok])]
    assert got.dtype == M.dtype
    np.testing.assert_array_equal(got, want)


def test_take_square_spans_several_row_blocks_and_rejects_bad_input(rng):
    M = rng.standard_normal((1000, 1000))  # rows of 8 kB: blocks of 524 rows at 4 MiB
    idx = rng.permutation(1000)[:900]
    np.testing.assert_array_equal(take_square(M, idx), M[np.ix_(idx, idx)])
    out = np.empty(1000 * 1000)
    got = take_square(M, idx, out=out)
    assert np.shares_memory(got, out)
    np.testing.assert_array_equal(got, M[np.ix_(idx, idx)])
    assert not np.shares_memory(take_square(M, idx, out=M), M)  # never into its own input
    with pytest.raises(InputError, match="square"):
        take_square(M[:3], [0])
    with pytest.raises(InputError, match=r"\[-1, 1000\)"):
        take_square(M, [1000])


def test_cooccurrence_into_given_memory(rng):
    X = sp.random(40, 12, density=0.4, random_state=5, format="csr")
    X.data = np.ceil(X.data * 3)
    want = cooccurrence(X)
    out = np.full((12, 12), 7.0)  # stale contents are overwritten
    got = cooccurrence(X, out=out)
    assert got.counts is out
    np.testing.assert_array_equal(out, want.counts)
    for bad in (np.zeros((12, 12), np.float32), np.zeros((11, 11)), np.zeros((12, 24))[:, ::2]):
        with pytest.raises(InputError, match="out must be"):
            cooccurrence(X, out=bad)
