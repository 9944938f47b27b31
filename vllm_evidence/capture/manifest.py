"""A saved capture's ``manifest.json``: its types, its seal and its signature.

The manifest (schema ``vllm-evidence/capture-manifest/2``) covers every entry and every
file of a capture directory: each body and headers file has its SHA-256 and size, and the
``seal`` holds the SHA-256 of the *canonical manifest* (the document without its seal, as
compact JSON with sorted keys) and, when the capture was saved with a key, an HMAC-SHA256
of the same bytes with the key's id (the first 8 hex digits of the key's SHA-256).
:mod:`vllm_evidence.capture.directory` writes and reads the files it lists.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import attrs
import cattrs

from vllm_evidence._converter import converter
from vllm_evidence.capture._files import integrity
from vllm_evidence.capture._signing import ALGORITHM, canonical, key_id, sign, signature_matches
from vllm_evidence.capture.batch import (
    CaptureBatch,
    Exchange,
    ExchangeRole,
    ProvenanceKind,
    Transport,
)
from vllm_evidence.errors import InputError

__all__ = [
    "CLOSE_SUFFIX",
    "MANIFEST",
    "MANIFEST_SCHEMA",
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_DEPTH",
    "OLD_SCHEMAS",
    "STARTUP_LOG",
    "TWIN_SUFFIX",
    "Manifest",
    "ManifestEntry",
    "SavedLog",
    "Seal",
    "Signature",
    "build_manifest",
    "headers_text",
    "key_id",
    "manifest_document",
    "manifest_json",
    "parse_manifest",
    "seal_kind",
    "stem",
]


MANIFEST = "manifest.json"


MANIFEST_SCHEMA = "vllm-evidence/capture-manifest/2"


OLD_SCHEMAS = ("vllm-evidence/capture-manifest/1",)


STARTUP_LOG = "startup.log"


CLOSE_SUFFIX = "__bracket_close"


#: The file stem of an end's second ``/metrics`` read adds this to its end's stem
#: (``metrics__twin``, ``metrics__bracket_close__twin``); the manifest lists it after
#: the first read of its end, with the same role.  A capture saved before the probe read
#: twins lists none, and still loads.
TWIN_SUFFIX = "__twin"


_REASONS = {200: "OK", 302: "Found", 401: "Unauthorized", 404: "Not Found"}


#: The largest ``manifest.json`` read (a real one is a few kilobytes).
MAX_MANIFEST_BYTES: Final = 4 * 1024 * 1024


#: How deep a manifest's JSON may nest (a real one nests four levels).
MAX_MANIFEST_DEPTH: Final = 16


def stem(exchange: Exchange, *, twin: bool = False) -> str:
    base = exchange.route.stem
    if exchange.role is ExchangeRole.BRACKET_CLOSE:
        base += CLOSE_SUFFIX
    return base + TWIN_SUFFIX if twin else base


def headers_text(exchange: Exchange) -> str:
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


def _entry(exchange: Exchange, *, twin: bool = False) -> ManifestEntry:
    base = stem(exchange, twin=twin)
    text = None if exchange.status is None else headers_text(exchange)
    return ManifestEntry(
        route=exchange.route.stem,
        role=exchange.role,
        transport=exchange.transport,
        status=exchange.status,
        headers=[list(pair) for pair in exchange.headers],
        body_file=None if exchange.body is None else f"{base}.body",
        headers_file=None if text is None else f"{base}.headers",
        sha256=exchange.body_sha256,
        size=None if exchange.body is None else len(exchange.body),
        headers_sha256=None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest(),
        size_limit=exchange.size_limit,
        started_monotonic_ns=exchange.started_monotonic_ns,
        ended_monotonic_ns=exchange.ended_monotonic_ns,
        started_at=exchange.started_at,
        ended_at=exchange.ended_at,
        detail=exchange.detail,
    )


def manifest_document(
    capture: CaptureBatch, *, startup_log: SavedLog | None = None, sign_key: bytes | None = None
) -> dict[str, Any]:
    """The ``manifest.json`` document of ``capture`` (what :func:`save` writes), sealed."""
    return manifest_json(build_manifest(capture, startup_log, sign_key))


def build_manifest(
    capture: CaptureBatch, startup_log: SavedLog | None, sign_key: bytes | None
) -> Manifest:
    unsealed = Manifest(
        schema=MANIFEST_SCHEMA,
        batch_id=capture.batch_id,
        target=capture.target,
        requests=[
            _entry(
                exchange,
                twin=exchange is capture.bracket_open_twin
                or exchange is capture.bracket_close_twin,
            )
            for exchange in capture.all_exchanges()
        ],
        startup_log=startup_log,
    )
    covered = canonical(manifest_json(unsealed), without="seal")
    signature = (
        None
        if sign_key is None
        else Signature(
            algorithm=ALGORITHM,
            key_id=key_id(sign_key),
            hmac_sha256=sign(covered, sign_key),
        )
    )
    seal = Seal(canonical_sha256=hashlib.sha256(covered).hexdigest(), signature=signature)
    return attrs.evolve(unsealed, seal=seal)


def manifest_json(manifest: Manifest) -> dict[str, Any]:
    document: dict[str, Any] = converter.unstructure(manifest)
    if manifest.seal is None:
        del document["seal"]
    return document


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
            if deepest > MAX_MANIFEST_DEPTH:
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


def seal_kind(
    directory: Path, document: dict[str, Any], manifest: Manifest, verify_key: bytes | None
) -> ProvenanceKind:
    """Check the seal (and the signature under ``verify_key``); what the manifest proves."""
    where = directory / MANIFEST
    seal = manifest.seal
    if seal is None:
        raise integrity(where, "the manifest has no seal")
    covered = canonical(document, without="seal")
    if hashlib.sha256(covered).hexdigest() != seal.canonical_sha256:
        raise integrity(where, "the manifest does not match its seal (canonical_sha256)")
    signature = seal.signature
    if verify_key is None:
        return ProvenanceKind.UNSIGNED if signature is None else ProvenanceKind.SIGNATURE_UNVERIFIED
    if signature is None:
        raise integrity(
            where, f"unsigned, but a signature by key id {key_id(verify_key)} is required"
        )
    if signature.algorithm != ALGORITHM:
        raise integrity(where, f"signed with {signature.algorithm!r}, not {ALGORITHM}")
    if signature.key_id != key_id(verify_key):
        raise integrity(
            where,
            f"signed by key id {signature.key_id}, not by the key given ({key_id(verify_key)})",
        )
    if not signature_matches(covered, verify_key, signature.hmac_sha256):
        raise integrity(where, f"the signature by key id {signature.key_id} does not verify")
    return ProvenanceKind.SIGNED


def parse_manifest(raw: bytes, directory: Path) -> tuple[Manifest, dict[str, Any]]:
    """``manifest.json``'s bytes as a :class:`Manifest` and the document its seal covers:
    UTF-8, JSON nested at most :data:`MAX_MANIFEST_DEPTH` deep, no key twice, the
    current schema (a ``/1`` manifest is refused with a note), every field's type
    checked.  Anything else is an :class:`InputError` naming the manifest."""
    where = directory / MANIFEST
    try:
        text = raw.decode("utf-8")
        document = json.loads(text, object_pairs_hook=_no_duplicates) if _depth_ok(text) else None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = f"{where}: not a readable JSON manifest ({exc})"
        raise InputError(msg) from None
    if document is None:
        msg = f"{where}: not a readable JSON manifest (nested deeper than {MAX_MANIFEST_DEPTH})"
        raise InputError(msg)
    schema = document.get("schema") if isinstance(document, dict) else None
    if schema in OLD_SCHEMAS:
        msg = (
            f"{where}: a {schema} manifest has no seal over its entries, so an edited "
            "status or a dropped entry would go unseen; capture again, or read its bodies "
            "as a historical bundle with --bodies after moving manifest.json aside"
        )
        raise InputError(msg)
    if not isinstance(document, dict) or schema != MANIFEST_SCHEMA:
        msg = f"{where}: not a {MANIFEST_SCHEMA} manifest"
        raise InputError(msg)
    return _structure(directory, document), document
