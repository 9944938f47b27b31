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
receipt** (``vllm-evidence.launch-receipt/1``; ``vllm-evidence schema launch-receipt``)
up to date: the child's pid, its start time computed exactly as the process collector
computes and prints it, the command line (secrets shown as ``***``), the host name, the
log's path, and how many bytes of the log were written with the SHA-256 of exactly
those bytes.  The receipt is rewritten (atomically) as the log grows, and a last time
when the child ends.

``vllm-evidence probe URL --startup-log LOG --receipt FILE`` then reads the receipt,
the log up to the receipt's length, and the front door: the log-join decision is
established only when the front door is *seen* to carry the receipt's start time.
Where ``/proc`` cannot be read the launcher says so and the receipt carries no start
time, and no log can be joined.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

from vllm_evidence._converter import converter
from vllm_evidence.adapters.receipt import RECEIPT_SCHEMA, ReceiptRecord
from vllm_evidence.capture.process import ChildStarted, LogProgress, run_child, scrub_argv
from vllm_evidence.errors import InputError

__all__ = ["RECEIPT_SCHEMA", "launch", "receipt_document"]


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


def launch(
    command: Sequence[str],
    *,
    receipt: str | os.PathLike[str],
    log: str | os.PathLike[str] | None = None,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    notices: IO[str] | None = None,
    proc: str = "/proc",
) -> int:
    """Run ``command`` as a witnessed launch (see the module); return its exit status.

    ``log`` is truncated first: the receipt digests the log from its first byte.
    Raises :class:`~vllm_evidence.errors.InputError` (before anything runs) for an empty
    command, a receipt or log path in no directory, or a command that cannot be started.
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
    say = notices if notices is not None else sys.stderr
    host = socket.gethostname()
    argv = scrub_argv(command)
    started: list[ChildStarted] = []

    def record(progress: LogProgress) -> ReceiptRecord:
        child = started[0]
        return ReceiptRecord(
            schema=RECEIPT_SCHEMA,
            pid=child.pid,
            process_start_time_seconds=child.start_time,
            start_time_unavailable=child.start_time_unavailable,
            argv=argv,
            host=host,
            log_path=None if log_path is None else str(log_path),
            log_bytes=progress.size,
            log_sha256=progress.sha256,
        )

    failed: list[str] = []

    def write(progress: LogProgress) -> None:
        # The child keeps serving whatever happens to the receipt: say so, once.
        try:
            _write_atomically(receipt_path, record(progress))
        except OSError as exc:
            if not failed:
                failed.append(str(exc))
                say.write(
                    f"vllm-evidence launch: cannot write the receipt {receipt_path} "
                    f"({exc.strerror or type(exc).__name__}); the child keeps running\n"
                )
                say.flush()

    def on_start(child: ChildStarted, progress: LogProgress) -> None:
        started.append(child)
        if child.start_time is None:
            say.write(
                f"vllm-evidence launch: {child.start_time_unavailable}: the receipt carries "
                "no start time, so no log can be joined to this server\n"
            )
            say.flush()
        write(progress)

    def on_progress(progress: LogProgress) -> None:
        write(progress)

    with contextlib.ExitStack() as stack:
        handle = None
        if log_path is not None:
            try:
                handle = stack.enter_context(log_path.open("wb"))
            except OSError as exc:
                msg = f"--log: cannot write {log_path} ({exc.strerror or type(exc).__name__})"
                raise InputError(msg) from None
        try:
            return run_child(
                command,
                log=handle,
                on_start=on_start,
                on_progress=on_progress,
                stdout=stdout,
                stderr=stderr,
                proc=proc,
            )
        except OSError as exc:
            if started:
                raise
            msg = f"cannot start {command[0]!r}: {exc.strerror or type(exc).__name__}"
            raise InputError(msg) from None
