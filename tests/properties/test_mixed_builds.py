"""Mixed builds cannot be named (issue 14): for any two distinct generated launches A
and B, A's front door with B's log — with or without B's receipt — establishes no claim
about the serving process; A's front door with A's own log and receipt establishes, for
the serving process, exactly what A's log establishes for its launch."""

from __future__ import annotations

import io
import tempfile

from hypothesis import HealthCheck, assume, given, settings

from vllm_evidence._adapters.receipt import LaunchReceipt, parse_launch_receipt
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, Subject, assess, claim_established
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._readback import CapturedReadback, readback_from_batch
from vllm_evidence.decisions import LogJoined, LogJoinRefused
from vllm_evidence.testing._strategies import (
    WitnessedLaunch,
    launcher_verification_key,
    witnessed_launches,
)
from vllm_evidence.testing._stub import serve_capture

#: The claims a minimal front door cannot establish alone (so a log would be the source).
FROM_THE_LOG = ("parallel", "capacity", "served_identity", "health_coverage")

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _door(launch: WitnessedLaunch) -> CapturedReadback:
    """A's front door, probed live (development routes not read: A serves none)."""
    with (
        tempfile.TemporaryDirectory(prefix="witnessed-") as tmp,
        serve_capture(launch.front_door.write(tmp)) as door,
    ):
        batch = probe_sync(door.url, development_routes=False, timeout=5.0, deadline=10.0)
    return readback_from_batch(batch)


def _log(launch: WitnessedLaunch) -> StartupLog:
    log = read_startup_log(io.BytesIO(launch.log.text))
    assert isinstance(log, StartupLog), log
    return log


def _receipt(launch: WitnessedLaunch) -> LaunchReceipt:
    return parse_launch_receipt(launch.receipt, verification_key=launcher_verification_key())


def _no_serving_claim_from(assessment: Assessment) -> None:
    assert isinstance(assessment.log_join, LogJoinRefused), assessment.log_join
    for claim in (*FROM_THE_LOG, "log_join"):
        assert not claim_established(assessment, claim), (claim, assessment)  # type: ignore[arg-type]  # members of Claim


@SETTINGS
@given(witnessed_launches(), witnessed_launches())
def test_a_front_door_with_another_launchs_log_establishes_no_serving_claim(
    a: WitnessedLaunch, b: WitnessedLaunch
) -> None:
    assume(a.start_time != b.start_time)
    door = _door(a)
    _no_serving_claim_from(assess(door, _log(b)))
    _no_serving_claim_from(assess(door, _log(b), receipt=_receipt(b)))


@SETTINGS
@given(witnessed_launches())
def test_a_front_door_with_its_own_log_and_receipt_establishes_what_the_log_does(
    a: WitnessedLaunch,
) -> None:
    joined = assess(_door(a), _log(a), receipt=_receipt(a))
    assert isinstance(joined.log_join, LogJoined), joined.log_join
    assert joined.subject is Subject.SERVING
    launch_only = assess(None, _log(a))
    for claim in FROM_THE_LOG:
        serving = claim_established(joined, claim)  # type: ignore[arg-type]  # members of Claim
        launch = claim_established(launch_only, claim, subject=Subject.LAUNCH)  # type: ignore[arg-type]
        assert serving == launch, (claim, getattr(joined, claim), getattr(launch_only, claim))


@SETTINGS
@given(witnessed_launches())
def test_without_its_receipt_a_launchs_own_log_is_not_joined(a: WitnessedLaunch) -> None:
    """An identical replica would show the same log: without the receipt it names nothing."""
    _no_serving_claim_from(assess(_door(a), _log(a)))
