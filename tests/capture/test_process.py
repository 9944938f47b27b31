"""The launch witness's capture side: the start time as /metrics prints it, the argv
scrub, and a missing /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import utils as prometheus_utils
from prometheus_client.process_collector import ProcessCollector

from vllm_evidence._capture.process import go_float, process_start_time, scrub_argv

LINUX_PROC = Path("/proc/self/stat").exists()


def floatToGoString(value: float) -> str:  # noqa: N802  # prometheus_client's name
    """prometheus_client's own formatting (untyped there)."""
    return str(prometheus_utils.floatToGoString(value))  # type: ignore[no-untyped-call]  # untyped upstream


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_go_float_is_prometheus_clients_float_to_go_string(value: float) -> None:
    assert go_float(value) == floatToGoString(value)


@pytest.mark.parametrize("value", [1796015019.85, 1796015055.94, 1.7e9, 1e9, 123.0, 0.5])
def test_go_float_on_start_times(value: float) -> None:
    assert go_float(value) == floatToGoString(value)


def _collector_start(pid: int) -> str:
    collector = ProcessCollector(pid=lambda: pid, registry=None)
    for family in collector.collect():
        if family.name == "process_start_time_seconds":
            return floatToGoString(family.samples[0].value)
    msg = "the collector gave no start time"
    raise AssertionError(msg)


@pytest.mark.skipif(not LINUX_PROC, reason="needs /proc")
def test_the_start_time_is_the_process_collectors_for_this_process() -> None:
    start, why = process_start_time(os.getpid())
    assert why is None
    assert start == _collector_start(os.getpid())


@pytest.mark.skipif(not LINUX_PROC, reason="needs /proc")
def test_the_start_time_is_the_process_collectors_for_a_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        start, why = process_start_time(child.pid)
        assert why is None
        assert start == _collector_start(child.pid)
        assert start is not None
        # The child started after this process and before now (the printed start time
        # keeps 12 significant digits: a hundredth of a second).
        assert float(_collector_start(os.getpid())) - 1 <= float(start) <= time.time() + 1
    finally:
        child.kill()
        child.wait()


def test_without_proc_there_is_no_start_time_and_a_reason(tmp_path: Path) -> None:
    start, why = process_start_time(os.getpid(), proc=str(tmp_path / "no-proc"))
    assert start is None
    assert why is not None
    assert "no-proc/stat" in why


def test_a_proc_without_the_pid_gives_a_reason(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text("cpu 1 2 3\nbtime 1700000000\n")
    start, why = process_start_time(4242, proc=str(tmp_path))
    assert start is None
    assert why is not None
    assert "4242/stat" in why


def test_a_fake_proc_gives_the_collectors_arithmetic(tmp_path: Path) -> None:
    """btime + field 22 / SC_CLK_TCK, as prometheus_client computes it."""
    (tmp_path / "stat").write_text("cpu 1 2 3\nbtime 1796000000\n")
    (tmp_path / "77").mkdir()
    fields = ["S", *["0"] * 18, "1998500", *["0"] * 30]  # state, …, field 22 = starttime
    (tmp_path / "77" / "stat").write_text(f"77 (vllm (serve)) {' '.join(fields)}\n")
    start, why = process_start_time(77, proc=str(tmp_path))
    assert why is None
    ticks = os.sysconf("SC_CLK_TCK")
    assert start == floatToGoString(1998500 / ticks + 1796000000.0)
    assert start == _fake_collector(tmp_path, 77)


def _fake_collector(proc: Path, pid: int) -> str:
    collector = ProcessCollector(pid=lambda: pid, proc=str(proc), registry=None)
    for family in collector.collect():
        if family.name == "process_start_time_seconds":
            return floatToGoString(family.samples[0].value)
    msg = "the collector gave no start time"
    raise AssertionError(msg)


@pytest.mark.parametrize(
    ("argv", "scrubbed"),
    [
        (["vllm", "serve", "m", "--api-key", "sk-1"], ["vllm", "serve", "m", "--api-key", "***"]),
        (["vllm", "serve", "--api-key=sk-1"], ["vllm", "serve", "--api-key=***"]),
        (["x", "--hf-token", "t", "--port", "8000"], ["x", "--hf-token", "***", "--port", "8000"]),
        (["x", "--ssl-keyfile", "k.pem"], ["x", "--ssl-keyfile", "k.pem"]),  # a path
        (["x", "--model", "/m"], ["x", "--model", "/m"]),
    ],
)
def test_secrets_in_the_argv_are_scrubbed(argv: list[str], scrubbed: list[str]) -> None:
    assert scrub_argv(argv) == scrubbed
