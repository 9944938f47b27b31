"""``vllm-evidence explain`` on a saved capture: the JSON contract, the text, refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._evidence import LAUNCHER_KEY
from tests._paths import REAL
from tests._ports import serve_on_port
from tests._signing import CAPTURE_KEY, pem_text
from tests.adapters.test_metrics import REAL_CACHE_CONFIG_LABELS
from vllm_evidence._capture.directory import save
from vllm_evidence._capture.http import probe_sync
from vllm_evidence.cli import main
from vllm_evidence.testing._stub import serve_capture


def test_explain_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(REAL), "--bodies", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "vllm-evidence.assessment/9"
    assert doc["observations"]["version"] == "0.32.0"
    assert doc["observations"]["metrics"]["cache_config_info"] == [
        {"labels": REAL_CACHE_CONFIG_LABELS, "value": "1.0"}
    ]
    assert doc["observations"]["models"] == [
        {
            "id": "tiny-llama:q4-alias",
            "owned_by": "vllm",
            "root": "/models/tiny-llama",
            "parent": None,
            "max_model_len": 2048,
        }
    ]
    assert doc["observations"]["server_info"]["parallel"]["tensor_parallel_size"] == 1
    assert doc["observations"]["server_info"]["parallel"]["distributed_executor_backend"] == "mp"
    assert doc["front_door"]["join"] == {
        "established": False,
        "reason": "caller_assembled",
        "detail": "bodies supplied by a caller were not read in one bracketed batch",
    }


def test_explain_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(REAL), "--bodies"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vLLM 0.32.0\n")
    assert "engine 0: 4,194,304 tokens" in out
    assert "  one process            refused (caller_assembled)\n" in out


def test_explain_refuses_tampered_capture_with_exit_2(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        saved = save(probe_sync(door.url), tmp_path / "capture")
    (saved / "metrics.body").write_bytes(b"process_start_time_seconds 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "explain", str(saved), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "does not match the manifest" in result.stderr
    assert "Traceback" not in result.stderr


def test_explain_missing_directory_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "not a directory" in err


# --- a receipt with a saved capture: joined only when the signature verified -----------

SIGN_ENV = "VLLM_EVIDENCE_TEST_SIGN_KEY"
RECEIPT_ENV = "VLLM_EVIDENCE_RECEIPT_PUBLIC_KEY"


@pytest.fixture
def witnessed_save(tmp_path: Path) -> tuple[Path, Path]:
    """The real capture served on its log's port, probed and saved signed; the receipt
    of its launch (the start time that front door serves)."""
    from tests._evidence import log_port, real_log, receipt_file, receipt_for
    from vllm_evidence._capture.batch import CaptureOrigin

    log = real_log()
    with serve_on_port(REAL, port=log_port(log)) as door:
        batch = probe_sync(door.url)
    assert batch.origin is CaptureOrigin.PROBED
    saved = save(batch, tmp_path / "saved", sign_key=CAPTURE_KEY)
    receipt = receipt_file(tmp_path / "receipt.json", receipt_for(log, start="1.79601185221e+09"))
    return saved, receipt


def _log_join(
    capsys: pytest.CaptureFixture[str], argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    monkeypatch.setenv(SIGN_ENV, pem_text(CAPTURE_KEY, public=True))
    monkeypatch.setenv(RECEIPT_ENV, pem_text(LAUNCHER_KEY, public=True))
    assert main(argv) == 0
    join: dict[str, str] = json.loads(capsys.readouterr().out)["decisions"]["log_join"]
    return join


def test_explain_joins_a_verified_capture_to_its_log_through_the_receipt(
    witnessed_save: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saved, receipt = witnessed_save
    argv = ["explain", str(saved), "--startup-log", str(REAL / "startup.log")]
    argv += ["--receipt", str(receipt), "--json"]
    verified = _log_join(capsys, [*argv, "--verify-key-env", SIGN_ENV], monkeypatch)
    assert (verified["verdict"], verified["reason"]) == ("established", "established")
    unverified = _log_join(capsys, argv, monkeypatch)
    assert (unverified["verdict"], unverified["reason"]) == ("refused", "capture_unverified")


def test_explain_receipt_without_a_log_is_one_line(
    witnessed_save: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    saved, receipt = witnessed_save
    assert main(["explain", str(saved), "--receipt", str(receipt)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--receipt goes with a startup log" in err
