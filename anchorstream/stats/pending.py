"""Sums of upper triangles not formed yet: a refresh's counts as its kept read and what came since.

A :class:`PendingSum` is given as a :class:`~anchorstream.stats.sparse.SparseCooccurrence`'s
counts where forming the sum would cost a pass over every stored pair and the fit may never
use the entries (a warm refresh whose one product is known reads only row sums and the
diagonal): a store's catch-up read (:func:`~anchorstream.store.sparseread.catch_up_upper`)
and the waiting documents added to it (:func:`~anchorstream.store.delay.select_with_waiting`).
A part may be documents whose pairs are counted only when the sum is formed: the waiting
documents, and the documents that left the delay line between two catch-ups in place of the
segments they made (:meth:`PendingSum.plus_documents`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anchorstream._kernels import csr as kernels
from anchorstream._kernels.cooc import document_gram_upper
from anchorstream.stats.cooccurrence import document_pairs_matmul
from anchorstream.stats.csr import (csr_add, csr_add_all, csr_add_into, csr_moved,
                                    csr_moved_sum, csr_of, documents_added_into,
                                    symmetric_row_sums)

__all__ = ["PendingSum"]


class _Part:
    """One summand of a :class:`PendingSum`: an upper triangle and what is found of it once
    (its diagonal, its row sums over the kept words last asked for), shared by every pending
    sum that holds it, so that a read kept from refresh to refresh is searched once."""

    __slots__ = ("_m", "_documents", "shape", "_diagonal", "_sums")

    def __init__(self, m: sp.csr_matrix | None, documents=None, shape=None):
        self._m = m
        self._documents = documents  # (H, w) whose pairs m is, formed from them at need
        self.shape = m.shape if m is not None else shape
        self._diagonal: np.ndarray | None = None
        self._sums: tuple[np.ndarray | None, np.ndarray] | None = None  # (keep, row sums)

    @property
    def m(self) -> sp.csr_matrix:
        """The part's upper triangle; a documents' part's pairs are counted here, once
        (:func:`~anchorstream._kernels.cooc.document_gram_upper`)."""
        if self._m is None:
            H, w = self._documents
            self._m = csr_of(document_gram_upper(H.indptr, H.indices, H.data, w,
                                                 self.shape[0]), self.shape)
        return self._m

    @property
    def formed(self) -> bool:
        return self._m is not None

    @property
    def documents(self):
        """``(H, w)`` of a documents' part not formed yet, else None."""
        return None if self._m is not None else self._documents

    @property
    def nbytes(self) -> int:
        """Memory of the upper triangle, or of the documents while it is not formed."""
        m = self._m
        if m is None:
            H, w = self._documents
            return H.data.nbytes + H.indices.nbytes + H.indptr.nbytes + w.nbytes
        return m.data.nbytes + m.indices.nbytes + m.indptr.nbytes

    def diagonal(self) -> np.ndarray:
        if self._diagonal is None:
            if self._m is None:
                # Σ_d w_d h_di (h_di − 1), over the documents in order, each term as the
                # pairs' kernel forms it: the formed diagonal to the bit.
                H, w = self._documents
                docs = np.repeat(np.arange(H.shape[0]), np.diff(H.indptr))
                terms = (w[docs] * H.data) * (H.data - 1.0)
                self._diagonal = np.bincount(H.indices, weights=terms, minlength=self.shape[0])
            else:
                self._diagonal = self._m.diagonal()
        return self._diagonal

    def row_sums(self, keep: np.ndarray | None) -> np.ndarray:
        """Row sums of the symmetric matrix over the rows and columns where ``keep`` (None:
        all), at the part's own rows."""
        if self._sums is not None and (
                keep is None if self._sums[0] is None
                else keep is not None and np.array_equal(keep, self._sums[0])):
            return self._sums[1]
        if self._m is None:
            # The pairs times the words kept: Σ_d w_d h_di (n_d − 1), n_d the document's
            # tokens among them.
            kept = np.ones(self.shape[0]) if keep is None else keep.astype(np.float64)
            sums = document_pairs_matmul(*self._documents, kept) * kept
            self._sums = (keep, sums)
            return sums
        m = self.m
        if keep is None:
            sums = symmetric_row_sums(m, self.diagonal())
        else:
            sums = np.zeros(m.shape[0])
            kernels.csr_kept_symmetric_row_sums(m.indptr, m.indices, m.data, keep, sums)
        self._sums = (keep, sums)
        return sums

    def add_into(self, b: sp.csr_matrix) -> sp.csr_matrix:
        """Add ``b``'s entries at positions this part stores into it, in place (:func:`
        csr_add_into`), its diagonal and row sums found so far with them, in the same pass
        (the diagonal to the bit); returns the rest of ``b``. Every sum holding this part
        changes with it."""
        keep, sums = (None, None) if self._sums is None else self._sums
        return csr_add_into(self.m, b, diagonal=self._diagonal, sums=sums, keep=keep)

    def add_documents_into(self, H: sp.csr_matrix, w: np.ndarray) -> sp.csr_matrix:
        """:meth:`add_into` of the documents' pairs (``H``, ``w`` as :meth:`PendingSum.
        of_documents`), counted straight into this part (:func:`documents_added_into`: the
        same bytes, without the pairs written out between); returns the rest."""
        keep, sums = (None, None) if self._sums is None else self._sums
        return documents_added_into(self.m, H, w, diagonal=self._diagonal, sums=sums,
                                    keep=keep)


