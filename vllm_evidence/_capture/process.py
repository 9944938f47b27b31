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

The launcher never blocks, slows or orphans its child:

* **Its output is always drained.**  One thread per pipe reads it and hands each chunk
  to the log writer (a queue) and then to the terminal.  Only the log writer's own thread
  writes the log, so a log that fails (``ENOSPC``, ``EIO``, ``EFBIG``) or hangs (a dead
  network mount) never stops the reading.  The first failure ends the log for good:
  :class:`LogWriteFailure` says after how many bytes and why, the digest covers exactly
  those bytes, and nothing more is written to it.  The queue holds at most
  :data:`LOG_BACKLOG_LIMIT` bytes: past it the reading waits for a log that is being
  written (a disk slower than a burst of output keeps every byte, as a terminal slower
  than the output does), but never longer than :data:`LOG_STALL_S` without the log
  making progress; then the log has failed and the reading goes on.  Once the child has
  ended, a write that makes no progress for :data:`LOG_DRAIN_TIMEOUT_S` fails the log,
  and the launcher exits.
* **It dies with the launcher.**  On Linux the child starts as a small exec wrapper
  (``python -I -S -c``, :data:`_EXEC_WRAPPER`) that sets ``prctl(PR_SET_PDEATHSIG,
  SIGKILL)``, checks that the launcher is still its parent (it may have died before the
  call), puts back what an interpreter changes (``SIGPIPE`` and ``SIGXFSZ`` ignored, the
  signal mask) and ``exec``\\ s the command: the same pid and the same start time, so the
  receipt names the command itself.  Not a ``preexec_fn``: Python code between ``fork``
  and ``exec`` can deadlock when the parent has threads.  An ``exec`` that fails is
  reported on a pipe closed by a successful one, as :mod:`subprocess` does.  The signal
  follows the *thread* that started the child, which waits in :func:`run_child` until the
  child has ended.
* **It keeps its own process group**, so a terminal's ``^C`` reaches the launcher only and
  is forwarded once, and a script can kill the child's group by the receipt's pid.  A
  catchable signal sent to the launcher's group is forwarded (:class:`SignalRelay`); a
  ``SIGKILL`` of the launcher or of its group takes the child by the parent-death signal.

Nothing here decides anything: the receipt is written by :mod:`vllm_evidence._launch`
and read back by :mod:`vllm_evidence._adapters.receipt`.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

import attrs

__all__ = [
    "FORWARDED",
    "LOG_BACKLOG_LIMIT",
    "LOG_DRAIN_TIMEOUT_S",
    "LOG_STALL_S",
    "PARENT_DEATH_SIGNAL",
    "ChildStarted",
    "LauncherStopped",
    "LogProgress",
    "LogWriteFailure",
    "SignalRelay",
    "go_float",
    "process_start_time",
    "run_child",
    "scrub_argv",
]


#: The signals forwarded to the child.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

#: The longest the receipt lags the log while output flows (seconds).
PROGRESS_INTERVAL_S = 0.5

#: The most bytes read from the child and not yet written to the log (the memory held
#: for a log that is slower than the output).
LOG_BACKLOG_LIMIT = 16 * 1024 * 1024

#: How long the reading may wait, with the backlog full, for a log that makes no
#: progress (seconds); then the log has failed and the reading goes on.
LOG_STALL_S = 2.0

#: Once the child has ended, how long a log write may make no progress before the log
#: has failed (seconds): the launcher then exits with the child's status.
LOG_DRAIN_TIMEOUT_S = 10.0

#: The most bytes read from a pipe at once.
_READ_CHUNK = 65536


