"""The in-memory delta: streaming equals batch, evictions, weights, budget; Forgetting maths."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.stats.accumulator import Accumulator, Forgetting
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.errors import InputError
from tests.naive_store import naive_cooccurrence

V = 7


def _csr(docs):
    """Token-slot lists → (indptr, slots)."""
    indptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
    slots = np.asarray([s for d in docs for s in d], dtype=np.int32)
    return indptr, slots


def _naive(docs, weights=None):
    vocab = list(range(V))
    return naive_cooccurrence(docs, vocab, weights)


docs_strategy = st.lists(st.lists(st.integers(0, V - 1), max_size=9), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(docs=docs_strategy, cuts=st.lists(st.integers(0, 30), max_size=5),
       budget=st.sampled_from([200, 2000, 256 * 2**20]),
       hot_rows=st.sampled_from([None, 0, 3]))
def test_any_split_equals_batch(docs, cuts, budget, hot_rows):
    acc = Accumulator(V, budget_bytes=budget, hot_rows=hot_rows)
    bounds = sorted({0, len(docs), *[c for c in cuts if c <= len(docs)]})
    for a, b in zip(bounds[:-1], bounds[1:]):
        acc.add(*_csr(docs[a:b]))
    d = acc.delta()
    Q, uni, df, n_docs, n_tok = _naive(docs)
    np.testing.assert_allclose(d.dense(), Q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(d.unigram, uni, rtol=1e-12)
    np.testing.assert_allclose(d.doc_freq, df, rtol=1e-12)
    assert d.num_docs == n_docs and d.num_tokens == n_tok
    assert np.all(d.rows <= d.cols)
    # and the project's batch estimator agrees too
    X = sp.csr_matrix(
        (np.ones(sum(map(len, docs))), _csr(docs)[1], _csr(docs)[0]), shape=(len(docs), V)
    )
    X.sum_duplicates()
    ref = cooccurrence(X)
    np.testing.assert_allclose(d.dense(), ref.counts, rtol=1e-12, atol=1e-15)
    assert d.num_docs == ref.num_docs and d.num_tokens == ref.num_tokens


@settings(max_examples=30, deadline=None)
@given(docs=docs_strategy, at=st.integers(0, 30), slot=st.integers(0, V - 1),
       budget=st.sampled_from([200, 256 * 2**20]), hot_rows=st.sampled_from([None, 0, 3]))
def test_evict_voids_earlier_contributions_only(docs, at, slot, budget, hot_rows):
    at = min(at, len(docs))
    acc = Accumulator(V, budget_bytes=budget, hot_rows=hot_rows)
    acc.add(*_csr(docs[:at]))
    acc.evict(slot)
    acc.add(*_csr(docs[at:]))
    d = acc.delta()
    Q1, u1, f1, n1, t1 = _naive(docs[:at])
    Q2, u2, f2, n2, t2 = _naive(docs[at:])
    Q1[slot, :] = Q1[:, slot] = 0
    u1[slot] = f1[slot] = 0
    np.testing.assert_allclose(d.dense(), Q1 + Q2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(d.unigram, u1 + u2, rtol=1e-12)
    np.testing.assert_allclose(d.doc_freq, f1 + f2, rtol=1e-12)
    # document lengths are unchanged by the eviction
    assert d.num_docs == n1 + n2 and d.num_tokens == t1 + t2


@settings(max_examples=30, deadline=None)
@given(docs=docs_strategy,
       events=st.lists(st.tuples(st.integers(0, 30), st.integers(0, V - 1)), max_size=5),
       budget=st.sampled_from([200, 256 * 2**20]), split=st.integers(0, 30))
def test_batched_evictions_equal_evicting_between_adds(docs, events, budget, split):
    events = sorted((min(d, len(docs)), s) for d, s in events)
    split = min(split, len(docs))
    batched = Accumulator(V, budget_bytes=budget)
    batched.add(*_csr(docs[:split]))
    batched.add(*_csr(docs[split:]), 1.0, [(d - split, s) for d, s in events if d >= split])
    # the same events replayed one by one (those before the split land in the first batch
    # only through evict(), which is equivalent at a batch boundary)
    stepwise = Accumulator(V, budget_bytes=budget)
    stepwise.add(*_csr(docs[:split]))
    pos = split
    for d, s in [(d, s) for d, s in events if d >= split]:
        stepwise.add(*_csr(docs[pos:d]))
        stepwise.evict(s)
        pos = d
    stepwise.add(*_csr(docs[pos:]))
    a, b = batched.delta(), stepwise.delta()
    np.testing.assert_allclose(a.dense(), b.dense(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.unigram, b.unigram, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.doc_freq, b.doc_freq, rtol=1e-12, atol=1e-15)
    assert a.num_docs == b.num_docs
    with pytest.raises(InputError, match="evictions"):
        batched.add(*_csr(docs[:1]), 1.0, [(5, 0), (1, 0)])


def test_weights_scale_each_document(rng):
    docs = [list(rng.integers(0, V, size=rng.integers(0, 8))) for _ in range(40)]
    w = rng.uniform(0.1, 3.0, size=len(docs))
    acc = Accumulator(V)
    acc.add(*_csr(docs[:15]), w[:15])
    acc.add(*_csr(docs[15:]), w[15:])
    d = acc.delta()
    Q, uni, df, n_docs, n_tok = _naive(docs, w)
    np.testing.assert_allclose(d.dense(), Q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose([d.num_docs, d.num_tokens], [n_docs, n_tok], rtol=1e-12)
    np.testing.assert_allclose(d.doc_freq, df, rtol=1e-12)


def test_delta_keeps_state_and_clear_empties():
    acc = Accumulator(3)
    acc.add(np.array([0, 2]), np.array([0, 1], dtype=np.int32))
    first = acc.delta()
    second = acc.delta()
    np.testing.assert_array_equal(first.dense(), second.dense())
    assert not acc.is_empty
    acc.clear()
    assert acc.is_empty and acc.delta().nnz == 0 and acc.delta().num_docs == 0


def test_budget_signals_full():
    acc = Accumulator(50, budget_bytes=4096)
    assert not acc.is_full
    rng = np.random.default_rng(0)
    docs = [list(rng.integers(0, 50, size=20)) for _ in range(30)]
    acc.add(*_csr(docs))
    assert acc.is_full
    assert acc.nbytes > 0


def test_short_documents_count_nothing():
    acc = Accumulator(4)
    acc.add(*_csr([[1], [], [2]]))
    d = acc.delta()
    assert d.nnz == 0 and d.num_docs == 0 and d.unigram.sum() == 0 and acc.n_added == 3


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_slots": 0},
        {"n_slots": 3, "budget_bytes": 0},
        {"n_slots": True},
        {"n_slots": 3, "hot_rows": -1},
    ],
)
def test_bad_constructor_arguments(kwargs):
    with pytest.raises(InputError):
        Accumulator(**kwargs)


def test_bad_add_arguments():
    acc = Accumulator(3)
    with pytest.raises(InputError, match="lie in"):
        acc.add(np.array([0, 1]), np.array([3], dtype=np.int32))
    with pytest.raises(InputError, match="indptr"):
        acc.add(np.array([0, 2]), np.array([1], dtype=np.int32))
    with pytest.raises(InputError, match="weights"):
        acc.add(np.array([0, 1]), np.array([1], dtype=np.int32), np.array([-1.0]))
    with pytest.raises(InputError):
        acc.evict(5)


# ---------------------------------------------------------------------------- Forgetting


def test_forgetting_weights_are_exact_powers_of_two():
    f = Forgetting(half_life=5.0)
    assert f.weight(15.0, 5.0) == 4.0
    assert f.readout(15.0, 5.0) == 0.25
    # A document at t read out at T has weight 2^(-(T-t)/h) whatever t_ref is.
    for t_ref in (0.0, 3.0, 100.0):
        assert f.weight(7.0, t_ref) * f.readout(12.0, t_ref) == pytest.approx(0.5, rel=1e-15)
    assert Forgetting().weight(1e9, 0.0) == 1.0 and Forgetting().readout(1e9, 0) == 1.0


def test_forgetting_windows():
    f = Forgetting(window=10, n_windows=3)
    assert [f.window_of(t) for t in (0, 9, 10, 29.5)] == [0, 0, 1, 2]
    assert f.ring == 3 and Forgetting().ring == 1 and Forgetting().window_of(123) == 0
    assert Forgetting.from_dict(f.to_dict()) == f


@pytest.mark.parametrize(
    "kwargs",
    [
        {"half_life": 0},
        {"half_life": -1.0},
        {"half_life": float("inf")},
        {"window": 0},
        {"n_windows": 3},
        {"window": 5, "n_windows": 0},
        {"unit": "hours"},
        {"renormalize_above": 1.0},
        {"half_life": True},
    ],
)
def test_forgetting_rejects_bad_settings(kwargs):
    with pytest.raises(InputError):
        Forgetting(**kwargs)
