"""Slow twin of the sketch kernel (``anchorstream/_kernels/sketch.py``), in NumPy: the
documents' Gaussian directions formed whole, then one sparse product."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def naive_mix(x):
    """SplitMix64's finalizer on a uint64 array (wrapping arithmetic)."""
    z = np.asarray(x, dtype=np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def naive_directions(keys, mixed_even, mixed_odd):
    """``G[d, p]``: Box-Muller on the top 53 bits of ``mix(keys[d] ^ mixed[p])``."""
    keys = np.asarray(keys, dtype=np.uint64)[:, None]
    u1 = (naive_mix(keys ^ mixed_even[None, :]) >> np.uint64(11)).astype(np.float64) / 2.0**53
    u2 = (naive_mix(keys ^ mixed_odd[None, :]) >> np.uint64(11)).astype(np.float64) / 2.0**53
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def naive_project_documents(indptr, indices, data, keys, mixed_even, mixed_odd, n_words):
    """``Fᵀ G`` of shape (n_words, P), ``F`` the CSR weights."""
    n_docs = indptr.size - 1
    F = sp.csr_matrix((data, indices, indptr), shape=(n_docs, n_words))
    return np.asarray(F.T @ naive_directions(keys, mixed_even, mixed_odd))
