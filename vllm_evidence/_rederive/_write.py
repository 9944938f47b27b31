"""The evidence document :func:`~vllm_evidence._rederive.dumps` writes.

One assessment's raw evidence (the front door's exchanges or bodies, the startup log by
reference or embedded, the launch, the receipt) and each decision's verdict and reason
as a check only, built by the converter's hook; nothing decided is written to be read
back as a fact.
"""

from __future__ import annotations

import base64
import hashlib
import json

import attrs

from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import Assessment, claim_decisions, verdict
from vllm_evidence._capture._signing import ALGORITHM, canonical, key_id, sign
from vllm_evidence._capture.batch import Exchange
from vllm_evidence._capture.log import read_log_bytes
from vllm_evidence._converter import converter, register_rendering
from vllm_evidence._readback.front_door import CapturedReadback, HistoricalBundle
from vllm_evidence.errors import InputError

__all__ = ["SCHEMA", "dumps"]

SCHEMA = "vllm-evidence.evidence/3"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _exchange_json(exchange: Exchange) -> dict[str, object]:
    return {
        "route": exchange.route.stem,
        "role": exchange.role.value,
        "transport": exchange.transport.value,
        "status": exchange.status,
        "headers": [list(pair) for pair in exchange.headers],
        "body": None if exchange.body is None else _b64(exchange.body),
        "body_sha256": exchange.body_sha256,
        "size_limit": exchange.size_limit,
        "started_monotonic_ns": exchange.started_monotonic_ns,
        "ended_monotonic_ns": exchange.ended_monotonic_ns,
        "started_at": exchange.started_at.isoformat(),
        "ended_at": exchange.ended_at.isoformat(),
        "detail": exchange.detail,
    }


def _front_door_json(front_door: CapturedReadback | HistoricalBundle) -> dict[str, object]:
    if isinstance(front_door, CapturedReadback):
        batch = front_door.batch
        return {
            "kind": "captured",
            "batch_id": batch.batch_id,
            "target": batch.target,
            "origin": batch.origin.value,
            "exchanges": [_exchange_json(e) for e in batch.all_exchanges()],
        }
    return {
        "kind": "historical",
        "bodies": [
            {"route": route.stem, "body": _b64(body), "sha256": hashlib.sha256(body).hexdigest()}
            for route, body in front_door.bodies
        ],
        "statuses": [
            {"route": route.stem, "status": status} for route, status in front_door.statuses
        ],
    }


def _log_json(log: StartupLog, *, embed: bool) -> dict[str, object]:
    if log.source is None:
        msg = (
            "the startup log was read from a stream: it keeps neither its bytes nor a "
            "path, so nothing can read it again; read the log from a file"
        )
        raise InputError(msg)
    embedded = None
    if embed:
        embedded = _b64(read_log_bytes(log.source, size_bytes=log.size_bytes, sha256=log.sha256))
    return {
        "source": log.source,
        "sha256": log.sha256,
        "size_bytes": log.size_bytes,
        "wrap_width": log.wrap_width,
        "embedded": embedded,
    }


def _verdicts(assessment: Assessment) -> dict[str, dict[str, str]]:
    return {
        claim: {"verdict": verdict(d), "reason": d.reason.value}
        for claim, d in claim_decisions(assessment).items()
    }


@attrs.frozen
class _EvidenceDocument:
    """What :func:`dumps` writes: one assessment's raw evidence (its hook builds it)."""

    assessment: Assessment
    embed_log: bool
    sign_key: bytes | None = attrs.field(default=None, repr=False)


def _evidence_document(document: _EvidenceDocument) -> dict[str, object]:
    assessment = document.assessment
    evidence = assessment.evidence
    log = assessment.startup_log
    body: dict[str, object] = {
        "schema": SCHEMA,
        "front_door": None
        if evidence.front_door is None
        else _front_door_json(evidence.front_door),
        "startup_log": None if log is None else _log_json(log, embed=document.embed_log),
        "launch": None if evidence.launch is None else evidence.launch.index,
        "receipt": None if evidence.receipt is None else _b64(evidence.receipt.raw),
        "verdicts": _verdicts(assessment),
    }
    if document.sign_key is not None:
        covered = canonical(body, without="signature")
        body["signature"] = {
            "algorithm": ALGORITHM,
            "key_id": key_id(document.sign_key),
            "hmac_sha256": sign(covered, document.sign_key),
        }
    return body


register_rendering(_EvidenceDocument, _evidence_document)


def dumps(assessment: Assessment, *, embed_log: bool = False, sign_key: bytes | None = None) -> str:
    """The assessment's raw evidence as one JSON document (``vllm-evidence.evidence/3``).

    A document is not an observation: :func:`~vllm_evidence._rederive.loads` rebuilds its
    batch as *loaded* bytes, so a log join established on probed bytes does not come back
    from it, unless the document is signed (``sign_key``: an HMAC-SHA256 over the
    canonical document, with the key's id) and read with the same key (``verify_key``).

    The startup log goes by reference (path, SHA-256, size) unless ``embed_log``: then
    its bytes go too, read again now and checked against its digest.  Raises
    :class:`~vllm_evidence.errors.InputError` for a log read from a stream (nothing can
    read it again) or one that can no longer be read, and
    :class:`~vllm_evidence.errors.EvidenceMismatchError` for a log that changed since.
    """
    if assessment.evidence.process_tree is not None:
        # The launcher's process tree is read from /proc, not from bytes this document
        # can carry: a verdict it ended could not be re-derived from the document.
        msg = (
            "an assessment made with its launcher's process tree (the gate) cannot be "
            "written as an evidence document: the tree is not in it; assess without it"
        )
        raise InputError(msg)
    document = converter.unstructure(_EvidenceDocument(assessment, embed_log, sign_key))
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
