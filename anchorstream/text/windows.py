"""Documents cut into windows of consecutive tokens: where the pair refinement counts its pairs.

A long document drifts from topic to topic. Its co-occurrence pairs every word with every
other, so the pairs of two distant passages join topics that never meet in a short text. The
anchor model is fitted on whole documents all the same (the document weighting caps what a
long one adds); only the pair refinement (:mod:`anchorstream.model.refine`), whose EM fits the
pairs' distribution ``B R Bᵀ`` directly, may instead count its pairs inside windows of
``size`` consecutive tokens of each document (``anchorstream fit --refine-window``). With
windows of 24 tokens, held-out NPMI rose by 0.017-0.019 on manuals and speeches at K = 30 and
by 0.025-0.067 with e-mail at K = 100, and fell by 0.023 on technical package descriptions,
which keep one subject from the first word to the last (benchmarks/README.md, "The
refinement's pairs in windows"). A store cuts the same windows as documents arrive
(:func:`window_rows`, from where each in-vocabulary token stood) and keeps their pairs beside
the counts (``model.refine_window``, :mod:`anchorstream.stats.windowpairs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from anchorstream.errors import InputError

__all__ = ["LONG_DOCUMENT_TOKENS", "WINDOWS_SUGGESTED_GAIN", "WINDOWS_SUGGESTED_SHARE",
           "WINDOWS_SUGGESTED_SIZE", "WINDOWS_SUGGESTED_TOPICS", "check_window", "long_token_share", "window_documents",
           "window_rows", "windows_suggested"]

#: A document of more tokens than this is *long*: :func:`long_token_share` measures how much
#: of a corpus such documents hold. On the benchmark's corpora that share is 0.77-1.00 for the
#: e-mail, the manual sections, the book chapters and the kernel's documentation and at most
#: 0.16 for every other (the speeches' paragraphs and the technical descriptions 0.09-0.11;
#: benchmarks/README.md, "Other numbers of topics").
LONG_DOCUMENT_TOKENS = 100
#: Where at least this share of the tokens stand in long documents and the model has at least
#: :data:`WINDOWS_SUGGESTED_TOPICS` topics, refining in windows of
#: :data:`WINDOWS_SUGGESTED_SIZE` tokens is suggested (``anchorstream fit``'s note; the
#: daemon's ``anchorstream_tokens_in_long_documents_total``): on the four such corpora of the
#: quality benchmark (e-mail, manual sections, book chapters, and the kernel's documentation,
#: added to check the rule) the windows scored -0.006 to +0.068 held-out NPMI against the
#: default from K = 30 on, +0.030 on average, and -0.045 to +0.010 at K = 10. A suggestion,
#: not a default: for the daemon to refine in windows its store must keep their pairs
#: (``model.refine_window``), which every stream would pay for (10-21 % more ingest CPU and a
#: few megabytes, measured in session 47), and count the long documents' tokens, which it
#: does not yet.
WINDOWS_SUGGESTED_SHARE = 0.5
WINDOWS_SUGGESTED_TOPICS = 30
WINDOWS_SUGGESTED_SIZE = 24
#: The windows' mean gain in held-out NPMI over those cells, as the notes quote it.
WINDOWS_SUGGESTED_GAIN = 0.03


def check_window(size) -> int:
    """``size`` as an int, if it is a whole number of tokens ``>= 2`` (a window of one token
    holds no pair).

    Raises
    ------
    InputError
        Otherwise, naming the value.
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise InputError(f"a window must be an integer number of tokens >= 2, got {size!r}")
    return int(size)


def window_documents(token_lists: Iterable[Sequence[str]], size: int) -> Iterator[Sequence[str]]:
    """Each document's consecutive windows of ``size`` tokens, in order.

    A document of ``n`` tokens gives ``ceil(n / size)`` windows, the last one shorter when
    ``size`` does not divide ``n``; one of at most ``size`` tokens is its own single window,
    and an empty one gives none. The windows of a document, joined, are the document.

    Parameters
    ----------
    token_lists : iterable of sequences of str
    size : int
        Tokens per window, ``>= 2``.

    Examples
    --------
    >>> [list(w) for w in window_documents([["a", "b", "c", "d", "e"], ["f"]], 2)]
    [['a', 'b'], ['c', 'd'], ['e'], ['f']]
    """
    size = check_window(size)
    for tokens in token_lists:
        if len(tokens) <= size:
            if len(tokens):
                yield tokens
            continue
        for start in range(0, len(tokens), size):
            yield tokens[start:start + size]


def window_rows(indptr, token_positions, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The windows of documents given as their in-vocabulary tokens: ``(window_indptr,
    window_doc)``.

    Token ``j`` of document ``d`` (``indptr[d] <= j < indptr[d + 1]``, in order) stood at
    ``token_positions[j]`` of its token list, so it falls in that document's window
    ``token_positions[j] // size``: the windows of :func:`window_documents`, whose
    out-of-vocabulary tokens take places too. A window is a run of consecutive tokens, so the
    result is the ``indptr`` of those runs (windows without an in-vocabulary token are left
    out) and the document of each.

    Examples
    --------
    >>> ip, doc = window_rows([0, 4, 5], [0, 1, 3, 4, 7], 2)
    >>> ip.tolist(), doc.tolist()
    ([0, 2, 3, 4, 5], [0, 0, 0, 1])
    """
    size = check_window(size)
    indptr = np.asarray(indptr, dtype=np.int64)
    pos = np.asarray(token_positions, dtype=np.int64)
    n_docs = indptr.size - 1
    if pos.size != indptr[-1]:
        raise InputError(f"{pos.size} token positions for {int(indptr[-1])} tokens")
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), np.diff(indptr))
    window = pos // size
    starts = np.ones(pos.size, dtype=bool)
    starts[1:] = (doc[1:] != doc[:-1]) | (window[1:] != window[:-1])
    first = np.flatnonzero(starts)
    return np.append(first, pos.size).astype(np.int64), doc[first]


def long_token_share(lengths, long: int = LONG_DOCUMENT_TOKENS) -> float:
    """The share of all tokens that stand in documents of more than ``long`` tokens (0.0
    where there are no tokens).

    Parameters
    ----------
    lengths : int array-like of shape (n_docs,)
        Each document's number of tokens.
    long : int
        The length past which a document is long.

    Examples
    --------
    >>> long_token_share([10, 150, 40])
    0.75
    >>> long_token_share([])
    0.0
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    return float(lengths[lengths > long].sum() / total) if total else 0.0


def windows_suggested(share: float, n_topics: int) -> bool:
    """Whether refining in windows is suggested for a corpus whose long documents hold
    ``share`` of the tokens (:func:`long_token_share`), fitted with ``n_topics`` topics.

    >>> windows_suggested(0.9, 50), windows_suggested(0.9, 10), windows_suggested(0.1, 50)
    (True, False, False)
    """
    return share >= WINDOWS_SUGGESTED_SHARE and n_topics >= WINDOWS_SUGGESTED_TOPICS
