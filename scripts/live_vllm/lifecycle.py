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
from collections.abc import Callable
from pathlib import Path

from live_vllm.common import READY_TIMEOUT_S, LiveTierError, log
from live_vllm.documents import neutral_host
from live_vllm.product import product_probe
from live_vllm.reads import ROUTES, gate_get, get, record_route, save_log
from live_vllm.runs import Run
from live_vllm.scenarios import Scenario
from live_vllm.server import Server

__all__ = [
    "ENGINE_PID",
    "RANK_PID",
    "first_not_200",
    "gate_series",
    "health_series",
    "pid_in_log",
    "run_lifecycle",
    "wait_for_pid",
    "wait_gate_ready",
]


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


def _status(read: Callable[[], int]) -> str:
    try:
        return str(read())
    except (OSError, http.client.HTTPException) as exc:
        return f"refused({type(exc).__name__})"


def wait_gate_ready(run: Run, gate_port: int, limit_s: float) -> float:
    """Poll the gate's ``/ready`` until 200; return seconds waited (a LiveTierError with
    the last body after ``limit_s``)."""
    t0 = time.monotonic()
    body = b""
    while time.monotonic() - t0 < limit_s:
        with contextlib.suppress(OSError, http.client.HTTPException):
            status, body = gate_get(gate_port, "/ready")
            if status == 200:
                return time.monotonic() - t0
        time.sleep(0.2)
    msg = f"the gate's /ready never answered 200 in {limit_s:.0f} s: {body[-400:]!r}"
    raise LiveTierError(msg)


def gate_series(run: Run, gate_port: int, out: Path, limit_s: float) -> None:
    """The gate's ``/ready`` and vLLM's ``/health``, each every 0.2 s from now, as
    ``+seconds ready=S health=S`` lines into ``gate-after.txt``, until both stopped
    answering 200 (or ``limit_s`` passed); the first ``/ready`` body that is not 200 goes
    to ``ready-after.json``."""
    t0 = time.monotonic()
    lines: list[str] = []
    kept = False
    while time.monotonic() - t0 < limit_s:
        ready = _status(lambda: gate_get(gate_port, "/ready")[0])
        if ready != "200" and not kept:
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, body = gate_get(gate_port, "/ready")
                if status != 200:
                    (out / "ready-after.json").write_bytes(run.neutralise(body))
                    kept = True
        health = _status(lambda: get(run.port, "/health", timeout=2.0)[0])
        lines.append(f"+{time.monotonic() - t0:.2f} s ready={ready} health={health}")
        if ready != "200" and health != "200":
            break
        time.sleep(0.2)
    (out / "gate-after.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    log(
        f"    after the kill: /ready first not 200 at {first_not_200(lines, 'ready')}, "
        f"/health at {first_not_200(lines, 'health')}"
    )


def first_not_200(lines: list[str], name: str) -> str | None:
    """The ``+seconds`` of the first ``gate-after.txt`` line whose ``name`` is not 200."""
    for line in lines:
        fields = dict(f.split("=", 1) for f in line.split()[2:])
        if fields.get(name) != "200":
            return line.split()[0]
    return None


def _run_gate(run: Run, server: Server, out: Path, *, canary: bool) -> None:
    """Under the gate, ready; then a process killed and the gate's ``/ready`` against
    vLLM's ``/health`` every 0.2 s.  ``tp2-gate-worker-kill``: the top-level routes read
    first, the rank-1 worker killed, the gate's ``/metrics`` kept after too;
    ``tp1-gate-canary`` (``canary``): ready means a token back, the EngineCore killed."""
    assert server.gate_port is not None  # noqa: S101 - set by start() for this lifecycle
    log(f"  ready after {server.wait_ready():.1f} s")
    if not canary:
        for stem, path in ROUTES:
            record_route(run, out, stem, path)
    waited = wait_gate_ready(run, server.gate_port, 60.0)
    log(f"  the gate's /ready answered 200 {waited:.1f} s later")
    _, body = gate_get(server.gate_port, "/ready")
    (out / "ready-before.json").write_bytes(run.neutralise(body))
    _, body = gate_get(server.gate_port, "/metrics")
    (out / "gate-metrics-before.txt").write_bytes(run.neutralise(body))
    victim, what = (ENGINE_PID, "EngineCore") if canary else (RANK_PID, "rank-1 worker")
    pid = wait_for_pid(server, victim, 5.0)
    os.kill(pid, signal.SIGKILL)
    log(f"  killed the {what} (pid {pid})")
    gate_series(run, server.gate_port, out, 30.0)
    if canary:
        return
    with contextlib.suppress(OSError, http.client.HTTPException):
        _, body = gate_get(server.gate_port, "/metrics")
        (out / "gate-metrics-after.txt").write_bytes(run.neutralise(body))


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
        elif scenario.lifecycle in ("gate-worker-kill", "gate-canary"):
            _run_gate(run, server, out, canary=scenario.lifecycle == "gate-canary")
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
    for name in (
        "probe-before.json",
        "probe-after-death.json",
        "ready-before.json",
        "ready-after.json",
    ):
        if (out / name).is_file():
            (out / name).write_bytes(neutral_host((out / name).read_bytes()))
