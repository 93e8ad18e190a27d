"""The kinds of value a configuration key takes, each with the wording of its error.

Every kind is a check ``value -> normalized value`` that raises :class:`_Invalid` with the text
of "allowed: ..."; :func:`checked` turns one into a pydantic ``PlainValidator`` for an
``Annotated`` field type, so that pydantic runs the checks of every key (and collects every
failure) while the messages stay ours: ``<section>.<key>: got <value>; allowed: <what>``.

A value from an environment variable reaches a check as :class:`FromEnv`: the text parsed as a
YAML scalar, the text itself and the variable's name (named in the message).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import PlainValidator, SecretStr
from pydantic_core import PydanticCustomError

from anchorstream.errors import AnchorstreamError, InputError
from anchorstream.store.delay import AUTO as COUNT_DELAY_AUTO
from anchorstream.store.delay import check_count_delay
from anchorstream.store.location import SECRET_OPTIONS
from anchorstream.text.tokenize import available_stopword_lists, load_stopwords
from anchorstream.text.windows import check_refine_window

#: Value of ``kafka.bootstrap_servers`` that asks the daemon to start the bundled broker.
EMBEDDED = "embedded"


class ConfigError(AnchorstreamError, ValueError):
    """The configuration file or an environment override is invalid."""


class UniqueKeyLoader(yaml.SafeLoader):
    """The YAML reader of the file and of environment values: a SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False):
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                f"duplicate key {key!r} at line {key_node.start_mark.line + 1}; "
                "each key may appear once per section"
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


class Secret(SecretStr):
    """A string that never shows itself in ``repr``, ``str``, logs or tracebacks.

    A pydantic ``SecretStr`` (``get_secret_value()``) that prints as ``***`` and keeps the
    daemon's short name for reading it, :meth:`reveal`.

    >>> s = Secret("hunter2")
    >>> s, str(s), s.reveal()
    (***, '***', 'hunter2')
    """

    def reveal(self) -> str:
        """The secret itself; only for the code that must send or compare it."""
        return self.get_secret_value()

    def __repr__(self) -> str:
        return "***"

    __str__ = __repr__


class FrozenMap(Mapping):
    """A read-only, hashable mapping: the value of a mapping-valued key in a frozen section.

    >>> m = FrozenMap({"region": "eu-west-1"})
    >>> m["region"], dict(m), m == {"region": "eu-west-1"}
    ('eu-west-1', {'region': 'eu-west-1'}, True)
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None):
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self._data.items())))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


# --------------------------------------------------------------------------------------------
# From a check's failure to a pydantic error carrying our wording


_UNSET = object()


class _Invalid(Exception):
    """Raised by a check with the 'allowed' text (and, for secrets, what to show instead)."""

    def __init__(self, allowed: str, shown: Any = _UNSET):
        super().__init__(allowed)
        self.allowed = allowed
        self.shown = shown


@dataclass(frozen=True)
class FromEnv:
    """A value from the environment variable ``var``: ``text`` parsed as YAML, and ``text``."""

    value: Any
    text: str
    var: str

    @classmethod
    def parse(cls, var: str, text: str) -> FromEnv:
        """Read ``text`` as a YAML scalar or flow sequence, as a value in the file would be."""
        try:
            value = yaml.load(text, Loader=UniqueKeyLoader) if text.strip() else None
        except yaml.YAMLError:
            value = text  # not valid YAML on its own (e.g. "a: b: c"): the text verbatim
        if isinstance(value, dict):
            value = text  # a 'key: value' looking string is meant literally
        return cls(value, text, var)

    @property
    def where(self) -> str:
        return f" (from environment variable {self.var})"


def show(v: Any) -> str:
    """How a received value appears after "got" in a message."""
    return repr(list(v) if isinstance(v, tuple) else v)


Check = Callable[[Any], Any]


def _run(check: Check, value: Any) -> Any:
    """``check(value)``, an environment value's text tried when its YAML reading does not fit."""
    given, where = value, ""
    if isinstance(value, FromEnv):
        given, where = value.value, value.where
    try:
        try:
            return check(given)
        except _Invalid:
            # An environment value is text; YAML may have read a password "123456" or a topic
            # "2024" as a number. When the parsed value does not fit but the text does, the
            # text is what was meant.
            if not isinstance(value, FromEnv) or isinstance(given, str):
                raise
            return check(value.text)
    except _Invalid as exc:
        shown = show(given) if exc.shown is _UNSET else exc.shown
        raise PydanticCustomError("config_value", "{where}: got {shown}; allowed: {allowed}",
                                  {"where": where, "shown": shown, "allowed": exc.allowed}
                                  ) from None


