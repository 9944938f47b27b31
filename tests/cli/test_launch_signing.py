"""``launch --receipt FILE --receipt-signing-key KEY.pem``: the launcher signs its receipt
(issue 31), and only the public half verifies it.

The receipt written is checked here with the public key file alone (as a prober would)
and against the schema; the key file's text appears nowhere the launcher writes; a key
that is not one stops the launch before the command runs.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests._signing import key_files, pem_text
from vllm_evidence._adapters.receipt import ReceiptAuthentication, read_launch_receipt
from vllm_evidence._capture.signing import SigningKey, read_verification_key
from vllm_evidence._launch import launch
from vllm_evidence.errors import InputError
from vllm_evidence.serialize import schema

CLI = [sys.executable, "-m", "vllm_evidence", "launch"]
CHILD = "import sys; sys.stdout.write('serving\\n')"
ENV = "VLLM_EVIDENCE_RECEIPT_SIGNING_KEY"
KEY = SigningKey.generate()


def _launch(
    tmp_path: Path, *options: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    receipt, log = tmp_path / "r.json", tmp_path / "vllm.log"
    return subprocess.run(
        [
            *CLI,
            "--receipt",
            str(receipt),
            "--log",
            str(log),
            *options,
            "--",
            sys.executable,
            "-c",
            CHILD,
        ],
        capture_output=True,
        check=False,
        timeout=120,
        env={**_clean_environment(), **(env or {})},
    )


def _clean_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != ENV}


def _secret_lines(key: SigningKey) -> list[str]:
    return key.private_pem().decode().splitlines()[1:-1]


def test_the_launcher_signs_the_receipt_with_the_key_file(tmp_path: Path) -> None:
    private, public = key_files(tmp_path, KEY)
    out = _launch(tmp_path, "--receipt-signing-key", str(private))
    assert out.returncode == 0, out.stderr
    assert out.stderr == b""
    text = (tmp_path / "r.json").read_text(encoding="utf-8")
    document = json.loads(text)
    Draft202012Validator(schema("launch-receipt")).validate(document)
    assert document["schema"] == "vllm-evidence.launch-receipt/3"
    assert document["signature"]["key_id"] == KEY.key_id
    read = read_launch_receipt(tmp_path / "r.json", verification_key=read_verification_key(public))
    assert read.authentication is ReceiptAuthentication.VERIFIED
    assert read.log_bytes == len(b"serving\n")
    for line in _secret_lines(KEY):
        assert line not in text
        assert line.encode() not in out.stdout + out.stderr
        assert line.encode() not in (tmp_path / "vllm.log").read_bytes()


def test_the_key_can_come_from_the_environment(tmp_path: Path) -> None:
    out = _launch(tmp_path, env={ENV: pem_text(KEY)})
    assert out.returncode == 0, out.stderr
    read = read_launch_receipt(tmp_path / "r.json", verification_key=KEY.verification_key)
    assert read.authentication is ReceiptAuthentication.VERIFIED


def test_without_a_key_the_receipt_is_unsigned_and_says_so_when_read(tmp_path: Path) -> None:
    out = _launch(tmp_path)
    assert out.returncode == 0, out.stderr
    read = read_launch_receipt(tmp_path / "r.json", verification_key=KEY.verification_key)
    assert read.authentication is ReceiptAuthentication.UNSIGNED


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "No such file"),
        (b"not a key", "not a PEM key"),
        ("public", "not a private key (a public key cannot sign)"),
    ],
)
def test_a_key_that_is_not_one_stops_the_launch_before_the_command(
    tmp_path: Path, content: bytes | str | None, needle: str
) -> None:
    key = tmp_path / "k.pem"
    if content == "public":
        key.write_bytes(KEY.verification_key.pem())
    elif isinstance(content, bytes):
        key.write_bytes(content)
    out = _launch(tmp_path, "--receipt-signing-key", str(key))
    assert out.returncode == 2
    (line,) = out.stderr.decode().splitlines()
    assert needle in line
    assert out.stdout == b""  # the command never ran
    assert not (tmp_path / "r.json").exists()


def test_a_key_in_the_environment_that_is_not_one_stops_the_launch(tmp_path: Path) -> None:
    out = _launch(tmp_path, env={ENV: "a-secret-that-is-no-pem-key"})
    assert out.returncode == 2
    (line,) = out.stderr.decode().splitlines()
    assert f"--receipt-signing-key: environment variable {ENV}: not a PEM key" in line
    assert "a-secret-that-is-no-pem-key" not in line
    assert out.stdout == b""


def test_the_gate_takes_no_signing_key(tmp_path: Path) -> None:
    private, _ = key_files(tmp_path, KEY)
    out = subprocess.run(
        [
            *CLI,
            "--serve",
            "127.0.0.1:0",
            "--require",
            "parallel",
            "--receipt-signing-key",
            str(private),
            "--",
            sys.executable,
            "-c",
            CHILD,
        ],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 2
    assert b"the gate (--serve) joins its child's log in process and needs no key" in out.stderr
    assert out.stdout == b""


def test_the_library_launch_takes_only_a_signing_key(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="signing_key must be a SigningKey"):
        launch(
            [sys.executable, "-c", CHILD],
            receipt=tmp_path / "r.json",
            signing_key=b"k" * 32,  # type: ignore[arg-type]  # the misuse tried
            notices=io.StringIO(),
        )
    assert not (tmp_path / "r.json").exists()
