"""The launcher's child, in the library: the log writer that never stops the reading,
the exec wrapper (the parent-death signal, the same pid, exec failures), and the signal
relay's four phases."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vllm_evidence._capture.process import (
    FORWARDED,
    PARENT_DEATH_SIGNAL,
    ChildStarted,
    LauncherStopped,
    LogProgress,
    LogWriteFailure,
    SignalRelay,
    _LogWriter,
    run_child,
)

LINUX = sys.platform == "linux"


def _run(
    code: str, log_fd: int | None, **kwargs: object
) -> tuple[int, bytes, list[LogProgress], list[ChildStarted]]:
    out = io.BytesIO()
    seen: list[LogProgress] = []
    started: list[ChildStarted] = []

    def on_start(child: ChildStarted, progress: LogProgress) -> None:
        started.append(child)
        seen.append(progress)

    status = run_child(
        [sys.executable, "-c", code],
        log_fd=log_fd,
        on_start=on_start,
        on_progress=seen.append,
        stdout=out,
        stderr=io.BytesIO(),
        **kwargs,  # type: ignore[arg-type]  # the keyword arguments of run_child
    )
    return status, out.getvalue(), seen, started


MIB = "import sys\nfor _ in range(4):\n    sys.stdout.write('y' * (1 << 20))\n"


# --- the log writer ---------------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_log_that_fails_at_once_ends_at_byte_zero_and_the_child_runs_on() -> None:
    with Path("/dev/full").open("wb", buffering=0) as full:
        status, out, seen, _ = _run(MIB, full.fileno())
    assert status == 0
    assert out == b"y" * (4 << 20)
    assert seen[-1] == LogProgress(
        0, hashlib.sha256(b"").hexdigest(), LogWriteFailure(0, "No space left on device")
    )


def test_a_log_that_hangs_never_stops_the_child() -> None:
    """The log is a pipe nobody reads (a hung mount): once the backlog is full the
    reading waits at most the stall time for it, then the log has failed and the reading
    goes on; the digest covers exactly what reached the log."""
    read_end, write_end = os.pipe()
    try:
        started = time.monotonic()
        status, out, seen, _ = _run(MIB, write_end, log_backlog_limit=256 * 1024, log_stall_s=0.5)
        assert time.monotonic() - started < 20
        assert status == 0
        assert out == b"y" * (4 << 20)
        last = seen[-1]
        assert last.failure is not None
        assert last.failure.error.startswith("the log made no progress for 0.5 s with ")
        assert last.failure.error.endswith(" bytes of output waiting for it")
        assert last.failure.at_byte == last.size
        assert 0 < last.size <= 256 * 1024
        os.set_blocking(read_end, False)
        reached = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(read_end, 1 << 20):
                reached += chunk
        # What reached the log starts with exactly the bytes the digest covers (a write
        # that hung when the log was given up may add more after them: not counted).
        assert hashlib.sha256(reached[: last.size]).hexdigest() == last.sha256
        assert reached[: last.size] == b"y" * last.size
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_log_slower_than_the_output_keeps_every_byte() -> None:
    """The other direction: a log that is written, only slowly (a pipe read in small
    sips), with a backlog smaller than the output: the reading waits for it, and the log
    has all of it, no failure."""
    read_end, write_end = os.pipe()
    reached = bytearray()

    def sip() -> None:
        while chunk := os.read(read_end, 4096):
            reached.extend(chunk)
            time.sleep(0.0005)

    reader = threading.Thread(target=sip)
    reader.start()
    try:
        status, out, seen, _ = _run(MIB, write_end, log_backlog_limit=128 * 1024)
    finally:
        os.close(write_end)
        reader.join(30)
        os.close(read_end)
    assert status == 0
    assert bytes(reached) == out == b"y" * (4 << 20)
    assert seen[-1] == LogProgress(4 << 20, hashlib.sha256(out).hexdigest(), None)


def test_a_log_with_room_has_every_byte_and_no_failure(tmp_path: Path) -> None:
    with (tmp_path / "log").open("wb", buffering=0) as log:
        status, out, seen, _ = _run(MIB, log.fileno())
    data = (tmp_path / "log").read_bytes()
    assert status == 0
    assert data == out == b"y" * (4 << 20)
    assert seen[-1] == LogProgress(len(data), hashlib.sha256(data).hexdigest(), None)


def test_short_writes_count_every_byte_and_a_failure_stops_the_count() -> None:
    """The writer alone: writes that take 3 bytes at a time, then fail with EIO."""
    taken = bytearray()

    def write(data: memoryview) -> int:
        if len(taken) >= 10:
            raise OSError(5, "Input/output error")
        taken.extend(data[:3])
        return min(3, len(data))

    writer = _LogWriter(write)
    writer.put(b"abcdefgh")
    writer.put(b"ijklmnop")
    writer.close()
    progress = writer.progress()
    # abc, def, gh (the end of the first chunk), ijk: 11 bytes, then the failure.
    assert bytes(taken) == b"abcdefghijk"
    assert progress == LogProgress(
        11, hashlib.sha256(b"abcdefghijk").hexdigest(), LogWriteFailure(11, "Input/output error")
    )
    writer.put(b"more")  # after a failure nothing more is written
    assert writer.progress() == progress


def test_a_write_that_never_returns_fails_the_log_at_the_end() -> None:
    """Once the child has ended, a write stuck for the drain timeout fails the log, and
    the launcher goes on to exit."""
    release = threading.Event()

    def write(data: memoryview) -> int:
        release.wait(30)
        return len(data)

    writer = _LogWriter(write)
    writer.put(b"stuck")
    started = time.monotonic()
    writer.close(timeout=0.3)
    assert time.monotonic() - started < 10
    assert writer.progress().failure == LogWriteFailure(
        0, "a write to the log made no progress for 0.3 s"
    )
    release.set()
    time.sleep(0.05)
    assert writer.progress().size == 0  # the late write does not count


def test_no_log_is_no_progress_and_no_failure() -> None:
    status, out, seen, _ = _run("print('hi')", None)
    assert (status, out) == (0, b"hi\n")
    assert seen[-1] == LogProgress(0, hashlib.sha256(b"").hexdigest(), None)


# --- the exec wrapper -------------------------------------------------------------------


@pytest.mark.skipif(not PARENT_DEATH_SIGNAL, reason="the exec wrapper is Linux's")
def test_the_child_is_the_command_with_the_parent_death_signal_set() -> None:
    """The pid the receipt names is the command's own (the wrapper exec'd into it), and
    the command runs with PR_SET_PDEATHSIG = SIGKILL."""
    code = (
        "import ctypes, os\n"
        "sig = ctypes.c_int(0)\n"
        "ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)\n"  # PR_GET_PDEATHSIG
        "print(os.getpid(), sig.value)\n"
    )
    status, out, _, started = _run(code, None)
    assert status == 0
    pid, deathsig = out.split()
    assert int(pid) == started[0].pid
    assert int(deathsig) == signal.SIGKILL


def _status_mask(status: bytes, field: bytes) -> int:
    line = next(line for line in status.splitlines() if line.startswith(field + b":"))
    return int(line.split()[1], 16)


@pytest.mark.skipif(not PARENT_DEATH_SIGNAL, reason="the exec wrapper is Linux's")
def test_the_command_gets_the_signals_as_a_shell_gives_them() -> None:
    """Nothing blocked, SIGPIPE and SIGXFSZ at their defaults (the wrapper's interpreter
    ignored them), whatever the launcher's mask was."""
    out = io.BytesIO()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        status = run_child(
            ["cat", "/proc/self/status"],
            log_fd=None,
            on_start=lambda *_: None,
            on_progress=lambda _: None,
            stdout=out,
            stderr=io.BytesIO(),
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    assert status == 0
    assert _status_mask(out.getvalue(), b"SigBlk") == 0
    ignored = _status_mask(out.getvalue(), b"SigIgn")
    assert not ignored & (1 << (signal.SIGPIPE - 1))
    assert not ignored & (1 << (signal.SIGXFSZ - 1))


def test_a_command_that_does_not_exist_is_an_os_error_naming_it() -> None:
    with pytest.raises(FileNotFoundError) as caught:
        run_child(
            ["/nonexistent/vllm"],
            log_fd=None,
            on_start=lambda *_: None,
            on_progress=lambda _: None,
            stdout=io.BytesIO(),
            stderr=io.BytesIO(),
        )
    assert caught.value.strerror == "No such file or directory"


def test_the_childs_status_and_its_signal_are_the_exit_status() -> None:
    assert _run("import sys; sys.exit(9)", None)[0] == 9
    assert _run("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", None)[0] == 143


# --- the signal relay -------------------------------------------------------------------


@contextlib.contextmanager
def _installed(relay: SignalRelay) -> Iterator[SignalRelay]:
    relay.install()
    try:
        yield relay
    finally:
        relay.uninstall()


def _deliver(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.05)  # the handler runs on this thread, at the next bytecode


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_before_a_child_a_signal_stops_the_launcher_once_at_a_safe_point() -> None:
    """The handler raises nothing (an exception from a handler can be swallowed where it
    lands); the stop comes at :meth:`hold`, before any child is started, once."""
    with _installed(SignalRelay()) as relay:
        _deliver(signal.SIGTERM)  # kept, not raised here
        _deliver(signal.SIGINT)  # a second: ignored, never a KeyboardInterrupt
        with pytest.raises(LauncherStopped) as caught:
            relay.hold()
        assert caught.value.signum == signal.SIGTERM
        relay.check()  # once: nothing more to raise


def test_without_a_signal_nothing_stops() -> None:
    with _installed(SignalRelay()) as relay:
        relay.check()
        relay.hold()  # the child may be started
        relay.release()


def test_a_signal_raised_from_a_handler_would_be_lost_in_a_callback() -> None:
    """Why the relay does not raise from its handler: an exception raised in a weakref
    callback (as a handler's can be, when the signal lands there) is printed and dropped,
    and the code around it goes on as if nothing happened."""
    import gc
    import weakref

    class Thing:
        pass

    def callback(_ref: object) -> None:
        raise LauncherStopped(signal.SIGINT)

    thing = Thing()
    ref = weakref.ref(thing, callback)
    seen: list[object] = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: seen.append(unraisable.exc_value)
    try:
        del thing
        gc.collect()
    finally:
        sys.unraisablehook = old
    assert ref() is None
    assert len(seen) == 1
    assert isinstance(seen[0], LauncherStopped)  # dropped: nothing raised here


def test_while_the_child_starts_signals_are_held_then_forwarded() -> None:
    with _installed(SignalRelay()) as relay:
        relay.hold()
        _deliver(signal.SIGTERM)  # held: no exception
        child = _sleeper()
        try:
            assert child.poll() is None
            relay.attach(child)  # the held SIGTERM goes on now
            assert child.wait(10) == -signal.SIGTERM
        finally:
            child.kill()
            child.communicate()
        _deliver(signal.SIGINT)  # the child has ended: ignored
        _deliver(signal.SIGTERM)


def test_while_the_child_runs_each_signal_is_forwarded() -> None:
    with _installed(SignalRelay()) as relay:
        relay.hold()
        child = _sleeper()
        try:
            relay.attach(child)
            assert child.poll() is None  # nothing was held
            _deliver(signal.SIGHUP)
            assert child.wait(10) == -signal.SIGHUP
        finally:
            child.kill()
            child.communicate()


def test_a_start_that_failed_drops_what_was_held() -> None:
    with _installed(SignalRelay()) as relay:
        relay.hold()
        _deliver(signal.SIGTERM)
        relay.release()
        _deliver(signal.SIGTERM)  # no child: the next one stops it again, at hold()
        with pytest.raises(LauncherStopped):
            relay.hold()


def test_a_library_relay_holds_signals_before_the_child_instead_of_raising() -> None:
    with _installed(SignalRelay(stop_before_child=False)):
        _deliver(signal.SIGTERM)  # held, no exception


def test_the_relay_unblocks_the_signals_and_gives_everything_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in FORWARDED}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        with _installed(SignalRelay()):
            assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
            assert all(signal.getsignal(sig) != before[sig] for sig in FORWARDED)
        assert signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, set())
        assert {sig: signal.getsignal(sig) for sig in FORWARDED} == before
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
