"""A launch receipt read back: what ``vllm-evidence launch`` wrote about the child it ran.

The receipt (schema ``vllm-evidence.launch-receipt/3``, ``vllm-evidence schema
launch-receipt``; ``/1`` and ``/2`` are read too) names the launched process — its pid
and its start time, computed the way the ``/metrics`` process collector computes
``process_start_time_seconds`` — and the log it teed: the path, how many bytes had been
written when the receipt was last written, the SHA-256 of exactly those bytes, whether
the launcher failed to write the log past some byte (``log_write_failure``, from ``/2``;
a ``/1`` receipt is read as having none), and (from ``/3``) the launcher's **signature**:
Ed25519 over the rest of the receipt (:mod:`vllm_evidence._capture.signing`), under a key
only the launcher holds.

A receipt is a file a caller hands in: reading it establishes nothing.  Its start time
counts only when the log-join decision *observes* the same value on the front door's
``/metrics``, and only when the receipt is the launcher's own: signed, and verified here
under the :class:`~vllm_evidence._capture.signing.VerificationKey` the reader gives
(:func:`read_launch_receipt` ``verification_key=``).  What the signature shows is kept
on the receipt (:attr:`LaunchReceipt.authentication`, :class:`ReceiptAuthentication`):
unsigned (a ``/1`` or ``/2`` receipt, or a launch given no signing key), signed but not
checked (no key given), signed by another key, a signature that does not verify (the
receipt was edited after it was signed: its start time set to another process's, say),
or verified.  The log join refuses every one but the last, each by name.  The gate
(``vllm-evidence launch --serve``) needs no receipt file: it builds the receipt from
what it observed of its own child, in its own process, and nothing public builds one
so marked.

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
The signature is 128 hex digits, checked once over the canonical receipt (linear in it).
"""

from __future__ import annotations

import enum
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn, final

import attrs

from vllm_evidence._bounds import MAX_INT_DIGITS
from vllm_evidence._capture._files import read_named_file
from vllm_evidence._capture._strict_json import StrictJsonError, strict_loads
from vllm_evidence._capture.signing import (
    ED25519,
    KEY_ID_DIGITS,
    SIGNATURE_BYTES,
    SigningKey,
    VerificationKey,
    canonical,
)
from vllm_evidence._converter import converter
from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.errors import InputError

__all__ = [
    "RECEIPT_SCHEMA",
    "RECEIPT_SCHEMAS",
    "LaunchReceipt",
    "LogWriteFailure",
    "LogWriteFailureRecord",
    "ReceiptAuthentication",
    "ReceiptRecord",
    "ReceiptSignatureRecord",
    "parse_launch_receipt",
    "read_launch_receipt",
    "signed_receipt_document",
]

#: The schema the launcher writes.
RECEIPT_SCHEMA = "vllm-evidence.launch-receipt/3"
#: The schemas read: ``/1`` (no ``log_write_failure``: read as none), ``/2`` (no
#: signature: read as unsigned) and ``/3``.
RECEIPT_SCHEMAS = (
    "vllm-evidence.launch-receipt/1",
    "vllm-evidence.launch-receipt/2",
    RECEIPT_SCHEMA,
)

#: The largest receipt read (a receipt is a few hundred bytes plus the argv).
RECEIPT_LIMIT = 1024 * 1024
#: The deepest nesting a receipt has: the object, and its ``argv``,
#: ``log_write_failure`` or ``signature``.
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
_KEY_ID = re.compile(f"[0-9a-f]{{{KEY_ID_DIGITS}}}")
_SIGNATURE = re.compile(f"[0-9a-f]{{{2 * SIGNATURE_BYTES}}}")
#: The exposition's number grammar, as ``prometheus_client`` prints a float
#: (``1.79601501985e+09``, ``1796015019.85``): no ``inf``, no ``nan``, no ``_``, and an
#: exponent of at most three digits.
_START = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")


