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
refinement's pairs in windows"). A store keeps its documents' pairs, not their tokens, so
only a fit from files can count them so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from anchorstream.errors import InputError

__all__ = ["check_window", "window_documents"]


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
