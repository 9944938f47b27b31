"""What the gate serves: a typed snapshot of its targets, recorded round by round.

A :class:`Gate` is given its targets (a URL, and labels carried into every output) and
the claims it requires.  Each round it records, per target, what the round gave — an
:class:`~vllm_evidence._assessment.Assessment`, or why there is none (the target is not a
URL, the round failed).  From those alone it mints a sealed :class:`GateSnapshot`: no
caller writes a verdict, a ready flag or a counter.

Each target's :class:`ClaimState` is the assessment's verdict for the serving process,
as the assessment decided it.  The launcher's own process tree is part of that
assessment's evidence (``assess(…, process_tree=…)``): a worker or engine core the joined
log names that is gone from it is refused there, *this round* — ``rank_lost`` (parallel,
health coverage) or ``engine_dead`` (those and capacity), the detail naming the rank, its
pid and the process tree (:mod:`vllm_evidence.decisions._life`).  The snapshot shows the
tree as read and the launch's processes gone from it
(:func:`~vllm_evidence._readback.processes.lost_processes`), beside the verdicts.

A target is **ready** when every required claim is established for the serving process
in the latest round.  Counters: rounds recorded, restarts seen per target (a
``process_start_time_seconds`` observed on one round and another on a later one), probe
failures per target (a round whose front door answered nothing, or only errors, or that
gave no assessment), the latest round's duration and end.

Every reason a snapshot carries is one of :data:`CLOSED_REASONS` (the decisions' reason
enums and :class:`GateReason`), so the metrics' label values are a closed set.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
import threading
from collections.abc import Sequence
from decimal import Decimal
from typing import final

import attrs

from vllm_evidence._adapters.process_tree import ProcessTree
from vllm_evidence._assessment import Assessment, Verdict, claim_established, verdict
from vllm_evidence._capture._target import clean_target
from vllm_evidence._claims import CLAIMS, GATE_CLAIMS, GENERATION, Claim, GateClaim
from vllm_evidence._gate.canary import CanaryReason, CanaryResult
from vllm_evidence._readback.evidence import Subject
from vllm_evidence._readback.processes import LostProcess, lost_processes
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReason,
    HealthReason,
    IdentityReason,
    JoinedIncarnation,
    JoinReason,
    LogJoined,
    LogJoinReason,
    ParallelReason,
)
from vllm_evidence.errors import InputError

__all__ = [
    "CLOSED_REASONS",
    "MAX_ENGINES",
    "MAX_LABELS",
    "ClaimSource",
    "ClaimState",
    "EngineTokens",
    "Gate",
    "GateReason",
    "GateSnapshot",
    "GateTarget",
    "TargetRound",
    "TargetState",
]

#: Who makes these: the gate, which only the command line runs.
_GATE = "the gate (vllm-evidence launch --serve, vllm-evidence watch --listen)"


class GateReason(enum.Enum):
    """The gate's own reasons, beside the decisions'."""

    NOT_ASSESSED = "not_assessed"
    """No assessment for this target yet, or this round gave none (see its
    :attr:`TargetState.unassessed`)."""


#: Every reason a :class:`ClaimState` can carry: the label values of the metrics.
CLOSED_REASONS: frozenset[str] = frozenset(
    member.value
    for enum_class in (
        ParallelReason,
        CapacityReason,
        IdentityReason,
        HealthReason,
        JoinReason,
        LogJoinReason,
        GateReason,
        CanaryReason,
    )
    for member in enum_class
)


#: The most DP engines whose capacity one target reports (a body from a server is
#: hostile: its ``engine`` labels are bounded in number here, and in length).
MAX_ENGINES = 256
_ENGINE_CHARS = 64
#: The most labels one target carries, and their sizes.
MAX_LABELS = 32
_LABEL_VALUE_CHARS = 256
#: A Prometheus label name, not reserved (``__…``), and not one the gate's series use.
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,63}")
_RESERVED_LABELS = frozenset({"target", "claim", "verdict", "reason", "engine", "job", "instance"})


class ClaimSource(enum.Enum):
    """What a claim's state this round comes from."""

    ASSESSMENT = "assessment"
    """The assessment's decision, as ``probe --json`` prints it (the launcher's process
    tree among its evidence)."""
    GATE = "gate"
    """No assessment this round (:attr:`GateReason.NOT_ASSESSED`)."""
    CANARY = "canary"
    """This round's generation canary (:mod:`vllm_evidence._gate.canary`)."""


