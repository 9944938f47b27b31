"""Decisions: the only place where a claim is established, reported or refused.

Each decision takes one server's :class:`~vllm_evidence._readback.evidence.Evidence`
and returns a closed union of sealed types — an established arm and refusal arms
named after the earliest missing piece of evidence — each carrying the law it used.
Use :func:`vllm_evidence.assess` to run them all; match on the class first, then on
the ``reason`` enum, and end with ``assert_never`` — or narrow with
:func:`is_established`, :func:`is_refused` and :func:`is_reported` (``TypeIs``
predicates: the arm's class from the decision's own type).  Every arm carries its ``subject``:
:attr:`Subject.SERVING` (the process behind a front door) or :attr:`Subject.LAUNCH`
(the launch a log alone records).
"""

from __future__ import annotations

from vllm_evidence._measure import (
    BasisPoint,
    BlockCount,
    BlockSize,
    ByteCount,
    Concurrency,
    GiB,
    MeasureParseFailure,
    ParseFailureReason,
    TokenCount,
)
from vllm_evidence._readback.evidence import Evidence, Source, SourceKind, Subject
from vllm_evidence.decisions._capacity import (
    CapacityDecision,
    CapacityEstablished,
    CapacityReason,
    CapacityRefused,
    CapacityReported,
    EngineCapacity,
    decide_capacity,
)
from vllm_evidence.decisions._health import (
    HealthCoverageDecision,
    HealthCoverageEstablished,
    HealthCoverageRefused,
    HealthReason,
    decide_health_coverage,
)
from vllm_evidence.decisions._identity import (
    Derivation,
    IdentityReason,
    ServedAdapter,
    ServedIdentityDecision,
    ServedIdentityEstablished,
    ServedIdentityRefused,
    ServedName,
    decide_served_identity,
    derivation,
)
from vllm_evidence.decisions._join import (
    FrontDoorJoinDecision,
    JoinedIncarnation,
    JoinReason,
    JoinUnestablished,
    decide_front_door_join,
)
from vllm_evidence.decisions._log_join import (
    LogJoinDecision,
    LogJoined,
    LogJoinReason,
    LogJoinRefused,
    decide_log_join,
)
from vllm_evidence.decisions._narrowing import (
    ARMS,
    ClaimArms,
    is_established,
    is_refused,
    is_reported,
)
from vllm_evidence.decisions._parallel import (
    ParallelDecision,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    PresentRank,
    ResolvedParallel,
    decide_parallel,
)

__all__ = [
    "ARMS",
    "BasisPoint",
    "BlockCount",
    "BlockSize",
    "ByteCount",
    "CapacityDecision",
    "CapacityEstablished",
    "CapacityReason",
    "CapacityRefused",
    "CapacityReported",
    "ClaimArms",
    "Concurrency",
    "Derivation",
    "EngineCapacity",
    "Evidence",
    "FrontDoorJoinDecision",
    "GiB",
    "HealthCoverageDecision",
    "HealthCoverageEstablished",
    "HealthCoverageRefused",
    "HealthReason",
    "IdentityReason",
    "JoinReason",
    "JoinUnestablished",
    "JoinedIncarnation",
    "LogJoinDecision",
    "LogJoinReason",
    "LogJoinRefused",
    "LogJoined",
    "MeasureParseFailure",
    "ParallelDecision",
    "ParallelEstablished",
    "ParallelReason",
    "ParallelRefused",
    "ParseFailureReason",
    "PresentRank",
    "ResolvedParallel",
    "ServedAdapter",
    "ServedIdentityDecision",
    "ServedIdentityEstablished",
    "ServedIdentityRefused",
    "ServedName",
    "Source",
    "SourceKind",
    "Subject",
    "TokenCount",
    "decide_capacity",
    "decide_front_door_join",
    "decide_health_coverage",
    "decide_log_join",
    "decide_parallel",
    "decide_served_identity",
    "derivation",
    "is_established",
    "is_refused",
    "is_reported",
]
