"""A launch receipt read back: what ``vllm-evidence launch`` wrote about the child it ran.

The receipt (schema ``vllm-evidence.launch-receipt/2``, ``vllm-evidence schema
launch-receipt``; ``/1`` is read too) names the launched process — its pid and its start
time, computed the way the ``/metrics`` process collector computes
``process_start_time_seconds`` — and the log it teed: the path, how many bytes had been
written when the receipt was last written, the SHA-256 of exactly those bytes, and (from
``/2``) whether the launcher failed to write the log past some byte
(``log_write_failure``; a ``/1`` receipt has no such field, and is read as having none).

A receipt is a file a caller hands in: reading it establishes nothing.  Its start time
counts only when the log-join decision *observes* the same value on the front door's
``/metrics``; everything here is a typed reading of the file, nothing more.

The file is hostile like every input: it is read with bounds (a regular file of at most
:data:`RECEIPT_LIMIT` bytes, never a FIFO or a device, which are refused at once), as
strict JSON (nesting of at most :data:`RECEIPT_MAX_DEPTH`, integer literals of at most
:data:`~vllm_evidence._bounds.MAX_INT_DIGITS` digits, no key twice, no fraction or
exponent outside the start time's string), and every field is read with its exact type:
a string where a string is written, an integer (never ``true``, ``1.0`` or ``"1"``)
where an integer is.  The start time is kept exact (a :class:`~decimal.Decimal` of the
text) and bounded before it becomes one: at most :data:`_START_CHARS` characters of the
exposition's number grammar, a time between the epoch and :data:`MAX_START_SECONDS`, so
``1e999999999`` is a one-line refusal read in time and memory linear in its 11 bytes.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn, final

import attrs

from vllm_evidence._bounds import MAX_INT_DIGITS
from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.capture._files import read_named_file
from vllm_evidence.capture._strict_json import StrictJsonError, strict_loads
from vllm_evidence.errors import InputError

__all__ = [
    "RECEIPT_SCHEMA",
    "RECEIPT_SCHEMAS",
    "LaunchReceipt",
    "LogWriteFailure",
    "LogWriteFailureRecord",
    "ReceiptRecord",
    "parse_launch_receipt",
    "read_launch_receipt",
]

#: The schema the launcher writes.
RECEIPT_SCHEMA = "vllm-evidence.launch-receipt/2"
#: The schemas read: ``/1`` (no ``log_write_failure``: read as none) and ``/2``.
RECEIPT_SCHEMAS = ("vllm-evidence.launch-receipt/1", RECEIPT_SCHEMA)

#: The largest receipt read (a receipt is a few hundred bytes plus the argv).
RECEIPT_LIMIT = 1024 * 1024
#: The deepest nesting a receipt has: the object, and its ``argv`` or
#: ``log_write_failure``.
RECEIPT_MAX_DEPTH = 2
#: The largest pid (``pid_t`` is a signed 32-bit integer).
MAX_PID = 2**31 - 1
#: The largest byte count read (``log_bytes``, ``at_byte``): 18 digits.
MAX_LOG_BYTES = 10**MAX_INT_DIGITS - 1
#: The latest start time read, in seconds since the epoch (the year 5138): a process
#: start time past it is no time a launcher read.
MAX_START_SECONDS = Decimal(10**11)
#: The longest start-time text read (``repr`` of any float is at most 24 characters).
_START_CHARS = 32
#: The most decimal places of a start time (``/proc`` counts clock ticks).
_START_PLACES = 24
#: The longest ``log_write_failure.error`` text (an ``OSError``'s line is short).
MAX_ERROR_CHARS = 1024

_SHA256 = re.compile(r"[0-9a-f]{64}")
#: The exposition's number grammar, as ``prometheus_client`` prints a float
#: (``1.79601501985e+09``, ``1796015019.85``): no ``inf``, no ``nan``, no ``_``, and an
#: exponent of at most three digits.
_START = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")


@attrs.frozen(kw_only=True)
class LogWriteFailureRecord:
    """``log_write_failure`` as JSON carries it: the launcher could not write the log past
    byte :attr:`at_byte`, for the reason :attr:`error`."""

    at_byte: int
    error: str


@attrs.frozen(kw_only=True)
class ReceiptRecord:
    """The receipt file's fields, as JSON carries them (written by the package's
    converter: the launcher writes it; :func:`parse_launch_receipt` reads it, strictly)."""

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
    log_write_failure: LogWriteFailureRecord | None = None
    """Where and why the launcher could not write the log any further (``/2``); ``None``
    while every byte the child printed reached the log."""


@final
@attrs.frozen(init=False, repr=False)
class LogWriteFailure(Sealed):
    """The launcher could not write the log past :attr:`at_byte`: the log the receipt
    digests is not the whole of what the child printed."""

    __public_constructor__ = "vllm_evidence.adapters.receipt.read_launch_receipt()"

    at_byte: int
    error: str

    def _repr_summary(self) -> str:
        return f"at byte {self.at_byte:,}: {self.error[:60]}"


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
    log_write_failure: LogWriteFailure | None
    """Where the launcher stopped being able to write the log (``None``: it never did,
    or a ``/1`` receipt, which cannot say)."""
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
        failed = (
            ""
            if self.log_write_failure is None
            else f", log not written past byte {self.log_write_failure.at_byte:,}"
        )
        return f"pid {self.pid}, {start}, log {self.log_bytes:,} bytes{failed}"


_mint_receipt = minter(LaunchReceipt, LaunchReceipt.__attrs_init__)
_mint_failure = minter(LogWriteFailure, LogWriteFailure.__attrs_init__)

_FIELDS = frozenset(f.name for f in attrs.fields(ReceiptRecord))
_V1_FIELDS = _FIELDS - {"log_write_failure"}
_FAILURE_FIELDS = frozenset(f.name for f in attrs.fields(LogWriteFailureRecord))


def _problem(where: str, what: str) -> InputError:
    return InputError(f"launch receipt {where}: {what}")


class _Reader:
    """Typed field reads of one decoded receipt, each refusal one line naming the field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, what: str) -> NoReturn:
        raise _problem(self.where, what)

    def text(self, value: object, name: str) -> str:
        if not isinstance(value, str):
            self.fail(f"field {name!r} must be a string, not {_kind(value)}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.fail(f"field {name!r} is not valid Unicode (an unpaired surrogate escape)")
        return value

    def optional_text(self, value: object, name: str) -> str | None:
        return None if value is None else self.text(value, name)

    def integer(self, value: object, name: str, low: int, high: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(f"field {name!r} must be an integer, not {_kind(value)}")
        if not low <= value <= high:
            least = "positive" if low == 1 else f"at least {low}"
            shown = value if len(str(value)) <= 40 else "a larger number"
            self.fail(f"{name} must be {least} and at most {high:,}, not {shown}")
        return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _start_seconds(text: str, read: _Reader) -> Decimal:
    """The start time's text as an exact decimal, bounded before it is one."""
    shown = text if len(text) <= 40 else f"{text[:40]}… ({len(text):,} characters)"
    if len(text) > _START_CHARS or not _START.fullmatch(text):
        read.fail(
            f"process_start_time_seconds {shown!r} is not a number as /metrics prints one"
            f" (at most {_START_CHARS} characters, exponent at most 3 digits)"
        )
    start = Decimal(text)  # the grammar and length above bound its digits and exponent
    exponent = start.as_tuple().exponent
    if (
        not 0 < start < MAX_START_SECONDS
        or not isinstance(exponent, int)
        or exponent < -_START_PLACES
    ):
        read.fail(
            f"process_start_time_seconds {shown!r} must be a positive number of seconds "
            f"since the epoch, below {MAX_START_SECONDS:.0e}, with at most {_START_PLACES} "
            "decimal places"
        )
    return start


def _log_write_failure(value: object, read: _Reader) -> LogWriteFailure | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        read.fail(f"field 'log_write_failure' must be null or an object, not {_kind(value)}")
    if set(value) != _FAILURE_FIELDS:
        extra = sorted(set(value) - _FAILURE_FIELDS)
        missing = sorted(_FAILURE_FIELDS - set(value))
        read.fail(
            f"log_write_failure must hold exactly 'at_byte' and 'error' "
            f"(unknown {extra}, missing {missing})"
        )
    at_byte = read.integer(value["at_byte"], "log_write_failure.at_byte", 0, MAX_LOG_BYTES)
    error = read.text(value["error"], "log_write_failure.error")
    if len(error) > MAX_ERROR_CHARS:
        read.fail(f"log_write_failure.error is longer than {MAX_ERROR_CHARS} characters")
    return _mint_failure(at_byte=at_byte, error=error)


def parse_launch_receipt(data: bytes, where: str = "<bytes>") -> LaunchReceipt:
    """Read a receipt from its bytes; a malformed one is an :class:`InputError` (one line).

    Linear in ``data`` in time and memory, whatever it holds (see the module)."""
    # Imported here: an assessment without a receipt never loads the launcher.
    from vllm_evidence.capture.process import scrub_argv

    read = _Reader(where)
    if not isinstance(data, bytes | bytearray | memoryview):  # outside mypy: anything
        read.fail(f"not bytes but {type(data).__name__}")
    data = bytes(data)
    if len(data) > RECEIPT_LIMIT:
        read.fail(f"larger than {RECEIPT_LIMIT:,} bytes; a receipt is small")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        read.fail(f"not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        document: Any = strict_loads(
            text, max_depth=RECEIPT_MAX_DEPTH, max_int_chars=MAX_INT_DIGITS
        )
    except StrictJsonError as exc:
        read.fail(f"not a receipt's JSON: {exc}")
    if not isinstance(document, dict):
        read.fail(f"not a JSON object but {_kind(document)}")
    schema = document.get("schema")
    if schema not in RECEIPT_SCHEMAS:
        shown = repr(schema)[:60] if isinstance(schema, str) else _kind(schema)
        read.fail(f"schema must be one of {', '.join(map(repr, RECEIPT_SCHEMAS))}, not {shown}")
    fields = _V1_FIELDS if schema == RECEIPT_SCHEMAS[0] else _FIELDS
    extra = sorted(set(document) - fields)
    if extra:
        shown_extra = ", ".join(repr(name[:40]) for name in extra[:5])
        more = f" (and {len(extra) - 5} more)" if len(extra) > 5 else ""
        read.fail(f"unknown field(s) {shown_extra}{more} for {schema}")
    missing = sorted(_V1_FIELDS - set(document))
    if missing:
        read.fail(f"field(s) {', '.join(map(repr, missing))} missing")
    pid = read.integer(document["pid"], "pid", 1, MAX_PID)
    start_text = read.optional_text(
        document["process_start_time_seconds"], "process_start_time_seconds"
    )
    unavailable = read.optional_text(document["start_time_unavailable"], "start_time_unavailable")
    argv_value = document["argv"]
    if not isinstance(argv_value, list):
        read.fail(f"field 'argv' must be an array of strings, not {_kind(argv_value)}")
    argv = [read.text(arg, f"argv[{index}]") for index, arg in enumerate(argv_value)]
    host = read.text(document["host"], "host")
    log_path = read.optional_text(document["log_path"], "log_path")
    log_bytes = read.integer(document["log_bytes"], "log_bytes", 0, MAX_LOG_BYTES)
    log_sha256 = read.text(document["log_sha256"], "log_sha256")
    if not _SHA256.fullmatch(log_sha256):
        read.fail("log_sha256 must be 64 lower-case hex digits")
    failure = _log_write_failure(document.get("log_write_failure"), read)
    start: Decimal | None = None
    if start_text is not None:
        start = _start_seconds(start_text, read)
    elif unavailable is None:
        read.fail("no process_start_time_seconds and no start_time_unavailable")
    return _mint_receipt(
        pid=pid,
        process_start_seconds=start,
        start_time_unavailable=unavailable,
        argv=tuple(scrub_argv(argv)),  # a hand-written receipt may carry a key
        host=host,
        log_path=log_path,
        log_bytes=log_bytes,
        log_sha256=log_sha256,
        log_write_failure=failure,
        raw=data,
    )


def read_launch_receipt(path: str | Path) -> LaunchReceipt:
    """Read the receipt at ``path``; an unreadable or malformed one is an
    :class:`InputError` with a one-line message.

    The file must be a regular file of at most :data:`RECEIPT_LIMIT` bytes: a FIFO, a
    device or a directory is refused at once (opened without blocking, checked with
    ``fstat`` before a byte is read), never waited on."""
    data = read_named_file(path, RECEIPT_LIMIT, what="launch receipt")
    return parse_launch_receipt(data, str(path))
