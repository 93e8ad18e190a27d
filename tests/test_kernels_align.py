"""The alignment kernel against its NumPy twin (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
import pytest

from anchorstream._kernels.align import overlap_matrix
from tests.naive_align import naive_overlap_matrix


@pytest.mark.parametrize("Ka, Kb, S", [(1, 1, 1), (3, 5, 7), (4, 2, 33), (2, 3, 0)])
def test_overlap_matrix_matches_twin(rng, Ka, Kb, S):
    At = rng.random((Ka, S)) * (rng.random((Ka, S)) < 0.6)
    Bt = rng.random((Kb, S)) * (rng.random((Kb, S)) < 0.6)
    got = overlap_matrix(At, Bt)
    assert got.shape == (Ka, Kb)
    np.testing.assert_allclose(got, naive_overlap_matrix(At, Bt), rtol=1e-12, atol=1e-15)


def test_overlap_of_a_distribution_with_itself_is_one_and_of_disjoint_ones_zero():
    P = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.25, 0.75]])
    np.testing.assert_allclose(overlap_matrix(P, P), np.eye(2), atol=1e-15)
