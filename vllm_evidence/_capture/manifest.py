"""A saved capture's ``manifest.json``: its types, its seal and its signature.

The manifest (schema ``vllm-evidence/capture-manifest/3``) covers every entry and every
file of a capture directory: each body and headers file has its SHA-256 and size, and the
``seal`` holds the SHA-256 of the *canonical manifest* (the document without its seal, as
compact JSON with sorted keys) and, when the capture was saved with a key, a signature
of the same bytes with the key's id: Ed25519 (:mod:`vllm_evidence._capture.signing`, the
package's one signing mechanism), verified with the public key, which cannot sign.

A ``capture-manifest/2`` manifest (saved before) is still read: unsigned, or signed with
an HMAC-SHA256 under a shared key (its :class:`Signature`), verified with that key.  No
capture is signed with an HMAC any more.  :mod:`vllm_evidence._capture.directory` writes
and reads the files the manifest lists.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import attrs
import cattrs

from vllm_evidence._capture._files import integrity
from vllm_evidence._capture.batch import (
    CaptureBatch,
    Exchange,
    ExchangeRole,
    ProvenanceKind,
    Transport,
)
from vllm_evidence._capture.signing import (
    ED25519,
    HMAC_SHA256,
    SigningKey,
    VerificationKey,
    canonical,
    hmac_key_id,
    hmac_matches,
)
from vllm_evidence._converter import converter
from vllm_evidence.errors import InputError

__all__ = [
    "CLOSE_SUFFIX",
    "MANIFEST",
    "MANIFEST_SCHEMA",
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_DEPTH",
    "OLD_SCHEMAS",
    "READ_SCHEMAS",
    "STARTUP_LOG",
    "TWIN_SUFFIX",
    "Ed25519Signature",
    "Manifest",
    "ManifestEntry",
    "SavedLog",
    "Seal",
    "Signature",
    "build_manifest",
    "headers_text",
    "hmac_key_id",
    "manifest_document",
    "manifest_json",
    "parse_manifest",
    "seal_kind",
    "stem",
]


MANIFEST = "manifest.json"


MANIFEST_SCHEMA = "vllm-evidence/capture-manifest/3"

#: The schemas read: ``/2`` (unsigned, or HMAC-signed: :class:`Signature`) and ``/3``
#: (unsigned, or Ed25519-signed: :class:`Ed25519Signature`).
READ_SCHEMAS = ("vllm-evidence/capture-manifest/2", MANIFEST_SCHEMA)

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
class Ed25519Signature:
    """An Ed25519 signature of the canonical manifest (``/3``), by the key named by
    ``key_id`` (:attr:`~vllm_evidence._capture.signing.VerificationKey.key_id`)."""

    algorithm: str
    """Always ``"ed25519"``."""
    key_id: str
    ed25519: str
    """128 lower-case hex digits."""


@attrs.frozen(kw_only=True)
class Signature:
    """An HMAC-SHA256 of the canonical manifest, under the key named by ``key_id``: how a
    ``capture-manifest/2`` capture was signed (read, never written any more)."""

    algorithm: str
    key_id: str
    hmac_sha256: str


@attrs.frozen(kw_only=True)
class Seal:
    """The canonical manifest's SHA-256, and its signature when saved with a key."""

    canonical_sha256: str
    signature: Ed25519Signature | Signature | None


