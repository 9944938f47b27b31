"""The downstream test kit: hypothesis strategies, the stub front door, a pytest plugin.

Exercise orchestration code against vLLM evidence without a GPU or a server::

    from hypothesis import given
    from vllm_evidence import assess, probe_sync, readback_from_batch
    from vllm_evidence.testing import CaptureDirectory, Fault, capture_directories
    from vllm_evidence.upstream import Route

    @given(capture_directories(release="0.33.0"))
    def test_router_never_admits_an_unjoined_server(capture: CaptureDirectory) -> None:
        ...

    def test_router_on_a_dead_engine(vllm_front_door, tmp_path) -> None:
        door = vllm_front_door(faults={Route.HEALTH: Fault(status=503)})
        assessment = assess(readback_from_batch(probe_sync(door.url)))
        assert not my_router_admits(assessment)
        assert forbidden_requests(door.requests) == []   # only GETs to front-door routes

* **Servers for policy tests**: :func:`servers` (a front door's batch with its own
  launch's log and receipt; knobs for release, TP, PP, DP, missing ranks, backend, a
  restart), :func:`mixed_builds` (a front door with another launch's log and receipt)
  and :func:`launches` (one launch's log with the same knobs); no socket is opened.
* **Strategies**: wire bodies per vLLM release
  (:func:`metrics_bodies`, :func:`models_bodies`, :func:`version_bodies`,
  :func:`server_info_texts`, :func:`server_info_jsons`, :func:`startup_logs` and
  :func:`startup_log_examples` with the figures they print), whole servers
  (:func:`capture_directories`), and the sealed types built only through the public
  functions (:func:`historical_bundles`, :func:`captured_readbacks`,
  :func:`capture_batches`, :func:`read_startup_logs`, :func:`assessments`, …).  With the
  package installed, ``st.from_type(Assessment)`` (and ``StartupLog``,
  ``HistoricalBundle``, ``CapturedReadback``, ``CaptureBatch``, ``MetricsObservation``,
  ``ServedModels``, ``ServerInfo``) works: the strategies are registered through
  hypothesis's ``hypothesis`` entry point.
* **Stub front door**: :func:`serve_capture` serves a capture directory on 127.0.0.1 (a
  free port) with per-route :class:`Fault` s (status, delay, trickle, oversize, truncated,
  garbage, reset, redirect) and restarts (:meth:`StubFrontDoor.restart`); it records
  every request (:attr:`StubFrontDoor.requests`, :func:`observe_requests`), and
  :func:`forbidden_requests` names any that was not a GET to a front-door route.
Importing this package or :mod:`vllm_evidence.testing._stub` needs only the package's
own dependencies; the strategies need hypothesis (the ``test`` extra).

* **Recorded real servers** that ship with the package: :func:`real_scenarios` lists
  them (``"vllm-0.32.0-cpu/tp2-devmode"``, …), :func:`real_scenario` opens one
  (:class:`RealScenario`: capture directory, startup log, launch receipt).
* **pytest plugin** (loaded through the ``pytest11`` entry point): the
  ``vllm_front_door`` fixture is a factory, ``vllm_front_door(directory=None, *,
  faults=…, api_key=…, restart_after_metrics_reads=…, metrics_sequence=…)``, that starts
  a stub for the test (by default replaying a recorded vLLM 0.32.0 server; a
  :class:`CaptureDirectory` is written to the test's temporary directory) and stops it
  after the test; ``vllm_front_door.replay(name)`` replays a recorded real server with
  its ``startup_log`` and ``receipt`` (:class:`ReplayedFrontDoor`).  See
  ``docs/testing.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_evidence import _lazy

if TYPE_CHECKING:
    from vllm_evidence.testing._capture import (
        CaptureDirectory,
    )
    from vllm_evidence.testing._scenarios import (
        RealScenario,
        ReplayedFrontDoor,
        real_scenario,
        real_scenarios,
    )
    from vllm_evidence.testing._strategies import (
        CACHE_CONFIG_LABELS,
        RELEASES,
        GeneratedCapacity,
        GeneratedLaunch,
        GeneratedLog,
        GeneratedServer,
        WitnessedLaunch,
        assessments,
        capture_batches,
        capture_directories,
        captured_readbacks,
        historical_bundles,
        launcher_verification_key,
        launches,
        metrics_bodies,
        metrics_observations,
        mixed_builds,
        models_bodies,
        read_startup_logs,
        served_models,
        server_info_jsons,
        server_info_texts,
        server_infos,
        servers,
        startup_log_examples,
        startup_logs,
        version_bodies,
        witnessed_launches,
    )
    from vllm_evidence.testing._stub import (
        ALLOWED_TARGETS,
        GARBAGE_BODY,
        Fault,
        FrontDoorFactory,
        StubFrontDoor,
        StubRequest,
        forbidden_requests,
        observe_requests,
        serve_capture,
    )

__all__ = [
    "ALLOWED_TARGETS",
    "CACHE_CONFIG_LABELS",
    "GARBAGE_BODY",
    "RELEASES",
    "CaptureDirectory",
    "Fault",
    "FrontDoorFactory",
    "GeneratedCapacity",
    "GeneratedLaunch",
    "GeneratedLog",
    "GeneratedServer",
    "RealScenario",
    "ReplayedFrontDoor",
    "StubFrontDoor",
    "StubRequest",
    "WitnessedLaunch",
    "assessments",
    "capture_batches",
    "capture_directories",
    "captured_readbacks",
    "forbidden_requests",
    "historical_bundles",
    "launcher_verification_key",
    "launches",
    "metrics_bodies",
    "metrics_observations",
    "mixed_builds",
    "models_bodies",
    "observe_requests",
    "read_startup_logs",
    "real_scenario",
    "real_scenarios",
    "serve_capture",
    "served_models",
    "server_info_jsons",
    "server_info_texts",
    "server_infos",
    "servers",
    "startup_log_examples",
    "startup_logs",
    "version_bodies",
    "witnessed_launches",
]

# Imported on first use: the stub (used by ``vllm-evidence demo`` and the pytest plugin)
# must not need hypothesis, which only the strategies import.
_LAZY: dict[str, str] = {
    "WitnessedLaunch": "vllm_evidence.testing._strategies",
    "launcher_verification_key": "vllm_evidence.testing._strategies",
    "witnessed_launches": "vllm_evidence.testing._strategies",
    "ALLOWED_TARGETS": "vllm_evidence.testing._stub",
    "CACHE_CONFIG_LABELS": "vllm_evidence.testing._strategies",
    "GARBAGE_BODY": "vllm_evidence.testing._stub",
    "RELEASES": "vllm_evidence.testing._strategies",
    "RealScenario": "vllm_evidence.testing._scenarios",
    "ReplayedFrontDoor": "vllm_evidence.testing._scenarios",
    "CaptureDirectory": "vllm_evidence.testing._capture",
    "Fault": "vllm_evidence.testing._stub",
    "FrontDoorFactory": "vllm_evidence.testing._stub",
    "GeneratedCapacity": "vllm_evidence.testing._strategies",
    "GeneratedLaunch": "vllm_evidence.testing._strategies",
    "GeneratedLog": "vllm_evidence.testing._strategies",
    "GeneratedServer": "vllm_evidence.testing._strategies",
    "StubFrontDoor": "vllm_evidence.testing._stub",
    "StubRequest": "vllm_evidence.testing._stub",
    "assessments": "vllm_evidence.testing._strategies",
    "capture_batches": "vllm_evidence.testing._strategies",
    "capture_directories": "vllm_evidence.testing._strategies",
    "captured_readbacks": "vllm_evidence.testing._strategies",
    "forbidden_requests": "vllm_evidence.testing._stub",
    "historical_bundles": "vllm_evidence.testing._strategies",
    "launches": "vllm_evidence.testing._strategies",
    "metrics_bodies": "vllm_evidence.testing._strategies",
    "metrics_observations": "vllm_evidence.testing._strategies",
    "mixed_builds": "vllm_evidence.testing._strategies",
    "models_bodies": "vllm_evidence.testing._strategies",
    "observe_requests": "vllm_evidence.testing._stub",
    "read_startup_logs": "vllm_evidence.testing._strategies",
    "real_scenario": "vllm_evidence.testing._scenarios",
    "real_scenarios": "vllm_evidence.testing._scenarios",
    "serve_capture": "vllm_evidence.testing._stub",
    "served_models": "vllm_evidence.testing._strategies",
    "server_info_jsons": "vllm_evidence.testing._strategies",
    "server_info_texts": "vllm_evidence.testing._strategies",
    "server_infos": "vllm_evidence.testing._strategies",
    "servers": "vllm_evidence.testing._strategies",
    "startup_log_examples": "vllm_evidence.testing._strategies",
    "startup_logs": "vllm_evidence.testing._strategies",
    "version_bodies": "vllm_evidence.testing._strategies",
}

if not TYPE_CHECKING:  # to a type checker a name is what the imports above say, no more
    __getattr__, __dir__ = _lazy.lazy_attributes(__name__, _LAZY, __all__)
