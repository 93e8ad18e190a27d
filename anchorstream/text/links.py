"""Links in the text: what ``Tokenizer(links="drop")`` removes before the split
(:func:`drop_links`), and whether the first documents are posts full of them
(:class:`LinkCheck`).

Split, a link is words: ``http``, ``www``, ``com``, a shortener's ``ow`` ``ly`` and its hash.
On tweets, where nearly every post holds one, they filled the topics, and dropping them lifted
held-out NPMI from −0.310 to −0.275; where links name projects (package descriptions) they
carry topic words, and over every corpus of the quality benchmark that holds links, dropping
them everywhere loses more than it gains (benchmarks/README.md, "Links in posts"). So
``--links auto``, the default of ``anchorstream fit --input`` and ``ingest``, which read their
files before counting, drops them only where at least half of the first documents hold one
(:func:`choose_links`): of the benchmark's 30 corpora, the tweets alone (76 % of their first
1,000; the e-mail 32 %, the package descriptions 2-13 %). The daemon, which cannot read its
stream ahead, tokenizes as its store recorded (``vocab.links: auto``: a store ``ingest``
backfilled keeps its choice) and keeps the links of a new store, saying that ``vocab.links:
drop`` exists where at least half of the first documents hold one, as ``fit --links keep``
does.
"""

from __future__ import annotations

import re

__all__ = ["LINKS", "LINK_CHECK_DOCS", "LINK_CHOICES", "LINK_POSTS_SHARE", "LinkCheck",
           "choose_links", "drop_links"]

#: The values of ``Tokenizer.links``.
LINKS = ("keep", "drop")
#: ``--links`` of the commands that read files before counting (``fit --input``, ``ingest``):
#: one of :data:`LINKS`, or ``auto``, which :func:`choose_links` resolves from the files.
LINK_CHOICES = (*LINKS, "auto")

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
#: ... and calls them posts full of links where at least this share of them hold one: ``auto``
#: drops the links there, and where they are kept the check notes that ``--links drop``
#: exists. Of the quality benchmark's training files the tweets hold a link in 94 % of their
#: documents (76 % of the first 1,000; dropping the links: +0.035 held-out NPMI), its e-mail in
#: 51 % (32 %; dropping them: ±0.006), the package descriptions in 8.5 % (2.4 %; −0.022).
LINK_POSTS_SHARE = 0.5
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
    least :data:`LINK_POSTS_SHARE` of them do (:attr:`posts`). Inactive (never notes) where the
    tokenizer drops links already.

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

    @property
    def posts(self) -> bool:
        """Whether at least :data:`LINK_POSTS_SHARE` of 100 or more documents seen hold a
        link (never when inactive)."""
        share = self.share
        return (share is not None and self.docs >= _LINK_CHECK_MIN_DOCS
                and share >= LINK_POSTS_SHARE)

    def note(self) -> str | None:
        """A message where the documents seen are :attr:`posts`, else None."""
        if not self.posts:
            return None
        share = self.share
        return (f"{share:.0%} of the first {self.docs} documents hold a link, whose pieces "
                "(http, www, com, a link shortener's) are counted as words and can fill the "
                "topics; for posts, `--links drop` (`vocab.links: drop`) removes them before "
                "the text is split")


def choose_links(contents) -> tuple[str, LinkCheck]:
    """``--links auto``: ``drop`` where the first documents of ``contents`` (raw texts, or
    pre-tokenized words, which hold no link) are posts full of links (:attr:`LinkCheck.posts`,
    over at most :data:`LINK_CHECK_DOCS` of them), else ``keep``. Returns the choice and the
    check, whose :attr:`~LinkCheck.share` says why.

    >>> choose_links(["flu season http://ow.ly/a1"] * 150 + ["no link"] * 50)[0]
    'drop'
    >>> choose_links(["see http://ow.ly/a1"] * 40 + ["no link"] * 160)[0]
    'keep'
    """
    check = LinkCheck()
    for content in contents:
        if check.done:
            break
        check.observe(content)
    return ("drop" if check.posts else "keep"), check
