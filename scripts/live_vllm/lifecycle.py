"""A launch's life after start-up (``LIFECYCLE_SCENARIOS``): a process killed by pid,
never by a completion (the tiny model's first completion kills the engine on CPU), and
``/health`` read every 0.2 s after the kill."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from live_vllm.common import READY_TIMEOUT_S, LiveTierError, log
from live_vllm.documents import neutral_host
from live_vllm.product import product_probe
from live_vllm.reads import ROUTES, get, record_route, save_log
from live_vllm.runs import Run
from live_vllm.scenarios import Scenario
from live_vllm.server import Server

__all__ = ["ENGINE_PID", "RANK_PID", "health_series", "pid_in_log", "run_lifecycle", "wait_for_pid"]


#: A rank-1 worker's line naming its pid and ``world_size=N rank=1``.
RANK_PID = re.compile(rb"\((?:Worker|VllmWorker)[^)]* pid=(\d+)\)[^\n]*world_size=\d+ rank=1 ")
#: The EngineCore process's tag (``EngineCore_DP0`` with DP), naming its pid.
ENGINE_PID = re.compile(rb"\((EngineCore(?:_DP0)?) pid=(\d+)\)")


def pid_in_log(data: bytes, regex: re.Pattern[bytes]) -> int | None:
    """The pid the first line of ``data`` matching ``regex`` names (its last group)."""
    m = regex.search(data)
    return int(m.groups()[-1]) if m else None


def wait_for_pid(server: Server, regex: re.Pattern[bytes], timeout: float) -> int:
    """The pid the server log's first line matching ``regex`` names, once it is written
    (at most ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.log_path.exists():
            pid = pid_in_log(server.log_path.read_bytes(), regex)
            if pid is not None:
                return pid
        time.sleep(0.1)
    msg = f"no line matching {regex.pattern!r} in the log within {timeout:.0f} s"
    raise LiveTierError(msg)


def health_series(run: Run, out: Path, until_status: int | None, limit_s: float) -> None:
    """``/health`` every 0.2 s from now: ``+seconds status`` lines into ``health-after.txt``,
    until the port refuses (or answers ``until_status``) or ``limit_s`` passed."""
    t0 = time.monotonic()
    lines: list[str] = []
    while time.monotonic() - t0 < limit_s:
        try:
            status, _, _ = get(run.port, "/health", timeout=2.0)
            lines.append(f"+{time.monotonic() - t0:.2f} s {status}")
            if until_status is not None and status == until_status:
                break
        except (OSError, http.client.HTTPException) as exc:
            lines.append(f"+{time.monotonic() - t0:.2f} s refused ({type(exc).__name__})")
            break
        time.sleep(0.2)
    (out / "health-after.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    first_bad = next((line for line in lines if not line.endswith(" 200")), None)
    log(f"    /health after the kill: {len(lines)} reads, first non-200: {first_bad}")


def run_lifecycle(run: Run, scenario: Scenario, out: Path, logs: Path) -> None:
    """A launch's life after start-up: a process killed by pid (``LIFECYCLE_SCENARIOS``)."""
    server = Server(run, scenario, logs / "startup.log")
    try:
        server.start()
        if scenario.lifecycle == "failed-startup":
            pid = wait_for_pid(server, RANK_PID, READY_TIMEOUT_S)
            os.kill(pid, signal.SIGKILL)
            log(f"  killed the rank-1 worker (pid {pid}) during start-up")
            assert server.proc is not None  # noqa: S101 - started above
            try:
                code = server.proc.wait(timeout=180.0)
                log(f"  the launcher exited {code}")
            except subprocess.TimeoutExpired:
                log("  still running 180 s after the kill; stopping it")
        else:
            log(f"  ready after {server.wait_ready():.1f} s")
            for stem, path in ROUTES:
                record_route(run, out, stem, path)
            product_probe(run, out, "probe-before", server.log_path, server.receipt_path)
            if scenario.lifecycle == "engine-kill":
                pid = wait_for_pid(server, ENGINE_PID, 5.0)
                what = "EngineCore"
            else:
                pid = wait_for_pid(server, RANK_PID, 5.0)
                what = "rank-1 worker"
            os.kill(pid, signal.SIGKILL)
            log(f"  killed the {what} (pid {pid})")
            keep = scenario.keep_alive
            health_series(run, out, 503 if keep else None, 30.0 if keep else 60.0)
            if keep:
                time.sleep(2.0)
                for stem, path in ROUTES:
                    record_route(run, out / "after-death", stem, path)
                product_probe(run, out, "probe-after-death", server.log_path, server.receipt_path)
            else:
                assert server.proc is not None  # noqa: S101 - started above
                with contextlib.suppress(subprocess.TimeoutExpired):
                    log(f"  the launcher exited {server.proc.wait(timeout=60.0)}")
    finally:
        server.stop()
    save_log(run, server.log_path, out / "startup.log", scenario)
    receipt = server.receipt_path.read_bytes()
    (out / "launch-receipt.json").write_bytes(neutral_host(run.neutralise(receipt)))
    for name in ("probe-before.json", "probe-after-death.json"):
        if (out / name).is_file():
            (out / name).write_bytes(neutral_host((out / name).read_bytes()))
