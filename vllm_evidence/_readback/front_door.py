"""Readbacks: one server's front-door observations, grouped by route, with the bracket.

* :class:`CapturedReadback` is built from one :class:`~vllm_evidence._capture.batch.CaptureBatch`;
  it carries the batch's ``/metrics`` :class:`Bracket` (the two opening and the two
  closing reads), which the front-door join decision compares.
* :class:`HistoricalBundle` is built from bodies a caller supplies; it has no bracket
  (``bracket`` is ``None``), so nothing can make it joined.

Each holds one ``/version`` outcome, read once: a readback that would name two builds
has no constructor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar, final
from urllib.parse import urlsplit

import attrs

from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.health import HealthAnswer
from vllm_evidence._adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence._adapters.models import ServedModels, parse_models
from vllm_evidence._adapters.outcome import (
    STATIC_BODIES,
    Outcome,
    Parsed,
    derive_outcome,
    exchange_outcome,
    health_outcome,
    not_requested,
)
from vllm_evidence._adapters.server_info import (
    ServerInfo,
    parse_server_info_json,
    parse_server_info_text,
)
from vllm_evidence._adapters.version import SelfReportedVersion, parse_version
from vllm_evidence._adapters.world_size import WorldSizeProduct, parse_world_size
from vllm_evidence._capture.batch import CaptureBatch, Exchange, Transport
from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.errors import InputError
from vllm_evidence.upstream._routes import Route

T = TypeVar("T")

__all__ = [
    "Bracket",
    "CapturedReadback",
    "HistoricalBundle",
    "historical_bundle",
    "readback_from_batch",
    "route_arms",
]


@final
@attrs.frozen(init=False, repr=False)
class Bracket(Sealed):
    """The ``/metrics`` reads that open and close one probe batch, as they ended: two at
    each end (the second, the *twin*, read when the first had ended), or one at each in
    a capture saved before the probe read twins.

    These are facts, not a verdict: whether they join the batch into one incarnation
    is decided by :func:`vllm_evidence.decisions.decide_front_door_join`.
    """

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    opening: Outcome[MetricsObservation]
    closing: Outcome[MetricsObservation]
    opening_twin: Outcome[MetricsObservation] | None
    """The second opening read; ``None`` in a capture saved before twins."""
    closing_twin: Outcome[MetricsObservation] | None
    """The second closing read; ``None`` in a capture saved before twins."""

    @property
    def processes_counted(self) -> bool:
        """Whether each end was read twice: only then can the bracket show that several
        processes answer one URL (a balancer in front)."""
        return self.opening_twin is not None and self.closing_twin is not None

    def markers(self) -> tuple[Decimal | None, Decimal | None] | None:
        """Both first reads' ``process_start_time_seconds`` (``None`` where absent),
        exact; ``None`` when either read did not parse."""
        if not isinstance(self.opening, Parsed) or not isinstance(self.closing, Parsed):
            return None
        first = self.opening.observation.process_start_time
        last = self.closing.observation.process_start_time
        return (
            None if first is None else first.seconds,
            None if last is None else last.seconds,
        )

    def several_processes(self) -> str | None:
        """Why these reads came from more than one process, or ``None`` when nothing
        shows it.  One process's ``/metrics`` carries one start time (or, in a
        multi-process registry, none) for as long as it lives, so:

        * two parsed reads at one end carry different markers, or one carries it and
          the other not (read back to back: nothing restarts and serves in between);
        * or the closing end's marker is *earlier* than the opening end's: that process
          had started before the opening one and still answered after it, so both were
          running at once (a restart's replacement starts later, never earlier).
        """
        ends = (
            ("opening", self.opening, self.opening_twin),
            ("closing", self.closing, self.closing_twin),
        )
        for end, first, twin in ends:
            if isinstance(first, Parsed) and isinstance(twin, Parsed):
                one = first.observation.process_start_time
                two = twin.observation.process_start_time
                a = None if one is None else one.seconds
                b = None if two is None else two.seconds
                if a != b:
                    return (
                        f"the two {end} /metrics reads, back to back, carried "
                        f"process_start_time_seconds {_shown(a)} then {_shown(b)}"
                    )
        earliest = [m for m in (_marker(self.opening), _marker(self.opening_twin)) if m is not None]
        latest = [m for m in (_marker(self.closing), _marker(self.closing_twin)) if m is not None]
        if earliest and latest and min(latest) < max(earliest):
            return (
                f"the closing /metrics read's process started at {min(latest)}, before the "
                f"opening read's ({max(earliest)}): both were running at once"
            )
        return None

    def marker_changed(self) -> bool:
        """Both first reads carried the marker and it differs, and nothing shows several
        processes (:meth:`several_processes`): one process replaced by a later one, a
        restart mid-batch."""
        markers = self.markers()
        if markers is None or markers[0] is None or markers[1] is None:
            return False
        return markers[0] != markers[1] and self.several_processes() is None


def _marker(outcome: Outcome[MetricsObservation] | None) -> Decimal | None:
    """A read's ``process_start_time_seconds``, when it parsed and carried one."""
    if not isinstance(outcome, Parsed):
        return None
    start = outcome.observation.process_start_time
    return None if start is None else start.seconds


def _shown(marker: Decimal | None) -> str:
    return "absent" if marker is None else str(marker)


_mint_bracket = minter(Bracket, Bracket.__attrs_init__)


def _metrics_outcome(exchange: Exchange) -> Outcome[MetricsObservation]:
    return exchange_outcome(exchange, parse_metrics)


@final
@attrs.frozen(init=False, repr=False)
class CapturedReadback(Sealed):
    """What one bracketed probe batch observed, route by route."""

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    batch: CaptureBatch
    bracket: Bracket
    """The ``/metrics`` reads that bracket the batch (two at each end)."""
    version: Outcome[SelfReportedVersion]
    models: Outcome[ServedModels]
    metrics: Outcome[MetricsObservation]
    """The opening bracket's ``/metrics`` read."""
    health: Outcome[HealthAnswer]
    server_info: Outcome[ServerInfo]
    server_info_json: Outcome[ServerInfo]
    world_size: Outcome[WorldSizeProduct]

    def __rederive__(self) -> Reduction[CapturedReadback]:
        """Pickled as its batch's raw exchanges; unpickling runs every adapter again."""
        return readback_from_batch, (self.batch,)

    @property
    def port(self) -> int | None:
        """The TCP port the probe read: the target's own, else its scheme's default (443
        for ``https``, else 80); ``None`` when the target's port does not parse (a target
        is cleaned on the way in, so only one that was not)."""
        parts = urlsplit(self.batch.target)
        try:
            port = parts.port
        except ValueError:
            return None
        if port is not None:
            return port
        return 443 if parts.scheme == "https" else 80

    def _repr_summary(self) -> str:
        return f"{self.batch!r}, {_arms_summary(self)}"


_mint_captured = minter(CapturedReadback, CapturedReadback.__attrs_init__)


def readback_from_batch(batch: CaptureBatch) -> CapturedReadback:
    """Run every route's adapter over a batch, the two bracketing reads included."""
    opening = _metrics_outcome(batch.bracket_open)
    closing = _metrics_outcome(batch.bracket_close)
    opening_twin = batch.bracket_open_twin
    closing_twin = batch.bracket_close_twin

    def health() -> Outcome[HealthAnswer]:
        exchange = batch.exchange(Route.HEALTH)
        if exchange is None:
            return not_requested(Route.HEALTH)
        return health_outcome(
            Route.HEALTH,
            transport=exchange.transport,
            status=exchange.status,
            location=exchange.header("location"),
            detail=exchange.detail,
            size_limit=exchange.size_limit,
        )

    version_ex = batch.exchange(Route.VERSION)
    models_ex = batch.exchange(Route.MODELS)
    text_ex = batch.exchange(Route.SERVER_INFO)
    json_ex = batch.exchange(Route.SERVER_INFO_JSON)
    world_ex = batch.exchange(Route.GET_WORLD_SIZE)
    return _mint_captured(
        batch=batch,
        bracket=_mint_bracket(
            opening=opening,
            closing=closing,
            opening_twin=None if opening_twin is None else _metrics_outcome(opening_twin),
            closing_twin=None if closing_twin is None else _metrics_outcome(closing_twin),
        ),
        version=not_requested(Route.VERSION)
        if version_ex is None
        else exchange_outcome(version_ex, parse_version),
        models=not_requested(Route.MODELS)
        if models_ex is None
        else exchange_outcome(models_ex, parse_models),
        metrics=opening,
        health=health(),
        server_info=not_requested(Route.SERVER_INFO)
        if text_ex is None
        else exchange_outcome(text_ex, parse_server_info_text, memo=STATIC_BODIES),
        server_info_json=not_requested(Route.SERVER_INFO_JSON)
        if json_ex is None
        else exchange_outcome(json_ex, parse_server_info_json, memo=STATIC_BODIES),
        world_size=not_requested(Route.GET_WORLD_SIZE)
        if world_ex is None
        else exchange_outcome(world_ex, parse_world_size),
    )


@final
@attrs.frozen(init=False, repr=False)
class HistoricalBundle(Sealed):
    """Bodies a caller supplied, parsed route by route.  Never joined."""

    __public_constructor__ = "vllm_evidence.historical_bundle()"

    version: Outcome[SelfReportedVersion]
    models: Outcome[ServedModels]
    metrics: Outcome[MetricsObservation]
    health: Outcome[HealthAnswer]
    server_info: Outcome[ServerInfo]
    server_info_json: Outcome[ServerInfo]
    world_size: Outcome[WorldSizeProduct]
    bodies: tuple[tuple[Route, bytes], ...]
    """The bodies it was built from, in route order: its raw evidence."""
    statuses: tuple[tuple[Route, int], ...]
    """The statuses it was given, in route order (a route absent here was read as 200)."""

    def __rederive__(self) -> Reduction[HistoricalBundle]:
        """Pickled as the bodies and statuses it was built from; unpickling parses them
        again."""
        return _rederive_historical, (self.bodies, self.statuses)

    @property
    def bracket(self) -> None:
        """Always ``None``: caller-assembled bodies carry no incarnation bracket."""
        return None

    def _repr_summary(self) -> str:
        return _arms_summary(self)


_mint_historical = minter(HistoricalBundle, HistoricalBundle.__attrs_init__)


def historical_bundle(
    bodies: Mapping[Route, bytes], *, statuses: Mapping[Route, int] | None = None
) -> HistoricalBundle:
    """Parse caller-supplied bodies; a route with no body is :class:`NotRequested`.

    ``statuses`` gives a route's HTTP status (default 200), so a saved 404 stays a
    404.  ``/health`` may be given by status alone.  ``/collective_rpc`` is refused.
    """
    given = dict(statuses or {})
    for route in (*bodies, *given):
        if not isinstance(route, Route) or not route.probe_readable:  # type: ignore[redundant-expr]  # callers outside mypy can pass anything
            msg = f"{route!r} is not a front-door route this package reads"
            raise InputError(msg)

    def one(route: Route, adapter: Callable[[bytes], T | BodyParseFailure]) -> Outcome[T]:
        if route not in bodies and route not in given:
            return not_requested(route)
        return derive_outcome(
            route,
            transport=Transport.ANSWERED,
            status=given.get(route, 200),
            body=bodies.get(route, b""),
            location=None,
            detail="",
            size_limit=len(bodies.get(route, b"")),
            adapter=adapter,
        )

    if Route.HEALTH in bodies or Route.HEALTH in given:
        health: Outcome[HealthAnswer] = health_outcome(
            Route.HEALTH,
            transport=Transport.ANSWERED,
            status=given.get(Route.HEALTH, 200),
            location=None,
            detail="",
            size_limit=0,
        )
    else:
        health = not_requested(Route.HEALTH)
    return _mint_historical(
        version=one(Route.VERSION, parse_version),
        models=one(Route.MODELS, parse_models),
        metrics=one(Route.METRICS, parse_metrics),
        health=health,
        server_info=one(Route.SERVER_INFO, parse_server_info_text),
        server_info_json=one(Route.SERVER_INFO_JSON, parse_server_info_json),
        world_size=one(Route.GET_WORLD_SIZE, parse_world_size),
        bodies=tuple((route, bodies[route]) for route in Route if route in bodies),
        statuses=tuple((route, given[route]) for route in Route if route in given),
    )


def _rederive_historical(
    bodies: tuple[tuple[Route, bytes], ...], statuses: tuple[tuple[Route, int], ...]
) -> HistoricalBundle:
    """A bundle parsed again from its raw bodies and statuses (package-internal:
    unpickling and document loading)."""
    return historical_bundle(dict(bodies), statuses=dict(statuses))


def route_arms(readback: CapturedReadback | HistoricalBundle) -> tuple[Outcome[Any], ...]:
    """Each route's outcome, in report order: ``/version``, ``/v1/models``, ``/metrics``
    (the opening bracket's read), ``/health``, ``/server_info``,
    ``/server_info?config_format=json``, ``/get_world_size``.

    The one list of a readback's route outcomes: the repr, the evidence's "nothing
    answered" reason, the JSON section and the text report all read it (each arm names
    its route: ``arm.route``)."""
    return (
        readback.version,
        readback.models,
        readback.metrics,
        readback.health,
        readback.server_info,
        readback.server_info_json,
        readback.world_size,
    )


def _arms_summary(readback: CapturedReadback | HistoricalBundle) -> str:
    """Each route's arm by class: ``version=Parsed, v1_models=NotFound, …``."""
    return ", ".join(f"{arm.route.stem}={type(arm).__name__}" for arm in route_arms(readback))
