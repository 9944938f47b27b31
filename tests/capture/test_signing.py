"""The one signing module (issue 31): Ed25519 keys read from PEM files or the
environment, a verifier's key that cannot sign, and keys never shown.

Keys are written here with ``cryptography`` itself (what ``openssl genpkey -algorithm
ed25519`` writes: PKCS #8 PEM), and every refusal is one line that never quotes the key.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import warnings
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from cryptography.utils import CryptographyDeprecationWarning

from tests._signing import pem_text
from vllm_evidence._capture.signing import (
    MAX_KEY_FILE_BYTES,
    SigningKey,
    VerificationKey,
    canonical,
    environment_hmac_key,
    environment_signing_key,
    environment_verification_key,
    hmac_key_id,
    read_signing_key,
    read_verification_key,
    signing_key_from_pem,
    verification_key_from_pem,
)
from vllm_evidence.errors import InputError

PRIVATE = ed25519.Ed25519PrivateKey.generate()
PRIVATE_PEM = PRIVATE.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
PUBLIC_PEM = PRIVATE.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
RAW_PUBLIC = PRIVATE.public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw
)


def _one_line(error: pytest.ExceptionInfo[InputError]) -> str:
    line = str(error.value)
    assert "\n" not in line
    assert len(line) < 400, line
    for secret in (PRIVATE_PEM, PUBLIC_PEM):
        assert secret.decode().splitlines()[1] not in line  # never the key's text
    return line


# --- reading keys, both ways ---------------------------------------------------------


def test_a_pem_key_pair_reads_and_signs_what_its_public_half_verifies(tmp_path: Path) -> None:
    (tmp_path / "k.pem").write_bytes(PRIVATE_PEM)
    (tmp_path / "p.pem").write_bytes(PUBLIC_PEM)
    signing = read_signing_key(tmp_path / "k.pem")
    verifying = read_verification_key(str(tmp_path / "p.pem"))
    assert signing.verification_key == verifying
    signature = signing.sign(b"the receipt")
    assert len(signature) == 128
    PRIVATE.public_key().verify(bytes.fromhex(signature), b"the receipt")  # cryptography agrees
    assert verifying.verifies(b"the receipt", signature)
    assert not verifying.verifies(b"the receipt, edited", signature)
    made_elsewhere = PRIVATE.sign(b"x").hex()
    assert verifying.verifies(b"x", made_elsewhere)


def test_the_key_id_is_sixteen_hex_digits_of_the_raw_public_keys_sha256() -> None:
    key = verification_key_from_pem(PUBLIC_PEM)
    assert key.key_id == hashlib.sha256(RAW_PUBLIC).hexdigest()[:16]
    assert signing_key_from_pem(PRIVATE_PEM).key_id == key.key_id
    assert SigningKey.generate().key_id != key.key_id


@pytest.mark.parametrize(
    "signature",
    ["", "00" * 64 + "0", "zz" * 64, "AB" * 64, "00" * 64],
    ids=["empty", "odd", "not-hex", "upper", "zeros"],
)
def test_a_signature_that_is_not_one_never_verifies(signature: str) -> None:
    assert not verification_key_from_pem(PUBLIC_PEM).verifies(b"data", signature)


def test_keys_never_show_themselves() -> None:
    signing = signing_key_from_pem(PRIVATE_PEM)
    for shown in (repr(signing), str(signing), repr(signing.verification_key)):
        assert signing.key_id in shown
        assert PRIVATE_PEM.decode().splitlines()[1] not in shown
        assert PUBLIC_PEM.decode().splitlines()[1] not in shown
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(signing)
    public = pickle.loads(pickle.dumps(signing.verification_key))  # noqa: S301  # our own
    assert public == signing.verification_key
    assert not hasattr(signing, "__dict__")  # slots: nothing but the key and its half


@pytest.mark.parametrize(
    ("data", "reader", "needle"),
    [
        (b"", signing_key_from_pem, "not a PEM key"),
        (b"k" * 40, signing_key_from_pem, "not a PEM key (no '-----BEGIN' line)"),
        (PUBLIC_PEM, signing_key_from_pem, "not a private key (a public key cannot sign)"),
        (PRIVATE_PEM, verification_key_from_pem, "a private key: a verifier is given the public"),
        (
            b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
            verification_key_from_pem,
            "not a readable PEM public key",
        ),
        (
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            signing_key_from_pem,
            "not a readable PEM private key",
        ),
        (b"-----BEGIN " + b"x" * MAX_KEY_FILE_BYTES, signing_key_from_pem, "larger than 65,536"),
    ],
)
def test_what_is_no_key_of_the_right_kind_is_one_line(
    data: bytes, reader: object, needle: str
) -> None:
    with pytest.raises(InputError) as raised:
        reader(data, "the key")  # type: ignore[operator]  # either reader
    line = _one_line(raised)
    assert line.startswith("the key: ")
    assert needle in line


def _dsa_key() -> dsa.DSAPrivateKey:
    """A DSA key, made with cryptography's deprecation of DSA (version 51 on) silenced
    here only: the refusal below must name it without any warning escaping."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        return dsa.generate_private_key(key_size=2048)


