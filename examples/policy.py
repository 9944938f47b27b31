"""A typed admission policy over one server's assessment.

Route traffic to a server only when its parallel layout is established as realized
and its KV-cache capacity is established at or above a floor — both about the
*serving process* behind the probed front door.  A claim established for a log's
launch only (a log alone, or a log not joined to the front door by a launch receipt)
never admits: a log speaks for its launch, not for a server.  Every decision class
and every ``reason`` is matched, ending in ``assert_never``: when the library adds a
refusal arm or reason, ``mypy --strict`` names this policy until it decides what the
new arm means for admission.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from vllm_evidence import Assessment
from vllm_evidence.decisions import (
    CapacityDecision,
    CapacityEstablished,
    CapacityReason,
    CapacityRefused,
    CapacityReported,
    ParallelDecision,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    Subject,
)

__all__ = ["Admission", "Admit", "Hold", "admit"]


@dataclass(frozen=True)
class Admit:
    """Take traffic: every rank is present and each engine holds at least the floor."""

    smallest_engine_tokens: int


@dataclass(frozen=True)
class Hold:
    """Do not take traffic yet, and whether more evidence could change that."""

    why: str
    more_evidence_helps: bool


Admission = Admit | Hold


def _parallel_evidence_helps(reason: ParallelReason) -> bool:
    match reason:
        case (
            ParallelReason.CONFIGURATION_UNOBSERVED
            | ParallelReason.FRONT_DOOR_UNREACHABLE
            | ParallelReason.FRONT_DOOR_NOT_ANSWERING
            | ParallelReason.LOG_NOT_JOINED
            | ParallelReason.FRONT_DOOR_RESTARTED
            | ParallelReason.FRONT_DOOR_SEVERAL_PROCESSES
            | ParallelReason.VERSION_UNOBSERVED
            | ParallelReason.POPULATION_UNOBSERVED
            | ParallelReason.JOIN_UNESTABLISHED
            | ParallelReason.RANKS_UNATTRIBUTED
        ):
            return True
        case (
            ParallelReason.ESTABLISHED
            | ParallelReason.VERSION_NOT_ESTABLISHED
            | ParallelReason.CONFIGURATION_CONFLICT
            | ParallelReason.WORLD_SIZE_MISMATCH
            | ParallelReason.RANKS_MISSING
            | ParallelReason.RANK_LOST
            | ParallelReason.ENGINE_DEAD
            | ParallelReason.LAUNCH_NEVER_STARTED
        ):
            return False
        case _:
            assert_never(reason)


def _parallel(decision: ParallelDecision) -> Hold | None:
    match decision:
        case ParallelEstablished():
            return None
        case ParallelRefused():
            return Hold(
                f"parallel {decision.reason.value}: {decision.detail}",
                more_evidence_helps=_parallel_evidence_helps(decision.reason),
            )
        case _:
            assert_never(decision)


def _capacity_evidence_helps(reason: CapacityReason) -> bool:
    match reason:
        case (
            CapacityReason.CAPACITY_UNOBSERVED
            | CapacityReason.FRONT_DOOR_UNREACHABLE
            | CapacityReason.FRONT_DOOR_NOT_ANSWERING
            | CapacityReason.LOG_NOT_JOINED
            | CapacityReason.METRICS_UNPARSED
            | CapacityReason.FRONT_DOOR_RESTARTED
            | CapacityReason.FRONT_DOOR_SEVERAL_PROCESSES
            | CapacityReason.SOURCES_CONFLICT
            | CapacityReason.VERSION_UNOBSERVED
            | CapacityReason.BLOCK_SIZE_UNOBSERVED
            | CapacityReason.INSUFFICIENT_AUTHORITY
            | CapacityReason.SOURCES_DISAGREE
            | CapacityReason.ENGINES_MISSING
            | CapacityReason.FIGURES_CONFLICT
        ):
            return True
        case (
            CapacityReason.ESTABLISHED
            | CapacityReason.VERSION_NOT_ESTABLISHED
            | CapacityReason.LAW_NOT_ESTABLISHED
            | CapacityReason.NOT_GROUP_AWARE
            | CapacityReason.PER_WORKER_BEFORE_REDUCTION
            | CapacityReason.ENGINE_DEAD
            | CapacityReason.LAUNCH_NEVER_STARTED
        ):
            return False
        case _:
            assert_never(reason)


def _capacity(decision: CapacityDecision, floor_tokens: int) -> Admit | Hold:
    match decision:
        case CapacityEstablished():
            smallest = min(e.tokens.value for e in decision.engines)
            if smallest < floor_tokens:
                why = f"capacity {smallest} tokens is below {floor_tokens}"
                return Hold(why, more_evidence_helps=False)
            return Admit(smallest)
        case CapacityReported() | CapacityRefused():
            # a reported figure is printed, not authoritative: it never admits
            return Hold(
                f"capacity {decision.reason.value}: {decision.detail}",
                more_evidence_helps=_capacity_evidence_helps(decision.reason),
            )
        case _:
            assert_never(decision)


def admit(assessment: Assessment, *, floor_tokens: int) -> Admission:
    """Whether a router may send traffic to the assessed server."""
    match assessment.subject:
        case Subject.SERVING:
            pass
        case Subject.LAUNCH:
            return Hold(
                "the evidence is a startup log alone: it speaks for its launch, not for a "
                "serving process; probe the server (with the log and its launch receipt)",
                more_evidence_helps=True,
            )
        case _:
            assert_never(assessment.subject)
    held = _parallel(assessment.parallel)
    if held is not None:
        return held
    return _capacity(assessment.capacity, floor_tokens)
