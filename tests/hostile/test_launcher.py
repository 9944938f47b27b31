"""The launcher never hurts the server it runs: whatever happens to the log, to the
launcher, or to its signals, the child is drained, never orphaned, and no traceback is
printed.

Each case here is a user's reproducer, through the command line in a child process:

* a log on a full file system (a real 1 MiB tmpfs, mounted here when this runs as root)
  or past the file-size limit: the child runs to its end, its output reaches the
  launcher's stdout, the failure is said once, and the receipt's ``log_write_failure``
  says the log is complete up to exactly its size;
* ``kill -9`` of the launcher, or of the launcher's process group: the child is gone
  within seconds (the parent-death signal); a catchable signal to the group reaches it
  once;
* SIGINT and SIGTERM at random moments of the launcher's first second, over 24 tries,
  with the signals blocked at its start and not: never a traceback once its ``main()``
  runs (before it, CPython's own start-up and the package's module imports, a ^C is
  CPython's ``KeyboardInterrupt``: see :func:`_before_main`);
* a symlinked ``--log``, a ``--log`` that is the receipt (by the same path or another
  name), a FIFO, and commands that cannot be executed: one line, exit 2, nothing touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from vllm_evidence._adapters.receipt import read_launch_receipt
from vllm_evidence.serialize import schema

CLI = [sys.executable, "-m", "vllm_evidence", "launch"]
LINUX = sys.platform == "linux"
needs_linux = pytest.mark.skipif(not LINUX, reason="needs Linux (/proc, prctl, tmpfs)")

#: 8,192 lines of 1,024 bytes: 8 MiB, eight times the tmpfs the log is on.
CHATTY = "import sys\nfor _ in range(8192):\n    sys.stdout.write('x' * 1023 + '\\n')\n"
CHATTY_OUTPUT = (b"x" * 1023 + b"\n") * 8192
PYTHON_CHATTY = [sys.executable, "-c", CHATTY]


def _receipt(path: Path) -> dict[str, object]:
    document: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _one_line(stderr: bytes) -> str:
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# --- a log that cannot be written -------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path``, unmounted afterwards; skips where this
    process may not mount one (not root, no mount namespace rights)."""
    if not LINUX or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root on Linux (CI runs this as root)")
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mount is not permitted here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_log_file_system_never_stops_the_child(tmp_path: Path) -> None:
    """The reproducer: before, the copying thread died on ENOSPC, nothing drained the
    pipe, and the child froze (``timeout`` ended it with 124)."""
    with _tmpfs(tmp_path / "full", "1m") as full:
        receipt, log = tmp_path / "r.json", full / "vllm.log"
        out = subprocess.run(
            [
                *CLI,
                "--receipt",
                str(receipt),
                "--log",
                str(log),
                "--",
                sys.executable,
                "-c",
                CHATTY,
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout == CHATTY_OUTPUT  # the terminal copy has every byte
        line = _one_line(out.stderr)  # reported once
        assert line.startswith("vllm-evidence launch: cannot write the log ")
        assert "(No space left on device)" in line
        data = log.read_bytes()
        assert 0 < len(data) <= 1024 * 1024  # the tmpfs holds at most 1 MiB of it
        assert data == CHATTY_OUTPUT[: len(data)]
        document = _receipt(receipt)
        Draft202012Validator(schema("launch-receipt")).validate(document)
        assert document["log_write_failure"] == {
            "at_byte": len(data),
            "error": "No space left on device",
        }
        assert document["log_bytes"] == len(data)
        assert document["log_sha256"] == hashlib.sha256(data).hexdigest()
        read = read_launch_receipt(receipt)
        assert read.log_write_failure is not None
        assert read.log_write_failure.at_byte == len(data)


def test_a_log_with_room_has_no_failure(tmp_path: Path) -> None:
    """The other direction: the same child, a log on a tmpfs with room for all of it."""
    with _tmpfs(tmp_path / "roomy", "16m") as roomy:
        receipt, log = tmp_path / "r.json", roomy / "vllm.log"
        out = subprocess.run(
            [
                *CLI,
                "--receipt",
                str(receipt),
                "--log",
                str(log),
                "--",
                sys.executable,
                "-c",
                CHATTY,
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == 0
        assert out.stderr == b""
        assert log.read_bytes() == CHATTY_OUTPUT
        document = _receipt(receipt)
        assert document["log_write_failure"] is None
        assert document["log_bytes"] == len(CHATTY_OUTPUT)


def _file_size_limit(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@needs_linux
def test_a_log_past_the_file_size_limit_never_stops_the_child(tmp_path: Path) -> None:
    """``EFBIG`` (the launcher runs under ``ulimit -f``): the same as a full disk."""
    receipt, log = tmp_path / "r.json", tmp_path / "vllm.log"
    limit = 100_000
    out = subprocess.run(
        [*CLI, "--receipt", str(receipt), "--log", str(log), "--", *PYTHON_CHATTY],
        capture_output=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: _file_size_limit(limit),  # a test's own child
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == CHATTY_OUTPUT
    assert "(File too large)" in _one_line(out.stderr)
    assert log.stat().st_size == limit
    document = _receipt(receipt)
    assert document["log_write_failure"] == {"at_byte": limit, "error": "File too large"}
    assert document["log_sha256"] == hashlib.sha256(CHATTY_OUTPUT[:limit]).hexdigest()


# --- the child dies with the launcher ---------------------------------------------------


def _state(pid: int) -> str | None:
    """The process's state letter in /proc, or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()[0].decode()


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie nobody reaped yet (a container's init may
    never reap the orphan)."""
    return _state(pid) in (None, "Z", "X")


def _wait_for_child(receipt: Path, launcher: subprocess.Popen[bytes]) -> int:
    """The child's pid, once the receipt names it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert launcher.poll() is None, "the launcher ended early"
        with contextlib.suppress(OSError, ValueError):
            pid = _receipt(receipt)["pid"]
            assert isinstance(pid, int)
            return pid
        time.sleep(0.02)
    msg = "no receipt within 30 s"
    raise AssertionError(msg)


@contextlib.contextmanager
def _launched(tmp_path: Path, *command: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The launcher (in a session of its own: its group is its pid) and its child's pid;
    both killed afterwards whatever happened."""
    receipt = tmp_path / "r.json"
    launcher = subprocess.Popen(
        [*CLI, "--receipt", str(receipt), "--log", str(tmp_path / "vllm.log"), "--", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    pid = 0
    try:
        pid = _wait_for_child(receipt, launcher)
        yield launcher, pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.communicate(timeout=30)
        if pid and not _gone(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.02)
    return _gone(pid)


@needs_linux
def test_kill_9_of_the_launcher_takes_the_child(tmp_path: Path) -> None:
    with _launched(tmp_path, "sleep", "60") as (launcher, pid):
        assert _state(pid) not in (None, "Z")
        assert Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x0060\x00"  # exec'd
        os.kill(launcher.pid, signal.SIGKILL)
        assert launcher.wait(timeout=30) == -signal.SIGKILL
        assert _gone_within(pid, 5), f"the child {pid} outlived the launcher"


@needs_linux
def test_kill_9_of_the_launchers_group_takes_the_child(tmp_path: Path) -> None:
    with _launched(tmp_path, "sleep", "60") as (launcher, pid):
        # The child keeps a group of its own (scripts kill it by the receipt's pid) ...
        assert os.getpgid(pid) == pid != os.getpgid(launcher.pid)
        os.killpg(launcher.pid, signal.SIGKILL)
        assert launcher.wait(timeout=30) == -signal.SIGKILL
        # ... and still dies with the launcher.
        assert _gone_within(pid, 5), f"the child {pid} outlived the launcher's group"


#: A child that counts the SIGTERMs it gets, says when it is ready for them, and exits 7.
COUNTING = """\
import signal, sys, time
got = []
signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
print("ready", flush=True)
deadline = time.monotonic() + 20
while not got and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.5)  # a second delivery would arrive meanwhile
print("got", len(got), flush=True)
sys.exit(7)
"""


@needs_linux
def test_a_signal_to_the_launchers_group_reaches_the_child_once(tmp_path: Path) -> None:
    with _launched(tmp_path, sys.executable, "-c", COUNTING) as (launcher, pid):
        assert launcher.stdout is not None
        assert launcher.stdout.readline() == b"ready\n"
        os.killpg(launcher.pid, signal.SIGTERM)
        assert launcher.wait(timeout=30) == 7  # the child's status
        assert launcher.stdout.read() == b"got 1\n"
        assert _gone_within(pid, 5)


# --- signals at any moment --------------------------------------------------------------

TRIES = 24
#: Launchers started at once.
BATCH = 8
#: A traceback frame of ``vllm_evidence.cli.main``: the launcher's own code had begun.
#: A frame of the package's own ``main`` (``<frozen site>``'s ``main`` is CPython's start-up).
_IN_MAIN = re.compile(r'^  File "[^"]*vllm_evidence[^"]*", line \d+, in _?main$', re.MULTILINE)


def _before_main(stderr: str) -> bool:
    """CPython's ``KeyboardInterrupt`` from before ``vllm_evidence.cli.main`` ran: in
    CPython's own start-up (``Fatal Python error: init_interp_main``, ``site``, the
    codecs) or the imports of ``vllm_evidence`` and ``vllm_evidence.cli`` (``typing``,
    ``argparse``), where no code of the package can take SIGINT yet.  Anything later is
    the launcher's, and a failure."""
    return "KeyboardInterrupt" in stderr and not _IN_MAIN.search(stderr)


def _start(where: Path, *, blocked: bool) -> subprocess.Popen[bytes]:
    """A launcher of ``sleep 5``, started with SIGINT and SIGTERM blocked or not."""
    where.mkdir()
    argv = [*CLI, "--receipt", str(where / "r"), "--log", str(where / "l"), "--", "sleep", "5"]
    block = {signal.SIGINT, signal.SIGTERM} if blocked else set()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, block)  # the launcher inherits it
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _window(tmp_path: Path) -> float:
    """The launcher's "first second" here and now: one second, or 1.25 times the median
    time :data:`BATCH` launchers started together take to start their child, on a machine
    loaded enough that start-up alone takes longer (most moments must fall in the
    start-up, where the launcher's code runs before it has a child)."""
    procs = [_start(tmp_path / f"calibrate-{n}", blocked=False) for n in range(BATCH)]
    started = time.monotonic()
    times: list[float] = []
    try:
        waiting = set(range(BATCH))
        while waiting and time.monotonic() - started < 60:
            for n in list(waiting):
                assert procs[n].poll() is None, procs[n].communicate()
                if (tmp_path / f"calibrate-{n}" / "r").exists():
                    times.append(time.monotonic() - started)
                    waiting.discard(n)
            time.sleep(0.002)
    finally:
        for proc in procs:
            proc.terminate()
            proc.communicate(timeout=30)
    return max(1.0, 1.25 * statistics.median(times))


def _trials(tmp_path: Path, *, blocked: bool, seed: int) -> list[tuple[str, float, int, str]]:
    """:data:`TRIES` launchers of ``sleep 5``, each sent SIGINT or SIGTERM at a random
    moment of its first second (:func:`_window`; one moment in each 1/TRIES of it, in
    random order), :data:`BATCH` at once; ``(signal, moment, exit status, stderr)``."""
    window = _window(tmp_path)
    rng = random.Random(seed)  # noqa: S311  # moments, not secrets
    moments = [window * (i + rng.random()) / TRIES for i in range(TRIES)]
    rng.shuffle(moments)
    plan = [
        (signal.SIGINT if i % 2 else signal.SIGTERM, moment) for i, moment in enumerate(moments)
    ]
    results: list[tuple[str, float, int, str]] = []
    for first in range(0, TRIES, BATCH):
        batch = plan[first : first + BATCH]
        running: list[tuple[subprocess.Popen[bytes], float]] = []
        try:
            for n in range(len(batch)):
                proc = _start(tmp_path / f"{first + n}", blocked=blocked)
                running.append((proc, time.monotonic()))
            pending = list(range(len(batch)))
            while pending:
                now = time.monotonic()
                for n in list(pending):
                    proc, started = running[n]
                    if now >= started + batch[n][1]:
                        proc.send_signal(batch[n][0])
                        pending.remove(n)
                time.sleep(0.001)
            for n, (proc, _) in enumerate(running):
                _, err = proc.communicate(timeout=30)
                sig, moment = batch[n]
                results.append((sig.name, moment, proc.returncode, err.decode(errors="replace")))
        finally:
            for proc, _ in running:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
    return results


def _seed() -> int:
    return random.SystemRandom().randrange(2**32)


@needs_linux
def test_signals_in_the_first_second_never_give_a_traceback(tmp_path: Path) -> None:
    """Signals at random moments of the first second: exit 128+N (the launcher stopped
    before its child, or the child died of the forwarded signal), or death by the signal
    itself before Python's handlers (SIGTERM's default), and no traceback once the
    launcher's ``main()`` runs.  Before: a traceback in 11 tries of 24."""
    seed = _seed()
    results = _trials(tmp_path, blocked=False, seed=seed)
    handled = 0
    for name, moment, status, stderr in results:
        number = signal.Signals[name].value
        where = f"seed {seed}: {name} at {moment * 1000:.0f} ms -> {status}: {stderr[-800:]!r}"
        if stderr:
            assert _before_main(stderr), where
            continue
        assert status in (128 + number, -number), where
        handled += status == 128 + number
    # A part of the window is past the start-up: there the launcher answers 128+N.
    assert handled >= TRIES // 6, (seed, results)


@needs_linux
def test_signals_blocked_at_the_start_are_taken_and_never_give_a_traceback(
    tmp_path: Path,
) -> None:
    """Started with SIGINT and SIGTERM blocked (a supervisor's thread can hand its mask
    down), the launcher unblocks them and takes every one: always 128+N, never a line on
    stderr, whatever the moment.  Before: they stayed blocked and the launcher ignored
    them (``sleep 5`` ran to its end, exit 0)."""
    seed = _seed()
    for name, moment, status, stderr in _trials(tmp_path, blocked=True, seed=seed):
        where = f"seed {seed}: {name} at {moment * 1000:.0f} ms -> {status}: {stderr[-800:]!r}"
        assert stderr == "", where
        assert status == 128 + signal.Signals[name].value, where


# --- what --log and --receipt may be ----------------------------------------------------


def _launch(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *argv], capture_output=True, timeout=60, check=False)


def test_a_symlinked_log_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target, link, receipt = tmp_path / "precious", tmp_path / "vllm.log", tmp_path / "r.json"
    target.write_bytes(b"somebody else's file\n")
    link.symlink_to(target)
    out = _launch("--receipt", str(receipt), "--log", str(link), "--", "echo", "hi")
    assert out.returncode == 2
    line = _one_line(out.stderr)
    assert line.startswith("vllm-evidence launch: error: --log: ")
    assert "symbolic link" in line
    assert "--follow-symlinks" in line
    assert out.stdout == b""  # nothing ran
    assert target.read_bytes() == b"somebody else's file\n"
    assert not receipt.exists()


def test_a_dangling_symlinked_log_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    link = tmp_path / "vllm.log"
    link.symlink_to(tmp_path / "elsewhere")
    out = _launch("--receipt", str(tmp_path / "r.json"), "--log", str(link), "--", "true")
    assert out.returncode == 2
    assert "symbolic link" in _one_line(out.stderr)
    assert not (tmp_path / "elsewhere").exists()


def test_follow_symlinks_writes_through_the_link(tmp_path: Path) -> None:
    target, link, receipt = tmp_path / "precious", tmp_path / "vllm.log", tmp_path / "r.json"
    target.write_bytes(b"old\n")
    link.symlink_to(target)
    out = _launch(
        "--receipt", str(receipt), "--log", str(link), "--follow-symlinks", "--", "echo", "hi"
    )
    assert out.returncode == 0, out.stderr
    assert target.read_bytes() == b"hi\n"
    assert _receipt(receipt)["log_bytes"] == 3


def _same_file_cases(tmp_path: Path) -> list[tuple[str, str]]:
    (tmp_path / "d").mkdir()
    (tmp_path / "dlink").symlink_to(tmp_path / "d")
    (tmp_path / "d" / "r.json").write_bytes(b"keep me\n")
    os.link(tmp_path / "d" / "r.json", tmp_path / "d" / "hard")
    r = str(tmp_path / "d" / "r.json")
    return [
        (r, r),  # the same path
        (r, str(tmp_path / "d" / "." / "r.json")),  # the same, spelt otherwise
        (r, str(tmp_path / "dlink" / "r.json")),  # through a symlinked directory
        (r, str(tmp_path / "d" / "hard")),  # a hard link: another name, the same inode
        (str(tmp_path / "d" / "new"), str(tmp_path / "dlink" / "new")),  # neither exists
    ]


@pytest.mark.parametrize("case", range(5))
def test_a_receipt_that_is_the_log_is_refused(case: int, tmp_path: Path) -> None:
    receipt, log = _same_file_cases(tmp_path)[case]
    out = _launch("--receipt", receipt, "--log", log, "--", "echo", "hi")
    assert out.returncode == 2
    assert "--receipt and --log name the same file" in _one_line(out.stderr)
    assert out.stdout == b""
    assert (tmp_path / "d" / "r.json").read_bytes() == b"keep me\n"
    assert not (tmp_path / "d" / "new").exists()


def test_a_receipt_beside_the_log_is_not_the_same_file(tmp_path: Path) -> None:
    """The other direction: two names in one directory, one of them a hard link of
    nothing the other is."""
    out = _launch(
        "--receipt", str(tmp_path / "r.json"), "--log", str(tmp_path / "r.log"), "--", "true"
    )
    assert out.returncode == 0, out.stderr


@needs_linux
def test_a_fifo_log_is_refused_at_once(tmp_path: Path) -> None:
    """A FIFO nobody reads: before, opening it blocked the launcher for ever."""
    fifo = tmp_path / "vllm.log"
    os.mkfifo(fifo)
    out = _launch("--receipt", str(tmp_path / "r.json"), "--log", str(fifo), "--", "true")
    assert out.returncode == 2
    assert "is not a regular file" in _one_line(out.stderr)


def test_a_directory_receipt_is_refused(tmp_path: Path) -> None:
    out = _launch("--receipt", str(tmp_path), "--", "true")
    assert out.returncode == 2
    assert "is a directory" in _one_line(out.stderr)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: p.write_text("#!/bin/sh\necho hi\n"), "Permission denied"),  # not +x
        (lambda p: p.mkdir(), "Permission denied"),  # a directory
    ],
)
def test_a_command_that_cannot_be_executed_is_one_line(
    make: Callable[[Path], object], needle: str, tmp_path: Path
) -> None:
    command = tmp_path / "vllm"
    make(command)
    out = _launch("--receipt", str(tmp_path / "r.json"), "--", str(command))
    assert out.returncode == 2
    line = _one_line(out.stderr)
    assert line.startswith(f"vllm-evidence launch: error: cannot start '{command}'")
    assert needle in line
    assert not (tmp_path / "r.json").exists()


def test_a_command_line_of_any_bytes_gives_a_receipt_its_reader_reads(tmp_path: Path) -> None:
    """Arguments that are not UTF-8 (Python keeps their bytes as lone surrogates) are
    written as ``\\xNN``: before, the receipt held the surrogates, and its reader refused
    it ("not valid Unicode")."""
    receipt = tmp_path / "r.json"
    command = [b"true", b"caf\xff", b"\xed\xa0\x80", "naïve".encode()]
    out = subprocess.run(
        [*map(os.fsencode, CLI), b"--receipt", os.fsencode(receipt), b"--", *command],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    read = read_launch_receipt(receipt)
    assert read.argv == ("true", "caf\\xff", "\\xed\\xa0\\x80", "naïve")
