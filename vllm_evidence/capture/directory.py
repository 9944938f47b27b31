"""Capture directories: a batch saved as raw bodies plus a sealed manifest, read back.

Layout (the same stems as the real captures)::

    manifest.json                    schema, batch id, target, one entry per request,
                                     the startup log if one was saved, and the seal
    metrics.body / metrics.headers   the opening bracket read
    metrics__bracket_close.body      the closing bracket read
    version.body, v1_models.body, …  one per route read, with <stem>.headers
    startup.log                      only when the manifest lists it

The manifest (schema ``vllm-evidence/capture-manifest/2``) covers every entry and every
file: each body and headers file has its SHA-256 and size, and the ``seal`` holds the
SHA-256 of the *canonical manifest* (the document without its seal, as compact JSON with
sorted keys) and, when the capture was saved with a key, an HMAC-SHA256 of the same bytes
with the key's id (the first 8 hex digits of the key's SHA-256).

:func:`read_capture` refuses (:class:`CaptureIntegrityError`) a directory whose manifest
does not match its seal, whose signature does not verify under the key given, with a
file it does not list or without one it lists, or with a file that does not match its
digest; every file is opened without following a symbolic link, must be a regular file,
and its size is checked (``fstat``) before a byte is read.  A ``/1`` manifest (no seal)
is refused with a note.  A directory without ``manifest.json`` is read only when asked
(``bodies=True``, ``explain --bodies``) as :class:`BareBodies`: bytes a caller
assembled, which prove nothing about one batch.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import os
import re
import stat
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Final

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
    "MAX_SAVED_BODY_BYTES",
    "STARTUP_LOG",
    "BareBodies",
    "Manifest",
    "ManifestEntry",
    "Provenance",
    "ProvenanceKind",
    "ReadCapture",
    "SavedLog",
    "Seal",
    "Signature",
    "key_id",
    "manifest_document",
    "read",
    "read_capture",
    "save",
]

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "vllm-evidence/capture-manifest/2"
_OLD_SCHEMAS = ("vllm-evidence/capture-manifest/1",)
STARTUP_LOG = "startup.log"
_CLOSE_SUFFIX = "__bracket_close"
_REASONS = {200: "OK", 302: "Found", 401: "Unauthorized", 404: "Not Found"}
_SIGNATURE_ALGORITHM = "hmac-sha256"

#: The largest body a saved capture may list (eight times the probe's default cap).
MAX_SAVED_BODY_BYTES: Final = 64 * 1024 * 1024
#: The largest ``manifest.json`` read (a real one is a few kilobytes).
_MAX_MANIFEST_BYTES: Final = 4 * 1024 * 1024
#: The largest ``<stem>.headers`` file read.
_MAX_HEADERS_BYTES: Final = 256 * 1024
#: How deep a manifest's JSON may nest (a real one nests four levels).
_MAX_MANIFEST_DEPTH: Final = 16


def _stem(exchange: Exchange) -> str:
    if exchange.role is ExchangeRole.BRACKET_CLOSE:
        return exchange.route.stem + _CLOSE_SUFFIX
    return exchange.route.stem


def _headers_text(exchange: Exchange) -> str:
    reason = _REASONS.get(exchange.status or 0, "")
    lines = [f"HTTP/1.1 {exchange.status} {reason}".rstrip()]
    lines += [f"{key}: {value}" for key, value in exchange.headers]
    return "\n".join(lines) + "\n"


def key_id(key: bytes) -> str:
    """A signing key's public name: the first 8 hex digits of its SHA-256."""
    return hashlib.sha256(key).hexdigest()[:8]


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
    """The body's SHA-256."""
    size: int | None
    """The body's size in bytes."""
    headers_sha256: str | None
    """The headers file's SHA-256."""
    size_limit: int
    started_monotonic_ns: int
    ended_monotonic_ns: int
    started_at: datetime
    ended_at: datetime
    detail: str


@attrs.frozen(kw_only=True)
class SavedLog:
    """The startup log saved beside the bodies (``startup.log``), with its digest."""

    file: str
    sha256: str
    size: int