@attrs.frozen
class GateTarget:
    """One target of a gate: its URL (cleaned) and the labels carried with it."""

    url: str
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, url: str, labels: Sequence[tuple[str, str]] = ()) -> GateTarget:
        """A target with its URL cleaned (:class:`InputError` for one that is not a URL)
        and its labels checked: Prometheus label names, none reserved, bounded."""
        if len(labels) > MAX_LABELS:
            msg = f"{url}: more than {MAX_LABELS} labels"
            raise InputError(msg)
        for name, value in labels:
            if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
                msg = f"{url}: label name {name[:70]!r} is not a Prometheus label name"
                raise InputError(msg)
            if name in _RESERVED_LABELS:
                msg = f"{url}: label {name!r} is one the gate's own series use"
                raise InputError(msg)
            if len(value) > _LABEL_VALUE_CHARS:
                msg = f"{url}: label {name!r} is longer than {_LABEL_VALUE_CHARS} characters"
                raise InputError(msg)
        return cls(clean_target(url), tuple(sorted(labels)))


@attrs.frozen
class TargetRound:
    """What one round gave for one target: an assessment (with the launcher's process
    tree in its evidence, when the target is its own child) or why there is none, and
    this round's canary when the gate sends one."""

    target: str
    result: Assessment | str
    canary: CanaryResult | None = None


@final
@attrs.frozen(init=False, repr=False)
class ClaimState(Sealed):
    """One claim of one target, this round."""

    __public_constructor__ = _GATE

    claim: GateClaim
    verdict: Verdict
    established: bool
    """Established for the serving process (what ``--require`` asks)."""
    reason: str
    """One of :data:`CLOSED_REASONS`."""
    detail: str
    by: ClaimSource
    required: bool

    def _repr_summary(self) -> str:
        return f"{self.claim}: {self.verdict} ({self.reason}, by {self.by.value})"


@final
@attrs.frozen(init=False, repr=False)
class EngineTokens(Sealed):
    """One DP engine's established KV-cache capacity, in tokens."""

    __public_constructor__ = _GATE

    engine: str
    tokens: int

    def _repr_summary(self) -> str:
        return f"engine {self.engine}: {self.tokens:,} tokens"


@final
@attrs.frozen(init=False, repr=False)
class TargetState(Sealed):
    """One target as of the latest round."""

    __public_constructor__ = _GATE

    target: str
    labels: tuple[tuple[str, str], ...]
    assessment: Assessment | None
    unassessed: str | None
    """Why there is no assessment (``None`` when there is one)."""
    claims: tuple[ClaimState, ...]
    """Every claim, in :data:`~vllm_evidence._assessment.CLAIMS` order, then
    ``generation`` when the gate sends the canary."""
    canary: CanaryResult | None
    """This round's canary (``None``: the gate sends none, or no round gave one)."""
    ready: bool
    """Every required claim established for the serving process, this round."""
    capacity: tuple[EngineTokens, ...]
    """The established capacity per DP engine (empty unless capacity is established)."""
    process_start_seconds: Decimal | None
    """The front door's ``process_start_time_seconds`` this round, when observed."""
    restarts_seen: int
    probe_failures: int
    lost: tuple[LostProcess, ...]
    """The joined launch's processes gone from the launcher's tree this round (the
    launcher only), as the assessment's evidence resolves them."""
    tree: ProcessTree | None
    """The launcher's process tree as this round read it, from the assessment's evidence
    (``None``: not the launcher's own child, or no assessment this round)."""

    @property
    def refusals(self) -> tuple[ClaimState, ...]:
        """The required claims not established, in claim order."""
        return tuple(c for c in self.claims if c.required and not c.established)

    def _repr_summary(self) -> str:
        state = "ready" if self.ready else f"not ready ({len(self.refusals)} refused)"
        return f"{self.target}: {state}"


