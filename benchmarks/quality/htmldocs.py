"""Long documents from HTML manuals: one document per section, markup stripped.

Works on the two HTML dialects of the documentation packages used here: Sphinx
(``<section id=...>``, the Python documentation) and DocBook (``<div class="sect1">``,
``refsect1`` and so on, the PostgreSQL documentation). A section's document is its own text
without its subsections' (each subsection is a document of its own), without code blocks
(``<pre>``), scripts, tables of contents, navigation and Sphinx's "¶" header links. Sections
longer than ``max_tokens`` are cut at paragraph boundaries into passages; sections and
passages shorter than ``min_tokens`` are dropped (or merged into the previous passage).
"""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

# DocBook's section-like blocks: each is a document of its own.
_DOCBOOK_SECTIONS = {"sect1", "sect2", "sect3", "sect4", "sect5", "section", "refsect1",
                     "refsect2", "refsect3", "simplesect", "refnamediv", "refsynopsisdiv",
                     "preface", "partintro"}
_SKIP_TAGS = {"pre", "script", "style"}
_SKIP_CLASSES = {"toc", "navheader", "navfooter", "headerlink", "sphinxsidebar", "related",
                 "footer", "synopsis", "programlisting", "screen", "literallayout"}
_BLOCK_TAGS = {"p", "dd", "dt", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "div",
               "section", "blockquote", "table", "br"}
_WORD = re.compile(r"[^\W_]+")


class _SectionParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, bool, bool]] = []  # (tag, starts a section, skips text)
        self.sections: list[list[str]] = []  # text buffers of the open sections
        self.done: list[str] = []
        self.skipping = 0

    # Void elements never get an end tag, so they must not enter the stack.
    _VOID = {"br", "img", "hr", "meta", "link", "input", "col", "area", "base", "wbr"}

    def handle_starttag(self, tag, attrs):
        if tag in self._VOID:
            if tag == "br" and self.sections and not self.skipping:
                self.sections[-1].append("\n\n")
            return
        classes = set((dict(attrs).get("class") or "").split())
        section = tag == "section" or (tag == "div" and bool(classes & _DOCBOOK_SECTIONS))
        skip = tag in _SKIP_TAGS or bool(classes & _SKIP_CLASSES)
        self.open.append((tag, section, skip))
        if section:
            self.sections.append([])
        if skip:
            self.skipping += 1

    def handle_endtag(self, tag):
        # Tolerate unclosed tags (<p> without </p>): pop to the matching open tag.
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                break
        else:
            return
        while len(self.open) > i:
            t, section, skip = self.open.pop()
            if skip:
                self.skipping -= 1
            if section:
                self.done.append("".join(self.sections.pop()))
            elif t in _BLOCK_TAGS and self.sections and not self.skipping:
                self.sections[-1].append("\n\n")

    def handle_data(self, data):
        if self.sections and not self.skipping:
            self.sections[-1].append(data)


def html_sections(text: str) -> list[str]:
    """The text of every section of one HTML page, subsections excluded, in closing order."""
    parser = _SectionParser()
    parser.feed(text)
    parser.close()
    while parser.sections:  # sections left open by a truncated page
        parser.done.append("".join(parser.sections.pop()))
    return parser.done


def passages(section: str, *, min_tokens: int, max_tokens: int) -> list[str]:
    """Cut one section's text into passages of at most ~``max_tokens`` words.

    Paragraphs (separated by blank lines) are packed greedily; a trailing passage shorter than
    ``min_tokens`` joins the previous one; a lone paragraph longer than ``max_tokens`` stays
    whole. Whitespace inside a paragraph is collapsed to single spaces.
    """
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", section)]
    paragraphs = [p for p in paragraphs if p]
    out: list[tuple[list[str], int]] = []
    current: list[str] = []
    n = 0
    for p in paragraphs:
        k = len(_WORD.findall(p))
        if current and n + k > max_tokens:
            out.append((current, n))
            current, n = [], 0
        current.append(p)
        n += k
    if current:
        if out and n < min_tokens:
            out[-1] = (out[-1][0] + current, out[-1][1] + n)
        else:
            out.append((current, n))
    return ["\n\n".join(ps) for ps, k in out if k >= min_tokens]


def manual_documents(root: Path, *, min_tokens: int = 100, max_tokens: int = 600,
                     exclude=()) -> list[tuple[str, str]]:
    """``(page, passage)`` pairs of every HTML page under ``root``, pages in sorted order.

    Parameters
    ----------
    root : Path
        Directory of an HTML manual.
    min_tokens, max_tokens : int
        Passage length bounds in ``[^\\W_]+`` words (see :func:`passages`).
    exclude : iterable of str
        Glob patterns of pages (relative to ``root``) to leave out: indexes, search pages.
    """
    out = []
    for page in sorted(root.rglob("*.html")):
        rel = page.relative_to(root).as_posix()
        if any(Path(rel).match(pat) for pat in exclude):
            continue
        for section in html_sections(page.read_text(encoding="utf-8", errors="replace")):
            out += [(rel, p) for p in passages(section, min_tokens=min_tokens,
                                               max_tokens=max_tokens)]
    return out
