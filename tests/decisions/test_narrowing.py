"""``is_established`` / ``is_refused`` / ``is_reported``: each is true for its arm only.

The oracle is the arm's verdict as the assessment's own table gives it
(:func:`vllm_evidence._assessment.verdict`), over the kit's drawn assessments and over
a real recorded one whose arms are known (vLLM 0.32.0 ``tp1-devmode``, front door only:
capacity established, parallel and served identity refused).  What is no decision is a
``TypeError``, never a quiet ``False``.  The typing side (both branches narrowed) is
``tests/typing/narrowing.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests._paths import REAL
from vllm_evidence import Assessment, assess, readback_from_batch
from vllm_evidence._assessment import claim_decisions, verdict
from vllm_evidence._capture.http import probe_sync
from vllm_evidence.decisions import (
    CapacityEstablished,
    ParallelRefused,
    ServedIdentityRefused,
    is_established,
    is_refused,
    is_reported,
)
from vllm_evidence.testing._strategies import assessments, servers
from vllm_evidence.testing._stub import serve_capture


def _arms(assessment: Assessment) -> None:
    for claim, decision in claim_decisions(assessment).items():
        arm = verdict(decision)
        d: Any = decision
        assert is_established(d) is (arm == "established"), (claim, decision)
        assert is_refused(d) is (arm == "refused"), (claim, decision)
        if claim == "capacity":
            assert is_reported(d) is (arm == "reported"), decision


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(assessments())
def test_each_predicate_is_its_arm_on_drawn_assessments(assessment: Assessment) -> None:
    _arms(assessment)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(servers())
def test_each_predicate_is_its_arm_on_drawn_servers(server: Any) -> None:
    _arms(server.assess())


def test_a_real_server_narrows_both_ways() -> None:
    with serve_capture(REAL) as door:
        assessment = assess(readback_from_batch(probe_sync(door.url)))
    capacity, parallel = assessment.capacity, assessment.parallel
    identity = assessment.served_identity
    assert type(capacity) is CapacityEstablished
    assert type(parallel) is ParallelRefused
    assert type(identity) is ServedIdentityRefused
    # Called through an untyped name: each call is a question, not a narrowing for mypy.
    ask: Any = {"established": is_established, "refused": is_refused, "reported": is_reported}
    assert [ask[arm](capacity) for arm in ask] == [True, False, False]
    assert [ask[arm](parallel) for arm in ("established", "refused")] == [False, True]
    assert [ask[arm](identity) for arm in ("established", "refused")] == [False, True]
    _arms(assessment)


@pytest.mark.parametrize("value", [None, "established", 1, object(), True])
@pytest.mark.parametrize("predicate", [is_established, is_refused, is_reported])
def test_what_is_no_decision_is_a_type_error(predicate: Any, value: object) -> None:
    with pytest.raises(TypeError, match=r"\(\) takes a decision \(an assessment's field\), got "):
        predicate(value)
