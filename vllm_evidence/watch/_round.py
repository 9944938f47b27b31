"""What one round of a watch found: :class:`Round`, each target's :class:`TargetRound`, and
the transitions since the round before.

A round holds, for every target in the order given, how its front door answered
(:class:`Reach`), the process start time it showed, every claim's verdict for the serving
process (:class:`ClaimVerdict`; ``generation`` too when the watch sends the canary),
whether it is *ready* (it answered and every required
claim is established), its followed log's state (:class:`LogView`) and, unless the
watch was told not to keep them, its whole :class:`~vllm_evidence._assessment.Assessment`.

**Transitions** are what changed since the target's last round (none in a target's first
round, none for a target that stays as it was):

* :class:`ReachChanged`: the front door went from answering to not answering (every route
  an error), unreachable (no answer at all) or failed (the watch could not finish the
  target's round), or back;
* :class:`Restarted`: the ``process_start_time_seconds`` its ``/metrics`` carries is not
  the one last seen (compared across rounds in which it could not be read, so a server
  that goes away and comes back restarted shows both);
* :class:`ClaimChanged`: a claim's verdict (``established``, ``reported``, ``refused``)
  differs from the target's last *answering* round: while a front door does not answer,
  every claim about its serving process is refused by that one fact, said once by
  :class:`ReachChanged`, not once per claim;
* :class:`LogChanged`: the followed log went missing, unreadable or readable again, or was
  rotated, truncated, rewritten or read again from its start.

Every type here is sealed: made only by :func:`vllm_evidence.watch.watch` and
:class:`vllm_evidence.watch.Watcher`.
"""

from __future__ import annotations

import enum
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, TypeAlias, final

import attrs

from vllm_evidence._capture.follow import FollowEvent, FollowState
from vllm_evidence._claims import GateClaim
from vllm_evidence._gate.canary import CanaryResult
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.watch._targets import Target

if TYPE_CHECKING:
    from vllm_evidence._assessment import Assessment, Verdict
    from vllm_evidence._output.assessment import AssessmentDocument

__all__ = [
    "ClaimChanged",
    "ClaimVerdict",
    "LogChanged",
    "LogView",
    "Reach",
    "ReachChanged",
    "Restarted",
    "Round",
    "TargetRound",
    "Transition",
]

_MADE_BY = "vllm_evidence.watch.watch() or vllm_evidence.watch.Watcher.round()"


class Reach(enum.Enum):
    """How a target's front door answered this round."""

    ANSWERING = "answering"
    """Some route answered with something other than an error."""
    NOT_ANSWERING = "not_answering"
    """Every route answered an error (``front_door_not_answering``)."""
    UNREACHABLE = "unreachable"
    """No route answered: nothing listens, refused, timed out, TLS failed
    (``front_door_unreachable``), or the target's round passed its deadline."""
    FAILED = "failed"
    """The watch could not finish the target's round (its error is in the round's
    problems); no claim was decided."""


@final
@attrs.frozen(init=False, repr=False)
class ClaimVerdict(Sealed):
    """One claim's verdict for a target's serving process this round."""

    __public_constructor__ = _MADE_BY

    claim: GateClaim
    """An assessment's claim, or ``generation`` (the canary's, with ``canary=True``)."""
    verdict: Verdict
    reason: str
    """The decision's reason (``established``, ``rank_lost``, …; the canary's
    ``generated``, ``canary_http_error``, …)."""
    detail: str
    """The decision's one line for a person."""

    def _repr_summary(self) -> str:
        return f"{self.claim}: {self.verdict} ({self.reason})"


@final
@attrs.frozen(init=False, repr=False)
class LogView(Sealed):
    """A target's followed startup log as this round left it."""

    __public_constructor__ = _MADE_BY

    state: FollowState
    event: FollowEvent | None
    """What made this round read the log from its start again, if anything did."""
    read_bytes: int
    """How many bytes of the log have been read (up to the receipt's ``log_bytes`` when a
    receipt is given)."""
    file_bytes: int | None
    """The file's size this round; ``None`` when there is no readable file."""
    detail: str | None
    """One line: why the log is missing or unreadable, why it was read from its start, or
    why it gives no log yet (an empty file)."""

    def _repr_summary(self) -> str:
        event = "" if self.event is None else f", {self.event.value}"
        return f"{self.state.value}{event}, {self.read_bytes:,} bytes read"


