"""A launch receipt's signature (``launch-receipt/3``, issue 31): what the launcher signs,
how the reader checks it, and what every edit makes of it.

The signature is checked here with ``cryptography`` alone over the canonical form the
docs name (the receipt without ``signature``, compact JSON, keys sorted, ASCII only), so
the reader and the writer cannot share a mistake unseen.  Every field edited after the
launcher signed makes the receipt ``signature_invalid``; a malformed signature is one
:class:`InputError` line, like any malformed field.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from vllm_evidence._adapters.receipt import (
    RECEIPT_SCHEMA,
    ReceiptAuthentication,
    ReceiptRecord,
    ReceiptSignatureRecord,
    parse_launch_receipt,
    signed_receipt_document,
)
from vllm_evidence._capture.signing import SigningKey, VerificationKey
from vllm_evidence._launch import receipt_document
from vllm_evidence.errors import InputError

KEY = SigningKey.generate()
OTHER = SigningKey.generate()
PUBLIC = KEY.verification_key
SHA = "ab" * 32


def _record(**changes: Any) -> ReceiptRecord:
    fields: dict[str, Any] = {
        "schema": RECEIPT_SCHEMA,
        "pid": 4242,
        "process_start_time_seconds": "1.79601501985e+09",
        "start_time_unavailable": None,
        "argv": ["vllm", "serve", "/models/m", "--api-key", "***"],
        "host": "node-7",
        "log_path": "/var/log/vllm.log",
        "log_bytes": 1234,
        "log_sha256": SHA,
    }
    fields.update(changes)
    return ReceiptRecord(**fields)


def _signed(key: SigningKey = KEY, **changes: Any) -> dict[str, Any]:
    return receipt_document(_record(**changes), key)


def _read(document: dict[str, Any], key: VerificationKey | None = PUBLIC) -> Any:
    return parse_launch_receipt(json.dumps(document).encode(), "r.json", verification_key=key)


def _covered(document: dict[str, Any]) -> bytes:
    rest = {name: value for name, value in document.items() if name != "signature"}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


# --- what the launcher writes ---------------------------------------------------------


def test_the_launcher_signs_the_canonical_rest_with_ed25519() -> None:
    document = _signed()
    signature = document["signature"]
    assert set(signature) == {"algorithm", "key_id", "ed25519"}
    assert signature["algorithm"] == "ed25519"
    assert signature["key_id"] == KEY.key_id
    raw = serialization.load_pem_public_key(PUBLIC.pem()).public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    public = ed25519.Ed25519PublicKey.from_public_bytes(raw)
    public.verify(bytes.fromhex(signature["ed25519"]), _covered(document))  # raises if not


def test_a_receipt_signed_by_any_ed25519_signer_is_verified() -> None:
    """One made without the package's signing code: the reader takes it."""
    private = ed25519.Ed25519PrivateKey.generate()
    key = SigningKey(private)
    document = receipt_document(_record())
    document["signature"] = {
        "algorithm": "ed25519",
        "key_id": key.key_id,
        "ed25519": private.sign(_covered(document)).hex(),
    }
    public = serialization.load_pem_public_key(key.verification_key.pem())
    assert isinstance(public, ed25519.Ed25519PublicKey)
    receipt = _read(document, VerificationKey(public))
    assert receipt.authentication is ReceiptAuthentication.VERIFIED
    assert receipt.signer_key_id == key.key_id


def test_the_key_itself_is_never_in_the_receipt() -> None:
    text = json.dumps(_signed())
    for pem in (KEY.private_pem(), PUBLIC.pem()):
        for line in pem.decode().splitlines()[1:-1]:
            assert line not in text
    assert KEY.key_id in text  # only its id


def test_without_a_key_the_receipt_is_written_unsigned() -> None:
    document = receipt_document(_record())
    assert document["signature"] is None
    assert _read(document).authentication is ReceiptAuthentication.UNSIGNED


def test_a_signature_already_on_the_record_is_replaced() -> None:
    stale = _signed(OTHER)["signature"]
    with_stale = _record(signature=ReceiptSignatureRecord(**stale))
    assert signed_receipt_document(with_stale, None)["signature"] is None
    assert signed_receipt_document(with_stale, KEY)["signature"]["key_id"] == KEY.key_id


def test_only_a_signing_key_signs() -> None:
    with pytest.raises(InputError, match="signing_key must be a SigningKey"):
        receipt_document(_record(), b"k" * 32)  # type: ignore[arg-type]  # the misuse tried


# --- what the reader makes of it, both ways -------------------------------------------


