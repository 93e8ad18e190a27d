"""Arrays a caller already holds (private): memory to reuse, statistics to trust.

Large V x V arrays are expensive to allocate where first writes fault in fresh pages (see
``anchorstream fit`` and the refresher), so several functions accept a buffer to fill instead;
and passes over them are expensive, so some accept what the caller already computed.
"""

from __future__ import annotations

import numpy as np

from anchorstream.errors import InputError


def leading_view(buffer, shape: tuple[int, ...], dtype) -> np.ndarray | None:
    """The first ``prod(shape)`` elements of ``buffer`` as a C-contiguous array of ``shape``.

    None when ``buffer`` is None, not a writeable C-contiguous ndarray of ``dtype``, or too
    small; the caller then allocates (or reports the misfit).
    """
    n = int(np.prod(shape))
    if (isinstance(buffer, np.ndarray) and buffer.dtype == np.dtype(dtype)
            and buffer.flags.c_contiguous and buffer.flags.writeable and buffer.size >= n):
        return buffer.reshape(-1)[:n].reshape(shape)
    return None


def root_array(a: np.ndarray) -> np.ndarray:
    """The array whose memory ``a`` views (``a`` itself where it owns its memory)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def held_bytes(*objects) -> int:
    """Bytes of the memory behind ``objects``: arrays, sparse matrices (their ``data``,
    ``indices`` and ``indptr``), co-occurrence statistics (their dense ``counts`` or sparse
    ``upper`` counts), or None. Memory several of them share (views of one array) counts once.

    >>> a = np.zeros(100)
    >>> held_bytes(a, a[:10], None)
    800
    """
    roots: dict[int, int] = {}

    def add(x) -> None:
        if x is None:
            return
        if isinstance(x, np.ndarray):
            root = root_array(x)
            roots[id(root)] = root.nbytes
        elif hasattr(x, "indptr"):
            for part in (x.data, x.indices, x.indptr):
                add(part)
        elif hasattr(x, "upper"):
            add(x.upper)
        elif hasattr(x, "counts"):
            add(x.counts)

    for x in objects:
        add(x)
    return sum(roots.values())


def given_array(values, shape: tuple[int, ...], name: str) -> np.ndarray:
    """A caller's precomputed statistic (e.g. a matrix's row sums) as a float64 array of
    ``shape``: the shape is checked, the values are trusted."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape != tuple(shape):
        raise InputError(f"{name} must have shape {tuple(shape)}, got {v.shape}")
    return v
