"""The front door's JSON section: what each route's read ended in, and what it showed.

This section carries observations and the front-door join; the other decisions are
rendered by :mod:`vllm_evidence.output.assessment`.  Keys named in the README are a
public contract.
"""

from __future__ import annotations

from typing import Any, TypeVar, assert_never

from vllm_evidence.adapters import outcome as b
from vllm_evidence.adapters.outcome import Outcome, Parsed
from vllm_evidence.adapters.server_info import ServerInfo
from vllm_evidence.decisions.join import FrontDoorJoinDecision, JoinedIncarnation
from vllm_evidence.readback import CapturedReadback, HistoricalBundle

__all__ = ["front_door_document", "route_outcomes"]

ObsT = TypeVar("ObsT")


def _arm(outcome: Outcome[Any]) -> dict[str, Any]:
    return {"route": outcome.route.target, **_arm_fields(outcome)}


def _arm_fields(outcome: Outcome[Any]) -> dict[str, Any]:
    match outcome:
        case b.Parsed():
            return {"outcome": "parsed"}
        case b.NotFound():
            return {"outcome": "not_found"}
        case b.Unauthorized(status=status):
            return {"outcome": "unauthorized", "status": status}
        case b.Unparsed(failure=failure):
            return {"outcome": "unparsed", "reason": failure.reason}
        case b.HttpError(status=status):
            return {"outcome": "http_error", "status": status}
        case b.Redirected(status=status, location=location):
            return {"outcome": "redirected", "status": status, "location": location}
        case b.TimedOut(detail=detail):
            return {"outcome": "timed_out", "detail": detail}
        case b.Unreachable(detail=detail):
            return {"outcome": "unreachable", "detail": detail}
        case b.TooLarge(limit=limit):
            return {"outcome": "too_large", "limit_bytes": limit}
        case b.NotRequested():
            return {"outcome": "not_requested"}
        case _:  # pragma: no cover - the arms above are the closed set
            assert_never(outcome)


def _observation(outcome: Outcome[ObsT]) -> ObsT | None:
    return outcome.observation if isinstance(outcome, Parsed) else None


def _server_info_json(info: ServerInfo | None) -> dict[str, Any] | None:
    if info is None:
        return None
    p = info.parallel
    return {
        "form": info.form.value,
        "parallel": {
            "tensor_parallel_size": p.tensor_parallel_size,
            "pipeline_parallel_size": p.pipeline_parallel_size,
            "data_parallel_size": p.data_parallel_size,
            "prefill_context_parallel_size": p.prefill_context_parallel_size,
            "decode_context_parallel_size": p.decode_context_parallel_size,
            "world_size": p.world_size,
            "distributed_executor_backend": p.distributed_executor_backend,
        },
        "model": info.model,
        "served_model_name": info.served_model_name,
        "instance_id": info.instance_id,
    }


def route_outcomes(readback: CapturedReadback | HistoricalBundle) -> dict[str, dict[str, Any]]:
    """Each route's arm, by route stem, in report order."""
    routes: dict[str, Outcome[Any]] = {
        "version": readback.version,
        "v1_models": readback.models,
        "metrics": readback.metrics,
        "health": readback.health,
        "server_info": readback.server_info,
        "server_info__config_format_json": readback.server_info_json,
        "get_world_size": readback.world_size,
    }
    return {stem: _arm(outcome) for stem, outcome in routes.items()}


def front_door_document(
    readback: CapturedReadback | HistoricalBundle, join: FrontDoorJoinDecision
) -> dict[str, Any]:
    """The JSON section for a captured readback or historical bundle and its join."""
    if isinstance(join, JoinedIncarnation):
        join_doc: dict[str, Any] = {
            "established": True,
            "process_start_time_seconds": str(join.process_start_seconds),
        }
    else:
        join_doc = {"established": False, "reason": join.reason.value, "detail": join.detail}
    if isinstance(readback, CapturedReadback):
        source: dict[str, Any] = {
            "kind": "captured",
            "batch_id": readback.batch.batch_id,
            "target": readback.batch.target,
            "requests": [
                {
                    "route": e.route.stem,
                    "role": e.role.value,
                    "status": e.status,
                    "transport": e.transport.value,
                    "sha256": e.body_sha256,
                    "started_at": e.started_at.isoformat(),
                    "elapsed_ms": (e.ended_monotonic_ns - e.started_monotonic_ns) // 1_000_000,
                }
                for e in readback.batch.all_exchanges()
            ],
        }
    else:
        source = {"kind": "historical"}
    version = _observation(readback.version)
    models = _observation(readback.models)
    metrics = _observation(readback.metrics)
    health = _observation(readback.health)
    world = _observation(readback.world_size)
    info = _observation(readback.server_info_json) or _observation(readback.server_info)
    return {
        "source": source,
        "join": join_doc,
        "routes": route_outcomes(readback),
        "observations": {
            "version": None if version is None else version.raw,
            "models": None
            if models is None
            else [
                {
                    "id": card.served_id,
                    "owned_by": card.owned_by,
                    "root": card.root,
                    "parent": card.parent,
                    "max_model_len": None
                    if card.max_model_len is None
                    else card.max_model_len.value,
                }
                for card in models.cards
            ],
            "metrics": None
            if metrics is None
            else {
                "cache_config_info": [
                    {"labels": series.labels, "value": str(series.value)}
                    for series in metrics.cache_config_info
                ],
                "process_start_time_seconds": None
                if metrics.process_start_time is None
                else str(metrics.process_start_time.seconds),
                "vllm_families": sorted(metrics.vllm_families),
            },
            "health": None if health is None else {"status": health.status},
            "server_info": _server_info_json(info),
            "world_size": None if world is None else {"product": world.product},
        },
    }
