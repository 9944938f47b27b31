"""Front-door join: whether one capture's observations belong to one server incarnation.

The probe brackets its batch with two ``/metrics`` reads; the join is established only
when both carry the same ``process_start_time_seconds`` (derived in
:func:`vllm_evidence.capture.batch.derive_join`).  This decision states that result
with the incarnation-marker law of the server's release, which says when the marker
is expected to be missing (e.g. DP>1 from 0.20 on).
"""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import TypeAlias, final

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.capture.batch import JoinEstablished, JoinRefusal
from vllm_evidence.decisions._sources import Evidence, scope
from vllm_evidence.upstream import IncarnationMarkerLaw, LawNotEstablished, ReleaseLaws

__all__ = ["FrontDoorJoinDecision", "JoinReason", "JoinUnestablished", "JoinedIncarnation"]


class JoinReason(enum.Enum):
    """Why the front door's observations are, or are not, one incarnation."""

    ESTABLISHED = "established"
    NO_FRONT_DOOR = "no_front_door"
    CALLER_ASSEMBLED = "caller_assembled"
    BRACKET_READ_FAILED = "bracket_read_failed"
    MARKER_ABSENT = "marker_absent"
    MARKER_CHANGED = "marker_changed"


@final
@attrs.frozen(init=False)
class JoinedIncarnation(Sealed):
    """Both bracket reads carried the same process start time."""

    __public_constructor__ = "vllm_evidence.decisions.decide_front_door_join()"

    process_start_seconds: Decimal
    law: IncarnationMarkerLaw | LawNotEstablished | None
    """What the marker marks in this release (the API-server process, not the engine)."""

    @property
    def reason(self) -> JoinReason:
        """Always :attr:`JoinReason.ESTABLISHED`."""
        return JoinReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        return (
            f"both /metrics reads carried process_start_time_seconds {self.process_start_seconds}"
        )


@final
@attrs.frozen(init=False)
class JoinUnestablished(Sealed):
    """The observations are not established as one incarnation, and why."""

    __public_constructor__ = "vllm_evidence.decisions.decide_front_door_join()"

    reason: JoinReason
    detail: str
    remedy: str
    """What evidence would establish it."""
    law: IncarnationMarkerLaw | LawNotEstablished | None


FrontDoorJoinDecision: TypeAlias = JoinedIncarnation | JoinUnestablished

_mint_joined = minter(JoinedIncarnation, JoinedIncarnation.__attrs_init__)
_mint_unjoined = minter(JoinUnestablished, JoinUnestablished.__attrs_init__)

_REASONS = {
    JoinRefusal.CALLER_ASSEMBLED: JoinReason.CALLER_ASSEMBLED,
    JoinRefusal.BRACKET_READ_FAILED: JoinReason.BRACKET_READ_FAILED,
    JoinRefusal.MARKER_ABSENT: JoinReason.MARKER_ABSENT,
    JoinRefusal.MARKER_CHANGED: JoinReason.MARKER_CHANGED,
}

_REMEDIES = {
    JoinReason.NO_FRONT_DOOR: "probe the server's front door",
    JoinReason.CALLER_ASSEMBLED: (
        "probe the server (one bracketed batch) instead of assembling bodies by hand"
    ),
    JoinReason.BRACKET_READ_FAILED: "probe again once /metrics answers",
    JoinReason.MARKER_ABSENT: (
        "none over HTTP: without process_start_time_seconds (multi-process registry, "
        "api_server_count > 1) the front door carries no incarnation marker"
    ),
    JoinReason.MARKER_CHANGED: "probe again: the server restarted during the batch",
}


def decide_front_door_join(evidence: Evidence) -> FrontDoorJoinDecision:
    """Whether the front door's observations belong to one server incarnation."""
    front_door = evidence.front_door
    if front_door is None:
        return _mint_unjoined(
            reason=JoinReason.NO_FRONT_DOOR,
            detail="no front-door readback was given",
            remedy=_REMEDIES[JoinReason.NO_FRONT_DOOR],
            law=None,  # no /version, so no release scopes the marker
        )
    laws = scope(evidence.front_door_version())
    law = laws.incarnation_marker() if isinstance(laws, ReleaseLaws) else None
    join = front_door.join
    if isinstance(join, JoinEstablished):
        return _mint_joined(process_start_seconds=join.process_start_seconds, law=law)
    reason = _REASONS[join.reason]
    return _mint_unjoined(reason=reason, detail=join.detail, remedy=_REMEDIES[reason], law=law)
