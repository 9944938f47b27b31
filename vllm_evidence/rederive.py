"""Re-derivation is the only way back: an assessment as its raw evidence, and read again.

:func:`dumps` writes one JSON document (schema ``vllm-evidence.evidence/2``) that holds
the *raw evidence* of an :class:`~vllm_evidence.assessment.Assessment`, never a decision
to be trusted:

* the front door: for a captured readback every exchange of its batch (route, role,
  transport, status, recorded headers, the body in base64 with its SHA-256, the size
  limit, the monotonic and wall-clock timestamps, the detail) with the batch id and
  target; for a historical bundle the bodies (with their SHA-256) and statuses it was
  built from;
* the startup log: its path, SHA-256, size and wrap width — by reference (the file is
  read again by :func:`loads`, only its first ``size_bytes``, so a log appended to since
  still loads; a relative path is read from the loading process's working directory)
  or, with ``embed_log=True``, with its bytes in base64;
* which launch of the log was assessed;
* the launch receipt given with the log (its bytes in base64), or ``null``;
* each decision's ``verdict`` and ``reason``, as a check only.

:func:`loads` parses the document defensively (bounded size and nesting, no floats, no
huge integers, no duplicate keys, every field type-checked: any malformed document is an
:class:`~vllm_evidence.errors.InputError`), rebuilds the batch through the capture
layer's own constructors, checks every digest, runs the adapters and :func:`assess`
again, and refuses with :class:`~vllm_evidence.errors.EvidenceMismatchError` when a
digest or a re-derived verdict differs from the recorded one.

No API key or other secret is written: an exchange never holds the request's headers,
only the response headers in :data:`~vllm_evidence.capture.batch.RECORDED_HEADERS`, and
the target is stored without credentials.

A startup log read from a stream keeps neither its bytes nor a path, so an assessment of
one cannot be written (nor pickled): read the log from a file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn, TypeVar

import attrs

from vllm_evidence._claims import CLAIMS
from vllm_evidence._converter import converter
from vllm_evidence.adapters.receipt import parse_launch_receipt
from vllm_evidence.adapters.startup_log import StartupLog
from vllm_evidence.adapters.startup_log.launch import (
    _reread_startup_log,
    _startup_log_from_bytes,
)
from vllm_evidence.assessment import Assessment, assess
from vllm_evidence.capture.batch import (
    Exchange,
    ExchangeRole,
    Transport,
    _rederive_batch,
    _rederive_exchange,
)
from vllm_evidence.capture.log import read_log_bytes
from vllm_evidence.errors import EvidenceMismatchError, InputError
from vllm_evidence.output.assessment import verdict
from vllm_evidence.readback.front_door import (
    CapturedReadback,
    HistoricalBundle,
    _rederive_historical,
    readback_from_batch,
)
from vllm_evidence.upstream.routes import Route

__all__ = ["MAX_DEPTH", "MAX_DOCUMENT_CHARS", "SCHEMA", "dumps", "loads"]

SCHEMA = "vllm-evidence.evidence/2"
#: The longest document :func:`loads` reads by default (an embedded log is base64).
MAX_DOCUMENT_CHARS = 512 * 1024 * 1024
#: The deepest nesting of arrays and objects :func:`loads` accepts (the schema needs 5).
MAX_DEPTH = 16
#: The longest integer literal accepted (nanosecond timestamps need 19 digits).
_MAX_INT_CHARS = 24

T = TypeVar("T")


# --------------------------------------------------------------------------------------
# Writing


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _exchange_json(exchange: Exchange) -> dict[str, object]:
    return {
        "route": exchange.route.stem,
        "role": exchange.role.value,
        "transport": exchange.transport.value,
        "status": exchange.status,
        "headers": [list(pair) for pair in exchange.headers],
        "body": None if exchange.body is None else _b64(exchange.body),
        "body_sha256": exchange.body_sha256,
        "size_limit": exchange.size_limit,
        "started_monotonic_ns": exchange.started_monotonic_ns,
        "ended_monotonic_ns": exchange.ended_monotonic_ns,
        "started_at": exchange.started_at.isoformat(),
        "ended_at": exchange.ended_at.isoformat(),
        "detail": exchange.detail,
    }


def _front_door_json(front_door: CapturedReadback | HistoricalBundle) -> dict[str, object]:
    if isinstance(front_door, CapturedReadback):
        batch = front_door.batch
        return {
            "kind": "captured",
            "batch_id": batch.batch_id,
            "target": batch.target,
            "exchanges": [_exchange_json(e) for e in batch.all_exchanges()],
        }
    return {
        "kind": "historical",
        "bodies": [
            {"route": route.stem, "body": _b64(body), "sha256": hashlib.sha256(body).hexdigest()}
            for route, body in front_door.bodies
        ],
        "statuses": [
            {"route": route.stem, "status": status} for route, status in front_door.statuses
        ],
    }


def _log_json(log: StartupLog, *, embed: bool) -> dict[str, object]:
    if log.source is None:
        msg = (
            "the startup log was read from a stream: it keeps neither its bytes nor a "
            "path, so nothing can read it again; read the log from a file"
        )
        raise InputError(msg)
    embedded = None
    if embed:
        embedded = _b64(read_log_bytes(log.source, size_bytes=log.size_bytes, sha256=log.sha256))
    return {
        "source": log.source,
        "sha256": log.sha256,
        "size_bytes": log.size_bytes,
        "wrap_width": log.wrap_width,
        "embedded": embedded,
    }


def _verdicts(assessment: Assessment) -> dict[str, dict[str, str]]:
    decisions = (
        assessment.parallel,
        assessment.capacity,
        assessment.served_identity,
        assessment.health_coverage,
        assessment.front_door_join,
        assessment.log_join,
    )
    return {
        claim: {"verdict": verdict(d), "reason": d.reason.value}
        for claim, d in zip(CLAIMS, decisions, strict=True)
    }


@attrs.frozen
class _EvidenceDocument:
    """What :func:`dumps` writes: one assessment's raw evidence (its hook builds it)."""

    assessment: Assessment
    embed_log: bool


