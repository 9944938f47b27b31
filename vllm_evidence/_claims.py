"""The claim names an assessment decides, as the type checker knows them.

The ground floor holds only the names (``--require`` reads them without loading a
decision); :data:`vllm_evidence._assessment.REGISTRY` holds each claim's title and decision
function in the same order (a test holds the two equal), and
:data:`vllm_evidence.decisions.ARMS` each claim's arms by verdict.  The gate and the watch
add one claim no assessment decides, ``generation`` (the canary's): :data:`GATE_CLAIMS`.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

__all__ = ["CLAIMS", "GATE_CLAIMS", "GENERATION", "Claim", "GateClaim", "Verdict"]

#: A claim an assessment decides: ``claim_established(a, "paralel")`` is a mypy error.
Claim: TypeAlias = Literal[
    "parallel",
    "capacity",
    "served_identity",
    "health_coverage",
    "front_door_join",
    "log_join",
]

#: The arm of any decision, as the documents and the report name it.
Verdict: TypeAlias = Literal["established", "reported", "refused"]

#: The claims ``--require`` can name, in report order (the members of :data:`Claim`).
CLAIMS: tuple[Claim, ...] = get_args(Claim)

#: The claim the generation canary decides (``--canary``; never an assessment's).
GENERATION: Final = "generation"
#: A claim the gate and the watch can require: an assessment's, or ``generation``.
GateClaim: TypeAlias = Claim | Literal["generation"]
#: Every claim the gate and the watch can serve, in order: the assessment's, then
#: ``generation``.
GATE_CLAIMS: tuple[GateClaim, ...] = (*CLAIMS, GENERATION)