def test_another_algorithms_key_is_named() -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    keys: tuple[tuple[rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | dsa.DSAPrivateKey, str], ...]
    keys = ((rsa_key, "RSA"), (ec_key, "EC"), (_dsa_key(), "DSA"))
    for key, name in keys:
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        with pytest.raises(InputError) as raised:
            signing_key_from_pem(pem)
        assert f"an {name} key, not Ed25519" in _one_line(raised)
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        with pytest.raises(InputError) as raised:
            verification_key_from_pem(public)
        assert f"an {name} key, not Ed25519" in _one_line(raised)


def test_an_encrypted_private_key_is_refused() -> None:
    encrypted = PRIVATE.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"a passphrase"),
    )
    with pytest.raises(InputError) as raised:
        signing_key_from_pem(encrypted)
    assert "an encrypted private key" in _one_line(raised)


def test_a_key_file_is_read_like_any_named_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, needle in (
        (fifo, "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
        (tmp_path, "is a directory"),
        (tmp_path / "none.pem", "No such file"),
    ):
        with pytest.raises(InputError) as raised:
            read_signing_key(path, what="--receipt-signing-key")
        line = _one_line(raised)
        assert line.startswith(f"--receipt-signing-key {path}"), line
        assert needle in line, line
    big = tmp_path / "big.pem"
    big.write_bytes(b"-" * (MAX_KEY_FILE_BYTES + 1))
    with pytest.raises(InputError) as raised:
        read_verification_key(big)
    assert "larger than the 65,536 bytes allowed" in _one_line(raised)


def test_a_signing_key_or_public_key_object_is_checked() -> None:
    with pytest.raises(InputError, match="an Ed25519 public key, not str"):
        VerificationKey("key")  # type: ignore[arg-type]  # the misuse tried
    with pytest.raises(InputError, match="an Ed25519 private key, not Ed25519PublicKey"):
        SigningKey(PRIVATE.public_key())  # type: ignore[arg-type]
    with pytest.raises(InputError, match="a key file is a path, not bytes"):
        read_signing_key(PRIVATE_PEM)  # type: ignore[arg-type]


# --- the environment ------------------------------------------------------------------


def test_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    key = SigningKey.generate()
    monkeypatch.setenv("SIGN", pem_text(key))
    monkeypatch.setenv("PUBLIC", pem_text(key, public=True))
    assert environment_signing_key("--x", "SIGN").key_id == key.key_id
    assert environment_verification_key("--x", "PUBLIC") == key.verification_key
    monkeypatch.setenv("EMPTY", "")
    monkeypatch.setenv("JUNK", "not-a-key-but-a-secret-of-some-length")
    monkeypatch.delenv("UNSET", raising=False)
    for variable, needle in (
        ("UNSET", "--x: environment variable UNSET is not set"),
        ("EMPTY", "--x: environment variable EMPTY is empty"),
        ("JUNK", "--x: environment variable JUNK: not a PEM key"),
        ("PUBLIC", "not a private key"),
    ):
        with pytest.raises(InputError) as raised:
            environment_signing_key("--x", variable)
        line = _one_line(raised)
        assert needle in line
        assert "not-a-key-but-a-secret" not in line
    with pytest.raises(InputError) as raised:
        environment_verification_key("--x", "SIGN")
    assert "a private key: a verifier is given the public half only" in _one_line(raised)


# --- the canonical form and the HMAC read for captures saved before -----------------------


def test_the_canonical_form_is_compact_sorted_ascii_without_the_signature() -> None:
    document = {"b": 1, "a": "é", "signature": {"x": 1}}
    assert canonical(document, without="signature") == b'{"a":"\\u00e9","b":1}'


def test_an_hmac_key_is_named_by_its_digest_and_must_be_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = b"k" * 32
    assert hmac_key_id(key) == hashlib.sha256(key).hexdigest()[:8]
    with pytest.raises(InputError, match="31 bytes; a signing key needs at least 32"):
        hmac_key_id(b"k" * 31)
    monkeypatch.setenv("SHORT", "k" * 5)
    with pytest.raises(InputError, match="holds 5 bytes"):
        environment_hmac_key("--verify-key-env", "SHORT")
