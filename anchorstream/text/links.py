"""Links in the text: what ``Tokenizer(links="drop")`` removes before the split
(:func:`drop_links`), and whether the first documents are posts full of them
(:class:`LinkCheck`).

Split, a link is words: ``http``, ``www``, ``com``, a shortener's ``ow`` ``ly`` and its hash.
On tweets, where nearly every post holds one, they filled the topics, and dropping them lifted
held-out NPMI from −0.310 to −0.275; where links name projects (package descriptions) they
carry topic words, and over every corpus of the quality benchmark that holds links, dropping
them loses more than it gains, so they stay words by default (benchmarks/README.md, "Links in
posts"). Where at least half of the first documents hold one, ``anchorstream fit``, ``ingest``
and the daemon's ingest loop say that ``--links drop`` exists.
"""

from __future__ import annotations

import re

__all__ = ["LINKS", "LINK_CHECK_DOCS", "LINK_NOTE_SHARE", "LinkCheck", "drop_links"]

#: The values of ``Tokenizer.links``.
LINKS = ("keep", "drop")

#: A link: from its scheme and ``://`` (or from ``www.``) to the next space. The scheme is at
#: most 31 characters, so a pass is linear in the text; the letters' case is spelled out
#: (``(?i)`` made the pass 10 % slower).
_LINK = re.compile(r"\b(?:[A-Za-z][A-Za-z0-9+.-]{0,30}://|[wW]{3}\.)\S+")
#: ... and what is left of a link a retweet cut short: ``http`` or ``https``, then a colon
#: and up to two slashes or neither, then an ellipsis (``…`` or ``...``, a space before it
#: allowed) or the end of the text or a space after ``://`` (391 of the 51,785 tweets held
#: one, ``http:/…``, ``http…``, ``http:// ...``). ``HTTP`` alone or ``HTTP:`` before other
#: words stays a word.
_CUT_LINK = re.compile(
    r"\b[hH][tT][tT][pP][sS]?(?::/{0,2})?(?:\s?(?:…|\.\.\.)|(?<=/)(?=\s|$)|:$)")

#: :class:`LinkCheck` looks at this many documents (the first ones) ...
LINK_CHECK_DOCS = 1000
#: ... and notes where at least this share of them hold a link: the tweets of the quality
#: benchmark 94 % (dropping their links: +0.042 held-out NPMI), its e-mail 51 % (±0.006), the
#: package descriptions 8.5 % (−0.022).
LINK_NOTE_SHARE = 0.5
#: Fewer documents than this seen say too little to note.
_LINK_CHECK_MIN_DOCS = 100


def _may_hold_link(text: str) -> bool:
    """What every link and every stub of one holds, by substring tests: the expressions, which
    try a match at every word, run only on text that may hold one (6x faster than a search for either on the
    package descriptions)."""
    if "://" in text:
        return True
    low = text.lower()
    return "www." in low or "http" in low


def drop_links(text: str) -> str:
    """``text`` with each link replaced by a space.

    >>> drop_links("Busted! 15 myths: http://ow.ly/KiIY0 (see www.example.org)")
    'Busted! 15 myths:   (see  '
    """
    if not _may_hold_link(text):
        return text
    return _CUT_LINK.sub(" ", _LINK.sub(" ", text))


class LinkCheck:
    """Whether the first documents are posts full of links, where ``--links drop`` helps.

    Fed each document's content (the raw text, or pre-tokenized words, which hold no link)
    until :attr:`done`, it counts the documents holding a link; :meth:`note` says so where at
    least :data:`LINK_NOTE_SHARE` of them do. Inactive (never notes) where the tokenizer drops
    links already.

    >>> check = LinkCheck(n_docs=2)
    >>> check.observe("storm floods http://ow.ly/x"); check.observe("court ruling")
    >>> check.done, check.share
    (True, 0.5)
    """

    def __init__(self, links: str = "keep", n_docs: int = LINK_CHECK_DOCS):
        self.active = links == "keep"
        self.n_docs = int(n_docs)
        self.docs = self.linked = 0

    @property
    def done(self) -> bool:
        """Whether enough documents were seen (always, when inactive)."""
        return not self.active or self.docs >= self.n_docs

    def observe(self, content) -> None:
        """Count one document (its content as the tokenizer takes it)."""
        if self.done:
            return
        self.docs += 1
        if isinstance(content, str) and _may_hold_link(content) and _LINK.search(content):
            self.linked += 1

    @property
    def share(self) -> float | None:
        """The share of the documents seen that hold a link (None before any)."""
        return self.linked / self.docs if self.active and self.docs else None

    def note(self) -> str | None:
        """A message where at least :data:`LINK_NOTE_SHARE` of 100 or more documents seen
        hold a link, else None."""
        share = self.share
        if share is None or self.docs < _LINK_CHECK_MIN_DOCS or share < LINK_NOTE_SHARE:
            return None
        return (f"{share:.0%} of the first {self.docs} documents hold a link, whose pieces "
                "(http, www, com, a link shortener's) are counted as words and can fill the "
                "topics; for posts, `--links drop` (`vocab.links: drop`) removes them before "
                "the text is split")
