"""Capture directories: a batch saved as raw bodies plus a manifest, and its bytes read back.

Layout (the same stems as the real captures, so a saved directory is also readable
as a bare one)::

    manifest.json                    schema, batch id, target, one entry per request
    metrics.body / metrics.headers   the opening bracket read
    metrics__bracket_close.body      the closing bracket read
    version.body, v1_models.body, …  one per route read, with <stem>.headers

:func:`read` verifies every body's SHA-256 against the manifest before anything is
returned and gives back the :class:`~vllm_evidence.capture.batch.CaptureBatch` (bytes
only; :func:`vllm_evidence.load` re-runs the adapters over it: nothing decided is ever
read back from JSON).  A directory without ``manifest.json`` is a set of
:class:`BareBodies`, which loads as a :class:`~vllm_evidence.readback.HistoricalBundle`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from vllm_evidence.capture.batch import (
    CaptureBatch,
    Exchange,
    ExchangeRole,
    Transport,
    _new_batch,
    _new_exchange,
)
from vllm_evidence.errors import CaptureIntegrityError, InputError
from vllm_evidence.upstream.routes import Route

__all__ = ["MANIFEST", "MANIFEST_SCHEMA", "BareBodies", "read", "save"]

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "vllm-evidence/capture-manifest/1"
_CLOSE_SUFFIX = "__bracket_close"
_REASONS = {200: "OK", 302: "Found", 401: "Unauthorized", 404: "Not Found"}


def _stem(exchange: Exchange) -> str:
    if exchange.role is ExchangeRole.BRACKET_CLOSE:
        return exchange.route.stem + _CLOSE_SUFFIX
    return exchange.route.stem


def _headers_text(exchange: Exchange) -> str:
    reason = _REASONS.get(exchange.status or 0, "")
    lines = [f"HTTP/1.1 {exchange.status} {reason}".rstrip()]
    lines += [f"{key}: {value}" for key, value in exchange.headers]
    return "\n".join(lines) + "\n"


def _entry(exchange: Exchange) -> dict[str, Any]:
    stem = _stem(exchange)
    return {
        "route": exchange.route.stem,
        "role": exchange.role.value,
        "transport": exchange.transport.value,
        "status": exchange.status,
        "headers": [list(pair) for pair in exchange.headers],
        "body_file": None if exchange.body is None else f"{stem}.body",
        "headers_file": None if exchange.status is None else f"{stem}.headers",
        "sha256": exchange.body_sha256,
        "size": None if exchange.body is None else len(exchange.body),
        "size_limit": exchange.size_limit,
        "started_monotonic_ns": exchange.started_monotonic_ns,
        "ended_monotonic_ns": exchange.ended_monotonic_ns,
        "started_at": exchange.started_at.isoformat(),
        "ended_at": exchange.ended_at.isoformat(),
        "detail": exchange.detail,
    }


def save(capture: CaptureBatch, directory: str | Path) -> Path:
    """Write ``capture`` to a new ``directory``, atomically; return its path.

    The files are written into a temporary sibling directory that is renamed into
    place, so ``directory`` either does not exist or holds a whole capture.  An
    existing ``directory`` is an :class:`InputError`.
    """
    final = Path(directory)
    if final.exists():
        msg = f"{final} already exists; a capture is saved into a new directory"
        raise InputError(msg)
    parent = final.parent
    if not parent.is_dir():
        msg = f"{parent} is not a directory"
        raise InputError(msg)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=parent))
    try:
        entries = []
        for exchange in capture.all_exchanges():
            entry = _entry(exchange)
            if exchange.body is not None:
                (staging / entry["body_file"]).write_bytes(exchange.body)
            if entry["headers_file"] is not None:
                (staging / entry["headers_file"]).write_text(
                    _headers_text(exchange), encoding="utf-8"
                )
            entries.append(entry)
        manifest = {
            "schema": MANIFEST_SCHEMA,
            "batch_id": capture.batch_id,
            "target": capture.target,
            "requests": entries,
        }
        (staging / MANIFEST).write_text(
            json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        for path in (staging, *staging.iterdir()):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        staging.rename(final)
    except BaseException:
        for path in staging.iterdir():
            path.unlink()
        staging.rmdir()
        raise
    return final


def _field(entry: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = entry.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        msg = f"{where}: manifest field {key!r} is missing or malformed"
        raise InputError(msg)
    return value


def _exchange(directory: Path, entry: Any, index: int) -> Exchange:
    where = f"{directory / MANIFEST} requests[{index}]"
    if not isinstance(entry, dict):
        msg = f"{where}: not an object"
        raise InputError(msg)
    route = Route.from_stem(_field(entry, "route", str, where))
    if route is None or not route.probe_readable:
        msg = f"{where}: unknown route"
        raise InputError(msg)
    # Fields are read outside each ``try``: an InputError is also a ValueError, and
    # ``_field``'s message must not be rewrapped.
    role_text = _field(entry, "role", str, where)
    transport_text = _field(entry, "transport", str, where)
    started_text = _field(entry, "started_at", str, where)
    ended_text = _field(entry, "ended_at", str, where)
    try:
        role = ExchangeRole(role_text)
        transport = Transport(transport_text)
        started_at = datetime.fromisoformat(started_text)
        ended_at = datetime.fromisoformat(ended_text)
    except ValueError as exc:
        msg = f"{where}: malformed role, transport or timestamp"
        raise InputError(msg) from exc
    status = entry.get("status")
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        msg = f"{where}: malformed status"
        raise InputError(msg)
    headers_raw = _field(entry, "headers", list, where)
    headers: list[tuple[str, str]] = []
    for pair in headers_raw:
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(part, str) for part in pair)
        ):
            msg = f"{where}: malformed headers"
            raise InputError(msg)
        headers.append((pair[0], pair[1]))
    body: bytes | None = None
    body_file = entry.get("body_file")
    if body_file is not None:
        digest = _field(entry, "sha256", str, where)
        if not isinstance(body_file, str) or Path(body_file).name != body_file:
            msg = f"{where}: malformed body_file"
            raise InputError(msg)
        path = directory / body_file
        try:
            body = path.read_bytes()
        except OSError as exc:
            msg = f"{path}: listed in the manifest but unreadable ({exc.strerror})"
            raise CaptureIntegrityError(msg) from exc
        actual = hashlib.sha256(body).hexdigest()
        if actual != digest:
            msg = (
                f"{path}: SHA-256 {actual} does not match the manifest's {digest}; "
                "the capture was altered and nothing is derived from it"
            )
            raise CaptureIntegrityError(msg)
    size_limit = _field(entry, "size_limit", int, where)
    started_ns = _field(entry, "started_monotonic_ns", int, where)
    ended_ns = _field(entry, "ended_monotonic_ns", int, where)
    detail = _field(entry, "detail", str, where)
    try:
        return _new_exchange(
            route=route,
            role=role,
            transport=transport,
            status=status,
            headers=tuple(headers),
            body=body,
            size_limit=size_limit,
            started_monotonic_ns=started_ns,
            ended_monotonic_ns=ended_ns,
            started_at=started_at,
            ended_at=ended_at,
            detail=detail,
        )
    except ValueError as exc:
        msg = f"{where}: {exc}"
        raise InputError(msg) from exc


def _read_manifest(directory: Path) -> CaptureBatch:
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = f"{directory / MANIFEST}: not a readable JSON manifest"
        raise InputError(msg) from exc
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        msg = f"{directory / MANIFEST}: not a {MANIFEST_SCHEMA} manifest"
        raise InputError(msg)
    where = str(directory / MANIFEST)
    requests = _field(manifest, "requests", list, where)
    exchanges = [_exchange(directory, entry, i) for i, entry in enumerate(requests)]
    opening = [e for e in exchanges if e.role is ExchangeRole.BRACKET_OPEN]
    closing = [e for e in exchanges if e.role is ExchangeRole.BRACKET_CLOSE]
    middle = tuple(e for e in exchanges if e.role is ExchangeRole.ROUTE)
    if len(opening) != 1 or len(closing) != 1:
        msg = f"{where}: a capture has exactly one opening and one closing /metrics read"
        raise InputError(msg)
    from vllm_evidence.capture.http import clean_target

    batch_id = _field(manifest, "batch_id", str, where)
    # A hand-edited manifest may carry credentials: never keep or print them.
    target = clean_target(_field(manifest, "target", str, where))
    try:
        batch = _new_batch(
            batch_id=batch_id,
            target=target,
            bracket_open=opening[0],
            exchanges=middle,
            bracket_close=closing[0],
        )
    except ValueError as exc:
        msg = f"{where}: {exc}"
        raise InputError(msg) from exc
    return batch


_STATUS_RE = re.compile(r"[1-5][0-9][0-9]")


def _status_line(path: Path) -> int | None:
    try:
        first = path.read_text(encoding="utf-8").partition("\n")[0]
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"{path}: unreadable headers file"
        raise InputError(msg) from exc
    parts = first.split()
    if len(parts) >= 2 and parts[0].startswith("HTTP/") and _STATUS_RE.fullmatch(parts[1]):
        return int(parts[1])
    msg = f"{path}: first line is not an HTTP status line"
    raise InputError(msg)


@attrs.frozen
class BareBodies:
    """A directory of ``<route>.body`` files (and ``<route>.headers`` status lines) with
    no manifest: bytes a caller assembled, never one bracketed batch."""

    bodies: dict[Route, bytes]
    statuses: dict[Route, int]


def _read_bare(directory: Path) -> BareBodies:
    bodies: dict[Route, bytes] = {}
    statuses: dict[Route, int] = {}
    for route in Route:
        if not route.probe_readable:
            continue
        body_path = directory / f"{route.stem}.body"
        headers_path = directory / f"{route.stem}.headers"
        if body_path.is_file():
            bodies[route] = body_path.read_bytes()
        if headers_path.is_file():
            status = _status_line(headers_path)
            if status is not None:
                statuses[route] = status
    if not bodies and not statuses:
        msg = (
            f"{directory}: no {MANIFEST} and no <route>.body files "
            "(version.body, v1_models.body, metrics.body, …)"
        )
        raise InputError(msg)
    return BareBodies(bodies=bodies, statuses=statuses)


def read(directory: str | Path) -> CaptureBatch | BareBodies:
    """Read a capture directory's bytes back.

    With ``manifest.json``: every body's SHA-256 is checked first (a mismatch raises
    :class:`CaptureIntegrityError` and nothing is returned), then the batch is rebuilt.
    Without: the bare bodies, for a historical bundle.
    """
    path = Path(directory)
    if not path.is_dir():
        msg = f"{path}: not a directory"
        raise InputError(msg)
    if (path / MANIFEST).exists():
        return _read_manifest(path)
    return _read_bare(path)