def scrub_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value of every secret as ``***`` and every name kept: secret
    options (``--api-key X``, ``--api-key=X``, ``-k X``, ``--hf-token``, ``--token``,
    ``--auth``, ``--password``, …), credential environment assignments (``HF_TOKEN=X``),
    credential headers and pairs inside an argument, URL userinfo
    (:func:`vllm_evidence._scrub.scrub_argv`, where the rules are)."""
    from vllm_evidence._scrub import scrub_argv as scrub_command_line

    return scrub_command_line(argv)


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
class LogWriteFailure:
    """The log could not be written past :attr:`at_byte`: the bytes before it are in the
    log (and the digest covers exactly them), none after it; :attr:`error` says why (the
    operating system's ``strerror`` text, or why the launcher gave the log up)."""

    at_byte: int
    error: str


@attrs.frozen
class LogProgress:
    """How much of the log is written, the SHA-256 of exactly those bytes, and whether
    writing it has failed (then :attr:`size` is where it stopped)."""

    size: int
    sha256: str
    failure: LogWriteFailure | None = None


#: The longest reason a :class:`LogWriteFailure` keeps (a ``strerror`` is a few words).
_WHY_CHARS = 200


def _why(exc: BaseException) -> str:
    """Why ``exc`` failed the log, in one short line."""
    text = str(exc.strerror) if isinstance(exc, OSError) and exc.strerror else str(exc)
    return " ".join((text or type(exc).__name__).split())[:_WHY_CHARS]


class _LogWriter:
    """The log, written by a thread of its own from a bounded queue, and the running
    digest of the bytes written; ``write`` is ``os.write`` on the log (see the module)."""

    def __init__(
        self,
        write: Callable[[memoryview], int] | None,
        backlog_limit: int = LOG_BACKLOG_LIMIT,
        stall_s: float = LOG_STALL_S,
    ) -> None:
        self._write = write
        self._limit = backlog_limit
        self._stall = stall_s
        self._digest = hashlib.sha256()
        self._size = 0
        self._failure: LogWriteFailure | None = None
        self._queue: collections.deque[bytes] = collections.deque()
        self._backlog = 0
        self._closing = False
        self._lock = threading.Condition()
        self.changed = threading.Event()
        self._thread: threading.Thread | None = None
        if write is not None:
            self._thread = threading.Thread(target=self._run, name="log-writer", daemon=True)
            self._thread.start()

    def put(self, data: bytes) -> None:
        """Queue ``data`` for the log.  With the backlog full, wait while the log makes
        progress, and at most :attr:`_stall` seconds without: then the log has failed."""
        if self._write is None or not data:
            return
        with self._lock:
            size, since = self._size, time.monotonic()
            while self._backlog and self._backlog + len(data) > self._limit:
                if self._failure is not None or self._closing:
                    return
                now = time.monotonic()
                if self._size != size:
                    size, since = self._size, now
                elif now - since >= self._stall:
                    self._fail(
                        f"the log made no progress for {self._stall:g} s "
                        f"with {self._backlog:,} bytes of output waiting for it"
                    )
                    return
                self._lock.wait(min(0.05, self._stall))
            if self._failure is not None or self._closing:
                return
            self._queue.append(data)
            self._backlog += len(data)
            self._lock.notify_all()

    def _fail(self, error: str) -> None:
        """The log ends at the bytes written so far (called with the lock held)."""
        if self._failure is None:
            self._failure = LogWriteFailure(self._size, error)
            self._queue.clear()
            self._backlog = 0
            self._lock.notify_all()
            self.changed.set()

    def _given_up(self) -> bool:
        """Whether the log has failed (another thread may have said so meanwhile)."""
        return self._failure is not None

    def _run(self) -> None:
        write = self._write
        assert write is not None  # noqa: S101  # the thread starts only with a log
        while True:
            with self._lock:
                while not self._queue and not self._closing and self._failure is None:
                    self._lock.wait()
                if self._failure is not None or not self._queue:
                    return
                data = memoryview(self._queue.popleft())
            while data:
                try:
                    written = write(data)
                except (OSError, ValueError) as exc:
                    with self._lock:
                        self._fail(_why(exc))
                    return
                with self._lock:
                    if self._given_up():
                        return  # given up while this write hung: it no longer counts
                    if not 0 < written <= len(data):
                        self._fail(f"a write to the log returned {written}")
                        return
                    self._digest.update(data[:written])
                    self._size += written
                    self._backlog -= written
                    self._lock.notify_all()  # a reading waiting for room
                self.changed.set()
                data = data[written:]

    def close(self, timeout: float = LOG_DRAIN_TIMEOUT_S) -> None:
        """Let the writer finish what is queued; a write that makes no progress for
        ``timeout`` seconds fails the log (the launcher does not wait on it forever)."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        thread = self._thread
        if thread is None:
            return
        size, since = -1, time.monotonic()
        while thread.is_alive():
            thread.join(min(0.05, timeout))
            with self._lock:
                if self._failure is not None:
                    return
                if self._size != size:
                    size, since = self._size, time.monotonic()
                elif thread.is_alive() and time.monotonic() - since >= timeout:
                    self._fail(f"a write to the log made no progress for {timeout:g} s")
                    return

    def progress(self) -> LogProgress:
        with self._lock:
            return LogProgress(self._size, self._digest.copy().hexdigest(), self._failure)


def _pump(source: BinaryIO, terminal: BinaryIO | None, log: _LogWriter) -> None:
    """Drain one of the child's pipes to its end: each chunk to the log writer (which
    never waits on the log), then to the terminal."""
    read = getattr(source, "read1", source.read)
    while True:
        try:
            data = read(_READ_CHUNK)
        except (OSError, ValueError):
            return
        if not data:
            return
        log.put(data)
        if terminal is not None:
            try:
                terminal.write(data)
                terminal.flush()
            except (OSError, ValueError):
                pass  # the terminal went away; the log keeps every byte


class LauncherStopped(BaseException):
    """A forwarded signal reached the launcher before it had a child: the launcher stops
    (its exit status is ``128 + signum``).  A ``BaseException``, like
    :class:`KeyboardInterrupt`: no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SignalRelay:
    """What the launcher does with the :data:`FORWARDED` signals, from its start to its
    exit.  :meth:`install` it on the main thread as early as possible; then a signal

    * before a child exists stops the launcher: the first is kept, and
      :class:`LauncherStopped` is raised for it at the next safe point — :meth:`hold`,
      just before the child is started, or :meth:`check` — never from the handler itself
      (an exception raised by a signal handler can land in a weakref callback or a
      ``__del__``, where Python prints it as "Exception ignored" and goes on, the stop
      lost); later ones are ignored.  With ``stop_before_child=False`` it is held like the
      next case;
    * while the child starts (from its fork to its ``exec``) is held, and forwarded once
      the command runs (an interpreter in the middle of its start-up never gets one);
    * while the child runs is forwarded to it (it has its own process group: a terminal's
      signal reaches the launcher only, and goes on once);
    * after the child has ended is ignored: the launcher exits with the child's status.

    Never a :class:`KeyboardInterrupt`, never a traceback.
    """

    def __init__(self, *, stop_before_child: bool = True) -> None:
        self._stop = stop_before_child
        self._stopping = False
        self._pending: int | None = None
        self._holding = False
        self._held: list[int] = []
        self._child: subprocess.Popen[bytes] | None = None
        self._previous: dict[int, Any] = {}
        self._mask: set[int | signal.Signals] | None = None

    def install(self) -> None:
        """Take the forwarded signals over (main thread only) and unblock them: a
        launcher started with them blocked would otherwise never forward one."""
        for sig in FORWARDED:
            self._previous[sig] = signal.signal(sig, self._handle)
        self._mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)

    def uninstall(self) -> None:
        """Give the signals back as they were, the mask too."""
        for sig, handler in self._previous.items():
            if handler is not None:  # None: not set from Python, cannot be put back
                signal.signal(sig, handler)
        self._previous.clear()
        if self._mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
            self._mask = None

    def check(self) -> None:
        """Raise :class:`LauncherStopped` for a signal taken before a child existed (once):
        call it where stopping is safe."""
        pending, self._pending = self._pending, None
        if pending is not None:
            raise LauncherStopped(pending)

    def hold(self) -> None:
        """The child is about to be started: first stop for a signal already taken
        (:meth:`check`); then hold signals until :meth:`attach` or :meth:`release`."""
        self.check()
        self._holding = True

    def attach(self, child: subprocess.Popen[bytes]) -> None:
        """The child runs: forward the held signals to it, and every one from now on."""
        self._child = child
        self._holding = False
        held, self._held = self._held, []
        for signum in held:
            self._forward(child, signum)

    def release(self) -> None:
        """The child did not start: drop the held signals (the launcher is failing)."""
        self._holding = False
        self._held = []

    @staticmethod
    def _forward(child: subprocess.Popen[bytes], signum: int) -> None:
        if child.returncode is None:
            with contextlib.suppress(OSError):
                child.send_signal(signum)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        child = self._child
        if child is not None:
            self._forward(child, signum)
            return
        if self._holding or not self._stop:
            self._held.append(signum)
            return
        if not self._stopping:
            self._stopping = True
            self._pending = signum  # raised at the next safe point, not from here


