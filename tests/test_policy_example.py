"""The typed policy example decides both ways on the real capture."""

from __future__ import annotations

from examples.policy import Admit, Hold, admit
from tests._evidence import (
    banner,
    engine_init,
    log,
    probe_stub,
    rank_line,
    real_log,
    two_line_capacity,
)
from vllm_evidence.assessment import assess


def test_admits_the_tp1_capture_with_its_log_at_a_low_floor() -> None:
    assert admit(assess(probe_stub(), real_log()), floor_tokens=1024) == Admit(4194304)
    assert admit(assess(probe_stub(), real_log()), floor_tokens=4194304) == Admit(4194304)


def test_holds_the_same_capture_above_its_capacity() -> None:
    verdict = admit(assess(probe_stub(), real_log()), floor_tokens=4194305)
    assert isinstance(verdict, Hold)
    assert not verdict.more_evidence_helps
    assert "4194304" in verdict.why


def test_holds_the_capture_without_its_log() -> None:
    verdict = admit(assess(probe_stub()), floor_tokens=1024)
    assert isinstance(verdict, Hold)
    assert verdict.why.startswith("parallel population_unobserved")
    assert verdict.more_evidence_helps


def test_a_reported_capacity_never_admits() -> None:
    text = banner("0.20.0") + engine_init("0.20.0", tp=1) + rank_line(0, 1)
    verdict = admit(assess(None, log(text + two_line_capacity("9,999,999"))), floor_tokens=1)
    assert isinstance(verdict, Hold)
    assert verdict.why.startswith("capacity not_group_aware")
    assert not verdict.more_evidence_helps
