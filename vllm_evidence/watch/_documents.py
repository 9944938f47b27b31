"""A watch's JSON lines: one ``vllm-evidence.watch-transition/2`` document per transition
and one ``vllm-evidence.watch-round/2`` document per round
(``vllm-evidence schema watch-transition``, ``vllm-evidence schema watch-round``).

Both are the package converter's renderings of the watch's typed values; the hooks are
registered here.  A round's document carries, per target, its labels, how its front door
answered, the process start time it showed, each claim's verdict and reason, whether it
is ready, its followed log's state and what could not be read; each claim's detail is in
the transition that changed it (the round's document stays one line per round over
thousands of targets).  :func:`round_lines` gives a round's documents in the order a
watch prints them: its transitions, then the round.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from vllm_evidence._converter import converter, register_rendering
from vllm_evidence.watch._round import (
    ClaimChanged,
    ClaimVerdict,
    LogChanged,
    LogView,
    Reach,
    ReachChanged,
    Restarted,
    Round,
    TargetRound,
    Transition,
)
from vllm_evidence.watch._targets import Target

__all__ = [
    "ROUND_SCHEMA",
    "TRANSITION_SCHEMA",
    "round_document",
    "round_lines",
    "transition_document",
]

ROUND_SCHEMA: Final = "vllm-evidence.watch-round/2"
TRANSITION_SCHEMA: Final = "vllm-evidence.watch-transition/2"


def round_document(round_: Round) -> dict[str, Any]:
    """The ``vllm-evidence.watch-round/2`` document of one round."""
    document: dict[str, Any] = converter.unstructure(round_)
    return document


def transition_document(transition: Transition) -> dict[str, Any]:
    """The ``vllm-evidence.watch-transition/2`` document of one transition."""
    document: dict[str, Any] = converter.unstructure(transition)
    return document


def round_lines(round_: Round) -> list[dict[str, Any]]:
    """A round's documents as a watch prints them: each transition, then the round."""
    return [*(transition_document(t) for t in round_.transitions), round_document(round_)]


def _start(value: object) -> str | None:
    return None if value is None else str(value)


def _verdict_json(claim: ClaimVerdict) -> dict[str, object]:
    return {"verdict": claim.verdict, "reason": claim.reason}


def _log_json(log: LogView) -> dict[str, object]:
    return {
        "state": log.state.value,
        "event": None if log.event is None else log.event.value,
        "read_bytes": log.read_bytes,
        "file_bytes": log.file_bytes,
        "detail": log.detail,
    }


def _target_round_json(target: TargetRound) -> dict[str, object]:
    return {
        "target": target.target.url,
        "labels": target.target.label_map,
        "reach": target.reach.value,
        "reach_detail": target.reach_detail,
        "process_start_time_seconds": _start(target.process_start_seconds),
        "ready": target.ready,
        "claims": {claim.claim: _verdict_json(claim) for claim in target.claims},
        "log": None if target.log is None else _log_json(target.log),
        "problems": list(target.problems),
        "duration_s": round(target.duration_s, 6),
    }


def _round_json(round_: Round) -> dict[str, object]:
    targets = round_.targets
    return {
        "schema": ROUND_SCHEMA,
        "round": round_.index,
        "started_at": round_.started_at.isoformat(),
        "duration_s": round(round_.duration_s, 6),
        "interval_s": round_.interval_s,
        "late_s": round(round_.late_s, 6),
        "required": list(round_.required),
        "counts": {
            "targets": len(targets),
            "answering": sum(t.reach is Reach.ANSWERING for t in targets),
            "ready": sum(t.ready for t in targets),
            "transitions": len(round_.transitions),
        },
        "targets": [_target_round_json(t) for t in targets],
    }


def _head(change: str, index: int, at: datetime, target: Target) -> dict[str, object]:
    return {
        "schema": TRANSITION_SCHEMA,
        "round": index,
        "at": at.isoformat(),
        "target": target.url,
        "labels": target.label_map,
        "change": change,
    }


def _claim_changed_json(t: ClaimChanged) -> dict[str, object]:
    return {
        **_head("claim", t.round_index, t.at, t.target),
        "claim": t.claim,
        "before": _verdict_json(t.before),
        "after": _verdict_json(t.after),
        "detail": t.after.detail,
    }


def _restarted_json(t: Restarted) -> dict[str, object]:
    return {
        **_head("restart", t.round_index, t.at, t.target),
        "claim": None,
        "before": {"process_start_time_seconds": str(t.before)},
        "after": {"process_start_time_seconds": str(t.after)},
        "detail": None,
    }


def _reach_changed_json(t: ReachChanged) -> dict[str, object]:
    return {
        **_head("reach", t.round_index, t.at, t.target),
        "claim": None,
        "before": {"reach": t.before.value},
        "after": {"reach": t.after.value},
        "detail": t.detail,
    }


def _log_changed_json(t: LogChanged) -> dict[str, object]:
    return {
        **_head("log", t.round_index, t.at, t.target),
        "claim": None,
        "before": {"state": t.before.value},
        "after": {"state": t.after.value, "event": None if t.event is None else t.event.value},
        "detail": t.detail,
    }


register_rendering(ClaimVerdict, _verdict_json)
register_rendering(LogView, _log_json)
register_rendering(TargetRound, _target_round_json)
register_rendering(Round, _round_json)
register_rendering(ClaimChanged, _claim_changed_json)
register_rendering(Restarted, _restarted_json)
register_rendering(ReachChanged, _reach_changed_json)
register_rendering(LogChanged, _log_changed_json)
