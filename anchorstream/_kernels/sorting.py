"""numba sorts written as plain loops, for the kernels that sort inside their own loops.

numba compiles ``np.sort``, ``np.argsort`` and indexing by an index array into every kernel
that uses them, at a cost paid on each new machine's first run (an empty cache): a kernel of
the store's ingest compiled in 7.7 CPU s with ``np.argsort`` and two gathers by its result,
in 2.6 without them (session 87, this project's AMD EPYC). These loops compile in a fraction
of that and give the same arrays: :func:`sort_by_key` is stable, as ``np.argsort(kind=
"mergesort")`` is, so equal keys keep their order (and any sum over them its rounding), and
:func:`sort_floats` puts values where ``ndarray.sort`` does (NaN aside). The slow twins are in
``tests/naive_sorting.py``.
"""

from __future__ import annotations

import numba
import numpy as np

#: Runs this long are sorted by insertion before :func:`sort_by_key` merges them, and
#: :func:`sort_floats` sorts its parts shorter than this by insertion.
_RUN = 16


@numba.njit(cache=True)
def sort_by_key(keys, values, lo, hi, key_buf, value_buf):
    """``keys[lo:hi]`` in increasing order, ``values[lo:hi]`` moved with them, in place; equal
    keys keep their order (stable). ``key_buf`` and ``value_buf``: scratch of at least
    ``hi - lo`` entries, of the arrays' dtypes.

    Insertion sort on runs of :data:`_RUN`, then bottom-up merges through the scratch; a pair
    of runs already in order is left as it is, so sorted input costs one pass.
    """
    for start in range(lo, hi, _RUN):
        end = min(start + _RUN, hi)
        for a in range(start + 1, end):
            k, v = keys[a], values[a]
            b = a - 1
            while b >= start and keys[b] > k:
                keys[b + 1] = keys[b]
                values[b + 1] = values[b]
                b -= 1
            keys[b + 1] = k
            values[b + 1] = v
    width = _RUN
    while width < hi - lo:
        for left in range(lo, hi, 2 * width):
            mid = min(left + width, hi)
            right = min(left + 2 * width, hi)
            if mid >= right or not keys[mid] < keys[mid - 1]:
                continue
            i, j, o = left, mid, 0
            while i < mid and j < right:
                if keys[j] < keys[i]:  # the right run's only when strictly smaller: stable
                    key_buf[o] = keys[j]
                    value_buf[o] = values[j]
                    j += 1
                else:
                    key_buf[o] = keys[i]
                    value_buf[o] = values[i]
                    i += 1
                o += 1
            while i < mid:
                key_buf[o] = keys[i]
                value_buf[o] = values[i]
                i += 1
                o += 1
            # What is left of the right run is in place already.
            for t in range(o):
                keys[left + t] = key_buf[t]
                values[left + t] = value_buf[t]
        width *= 2


@numba.njit(cache=True)
def sort_floats(x, n):
    """``x[:n]`` in increasing order, in place: quicksort (median of three, the smaller part
    first so that the stack of parts left holds at most ``log2 n`` of them), insertion sort
    on parts of fewer than :data:`_RUN` values.

    For values without NaN the result is ``np.sort(x[:n])``'s; with NaN the order is
    unspecified (``ndarray.sort`` puts NaN last). As fast as numba's ``ndarray.sort`` on
    20-300 values, the simplex projection's sizes (0.63-1.04x its time a sort), and compiled
    in 0.7 s against its 1.9.
    """
    stack = np.empty(128, dtype=np.int64)
    top = 0
    lo, hi = 0, n - 1
    while True:
        while hi - lo >= _RUN:
            mid = (lo + hi) >> 1
            if x[mid] < x[lo]:
                x[mid], x[lo] = x[lo], x[mid]
            if x[hi] < x[mid]:
                x[hi], x[mid] = x[mid], x[hi]
                if x[mid] < x[lo]:
                    x[mid], x[lo] = x[lo], x[mid]
            # x[lo] <= pivot <= x[hi]: both scans stop inside the part.
            pivot = x[mid]
            i, j = lo, hi
            while True:
                i += 1
                while x[i] < pivot:
                    i += 1
                j -= 1
                while pivot < x[j]:
                    j -= 1
                if i >= j:
                    break
                x[i], x[j] = x[j], x[i]
            if j - lo < hi - j:
                stack[top], stack[top + 1] = j + 1, hi
                hi = j
            else:
                stack[top], stack[top + 1] = lo, j
                lo = j + 1
            top += 2
        for a in range(lo + 1, hi + 1):
            v = x[a]
            b = a - 1
            while b >= lo and v < x[b]:
                x[b + 1] = x[b]
                b -= 1
            x[b + 1] = v
        if top == 0:
            return
        top -= 2
        lo, hi = stack[top], stack[top + 1]
