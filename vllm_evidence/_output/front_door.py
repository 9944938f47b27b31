"""The front door's JSON section: what each route's read ended in, and what it showed.

This section carries observations and the front-door join; the other decisions are
rendered by :mod:`vllm_evidence._output.assessment`.  Keys named in the README are a
public contract.  The hooks of the front door's types (each route outcome's arm, the
exchanges of a batch, the parsed observations) are registered here on the package's
converter (:mod:`vllm_evidence._converter`).
"""

from __future__ import annotations

from typing import Any, TypedDict, TypeVar, assert_never, get_args, get_origin

import attrs

from vllm_evidence._adapters import outcome as b
from vllm_evidence._adapters.health import HealthAnswer
from vllm_evidence._adapters.metrics import CacheConfigSeries, MetricsObservation
from vllm_evidence._adapters.models import ModelCard
from vllm_evidence._adapters.outcome import Outcome, Parsed
from vllm_evidence._adapters.server_info import ServerInfo
from vllm_evidence._adapters.version import SelfReportedVersion
from vllm_evidence._adapters.world_size import WorldSizeProduct
from vllm_evidence._capture.batch import Exchange, Provenance
from vllm_evidence._converter import converter, register_rendering
from vllm_evidence._readback import CapturedReadback, HistoricalBundle
from vllm_evidence._readback.evidence import arm_name
from vllm_evidence._readback.front_door import route_arms
from vllm_evidence.decisions import FrontDoorJoinDecision, JoinedIncarnation

__all__ = [
    "FrontDoorDocument",
    "FrontDoorObservations",
    "FrontDoorSection",
    "arm_fields",
    "front_door_document",
    "route_arms",
    "route_outcomes",
]

ObsT = TypeVar("ObsT")


class FrontDoorObservations(TypedDict):
    """What each parsed route showed (``None``: the route's read parsed nothing)."""

    version: str | None
    models: list[dict[str, Any]] | None
    metrics: dict[str, Any] | None
    health: dict[str, Any] | None
    server_info: dict[str, Any] | None
    world_size: dict[str, Any] | None


class FrontDoorDocument(TypedDict):
    """The front-door section: its source, its join, each route's arm, what it showed."""

    source: dict[str, Any]
    join: dict[str, Any]
    routes: dict[str, dict[str, Any]]
    observations: FrontDoorObservations


@attrs.frozen
class FrontDoorSection:
    """A front-door readback with its join decision: what the section renders."""

    readback: CapturedReadback | HistoricalBundle
    join: FrontDoorJoinDecision


def front_door_document(
    readback: CapturedReadback | HistoricalBundle, join: FrontDoorJoinDecision
) -> FrontDoorDocument:
    """The JSON section for a captured readback or historical bundle and its join."""
    document: FrontDoorDocument = converter.unstructure(FrontDoorSection(readback, join))
    return document


def route_outcomes(readback: CapturedReadback | HistoricalBundle) -> dict[str, dict[str, Any]]:
    """Each route's arm, by route stem, in report order."""
    return {arm.route.stem: converter.unstructure(arm) for arm in route_arms(readback)}


def arm_fields(outcome: Outcome[Any]) -> tuple[str, tuple[tuple[str, object], ...]]:
    """A route outcome's arm name (:func:`~vllm_evidence._readback.evidence.arm_name`) and
    the fields it carries, as the JSON section and the text report both name them."""
    return arm_name(outcome), _arm_details(outcome)


def _arm_details(outcome: Outcome[Any]) -> tuple[tuple[str, object], ...]:
    match outcome:
        case b.Parsed() | b.NotFound() | b.NotRequested():
            return ()
        case b.Unauthorized(status=status) | b.HttpError(status=status):
            return (("status", status),)
        case b.Unparsed(failure=failure):
            return (("reason", failure.reason),)
        case b.Redirected(status=status, location=location):
            return (("status", status), ("location", location))
        case b.TimedOut(detail=detail) | b.Unreachable(detail=detail):
            return (("detail", detail),)
        case b.TooLarge(limit=limit):
            return (("limit_bytes", limit),)
        case _:  # pragma: no cover - the arms above are the closed set
            assert_never(outcome)


