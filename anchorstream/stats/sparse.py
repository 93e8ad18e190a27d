"""Co-occurrence statistics with the counts held sparse: the store's counts without ``V²`` memory.

:class:`~anchorstream.stats.cooccurrence.Cooccurrence` holds the counts as a dense ``V × V``
array (``8 V²`` bytes: 20 GB at V = 50,000). The counts of real text are sparse — a word pair
has a non-zero count only if the two words met in some document — so
:class:`SparseCooccurrence` keeps the upper triangle (diagonal included) as CSR, 12 bytes per
stored pair, and offers what the low-rank rectifier
(:func:`~anchorstream.model.lowrank.rectify_lowrank`) and the stages after it read: products
``C @ Z`` with the normalized matrix, row sums, a subset of words, and the vectors
(``unigram``, ``doc_freq``, ``num_docs``, ``num_tokens``) of a ``Cooccurrence``.

The store builds one shard by shard (:func:`anchorstream.store.open_committed_sparse`), so a
read never holds a dense ``V × V`` array either.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream._buffers import root_array
from anchorstream._kernels import csr as kernels
from anchorstream._kernels.cooc import (cooc_symmetric_matmul, cooc_symmetric_matmul32,
                                        document_gram_matmul)
from anchorstream._kernels.store import store_entries_to_upper_csr
from anchorstream.errors import InputError
from anchorstream.stats.cooccurrence import Cooccurrence, cap_pairs, check_count
from anchorstream.stats.headblock import MIN_WORDS, HeadBlock, head_block
from anchorstream.stats.tiles import ColumnTiles

__all__ = ["PendingSum", "SparseCooccurrence", "canonical_csr", "check_upper_counts", "csr_add",
           "csr_add_all", "csr_moved", "csr_moved_sum", "csr_of", "csr_sum", "upper_csr",
           "upper_matmul_once"]


def upper_csr(rows, cols, vals, n: int, *, positions=None) -> sp.csr_matrix:
    """The upper triangle (diagonal included) of the symmetric ``n × n`` matrix whose entries
    are ``(rows, cols, vals)``, each given in either triangle once, as canonical CSR
    (duplicates summed, zeros dropped). ``positions``: where index ``i`` lands (``-1``: its
    entries are dropped); default ``i`` itself.

    The store's reader of segments does it (:func:`store_entries_to_upper_csr`, with every
    entry valid): counts per row, then fills, with no ``min``/``max`` copies and no COO; 1.5x
    faster than scipy's conversion on 6.9M entries in random order, more where rows come in
    order."""
    rows, cols = (np.asarray(x) for x in (rows, cols))
    rows, cols = (x if x.dtype.kind in "iu" else x.astype(np.int64) for x in (rows, cols))
    pos = (np.arange(n, dtype=np.int64) if positions is None
           else np.asarray(positions, dtype=np.int64))
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


class _Part:
    """One summand of a :class:`PendingSum`: an upper triangle and what is found of it once
    (its diagonal, its row sums over the kept words last asked for), shared by every pending
    sum that holds it, so that a read kept from refresh to refresh is searched once."""

    __slots__ = ("m", "_diagonal", "_sums")

    def __init__(self, m: sp.csr_matrix):
        self.m = m
        self._diagonal: np.ndarray | None = None
        self._sums: tuple[np.ndarray | None, np.ndarray] | None = None  # (keep, row sums)

    def diagonal(self) -> np.ndarray:
        if self._diagonal is None:
            self._diagonal = self.m.diagonal()
        return self._diagonal

    def row_sums(self, keep: np.ndarray | None) -> np.ndarray:
        """Row sums of the symmetric matrix over the rows and columns where ``keep`` (None:
        all), at the part's own rows."""
        if self._sums is not None and (
                keep is None if self._sums[0] is None
                else keep is not None and np.array_equal(keep, self._sums[0])):
            return self._sums[1]
        m = self.m
        if keep is None:
            sums = _symmetric_row_sums(m, self.diagonal())
        else:
            sums = np.zeros(m.shape[0])
            kernels.csr_kept_symmetric_row_sums(m.indptr, m.indices, m.data, keep, sums)
        self._sums = (keep, sums)
        return sums


