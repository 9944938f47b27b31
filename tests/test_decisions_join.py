"""Front-door join: one incarnation only from a bracketed probe whose markers agree."""

from __future__ import annotations

from decimal import Decimal

from tests._evidence import bundle, probe_stub, real_log, version_body
from tests._paths import REAL
from vllm_evidence.assessment import assess
from vllm_evidence.decisions import JoinedIncarnation, JoinReason, JoinUnestablished
from vllm_evidence.readback import load
from vllm_evidence.testing.stub import Fault
from vllm_evidence.upstream import IncarnationMarkerLaw, Route


def test_a_clean_stub_probe_is_one_incarnation() -> None:
    decision = assess(probe_stub()).front_door_join
    assert isinstance(decision, JoinedIncarnation)
    assert decision.process_start_seconds == Decimal("1796011852.21")
    assert isinstance(decision.law, IncarnationMarkerLaw)  # the 0.32 marker law


def test_a_restart_between_the_brackets_is_marker_changed() -> None:
    decision = assess(probe_stub(restart_after_metrics_reads=1)).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.MARKER_CHANGED
    assert "restarted" in decision.remedy


def test_metrics_without_the_marker_is_marker_absent() -> None:
    no_marker = Fault(body=b"# HELP x y\n# TYPE x gauge\nx 1.0\n")
    decision = assess(probe_stub(faults={Route.METRICS: no_marker})).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.MARKER_ABSENT


def test_a_failed_bracket_read_is_bracket_read_failed() -> None:
    decision = assess(probe_stub(faults={Route.METRICS: Fault(status=500)})).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.BRACKET_READ_FAILED


def test_a_historical_bundle_is_caller_assembled_even_with_the_real_bodies() -> None:
    loaded = load(REAL)  # a bare directory: no manifest, so a historical bundle
    decision = assess(loaded, real_log()).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.CALLER_ASSEMBLED
    metrics = {Route.METRICS: (REAL / "metrics.body").read_bytes()}
    hand = assess(bundle(version_body("0.32.0"), metrics)).front_door_join
    assert isinstance(hand, JoinUnestablished)
    assert hand.reason is JoinReason.CALLER_ASSEMBLED


def test_no_front_door_is_its_own_reason() -> None:
    decision = assess(None, real_log()).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.NO_FRONT_DOOR
    assert decision.law is None
