"""Strict JSON for what clients send: one meaning per document, bounded work, clear refusals.

:func:`loads` is :func:`json.loads` with the holes a hostile client would use closed:

- integers of more than ``max_int_digits`` digits (a 5,000-digit one made ``int()`` raise
  past Python's 4,300-digit guard, a 500 instead of a 400);
- ``NaN``, ``Infinity``, ``-Infinity`` (not JSON, though Python's parser accepts them) and
  numbers that overflow a float (``1e999``);
- nesting deeper than ``max_depth`` (and the parser's own recursion limit, turned into the same
  message instead of a ``RecursionError``);
- lone UTF-16 surrogates (``"\\ud800"``: not text, and they fail later when encoded);
- duplicate object keys (two parsers would disagree on which one wins);
- bytes that are not UTF-8, and a leading byte order mark.

Why the standard library's parser with hooks and not a stricter third-party one: every rule
above is a hook or a short walk, the body is already capped in size, and the messages can name
exactly what was refused.

>>> loads(b'{"top": 3, "tokens": ["a"]}')
{'top': 3, 'tokens': ['a']}
>>> loads(b'{"top": NaN}')
Traceback (most recent call last):
...
anchorstream.errors.InputError: NaN is not a JSON number
"""

from __future__ import annotations

import json
import math
from typing import Any

from anchorstream.errors import InputError

__all__ = ["loads"]


def loads(data: bytes, *, max_depth: int = 32, max_int_digits: int = 20) -> Any:
    """Parse one JSON document strictly.

    Parameters
    ----------
    data : bytes
        UTF-8 JSON text.
    max_depth : int, default 32
        Most nested arrays and objects.
    max_int_digits : int, default 20
        Most digits of an integer (20 holds any 64-bit integer).

    Returns
    -------
    The parsed value (dict, list, str, int, float, bool or None).

    Raises
    ------
    InputError
        With a message that says what was refused and where when the parser knows.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        raise InputError("the body starts with a UTF-8 byte order mark; send plain UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"the body is not UTF-8: {exc.reason} at byte {exc.start}") from None

    def parse_int(digits: str) -> int:
        n = len(digits.lstrip("-"))
        if n > max_int_digits:
            raise InputError(f"an integer of {n} digits; at most {max_int_digits} are accepted")
        return int(digits)

    def parse_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise InputError(f"the number {literal[:30]} is out of range of a float")
        return value

    def parse_constant(name: str) -> float:
        raise InputError(f"{name} is not a JSON number")

    def object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            dup = next(k for k, _ in pairs if k in seen or seen.add(k))
            raise InputError(f"duplicate key {dup[:40]!r} in an object")
        return obj

    try:
        value = json.loads(text, parse_int=parse_int, parse_float=parse_float,
                           parse_constant=parse_constant, object_pairs_hook=object_pairs)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise InputError(f"nested deeper than {max_depth} levels") from None
    _check_tree(value, max_depth)
    return value


def _check_tree(value: Any, max_depth: int) -> None:
    """Depth and lone surrogates, without recursion (the tree may be deep)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, (list, dict)):
            if depth >= max_depth:
                raise InputError(f"nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key in item:
                    _check_text(key)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)


def _check_text(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"a string holds a lone surrogate \\u{ord(s[exc.start]):04x} "
                         f"(not text); send UTF-8 or paired \\u escapes") from None
