"""The launch witness: run vLLM as a child process, tee its log, write a launch receipt.

A startup log handed in beside a URL speaks for its launch, not for a server: two
identical replicas print the same version and configuration.  What ties a log to the
process behind a front door is a fact both sides show and a caller cannot choose: the
process's start time, which vLLM's ``/metrics`` serves as ``process_start_time_seconds``
(the ``prometheus_client`` process collector of the API-server process).

:func:`launch` (``vllm-evidence launch --receipt FILE [--log FILE] -- vllm serve …``)
starts the command as a child, copies its stdout and stderr unchanged to the terminal
(so ``kubectl logs`` and journald keep working) and to the log file, forwards SIGINT,
SIGTERM, SIGHUP and SIGQUIT, exits with the child's status, and keeps a **launch
receipt** (``vllm-evidence.launch-receipt/3``; ``vllm-evidence schema launch-receipt``)
up to date: the child's pid, its start time computed exactly as the process collector
computes and prints it, the command line (secrets shown as ``***``), the host name, the
log's path, how many bytes of the log were written with the SHA-256 of exactly those
bytes, ``log_write_failure``: ``null``, or where and why the log could not be
written any further (``{"at_byte": N, "error": "No space left on device"}``; then
``log_bytes`` is N and the log is incomplete from byte N), and ``signature``: the
launcher's Ed25519 signature of the rest, under ``signing_key``
(``--receipt-signing-key KEY.pem`` or ``VLLM_EVIDENCE_RECEIPT_SIGNING_KEY``;
:mod:`vllm_evidence._capture.signing`), or ``null`` without one.  The receipt is
rewritten (atomically, and signed again) as the log grows, and a last time when the
child ends.

**Why signed.**  A receipt is a file that crosses to whoever probes the server, and its
start time is a number anyone can copy from ``/metrics``: an unsigned receipt, or one
whose signature does not verify under the launcher's public key, joins no log.  The
verifier holds only the public key, which cannot sign, so an orchestrator that checks
the receipts of many pods cannot write one for any of them.  The key is never printed
and never written into the receipt (only its id).

The launcher never hurts the child (:mod:`vllm_evidence._capture.process`): its output is
drained to the terminal whatever happens to the log (a failed log is said once, on
stderr, and recorded in the receipt), it dies with the launcher, and no signal at any
moment gives a traceback.  The log is opened without following a symbolic link (unless
``follow_symlinks``), must be a regular file, and must not be the receipt.

``vllm-evidence probe URL --startup-log LOG --receipt FILE --receipt-public-key PUB``
then reads the receipt (checking its signature), the log up to the receipt's length, and
the front door: the log-join decision is established only when the receipt verified and
the front door is *seen* to carry its start time.
Where ``/proc`` cannot be read the launcher says so and the receipt carries no start
time, and no log can be joined.

**An observer** (:class:`LaunchObserver`; the gate, :mod:`vllm_evidence._gate.launcher`,
is one) is told what the launcher itself observes: the child as it started, and the log
as it grows, with a :class:`LogReader` over the launcher's own descriptor of the log, so
that what the receipt says is read in the same process that saw it — no receipt file
crosses.  With an observer the receipt file is optional, and without ``log`` the log is
an anonymous temporary file (it exists only while the launcher runs).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import socket
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

from vllm_evidence._adapters.receipt import (
    RECEIPT_SCHEMA,
    LogWriteFailureRecord,
    ReceiptRecord,
    signed_receipt_document,
)
from vllm_evidence._capture.process import (
    ChildStarted,
    LogProgress,
    SignalRelay,
    run_child,
    scrub_argv,
)
from vllm_evidence._capture.signing import SigningKey
from vllm_evidence._scrub import scrub
from vllm_evidence.errors import InputError

__all__ = [
    "RECEIPT_SCHEMA",
    "LaunchObserver",
    "LogReader",
    "launch",
    "receipt_document",
    "receipt_record",
]


class LogReader:
    """The launcher's own log, read back through the launcher's own descriptor.

    Reads are positioned (``os.pread``): the writer's offset is never moved, and the file
    read is the one written, whatever happens to its path (renamed, replaced, unlinked).
    """

    def __init__(self, fd: int, name: str | None) -> None:
        self._fd = fd
        self.name = name
        """The log's path as given (``None``: an anonymous temporary file)."""

    def prefix(self, size: int) -> BinaryIO:
        """A binary stream of the log's first ``size`` bytes (fewer if it is shorter)."""
        if size < 0:
            msg = f"size must not be negative, got {size}"
            raise ValueError(msg)
        return io.BufferedReader(_PositionedReads(self._fd, size))


class _PositionedReads(io.RawIOBase):
    """``os.pread`` from offset 0 up to ``limit`` bytes: a raw stream over a shared fd."""

    def __init__(self, fd: int, limit: int) -> None:
        super().__init__()
        self._fd = fd
        self._limit = limit
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._limit - self._at)
        if want <= 0:
            return 0
        data = os.pread(self._fd, want, self._at)
        view[: len(data)] = data
        self._at += len(data)
        return len(data)


