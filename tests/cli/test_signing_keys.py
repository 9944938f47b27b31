"""Keys from the environment: what is no key is one line that never shows the value.

``--sign-key-env`` reads an Ed25519 private key's PEM text: anything else (an HMAC key
of old, a public key, nothing) is a one-line refusal before anything is probed or saved.
``--verify-key-env`` reads a public key's PEM text, or the HMAC key a capture saved
before Ed25519 (``capture-manifest/2``) was signed with: such a key is at least 32 bytes
(counted in bytes, as the HMAC uses it), and so is an evidence document's (``dumps``,
``loads``).  A variable set but empty is "is empty", one not set "is not set"
(``--api-key-env`` too).  Both directions, at the edge: 31 bytes are refused, 32 verify.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from tests._signing import CAPTURE_KEY, OTHER_CAPTURE_KEY, legacy_hmac_capture, pem_text
from vllm_evidence._assessment import assess
from vllm_evidence._capture._signing import MIN_KEY_BYTES, check_key, environment_key, key_id
from vllm_evidence._capture.directory import read_capture, save
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._readback import readback_from_batch
from vllm_evidence._rederive import dumps, loads
from vllm_evidence.cli import main
from vllm_evidence.errors import InputError

VAR = "VLLM_EVIDENCE_SIGNING_KEY_UNDER_TEST"
SHORT = "s3cr3t-of-31-bytes-000000000000"  # one byte short
EDGE = "s3cr3t-of-32-bytes-0000000000000"  # exactly the least accepted
NOWHERE = "http://127.0.0.1:1"  # nothing listens: the probe is an unreachable state


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _one_line(argv: list[str], prog: str = "probe") -> str:
    status, out, err = _run(argv)
    assert status == 2, (status, out, err)
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"vllm-evidence {prog}: error: ")
    return err.rstrip("\n")


def test_the_keys_of_this_test_are_on_each_side_of_the_edge() -> None:
    assert (len(SHORT.encode()), len(EDGE.encode()), MIN_KEY_BYTES) == (31, 32, 32)


# --- --sign-key-env: an Ed25519 private key's PEM text ----------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("k", ": not a PEM key"),
        (SHORT, ": not a PEM key"),  # an HMAC key of old signs nothing now
        (EDGE, ": not a PEM key"),
        ("", " is empty"),
    ],
)
def test_what_is_not_a_private_key_is_one_line_and_nothing_is_saved(
    value: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VAR, value)
    saved = tmp_path / "capture"
    line = _one_line(["probe", NOWHERE, "--save", str(saved), "--sign-key-env", VAR])
    assert f"--sign-key-env: environment variable {VAR}{said}" in line
    if len(value) > 1:  # a one-byte key is in any sentence
        assert value not in line
    assert not saved.exists()


def test_a_public_key_does_not_sign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, pem_text(CAPTURE_KEY, public=True))
    saved = tmp_path / "capture"
    line = _one_line(["probe", NOWHERE, "--save", str(saved), "--sign-key-env", VAR])
    assert f"--sign-key-env: environment variable {VAR}" in line
    assert "BEGIN" not in line
    assert not saved.exists()


def test_an_unset_sign_key_variable_is_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VAR, raising=False)
    line = _one_line(["probe", NOWHERE, "--save", str(tmp_path / "c"), "--sign-key-env", VAR])
    assert line.endswith(f"--sign-key-env: environment variable {VAR} is not set")


def test_a_private_key_signs_and_its_public_half_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VAR, pem_text(CAPTURE_KEY))
    saved = tmp_path / "capture"
    status, _, err = _run(["probe", NOWHERE, "--save", str(saved), "--sign-key-env", VAR])
    assert status == 0, err
    monkeypatch.setenv(VAR, pem_text(CAPTURE_KEY, public=True))
    status, out, err = _run(["explain", str(saved), "--verify-key-env", VAR])
    assert status == 0, err
    assert f"signed by key id {CAPTURE_KEY.key_id} (verified)" in out
    assert "PRIVATE" not in out + err
    monkeypatch.setenv(VAR, pem_text(OTHER_CAPTURE_KEY, public=True))
    line = _one_line(["explain", str(saved), "--verify-key-env", VAR], prog="explain")
    assert CAPTURE_KEY.key_id in line
    assert OTHER_CAPTURE_KEY.key_id in line


# --- --verify-key-env ------------------------------------------------------------------


@pytest.fixture
def signed(tmp_path: Path) -> Path:
    """A capture saved before Ed25519: a ``/2`` manifest signed with the HMAC key EDGE."""
    return legacy_hmac_capture(save(probe_sync(NOWHERE), tmp_path / "signed"), EDGE.encode())


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("k", "holds 1 byte; a signing key needs at least 32 bytes"),
        (SHORT, "holds 31 bytes"),
        ("", "is empty"),
    ],
)
def test_a_short_or_empty_verify_key_is_one_line(
    value: str, said: str, signed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VAR, value)
    line = _one_line(["explain", str(signed), "--verify-key-env", VAR], prog="explain")
    assert f"--verify-key-env: environment variable {VAR} {said}" in line
    if len(value) > 1:  # a one-byte key is in any sentence
        assert value not in line


def test_an_unset_verify_key_variable_is_not_set(
    signed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VAR, raising=False)
    line = _one_line(["explain", str(signed), "--verify-key-env", VAR], prog="explain")
    assert line.endswith(f"--verify-key-env: environment variable {VAR} is not set")


# --- --api-key-env: empty is not unset --------------------------------------------------


def test_an_empty_api_key_variable_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, "")
    line = _one_line(["probe", NOWHERE, "--api-key-env", VAR])
    assert line.endswith(f"--api-key-env: environment variable {VAR} is empty")


def test_an_unset_api_key_variable_is_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    line = _one_line(["probe", NOWHERE, "--api-key-env", VAR])
    assert line.endswith(f"--api-key-env: environment variable {VAR} is not set")


# --- the library ------------------------------------------------------------------------


def test_check_key_admits_32_bytes_and_refuses_31() -> None:
    assert check_key(EDGE.encode()) == EDGE.encode()
    with pytest.raises(InputError, match="the signing key has 31 bytes; a signing key needs"):
        check_key(SHORT.encode())
    with pytest.raises(InputError, match="the signing key has 0 bytes"):
        check_key(b"")
    not_bytes: object = EDGE
    with pytest.raises(InputError, match="a signing key is bytes, not str"):
        check_key(not_bytes)


def test_environment_key_reads_the_key_as_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, EDGE)
    assert environment_key("--sign-key-env", VAR) == EDGE.encode()


def test_save_refuses_an_hmac_key_before_writing(tmp_path: Path) -> None:
    batch = probe_sync(NOWHERE)
    hmac_key: object = EDGE.encode()  # as a caller of the old API passes it
    with pytest.raises(InputError, match="no longer with an HMAC key"):
        save(batch, tmp_path / "c", sign_key=hmac_key)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_read_capture_refuses_a_short_verify_key(signed: Path) -> None:
    with pytest.raises(InputError, match="the signing key has 31 bytes"):
        read_capture(signed, verify_key=SHORT.encode())
    assert read_capture(signed, verify_key=EDGE.encode()).provenance.key_id == key_id(EDGE.encode())


def test_an_evidence_document_needs_a_32_byte_key_both_ways() -> None:
    assessment = assess(readback_from_batch(probe_sync(NOWHERE)))
    with pytest.raises(InputError, match="the signing key has 31 bytes"):
        dumps(assessment, sign_key=SHORT.encode())
    text = dumps(assessment, sign_key=EDGE.encode())
    assert loads(text, verify_key=EDGE.encode()) == assessment
    with pytest.raises(InputError, match="the signing key has 31 bytes"):
        loads(text, verify_key=SHORT.encode())
