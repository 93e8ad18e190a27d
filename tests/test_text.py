"""Tokenizer, stopword lists, vocabulary selection and count matrices."""

from __future__ import annotations

import collections.abc
import dataclasses
import doctest
import importlib.resources
import json
import pickle
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.text.tokenize as text_mod
from anchorstream.errors import InputError
from anchorstream.text.cjk import split_cjk
from anchorstream.text.tokenize import (
    Tokenizer,
    available_stopword_lists,
    count_matrix,
    load_stopwords,
    select_vocabulary,
)

PLAIN = Tokenizer(stopwords=None, min_length=1, max_length=50, drop_numbers=False)


def test_module_doctests():
    result = doctest.testmod(text_mod)
    assert result.failed == 0 and result.attempted > 0


# --- normalisation and splitting -------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("Hello WORLD", ["hello", "world"]),
        ("Straße STRASSE strasse", ["strasse", "strasse", "strasse"]),  # casefold, not lower
        ("ΣΊΣΥΦΟΣ", ["σίσυφοσ"]),  # casefold maps final sigma too: one spelling per word
        ("Ｆｕｌｌｗｉｄｔｈ ﬁle", ["fullwidth", "file"]),  # NFKC compatibility forms
        ("cafe\u0301 café", ["café", "café"]),  # decomposed and composed forms agree
        ("naïve Zürich", ["naïve", "zürich"]),
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # combining vowel signs stay inside the word
        ("東京 タワー", ["東京", "タワー"]),
        ("real-time e-mail", ["real", "time", "e", "mail"]),  # hyphens separate
        ("snake_case __init__", ["snake", "case", "init"]),  # so do underscores
        ("node.js/vue.js, (react)!", ["node", "js", "vue", "js", "react"]),
        ("don't rock'n'roll l'homme", ["don't", "rock'n'roll", "l'homme"]),
        ("don’t it’s", ["don't", "it"]),  # typographic apostrophes fold to "'"
        ("npm's API's users' 'quoted'", ["npm", "api", "users", "quoted"]),  # possessive 's
        ("", []),
        ("  \n\t ", []),
        ("--- !!! ...", []),
    ],
)
def test_splitting_and_normalisation(doc, expected):
    assert PLAIN(doc) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_fast_path_splits_like_the_unicode_pattern(doc):
    # ASCII text takes a pattern compiled with re.ASCII; on ASCII input it must find exactly
    # the words of the full pattern (same \w, same \b, no combining marks possible).
    text = doc.lower().replace("_", " ")
    assert text_mod._ASCII_WORD.findall(text) == text_mod._word_pattern().findall(text)