class LaunchObserver(Protocol):
    """What is told, on the launcher's own thread, what the launcher observes."""

    def started(self, child: ChildStarted, progress: LogProgress, log: LogReader) -> None:
        """The child runs: its pid and start time, the log so far, and the log's reader."""

    def progressed(self, progress: LogProgress) -> None:
        """The log grew or failed (at most every half second), and once at the end."""


def receipt_document(
    record: ReceiptRecord, signing_key: SigningKey | None = None
) -> dict[str, Any]:
    """The receipt's JSON document, through the package converter: signed with
    ``signing_key`` (Ed25519 over the canonical rest; ``None``: ``"signature": null``)."""
    return signed_receipt_document(record, signing_key)


def _write_atomically(
    path: Path, record: ReceiptRecord, signing_key: SigningKey | None = None
) -> None:
    text = json.dumps(receipt_document(record, signing_key), indent=2) + "\n"
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        Path(staging).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(staging).unlink()
        raise


def receipt_record(
    child: ChildStarted, argv: Sequence[str], host: str, log_path: str | None, progress: LogProgress
) -> ReceiptRecord:
    """The receipt of ``child`` with the log as ``progress`` has it (``argv`` already
    scrubbed); every text valid Unicode (see :func:`_unicode`)."""
    failure = progress.failure
    return ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=child.pid,
        process_start_time_seconds=child.start_time,
        start_time_unavailable=None
        if child.start_time_unavailable is None
        else _unicode(child.start_time_unavailable),
        argv=[_unicode(arg) for arg in argv],
        host=_unicode(host),
        log_path=None if log_path is None else _unicode(log_path),
        log_bytes=progress.size,
        log_sha256=progress.sha256,
        log_write_failure=None
        if failure is None
        else LogWriteFailureRecord(at_byte=failure.at_byte, error=_unicode(failure.error)),
    )


