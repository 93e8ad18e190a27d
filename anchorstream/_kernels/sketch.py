"""numba kernel of the random-projection sketch (``anchorstream/stats/wordpatterns.py``,
``anchorstream/stats/docparts.py``).

Arrays in, arrays out; the wrappers check shapes and dtypes. The slow twin (the Gaussian
directions as :func:`~anchorstream.stats.wordpatterns.random_directions` draws them, then a
sparse product) lives in ``tests/naive_sketch.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: SplitMix64's finalizer constants, here and in ``wordpatterns._mix``, which hashes arrays
#: with them: the kernel and the public ``random_directions`` must draw the same directions.
SPLITMIX_M1 = np.uint64(0xBF58476D1CE4E5B9)
SPLITMIX_M2 = np.uint64(0x94D049BB133111EB)
SPLITMIX_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53

#: Directions handled at once: the accumulator's columns of one block (V x 64 float64, 2.5 MB
#: at V = 5000) stay in cache while every document adds to them.
_BLOCK = 64


@numba.njit(cache=True, inline="always")
def _mix(x):
    z = x + SPLITMIX_GOLDEN
    z = (z ^ (z >> _S30)) * SPLITMIX_M1
    z = (z ^ (z >> _S27)) * SPLITMIX_M2
    return z ^ (z >> _S31)


@numba.njit(cache=True, fastmath={"contract"})
def project_documents(indptr, indices, data, keys, mixed_even, mixed_odd, out):
    """``out[w, p] += Σ_d data[d, w] · g_d[p]``, ``g_d`` document ``d``'s Gaussian direction
    coordinates, drawn here instead of stored.

    ``g_d[p]`` is Box-Muller on two uniforms, each the top 53 bits of
    ``mix(keys[d] ^ mixed[p])`` (``mixed_even[p] = mix(2p)``, ``mixed_odd[p] = mix(2p + 1)``):
    exactly the draw of :func:`~anchorstream.stats.wordpatterns.random_directions`, so a
    document's coordinates depend only on the seed and its id. Drawing them inside the product
    saves the ``n_docs × P`` array of directions (1 GB at 50,000 documents and P = 2500) and
    the sparse product's pass over it; the directions are taken a block of :data:`_BLOCK` at a
    time, summed in a contiguous buffer that stays in cache while every document adds to it.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of the (n_docs, n_words) weights
        Zero entries add nothing.
    keys : uint64 ndarray of shape (n_docs,)
        Per-document keys (``wordpatterns._doc_keys``).
    mixed_even, mixed_odd : uint64 ndarray of shape (P,)
    out : float64 ndarray of shape (n_words, P), C-contiguous
        Accumulated into.
    """
    n_docs = indptr.size - 1
    V, P = out.shape
    g = np.empty(_BLOCK)
    # The block's sums in a contiguous V x _BLOCK buffer: added in place to out's columns, a
    # document's rows would lie P * 8 bytes apart, one page each (3x slower at P = 2500).
    acc = np.empty((V, _BLOCK))
    two_pi = 2.0 * math.pi
    for p0 in range(0, P, _BLOCK):
        p1 = min(p0 + _BLOCK, P)
        acc[:] = 0.0
        g[:] = 0.0  # a last, shorter block adds zeros past its end: the loops keep one length
        for d in range(n_docs):
            start, end = indptr[d], indptr[d + 1]
            if start == end:
                continue
            key = keys[d]
            for p in range(p0, p1):
                u1 = np.float64(_mix(key ^ mixed_even[p]) >> _S11) * _TO_UNIT
                u2 = np.float64(_mix(key ^ mixed_odd[p]) >> _S11) * _TO_UNIT
                # 1 - u1 lies in (0, 1]: the logarithm is finite.
                g[p - p0] = math.sqrt(-2.0 * math.log1p(-u1)) * math.cos(two_pi * u2)
            for t in range(start, end):
                f = data[t]
                if f == 0.0:
                    continue
                w = indices[t]
                for q in range(_BLOCK):  # a constant length: one unrolled SIMD loop
                    acc[w, q] += f * g[q]
        for w in range(V):
            for q in range(p1 - p0):
                out[w, p0 + q] += acc[w, q]
