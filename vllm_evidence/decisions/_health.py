"""Health coverage: what a 200 from ``/health`` covers for this server.

In V1 ``/health`` reads a local engine-dead flag; what sets that flag depends on the
release and on the executor backend (``mp`` watches worker processes, the legacy
``ray`` executor does not, ``uni`` runs its worker inside the engine process).  So the
decision needs, in order: a version to scope the laws, the executor backend, and a law
for that backend in that release.  An unobserved backend is an earlier refusal than a
backend observed but without a law.

With a front door the subject is the serving process: a front door that was not
reached, answered only errors or restarted mid-batch establishes nothing, a ``/health``
that did not answer 200 covers nothing (``health_not_ok``), and a backend read from the
log counts only when the log-join decision joined the log to that front door (else
``log_not_joined``).  A log alone establishes what a 200 would cover for its *launch*.
"""

from __future__ import annotations

import enum
from typing import TypeAlias, final

import attrs

from vllm_evidence._adapters.health import HealthAnswer
from vllm_evidence._readback.evidence import Evidence, Source, Subject, arm_name, log_source, parsed
from vllm_evidence._readback.executor import resolve_executor
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions._common import (
    refusal_summary,
    scope,
    serving_decision,
)
from vllm_evidence.decisions._life import Needs
from vllm_evidence.upstream import (
    ExecutorBackend,
    HealthCoverage,
    HealthLaw,
    LawNotEstablished,
    ReleaseLaws,
)

__all__ = [
    "HealthCoverageDecision",
    "HealthCoverageEstablished",
    "HealthCoverageRefused",
    "HealthReason",
]


class HealthReason(enum.Enum):
    """Why what ``/health`` covers is, or is not, established."""

    ESTABLISHED = "established"
    FRONT_DOOR_UNREACHABLE = "front_door_unreachable"
    FRONT_DOOR_NOT_ANSWERING = "front_door_not_answering"
    FRONT_DOOR_RESTARTED = "front_door_restarted"
    FRONT_DOOR_SEVERAL_PROCESSES = "front_door_several_processes"
    LOG_NOT_JOINED = "log_not_joined"
    RANK_LOST = "rank_lost"
    ENGINE_DEAD = "engine_dead"
    LAUNCH_NEVER_STARTED = "launch_never_started"
    BACKEND_UNOBSERVED = "backend_unobserved"
    BACKEND_CONFLICT = "backend_conflict"
    SOURCES_CONFLICT = "sources_conflict"
    VERSION_UNOBSERVED = "version_unobserved"
    VERSION_NOT_ESTABLISHED = "version_not_established"
    BACKEND_UNKNOWN = "backend_unknown"
    LAW_NOT_ESTABLISHED = "law_not_established"
    HEALTH_NOT_OK = "health_not_ok"
    """Coverage would be established, but ``/health`` did not answer 200: for the serving
    process there is no 200 to cover."""


@final
@attrs.frozen(init=False, repr=False)
class HealthCoverageEstablished(Sealed):
    """What a 200 covers, by the law for this release and backend."""

    __public_constructor__ = "vllm_evidence.decisions.decide_health_coverage()"

    subject: Subject
    backend: ExecutorBackend
    coverage: HealthCoverage
    backend_source: Source
    health_status: int | None
    """The status ``/health`` answered (always 200 for the serving process); ``None``
    for a launch (a log alone has no ``/health``)."""
    law: HealthLaw

    @property
    def reason(self) -> HealthReason:
        """Always :attr:`HealthReason.ESTABLISHED`."""
        return HealthReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        said = f"executor {self.backend.value!r} ({self.backend_source}): {self.law.statement}"
        if self.law.worker_death_delay_s is None:
            return said
        return (
            f"{said}; a 200 does not rule out a worker that died in the last "
            f"{self.law.worker_death_delay_s} s (the monitor waits for the survivors "
            "before it fails the engine: the law's worker_death_delay)"
        )

    def _repr_summary(self) -> str:
        status = "" if self.health_status is None else f", /health {self.health_status}"
        return f"{self.backend.value}: {self.coverage.value}{status}"


@final
@attrs.frozen(init=False, repr=False)
class HealthCoverageRefused(Sealed):
    """What a 200 covers is not established, and why."""

    __public_constructor__ = "vllm_evidence.decisions.decide_health_coverage()"

    subject: Subject
    reason: HealthReason
    detail: str
    remedy: str
    backend: str | None
    """The backend as observed (a custom executor name stays text), or ``None``."""
    backend_source: Source | None
    health_status: int | None
    law: HealthLaw | LawNotEstablished | None

    def _repr_summary(self) -> str:
        figures = [] if self.backend is None else [f"backend {self.backend}"]
        return refusal_summary(self.reason, self.detail, *figures)


HealthCoverageDecision: TypeAlias = HealthCoverageEstablished | HealthCoverageRefused

_mint_established = minter(HealthCoverageEstablished, HealthCoverageEstablished.__attrs_init__)
_mint_refused = minter(HealthCoverageRefused, HealthCoverageRefused.__attrs_init__)


