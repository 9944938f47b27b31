"""HMAC-SHA256 over a canonical JSON document: what a capture manifest's seal and an
evidence document's signature are computed over (package-internal).

A caller keeps the key (read from the environment, never printed); its *id* is the first
8 hex digits of the key's SHA-256, so a reader can say which key signed without
learning it.  A key shorter than :data:`MIN_KEY_BYTES` is refused wherever one is used
(to sign, to verify, to name it): a one-byte key is guessed in 256 tries, and an HMAC
is only as strong as its key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any

from vllm_evidence.errors import InputError

__all__ = [
    "ALGORITHM",
    "MIN_KEY_BYTES",
    "canonical",
    "check_key",
    "environment_key",
    "key_id",
    "sign",
    "signature_matches",
]

ALGORITHM = "hmac-sha256"

#: The shortest signing key accepted: SHA-256's block of output, as RFC 2104 advises for
#: an HMAC key (at least the hash's output length).
MIN_KEY_BYTES = 32


def _short(size: int) -> str:
    unit = "byte" if size == 1 else "bytes"
    return (
        f"{size} {unit}; a signing key needs at least {MIN_KEY_BYTES} bytes "
        "(for example 32 random bytes, hex- or base64-encoded)"
    )


def check_key(key: object) -> bytes:
    """``key``, when it is bytes of at least :data:`MIN_KEY_BYTES`; an
    :class:`InputError` (one line, never the key) otherwise."""
    if not isinstance(key, bytes | bytearray):  # callers outside mypy can pass anything
        msg = f"a signing key is bytes, not {type(key).__name__}"
        raise InputError(msg)
    if len(key) < MIN_KEY_BYTES:
        msg = f"the signing key has {_short(len(key))}"
        raise InputError(msg)
    return bytes(key)


def environment_key(option: str, variable: str) -> bytes:
    """The signing key in the environment variable ``variable`` (named by ``option``,
    ``--sign-key-env`` or ``--verify-key-env``): an :class:`InputError` saying the
    variable is not set, is empty, or holds too short a key (never the key itself)."""
    value = os.environ.get(variable)
    if value is None:
        msg = f"{option}: environment variable {variable} is not set"
        raise InputError(msg)
    if not value:
        msg = f"{option}: environment variable {variable} is empty"
        raise InputError(msg)
    key = value.encode("utf-8", "surrogateescape")
    if len(key) < MIN_KEY_BYTES:
        msg = f"{option}: environment variable {variable} holds {_short(len(key))}"
        raise InputError(msg)
    return key


def key_id(key: bytes) -> str:
    """The first 8 hex digits of the key's SHA-256: names a key without revealing it."""
    return hashlib.sha256(check_key(key)).hexdigest()[:8]


def canonical(document: dict[str, Any], *, without: str) -> bytes:
    """The bytes a seal or signature covers: ``document`` without the key ``without``,
    compact, keys sorted, ASCII only."""
    rest = {key: value for key, value in document.items() if key != without}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sign(canonical_bytes: bytes, key: bytes) -> str:
    """The HMAC-SHA256 of ``canonical_bytes`` under ``key``, in hex."""
    return hmac.new(check_key(key), canonical_bytes, hashlib.sha256).hexdigest()


def signature_matches(canonical_bytes: bytes, key: bytes, claimed: str) -> bool:
    """Whether ``claimed`` is the signature of ``canonical_bytes`` under ``key`` (in
    constant time)."""
    return hmac.compare_digest(sign(canonical_bytes, key), claimed)
