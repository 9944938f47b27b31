"""Rounds over many targets: :class:`Watcher` runs one round at a time, :func:`watch` runs
them at an interval.

Each round every target is read the way ``vllm-evidence probe`` reads one server — its
launch receipt, then its startup log (followed: only the bytes appended since the last
round, :mod:`vllm_evidence._capture.follow`), then its front door in one bracketed batch
(:func:`~vllm_evidence._capture.http.probe`) — and assessed
(:func:`~vllm_evidence._assessment.assess`); the round holds each target's verdicts and the
transitions since the round before (:mod:`vllm_evidence.watch._round`).

**No target stalls another.**  At most ``concurrency`` targets are read at once; every
request has its own ``timeout`` and every target's batch its ``deadline`` (and a guard a
little past it, whatever happens inside), so a server that never answers costs its
deadline and no more.  A log is read, and a batch whose bodies hold more than
:data:`INLINE_BODY_BYTES` assessed, on a worker thread, off the event loop the other
targets' requests run on.  Whatever one target's round raises is that target's
``failed`` round, with its error as one line: the watch goes on.  Every probe shares one
:class:`~vllm_evidence._capture.http.BodyBudget`, so the body bytes held at once are
bounded for the whole watch, not per target.

**A restart between rounds** is seen as a new ``process_start_time_seconds``.  The log
join then follows from the receipt: a receipt whose start time is the old process's is
refused (``start_time_contradicted``) and every claim that rests on the log with it,
until the new launch's receipt (its start time, its log's digest) is read.
"""

from __future__ import annotations

import asyncio
import math
import ssl
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Final

import attrs

from vllm_evidence._assessment import assess, claim_decisions, claim_established, verdict
from vllm_evidence._capture.follow import MAX_POLL_BYTES, FollowState
from vllm_evidence._capture.http import (
    DEFAULT_BODY_BUDGET_BYTES,
    DEFAULT_DEADLINE_S,
    DEFAULT_TIMEOUT_S,
    BodyBudget,
    _ca_context,
    probe,
    worst_case_body_bytes,
)
from vllm_evidence._claims import CLAIMS, GATE_CLAIMS, GENERATION, GateClaim
from vllm_evidence._gate.canary import CanaryResult, run_canary
from vllm_evidence._readback import readback_from_batch
from vllm_evidence._scrub import scrub
from vllm_evidence.decisions import JoinedIncarnation
from vllm_evidence.errors import InputError
from vllm_evidence.watch._log import TargetLog
from vllm_evidence.watch._round import (
    ClaimVerdict,
    LogView,
    Reach,
    Round,
    TargetRound,
    Transition,
    _mint_claim_changed,
    _mint_claim_verdict,
    _mint_log_changed,
    _mint_reach_changed,
    _mint_restarted,
    _mint_round,
    _mint_target_round,
)
from vllm_evidence.watch._targets import Target

if TYPE_CHECKING:
    from vllm_evidence._adapters.receipt import LaunchReceipt
    from vllm_evidence._adapters.startup_log import StartupLog
    from vllm_evidence._assessment import Assessment
    from vllm_evidence._capture.batch import CaptureBatch
    from vllm_evidence._capture.signing import VerificationKey

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_INTERVAL_S", "INLINE_BODY_BYTES", "Watcher", "watch"]

#: Rounds begin this often by default (seconds).
DEFAULT_INTERVAL_S: Final = 15.0
#: Targets read at once by default.
DEFAULT_CONCURRENCY: Final = 64
#: A batch whose bodies hold more is assessed on a worker thread (a real server's batch
#: holds a few hundred KiB and is assessed on the loop in a few milliseconds).
INLINE_BODY_BYTES: Final = 1024 * 1024
#: How far past its deadline a target's round is given up, whatever holds it.
_GUARD_S: Final = 5.0


def _positive(name: str, value: object) -> float:
    """``value`` as seconds: a positive finite number (callers outside mypy can pass
    anything)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        msg = f"{name} must be a positive finite number of seconds, got {value!r}"
        raise InputError(msg)
    return float(value)


def _count(name: str, value: object) -> int:
    """``value`` as a positive integer (callers outside mypy can pass anything)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{name} must be a positive integer, got {value!r}"
        raise InputError(msg)
    return value


@attrs.define
class _Memory:
    """What a target showed before, for the transitions."""

    reach: Reach | None = None
    start: Decimal | None = None
    """The last ``process_start_time_seconds`` seen (across rounds that could not read it)."""
    claims: tuple[ClaimVerdict, ...] | None = None
    """The verdicts of the last round in which the front door answered."""
    log: FollowState | None = None


@attrs.define
class _Slot:
    target: Target
    log: TargetLog | None
    memory: _Memory = attrs.Factory(_Memory)