#: ASCII text weighted toward what the split by runs must get right: apostrophes next to
#: letters, possessive s/S, underscores, digits and every kind of separator.
_ASCII_TRICKY = st.text(
    alphabet=st.one_of(st.sampled_from("aZsS''_ 0.-\t\n"), st.characters(max_codepoint=127)),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(_ASCII_TRICKY, st.booleans())
def test_ascii_split_by_runs_finds_the_words_of_the_pattern(doc, lowercase):
    # The ASCII path splits on translated separators and gives only runs with an apostrophe
    # to the pattern; it must find exactly what the pattern finds in the normalised text.
    text = (doc.lower() if lowercase else doc).replace("_", " ")
    assert text_mod._ascii_words(doc, lowercase) == text_mod._ASCII_WORD.findall(text)


@pytest.mark.parametrize("doc", ["a's's", "'s's", "it's'", "rock'n'roll's", "x''y", "__a_'b"])
def test_ascii_split_by_runs_on_apostrophe_edge_cases(doc):
    assert text_mod._ascii_words(doc, True) == text_mod._ASCII_WORD.findall(
        doc.lower().replace("_", " "))


#: Any text, weighted toward typographic punctuation (which the split by runs takes), letters
#: with and without combining marks, apostrophes of both kinds and possessives.
_ANY_TRICKY = st.text(
    alphabet=st.one_of(st.sampled_from("aSs'’“”—…→§\u00e9e\u0301\u093f_ 0½."),
                       st.characters(blacklist_categories=("Cs",))),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(_ANY_TRICKY, st.booleans())
def test_every_path_splits_like_the_full_pattern(doc, lowercase):
    # Whatever path a document takes (ASCII, non-ASCII whose extra characters all separate,
    # without marks, with marks), its words are the full pattern's on the normalised text
    # (Chinese and Japanese runs then cut into terms: tests/test_text_cjk.py).
    tok = Tokenizer(stopwords=None, min_length=1, max_length=1000, drop_numbers=False,
                    lowercase=lowercase)
    text = text_mod._normalize(text_mod._decode_references(doc), lowercase).replace("_", " ")
    assert tok(doc) == split_cjk(text_mod._word_pattern().findall(text))


def test_a_separator_is_neither_a_word_character_nor_a_mark_over_all_code_points():
    separates = text_mod._separates.__wrapped__  # uncached: 200k code points
    marks = text_mod._marks()
    for cp in (*range(0x80, 0xD800), *range(0xE000, 0x20000), *range(0xE0000, 0xE1000)):
        char = chr(cp)
        assert separates(char) == (not char.isalnum() and char not in marks), hex(cp)


def test_typographic_punctuation_takes_the_split_by_runs():
    assert text_mod._separates("\u201c") and text_mod._separates("\u2192")
    assert not text_mod._separates("\u00e9") and not text_mod._separates("\u0301")
    assert PLAIN("“Quoted”—it’s → café's") == ["quoted", "it", "café"]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("Q&amp;A &amp;&amp; R&amp;D", ["q", "a", "r", "d"]),
        ("&quot;quoted&quot; &lt;b&gt;bold&lt;/b&gt;", ["quoted", "b", "bold", "b"]),
        ("it&#39;s npm&#x27;s don&#8217;t", ["it", "npm", "don't"]),  # then the apostrophes' rules
        ("non&nbsp;breaking caf&eacute; &Eacute;T&Eacute;", ["non", "breaking", "café", "été"]),
        ("AT&T R&D fish&chips", ["at", "t", "r", "d", "fish", "chips"]),  # no reference here
        ("?a=1&para=2 &amp &lt", ["a", "1", "para", "2", "amp", "lt"]),  # no semicolon: text
        ("&amp;quot;feed&amp;quot; &amp;amp;#39;", ["feed"]),  # escaped twice, three times
        ("&bogus; &#0; &#x110000; &#12345678;", ["bogus", "12345678"]),  # unknown name: text
    ],
)
def test_html_character_references_are_decoded_before_the_split(doc, expected):
    # Scraped text carries &amp;, &quot;, &#39;: split as words they would be "amp", "quot".
    assert PLAIN(doc) == expected


LINKLESS = Tokenizer(stopwords=None, min_length=1, max_length=50, drop_numbers=False,
                     links="drop")


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("myths http://ow.ly/KiIY0 and HTTPS://X.Y/a?b=c", ["myths", "and"]),
        ("see www.example.com/x or WWW.EXAMPLE.ORG.", ["see", "or"]),
        ("ftp://files.x/y.tgz git+ssh://git@github.com/a.git see:http://x.y", ["see"]),
        ("RT @LATerynbrown: @CDCgov working", ["rt", "laterynbrown", "cdcgov", "working"]),
        ("mail john@example.org", ["mail", "john", "example", "org"]),  # addresses stay text
        ("café https://exämple.de/ü über", ["café", "über"]),  # the Unicode path
        ("a &amp; http://x.y/?a=1&amp;b=2 end", ["a", "end"]),  # references decoded first
    ],
)
def test_links_dropped_before_the_split(doc, expected):
    # Split, a post's link is words: "http", "www", "com", a shortener's "ow" "ly".
    assert LINKLESS(doc) == expected


def test_links_are_words_by_default_and_the_setting_is_checked():
    assert PLAIN("see http://ow.ly/x") == ["see", "http", "ow", "ly", "x"]
    assert Tokenizer().describe()["links"] == "keep"
    assert Tokenizer(**LINKLESS.describe()) == LINKLESS
    with pytest.raises(InputError, match="links must be one of keep, drop, got 'yes'"):
        Tokenizer(links="yes")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abc xyzé'.,", max_size=12), min_size=2, max_size=6),
       st.sampled_from(["http://", "https://", "HTTP://", "www.", "ftp://", "git+ssh://"]),
       st.text(alphabet=st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc", "Cs")),
               min_size=1, max_size=20))