def checked(check: Check, python_type: Any = Any) -> Any:
    """The field type ``Annotated[python_type, <check as a pydantic validator>]``."""
    return Annotated[python_type, PlainValidator(lambda v: _run(check, v))]


# --------------------------------------------------------------------------------------------
# The kinds of value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _or_null(text: str, optional: bool) -> str:
    return text + (" or null" if optional else "")


def Int(lo: int | None = None, hi: int | None = None, *, optional: bool = False) -> Any:
    """An integer (never a bool) in [lo, hi]."""
    def check(v):
        if v is None and optional:
            return None
        if not _is_int(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = ("an integer" + (f" >= {lo}" if lo is not None else "")
                   + (f" and <= {hi}" if hi is not None else ""))
            raise _Invalid(_or_null(rng, optional))
        return int(v)

    return checked(check, int | None if optional else int)


def Float(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
          optional: bool = False) -> Any:
    """A finite number in [lo, hi] ((lo, hi] with ``lo_open``), held as a float."""
    def check(v):
        if v is None and optional:
            return None
        ok = _is_number(v) and v == v and abs(v) != float("inf")
        if ok and lo is not None:
            ok = v > lo if lo_open else v >= lo
        if ok and hi is not None:
            ok = v <= hi
        if not ok:
            text = "a finite number"
            if lo is not None:
                text += f" {'>' if lo_open else '>='} {lo}"
            if hi is not None:
                text += f" and <= {hi}"
            raise _Invalid(_or_null(text, optional))
        return float(v)

    return checked(check, float | None if optional else float)


def _refine_window(v: Any) -> int | str | None:
    try:
        return check_refine_window(v)  # the library's rule
    except InputError:
        raise _Invalid("'auto', an integer >= 2 (tokens) or null") from None


#: ``model.refine_window``: ``'auto'``, a window of >= 2 tokens, or null.
RefineWindow = checked(_refine_window, int | str | None)


def _count_delay(v: Any) -> int | str:
    if isinstance(v, str) and v == COUNT_DELAY_AUTO:
        return v
    try:
        return check_count_delay(v)  # the library's rule
    except InputError:
        raise _Invalid("'auto' or an integer >= 0 (documents)") from None


#: ``store.count_delay``: ``'auto'`` or a delay of >= 0 documents.
CountDelay = checked(_count_delay, int | str)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _Invalid("true or false")
    return v


Bool = checked(_bool, bool)


def _text_check(*, optional: bool = False, pattern: str | None = None,
                what: str = "a non-empty string", secret: bool = False) -> Check:
    rx = re.compile(pattern) if pattern else None

    def check(v):
        if v is None and optional:
            return None
        # A secret's value is never echoed: only its type is shown.
        shown = f"<a {type(v).__name__}>" if secret else _UNSET
        if not isinstance(v, str) or not v or (rx is not None and not rx.fullmatch(v)):
            raise _Invalid(_or_null(what, optional), shown)
        return Secret(v) if secret else v

    return check


def Text(*, optional: bool = False) -> Any:
    """A non-empty string."""
    return checked(_text_check(optional=optional), str | None if optional else str)


#: A non-empty string held as :class:`Secret`, or null; its value is never shown in a message.
SecretText = checked(_text_check(optional=True, secret=True), Secret | None)


def Choice(*allowed: Any, optional: bool = False) -> Any:
    """One of ``allowed``."""
    def check(v):
        if v is None and optional:
            return None
        if v not in allowed:
            raise _Invalid(_or_null("one of " + ", ".join(repr(a) for a in allowed), optional))
        return v

    return checked(check, str | None if optional else str)


#: What Kafka allows in a topic's name, and how the errors say it.
TOPIC_RX = r"[A-Za-z0-9._-]{1,249}"
TOPIC_TEXT = "a Kafka topic name (1-249 characters of letters, digits, '.', '_', '-')"

#: A Kafka topic name, or null.
OptionalTopic = checked(_text_check(optional=True, pattern=TOPIC_RX, what=TOPIC_TEXT),
                        str | None)


def _topics(v: Any) -> tuple[str, ...]:
    items = [v] if isinstance(v, str) else v
    if (not isinstance(items, list) or not items
            or not all(isinstance(t, str) and re.fullmatch(TOPIC_RX, t) for t in items)):
        raise _Invalid("a non-empty list of Kafka topic names (letters, digits, '.', '_', '-')")
    if len(set(items)) != len(items):
        raise _Invalid("a list of distinct topic names")
    return tuple(items)


#: One topic name or a non-empty list of distinct ones, held as a tuple.
Topics = checked(_topics, tuple[str, ...])

_HOSTPORT_RX = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})")