class Watcher:
    """Rounds over ``targets``, one per :meth:`round` call, each with the transitions
    since the one before (see the module).

    ``require`` names the claims a target must have established to be *ready*.
    ``deadline`` bounds each target's batch (default: the interval, but at least 10 s and
    at most 30 s; 30 s without an interval), ``timeout`` each request (default: 10 s, or
    the deadline when it is shorter).  ``api_key``, ``development_routes`` and ``verify`` are
    :func:`~vllm_evidence._capture.http.probe`'s.  ``receipt_key`` is the launcher's public
    key, under which every target's receipt signature is checked
    (:func:`~vllm_evidence._adapters.receipt.read_launch_receipt`: without it, no receipt
    joins a log).  ``keep_assessments=False`` keeps only
    the verdicts (a round then holds no bodies: what a long watch over many targets
    wants).  ``max_log_poll_bytes`` bounds what one round reads of one log (a log found
    long is read over several rounds).  ``canary=True`` sends, once a round, the
    generation canary (one bounded completion, ``max_tokens`` 1, to the first base model
    each target served that round; see ``vllm-evidence watch --help``) and adds the claim
    ``generation``, established only when a token came back in that round; ``require``
    may name it then.  Without it nothing but GETs is sent.  Raises
    :class:`InputError` for a setting that is not one, and for a server given twice.
    """

    def __init__(
        self,
        targets: Iterable[Target],
        *,
        require: Sequence[GateClaim] = (),
        concurrency: int = DEFAULT_CONCURRENCY,
        interval: float | None = None,
        timeout: float | None = None,
        deadline: float | None = None,
        api_key: str | None = None,
        development_routes: bool = True,
        verify: bool | str = True,
        receipt_key: VerificationKey | None = None,
        keep_assessments: bool = True,
        body_budget_bytes: int = DEFAULT_BODY_BUDGET_BYTES,
        max_log_poll_bytes: int = MAX_POLL_BYTES,
        canary: bool = False,
    ) -> None:
        listed = list(targets)
        seen: set[str] = set()
        for target in listed:
            item: object = target  # callers outside mypy can pass anything
            if not isinstance(item, Target):
                msg = f"targets are Target values, got {type(target).__name__}"
                raise InputError(msg)
            if target.url in seen:
                msg = "a server is listed twice among the targets (each is watched once)"
                raise InputError(msg)
            seen.add(target.url)
        flag: object = canary  # callers outside mypy can pass anything
        if not isinstance(flag, bool):
            msg = f"canary is True or False, got {flag!r}"
            raise InputError(msg)
        known = GATE_CLAIMS if canary else CLAIMS
        unknown = [c for c in require if c not in known]
        if unknown == [GENERATION]:
            msg = "require names generation, which only the canary decides: give canary=True"
            raise InputError(msg)
        if unknown:
            msg = f"require names claims of {', '.join(known)}, got {unknown[0]!r}"
            raise InputError(msg)
        _count("concurrency", concurrency)
        self.interval = None if interval is None else _positive("interval", interval)
        span = self.interval if self.interval is not None else DEFAULT_DEADLINE_S
        # A deadline shorter than a request's timeout, or than what a loaded machine needs
        # to read a fleet, would refuse claims for this process's own haste: a round may
        # take longer than its interval (the next begins late), never be cut short by it.
        self.deadline = (
            _positive("deadline", deadline)
            if deadline is not None
            else min(DEFAULT_DEADLINE_S, max(span, DEFAULT_TIMEOUT_S))
        )
        self.timeout = (
            _positive("timeout", timeout)
            if timeout is not None
            else min(DEFAULT_TIMEOUT_S, self.deadline)
        )
        self.targets: tuple[Target, ...] = tuple(listed)
        self.require: tuple[GateClaim, ...] = tuple(dict.fromkeys(require))
        self.canary = canary
        self.concurrency = concurrency
        self._api_key = api_key
        self._development_routes = development_routes
        self._verify = verify
        # the canary's connection verifies as the probe's does (a CA path read once here)
        self._canary_verify: bool | ssl.SSLContext = (
            _ca_context(verify) if canary and isinstance(verify, str) else bool(verify)
        )
        self._keep = keep_assessments
        self._budget_bytes = body_budget_bytes
        self._budget: BodyBudget | None = None
        self._budget_loop: asyncio.AbstractEventLoop | None = None
        self._slots = [
            _Slot(
                t,
                None
                if t.startup_log is None
                else TargetLog(
                    t.startup_log,
                    t.receipt,
                    receipt_key=receipt_key,
                    max_poll_bytes=max_log_poll_bytes,
                ),
            )
            for t in listed
        ]
        self._rounds = 0
        BodyBudget(body_budget_bytes)  # a budget that is not one is refused here, not later
        worst = worst_case_body_bytes(development_routes=development_routes, api_key=api_key)
        if body_budget_bytes < worst:
            msg = (
                f"body_budget_bytes {body_budget_bytes:,}: one server's answers may hold "
                f"{worst:,} bytes of bodies (every route at its cap); give at least that"
            )
            raise InputError(msg)

    # ------------------------------------------------------------------------ a round

    async def round(self) -> Round:
        """Read every target once and return the round (and its transitions)."""
        return await self._round(late_s=0.0)

    async def _round(self, *, late_s: float) -> Round:
        loop = asyncio.get_running_loop()
        if self._budget is None or self._budget_loop is not loop:
            self._budget, self._budget_loop = BodyBudget(self._budget_bytes), loop
        started = datetime.now(UTC)
        began = time.monotonic()
        self._rounds += 1
        index = self._rounds
        results: list[TargetRound | None] = [None] * len(self._slots)
        pending = iter(enumerate(self._slots))

        async def worker() -> None:
            for number, slot in pending:
                results[number] = await self._one(slot)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.concurrency, len(self._slots))):
                group.create_task(worker())
        done = tuple(r for r in results if r is not None)
        transitions: list[Transition] = []
        for slot, now in zip(self._slots, done, strict=True):
            transitions.extend(_changes(slot.memory, now, index, started))
        return _mint_round(
            index=index,
            started_at=started,
            duration_s=time.monotonic() - began,
            interval_s=self.interval,
            late_s=late_s,
            required=self.require,
            targets=done,
            transitions=tuple(transitions),
        )

    async def _one(self, slot: _Slot) -> TargetRound:
        began = time.monotonic()
        problems: list[str] = []
        view: LogView | None = None
        try:
            log: StartupLog | None = None
            receipt: LaunchReceipt | None = None
            if slot.log is not None:
                read = await asyncio.to_thread(slot.log.read)
                log, receipt, view = read.log, read.receipt, read.view
                problems.extend(read.problems)
            batch = await self._probe(slot.target)
            if batch is None:
                return self._without_answer(
                    slot,
                    Reach.UNREACHABLE,
                    f"no answer within the round's deadline ({self.deadline:g} s)",
                    view,
                    problems,
                    began,
                )
            try:
                assessment = await _assess(batch, log, receipt)
            finally:
                if self._budget is not None:
                    self._budget.release(batch)
            canary = await self._canary_round(slot.target, assessment)
        except Exception as exc:  # noqa: BLE001  # one target's error is its round, never the watch's
            why = scrub(" ".join(f"{type(exc).__name__}: {exc}".split()))[:500]
            problems.append(f"the watch could not finish this target's round ({why})")
            return self._without_answer(slot, Reach.FAILED, why, view, problems, began)
        return self._assessed(slot, assessment, canary, view, problems, began)

    async def _canary_round(self, target: Target, assessment: Assessment) -> CanaryResult | None:
        """This round's canary to ``target`` (``None`` without ``canary=True``)."""
        if not self.canary:
            return None
        return await run_canary(
            target.url,
            assessment,
            api_key=self._api_key,
            timeout_s=self.timeout,
            verify=self._canary_verify,
        )

    async def _probe(self, target: Target) -> CaptureBatch | None:
        try:
            async with asyncio.timeout(self.deadline + _GUARD_S):
                return await probe(
                    target.url,
                    api_key=self._api_key,
                    timeout=self.timeout,
                    deadline=self.deadline,
                    development_routes=self._development_routes,
                    verify=self._verify,
                    body_budget=self._budget,
                )
        except TimeoutError:
            return None

    def _without_answer(
        self,
        slot: _Slot,
        reach: Reach,
        detail: str,
        view: LogView | None,
        problems: list[str],
        began: float,
    ) -> TargetRound:
        return _mint_target_round(
            target=slot.target,
            reach=reach,
            reach_detail=detail,
            process_start_seconds=None,
            claims=(),
            ready=False,
            log=view,
            problems=tuple(problems),
            duration_s=time.monotonic() - began,
            assessment=None,
            canary=None,
        )

    def _assessed(
        self,
        slot: _Slot,
        assessment: Assessment,
        canary: CanaryResult | None,
        view: LogView | None,
        problems: list[str],
        began: float,
    ) -> TargetRound:
        evidence = assessment.evidence
        unreachable = evidence.front_door_unreachable()
        not_answering = None if unreachable is not None else evidence.front_door_not_answering()
        if unreachable is not None:
            reach, detail = Reach.UNREACHABLE, unreachable
        elif not_answering is not None:
            reach, detail = Reach.NOT_ANSWERING, not_answering
        else:
            reach, detail = Reach.ANSWERING, None
        join = assessment.front_door_join
        start = join.process_start_seconds if isinstance(join, JoinedIncarnation) else None
        claims = tuple(
            _mint_claim_verdict(
                claim=claim, verdict=verdict(d), reason=str(d.reason.value), detail=d.detail
            )
            for claim, d in claim_decisions(assessment).items()
        )
        if canary is not None:
            claims += (
                _mint_claim_verdict(
                    claim=GENERATION,
                    verdict="established" if canary.generated else "refused",
                    reason=canary.reason.value,
                    detail=canary.detail,
                ),
            )
        ready = reach is Reach.ANSWERING and all(
            canary is not None and canary.generated
            if claim == GENERATION
            else claim_established(assessment, claim)
            for claim in self.require
        )
        return _mint_target_round(
            target=slot.target,
            reach=reach,
            reach_detail=detail,
            process_start_seconds=start,
            claims=claims,
            ready=ready,
            log=view,
            problems=tuple(problems),
            duration_s=time.monotonic() - began,
            assessment=assessment if self._keep else None,
            canary=canary,
        )


