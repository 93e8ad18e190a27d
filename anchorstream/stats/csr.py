"""Arithmetic on upper triangles of symmetric counts held as CSR, each result at its exact size.

The store's reads (:mod:`anchorstream.store.sparseread`), the delay line's waiting documents
and the sparse statistics (:mod:`anchorstream.stats.sparse`) build, move, sum and multiply
their counts' upper triangles (diagonal included) with these; the loops are the numba kernels
of :mod:`anchorstream._kernels.csr` and :mod:`anchorstream._kernels.cooc`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream._buffers import root_array
from anchorstream._kernels import csr as kernels
from anchorstream._kernels.cooc import cooc_symmetric_matmul32, document_gram_upper_into
from anchorstream._kernels.store import store_entries_to_upper_csr
from anchorstream.errors import InputError
from anchorstream.stats.tiles import ColumnTiles

__all__ = ["canonical_csr", "check_upper_counts", "csr_add", "csr_add_all", "csr_add_into",
           "csr_moved", "csr_moved_sum", "csr_of", "csr_sum", "documents_added_into",
           "symmetric_row_sums", "upper_csr", "upper_matmul_once"]


def upper_csr(rows, cols, vals, n: int, *, positions=None) -> sp.csr_matrix:
    """The upper triangle (diagonal included) of the symmetric ``n × n`` matrix whose entries
    are ``(rows, cols, vals)``, each given in either triangle once, as canonical CSR
    (duplicates summed, zeros dropped). ``positions``: where index ``i`` lands (``-1``: its
    entries are dropped); default ``i`` itself.

    The store's reader of segments does it (:func:`store_entries_to_upper_csr`, with every
    entry valid): counts per row, then fills, with no ``min``/``max`` copies and no COO; 1.5x
    faster than scipy's conversion on 6.9M entries in random order, more where rows come in
    order."""
    pos = (np.arange(n, dtype=np.int64) if positions is None
           else np.asarray(positions, dtype=np.int64))
    # The indices in the store's own type (int32), whatever the caller's (scipy's COO gives
    # int32 or int64): one compiled kernel for both readers, where int64 rows compiled it a
    # second time (2.3 CPU s on a first run, session 87).
    index = np.int32 if pos.size <= np.iinfo(np.int32).max else np.int64
    rows, cols = (np.asarray(x).astype(index, copy=False) for x in (rows, cols))
    indptr, indices, data = store_entries_to_upper_csr(
        rows, cols, np.asarray(vals, dtype=np.float64), 0, np.zeros(pos.size, dtype=np.int64),
        np.zeros(0, dtype=np.bool_), pos, n, 1.0)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def canonical_csr(m: sp.csr_matrix) -> sp.csr_matrix:
    """``m`` with duplicates summed, zeros dropped and arrays no longer than its entries."""
    m.sum_duplicates()
    m.eliminate_zeros()
    if _holds_more(m.data, m.nnz) or _holds_more(m.indices, m.nnz):
        # Sums and pruning leave arrays (or views of arrays) as long as the operands' sum.
        m = sp.csr_matrix((m.data[: m.nnz].copy(), m.indices[: m.nnz].copy(), m.indptr),
                          shape=m.shape)
    return m


def _holds_more(a: np.ndarray, n: int) -> bool:
    """Whether ``a`` keeps more memory than its first ``n`` entries need: it is longer, or a
    view of a longer array. scipy makes most of its arrays views of same-sized ones (its
    format check slices them), which hold nothing more: copying those would put a second
    copy of the counts in memory (6 V² bytes where every pair is stored)."""
    if a.size > n:
        return True
    return root_array(a).nbytes > n * a.itemsize


def csr_of(parts, shape) -> sp.csr_matrix:
    """The scipy CSR matrix of a kernel's ``(indptr, indices, data)``."""
    indptr, indices, data = parts
    return sp.csr_matrix((data, indices, indptr), shape=shape)


