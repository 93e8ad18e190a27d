"""Documents cut into windows of consecutive tokens (anchorstream/text/windows.py)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import anchorstream.text.windows as windows_mod
from anchorstream.errors import InputError
from anchorstream.text.windows import check_window, window_documents

DOCS = st.lists(st.lists(st.sampled_from("abcdefg"), max_size=40), max_size=12)


def test_module_doctests():
    result = doctest.testmod(windows_mod)
    assert result.failed == 0 and result.attempted > 0


@given(DOCS, st.integers(2, 30))
def test_windows_join_to_the_documents_in_order(docs, size):
    out = [list(w) for w in window_documents(docs, size)]
    assert sum(out, []) == sum(docs, [])
    assert all(1 <= len(w) <= size for w in out)
    # Each document gives ceil(n / size) windows: every one full but its last.
    assert len(out) == sum(-(-len(d) // size) for d in docs)
    at = 0
    for d in docs:
        n = -(-len(d) // size)
        mine = out[at:at + n]
        assert sum(mine, []) == d
        assert all(len(w) == size for w in mine[:-1])
        at += n


def test_a_numpy_integer_is_a_window():
    assert check_window(np.int64(12)) == 12 and type(check_window(np.int64(12))) is int


def test_a_document_no_longer_than_the_window_is_passed_through():
    doc = ["x", "y", "z"]
    assert list(window_documents([doc, []], 3)) == [doc]


@pytest.mark.parametrize("bad", [1, 0, -5, 2.5, "12", True, None])
def test_a_bad_window_is_named(bad):
    with pytest.raises(InputError, match="window.*" + repr(bad).replace(".", r"\.")
                       .replace("(", r"\(")):
        check_window(bad)
    with pytest.raises(InputError):
        list(window_documents([["a", "b", "c"]], bad))
