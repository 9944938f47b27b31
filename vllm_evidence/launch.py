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
receipt** (``vllm-evidence.launch-receipt/2``; ``vllm-evidence schema launch-receipt``)
up to date: the child's pid, its start time computed exactly as the process collector
computes and prints it, the command line (secrets shown as ``***``), the host name, the
log's path, how many bytes of the log were written with the SHA-256 of exactly those
bytes, and ``log_write_failure``: ``null``, or where and why the log could not be
written any further (``{"at_byte": N, "error": "No space left on device"}``; then
``log_bytes`` is N and the log is incomplete from byte N).  The receipt is rewritten
(atomically) as the log grows, and a last time when the child ends.

The launcher never hurts the child (:mod:`vllm_evidence.capture.process`): its output is
drained to the terminal whatever happens to the log (a failed log is said once, on
stderr, and recorded in the receipt), it dies with the launcher, and no signal at any
moment gives a traceback.  The log is opened without following a symbolic link (unless
``follow_symlinks``), must be a regular file, and must not be the receipt.

``vllm-evidence probe URL --startup-log LOG --receipt FILE`` then reads the receipt,
the log up to the receipt's length, and the front door: the log-join decision is
established only when the front door is *seen* to carry the receipt's start time.
Where ``/proc`` cannot be read the launcher says so and the receipt carries no start
time, and no log can be joined.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

from vllm_evidence._converter import converter
from vllm_evidence._scrub import scrub
from vllm_evidence.adapters.receipt import RECEIPT_SCHEMA, LogWriteFailureRecord, ReceiptRecord
from vllm_evidence.capture.process import (
    ChildStarted,
    LogProgress,
    SignalRelay,
    run_child,
    scrub_argv,
)
from vllm_evidence.errors import InputError

__all__ = ["RECEIPT_SCHEMA", "launch", "receipt_document", "receipt_record"]


def receipt_document(record: ReceiptRecord) -> dict[str, Any]:
    """The receipt's JSON document, through the package converter."""
    document: dict[str, Any] = converter.unstructure(record)
    return document


def _write_atomically(path: Path, record: ReceiptRecord) -> None:
    text = json.dumps(receipt_document(record), indent=2) + "\n"
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


def _check_log(fd: int, path: Path, receipt: Path) -> None:
    """The open log is a regular file, and not the receipt (by device and inode)."""
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode):
        msg = f"--log: {path} is not a regular file"
        raise InputError(msg)
    try:
        other = receipt.stat()
    except OSError:
        return
    if (other.st_dev, other.st_ino) == (opened.st_dev, opened.st_ino):
        msg = f"--receipt and --log name the same file ({receipt}): the log would be lost"
        raise InputError(msg)


def _open_log(path: Path, receipt: Path, *, follow_symlinks: bool) -> int:
    """The log, open for writing and emptied: a regular file, reached without following
    a symbolic link (unless ``follow_symlinks``), that is not the receipt.  Checked on
    the open file before it is truncated; a FIFO is never waited on (``O_NONBLOCK``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK
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
    receipt: str | os.PathLike[str],
    log: str | os.PathLike[str] | None = None,
    follow_symlinks: bool = False,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    notices: IO[str] | None = None,
    proc: str = "/proc",
    signals: SignalRelay | None = None,
) -> int:
    """Run ``command`` as a witnessed launch (see the module); return its exit status.

    ``log`` is truncated first: the receipt digests the log from its first byte.
    ``signals`` is the caller's installed relay (see :func:`run_child`).
    Raises :class:`~vllm_evidence.errors.InputError` (before anything runs) for an empty
    command, a receipt or log path in no directory, a receipt that is a directory, a log
    that is a symbolic link (without ``follow_symlinks``), not a regular file, or the
    receipt itself, or a command that cannot be started.
    """
    if not command:
        msg = "no command to launch (give it after --)"
        raise InputError(msg)
    receipt_path = Path(receipt)
    log_path = None if log is None else Path(log)
    for name, path in (("--receipt", receipt_path), ("--log", log_path)):
        if path is not None and not path.parent.is_dir():
            msg = f"{name}: {path.parent} is not a directory"
            raise InputError(msg)
    if receipt_path.is_dir():
        msg = f"--receipt: {receipt_path} is a directory"
        raise InputError(msg)
    if log_path is not None and _same_file(receipt_path, log_path):
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
                f"cannot write the log {log_path} past byte {progress.failure.at_byte} "
                f"({progress.failure.error}); the child keeps running, its output reaches "
                "this terminal only, and the receipt records the log as incomplete from there"
            )
        try:
            _write_atomically(
                receipt_path, receipt_record(started[0], argv, host, shown_log, progress)
            )
        except OSError as exc:
            if not failed:
                failed.append(str(exc))
                notice(
                    f"cannot write the receipt {receipt_path} "
                    f"({exc.strerror or type(exc).__name__}); the child keeps running"
                )

    def on_start(child: ChildStarted, progress: LogProgress) -> None:
        started.append(child)
        if child.start_time is None:
            notice(
                f"{child.start_time_unavailable}: the receipt carries no start time, "
                "so no log can be joined to this server"
            )
        write(progress)

    with contextlib.ExitStack() as stack:
        fd = None
        if log_path is not None:
            fd = _open_log(log_path, receipt_path, follow_symlinks=follow_symlinks)
            stack.callback(os.close, fd)
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
