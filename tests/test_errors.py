"""The exception hierarchy: one root, and the builtin each error also is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vllm_evidence
from tests._evidence import real_log
from tests._paths import REAL
from vllm_evidence._capture.directory import MANIFEST, save
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._readback import load
from vllm_evidence.errors import CaptureIntegrityError, EvidenceError, InputError, SealedTypeError
from vllm_evidence.testing._stub import serve_capture


def test_each_error_is_an_evidence_error_and_its_builtin() -> None:
    assert issubclass(InputError, EvidenceError)
    assert issubclass(InputError, ValueError)
    assert issubclass(CaptureIntegrityError, InputError)
    assert issubclass(SealedTypeError, EvidenceError)
    assert issubclass(SealedTypeError, TypeError)
    assert vllm_evidence.errors.SealedTypeError is SealedTypeError


def test_a_launch_the_log_does_not_have_is_caught_as_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"launch must be 0\.\.0, got 3"):
        vllm_evidence.assess(None, real_log(), launch=3)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("role", None, "manifest field 'requests[0].role' is missing or malformed"),
        ("started_at", 7, "manifest field 'requests[0].started_at' is missing or malformed"),
        ("detail", None, "manifest field 'requests[0].detail' is missing or malformed"),
    ],
)
def test_a_manifest_field_error_is_not_rewrapped(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    """``InputError`` is a ``ValueError``: the reader's ``except ValueError`` must not wrap it."""
    with serve_capture(REAL) as door:
        saved = save(probe_sync(door.url), tmp_path / "capture")
    manifest = json.loads((saved / MANIFEST).read_text(encoding="utf-8"))
    manifest["requests"][0][key] = value
    (saved / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load(saved)
    text = str(raised.value)
    assert message in text
    assert text.count("requests[0]") == 1
    assert "malformed role, transport or timestamp" not in text
    assert "\n" not in text
