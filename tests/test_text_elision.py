"""Elided forms cut from the front of words (anchorstream.text.elision) and in the tokenizer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from anchorstream.text.elision import elision_prefixes, split_elisions
from anchorstream.text.tokenize import Tokenizer, load_stopwords

PREFIXES = frozenset({"l'", "dell'", "qu'", "un'"})


def _slow_split(word: str, prefixes) -> str:
    """Twin: take off any listed form the word starts with, while something is left."""
    changed = True
    while changed:
        changed = False
        for p in prefixes:
            if word.startswith(p) and len(word) > len(p):
                word, changed = word[len(p):], True
                break
    return word


def test_examples():
    words = ["l'homme", "dell'un'altra", "aujourd'hui", "qu'il", "l'", "l'l'", "chat", "'l"]
    assert split_elisions(words, PREFIXES) == [
        "homme", "altra", "aujourd'hui", "il", "l'", "l'", "chat", "'l"]
    assert split_elisions(words, frozenset()) == words


def test_prefixes_are_the_entries_ending_in_an_apostrophe():
    assert elision_prefixes(["le", "l'", "'", "qu'", "don't"]) == {"l'", "qu'"}
    assert elision_prefixes(None) == frozenset()
    assert elision_prefixes(load_stopwords("english")) == frozenset()
    assert {"l'", "qu'", "d'"} <= elision_prefixes(load_stopwords("french"))
    assert {"l'", "dell'", "un'"} <= elision_prefixes(load_stopwords("italian"))


_letters = st.text(alphabet="ldeunq'ahi", max_size=12)


@given(st.lists(_letters, max_size=8))
def test_each_word_keeps_a_non_empty_tail_and_words_without_apostrophes_are_unchanged(words):
    out = split_elisions(words, PREFIXES)
    assert len(out) == len(words)
    for before, after in zip(words, out):
        assert before.endswith(after)
        assert after or not before
        if "'" not in before:
            assert after == before
        removed = before[: len(before) - len(after)]
        # What was cut is listed forms, one after another.
        while removed:
            form = next(p for p in PREFIXES if removed.startswith(p))
            removed = removed[len(form):]


@given(st.lists(_letters, max_size=8))
def test_the_same_as_taking_off_forms_one_at_a_time(words):
    # The forms hold one apostrophe each, at their end: a word starts with one exactly where
    # its part up to its first apostrophe is that form.
    assert split_elisions(words, PREFIXES) == [_slow_split(w, PREFIXES) for w in words]


def test_the_tokenizer_cuts_the_lists_elided_forms():
    italian = Tokenizer(stopwords="italian")
    text = "L'applicazione fornisce un’interfaccia per la gestione dell'archivio: c'è anche l'API."
    assert italian(text) == ["applicazione", "fornisce", "interfaccia", "gestione", "archivio",
                             "api"]
    assert Tokenizer(stopwords="french")("Qu'il voie l'arbre aujourd'hui") == [
        "voie", "arbre", "aujourd'hui"]
    # Pre-tokenized words go through the same filter.
    assert italian(["dell'archivio", "Archivio"]) == ["archivio", "archivio"]
    # English lists no elided form: apostrophes stay as they were.
    assert Tokenizer()("O'Neill's rock'n'roll o'clock") == ["o'neill", "rock'n'roll", "o'clock"]
    assert Tokenizer(stopwords=None)("l'homme") == ["l'homme"]


def test_forms_are_cut_whatever_their_case_as_stopwords_are_dropped():
    assert split_elisions(["L'Homme", "DELL'Un'Altra", "Aujourd'hui"], PREFIXES) == [
        "Homme", "Altra", "Aujourd'hui"]
    # A tokenizer that keeps case matches its stopwords case-insensitively; so the forms.
    cased = Tokenizer(stopwords="french", lowercase=False)
    assert cased("L'Homme qu'il voit, Aujourd'hui") == ["Homme", "voit", "Aujourd'hui"]
