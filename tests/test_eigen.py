"""The rectifier's linear algebra helpers (:mod:`anchorstream.model.eigen`) not covered by the
rectification's own tests: the block Gram–Schmidt the anchor search starts from."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anchorstream.model.eigen import residual_basis


def _row_by_row(B, Q):
    """CGS2 a row at a time, as the anchor search's loop does: (basis, r2)."""
    basis, r2 = Q.copy(), []
    for x in B:
        for _ in range(2):
            x = x - basis @ (basis.T @ x)
        r2.append(float(x @ x))
        basis = np.hstack([basis, (x / np.sqrt(r2[-1]))[:, None]])
    return basis[:, Q.shape[1]:], np.asarray(r2)


@settings(max_examples=40, deadline=None)
@given(d=st.integers(20, 120), k=st.integers(0, 8), m=st.integers(1, 12),
       seed=st.integers(0, 2**31 - 1))
def test_the_block_is_the_row_by_row_basis(d, k, m, seed):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((d, k)))[0] if k else np.zeros((d, 0))
    # Rows of different scales, part of each in span(Q): what a search's rows look like.
    B = rng.standard_normal((m, d)) * rng.uniform(0.01, 10.0, (m, 1))
    B += rng.standard_normal((m, k)) @ Q.T if k else 0.0
    got = residual_basis(B, Q, 1e-13 * float(np.max(np.sum(B * B, axis=1))))
    assert got is not None  # independent rows (m + k <= d): the block applies
    want, want_r2 = _row_by_row(B, Q)
    np.testing.assert_allclose(got[1], want_r2, rtol=1e-7)
    np.testing.assert_allclose(got[0], want, atol=1e-9)
    np.testing.assert_allclose(got[0].T @ got[0], np.eye(m), atol=1e-12)
    if k:
        assert np.abs(Q.T @ got[0]).max() < 1e-12


@settings(max_examples=30, deadline=None)
@given(d=st.integers(20, 80), m=st.integers(2, 10), seed=st.integers(0, 2**31 - 1),
       eps=st.sampled_from([0.0, 1e-12, 1e-6]))
@example(d=63, m=2, seed=13331, eps=1e-6)
def test_a_row_in_the_span_before_it_is_left_to_the_caller(d, m, seed, eps):
    # Row j is a combination of the rows before it plus eps of its own norm off their span:
    # nearer dependence than the block's 1e-8 (relative to the row), so left to the caller.
    # (The perturbation was eps absolute: where the combination's coefficients were small,
    # d = 63, m = 2, seed 13331, the row was 1e-4 of its norm off the span, not near it.)
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((m, d))
    j = int(rng.integers(1, m))
    row = rng.standard_normal(j) @ B[:j]
    B[j] = row + eps * np.linalg.norm(row) * rng.standard_normal(d) / np.sqrt(d)
    assert residual_basis(B, np.zeros((d, 0)), 0.0) is None


def test_a_row_below_the_floor_is_left_to_the_caller():
    B = np.eye(3, 10) * np.array([[1.0], [1.0], [1e-4]])
    assert residual_basis(B, np.zeros((10, 0)), 1e-6) is None
    assert residual_basis(B, np.zeros((10, 0)), 1e-9) is not None