def test_a_dropped_link_splits_as_a_space(words, start, rest):
    # Wherever a link stands between spaces, the words are those of the text with a space in
    # its place.
    with_link = f"{words[0]} {start + rest} {' '.join(words[1:])}"
    assert LINKLESS(with_link) == LINKLESS(f"{words[0]}   {' '.join(words[1:])}")


_REFERENCES = {"&amp;": "&", "&quot;": '"', "&#39;": "'", "&#x27;": "'", "&nbsp;": "\u00a0",
               "&lt;": "<", "&gt;": ">", "&#32;": " ", "&apos;": "'", "&mdash;": "\u2014"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcxyzAB's.-", min_size=1, max_size=8), min_size=1,
                max_size=8),
       st.lists(st.sampled_from(sorted(_REFERENCES)), min_size=1, max_size=8), st.booleans())
def test_a_reference_splits_as_the_character_it_stands_for(words, refs, lowercase):
    # Text joined by references gives the words of the same text joined by their characters,
    # on every path (ASCII or not: &nbsp; and &mdash; decode to non-ASCII separators).
    tok = Tokenizer(stopwords=None, min_length=1, drop_numbers=False, lowercase=lowercase)
    seps = [refs[i % len(refs)] for i in range(len(words))]
    escaped = "".join(w + sep for w, sep in zip(words, seps))
    plain = "".join(w + _REFERENCES[sep] for w, sep in zip(words, seps))
    assert tok(escaped) == tok(plain)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("infor\u00admation Donau&shy;dampf&shy;schiff", ["information", "donaudampfschiff"]),
        ("\ufeffbom at the start, word\u2060joiner", ["bom", "at", "the", "start", "wordjoiner"]),
        ("e\u00ad\u0301t\u00e9", ["ét\u00e9"]),  # what a joiner kept apart composes
        ("zero\u200bwidth space", ["zero", "width", "space"]),  # a break still separates
        (["soft\u00adhyphen"], ["softhyphen"]),  # in pre-tokenized words too
    ],
)
def test_invisible_characters_inside_a_word_do_not_cut_it(doc, expected):
    assert PLAIN(doc) == expected
    assert all(unicodedata.is_normalized("NFKC", w) for w in PLAIN(doc))


def test_text_that_nfkc_folds_onto_ascii_keeps_its_case_when_asked():
    tok = Tokenizer(stopwords=None, min_length=1, lowercase=False)
    assert tok("Ｆｕｌｌ_Ｗｉｄｔｈ it’s") == ["Full", "Width", "it"]
    assert PLAIN("Ｆｕｌｌ_Ｗｉｄｔｈ") == ["full", "width"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Mn", "Mc", "Me", "Cs")),
               max_size=60))
def test_markless_fast_path_splits_like_the_full_pattern(doc):
    # Text without a combining mark takes the plain Unicode pattern; there it must find
    # exactly the words of the full pattern, whose class only adds the marks.
    text = doc.lower().replace("_", " ")
    assert text_mod._marks().isdisjoint(text)
    assert text_mod._PLAIN_WORD.findall(text) == text_mod._word_pattern().findall(text)


def test_text_with_a_combining_mark_keeps_the_mark_inside_its_word():
    # "हिन्दी" has vowel signs and a virama (Mn, Mc): the plain \w pattern would cut it apart.
    word = "\u0939\u093f\u0928\u094d\u0926\u0940"
    assert not text_mod._marks().isdisjoint(word)
    assert len(text_mod._PLAIN_WORD.findall(word)) > 1
    assert PLAIN(f"caf\u00e9 {word} na\u00efve") == ["caf\u00e9", word, "na\u00efve"]


def test_output_is_nfkc_normalised():
    words = PLAIN("Ｃａｆé ﬃ ½ Ⅻ ǅungla ẞ")
    assert all(unicodedata.is_normalized("NFKC", w) for w in words)
    assert all(w == w.casefold() for w in words)


def test_lowercase_false_keeps_case_but_stopwords_still_match():
    tok = Tokenizer(lowercase=False)
    assert tok("The Apple and THE Orange") == ["Apple", "Orange"]
    assert Tokenizer(stopwords=None, lowercase=False)("Ｆｕｌｌ") == ["Full"]