@attrs.frozen(kw_only=True)
class Signature:
    """An HMAC-SHA256 of the canonical manifest, under the key named by ``key_id``."""

    algorithm: str
    key_id: str
    hmac_sha256: str


@attrs.frozen(kw_only=True)
class Seal:
    """The canonical manifest's SHA-256, and its signature when saved with a key."""

    canonical_sha256: str
    signature: Signature | None


@attrs.frozen(kw_only=True)
class Manifest:
    """``manifest.json`` of a saved capture (schema ``vllm-evidence/capture-manifest/2``).

    Written and read by the package's converter: cattrs checks every field's JSON type
    on the way in (a wrong one is an :class:`InputError` naming the field), and
    :func:`read_capture` checks the seal, the file set and every file's digest."""

    schema: str
    batch_id: str
    target: str
    requests: list[ManifestEntry]
    startup_log: SavedLog | None
    seal: Seal | None = None
    """``None`` only in the canonical form the seal is computed over."""


def _entry(exchange: Exchange) -> ManifestEntry:
    stem = _stem(exchange)
    headers_text = None if exchange.status is None else _headers_text(exchange)
    return ManifestEntry(
        route=exchange.route.stem,
        role=exchange.role,
        transport=exchange.transport,
        status=exchange.status,
        headers=[list(pair) for pair in exchange.headers],
        body_file=None if exchange.body is None else f"{stem}.body",
        headers_file=None if headers_text is None else f"{stem}.headers",
        sha256=exchange.body_sha256,
        size=None if exchange.body is None else len(exchange.body),
        headers_sha256=None
        if headers_text is None
        else hashlib.sha256(headers_text.encode("utf-8")).hexdigest(),
        size_limit=exchange.size_limit,
        started_monotonic_ns=exchange.started_monotonic_ns,
        ended_monotonic_ns=exchange.ended_monotonic_ns,
        started_at=exchange.started_at,
        ended_at=exchange.ended_at,
        detail=exchange.detail,
    )