class PendingSum:
    """A sum of upper triangles not formed yet: ``a`` moved by ``to`` (as :func:`csr_moved`;
    None: as it is) plus ``b``, of shape ``b.shape``; :meth:`plus` and :meth:`moved_plus` add
    more without forming it. Given as a :class:`SparseCooccurrence`'s ``upper``, the sum is
    formed at the first use of the counts' entries, and row sums and the diagonal come from
    the parts: a warm refresh whose one product is known (``known_product``) never forms it,
    and a read kept from refresh to refresh is the same first part every time, its diagonal
    and row sums found once.

    :meth:`form` moves the parts after the first and sums them in pairs (:func:`csr_add_all`),
    then adds the first in one pass (:func:`csr_moved_sum`, or :func:`csr_add`): of two parts,
    exactly those functions' sum. :meth:`diagonal` is the formed sum's to the bit;
    :meth:`symmetric_row_sums` to rounding."""

    def __init__(self, a: sp.csr_matrix, to: np.ndarray | None, b: sp.csr_matrix):
        self._parts = [(_Part(a), _as_map(to)), (_Part(b), None)]
        self.shape = b.shape

    @classmethod
    def _of(cls, parts, shape) -> PendingSum:
        out = cls.__new__(cls)
        out._parts, out.shape = parts, shape
        return out

    @property
    def n_parts(self) -> int:
        return len(self._parts)

    @property
    def parts_nnz(self) -> list[int]:
        """The stored entries of each part, the first first."""
        return [p.m.nnz for p, _ in self._parts]

    def plus(self, b: sp.csr_matrix, *, max_parts: int | None = None) -> PendingSum:
        """This sum plus ``b`` (of the same shape), not formed; this one is left as it is.
        With ``max_parts``, where there would be more parts the ones after the first are
        summed into one (a pass over them, not over the first)."""
        parts = self._parts + [(_Part(b), None)]
        if max_parts is not None and len(parts) > max(max_parts, 2):
            n = self.shape[0]
            later = csr_add_all([p.m if t is None else csr_moved(p.m, t, n)
                                 for p, t in parts[1:]])
            parts = [parts[0], (_Part(later), None)]
        return self._of(parts, self.shape)

    def moved_plus(self, to: np.ndarray, b: sp.csr_matrix) -> PendingSum:
        """This sum moved by ``to`` (as :func:`csr_moved`, to ``b``'s shape) plus ``b``."""
        to = _as_map(to)
        parts = [(p, to if t is None else np.where(t >= 0, to[np.maximum(t, 0)], -1))
                 for p, t in self._parts]
        return self._of(parts + [(_Part(b), None)], b.shape)

    def form(self) -> sp.csr_matrix:
        """The sum, canonical, at its exact size."""
        n = self.shape[0]
        (a, to), *rest = self._parts
        b = csr_add_all([p.m if t is None else csr_moved(p.m, t, n) for p, t in rest])
        return csr_add(a.m, b) if to is None else csr_moved_sum(a.m, to, b)

    def _moved(self, x: np.ndarray, to: np.ndarray | None) -> np.ndarray:
        """A vector over a part's rows at the rows ``to`` moves them to."""
        if to is None:
            return x
        out = np.zeros(self.shape[0])
        keep = to >= 0
        out[to[keep]] = x[keep]
        return out

    def diagonal(self) -> np.ndarray:
        """The sum's diagonal, to the bit: the later parts' summed in the pairs :meth:`form`
        sums them in, then the first's added."""
        (a, to), *rest = self._parts
        b = _sum_in_pairs([self._moved(p.diagonal(), t) for p, t in rest])
        return self._moved(a.diagonal(), to) + b

    def symmetric_row_sums(self) -> np.ndarray:
        """Row sums of the symmetric matrix of the sum (to rounding: the parts' added; each
        part's over the words it is moved to, without moving it)."""
        out = np.zeros(self.shape[0])
        for p, t in self._parts:
            out += self._moved(p.row_sums(None if t is None else t >= 0), t)
        return out

    @property
    def nbytes(self) -> int:
        """Memory of the parts."""
        return sum(p.m.data.nbytes + p.m.indices.nbytes + p.m.indptr.nbytes
                   for p, _ in self._parts)


def _as_map(to) -> np.ndarray | None:
    return None if to is None else np.asarray(to, dtype=np.int64)


def _sum_in_pairs(vectors: list) -> np.ndarray:
    """The vectors summed in the pairs :func:`csr_add_all` sums matrices in (same bits)."""
    while len(vectors) > 1:
        vectors = [vectors[k] + vectors[k + 1] if k + 1 < len(vectors) else vectors[k]
                   for k in range(0, len(vectors), 2)]
    return vectors[0]


