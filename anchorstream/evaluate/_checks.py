"""Input checks and small array helpers shared by the evaluation modules.

Private to the library: the names are public only so the sibling modules may import them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError


# --------------------------------------------------------------------------------------------
# input checks and helpers


def as_topic_word(topic_word, name: str = "topic_word") -> np.ndarray:
    B = np.asarray(topic_word, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] < 1 or B.shape[1] < 1:
        raise InputError(f"{name} must be of shape (n_words, n_topics), got shape {B.shape}")
    if not np.all(np.isfinite(B)) or B.min() < 0:
        raise InputError(f"{name} must be finite and non-negative")
    return B


def normalized_columns(B: np.ndarray) -> np.ndarray:
    total = B.sum(axis=0)
    if np.any(total <= 0):
        raise InputError("a topic of topic_word is all zeros")
    return B / total[None, :]


def check_top_idx(top_idx, min_words: int = 1) -> np.ndarray:
    top = np.asarray(top_idx)
    if top.ndim != 2 or top.shape[0] < 1 or top.shape[1] < min_words:
        raise InputError(
            f"top_idx must be of shape (n_topics, n) with n >= {min_words}, got shape {top.shape}"
        )
    if not np.issubdtype(top.dtype, np.integer) or top.min() < 0:
        raise InputError("top_idx must hold non-negative integer word indices")
    if np.any(np.diff(np.sort(top, axis=1), axis=1) == 0):
        raise InputError("a topic lists the same top word twice")
    return top.astype(np.int64)


def check_square(C):
    if sp.issparse(C):
        C = sp.csr_matrix(C, dtype=np.float64)
    else:
        C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"C must be a square (n_words, n_words) matrix, got shape {C.shape}")
    return C


def check_anchors(anchors, n_words: int) -> np.ndarray:
    S = np.asarray(anchors)
    if S.ndim != 1 or not np.issubdtype(S.dtype, np.integer):
        raise InputError(f"anchors must be a 1-D array of word indices, got {S!r}")
    if S.size and (S.min() < 0 or S.max() >= n_words):
        raise InputError(f"anchors must be word indices in 0..{n_words - 1}, got {S.tolist()}")
    return S.astype(np.int64)


def row_totals(C) -> np.ndarray:
    return np.asarray(C.sum(axis=1), dtype=np.float64).ravel()


def dense_rows(C, rows: np.ndarray) -> np.ndarray:
    return C[rows].toarray() if sp.issparse(C) else np.asarray(C[rows])


def nonzero(x: np.ndarray) -> np.ndarray:
    if np.any(x <= 0):
        raise InputError("an anchor word has an all-zero row in C")
    return x
