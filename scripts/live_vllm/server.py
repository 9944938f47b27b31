"""One vLLM API server: its process group started (directly, or through ``vllm-evidence
launch``), waited on and stopped, and the shared memory it leaves behind removed."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from live_vllm.common import (
    HOST,
    READY_TIMEOUT_S,
    STOP_TIMEOUT_S,
    STOP_TIMEOUT_STARTING_S,
    LiveTierError,
    log,
    tail_text,
)
from live_vllm.reads import get
from live_vllm.runs import Run
from live_vllm.scenarios import CANARY_REQUIRES, GATE_INTERVAL, GATE_REQUIRES, Scenario

__all__ = ["Server", "dist_ids", "free_port", "launcher_argv"]


def launcher_argv(
    command: Sequence[str],
    *,
    receipt: Path,
    log_path: Path,
    signing_key: Path,
    gate_port: int | None = None,
    canary: bool = False,
) -> list[str]:
    """The launch witness: ``vllm-evidence launch --receipt R --log L
    --receipt-signing-key K -- COMMAND`` run by this interpreter (the launcher tees the
    command's output to the log and to its own stdout and stderr, and writes the receipt,
    signed with the run's key).  With ``gate_port``, the gate instead of a signed receipt:
    ``--serve HOST:GATE_PORT --require GATE_REQUIRES --interval GATE_INTERVAL`` (the gate
    joins its child's log in process and takes no key; its receipt, unsigned, still names
    the child's pid for the recorder); with ``canary`` too, ``--canary --require
    CANARY_REQUIRES``."""
    gate = (
        ["--receipt-signing-key", str(signing_key)]
        if gate_port is None
        else [
            "--serve",
            f"{HOST}:{gate_port}",
            *(["--canary"] if canary else []),
            "--require",
            *(CANARY_REQUIRES if canary else GATE_REQUIRES),
            "--interval",
            GATE_INTERVAL,
        ]
    )
    return [
        sys.executable,
        "-m",
        "vllm_evidence",
        "launch",
        "--receipt",
        str(receipt),
        "--log",
        str(log_path),
        *gate,
        "--",
        *command,
    ]


class Server:
    """One vLLM API server process group, its log going to a file (a launched scenario's
    log is written by the launcher, and what it copies to its terminal to
    ``terminal.log``)."""

    _live: set[Server] = set()  # noqa: RUF012 - registry of running servers, killed at exit

    def __init__(self, run: Run, scenario: Scenario, log_path: Path) -> None:
        self.run = run
        self.scenario = scenario
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = False
        self.shm_before: set[str] = set()
        self.started_at = 0.0
        self.gate_port: int | None = None
        """The gate's port (``launch --serve``), for a ``gate-worker-kill`` or ``gate-canary``
        scenario."""

    @property
    def receipt_path(self) -> Path:
        """Where the launcher writes its receipt (launched scenarios)."""
        return self.log_path.with_name("launch-receipt.json")

    @property
    def terminal_path(self) -> Path:
        """What the launcher copied to its terminal (launched scenarios)."""
        return self.log_path.with_name("terminal.log")

    def start(self) -> None:
        """Start the server in a process group of its own (no stdin, a minimal environment,
        the run's root as its working directory)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.shm_before = _shm_names()
        self.started_at = time.time()
        argv = self.run.argv(self.scenario)
        sink = self.log_path
        if self.scenario.launched:
            if self.scenario.lifecycle in ("gate-worker-kill", "gate-canary"):
                self.gate_port = free_port()
            argv = launcher_argv(
                argv,
                receipt=self.receipt_path,
                log_path=self.log_path,
                signing_key=self.run.receipt_keys[0],
                gate_port=self.gate_port,
                canary=self.scenario.lifecycle == "gate-canary",
            )
            sink = self.terminal_path
        with sink.open("wb") as logf:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=self.run.server_env(self.scenario),
                cwd=self.run.root,
                start_new_session=True,  # its own process group, killed as one
            )
        Server._live.add(self)
        log(f"  launched pid {self.proc.pid} on {HOST}:{self.run.port}")

    def child_pgid(self) -> int | None:
        """The launched vLLM's own process group (the launcher puts it in a new one)."""
        if not self.scenario.launched or not self.receipt_path.exists():
            return None
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            pid = json.loads(self.receipt_path.read_text(encoding="utf-8"))["pid"]
            return pid if isinstance(pid, int) and pid > 0 else None
        return None

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> float:
        """Poll ``/health`` until 200; return seconds waited. Fail with the log tail."""
        if self.proc is None:
            msg = "wait_ready() before start()"
            raise LiveTierError(msg)
        t0 = time.monotonic()
        while True:
            code = self.proc.poll()
            if code is not None:
                msg = f"server exited with {code} before becoming ready; log tail:\n" + tail_text(
                    self.log_path.read_text("utf-8", "replace")
                )
                raise LiveTierError(msg)
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, _, _ = get(self.run.port, "/health", timeout=5.0)
                if status == 200:
                    self.ready = True
                    return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                msg = f"/health not 200 within {timeout:.0f} s; log tail:\n" + tail_text(
                    self.log_path.read_text("utf-8", "replace")
                )
                raise LiveTierError(msg)
            time.sleep(1.0)

    def stop(self) -> None:
        """SIGTERM the process group, wait (bounded), then SIGKILL whatever is left."""
        proc = self.proc
        if proc is None:
            return
        pgid = proc.pid
        child = self.child_pgid()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)  # a launcher forwards it to its child
        timeout = STOP_TIMEOUT_S if self.ready else STOP_TIMEOUT_STARTING_S
        forced = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log(f"  pid {pgid} still running {timeout:.0f} s after SIGTERM; killing")
            forced = True
        else:
            # Workers share the group; give them a moment to follow the leader out.
            deadline = time.monotonic() + 10.0
            groups = [pgid] if child is None else [pgid, child]
            while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
                time.sleep(0.2)
        for group in [pgid] if child is None else [pgid, child]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10.0)
        _remove_shared_memory(self.log_path)
        if forced:
            # SIGKILL also took the group's multiprocessing resource tracker, which would
            # have unlinked the server's psm_*/sem.mp-* segments: do its job.
            _remove_new_segments(self.shm_before, self.started_at)
        # Forget the server only once its group is gone: if this stop is interrupted,
        # stop_all() (at exit) kills it again.
        self.proc = None
        Server._live.discard(self)

    @classmethod
    def stop_all(cls) -> None:
        """Stop every server still running (at exit, and after every ``record``)."""
        for server in list(cls._live):
            server.stop()


