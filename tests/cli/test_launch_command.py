"""``vllm-evidence launch``: the child's output teed unchanged, its status, signals, and
the receipt (schema, digest of the log's bytes, start time as /metrics prints it)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from vllm_evidence._adapters.receipt import read_launch_receipt
from vllm_evidence._capture.process import process_start_time
from vllm_evidence._launch import launch
from vllm_evidence.errors import InputError
from vllm_evidence.serialize import schema

CLI = [sys.executable, "-m", "vllm_evidence", "launch"]
CHILD = (
    "import sys, time; sys.stdout.write('out line\\n'); sys.stdout.flush(); "
    "sys.stderr.write('err line\\n'); sys.stderr.flush(); sys.exit(7)"
)


def _receipt(path: Path) -> dict[str, object]:
    document: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return document


def test_launch_tees_the_output_and_exits_with_the_childs_status(tmp_path: Path) -> None:
    receipt, log = tmp_path / "r.json", tmp_path / "vllm.log"
    out = subprocess.run(
        [*CLI, "--receipt", str(receipt), "--log", str(log), "--", sys.executable, "-c", CHILD],
        capture_output=True,
        check=False,
    )
    assert out.returncode == 7
    assert out.stdout == b"out line\n"
    assert out.stderr == b"err line\n"
    data = log.read_bytes()
    assert sorted(data.splitlines()) == [b"err line", b"out line"]
    document = _receipt(receipt)
    Draft202012Validator(schema("launch-receipt")).validate(document)
    assert document["log_bytes"] == len(data)
    assert document["log_sha256"] == hashlib.sha256(data).hexdigest()
    assert document["log_path"] == str(log)
    assert isinstance(document["pid"], int)
    assert document["argv"] == [sys.executable, "-c", CHILD]
    assert document["schema"] == "vllm-evidence.launch-receipt/3"
    assert document["log_write_failure"] is None
    read = read_launch_receipt(receipt)
    assert read.log_bytes == len(data)
    assert read.log_write_failure is None


def test_the_receipt_names_the_start_time_while_the_child_runs(tmp_path: Path) -> None:
    receipt, log = tmp_path / "r.json", tmp_path / "vllm.log"
    child = "import time; print('up', flush=True); time.sleep(30)"
    with subprocess.Popen(
        [*CLI, "--receipt", str(receipt), "--log", str(log), "--", sys.executable, "-c", child],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as proc:
        _start_and_stop(proc, receipt)


def _start_and_stop(proc: subprocess.Popen[bytes], receipt: Path) -> None:
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if receipt.exists() and _receipt(receipt)["log_bytes"] == len(b"up\n"):
                break
            time.sleep(0.05)
        document = _receipt(receipt)
        pid = document["pid"]
        assert isinstance(pid, int)
        start, why = process_start_time(pid)
        if why is None:
            assert document["process_start_time_seconds"] == start
        proc.send_signal(signal.SIGTERM)  # forwarded: the child ends, the launcher follows
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_no_proc_is_said_and_no_start_time_is_written(tmp_path: Path) -> None:
    notices = io.StringIO()
    status = launch(
        [sys.executable, "-c", "pass"],
        receipt=tmp_path / "r.json",
        proc=str(tmp_path / "no-proc"),
        notices=notices,
        stdout=io.BytesIO(),
        stderr=io.BytesIO(),
    )
    assert status == 0
    assert "no start time" in notices.getvalue()
    document = _receipt(tmp_path / "r.json")
    assert document["process_start_time_seconds"] is None
    assert isinstance(document["start_time_unavailable"], str)
    assert document["log_path"] is None
    assert document["log_bytes"] == 0
    assert read_launch_receipt(tmp_path / "r.json").process_start_seconds is None


def test_an_api_key_never_reaches_the_receipt(tmp_path: Path) -> None:
    secret = "sk-launch-secret-1234"  # noqa: S105  # a made-up key, the point of the test
    launch(
        [sys.executable, "-c", "pass", "--api-key", secret],
        receipt=tmp_path / "r.json",
        stdout=io.BytesIO(),
        stderr=io.BytesIO(),
    )
    text = (tmp_path / "r.json").read_text(encoding="utf-8")
    assert secret not in text
    assert '"***"' in text


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--receipt", "R"], "no command to launch"),
        (["--receipt", "R", "--", "/nonexistent/vllm"], "cannot start '/nonexistent/vllm'"),
        (["--receipt", "/nonexistent/dir/r.json", "--", "true"], "is not a directory"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(argv: list[str], needle: str, tmp_path: Path) -> None:
    argv = [a.replace("R", str(tmp_path / "r.json")) if a == "R" else a for a in argv]
    out = subprocess.run([*CLI, *argv], capture_output=True, text=True, check=False)
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert needle in lines[0]


def test_the_library_raises_input_error_before_running(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no command"):
        launch([], receipt=tmp_path / "r.json")


def test_schema_command_prints_the_receipt_schema() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "schema", "launch-receipt"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0
    assert json.loads(out.stdout)["x-vllm-evidence-schema"] == "vllm-evidence.launch-receipt/3"
