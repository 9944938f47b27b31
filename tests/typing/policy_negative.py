"""A policy that forgets a refusal arm is a mypy error, not a silent fall-through.

The ``# type: ignore`` below is needed only because mypy names the unhandled arm; under
``warn_unused_ignores`` (part of ``--strict``) it would become an error if mypy stopped
seeing the gap.  Type-checked, never imported.
"""

from __future__ import annotations

from typing import assert_never

from vllm_evidence.decisions import (
    ParallelDecision,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
)


def forgets_ranks_missing(decision: ParallelDecision) -> str:
    match decision:
        case ParallelEstablished():
            return "route"
        case ParallelRefused():
            match decision.reason:
                case (
                    ParallelReason.ESTABLISHED
                    | ParallelReason.CONFIGURATION_UNOBSERVED
                    | ParallelReason.FRONT_DOOR_RESTARTED
                    | ParallelReason.VERSION_UNOBSERVED
                    | ParallelReason.VERSION_NOT_ESTABLISHED
                    | ParallelReason.CONFIGURATION_CONFLICT
                    | ParallelReason.POPULATION_UNOBSERVED
                    | ParallelReason.JOIN_UNESTABLISHED
                    | ParallelReason.WORLD_SIZE_MISMATCH
                    | ParallelReason.RANKS_UNATTRIBUTED
                ):
                    return "hold"
                case _:
                    assert_never(decision.reason)  # type: ignore[arg-type]
        case _:
            assert_never(decision)
