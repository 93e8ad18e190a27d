"""Whether a shipped stopword list fits the documents' language (:class:`StopwordCheck`).

Function words are a fifth to a half of the words of English text; where the list in use
removes almost none of the first documents' words, the documents are most likely in another
language, whose own function words would fill the topics. ``anchorstream fit``, ``ingest``
and the daemon's ingest loop feed the check and warn, naming the shipped list that fits.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from anchorstream.text.tokenize import Tokenizer, available_stopword_lists, load_stopwords

__all__ = ["STOPWORD_CHECK_DOCS", "STOPWORD_CHECK_WORDS", "STOPWORD_SHARE_MIN", "StopwordCheck"]

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

    def warning(self) -> str | None:
        """A message when the list removes less than :data:`STOPWORD_SHARE_MIN` of at least
        500 words, else None."""
        share = self.share
        if share is None or self.words < _STOPWORD_CHECK_MIN_WORDS or share >= STOPWORD_SHARE_MIN:
            return None
        best, best_share = max(self.shares().items(), key=lambda item: item[1])
        seen = (f"only {share:.1%} of the {self.words} words of the first {self.docs} documents "
                f"are in the {self.label!r} stopword list (English text: 20-55%)")
        if best_share >= STOPWORD_SHARE_MIN:
            return (f"{seen}; they look {best.capitalize()}: the shipped {best!r} list removes "
                    f"{best_share:.1%} of them (`--stopwords {best}`, `vocab.stopwords: "
                    f"{best}`); otherwise their own function words fill the topics")
        return (f"{seen}; if they are in another language, give a stopword list for it (a "
                "file with one word per line: `--stopwords PATH`, `vocab.stopwords: PATH`) or "
                "`none`; otherwise its function words fill the topics")