def csr_sum(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of the sum of two CSR matrices given as such tuples (rows
    with sorted, distinct columns; int64 ``indptr``, int32 ``indices``, float64 ``data``),
    at its exact size (the kernel :func:`~anchorstream._kernels.csr.csr_add`, into arrays
    for both operands' entries trimmed in place)."""
    n = a[1].shape[0] + b[1].shape[0]
    indices, data = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.float64)
    indptr = kernels.csr_add(*a, *b, indices, data)
    nnz = int(indptr[-1])
    indices.resize(nnz, refcheck=False)
    data.resize(nnz, refcheck=False)
    return indptr, indices, data


def csr_add(a: sp.csr_matrix, b: sp.csr_matrix) -> sp.csr_matrix:
    """``a + b``, canonical, at its exact size (:func:`csr_sum`; 0.96-1.37x the time of
    scipy's sum, which leaves arrays as long as both operands' to trim, benchmarks/bench_csr.py).
    Each operand's duplicates are summed in place first where scipy does not know it has none
    (``sum_duplicates``); stored zeros are left out of the sum."""
    a.sum_duplicates()
    b.sum_duplicates()
    return csr_of(csr_sum(_parts(a), _parts(b)), a.shape)


def csr_add_all(mats) -> sp.csr_matrix | None:
    """The sum of the CSR matrices ``mats`` (None for none) by :func:`csr_add`, in pairs, then
    pairs of those sums, and so on: each entry takes part in about log2(len) sums, where
    adding one matrix at a time to a running sum copies that sum every time (that took a
    read of a store's 64 segments 0.70 CPU s in 69 sums). Two or three are added in order, as
    that running sum does, to the same bits. A list ``mats`` is summed in place, each matrix
    let go once it has been added (the list ends with the sum alone)."""
    mats = mats if isinstance(mats, list) else list(mats)
    while len(mats) > 1:
        for k in range(0, len(mats) - 1, 2):
            mats[k // 2] = csr_add(mats[k], mats[k + 1])
            mats[k + 1] = None
        if len(mats) % 2:
            mats[len(mats) // 2] = mats[-1]
        del mats[(len(mats) + 1) // 2:]
    return mats[0] if mats else None


def _parts(m: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (m.indptr.astype(np.int64, copy=False), m.indices.astype(np.int32, copy=False),
            np.asarray(m.data, dtype=np.float64))


def csr_moved_sum(a: sp.csr_matrix, to: np.ndarray, b: sp.csr_matrix) -> sp.csr_matrix:
    """``csr_add(csr_moved(a, to, n), b)`` for ``b`` of shape ``(n, n)``, in one pass and at its
    exact size (the kernel :func:`~anchorstream._kernels.csr.csr_move_add`): the same
    canonical sum, without the moved copy of ``a`` beside it. ``to`` as for
    :func:`csr_moved`."""
    a.sum_duplicates()
    b.sum_duplicates()
    pa, pb = _parts(a), _parts(b)
    size = pa[1].size + pb[1].size
    # Room for both operands' entries, trimmed to the sum's in place, as in csr_sum: pages
    # never written are never resident.
    indices, data = np.empty(size, dtype=np.int32), np.empty(size, dtype=np.float64)
    indptr = kernels.csr_move_add(*pa, np.asarray(to, dtype=np.int64), b.shape[0], *pb,
                                  indices, data)
    nnz = int(indptr[-1])
    indices.resize(nnz, refcheck=False)
    data.resize(nnz, refcheck=False)
    return csr_of((indptr, indices, data), b.shape)


def csr_add_into(a: sp.csr_matrix, b: sp.csr_matrix, *, diagonal: np.ndarray | None = None,
                 sums: np.ndarray | None = None, keep: np.ndarray | None = None
                 ) -> sp.csr_matrix:
    """Add into ``a``, in place, the entries of ``b`` at positions ``a`` stores (the kernel
    :func:`~anchorstream._kernels.csr.csr_add_into`); returns the others, so that ``a`` before
    plus ``b`` is ``a`` after plus the result. Both canonical, ``a``'s data float64 (added
    to, not a copy of it). What is added into ``a`` is also added, in place, into
    ``diagonal`` (its diagonal) and ``sums`` (the row sums of the symmetric matrix over the
    rows and columns where ``keep``, None: all) where given."""
    a.sum_duplicates()
    b.sum_duplicates()
    if a.data.dtype != np.float64:
        raise TypeError("csr_add_into adds into float64 data")
    n = b.shape[0]
    left = np.zeros(b.nnz, dtype=np.bool_)
    row_left = np.zeros(n, dtype=np.int64)
    empty = np.zeros(0)
    keep = np.ones(n, dtype=np.bool_) if keep is None else np.asarray(keep, dtype=np.bool_)
    kernels.csr_add_into(*_parts(a), *_parts(b), left, row_left, keep,
                         empty if diagonal is None else diagonal,
                         empty if sums is None else sums)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_left, out=indptr[1:])
    return csr_of((indptr, b.indices[left].astype(np.int32), b.data[left]), b.shape)


def documents_added_into(a: sp.csr_matrix, H: sp.csr_matrix, w: np.ndarray, *,
                         diagonal: np.ndarray | None = None, sums: np.ndarray | None = None,
                         keep: np.ndarray | None = None) -> sp.csr_matrix:
    """:func:`csr_add_into` of the documents' pairs ``Σ_d w_d (h_d h_dᵀ − diag h_d)`` (upper
    triangle; ``H`` canonical CSR, one row per document), counted straight into ``a`` (the
    kernel :func:`~anchorstream._kernels.cooc.document_gram_upper_into`): the same bytes in
    ``a``, ``diagonal``, ``sums`` and the result as counting them
    (:func:`~anchorstream._kernels.cooc.document_gram_upper`) and adding those, without the
    pairs written out between."""
    a.sum_duplicates()
    if a.data.dtype != np.float64:
        raise TypeError("documents_added_into adds into float64 data")
    n = a.shape[0]
    empty = np.zeros(0)
    keep = np.ones(n, dtype=np.bool_) if keep is None else np.asarray(keep, dtype=np.bool_)
    rest = document_gram_upper_into(
        H.indptr, H.indices, np.asarray(H.data, dtype=np.float64),
        np.asarray(w, dtype=np.float64), *_parts(a), keep,
        empty if diagonal is None else diagonal, empty if sums is None else sums)
    return csr_of(rest, a.shape)


def csr_moved(m: sp.csr_matrix, to: np.ndarray, n: int) -> sp.csr_matrix:
    """``m`` over ``n`` rows and columns: row and column ``i`` go to ``to[i]``, dropped where
    that is -1 (the kernel :func:`~anchorstream._kernels.csr.csr_move`: one pass at the
    result's exact size, where scipy's selection of rows, then of columns, holds a third copy
    between the two). ``to`` must increase where it is not -1: each row's columns keep their
    order and an upper triangle stays upper."""
    return csr_of(kernels.csr_move(*_parts(m), np.asarray(to, dtype=np.int64), n), (n, n))


def upper_matmul_once(upper: sp.csr_matrix, Z: np.ndarray,
                      tiles: ColumnTiles | None = None) -> np.ndarray:
    """``S @ Z`` (float64) for the symmetric ``S`` whose upper triangle is the canonical CSR
    ``upper``, computed in float32 in one pass (:func:`~anchorstream._kernels.cooc.
    cooc_symmetric_matmul32`), as a single product with counts is: ``tiles``, the pairs'
    column tiles, where the caller keeps them. The columns are padded with zeros to a
    multiple of 8: the kernel's loop over them runs in vectors of 8 float32 and a scalar
    remainder (46 columns took 0.085 s on the ``mail`` store, 48 0.072)."""
    Z2 = np.asarray(Z, dtype=np.float64).reshape(Z.shape[0], -1)
    b = Z2.shape[1]
    Z32 = np.zeros((Z2.shape[0], -(-b // 8) * 8), dtype=np.float32)
    Z32[:, :b] = Z2
    out32 = np.zeros_like(Z32)
    if upper.nnz:
        tiles = ColumnTiles(upper.indptr, upper.indices) if tiles is None else tiles
        cooc_symmetric_matmul32(tiles.for_rows(Z32.shape[1], 4), upper.indices, upper.data,
                                Z32, out32)
    return out32[:, :b].astype(np.float64).reshape(Z.shape)


def symmetric_row_sums(U: sp.csr_matrix, diagonal: np.ndarray | None = None) -> np.ndarray:
    """Row sums of the symmetric matrix whose upper triangle is ``U``."""
    diagonal = U.diagonal() if diagonal is None else diagonal
    return np.asarray(U.sum(axis=1)).ravel() + np.asarray(U.sum(axis=0)).ravel() - diagonal


def check_upper_counts(upper: sp.csr_matrix) -> None:
    """Raise :class:`~anchorstream.errors.InputError` unless every entry of the CSR ``upper``
    is finite, non-negative and on or above the diagonal (one pass), as
    :class:`SparseCooccurrence` checks its counts."""
    code = kernels.csr_upper_check(upper.indptr, upper.indices, upper.data)
    if code == 1:
        raise InputError("counts must be finite and non-negative")
    if code == 2:
        raise InputError("SparseCooccurrence takes the upper triangle of the counts "
                         "(column >= row); an entry lies below the diagonal")
