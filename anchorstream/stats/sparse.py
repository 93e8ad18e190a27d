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

from anchorstream._kernels.cooc import cooc_symmetric_matmul
from anchorstream.errors import InputError
from anchorstream.stats.cooccurrence import (Cooccurrence, cap_pairs, check_count,
                                             document_pairs_matmul)
from anchorstream.stats.csr import (canonical_csr, check_upper_counts, csr_add, csr_add_all,
                                    csr_add_into, csr_moved, csr_moved_sum, csr_of, csr_sum,
                                    symmetric_row_sums, upper_csr, upper_matmul_once)
from anchorstream.stats.headblock import MIN_WORDS, HeadBlock, head_block
from anchorstream.stats.pending import PendingSum
from anchorstream.stats.tiles import ColumnTiles

# The CSR arithmetic (anchorstream.stats.csr) and the pending sums (anchorstream.stats.pending)
# were this module's until session 76; their names are still found here.
__all__ = ["PendingSum", "SparseCooccurrence", "canonical_csr", "check_upper_counts", "csr_add",
           "csr_add_all", "csr_add_into", "csr_moved", "csr_moved_sum", "csr_of", "csr_sum",
           "probes_agree", "upper_csr", "upper_matmul_once", "upper_matmul_through"]

#: How far apart, relative to the larger, the probes of :func:`upper_matmul_through` may be
#: and still find the pairs the documents' (two float64 sums of the same terms in two orders
#: differ by ~1e-15; one document of 500 more or less moves a probe by ~1e-3).
PROBE_RTOL = 1e-9


def probes_agree(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two products with the same probe vector, of the pairs and of the documents said
    to have made them, agree within :data:`PROBE_RTOL` of the larger entry (False where both
    are zero: nothing was probed)."""
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.abs(b).max(initial=0.0)))
    return scale > 0 and float(np.abs(a - b).max(initial=0.0)) <= PROBE_RTOL * scale


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
    def held(self) -> sp.csr_matrix | PendingSum:
        """The counts as held: the :class:`PendingSum` given for them while :attr:`upper` has
        not formed it, else the upper triangle (to sum with others without forming them)."""
        return self._upper

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
        if self.documents is None:
            return upper_matmul_once(self.upper, np.asarray(Z, dtype=np.float64))
        return document_pairs_matmul(*self.documents, Z)

    def row_sums(self) -> np.ndarray:
        """``C 1``: each word's share of the (weighted) pairs (a pending sum's from its parts,
        not formed, to rounding)."""
        U = self._upper
        counts = (U.symmetric_row_sums() if isinstance(U, PendingSum)
                  else symmetric_row_sums(U, self._diagonal))
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


def upper_matmul_through(upper: sp.csr_matrix, Z: np.ndarray, documents=None,
                         seed: int = 0) -> tuple[np.ndarray, bool]:
    """``(S @ Z, through)`` for the symmetric ``S`` whose upper triangle is the canonical CSR
    ``upper``: through ``documents``, ``(H, w)`` as :func:`document_pairs_matmul` takes
    them, where those are the documents whose pairs ``upper`` holds (``S = Σ_d w_d (h_d
    h_dᵀ − diag h_d)``), else :func:`upper_matmul_once`'s. ``through`` says which.

    A caller that knows which documents were counted (the store's delay line, whose
    leaving documents it read before they left: :func:`~anchorstream.store.delay.
    documents_left`) multiplies them in ``O(nnz(H) b)`` where the pairs take ``O(nnz(U)
    b)``: 500 documents of 100 tokens hold 1.9 M pairs. Whether they are those pairs is
    checked, not assumed: one product of each with a random positive vector (``seed``), a
    float64 product with the pairs, must agree within :data:`PROBE_RTOL` of the larger; the
    documents' product is float64 (the pairs' float32).

    ``upper`` may be a :class:`PendingSum`: one of documents is multiplied through them
    (those are what it sums; a store's catch-up gives one where it checked the segments
    against them, :func:`~anchorstream.store.sparseread.catch_up_upper`), another is formed."""
    if isinstance(upper, PendingSum):
        if upper.documents is not None:
            return document_pairs_matmul(*upper.documents, Z), True
        upper = upper.form()
    if documents is None or upper.nnz == 0:
        return upper_matmul_once(upper, Z), False
    H, w = documents
    n = upper.shape[0]
    if H.shape[1] != n:
        return upper_matmul_once(upper, Z), False
    z = np.random.default_rng(seed).uniform(0.5, 1.5, size=n)
    # SciPy's two products (the second through the transpose's view): 4 ms for 1.8 M pairs,
    # where the symmetric kernel's generic loop over one column took 7.
    pairs = upper @ z + upper.T @ z - upper.diagonal() * z
    docs = document_pairs_matmul(H, w, z)
    if not probes_agree(pairs, docs):
        return upper_matmul_once(upper, Z), False
    return document_pairs_matmul(H, w, Z), True