def _evidence_document(document: _EvidenceDocument) -> dict[str, object]:
    assessment = document.assessment
    evidence = assessment.evidence
    log = assessment.startup_log
    return {
        "schema": SCHEMA,
        "front_door": None
        if evidence.front_door is None
        else _front_door_json(evidence.front_door),
        "startup_log": None if log is None else _log_json(log, embed=document.embed_log),
        "launch": None if evidence.launch is None else evidence.launch.index,
        "receipt": None if evidence.receipt is None else _b64(evidence.receipt.raw),
        "verdicts": _verdicts(assessment),
    }


converter.register_unstructure_hook(_EvidenceDocument, _evidence_document)


def dumps(assessment: Assessment, *, embed_log: bool = False) -> str:
    """The assessment's raw evidence as one JSON document (``vllm-evidence.evidence/2``).

    The startup log goes by reference (path, SHA-256, size) unless ``embed_log``: then
    its bytes go too, read again now and checked against its digest.  Raises
    :class:`~vllm_evidence.errors.InputError` for a log read from a stream (nothing can
    read it again) or one that can no longer be read, and
    :class:`~vllm_evidence.errors.EvidenceMismatchError` for a log that changed since.
    """
    document = converter.unstructure(_EvidenceDocument(assessment, embed_log))
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


# --------------------------------------------------------------------------------------
# Reading: the JSON, defensively


def _malformed(where: str, what: str) -> NoReturn:
    msg = f"evidence document: {where}: {what}"
    raise InputError(msg)


# A string (the unrolled-loop form: linear, no backtracking) or one bracket.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` before the recursive JSON parser runs."""
    depth = 0
    for match in _STRUCTURE.finditer(text):
        bracket = match.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                _malformed("document", f"nested deeper than {MAX_DEPTH} levels")
        elif bracket in ("]", "}"):
            depth -= 1


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            _malformed("document", f"duplicate key {key!r}")
        result[key] = value
    return result


def _bounded_int(text: str) -> int:
    if len(text) > _MAX_INT_CHARS:
        _malformed("document", f"an integer of {len(text)} digits")
    return int(text)


def _no_float(text: str) -> NoReturn:
    _malformed("document", f"a non-integer number {text[:40]!r}")


def _no_constant(text: str) -> NoReturn:
    _malformed("document", f"the non-number {text!r}")


def _parse(text: str | bytes, max_chars: int) -> dict[str, Any]:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            _malformed("document", "not UTF-8")
    if not isinstance(text, str):  # callers outside mypy can pass anything
        _malformed("document", f"not text but {type(text).__name__}")
    if len(text) > max_chars:
        _malformed("document", f"{len(text)} characters, over the limit of {max_chars}")
    _check_depth(text)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique,
            parse_int=_bounded_int,
            parse_float=_no_float,
            parse_constant=_no_constant,
        )
    except InputError:
        raise
    except (ValueError, RecursionError) as exc:
        _malformed("document", f"not JSON ({exc})")
    if not isinstance(value, dict):
        _malformed("document", "not a JSON object")
    if value.get("schema") != SCHEMA:
        _malformed("schema", f"not {SCHEMA}")
    return value


