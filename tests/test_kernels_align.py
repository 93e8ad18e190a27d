"""The alignment kernel against its NumPy twin (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
import pytest

from anchorstream._kernels.align import overlap_matrix
from tests.naive_align import naive_overlap_matrix


@pytest.mark.parametrize("Va, Vb, Ka, Kb, T", [(1, 1, 1, 1, 1), (7, 9, 3, 5, 6), (33, 40, 4, 2, 30),
                                               (5, 5, 2, 3, 0)])
def test_overlap_matrix_matches_twin(rng, Va, Vb, Ka, Kb, T):
    A = rng.random((Va, Ka)) * (rng.random((Va, Ka)) < 0.6)
    B = rng.random((Vb, Kb)) * (rng.random((Vb, Kb)) < 0.6)
    ia = rng.choice(Va, T, replace=False).astype(np.int64)
    ib = rng.choice(Vb, T, replace=False).astype(np.int64)
    sa, sb = A.sum(axis=0) + 0.5, B.sum(axis=0) + 0.25
    got = overlap_matrix(A, ia, sa, B, ib, sb)
    assert got.shape == (Ka, Kb)
    np.testing.assert_allclose(got, naive_overlap_matrix(A, ia, sa, B, ib, sb),
                               rtol=1e-12, atol=1e-15)


def test_overlap_of_a_distribution_with_itself_is_one_and_of_disjoint_ones_zero():
    P = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.25], [0.0, 0.75]]) * 3.0
    rows = np.arange(4, dtype=np.int64)
    sums = np.array([3.0, 3.0])
    np.testing.assert_allclose(overlap_matrix(P, rows, sums, P, rows, sums), np.eye(2),
                               atol=1e-15)
