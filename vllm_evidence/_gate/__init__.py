"""The gate: one target's (or many targets') claims, served where orchestration reads.

``vllm-evidence launch --serve HOST:PORT --require … -- vllm serve …`` runs vLLM under
the launcher (:mod:`vllm_evidence._gate.launcher`), which each round probes its own child,
reads the log it tees and its own process tree, assesses with the log joined by
construction and the tree among the evidence, and serves (:mod:`vllm_evidence._gate.server`):

* ``/ready`` — 200 when every required claim is established for the serving process this
  round, else 503 with a JSON body naming each refusal (``?target=URL`` picks one target
  of several);
* ``/live`` — 200 while the rounds run (and, under the launcher, its child does);
* ``/metrics`` — the verdicts as Prometheus series (:mod:`vllm_evidence._gate.metrics`);
* ``/assessment`` — the assessment document, as ``probe --json`` prints it.

What is served is a sealed :class:`GateSnapshot` (:mod:`vllm_evidence._gate.snapshot`),
minted only by :meth:`Gate.record` from the rounds' assessments.
"""

from __future__ import annotations

from vllm_evidence._gate.loop import GateLoop, parse_interval
from vllm_evidence._gate.snapshot import (
    CLOSED_REASONS,
    ClaimSource,
    ClaimState,
    EngineTokens,
    Gate,
    GateReason,
    GateSnapshot,
    GateTarget,
    TargetRound,
    TargetState,
)

__all__ = [
    "CLOSED_REASONS",
    "ClaimSource",
    "ClaimState",
    "EngineTokens",
    "Gate",
    "GateLoop",
    "GateReason",
    "GateSnapshot",
    "GateTarget",
    "TargetRound",
    "TargetState",
    "parse_interval",
]