def test_each_authentication_from_the_same_launch() -> None:
    document = _signed()
    assert _read(document).authentication is ReceiptAuthentication.VERIFIED
    assert _read(document, None).authentication is ReceiptAuthentication.UNCHECKED
    assert _read(document, OTHER.verification_key).authentication is ReceiptAuthentication.OTHER_KEY
    assert _read(_signed(OTHER)).authentication is ReceiptAuthentication.OTHER_KEY
    assert _read({**document, "pid": 1}).authentication is ReceiptAuthentication.SIGNATURE_INVALID
    assert _read({**document, "signature": None}).authentication is ReceiptAuthentication.UNSIGNED
    read = _read(document)
    assert (read.signer_key_id, read.verification_key) == (KEY.key_id, PUBLIC)
    assert read.authenticated
    assert not _read(document, None).authenticated
    assert "verified" in repr(read)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("pid", 4243),
        ("process_start_time_seconds", "1.79601501986e+09"),
        ("process_start_time_seconds", "1796015019.85"),  # the same time, other text
        ("start_time_unavailable", "edited"),
        ("argv", ["vllm", "serve", "/models/other"]),
        ("host", "node-8"),
        ("log_path", "/var/log/other.log"),
        ("log_bytes", 1235),
        ("log_sha256", "cd" * 32),
        ("log_write_failure", {"at_byte": 1, "error": "EIO"}),
    ],
)
def test_every_field_edited_after_signing_is_signature_invalid(field: str, value: object) -> None:
    document = _signed()
    assert document[field] != value
    edited = _read({**document, field: value})
    assert edited.authentication is ReceiptAuthentication.SIGNATURE_INVALID
    assert not edited.authenticated


def test_naming_the_readers_key_does_not_make_another_signature_its_own() -> None:
    forged = _signed(OTHER)
    forged["signature"] = {**forged["signature"], "key_id": KEY.key_id}
    assert _read(forged).authentication is ReceiptAuthentication.SIGNATURE_INVALID


def test_a_downgrade_to_an_unsigned_schema_is_unsigned_or_refused() -> None:
    document = _signed()
    without = {name: value for name, value in document.items() if name != "signature"}
    assert _read(without).authentication is ReceiptAuthentication.UNSIGNED
    v2 = {**without, "schema": "vllm-evidence.launch-receipt/2"}
    assert _read(v2).authentication is ReceiptAuthentication.UNSIGNED
    with pytest.raises(InputError, match="unknown field"):
        _read({**document, "schema": "vllm-evidence.launch-receipt/2"})


@pytest.mark.parametrize(
    ("signature", "needle"),
    [
        ("deadbeef", "must be null or an object, not a string"),
        ({"algorithm": "ed25519", "key_id": "0" * 16}, "missing ['ed25519']"),
        (
            {"algorithm": "ed25519", "key_id": "0" * 16, "ed25519": "0" * 128, "x": 1},
            "unknown ['x']",
        ),
        (
            {"algorithm": "hmac-sha256", "key_id": "0" * 16, "ed25519": "0" * 128},
            "must be 'ed25519'",
        ),
        ({"algorithm": "ed25519", "key_id": "0" * 8, "ed25519": "0" * 128}, "16 lower-case hex"),
        ({"algorithm": "ed25519", "key_id": "G" * 16, "ed25519": "0" * 128}, "16 lower-case hex"),
        ({"algorithm": "ed25519", "key_id": "0" * 16, "ed25519": "0" * 127}, "128 lower-case hex"),
        ({"algorithm": "ed25519", "key_id": "0" * 16, "ed25519": 5}, "must be a string"),
    ],
)
def test_a_malformed_signature_is_one_line(signature: object, needle: str) -> None:
    with pytest.raises(InputError) as raised:
        _read({**_signed(), "signature": signature})
    line = str(raised.value)
    assert line.startswith("launch receipt r.json: ")
    assert needle in line
    assert "\n" not in line


def test_a_signature_nested_deeper_is_refused_in_bounded_time() -> None:
    data = json.dumps(_signed()).replace('"ed25519": "', '"ed25519": [[["', 1).encode()
    with pytest.raises(InputError, match="nested deeper than 2 levels"):
        parse_launch_receipt(data, verification_key=PUBLIC)


def test_the_reader_takes_only_a_verification_key() -> None:
    data = json.dumps(_signed()).encode()
    with pytest.raises(InputError, match="a SigningKey: a verifier holds the public half only"):
        parse_launch_receipt(data, verification_key=KEY)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="must be a VerificationKey"):
        parse_launch_receipt(data, verification_key=PUBLIC.pem())  # type: ignore[arg-type]
