"""Whether a shipped stopword list fits the documents' language (:class:`StopwordCheck`).

Function words are a fifth to a half of the words of English text; where the list in use
removes almost none of the first documents' words, the documents are most likely in another
language, whose own function words would fill the topics. ``anchorstream fit``, ``ingest``
and the daemon's ingest loop feed the check and warn, naming the shipped list that fits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from anchorstream.text.tokenize import Tokenizer, available_stopword_lists, load_stopwords

__all__ = ["STOPWORD_CHECK_DOCS", "STOPWORD_CHECK_WORDS", "STOPWORD_SHARE_MIN", "StopwordCheck",
           "choose_stopwords"]

#: :class:`StopwordCheck` looks at this many documents (the first ones) ...
STOPWORD_CHECK_DOCS = 2000
#: ... or fewer, once their words number this many: the share is then known to about 0.3%
#: (and 2000 documents of a manual's 350 words would tokenize 40% of the long corpus twice).
STOPWORD_CHECK_WORDS = 20_000
#: ... and warns where fewer than this share of their words are in the shipped list. English
#: text: 21-56% of the words on the quality benchmark's nine real corpora (technical summaries
#: of 9 tokens to manual pages); German quotations with the English list: 3%.
STOPWORD_SHARE_MIN = 0.08
#: Fewer words than this in the documents seen say too little to warn.
_STOPWORD_CHECK_MIN_WORDS = 500


class StopwordCheck:
    """Whether a shipped stopword list fits the documents' language, from the first ones.

    Function words are a fifth to a half of the words of English text, so where the list
    removes almost nothing the documents are most likely in another language, and their own
    function words ("und", "der", "die") fill the topics. Fed each document's content (the
    raw text or the pre-tokenized words, as given to the tokenizer) until :attr:`done` (after
    ``n_docs`` documents or ``n_words`` words), it counts the words that pass the tokenizer's
    other filters; :attr:`share` is the part of them its list removes, and :meth:`warning`
    says what to do when that share is below :data:`STOPWORD_SHARE_MIN`, naming the shipped
    list that would remove the most. Inactive (never warns) unless the tokenizer's stopwords are a shipped list: a custom list
    or none is the user's own choice.

    Examples
    --------
    >>> check = StopwordCheck(Tokenizer(), n_docs=2)
    >>> check.observe("The cat sat on the mat"); check.observe("Der Hund und die Katze")
    >>> check.done, round(check.share, 2)
    (True, 0.27)
    >>> {name: round(share, 2) for name, share in check.shares().items()}["german"]
    0.27
    """

    def __init__(self, tokenizer, n_docs: int = STOPWORD_CHECK_DOCS,
                 n_words: int = STOPWORD_CHECK_WORDS):
        label = tokenizer.describe()["stopwords"] if isinstance(tokenizer, Tokenizer) else None
        self.label = label if isinstance(label, str) else None
        self.n_docs, self.n_words = int(n_docs), int(n_words)
        self.docs = self.words = 0
        self._counts: Counter[str] = Counter()
        if self.label is not None:
            self._plain = replace(tokenizer, stopwords=None)
            self._fold = not tokenizer.lowercase

    @property
    def active(self) -> bool:
        return self.label is not None

    @property
    def done(self) -> bool:
        """Whether enough documents or words were seen (always, when inactive)."""
        return not self.active or self.docs >= self.n_docs or self.words >= self.n_words

    def observe(self, content) -> None:
        """Count one document's words (its content as the tokenizer takes it)."""
        if self.done:
            return
        words = self._plain(content)
        self._counts.update([w.casefold() for w in words] if self._fold else words)
        self.words += len(words)
        self.docs += 1

    def _share_of(self, stop: frozenset[str]) -> float:
        return sum(n for w, n in self._counts.items() if w in stop) / self.words

    @property
    def share(self) -> float | None:
        """The share of the words seen that the list removes (None before any word)."""
        if not (self.active and self.words):
            return None
        return self._share_of(load_stopwords(self.label))

    def shares(self) -> dict[str, float]:
        """The share each shipped list would remove from the words seen."""
        if not self.words:
            return {}
        return {name: self._share_of(load_stopwords(name)) for name in available_stopword_lists()}

    def misfits(self) -> bool:
        """Whether the list removes less than :data:`STOPWORD_SHARE_MIN` of at least 500
        words seen."""
        share = self.share
        return (share is not None and self.words >= _STOPWORD_CHECK_MIN_WORDS
                and share < STOPWORD_SHARE_MIN)

    def suggestion(self) -> str | None:
        """The shipped list to use instead, where the list in use :meth:`misfits` and another
        removes at least :data:`STOPWORD_SHARE_MIN` of the words seen (the one removing the
        most); else None."""
        if not self.misfits():
            return None
        best, best_share = max(self.shares().items(), key=lambda item: item[1])
        return best if best_share >= STOPWORD_SHARE_MIN else None

    def warning(self) -> str | None:
        """A message when the list :meth:`misfits`, else None."""
        if not self.misfits():
            return None
        usual = ("English text: 20-55%" if self.label == "english"
                 else "English text with the English list: 20-55%")
        seen = (f"only {self.share:.1%} of the {self.words} words of the first {self.docs} "
                f"documents are in the {self.label!r} stopword list ({usual})")
        best = self.suggestion()
        if best is not None:
            return (f"{seen}; they look {best.capitalize()}: the shipped {best!r} list removes "
                    f"{self.shares()[best]:.1%} of them (`--stopwords {best}`, `vocab.stopwords: "
                    f"{best}`); otherwise their own function words fill the topics")
        return (f"{seen}; if they are in another language, give a stopword list for it (a "
                "file with one word per line: `--stopwords PATH`, `vocab.stopwords: PATH`) or "
                "`none`; otherwise its function words fill the topics")


def choose_stopwords(contents: Iterable, default: str = "english") -> tuple[str, StopwordCheck]:
    """``--stopwords auto``: the shipped list for documents whose first ``contents`` (raw
    texts or pre-tokenized words, as a tokenizer takes them) are given.

    ``default`` unless it :meth:`~StopwordCheck.misfits` the documents and another shipped list
    fits them (:meth:`~StopwordCheck.suggestion`): English text keeps the English list
    whatever else it holds, and text no shipped list fits (Japanese, say) keeps ``default``
    and its warning. Reads at most :data:`STOPWORD_CHECK_DOCS` documents or
    :data:`STOPWORD_CHECK_WORDS` words of ``contents``. Returns the list's name and the check,
    whose :meth:`~StopwordCheck.shares` say why.

    Examples
    --------
    >>> choose_stopwords(["Der Hund und die Katze sind nicht im Haus"] * 100)[0]
    'german'
    >>> choose_stopwords(["The cat and the dog are not in the house"] * 100)[0]
    'english'
    """
    check = StopwordCheck(Tokenizer(stopwords=load_stopwords(default)))
    for content in contents:
        if check.done:
            break
        check.observe(content)
    return check.suggestion() or default, check
