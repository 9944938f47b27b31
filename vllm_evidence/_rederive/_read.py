"""Re-derivation: :func:`~vllm_evidence._rederive.loads` rebuilds an assessment from its
raw evidence and checks it.

The batch is rebuilt through the capture layer's own constructors, every digest is
checked, the adapters and :func:`~vllm_evidence._assessment.assess` run again, and the
re-derived verdicts must be the recorded ones
(:class:`~vllm_evidence.errors.EvidenceMismatchError` otherwise).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from vllm_evidence._adapters.receipt import parse_launch_receipt
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._adapters.startup_log.reader import (
    _reread_startup_log,
    _startup_log_from_bytes,
)
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture._signing import ALGORITHM, canonical, key_id, signature_matches
from vllm_evidence._capture.batch import (
    CaptureOrigin,
    Exchange,
    ExchangeRole,
    Transport,
    _rederive_batch,
    _rederive_exchange,
)
from vllm_evidence._claims import CLAIMS
from vllm_evidence._readback.front_door import (
    CapturedReadback,
    HistoricalBundle,
    _rederive_historical,
    readback_from_batch,
)
from vllm_evidence._rederive._strict_json import (
    MAX_DOCUMENT_CHARS,
    _bytes,
    _count,
    _enum,
    _field,
    _keys,
    _malformed,
    _object,
    _optional,
    _optional_count,
    _parse,
    _route,
    _timestamp,
)
from vllm_evidence._rederive._write import _verdicts
from vllm_evidence.decisions import LogJoinReason
from vllm_evidence.errors import EvidenceMismatchError
from vllm_evidence.upstream._routes import Route

if TYPE_CHECKING:
    from vllm_evidence._capture.signing import VerificationKey

__all__ = ["loads"]

_EXCHANGE_KEYS = frozenset(
    {
        "route",
        "role",
        "transport",
        "status",
        "headers",
        "body",
        "body_sha256",
        "size_limit",
        "started_monotonic_ns",
        "ended_monotonic_ns",
        "started_at",
        "ended_at",
        "detail",
    }
)


def _headers(raw: list[Any], where: str) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for pair in raw:
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            _malformed(where, "headers must be [name, value] pairs of strings")
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _exchange(raw: object, where: str) -> Exchange:
    entry = _object(raw, where)
    _keys(entry, _EXCHANGE_KEYS, where)
    body_text = _optional(entry, "body", str, where)
    return _rederive_exchange(
        _route(_field(entry, "route", str, where), where),
        _enum(ExchangeRole, _field(entry, "role", str, where), where),
        _enum(Transport, _field(entry, "transport", str, where), where),
        _optional_count(entry, "status", where, low=100),
        _headers(_field(entry, "headers", list, where), where),
        None if body_text is None else _bytes(body_text, where),
        _optional(entry, "body_sha256", str, where),
        _count(entry, "size_limit", where),
        _count(entry, "started_monotonic_ns", where),
        _count(entry, "ended_monotonic_ns", where),
        _timestamp(_field(entry, "started_at", str, where), where),
        _timestamp(_field(entry, "ended_at", str, where), where),
        _field(entry, "detail", str, where),
    )


def _captured(door: dict[str, Any], *, verified: bool) -> CapturedReadback:
    where = "front_door"
    _keys(door, frozenset({"kind", "batch_id", "target", "exchanges", "origin"}), where)
    recorded = _field(door, "origin", str, where)
    try:
        origin = CaptureOrigin(recorded)
    except ValueError:
        _malformed(f"{where}.origin", f"unknown origin {recorded!r}")
    if not verified:
        # Only a signature under the caller's own key vouches for the origin recorded.
        origin = CaptureOrigin.LOADED
    exchanges = [
        _exchange(raw, f"front_door.exchanges[{i}]")
        for i, raw in enumerate(_field(door, "exchanges", list, where))
    ]
    opening = [e for e in exchanges if e.role is ExchangeRole.BRACKET_OPEN]
    closing = [e for e in exchanges if e.role is ExchangeRole.BRACKET_CLOSE]
    if (len(opening), len(closing)) not in ((1, 1), (2, 2)):
        _malformed(
            where,
            "a batch has two /metrics reads at each end (one at each in a document "
            "written before the twin reads)",
        )
    batch = _rederive_batch(
        _field(door, "batch_id", str, where),
        _field(door, "target", str, where),
        opening[0],
        tuple(e for e in exchanges if e.role is ExchangeRole.ROUTE),
        closing[0],
        # A document is not an observation: unless its signature verified, its bytes come
        # back as loaded ones, whatever origin it records.
        origin,
        None,
        opening[1] if len(opening) == 2 else None,
        closing[1] if len(closing) == 2 else None,
    )
    return readback_from_batch(batch)


def _historical(door: dict[str, Any]) -> HistoricalBundle:
    where = "front_door"
    _keys(door, frozenset({"kind", "bodies", "statuses"}), where)
    bodies: dict[Route, bytes] = {}
    for i, raw in enumerate(_field(door, "bodies", list, where)):
        here = f"front_door.bodies[{i}]"
        entry = _object(raw, here)
        _keys(entry, frozenset({"route", "body", "sha256"}), here)
        route = _route(_field(entry, "route", str, here), here)
        if route in bodies:
            _malformed(here, f"a second body for {route.target}")
        body = _bytes(_field(entry, "body", str, here), here)
        recorded = _field(entry, "sha256", str, here)
        actual = hashlib.sha256(body).hexdigest()
        if actual != recorded:
            msg = (
                f"GET {route.target}: the body's SHA-256 is {actual} but {recorded} was "
                "recorded; the evidence was altered and nothing is derived from it"
            )
            raise EvidenceMismatchError(msg)
        bodies[route] = body
    statuses: dict[Route, int] = {}
    for i, raw in enumerate(_field(door, "statuses", list, where)):
        here = f"front_door.statuses[{i}]"
        entry = _object(raw, here)
        _keys(entry, frozenset({"route", "status"}), here)
        route = _route(_field(entry, "route", str, here), here)
        if route in statuses:
            _malformed(here, f"a second status for {route.target}")
        statuses[route] = _count(entry, "status", here, low=100)
    return _rederive_historical(tuple(bodies.items()), tuple(statuses.items()))


def _front_door(  # noqa: RET503
    raw: object, *, verified: bool
) -> CapturedReadback | HistoricalBundle | None:
    if raw is None:
        return None
    door = _object(raw, "front_door")
    kind = _field(door, "kind", str, "front_door")
    if kind == "captured":
        return _captured(door, verified=verified)
    if kind == "historical":
        return _historical(door)
    _malformed("front_door", f"unknown kind {kind!r}")


def _startup_log(raw: object) -> StartupLog | None:
    if raw is None:
        return None
    where = "startup_log"
    entry = _object(raw, where)
    _keys(entry, frozenset({"source", "sha256", "size_bytes", "wrap_width", "embedded"}), where)
    source = _optional(entry, "source", str, where)
    sha256 = _field(entry, "sha256", str, where)
    size_bytes = _count(entry, "size_bytes", where)
    wrap_width = _optional_count(entry, "wrap_width", where, low=1)
    embedded = _optional(entry, "embedded", str, where)
    if embedded is not None:
        data = _bytes(embedded, where)
        return _startup_log_from_bytes(data, source, wrap_width, size_bytes, sha256)
    if source is None:
        _malformed(where, "neither embedded bytes nor a path to read the log from")
    return _reread_startup_log(source, wrap_width, size_bytes, sha256)


def _recorded_verdicts(raw: object) -> dict[str, dict[str, str]]:
    where = "verdicts"
    entry = _object(raw, where)
    _keys(entry, frozenset(CLAIMS), where)
    verdicts: dict[str, dict[str, str]] = {}
    for claim in CLAIMS:
        here = f"verdicts.{claim}"
        one = _object(entry[claim], here)
        _keys(one, frozenset({"verdict", "reason"}), here)
        verdicts[claim] = {
            "verdict": _field(one, "verdict", str, here),
            "reason": _field(one, "reason", str, here),
        }
    return verdicts


def _verify(document: dict[str, Any], verify_key: bytes | None) -> bool:
    """Whether the document's signature verified under ``verify_key`` (``False`` when no
    key was given); a key given and no valid signature is an evidence mismatch."""
    if verify_key is None:
        return False
    raw = document.get("signature")
    if raw is None:
        msg = (
            f"the document is unsigned, but a signature by key id {key_id(verify_key)} is required"
        )
        raise EvidenceMismatchError(msg)
    where = "signature"
    entry = _object(raw, where)
    _keys(entry, frozenset({"algorithm", "key_id", "hmac_sha256"}), where)
    algorithm = _field(entry, "algorithm", str, where)
    signer = _field(entry, "key_id", str, where)
    claimed = _field(entry, "hmac_sha256", str, where)
    if algorithm != ALGORITHM:
        msg = f"the document is signed with {algorithm!r}, not {ALGORITHM}"
        raise EvidenceMismatchError(msg)
    if signer != key_id(verify_key):
        given = key_id(verify_key)
        msg = f"the document is signed by key id {signer}, not by the key given ({given})"
        raise EvidenceMismatchError(msg)
    if not signature_matches(canonical(document, without="signature"), verify_key, claimed):
        msg = f"the document's signature by key id {signer} does not verify"
        raise EvidenceMismatchError(msg)
    return True


def loads(
    text: str | bytes,
    *,
    max_chars: int = MAX_DOCUMENT_CHARS,
    verify_key: bytes | None = None,
    receipt_key: VerificationKey | None = None,
) -> Assessment:
    """Re-derive an assessment from a :func:`dumps` document.

    Every digest is checked, the batch is rebuilt and the adapters and decisions run
    again; nothing decided is read from the document.  A document is not an
    observation: its batch comes back as *loaded* bytes
    (:attr:`~vllm_evidence._capture.batch.CaptureOrigin.LOADED`), on which the log join
    refuses (``capture_unverified``), unless its signature verifies under
    ``verify_key`` (written by ``dumps(..., sign_key=...)`` with the same key): then the
    origin it records stands.  A receipt in the document is read again under
    ``receipt_key`` (the launcher's public key); without it, the receipt's signature is
    unverified and the log join refuses (``witness_unverified``).  Either way a joined
    document read without the key it needs comes back with the join refused — said, not
    raised — when nothing else differs.  Raises :class:`~vllm_evidence.errors.InputError` for a
    malformed document or a log that cannot be read again, and
    :class:`~vllm_evidence.errors.EvidenceMismatchError` when a body or the log does not
    match its recorded digest, a signature required by ``verify_key`` is missing or does
    not verify, or the re-derived verdicts are not the recorded ones.
    """
    document = _parse(text, max_chars)
    _keys(
        document,
        frozenset(
            {"schema", "front_door", "startup_log", "launch", "receipt", "verdicts"}
            | ({"signature"} & document.keys())
        ),
        "document",
    )
    verified = _verify(document, verify_key)
    recorded = _recorded_verdicts(document["verdicts"])
    launch = _optional_count(document, "launch", "document")
    front_door = _front_door(document["front_door"], verified=verified)
    log = _startup_log(document["startup_log"])
    if launch is not None and (log is None or not 0 <= launch < len(log.launches)):
        _malformed("launch", f"launch {launch} is not a launch of the startup log")
    if launch is None and log is not None and log.launches:
        _malformed("launch", "the startup log has launches but none is named")
    raw_receipt = _optional(document, "receipt", str, "document")
    receipt = (
        None
        if raw_receipt is None
        else parse_launch_receipt(
            _bytes(raw_receipt, "receipt"),
            "in the evidence document",
            verification_key=receipt_key,
        )
    )
    assessment = assess(front_door, log, launch=launch, receipt=receipt)
    derived = _verdicts(assessment)
    if derived != recorded:
        differ = "; ".join(
            f"{claim}: re-derived {derived[claim]['verdict']} ({derived[claim]['reason']}), "
            f"recorded {recorded[claim]['verdict']} ({recorded[claim]['reason']})"
            for claim in CLAIMS
            if derived[claim] != recorded[claim]
        )
        unverified = (
            assessment.log_join.reason in _KEY_NOT_GIVEN
            and recorded["log_join"]["verdict"] == "established"
        )
        if unverified and all(
            derived[claim]["reason"] in _JOIN_LOST
            for claim in CLAIMS
            if derived[claim] != recorded[claim]
        ):
            # An unsigned document of a joined assessment: its bytes re-derive the same
            # evidence, but a loaded capture is no observation, so the join (and what the
            # log alone gave the serving claims) is refused — said, not raised.
            return assessment
        hint = (
            ": a log join rests on bytes this process observed, and an unsigned document "
            "is not an observation (write it with dumps(..., sign_key=KEY) and read it "
            "with loads(..., verify_key=KEY))"
            if unverified
            else ""
        )
        if assessment.log_join.reason is LogJoinReason.WITNESS_OTHER_KEY:
            hint = ": the document's receipt is signed by another key than receipt_key"
        msg = (
            f"the evidence does not reproduce the recorded verdicts ({differ}){hint}; "
            "nothing is derived from it"
        )
        raise EvidenceMismatchError(msg)
    return assessment


#: What a claim re-derived from an unsigned document of a joined assessment becomes:
#: nothing else may differ from the recorded verdicts.
_JOIN_LOST = frozenset({"capture_unverified", "witness_unverified", "log_not_joined"})
#: The log join's refusals that say a key was not given: the document's capture read
#: without its signature's key, or its receipt without the launcher's.
_KEY_NOT_GIVEN = frozenset({LogJoinReason.CAPTURE_UNVERIFIED, LogJoinReason.WITNESS_UNVERIFIED})
