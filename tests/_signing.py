"""Signing keys for the tests, and a capture signed the way captures were before Ed25519.

The keys are made for the test session (:meth:`SigningKey.generate`) and never written
anywhere but a test's own temporary directory.  :func:`legacy_hmac_capture` turns a saved
capture into what ``save(..., sign_key=HMAC_BYTES)`` wrote before: a
``capture-manifest/2`` manifest sealed and signed with an HMAC-SHA256, computed here with
:mod:`hashlib` and :mod:`hmac` alone (not by the code under test).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

from vllm_evidence._capture.signing import SigningKey

#: The key a prober saves its captures with, in these tests.
CAPTURE_KEY = SigningKey.generate()
#: Another prober's key.
OTHER_CAPTURE_KEY = SigningKey.generate()
#: A shared HMAC key, as captures were signed with before (at least 32 bytes).
HMAC_KEY = b"orchestrator-signing-key-0001-32b"

LEGACY_SCHEMA = "vllm-evidence/capture-manifest/2"


def pem_text(key: SigningKey, *, public: bool = False) -> str:
    """The key's PEM text, as an environment variable holds it."""
    data = key.verification_key.pem() if public else key.private_pem()
    return data.decode("ascii")


def key_files(directory: Path, key: SigningKey) -> tuple[Path, Path]:
    """``key``'s private and public PEM files in ``directory``."""
    private, public = directory / "signing.pem", directory / "public.pem"
    private.write_bytes(key.private_pem())
    private.chmod(0o600)
    public.write_bytes(key.verification_key.pem())
    return private, public


def _canonical(document: dict[str, object]) -> bytes:
    rest = {name: value for name, value in document.items() if name != "seal"}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def legacy_hmac_capture(directory: Path, key: bytes = HMAC_KEY) -> Path:
    """Rewrite the unsigned capture in ``directory`` as a ``/2`` manifest signed with the
    HMAC ``key`` (its id the first 8 hex digits of the key's SHA-256); return it."""
    path = directory / "manifest.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["seal"]["signature"] is None, "sign an unsigned capture"
    document["schema"] = LEGACY_SCHEMA
    covered = _canonical(document)
    document["seal"] = {
        "canonical_sha256": hashlib.sha256(covered).hexdigest(),
        "signature": {
            "algorithm": "hmac-sha256",
            "key_id": hashlib.sha256(key).hexdigest()[:8],
            "hmac_sha256": hmac.new(key, covered, hashlib.sha256).hexdigest(),
        },
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return directory
