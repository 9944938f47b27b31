"""A child process and its output, as bytes: the launch witness's capture side.

:func:`run_child` starts a command as a child process, copies its stdout and stderr
unchanged to this process's stdout and stderr *and* to a log file (one running SHA-256
over every byte written to the log), forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to it,
and returns its exit status.  :func:`process_start_time` reads the child's start time
from ``/proc`` exactly as ``prometheus_client``'s process collector computes and prints
``process_start_time_seconds`` (what vLLM's ``/metrics`` serves for the API-server
process): boot time from ``/proc/stat`` (``btime``), plus the start time in clock ticks
from ``/proc/<pid>/stat`` (field 22) divided by ``SC_CLK_TCK``, in float arithmetic,
printed as Go prints floats.

Nothing here decides anything: the receipt is written by :mod:`vllm_evidence.launch`
and read back by :mod:`vllm_evidence.adapters.receipt`.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

import attrs

__all__ = [
    "ChildStarted",
    "LogProgress",
    "go_float",
    "process_start_time",
    "run_child",
    "scrub_argv",
]

#: Options whose value is a secret: the receipt shows ``***`` in its place.
_SECRET_OPTION = re.compile(r"^--?[\w.-]*(?:key|token|secret|password|passwd)[\w.-]*$", re.I)

#: The signals forwarded to the child.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

#: The longest the receipt lags the log while output flows (seconds).
PROGRESS_INTERVAL_S = 0.5


def scrub_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value of every key/token/secret/password option as ``***``
    (``--api-key X`` and ``--api-key=X`` alike)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _SECRET_OPTION.match(name):
            if eq:
                out.append(f"{name}=***")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(arg)
    return out


def go_float(value: float) -> str:
    """A float as ``prometheus_client`` prints a sample (``floatToGoString``)."""
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(value)
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return text


def _clock_ticks() -> float:
    """``SC_CLK_TCK``, else 100.0 (the collector's own fallback)."""
    ticks = 100.0
    with contextlib.suppress(ValueError, TypeError, AttributeError, OSError):
        ticks = os.sysconf("SC_CLK_TCK")
    return ticks


def process_start_time(pid: int, proc: str = "/proc") -> tuple[str | None, str | None]:
    """``(start time as /metrics prints it, None)``, or ``(None, why not)`` where
    ``/proc`` cannot be read."""
    try:
        with Path(proc, "stat").open("rb") as stat:
            btime = next(
                (float(line.split()[1]) for line in stat if line.startswith(b"btime ")), None
            )
    except OSError as exc:
        return None, f"no {proc}/stat here ({exc.strerror or type(exc).__name__})"
    if not btime:
        return None, f"{proc}/stat has no btime line"
    try:
        with Path(proc, str(pid), "stat").open("rb") as stat:
            parts = stat.read().split(b")")[-1].split()
        start_ticks = float(parts[19])
    except (OSError, IndexError, ValueError) as exc:
        return None, f"{proc}/{pid}/stat cannot be read ({type(exc).__name__})"
    return go_float(start_ticks / _clock_ticks() + btime), None


@attrs.frozen
class ChildStarted:
    """The child as it started: its pid, and its start time (or why there is none)."""

    pid: int
    start_time: str | None
    start_time_unavailable: str | None


@attrs.frozen
class LogProgress:
    """How much of the log is written, and the SHA-256 of exactly those bytes."""

    size: int
    sha256: str


class _Tee:
    """The log file and its running digest; every write is flushed before it counts."""

    def __init__(self, log: BinaryIO | None) -> None:
        self._log = log
        self._digest = hashlib.sha256()
        self._size = 0
        self._lock = threading.Lock()
        self.changed = threading.Event()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._log is not None:
                self._log.write(data)
                self._log.flush()
                self._digest.update(data)
                self._size += len(data)
        self.changed.set()

    def progress(self) -> LogProgress:
        with self._lock:
            return LogProgress(self._size, self._digest.copy().hexdigest())


def _pump(source: BinaryIO, sink: BinaryIO, tee: _Tee) -> None:
    read = getattr(source, "read1", source.read)
    while True:
        data = read(65536)
        if not data:
            return
        try:
            sink.write(data)
            sink.flush()
        except (OSError, ValueError):
            pass  # the terminal went away; the log keeps every byte
        tee.write(data)


def run_child(
    argv: Sequence[str],
    *,
    log: BinaryIO | None,
    on_start: Callable[[ChildStarted, LogProgress], None],
    on_progress: Callable[[LogProgress], None],
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    proc: str = "/proc",
) -> int:
    """Run ``argv`` to its end (see the module); return its exit status (``128 + N``
    when signal N ended it).  ``on_start`` is called once the child exists, with its
    start time; ``on_progress`` whenever the log grew (at most every
    :data:`PROGRESS_INTERVAL_S`) and once at the end.  Raises :class:`OSError` when the
    command cannot be started."""
    out = stdout if stdout is not None else sys.stdout.buffer
    err = stderr if stderr is not None else sys.stderr.buffer
    tee = _Tee(log)
    child = subprocess.Popen(  # noqa: S603  # the operator's own command, never a shell
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=0,  # a terminal's ^C reaches us only, and is forwarded once
    )
    previous: dict[signal.Signals, Any] = {}

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    on_main_thread = threading.current_thread() is threading.main_thread()
    if on_main_thread:
        for sig in FORWARDED:
            previous[sig] = signal.signal(sig, forward)
    try:
        start, why = process_start_time(child.pid, proc)
        on_start(ChildStarted(child.pid, start, why), tee.progress())
        assert child.stdout is not None  # noqa: S101  # both are pipes (above)
        assert child.stderr is not None  # noqa: S101
        pumps = [
            threading.Thread(target=_pump, args=(child.stdout, out, tee), daemon=True),
            threading.Thread(target=_pump, args=(child.stderr, err, tee), daemon=True),
        ]
        for pump in pumps:
            pump.start()
        while any(p.is_alive() for p in pumps):
            for pump in pumps:
                pump.join(PROGRESS_INTERVAL_S / 2)
            if tee.changed.is_set():
                tee.changed.clear()
                on_progress(tee.progress())
        status = child.wait()
        on_progress(tee.progress())
    finally:
        if child.poll() is None:  # we are leaving early (an exception): take it with us
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
        for forwarded, handler in previous.items():
            signal.signal(forwarded, handler)
    return 128 - status if status < 0 else status
