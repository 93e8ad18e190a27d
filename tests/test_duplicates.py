"""The duplicate filter (anchorstream/text/duplicates.py): what it drops, what it remembers,
and that a filter rebuilt from its saved ring decides as the one that kept running."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.text.duplicates import DuplicateFilter, document_key

DOCS = st.lists(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3), max_size=40)


def reference(memory: int, docs) -> list[bool]:
    """The rule in words: drop a document of two tokens or more whose tokens equal one of the
    last ``memory`` distinct such documents kept."""
    kept: list[tuple] = []
    out = []
    for d in docs:
        if len(d) < 2:
            out.append(True)
            continue
        new = memory == 0 or tuple(d) not in kept[-memory:]
        out.append(new)
        if new:
            kept.append(tuple(d))
    return out


@settings(max_examples=150, deadline=None)
@given(memory=st.integers(0, 5), docs=DOCS, cut=st.integers(0, 40))
def test_keeps_what_the_rule_keeps_and_a_restored_filter_goes_on_the_same(memory, docs, cut):
    whole = DuplicateFilter(memory).keep(docs).tolist()
    assert whole == reference(memory, docs)
    batched = DuplicateFilter(memory)
    assert list(batched.distinct(iter(docs), batch=3)) == [d for d, k in zip(docs, whole) if k]
    assert batched.skipped == whole.count(False)
    # Saved after `cut` documents and restored (a store's checkpoint, then a restart):
    # the rest is decided the same.
    first = DuplicateFilter(memory)
    head = first.keep(docs[:cut]).tolist()
    again = DuplicateFilter(memory, first.ring if memory else None,
                            first.cursor if memory else 0)
    assert head + again.keep(docs[cut:]).tolist() == whole


def test_a_document_is_its_tokens_in_order():
    assert document_key(["a", "b"]) == document_key(("a", "b"))
    assert document_key(["a", "b"]) != document_key(["b", "a"])
    assert document_key(["ab"]) != document_key(["a", "b"])
    assert document_key(["a\ud800", "b"]) != document_key(["a", "b"])  # any str has a key
    f = DuplicateFilter(10)
    assert f.keep([["a", "b"], ["b", "a"], ["a", "b"], ["a"], ["a"], []]).tolist() == [
        True, True, False, True, True, True]
    assert f.cursor == 2  # short documents are not remembered


def test_changed_since_names_the_ring_slices_to_write():
    f = DuplicateFilter(4)
    assert f.changed_since(0) == []
    f.keep([["a", "b"], ["c", "d"]])
    assert f.changed_since(0) == [(0, 2)]
    f.keep([["e", "f"], ["g", "h"], ["i", "j"]])  # wraps: slots 2, 3, 0
    assert f.changed_since(2) == [(2, 4), (0, 1)]
    assert f.changed_since(4) == [(0, 1)]
    assert f.changed_since(3) == [(3, 4), (0, 1)]
    assert f.changed_since(0) == [(0, 4)]  # all the way round
    assert f.changed_since(f.cursor) == []
    f.keep([["k", "l"], ["m", "n"], ["o", "p"]])  # slots 1, 2, 3: up to the end exactly
    assert f.changed_since(5) == [(1, 4)]


@pytest.mark.parametrize("kwargs, match", [
    ({"memory": -1}, "integer >= 0"),
    ({"memory": 2.5}, "integer >= 0"),
    ({"memory": 2, "cursor": 1}, "needs its ring"),
    ({"memory": 2, "ring": np.zeros(3, dtype=np.uint64)}, "2 uint64 keys"),
    ({"memory": 2, "ring": np.array([5, 5], dtype=np.uint64), "cursor": 2}, "repeated"),
    ({"memory": 2, "ring": np.array([0, 5], dtype=np.uint64), "cursor": 2}, "zero"),
])
def test_refuses_a_bad_memory_or_ring(kwargs, match):
    with pytest.raises(InputError, match=match):
        DuplicateFilter(**kwargs)
