"""Signatures: the package's one signing mechanism, for everything that crosses a
process boundary signed — a launch receipt (:mod:`vllm_evidence._adapters.receipt`) and a
saved capture's manifest (:mod:`vllm_evidence._capture.manifest`).

**Ed25519, a key that cannot sign on the verifying side.**  The launcher (or the probe
that saves a capture) holds a :class:`SigningKey`; whoever checks the receipt or the
capture holds only its :class:`VerificationKey`, the public half, which verifies and can
never sign.  An orchestrator that verifies the receipts of many pods therefore cannot
write a receipt any of them would have written.  A signature covers the *canonical*
document (:func:`canonical`: the document without its signature, as compact JSON with
sorted keys, ASCII only), and names its key by :attr:`VerificationKey.key_id` (the first
16 hex digits of the SHA-256 of the 32-byte public key), so a reader can say which key
signed without holding it.

Keys are read from PEM files as OpenSSL writes them (no other tool is needed)::

    openssl genpkey -algorithm ed25519 -out receipt-signing.pem      # the signer's, secret
    openssl pkey -in receipt-signing.pem -pubout -out receipt-public.pem  # the verifier's

or from an environment variable holding the same PEM text.  A key file is read like any
file a caller names: a regular file (never a FIFO or a device, refused at once) of at
most :data:`MAX_KEY_FILE_BYTES`.  A key is never printed, never written into a receipt,
a capture or a document, and never shown by ``repr`` (which gives its key id only); a
:class:`SigningKey` does not pickle.  An encrypted private key, another algorithm's key
(RSA, EC) and a private key given where the public one is asked for are one-line
:class:`~vllm_evidence.errors.InputError`\\ s that never quote the file.

**HMAC-SHA256, read for what was saved before.**  Captures saved before this mechanism
carry an HMAC-SHA256 signature (manifest ``capture-manifest/2``); an evidence document
(:mod:`vllm_evidence._rederive`) still carries one.  The key is a shared secret of at
least :data:`MIN_KEY_BYTES` bytes, named by the first 8 hex digits of its SHA-256
(:func:`hmac_key_id`); the functions ``hmac_*`` compute and check it.  A capture is no
longer signed with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn, final

from vllm_evidence.errors import InputError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = [
    "ED25519",
    "HMAC_SHA256",
    "KEY_ID_DIGITS",
    "MAX_KEY_FILE_BYTES",
    "MIN_KEY_BYTES",
    "SigningKey",
    "VerificationKey",
    "canonical",
    "check_hmac_key",
    "environment_hmac_key",
    "environment_signing_key",
    "environment_verification_key",
    "hmac_key_id",
    "hmac_matches",
    "hmac_sign",
    "read_signing_key",
    "read_verification_key",
    "signing_key_from_pem",
    "verification_key_from_pem",
]

#: The public-key signature every new signature is.
ED25519: Final = "ed25519"
#: The shared-key signature of captures saved before (read, never written for them).
HMAC_SHA256: Final = "hmac-sha256"
#: How many hex digits of the public key's SHA-256 name it.
KEY_ID_DIGITS: Final = 16
#: The largest key file read (a PEM Ed25519 key is about 120 bytes).
MAX_KEY_FILE_BYTES: Final = 64 * 1024
#: The shortest HMAC key accepted: SHA-256's output length, as RFC 2104 advises.
MIN_KEY_BYTES: Final = 32
#: An Ed25519 signature's length in bytes (its hex text is twice as long).
SIGNATURE_BYTES: Final = 64

_MAKE = (
    "make one with `openssl genpkey -algorithm ed25519 -out KEY.pem`, its public half with "
    "`openssl pkey -in KEY.pem -pubout -out PUBLIC.pem`"
)


def canonical(document: dict[str, Any], *, without: str) -> bytes:
    """The bytes a signature (or a manifest's seal) covers: ``document`` without the key
    ``without``, as compact JSON with sorted keys, ASCII only."""
    rest = {key: value for key, value in document.items() if key != without}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


# --------------------------------------------------------------------------- Ed25519


def _public_key_id(public: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:KEY_ID_DIGITS]


@final
class VerificationKey:
    """The public half of an Ed25519 key: it verifies signatures and cannot make one.

    Made by :func:`read_verification_key`, :func:`verification_key_from_pem`,
    :func:`environment_verification_key` or :attr:`SigningKey.verification_key`."""

    __slots__ = ("_key", "key_id")

    def __init__(self, key: Ed25519PublicKey) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        given: object = key  # callers outside mypy can pass anything
        if not isinstance(given, Ed25519PublicKey):
            msg = f"a verification key is an Ed25519 public key, not {type(given).__name__}"
            raise InputError(msg)
        self._key = key
        self.key_id: str = _public_key_id(key)
        """The first :data:`KEY_ID_DIGITS` hex digits of the public key's SHA-256."""

    def verifies(self, data: bytes, signature_hex: str) -> bool:
        """Whether ``signature_hex`` (128 lower-case hex digits) is this key's Ed25519
        signature of ``data``; ``False`` for any text that is not one."""
        from cryptography.exceptions import InvalidSignature

        if len(signature_hex) != 2 * SIGNATURE_BYTES or not _is_hex(signature_hex):
            return False
        try:
            self._key.verify(bytes.fromhex(signature_hex), data)
        except InvalidSignature:
            return False
        return True

    def pem(self) -> bytes:
        """The public key as a PEM file's bytes (``-----BEGIN PUBLIC KEY-----``)."""
        from cryptography.hazmat.primitives import serialization

        return self._key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VerificationKey) and other.key_id == self.key_id

    def __hash__(self) -> int:
        return hash(self.key_id)

    def __repr__(self) -> str:
        return f"VerificationKey(ed25519, key id {self.key_id})"

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return verification_key_from_pem, (self.pem(),)


