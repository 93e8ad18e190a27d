"""Bags of words: a vocabulary chosen by document frequency, and documents counted over it.

:func:`select_vocabulary` and :func:`count_matrix` take token lists (what
:class:`~anchorstream.text.tokenize.Tokenizer` returns); :class:`TokenIdDocuments` holds the
same documents as word ids while they are read, and gives the same vocabulary and counts (and
those of the documents' windows, :mod:`anchorstream.text.windows`) without a Python string per
token: ``anchorstream fit --input`` holds a whole corpus so between reading and counting.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import count

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.text.windows import window_rows

__all__ = ["TokenIdDocuments", "count_matrix", "count_runs_utf8", "select_vocabulary",
           "vocabulary_by_df"]


def _check_token_list(tokens: object, where: str) -> None:
    if isinstance(tokens, str):
        raise InputError(
            f"{where} expects token lists (e.g. from Tokenizer), got a str; tokenize first"
        )


def select_vocabulary(
    token_lists: Iterable[Sequence[str]],
    *,
    min_df: int = 5,
    max_df: float = 0.5,
    max_size: int | None = 5000,
) -> list[str]:
    """Choose a vocabulary by document frequency (batch mode).

    Parameters
    ----------
    token_lists : iterable of sequences of str
        One token list per document (read once, so a generator is fine).
    min_df : int, default 5
        Keep words occurring in at least this many documents.
    max_df : float in (0, 1], default 0.5
        Drop words occurring in more than this fraction of the documents.
    max_size : int or None, default 5000
        Keep at most this many words (the most document-frequent); ``None`` for no cap.

    Returns
    -------
    list of str
        Most document-frequent first, ties broken alphabetically (by code point), so the result
        is deterministic.

    Raises
    ------
    InputError
        For out-of-range parameters or a str instead of a token list.

    Examples
    --------
    >>> docs = [["apple", "pie"], ["apple", "tart"], ["pie", "apple"], ["tart"]]
    >>> select_vocabulary(docs, min_df=2, max_df=0.7)
    ['pie', 'tart']
    """
    _check_vocabulary_args(min_df, max_df, max_size)  # before the documents are read
    return TokenIdDocuments.of(token_lists, "select_vocabulary").select_vocabulary(
        min_df=min_df, max_df=max_df, max_size=max_size)


def _check_vocabulary_args(min_df, max_df, max_size) -> None:
    if isinstance(min_df, bool) or not isinstance(min_df, (int, np.integer)) or min_df < 1:
        raise InputError(f"min_df must be an int >= 1 (a number of documents), got {min_df!r}")
    if isinstance(max_df, bool) or not isinstance(max_df, (int, float, np.floating)) or not (
        0.0 < max_df <= 1.0
    ):
        raise InputError(f"max_df must be a fraction of documents in (0, 1], got {max_df!r}")
    if max_size is not None and (
        isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or max_size < 1
    ):
        raise InputError(f"max_size must be an int >= 1 or None, got {max_size!r}")


def vocabulary_by_df(df: Mapping[str, int], n_docs: int, *, min_df: float, max_df: float,
                     max_size: int | None) -> list[str]:
    """:func:`select_vocabulary`'s rule over document frequencies counted elsewhere.

    ``df`` maps each word to the number of the ``n_docs`` documents containing it; the words in
    at least ``min_df`` and at most ``max_df × n_docs`` of them, most document-frequent first
    (ties alphabetically), at most ``max_size``. ``anchorstream ingest`` uses it to choose a
    store's vocabulary by ``fit --input``'s rule without holding the token lists.

    >>> vocabulary_by_df({"a": 3, "b": 2, "c": 2, "d": 1}, 4, min_df=2, max_df=0.7, max_size=None)
    ['b', 'c']
    """
    max_count = max_df * n_docs
    kept = [(-c, w) for w, c in df.items() if min_df <= c <= max_count]
    kept.sort()
    if max_size is not None:
        kept = kept[:max_size]
    return [w for _, w in kept]


def _vocabulary_index(vocabulary: Sequence[str]) -> dict[str, int]:
    if isinstance(vocabulary, str):
        raise InputError("vocabulary must be a sequence of words, got a str")
    index = {w: j for j, w in enumerate(vocabulary)}
    if len(index) != len(vocabulary):
        dupes = sorted(w for w, c in Counter(vocabulary).items() if c > 1)
        raise InputError(f"vocabulary has duplicate words: {dupes[:10]}")
    return index


def count_matrix(token_lists: Iterable[Sequence[str]], vocabulary: Sequence[str]) -> sp.csr_matrix:
    """Count vocabulary words per document.

    Parameters
    ----------
    token_lists : iterable of sequences of str
        One token list per document; tokens outside ``vocabulary`` are ignored.
    vocabulary : sequence of str
        Distinct words; word ``vocabulary[j]`` is column ``j``.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_docs, n_words), float64
        Canonical CSR (sorted indices, no duplicates); a document with no vocabulary word is an
        empty row.

    Raises
    ------
    InputError
        If the vocabulary has duplicates or a document is a str instead of a token list.

    Examples
    --------
    >>> count_matrix([["b", "a", "b"], ["c"]], ["a", "b"]).toarray()
    array([[1., 2.],
           [0., 0.]])
    """
    _vocabulary_index(vocabulary)  # checked before the documents are read
    return TokenIdDocuments.of(token_lists, "count_matrix").count_matrix(vocabulary)


def count_runs_utf8(blob: np.ndarray, offsets: np.ndarray, ends,
                    vocabulary: Sequence[str]) -> sp.csr_matrix:
    """:func:`count_matrix` of the documents ``tokens[ends[d]:ends[d + 1]]`` of one flat token
    list (``ends[0]`` is 0) packed as :func:`anchorstream.zarrio.encode_words` packs it (a
    UTF-8 byte blob and the offset where each token starts): a store's delay line as it is
    read. The tokens are looked up by their bytes in one pass (kernel
    :func:`~anchorstream._kernels.words.utf8_lookup`), never decoded: 1,000 documents of 100
    tokens took 19-20 ms decoded and looked up as strings, 8 so (the lookup 3 of them).

    Examples
    --------
    >>> from anchorstream.zarrio import encode_words
    >>> count_runs_utf8(*encode_words(["b", "a", "b", "c"]), [0, 3, 4], ["a", "b"]).toarray()
    array([[1., 2.],
           [0., 0.]])
    """
    from anchorstream._kernels.words import utf8_lookup
    from anchorstream.zarrio import encode_words  # the store's helpers: only a store reads so

    n_words = len(_vocabulary_index(vocabulary))  # distinct words
    ids = utf8_lookup(*encode_words(vocabulary), np.asarray(blob, dtype=np.uint8),
                      np.asarray(offsets, dtype=np.int64))
    ends = np.asarray(ends, dtype=np.int64)
    if ends.ndim != 1 or ends.size < 1 or ends[0] != 0 or ends[-1] != ids.size \
            or np.any(np.diff(ends) < 0):
        raise InputError(f"ends must rise from 0 to the {ids.size} tokens")
    n = ends.size - 1
    keep = ids >= 0
    doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(ends))[keep]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc, minlength=n), out=indptr[1:])
    itype = np.int32 if max(ids.size, n_words) < 2**31 else np.int64  # as _bags
    X = sp.csr_matrix((np.ones(doc.size), ids[keep].astype(itype), indptr.astype(itype)),
                      shape=(n, n_words))
    X.sum_duplicates()  # sorts each row's words and sums repeated ones: canonical
    return X


class TokenIdDocuments:
    """Documents' tokens held as word ids, for a corpus read whole before it is counted.

    A token list of Python strings costs ~66 bytes a token (a string object each, and its
    pointer); here a token is one 4-byte id into the distinct words seen, in the order first
    seen. The vocabulary and the counts come from sparse arithmetic on the ids (the functions
    :func:`select_vocabulary` and :func:`count_matrix` are this class on token lists; the tests
    hold both to a dictionary lookup per token). Iterating gives the token lists back.

    Examples
    --------
    >>> docs = TokenIdDocuments()
    >>> for tokens in [["apple", "pie"], ["apple", "tart"], ["pie", "apple"], ["tart"]]:
    ...     docs.append(tokens)
    >>> vocabulary = docs.select_vocabulary(min_df=2, max_df=0.7)
    >>> vocabulary, docs.count_matrix(vocabulary).toarray().tolist()
    (['pie', 'tart'], [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    >>> list(docs)[2], len(docs), docs.n_tokens, docs.lengths().tolist()
    (['pie', 'apple'], 4, 7, [2, 2, 2, 1])
    """

    def __init__(self) -> None:
        self._index: defaultdict[str, int] = defaultdict(count().__next__)
        self._ids = array("i")
        self._ends = array("q")
        # The documents' bags of every word seen, for as long as no document is added: the
        # vocabulary and the counts are both read from them.
        self._documents_bags: sp.csr_matrix | None = None

    @classmethod
    def of(cls, token_lists: Iterable[Sequence[str]], where: str = "TokenIdDocuments.of"):
        """The documents of ``token_lists`` (read once)."""
        documents = cls()
        for tokens in token_lists:
            documents.append(tokens, where)
        return documents

    def append(self, tokens: Sequence[str], where: str = "TokenIdDocuments.append") -> None:
        """Add one document's tokens."""
        _check_token_list(tokens, where)
        self._documents_bags = None
        self._ids.extend(map(self._index.__getitem__, tokens))
        self._ends.append(len(self._ids))

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def n_tokens(self) -> int:
        return len(self._ids)

    def lengths(self) -> np.ndarray:
        """Each document's number of tokens, in order (int64)."""
        return np.diff(self._indptr())

    def _words(self) -> list[str]:
        return list(self._index)  # in id order: a dict keeps insertion order

    def _indptr(self) -> np.ndarray:
        return np.concatenate([[0], np.frombuffer(self._ends, dtype=np.int64)]).astype(np.int64)

    def __iter__(self) -> Iterator[list[str]]:
        words, ids, start = self._words(), self._ids, 0
        for end in self._ends:
            yield [words[i] for i in ids[start:end]]
            start = end

    def _bags(self, indptr: np.ndarray) -> sp.csr_matrix:
        """Counts of every word seen, one row per run ``indptr[r]:indptr[r + 1]`` of the
        tokens, canonical."""
        ids = np.frombuffer(self._ids, dtype=np.int32)
        n_words = len(self._index)
        index = np.int32 if max(ids.size, n_words) < 2**31 else np.int64
        bags = sp.csr_matrix((np.ones(ids.size), ids.astype(index), indptr.astype(index)),
                             shape=(indptr.size - 1, n_words))
        bags.sum_duplicates()  # sorts each row's words and sums repeated ones
        return bags

    def _document_bags(self) -> sp.csr_matrix:
        if self._documents_bags is None:
            self._documents_bags = self._bags(self._indptr())
        return self._documents_bags

    def document_frequency(self) -> dict[str, int]:
        """The number of documents each word seen is in."""
        df = np.bincount(self._document_bags().indices, minlength=len(self._index))
        return dict(zip(self._words(), df.tolist()))

    def select_vocabulary(self, *, min_df: int = 5, max_df: float = 0.5,
                          max_size: int | None = 5000) -> list[str]:
        """:func:`select_vocabulary` of these documents."""
        _check_vocabulary_args(min_df, max_df, max_size)
        return vocabulary_by_df(self.document_frequency(), len(self), min_df=min_df,
                                max_df=max_df, max_size=max_size)

    def _select(self, bags: sp.csr_matrix, vocabulary: Sequence[str]) -> sp.csr_matrix:
        index = _vocabulary_index(vocabulary)
        seen = self._index
        columns = [seen.get(w, -1) for w in index]  # not seen: an empty column
        known = np.flatnonzero(np.asarray(columns) >= 0)
        X = sp.csr_matrix((bags.shape[0], len(index)))
        if known.size:
            picked = bags[:, np.asarray(columns)[known]]  # the known words, in vocabulary order
            X = sp.csr_matrix((picked.data, known[picked.indices], picked.indptr),
                              shape=(bags.shape[0], len(index)))
        X.sort_indices()
        return X

    def count_matrix(self, vocabulary: Sequence[str]) -> sp.csr_matrix:
        """:func:`count_matrix` of these documents over ``vocabulary``."""
        return self._select(self._document_bags(), vocabulary)

    def window_count_matrix(self, vocabulary: Sequence[str], size: int) -> sp.csr_matrix:
        """``count_matrix(window_documents(self, size), vocabulary)``: one row per window of
        ``size`` consecutive tokens of each document (the last one shorter; an empty document
        has none)."""
        indptr = self._indptr()
        doc = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(indptr))
        position = np.arange(indptr[-1], dtype=np.int64) - indptr[doc]
        # Every token has an id here, so every window holds one: window_rows leaves none out.
        window_indptr, _ = window_rows(indptr, position, size)
        return self._select(self._bags(window_indptr), vocabulary)