@final
@attrs.frozen(init=False, repr=False)
class TargetRound(Sealed):
    """One target in one round."""

    __public_constructor__ = _MADE_BY

    target: Target
    reach: Reach
    reach_detail: str | None
    """Why the front door is not answering (``None`` while it answers)."""
    process_start_seconds: Decimal | None
    """The ``process_start_time_seconds`` every bracketing ``/metrics`` read carried (the
    front-door join established); ``None`` when it was not observed this round."""
    claims: tuple[ClaimVerdict, ...]
    """Every claim, in :data:`~vllm_evidence._claims.CLAIMS` order, then ``generation``
    when the watch sends the canary (empty when the round failed)."""
    ready: bool
    """The front door answered and every required claim is established for its serving
    process."""
    log: LogView | None
    """The followed log (``None``: the target has none)."""
    problems: tuple[str, ...]
    """One line each: what this round could not read for the target (a receipt, a log),
    or the watch's own error."""
    duration_s: float
    """How long the target's round took (seconds)."""
    assessment: Assessment | None
    """The whole assessment, when the watch keeps them and the round reached one."""
    canary: CanaryResult | None
    """This round's generation canary (``None``: the watch sends none, or the round
    reached no assessment to name a model from)."""

    def claim(self, name: GateClaim) -> ClaimVerdict | None:
        """The verdict of one claim this round (``None`` when the round failed)."""
        return next((c for c in self.claims if c.claim == name), None)

    def assessment_document(self) -> AssessmentDocument | None:
        """The assessment's ``vllm-evidence.assessment`` document, when it was kept."""
        if self.assessment is None:
            return None
        from vllm_evidence._output.assessment import assessment_document

        return assessment_document(self.assessment)

    def _repr_summary(self) -> str:
        return f"{self.target.url}: {self.reach.value}, ready={self.ready}"


# ---------------------------------------------------------------------------- changes


@final
@attrs.frozen(init=False, repr=False)
class ClaimChanged(Sealed):
    """A claim's verdict is not what it was in the target's last answering round."""

    __public_constructor__ = _MADE_BY

    round_index: int
    at: datetime
    target: Target
    claim: GateClaim
    before: ClaimVerdict
    after: ClaimVerdict

    def _repr_summary(self) -> str:
        return (
            f"{self.target.url} {self.claim}: {self.before.verdict} → {self.after.verdict} "
            f"({self.after.reason})"
        )


@final
@attrs.frozen(init=False, repr=False)
class Restarted(Sealed):
    """The front door carries another ``process_start_time_seconds`` than last seen."""

    __public_constructor__ = _MADE_BY

    round_index: int
    at: datetime
    target: Target
    before: Decimal
    after: Decimal

    def _repr_summary(self) -> str:
        return f"{self.target.url}: process_start_time_seconds {self.before} → {self.after}"


@final
@attrs.frozen(init=False, repr=False)
class ReachChanged(Sealed):
    """The front door answers otherwise than in the target's last round."""

    __public_constructor__ = _MADE_BY

    round_index: int
    at: datetime
    target: Target
    before: Reach
    after: Reach
    detail: str | None
    """Why it does not answer now (``None`` when it answers again)."""

    def _repr_summary(self) -> str:
        return f"{self.target.url}: {self.before.value} → {self.after.value}"


@final
@attrs.frozen(init=False, repr=False)
class LogChanged(Sealed):
    """The followed log's state changed, or it was read from its start again."""

    __public_constructor__ = _MADE_BY

    round_index: int
    at: datetime
    target: Target
    before: FollowState
    after: FollowState
    event: FollowEvent | None
    detail: str | None

    def _repr_summary(self) -> str:
        event = "" if self.event is None else f" ({self.event.value})"
        return f"{self.target.url} log: {self.before.value} → {self.after.value}{event}"


Transition: TypeAlias = ClaimChanged | Restarted | ReachChanged | LogChanged
"""One change of one target between two rounds (match on the four arms)."""


@final
@attrs.frozen(init=False, repr=False)
class Round(Sealed):
    """One round over every target."""

    __public_constructor__ = _MADE_BY

    index: int
    """1 for the first round."""
    started_at: datetime
    """When the round began (UTC)."""
    duration_s: float
    """How long the round took (seconds)."""
    interval_s: float | None
    """The interval rounds are started at (``None`` for a round run by hand)."""
    late_s: float
    """How long after its interval the round began (the round before overran it)."""
    required: tuple[GateClaim, ...]
    """The claims a target must have established to be :attr:`TargetRound.ready`."""
    targets: tuple[TargetRound, ...]
    transitions: tuple[Transition, ...]
    """What changed since each target's last round, in target order."""

    @property
    def ready(self) -> bool:
        """Whether every target is ready."""
        return all(t.ready for t in self.targets)

    def _repr_summary(self) -> str:
        ready = sum(t.ready for t in self.targets)
        return (
            f"round {self.index}: {len(self.targets)} targets, {ready} ready, "
            f"{len(self.transitions)} transitions"
        )


_mint_claim_verdict = minter(ClaimVerdict, ClaimVerdict.__attrs_init__)
_mint_log_view = minter(LogView, LogView.__attrs_init__)
_mint_target_round = minter(TargetRound, TargetRound.__attrs_init__)
_mint_claim_changed = minter(ClaimChanged, ClaimChanged.__attrs_init__)
_mint_restarted = minter(Restarted, Restarted.__attrs_init__)
_mint_reach_changed = minter(ReachChanged, ReachChanged.__attrs_init__)
_mint_log_changed = minter(LogChanged, LogChanged.__attrs_init__)
_mint_round = minter(Round, Round.__attrs_init__)
