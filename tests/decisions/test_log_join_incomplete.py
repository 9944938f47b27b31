"""The log join refuses a receipt whose log the launcher could not write whole.

A ``/2`` receipt's ``log_write_failure`` says the launcher could not write the log past
some byte: what the launch printed after it (a worker's death, the engine's fatal
error) is lost, so the log joins nothing — refused ``log_incomplete``, with the byte and
the error.  Both directions: the same receipt without the failure joins, and so does a
``/1`` receipt is read as having none (though, unsigned, it joins nothing).  A witnessed join needs
the receipt's start time on the live front door, so each case probes the stub.
"""

from __future__ import annotations

import json

import pytest

from tests._evidence import (
    HEALTHY,
    LAUNCHER_KEY,
    WITNESSED_START,
    banner,
    bundle,
    engine_init,
    log,
    rank_line,
    server_info_json,
    version_body,
    witnessed_door,
)
from vllm_evidence._adapters.receipt import (
    RECEIPT_SCHEMA,
    LaunchReceipt,
    LogWriteFailureRecord,
    ReceiptRecord,
    parse_launch_receipt,
    signed_receipt_document,
)
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import assess
from vllm_evidence._readback.front_door import CapturedReadback
from vllm_evidence.decisions import (
    LogJoined,
    LogJoinReason,
    LogJoinRefused,
    ParallelReason,
    Subject,
)

TP1 = banner("0.32.0") + engine_init(tp=1) + rank_line(0, 1)
DOOR = bundle(version_body("0.32.0"), server_info_json(tp=1), HEALTHY)


@pytest.fixture(scope="module")
def door() -> CapturedReadback:
    return witnessed_door(DOOR)


@pytest.fixture(scope="module")
def startup_log() -> StartupLog:
    return log(TP1)


def _receipt(
    startup_log: StartupLog,
    *,
    failure: dict[str, object] | None = None,
    start: str = WITNESSED_START,
) -> LaunchReceipt:
    """A ``/3`` receipt for ``startup_log`` signed by the launcher, with ``failure`` as its
    ``log_write_failure``."""
    pids = [p for launch in startup_log.launches for p in launch.api_server_pids]
    record = ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=pids[0] if pids else 1,
        process_start_time_seconds=start,
        start_time_unavailable=None,
        argv=["vllm", "serve", "/models/m"],
        host="test-host",
        log_path=startup_log.source,
        log_bytes=startup_log.size_bytes,
        log_sha256=startup_log.sha256,
        log_write_failure=None
        if failure is None
        else LogWriteFailureRecord(
            at_byte=int(str(failure["at_byte"])), error=str(failure["error"])
        ),
    )
    document = signed_receipt_document(record, LAUNCHER_KEY)
    return parse_launch_receipt(
        json.dumps(document).encode(), verification_key=LAUNCHER_KEY.verification_key
    )


def _unsigned(startup_log: StartupLog, schema: str, **extra: object) -> LaunchReceipt:
    """A receipt as a launcher before signatures wrote it (``/1`` or ``/2``)."""
    pids = [p for launch in startup_log.launches for p in launch.api_server_pids]
    document: dict[str, object] = {
        "schema": schema,
        "pid": pids[0] if pids else 1,
        "process_start_time_seconds": WITNESSED_START,
        "start_time_unavailable": None,
        "argv": ["vllm", "serve", "/models/m"],
        "host": "test-host",
        "log_path": startup_log.source,
        "log_bytes": startup_log.size_bytes,
        "log_sha256": startup_log.sha256,
    }
    document.update(extra)
    return parse_launch_receipt(
        json.dumps(document).encode(), verification_key=LAUNCHER_KEY.verification_key
    )


def test_a_receipt_whose_log_is_incomplete_is_refused_log_incomplete(
    door: CapturedReadback, startup_log: StartupLog
) -> None:
    failure = {"at_byte": 4096, "error": "[Errno 28] No space left on device"}
    receipt = _receipt(startup_log, failure=failure)
    assessment = assess(door, startup_log, receipt=receipt)
    decision = assessment.log_join
    assert isinstance(decision, LogJoinRefused), decision
    assert decision.subject is Subject.SERVING
    assert decision.reason is LogJoinReason.LOG_INCOMPLETE
    assert decision.reason.value == "log_incomplete"
    assert decision.detail == (
        "the launcher could not write the log past byte 4,096 ([Errno 28] No space left on "
        "device): the log is not whole and joins nothing"
    )
    assert decision.remedy == (
        "launch again where the log can be written whole (space on its file system, a "
        "writable --log path), and give that launch's log and receipt"
    )
    assert decision.receipt is receipt
    # A serving claim built from the log is refused with it: the log is not joined.
    assert assessment.parallel.reason is ParallelReason.LOG_NOT_JOINED


def test_the_same_receipt_without_a_failure_joins(
    door: CapturedReadback, startup_log: StartupLog
) -> None:
    decision = assess(door, startup_log, receipt=_receipt(startup_log)).log_join
    assert isinstance(decision, LogJoined), decision


@pytest.mark.parametrize("version", [1, 2])
def test_an_unsigned_receipt_of_before_is_read_and_joins_nothing(
    door: CapturedReadback, startup_log: StartupLog, version: int
) -> None:
    """A ``/1`` or ``/2`` receipt is read as it was (a ``/1`` has no failure to say), but
    no launcher signed it: anyone could have written it, and it joins no log."""
    receipt = _unsigned(startup_log, f"vllm-evidence.launch-receipt/{version}")
    assert receipt.log_write_failure is None
    decision = assess(door, startup_log, receipt=receipt).log_join
    assert isinstance(decision, LogJoinRefused), decision
    assert decision.reason is LogJoinReason.WITNESS_UNSIGNED


def test_an_incomplete_log_is_named_before_the_start_time_is_compared(
    door: CapturedReadback, startup_log: StartupLog
) -> None:
    # The witness's own account comes first: its log is not whole, whatever else it says.
    receipt = _receipt(startup_log, failure={"at_byte": 0, "error": "EIO"}, start="1.6e+09")
    decision = assess(door, startup_log, receipt=receipt).log_join
    assert isinstance(decision, LogJoinRefused)
    assert decision.reason is LogJoinReason.LOG_INCOMPLETE
    assert "past byte 0 (EIO)" in decision.detail


def test_without_a_front_door_the_incomplete_receipt_changes_nothing(
    startup_log: StartupLog,
) -> None:
    # A log alone speaks for its launch: the receipt is not consulted (no_front_door).
    receipt = _receipt(startup_log, failure={"at_byte": 1, "error": "EIO"})
    decision = assess(None, startup_log, receipt=receipt).log_join
    assert isinstance(decision, LogJoinRefused)
    assert decision.reason is LogJoinReason.NO_FRONT_DOOR