#: The exec wrapper (see the module), run as ``python -I -S -c _EXEC_WRAPPER REPORT_FD
#: LAUNCHER_PID CMD…``.  A failure is written to REPORT_FD as ``<stage> <errno>``; a
#: successful ``exec`` closes it (close-on-exec) with nothing written.
_EXEC_WRAPPER = """\
import os, sys
report, launcher, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
def fail(stage, number):
    os.write(report, b"%s %d" % (stage, number))
    os._exit(127)
try:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    no = ctypes.c_ulong(0)
    if libc.prctl(1, ctypes.c_ulong(9), no, no, no) != 0:  # PR_SET_PDEATHSIG, SIGKILL
        fail(b"prctl", ctypes.get_errno())
except (ImportError, OSError, AttributeError):
    fail(b"prctl", 0)
if os.getppid() != launcher:  # the launcher died before prctl: follow it
    os._exit(137)
import _signal
_signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
_signal.signal(_signal.SIGXFSZ, _signal.SIG_DFL)
_signal.pthread_sigmask(_signal.SIG_SETMASK, ())
os.set_inheritable(report, False)
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    fail(b"exec", exc.errno or 0)
"""

#: Whether children start through :data:`_EXEC_WRAPPER` (Linux, with an interpreter).
PARENT_DEATH_SIGNAL = sys.platform == "linux" and bool(sys.executable)


