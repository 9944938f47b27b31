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
import cattrs

from vllm_evidence._converter import converter
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

__all__ = [
    "MANIFEST",
    "MANIFEST_SCHEMA",
    "BareBodies",
    "Manifest",
    "ManifestEntry",
    "manifest_document",
    "read",
    "save",
]

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


@attrs.frozen(kw_only=True)
class ManifestEntry:
    """One request of a saved capture, as ``manifest.json`` lists it."""

    route: str
    role: ExchangeRole
    transport: Transport
    status: int | None
    headers: list[list[str]]
    """``[name, value]`` pairs, in the order the server sent them."""
    body_file: str | None
    headers_file: str | None
    sha256: str | None
    size: int | None
    size_limit: int
    started_monotonic_ns: int
    ended_monotonic_ns: int
    started_at: datetime
    ended_at: datetime
    detail: str


@attrs.frozen(kw_only=True)
class Manifest:
    """``manifest.json`` of a saved capture (schema ``vllm-evidence/capture-manifest/1``).

    Written and read by the package's converter: cattrs checks every field's JSON type
    on the way in (a wrong one is an :class:`InputError` naming the field), and
    :func:`read` then checks every body's digest."""

    schema: str
    batch_id: str
    target: str
    requests: list[ManifestEntry]


def _entry(exchange: Exchange) -> ManifestEntry:
    stem = _stem(exchange)
    return ManifestEntry(
        route=exchange.route.stem,
        role=exchange.role,
        transport=exchange.transport,
        status=exchange.status,
        headers=[list(pair) for pair in exchange.headers],
        body_file=None if exchange.body is None else f"{stem}.body",
        headers_file=None if exchange.status is None else f"{stem}.headers",
        sha256=exchange.body_sha256,
        size=None if exchange.body is None else len(exchange.body),
        size_limit=exchange.size_limit,
        started_monotonic_ns=exchange.started_monotonic_ns,
        ended_monotonic_ns=exchange.ended_monotonic_ns,
        started_at=exchange.started_at,
        ended_at=exchange.ended_at,
        detail=exchange.detail,
    )


def manifest_document(capture: CaptureBatch) -> dict[str, Any]:
    """The ``manifest.json`` document of ``capture`` (what :func:`save` writes)."""
    return _manifest_json(_manifest(capture))


def _manifest(capture: CaptureBatch) -> Manifest:
    return Manifest(
        schema=MANIFEST_SCHEMA,
        batch_id=capture.batch_id,
        target=capture.target,
        requests=[_entry(exchange) for exchange in capture.all_exchanges()],
    )


def _manifest_json(manifest: Manifest) -> dict[str, Any]:
    document: dict[str, Any] = converter.unstructure(manifest)
    return document


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
        manifest = _manifest(capture)
        for exchange, entry in zip(capture.all_exchanges(), manifest.requests, strict=True):
            if exchange.body is not None and entry.body_file is not None:
                (staging / entry.body_file).write_bytes(exchange.body)
            if entry.headers_file is not None:
                (staging / entry.headers_file).write_text(_headers_text(exchange), encoding="utf-8")
        (staging / MANIFEST).write_text(
            json.dumps(_manifest_json(manifest), indent=2, sort_keys=True) + "\n",
            encoding="utf-8",
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


def _structure(directory: Path, document: object) -> Manifest:
    """The manifest, its JSON types checked by the converter; a wrong one is one line."""
    where = directory / MANIFEST
    try:
        manifest: Manifest = converter.structure(document, Manifest)
    except cattrs.BaseValidationError as exc:
        problem = cattrs.transform_error(exc, path="manifest")[0]
        message, _, field = problem.rpartition(" @ ")
        msg = f"{where}: manifest field {field.removeprefix('manifest.')!r} is missing or "
        msg += f"malformed ({message})"
        raise InputError(msg) from None
    except (TypeError, ValueError) as exc:  # a structure error cattrs did not group
        msg = f"{where}: malformed manifest ({exc})"
        raise InputError(msg) from None
    return manifest


def _exchange(directory: Path, entry: ManifestEntry, index: int) -> Exchange:
    where = f"{directory / MANIFEST} requests[{index}]"
    route = Route.from_stem(entry.route)
    if route is None or not route.probe_readable:
        msg = f"{where}: unknown route"
        raise InputError(msg)
    if any(len(pair) != 2 for pair in entry.headers):
        msg = f"{where}: malformed headers"
        raise InputError(msg)
    headers = tuple((name, value) for name, value in entry.headers)
    body: bytes | None = None
    body_file = entry.body_file
    if body_file is not None:
        digest = entry.sha256
        if digest is None:
            msg = f"{where}: manifest field 'sha256' is missing or malformed"
            raise InputError(msg)
        if Path(body_file).name != body_file:
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
    try:
        return _new_exchange(
            route=route,
            role=entry.role,
            transport=entry.transport,
            status=entry.status,
            headers=headers,
            body=body,
            size_limit=entry.size_limit,
            started_monotonic_ns=entry.started_monotonic_ns,
            ended_monotonic_ns=entry.ended_monotonic_ns,
            started_at=entry.started_at,
            ended_at=entry.ended_at,
            detail=entry.detail,
        )
    except ValueError as exc:
        msg = f"{where}: {exc}"
        raise InputError(msg) from exc


def _read_manifest(directory: Path) -> CaptureBatch:
    try:
        document = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = f"{directory / MANIFEST}: not a readable JSON manifest"
        raise InputError(msg) from exc
    if not isinstance(document, dict) or document.get("schema") != MANIFEST_SCHEMA:
        msg = f"{directory / MANIFEST}: not a {MANIFEST_SCHEMA} manifest"
        raise InputError(msg)
    manifest = _structure(directory, document)
    where = str(directory / MANIFEST)
    exchanges = [_exchange(directory, entry, i) for i, entry in enumerate(manifest.requests)]
    opening = [e for e in exchanges if e.role is ExchangeRole.BRACKET_OPEN]
    closing = [e for e in exchanges if e.role is ExchangeRole.BRACKET_CLOSE]
    middle = tuple(e for e in exchanges if e.role is ExchangeRole.ROUTE)
    if len(opening) != 1 or len(closing) != 1:
        msg = f"{where}: a capture has exactly one opening and one closing /metrics read"
        raise InputError(msg)
    from vllm_evidence.capture.http import clean_target

    try:
        batch = _new_batch(
            batch_id=manifest.batch_id,
            # A hand-edited manifest may carry credentials: never keep or print them.
            target=clean_target(manifest.target),
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