def _symmetric_row_sums(U: sp.csr_matrix, diagonal: np.ndarray | None = None) -> np.ndarray:
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


class SparseCooccurrence:
    """Summed co-occurrence statistics whose counts are a sparse symmetric matrix.

    The same fields and meaning as :class:`~anchorstream.stats.cooccurrence.Cooccurrence`,
    with ``counts`` given by its upper triangle ``U`` (diagonal included): the full matrix is
    ``U + Uᵀ − diag U``. As an operator it is the *normalized* matrix
    ``C = counts / total_weight()`` (as :class:`~anchorstream.model.lowrank.DocumentCooccurrence`
    is), so ``C @ Z`` costs ``O(nnz(U) b)`` for ``b`` vectors.

    Parameters
    ----------
    upper : sparse matrix of shape (n_words, n_words)
        The counts' upper triangle; entries below the diagonal are refused.
        Or a :class:`PendingSum` of such, formed at the first use of :attr:`upper`.
    unigram, doc_freq : ndarray of shape (n_words,)
    num_docs, num_tokens : int or float
    length_cap : float or None, default 2
    mass : float, optional
        What the counts sum to, where known (see :meth:`total_weight`).
    check : bool, default True
        Check the counts (finite, non-negative, upper triangle); False only for counts summed
        from checked ones (as a refresh adds the waiting documents to a read's). A
        :class:`PendingSum`'s parts are not checked again.
    documents : (H, w), optional
        The documents the counts are the pairs of, where the caller has them: their counts
        ``H`` (canonical CSR, one row per document, over these words) and weights ``w``, the
        counts being ``Σ_d w_d (h_d h_dᵀ − diag h_d)``, as :func:`~anchorstream.model.
        lowrank.DocumentCooccurrence`'s. :meth:`counts_product` multiplies through them.

    Examples
    --------
    >>> from anchorstream.stats.cooccurrence import cooccurrence
    >>> X = sp.csr_matrix(np.array([[2., 1., 0.], [0., 1., 3.]]))
    >>> dense = cooccurrence(X)
    >>> S = SparseCooccurrence.from_dense(dense)
    >>> bool(np.allclose(S @ np.eye(3), dense.normalized()))
    True
    """

    def __init__(self, upper, unigram, doc_freq, num_docs, num_tokens,
                 length_cap: float | None = 2, mass: float | None = None, *,
                 check: bool = True, documents=None):
        cap_pairs(length_cap)  # validates
        pending = isinstance(upper, PendingSum)
        U = upper if pending else sp.csr_matrix(upper, dtype=np.float64)
        self.unigram = np.asarray(unigram, dtype=np.float64)
        self.doc_freq = np.asarray(doc_freq, dtype=np.float64)
        V = self.unigram.shape[0] if self.unigram.ndim == 1 else -1
        if U.shape != (V, V) or self.doc_freq.shape != (V,):
            raise InputError(
                "SparseCooccurrence needs counts of shape (n_words, n_words) and unigram, "
                f"doc_freq of shape (n_words,); got {U.shape}, {self.unigram.shape}, "
                f"{self.doc_freq.shape}")
        if check and not pending:  # skipped for sums of checked counts: 37 ms at 12.4M pairs
            check_upper_counts(U)
        self._upper = U
        self._diagonal = U.diagonal()  # a search of every row: kept for row_sums()
        self._counts_total: float | None = None  # _counts_sum(), found at its first use
        self.length_cap = length_cap
        self.mass = mass
        self.num_docs = check_count("num_docs", num_docs)
        self.num_tokens = check_count("num_tokens", num_tokens)
        self._head: HeadBlock | None | bool = False  # not chosen yet
        self._column_tiles: ColumnTiles | None = None  # found at the first untiled product
        #: ``(Z, counts @ Z)`` that :meth:`matmul_once` returns (divided by the total) instead
        #: of multiplying, for that ``Z``: set by a caller that follows the counts' changes
        #: (the daemon's refresher, :mod:`daemon.refresh_reads`).
        self.known_product: tuple[np.ndarray, np.ndarray] | None = None
        #: ``(Z, counts @ Z)`` of the last :meth:`matmul_once`.
        self.last_product: tuple[np.ndarray, np.ndarray] | None = None
        self.documents = documents

    #: Fewest words of the dense head block products use (:mod:`anchorstream.stats.headblock`).
    head_min_words = MIN_WORDS

    @classmethod
    def from_dense(cls, cooc: Cooccurrence) -> SparseCooccurrence:
        """The same statistics with sparse counts (for tests and small problems)."""
        return cls(sp.triu(sp.csr_matrix(cooc.counts)), cooc.unigram, cooc.doc_freq,
                   cooc.num_docs, cooc.num_tokens, cooc.length_cap, cooc.mass)

    @property
    def n_words(self) -> int:
        return self.unigram.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_words, self.n_words)

    @property
    def upper(self) -> sp.csr_matrix:
        """The counts' upper triangle (diagonal included), CSR; a :class:`PendingSum` given
        for it is formed here, once."""
        if isinstance(self._upper, PendingSum):
            self._upper = self._upper.form()
        return self._upper

    @property
    def pending(self) -> PendingSum | None:
        """The :class:`PendingSum` given for the counts while :attr:`upper` has not formed it;
        None once formed, or where the counts were given formed."""
        U = self._upper
        return U if isinstance(U, PendingSum) else None

    @property
    def nbytes(self) -> int:
        """Memory of the counts (the upper triangle; products never form its transpose), or
        of a pending sum's parts."""
        U = self._upper
        if isinstance(U, PendingSum):
            return U.nbytes
        return U.data.nbytes + U.indices.nbytes + U.indptr.nbytes

    def _counts_sum(self) -> float:
        """What the counts sum to, kept: total_weight() divides every product by it where
        neither ``mass`` nor ``length_cap=2`` says, and the sum is a pass over every stored pair
        (11 ms at 6.9M pairs, 18 products a fit). NumPy's pairwise sums: the kernel's own, in
        another order, moved fits' paths."""
        if self._counts_total is None:
            self._counts_total = (2.0 * float(self.upper.data.sum())
                                  - float(self._diagonal.sum()))
        return self._counts_total

    def upper_counts(self) -> sp.csr_matrix:
        """The counts' upper triangle (diagonal included), as stored."""
        return self.upper

    def diagonal(self) -> np.ndarray:
        return self._diagonal.copy()

    def total_weight(self) -> float:
        """What the products divide by, as :meth:`Cooccurrence.total_weight
        <anchorstream.stats.cooccurrence.Cooccurrence.total_weight>`: ``mass`` where given,
        else ``num_docs`` for ``length_cap=2``, else the counts' sum."""
        if self.mass is not None:
            return float(self.mass)
        if self.length_cap == 2:
            return float(self.num_docs)
        return self._counts_sum()

    def head_block(self) -> HeadBlock | None:
        """The dense block of the most connected words that products multiply apart (chosen
        at the first call and kept; None where none pays), :func:`~anchorstream.stats.
        headblock.head_block`."""
        if self._head is False:
            self._head = head_block(self.upper, min_words=self.head_min_words)
        return self._head

    def drop_head_block(self) -> None:
        """Frees the head block (up to the counts' own memory) of counts kept between fits,
        and the pairs' column tiles; the next product chooses them again."""
        self._head = False
        self._column_tiles = None

    def _counts_matmul(self, Z: np.ndarray, once: bool = False) -> np.ndarray:
        # One pass over U for U Z + Uᵀ Z − diag(U) Z: a CSR copy of Uᵀ would double the
        # counts' memory (benchmarks/README.md, "Refresh memory": as fast as scipy's two
        # products from 40 columns on, 1.1-1.8x slower on one to 16); the pairs of the dense
        # head block, where there is one, go through BLAS instead.
        U = self.upper
        Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1), dtype=np.float64)
        if once and self._head is False and self.n_words >= self.head_min_words:
            # One product only (matmul_once), no block chosen yet: in float32 as through one.
            return upper_matmul_once(U, Z2, self._tiles()).reshape(Z.shape)
        head = self.head_block()
        if head is not None:
            return head.matmul(Z2).reshape(Z.shape)
        out = np.zeros_like(Z2)
        cooc_symmetric_matmul(self._tiles().for_rows(Z2.shape[1], 8), U.indices, U.data, Z2,
                              out)
        return out.reshape(Z.shape)

    def _tiles(self) -> ColumnTiles:
        """The column tiles of the counts' pairs, by width (:mod:`anchorstream.stats.tiles`),
        kept with them."""
        if self._column_tiles is None:
            self._column_tiles = ColumnTiles(self.upper.indptr, self.upper.indices)
        return self._column_tiles

    def _product(self, Z, once: bool) -> np.ndarray:
        Z = np.asarray(Z, dtype=np.float64)
        total = self.total_weight()
        if not total > 0:
            return np.zeros_like(Z)
        return self._counts_matmul(Z, once) / total

    def __matmul__(self, Z):
        return self._product(Z, once=False)

    def matmul_once(self, Z) -> np.ndarray:
        """``self @ Z`` for a caller that multiplies these counts once (a warm refresh's
        update): where the head block has not been chosen yet, it is not built for one
        product (on the ``mail`` store building it costs 0.09 s and saves 0.05), and the
        pairs are multiplied in float32 as they would be through it
        (:func:`~anchorstream._kernels.cooc.cooc_symmetric_matmul32`: 0.09 s against 0.17
        in float64 at 46 columns). Where the block was chosen, or there are too few words
        for one, the same as ``self @ Z``. Where :attr:`known_product` holds this ``Z``, its
        product, without multiplying; either way :attr:`last_product` keeps it."""
        Z = np.asarray(Z, dtype=np.float64)
        total = self.total_weight()
        if not total > 0:
            return np.zeros_like(Z)
        known = self.known_product
        if known is not None and known[0].shape == Z.shape and np.array_equal(known[0], Z):
            counts = known[1]
        else:
            counts = self._counts_matmul(Z, once=True)
        self.last_product = (Z, counts)
        return counts / total

    def counts_product(self, Z) -> np.ndarray:
        """``counts @ Z``, the counts not normalized, in one pass: through the documents where
        given (``documents``: ``Hᵀ diag(w) H Z − diag(Hᵀ w) Z`` in float64, ``O(nnz(H) b)``,
        where the pairs of 1,000 documents of 100 tokens are 2 M), else over the pairs in
        float32 (:func:`upper_matmul_once`)."""
        Z = np.asarray(Z, dtype=np.float64)
        if self.documents is None:
            return upper_matmul_once(self.upper, Z)
        H, w = self.documents
        Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1))
        out = np.zeros_like(Z2)
        document_gram_matmul(H.indptr, H.indices, H.data, w, Z2, out)
        out -= np.asarray(H.T @ w).ravel()[:, None] * Z2
        return out.reshape(Z.shape)

    def row_sums(self) -> np.ndarray:
        """``C 1``: each word's share of the (weighted) pairs (a pending sum's from its parts,
        not formed, to rounding)."""
        U = self._upper
        counts = (U.symmetric_row_sums() if isinstance(U, PendingSum)
                  else _symmetric_row_sums(U, self._diagonal))
        total = self.total_weight()
        return counts / total if total > 0 else counts

    def subset(self, words, *, keep_total: bool = True) -> SparseCooccurrence:
        """The statistics of ``words`` (rows and columns, in that order), documents unchanged.

        With ``keep_total`` the total weight stays the whole matrix's (as taking those rows
        and columns of the normalized dense matrix); without, it is recomputed as for a
        :class:`Cooccurrence` of the sub-matrix's counts (``num_docs``, or their sum).
        """
        words = np.asarray(words, dtype=np.int64)
        total = self.total_weight() if keep_total else None
        if words.size > 1 and np.any(np.diff(words) <= 0):
            # Not increasing: entries may have moved below the diagonal.
            coo = self.upper[words][:, words].tocoo()
            sub = upper_csr(coo.row, coo.col, coo.data, words.size)
        else:
            # Increasing (a selection of words, as a refresh's): one pass, no copy between.
            to = np.full(self.n_words, -1, dtype=np.int64)
            to[words] = np.arange(words.size)
            sub = csr_moved(self.upper, to, words.size)
        return SparseCooccurrence(sub, self.unigram[words], self.doc_freq[words],
                                  self.num_docs, self.num_tokens, self.length_cap, total,
                                  check=False)  # a part of checked counts

    def counts_dense(self) -> np.ndarray:
        """The dense counts (``V²`` memory: tests and small problems)."""
        U = self.upper.toarray()
        return U + U.T - np.diag(np.diag(U))

    def normalized(self) -> np.ndarray:
        """The dense normalized matrix (``V²`` memory: tests and small problems)."""
        total = self.total_weight()
        if self.num_docs == 0 or not total > 0:
            raise InputError("the co-occurrence is empty (no document with at least two "
                             "tokens); there is nothing to normalise")
        return self.counts_dense() / total

    def to_dense(self) -> Cooccurrence:
        """The same statistics as a dense :class:`Cooccurrence` (``V²`` memory)."""
        return Cooccurrence(self.counts_dense(), self.unigram, self.doc_freq, self.num_docs,
                            self.num_tokens, self.length_cap, self.mass)
