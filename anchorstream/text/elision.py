"""Elided articles and pronouns cut from the front of words (French ``l'homme``, Italian
``dell'applicazione``).

French and Italian write a function word that loses its vowel before a vowel as one
orthographic word with the next: ``l'homme``, ``qu'il``, ``un'applicazione``,
``dell'interfaccia``. The tokenizer keeps words joined by an apostrophe whole (English
``don't``, ``o'clock``), so without this step every noun has as many spellings as it has
articles, its counts split between them, and no stopword list can remove the article.

Which prefixes are elisions is the language's business, so the stopword list says it: an entry
ending in an apostrophe (``l'``, ``dell'``, ``qu'``) is an elided form, and a word that starts
with one loses it (``l'homme`` → ``homme``; ``qu'il`` → ``il``, which the list then drops). A
word whose part before its first apostrophe is not listed is left alone (``aujourd'hui``,
English ``don't``), so a list without such entries, like the English one, changes nothing.
The forms are matched case-insensitively (``L'Homme`` → ``Homme``), as the stopwords are by a
tokenizer that keeps case.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["elision_prefixes", "split_elisions"]


def elision_prefixes(stopwords: Iterable[str] | None) -> frozenset[str]:
    """The elided forms among ``stopwords``: the entries ending in an apostrophe, longer than
    it (``"l'"``, ``"dell'"``).

    >>> sorted(elision_prefixes(["le", "l'", "qu'", "'"]))
    ["l'", "qu'"]
    """
    if not stopwords:
        return frozenset()
    return frozenset(w for w in stopwords if len(w) > 1 and w.endswith("'"))


def split_elisions(words: list[str], prefixes: frozenset[str]) -> list[str]:
    """``words`` with a listed elided form cut from the front of each, repeatedly
    (``dell'un'altra`` → ``altra`` when ``dell'`` and ``un'`` are listed), whatever its case
    (``prefixes`` in lower case); a word that is nothing but elided forms is kept as it is.

    >>> split_elisions(["l'homme", "aujourd'hui", "qu'il", "chat"], frozenset({"l'", "qu'"}))
    ['homme', "aujourd'hui", 'il', 'chat']
    """
    # The test first: most words hold no apostrophe, and it is one C-level scan.
    return [w if "'" not in w else _cut(w, prefixes) for w in words]


def _cut(word: str, prefixes: frozenset[str]) -> str:
    cut = word.find("'")
    while cut > 0 and word[: cut + 1].casefold() in prefixes and cut + 1 < len(word):
        word = word[cut + 1 :]
        cut = word.find("'")
    return word
