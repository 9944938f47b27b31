"""``is_established`` / ``is_refused`` / ``is_reported`` narrow for mypy, both ways.

``assert_type`` holds in each branch (``TypeIs``: the ``else`` branch is the other arms),
and a refusal's ``reason`` read without narrowing is an error — each ``# type: ignore``
is needed only while mypy sees the union (under ``warn_unused_ignores``, part of
``--strict``, it would become an error if the predicates stopped narrowing).
Type-checked, never imported.
"""

from __future__ import annotations

from typing import assert_type

from vllm_evidence import Assessment
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityRefused,
    CapacityReported,
    JoinedIncarnation,
    JoinUnestablished,
    LogJoined,
    LogJoinRefused,
    ParallelEstablished,
    ParallelRefused,
    ServedIdentityEstablished,
    ServedIdentityRefused,
    is_established,
    is_refused,
    is_reported,
)


def parallel(assessment: Assessment) -> object:
    decision = assessment.parallel
    if is_established(decision):
        assert_type(decision, ParallelEstablished)
        return decision.configuration
    assert_type(decision, ParallelRefused)
    return decision.reason


def capacity(assessment: Assessment) -> object:
    decision = assessment.capacity
    if is_established(decision):
        assert_type(decision, CapacityEstablished)
        return decision.engines
    if is_reported(decision):
        assert_type(decision, CapacityReported)
        return decision
    assert_type(decision, CapacityRefused)
    return decision.reason


def joins(assessment: Assessment) -> tuple[object, object]:
    door, log = assessment.front_door_join, assessment.log_join
    if is_refused(door):
        assert_type(door, JoinUnestablished)
    else:
        assert_type(door, JoinedIncarnation)
    if is_refused(log):
        assert_type(log, LogJoinRefused)
    else:
        assert_type(log, LogJoined)
    return door, log


def identity(assessment: Assessment) -> object:
    decision = assessment.served_identity
    if not is_refused(decision):
        assert_type(decision, ServedIdentityEstablished)
        return decision
    assert_type(decision, ServedIdentityRefused)
    return decision.remedy


def without_narrowing(assessment: Assessment) -> object:
    return assessment.parallel.missing_ranks  # type: ignore[union-attr]


def reported_is_capacitys_only(assessment: Assessment) -> bool:
    return is_reported(assessment.parallel)  # type: ignore[arg-type]
