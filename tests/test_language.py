"""The stopword-list language check (``anchorstream/text/language.py``)."""

from __future__ import annotations

import dataclasses
import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.text.language as language_mod
from anchorstream.text.language import (STOPWORD_CHECK_WORDS, STOPWORD_SHARE_MIN,
                                         StopwordCheck, choose_stopwords)
from anchorstream.text.tokenize import Tokenizer


def test_module_doctests():
    assert doctest.testmod(language_mod).failed == 0


ENGLISH = "The committee said that it would not meet again until the report was ready for us"
GERMAN = "Der Ausschuss sagte, dass er sich erst wieder treffen werde, wenn der Bericht fertig sei"
FINNISH = "Komitea sanoi ettei kokoontuisi uudelleen ennen kuin raportti olisi valmis"


def test_stopword_check_warns_when_the_list_is_not_the_documents_language():
    english, german = StopwordCheck(Tokenizer(), n_docs=60), StopwordCheck(Tokenizer(), n_docs=60)
    for _ in range(60):
        english.observe(ENGLISH)
        german.observe(GERMAN)
    assert english.done and german.done
    assert english.share > 0.4 and english.warning() is None
    assert german.share < STOPWORD_SHARE_MIN
    message = german.warning()
    assert "'english' stopword list" in message and "first 60 documents" in message
    assert f"{german.share:.1%}" in message
    # The shipped list that fits is named, with the share it would remove.
    shares = german.shares()
    assert max(shares, key=shares.get) == "german" and shares["german"] > 0.4
    assert "they look German" in message and "--stopwords german" in message
    assert f"{shares['german']:.1%}" in message
    # Where no shipped list fits, the advice is a file of the language's own words.
    finnish = StopwordCheck(Tokenizer(), n_docs=60)
    for _ in range(60):
        finnish.observe(FINNISH)
    assert max(finnish.shares().values()) < STOPWORD_SHARE_MIN
    assert "--stopwords PATH" in finnish.warning() and "look" not in finnish.warning()
    # Past n_docs nothing more is counted; pre-tokenized documents count the same way.
    german.observe(ENGLISH)
    assert german.docs == 60 and german.shares() == shares
    tokens = StopwordCheck(Tokenizer(), n_docs=60)
    for _ in range(60):
        tokens.observe(GERMAN.replace(",", "").split())
    assert tokens.share == german.share

POLISH = "Komisja powiedziała że nie spotka się ponownie dopóki raport nie będzie gotowy"


def test_auto_stopwords_keep_english_unless_it_misfits_and_another_list_fits():
    name, check = choose_stopwords([GERMAN] * 60)
    assert name == "german" and check.suggestion() == "german" and check.docs == 60
    assert choose_stopwords([ENGLISH] * 60)[0] == "english"
    # English text quoting another language is English text.
    assert choose_stopwords([ENGLISH, GERMAN] * 30)[0] == "english"
    assert choose_stopwords([POLISH] * 60)[0] == "polish"
    # No shipped list fits Finnish: the English list stays, and the read's check still warns.
    name, check = choose_stopwords([FINNISH] * 60)
    assert name == "english" and check.suggestion() is None and check.warning()
    # Fewer than 500 words say nothing; no documents either.
    assert choose_stopwords([GERMAN] * 10)[0] == "english"
    assert choose_stopwords([])[0] == "english"
    # It reads no further than the check needs: here STOPWORD_CHECK_WORDS words.
    taken = []

    def documents():
        for i in range(10 * STOPWORD_CHECK_WORDS):
            taken.append(i)
            yield GERMAN

    assert choose_stopwords(documents())[0] == "german"
    per_doc = len(Tokenizer(stopwords=None)(GERMAN))
    assert len(taken) <= STOPWORD_CHECK_WORDS // per_doc + 2


def test_stopword_check_needs_enough_words_and_a_shipped_list():
    few = StopwordCheck(Tokenizer(), n_docs=3)
    for _ in range(3):
        few.observe(GERMAN)
    assert few.done and few.share < STOPWORD_SHARE_MIN and few.warning() is None  # 45 words
    for tokenizer in (Tokenizer(stopwords=None), Tokenizer(stopwords=["der", "die"])):
        check = StopwordCheck(tokenizer, n_docs=60)
        assert not check.active and check.done
        check.observe(GERMAN)
        assert check.share is None and check.warning() is None
    # Case kept in the output: the list still matches regardless of case, as the tokenizer's.
    cased = StopwordCheck(Tokenizer(lowercase=False), n_docs=60)
    for _ in range(60):
        cased.observe(ENGLISH.upper())
    assert cased.share == pytest.approx(_stopword_share(ENGLISH))


def test_stopword_check_stops_after_enough_words():
    # Long documents: the check is done after n_words words, before n_docs documents.
    check = StopwordCheck(Tokenizer(), n_docs=100, n_words=40)
    check.observe(ENGLISH)  # 16 words pass the other filters
    assert not check.done
    for _ in range(2):
        check.observe(ENGLISH)
    assert check.done and check.docs == 3 and check.words == 48
    check.observe(ENGLISH)
    assert check.docs == 3  # nothing more is counted
    assert check.share == pytest.approx(_stopword_share(ENGLISH))


def _stopword_share(text):
    check = StopwordCheck(Tokenizer(), n_docs=1)
    check.observe(text)
    return check.share


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["The", "and", "OF", "über", "Hund", "café", "x",
                                          "data", "42", "Straße", "they're", "was"]),
                         max_size=12), min_size=1, max_size=20),
       st.booleans())
def test_stopword_share_is_what_the_tokenizer_drops(docs, lowercase):
    # The check's share is exactly the part of the words passing the other filters that the
    # tokenizer's stopword list removes, for text and pre-tokenized documents alike.
    tok = Tokenizer(lowercase=lowercase)
    plain = dataclasses.replace(tok, stopwords=None)
    for as_text in (True, False):
        check = StopwordCheck(tok, n_docs=len(docs))
        for words in docs:
            check.observe(" ".join(words) if as_text else words)
        contents = [" ".join(w) if as_text else w for w in docs]
        total = sum(len(plain(c)) for c in contents)
        kept = sum(len(tok(c)) for c in contents)
        assert check.done and check.words == total
        assert check.share == (None if total == 0 else pytest.approx((total - kept) / total))
