"""Fixed ports shared by test suites running side by side on one machine.

A replay binds the port its log names, and ``vllm-evidence demo`` serves on the port its
log names (falling back to a free one, which changes what it prints).  Two suites at once
(a mutation run's workers, a second checkout) would take each other's port: each fixed
port is held through a lock file first, so they take turns instead.
"""

from __future__ import annotations

import fcntl
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests._paths import PORT_WAIT_S
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence.testing._stub import StubFrontDoor, serve_capture


def nothing_listening() -> str:
    """The URL of a port just bound and closed again on 127.0.0.1: nothing listens there."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@contextmanager
def holding_port(port: int) -> Iterator[None]:
    """Hold ``port`` for this process until the block ends (other holders wait)."""
    path = Path(tempfile.gettempdir()) / f"vllm-evidence-tests-port-{port}.lock"
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def demo_port(scenario: str) -> int:
    """The port the demo scenario's log names (the one ``demo`` serves on)."""
    from tests._evidence import log_port

    root = Path(__file__).resolve().parents[1] / "vllm_evidence" / "demo_data"
    log = read_startup_log(root / f"vllm-0.32.0-cpu-{scenario}" / "startup.log")
    assert isinstance(log, StartupLog), log
    return log_port(log)


@contextmanager
def serve_on_port(directory: str | Path, *, port: int, **options: Any) -> Iterator[StubFrontDoor]:
    """:func:`serve_capture` on ``port`` (``0``: any free port), held against other suites
    and waited for while another listener has it."""
    if not port:
        with serve_capture(directory, **options) as door:
            yield door
        return
    with (
        holding_port(port),
        serve_capture(directory, port=port, bind_wait_s=PORT_WAIT_S, **options) as door,
    ):
        yield door