class ReceiptAuthentication(enum.Enum):
    """What vouches that a receipt is the launcher's own (earliest missing piece first).

    Only :attr:`VERIFIED` and :attr:`OBSERVED_IN_PROCESS` let the log join read the
    receipt's start time; every other value is refused by name."""

    UNSIGNED = "unsigned"
    """No signature: a ``/1`` or ``/2`` receipt, or one a launch wrote without a signing
    key.  Anyone can write such a file."""
    UNCHECKED = "unchecked"
    """Signed, but read without a verification key: the signature was not checked."""
    OTHER_KEY = "other_key"
    """Signed by another key than the one the reader gave."""
    SIGNATURE_INVALID = "signature_invalid"
    """Names the reader's key, but the signature does not verify: the receipt was edited
    after it was signed, or forged."""
    VERIFIED = "verified"
    """The signature verified under the reader's key: the launcher holding the signing
    key wrote exactly these bytes."""
    OBSERVED_IN_PROCESS = "observed_in_process"
    """Built by the launcher in its own process from what it observed of its own child
    (the gate, ``launch --serve``): no receipt crossed a process boundary.  Nothing
    public builds a receipt so marked; read from a file, the same bytes are unsigned."""


@attrs.frozen(kw_only=True)
class LogWriteFailureRecord:
    """``log_write_failure`` as JSON carries it: the launcher could not write the log past
    byte :attr:`at_byte`, for the reason :attr:`error`."""

    at_byte: int
    error: str


@attrs.frozen(kw_only=True)
class ReceiptSignatureRecord:
    """``signature`` as JSON carries it (``/3``): the launcher's Ed25519 signature of the
    canonical receipt (the document without ``signature``, compact JSON with sorted keys,
    ASCII only), and the id of the key that made it."""

    algorithm: str
    """Always ``"ed25519"``."""
    key_id: str
    """The signing key's id (:attr:`~vllm_evidence._capture.signing.VerificationKey.key_id`)."""
    ed25519: str
    """The signature, 128 lower-case hex digits."""


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
    signature: ReceiptSignatureRecord | None = None
    """The launcher's signature (``/3``); ``None``: unsigned (it joins no log)."""


def signed_receipt_document(
    record: ReceiptRecord, signing_key: SigningKey | None
) -> dict[str, Any]:
    """The receipt's JSON document: ``record`` through the package converter, with its
    ``signature`` made by ``signing_key`` over the canonical rest (``None``: unsigned,
    ``"signature": null``).  Whatever signature ``record`` carries is replaced."""
    document: dict[str, Any] = converter.unstructure(attrs.evolve(record, signature=None))
    if signing_key is None:
        return document
    given: object = signing_key  # callers outside mypy can pass anything
    if not isinstance(given, SigningKey):
        msg = f"signing_key must be a SigningKey (read_signing_key), not {type(given).__name__}"
        raise InputError(msg)
    signature = ReceiptSignatureRecord(
        algorithm=ED25519,
        key_id=signing_key.key_id,
        ed25519=signing_key.sign(canonical(document, without="signature")),
    )
    document["signature"] = converter.unstructure(signature)
    return document


@final
@attrs.frozen(init=False, repr=False)
class LogWriteFailure(Sealed):
    """The launcher could not write the log past :attr:`at_byte`: the log the receipt
    digests is not the whole of what the child printed."""

    __public_constructor__ = "vllm_evidence.read_launch_receipt()"

    at_byte: int
    error: str

    def _repr_summary(self) -> str:
        return f"at byte {self.at_byte:,}: {self.error[:60]}"


@final
@attrs.frozen(init=False, repr=False)
class LaunchReceipt(Sealed):
    """A launch receipt as read: a caller-supplied claim about one launch, typed, with
    what its signature shows (:attr:`authentication`)."""

    __public_constructor__ = "vllm_evidence.read_launch_receipt()"

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
    authentication: ReceiptAuthentication
    """What vouches that the launcher wrote it (see :class:`ReceiptAuthentication`)."""
    signer_key_id: str | None
    """The key id the receipt's signature names (``None``: unsigned)."""
    verification_key: VerificationKey | None
    """The key the reader checked the signature with (``None``: none was given)."""
    raw: bytes
    """The receipt file's bytes: its raw evidence."""

    @property
    def authenticated(self) -> bool:
        """Whether the receipt is the launcher's own: verified, or observed in process."""
        return self.authentication in (
            ReceiptAuthentication.VERIFIED,
            ReceiptAuthentication.OBSERVED_IN_PROCESS,
        )

    def __rederive__(self) -> Reduction[LaunchReceipt]:
        """Pickled as the file's bytes and the key it was checked with; unpickling parses
        and verifies them again (a receipt observed in process comes back unsigned:
        only the launcher's own process observed it)."""
        return _reparse, (self.raw, self.verification_key)

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
        return (
            f"pid {self.pid}, {start}, log {self.log_bytes:,} bytes{failed}, "
            f"{self.authentication.value}"
        )


