"""Turning one raw record (a Kafka message value or a line of a file) into a document.

Bad input is a value, not a crash: :func:`decode` raises :class:`DecodeError` whose ``reason``
is one of a small fixed set, so callers (``anchorstream fit``, ``ingest`` and the daemon) count
rejections by reason, forward them to a dead-letter topic and move on.

Formats
-------
``"json"``
    A JSON object; the document is the string (or list of strings, taken as pre-tokenized) at
    ``text_field``. Optional ``id_field`` / ``timestamp_field`` are returned when present.
``"text"``
    The whole record is the document, UTF-8.
``"tokens"``
    A JSON array of strings, already tokenized.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from anchorstream.errors import InputError

__all__ = ["FORMATS", "REASONS", "DecodeError", "Document", "decode"]

FORMATS = ("json", "text", "tokens")

#: Every reason a record can be rejected for; metrics label values come from this set.
REASONS = (
    "oversized",
    "invalid_utf8",
    "invalid_json",
    "not_an_object",
    "missing_field",
    "wrong_type",
    "empty",
)


class DecodeError(InputError):
    """A record could not be turned into a document.

    Attributes
    ----------
    reason : str
        One of :data:`REASONS`.
    """

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Document:
    """A decoded document: raw text or a list of tokens, plus optional id and timestamp."""

    content: str | list[str]
    id: Any = None
    timestamp: Any = None


def _check_content(value: Any, where: str) -> str | list[str]:
    if isinstance(value, str):
        if not value.strip():
            raise DecodeError("empty", f"{where} is empty")
        return value
    if isinstance(value, list):
        if not all(isinstance(t, str) for t in value):
            raise DecodeError("wrong_type", f"{where} is a list with non-string items")
        if not value:
            raise DecodeError("empty", f"{where} is an empty list")
        return value
    raise DecodeError(
        "wrong_type", f"{where} must be a string or a list of strings, got {type(value).__name__}"
    )


def decode(
    raw: bytes | str,
    *,
    format: str = "json",
    text_field: str = "text",
    id_field: str | None = None,
    timestamp_field: str | None = None,
    max_bytes: int | None = None,
) -> Document:
    """Decode one record.

    Parameters
    ----------
    raw : bytes or str
        The record; bytes are decoded as strict UTF-8.
    format : {"json", "text", "tokens"}
    text_field : str
        Key of the document text in a JSON object (``format="json"``).
    id_field, timestamp_field : str, optional
        Keys whose values are passed through on the result when present.
    max_bytes : int, optional
        Records longer than this (in bytes) are rejected before parsing.

    Returns
    -------
    Document

    Raises
    ------
    DecodeError
        With ``reason`` in :data:`REASONS`.
    InputError
        For an unknown ``format`` (a programming error, not bad data).

    Examples
    --------
    >>> decode(b'{"text": "hello world"}').content
    'hello world'
    >>> decode(b"\\xff", format="text")
    Traceback (most recent call last):
    ...
    anchorstream.decode.DecodeError: record is not valid UTF-8: ...
    """
    if format not in FORMATS:
        raise InputError(f"format must be one of {FORMATS}, got {format!r}")
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise DecodeError("oversized", f"record has {size} bytes, the limit is {max_bytes}")
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError("invalid_utf8", f"record is not valid UTF-8: {exc}") from None
    elif isinstance(raw, str):
        text = raw
    else:
        raise DecodeError("wrong_type", f"record must be bytes or str, got {type(raw).__name__}")

    if format == "text":
        return Document(_check_content(text, "text"))

    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise DecodeError("invalid_json", f"record is not valid JSON: {exc}") from None

    if format == "tokens":
        if not isinstance(value, list):
            raise DecodeError(
                "wrong_type", f"a tokens record must be a JSON array, got {type(value).__name__}"
            )
        return Document(_check_content(value, "token list"))

    if not isinstance(value, dict):
        raise DecodeError(
            "not_an_object", f"a json record must be an object, got {type(value).__name__}"
        )
    if text_field not in value:
        raise DecodeError("missing_field", f"record has no field {text_field!r}")
    content = _check_content(value[text_field], f"field {text_field!r}")
    return Document(
        content,
        id=value.get(id_field) if id_field else None,
        timestamp=value.get(timestamp_field) if timestamp_field else None,
    )
