"""The assessment's JSON document (schema ``vllm-evidence.assessment/9``).

Built from the typed decisions of one :class:`~vllm_evidence._assessment.Assessment`;
the keys are a public contract (README, DESIGN §6): change them only with a schema
version bump and a CHANGELOG entry.  Version 2 added ``subject`` to every decision
(``"serving"`` or ``"launch"``) and ``decisions.log_join``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast, get_args

import attrs

from vllm_evidence._adapters.receipt import LaunchReceipt
from vllm_evidence._assessment import REGISTRY, Assessment, Verdict, verdict
from vllm_evidence._converter import converter, register_rendering
from vllm_evidence._output._assessment_documents import (
    AssessmentDocument,
    CapacityDocument,
    DecisionsDocument,
    FrontDoorSummary,
    HealthCoverageDocument,
    JoinDocument,
    LawDocument,
    LogJoinDocument,
    ObservationsDocument,
    ParallelDocument,
    ReceiptDocument,
    ServedIdentityDocument,
    VersionsDocument,
)
from vllm_evidence._output.front_door import FrontDoorDocument, front_door_document
from vllm_evidence._output.laws import law_json
from vllm_evidence._output.startup_log import startup_log_document
from vllm_evidence._readback.evidence import SourceDocument
from vllm_evidence.decisions import (
    CapacityDecision,
    CapacityEstablished,
    CapacityRefused,
    CapacityReported,
    EngineCapacity,
    FrontDoorJoinDecision,
    HealthCoverageDecision,
    HealthCoverageEstablished,
    JoinedIncarnation,
    LogJoinDecision,
    LogJoined,
    ParallelDecision,
    ParallelEstablished,
    PresentRank,
    ServedAdapter,
    ServedIdentityDecision,
    ServedIdentityEstablished,
    ServedName,
)
from vllm_evidence.upstream._laws import Law, LawNotEstablished

__all__ = [
    "SCHEMA",
    "AssessmentDocument",
    "CapacityDocument",
    "DecisionsDocument",
    "FrontDoorSummary",
    "HealthCoverageDocument",
    "JoinDocument",
    "LogJoinDocument",
    "ObservationsDocument",
    "ParallelDocument",
    "ReceiptDocument",
    "ServedIdentityDocument",
    "ServerResult",
    "Verdict",
    "VersionsDocument",
    "assessment_document",
    "server_document",
    "verdict",
]

SCHEMA = "vllm-evidence.assessment/9"


def assessment_document(assessment: Assessment) -> AssessmentDocument:
    """The public JSON document (schema ``vllm-evidence.assessment/9``)."""
    document: AssessmentDocument = converter.unstructure(assessment)
    return document


@attrs.frozen
class ServerResult:
    """One named server's assessment, or why it could not be assessed: a line of
    ``probe --json`` over several servers (``target`` first, then the assessment
    document's keys, or ``error``)."""

    target: str
    result: Assessment | str


def server_document(target: str, result: Assessment | str) -> dict[str, Any]:
    """The document of one named server: ``{"target", **assessment}`` or
    ``{"target", "error"}``."""
    document: dict[str, Any] = converter.unstructure(ServerResult(target, result))
    return document


def _server_json(server: ServerResult) -> dict[str, Any]:
    if isinstance(server.result, str):
        return {"target": server.target, "error": server.result}
    return {"target": server.target, **converter.unstructure(server.result)}


def _laws_json(
    laws: Law | LawNotEstablished | Sequence[Law | LawNotEstablished] | None,
) -> list[LawDocument]:
    if laws is None:
        return []
    if isinstance(laws, Sequence):
        return [law_json(law) for law in laws]
    return [law_json(laws)]


def _source(source: object) -> SourceDocument | None:
    document: SourceDocument | None = converter.unstructure(source)
    return document


def _engine_json(e: EngineCapacity) -> dict[str, object]:
    return {
        "engine": e.engine,
        "tokens": converter.unstructure(e.tokens),
        "max_concurrency": converter.unstructure(e.max_concurrency),
        "max_model_len": converter.unstructure(e.max_model_len),
        "source": e.source_kind.value,
        "where": _source(e.source),
    }


def _rank_json(r: PresentRank) -> dict[str, object]:
    return {
        "rank": r.rank,
        "dp_rank": r.data_parallel_rank,
        "pid": r.pid,
        "where": _source(r.source),
    }


def _name_json(n: ServedName) -> dict[str, object]:
    return {
        "served_id": n.served_id,
        "configured_path": n.configured_path,
        "derivation": converter.unstructure(n.derivation),
    }


def _adapter_json(a: ServedAdapter) -> dict[str, object]:
    return {
        "name": a.name,
        "root": a.root,
        "parent": a.parent,
        "derivation": converter.unstructure(a.derivation),
    }


def _parallel_json(d: ParallelDecision) -> ParallelDocument:
    config = d.configuration
    if isinstance(d, ParallelEstablished):
        present: tuple[int, ...] | None = tuple(r.rank for r in d.ranks)
        ranks = [converter.unstructure(r) for r in d.ranks]
        expected: list[int] | None = list(d.configuration.expected_ranks())
        missing: list[int] = []
        product = None
        remedy = None
    else:
        present = tuple(r.rank for r in d.present) if d.configuration is not None else None
        ranks = [converter.unstructure(r) for r in d.present]
        expected = None if d.expected_ranks is None else list(d.expected_ranks)
        missing = list(d.missing_ranks)
        product = d.world_size_product
        remedy = d.remedy
    return {
        "subject": d.subject.value,
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": remedy,
        "tensor_parallel_size": None if config is None else config.tensor_parallel_size,
        "pipeline_parallel_size": None if config is None else config.pipeline_parallel_size,
        "data_parallel_size": None if config is None else config.data_parallel_size,
        "expected_ranks": expected,
        "present_ranks": None if present is None else list(present),
        "missing_ranks": missing,
        "ranks": ranks,
        "world_size_product": product,
        "configuration_source": None if config is None else _source(config.source),
        "data_parallel_note": None if config is None else config.data_parallel_note,
        "laws": _laws_json(d.law),
    }


def _capacity_json(d: CapacityDecision) -> CapacityDocument:
    match d:
        case CapacityEstablished():
            source = d.engines[0].source_kind.value if d.engines else None
            return {
                "subject": d.subject.value,
                "verdict": verdict(d),
                "reason": d.reason.value,
                "detail": d.detail,
                "remedy": None,
                "source": source,
                "engines": [converter.unstructure(e) for e in d.engines],
                "corroborated_by": [converter.unstructure(e) for e in d.corroborated_by],
                "laws": _laws_json(d.laws),
            }
        case CapacityReported():
            return {
                "subject": d.subject.value,
                "verdict": verdict(d),
                "reason": d.reason.value,
                "detail": d.detail,
                "remedy": d.remedy,
                "source": d.engines[0].source_kind.value if d.engines else None,
                "engines": [converter.unstructure(e) for e in d.engines],
                "corroborated_by": [],
                "laws": _laws_json(d.laws),
            }
        case CapacityRefused():
            return {
                "subject": d.subject.value,
                "verdict": verdict(d),
                "reason": d.reason.value,
                "detail": d.detail,
                "remedy": d.remedy,
                "source": None,
                "engines": [converter.unstructure(e) for e in d.engines],
                "corroborated_by": [],
                "laws": _laws_json(d.laws),
            }


def _identity_json(d: ServedIdentityDecision) -> ServedIdentityDocument:
    return {
        "subject": d.subject.value,
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": None if isinstance(d, ServedIdentityEstablished) else d.remedy,
        "served_ids": [n.served_id for n in d.names],
        "configured_path": d.configured_path,
        "derivations": [converter.unstructure(n) for n in d.names],
        "adapters": [converter.unstructure(a) for a in d.adapters],
        "source": _source(d.source),
        "laws": _laws_json(d.law),
    }


def _health_json(d: HealthCoverageDecision) -> HealthCoverageDocument:
    if isinstance(d, HealthCoverageEstablished):
        backend: str | None = d.backend.value
        coverage: str | None = d.coverage.value
        remedy = None
    else:
        backend, coverage, remedy = d.backend, None, d.remedy
    return {
        "subject": d.subject.value,
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": remedy,
        "backend": backend,
        "coverage": coverage,
        "backend_source": _source(d.backend_source),
        "health_status": d.health_status,
        "laws": _laws_json(d.law),
    }


def _join_json(d: FrontDoorJoinDecision) -> JoinDocument:
    if isinstance(d, JoinedIncarnation):
        remedy, marker = None, str(d.process_start_seconds)
    else:
        remedy, marker = d.remedy, None
    return {
        "subject": d.subject.value,
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": remedy,
        "process_start_time_seconds": marker,
        "laws": _laws_json(d.law),
    }


def _receipt_json(r: LaunchReceipt) -> ReceiptDocument:
    start = r.process_start_seconds
    return {
        "pid": r.pid,
        "process_start_time_seconds": None if start is None else str(start),
        "start_time_unavailable": r.start_time_unavailable,
        "argv": list(r.argv),
        "host": r.host,
        "log_path": r.log_path,
        "log_bytes": r.log_bytes,
        "log_sha256": r.log_sha256,
    }


def _log_join_json(d: LogJoinDecision) -> LogJoinDocument:
    receipt: ReceiptDocument | None = converter.unstructure(d.receipt)
    if isinstance(d, LogJoined):
        return {
            "subject": d.subject.value,
            "verdict": verdict(d),
            "reason": d.reason.value,
            "detail": d.detail,
            "remedy": None,
            "process_start_time_seconds": str(d.process_start_seconds),
            "pid": d.pid,
            "pid_tagged": d.pid_tagged,
            "receipt": receipt,
        }
    marker = d.process_start_seconds
    return {
        "subject": d.subject.value,
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": d.remedy,
        "process_start_time_seconds": None if marker is None else str(marker),
        "pid": None,
        "pid_tagged": None,
        "receipt": receipt,
    }


def _decisions_json(assessment: Assessment) -> DecisionsDocument:
    """Every decision by its claim, in :data:`~vllm_evidence._assessment.REGISTRY` order
    (each rendered by its arm's hook below)."""
    decisions: DecisionsDocument = cast(
        "DecisionsDocument",
        {spec.name: converter.unstructure(spec.of(assessment)) for spec in REGISTRY},
    )
    return decisions


def _assessment_json(assessment: Assessment) -> AssessmentDocument:
    evidence = assessment.evidence
    front_door: FrontDoorDocument | None = (
        front_door_document(evidence.front_door, assessment.front_door_join)
        if evidence.front_door is not None
        else None
    )
    log_doc: dict[str, Any] | None = None
    if assessment.startup_log is not None:
        log_doc = {
            **startup_log_document(assessment.startup_log),
            "assessed_launch": None if evidence.launch is None else evidence.launch.index,
        }
    seen = None if front_door is None else front_door["observations"]
    return {
        "schema": SCHEMA,
        "version": converter.unstructure(assessment.version),
        "versions": {
            "front_door": converter.unstructure(evidence.reported_front_door_version()),
            "startup_log": converter.unstructure(evidence.launch_version()),
        },
        "decisions": _decisions_json(assessment),
        "front_door": None
        if front_door is None
        else {
            "source": front_door["source"],
            "join": front_door["join"],
            "routes": front_door["routes"],
        },
        "observations": {
            "version": None if seen is None else seen["version"],
            "models": None if seen is None else seen["models"],
            "metrics": None if seen is None else seen["metrics"],
            "health": None if seen is None else seen["health"],
            "server_info": None if seen is None else seen["server_info"],
            "world_size": None if seen is None else seen["world_size"],
            "startup_log": log_doc,
        },
    }


def _register(union: object, hook: Any) -> None:
    for arm in get_args(union):
        register_rendering(arm, hook)


_register(ParallelDecision, _parallel_json)
_register(CapacityDecision, _capacity_json)
_register(ServedIdentityDecision, _identity_json)
_register(HealthCoverageDecision, _health_json)
_register(FrontDoorJoinDecision, _join_json)
_register(LogJoinDecision, _log_join_json)
register_rendering(LaunchReceipt, _receipt_json)
register_rendering(EngineCapacity, _engine_json)
register_rendering(PresentRank, _rank_json)
register_rendering(ServedName, _name_json)
register_rendering(ServedAdapter, _adapter_json)
register_rendering(Assessment, _assessment_json)
register_rendering(ServerResult, _server_json)
