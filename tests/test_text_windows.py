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


@pytest.mark.parametrize("length, topics, window", [
    (80, 30, 24),     # long documents from 30 topics on
    (79.9, 74, None),
    (300, 29, None),  # few topics: whole documents however long
    (25, 75, 24),     # documents of 25 tokens or more from 75 topics on
    (24.9, 200, None),  # shorter ones are refined whole (refine: auto)
    (40, 74, None),
    (40, 100, 24),
])
def test_auto_refines_in_windows_for_long_documents_or_many_topics(length, topics, window):
    """refine_window: auto, at the corners of its rule (text.windows.windows_suggested), on
    a corpus of more documents than the few-documents clause covers."""
    docs = 10_000
    assert docs > windows_mod.WINDOWS_AUTO_DOCS_PER_TOPIC * 74
    assert windows_mod.refine_window_for("auto", docs, length * docs, topics) == window


@pytest.mark.parametrize("docs, length, topics, window", [
    (3000, 40, 30, 24),     # 100 documents per topic: windows
    (3001, 40, 30, None),   # one more: whole documents
    (500, 25, 5, 24),       # whatever K
    (500, 300, 5, 24),      # long documents too, below the long documents' 30 topics
    (500, 24.9, 30, None),  # shorter ones are refined whole (refine: auto)
    (12.5, 40, 1, 24),      # a forgetting store's weighted count
])
def test_auto_refines_in_windows_where_documents_are_few(docs, length, topics, window):
    """refine_window: auto windows a corpus of at most WINDOWS_AUTO_DOCS_PER_TOPIC documents
    per topic from 25 tokens on (session 52: the few thousand documents a user starts with)."""
    assert windows_mod.WINDOWS_AUTO_DOCS_PER_TOPIC == 100
    assert windows_mod.refine_window_for("auto", docs, length * docs, topics) == window


def test_auto_windows_start_where_whole_documents_stop_being_refined():
    """With many topics the windows take over from the whole documents' refinement
    (refine: auto) at its own length, so that no mean length between them goes unrefined."""
    from anchorstream.model.refine import REFINE_AUTO_MAX_LENGTH, refine_method_for

    assert windows_mod.WINDOWS_AUTO_MANY_MIN_LENGTH == REFINE_AUTO_MAX_LENGTH
    topics = windows_mod.WINDOWS_AUTO_MANY_TOPICS
    for length in (5, 24.9, 25, 40, 90):
        whole = refine_method_for("auto", 100, 100 * length) == "joint"
        windowed = windows_mod.windows_suggested(100, 100 * length, topics)
        assert whole != windowed
