"""numba kernel of topic alignment (``anchorstream/model/align.py``).

Arrays in, arrays out; the wrapper (``align.topic_similarity``) checks shapes and values. The
slow twin (NumPy) lives in ``tests/naive_align.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, fastmath={"reassoc", "contract", "nnan", "ninf", "nsz"})
def overlap_matrix(At, Bt):
    """``out[k, l] = Σ_s min(At[k, s], Bt[l, s])``: the overlap ``1 − TV`` of every pair of
    distributions, one per row of ``At`` (Ka × S) and of ``Bt`` (Kb × S), C-contiguous float64.

    One pass over each pair of rows, without NumPy's ``(S, Kb)`` temporary per row of ``At``:
    a warm refresh's alignment (K = 50, S = 5000) took 23 ms that way, against ~4 ms here.
    ``nnan``/``ninf``/``nsz`` let ``min`` and the sum run in SIMD lanes: the wrapper passes
    finite, non-negative values only, where they change nothing but the order of the sum.
    """
    Ka, S = At.shape
    Kb = Bt.shape[0]
    out = np.empty((Ka, Kb))
    for k in range(Ka):
        a = At[k]
        for l in range(Kb):
            b = Bt[l]
            acc = 0.0
            for s in range(S):
                acc += min(a[s], b[s])
            out[k, l] = acc
    return out
