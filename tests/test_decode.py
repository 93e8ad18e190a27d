import doctest
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import anchorstream.text.decode as decode_module
from anchorstream.text.decode import (
    MAX_TIMESTAMP,
    REASONS,
    DecodeError,
    check_tokens,
    decode,
    parse_timestamp,
)
from anchorstream.errors import InputError


def reason(raw, **kw):
    with pytest.raises(DecodeError) as info:
        decode(raw, **kw)
    assert info.value.reason in REASONS
    return info.value.reason


def test_json_text_field_and_passthrough_fields():
    doc = decode(
        b'{"body": "hello there", "id": 7, "ts": "2026-01-01"}',
        text_field="body", id_field="id", timestamp_field="ts",
    )
    assert doc.content == "hello there"
    assert doc.id == 7 and doc.timestamp == "2026-01-01"


def test_json_list_is_pretokenized():
    assert decode(b'{"text": ["a", "b"]}').content == ["a", "b"]


def test_every_bad_record_has_its_reason():
    assert reason(b"\xff\xfe") == "invalid_utf8"
    assert reason(b"{not json") == "invalid_json"
    assert reason(b"[1, 2]") == "not_an_object"
    assert reason(b'{"other": "x"}') == "missing_field"
    assert reason(b'{"text": 3}') == "wrong_type"
    assert reason(b'{"text": ["a", 1]}') == "wrong_type"
    assert reason(b'{"text": "   "}') == "empty"
    assert reason(b'{"text": []}') == "empty"
    assert reason(b'{"text": "x"}' * 10, max_bytes=20) == "oversized"
    assert reason(b"", format="text") == "empty"
    assert reason(b'{"a": 1}', format="tokens") == "wrong_type"


def test_text_and_tokens_formats():
    assert decode("plain words", format="text").content == "plain words"
    assert decode(b'["x", "y"]', format="tokens").content == ["x", "y"]


def test_unknown_format_is_a_programming_error():
    with pytest.raises(InputError, match="format must be one of"):
        decode(b"x", format="xml")


@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_raise_anything_but_decode_error(raw):
    for fmt in ("json", "text", "tokens"):
        try:
            decode(raw, format=fmt)
        except DecodeError:
            pass


@given(st.text(min_size=1).filter(lambda s: s.strip()))
def test_json_roundtrip(text):
    assert decode(json.dumps({"text": text}).encode()).content == text


def test_what_json_loads_refuses_is_invalid_json():
    # A plain ValueError past the interpreter's digit limit, RecursionError past its depth.
    assert reason(b'{"text": "a b", "n": 1' + b"0" * 5000 + b"}") == "invalid_json"
    assert reason(b"[" * 100_000 + b"]" * 100_000) == "invalid_json"
    assert reason(b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}") == "invalid_json"
    # NaN, Infinity and overflowing floats are read as Python reads them.
    assert decode(b'{"text": "a b", "x": NaN, "y": 1e999}').content == "a b"


def test_lone_surrogates_are_invalid_unicode_in_every_format():
    assert reason(b'{"text": "\\ud800 okay"}') == "invalid_unicode"
    assert reason(b'{"text": ["ok\\udc00", "fine"]}') == "invalid_unicode"
    assert reason(b'["\\udfff"]', format="tokens") == "invalid_unicode"
    assert reason("ok \ud800", format="text") == "invalid_unicode"
    # Raw, they are not UTF-8 at all; as an escaped pair, they are one character.
    assert reason("\ud800".encode("utf-8", "surrogatepass"), format="text") == "invalid_utf8"
    assert decode(b'{"text": "\\ud83d\\ude00 ok"}').content == "\U0001f600 ok"


@pytest.mark.parametrize("value, seconds", [
    (0, 0.0), (1_700_000_000, 1.7e9), (1.5, 1.5), (MAX_TIMESTAMP, MAX_TIMESTAMP),
    ("2024-01-01T00:00:00Z", 1704067200.0), ("2024-01-01T01:00:00+01:00", 1704067200.0),
    ("2024-01-01", 1704067200.0),
])
def test_timestamps_in_seconds_or_iso_8601(value, seconds):
    assert parse_timestamp(value) == seconds


@pytest.mark.parametrize("value", [
    -5, -0.001, float("nan"), float("inf"), -float("inf"), 1e300, 10**400, MAX_TIMESTAMP + 1,
    True, False, "yesterday", "2024-13-45", "1969-12-31T23:59:59Z", "0001-01-01T00:00:00-14:00",
    "\ud800", [1], {"s": 1},
])
def test_anything_else_is_a_bad_timestamp(value):
    with pytest.raises(DecodeError) as info:
        parse_timestamp(value, record_ms=1000)
    assert info.value.reason == "bad_timestamp"


def test_the_record_time_stands_in_for_a_missing_field():
    assert parse_timestamp(None, 1_700_000_000_123) == 1_700_000_000.123
    for record_ms in (None, -1):
        with pytest.raises(DecodeError) as info:
            parse_timestamp(None, record_ms)
        assert info.value.reason == "missing_field"
    with pytest.raises(DecodeError) as info:
        parse_timestamp(None, 2**62)  # a clock gone wrong
    assert info.value.reason == "bad_timestamp"


def test_tokens_must_be_words_a_store_and_a_snapshot_can_hold():
    ok = ["new york", "café", "東京", "a\u200db", "x" * 1000]
    assert check_tokens(ok) is ok and check_tokens([]) == []
    for bad, why in [(["ok\ud800"], "invalid_unicode"), (["nul\x00"], "invalid_token"),
                     (["a\nb"], "invalid_token"), (["a\x85b"], "invalid_token"),
                     (["a\u2028b"], "invalid_token"), (["tab\there"], "invalid_token"),
                     (["\x7f"], "invalid_token"), ([""], "invalid_token"),
                     (["x" * 1001], "invalid_token"), ([b"bytes"], "invalid_token")]:
        with pytest.raises(DecodeError) as info:
            check_tokens(["fine", *bad])
        assert info.value.reason == why, bad


@given(st.lists(st.text(max_size=8), max_size=6))
def test_checked_tokens_encode_and_stay_on_one_line(tokens):
    try:
        check_tokens(tokens)
    except DecodeError as exc:
        assert exc.reason in REASONS
        return
    for t in tokens:
        t.encode("utf-8")
        assert t and t.splitlines() == [t]


def test_module_doctests():
    result = doctest.testmod(decode_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 7 and result.failed == 0
