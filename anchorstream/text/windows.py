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

``auto`` (the default of ``fit --refine-window``, ``ingest --refine-window`` and
``model.refine_window``) decides by the documents' mean length and the number of topics
(:func:`refine_window_for`, :func:`auto_rule`): windows of 24 tokens where documents average
80 tokens of the vocabulary or more and the model has 30 topics or more, or 25 tokens or more
and either 75 topics or more or at most 100 documents per topic; whole documents elsewhere.
A new store keeps the windows' pairs of 24 so that the rule can be applied to it at every fit
(a stream's store that grows past 100 documents per topic stops refining in windows then).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from anchorstream.errors import InputError

__all__ = ["AUTO", "LONG_DOCUMENT_TOKENS", "WINDOWS_AUTO_DOCS_PER_TOPIC",
           "WINDOWS_AUTO_MANY_MIN_LENGTH",
           "WINDOWS_AUTO_MANY_TOPICS", "WINDOWS_AUTO_MIN_LENGTH", "WINDOWS_AUTO_SIZE",
           "WINDOWS_AUTO_TOPICS", "WINDOWS_LATE_SHARE", "auto_rule", "check_refine_window",
           "check_window", "long_token_share", "refine_window_for", "window_documents",
           "window_rows", "windows_suggested"]

#: A document of more tokens than this is *long*: :func:`long_token_share` measures how much
#: of a corpus such documents hold (reported by ``fit --input`` and ``ingest``, and as the
#: daemon's ``anchorstream_tokens_in_long_documents_total``). On the benchmark's corpora that
#: share is 0.77-1.00 for the e-mail, the manual sections, the book chapters and the kernel's
#: documentation and at most 0.16 for every other (benchmarks/README.md, "Other numbers of
#: topics").
LONG_DOCUMENT_TOKENS = 100
#: ``refine_window: auto`` (``fit --refine-window auto``, the default) refines in windows of
#: :data:`WINDOWS_AUTO_SIZE` tokens where documents average at least this many tokens of the
#: vocabulary (documents of >= 2, as :func:`~anchorstream.model.refine.refine_method_for`
#: measures them) and the model has at least :data:`WINDOWS_AUTO_TOPICS` topics. On the four
#: corpora of long documents of the quality benchmark (e-mail 107, manual sections 173, the
#: kernel's documentation 214, book chapters 946 tokens of the vocabulary) the windows scored
#: -0.006 to +0.068 held-out NPMI against whole documents from K = 30 on, +0.030 on average,
#: and -0.045 to +0.010 at K = 10; every other corpus averages at most 60 (the 60-token
#: semi-synthetic ones; the speeches' paragraphs 35, the technical descriptions 34, where
#: windows gained +0.017 and lost -0.023: the length does not tell those two apart, so
#: neither is refined in windows). 80 lies in the gap between 60 and 107, and the rule
#: selects the same corpora as the share of tokens in long documents (>= 0.5), which a store
#: does not keep. Measured in session 48 (benchmarks/README.md, "Windows by default where
#: documents are long").
WINDOWS_AUTO_MIN_LENGTH = 80.0
WINDOWS_AUTO_TOPICS = 30
#: ``auto`` also refines in windows where the model has at least
#: :data:`WINDOWS_AUTO_MANY_TOPICS` topics and documents average at least
#: :data:`WINDOWS_AUTO_MANY_MIN_LENGTH` tokens of the vocabulary (shorter ones ``refine: auto``
#: refines whole: :data:`~anchorstream.model.refine.REFINE_AUTO_MAX_LENGTH`, the same 25). On
#: the seven corpora of 30-40 tokens (speeches, technical descriptions, and the Italian,
#: French, Japanese, Portuguese and Russian ones) windows scored -0.033 to +0.018 against whole
#: documents at K = 50 (five measured, -0.008 on average), -0.027 to +0.086 at K = 60 (-0.006
#: without the Russian one's +0.086), -0.009 to +0.085 at K = 75 (+0.006 without it, four of
#: six ahead) and -0.001 to +0.029 at K = 100 (+0.012, five of six ahead; the speeches +0.125
#: against tomotopy's +0.107, where whole documents trail it at +0.096). 75 is the first K
#: measured where they gain. Measured in session 51 (benchmarks/README.md, "Windows with many
#: topics").
WINDOWS_AUTO_MANY_TOPICS = 75
WINDOWS_AUTO_MANY_MIN_LENGTH = 25.0
#: ``auto`` also refines in windows where documents average at least
#: :data:`WINDOWS_AUTO_MANY_MIN_LENGTH` tokens and there are at most this many documents per
#: topic (``num_docs <= WINDOWS_AUTO_DOCS_PER_TOPIC * K``), whatever K: the few thousand
#: documents a user starts with. On 500-5,000 training documents of eleven corpora of
#: 30-1,500 tokens (random samples; the Russian one and the book chapters whole) at K = 10,
#: 20, 30 and 50, windows scored -0.011 to +0.076 against the unrefined default at 20-100
#: documents per topic (+0.026 on average, 25 of 29 ahead) and -0.041 to +0.024 at 155-200
#: (-0.015, one of five ahead). Measured in session 52 (benchmarks/README.md, "Windows on
#: small corpora").
WINDOWS_AUTO_DOCS_PER_TOPIC = 100.0
#: The windows ``auto`` refines in, and a store keeps the pairs of (24: the benchmark's
#: choice among 12-32, "The refinement's pairs in windows").
WINDOWS_AUTO_SIZE = 24
#: ``auto`` refines in a store's windows only where they count its documents from the start,
#: or from at most this share of them on (windows started later, by a setting changed on an
#: existing store, would weigh only the recent documents).
WINDOWS_LATE_SHARE = 0.01
#: What ``refine_window`` may be besides a size: ``auto`` (the rule above) or ``None`` (whole
#: documents).
AUTO = "auto"


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


def windows_suggested(num_docs: float, num_tokens: float, n_topics: int) -> bool:
    """Whether ``auto`` refines in windows: documents (``num_docs`` of >= 2 tokens holding
    ``num_tokens`` tokens of the vocabulary) average at least :data:`WINDOWS_AUTO_MIN_LENGTH`
    tokens and the model has at least :data:`WINDOWS_AUTO_TOPICS` topics, or at least
    :data:`WINDOWS_AUTO_MANY_MIN_LENGTH` tokens and either :data:`WINDOWS_AUTO_MANY_TOPICS`
    topics or at most :data:`WINDOWS_AUTO_DOCS_PER_TOPIC` documents per topic.

    >>> windows_suggested(10000, 1500000, 50), windows_suggested(10000, 1500000, 10)
    (True, False)
    >>> windows_suggested(10000, 400000, 50), windows_suggested(10000, 400000, 100)
    (False, True)
    >>> windows_suggested(2000, 80000, 30), windows_suggested(100, 1500, 10)
    (True, False)
    >>> windows_suggested(0, 0, 100)
    False
    """
    if not num_docs > 0:
        return False
    length = num_tokens / num_docs
    few_docs = num_docs <= WINDOWS_AUTO_DOCS_PER_TOPIC * n_topics
    return ((length >= WINDOWS_AUTO_MIN_LENGTH and n_topics >= WINDOWS_AUTO_TOPICS)
            or (length >= WINDOWS_AUTO_MANY_MIN_LENGTH
                and (n_topics >= WINDOWS_AUTO_MANY_TOPICS or few_docs)))


def auto_rule(topics: str = "K") -> str:
    """What ``auto`` decides, in words, naming the number of topics ``topics`` (the option or
    setting that gives it): for the help of ``fit``, the settings' descriptions and notes.

    >>> auto_rule("--topics")[:49]
    'windows of 24 where documents average at least 80'
    """
    return (f"windows of {WINDOWS_AUTO_SIZE} where documents average at least "
            f"{WINDOWS_AUTO_MIN_LENGTH:g} tokens of the vocabulary and {topics} is at least "
            f"{WINDOWS_AUTO_TOPICS}, or at least {WINDOWS_AUTO_MANY_MIN_LENGTH:g} tokens and "
            f"{topics} at least {WINDOWS_AUTO_MANY_TOPICS} or at most "
            f"{WINDOWS_AUTO_DOCS_PER_TOPIC:g} documents per topic; whole documents elsewhere")


def check_refine_window(value) -> int | str | None:
    """``value`` as a ``refine_window`` setting: ``"auto"``, ``None`` (whole documents) or a
    window of >= 2 tokens (:func:`check_window`).

    >>> check_refine_window("auto"), check_refine_window(None), check_refine_window(12)
    ('auto', None, 12)
    """
    if value is None or value == AUTO:
        return value
    return check_window(value)


def refine_window_for(setting, num_docs: float, num_tokens: float, n_topics: int) -> int | None:
    """The window a fit counts its refinement's pairs in, None for whole documents:
    ``setting`` itself (a size, or None), or for ``"auto"`` :data:`WINDOWS_AUTO_SIZE` where
    :func:`windows_suggested`, else None.

    >>> refine_window_for("auto", 10000, 1500000, 50), refine_window_for("auto", 10000, 300000, 50)
    (24, None)
    >>> refine_window_for(12, 10000, 300000, 50), refine_window_for(None, 10000, 1500000, 50)
    (12, None)
    """
    setting = check_refine_window(setting)
    if setting != AUTO:
        return setting
    return WINDOWS_AUTO_SIZE if windows_suggested(num_docs, num_tokens, n_topics) else None