_mint_receipt = minter(LaunchReceipt, LaunchReceipt.__attrs_init__)
_mint_failure = minter(LogWriteFailure, LogWriteFailure.__attrs_init__)

_FIELDS = frozenset(f.name for f in attrs.fields(ReceiptRecord))
_V2_FIELDS = _FIELDS - {"signature"}
_V1_FIELDS = _V2_FIELDS - {"log_write_failure"}
_FAILURE_FIELDS = frozenset(f.name for f in attrs.fields(LogWriteFailureRecord))
_SIGNATURE_FIELDS = frozenset(f.name for f in attrs.fields(ReceiptSignatureRecord))
_SCHEMA_FIELDS = dict(zip(RECEIPT_SCHEMAS, (_V1_FIELDS, _V2_FIELDS, _FIELDS), strict=True))


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


def _exact_object(
    value: object, name: str, fields: frozenset[str], read: _Reader
) -> dict[str, Any]:
    if not isinstance(value, dict):
        read.fail(f"field {name!r} must be null or an object, not {_kind(value)}")
    if set(value) != fields:
        extra = sorted(str(key)[:40] for key in set(value) - fields)
        missing = sorted(fields - set(value))
        read.fail(
            f"{name} must hold exactly {', '.join(map(repr, sorted(fields)))} "
            f"(unknown {extra[:5]}, missing {missing})"
        )
    return value


def _log_write_failure(value: object, read: _Reader) -> LogWriteFailure | None:
    if value is None:
        return None
    fields = _exact_object(value, "log_write_failure", _FAILURE_FIELDS, read)
    at_byte = read.integer(fields["at_byte"], "log_write_failure.at_byte", 0, MAX_LOG_BYTES)
    error = read.text(fields["error"], "log_write_failure.error")
    if len(error) > MAX_ERROR_CHARS:
        read.fail(f"log_write_failure.error is longer than {MAX_ERROR_CHARS} characters")
    return _mint_failure(at_byte=at_byte, error=error)


def _signature(value: object, read: _Reader) -> ReceiptSignatureRecord | None:
    if value is None:
        return None
    fields = _exact_object(value, "signature", _SIGNATURE_FIELDS, read)
    algorithm = read.text(fields["algorithm"], "signature.algorithm")
    if algorithm != ED25519:
        read.fail(f"signature.algorithm must be {ED25519!r}, not {algorithm[:40]!r}")
    key_id = read.text(fields["key_id"], "signature.key_id")
    if not _KEY_ID.fullmatch(key_id):
        read.fail(f"signature.key_id must be {KEY_ID_DIGITS} lower-case hex digits")
    value_hex = read.text(fields["ed25519"], "signature.ed25519")
    if not _SIGNATURE.fullmatch(value_hex):
        read.fail(f"signature.ed25519 must be {2 * SIGNATURE_BYTES} lower-case hex digits")
    return ReceiptSignatureRecord(algorithm=algorithm, key_id=key_id, ed25519=value_hex)


def _authentication(
    document: dict[str, Any],
    signature: ReceiptSignatureRecord | None,
    key: VerificationKey | None,
) -> ReceiptAuthentication:
    if signature is None:
        return ReceiptAuthentication.UNSIGNED
    if key is None:
        return ReceiptAuthentication.UNCHECKED
    if signature.key_id != key.key_id:
        return ReceiptAuthentication.OTHER_KEY
    if not key.verifies(canonical(document, without="signature"), signature.ed25519):
        return ReceiptAuthentication.SIGNATURE_INVALID
    return ReceiptAuthentication.VERIFIED


