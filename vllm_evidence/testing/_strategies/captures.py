"""Whole captures drawn as one consistent launch, and the sealed types built from them.

* :func:`capture_directories`: one server's front door (every probe route) and,
  optionally, its startup log; every body describes one launch (:class:`~._common._Server`).
* The sealed evidence types, built only through the package's public functions:
  :func:`historical_bundles` (``historical_bundle`` of a capture's bodies),
  :func:`captured_readbacks` and :func:`capture_batches` (the batch a probe of the stub
  serving a capture reads, built in-process without a socket), :func:`assessments`
  (``assess``), and the parsed bodies :func:`metrics_observations`,
  :func:`served_models`, :func:`server_infos`.

Which routes a launch answers, and with what status, is decided in
:func:`_capture_directory`: a route a new release adds (or stops registering) is gated
there with ``_at_least(release, "<the release>")``; its body's format goes in
:mod:`.bodies`.

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TypeVar

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence._adapters.models import ServedModels, parse_models
from vllm_evidence._adapters.server_info import (
    ServerInfo,
    parse_server_info_json,
    parse_server_info_text,
)
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture.batch import CaptureBatch
from vllm_evidence._readback import (
    CapturedReadback,
    HistoricalBundle,
    historical_bundle,
    readback_from_batch,
)
from vllm_evidence.testing._capture import CaptureDirectory, _generated_batch
from vllm_evidence.testing._strategies._common import _at_least, _release, _servers
from vllm_evidence.testing._strategies.bodies import (
    _HEALTH_BODY,
    _NOT_FOUND,
    _health_statuses,
    _metrics_body,
    _models_body,
    _server_info_json,
    _server_info_text,
    _world_size_body,
    metrics_bodies,
    models_bodies,
    server_info_jsons,
    server_info_texts,
    version_bodies,
)
from vllm_evidence.testing._strategies.logs import read_startup_logs, startup_logs
from vllm_evidence.upstream._routes import Route

T = TypeVar("T")

__all__ = [
    "CaptureDirectory",
    "assessments",
    "capture_batches",
    "capture_directories",
    "captured_readbacks",
    "historical_bundles",
    "metrics_observations",
    "served_models",
    "server_infos",
]

# --------------------------------------------------------------------------------------
# Capture directories


@st.composite
def _capture_directory(
    draw: st.DrawFn,
    release: str,
    *,
    development_mode: bool | None,
    startup_log: bool | None,
) -> CaptureDirectory:
    dev = draw(st.booleans()) if development_mode is None else development_mode
    server = draw(_servers())
    p = server.parallel
    engines = p.dp if _at_least(release, "0.10.2") else 1
    bodies: dict[Route, bytes] = {
        Route.VERSION: draw(version_bodies(release=release)),
        Route.MODELS: draw(_models_body(1, 1, 0, 2, server)),
        Route.METRICS: draw(_metrics_body(release, engines, engines, process_start_time=True)),
        Route.HEALTH: _HEALTH_BODY,
    }
    statuses: dict[Route, int] = {Route.HEALTH: draw(_health_statuses)}
    has_text = _at_least(release, "0.8.5")
    has_json = _at_least(release, "0.11.0")
    if dev and has_text:
        bodies[Route.SERVER_INFO] = draw(_server_info_text(release, server))
        if _at_least(release, "0.20.0"):  # /get_world_size exists from 0.20 (dev mode)
            bodies[Route.GET_WORLD_SIZE] = _world_size_body(p)
        else:
            bodies[Route.GET_WORLD_SIZE] = _NOT_FOUND
            statuses[Route.GET_WORLD_SIZE] = 404
    else:
        for route in (Route.SERVER_INFO, Route.GET_WORLD_SIZE):
            bodies[route] = _NOT_FOUND
            statuses[route] = 404
    if dev and has_json:
        bodies[Route.SERVER_INFO_JSON] = draw(_server_info_json(release, server))
    else:
        bodies[Route.SERVER_INFO_JSON] = _NOT_FOUND
        statuses[Route.SERVER_INFO_JSON] = 404
    with_log = draw(st.booleans()) if startup_log is None else startup_log
    log = draw(startup_logs(release=release, max_launches=2)) if with_log else None
    return CaptureDirectory(
        bodies=MappingProxyType(bodies), statuses=MappingProxyType(statuses), startup_log=log
    )


def capture_directories(
    *,
    release: str | None = None,
    development_mode: bool | None = None,
    startup_log: bool | None = None,
) -> SearchStrategy[CaptureDirectory]:
    """One server's front door (every probe route) and optionally its startup log.

    All bodies are in ``release``'s formats and describe one launch: ``/v1/models``
    (served names, ``root``, ``max_model_len``), both ``/server_info`` forms,
    ``/get_world_size`` (TP×PP×PCP×DP) and the ``vllm:cache_config_info`` engines (one
    per DP engine from 0.10.2) agree.  The startup log is drawn on its own (same
    release, its own launch).  Without development mode (or before the route existed)
    ``/server_info`` and ``/get_world_size`` answer 404, as vLLM does; ``/health``
    answers 200 or 503 (an empty body).  ``None`` draws a flag.
    """
    return _release(release).flatmap(
        lambda r: _capture_directory(r, development_mode=development_mode, startup_log=startup_log)
    )


def historical_bundles(
    *, directories: SearchStrategy[CaptureDirectory] | None = None
) -> SearchStrategy[HistoricalBundle]:
    """:class:`HistoricalBundle` values made by ``historical_bundle`` from capture bodies."""
    source = capture_directories() if directories is None else directories
    return source.map(lambda c: historical_bundle(c.bodies, statuses=c.statuses))


def captured_readbacks(
    *, directories: SearchStrategy[CaptureDirectory] | None = None
) -> SearchStrategy[CapturedReadback]:
    """:class:`CapturedReadback` values: what a probe (development routes included) of
    the stub front door serving each capture directory reads.

    The batch is built in-process through the probe's own sealed path minus the
    transport (no socket, no thread; :mod:`vllm_evidence._capture.generated`), so a draw
    costs what its bodies cost to draw and parse; a test that needs a real socket serves
    the directory with the ``vllm_front_door`` fixture or ``serve_capture``.
    """
    source = capture_directories() if directories is None else directories
    return source.map(lambda c: readback_from_batch(_generated_batch(c)))


def capture_batches(
    *, directories: SearchStrategy[CaptureDirectory] | None = None
) -> SearchStrategy[CaptureBatch]:
    """The :class:`CaptureBatch` of :func:`captured_readbacks` (built without a socket)."""
    source = capture_directories() if directories is None else directories
    return source.map(_generated_batch)


def assessments(
    *,
    front_doors: SearchStrategy[CapturedReadback | HistoricalBundle | None] | None = None,
    startup_logs: SearchStrategy[StartupLog | None] | None = None,
) -> SearchStrategy[Assessment]:
    """:class:`Assessment` values made by ``assess`` from a front door and/or a log.

    Defaults: a historical bundle or none, and a read startup log or none.
    """
    doors = st.none() | historical_bundles() if front_doors is None else front_doors
    logs = st.none() | read_startup_logs() if startup_logs is None else startup_logs
    return st.builds(assess, doors, logs)


# --------------------------------------------------------------------------------------
# Parsed bodies


def _ok(value: T | BodyParseFailure) -> T:
    if isinstance(value, BodyParseFailure):  # pragma: no cover - generated bodies parse
        raise TypeError(value.reason)
    return value


def _metrics(body: bytes) -> MetricsObservation:
    return _ok(parse_metrics(body))


def _models(body: bytes) -> ServedModels:
    return _ok(parse_models(body))


def _info_text(body: bytes) -> ServerInfo:
    return _ok(parse_server_info_text(body))


def _info_json(body: bytes) -> ServerInfo:
    return _ok(parse_server_info_json(body))


def metrics_observations(
    *, bodies: SearchStrategy[bytes] | None = None
) -> SearchStrategy[MetricsObservation]:
    """Parsed ``/metrics`` observations (``parse_metrics`` of :func:`metrics_bodies`)."""
    return (metrics_bodies() if bodies is None else bodies).map(_metrics)


def served_models(*, bodies: SearchStrategy[bytes] | None = None) -> SearchStrategy[ServedModels]:
    """Parsed ``/v1/models`` answers (``parse_models`` of :func:`models_bodies`)."""
    return (models_bodies() if bodies is None else bodies).map(_models)


def server_infos() -> SearchStrategy[ServerInfo]:
    """Parsed ``/server_info`` answers of both forms."""
    return server_info_texts().map(_info_text) | server_info_jsons().map(_info_json)
