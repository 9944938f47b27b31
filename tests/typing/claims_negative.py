"""A misspelt claim name is a mypy error: ``Claim`` is a ``Literal`` of the six names.

Each ``# type: ignore[arg-type]`` is needed only because the name is checked; under
``warn_unused_ignores`` (part of ``--strict``) it would become an error if
``claim_established`` took any ``str`` again.  Type-checked, never imported.
"""

from __future__ import annotations

from vllm_evidence import Assessment, Claim, claim_established
from vllm_evidence._assessment import ClaimSpec
from vllm_evidence.decisions import decide_parallel


def misspelt(assessment: Assessment) -> bool:
    return claim_established(assessment, "paralel")  # type: ignore[arg-type]


def any_string(assessment: Assessment, name: str) -> bool:
    return claim_established(assessment, name)  # type: ignore[arg-type]


def spelt_right(assessment: Assessment, name: Claim) -> bool:
    return claim_established(assessment, "parallel") and claim_established(assessment, name)


def a_registry_entry_names_a_claim() -> ClaimSpec:
    return ClaimSpec("paralel", "parallel layout", decide_parallel)  # type: ignore[arg-type]
