"""The shapes of the assessment document (``vllm-evidence.assessment/9``), as typed dicts.

Pure declarations: what each decision's document and each section holds.  The hooks that
build them from the typed decisions are in :mod:`vllm_evidence._output.assessment`, which
re-exports every name here.
"""

from __future__ import annotations

from typing import Any, TypedDict

from vllm_evidence._assessment import Verdict
from vllm_evidence._readback.evidence import SourceDocument

__all__ = [
    "AssessmentDocument",
    "CapacityDocument",
    "DecisionsDocument",
    "FrontDoorSummary",
    "HealthCoverageDocument",
    "JoinDocument",
    "LawDocument",
    "LogJoinDocument",
    "ObservationsDocument",
    "ParallelDocument",
    "ReceiptDocument",
    "ServedIdentityDocument",
    "VersionsDocument",
]


LawDocument = dict[str, Any]
"""One law (or its absence): see :func:`vllm_evidence._output.laws.law_json`."""


class ParallelDocument(TypedDict):
    """``decisions.parallel``."""

    subject: str
    verdict: Verdict
    reason: str
    detail: str
    remedy: str | None
    tensor_parallel_size: int | None
    pipeline_parallel_size: int | None
    data_parallel_size: int | None
    expected_ranks: list[int] | None
    present_ranks: list[int] | None
    missing_ranks: list[int]
    ranks: list[dict[str, Any]]
    world_size_product: int | None
    configuration_source: SourceDocument | None
    data_parallel_note: str | None
    laws: list[LawDocument]


class CapacityDocument(TypedDict):
    """``decisions.capacity``."""

    subject: str
    verdict: Verdict
    reason: str
    detail: str
    remedy: str | None
    source: str | None
    engines: list[dict[str, Any]]
    corroborated_by: list[dict[str, Any]]
    laws: list[LawDocument]


class ServedIdentityDocument(TypedDict):
    """``decisions.served_identity``."""

    subject: str
    verdict: Verdict
    reason: str
    detail: str
    remedy: str | None
    served_ids: list[str]
    configured_path: str | None
    derivations: list[dict[str, Any]]
    adapters: list[dict[str, Any]]
    source: SourceDocument | None
    laws: list[LawDocument]


class HealthCoverageDocument(TypedDict):
    """``decisions.health_coverage``."""

    subject: str
    verdict: Verdict
    reason: str
    detail: str
    remedy: str | None
    backend: str | None
    coverage: str | None
    backend_source: SourceDocument | None
    health_status: int | None
    laws: list[LawDocument]


class JoinDocument(TypedDict):
    """``decisions.front_door_join``."""

    subject: str
    verdict: Verdict
    reason: str
    detail: str
    remedy: str | None
    process_start_time_seconds: str | None
    laws: list[LawDocument]


class ReceiptDocument(TypedDict):
    """A launch receipt as the log join read it (the receipt file's fields, less
    ``schema``)."""

    pid: int
    process_start_time_seconds: str | None
    start_time_unavailable: str | None
    argv: list[str]
    host: str
    log_path: str | None
    log_bytes: int
    log_sha256: str


class LogJoinDocument(TypedDict):
    """``decisions.log_join``."""

    subject: str
    verdict: Verdict
    reason: str
    detail: str
    remedy: str | None
    process_start_time_seconds: str | None
    pid: int | None
    pid_tagged: bool | None
    receipt: ReceiptDocument | None


class DecisionsDocument(TypedDict):
    """Every decision for one server, each tagged by its ``verdict``."""

    parallel: ParallelDocument
    capacity: CapacityDocument
    served_identity: ServedIdentityDocument
    health_coverage: HealthCoverageDocument
    front_door_join: JoinDocument
    log_join: LogJoinDocument


class VersionsDocument(TypedDict):
    """The release each source reported (``None``: not read or not parsed)."""

    front_door: str | None
    startup_log: str | None


class FrontDoorSummary(TypedDict):
    """``front_door``: the section's source, join and route arms (its observations sit
    under ``observations``)."""

    source: dict[str, Any]
    join: dict[str, Any]
    routes: dict[str, dict[str, Any]]


class ObservationsDocument(TypedDict):
    """What each source showed: the front door's routes, and the startup log."""

    version: str | None
    models: list[dict[str, Any]] | None
    metrics: dict[str, Any] | None
    health: dict[str, Any] | None
    server_info: dict[str, Any] | None
    world_size: dict[str, Any] | None
    startup_log: dict[str, Any] | None


class AssessmentDocument(TypedDict):
    """The ``vllm-evidence.assessment/9`` document (``vllm-evidence schema assessment``)."""

    schema: str
    version: str | None
    versions: VersionsDocument
    decisions: DecisionsDocument
    front_door: FrontDoorSummary | None
    observations: ObservationsDocument