def _field(obj: dict[str, Any], key: str, kind: type[T], where: str) -> T:
    if key not in obj:
        _malformed(where, f"missing {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        _malformed(where, f"{key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _count(obj: dict[str, Any], key: str, where: str, *, low: int = 0) -> int:
    value = _field(obj, key, int, where)
    if value < low:
        _malformed(where, f"{key!r} must be at least {low}, got {value}")
    return value


def _optional_count(obj: dict[str, Any], key: str, where: str, *, low: int = 0) -> int | None:
    if key in obj and obj[key] is None:
        return None
    return _count(obj, key, where, low=low)


def _optional(obj: dict[str, Any], key: str, kind: type[T], where: str) -> T | None:
    if key in obj and obj[key] is None:
        return None
    return _field(obj, key, kind, where)


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _malformed(where, "not an object")
    return value


def _keys(obj: dict[str, Any], keys: frozenset[str], where: str) -> None:
    if set(obj) != keys:
        extra, missing = sorted(set(obj) - keys), sorted(keys - set(obj))
        _malformed(where, f"unexpected keys {extra}, missing keys {missing}")


def _bytes(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        _malformed(where, "not base64")


def _route(stem: str, where: str) -> Route:
    route = Route.from_stem(stem)
    if route is None or not route.probe_readable:
        _malformed(where, f"unknown route {stem!r}")
    return route


def _enum(kind: Callable[[str], T], text: str, where: str) -> T:
    try:
        return kind(text)
    except ValueError:
        _malformed(where, f"unknown value {text!r}")


def _timestamp(text: str, where: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        _malformed(where, f"not an ISO 8601 timestamp: {text[:40]!r}")


# --------------------------------------------------------------------------------------
# Reading: re-derivation

_EXCHANGE_KEYS = frozenset(
    {
        "route",
        "role",
        "transport",
        "status",
        "headers",
        "body",
        "body_sha256",
        "size_limit",
        "started_monotonic_ns",
        "ended_monotonic_ns",
        "started_at",
        "ended_at",
        "detail",
    }
)


def _headers(raw: list[Any], where: str) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for pair in raw:
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            _malformed(where, "headers must be [name, value] pairs of strings")
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _exchange(raw: object, where: str) -> Exchange:
    entry = _object(raw, where)
    _keys(entry, _EXCHANGE_KEYS, where)
    body_text = _optional(entry, "body", str, where)
    return _rederive_exchange(
        _route(_field(entry, "route", str, where), where),
        _enum(ExchangeRole, _field(entry, "role", str, where), where),
        _enum(Transport, _field(entry, "transport", str, where), where),
        _optional_count(entry, "status", where, low=100),
        _headers(_field(entry, "headers", list, where), where),
        None if body_text is None else _bytes(body_text, where),
        _optional(entry, "body_sha256", str, where),
        _count(entry, "size_limit", where),
        _count(entry, "started_monotonic_ns", where),
        _count(entry, "ended_monotonic_ns", where),
        _timestamp(_field(entry, "started_at", str, where), where),
        _timestamp(_field(entry, "ended_at", str, where), where),
        _field(entry, "detail", str, where),
    )


def _captured(door: dict[str, Any]) -> CapturedReadback:
    where = "front_door"
    _keys(door, frozenset({"kind", "batch_id", "target", "exchanges"}), where)
    exchanges = [
        _exchange(raw, f"front_door.exchanges[{i}]")
        for i, raw in enumerate(_field(door, "exchanges", list, where))
    ]
    opening = [e for e in exchanges if e.role is ExchangeRole.BRACKET_OPEN]
    closing = [e for e in exchanges if e.role is ExchangeRole.BRACKET_CLOSE]
    if len(opening) != 1 or len(closing) != 1:
        _malformed(where, "a batch has exactly one opening and one closing /metrics read")
    batch = _rederive_batch(
        _field(door, "batch_id", str, where),
        _field(door, "target", str, where),
        opening[0],
        tuple(e for e in exchanges if e.role is ExchangeRole.ROUTE),
        closing[0],
    )
    return readback_from_batch(batch)


def _historical(door: dict[str, Any]) -> HistoricalBundle:
    where = "front_door"
    _keys(door, frozenset({"kind", "bodies", "statuses"}), where)
    bodies: dict[Route, bytes] = {}
    for i, raw in enumerate(_field(door, "bodies", list, where)):
        here = f"front_door.bodies[{i}]"
        entry = _object(raw, here)
        _keys(entry, frozenset({"route", "body", "sha256"}), here)
        route = _route(_field(entry, "route", str, here), here)
        if route in bodies:
            _malformed(here, f"a second body for {route.target}")
        body = _bytes(_field(entry, "body", str, here), here)
        recorded = _field(entry, "sha256", str, here)
        actual = hashlib.sha256(body).hexdigest()
        if actual != recorded:
            msg = (
                f"GET {route.target}: the body's SHA-256 is {actual} but {recorded} was "
                "recorded; the evidence was altered and nothing is derived from it"
            )
            raise EvidenceMismatchError(msg)
        bodies[route] = body
    statuses: dict[Route, int] = {}
    for i, raw in enumerate(_field(door, "statuses", list, where)):
        here = f"front_door.statuses[{i}]"
        entry = _object(raw, here)
        _keys(entry, frozenset({"route", "status"}), here)
        route = _route(_field(entry, "route", str, here), here)
        if route in statuses:
            _malformed(here, f"a second status for {route.target}")
        statuses[route] = _count(entry, "status", here, low=100)
    return _rederive_historical(tuple(bodies.items()), tuple(statuses.items()))


def _front_door(raw: object) -> CapturedReadback | HistoricalBundle | None:
    if raw is None:
        return None
    door = _object(raw, "front_door")
    kind = _field(door, "kind", str, "front_door")
    if kind == "captured":
        return _captured(door)
    if kind == "historical":
        return _historical(door)
    _malformed("front_door", f"unknown kind {kind!r}")


def _startup_log(raw: object) -> StartupLog | None:
    if raw is None:
        return None
    where = "startup_log"
    entry = _object(raw, where)
    _keys(entry, frozenset({"source", "sha256", "size_bytes", "wrap_width", "embedded"}), where)
    source = _optional(entry, "source", str, where)
    sha256 = _field(entry, "sha256", str, where)
    size_bytes = _count(entry, "size_bytes", where)
    wrap_width = _optional_count(entry, "wrap_width", where, low=1)
    embedded = _optional(entry, "embedded", str, where)
    if embedded is not None:
        data = _bytes(embedded, where)
        return _startup_log_from_bytes(data, source, wrap_width, size_bytes, sha256)
    if source is None:
        _malformed(where, "neither embedded bytes nor a path to read the log from")
    return _reread_startup_log(source, wrap_width, size_bytes, sha256)


def _recorded_verdicts(raw: object) -> dict[str, dict[str, str]]:
    where = "verdicts"
    entry = _object(raw, where)
    _keys(entry, frozenset(CLAIMS), where)
    verdicts: dict[str, dict[str, str]] = {}
    for claim in CLAIMS:
        here = f"verdicts.{claim}"
        one = _object(entry[claim], here)
        _keys(one, frozenset({"verdict", "reason"}), here)
        verdicts[claim] = {
            "verdict": _field(one, "verdict", str, here),
            "reason": _field(one, "reason", str, here),
        }
    return verdicts


def loads(text: str | bytes, *, max_chars: int = MAX_DOCUMENT_CHARS) -> Assessment:
    """Re-derive an assessment from a :func:`dumps` document.

    Every digest is checked, the batch is rebuilt and the adapters and decisions run
    again; nothing decided is read from the document.  Raises
    :class:`~vllm_evidence.errors.InputError` for a malformed document or a log that
    cannot be read again, and :class:`~vllm_evidence.errors.EvidenceMismatchError` when
    a body or the log does not match its recorded digest or the re-derived verdicts are
    not the recorded ones.
    """
    document = _parse(text, max_chars)
    _keys(
        document,
        frozenset({"schema", "front_door", "startup_log", "launch", "receipt", "verdicts"}),
        "document",
    )
    recorded = _recorded_verdicts(document["verdicts"])
    launch = _optional_count(document, "launch", "document")
    front_door = _front_door(document["front_door"])
    log = _startup_log(document["startup_log"])
    if launch is not None and (log is None or not 0 <= launch < len(log.launches)):
        _malformed("launch", f"launch {launch} is not a launch of the startup log")
    if launch is None and log is not None and log.launches:
        _malformed("launch", "the startup log has launches but none is named")
    raw_receipt = _optional(document, "receipt", str, "document")
    receipt = (
        None
        if raw_receipt is None
        else parse_launch_receipt(_bytes(raw_receipt, "receipt"), "in the evidence document")
    )
    assessment = assess(front_door, log, launch=launch, receipt=receipt)
    derived = _verdicts(assessment)
    if derived != recorded:
        differ = "; ".join(
            f"{claim}: re-derived {derived[claim]['verdict']} ({derived[claim]['reason']}), "
            f"recorded {recorded[claim]['verdict']} ({recorded[claim]['reason']})"
            for claim in CLAIMS
            if derived[claim] != recorded[claim]
        )
        msg = (
            f"the evidence does not reproduce the recorded verdicts ({differ}); "
            "nothing is derived from it"
        )
        raise EvidenceMismatchError(msg)
    return assessment