def _unicode(text: str) -> str:
    """``text`` as valid Unicode: a command line's undecodable bytes (kept by Python as
    lone surrogates) as ``\\xNN``, so that the receipt is UTF-8 its reader accepts."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte decoded to
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _same_file(receipt: Path, log: Path) -> bool:
    """Whether the two paths name one file: the same path once resolved, or (both
    existing) the same device and inode (a hard link, a bind mount)."""
    if os.path.realpath(receipt) == os.path.realpath(log):
        return True
    try:
        one, other = receipt.stat(), log.stat()
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def _check_log(fd: int, path: Path, receipt: Path | None) -> None:
    """The open log is a regular file, and not the receipt (by device and inode)."""
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode):
        msg = f"--log: {path} is not a regular file"
        raise InputError(msg)
    if receipt is None:
        return
    try:
        other = receipt.stat()
    except OSError:
        return
    if (other.st_dev, other.st_ino) == (opened.st_dev, opened.st_ino):
        msg = f"--receipt and --log name the same file ({receipt}): the log would be lost"
        raise InputError(msg)


def _open_log(
    path: Path, receipt: Path | None, *, follow_symlinks: bool, readable: bool = False
) -> int:
    """The log, open for writing (and reading, when ``readable``) and emptied: a regular
    file, reached without following a symbolic link (unless ``follow_symlinks``), that is
    not the receipt.  Checked on the open file before it is truncated; a FIFO is never
    waited on (``O_NONBLOCK``)."""
    access = os.O_RDWR if readable else os.O_WRONLY
    flags = access | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        with contextlib.suppress(OSError):
            mode = (path.stat() if follow_symlinks else path.lstat()).st_mode
            if stat.S_ISLNK(mode) and exc.errno == errno.ELOOP:
                msg = (
                    f"--log: {path} is a symbolic link, which is not followed "
                    "(give --follow-symlinks to write to its target)"
                )
                raise InputError(msg) from None
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                msg = f"--log: {path} is not a regular file"
                raise InputError(msg) from None
        msg = f"--log: cannot write {path} ({exc.strerror or type(exc).__name__})"
        raise InputError(msg) from None
    try:
        _check_log(fd, path, receipt)
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
    except InputError:
        os.close(fd)
        raise
    except OSError as exc:
        os.close(fd)
        msg = f"--log: cannot write {path} ({exc.strerror or type(exc).__name__})"
        raise InputError(msg) from None
    return fd


def launch(
    command: Sequence[str],
    *,
    receipt: str | os.PathLike[str] | None = None,
    log: str | os.PathLike[str] | None = None,
    follow_symlinks: bool = False,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    notices: IO[str] | None = None,
    proc: str = "/proc",
    signals: SignalRelay | None = None,
    observer: LaunchObserver | None = None,
    signing_key: SigningKey | None = None,
) -> int:
    """Run ``command`` as a witnessed launch (see the module); return its exit status.

    ``signing_key`` signs every receipt written (:class:`~vllm_evidence._capture.signing.
    SigningKey`, :func:`~vllm_evidence._capture.signing.read_signing_key`); without one
    the receipt is unsigned and joins no log (the gate's in-process join needs none).

    ``log`` is truncated first: the receipt digests the log from its first byte.
    ``signals`` is the caller's installed relay (see :func:`run_child`).  ``observer``
    is told what the launcher observes (:class:`LaunchObserver`); with one, ``receipt``
    may be ``None`` (no file is written) and, without ``log``, the log is an anonymous
    temporary file the observer reads through its :class:`LogReader`.
    Raises :class:`~vllm_evidence.errors.InputError` (before anything runs) for an empty
    command, no receipt and no observer, a receipt or log path in no directory, a receipt
    that is a directory, a log that is a symbolic link (without ``follow_symlinks``), not
    a regular file, or the receipt itself, or a command that cannot be started.
    """
    if not command:
        msg = "no command to launch (give it after --)"
        raise InputError(msg)
    if receipt is None and observer is None:
        msg = "give --receipt FILE (or --serve HOST:PORT): a launch witnesses its log"
        raise InputError(msg)
    given: object = signing_key  # callers outside mypy can pass anything
    if given is not None and not isinstance(given, SigningKey):
        msg = f"signing_key must be a SigningKey (read_signing_key), not {type(given).__name__}"
        raise InputError(msg)
    receipt_path = None if receipt is None else Path(receipt)
    log_path = None if log is None else Path(log)
    for name, path in (("--receipt", receipt_path), ("--log", log_path)):
        if path is not None and not path.parent.is_dir():
            msg = f"{name}: {path.parent} is not a directory"
            raise InputError(msg)
    if receipt_path is not None and receipt_path.is_dir():
        msg = f"--receipt: {receipt_path} is a directory"
        raise InputError(msg)
    if receipt_path is not None and log_path is not None and _same_file(receipt_path, log_path):
        msg = f"--receipt and --log name the same file ({receipt_path}): the log would be lost"
        raise InputError(msg)
    say = notices if notices is not None else sys.stderr
    host = socket.gethostname()
    argv = scrub_argv(command)
    shown_log = None if log_path is None else str(log_path)
    started: list[ChildStarted] = []

    def notice(text: str) -> None:
        say.write(f"vllm-evidence launch: {scrub(text)}\n")
        say.flush()

    failed: list[str] = []
    log_failed: list[str] = []

    def write(progress: LogProgress) -> None:
        # The child keeps serving whatever happens to the log or the receipt: say so, once.
        if progress.failure is not None and not log_failed:
            log_failed.append(progress.failure.error)
            notice(
                f"cannot write the log {log_path or '(temporary)'} past byte "
                f"{progress.failure.at_byte} ({progress.failure.error}); the child keeps "
                "running, its output reaches this terminal only, and the receipt records "
                "the log as incomplete from there"
            )
        if observer is not None:
            observer.progressed(progress)
        if receipt_path is None:
            return
        try:
            _write_atomically(
                receipt_path,
                receipt_record(started[0], argv, host, shown_log, progress),
                signing_key,
            )
        except OSError as exc:
            if not failed:
                failed.append(str(exc))
                notice(
                    f"cannot write the receipt {receipt_path} "
                    f"({exc.strerror or type(exc).__name__}); the child keeps running"
                )

    with contextlib.ExitStack() as stack:
        fd = None
        if log_path is not None:
            fd = _open_log(
                log_path,
                receipt_path,
                follow_symlinks=follow_symlinks,
                readable=observer is not None,
            )
            stack.callback(os.close, fd)
        elif observer is not None:
            fd = _anonymous_log()
            stack.callback(os.close, fd)
        reader = None if fd is None else LogReader(fd, shown_log)

        def on_start(child: ChildStarted, progress: LogProgress) -> None:
            started.append(child)
            if child.start_time is None:
                notice(
                    f"{child.start_time_unavailable}: the receipt carries no start time, "
                    "so no log can be joined to this server"
                )
            if observer is not None and reader is not None:
                observer.started(child, progress, reader)
            write(progress)

        try:
            return run_child(
                command,
                log_fd=fd,
                on_start=on_start,
                on_progress=write,
                stdout=stdout,
                stderr=stderr,
                proc=proc,
                signals=signals,
            )
        except OSError as exc:
            if started:
                raise
            msg = f"cannot start {argv[0]!r}: {exc.strerror or type(exc).__name__}"
            raise InputError(msg) from None


def _anonymous_log() -> int:
    """A log file with no name (it lives while the launcher holds it), readable and
    writable; an :class:`InputError` when the temporary directory cannot hold one."""
    try:
        handle = tempfile.TemporaryFile(prefix="vllm-evidence-launch-", suffix=".log")  # noqa: SIM115  # its fd outlives this function
    except OSError as exc:
        msg = f"cannot make a temporary log ({exc.strerror or type(exc).__name__}); give --log FILE"
        raise InputError(msg) from None
    fd = os.dup(handle.fileno())
    handle.close()
    return fd
