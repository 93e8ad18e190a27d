"""Reusing memory a caller already holds (private).

Large V x V arrays are expensive to allocate where first writes fault in fresh pages (see
``anchorstream fit`` and the refresher), so several functions accept a buffer to fill instead.
"""

from __future__ import annotations

import numpy as np


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
