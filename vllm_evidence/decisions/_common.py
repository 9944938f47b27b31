"""What every decision shares: the law scope of a version, and the restart wording."""

from __future__ import annotations

import enum
from collections.abc import Iterable

from packaging.version import Version

from vllm_evidence._seal import brief
from vllm_evidence.readback.evidence import Evidence
from vllm_evidence.upstream import ReleaseLaws, VersionNotEstablished, laws_for

__all__ = [
    "RESTARTED",
    "RESTARTED_REMEDY",
    "ServingGate",
    "rank_ranges",
    "refusal_summary",
    "scope",
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
    no request answered, no route answered with something readable, or the server
    restarted during the batch; ``None`` when it may (and when there is no front door:
    then every claim is about the log's launch)."""
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
    return None


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
