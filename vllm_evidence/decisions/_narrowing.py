"""Narrowing a decision to its arm: ``TypeIs`` predicates for policy code.

``is_established(assessment.parallel)`` is ``isinstance(assessment.parallel,
ParallelEstablished)`` with the arm's class named by the decision's own type, so a policy
narrows without importing every arm, and mypy narrows both branches (PEP 742 ``TypeIs``:
in the ``else`` branch the decision is one of its refusal arms)::

    from vllm_evidence.decisions import is_established, is_refused

    decision = assessment.capacity
    if is_established(decision):
        tokens = [engine.tokens for engine in decision.engines]   # CapacityEstablished
    elif is_refused(decision):
        why = decision.reason                                     # CapacityRefused
    else:
        ...                                                       # CapacityReported

Each predicate tests the arm and nothing else.  An arm says whom it is about
(``decision.subject``): a claim a log alone established is about that log's *launch*
(:attr:`~vllm_evidence._readback.evidence.Subject.LAUNCH`), not about a serving process, so
admission code also asks ``decision.subject is Subject.SERVING`` — or calls
:func:`vllm_evidence.claim_established`, which asks both.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, final, overload

import attrs
from typing_extensions import TypeIs

from vllm_evidence._claims import Claim, Verdict
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions._capacity import (
    CapacityDecision,
    CapacityEstablished,
    CapacityRefused,
    CapacityReported,
)
from vllm_evidence.decisions._health import (
    HealthCoverageDecision,
    HealthCoverageEstablished,
    HealthCoverageRefused,
)
from vllm_evidence.decisions._identity import (
    ServedIdentityDecision,
    ServedIdentityEstablished,
    ServedIdentityRefused,
)
from vllm_evidence.decisions._join import (
    FrontDoorJoinDecision,
    JoinedIncarnation,
    JoinUnestablished,
)
from vllm_evidence.decisions._log_join import LogJoinDecision, LogJoined, LogJoinRefused
from vllm_evidence.decisions._parallel import ParallelDecision, ParallelEstablished, ParallelRefused

__all__ = ["ARMS", "ClaimArms", "is_established", "is_refused", "is_reported"]


@final
@attrs.frozen(init=False, repr=False)
class ClaimArms(Sealed):
    """One claim's decision, arm by arm: the class of each verdict it can have."""

    __public_constructor__ = "vllm_evidence.decisions.ARMS"

    established: type
    """The arm whose verdict is ``established``."""
    refused: type
    """The arm whose verdict is ``refused``: it carries a reason, a detail, a remedy."""
    reported: type | None = None
    """The arm whose verdict is ``reported`` (figures stated, not established), if any."""

    def verdicts(self) -> dict[type, Verdict]:
        """Each arm's class and its verdict."""
        found: dict[type, Verdict] = {self.established: "established", self.refused: "refused"}
        if self.reported is not None:
            found[self.reported] = "reported"
        return found

    def _repr_summary(self) -> str:
        arms = (self.established, self.refused, self.reported)
        return " / ".join(arm.__name__ for arm in arms if arm is not None)


_mint_arms = minter(ClaimArms, ClaimArms.__attrs_init__)

#: Every claim's arms: the one list of them.  The predicates here, the assessment's
#: verdicts (``established`` / ``reported`` / ``refused`` in every document and report)
#: and the JSON Schema's verdict enums all read it.
ARMS: Final[Mapping[Claim, ClaimArms]] = MappingProxyType(
    {
        "parallel": _mint_arms(ParallelEstablished, ParallelRefused),
        "capacity": _mint_arms(CapacityEstablished, CapacityRefused, CapacityReported),
        "served_identity": _mint_arms(ServedIdentityEstablished, ServedIdentityRefused),
        "health_coverage": _mint_arms(HealthCoverageEstablished, HealthCoverageRefused),
        "front_door_join": _mint_arms(JoinedIncarnation, JoinUnestablished),
        "log_join": _mint_arms(LogJoined, LogJoinRefused),
    }
)

#: Every established arm, every refusal arm and every reported one (what the
#: predicates test).
_ESTABLISHED = tuple(arms.established for arms in ARMS.values())
_REFUSED = tuple(arms.refused for arms in ARMS.values())
_REPORTED = tuple(arms.reported for arms in ARMS.values() if arms.reported is not None)

#: Any decision an assessment holds.
_Decision = (
    ParallelDecision
    | CapacityDecision
    | ServedIdentityDecision
    | HealthCoverageDecision
    | FrontDoorJoinDecision
    | LogJoinDecision
)


def _decision(value: object, name: str) -> None:
    """Untyped callers can pass anything: a value that is no decision is a ``TypeError``
    (never a quiet ``False``, which would read as "refused")."""
    if not isinstance(value, (*_ESTABLISHED, *_REFUSED, *_REPORTED)):
        msg = f"{name}() takes a decision (an assessment's field), got {type(value).__name__}"
        raise TypeError(msg)


@overload
def is_established(decision: ParallelDecision) -> TypeIs[ParallelEstablished]: ...
@overload
def is_established(decision: CapacityDecision) -> TypeIs[CapacityEstablished]: ...
@overload
def is_established(decision: ServedIdentityDecision) -> TypeIs[ServedIdentityEstablished]: ...
@overload
def is_established(decision: HealthCoverageDecision) -> TypeIs[HealthCoverageEstablished]: ...
@overload
def is_established(decision: FrontDoorJoinDecision) -> TypeIs[JoinedIncarnation]: ...
@overload
def is_established(decision: LogJoinDecision) -> TypeIs[LogJoined]: ...
def is_established(decision: _Decision) -> bool:
    """Whether ``decision`` is its established arm (``ParallelEstablished``,
    ``CapacityEstablished``, ``ServedIdentityEstablished``, ``HealthCoverageEstablished``,
    ``JoinedIncarnation``, ``LogJoined``), about whichever subject it names."""
    _decision(decision, "is_established")
    return isinstance(decision, _ESTABLISHED)


@overload
def is_refused(decision: ParallelDecision) -> TypeIs[ParallelRefused]: ...
@overload
def is_refused(decision: CapacityDecision) -> TypeIs[CapacityRefused]: ...
@overload
def is_refused(decision: ServedIdentityDecision) -> TypeIs[ServedIdentityRefused]: ...
@overload
def is_refused(decision: HealthCoverageDecision) -> TypeIs[HealthCoverageRefused]: ...
@overload
def is_refused(decision: FrontDoorJoinDecision) -> TypeIs[JoinUnestablished]: ...
@overload
def is_refused(decision: LogJoinDecision) -> TypeIs[LogJoinRefused]: ...
def is_refused(decision: _Decision) -> bool:
    """Whether ``decision`` is its refusal arm (``ParallelRefused``, ``CapacityRefused``,
    ``ServedIdentityRefused``, ``HealthCoverageRefused``, ``JoinUnestablished``,
    ``LogJoinRefused``): the one carrying a ``reason``, a ``detail`` and a ``remedy``."""
    _decision(decision, "is_refused")
    return isinstance(decision, _REFUSED)


def is_reported(decision: CapacityDecision) -> TypeIs[CapacityReported]:
    """Whether the capacity decision is its reported arm: figures the log printed for its
    launch, which no law turns into a serving process's capacity.  (Only capacity has a
    reported arm.)"""
    _decision(decision, "is_reported")
    return isinstance(decision, CapacityReported)
