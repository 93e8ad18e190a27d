"""What a refresh reads and whether it is enough to fit: the words a model uses, the V x V
buffers and sparse read kept between refreshes, subsets of the counts, and the checks that
skip a refresh (not a failure) until the store holds enough. The refresher itself is
:mod:`daemon.refresh`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from anchorstream.model.anchors import anchor_min_df_for
from anchorstream.model.methods import novel_word_min_df
from anchorstream.model.pipeline import AnchorModel
from anchorstream.stats.cooccurrence import Cooccurrence, take_square
from anchorstream.stats.documents import DocumentState

__all__ = ["Buffers", "KEEP_READ_MAX_BYTES", "SPARSE_KEEP", "Skip", "by_word",
           "check_documents", "check_enough", "keeps_read", "model_settings", "partitions_of",
           "select_words", "subset"]

#: A warm low-rank refresher keeps its last sparse read (to read only the segments committed
#: since, next time) while it takes at most this many bytes per squared word, or
#: :data:`KEEP_READ_MAX_BYTES` (``refresh.keep_read_max_bytes``), whichever is more. 2 V² is a
#: seventh of the ~14 V² a low-rank refresh peaks at when every pair is stored, the bound the
#: deployment is sized for (deploy/README.md, "Resources"); kept, that read sits beside the
#: next one while it is brought up to date. Real text stores far fewer pairs (32% of them on
#: 51k technical descriptions at V = 5000: 1.9 V²; 0.5% on 300k PyPI summaries at 30k words).
SPARSE_KEEP = 2.0

#: ``refresh.keep_read_max_bytes``'s default: up to 1 GiB a read is kept however many of its
#: pairs are stored (where documents are long, a full read was 2.55 s of a warm refresh's 3.41;
#: benchmarks/README.md, "Session 70"), which adds at most that to a refresh's peak.
KEEP_READ_MAX_BYTES = 1024**3


class Skip(Exception):
    """Not enough data for a model yet (not a failure)."""


def select_words(cooc: Cooccurrence, *, min_df: float, max_df_ratio: float) -> np.ndarray:
    """Indices of the words the model uses: ``min_df <= doc_freq <= max_df_ratio * num_docs``.

    Parameters
    ----------
    cooc : Cooccurrence
    min_df, max_df_ratio : float, the second in (0, 1]

    Returns
    -------
    int64 ndarray of shape (n_selected,), increasing
    """
    df = np.asarray(cooc.doc_freq, dtype=np.float64)
    keep = df >= float(min_df)
    if float(max_df_ratio) < 1.0 and float(cooc.num_docs) > 0:
        keep &= df <= float(max_df_ratio) * float(cooc.num_docs)
    return np.flatnonzero(keep).astype(np.int64)


class Buffers:
    """V x V arrays a refresher keeps from one refresh to the next.

    Every refresh needs the dense counts, often a copy of them over the selected words, and the
    rectification's float32 iterate: 500 MB at 5000 words. Fresh memory costs a page fault per
    page on first write; on the benchmark machine (a VM whose freed memory returns to its host
    within seconds) that was 1-2.5 ms per MB, up to ~1 s per refresh. Kept, the memory stays
    mapped; the price is holding it between refreshes (see the README's Limits).
    """

    def __init__(self):
        self._arrays: dict[str, np.ndarray] = {}

    def nbytes(self) -> int:
        """Memory of every buffer held."""
        return sum(a.nbytes for a in self._arrays.values())

    def held(self, name: str) -> np.ndarray | None:
        """The buffer ``name`` as it is (None if there is none yet)."""
        return self._arrays.get(name)

    def adopt(self, name: str, array: np.ndarray) -> None:
        """Keep ``array``'s memory as buffer ``name`` (if it is larger than the one held)."""
        held = self._arrays.get(name)
        if array.flags.c_contiguous and (held is None or held.size < array.size):
            self._arrays[name] = array.reshape(-1)

    def get(self, name: str, n_elements: int, dtype) -> np.ndarray:
        """A flat array of at least ``n_elements`` (grown by 10% headroom when too small)."""
        arr = self._arrays.get(name)
        if arr is None or arr.size < n_elements or arr.dtype != np.dtype(dtype):
            self._arrays.pop(name, None)  # free the old one first
            arr = np.empty(int(n_elements * 1.1) + 1, dtype=dtype)
            self._arrays[name] = arr
        return arr


def subset(cooc: Cooccurrence, idx: np.ndarray, out: np.ndarray | None = None) -> Cooccurrence:
    """The words ``idx`` of ``cooc`` (counts copied into ``out`` when given and large enough);
    shares its arrays when that is every word and there is no ``out`` (the fit may then
    overwrite them: ``cooc`` is a fresh read that nothing else uses)."""
    if idx.size == cooc.n_words and out is None:
        out = Cooccurrence(cooc.counts, cooc.unigram, cooc.doc_freq, 0, 0, cooc.length_cap,
                           cooc.mass)
    else:
        out = Cooccurrence(take_square(cooc.counts, idx, out=out), cooc.unigram[idx],
                           cooc.doc_freq[idx], 0, 0, cooc.length_cap)
    # Decayed stores have float totals; keep them as they are (the constructor wants ints).
    out.num_docs, out.num_tokens = cooc.num_docs, cooc.num_tokens
    return out


def partitions_of(st) -> dict:
    """``{"partitions": {key: {version, offset, ...}}}`` of a partitioned read, else {}."""
    parts = getattr(st, "partitions", None)
    return {"partitions": dict(parts)} if parts else {}


def by_word(rows: np.ndarray, old_words: list[str], new_words: list[str]) -> np.ndarray:
    """``rows`` (one per word of ``old_words``) moved to ``new_words``' order; zeros for words
    that are new."""
    index = {w: i for i, w in enumerate(old_words)}
    src = np.array([index.get(w, -1) for w in new_words], dtype=np.int64)
    out = np.zeros((len(new_words),) + rows.shape[1:])
    out[src >= 0] = rows[src[src >= 0]]
    return out


def check_documents(docs: DocumentState | None, *, n_topics: int, method: str,
                    anchor_method: str, anchor_min_df: float) -> None:
    """Raise :class:`Skip` unless ``docs`` serve ``method`` with ``anchor_method`` for
    ``n_topics`` topics."""
    K = n_topics
    if docs is None:
        raise Skip("the store keeps no document statistics yet (the first checkpoint "
                   "after the method changed starts them)")
    if method == "tsvd":
        n = 0 if docs.documents is None else docs.documents.shape[0]
        if n <= K:
            raise Skip(f"{n} documents in the reservoir, need more than {K}")
        return
    if docs.split is None or (anchor_method == "rp" and docs.sketch is None):
        raise Skip(f"the store's document statistics {docs.settings.to_dict()} do not "
                   f"serve anchors {anchor_method!r} yet")
    s = docs.split
    min_df = novel_word_min_df(s, K, float(anchor_min_df))
    candidates = int(np.count_nonzero(
        (s.mass_first > 0) & (s.mass_second > 0) & (s.doc_freq >= min_df)))
    if candidates < K:
        raise Skip(f"{candidates} novel-word candidates (in both document halves, "
                   f"document frequency >= {min_df:g}), need {K}")


def check_enough(cooc, n_words: int, *, n_topics: int, method: str,
                 anchor_min_df: float) -> None:
    """Raise :class:`Skip` unless ``cooc`` has more than ``n_topics`` usable words (and, for
    ``method`` anchor, as many anchor candidates)."""
    K = n_topics
    if float(cooc.num_docs) <= 0:
        raise Skip("no documents with two or more vocabulary words yet")
    # A word's co-occurrence row sums to its share of the documents of >= 2 tokens it is
    # in, so it is nonzero where its document frequency is: O(V), not a pass over V².
    active = int(np.count_nonzero(cooc.doc_freq > 0))
    if active <= K:
        raise Skip(f"{active} usable words (of {n_words}), need more than {K}")
    if method != "anchor":
        return  # no anchor words to choose
    min_df = anchor_min_df_for(cooc.doc_freq[cooc.doc_freq > 0], K, int(anchor_min_df),
                               num_docs=float(cooc.num_docs),
                               num_tokens=float(cooc.num_tokens))
    candidates = int(np.count_nonzero(cooc.doc_freq >= min_df))
    if candidates < K:
        raise Skip(f"{candidates} anchor candidates (document frequency >= {min_df:g}), "
                   f"need {K}")


def model_settings(kw: Mapping[str, Any], prefixes: tuple[str, ...]) -> dict[str, Any]:
    """The configured model settings whose names start with ``prefixes``, defaults included
    (``AnchorModel``'s; its anchor finder is set to ``qr``, as DDP's and RP's are not its)."""
    params = AnchorModel(**{**kw, "anchor_method": "qr"}).get_params()
    return {k: v for k, v in params.items() if k.startswith(prefixes)}


def keeps_read(cooc, max_bytes: int | None) -> bool:
    """Whether a sparse read's counts ``cooc`` (a
    :class:`~anchorstream.stats.sparse.SparseCooccurrence`) are kept for the next refresh:
    while they take at most :data:`SPARSE_KEEP` ``V²`` bytes or ``max_bytes``, whichever is
    more (None: whatever they take).

    >>> import scipy.sparse as sp
    >>> from anchorstream.stats.sparse import SparseCooccurrence
    >>> def counts(upper):
    ...     return SparseCooccurrence(upper, np.ones(10), np.ones(10), 10, 100)
    >>> keeps_read(counts(sp.identity(10, format="csr")), 0)  # 164 bytes, under 2 V² = 200
    True
    >>> keeps_read(counts(sp.csr_matrix(np.triu(np.ones((10, 10))))), 500)  # 704 bytes: over both
    False
    """
    V = cooc.n_words
    return max_bytes is None or cooc.nbytes <= max(SPARSE_KEEP * V * V, max_bytes)