def _spawn(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own process group, through the exec wrapper where there is
    one; return once the command itself runs.  :class:`OSError` when it cannot."""
    if not PARENT_DEATH_SIGNAL:
        return subprocess.Popen(  # noqa: S603  # the operator's own command, never a shell
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
        )
    report, report_w = os.pipe()  # both close-on-exec: only the wrapper gets report_w
    wrapper = [sys.executable, "-I", "-S", "-c", _EXEC_WRAPPER, str(report_w), str(os.getpid())]
    try:
        child = subprocess.Popen(  # noqa: S603  # our interpreter, then the operator's command
            [*wrapper, *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
            pass_fds=(report_w,),
        )
    except BaseException:
        os.close(report)
        raise
    finally:
        os.close(report_w)
    with open(report, "rb") as pipe:  # noqa: PTH123  # a file descriptor, not a path
        failed = pipe.read(64)  # until EOF: the exec (or the wrapper's end) closes it
    if not failed:
        return child
    child.wait()
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    stage, _, number = failed.partition(b" ")
    code = int(number) if number.isdigit() else 0
    if stage == b"exec":
        raise OSError(code, os.strerror(code) if code else "cannot be executed", argv[0])
    why = os.strerror(code) if code else "no prctl here"
    raise OSError(code, f"the parent-death signal cannot be set ({why})")


def _terminal(stream: object) -> BinaryIO | None:
    buffer: BinaryIO | None = getattr(stream, "buffer", None)
    return buffer


def run_child(
    argv: Sequence[str],
    *,
    log_fd: int | None,
    on_start: Callable[[ChildStarted, LogProgress], None],
    on_progress: Callable[[LogProgress], None],
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    proc: str = "/proc",
    signals: SignalRelay | None = None,
    log_backlog_limit: int = LOG_BACKLOG_LIMIT,
    log_stall_s: float = LOG_STALL_S,
) -> int:
    """Run ``argv`` to its end (see the module); return its exit status (``128 + N``
    when signal N ended it).  ``log_fd`` is the log, open for writing at its start
    (``None``: no log).  ``on_start`` is called once the child exists, with its start
    time; ``on_progress`` whenever the log grew or failed (at most every
    :data:`PROGRESS_INTERVAL_S`) and once at the end.

    ``signals`` is the caller's installed :class:`SignalRelay` (the command line installs
    one at its start); without one, a relay is installed here for the call when this is
    the main thread (signals before the child are held, not raised) and removed after.
    ``log_backlog_limit`` and ``log_stall_s`` bound the log's queue (see the module).
    Raises :class:`OSError` when the command cannot be started."""
    out = stdout if stdout is not None else _terminal(sys.stdout)
    err = stderr if stderr is not None else _terminal(sys.stderr)
    relay = signals
    own = relay is None and threading.current_thread() is threading.main_thread()
    if own:
        relay = SignalRelay(stop_before_child=False)
        relay.install()
    log = _LogWriter(
        None if log_fd is None else functools.partial(os.write, log_fd),
        log_backlog_limit,
        log_stall_s,
    )
    child: subprocess.Popen[bytes] | None = None
    try:
        if relay is not None:
            relay.hold()
        try:
            child = _spawn(argv)
        finally:
            if child is None and relay is not None:
                relay.release()
        start, why = process_start_time(child.pid, proc)
        assert child.stdout is not None  # noqa: S101  # both are pipes (above)
        assert child.stderr is not None  # noqa: S101
        pumps = [
            threading.Thread(target=_pump, args=(child.stdout, out, log), daemon=True),
            threading.Thread(target=_pump, args=(child.stderr, err, log), daemon=True),
        ]
        for pump in pumps:
            pump.start()
        if relay is not None:
            relay.attach(child)
        on_start(ChildStarted(child.pid, start, why), log.progress())
        while any(p.is_alive() for p in pumps):
            for pump in pumps:
                pump.join(PROGRESS_INTERVAL_S / 2)
            if log.changed.is_set():
                log.changed.clear()
                on_progress(log.progress())
        status = child.wait()
        log.close()
        on_progress(log.progress())
    finally:
        if child is not None:
            if child.poll() is None:  # we are leaving early (an exception): take it with us
                child.terminate()
                try:
                    child.wait(10)
                except subprocess.TimeoutExpired:
                    child.kill()
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
        if own and relay is not None:
            relay.uninstall()
    return 128 - status if status < 0 else status
