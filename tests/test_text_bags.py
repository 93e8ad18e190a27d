"""Bags of words (anchorstream.text.bags): documents held as word ids give what a dictionary
lookup per token gives (the twins below), and so do the functions on token lists."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.text.bags import (
    TokenIdDocuments,
    count_matrix,
    count_runs_utf8,
    select_vocabulary,
    vocabulary_by_df,
)
from anchorstream.text.windows import window_documents
from anchorstream.zarrio import encode_words


def _slow_vocabulary(docs, *, min_df, max_df, max_size):
    """Twin: each document's distinct words counted in a Counter."""
    df = Counter()
    for tokens in docs:
        df.update(set(tokens))
    return vocabulary_by_df(df, len(docs), min_df=min_df, max_df=max_df, max_size=max_size)


def _slow_counts(docs, vocabulary):
    """Twin: a dictionary lookup per token, duplicates summed."""
    index = {w: j for j, w in enumerate(vocabulary)}
    rows, cols = [], []
    for d, tokens in enumerate(docs):
        for w in tokens:
            if w in index:
                rows.append(d)
                cols.append(index[w])
    X = sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(docs), len(vocabulary)))
    X.sum_duplicates()
    return X

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
    assert got.dtype == np.float64
    assert got.indices.dtype == np.int32  # what the numba kernels are compiled for
    assert got.has_canonical_format
    assert (got != want).nnz == 0


@settings(max_examples=200, deadline=None)
@given(_documents, st.integers(1, 4), st.floats(0.05, 1.0), st.sampled_from([None, 1, 3, 100]))
def test_the_same_vocabulary_as_from_token_lists(docs, min_df, max_df, max_size):
    held = _held(docs)
    assert list(held) == docs
    assert len(held) == len(docs) and held.n_tokens == sum(map(len, docs))
    want = _slow_vocabulary(docs, min_df=min_df, max_df=max_df, max_size=max_size)
    assert held.select_vocabulary(min_df=min_df, max_df=max_df, max_size=max_size) == want
    assert select_vocabulary(iter(docs), min_df=min_df, max_df=max_df, max_size=max_size) == want


@settings(max_examples=200, deadline=None)
@given(_documents, st.lists(st.sampled_from("a b c d e f g h ab ba é zz".split()),
                            unique=True, max_size=8), st.integers(2, 5))
def test_the_same_counts_and_window_counts_as_from_token_lists(docs, vocabulary, size):
    # The vocabulary in any order, with words no document has ("zz"), or none at all.
    held = _held(docs)
    want = _slow_counts(docs, vocabulary)
    _same_matrix(held.count_matrix(vocabulary), want)
    _same_matrix(count_matrix(iter(docs), vocabulary), want)
    ends = np.cumsum([0] + [len(tokens) for tokens in docs])  # one flat list, as a store's line
    flat = encode_words([w for tokens in docs for w in tokens])  # packed, as a store's line
    _same_matrix(count_runs_utf8(*flat, ends, vocabulary), want)
    _same_matrix(held.window_count_matrix(vocabulary, size),
                 _slow_counts(list(window_documents(docs, size)), vocabulary))


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
    for ends in ([1, 2], [0, 1], [0, 2, 1, 3], []):  # not 0 .. the tokens, rising
        with pytest.raises(InputError, match="ends"):
            count_runs_utf8(*encode_words(["x", "y", "x"]), ends, ["x"])
    with pytest.raises(InputError, match="duplicate"):
        count_runs_utf8(*encode_words(["x"]), [0, 1], ["x", "x"])
    with pytest.raises(InputError, match="min_df"):
        held.select_vocabulary(min_df=0)
    with pytest.raises(InputError, match="window"):
        held.window_count_matrix(["x"], 1)