@final
class SigningKey:
    """An Ed25519 private key: what signs a launch receipt or a saved capture.

    Made by :func:`read_signing_key`, :func:`signing_key_from_pem`,
    :func:`environment_signing_key` or :meth:`generate`.  ``repr`` shows its key id
    only, and it does not pickle: a signing key is read where it is used."""

    __slots__ = ("_key", "verification_key")

    def __init__(self, key: Ed25519PrivateKey) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        given: object = key  # callers outside mypy can pass anything
        if not isinstance(given, Ed25519PrivateKey):
            msg = f"a signing key is an Ed25519 private key, not {type(given).__name__}"
            raise InputError(msg)
        self._key = key
        self.verification_key: VerificationKey = VerificationKey(key.public_key())
        """Its public half: what a verifier is given."""

    @classmethod
    def generate(cls) -> SigningKey:
        """A new random key (for tests, and for a key file: :meth:`private_pem`)."""
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return cls(Ed25519PrivateKey.generate())

    @property
    def key_id(self) -> str:
        """Its public half's :attr:`VerificationKey.key_id`."""
        return self.verification_key.key_id

    def sign(self, data: bytes) -> str:
        """The Ed25519 signature of ``data``, as 128 lower-case hex digits."""
        return self._key.sign(bytes(data)).hex()

    def private_pem(self) -> bytes:
        """The key as an unencrypted PKCS #8 PEM file's bytes, to write a key file (the
        package itself never prints or saves it)."""
        from cryptography.hazmat.primitives import serialization

        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def __repr__(self) -> str:
        return f"SigningKey(ed25519, key id {self.key_id})"

    def __reduce__(self) -> NoReturn:
        msg = "a SigningKey is not pickled: read it where it is used (read_signing_key)"
        raise TypeError(msg)


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _refuse(where: str, what: str) -> NoReturn:
    msg = f"{where}: {what}"
    raise InputError(msg)


