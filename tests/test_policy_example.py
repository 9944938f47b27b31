"""The typed policy example decides both ways, on serving claims only.

The five cases of issue 14: nothing listening, every route 503, a restart in the middle
of the batch, a mixed build (one server's front door with another launch's log), and a
real TP=2 capture with its own log and receipt.  The first four hold, the last admits;
``probe --require parallel capacity health_coverage`` exits 3, 3, 3, 3 and 0 on them.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.policy import Admit, Hold, admit
from tests._evidence import (
    LAUNCHER_KEY,
    assess_witnessed,
    banner,
    bundle,
    engine_init,
    log,
    log_port,
    probe_stub,
    rank_line,
    real_log,
    receipt_file,
    receipt_for,
    two_line_capacity,
    version_body,
    witnessed,
)
from tests._paths import REAL
from tests._ports import nothing_listening, serve_on_port
from vllm_evidence import (
    Assessment,
    LaunchReceipt,
    StartupLog,
    assess,
    probe_sync,
    read_startup_log,
    readback_from_batch,
)
from vllm_evidence.cli import main
from vllm_evidence.testing import Fault, StubFrontDoor, serve_capture
from vllm_evidence.upstream import Route

CAPTURES = Path(__file__).parent / "fixtures" / "real" / "vllm-0.32.0-cpu"
TP2 = CAPTURES / "tp2-devmode"
RESTART = CAPTURES / "restart-mid-batch"
#: process_start_time_seconds of the TP=2 development-mode capture, as served.
TP2_START = "1.79601501985e+09"
REQUIRE = ["--require", "parallel", "capacity", "health_coverage"]


def _log(path: Path) -> StartupLog:
    read = read_startup_log(path)
    assert isinstance(read, StartupLog), read
    return read


@contextlib.contextmanager
def _door(case: str) -> Iterator[tuple[str, Path]]:
    """The URL of the case's front door (while it serves) and the log given with it."""
    if case == "nothing listening":
        yield nothing_listening(), TP2 / "startup.log"
        return
    served: contextlib.AbstractContextManager[StubFrontDoor]
    log_path = TP2 / "startup.log"
    if case == "all 503":
        faults = {route: Fault(status=503) for route in Route if route.probe_readable}
        served = serve_on_port(TP2, faults=faults, port=log_port(_log(log_path)))
    elif case == "restart mid-batch":
        first = (RESTART / "first" / "metrics.body").read_bytes()
        second = (RESTART / "second" / "metrics.body").read_bytes()
        log_path = RESTART / "second" / "startup.log"
        served = serve_capture(
            RESTART / "second", metrics_sequence=[first, second], port=log_port(_log(log_path))
        )
    elif case == "mixed build":
        log_path = CAPTURES / "tp2-apikey" / "startup.log"
        served = serve_on_port(TP2, port=log_port(_log(log_path)))
    else:
        served = serve_on_port(TP2, port=log_port(_log(log_path)))
    with served as door:
        yield door.url, log_path


#: Each case's log is given with its own launch's receipt.
CASES = ["nothing listening", "all 503", "restart mid-batch", "mixed build", "own log + receipt"]


#: The start time of the launch each log records (its own receipt's).
STARTS = {
    TP2 / "startup.log": TP2_START,
    CAPTURES / "tp2-apikey" / "startup.log": "1.79601496578e+09",
    RESTART / "second" / "startup.log": "1.7960150859e+09",
}


def _receipt(log_path: Path) -> LaunchReceipt:
    """The receipt the launcher wrote for the launch this log records."""
    return receipt_for(_log(log_path), start=STARTS[log_path])


def _assess(case: str) -> Assessment:
    with _door(case) as (url, log_path):
        readback = readback_from_batch(probe_sync(url))
    return assess(readback, _log(log_path), receipt=_receipt(log_path))


@pytest.mark.parametrize(
    ("case", "admitted"), list(zip(CASES, [False, False, False, False, True], strict=True))
)
def test_the_five_cases_hold_hold_hold_hold_admit(case: str, admitted: bool) -> None:
    verdict = admit(_assess(case), floor_tokens=1024)
    assert isinstance(verdict, Admit) is admitted, verdict
    if admitted:
        assert verdict == Admit(8388608)


