"""A launch receipt read back: what ``vllm-evidence launch`` wrote about the child it ran.

The receipt (schema ``vllm-evidence.launch-receipt/1``, ``vllm-evidence schema
launch-receipt``) names the launched process — its pid and its start time, computed the
way the ``/metrics`` process collector computes ``process_start_time_seconds`` — and the
log it teed: the path, how many bytes had been written when the receipt was last
written, and the SHA-256 of exactly those bytes.

A receipt is a file a caller hands in: reading it establishes nothing.  Its start time
counts only when the log-join decision *observes* the same value on the front door's
``/metrics``; everything here is a typed reading of the file, nothing more.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import final

import attrs
import cattrs

from vllm_evidence._converter import converter
from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.errors import InputError

__all__ = [
    "RECEIPT_SCHEMA",
    "LaunchReceipt",
    "ReceiptRecord",
    "parse_launch_receipt",
    "read_launch_receipt",
]

RECEIPT_SCHEMA = "vllm-evidence.launch-receipt/1"

#: The largest receipt read (a receipt is a few hundred bytes plus the argv).
RECEIPT_LIMIT = 1024 * 1024

_SHA256 = re.compile(r"[0-9a-f]{64}")


@attrs.frozen(kw_only=True)
class ReceiptRecord:
    """The receipt file's fields, as JSON carries them (written and read by the package's
    converter; the launcher writes it, :func:`parse_launch_receipt` reads it)."""

    schema: str
    pid: int
    process_start_time_seconds: str | None
    """As ``prometheus_client`` prints the gauge (``1.79601501985e+09``); ``None`` when the
    launcher could not read ``/proc``."""
    start_time_unavailable: str | None
    """Why there is no start time (``None`` when there is one)."""
    argv: list[str]
    """The command line, with the value of any key, token, secret or password option
    replaced by ``***``."""
    host: str
    log_path: str | None
    log_bytes: int
    """How many bytes of the log had been written when the receipt was written."""
    log_sha256: str
    """SHA-256 of the log's first :attr:`log_bytes` bytes."""


@final
@attrs.frozen(init=False, repr=False)
class LaunchReceipt(Sealed):
    """A launch receipt as read: a caller-supplied claim about one launch, typed."""

    __public_constructor__ = "vllm_evidence.adapters.receipt.read_launch_receipt()"

    pid: int
    process_start_seconds: Decimal | None
    """The child's start time, exact as written; ``None`` when the launcher had no
    ``/proc`` (then nothing can be joined with it)."""
    start_time_unavailable: str | None
    argv: tuple[str, ...]
    host: str
    log_path: str | None
    log_bytes: int
    log_sha256: str
    raw: bytes
    """The receipt file's bytes: its raw evidence."""

    def __rederive__(self) -> Reduction[LaunchReceipt]:
        """Pickled as the file's bytes; unpickling parses them again."""
        return parse_launch_receipt, (self.raw,)

    def _repr_summary(self) -> str:
        start = (
            "no start time"
            if self.process_start_seconds is None
            else (f"started {self.process_start_seconds}")
        )
        return f"pid {self.pid}, {start}, log {self.log_bytes:,} bytes"


_mint_receipt = minter(LaunchReceipt, LaunchReceipt.__attrs_init__)


def _problem(where: str, what: str) -> InputError:
    return InputError(f"launch receipt {where}: {what}")


def parse_launch_receipt(data: bytes, where: str = "<bytes>") -> LaunchReceipt:
    """Read a receipt from its bytes; a malformed one is an :class:`InputError` (one line)."""
    # Imported here: an assessment without a receipt never loads the launcher.
    from vllm_evidence.capture.process import scrub_argv

    if len(data) > RECEIPT_LIMIT:
        raise _problem(where, f"larger than {RECEIPT_LIMIT} bytes; a receipt is small")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _problem(where, f"not JSON ({type(exc).__name__})") from None
    if not isinstance(document, dict):
        raise _problem(where, "not a JSON object")
    if document.get("schema") != RECEIPT_SCHEMA:
        raise _problem(where, f"schema must be {RECEIPT_SCHEMA!r}")
    try:
        record: ReceiptRecord = converter.structure(document, ReceiptRecord)
    except cattrs.BaseValidationError as exc:
        problem = cattrs.transform_error(exc, path="receipt")[0]
        message, _, field = problem.rpartition(" @ ")
        what = f"field {field.removeprefix('receipt.')!r} is missing or malformed ({message})"
        raise _problem(where, what) from None
    except (TypeError, ValueError) as exc:
        raise _problem(where, f"malformed ({exc})") from None
    extra = sorted(set(document) - {f.name for f in attrs.fields(ReceiptRecord)})
    if extra:
        raise _problem(where, f"unknown field(s) {', '.join(map(repr, extra))}")
    if record.pid <= 0:
        raise _problem(where, "pid must be positive")
    if record.log_bytes < 0:
        raise _problem(where, "log_bytes must not be negative")
    if not _SHA256.fullmatch(record.log_sha256):
        raise _problem(where, "log_sha256 must be 64 lower-case hex digits")
    start: Decimal | None = None
    if record.process_start_time_seconds is not None:
        text = record.process_start_time_seconds
        try:
            float(text)  # the exposition's number grammar
            start = Decimal(text)
        except (ValueError, InvalidOperation):
            raise _problem(where, f"process_start_time_seconds {text!r} is not a number") from None
        if not start.is_finite() or start <= 0:
            raise _problem(where, "process_start_time_seconds must be a positive number")
    elif record.start_time_unavailable is None:
        raise _problem(where, "no process_start_time_seconds and no start_time_unavailable")
    return _mint_receipt(
        pid=record.pid,
        process_start_seconds=start,
        start_time_unavailable=record.start_time_unavailable,
        argv=tuple(scrub_argv(record.argv)),  # a hand-written receipt may carry a key
        host=record.host,
        log_path=record.log_path,
        log_bytes=record.log_bytes,
        log_sha256=record.log_sha256,
        raw=bytes(data),
    )


def read_launch_receipt(path: str | Path) -> LaunchReceipt:
    """Read the receipt at ``path``; an unreadable or malformed one is an
    :class:`InputError` with a one-line message."""
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(RECEIPT_LIMIT + 1)
    except OSError as exc:
        raise _problem(
            str(path), f"cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    return parse_launch_receipt(data, str(path))
