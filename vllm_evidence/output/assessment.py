"""The assessment's JSON document (schema ``vllm-evidence.assessment/1``).

Built from the typed decisions of one :class:`~vllm_evidence.assessment.Assessment`;
the keys are a public contract (README, DESIGN §6): change them only with a schema
version bump and a CHANGELOG entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vllm_evidence.assessment import Assessment, verdict
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
    ParallelDecision,
    ParallelEstablished,
    PresentRank,
    ServedIdentityDecision,
    ServedIdentityEstablished,
)
from vllm_evidence.output.front_door import front_door_document
from vllm_evidence.output.laws import law_json
from vllm_evidence.output.startup_log import startup_log_document
from vllm_evidence.upstream.laws import Law, LawNotEstablished

__all__ = ["SCHEMA", "assessment_document", "verdict"]

SCHEMA = "vllm-evidence.assessment/1"


def _laws_json(
    laws: Law | LawNotEstablished | Sequence[Law | LawNotEstablished] | None,
) -> list[dict[str, object]]:
    if laws is None:
        return []
    if isinstance(laws, Sequence):
        return [law_json(law) for law in laws]
    return [law_json(laws)]


def _engine_json(e: EngineCapacity) -> dict[str, object]:
    return {
        "engine": e.engine,
        "tokens": e.tokens.value,
        "max_concurrency": None if e.max_concurrency is None else str(e.max_concurrency.value),
        "max_model_len": None if e.max_model_len is None else e.max_model_len.value,
        "source": e.source_kind.value,
        "where": e.source.as_json(),
    }


def _rank_json(r: PresentRank) -> dict[str, object]:
    return {
        "rank": r.rank,
        "dp_rank": r.data_parallel_rank,
        "pid": r.pid,
        "where": r.source.as_json(),
    }


def _parallel_json(d: ParallelDecision) -> dict[str, object]:
    config = d.configuration
    if isinstance(d, ParallelEstablished):
        present: tuple[int, ...] | None = tuple(r.rank for r in d.ranks)
        ranks = [_rank_json(r) for r in d.ranks]
        expected: list[int] | None = list(d.configuration.expected_ranks())
        missing: list[int] = []
        product = None
        remedy = None
    else:
        present = tuple(r.rank for r in d.present) if d.configuration is not None else None
        ranks = [_rank_json(r) for r in d.present]
        expected = None if d.expected_ranks is None else list(d.expected_ranks)
        missing = list(d.missing_ranks)
        product = d.world_size_product
        remedy = d.remedy
    return {
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
        "configuration_source": None if config is None else config.source.as_json(),
        "data_parallel_note": None if config is None else config.data_parallel_note,
        "laws": _laws_json(d.law),
    }


def _capacity_json(d: CapacityDecision) -> dict[str, object]:
    match d:
        case CapacityEstablished():
            source = d.engines[0].source_kind.value if d.engines else None
            return {
                "verdict": "established",
                "reason": d.reason.value,
                "detail": d.detail,
                "remedy": None,
                "source": source,
                "engines": [_engine_json(e) for e in d.engines],
                "corroborated_by": [_engine_json(e) for e in d.corroborated_by],
                "laws": _laws_json(d.laws),
            }
        case CapacityReported():
            return {
                "verdict": "reported",
                "reason": d.reason.value,
                "detail": d.detail,
                "remedy": d.remedy,
                "source": d.engines[0].source_kind.value if d.engines else None,
                "engines": [_engine_json(e) for e in d.engines],
                "corroborated_by": [],
                "laws": _laws_json(d.laws),
            }
        case CapacityRefused():
            return {
                "verdict": "refused",
                "reason": d.reason.value,
                "detail": d.detail,
                "remedy": d.remedy,
                "source": None,
                "engines": [_engine_json(e) for e in d.engines],
                "corroborated_by": [],
                "laws": _laws_json(d.laws),
            }


def _identity_json(d: ServedIdentityDecision) -> dict[str, object]:
    return {
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": None if isinstance(d, ServedIdentityEstablished) else d.remedy,
        "served_ids": [n.served_id for n in d.names],
        "configured_path": d.configured_path,
        "derivations": [
            {
                "served_id": n.served_id,
                "configured_path": n.configured_path,
                "derivation": None if n.derivation is None else n.derivation.value,
            }
            for n in d.names
        ],
        "source": None if d.source is None else d.source.as_json(),
        "laws": _laws_json(d.law),
    }


def _health_json(d: HealthCoverageDecision) -> dict[str, object]:
    if isinstance(d, HealthCoverageEstablished):
        backend: str | None = d.backend.value
        coverage: str | None = d.coverage.value
        remedy = None
    else:
        backend, coverage, remedy = d.backend, None, d.remedy
    return {
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": remedy,
        "backend": backend,
        "coverage": coverage,
        "backend_source": None if d.backend_source is None else d.backend_source.as_json(),
        "health_status": d.health_status,
        "laws": _laws_json(d.law),
    }


def _join_json(d: FrontDoorJoinDecision) -> dict[str, object]:
    if isinstance(d, JoinedIncarnation):
        remedy, marker = None, str(d.process_start_seconds)
    else:
        remedy, marker = d.remedy, None
    return {
        "verdict": verdict(d),
        "reason": d.reason.value,
        "detail": d.detail,
        "remedy": remedy,
        "process_start_time_seconds": marker,
        "laws": _laws_json(d.law),
    }


def assessment_document(assessment: Assessment) -> dict[str, Any]:
    """The public JSON document (schema ``vllm-evidence.assessment/1``)."""
    evidence = assessment.evidence
    front_door = (
        front_door_document(evidence.front_door, assessment.front_door_join)
        if evidence.front_door is not None
        else None
    )
    log_doc: dict[str, Any] | None = None
    if assessment.startup_log is not None:
        log_doc = startup_log_document(assessment.startup_log)
        log_doc["assessed_launch"] = None if evidence.launch is None else evidence.launch.index
    version = assessment.version
    door_version = evidence.reported_front_door_version()
    log_version = evidence.launch_version()
    return {
        "schema": SCHEMA,
        "version": None if version is None else str(version),
        "versions": {
            "front_door": None if door_version is None else str(door_version),
            "startup_log": None if log_version is None else str(log_version),
        },
        "decisions": {
            "parallel": _parallel_json(assessment.parallel),
            "capacity": _capacity_json(assessment.capacity),
            "served_identity": _identity_json(assessment.served_identity),
            "health_coverage": _health_json(assessment.health_coverage),
            "front_door_join": _join_json(assessment.front_door_join),
        },
        "front_door": None
        if front_door is None
        else {k: front_door[k] for k in ("source", "join", "routes")},
        "observations": {
            **(front_door["observations"] if front_door is not None else _empty_observations()),
            "startup_log": log_doc,
        },
    }


def _empty_observations() -> dict[str, Any]:
    return {
        "version": None,
        "models": None,
        "metrics": None,
        "health": None,
        "server_info": None,
        "world_size": None,
    }