def _checked_key(key: object, read: _Reader) -> VerificationKey | None:
    if key is None or isinstance(key, VerificationKey):
        return key
    if isinstance(key, SigningKey):
        read.fail(
            "verification_key is a SigningKey: a verifier holds the public half only "
            "(its .verification_key, or read_verification_key(PUBLIC.pem))"
        )
    raise _problem(
        read.where,
        f"verification_key must be a VerificationKey (read_verification_key), "
        f"not {type(key).__name__}",
    )


def _parse(data: bytes, where: str, key: object, *, in_process: bool = False) -> LaunchReceipt:
    # Imported here: an assessment without a receipt never loads the launcher.
    from vllm_evidence._capture.process import scrub_argv

    read = _Reader(where)
    checked = _checked_key(key, read)
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
    fields = _SCHEMA_FIELDS[schema]
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
    signature = _signature(document.get("signature"), read)
    start: Decimal | None = None
    if start_text is not None:
        start = _start_seconds(start_text, read)
    elif unavailable is None:
        read.fail("no process_start_time_seconds and no start_time_unavailable")
    authentication = (
        ReceiptAuthentication.OBSERVED_IN_PROCESS
        if in_process
        else _authentication(document, signature, checked)
    )
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
        authentication=authentication,
        signer_key_id=None if signature is None else signature.key_id,
        verification_key=None if in_process else checked,
        raw=data,
    )


def parse_launch_receipt(
    data: bytes, where: str = "<bytes>", *, verification_key: VerificationKey | None = None
) -> LaunchReceipt:
    """Read a receipt from its bytes, checking its signature under ``verification_key``
    (the launcher's public key; see :func:`read_launch_receipt`).  A malformed receipt is
    an :class:`InputError` (one line); a well-formed one is always read, and what its
    signature shows is its :attr:`~LaunchReceipt.authentication`.

    Linear in ``data`` in time and memory, whatever it holds (see the module)."""
    return _parse(data, where, verification_key)


def _reparse(data: bytes, verification_key: VerificationKey | None) -> LaunchReceipt:
    """A pickled receipt read again from its bytes, under the key it was read with."""
    return _parse(data, "<unpickled>", verification_key)


def _observed_in_process(record: ReceiptRecord, where: str) -> LaunchReceipt:
    """The receipt the launcher builds, in its own process, from what it observed of its
    own child (package-internal: the gate, :mod:`vllm_evidence._gate.launcher`).

    It is read by the same strict parser as a file, and marked
    :attr:`ReceiptAuthentication.OBSERVED_IN_PROCESS`; its bytes are unsigned, so the
    same receipt written to a file, pickled or embedded in a document reads as
    :attr:`~ReceiptAuthentication.UNSIGNED`."""
    import json

    raw = json.dumps(signed_receipt_document(record, None)).encode("utf-8")
    return _parse(raw, where, None, in_process=True)


def read_launch_receipt(
    path: str | Path, *, verification_key: VerificationKey | None = None
) -> LaunchReceipt:
    """Read the launch receipt at ``path``, and check its signature under
    ``verification_key``: the public half of the key the launcher signed with
    (:func:`~vllm_evidence._capture.signing.read_verification_key` of a PEM file,
    ``vllm-evidence probe --receipt-public-key FILE``).

    What the signature shows is the receipt's :attr:`~LaunchReceipt.authentication`: the
    log join reads the receipt's start time only when it is
    :attr:`~ReceiptAuthentication.VERIFIED`, and refuses by name an unsigned receipt, one
    read without a key, one signed by another key and one whose signature does not
    verify (an edited receipt).  Reading never raises for what the signature shows.

    An unreadable or malformed file is an :class:`InputError` with a one-line message.
    The file must be a regular file of at most :data:`RECEIPT_LIMIT` bytes: a FIFO, a
    device or a directory is refused at once (opened without blocking, checked with
    ``fstat`` before a byte is read), never waited on.

    Read the log after the receipt, to the receipt's length
    (``read_startup_log(log, first_bytes=receipt.log_bytes)``): the launcher keeps
    writing the log after the receipt, which digests its first
    :attr:`~LaunchReceipt.log_bytes` bytes only."""
    data = read_named_file(path, RECEIPT_LIMIT, what="launch receipt")
    return _parse(data, str(path), verification_key)
