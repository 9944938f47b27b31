"""The text report of one assessment, and the fleet table's row, from typed objects.

The one-server report (:func:`render_report`, :func:`report_rows`, :func:`title`,
:func:`observation_lines`) lives in :mod:`vllm_evidence.assessment`, below this layer,
because it is also ``str(assessment)``; it is re-exported here with the fleet row.
"""

from __future__ import annotations

import attrs

from vllm_evidence.assessment import (
    REPORT_WIDTH,
    TITLES,
    Assessment,
    ReportRow,
    observation_lines,
    render_report,
    report_lines,
    report_rows,
    subject_line,
    summary_line,
    title,
    verdict,
)
from vllm_evidence.decisions import CapacityRefused, HealthCoverageEstablished

__all__ = [
    "REPORT_WIDTH",
    "TITLES",
    "FleetRow",
    "ReportRow",
    "fleet_row",
    "observation_lines",
    "render_report",
    "report_lines",
    "report_rows",
    "subject_line",
    "summary_line",
    "title",
]


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
