"""Front-door join: one incarnation only from a bracketed probe whose markers agree."""

from __future__ import annotations

from decimal import Decimal

from tests._evidence import (
    banner,
    bundle,
    log,
    probe_stub,
    real_log,
    version_body,
)
from tests._paths import REAL
from tests.decisions._wording import says as _says
from vllm_evidence.assessment import assess
from vllm_evidence.decisions import (
    JoinedIncarnation,
    JoinReason,
    JoinUnestablished,
)
from vllm_evidence.readback import load
from vllm_evidence.testing.stub import Fault
from vllm_evidence.upstream import (
    IncarnationMarkerLaw,
    Route,
)


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
    loaded = load(REAL, bodies=True)  # a bare directory: no manifest, so a historical bundle
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


# --- the law each refusal used, or that none applied ---------------------------------


def test_join_refusals_cite_the_marker_law_when_the_version_is_known() -> None:
    assembled = assess(bundle(version_body("0.32.0"))).front_door_join
    assert isinstance(assembled, JoinUnestablished)
    assert assembled.reason is JoinReason.CALLER_ASSEMBLED
    assert isinstance(assembled.law, IncarnationMarkerLaw)
    none = assess(None, log(banner("0.32.0"))).front_door_join
    assert isinstance(none, JoinUnestablished)
    assert none.reason is JoinReason.NO_FRONT_DOOR
    assert none.law is None


# --- what a person reads: each refusal's detail and remedy, written out by hand ---------
# A refusal names the earliest missing piece in words; the CLI prints them and policy
# authors quote them.  Each test below builds one case of one arm and writes the expected
# text out in full (the facts of the case filled in by hand), so that a changed word, a
# lost fact or a clause forced on or off fails here.  The tests above decide *which* arm a
# case reaches; these pin what the arm says.


def test_join_established_names_the_marker() -> None:
    decision = assess(probe_stub(REAL)).front_door_join
    assert isinstance(decision, JoinedIncarnation)
    assert decision.detail == (
        "both /metrics reads carried process_start_time_seconds 1796011852.21"
    )


def test_join_without_a_front_door() -> None:
    decision = assess(None, log(banner("0.32.0"))).front_door_join
    assert isinstance(decision, JoinUnestablished)
    _says(
        decision,
        JoinReason.NO_FRONT_DOOR,
        "no front-door readback was given",
        "probe the server's front door",
    )
