"""anchorstream.stats.csr: the counts' upper triangles built from entries.

Needs the JIT (it counts the kernels' compiled signatures): not one of the ``test_kernels_*``
files that also run with ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels.store import store_entries_to_upper_csr
from anchorstream.stats.csr import upper_csr


def test_upper_csr_takes_any_index_type_through_one_compiled_kernel():
    # The store's reader passes int32 indices, scipy's COO int32 or int64: each new type
    # compiled the kernel again (2.3 CPU s on a first run, session 87). Same matrix from all.
    rng = np.random.default_rng(0)
    n = 30
    rows, cols = rng.integers(0, n, 200), rng.integers(0, n, 200)
    vals = rng.random(200)
    want = upper_csr(rows.astype(np.int32), cols.astype(np.int32), vals, n)
    compiled = len(store_entries_to_upper_csr.signatures)
    dense = sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).toarray()
    np.testing.assert_allclose(want.toarray(), np.triu(dense + dense.T - np.diag(np.diag(dense))))
    for kind in (np.int64, np.uint16, np.float64):
        got = upper_csr(rows.astype(kind), cols.astype(kind), vals, n)
        np.testing.assert_array_equal(got.indptr, want.indptr)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.data, want.data)
    assert len(store_entries_to_upper_csr.signatures) == compiled