def _canonical(document: dict[str, Any]) -> bytes:
    """The bytes a seal covers: the document without ``seal``, compact, keys sorted."""
    unsealed = {key: value for key, value in document.items() if key != "seal"}
    return json.dumps(unsealed, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _sign(canonical: bytes, key: bytes) -> str:
    return hmac.new(key, canonical, hashlib.sha256).hexdigest()


def manifest_document(
    capture: CaptureBatch, *, startup_log: SavedLog | None = None, sign_key: bytes | None = None
) -> dict[str, Any]:
    """The ``manifest.json`` document of ``capture`` (what :func:`save` writes), sealed."""
    return _manifest_json(_manifest(capture, startup_log, sign_key))


def _manifest(
    capture: CaptureBatch, startup_log: SavedLog | None, sign_key: bytes | None
) -> Manifest:
    unsealed = Manifest(
        schema=MANIFEST_SCHEMA,
        batch_id=capture.batch_id,
        target=capture.target,
        requests=[_entry(exchange) for exchange in capture.all_exchanges()],
        startup_log=startup_log,
    )
    canonical = _canonical(_manifest_json(unsealed))
    signature = (
        None
        if sign_key is None
        else Signature(
            algorithm=_SIGNATURE_ALGORITHM,
            key_id=key_id(sign_key),
            hmac_sha256=_sign(canonical, sign_key),
        )
    )
    seal = Seal(canonical_sha256=hashlib.sha256(canonical).hexdigest(), signature=signature)
    return attrs.evolve(unsealed, seal=seal)


def _manifest_json(manifest: Manifest) -> dict[str, Any]:
    document: dict[str, Any] = converter.unstructure(manifest)
    if manifest.seal is None:
        del document["seal"]
    return document


def save(
    capture: CaptureBatch,
    directory: str | Path,
    *,
    startup_log: str | Path | None = None,
    sign_key: bytes | None = None,
) -> Path:
    """Write ``capture`` to a new ``directory``, atomically; return its path.

    ``startup_log`` (a file) is copied in as ``startup.log`` and listed with its digest;
    ``sign_key`` adds an HMAC-SHA256 of the canonical manifest (:class:`Signature`).
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
    if sign_key is not None and not sign_key:
        msg = "the signing key is empty"
        raise InputError(msg)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=parent))
    try:
        saved_log = None
        if startup_log is not None:
            saved_log = _copy_log(Path(startup_log), staging / STARTUP_LOG)
        manifest = _manifest(capture, saved_log, sign_key)
        for exchange, entry in zip(capture.all_exchanges(), manifest.requests, strict=True):
            if exchange.body is not None and entry.body_file is not None:
                (staging / entry.body_file).write_bytes(exchange.body)
            if entry.headers_file is not None:
                (staging / entry.headers_file).write_bytes(_headers_text(exchange).encode())
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


def _copy_log(source: Path, target: Path) -> SavedLog:
    """Copy a startup log, digesting what was copied."""
    digest = hashlib.sha256()
    size = 0
    try:
        with source.open("rb") as src, target.open("xb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                dst.write(chunk)
    except OSError as exc:
        msg = f"{source}: cannot copy the startup log ({exc.strerror})"
        raise InputError(msg) from None
    return SavedLog(file=STARTUP_LOG, sha256=digest.hexdigest(), size=size)


class ProvenanceKind(enum.Enum):
    """What a read directory proves about its bytes."""

    SIGNED = "signed"
    """Sealed, and the signature verified under the key given."""
    SIGNATURE_UNVERIFIED = "signature_unverified"
    """Sealed and signed, but no key was given to verify the signature with."""
    UNSIGNED = "unsigned"
    """Sealed without a signature: edits that recompute the seal are not detected."""
    BARE = "bare"
    """No manifest: bodies a caller assembled, read because ``bodies=True`` was asked."""


@attrs.frozen
class Provenance:
    """Where a read capture's bytes come from, and what vouches for them."""

    directory: str
    kind: ProvenanceKind
    canonical_sha256: str | None
    key_id: str | None
    startup_log: str | None
    """The path of the startup log the manifest lists (digest checked), if any."""
    startup_log_sha256: str | None
    """Its SHA-256 as listed: a reader of the log compares the digest it computes."""

    def describe(self) -> str:
        """One line for a report."""
        where = f"capture directory {self.directory}"
        seal = f"manifest sha256 {self.canonical_sha256[:12]}" if self.canonical_sha256 else ""
        match self.kind:
            case ProvenanceKind.SIGNED:
                return f"{where}: {seal}, signed by key id {self.key_id} (verified)"
            case ProvenanceKind.SIGNATURE_UNVERIFIED:
                return (
                    f"{where}: {seal}, signature by key id {self.key_id} not verified "
                    "(no key given): treat as unsigned"
                )
            case ProvenanceKind.UNSIGNED:
                return (
                    f"{where}: {seal}, unsigned (the seal detects edits that do not "
                    "recompute it; only a signature tells your captures from edited ones)"
                )
            case ProvenanceKind.BARE:
                return (
                    f"{where}: bare bodies read with --bodies (no manifest: nothing shows "
                    "these bytes were one batch, or unedited)"
                )


@attrs.frozen
class ReadCapture:
    """A directory's bytes, verified as far as its manifest allows, and their provenance."""

    capture: CaptureBatch | BareBodies
    provenance: Provenance


def _integrity(path: object, problem: str) -> CaptureIntegrityError:
    return CaptureIntegrityError(
        f"{path}: {problem}; the capture was altered and nothing is derived from it"
    )


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\x00" not in name


def _read_file(
    dir_fd: int, directory: Path, name: str, limit: int, *, exact: bool = False
) -> bytes:
    """A regular file's bytes, never through a symbolic link, its size checked first
    (at most ``limit`` bytes, or exactly ``limit`` when ``exact``)."""
    path = directory / name
    if not _plain_name(name):
        msg = f"{path}: not a plain file name"
        raise InputError(msg)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if path.is_symlink():
            raise _integrity(path, "a symbolic link, which a capture never holds") from None
        msg = f"{path}: listed in the manifest but unreadable ({exc.strerror})"
        raise CaptureIntegrityError(msg) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _integrity(path, "not a regular file (a FIFO, device or directory)")
        if exact and info.st_size != limit:
            raise _integrity(
                path, f"size {info.st_size:,} bytes does not match the manifest's {limit:,}"
            )
        if info.st_size > limit:
            raise _integrity(path, f"{info.st_size:,} bytes, past the {limit:,} bytes allowed")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise _integrity(path, f"grew past the {limit:,} bytes allowed while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_dir(directory: Path) -> int:
    try:
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        msg = f"{directory}: not a readable directory ({exc.strerror})"
        raise InputError(msg) from None


def _listing(dir_fd: int) -> set[str]:
    """The names in an open directory (by descriptor: the directory read is the one opened)."""
    return set(os.listdir(dir_fd))  # pathlib cannot list a descriptor


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        msg = "a key appears twice"
        raise ValueError(msg)
    return dict(pairs)


def _depth_ok(text: str) -> bool:
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > _MAX_MANIFEST_DEPTH:
                return False
        elif char in "]}":
            depth -= 1
    return True


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


def _exchange(
    dir_fd: int, directory: Path, entry: ManifestEntry, index: int
) -> tuple[Exchange, list[str]]:
    """The entry's exchange, its files read and checked; and the files it lists."""
    where = f"{directory / MANIFEST} requests[{index}]"
    route = Route.from_stem(entry.route)
    if route is None or not route.probe_readable:
        msg = f"{where}: unknown route"
        raise InputError(msg)
    if any(len(pair) != 2 for pair in entry.headers):
        msg = f"{where}: malformed headers"
        raise InputError(msg)
    headers = tuple((name, value) for name, value in entry.headers)
    files: list[str] = []
    body: bytes | None = None
    if entry.body_file is not None:
        digest, size = entry.sha256, entry.size
        if digest is None or size is None or not 0 <= size <= MAX_SAVED_BODY_BYTES:
            msg = f"{where}: a body file needs its sha256 and a size up to {MAX_SAVED_BODY_BYTES}"
            raise InputError(msg)
        files.append(entry.body_file)
        body = _read_file(dir_fd, directory, entry.body_file, size, exact=True)
        actual = hashlib.sha256(body).hexdigest()
        if len(body) != size or actual != digest:
            raise _integrity(
                directory / entry.body_file,
                f"SHA-256 {actual} does not match the manifest's {digest}",
            )
    elif entry.sha256 is not None or entry.size is not None:
        msg = f"{where}: a digest without a body file"
        raise InputError(msg)
    if entry.headers_file is not None:
        if entry.headers_sha256 is None:
            msg = f"{where}: a headers file needs its headers_sha256"
            raise InputError(msg)
        files.append(entry.headers_file)
        text = _read_file(dir_fd, directory, entry.headers_file, _MAX_HEADERS_BYTES)
        actual = hashlib.sha256(text).hexdigest()
        if actual != entry.headers_sha256:
            raise _integrity(
                directory / entry.headers_file,
                f"SHA-256 {actual} does not match the manifest's {entry.headers_sha256}",
            )
    try:
        exchange = _new_exchange(
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
    return exchange, files


def _seal_kind(
    directory: Path, document: dict[str, Any], manifest: Manifest, verify_key: bytes | None
) -> ProvenanceKind:
    """Check the seal (and the signature under ``verify_key``); what the manifest proves."""
    where = directory / MANIFEST
    seal = manifest.seal
    if seal is None:
        raise _integrity(where, "the manifest has no seal")
    canonical = _canonical(document)
    if hashlib.sha256(canonical).hexdigest() != seal.canonical_sha256:
        raise _integrity(where, "the manifest does not match its seal (canonical_sha256)")
    signature = seal.signature
    if verify_key is None:
        return ProvenanceKind.UNSIGNED if signature is None else ProvenanceKind.SIGNATURE_UNVERIFIED
    if signature is None:
        raise _integrity(
            where, f"unsigned, but a signature by key id {key_id(verify_key)} is required"
        )
    if signature.algorithm != _SIGNATURE_ALGORITHM:
        raise _integrity(where, f"signed with {signature.algorithm!r}, not {_SIGNATURE_ALGORITHM}")
    if signature.key_id != key_id(verify_key):
        raise _integrity(
            where,
            f"signed by key id {signature.key_id}, not by the key given ({key_id(verify_key)})",
        )
    if not hmac.compare_digest(_sign(canonical, verify_key), signature.hmac_sha256):
        raise _integrity(where, f"the signature by key id {signature.key_id} does not verify")
    return ProvenanceKind.SIGNED


def _read_manifest(dir_fd: int, directory: Path, verify_key: bytes | None) -> ReadCapture:
    where = directory / MANIFEST
    raw = _read_file(dir_fd, directory, MANIFEST, _MAX_MANIFEST_BYTES)
    try:
        text = raw.decode("utf-8")
        document = json.loads(text, object_pairs_hook=_no_duplicates) if _depth_ok(text) else None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = f"{where}: not a readable JSON manifest ({exc})"
        raise InputError(msg) from None
    if document is None:
        msg = f"{where}: not a readable JSON manifest (nested deeper than {_MAX_MANIFEST_DEPTH})"
        raise InputError(msg)
    schema = document.get("schema") if isinstance(document, dict) else None
    if schema in _OLD_SCHEMAS:
        msg = (
            f"{where}: a {schema} manifest has no seal over its entries, so an edited "
            "status or a dropped entry would go unseen; capture again, or read its bodies "
            "as a historical bundle with --bodies after moving manifest.json aside"
        )
        raise InputError(msg)
    if not isinstance(document, dict) or schema != MANIFEST_SCHEMA:
        msg = f"{where}: not a {MANIFEST_SCHEMA} manifest"
        raise InputError(msg)
    manifest = _structure(directory, document)
    kind = _seal_kind(directory, document, manifest, verify_key)
    exchanges: list[Exchange] = []
    listed = {MANIFEST}
    for index, entry in enumerate(manifest.requests):
        exchange, files = _exchange(dir_fd, directory, entry, index)
        for name in files:
            if name in listed:
                msg = f"{where} requests[{index}]: {name} is listed twice"
                raise InputError(msg)
            listed.add(name)
        exchanges.append(exchange)
    log_path = None
    if manifest.startup_log is not None:
        log = manifest.startup_log
        if log.file in listed or not _plain_name(log.file):
            msg = f"{where}: malformed startup_log file name"
            raise InputError(msg)
        listed.add(log.file)
        log_path = str(directory / log.file)
        _check_log(dir_fd, directory, log)
    present = set(_listing(dir_fd))
    if present - listed:
        raise _integrity(
            directory, f"holds files the manifest does not list: {_names(present - listed)}"
        )
    if listed - present:
        raise _integrity(directory, f"lacks files the manifest lists: {_names(listed - present)}")
    opening = [e for e in exchanges if e.role is ExchangeRole.BRACKET_OPEN]
    closing = [e for e in exchanges if e.role is ExchangeRole.BRACKET_CLOSE]
    middle = tuple(e for e in exchanges if e.role is ExchangeRole.ROUTE)
    if len(opening) != 1 or len(closing) != 1:
        msg = f"{where}: a capture has exactly one opening and one closing /metrics read"
        raise InputError(msg)
    from vllm_evidence.capture._target import clean_target

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
    seal = manifest.seal
    signature = None if seal is None else seal.signature
    return ReadCapture(
        capture=batch,
        provenance=Provenance(
            directory=str(directory),
            kind=kind,
            canonical_sha256=None if seal is None else seal.canonical_sha256,
            key_id=None if signature is None else signature.key_id,
            startup_log=log_path,
            startup_log_sha256=None
            if manifest.startup_log is None
            else manifest.startup_log.sha256,
        ),
    )


def _names(names: set[str]) -> str:
    shown = sorted(names)
    more = f", … ({len(shown) - 5} more)" if len(shown) > 5 else ""
    return ", ".join(repr(n) for n in shown[:5]) + more


def _check_log(dir_fd: int, directory: Path, log: SavedLog) -> None:
    """The listed startup log: a regular file of the listed size and digest."""
    path = directory / log.file
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(log.file, flags, dir_fd=dir_fd)
    except OSError as exc:
        msg = f"{path}: listed in the manifest but unreadable ({exc.strerror})"
        raise CaptureIntegrityError(msg) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _integrity(path, "not a regular file (a FIFO, device or directory)")
        if info.st_size != log.size:
            raise _integrity(path, f"{info.st_size:,} bytes, but the manifest lists {log.size:,}")
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        if digest.hexdigest() != log.sha256:
            raise _integrity(path, f"SHA-256 {digest.hexdigest()} does not match the manifest's")
    finally:
        os.close(fd)


_STATUS_RE = re.compile(r"[1-5][0-9][0-9]")


def _status_line(dir_fd: int, directory: Path, name: str) -> int | None:
    path = directory / name
    try:
        first = _read_file(dir_fd, directory, name, _MAX_HEADERS_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{path}: unreadable headers file"
        raise InputError(msg) from exc
    parts = first.partition("\n")[0].split()
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


def _read_bare(dir_fd: int, directory: Path) -> BareBodies:
    bodies: dict[Route, bytes] = {}
    statuses: dict[Route, int] = {}
    present = set(_listing(dir_fd))
    for route in Route:
        if not route.probe_readable:
            continue
        body_name, headers_name = f"{route.stem}.body", f"{route.stem}.headers"
        if body_name in present:
            bodies[route] = _read_file(dir_fd, directory, body_name, MAX_SAVED_BODY_BYTES)
        if headers_name in present:
            status = _status_line(dir_fd, directory, headers_name)
            if status is not None:
                statuses[route] = status
    if not bodies and not statuses:
        msg = (
            f"{directory}: no {MANIFEST} and no <route>.body files "
            "(version.body, v1_models.body, metrics.body, …)"
        )
        raise InputError(msg)
    return BareBodies(bodies=bodies, statuses=statuses)


def read_capture(
    directory: str | Path, *, bodies: bool = False, verify_key: bytes | None = None
) -> ReadCapture:
    """Read a capture directory's bytes back, with what vouches for them.

    With ``manifest.json``: the seal, the signature (when ``verify_key`` is given: a
    missing or bad one is refused), the file set and every file's size and digest are
    checked before anything is returned (:class:`CaptureIntegrityError`), then the batch
    is rebuilt.  Without: an :class:`InputError`, unless ``bodies=True`` asks for the bare
    bodies (a historical bundle, marked so in the provenance); a key to verify with is
    then refused, as there is nothing signed.
    """
    path = Path(directory)
    if not path.is_dir():
        msg = f"{path}: not a directory"
        raise InputError(msg)
    dir_fd = _open_dir(path)
    try:
        if MANIFEST in _listing(dir_fd):
            return _read_manifest(dir_fd, path, verify_key)
        if not bodies:
            msg = (
                f"{path}: no {MANIFEST}; a directory of bare <route>.body files proves "
                "nothing about one batch and is read only when asked (explain --bodies)"
            )
            raise InputError(msg)
        if verify_key is not None:
            raise _integrity(path, f"no {MANIFEST}, so nothing here is signed")
        return ReadCapture(
            capture=_read_bare(dir_fd, path),
            provenance=Provenance(
                directory=str(path),
                kind=ProvenanceKind.BARE,
                canonical_sha256=None,
                key_id=None,
                startup_log=None,
                startup_log_sha256=None,
            ),
        )
    finally:
        os.close(dir_fd)


def read(
    directory: str | Path, *, bodies: bool = False, verify_key: bytes | None = None
) -> CaptureBatch | BareBodies:
    """:func:`read_capture`'s bytes, without their provenance."""
    return read_capture(directory, bodies=bodies, verify_key=verify_key).capture