async def _assess(
    batch: CaptureBatch, log: StartupLog | None, receipt: LaunchReceipt | None
) -> Assessment:
    def work() -> Assessment:
        return assess(readback_from_batch(batch), log, receipt=receipt)

    size = sum(len(e.body) for e in batch.all_exchanges() if e.body is not None)
    if size > INLINE_BODY_BYTES:
        return await asyncio.to_thread(work)
    return work()


def _changes(memory: _Memory, now: TargetRound, index: int, at: datetime) -> list[Transition]:
    """What changed since the target's rounds before (updating ``memory``)."""
    found: list[Transition] = []
    target = now.target
    if memory.reach is not None and memory.reach is not now.reach:
        found.append(
            _mint_reach_changed(
                round_index=index,
                at=at,
                target=target,
                before=memory.reach,
                after=now.reach,
                detail=now.reach_detail,
            )
        )
    memory.reach = now.reach
    if now.process_start_seconds is not None:
        if memory.start is not None and memory.start != now.process_start_seconds:
            found.append(
                _mint_restarted(
                    round_index=index,
                    at=at,
                    target=target,
                    before=memory.start,
                    after=now.process_start_seconds,
                )
            )
        memory.start = now.process_start_seconds
    if now.log is not None:
        state, event = now.log.state, now.log.event
        if memory.log is not None and (memory.log is not state or event is not None):
            found.append(
                _mint_log_changed(
                    round_index=index,
                    at=at,
                    target=target,
                    before=memory.log,
                    after=state,
                    event=event,
                    detail=now.log.detail,
                )
            )
        memory.log = state
    if now.reach is Reach.ANSWERING:
        if memory.claims is not None:
            found.extend(
                _mint_claim_changed(
                    round_index=index,
                    at=at,
                    target=target,
                    claim=after.claim,
                    before=before,
                    after=after,
                )
                for before, after in zip(memory.claims, now.claims, strict=True)
                if before.verdict != after.verdict
            )
        memory.claims = now.claims
    return found


