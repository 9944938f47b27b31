"""The claim names an assessment decides, as the type checker knows them.

The ground floor holds only the names (``--require`` reads them without loading a
decision); :data:`vllm_evidence._assessment.REGISTRY` holds each claim's title, decision
function, in the same order (a test holds the two equal), and
:data:`vllm_evidence.decisions.ARMS` each claim's arms by verdict.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

__all__ = ["CLAIMS", "Claim", "Verdict"]

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
