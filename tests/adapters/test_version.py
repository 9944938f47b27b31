"""``/version``: real and hand-written bodies, and each failure's words."""

from __future__ import annotations

import pytest
from packaging.version import Version

from tests._paths import real_body
from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.version import SelfReportedVersion, parse_version
from vllm_evidence.upstream._routes import Route


def test_version_real_capture() -> None:
    parsed = parse_version(real_body("version"))
    assert isinstance(parsed, SelfReportedVersion)
    assert parsed.raw == "0.32.0"
    assert parsed.version == Version("0.32.0")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0.25.2.dev0+g752a3a504.d20260714", Version("0.25.2.dev0+g752a3a504.d20260714")),
        ("0.6.6.post1", Version("0.6.6.post1")),
        ("0.10.1.1", Version("0.10.1.1")),
    ],
)
def test_version_dev_post_local(raw: str, expected: Version) -> None:
    parsed = parse_version(f'{{"version": "{raw}"}}'.encode())
    assert isinstance(parsed, SelfReportedVersion)
    assert parsed.raw == raw
    assert parsed.version == expected


@pytest.mark.parametrize(
    "body",
    [b'{"version": "not a version"}', b'{"version": 32}', b"[]", b"<html>", b"\xff\xfe", b""],
)
def test_version_unparseable_is_a_failure(body: bytes) -> None:
    parsed = parse_version(body)
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route is Route.VERSION
    assert parsed.reason


# --- each failure's words (mutation testing found them untested) -----------------


def _reason(outcome: object) -> str:
    assert isinstance(outcome, BodyParseFailure), outcome
    return outcome.reason


NOT_JSON = "not JSON (Expecting value: line 1 column 1 (char 0))"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", NOT_JSON),
        (b"[]", "body is not a JSON object"),
        (b'{"v": 1}', 'no "version" string in the body'),
        (b'{"version": "x"}', "'x' is not a PEP 440 version"),
        (b'{"version": "' + b"y" * 80 + b'"}', f"'{'y' * 80}' is not a PEP 440 version"),
        (b'{"version": "' + b"y" * 81 + b'"}', f"'{'y' * 77}...' is not a PEP 440 version"),
    ],
)
def test_version_failures_say_what_is_wrong(body: bytes, reason: str) -> None:
    assert _reason(parse_version(body)) == reason


def test_version_body_not_utf8() -> None:
    assert _reason(parse_version(b'{"version": "\xff"}')) == (
        "not UTF-8 (invalid start byte at byte 13)"
    )


def test_a_version_parses() -> None:
    assert isinstance(parse_version(b'{"version": "0.32.0"}'), SelfReportedVersion)
