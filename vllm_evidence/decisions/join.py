"""Front-door join: whether one capture's observations belong to one server incarnation.

The probe brackets its batch with two ``/metrics`` reads (the readback's
:class:`~vllm_evidence.readback.Bracket`); the join is established only when both parsed
and carry the same ``process_start_time_seconds``, compared exactly.  Bodies a caller
assembled have no bracket and are never joined.  The decision carries the
incarnation-marker law of the server's release, which says when the marker is expected
to be missing (e.g. DP>1 from 0.20 on).
"""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import TypeAlias, final

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.outcome import Parsed
from vllm_evidence.decisions._common import refusal_summary, scope
from vllm_evidence.readback.evidence import Evidence, Subject
from vllm_evidence.upstream import IncarnationMarkerLaw, LawNotEstablished, ReleaseLaws

__all__ = ["FrontDoorJoinDecision", "JoinReason", "JoinUnestablished", "JoinedIncarnation"]


class JoinReason(enum.Enum):
    """Why the front door's observations are, or are not, one incarnation."""

    ESTABLISHED = "established"
    NO_FRONT_DOOR = "no_front_door"
    """No front-door readback was given."""
    CALLER_ASSEMBLED = "caller_assembled"
    """The bodies were supplied by a caller, not read in one bracketed batch."""
    BRACKET_READ_FAILED = "bracket_read_failed"
    """One of the two bracketing ``/metrics`` reads did not parse."""
    MARKER_ABSENT = "marker_absent"
    """``process_start_time_seconds`` is missing (multi-process registry mode: the
    default for DP>1 with internal load balancing since 0.20)."""
    MARKER_CHANGED = "marker_changed"
    """The marker differs between the two reads: the server restarted mid-read."""


@final
@attrs.frozen(init=False, repr=False)
class JoinedIncarnation(Sealed):
    """Both bracket reads carried the same process start time."""

    __public_constructor__ = "vllm_evidence.decisions.decide_front_door_join()"

    subject: Subject
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

    def _repr_summary(self) -> str:
        return f"process_start_time_seconds {self.process_start_seconds}"


@final
@attrs.frozen(init=False, repr=False)
class JoinUnestablished(Sealed):
    """The observations are not established as one incarnation, and why."""

    __public_constructor__ = "vllm_evidence.decisions.decide_front_door_join()"

    subject: Subject
    reason: JoinReason
    detail: str
    remedy: str
    """What evidence would establish it."""
    law: IncarnationMarkerLaw | LawNotEstablished | None

    def _repr_summary(self) -> str:
        return refusal_summary(self.reason, self.detail)


FrontDoorJoinDecision: TypeAlias = JoinedIncarnation | JoinUnestablished

_mint_joined = minter(JoinedIncarnation, JoinedIncarnation.__attrs_init__)
_mint_unjoined = minter(JoinUnestablished, JoinUnestablished.__attrs_init__)

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
            subject=evidence.subject,
            reason=JoinReason.NO_FRONT_DOOR,
            detail="no front-door readback was given",
            remedy=_REMEDIES[JoinReason.NO_FRONT_DOOR],
            law=None,  # no /version, so no release scopes the marker
        )
    laws = scope(evidence.front_door_version())
    law = laws.incarnation_marker() if isinstance(laws, ReleaseLaws) else None
    bracket = front_door.bracket
    if bracket is None:
        return _unjoined(
            JoinReason.CALLER_ASSEMBLED,
            "bodies supplied by a caller were not read in one bracketed batch",
            law,
            evidence.subject,
        )
    opening, closing = bracket.opening, bracket.closing
    if not isinstance(opening, Parsed):
        return _unjoined(
            JoinReason.BRACKET_READ_FAILED,
            f"opening /metrics read: {type(opening).__name__}",
            law,
            evidence.subject,
        )
    if not isinstance(closing, Parsed):
        return _unjoined(
            JoinReason.BRACKET_READ_FAILED,
            f"closing /metrics read: {type(closing).__name__}",
            law,
            evidence.subject,
        )
    first = opening.observation.process_start_time
    last = closing.observation.process_start_time
    if first is None or last is None:
        side = "opening" if first is None else "closing"
        return _unjoined(
            JoinReason.MARKER_ABSENT,
            f"process_start_time_seconds absent from the {side} /metrics read",
            law,
            evidence.subject,
        )
    if first.seconds != last.seconds:
        return _unjoined(
            JoinReason.MARKER_CHANGED,
            f"process_start_time_seconds {first.seconds} then {last.seconds}",
            law,
            evidence.subject,
        )
    return _mint_joined(subject=evidence.subject, process_start_seconds=first.seconds, law=law)


def _unjoined(
    reason: JoinReason,
    detail: str,
    law: IncarnationMarkerLaw | LawNotEstablished | None,
    subject: Subject,
) -> JoinUnestablished:
    remedy = _REMEDIES[reason]
    if reason is JoinReason.MARKER_ABSENT and isinstance(law, IncarnationMarkerLaw):
        # The release's own law names the cause (V0's MQLLMEngine in 0.8.5, several API
        # servers under 'vllm serve' with DP>1), not one cause for every release.
        remedy = (
            "none over HTTP: the front door carries no incarnation marker; for this "
            f"release, process_start_time_seconds is {law.marker.value.replace('_', ' ')}: "
            f"{law.statement}"
        )
    return _mint_unjoined(subject=subject, reason=reason, detail=detail, remedy=remedy, law=law)
