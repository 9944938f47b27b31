"""Which source a decision may read: a restarted front door, and a log of another build.

* When the bracket shows a restart, ``/version`` may belong to another process than the
  route it would scope: front-door facts are refused as ``front_door_restarted``.
* When the log's launch and ``/version`` name different versions, the log is not this
  server's: a decision that would use a log fact refuses (``sources_conflict``, or
  ``configuration_conflict`` for parallel) instead of establishing from it.
"""

from __future__ import annotations

from tests._evidence import HEALTHY, bundle, probe_stub, real_log, version_body
from tests._paths import REAL
from vllm_evidence import assess
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReason,
    CapacityRefused,
    HealthCoverageEstablished,
    HealthCoverageRefused,
    HealthReason,
    IdentityReason,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityRefused,
)


def test_a_log_of_another_version_refuses_every_log_fact() -> None:
    other = bundle(version_body("0.33.0"), HEALTHY)
    assessment = assess(other, real_log())
    assert isinstance(assessment.parallel, ParallelRefused)
    assert assessment.parallel.reason is ParallelReason.CONFIGURATION_CONFLICT
    assert isinstance(assessment.capacity, CapacityRefused)
    assert assessment.capacity.reason is CapacityReason.SOURCES_CONFLICT
    assert isinstance(assessment.served_identity, ServedIdentityRefused)
    assert assessment.served_identity.reason is IdentityReason.SOURCES_CONFLICT
    assert isinstance(assessment.health_coverage, HealthCoverageRefused)
    assert assessment.health_coverage.reason is HealthReason.SOURCES_CONFLICT
    assert "0.32.0" in assessment.capacity.detail
    assert "0.33.0" in assessment.capacity.detail


def test_a_log_of_the_same_version_is_read() -> None:
    same = bundle(version_body("0.32.0"), HEALTHY)
    assessment = assess(same, real_log())
    assert isinstance(assessment.parallel, ParallelEstablished)
    assert isinstance(assessment.capacity, CapacityEstablished)
    assert isinstance(assessment.health_coverage, HealthCoverageEstablished)


def test_another_build_does_not_stop_front_door_facts() -> None:
    """The conflict disqualifies the log, not the front door's own figures."""
    door = probe_stub(REAL)
    other_log = real_log()
    assert isinstance(assess(door, other_log).capacity, CapacityEstablished)


def test_a_restart_mid_probe_refuses_front_door_facts() -> None:
    door = probe_stub(REAL, restart_after_metrics_reads=1)
    assessment = assess(door)
    assert isinstance(assessment.capacity, CapacityRefused)
    assert assessment.capacity.reason is CapacityReason.FRONT_DOOR_RESTARTED
    assert isinstance(assessment.served_identity, ServedIdentityRefused)
    assert assessment.served_identity.reason is IdentityReason.FRONT_DOOR_RESTARTED
    assert isinstance(assessment.health_coverage, HealthCoverageRefused)
    assert assessment.health_coverage.reason is HealthReason.FRONT_DOOR_RESTARTED
    assert isinstance(assessment.parallel, ParallelRefused)
    assert assessment.parallel.reason is ParallelReason.FRONT_DOOR_RESTARTED


def test_without_a_restart_the_same_front_door_establishes() -> None:
    assessment = assess(probe_stub(REAL))
    assert isinstance(assessment.capacity, CapacityEstablished)
    assert isinstance(assessment.health_coverage, HealthCoverageEstablished)
    assert assessment.health_coverage.health_status == 200


def test_a_restart_does_not_touch_log_facts() -> None:
    assessment = assess(probe_stub(REAL, restart_after_metrics_reads=1), real_log())
    assert isinstance(assessment.parallel, ParallelEstablished)