async def watch(
    targets: Iterable[Target],
    *,
    interval: float = DEFAULT_INTERVAL_S,
    rounds: int | None = None,
    require: Sequence[GateClaim] = (),
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    deadline: float | None = None,
    api_key: str | None = None,
    development_routes: bool = True,
    verify: bool | str = True,
    receipt_key: VerificationKey | None = None,
    keep_assessments: bool = True,
    body_budget_bytes: int = DEFAULT_BODY_BUDGET_BYTES,
    max_log_poll_bytes: int = MAX_POLL_BYTES,
    canary: bool = False,
) -> AsyncIterator[Round]:
    """Rounds over ``targets``, one every ``interval`` seconds, for ever or ``rounds``
    times: ``async for round in watch(targets, interval=15, require=("parallel",))``.

    A round begins ``interval`` seconds after the one before began; one that took longer
    delays the next, which then begins at once (its :attr:`Round.late_s` says by how
    much): rounds never pile up.  The other settings are :class:`Watcher`'s; an
    :class:`InputError` for one that is not a setting is raised before the first round.
    """
    if rounds is not None:
        _count("rounds", rounds)
    watcher = Watcher(
        targets,
        require=require,
        concurrency=concurrency,
        interval=interval,
        timeout=timeout,
        deadline=deadline,
        api_key=api_key,
        development_routes=development_routes,
        verify=verify,
        receipt_key=receipt_key,
        keep_assessments=keep_assessments,
        body_budget_bytes=body_budget_bytes,
        max_log_poll_bytes=max_log_poll_bytes,
        canary=canary,
    )
    assert watcher.interval is not None  # noqa: S101 - given above
    loop = asyncio.get_running_loop()
    due: float | None = None
    done = 0
    while rounds is None or done < rounds:
        now = loop.time()
        if due is not None and now < due:
            await asyncio.sleep(due - now)
            now = loop.time()
        late = 0.0 if due is None else max(0.0, now - due)
        due = now + watcher.interval
        yield await watcher._round(late_s=late)
        done += 1