def _observed_backends(evidence: Evidence) -> list[tuple[str, Source, str]]:
    """Every observed backend: (name, source, which version scopes it)."""
    found: list[tuple[str, Source, str]] = []
    info = evidence.server_info()
    if info is not None and info[0].parallel.distributed_executor_backend is not None:
        found.append((info[0].parallel.distributed_executor_backend, info[1], "front_door"))
    launch = evidence.launch
    if launch is not None:
        executor = resolve_executor(launch)
        backend, markers = executor.backend, executor.evidence
        config = launch.engine_config
        if backend is not None and markers:
            source = log_source(launch, markers[0].line, markers[0].process)
            found.append((backend.value, source, "startup_log"))
        elif config is not None and config.executor_backend_name is not None:
            # A name vLLM does not define (a custom executor class) is still observed.
            name = config.executor_backend_name
            found.append((name, log_source(launch, config.line, config.process), "startup_log"))
    return found


def decide_health_coverage(evidence: Evidence) -> HealthCoverageDecision:
    """What a 200 from ``/health`` covers, by release and backend: for the serving
    process (which must have answered 200) with a front door, for the log's launch
    without one."""
    return serving_decision(
        evidence,
        _decide,
        HealthCoverageEstablished,
        _refusal,
        _answered,
        needs=Needs.EVERY_WORKER,
    )


def _answered(evidence: Evidence, decision: HealthCoverageDecision) -> HealthCoverageDecision:
    """An established coverage, refused for the serving process unless ``/health``
    answered 200 (there is no 200 to cover otherwise)."""
    door = evidence.front_door
    if door is None or not isinstance(decision, HealthCoverageEstablished):
        return decision
    answer = parsed(door.health)
    if answer is not None and answer.healthy:
        return decision
    shown = arm_name(door.health) if answer is None else f"status {answer.status}"
    return _mint_refused(
        subject=evidence.subject,
        reason=HealthReason.HEALTH_NOT_OK,
        detail=(
            f"/health did not answer 200 ({shown}): {decision.detail}, but there is no 200 to cover"
        ),
        remedy="probe again once /health answers 200",
        backend=decision.backend.value,
        backend_source=decision.backend_source,
        health_status=None if answer is None else answer.status,
        law=decision.law,
    )


def _refusal(
    evidence: Evidence,
    reason: str,
    detail: str,
    remedy: str,
    alone: HealthCoverageDecision | None,
) -> HealthCoverageRefused:
    """A refusal before any backend is read: the gate's, or ``log_not_joined`` (which
    keeps the status the front door's ``/health`` answered)."""
    return _mint_refused(
        subject=evidence.subject,
        reason=HealthReason(reason),
        detail=detail,
        remedy=remedy,
        backend=None,
        backend_source=None,
        health_status=None if alone is None else alone.health_status,
        law=None,
    )


def _decide(evidence: Evidence) -> HealthCoverageDecision:
    status: int | None = None
    if evidence.front_door is not None:
        answer: HealthAnswer | None = parsed(evidence.front_door.health)
        status = answer.status if answer is not None else None
    observed = _observed_backends(evidence)

    def refuse(
        reason: HealthReason,
        detail: str,
        remedy: str,
        backend: str | None = None,
        source: Source | None = None,
        law: HealthLaw | LawNotEstablished | None = None,
    ) -> HealthCoverageRefused:
        return _mint_refused(
            subject=evidence.subject,
            reason=reason,
            detail=detail,
            remedy=remedy,
            backend=backend,
            backend_source=source,
            health_status=status,
            law=law,
        )

    if not observed:
        return refuse(
            HealthReason.BACKEND_UNOBSERVED,
            "the executor backend is unobserved (no /server_info JSON, no log marker)",
            "give the launch's startup log, or probe /server_info?config_format=json "
            "(development mode)",
        )
    names = {name for name, _, _ in observed}
    if len(names) > 1:
        shown = "; ".join(f"{name!r} at {source}" for name, source, _ in observed)
        return refuse(
            HealthReason.BACKEND_CONFLICT,
            f"the sources name different executor backends: {shown}",
            "check that the startup log belongs to this server",
        )
    name, source, origin = observed[0]
    conflict = evidence.sources_conflict() if origin == "startup_log" else None
    if conflict is not None:
        return refuse(
            HealthReason.SOURCES_CONFLICT,
            conflict,
            "give the startup log of the serving launch",
            name,
            source,
        )
    version = evidence.front_door_version() if origin == "front_door" else evidence.launch_version()
    laws = scope(version)
    if laws is None:
        return refuse(
            HealthReason.VERSION_UNOBSERVED,
            f"backend {name!r} observed at {source}, but no version from that source",
            "read the version from the same source as the backend",
            name,
            source,
        )
    if not isinstance(laws, ReleaseLaws):
        return refuse(HealthReason.VERSION_NOT_ESTABLISHED, laws.statement, "none", name, source)
    try:
        backend = ExecutorBackend(name)
    except ValueError:
        return refuse(
            HealthReason.BACKEND_UNKNOWN,
            f"executor {name!r} is not one of vLLM's named backends (a custom executor)",
            "none: a custom executor's health checks are its own",
            name,
            source,
        )
    law = laws.health(backend)
    if not isinstance(law, HealthLaw):
        return refuse(HealthReason.LAW_NOT_ESTABLISHED, law.statement, "none", name, source, law)
    return _mint_established(
        subject=evidence.subject,
        backend=backend,
        coverage=law.coverage,
        backend_source=source,
        health_status=status,
        law=law,
    )
