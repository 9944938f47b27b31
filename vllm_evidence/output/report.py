"""The text report of one assessment, and the fleet table's row, from typed objects.

The report says, for each decision, its verdict and reason, why (the decision's
``detail``), what would move it (``remedy``), and the first law it used with the
releases that law was read for; then where the evidence came from.  The JSON document
(:mod:`vllm_evidence.output.assessment`) and this report read the same typed
decisions; neither is derived from the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from vllm_evidence.assessment import Assessment
from vllm_evidence.decisions import (
    CapacityDecision,
    CapacityRefused,
    FrontDoorJoinDecision,
    HealthCoverageDecision,
    HealthCoverageEstablished,
    ParallelDecision,
    ServedIdentityDecision,
)
from vllm_evidence.output.assessment import verdict
from vllm_evidence.output.front_door import route_outcomes
from vllm_evidence.readback import CapturedReadback
from vllm_evidence.upstream.laws import Law, LawNotEstablished

__all__ = ["FleetRow", "ReportRow", "fleet_row", "render_report", "report_rows", "title"]

Decision = (
    ParallelDecision
    | CapacityDecision
    | ServedIdentityDecision
    | HealthCoverageDecision
    | FrontDoorJoinDecision
)

#: Each claim's title in the report, in report order.
TITLES: tuple[tuple[str, str], ...] = (
    ("parallel", "parallel realization"),
    ("capacity", "KV-cache capacity"),
    ("served_identity", "served identity"),
    ("health_coverage", "/health coverage"),
    ("front_door_join", "front-door join"),
)


@attrs.frozen
class ReportRow:
    """One decision's line in the report."""

    title: str
    verdict: str
    """``established``, ``reported`` or ``refused``."""
    reason: str
    why: tuple[str, ...]
    """The detail, then ``→ to move it: …`` and ``law …`` lines where they apply."""


def _decisions(assessment: Assessment) -> dict[str, Decision]:
    return {
        "parallel": assessment.parallel,
        "capacity": assessment.capacity,
        "served_identity": assessment.served_identity,
        "health_coverage": assessment.health_coverage,
        "front_door_join": assessment.front_door_join,
    }


def _remedy(decision: Decision) -> str | None:
    remedy = getattr(decision, "remedy", None)
    return remedy if isinstance(remedy, str) else None


def _first_law(decision: Decision) -> Law | LawNotEstablished | None:
    laws = getattr(decision, "laws", None)
    if isinstance(laws, Sequence):
        return laws[0] if laws else None
    law = getattr(decision, "law", None)
    return law if isinstance(law, Law | LawNotEstablished) else None


def _law_line(law: Law | LawNotEstablished) -> str:
    if isinstance(law, LawNotEstablished):
        scope = "not established for this release"
    else:
        scope = f"{law.span.first} .. {law.span.last}"
    return f"law {law.question.key} (read for {scope})"


def report_rows(assessment: Assessment) -> list[ReportRow]:
    """The five decisions, in report order."""
    decisions = _decisions(assessment)
    rows = []
    for key, name in TITLES:
        decision = decisions[key]
        why = [decision.detail]
        remedy = _remedy(decision)
        if remedy and remedy != "none":
            why.append(f"→ to move it: {remedy}")
        law = _first_law(decision)
        if law is not None:
            why.append(_law_line(law))
        rows.append(ReportRow(name, verdict(decision), decision.reason.value, tuple(why)))
    return rows


def title(assessment: Assessment, target: str | None) -> str:
    """``<target>: vLLM <version>``."""
    version = assessment.version
    head = f"vLLM {version if version is not None else '(version unobserved)'}"
    return f"{target}: {head}" if target else head


def observation_lines(assessment: Assessment) -> list[str]:
    """Where the evidence came from: the batch's requests, each route's arm, the log."""
    lines: list[str] = []
    evidence = assessment.evidence
    front = evidence.front_door
    if front is not None:
        if isinstance(front, CapturedReadback):
            batch = front.batch
            lines.append(f"front door {batch.target} (batch {batch.batch_id[:12]})")
            for e in batch.all_exchanges():
                digest = (e.body_sha256 or "-")[:12]
                elapsed = (e.ended_monotonic_ns - e.started_monotonic_ns) // 1_000_000
                lines.append(
                    f"  {e.route.stem:<33} {e.role.value:<13} status {e.status!s:<5} "
                    f"{elapsed:>5} ms  sha256 {digest}  at {e.started_at.isoformat()}"
                )
        else:
            lines.append("front door: bodies supplied by a caller (no bracketed batch)")
        for stem, arm in route_outcomes(front).items():
            extra = ", ".join(f"{k}={v}" for k, v in arm.items() if k not in ("outcome", "route"))
            lines.append(f"  {stem:<33} {arm['outcome']}" + (f" ({extra})" if extra else ""))
    log = assessment.startup_log
    if log is not None:
        assessed = None if evidence.launch is None else evidence.launch.index
        lines.append(
            f"startup log {log.source or '(stream)'}: {len(log.launches)} launch(es), "
            f"sha256 {log.sha256[:12]}, assessed launch {assessed}"
        )
    return lines


def render_report(assessment: Assessment, *, target: str | None = None) -> str:
    """The plain-text report (what ``vllm-evidence probe`` prints without a terminal)."""
    out = [title(assessment, target)]
    for row in report_rows(assessment):
        out.append(f"  {row.title:<22} {row.verdict.upper():<12} {row.reason}")
        out.extend(f"  {'':<22} {part}" for part in row.why)
    out.append("observations:")
    out.extend(f"  {line}" for line in observation_lines(assessment))
    return "\n".join(out) + "\n"


@attrs.frozen
class FleetRow:
    """One server's row in the fleet table."""

    target: str
    version: str | None
    served_ids: tuple[str, ...]
    parallel: str
    tensor_parallel_size: int | None
    capacity: str
    capacity_tokens: int | None
    join: str
    health_coverage: str


def fleet_row(target: str, assessment: Assessment) -> FleetRow:
    """The fleet table's summary of one assessment."""
    parallel = assessment.parallel
    capacity = assessment.capacity
    health = assessment.health_coverage
    tokens = (
        None
        if isinstance(capacity, CapacityRefused) or not capacity.engines
        else sum(e.tokens.value for e in capacity.engines)
    )
    config = parallel.configuration
    version = assessment.version
    return FleetRow(
        target=target,
        version=None if version is None else str(version),
        served_ids=tuple(n.served_id for n in assessment.served_identity.names),
        parallel=verdict(parallel),
        tensor_parallel_size=None if config is None else config.tensor_parallel_size,
        capacity=verdict(capacity),
        capacity_tokens=tokens,
        join=verdict(assessment.front_door_join),
        health_coverage=health.coverage.value
        if isinstance(health, HealthCoverageEstablished)
        else health.reason.value,
    )