@final
@attrs.frozen(init=False, repr=False)
class GateSnapshot(Sealed):
    """Everything the gate serves, as of its latest round."""

    __public_constructor__ = _GATE

    targets: tuple[TargetState, ...]
    required: tuple[GateClaim, ...]
    canary: bool
    """Whether the gate sends the generation canary (``generation`` is served)."""
    rounds: int
    """Rounds recorded since the gate started."""
    last_round_duration_s: float | None
    last_round_end: dt.datetime | None
    """When the latest round ended (UTC)."""

    @property
    def ready(self) -> bool:
        """Every target ready (and at least one round recorded)."""
        return self.rounds > 0 and all(t.ready for t in self.targets)

    def target(self, url: str) -> TargetState | None:
        """The target ``url`` names (cleaned as targets are), or ``None``."""
        try:
            wanted = clean_target(url)
        except InputError:
            return None
        return next((t for t in self.targets if t.target == wanted), None)

    def _repr_summary(self) -> str:
        ready = sum(t.ready for t in self.targets)
        return f"round {self.rounds}: {ready} of {len(self.targets)} ready"


_mint_claim = minter(ClaimState, ClaimState.__attrs_init__)
_mint_engine = minter(EngineTokens, EngineTokens.__attrs_init__)
_mint_target = minter(TargetState, TargetState.__attrs_init__)
_mint_snapshot = minter(GateSnapshot, GateSnapshot.__attrs_init__)


def _decision(assessment: Assessment, claim: Claim) -> object:
    return getattr(assessment, claim)


def _not_assessed(claim: GateClaim, detail: str, required: frozenset[GateClaim]) -> ClaimState:
    """``claim`` refused by the gate itself: nothing decided it this round."""
    return _mint_claim(
        claim=claim,
        verdict="refused",
        established=False,
        reason=GateReason.NOT_ASSESSED.value,
        detail=detail,
        by=ClaimSource.GATE,
        required=claim in required,
    )


def _generation(
    canary: CanaryResult | None, unassessed: str | None, required: frozenset[GateClaim]
) -> ClaimState:
    """The ``generation`` claim from this round's canary (never an earlier round's)."""
    if canary is None:
        return _not_assessed(GENERATION, unassessed or "no canary this round", required)
    return _mint_claim(
        claim=GENERATION,
        verdict="established" if canary.generated else "refused",
        established=canary.generated,
        reason=canary.reason.value,
        detail=canary.detail,
        by=ClaimSource.CANARY,
        required=GENERATION in required,
    )


def _claims(
    assessment: Assessment | None,
    unassessed: str | None,
    required: frozenset[GateClaim],
    canary: tuple[bool, CanaryResult | None] = (False, None),
) -> tuple[ClaimState, ...]:
    states = []
    states_after = [_generation(canary[1], unassessed, required)] if canary[0] else []
    for claim in CLAIMS:
        if assessment is None:
            states.append(_not_assessed(claim, unassessed or "not assessed", required))
            continue
        decision = _decision(assessment, claim)
        states.append(
            _mint_claim(
                claim=claim,
                verdict=verdict(decision),
                established=claim_established(assessment, claim),
                reason=str(getattr(decision, "reason").value),  # noqa: B009  # every arm has one
                detail=str(getattr(decision, "detail")),  # noqa: B009
                by=ClaimSource.ASSESSMENT,
                required=claim in required,
            )
        )
    return (*states, *states_after)


def _capacity(
    assessment: Assessment | None, claims: tuple[ClaimState, ...]
) -> tuple[EngineTokens, ...]:
    if assessment is None:
        return ()
    decision = assessment.capacity
    held = next(c for c in claims if c.claim == "capacity").established
    if not held or not isinstance(decision, CapacityEstablished):
        return ()
    return tuple(
        _mint_engine(engine=engine.engine[:_ENGINE_CHARS], tokens=engine.tokens.value)
        for engine in decision.engines[:MAX_ENGINES]
    )


def _marker(assessment: Assessment | None) -> Decimal | None:
    if assessment is None:
        return None
    join = assessment.front_door_join
    return join.process_start_seconds if isinstance(join, JoinedIncarnation) else None


def _failed(assessment: Assessment | None) -> bool:
    if assessment is None:
        return True
    evidence = assessment.evidence
    return bool(evidence.front_door_unreachable() or evidence.front_door_not_answering())


def _lost(assessment: Assessment | None) -> tuple[LostProcess, ...]:
    """The joined launch's processes gone from its tree, as the evidence resolves them
    (what the decisions read: shown, never decided, here)."""
    if (
        assessment is None
        or assessment.subject is not Subject.SERVING
        or not isinstance(assessment.log_join, LogJoined)
    ):
        return ()
    evidence = assessment.evidence
    tree, launch = evidence.launch_tree(), evidence.launch
    return () if tree is None or launch is None else lost_processes(launch, tree)


