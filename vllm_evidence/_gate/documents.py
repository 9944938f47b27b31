"""The gate's JSON answers, built from its snapshot through the package converter.

* ``/ready`` — :func:`ready_document` (schema ``vllm-evidence.gate-ready/1``): whether
  the target (or, without one, every target) is ready, the claims required, the round it
  is about, and per target each refusal — the required claim, its verdict, its reason,
  why (a process gone from the launcher's tree is named there: the rank, its pid, the
  process tree), and what it comes from (``assessment``, ``canary`` for ``generation``,
  or ``gate`` before any assessment) — the front door's ``process_start_time_seconds``
  this round, the launch's processes gone, the launcher's process tree as read (root,
  running count), and this round's canary when the gate sends one (``canary``:
  generated, reason, model, status, seconds).
* ``/live`` — :func:`live_document` (``vllm-evidence.gate-live/1``).
* ``/assessment`` — the assessment document exactly as ``vllm-evidence probe URL --json``
  prints it (:func:`vllm_evidence._output.assessment.server_document`).
* Every other answer — :func:`error_document` (``vllm-evidence.gate-error/1``): the
  status and one line saying why.

Text passes through the package scrubber (:func:`vllm_evidence._scrub.scrub`, JSON
form): no secret, and no raw control character, leaves the gate.
"""

from __future__ import annotations

import json

import attrs

from vllm_evidence._converter import converter
from vllm_evidence._gate.canary import CanaryResult
from vllm_evidence._gate.snapshot import GateSnapshot, TargetState
from vllm_evidence._output.assessment import server_document
from vllm_evidence._scrub import scrub

__all__ = [
    "ERROR_SCHEMA",
    "LIVE_SCHEMA",
    "READY_SCHEMA",
    "CanaryRecord",
    "ErrorRecord",
    "LiveRecord",
    "ProcessTreeRecord",
    "ReadyRecord",
    "RefusalRecord",
    "TargetReadyRecord",
    "assessment_json",
    "error_document",
    "json_bytes",
    "live_document",
    "ready_document",
]

READY_SCHEMA = "vllm-evidence.gate-ready/1"
LIVE_SCHEMA = "vllm-evidence.gate-live/1"
ERROR_SCHEMA = "vllm-evidence.gate-error/1"


@attrs.frozen(kw_only=True)
class RefusalRecord:
    """One required claim not established this round."""

    claim: str
    verdict: str
    reason: str
    detail: str
    by: str


@attrs.frozen(kw_only=True)
class ProcessTreeRecord:
    """The launcher's process tree, as the round read it."""

    root: int
    """The launched command's pid."""
    running: int
    """How many processes of the tree were running (the root included)."""
    unavailable: str | None
    """Why it could not be read (then nothing is found gone)."""


@attrs.frozen(kw_only=True)
class CanaryRecord:
    """This round's generation canary (``launch --serve … --canary``)."""

    generated: bool
    reason: str
    model: str | None
    """The model id it named (``null`` when none was sent)."""
    status: int | None
    """The answer's HTTP status (``null``: none, or none sent)."""
    elapsed_s: float | None


@attrs.frozen(kw_only=True)
class TargetReadyRecord:
    """One target's readiness."""

    target: str
    ready: bool
    process_start_time_seconds: str | None
    """The front door's ``process_start_time_seconds`` this round, when observed."""
    refusals: list[RefusalRecord]
    lost_processes: list[str]
    """Each process of the launch gone from the launcher's tree, in words."""
    process_tree: ProcessTreeRecord | None
    canary: CanaryRecord | None
    """This round's canary (``null`` when the gate sends none, or sent none yet)."""


@attrs.frozen(kw_only=True)
class ReadyRecord:
    """``/ready``'s body."""

    schema: str
    ready: bool
    required: list[str]
    canary: bool
    """Whether the gate sends the generation canary (the ``generation`` claim)."""
    round: int
    round_end: str | None
    targets: list[TargetReadyRecord]


@attrs.frozen(kw_only=True)
class LiveRecord:
    """``/live``'s body."""

    schema: str
    live: bool
    detail: str
    round: int


@attrs.frozen(kw_only=True)
class ErrorRecord:
    """The body of every other answer."""

    schema: str
    status: int
    error: str


def _target(state: TargetState) -> TargetReadyRecord:
    tree = state.tree
    canary = state.canary
    marker = state.process_start_seconds
    return TargetReadyRecord(
        target=state.target,
        ready=state.ready,
        process_start_time_seconds=None if marker is None else format(marker, "f"),
        refusals=[
            RefusalRecord(
                claim=c.claim,
                verdict=c.verdict,
                reason=c.reason,
                detail=c.detail,
                by=c.by.value,
            )
            for c in state.refusals
        ],
        lost_processes=[p.detail for p in state.lost],
        process_tree=None
        if tree is None
        else ProcessTreeRecord(
            root=tree.root, running=len(tree.members), unavailable=tree.unavailable
        ),
        canary=None if canary is None else _canary(canary),
    )


def _canary(result: CanaryResult) -> CanaryRecord:
    elapsed = None if result.elapsed_s is None else round(result.elapsed_s, 6)
    return CanaryRecord(
        generated=result.generated,
        reason=result.reason.value,
        model=result.model,
        status=result.status,
        elapsed_s=elapsed,
    )


def ready_document(snapshot: GateSnapshot, target: TargetState | None = None) -> object:
    """``/ready``'s body: ``target`` alone, or every target of the snapshot."""
    states = snapshot.targets if target is None else (target,)
    ready = snapshot.rounds > 0 and all(s.ready for s in states)
    end = snapshot.last_round_end
    return converter.unstructure(
        ReadyRecord(
            schema=READY_SCHEMA,
            ready=ready,
            required=list(snapshot.required),
            canary=snapshot.canary,
            round=snapshot.rounds,
            round_end=None if end is None else end.isoformat(),
            targets=[_target(s) for s in states],
        )
    )


def live_document(*, live: bool, detail: str, snapshot: GateSnapshot) -> object:
    """``/live``'s body."""
    return converter.unstructure(
        LiveRecord(schema=LIVE_SCHEMA, live=live, detail=detail, round=snapshot.rounds)
    )


def error_document(status: int, error: str) -> object:
    """The body of an answer that is neither of the above."""
    return converter.unstructure(ErrorRecord(schema=ERROR_SCHEMA, status=status, error=error))


def assessment_json(target: TargetState) -> object:
    """``/assessment``'s body: the target's assessment document as ``probe --json``
    prints it, or ``{"target", "error"}`` while it has none."""
    if target.assessment is None:
        return server_document(target.target, target.unassessed or "not assessed")
    return server_document(target.target, target.assessment)


def json_bytes(document: object) -> bytes:
    """A document as UTF-8 JSON, scrubbed, newline-terminated."""
    text = json.dumps(document, indent=2, ensure_ascii=False)
    return (scrub(text, form="json") + "\n").encode("utf-8")