# --- filters -----------------------------------------------------------------------------------


def test_numbers_are_dropped_by_default():
    tok = Tokenizer(stopwords=None)
    assert tok("in 2024 version 3.14 costs ½ ٣٣ mp3 es6 3d") == [
        "in", "version", "costs", "mp3", "es6", "3d"
    ]
    assert Tokenizer(stopwords=None, drop_numbers=False)("in 2024") == ["in", "2024"]


def test_length_bounds_are_inclusive_code_points():
    tok = Tokenizer(stopwords=None, min_length=3, max_length=5)
    assert tok("ab abc abcde abcdef ñññ") == ["abc", "abcde", "ñññ"]
    assert Tokenizer(stopwords=None)("a b cd") == ["cd"]  # default min_length=2
    assert Tokenizer(stopwords=None)("x" * 30 + " " + "y" * 31) == ["x" * 30]  # dropped, not cut


def test_default_stopwords_are_english():
    tok = Tokenizer()
    assert tok.stopwords == load_stopwords("english")
    assert tok("The cat and the hat are on the mat") == ["cat", "hat", "mat"]
    assert tok("We're sure it isn't what you'd think") == ["sure", "think"]


def test_custom_stopwords_are_normalised():
    tok = Tokenizer(stopwords=["CAT", "Straße", "ｈａｔ"])
    assert tok.stopwords == frozenset({"cat", "strasse", "hat"})
    assert tok("the cat in the STRASSE hat") == ["the", "in", "the"]
    assert Tokenizer(stopwords=None)("the") == ["the"]
    assert Tokenizer(stopwords=set())("the") == ["the"]


def test_stopwords_by_name_or_path(tmp_path):
    assert Tokenizer(stopwords="english").stopwords == load_stopwords()
    path = tmp_path / "mine.txt"
    path.write_text("# comment\nfoo\n\nBAR  # trailing comment\n", encoding="utf-8")
    assert Tokenizer(stopwords=path).stopwords == frozenset({"foo", "bar"})
    assert Tokenizer(stopwords=str(path))("foo bar baz") == ["baz"]


# --- pre-tokenized input -----------------------------------------------------------------------


def test_pretokenized_input_is_normalised_and_filtered_not_split():
    tok = Tokenizer()
    assert tok(["New York", "snake_case", "THE", "Ｆｕｌｌ", "2024", "x", "real-time"]) == [
        "new york",
        "snake_case",
        "full",
        "real-time",
    ]
    assert tok(("Café", "don’t")) == ["café"]  # "don’t" folds to the stopword "don't"
    assert tok([]) == []


def test_pretokenized_accepts_any_sequence():
    class Words(collections.abc.Sequence):  # neither list nor tuple
        def __init__(self, words):
            self._w = words

        def __len__(self):
            return len(self._w)

        def __getitem__(self, i):
            return self._w[i]

    assert Tokenizer()(Words(["Alpha", "beta"])) == ["alpha", "beta"]


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (b"bytes", "decode bytes first"),
        (bytearray(b"x"), "decode bytes first"),
        (None, "NoneType"),
        (42, "int"),
        ({"text": "x"}, "dict"),
        (["ok", 3], "only str"),
        (["ok", None], "only str"),
        ([b"bytes"], "only str"),
    ],
)
def test_bad_documents_raise_input_error(doc, match):
    with pytest.raises(InputError, match=match):
        Tokenizer()(doc)


# --- tokenizer settings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_length": 0}, "min_length"),
        ({"min_length": 2.5}, "min_length"),
        ({"min_length": True}, "min_length"),
        ({"max_length": 0}, "max_length"),
        ({"min_length": 5, "max_length": 4}, "max_length"),
        ({"stopwords": 3}, "stopwords"),
        ({"stopwords": ["ok", 1]}, "only str"),
        ({"stopwords": "klingon"}, "unknown stopword list"),
    ],
)
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(InputError, match=match):
        Tokenizer(**kwargs)