def _arm_json(outcome: Outcome[Any]) -> dict[str, Any]:
    name, fields = arm_fields(outcome)
    return {"route": outcome.route.target, "outcome": name, **dict(fields)}


def _observation(outcome: Outcome[ObsT]) -> ObsT | None:
    return outcome.observation if isinstance(outcome, Parsed) else None


def _server_info_json(info: ServerInfo) -> dict[str, Any]:
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


def _exchange_json(e: Exchange) -> dict[str, Any]:
    return {
        "route": e.route.stem,
        "role": e.role.value,
        "status": e.status,
        "transport": e.transport.value,
        "sha256": e.body_sha256,
        "started_at": e.started_at.isoformat(),
        "elapsed_ms": (e.ended_monotonic_ns - e.started_monotonic_ns) // 1_000_000,
    }


def _model_card_json(card: ModelCard) -> dict[str, Any]:
    return {
        "id": card.served_id,
        "owned_by": card.owned_by,
        "root": card.root,
        "parent": card.parent,
        "max_model_len": converter.unstructure(card.max_model_len),
    }


def _series_json(series: CacheConfigSeries) -> dict[str, Any]:
    return {"labels": series.labels, "value": str(series.value)}


def _metrics_json(metrics: MetricsObservation) -> dict[str, Any]:
    start = metrics.process_start_time
    return {
        "cache_config_info": [converter.unstructure(s) for s in metrics.cache_config_info],
        "process_start_time_seconds": None if start is None else str(start.seconds),
        "vllm_families": sorted(metrics.vllm_families),
    }


def _join_section_json(join: FrontDoorJoinDecision) -> dict[str, Any]:
    if isinstance(join, JoinedIncarnation):
        return {
            "established": True,
            "process_start_time_seconds": str(join.process_start_seconds),
        }
    return {"established": False, "reason": join.reason.value, "detail": join.detail}


def _provenance_json(provenance: Provenance | None) -> dict[str, Any] | None:
    if provenance is None:
        return None
    return {
        "directory": provenance.directory,
        "kind": provenance.kind.value,
        "manifest_sha256": provenance.canonical_sha256,
        "key_id": provenance.key_id,
        "description": provenance.describe(),
    }


def _source_json(readback: CapturedReadback | HistoricalBundle) -> dict[str, Any]:
    if isinstance(readback, CapturedReadback):
        return {
            "kind": "captured",
            "batch_id": readback.batch.batch_id,
            "target": readback.batch.target,
            "origin": readback.batch.origin.value,
            "provenance": _provenance_json(readback.batch.provenance),
            "requests": [converter.unstructure(e) for e in readback.batch.all_exchanges()],
        }
    return {"kind": "historical"}


def _section_json(section: FrontDoorSection) -> FrontDoorDocument:
    readback = section.readback
    models = _observation(readback.models)
    info = _observation(readback.server_info_json) or _observation(readback.server_info)
    return {
        "source": _source_json(readback),
        "join": _join_section_json(section.join),
        "routes": route_outcomes(readback),
        "observations": {
            "version": converter.unstructure(_observation(readback.version)),
            "models": None
            if models is None
            else [converter.unstructure(card) for card in models.cards],
            "metrics": converter.unstructure(_observation(readback.metrics)),
            "health": converter.unstructure(_observation(readback.health)),
            "server_info": converter.unstructure(info),
            "world_size": converter.unstructure(_observation(readback.world_size)),
        },
    }


def _version_json(version: SelfReportedVersion) -> str:
    return version.raw


def _health_json(health: HealthAnswer) -> dict[str, Any]:
    return {"status": health.status}


def _world_size_json(world: WorldSizeProduct) -> dict[str, Any]:
    return {"product": world.product}


for _arm in get_args(Outcome):
    register_rendering(get_origin(_arm) or _arm, _arm_json)
register_rendering(Exchange, _exchange_json)
register_rendering(ServerInfo, _server_info_json)
register_rendering(ModelCard, _model_card_json)
register_rendering(CacheConfigSeries, _series_json)
register_rendering(MetricsObservation, _metrics_json)
register_rendering(SelfReportedVersion, _version_json)
register_rendering(HealthAnswer, _health_json)
register_rendering(WorldSizeProduct, _world_size_json)
register_rendering(FrontDoorSection, _section_json)
