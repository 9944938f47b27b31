"""What every decision shares: the law scope of a version, the restart wording, and the
serving gate with the log-join wrapper every serving decision goes through."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from packaging.version import Version

from vllm_evidence._readback.evidence import Evidence
from vllm_evidence._seal import brief
from vllm_evidence.decisions._life import Needs
from vllm_evidence.upstream import ReleaseLaws, VersionNotEstablished, laws_for

__all__ = [
    "RESTARTED",
    "RESTARTED_REMEDY",
    "ServingGate",
    "rank_ranges",
    "refusal_summary",
    "scope",
    "serving_decision",
    "serving_gate",
]

#: The detail of a front-door fact that cannot be scoped because the server restarted.
RESTARTED = (
    "the server restarted during the probe (process_start_time_seconds changed): "
    "/version and the other routes may come from different processes"
)
RESTARTED_REMEDY = "probe again once the server is up"


ServingGate = tuple[str, str, str]
"""``(reason value, detail, remedy)``: why a front door establishes no serving claim."""


def serving_gate(evidence: Evidence) -> ServingGate | None:
    """Why the front door establishes no claim about the serving process, earliest first:
    no request answered, no route answered with something readable, the server
    restarted during the batch, or several processes answer its URL (a balancer in
    front); ``None`` when it may (and when there is no front door: then every claim is
    about the log's launch)."""
    if evidence.front_door is None:
        return None
    why = evidence.front_door_unreachable()
    if why is not None:
        return (
            "front_door_unreachable",
            why,
            "probe the address the server listens on, once it is up",
        )
    why = evidence.front_door_not_answering()
    if why is not None:
        return ("front_door_not_answering", why, "probe again once the server answers")
    if evidence.front_door_restarted():
        return ("front_door_restarted", RESTARTED, RESTARTED_REMEDY)
    several = evidence.front_door_several_processes()
    if several is not None:
        detail = (
            f"several processes answer this URL ({several}): /version, /health and the "
            "other routes may each have come from another one"
        )
        remedy = (
            "probe the serving process itself (the pod's own address, not a Service or a "
            "balancer in front of several replicas)"
        )
        return ("front_door_several_processes", detail, remedy)
    return None


class _Answer(Protocol):
    """What the wrapper reads of any arm: its reason and its detail."""

    @property
    def reason(self) -> enum.Enum: ...
    @property
    def detail(self) -> str: ...


D = TypeVar("D", bound=_Answer)


def _as_is(evidence: Evidence, decision: D) -> D:
    """The default ``answered`` of :func:`serving_decision`: the decision as it is."""
    del evidence  # the hook's shape: health reads the front door's /health
    return decision


def serving_decision(
    evidence: Evidence,
    decide: Callable[[Evidence], D],
    established: type[object],
    refuse: Callable[[Evidence, str, str, str, D | None], D],
    answered: Callable[[Evidence, D], D] = _as_is,
    *,
    needs: Needs,
) -> D:
    """One serving decision, in the order every one of them keeps.

    1. :func:`serving_gate`: ``refuse(evidence, reason, detail, remedy, None)``; then
       :func:`~vllm_evidence.decisions._life.life_gate` for what the claim ``needs`` of
       the launch's life (the log counts only when it speaks for the subject).
    2. No log to keep out (none, a launch claim, or the log joined): ``decide`` reads
       everything.
    3. Otherwise ``decide`` without the log: an ``established`` answer stands; a
       refusal stands when the log would not change it (the same arm, the same reason);
       else ``refuse(evidence, "log_not_joined", …, the front door's answer)``, naming
       the log join's refusal and that answer.

    ``answered`` is applied to what ``decide`` returns before it is returned or
    compared (health: an established coverage needs a 200 from ``/health``).
    """
    from vllm_evidence.decisions._life import life_gate
    from vllm_evidence.decisions._log_join import log_not_joined  # it imports this module

    gate = serving_gate(evidence)
    if gate is not None:
        reason, detail, remedy = gate
        return refuse(evidence, reason, detail, remedy, None)
    unjoined = log_not_joined(evidence)
    ended = life_gate(evidence, needs, log_speaks=unjoined is None)
    if ended is not None:
        reason, detail, remedy = ended
        return refuse(evidence, reason, detail, remedy, None)
    if unjoined is None:
        return answered(evidence, decide(evidence))
    alone = decide(evidence.without_log())
    if isinstance(alone, established):
        return answered(evidence, alone)
    full = answered(evidence, decide(evidence))
    if type(full) is type(alone) and full.reason is alone.reason:
        return alone
    return refuse(
        evidence,
        "log_not_joined",
        f"the startup log is not joined to this front door ({unjoined.reason.value}: "
        f"{unjoined.detail}); the front door alone: {alone.detail}",
        unjoined.remedy,
        alone,
    )


def scope(version: Version | None) -> ReleaseLaws | VersionNotEstablished | None:
    """The laws for a version, ``None`` when the version is unobserved."""
    return None if version is None else laws_for(version)


def refusal_summary(reason: enum.Enum, detail: str, *figures: str) -> str:
    """A refusal arm's ``repr`` inside: its reason, key figures, then the detail, cut."""
    return ", ".join((reason.value, *figures, brief(detail)))


def rank_ranges(ranks: Iterable[int]) -> str:
    """``0-3,6`` for ranks 0, 1, 2, 3, 6 (sorted, deduplicated)."""
    runs: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