def test_tokenizer_is_frozen_hashable_and_picklable():
    tok = Tokenizer(min_length=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tok.min_length = 4
    assert tok == Tokenizer(min_length=3)
    assert hash(tok) == hash(Tokenizer(min_length=3))
    clone = pickle.loads(pickle.dumps(tok))
    assert clone == tok and clone("The big Café's menu") == tok("The big Café's menu")


def test_describe_round_trips_and_repr_is_short():
    custom = Tokenizer(stopwords=["z", "Y"])
    for tok in (Tokenizer(), Tokenizer(stopwords=None, min_length=1), custom):
        settings = tok.describe()
        assert json.loads(json.dumps(settings)) == settings
        assert Tokenizer(**settings) == tok
    assert Tokenizer(stopwords=["z", "Y"]).describe()["stopwords"] == ["y", "z"]
    assert repr(Tokenizer()) == (
        "Tokenizer(stopwords='english', min_length=2, max_length=30, drop_numbers=True, "
        "lowercase=True, links='keep')"
    )
    assert "<2 custom words>" in repr(Tokenizer(stopwords=["z", "Y"]))


# --- stopword lists ----------------------------------------------------------------------------


def test_shipped_english_list():
    words = load_stopwords("english")
    assert isinstance(words, frozenset)
    assert 250 <= len(words) <= 400
    assert {"the", "and", "of", "don't", "yourselves"} <= words
    assert all(w == w.casefold() and unicodedata.is_normalized("NFKC", w) for w in words)
    assert all(Tokenizer(stopwords=None, min_length=1)(w) for w in words)  # tokenizable words
    raw = (importlib.resources.files("anchorstream") / "data" / "stopwords_english.txt").read_text(
        encoding="utf-8"
    )
    entries = [ln for ln in raw.splitlines() if ln and not ln.startswith("#")]
    assert len(entries) == len(set(entries)), "duplicate lines in the shipped list"


@pytest.mark.parametrize("name", ["danish", "dutch", "french", "german", "italian", "polish",
                                  "portuguese", "russian", "spanish", "swedish"])
def test_shipped_lists_of_other_languages(name):
    # Written for this project like the English one: normalized, tokenizable, one word a line,
    # no duplicates, and none shorter than the tokenizer keeps; or an elided form (l', dell').
    words = load_stopwords(name)
    assert 150 <= len(words) <= 450
    assert all(w == w.casefold() and unicodedata.is_normalized("NFKC", w) for w in words)
    elided = {w for w in words if w.endswith("'")}
    assert all(Tokenizer(stopwords=None)(w) == [w] for w in words - elided)
    assert all(Tokenizer(stopwords=None)(w + "x") == [w + "x"] for w in elided)
    raw = (importlib.resources.files("anchorstream") / "data" / f"stopwords_{name}.txt"
           ).read_text(encoding="utf-8")
    entries = [ln for ln in raw.splitlines() if ln and not ln.startswith("#")]
    assert len(entries) == len(set(entries)) == len(words)


def test_available_lists():
    assert available_stopword_lists() == ["danish", "dutch", "english", "french", "german",
                                          "italian", "polish", "portuguese", "russian",
                                          "spanish", "swedish"]
    assert {"und", "der", "nicht"} <= load_stopwords("german")
    assert {"les", "des", "été", "être"} <= load_stopwords("french")
    assert {"los", "las", "también"} <= load_stopwords("spanish")
    assert {"della", "sono", "anche", "dell'"} <= load_stopwords("italian")
    assert {"dos", "pelo", "também", "não"} <= load_stopwords("portuguese")
    assert {"это", "который", "является", "её", "ее"} <= load_stopwords("russian")


def test_unknown_list_names_the_available_ones():
    with pytest.raises(InputError,
                       match=r"unknown stopword list 'klingon'.*\['danish', 'dutch', 'english'"):
        load_stopwords("klingon")


def test_load_from_path(tmp_path):
    path = tmp_path / "words"
    path.write_text("Alpha\n# skip\nβήτα\n", encoding="utf-8")
    assert load_stopwords(path) == frozenset({"alpha", "βήτα"})
    with pytest.raises(InputError, match="cannot read stopword file"):
        load_stopwords(tmp_path / "missing.txt")
    with pytest.raises(InputError, match="cannot read stopword file"):
        load_stopwords(str(Path(tmp_path) / "nope" / "list"))
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="cannot read stopword file"):
        load_stopwords(bad)
    with pytest.raises(InputError, match="name or a path"):
        load_stopwords(7)


