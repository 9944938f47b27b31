"""Hypothesis strategies for vLLM front-door bodies, startup logs, and the sealed types.

Wire formats come back as ``bytes`` (what a server sends or a log file holds); the
sealed evidence types come back built only through this package's public functions
(:func:`~vllm_evidence._readback.historical_bundle`,
:func:`~vllm_evidence._adapters.startup_log.read_startup_log`,
:func:`~vllm_evidence._assessment.assess`, and the stub front door with
:func:`~vllm_evidence._capture.http.probe_sync`).  Formats follow what each vLLM release
prints (label sets of ``vllm:cache_config_info``, log prefixes and capacity lines).

Every public name is importable from here; they live in:

* :mod:`.bodies`: route bodies (``/metrics``, ``/v1/models``, ``/version``,
  ``/server_info`` text and JSON, and what a capture puts beside them);
* :mod:`.logs`: startup logs of each release, with the figures they printed;
* :mod:`.captures`: whole captures drawn as one consistent launch, and the sealed
  types built from them (bundles, readbacks, batches, assessments, parsed bodies);
* :mod:`.launches`: one launch's log with knobs (:func:`launches`: release, TP, PP, DP,
  missing ranks, executor backend, zero capacity; left open, each is drawn as a real
  deployment mostly has it), and witnessed launches — a log, its process's front door
  and the launch receipt that joins them;
* :mod:`.servers`: whole servers for admission-policy tests — :func:`servers` (a front
  door's batch with its own log and receipt, one launch) and :func:`mixed_builds` (a
  front door with another launch's log and receipt), built without sockets;
* :mod:`._common`: :data:`RELEASES`, :data:`CACHE_CONFIG_LABELS`,
  :data:`GROUP_AWARE_RELEASES`, and what the others share.

A new vLLM release starts in :mod:`._common` (:data:`RELEASES`); each module's
docstring says where that release's formats go.

This package imports hypothesis but never pytest.
"""

from __future__ import annotations

from vllm_evidence.testing._strategies._common import (
    CACHE_CONFIG_LABELS,
    GROUP_AWARE_RELEASES,
    RELEASES,
)
from vllm_evidence.testing._strategies.bodies import (
    metrics_bodies,
    models_bodies,
    server_info_jsons,
    server_info_texts,
    version_bodies,
)
from vllm_evidence.testing._strategies.captures import (
    CaptureDirectory,
    assessments,
    capture_batches,
    capture_directories,
    captured_readbacks,
    historical_bundles,
    metrics_observations,
    served_models,
    server_infos,
)
from vllm_evidence.testing._strategies.launches import (
    BACKENDS,
    UNPRINTED,
    WitnessedLaunch,
    launcher_verification_key,
    launches,
    witnessed_launches,
)
from vllm_evidence.testing._strategies.logs import (
    GeneratedCapacity,
    GeneratedLaunch,
    GeneratedLog,
    read_startup_logs,
    startup_log_examples,
    startup_logs,
)
from vllm_evidence.testing._strategies.servers import GeneratedServer, mixed_builds, servers

__all__ = [
    "BACKENDS",
    "CACHE_CONFIG_LABELS",
    "GROUP_AWARE_RELEASES",
    "RELEASES",
    "UNPRINTED",
    "CaptureDirectory",
    "GeneratedCapacity",
    "GeneratedLaunch",
    "GeneratedLog",
    "GeneratedServer",
    "WitnessedLaunch",
    "assessments",
    "capture_batches",
    "capture_directories",
    "captured_readbacks",
    "historical_bundles",
    "launcher_verification_key",
    "launches",
    "metrics_bodies",
    "metrics_observations",
    "mixed_builds",
    "models_bodies",
    "read_startup_logs",
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
