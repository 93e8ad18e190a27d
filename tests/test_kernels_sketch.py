"""The sketch kernel against its NumPy twin (tiny sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from anchorstream._kernels.sketch import _BLOCK, project_documents
from anchorstream.stats.wordpatterns import project_words, random_directions
from tests.naive_sketch import naive_directions, naive_mix, naive_project_documents


def _inputs(rng, n_docs, V, P, density=0.3):
    F = sp.random(n_docs, V, density=density, random_state=rng, format="csr")
    F.data[::3] = 0.0  # explicit zeros add nothing
    keys = naive_mix(rng.integers(0, 2**63, size=n_docs, dtype=np.uint64))
    counter = np.arange(P, dtype=np.uint64) * np.uint64(2)
    return F, keys, naive_mix(counter), naive_mix(counter + np.uint64(1))


# P around the kernel's block of directions: one short block, exactly one, one and a bit.
@pytest.mark.parametrize("n_docs, V, P", [(1, 1, 1), (7, 5, 3), (12, 9, _BLOCK),
                                          (9, 6, _BLOCK + 5), (0, 4, 2)])
def test_project_documents_matches_twin(rng, n_docs, V, P):
    F, keys, even, odd = _inputs(rng, n_docs, V, P)
    out = np.zeros((V, P))
    with np.errstate(over="ignore"):  # without the JIT the hash's products wrap in NumPy
        project_documents(F.indptr, F.indices, F.data, keys, even, odd, out)
    want = naive_project_documents(F.indptr, F.indices, F.data, keys, even, odd, V)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_project_documents_adds_to_what_out_holds(rng):
    F, keys, even, odd = _inputs(rng, 6, 4, 5)
    out = np.ones((4, 5))
    with np.errstate(over="ignore"):
        project_documents(F.indptr, F.indices, F.data, keys, even, odd, out)
    want = 1.0 + naive_project_documents(F.indptr, F.indices, F.data, keys, even, odd, 4)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_the_twin_draws_the_directions_of_random_directions():
    """The kernel draws exactly what wordpatterns.random_directions returns for a document, so
    a sketch built through the kernel equals Fᵀ G with G from the public function."""
    from anchorstream.stats import wordpatterns as wp

    ids = np.array([0, 5, 2**40 + 3], dtype=np.uint64)
    P = 7
    counter = np.arange(P, dtype=np.uint64) * np.uint64(2)
    with np.errstate(over="ignore"):
        got = naive_directions(wp._doc_keys(3, ids, wp._SALT_DIRECTIONS), naive_mix(counter),
                               naive_mix(counter + np.uint64(1)))
    np.testing.assert_array_equal(got, random_directions(ids, P, seed=3))


def test_project_words_is_the_product_with_the_documents_directions(rng):
    F = sp.random(40, 11, density=0.25, random_state=rng, format="csr")
    ids = rng.permutation(1000)[:40]
    got = project_words(F, ids, 70, seed=9)
    want = np.asarray(F.T @ random_directions(ids, 70, seed=9))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # A document's contribution does not depend on the batch it comes in.
    halves = project_words(F[:17], ids[:17], 70, seed=9) + project_words(F[17:], ids[17:], 70,
                                                                        seed=9)
    np.testing.assert_allclose(halves, got, rtol=1e-12, atol=1e-12)
