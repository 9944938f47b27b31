"""Which source a decision may read: a dead or restarted front door, and a log.

* With a front door every decision is about the serving process.  A front door that
  was not reached, answered only errors, or restarted during the batch establishes no
  claim, whatever a log says.
* A log reaches a claim about the serving process only when ``log_join`` is established
  (a launch receipt whose start time the front door carries); otherwise a decision that
  would use a log fact refuses ``log_not_joined`` — for a log of another build as for an
  identical one.  A log alone establishes claims about its launch.
"""

from __future__ import annotations

from tests._evidence import (
    HEALTHY,
    assess_joined,
    bundle,
    probe_stub,
    real_log,
    version_body,
)
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
    LogJoinReason,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityRefused,
    Subject,
)


def test_a_log_of_another_version_refuses_every_log_fact() -> None:
    other = bundle(version_body("0.33.0"), HEALTHY)
    assessment = assess_joined(other, real_log())
    assert assessment.log_join.reason is LogJoinReason.VERSION_CONTRADICTED
    for decision in (
        assessment.parallel,
        assessment.capacity,
        assessment.served_identity,
        assessment.health_coverage,
    ):
        assert decision.reason.value == "log_not_joined", decision
        assert decision.subject is Subject.SERVING
    assert "0.32.0" in assessment.capacity.detail
    assert "0.33.0" in assessment.capacity.detail


def test_a_log_of_the_same_version_is_read_only_when_joined() -> None:
    same = bundle(version_body("0.32.0"), HEALTHY)
    unjoined = assess(same, real_log())
    assert unjoined.log_join.reason is LogJoinReason.MARKER_UNOBSERVED  # caller's bodies
    assert isinstance(unjoined.parallel, ParallelRefused)
    assert unjoined.parallel.reason is ParallelReason.LOG_NOT_JOINED
    assessment = assess_joined(same, real_log())
    assert isinstance(assessment.parallel, ParallelEstablished)
    assert isinstance(assessment.capacity, CapacityEstablished)
    assert isinstance(assessment.health_coverage, HealthCoverageEstablished)
    assert assessment.parallel.subject is Subject.SERVING


def test_a_log_alone_speaks_for_its_launch() -> None:
    assessment = assess(None, real_log())
    assert isinstance(assessment.parallel, ParallelEstablished)
    assert assessment.parallel.subject is Subject.LAUNCH
    assert assessment.log_join.reason is LogJoinReason.NO_FRONT_DOOR


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


def test_a_restart_refuses_log_facts_too() -> None:
    """A restarted front door has no one process a log could describe."""
    assessment = assess(probe_stub(REAL, restart_after_metrics_reads=1), real_log())
    assert isinstance(assessment.parallel, ParallelRefused)
    assert assessment.parallel.reason is ParallelReason.FRONT_DOOR_RESTARTED
    assert assessment.log_join.reason in {
        LogJoinReason.FRONT_DOOR_RESTARTED,
        LogJoinReason.PORT_CONTRADICTED,
    }
