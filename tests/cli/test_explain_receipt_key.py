"""``explain DIR --startup-log L --receipt R``: both signatures count (issue 31).

A saved capture joins a log only when the capture's signature verified (Ed25519, the
prober's key: ``--verify-key``) and the receipt's did (the launcher's key:
``--receipt-public-key``); each missing key is refused by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._evidence import LAUNCHER_KEY, log_port, real_log, receipt_document_for
from tests._paths import REAL
from tests._ports import serve_on_port
from tests._signing import CAPTURE_KEY, key_files

START = "1.79601185221e+09"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The recorded server probed on its log's port, saved signed by the prober's key."""
    root = tmp_path_factory.mktemp("explain")
    private, _ = key_files(root, CAPTURE_KEY)
    with serve_on_port(REAL, port=log_port(real_log())) as door:
        out = run_cli(
            "probe", door.url, "--save", str(root / "capture"), "--sign-key", str(private)
        )
    assert out.returncode == 0, out.stderr
    (root / "receipt.json").write_text(
        json.dumps(receipt_document_for(real_log(), start=START)), encoding="utf-8"
    )
    (root / "launcher.pem").write_bytes(LAUNCHER_KEY.verification_key.pem())
    return root


def _log_join(saved: Path, *options: str) -> dict[str, Any]:
    out = run_cli(
        "explain",
        str(saved / "capture"),
        "--startup-log",
        str(REAL / "startup.log"),
        "--receipt",
        str(saved / "receipt.json"),
        "--json",
        *options,
    )
    assert out.returncode == 0, out.stderr
    decision: dict[str, Any] = json.loads(out.stdout)["decisions"]["log_join"]
    return decision


def test_with_both_keys_the_saved_capture_joins_its_log(saved: Path) -> None:
    joined = _log_join(
        saved,
        "--verify-key",
        str(saved / "public.pem"),
        "--receipt-public-key",
        str(saved / "launcher.pem"),
    )
    assert joined["verdict"] == "established", joined
    assert f"signed by key id {LAUNCHER_KEY.key_id} (verified)" in joined["detail"]


def test_each_missing_key_is_refused_by_name(saved: Path) -> None:
    without_receipt_key = _log_join(saved, "--verify-key", str(saved / "public.pem"))
    assert without_receipt_key["reason"] == "witness_unverified"
    assert "--receipt-public-key" in without_receipt_key["remedy"]
    without_capture_key = _log_join(saved, "--receipt-public-key", str(saved / "launcher.pem"))
    assert without_capture_key["reason"] == "capture_unverified"


def test_the_receipt_key_in_the_environment_is_read(saved: Path) -> None:
    out = run_cli(
        "explain",
        str(saved / "capture"),
        "--startup-log",
        str(REAL / "startup.log"),
        "--receipt",
        str(saved / "receipt.json"),
        "--verify-key",
        str(saved / "public.pem"),
        "--json",
        env={"VLLM_EVIDENCE_RECEIPT_PUBLIC_KEY": LAUNCHER_KEY.verification_key.pem().decode()},
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["decisions"]["log_join"]["verdict"] == "established"
