"""``anchorstream/_buffers.py``: memory a caller holds."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from anchorstream._buffers import held_bytes


def test_held_bytes_counts_shared_memory_once():
    a = np.zeros(1000)
    m = sp.csr_matrix(np.eye(50))
    dense, sparse = SimpleNamespace(counts=a.reshape(10, 100)), SimpleNamespace(upper=m)
    csr = m.data.nbytes + m.indices.nbytes + m.indptr.nbytes
    assert held_bytes() == held_bytes(None) == 0
    assert held_bytes(a, a[:10], a[::2], dense) == 8000
    assert held_bytes(sparse, m, a) == csr + 8000
    assert held_bytes(np.zeros(10), np.zeros(10)) == 160