# --- vocabulary selection ----------------------------------------------------------------------

DOCS = [
    ["apple", "apple", "pie"],
    ["apple", "tart", "kiwi"],
    ["pie", "apple", "fig"],
    ["tart", "fig"],
    ["fig", "kiwi", "plum"],
    ["apple"],
]


def test_select_by_document_frequency():
    # df: apple 4, fig 3, kiwi 2, pie 2, tart 2, plum 1 (n_docs = 6)
    everything = ["apple", "fig", "kiwi", "pie", "tart", "plum"]
    assert select_vocabulary(DOCS, min_df=1, max_df=1.0) == everything
    assert select_vocabulary(DOCS, min_df=2, max_df=1.0) == everything[:5]
    # apple is in 4/6 > 0.5 of the documents
    assert select_vocabulary(DOCS, min_df=2, max_df=0.5) == ["fig", "kiwi", "pie", "tart"]
    assert select_vocabulary(DOCS, min_df=2, max_df=0.5, max_size=2) == ["fig", "kiwi"]
    assert select_vocabulary(DOCS, min_df=5, max_df=1.0) == []


def test_selection_is_deterministic_and_order_free():
    shuffled = [DOCS[i] for i in np.random.default_rng(3).permutation(len(DOCS))]
    assert select_vocabulary(iter(shuffled), min_df=1, max_df=1.0) == select_vocabulary(
        DOCS, min_df=1, max_df=1.0
    )


def test_select_from_empty_corpus():
    assert select_vocabulary([], min_df=1) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_df": 0}, "min_df"),
        ({"min_df": 1.5}, "min_df"),
        ({"max_df": 0.0}, "max_df"),
        ({"max_df": 1.5}, "max_df"),
        ({"max_df": "0.5"}, "max_df"),
        ({"max_size": 0}, "max_size"),
        ({"max_size": 2.0}, "max_size"),
    ],
)
def test_select_rejects_bad_parameters(kwargs, match):
    with pytest.raises(InputError, match=match):
        select_vocabulary(DOCS, **kwargs)


def test_select_rejects_raw_strings():
    with pytest.raises(InputError, match="tokenize first"):
        select_vocabulary(["raw text", "more text"])


def test_select_without_size_cap():
    assert len(select_vocabulary(DOCS, min_df=1, max_df=1.0, max_size=None)) == 6


# --- count matrices ----------------------------------------------------------------------------


def test_count_matrix():
    vocab = ["apple", "fig", "pie"]
    X = count_matrix(iter(DOCS), vocab)
    assert X.shape == (6, 3) and X.dtype == np.float64 and X.format == "csr"
    assert X.has_canonical_format
    np.testing.assert_array_equal(
        X.toarray(),
        [[2, 0, 1], [1, 0, 0], [1, 1, 1], [0, 1, 0], [0, 1, 0], [1, 0, 0]],
    )


def test_count_matrix_empty_cases():
    assert count_matrix([], ["a"]).shape == (0, 1)
    X = count_matrix([[], ["zzz"]], ["a", "b"])
    assert X.shape == (2, 2) and X.nnz == 0
    assert count_matrix([["a"]], []).shape == (1, 0)


def test_count_matrix_rejects_bad_input():
    with pytest.raises(InputError, match="duplicate words: \\['a'\\]"):
        count_matrix([["a"]], ["a", "b", "a"])
    with pytest.raises(InputError, match="tokenize first"):
        count_matrix(["raw text"], ["raw"])
    with pytest.raises(InputError, match="sequence of words"):
        count_matrix([["a"]], "abc")


def test_text_to_counts_end_to_end():
    tok = Tokenizer()
    docs = [
        "Fast JSON parser for Node.js",
        "A JSON schema validator",
        "Node.js HTTP server",
        "HTTP client for Node.js",
        "Parser combinators",
    ]
    tokens = [tok(d) for d in docs]
    vocab = select_vocabulary(tokens, min_df=2, max_df=0.7)
    assert vocab == ["js", "node", "http", "json", "parser"]
    X = count_matrix(tokens, vocab)
    assert X.sum() == 12