def _bootstrap(v: Any) -> tuple[str, ...]:
    if v == EMBEDDED:
        return (EMBEDDED,)
    items = [s.strip() for s in v.split(",")] if isinstance(v, str) else v
    allowed = (f"'{EMBEDDED}', or HOST:PORT, or a list / comma-separated string of "
               "HOST:PORT addresses")
    if not isinstance(items, list) or not items:
        raise _Invalid(allowed)
    for item in items:
        m = _HOSTPORT_RX.fullmatch(item) if isinstance(item, str) else None
        if m is None or not 0 < int(m.group(2)) < 65536:
            raise _Invalid(allowed)
    return tuple(items)


#: 'embedded', or HOST:PORT addresses (a list or a comma-separated string), held as a tuple.
Bootstrap = checked(_bootstrap, tuple[str, ...])


def _existing_file(v: Any) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise _Invalid("a path to an existing file or null")
    if not Path(v).is_file():
        raise _Invalid(f"a path to an existing file (no file at {str(Path(v).resolve())!r})")
    return v


#: A path to an existing file, or null.
ExistingFile = checked(_existing_file, str | None)


def shipped_stopword_lists() -> str:
    """The shipped stopword lists' names, quoted: ``'english', 'french', ...``."""
    return ", ".join(repr(name) for name in available_stopword_lists())


def _stopwords(v: Any) -> str:
    if v is None or v == "none":
        return "none"
    if v == "auto":
        return v
    if not isinstance(v, str) or not v:
        raise _Invalid(f"'auto', a shipped list ({shipped_stopword_lists()}), 'none', or a "
                       "path to a file of stopwords (one per line)")
    if v not in available_stopword_lists():
        # A path: read now, so that a typo of a list's name or a missing file fails here,
        # naming the key, and not when the daemon builds its tokenizer.
        try:
            load_stopwords(v)
        except InputError as exc:
            # load_stopwords reads a name with a path separator or ending in .txt as a path.
            path = "/" in v or os.sep in v or v.endswith(".txt")
            raise _Invalid(f"'auto', a shipped list ({shipped_stopword_lists()}), 'none', or a "
                           "path to a file of stopwords (one per line)"
                           + (f"; {exc}" if path else "")) from None
    return v


#: A shipped list's name, 'none' (null too) or a readable file's path.
Stopwords = checked(_stopwords, str)

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(v: Any) -> str:
    if not isinstance(v, str) or v.upper() not in _LEVELS:
        raise _Invalid("one of " + ", ".join(repr(s) for s in _LEVELS))
    return v.upper()


#: A logging level name in any case, held in upper case.
LogLevel = checked(_log_level, str)

_OPTIONS_TEXT = ("a mapping of option names to strings, numbers or booleans (keyword arguments "
                 "of the Icechunk storage, e.g. {region: eu-west-1, endpoint_url: ...}), or {}")


def _storage_option(key: Any, value: Any) -> Any:
    """One checked option value; credentials (``SECRET_OPTIONS``) become :class:`Secret`."""
    if not isinstance(key, str) or not key:
        raise _Invalid(_OPTIONS_TEXT + f"; got the option name {key!r}", "<a mapping>")
    if isinstance(value, Mapping):  # Icechunk's `config` (GCS, Azure): str -> str
        if not all(isinstance(a, str) and isinstance(b, str) for a, b in value.items()):
            raise _Invalid(_OPTIONS_TEXT + f"; option {key!r} must map strings to strings",
                           "<a mapping>")
        return FrozenMap(value)
    if value is not None and not isinstance(value, (str, bool, int, float)):
        shown = "<redacted>" if key in SECRET_OPTIONS else repr(value)
        raise _Invalid(_OPTIONS_TEXT + f"; option {key!r} got {shown}", "<a mapping>")
    return Secret(value) if key in SECRET_OPTIONS and isinstance(value, str) else value


def _storage_options(v: Any) -> FrozenMap:
    """A mapping of Icechunk storage keyword arguments; credentials are held as Secret.

    An environment override is text: a YAML flow mapping such as
    ``{endpoint_url: "http://minio:9000", allow_http: true}`` is parsed here.
    """
    if v is None:
        return FrozenMap()
    if isinstance(v, str):
        try:
            v = yaml.safe_load(v)
        except yaml.YAMLError:
            raise _Invalid(_OPTIONS_TEXT) from None
    if not isinstance(v, Mapping):
        raise _Invalid(_OPTIONS_TEXT)
    return FrozenMap({key: _storage_option(key, value) for key, value in v.items()})


#: Keyword arguments of an Icechunk storage, held as a :class:`FrozenMap`.
StorageOptions = checked(_storage_options, FrozenMap)
