"""Turning one raw record (a Kafka message value or a line of a file) into a document.

Bad input is a value, not a crash: :func:`decode`, :func:`parse_timestamp` and
:func:`check_tokens` raise :class:`DecodeError` whose ``reason`` is one of :data:`REASONS`, so
callers (``anchorstream fit``, ``ingest`` and the daemon) count rejections by reason, forward
them to a dead-letter topic and move on. Whatever a record holds — invalid UTF-8, a lone
surrogate escaped in JSON (``"\\ud800"``), an integer of 5,000 digits, JSON nested past the
recursion limit, ``NaN`` — ends in one of these reasons or in a document; nothing else is raised
for bad data. What passes is safe to keep: content is valid Unicode, a timestamp is finite
seconds in years 1970-9999, and tokens are words the store's vocabulary and a snapshot's
one-word-a-line file can hold.

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

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anchorstream.errors import InputError

__all__ = ["FORMATS", "MAX_TIMESTAMP", "MAX_TOKEN_CHARS", "REASONS", "DecodeError", "Document",
           "check_tokens", "decode", "parse_timestamp"]

FORMATS = ("json", "text", "tokens")

#: Every reason a record can be rejected for; metrics label values come from this set.
#: ``unprocessable`` is for what no check here foresaw: the ingest loop gives it to a record
#: whose processing raised anything else.
REASONS = (
    "oversized",
    "invalid_utf8",
    "invalid_unicode",
    "invalid_json",
    "not_an_object",
    "missing_field",
    "wrong_type",
    "empty",
    "bad_timestamp",
    "invalid_token",
    "unprocessable",
)

#: Latest accepted timestamp, in seconds: 9999-12-31T23:59:59Z, the end of what ISO 8601 and
#: ``datetime`` write. Milliseconds sent as seconds land far beyond it, and are rejected
#: rather than moving a store's clock (and its forgetting) tens of thousands of years ahead.
MAX_TIMESTAMP = 253_402_300_799.0

#: Longest accepted token, in code points. The tokenizer's own ``max_length`` (30 by default)
#: is the filter that matters; this bound holds for any tokenizer.
MAX_TOKEN_CHARS = 1000

_SURROGATE = re.compile("[\ud800-\udfff]")
# What a word must not contain: lone surrogates (not encodable as UTF-8, the store's vocabulary
# encoding), C0 and C1 control characters (NUL among them) and the line and paragraph
# separators, which cover every line boundary ``str.splitlines`` knows (a snapshot stores its
# vocabulary one word a line).
_UNSTORABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


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


def _check_unicode(text: str, where: str) -> None:
    # JSON escapes can spell lone surrogates ("\ud800"), which no UTF-8 encoder accepts; the
    # tokenizer would drop some of them and keep others inside words, so the document is
    # refused whole, the same way in every field and format.
    if not text.isascii():
        bad = _SURROGATE.search(text)
        if bad is not None:
            raise DecodeError(
                "invalid_unicode",
                f"{where} holds a lone surrogate U+{ord(bad.group()):04X} at character "
                f"{bad.start()}: not Unicode text (a JSON \\u escape of half a pair?)")


def _check_content(value: Any, where: str) -> str | list[str]:
    if isinstance(value, str):
        if not value.strip():
            raise DecodeError("empty", f"{where} is empty")
        _check_unicode(value, where)
        return value
    if isinstance(value, list):
        if not all(isinstance(t, str) for t in value):
            raise DecodeError("wrong_type", f"{where} is a list with non-string items")
        if not value:
            raise DecodeError("empty", f"{where} is an empty list")
        _check_unicode("".join(value), where)
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
        With ``reason`` in :data:`REASONS`, for any record: its content is valid Unicode (no
        lone surrogates, ``invalid_unicode``); JSON that Python cannot or will not read (an
        integer past ``sys.get_int_max_str_digits()`` digits, nesting past the recursion
        limit) is ``invalid_json``. ``NaN``, ``Infinity`` and floats that overflow to infinity
        are read as Python reads them (a timestamp made of them is refused by
        :func:`parse_timestamp`).
    InputError
        For an unknown ``format`` (a programming error, not bad data).

    Examples
    --------
    >>> decode(b'{"text": "hello world"}').content
    'hello world'
    >>> decode(b"\\xff", format="text")
    Traceback (most recent call last):
    ...
    anchorstream.text.decode.DecodeError: record is not valid UTF-8: ...
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
    except (ValueError, RecursionError) as exc:
        # JSONDecodeError is a ValueError; so is the plain ValueError of an integer past the
        # interpreter's digit limit, and RecursionError comes from deep nesting.
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


def parse_timestamp(value: Any, record_ms: int | None = None) -> float:
    """Seconds since the Unix epoch of a document's timestamp field.

    Parameters
    ----------
    value : int, float, str or None
        The field: seconds (int or float), or an ISO 8601 string (``Z`` or an offset; without
        one, UTC). ``None`` when the document has none.
    record_ms : int, optional
        The record's own time in milliseconds (a Kafka message timestamp), used when ``value``
        is None; negative means unknown, as in Kafka.

    Returns
    -------
    float
        Finite seconds in ``[0, MAX_TIMESTAMP]``.

    Raises
    ------
    DecodeError
        ``missing_field`` when neither time is there; ``bad_timestamp`` for anything else that
        is not such a time: a boolean, NaN, infinity, a negative or out-of-range number, a
        string that is not ISO 8601, another type.

    Examples
    --------
    >>> parse_timestamp(1700000000), parse_timestamp("1970-01-02T00:00:00Z")
    (1700000000.0, 86400.0)
    >>> parse_timestamp(None, record_ms=1500)
    1.5
    >>> parse_timestamp(-5)
    Traceback (most recent call last):
    ...
    anchorstream.text.decode.DecodeError: timestamp -5 is not seconds in [0, 253402300799.0]
    """
    if value is None:
        if record_ms is None or record_ms < 0:
            raise DecodeError("missing_field", "no document timestamp and no record timestamp")
        value, where = record_ms / 1000.0, "record timestamp"
    else:
        where = "timestamp"
    if isinstance(value, bool):
        raise DecodeError("bad_timestamp", f"a boolean ({value}) is not a timestamp")
    if isinstance(value, str):
        try:
            t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if t.tzinfo is None:
                t = t.replace(tzinfo=dt.UTC)
            value = t.timestamp()
        except (ValueError, OverflowError):
            # OverflowError: a valid date whose offset leaves datetime's range (year 1, -14:00)
            raise DecodeError("bad_timestamp",
                              f"{where} {value[:100]!r} is not ISO 8601") from None
    if not isinstance(value, (int, float)):
        raise DecodeError("bad_timestamp", f"{where} must be seconds or an ISO 8601 string, got "
                                           f"{type(value).__name__}")
    # Compared before any conversion: an int of any size, NaN (false both ways) and infinity
    # all fail here, so float() below cannot overflow.
    if not 0 <= value <= MAX_TIMESTAMP:
        shown = value if not isinstance(value, int) or value.bit_length() < 64 else "(huge)"
        raise DecodeError("bad_timestamp",
                          f"{where} {shown} is not seconds in [0, {MAX_TIMESTAMP}]")
    return float(value)


def check_tokens(tokens: Sequence[str], max_chars: int = MAX_TOKEN_CHARS) -> Sequence[str]:
    """Check that a document's tokens are words the store can keep; return them unchanged.

    Every token is added to the vocabulary sketch and may become a word of the store (UTF-8
    bytes) and of every snapshot (one word a line); one unstorable token would make every
    later checkpoint or publication fail. The tokenizer already guarantees this for text (its
    words are runs of letters, digits and marks of 2-30 characters), not for pre-tokenized
    lists, whose items it only normalizes and filters by length.

    Parameters
    ----------
    tokens : sequence of str
    max_chars : int, default MAX_TOKEN_CHARS

    Raises
    ------
    DecodeError
        ``invalid_unicode`` for a lone surrogate; ``invalid_token`` for a token that is not a
        str, is empty, is longer than ``max_chars`` or holds a control character (NUL
        included) or a line or paragraph separator.

    Examples
    --------
    >>> check_tokens(["new york", "café"])
    ['new york', 'café']
    >>> check_tokens(["line\\nbreak"])
    Traceback (most recent call last):
    ...
    anchorstream.text.decode.DecodeError: token 'line\\nbreak' holds U+000A, which no word may hold
    """
    if not tokens:
        return tokens
    try:
        joined = "".join(tokens)
    except TypeError:
        raise DecodeError("invalid_token", "tokens must be strings") from None
    # This runs for every document, so each test is one pass in C, the cheapest first: ASCII
    # text is printable exactly when it has no control character (~4x faster than the regex).
    if not (joined.isascii() and joined.isprintable()):
        bad = _UNSTORABLE.search(joined)
        if bad is not None:
            char = bad.group()
            token = next(t for t in tokens if char in t)
            reason = "invalid_unicode" if _SURROGATE.match(char) else "invalid_token"
            raise DecodeError(reason, f"token {token[:100]!r} holds U+{ord(char):04X}, which no "
                                      "word may hold")
    if not all(tokens):
        raise DecodeError("invalid_token", "a token is empty")
    if len(joined) > max_chars and (longest := max(map(len, tokens))) > max_chars:
        raise DecodeError("invalid_token", f"a token has {longest} characters, more than "
                                           f"{max_chars}")
    return tokens
