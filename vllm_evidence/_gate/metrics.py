"""The gate's verdicts as Prometheus metrics, through ``prometheus_client``.

:class:`GateCollector` is a custom collector over a :class:`~vllm_evidence._gate.Gate`'s
latest snapshot, registered on a registry of its own (:func:`gate_registry`), never on
``prometheus_client``'s global one: what ``/metrics`` serves is exactly these series.
vLLM's own metrics are not re-exported (Prometheus scrapes vLLM itself).

Series (names after Prometheus' conventions: the ``vllm_evidence_`` prefix, base units,
``_total`` on counters, ``_info`` on the info series):

=============================================  =====  ==============================
``vllm_evidence_claim_established``            gauge  ``target``, ``claim``: 1 when
                                                      established for the serving
                                                      process this round, else 0
``vllm_evidence_claim_info``                   info   ``target``, ``claim``,
                                                      ``verdict``, ``reason``, ``by``
``vllm_evidence_claim_required``               gauge  ``target``, ``claim``: 1, for the
                                                      required claims only
``vllm_evidence_ready``                        gauge  ``target``: 1 when every required
                                                      claim is established
``vllm_evidence_restarts_seen_total``          count  ``target``
``vllm_evidence_probe_failures_total``         count  ``target``
``vllm_evidence_kv_cache_capacity_tokens``     gauge  ``target``, ``engine`` (only while
                                                      capacity is established)
``vllm_evidence_target_info``                  info   ``target`` and its labels
``vllm_evidence_rounds_total``                 count
``vllm_evidence_last_round_duration_seconds``  gauge
``vllm_evidence_last_round_timestamp_seconds`` gauge
=============================================  =====  ==============================

Cardinality is bounded by construction: per target, two series per claim plus the
required ones, four per-target series, one per DP engine (at most
:data:`~vllm_evidence._gate.snapshot.MAX_ENGINES`); over time, the info series' label
values range over the closed verdict, reason (:data:`CLOSED_REASONS`) and source sets
(:func:`series_bound` says how many series a snapshot can have).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from vllm_evidence._claims import GATE_CLAIMS
from vllm_evidence._gate.snapshot import MAX_ENGINES, Gate, GateSnapshot

__all__ = [
    "CONTENT_TYPE",
    "PREFIX",
    "GateCollector",
    "exposition",
    "gate_registry",
    "series_bound",
    "snapshot_metrics",
]

#: The prefix of every series the gate exports.
PREFIX = "vllm_evidence"
#: The exposition's content type (Prometheus' text format).
CONTENT_TYPE = CONTENT_TYPE_LATEST

#: Series per target: established, info and required per claim; ready, restarts,
#: probe failures, target info.
_PER_TARGET = 3 * len(GATE_CLAIMS) + 4
#: The labels of ``vllm_evidence_claim_info`` beside ``target`` and ``claim``.
_INFO = ("verdict", "reason", "by")
#: Series of the gate itself: rounds, last round duration and timestamp.
_GLOBAL = 3


def series_bound(targets: int) -> int:
    """The most series a snapshot of ``targets`` targets exports."""
    return targets * (_PER_TARGET + MAX_ENGINES) + _GLOBAL


class GateCollector(Collector):
    """The series of a gate's latest snapshot (see the module), read at each scrape."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def describe(self) -> list[Metric]:
        """Nothing described up front: each scrape reads the snapshot of that moment."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The series of the snapshot current at this call."""
        yield from snapshot_metrics(self._gate.snapshot)


def snapshot_metrics(snapshot: GateSnapshot) -> list[Metric]:
    """Every metric family of one snapshot."""
    established = GaugeMetricFamily(
        f"{PREFIX}_claim_established",
        "1 when the claim is established for the serving process this round, else 0.",
        labels=["target", "claim"],
    )
    info = InfoMetricFamily(
        f"{PREFIX}_claim",
        "The claim's verdict and reason this round, and what they come from.",
        labels=["target", "claim"],
    )
    required = GaugeMetricFamily(
        f"{PREFIX}_claim_required",
        "1 for each claim the gate requires (present for required claims only).",
        labels=["target", "claim"],
    )
    ready = GaugeMetricFamily(
        f"{PREFIX}_ready",
        "1 when every required claim is established for the serving process, else 0.",
        labels=["target"],
    )
    restarts = CounterMetricFamily(
        f"{PREFIX}_restarts_seen",
        "Restarts seen: a new process_start_time_seconds on the target's /metrics.",
        labels=["target"],
    )
    failures = CounterMetricFamily(
        f"{PREFIX}_probe_failures",
        "Rounds in which the target's front door answered nothing, or only errors.",
        labels=["target"],
    )
    capacity = GaugeMetricFamily(
        f"{PREFIX}_kv_cache_capacity_tokens",
        "Established KV-cache capacity per DP engine, in tokens.",
        labels=["target", "engine"],
    )
    targets = InfoMetricFamily(
        f"{PREFIX}_target",
        "A target of the gate, with the labels it carries.",
        labels=["target"],
    )
    for state in snapshot.targets:
        for claim in state.claims:
            established.add_metric([state.target, claim.claim], 1.0 if claim.established else 0.0)
            values = (claim.verdict, claim.reason, claim.by.value)
            info.add_metric([state.target, claim.claim], dict(zip(_INFO, values, strict=True)))
            if claim.required:
                required.add_metric([state.target, claim.claim], 1.0)
        ready.add_metric([state.target], 1.0 if state.ready else 0.0)
        restarts.add_metric([state.target], float(state.restarts_seen))
        failures.add_metric([state.target], float(state.probe_failures))
        for engine in state.capacity:
            capacity.add_metric([state.target, engine.engine], float(engine.tokens))
        targets.add_metric([state.target], dict(state.labels))
    rounds = CounterMetricFamily(f"{PREFIX}_rounds", "Rounds the gate has completed.")
    rounds.add_metric([], float(snapshot.rounds))
    families: list[Metric] = [
        established,
        info,
        required,
        ready,
        restarts,
        failures,
        capacity,
        targets,
        rounds,
    ]
    if snapshot.last_round_duration_s is not None:
        duration = GaugeMetricFamily(
            f"{PREFIX}_last_round_duration_seconds", "How long the latest round took."
        )
        duration.add_metric([], snapshot.last_round_duration_s)
        families.append(duration)
    if snapshot.last_round_end is not None:
        end = GaugeMetricFamily(
            f"{PREFIX}_last_round_timestamp_seconds",
            "When the latest round ended (seconds since the epoch).",
        )
        end.add_metric([], snapshot.last_round_end.timestamp())
        families.append(end)
    return families


def gate_registry(gate: Gate) -> CollectorRegistry:
    """A registry of its own holding only the gate's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GateCollector(gate))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus' text format (:data:`CONTENT_TYPE`)."""
    return generate_latest(registry)
