"""Lines mypy --strict must reject: the seal, seen by the type checker.

Each ``# type: ignore[code]`` below is needed *only* because the seal holds.  Under
``warn_unused_ignores`` (part of ``--strict``), removing the seal turns each into an
"unused type: ignore" error, so CI's mypy run proves the seal statically.  This module
is type-checked, never imported by the tests.
"""

from __future__ import annotations

from vllm_evidence._measure import MeasureParseFailure, ParseFailureReason
from vllm_evidence.upstream import LawNotEstablished, ReleaseLaws, RouteLaw
from vllm_evidence.upstream._laws import Question


def direct_calls() -> None:
    reason = ParseFailureReason.NOT_A_NUMBER
    MeasureParseFailure("TokenCount", "x", reason)  # type: ignore[arg-type]
    MeasureParseFailure()  # type: ignore[call-arg]
    MeasureParseFailure(measure="TokenCount", text="x", reason=reason)  # type: ignore[call-arg,arg-type]
    Question("k", "t")  # type: ignore[arg-type]
    RouteLaw()  # type: ignore[call-arg]
    ReleaseLaws(None, ())  # type: ignore[arg-type]
    LawNotEstablished()  # type: ignore[call-arg]


class Sub(RouteLaw):  # type: ignore[misc]
    pass
