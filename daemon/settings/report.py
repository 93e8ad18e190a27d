"""From pydantic's list of validation errors to one :class:`ConfigError` naming every problem.

Each error becomes one line in the daemon's wording:

* a bad value (``config_value``, raised by :mod:`daemon.settings.checks`):
  ``<section>.<key>[ (from environment variable X)]: got <value>; allowed: <what>``;
* a broken rule between keys (``config_rules``, :mod:`daemon.settings.rules`): its own message;
* an unknown key or section (pydantic's ``extra_forbidden``): the name, a "did you mean" from
  :mod:`difflib` and the allowed names;
* a section that is not a mapping: ``<section>: got <value>; allowed: a mapping of keys to
  values``.

One problem gives its line alone (so a message still starts with the dotted key); several give
a count and one line each.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, ValidationError

from daemon.settings.checks import ConfigError, FromEnv, show


def suggest(name: str, allowed: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``allowed``, or nothing."""
    close = difflib.get_close_matches(name, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown_section(section: str, value: Any, sections: list[str]) -> str:
    allowed = f"{suggest(section, sections)}; allowed sections: " + ", ".join(sections)
    from_env = [v for v in value.values() if isinstance(v, FromEnv)] \
        if isinstance(value, dict) else []
    if from_env:
        return f"environment variable {from_env[0].var}: unknown section {section!r}{allowed}"
    return f"unknown section {section!r}{allowed}"


def _unknown_key(section: str, key: str, value: Any, keys: list[str]) -> str:
    where = value.where if isinstance(value, FromEnv) else ""
    return (f"unknown key '{section}.{key}'{where}{suggest(key, keys)}; "
            f"allowed keys in '{section}': " + ", ".join(keys))


def _lines(error: dict, fields: dict[str, type[BaseModel]]) -> list[str]:
    """The message lines of one pydantic error on a :class:`Config` of sections ``fields``."""
    loc = tuple(str(part) for part in error["loc"])
    kind, ctx = error["type"], error.get("ctx") or {}
    dotted = ".".join(loc)
    if kind == "config_rules":
        return list(ctx["messages"])
    if kind == "config_value":
        return [f"{dotted}{ctx['where']}: got {ctx['shown']}; allowed: {ctx['allowed']}"]
    if kind == "extra_forbidden" and len(loc) == 1:
        return [_unknown_section(loc[0], error["input"], list(fields))]
    if kind == "extra_forbidden" and len(loc) == 2:
        return [_unknown_key(loc[0], loc[1], error["input"], list(fields[loc[0]].model_fields))]
    if len(loc) == 1 and kind in ("model_type", "model_attributes_type", "dict_type"):
        return [f"{dotted}: got {show(error['input'])}; allowed: a mapping of keys to values"]
    return [f"{dotted}: {error['msg']}"]  # pragma: no cover - every check words its own errors


def report(exc: ValidationError, fields: dict[str, type[BaseModel]]) -> ConfigError:
    """One :class:`ConfigError` listing every problem of ``exc``, in the order found."""
    lines = [line for error in exc.errors(include_url=False) for line in _lines(error, fields)]
    if len(lines) == 1:
        return ConfigError(lines[0])
    return ConfigError(f"{len(lines)} problems in the configuration:\n  " + "\n  ".join(lines))
