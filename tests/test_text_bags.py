"""Bags of words (anchorstream.text.bags): documents held as word ids give what token lists give."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.text.bags import (
    TokenIdDocuments,
    count_matrix,
    select_vocabulary,
)
from anchorstream.text.windows import window_documents

# Few distinct words, so that document frequencies tie and repeat; empty documents too.
_documents = st.lists(st.lists(st.sampled_from("a b c d e f g h ab ba é".split()), max_size=12),
                      max_size=25)


def _held(docs) -> TokenIdDocuments:
    held = TokenIdDocuments()
    for tokens in docs:
        held.append(tokens)
    return held


def _same_matrix(got, want) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype == np.float64
    assert got.indices.dtype == want.indices.dtype  # the kernels are compiled for one
    assert got.has_canonical_format
    assert (got != want).nnz == 0


@settings(max_examples=200, deadline=None)
@given(_documents, st.integers(1, 4), st.floats(0.05, 1.0), st.sampled_from([None, 1, 3, 100]))
def test_the_same_vocabulary_as_from_token_lists(docs, min_df, max_df, max_size):
    held = _held(docs)
    assert list(held) == docs
    assert len(held) == len(docs) and held.n_tokens == sum(map(len, docs))
    assert held.select_vocabulary(min_df=min_df, max_df=max_df, max_size=max_size) == (
        select_vocabulary(docs, min_df=min_df, max_df=max_df, max_size=max_size))


@settings(max_examples=200, deadline=None)
@given(_documents, st.lists(st.sampled_from("a b c d e f g h ab ba é zz".split()),
                            unique=True, max_size=8), st.integers(2, 5))
def test_the_same_counts_and_window_counts_as_from_token_lists(docs, vocabulary, size):
    # The vocabulary in any order, with words no document has ("zz"), or none at all.
    held = _held(docs)
    _same_matrix(held.count_matrix(vocabulary), count_matrix(docs, vocabulary))
    _same_matrix(held.window_count_matrix(vocabulary, size),
                 count_matrix(window_documents(docs, size), vocabulary))


def test_document_frequency_and_bad_input():
    held = _held([["x", "y", "x"], [], ["y"]])
    assert held.document_frequency() == {"x": 1, "y": 2}
    assert held.count_matrix(["y", "x"]).toarray().tolist() == [[1, 2], [0, 0], [1, 0]]
    held.append(["z", "x"])  # after a count: the next ones see it
    assert held.document_frequency() == {"x": 2, "y": 2, "z": 1}
    assert held.count_matrix(["z"]).toarray().tolist() == [[0], [0], [0], [1]]
    with pytest.raises(InputError, match="token lists"):
        held.append("a str")
    with pytest.raises(InputError, match="duplicate"):
        held.count_matrix(["x", "x"])
    with pytest.raises(InputError, match="min_df"):
        held.select_vocabulary(min_df=0)
    with pytest.raises(InputError, match="window"):
        held.window_count_matrix(["x"], 1)