@pytest.mark.parametrize(("case", "status"), list(zip(CASES, [3, 3, 3, 3, 0], strict=True)))
def test_probe_require_exits_3_3_3_3_0(case: str, status: int, tmp_path: Path) -> None:
    with _door(case) as (url, log_path):
        receipt = receipt_file(tmp_path / "receipt.json", _receipt(log_path))
        public = tmp_path / "launcher-public.pem"
        public.write_bytes(LAUNCHER_KEY.verification_key.pem())
        argv = ["probe", url, "--startup-log", str(log_path), "--receipt", str(receipt)]
        argv += ["--receipt-public-key", str(public)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv, *REQUIRE])
    assert code == status, (out.getvalue(), err.getvalue())
    assert len(err.getvalue().splitlines()) == (0 if status == 0 else 1), err.getvalue()


def test_the_mixed_build_is_named_by_the_log_join() -> None:
    """The other launch registered no development routes, which this front door serves
    (and its receipt names another start time); without a receipt there is no witness."""
    mixed = _assess("mixed build")
    assert mixed.log_join.reason.value == "configuration_contradicted"
    other = CAPTURES / "tp2-apikey" / "startup.log"
    with _door("mixed build") as (url, _):
        readback = readback_from_batch(probe_sync(url))
    assert assess(readback, _log(other)).log_join.reason.value == "configuration_contradicted"


def test_a_receipt_forging_the_served_start_time_onto_another_log_is_contradicted() -> None:
    """A hand-written receipt that copies this front door's start time onto the other
    launch's log: the front door exposes no pid, so only what the log and the front door
    both show can refuse it — here the development routes the other launch never
    registered."""
    other = CAPTURES / "tp2-apikey" / "startup.log"
    with _door("mixed build") as (url, _):
        readback = readback_from_batch(probe_sync(url))
    forged = receipt_for(_log(other), start=TP2_START)
    assessment = assess(readback, _log(other), receipt=forged)
    assert assessment.log_join.reason.value == "configuration_contradicted"
    assert "/server_info" in assessment.log_join.detail
    assert isinstance(admit(assessment, floor_tokens=1), Hold)


def test_admits_the_tp1_capture_with_its_log_and_receipt() -> None:
    assessment = assess_witnessed(REAL, real_log())
    assert admit(assessment, floor_tokens=1024) == Admit(4194304)
    assert admit(assessment, floor_tokens=4194304) == Admit(4194304)


def test_holds_the_same_capture_above_its_capacity() -> None:
    verdict = admit(assess_witnessed(REAL, real_log()), floor_tokens=4194305)
    assert isinstance(verdict, Hold)
    assert not verdict.more_evidence_helps
    assert "4194304" in verdict.why


def test_holds_the_capture_without_its_log() -> None:
    verdict = admit(assess(probe_stub()), floor_tokens=1024)
    assert isinstance(verdict, Hold)
    assert verdict.why.startswith("parallel population_unobserved")
    assert verdict.more_evidence_helps


def test_holds_the_capture_with_its_log_but_no_receipt() -> None:
    verdict = admit(assess(probe_stub(), real_log()), floor_tokens=1024)
    assert isinstance(verdict, Hold)
    assert verdict.why.startswith("parallel log_not_joined")
    assert verdict.more_evidence_helps


def test_a_log_alone_never_admits() -> None:
    verdict = admit(assess(None, real_log()), floor_tokens=1024)
    assert isinstance(verdict, Hold)
    assert "speaks for its launch" in verdict.why


def test_a_reported_capacity_never_admits() -> None:
    text = banner("0.20.0") + engine_init("0.20.0", tp=1) + rank_line(0, 1)
    startup_log = log(text + two_line_capacity("9,999,999"))
    verdict = admit(witnessed(bundle(version_body("0.20.0")), startup_log), floor_tokens=1)
    assert isinstance(verdict, Hold)
    assert verdict.why.startswith("capacity not_group_aware")
    assert not verdict.more_evidence_helps
