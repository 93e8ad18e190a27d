"""The first documents after each start, through two checks that say what a setting misses:
a warning where the stopword list is not the documents' language
(:class:`~anchorstream.text.language.StopwordCheck`, whose share goes to
``anchorstream_stopword_share``) and a note where they are posts full of links that are kept
as words (:class:`~anchorstream.text.links.LinkCheck`). Logged once each, on the ingest
loop's logger; neither check ever costs a document."""

from __future__ import annotations

import logging

from anchorstream.text.language import StopwordCheck
from anchorstream.text.links import LinkCheck

__all__ = ["FirstDocuments"]

log = logging.getLogger("anchorstream.loop")


class FirstDocuments:
    """The checks of the first documents a tokenizer takes; each is dropped (None) once it has
    seen enough of them, or, for the stopword check, once it fails.

    ``stopwords``: the stopword check to run, by default ``StopwordCheck(tokenizer)``;
    ``metrics``: a :class:`daemon.metrics.Metrics` for the stopword share, or None.
    """

    def __init__(self, tokenizer, metrics=None, *, stopwords: StopwordCheck | None = None):
        self.stopwords: StopwordCheck | None = stopwords or StopwordCheck(tokenizer)
        self.links: LinkCheck | None = LinkCheck(getattr(tokenizer, "links", "keep"))
        self.metrics = metrics

    @property
    def done(self) -> bool:
        """Whether both checks have seen what they need."""
        return self.stopwords is None and self.links is None

    def observe(self, content) -> None:
        """One document's content (as the tokenizer took it) through the checks still open."""
        links, check = self.links, self.stopwords
        if links is not None:
            links.observe(content)  # substring tests and a search of a str: cannot fail
            if links.done:
                self.links = None
                if note := links.note():
                    log.warning("%s", note)
        if check is None:
            return
        try:
            check.observe(content)
        except Exception:  # noqa: BLE001 - a diagnostic must never cost a document
            log.debug("stopword check stopped", exc_info=True)
            self.stopwords = None
            return
        if check.done:
            if warning := check.warning():
                log.warning("%s", warning)
            if self.metrics is not None and check.share is not None:
                self.metrics.stopword_share.set(check.share)
            self.stopwords = None
