"""A receipt file is read with bounds: a regular file only, to a size cap, never waited on.

A FIFO, a device or a directory named as ``--receipt`` is refused at once (the file is
opened with ``O_NONBLOCK`` and checked with ``fstat`` before a byte is read); a symbolic
link to a regular file is the caller's own path and is followed.  A FIFO test runs the
read in a thread and, should it block, unblocks it by opening the FIFO's other end, so
a regression fails the test rather than hanging the suite.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from vllm_evidence._adapters.receipt import RECEIPT_LIMIT, read_launch_receipt
from vllm_evidence.errors import InputError

RECEIPT = {
    "schema": "vllm-evidence.launch-receipt/2",
    "pid": 9,
    "process_start_time_seconds": "1.7e+09",
    "start_time_unavailable": None,
    "argv": ["vllm", "serve"],
    "host": "h",
    "log_path": None,
    "log_bytes": 0,
    "log_sha256": "0" * 64,
    "log_write_failure": None,
}


def _error(action: Callable[[], object]) -> str:
    with pytest.raises(InputError) as raised:
        action()
    line = str(raised.value)
    assert "\n" not in line
    return line


def without_blocking(action: Callable[[], object], fifo: Path) -> object:
    """``action()``'s result or exception, failing (not hanging) if it blocks on ``fifo``."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(action())
        except Exception as exc:  # noqa: BLE001  # handed to the test thread
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(20)
    if thread.is_alive():
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # a reader waits: EOF it
        os.close(writer)
        thread.join(20)
        pytest.fail(f"reading {fifo} blocked until a writer came")
    return outcome[0]


def test_a_regular_receipt_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(RECEIPT), encoding="utf-8")
    assert read_launch_receipt(path).pid == 9
    assert read_launch_receipt(str(path)).pid == 9


def test_a_symbolic_link_to_a_receipt_is_followed(tmp_path: Path) -> None:
    target = tmp_path / "receipt.json"
    target.write_text(json.dumps(RECEIPT), encoding="utf-8")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert read_launch_receipt(link).pid == 9


def test_a_fifo_receipt_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "receipt.fifo"
    os.mkfifo(fifo)
    outcome = without_blocking(lambda: read_launch_receipt(fifo), fifo)
    assert isinstance(outcome, InputError), outcome
    assert str(outcome) == (
        f"launch receipt {fifo}: not a regular file (a FIFO, a socket or a device): "
        "refused, not waited on"
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_receipt_is_refused_without_reading(tmp_path: Path) -> None:
    line = _error(lambda: read_launch_receipt("/dev/zero"))
    assert line == (
        "launch receipt /dev/zero: not a regular file (a FIFO, a socket or a device): "
        "refused, not waited on"
    )


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "receipt.json"
    link.symlink_to("/dev/null")
    assert "not a regular file" in _error(lambda: read_launch_receipt(link))


def test_a_directory_receipt_is_refused(tmp_path: Path) -> None:
    line = _error(lambda: read_launch_receipt(tmp_path))
    assert line == f"launch receipt {tmp_path}: is a directory, not a file"


def test_a_missing_receipt_is_one_line(tmp_path: Path) -> None:
    line = _error(lambda: read_launch_receipt(tmp_path / "none.json"))
    assert (
        line
        == f"launch receipt {tmp_path / 'none.json'}: cannot be read (No such file or directory)"
    )


def test_a_receipt_past_the_cap_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.truncate(RECEIPT_LIMIT + 1)  # sparse: its size says enough
    line = _error(lambda: read_launch_receipt(path))
    assert (
        line == f"launch receipt {path}: 1,048,577 bytes, larger than the 1,048,576 bytes allowed"
    )


def test_a_receipt_at_the_cap_is_read_and_then_judged(tmp_path: Path) -> None:
    text = json.dumps(RECEIPT)
    path = tmp_path / "padded.json"
    path.write_text(text + " " * (RECEIPT_LIMIT - len(text)), encoding="utf-8")
    assert read_launch_receipt(path).pid == 9
