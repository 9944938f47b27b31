"""HMAC-SHA256 over a canonical JSON document: what a capture manifest's seal and an
evidence document's signature are computed over (package-internal).

A caller keeps the key (read from the environment, never printed); its *id* is the first
8 hex digits of the key's SHA-256, so a reader can say which key signed without
learning it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

__all__ = ["ALGORITHM", "canonical", "key_id", "sign", "signature_matches"]

ALGORITHM = "hmac-sha256"


def key_id(key: bytes) -> str:
    """The first 8 hex digits of the key's SHA-256: names a key without revealing it."""
    return hashlib.sha256(key).hexdigest()[:8]


def canonical(document: dict[str, Any], *, without: str) -> bytes:
    """The bytes a seal or signature covers: ``document`` without the key ``without``,
    compact, keys sorted, ASCII only."""
    rest = {key: value for key, value in document.items() if key != without}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sign(canonical_bytes: bytes, key: bytes) -> str:
    """The HMAC-SHA256 of ``canonical_bytes`` under ``key``, in hex."""
    return hmac.new(key, canonical_bytes, hashlib.sha256).hexdigest()


def signature_matches(canonical_bytes: bytes, key: bytes, claimed: str) -> bool:
    """Whether ``claimed`` is the signature of ``canonical_bytes`` under ``key`` (in
    constant time)."""
    return hmac.compare_digest(sign(canonical_bytes, key), claimed)
