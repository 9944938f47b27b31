"""Front-door join: whether one capture's observations belong to one server incarnation.

The probe brackets its batch with ``/metrics`` reads, two back to back at each end (the
readback's :class:`~vllm_evidence._readback.Bracket`); the join is established only when
every one parsed and carries the same ``process_start_time_seconds``, compared exactly.
Bodies a caller assembled have no bracket and are never joined.  The decision carries
the incarnation-marker law of the server's release, which says when the marker is
expected to be missing (e.g. DP>1 from 0.20 on).

One URL is not one process: a balancer in front (nginx round-robin over two replicas)
may send the ``/metrics`` reads to one process and ``/version`` or ``/health`` to another.
The join proves only that the ``/metrics`` reads reached one process; what makes a
balancer visible is the twin read at each end, and two reads of one end that carry
different start times are refused by name (:attr:`JoinReason.SEVERAL_PROCESSES`), apart
from a restart (:attr:`JoinReason.MARKER_CHANGED`: each end's reads agree, the closing
end's process is a later one).  A balancer is detected, not defeated: one that happens
to send every ``/metrics`` read to one process still joins, so a gate probes the pod's
own process, not a Service address.  A capture saved before the probe read twins joins
as before, its detail saying that processes were not counted (and the log join does
not rest on it).
"""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import TypeAlias, final

import attrs

from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._readback.evidence import Evidence, Subject
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions._common import refusal_summary, scope
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
    SEVERAL_PROCESSES = "several_processes"
    """Several processes answer this URL (a balancer in front): the two reads at one
    end carry different markers (or one none), or the closing end's process started
    before the opening end's.  Named before what is missing: it is definite."""
    MARKER_CHANGED = "marker_changed"
    """The marker differs between the two ends, each end's reads agreeing and the
    closing one later: one process replaced by another, a restart mid-batch."""


@final
@attrs.frozen(init=False, repr=False)
class JoinedIncarnation(Sealed):
    """Every bracket read carried the same process start time."""

    __public_constructor__ = "vllm_evidence.decisions.decide_front_door_join()"

    subject: Subject
    process_start_seconds: Decimal
    law: IncarnationMarkerLaw | LawNotEstablished | None
    """What the marker marks in this release (the API-server process, not the engine)."""
    processes_counted: bool
    """Whether each end was read twice (every probe's batch): ``False`` only for a
    capture saved before the twin reads, where a balancer in front would not show; the
    log join does not rest on such a join."""

    @property
    def reason(self) -> JoinReason:
        """Always :attr:`JoinReason.ESTABLISHED`."""
        return JoinReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        if self.processes_counted:
            return (
                "all four /metrics reads (two back to back at each end) carried "
                f"process_start_time_seconds {self.process_start_seconds}: one process "
                "answered them (a balancer that sends every /metrics read to one process "
                "would not show)"
            )
        return (
            f"both /metrics reads carried process_start_time_seconds {self.process_start_seconds}; "
            "processes not counted: the capture was saved before the probe read /metrics "
            "twice at each end, so several processes behind this URL would not show"
        )

    def _repr_summary(self) -> str:
        counted = "" if self.processes_counted else ", processes not counted"
        return f"process_start_time_seconds {self.process_start_seconds}{counted}"


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
    JoinReason.SEVERAL_PROCESSES: (
        "probe the serving process itself (the pod's own address, not a Service or a "
        "balancer in front of several replicas)"
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
    several = bracket.several_processes()
    if several is not None:
        return _unjoined(
            JoinReason.SEVERAL_PROCESSES,
            f"several processes answer this URL: {several}",
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
    for side, twin in (("opening", bracket.opening_twin), ("closing", bracket.closing_twin)):
        # A twin that did not parse: that end's processes were not counted.  (A parsed
        # twin agrees with its end here: several_processes above saw every disagreement.)
        if twin is not None and not isinstance(twin, Parsed):
            return _unjoined(
                JoinReason.BRACKET_READ_FAILED,
                f"{side} twin /metrics read: {type(twin).__name__} (the processes behind "
                "this URL were not counted at that end)",
                law,
                evidence.subject,
            )
    return _mint_joined(
        subject=evidence.subject,
        process_start_seconds=first.seconds,
        law=law,
        processes_counted=bracket.processes_counted,
    )


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
