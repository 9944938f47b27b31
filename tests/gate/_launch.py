"""The real launcher under test: ``vllm-evidence launch --serve 127.0.0.1:0 --require …
-- python _stub_vllm.py serve … --port N``, its gate's URL read from its one notice line."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STUB = Path(__file__).resolve().parent / "_stub_vllm.py"
CLI = [sys.executable, "-m", "vllm_evidence", "launch"]
REQUIRED = ("parallel", "capacity", "health_coverage")
_SERVES = re.compile(rb"the gate serves (http://127\.0\.0\.1:\d+) ")


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on (just bound and closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def get(url: str) -> tuple[int, bytes]:
    """``(status, body)`` of a GET (an HTTP error status is an answer too)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310  # loopback
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def get_json(url: str) -> tuple[int, dict[str, Any]]:
    status, body = get(url)
    document: dict[str, Any] = json.loads(body)
    return status, document


def wait_for(what: str, check: Callable[[], object], timeout_s: float = 60.0) -> None:
    """Call ``check`` until it returns true; fail naming ``what`` past ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as exc:  # not answering yet: not true yet
            last = exc
        else:
            if last:
                return
        time.sleep(0.1)
    msg = f"{what}: not within {timeout_s:g} s (last: {last!r})"
    raise AssertionError(msg)


class Launched:
    """A launcher running the stub, its gate's URL, and the stub's pids."""

    def __init__(self, proc: subprocess.Popen[bytes], gate: str, stderr: Path) -> None:
        self.proc = proc
        self.gate = gate
        self.stderr = stderr

    def ready(self) -> tuple[int, dict[str, Any]]:
        return get_json(self.gate + "/ready")

    def rounds(self) -> int:
        value = self.ready()[1]["round"]
        assert isinstance(value, int)
        return value

    def assessment(self) -> dict[str, Any]:
        return get_json(self.gate + "/assessment")[1]

    def worker_pids(self) -> list[int]:
        """The ranks' pids, as the gate's assessment document shows them."""
        decisions = self.assessment()["decisions"]
        assert isinstance(decisions, dict)
        return [int(r["pid"]) for r in decisions["parallel"]["ranks"]]

    def child_pid(self) -> int:
        """The launched command's pid (the log join's receipt names it)."""
        decisions = self.assessment()["decisions"]
        assert isinstance(decisions, dict)
        return int(decisions["log_join"]["pid"])


@contextmanager
def launched(
    tmp: Path,
    *,
    interval: str = "0.3s",
    extra: tuple[str, ...] = (),
    required: tuple[str, ...] = REQUIRED,
) -> Iterator[Launched]:
    """The launcher with the stub as its child, until the block ends (then stopped)."""
    stderr = tmp / "launcher.err"
    command = [
        *CLI,
        "--serve",
        "127.0.0.1:0",
        "--require",
        *required,
        "--interval",
        interval,
        *extra,
        "--",
        sys.executable,
        str(STUB),
        "serve",
        "/models/tiny-llama",
        "--port",
        str(free_port()),
        "--tensor-parallel-size",
        "2",
    ]
    with stderr.open("wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp)
    try:
        found: list[str] = []

        def serving() -> bool:
            match = _SERVES.search(stderr.read_bytes())
            if match:
                found.append(match.group(1).decode())
            return bool(match) or proc.poll() is not None

        wait_for("the launcher's notice line", serving, 30)
        assert found, stderr.read_text(errors="replace")
        yield Launched(proc, found[0], stderr)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