@attrs.frozen(kw_only=True)
class Manifest:
    """``manifest.json`` of a saved capture (schema ``vllm-evidence/capture-manifest/3``).

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
    capture: CaptureBatch,
    *,
    startup_log: SavedLog | None = None,
    sign_key: SigningKey | None = None,
) -> dict[str, Any]:
    """The ``manifest.json`` document of ``capture`` (what :func:`save` writes), sealed
    (and signed with ``sign_key``, an Ed25519 :class:`~vllm_evidence._capture.signing.
    SigningKey`)."""
    return manifest_json(build_manifest(capture, startup_log, sign_key))


def check_signing_key(sign_key: object) -> SigningKey | None:
    """``sign_key`` when it is ``None`` or a :class:`~vllm_evidence._capture.signing.
    SigningKey`; an :class:`InputError` otherwise (an HMAC key no longer signs)."""
    if sign_key is None or isinstance(sign_key, SigningKey):
        return sign_key
    if isinstance(sign_key, bytes | bytearray):
        msg = (
            "a capture is signed with an Ed25519 SigningKey (read_signing_key(KEY.pem)), "
            "no longer with an HMAC key: a key that verifies would sign as well; captures "
            "saved with an HMAC key are still read (verify_key=the same bytes)"
        )
        raise InputError(msg)
    msg = f"sign_key must be a SigningKey (read_signing_key), not {type(sign_key).__name__}"
    raise InputError(msg)


def build_manifest(
    capture: CaptureBatch, startup_log: SavedLog | None, sign_key: SigningKey | None
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
    key = check_signing_key(sign_key)
    covered = canonical(manifest_json(unsealed), without="seal")
    signature = (
        None
        if key is None
        else Ed25519Signature(algorithm=ED25519, key_id=key.key_id, ed25519=key.sign(covered))
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


def _key_name(key: VerificationKey | bytes) -> str:
    return key.key_id if isinstance(key, VerificationKey) else hmac_key_id(key)


def seal_kind(
    directory: Path,
    document: dict[str, Any],
    manifest: Manifest,
    verify_key: VerificationKey | bytes | None,
) -> ProvenanceKind:
    """Check the seal (and the signature under ``verify_key``); what the manifest proves.

    ``verify_key`` is the signer's :class:`~vllm_evidence._capture.signing.VerificationKey`
    for an Ed25519 signature, or the HMAC key bytes a ``/2`` capture was signed with."""
    where = directory / MANIFEST
    seal = manifest.seal
    if seal is None:
        raise integrity(where, "the manifest has no seal")
    covered = canonical(document, without="seal")
    if hashlib.sha256(covered).hexdigest() != seal.canonical_sha256:
        raise integrity(where, "the manifest does not match its seal (canonical_sha256)")
    signature = seal.signature
    ed25519 = isinstance(signature, Ed25519Signature)
    if signature is not None and ed25519 != (manifest.schema == MANIFEST_SCHEMA):
        raise integrity(where, f"a {manifest.schema} manifest signed with {signature.algorithm!r}")
    if verify_key is None:
        return ProvenanceKind.UNSIGNED if signature is None else ProvenanceKind.SIGNATURE_UNVERIFIED
    if signature is None:
        raise integrity(
            where, f"unsigned, but a signature by key id {_key_name(verify_key)} is required"
        )
    if isinstance(signature, Ed25519Signature):
        return _ed25519_kind(where, covered, signature, verify_key)
    return _hmac_kind(where, covered, signature, verify_key)


def _ed25519_kind(
    where: Path, covered: bytes, signature: Ed25519Signature, verify_key: VerificationKey | bytes
) -> ProvenanceKind:
    if signature.algorithm != ED25519:
        raise integrity(where, f"signed with {signature.algorithm[:40]!r}, not {ED25519}")
    if not isinstance(verify_key, VerificationKey):
        msg = (
            f"{where}: signed with Ed25519 by key id {signature.key_id}: verify it with the "
            "signer's public key (a VerificationKey, --verify-key PUBLIC.pem), not an HMAC key"
        )
        raise InputError(msg)
    if signature.key_id != verify_key.key_id:
        raise integrity(
            where,
            f"signed by key id {signature.key_id[:40]}, not by the key given ({verify_key.key_id})",
        )
    if not verify_key.verifies(covered, signature.ed25519):
        raise integrity(where, f"the signature by key id {signature.key_id} does not verify")
    return ProvenanceKind.SIGNED


def _hmac_kind(
    where: Path, covered: bytes, signature: Signature, verify_key: VerificationKey | bytes
) -> ProvenanceKind:
    if signature.algorithm != HMAC_SHA256:
        raise integrity(where, f"signed with {signature.algorithm[:40]!r}, not {HMAC_SHA256}")
    if not isinstance(verify_key, bytes):
        msg = (
            f"{where}: a capture saved before Ed25519 signatures, signed with an HMAC-SHA256 "
            f"key (key id {signature.key_id[:40]}): verify it with that key's bytes "
            "(--verify-key-env VAR holding it), not a public key"
        )
        raise InputError(msg)
    if signature.key_id != hmac_key_id(verify_key):
        raise integrity(
            where,
            f"signed by key id {signature.key_id[:40]}, not by the key given "
            f"({hmac_key_id(verify_key)})",
        )
    if not hmac_matches(covered, verify_key, signature.hmac_sha256):
        raise integrity(where, f"the signature by key id {signature.key_id} does not verify")
    return ProvenanceKind.SIGNED


def parse_manifest(raw: bytes, directory: Path) -> tuple[Manifest, dict[str, Any]]:
    """``manifest.json``'s bytes as a :class:`Manifest` and the document its seal covers:
    UTF-8, JSON nested at most :data:`MAX_MANIFEST_DEPTH` deep, no key twice, a schema
    read (:data:`READ_SCHEMAS`; a ``/1`` manifest is refused with a note), every field's
    type checked.  Anything else is an :class:`InputError` naming the manifest."""
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
    if not isinstance(document, dict) or schema not in READ_SCHEMAS:
        msg = f"{where}: not a {' or '.join(READ_SCHEMAS)} manifest"
        raise InputError(msg)
    return _structure(directory, document), document
