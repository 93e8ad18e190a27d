"""The UTF-8 lookup kernel against its twin (small sizes: also run without the JIT)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream._kernels.words import utf8_lookup
from anchorstream.zarrio import encode_words
from tests.naive_words import naive_utf8_lookup


_word = st.lists(st.sampled_from(["a", "b", "\x00", "é", "日", "e\u0301"]),
                 max_size=4).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_word, unique=True, max_size=12), st.lists(_word, max_size=30))
def test_lookup_matches_twin(vocabulary, tokens):
    # Empty words, NUL bytes, words that are prefixes of others, several bytes a character.
    vb, vo = encode_words(vocabulary)
    tb, to = encode_words(tokens)
    got = utf8_lookup(vb, vo, tb, to)
    np.testing.assert_array_equal(got, naive_utf8_lookup(vb, vo, tb, to))
    np.testing.assert_array_equal(
        got, [vocabulary.index(t) if t in vocabulary else -1 for t in tokens])


def test_lookup_with_many_words_and_an_empty_vocabulary():
    vocabulary = [f"w{i}" for i in range(3000)]
    tokens = [f"w{i}" for i in range(0, 6000, 7)]
    got = utf8_lookup(*encode_words(vocabulary), *encode_words(tokens))
    np.testing.assert_array_equal(got, [i if i < 3000 else -1 for i in range(0, 6000, 7)])
    assert utf8_lookup(*encode_words([]), *encode_words(["a", ""])).tolist() == [-1, -1]
