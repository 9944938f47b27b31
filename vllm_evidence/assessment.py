"""One server's decisions together.

:func:`assess` runs every decision over one server's evidence — a front-door readback
and/or one launch of its startup log — and returns a sealed :class:`Assessment`.
Its JSON document is :func:`vllm_evidence.output.assessment.assessment_document`
(schema ``vllm-evidence.assessment/1``) and its text report
:func:`vllm_evidence.output.report.render_report`.
"""

from __future__ import annotations

from typing import final

import attrs
from packaging.version import Version

from vllm_evidence._claims import CLAIMS, Claim
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.startup_log import Launch, StartupLog
from vllm_evidence.decisions import (
    CapacityDecision,
    CapacityEstablished,
    FrontDoorJoinDecision,
    HealthCoverageDecision,
    HealthCoverageEstablished,
    JoinedIncarnation,
    ParallelDecision,
    ParallelEstablished,
    ServedIdentityDecision,
    ServedIdentityEstablished,
    decide_capacity,
    decide_front_door_join,
    decide_health_coverage,
    decide_parallel,
    decide_served_identity,
)
from vllm_evidence.errors import InputError
from vllm_evidence.readback.evidence import Evidence, FrontDoor, gather

__all__ = [
    "CLAIMS",
    "Assessment",
    "Claim",
    "assess",
    "claim_established",
]


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


def claim_established(assessment: Assessment, claim: Claim) -> bool:
    """Whether the named claim (one of :data:`CLAIMS`) is established.

    ``claim`` is typed :data:`Claim`, so a misspelt name is a type error; at run time an
    unknown name (from untyped code) raises :class:`ValueError` naming the claims.
    """
    if claim not in CLAIMS:
        msg = f"claim must be one of {', '.join(CLAIMS)}, got {claim!r}"
        raise ValueError(msg)
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
