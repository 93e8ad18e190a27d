import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anchorstream.decode import REASONS, DecodeError, decode
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
