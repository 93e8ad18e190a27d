"""The non-negativity corrections ``E`` of the low-rank rectifier
(:mod:`anchorstream.model.lowrank`).

``E = max(−Y Yᵀ, 0)`` on the rows and columns of the scanned words ``I``, zero elsewhere,
gathered from ``N = max(−Y Y_Iᵀ, 0)`` (V × |I|): :class:`Corrections` multiplies, sums and
reads rows of it, held sparse or as the dense block ``N``, whichever the share of negative
entries makes cheaper.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels.rectify import (
    anchor_negative_entries,
    block_rows,
    block_sqnorms,
    clip_block,
    corrections_csr,
    corrections_matmul,
    corrections_sums,
    negative_entries_rechecked,
)

__all__ = ["Corrections"]

#: Columns of ``Y Y_Iᵀ`` formed at once when scanning for negative entries: a block of
#: V × this many float64 values (~50 MB at V = 50,000).
_SCAN_COLUMNS = 128

#: Columns of ``Y Y_Iᵀ`` that :func:`_expect_dense` samples, evenly spaced over the scanned
#: words: 5107 × 32 entries tell a share of 27 % from the threshold's 15 % (a warm refresh's
#: sample of 128 columns took 2 ms of its one scan, 0.6 so).
_SAMPLE_COLUMNS = 32

#: Entries of ``Y`` above which :func:`_negative_parts` scans in float64: float32's products
#: of K of them stay far from overflow below this.
_MAX_FLOAT32_SCAN = 1e15

#: The share of a block of ``Y Y_Iᵀ`` up to which :func:`_negative_parts` recomputes the
#: float32 GEMM's candidates in float64, a dot product each (V = 5000, K = 50, |I| = 1500:
#: 29 -> 12 ms where one entry was negative, a warm refresh of 100-token documents; 30 -> 22
#: at 1.6 %; 35 -> 45 at 7 %).
_RECHECK_SHARE = 0.03

#: Rows of ``Y Y_Iᵀ`` formed at once into a dense block (a 2048 × |I| float64 part at most
#: when the block is held in float32).
_SCAN_ROWS = 2048

#: The corrections are held dense (``V × |I|``) where more than this share of the scanned
#: block is negative, sparse otherwise (:class:`Corrections`). A product with a V × 110
#: block at V = 8000, |I| = 2000 costs 0.20 s dense (float64) against 0.11 / 0.24 / 0.35 s
#: sparse at 10 / 20 / 30% (one thread), and building the CSR each iteration adds ~0.3 s;
#: short documents (K = 100) have 20-35% negative, the medium corpus ~10%. The dense block
#: takes 4 bytes an entry of ``N`` (float32, in the loop and in the result) against 24 bytes
#: a mirrored non-zero.
_DENSE_SHARE = 0.15


class Corrections:
    """``E`` (V × V, symmetric, non-negative) from the entries ``N[i, p] = values`` of
    ``N = max(−Y Y_Iᵀ, 0)``: ``E[i, I[p]] = N[i, p]``, and mirrored ``E[I[p], i]`` where word
    ``i`` is not scanned (a scanned one has its own entry).

    Held sparse while at most :data:`_DENSE_SHARE` of ``N`` is non-zero, else as ``N``
    itself, dense (``V × |I|``), whose products are two GEMMs. Sparse corrections are their
    entries: products and sums go through them in one pass (:func:`corrections_matmul`), and
    the mirrored CSR (both halves) is built, and the entries dropped, only when rows are read
    (:meth:`rows`, :meth:`sqnorms`; the result's anchor search and recovery): the
    rectifier's loop, which only multiplies and sums, never builds it. On the short
    corpus of the quality benchmark (K = 100) 20-35% of ``N`` is non-zero, and all sparse, the
    rectification took 34 CPU s against 19 (benchmarks/README.md, "Low-rank rectification as
    the default"). A dense block is held in float32 (``dtype``): in the rectifier's loop
    (``_LoopIterate``), whose products then run as float32 GEMMs (the loop's 38 products on
    that corpus: 7.2 → 4.5 s, the same 15 iterations, the published topics within 4e-4 per
    topic in ℓ1), and in the result, whose entries are found in float64 and then stored
    (a warm refresh's anchor search 0.10 → 0.07 s, a cold one's 0.33 → 0.21, npm summaries,
    K = 50: the same anchors, topics within 4e-5; half the bytes). A dense ``E`` is
    ``scale`` times the block as held (:meth:`scale_` leaves the block alone).
    """

    def __init__(self, i, p, values, scanned, outside, dtype=np.float64):
        self._hold(scanned, outside, [(0, i, p, values)], dtype)

    def _hold(self, scanned, outside, parts, dtype) -> None:
        """Hold the entries ``parts``, a list of ``(start, i, p, values)`` whose ``p`` index
        ``scanned[start:]`` (the scan's blocks of columns, kept apart: joining them cost two
        thirds of a product), dense or sparse by their share of ``N``."""
        V, n = outside.size, scanned.size
        self.scanned, self.outside = scanned, outside
        self.dense = sum(part[3].size for part in parts) > _DENSE_SHARE * V * max(n, 1)
        if self.dense:
            block = np.zeros((V, n), dtype=dtype)
            for start, i, p, values in parts:
                block[i, p + start] = values
            self._set_block(block)
            return
        self._parts = [(int(start), np.ascontiguousarray(i, dtype=np.int64),
                        np.ascontiguousarray(p, dtype=np.int64),
                        np.ascontiguousarray(values, dtype=np.float64))
                       for start, i, p, values in parts if values.size]
        self._csr = None
        self.sums = np.zeros(V)  # row sums
        for start, i, p, values in self._parts:
            corrections_sums(i, p, values, scanned[start:], outside, self.sums)

    @property
    def csr(self) -> sp.csr_matrix:
        """Sparse corrections as a CSR matrix (both halves), built from the entries at the
        first call, which are then dropped (the products use the CSR from then on)."""
        if self._csr is None:
            i, p, values = _joined(self._parts)
            # Each row's columns in the entries' order, unsorted (corrections_csr).
            indptr, indices, data = corrections_csr(i, p, values, self.scanned, self.outside)
            V = self.outside.size
            self._csr = sp.csr_matrix((data, indices, indptr), shape=(V, V))
            self._parts = None
        return self._csr

    def _set_block(self, block: np.ndarray, sums: np.ndarray | None = None,
                   sqnorms: np.ndarray | None = None) -> None:
        """Hold ``block`` as ``N``, with its rows' sums and squared norms in ``E`` when the
        caller found them (:meth:`scan`), else the sums computed here."""
        V, n = block.shape
        self.dense, self.block = True, block
        # E is `scale` times the block as held: scale_ leaves the V x |I| block alone (a
        # warm refresh's result is normalized once: a 30 MB pass at V = 5000, |I| = 1500).
        self.scale = 1.0
        self.position = np.full(V, -1, dtype=np.int64)
        self.position[self.scanned] = np.arange(n)
        if sums is None:
            sums = block.sum(axis=1, dtype=np.float64)
            sums[self.scanned] += self.outside.astype(block.dtype) @ block
        self.sums = sums
        self._sqnorms = sqnorms

    @classmethod
    def scan(cls, Y: np.ndarray, scanned: np.ndarray, outside: np.ndarray, *,
             dense: bool | None = None, dtype=None) -> Corrections:
        """The corrections of ``Y Yᵀ``, scanned in ``Y``'s precision; a dense block is held
        in ``dtype`` (default ``Y``'s), sparse entries in float64. A dense block held in
        float32 is also formed in float32 (a float32 GEMM: 22 against 38 ms at V = 5000, K =
        50, |I| = 1500, a warm refresh's scan). ``dense`` says which form to
        expect: dense, ``N`` is formed in place (no entry lists, no scatter); else its entries
        are gathered a block at a time; None: the form a sample of the scanned columns points
        to (:func:`_expect_dense`). Either way the form follows the share found, and the
        corrections are the same (to ``dtype``'s precision)."""
        dtype = np.dtype(Y.dtype if dtype is None else dtype)
        if dense is None:
            dense = _expect_dense(Y, scanned)
        if not dense:
            out = cls.__new__(cls)
            out._hold(scanned, outside, _negative_parts(Y, scanned), dtype)
            return out
        if dtype == np.float32 and Y.dtype == np.float64:
            # Straight into the block, its entries within float32's rounding of K products.
            Y = Y.astype(np.float32)
        V, n = Y.shape[0], scanned.size
        # GEMMs of row blocks straight into the block (1.5x faster than filling it a block of
        # columns at a time, V = 5000, |I| = 1500), or into a temporary of Y's precision when
        # the block is held in another; then one pass clips, converts and sums each row block
        # (clip_block).
        minus = np.negative(Y[scanned]).T
        block = np.empty((V, n), dtype=dtype)
        rows, rows_sq = np.empty(V), np.empty(V)
        cols, cols_sq = np.zeros(n), np.zeros(n)
        count = 0
        for r in range(0, V, _SCAN_ROWS):
            part = block[r : r + _SCAN_ROWS]
            if dtype == Y.dtype:
                src = np.matmul(Y[r : r + _SCAN_ROWS], minus, out=part)
            else:
                src = Y[r : r + _SCAN_ROWS] @ minus
            count += clip_block(src, part, outside[r : r + _SCAN_ROWS], rows[r : r + _SCAN_ROWS],
                                rows_sq[r : r + _SCAN_ROWS], cols, cols_sq)
        if count <= _DENSE_SHARE * V * max(n, 1):
            i, p = np.nonzero(block)
            return cls(i, p, block[i, p].astype(np.float64), scanned, outside, dtype)
        # Row i of E also holds, for a scanned word, its mirrored column on the other words.
        rows[scanned] += cols
        rows_sq[scanned] += cols_sq
        out = cls.__new__(cls)
        out.scanned, out.outside = scanned, outside
        out._set_block(block, rows, rows_sq)
        return out

    @property
    def nbytes(self) -> int:
        if self.dense:
            return int(self.block.nbytes + self.position.nbytes + self.sums.nbytes)
        if self._csr is None:
            return int(sum(a.nbytes for part in self._parts for a in part[1:])
                       + self.sums.nbytes)
        csr = self._csr
        return int(csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes + self.sums.nbytes)

    def scale_(self, c: float) -> None:
        """``E ← c E`` in place."""
        if self.dense:
            self.scale *= c
            if self._sqnorms is not None:
                self._sqnorms *= c * c
        elif self._csr is None:
            # New arrays: the caller's values stay as they were.
            self._parts = [(start, i, p, values * c) for start, i, p, values in self._parts]
        else:
            self._csr.data *= c
        self.sums *= c

    def __matmul__(self, Z: np.ndarray) -> np.ndarray:
        """``E @ Z`` for a 2-D ``Z``."""
        if not self.dense:
            if self._csr is not None:
                return self._csr @ Z
            if Z.ndim == 1:
                return (self @ Z[:, None])[:, 0]
            Z = np.ascontiguousarray(Z, dtype=np.float64)
            out = np.zeros(Z.shape)
            for start, i, p, values in self._parts:
                corrections_matmul(i, p, values, self.scanned[start:], self.outside, Z, out)
            return out
        block = self.block
        Zb = Z.astype(block.dtype, copy=False)
        out = (block @ Zb[self.scanned]).astype(np.float64, copy=False)
        # The mirrored part as (Zᵀ N)ᵀ: BLAS streams N row-wise either way, but this product
        # took 10.5-14.6 ms against 12.1-18.1 for Nᵀ Z (V = 5107, |I| = 1500, 50 columns).
        out[self.scanned] += ((Zb * self.outside[:, None]).T @ block).T
        if self.scale != 1.0:
            out *= self.scale
        return out

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """Dense rows ``E[idx]``, shape (len(idx), V)."""
        if not self.dense:
            return self.csr[idx].toarray()
        out = np.zeros((idx.size, self.outside.size))
        # A scanned word's row also holds its mirrored column (block_rows).
        block_rows(self.block, self.scanned, self.position, self.outside,
                   np.asarray(idx, dtype=np.int64), float(self.scale), out)
        return out

    def sqnorms(self) -> np.ndarray:
        """``‖E_i‖²`` of every row."""
        if not self.dense:
            csr = self.csr
            return np.asarray(sp.csr_matrix((csr.data * csr.data, csr.indices, csr.indptr),
                                            shape=csr.shape).sum(axis=1)).ravel()
        if self._sqnorms is not None:  # found by the scan (and scaled with the block)
            return self._sqnorms.copy()
        return block_sqnorms(self.block, self.outside, self.scanned) * self.scale**2


def _expect_dense(Y: np.ndarray, scanned: np.ndarray) -> bool:
    """Whether more than :data:`_DENSE_SHARE` of ``N`` is expected non-zero, from an evenly
    spaced sample of at most :data:`_SAMPLE_COLUMNS` of its columns.

    Gathering the entries of a dense ``N`` and scattering them back costs 3-4x forming it in
    place (V = 5000, |I| = 1500, 27% negative: 0.10 s against 0.03), and a sparse ``N``
    formed densely takes ``8 V |I|`` bytes for a moment; near the threshold either form costs
    the same, so the sample's error does not matter there.
    """
    n = scanned.size
    if n == 0:
        return False
    sample = scanned[:: -(-n // _SAMPLE_COLUMNS)]
    negative = np.count_nonzero(Y @ Y[sample].T < 0.0)
    return negative > _DENSE_SHARE * Y.shape[0] * sample.size


def _negative_parts(Y: np.ndarray, scanned: np.ndarray) -> list:
    """The nonzero entries of ``N = max(−Y Y_Iᵀ, 0)``, formed a block of columns at a time in
    ``Y``'s precision, as one ``(start, rows, cols, values)`` a block (int, int64, int64,
    float64; ``cols`` counted from ``start``, the block's first column).

    A float64 ``Y``'s blocks are found by a float32 GEMM, whose entries within its error
    bound of zero or below are recomputed in float64 (:func:`negative_entries_rechecked`):
    the entries of the float64 product, to its rounding. Where more than
    :data:`_RECHECK_SHARE` of a block are, it and the blocks after it are formed in float64.

    ``O(V K |I|)`` work; memory: the entries and one V × 128 block.
    """
    parts = []
    V, K = Y.shape
    top = float(np.abs(Y).max()) if Y.size else np.inf
    if Y.dtype != np.float64 or not top < _MAX_FLOAT32_SCAN:
        for s in range(0, scanned.size, _SCAN_COLUMNS):
            block = Y @ Y[scanned[s : s + _SCAN_COLUMNS]].T
            parts.append((s, *anchor_negative_entries(block)))
        return parts
    Y32 = Y.astype(np.float32)
    # Above the float32 product's error, (K + 2) 2^-24 of ‖y_i‖ ‖y_j‖, twice; and its
    # underflow, which rounds a term, or an entry of Y, by 2^-126 at most.
    bound = np.sqrt(2.0 * (K + 2) * 2.0**-24) * np.linalg.norm(Y, axis=1)
    floor = 4.0 * K * float(np.finfo(np.float32).tiny) * (1.0 + top)
    rechecks = True
    for s in range(0, scanned.size, _SCAN_COLUMNS):
        cols = np.ascontiguousarray(scanned[s : s + _SCAN_COLUMNS], dtype=np.int64)
        if rechecks:
            limit = int(_RECHECK_SHARE * V * cols.size)
            *found, n = negative_entries_rechecked(Y32 @ Y32[cols].T, Y, cols, bound, floor,
                                                   limit)
            if n <= limit:
                parts.append((s, *found))
                continue
            rechecks = False  # as many in the blocks after: the float64 GEMM is cheaper
        parts.append((s, *anchor_negative_entries(Y @ Y[cols].T)))
    return parts


def _joined(parts: list):
    """``(rows, cols, values)`` of all ``parts``, ``cols`` counted from the first column."""
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    return (np.concatenate([part[1] for part in parts]),
            np.concatenate([part[2] + part[0] for part in parts]),
            np.concatenate([part[3] for part in parts]))

