"""One server's decisions together, and their rendering as JSON and text.

:func:`assess` runs every decision over one server's evidence — a front-door readback
and/or one launch of its startup log — and returns a sealed :class:`Assessment`.
:func:`assessment_document` renders the public JSON contract
(schema ``vllm-evidence.assessment/1``); :func:`render_assessment` the plain-text
report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, final

import attrs
from packaging.version import Version

from vllm_evidence._claims import CLAIMS
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.startup_log import Launch, StartupLog
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
    decide_capacity,
    decide_front_door_join,
    decide_health_coverage,
    decide_parallel,
    decide_served_identity,
)
from vllm_evidence.decisions._sources import Evidence, FrontDoor, gather
from vllm_evidence.errors import InputError
from vllm_evidence.output.startup_log import startup_log_document
from vllm_evidence.render import front_door_document
from vllm_evidence.upstream.laws import Law, LawNotEstablished, law_json

__all__ = [
    "CLAIMS",
    "SCHEMA",
    "Assessment",
    "assess",
    "assessment_document",
    "claim_established",
    "render_assessment",
]

SCHEMA = "vllm-evidence.assessment/1"


@final
@attrs.frozen(init=False)
class Assessment(Sealed):
    """Every decision for one server, with the evidence they were made from."""

    __public_constructor__ = "vllm_evidence.assess()"

    evidence: Evidence
    startup_log: StartupLog | None
    parallel: ParallelDecision
    capacity: CapacityDecision
    served_identity: ServedIdentityDecision
    health_coverage: HealthCoverageDecision
    front_door_join: FrontDoorJoinDecision

    @property
    def version(self) -> Version | None:
        """The self-reported version: ``/version``, else the launch's banner."""
        return self.evidence.front_door_version() or self.evidence.launch_version()


_mint_assessment = minter(Assessment, Assessment.__attrs_init__)


def assess(
    front_door: FrontDoor | None = None,
    startup_log: StartupLog | None = None,
    *,
    launch: int | None = None,
) -> Assessment:
    """Run every decision over one server's evidence.

    ``launch`` picks which launch of the log to read (default: the last one, the
    process a restarted server is now running).  Evidence from two launches is never
    joined.  Raises :class:`~vllm_evidence.errors.InputError` for a launch index the
    log does not have.
    """
    chosen: Launch | None = None
    if startup_log is not None and startup_log.launches:
        if launch is None:
            chosen = startup_log.launches[-1]
        elif 0 <= launch < len(startup_log.launches):
            chosen = startup_log.launches[launch]
        else:
            msg = f"launch must be 0..{len(startup_log.launches) - 1}, got {launch}"
            raise InputError(msg)
    evidence = gather(front_door, chosen)
    return _mint_assessment(
        evidence=evidence,
        startup_log=startup_log,
        parallel=decide_parallel(evidence),
        capacity=decide_capacity(evidence),
        served_identity=decide_served_identity(evidence),
        health_coverage=decide_health_coverage(evidence),
        front_door_join=decide_front_door_join(evidence),
    )


def claim_established(assessment: Assessment, claim: str) -> bool:
    """Whether the named claim (one of :data:`CLAIMS`) is established."""
    match claim:
        case "parallel":
            return isinstance(assessment.parallel, ParallelEstablished)
        case "capacity":
            return isinstance(assessment.capacity, CapacityEstablished)
        case "served_identity":
            return isinstance(assessment.served_identity, ServedIdentityEstablished)
        case "health_coverage":
            return isinstance(assessment.health_coverage, HealthCoverageEstablished)
        case "front_door_join":
            return isinstance(assessment.front_door_join, JoinedIncarnation)
        case _:
            msg = f"claim must be one of {', '.join(CLAIMS)}, got {claim!r}"
            raise ValueError(msg)


# --- JSON ---------------------------------------------------------------------------


_ESTABLISHED = (
    ParallelEstablished,
    CapacityEstablished,
    ServedIdentityEstablished,
    HealthCoverageEstablished,
    JoinedIncarnation,
)


def _verdict(decision: object) -> str:
    if isinstance(decision, CapacityReported):
        return "reported"
    return "established" if isinstance(decision, _ESTABLISHED) else "refused"


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
        "verdict": _verdict(d),
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
        "verdict": _verdict(d),
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
        "verdict": _verdict(d),
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
        "verdict": _verdict(d),
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
        front_door_document(evidence.front_door) if evidence.front_door is not None else None
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


# --- text ---------------------------------------------------------------------------

_TITLES = {
    "parallel": "parallel realization",
    "capacity": "KV-cache capacity",
    "served_identity": "served identity",
    "health_coverage": "/health coverage",
    "front_door_join": "front-door join",
}


def render_assessment(assessment: Assessment, *, target: str | None = None) -> str:
    """A plain-text report: each decision's verdict, why, and what would move it."""
    doc = assessment_document(assessment)
    lines = []
    head = f"vLLM {doc['version'] or '(version unobserved)'}"
    if target:
        head = f"{target} — {head}"
    lines.append(head)
    for key, title in _TITLES.items():
        decision = doc["decisions"][key]
        lines.append(f"  {title:<22} {decision['verdict'].upper():<12} {decision['reason']}")
        lines.append(f"  {'':<22} {decision['detail']}")
        if decision["remedy"] and decision["remedy"] != "none":
            lines.append(f"  {'':<22} to move it: {decision['remedy']}")
        for law in decision["laws"][:1]:
            scope = law.get("span")
            if isinstance(scope, dict):
                lines.append(
                    f"  {'':<22} law {law['question']} (read for {scope['first']} .. "
                    f"{scope['last']})"
                )
    return "\n".join(lines) + "\n"