def _pem_text(data: bytes, where: str) -> bytes:
    if not isinstance(data, bytes | bytearray | memoryview):  # outside mypy: anything
        _refuse(where, f"a key is PEM bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) > MAX_KEY_FILE_BYTES:
        _refuse(where, f"larger than {MAX_KEY_FILE_BYTES:,} bytes; a PEM key is small")
    if b"-----BEGIN " not in data:
        _refuse(where, f"not a PEM key (no '-----BEGIN' line); {_MAKE}")
    return data


@contextlib.contextmanager
def _deprecated_algorithms_quiet() -> Iterator[None]:
    """cryptography 51 deprecates DSA and warns when a DSA key is loaded or its types are
    looked up.  A key of another algorithm is only loaded to be named in a refusal, never
    used, so the warning is noise on stderr at best and, under warnings-as-errors, turns
    that one-line refusal into a traceback: silenced for the load and the lookup only."""
    from cryptography.utils import CryptographyDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        yield


def _algorithm_name(key: object) -> str:
    """The family of a key that is not Ed25519 (``RSA``, ``EC``, …), for a refusal."""
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, rsa, x448, x25519

    with _deprecated_algorithms_quiet():
        dsa_kinds: tuple[type, ...] = (dsa.DSAPrivateKey, dsa.DSAPublicKey)
    families: tuple[tuple[str, tuple[type, ...]], ...] = (
        ("RSA", (rsa.RSAPrivateKey, rsa.RSAPublicKey)),
        ("EC", (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)),
        ("DSA", dsa_kinds),
        ("Ed448", (ed448.Ed448PrivateKey, ed448.Ed448PublicKey)),
        ("X25519", (x25519.X25519PrivateKey, x25519.X25519PublicKey)),
        ("X448", (x448.X448PrivateKey, x448.X448PublicKey)),
    )
    for name, kinds in families:
        if isinstance(key, kinds):
            return name
    return "unknown"


def signing_key_from_pem(data: bytes, where: str = "signing key") -> SigningKey:
    """The Ed25519 private key of a PEM text (PKCS #8, unencrypted); an
    :class:`InputError` (one line naming ``where``, never the key) otherwise."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = _pem_text(data, where)
    if b"PRIVATE KEY-----" not in text:
        _refuse(where, f"not a private key (a public key cannot sign); {_MAKE}")
    try:
        with _deprecated_algorithms_quiet():
            key = serialization.load_pem_private_key(text, password=None)
    except TypeError:
        _refuse(where, "an encrypted private key; give it unencrypted, readable by its user only")
    except (ValueError, UnsupportedAlgorithm):
        _refuse(where, f"not a readable PEM private key; {_MAKE}")
    if not isinstance(key, Ed25519PrivateKey):
        _refuse(where, f"an {_algorithm_name(key)} key, not Ed25519; {_MAKE}")
    return SigningKey(key)


def verification_key_from_pem(data: bytes, where: str = "verification key") -> VerificationKey:
    """The Ed25519 public key of a PEM text (``-----BEGIN PUBLIC KEY-----``); an
    :class:`InputError` otherwise.  A private key is refused: a verifier holds a key
    that cannot sign."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    text = _pem_text(data, where)
    if b"PRIVATE KEY-----" in text:
        _refuse(
            where,
            "a private key: a verifier is given the public half only, which cannot sign "
            "(`openssl pkey -in KEY.pem -pubout`)",
        )
    try:
        with _deprecated_algorithms_quiet():
            key = serialization.load_pem_public_key(text)
    except (ValueError, UnsupportedAlgorithm):
        _refuse(where, f"not a readable PEM public key; {_MAKE}")
    if not isinstance(key, Ed25519PublicKey):
        _refuse(where, f"an {_algorithm_name(key)} key, not Ed25519; {_MAKE}")
    return VerificationKey(key)


def _key_file(path: str | os.PathLike[str], what: str) -> bytes:
    from vllm_evidence._capture._files import read_named_file

    given: object = path  # callers outside mypy can pass anything
    if not isinstance(given, str | os.PathLike):
        msg = f"{what}: a key file is a path, not {type(given).__name__}"
        raise InputError(msg)
    return read_named_file(path, MAX_KEY_FILE_BYTES, what=what)


def read_signing_key(path: str | os.PathLike[str], *, what: str = "signing key") -> SigningKey:
    """The Ed25519 private key in the PEM file at ``path`` (see the module); an
    :class:`InputError` (one line: ``{what} {path}: …``) for any other file."""
    return signing_key_from_pem(_key_file(path, what), f"{what} {Path(path)}")


def read_verification_key(
    path: str | os.PathLike[str], *, what: str = "verification key"
) -> VerificationKey:
    """The Ed25519 public key in the PEM file at ``path`` (see the module); an
    :class:`InputError` (one line: ``{what} {path}: …``) for any other file."""
    return verification_key_from_pem(_key_file(path, what), f"{what} {Path(path)}")


def _environment(option: str, variable: str) -> bytes:
    value = os.environ.get(variable)
    if value is None:
        msg = f"{option}: environment variable {variable} is not set"
        raise InputError(msg)
    if not value:
        msg = f"{option}: environment variable {variable} is empty"
        raise InputError(msg)
    return value.encode("utf-8", "surrogateescape")


def environment_signing_key(option: str, variable: str) -> SigningKey:
    """The Ed25519 private key whose PEM text is in the environment variable
    ``variable`` (named by ``option`` in a refusal, which never shows the value)."""
    data = _environment(option, variable)
    return signing_key_from_pem(data, f"{option}: environment variable {variable}")


def environment_verification_key(option: str, variable: str) -> VerificationKey:
    """The Ed25519 public key whose PEM text is in the environment variable
    ``variable`` (named by ``option`` in a refusal)."""
    data = _environment(option, variable)
    return verification_key_from_pem(data, f"{option}: environment variable {variable}")


# ------------------------------------------------------------------ HMAC-SHA256 (read)


def _short(size: int) -> str:
    unit = "byte" if size == 1 else "bytes"
    return (
        f"{size} {unit}; a signing key needs at least {MIN_KEY_BYTES} bytes "
        "(for example 32 random bytes, hex- or base64-encoded)"
    )


def check_hmac_key(key: object) -> bytes:
    """``key``, when it is bytes of at least :data:`MIN_KEY_BYTES`; an
    :class:`InputError` (one line, never the key) otherwise."""
    if not isinstance(key, bytes | bytearray):  # callers outside mypy can pass anything
        msg = f"a signing key is bytes, not {type(key).__name__}"
        raise InputError(msg)
    if len(key) < MIN_KEY_BYTES:
        msg = f"the signing key has {_short(len(key))}"
        raise InputError(msg)
    return bytes(key)


def environment_hmac_key(option: str, variable: str) -> bytes:
    """The HMAC key in the environment variable ``variable`` (named by ``option``): an
    :class:`InputError` saying the variable is not set, is empty, or holds too short a
    key (never the key itself)."""
    key = _environment(option, variable)
    if len(key) < MIN_KEY_BYTES:
        msg = f"{option}: environment variable {variable} holds {_short(len(key))}"
        raise InputError(msg)
    return key


def hmac_key_id(key: bytes) -> str:
    """The first 8 hex digits of the key's SHA-256: names a key without revealing it."""
    return hashlib.sha256(check_hmac_key(key)).hexdigest()[:8]


def hmac_sign(canonical_bytes: bytes, key: bytes) -> str:
    """The HMAC-SHA256 of ``canonical_bytes`` under ``key``, in hex."""
    return hmac.new(check_hmac_key(key), canonical_bytes, hashlib.sha256).hexdigest()


def hmac_matches(canonical_bytes: bytes, key: bytes, claimed: str) -> bool:
    """Whether ``claimed`` is the HMAC-SHA256 of ``canonical_bytes`` under ``key`` (in
    constant time)."""
    return hmac.compare_digest(hmac_sign(canonical_bytes, key), claimed)