@attrs.define
class _Memory:
    """What the gate keeps of one target between rounds."""

    target: GateTarget
    marker: Decimal | None = None
    restarts: int = 0
    failures: int = 0
    state: TargetState | None = None


class Gate:
    """The recorder of rounds and the holder of the latest :class:`GateSnapshot`
    (thread-safe: one thread records, any thread reads :attr:`snapshot`)."""

    def __init__(
        self,
        targets: Sequence[GateTarget],
        required: Sequence[GateClaim],
        *,
        canary: bool = False,
    ) -> None:
        if not targets:
            msg = "a gate needs at least one target"
            raise InputError(msg)
        unknown = [c for c in required if c not in GATE_CLAIMS]
        if unknown:
            msg = f"unknown claim(s) {unknown}; claims are {', '.join(GATE_CLAIMS)}"
            raise InputError(msg)
        if GENERATION in required and not canary:
            msg = "generation is decided by the canary: require it with --canary"
            raise InputError(msg)
        self._canary = bool(canary)
        urls = [t.url for t in targets]
        if len(set(urls)) != len(urls):
            msg = "a target is given twice"
            raise InputError(msg)
        self._required = tuple(dict.fromkeys(required))
        self._memory = {t.url: _Memory(t) for t in targets}
        self._lock = threading.Lock()
        self._rounds = 0
        self._snapshot = _mint_snapshot(
            targets=tuple(self._unassessed(m, "no round yet") for m in self._memory.values()),
            required=self._required,
            canary=self._canary,
            rounds=0,
            last_round_duration_s=None,
            last_round_end=None,
        )

    @property
    def snapshot(self) -> GateSnapshot:
        """The latest snapshot (before any round: every target ``not_assessed``)."""
        return self._snapshot

    def _unassessed(self, memory: _Memory, why: str) -> TargetState:
        claims = _claims(None, why, frozenset(self._required), (self._canary, None))
        return _mint_target(
            target=memory.target.url,
            labels=memory.target.labels,
            assessment=None,
            unassessed=why,
            claims=claims,
            canary=None,
            ready=False,
            capacity=(),
            process_start_seconds=None,
            restarts_seen=memory.restarts,
            probe_failures=memory.failures,
            lost=(),
            tree=None,
        )

    def _state(self, memory: _Memory, result: TargetRound) -> TargetState:
        assessment = result.result if isinstance(result.result, Assessment) else None
        unassessed = None if assessment is not None else str(result.result)
        marker = _marker(assessment)
        if marker is not None:
            if memory.marker is not None and marker != memory.marker:
                memory.restarts += 1
            memory.marker = marker
        if _failed(assessment):
            memory.failures += 1
        canary = result.canary if self._canary else None
        claims = _claims(assessment, unassessed, frozenset(self._required), (self._canary, canary))
        return _mint_target(
            target=memory.target.url,
            labels=memory.target.labels,
            assessment=assessment,
            unassessed=unassessed,
            claims=claims,
            canary=canary,
            ready=assessment is not None and all(c.established for c in claims if c.required),
            capacity=_capacity(assessment, claims),
            process_start_seconds=marker,
            restarts_seen=memory.restarts,
            probe_failures=memory.failures,
            lost=_lost(assessment),
            tree=None if assessment is None else assessment.evidence.process_tree,
        )

    def record(
        self,
        results: Sequence[TargetRound],
        *,
        duration_s: float,
        ended: dt.datetime | None = None,
    ) -> GateSnapshot:
        """Record one round (its results, how long it took) and return the new snapshot.

        A target the round has no result for keeps its previous state; a result for a
        target the gate does not have is an :class:`InputError`."""
        with self._lock:
            for result in results:
                if result.target not in self._memory:
                    msg = f"{result.target} is not a target of this gate"
                    raise InputError(msg)
            for result in results:
                memory = self._memory[result.target]
                memory.state = self._state(memory, result)
            self._rounds += 1
            self._snapshot = _mint_snapshot(
                targets=tuple(
                    m.state if m.state is not None else self._unassessed(m, "no round yet")
                    for m in self._memory.values()
                ),
                required=self._required,
                canary=self._canary,
                rounds=self._rounds,
                last_round_duration_s=max(0.0, float(duration_s)),
                last_round_end=ended if ended is not None else dt.datetime.now(dt.UTC),
            )
            return self._snapshot
