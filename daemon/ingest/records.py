"""One record's raw value into a document and its tokens: the rule the ingest loop and
``anchorstream fit`` share.

A module of its own so that ``anchorstream fit`` reads files by the loop's rule without
importing the loop (and with it the daemon's settings and the store's kernels).
"""

from __future__ import annotations

from collections.abc import Callable

from anchorstream.text.decode import DecodeError, Document, check_tokens, decode

__all__ = ["MAX_BYTES", "MAX_TOKENS", "record_tokens"]

#: A record's limits by default, for the daemon (``message.max_bytes``, ``message.max_tokens``),
#: ``anchorstream ingest`` and ``anchorstream fit --input`` alike: a longer record is rejected
#: as oversized; a document's tokens past the limit are not counted.
MAX_BYTES = 1024 * 1024
MAX_TOKENS = 10_000


def record_tokens(value: bytes | None, tokenizer: Callable, *, format: str = "json",
                  text_field: str = "text", id_field: str | None = None,
                  timestamp_field: str | None = None, max_bytes: int | None = None,
                  max_tokens: int | None = None) -> tuple[Document, list[str]]:
    """``(document, tokens)`` of one record's raw value: decode, tokenize, cut, check.

    The one rule by which a record becomes tokens, for the loop and ``anchorstream fit``: the
    value is decoded (:func:`anchorstream.text.decode.decode`, at most ``max_bytes``),
    tokenized, cut to ``max_tokens`` tokens and checked
    (:func:`anchorstream.text.decode.check_tokens`). The timestamp is left to the caller.

    Raises
    ------
    DecodeError
        With the reason the record is rejected for (``empty`` for a missing value: a Kafka
        tombstone).
    """
    if value is None:
        raise DecodeError("empty", "record has no value (a tombstone)")
    doc = decode(value, format=format, text_field=text_field, id_field=id_field,
                 timestamp_field=timestamp_field, max_bytes=max_bytes)
    tokens = tokenizer(doc.content)
    if max_tokens is not None and len(tokens) > max_tokens:
        tokens = tokens[:max_tokens]
    check_tokens(tokens)
    return doc, tokens