class PendingSum:
    """A sum of upper triangles not formed yet: ``a`` moved by ``to`` (as :func:`csr_moved`;
    None: as it is) plus ``b``, of shape ``b.shape``; :meth:`plus`, :meth:`added_into_first`
    and :meth:`of_terms` add more without forming it. Given as a :class:`SparseCooccurrence`'s
    ``upper``, the sum is formed at the first use of the counts' entries, and row sums and the
    diagonal come from the parts: a warm refresh whose one product is known
    (``known_product``) never forms it, and a read kept from refresh to refresh is the same
    first part every time, its diagonal and row sums found once.

    :meth:`form` moves the parts after the first and sums them in pairs (:func:`csr_add_all`),
    then adds the first in one pass (:func:`csr_moved_sum`, or :func:`csr_add`): of two parts,
    exactly those functions' sum. :meth:`diagonal` is the formed sum's to the bit;
    :meth:`symmetric_row_sums` to rounding."""

    def __init__(self, a: sp.csr_matrix, to: np.ndarray | None, b: sp.csr_matrix):
        self._parts = [(_Part(a), _as_map(to)), (_Part(b), None)]
        self.shape = b.shape

    @classmethod
    def of(cls, a: sp.csr_matrix) -> PendingSum:
        """``a`` alone, to add to (:meth:`plus`, :meth:`added_into_first`)."""
        return cls._of([(_Part(a), None)], a.shape)

    @classmethod
    def of_documents(cls, H: sp.csr_matrix, w: np.ndarray) -> PendingSum:
        """The pairs of documents, ``Σ_d w_d (h_d h_dᵀ − diag h_d)`` for their counts ``H``
        (canonical CSR, one row per document) and weights ``w``, counted only when the
        entries are used: the diagonal and row sums come from the documents."""
        n = H.shape[1]
        return cls._of([(_Part(None, (H, np.asarray(w, dtype=np.float64)), (n, n)), None)],
                       (n, n))

    @classmethod
    def of_terms(cls, terms, shape) -> PendingSum:
        """The sum of ``terms``, each ``(upper, to)``: an upper triangle (CSR) or a
        :class:`PendingSum`, moved by ``to`` (as :func:`csr_moved`; None: as it is) to
        ``shape``, not formed; the first term's first part is the sum's first."""
        parts = []
        for upper, to in terms:
            to = _as_map(to)
            held = upper._parts if isinstance(upper, PendingSum) else [(_Part(upper), None)]
            parts += [(p, _composed(t, to)) for p, t in held]
        return cls._of(parts, tuple(shape))

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
        """The stored entries of each part, the first first (a documents' part is formed)."""
        return [p.m.nnz for p, _ in self._parts]

    def plus(self, b: sp.csr_matrix, *, max_parts: int | None = None) -> PendingSum:
        """This sum plus ``b`` (of the same shape), not formed; this one is left as it is.
        With ``max_parts``, where there would be more parts the ones after the first are
        summed into one (a pass over them, not over the first)."""
        parts = self._parts + ([(_Part(b), None)] if b.nnz else [])  # nothing added: no part
        if max_parts is not None and len(parts) > max(max_parts, 2):
            parts = [parts[0], (_Part(_later_summed(parts, self.shape[0])), None)]
        return self._of(parts, self.shape)

    def added_into_first(self, b: sp.csr_matrix, *, max_parts: int | None = None
                         ) -> PendingSum:
        """This sum plus ``b``: its entries at positions the first part stores added into it
        in place (:meth:`_Part.add_into`: this sum, and any other holding that part, change
        with it), the rest a new part (as :meth:`plus`, with ``max_parts``). The first part
        must not be moved (``to`` None)."""
        return self.plus(self._unmoved_first("added_into_first").add_into(b),
                         max_parts=max_parts)

    def _unmoved_first(self, what: str) -> _Part:
        """The first part, which ``what`` adds into in place: ValueError where it is moved."""
        first, to = self._parts[0]
        if to is not None:
            raise ValueError(f"{what} needs a first part that is not moved")
        return first

    @property
    def documents(self):
        """``(H, w)`` where this sum is one documents' part not formed (:meth:`of_documents`),
        else None."""
        (part, to), *rest = self._parts
        return None if rest or to is not None else part.documents

    @property
    def n_documents(self) -> int:
        """Parts held as documents, not formed."""
        return sum(1 for p, _ in self._parts if not p.formed)

    def plus_documents(self, docs: PendingSum, *, max_documents: int,
                       max_parts: int | None = None, in_place: bool = False) -> PendingSum:
        """This sum plus ``docs``, whose parts are documents not formed (:meth:`of_documents`),
        kept as documents: their diagonal and row sums come from them, and their pairs are
        counted only when the sum is formed. Where more than ``max_documents`` parts would be
        documents, the pairs of all of them are counted in one pass (the kernel sums each
        entry over the documents in order) and added as :meth:`added_into_first` adds
        (``in_place``: counted straight into the first part, :meth:`_Part.add_documents_into`,
        the same bytes) or :meth:`plus` does (``max_parts`` as there)."""
        parts = self._parts + docs._parts
        held = [k for k, (p, to) in enumerate(parts) if k > 0 and to is None and not p.formed]
        if len(held) <= max_documents:
            return self._of(parts, self.shape)
        H = sp.vstack([parts[k][0].documents[0] for k in held], format="csr")
        w = np.concatenate([parts[k][0].documents[1] for k in held])
        rest = self._of([p for k, p in enumerate(parts) if k not in held], self.shape)
        if in_place:  # counted straight into the first part (as added_into_first adds)
            first = rest._unmoved_first("plus_documents in place")
            return rest.plus(first.add_documents_into(H, w), max_parts=max_parts)
        return rest.plus(_Part(None, (H, w), self.shape).m, max_parts=max_parts)

    def form(self) -> sp.csr_matrix:
        """The sum, canonical, at its exact size."""
        n = self.shape[0]
        a, to = self._parts[0]
        b = _later_summed(self._parts, n)
        if b is None:  # one part: itself, or moved
            return a.m if to is None else csr_moved(a.m, to, n)
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
        return self._moved(a.diagonal(), to) + (0.0 if b is None else b)

    def symmetric_row_sums(self) -> np.ndarray:
        """Row sums of the symmetric matrix of the sum (to rounding: the parts' added; each
        part's over the words it is moved to, without moving it)."""
        out = np.zeros(self.shape[0])
        for p, t in self._parts:
            out += self._moved(p.row_sums(None if t is None else t >= 0), t)
        return out

    @property
    def nbytes(self) -> int:
        """Memory of the parts (a documents' part not formed: of its documents)."""
        return sum(p.nbytes for p, _ in self._parts)


def _later_summed(parts, n: int) -> sp.csr_matrix | None:
    """The parts after the first, each moved to ``n`` words, summed in pairs
    (:func:`csr_add_all`; None for none)."""
    return csr_add_all([p.m if t is None else csr_moved(p.m, t, n) for p, t in parts[1:]])


def _as_map(to) -> np.ndarray | None:
    return None if to is None else np.asarray(to, dtype=np.int64)


def _composed(t: np.ndarray | None, to: np.ndarray | None) -> np.ndarray | None:
    """The map ``t`` followed by ``to`` (None: no move)."""
    if to is None or t is None:
        return to if t is None else t
    return np.where(t >= 0, to[np.maximum(t, 0)], -1)


def _sum_in_pairs(vectors: list) -> np.ndarray:
    """The vectors summed in the pairs :func:`csr_add_all` sums matrices in (same bits), or
    None for none."""
    while len(vectors) > 1:
        vectors = [vectors[k] + vectors[k + 1] if k + 1 < len(vectors) else vectors[k]
                   for k in range(0, len(vectors), 2)]
    return vectors[0] if vectors else None
