"""The one JSON decoder every body adapter uses (``_adapters/_json.py``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_evidence._adapters._json import JsonNumber, loads_exact

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _numbers_as_text(value: object) -> object:
    """``value`` as ``json.loads`` reads it, each number as the text it was written as."""
    if isinstance(value, dict):
        return {k: _numbers_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_as_text(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    return json.dumps(value)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_a_body_reads_as_json_loads_reads_it_with_numbers_kept_as_written(value: object) -> None:
    body = json.dumps(value).encode()
    assert loads_exact(body) == _numbers_as_text(json.loads(body))


def test_numbers_are_kept_as_their_wire_text() -> None:
    decoded = loads_exact(b'{"a": 2048, "b": 2048.0, "c": "2048"}')
    assert decoded == {"a": "2048", "b": "2048.0", "c": "2048"}
    assert isinstance(decoded["a"], JsonNumber)
    assert isinstance(decoded["b"], JsonNumber)
    assert not isinstance(decoded["c"], JsonNumber)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # json.loads' own words for a byte-order mark, as before the shared decoder
        (b"\xef\xbb\xbf{}", "not JSON (Unexpected UTF-8 BOM (decode using utf-8-sig): "),
        (b"NaN", "not JSON (non-standard JSON constant NaN)"),
        (b"{", "not JSON (Expecting property name enclosed in double quotes"),
        (b"\xff", "not UTF-8 (invalid start byte at byte 0)"),
        (b"[" * 100_000, "not JSON this package reads (nested too deeply)"),
    ],
)
def test_a_body_that_is_not_json_says_why(body: bytes, reason: str) -> None:
    failure = loads_exact(body)
    assert isinstance(failure, ValueError)
    assert str(failure).startswith(reason)