_DIST_ID = re.compile(rb"\bvllm_dist_([0-9a-f]{16,})\b")


def _remove_shared_memory(log_path: Path) -> None:
    """Remove the ``/dev/shm`` segments of this server's distributed group.

    With TP>1, vLLM 0.32.0's CPU shared-memory communicator leaves
    ``/dev/shm/vllm_dist_<id>-tp:…-cpushm_<rank>`` behind even on a clean shutdown. The id
    is read from this server's own log, so only its segments are touched.
    """
    shm = Path("/dev/shm")  # noqa: S108 - only our own segments, named in our log
    if not shm.is_dir() or not log_path.exists():
        return
    for dist_id in dist_ids(log_path.read_bytes()):
        for seg in shm.glob(f"vllm_dist_{dist_id}*"):
            with contextlib.suppress(OSError):
                seg.unlink()


def dist_ids(log: bytes) -> list[str]:
    """The distributed-group ids (``vllm_dist_<hex id>``, 16 hex digits or more) a server
    log names, sorted, each once."""
    return sorted({m.decode() for m in _DIST_ID.findall(log)})


def _shm_names() -> set[str]:
    with contextlib.suppress(OSError):
        return {p.name for p in Path("/dev/shm").iterdir()}  # noqa: S108 - listing only
    return set()


def _remove_new_segments(before: set[str], since: float) -> None:
    """Unlink multiprocessing segments of ours that appeared while our server ran."""
    for name in sorted(_shm_names() - before):
        if not name.startswith(("psm_", "sem.mp-", "vllm_")):
            continue
        seg = Path("/dev/shm") / name  # noqa: S108 - one of our server's own segments
        with contextlib.suppress(OSError):
            st = seg.stat()
            if st.st_uid == os.getuid() and st.st_mtime >= since - 1.0:
                seg.unlink()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_port() -> int:
    """A loopback port free now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])
