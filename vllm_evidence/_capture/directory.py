"""Capture directories: a batch saved as raw bodies plus a sealed manifest, read back.

Layout (the same stems as the real captures)::

    manifest.json                    schema, batch id, target, one entry per request,
                                     the startup log if one was saved, and the seal
    metrics.body / metrics.headers   the opening bracket read
    metrics__twin.body               its twin: the second opening read
    metrics__bracket_close.body      the closing bracket read
    metrics__bracket_close__twin.body  its twin: the second closing read
    version.body, v1_models.body, …  one per route read, with <stem>.headers
    startup.log                      only when the manifest lists it

The manifest (schema ``vllm-evidence/capture-manifest/3``, its types, seal and
signature in :mod:`vllm_evidence._capture.manifest`) covers every entry and every file.
A capture saved with a key is signed with Ed25519 (:mod:`vllm_evidence._capture.signing`):
saved with a :class:`~vllm_evidence._capture.signing.SigningKey`, verified with its
public half, which cannot sign.  A ``/2`` capture saved before is read as it was:
unsigned, or HMAC-signed and verified with the same key's bytes.
Each end's two ``/metrics`` reads share the end's role and are listed in the order they
were read; a capture saved before the probe read twins lists one read at each end and
loads as a batch without twins (its front-door join says processes were not counted).

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

import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Final

import attrs

from vllm_evidence._capture._files import (
    integrity,
    listing,
    names_text,
    open_dir,
    open_regular,
    plain_name,
    read_file,
)
from vllm_evidence._capture.batch import (
    CaptureBatch,
    CaptureOrigin,
    Exchange,
    ExchangeRole,
    Provenance,
    ProvenanceKind,
    _new_batch,
    _new_exchange,
)
from vllm_evidence._capture.manifest import (
    MANIFEST,
    MANIFEST_SCHEMA,
    MAX_MANIFEST_BYTES,
    STARTUP_LOG,
    Ed25519Signature,
    Manifest,
    ManifestEntry,
    SavedLog,
    Seal,
    Signature,
    build_manifest,
    check_signing_key,
    headers_text,
    manifest_document,
    manifest_json,
    parse_manifest,
    seal_kind,
)
from vllm_evidence._capture.signing import SigningKey, VerificationKey, check_hmac_key
from vllm_evidence.errors import CaptureIntegrityError, InputError
from vllm_evidence.upstream._routes import Route

__all__ = [
    "MANIFEST",
    "MANIFEST_SCHEMA",
    "MAX_SAVED_BODY_BYTES",
    "STARTUP_LOG",
    "BareBodies",
    "Ed25519Signature",
    "Manifest",
    "ManifestEntry",
    "Provenance",
    "ProvenanceKind",
    "ReadCapture",
    "SavedLog",
    "Seal",
    "Signature",
    "manifest_document",
    "read",
    "read_capture",
    "save",
]


#: The largest body a saved capture may list (eight times the probe's default cap).
MAX_SAVED_BODY_BYTES: Final = 64 * 1024 * 1024
#: The largest ``<stem>.headers`` file read.
_MAX_HEADERS_BYTES: Final = 256 * 1024


#: The origins whose bytes a probe received: the only batches a signature may vouch for.
_SIGNABLE: Final = frozenset({CaptureOrigin.PROBED, CaptureOrigin.LOADED_SIGNED})


def save(
    capture: CaptureBatch,
    directory: str | Path,
    *,
    startup_log: str | Path | None = None,
    sign_key: SigningKey | None = None,
) -> Path:
    """Write ``capture`` to a new ``directory``, atomically; return its path.

    ``startup_log`` (a file) is copied in as ``startup.log`` and listed with its digest;
    ``sign_key`` (an Ed25519 :class:`~vllm_evidence._capture.signing.SigningKey`,
    :func:`~vllm_evidence._capture.signing.read_signing_key`) adds its signature of the
    canonical manifest (:class:`Ed25519Signature`); HMAC key bytes are refused (a capture
    is no longer signed with one).  A signature says "these are the bytes my probe
    received", so only a batch whose bytes a probe received is signed: one this process
    probed, or one read back under a signature that verified.  A generated batch (the
    test kit's) or one loaded unverified is saved unsigned or not at all
    (:class:`InputError`): it reads back as loaded, and joins no log.
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
    check_signing_key(sign_key)  # before anything is written
    if sign_key is not None and capture.origin not in _SIGNABLE:
        msg = (
            f"a {capture.origin.value} batch is not signed: a signature vouches for bytes a "
            "probe received, and no probe received these (save it without a key; it reads "
            "back as loaded and joins no log)"
        )
        raise InputError(msg)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=parent))
    try:
        saved_log = None
        if startup_log is not None:
            saved_log = _copy_log(Path(startup_log), staging / STARTUP_LOG)
        manifest = build_manifest(capture, saved_log, sign_key)
        for exchange, entry in zip(capture.all_exchanges(), manifest.requests, strict=True):
            if exchange.body is not None and entry.body_file is not None:
                (staging / entry.body_file).write_bytes(exchange.body)
            if entry.headers_file is not None:
                (staging / entry.headers_file).write_bytes(headers_text(exchange).encode())
        (staging / MANIFEST).write_text(
            json.dumps(manifest_json(manifest), indent=2, sort_keys=True) + "\n",
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
    # A regular file only, opened without blocking: a FIFO or /dev/zero is refused, not
    # waited on or copied forever.
    fd = open_regular(source, "startup log")
    try:
        with os.fdopen(fd, "rb") as src, target.open("xb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                dst.write(chunk)
    except OSError as exc:
        msg = f"{source}: cannot copy the startup log ({exc.strerror})"
        raise InputError(msg) from None
    return SavedLog(file=STARTUP_LOG, sha256=digest.hexdigest(), size=size)


@attrs.frozen
class ReadCapture:
    """A directory's bytes, verified as far as its manifest allows, and their provenance."""

    capture: CaptureBatch | BareBodies
    provenance: Provenance


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
        body = read_file(dir_fd, directory, entry.body_file, size, exact=True)
        actual = hashlib.sha256(body).hexdigest()
        if len(body) != size or actual != digest:
            raise integrity(
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
        text = read_file(dir_fd, directory, entry.headers_file, _MAX_HEADERS_BYTES)
        actual = hashlib.sha256(text).hexdigest()
        if actual != entry.headers_sha256:
            raise integrity(
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


def _read_manifest(
    dir_fd: int, directory: Path, verify_key: VerificationKey | bytes | None
) -> ReadCapture:
    where = directory / MANIFEST
    raw = read_file(dir_fd, directory, MANIFEST, MAX_MANIFEST_BYTES)
    manifest, document = parse_manifest(raw, directory)
    kind = seal_kind(directory, document, manifest, verify_key)
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
        if log.file in listed or not plain_name(log.file):
            msg = f"{where}: malformed startup_log file name"
            raise InputError(msg)
        listed.add(log.file)
        log_path = str(directory / log.file)
        _check_log(dir_fd, directory, log)
    present = set(listing(dir_fd))
    if present - listed:
        raise integrity(
            directory, f"holds files the manifest does not list: {names_text(present - listed)}"
        )
    if listed - present:
        raise integrity(
            directory, f"lacks files the manifest lists: {names_text(listed - present)}"
        )
    opening = [e for e in exchanges if e.role is ExchangeRole.BRACKET_OPEN]
    closing = [e for e in exchanges if e.role is ExchangeRole.BRACKET_CLOSE]
    middle = tuple(e for e in exchanges if e.role is ExchangeRole.ROUTE)
    if (len(opening), len(closing)) not in ((1, 1), (2, 2)):
        msg = (
            f"{where}: a capture has two /metrics reads at each end (one at each in a "
            "capture saved before the twin reads)"
        )
        raise InputError(msg)
    from vllm_evidence._capture._target import clean_target

    seal = manifest.seal
    signature = None if seal is None else seal.signature
    provenance = Provenance(
        directory=str(directory),
        kind=kind,
        canonical_sha256=None if seal is None else seal.canonical_sha256,
        key_id=None if signature is None else signature.key_id,
        startup_log=log_path,
        startup_log_sha256=None if manifest.startup_log is None else manifest.startup_log.sha256,
    )
    try:
        batch = _new_batch(
            batch_id=manifest.batch_id,
            # A hand-edited manifest may carry credentials: never keep or print them.
            target=clean_target(manifest.target),
            bracket_open=opening[0],
            exchanges=middle,
            bracket_close=closing[0],
            bracket_open_twin=opening[1] if len(opening) == 2 else None,
            bracket_close_twin=closing[1] if len(closing) == 2 else None,
            # Only a signature verified under the caller's key vouches for the bytes.
            origin=CaptureOrigin.LOADED_SIGNED
            if kind is ProvenanceKind.SIGNED
            else CaptureOrigin.LOADED,
            provenance=provenance,
        )
    except ValueError as exc:
        msg = f"{where}: {exc}"
        raise InputError(msg) from exc
    return ReadCapture(capture=batch, provenance=provenance)


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
            raise integrity(path, "not a regular file (a FIFO, device or directory)")
        if info.st_size != log.size:
            raise integrity(path, f"{info.st_size:,} bytes, but the manifest lists {log.size:,}")
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        if digest.hexdigest() != log.sha256:
            raise integrity(path, f"SHA-256 {digest.hexdigest()} does not match the manifest's")
    finally:
        os.close(fd)


_STATUS_RE = re.compile(r"[1-5][0-9][0-9]")


def _status_line(dir_fd: int, directory: Path, name: str) -> int | None:
    path = directory / name
    try:
        first = read_file(dir_fd, directory, name, _MAX_HEADERS_BYTES).decode("utf-8")
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
    present = set(listing(dir_fd))
    for route in Route:
        if not route.probe_readable:
            continue
        body_name, headers_name = f"{route.stem}.body", f"{route.stem}.headers"
        if body_name in present:
            bodies[route] = read_file(dir_fd, directory, body_name, MAX_SAVED_BODY_BYTES)
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


def _check_verify_key(verify_key: object) -> VerificationKey | bytes | None:
    """``verify_key`` as :func:`read_capture` takes it; an :class:`InputError` (before the
    directory is read) for anything else, a signing key included."""
    if verify_key is None or isinstance(verify_key, VerificationKey):
        return verify_key
    if isinstance(verify_key, SigningKey):
        msg = (
            "verify_key is a SigningKey: a capture is verified with the public half only "
            "(its .verification_key, or read_verification_key(PUBLIC.pem))"
        )
        raise InputError(msg)
    return check_hmac_key(verify_key)  # a /2 capture's HMAC key: at least 32 bytes


def read_capture(
    directory: str | Path,
    *,
    bodies: bool = False,
    verify_key: VerificationKey | bytes | None = None,
) -> ReadCapture:
    """Read a capture directory's bytes back, with what vouches for them.

    With ``manifest.json``: the seal, the signature (when ``verify_key`` is given: a
    missing or bad one is refused), the file set and every file's size and digest are
    checked before anything is returned (:class:`CaptureIntegrityError`), then the batch
    is rebuilt.  ``verify_key`` is the signer's
    :class:`~vllm_evidence._capture.signing.VerificationKey` (Ed25519), or, for a capture
    saved before (``capture-manifest/2``) with an HMAC key, that key's bytes.  Without a
    manifest: an :class:`InputError`, unless ``bodies=True`` asks for the bare bodies (a
    historical bundle, marked so in the provenance); a key to verify with is then
    refused, as there is nothing signed.
    """
    path = Path(directory)
    verify_key = _check_verify_key(verify_key)
    if not path.is_dir():
        msg = f"{path}: not a directory"
        raise InputError(msg)
    dir_fd = open_dir(path)
    try:
        if MANIFEST in listing(dir_fd):
            return _read_manifest(dir_fd, path, verify_key)
        if not bodies:
            msg = (
                f"{path}: no {MANIFEST}; a directory of bare <route>.body files proves "
                "nothing about one batch and is read only when asked (explain --bodies)"
            )
            raise InputError(msg)
        if verify_key is not None:
            raise integrity(path, f"no {MANIFEST}, so nothing here is signed")
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
    directory: str | Path,
    *,
    bodies: bool = False,
    verify_key: VerificationKey | bytes | None = None,
) -> CaptureBatch | BareBodies:
    """:func:`read_capture`'s bytes, without their provenance."""
    return read_capture(directory, bodies=bodies, verify_key=verify_key).capture
