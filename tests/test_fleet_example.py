"""The fleet example reads every server once, each as a single probe would."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from contextlib import ExitStack
from pathlib import Path

from examples.fleet import main, read_fleet
from tests._evidence import LAUNCHER_KEY, receipt_document_for
from tests._paths import REAL
from tests._ports import nothing_listening
from vllm_evidence import (
    Assessment,
    BodyBudget,
    SigningKey,
    StartupLog,
    assess,
    probe_sync,
    read_launch_receipt,
    read_startup_log,
    readback_from_batch,
)
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityRefused,
    LogJoined,
    LogJoinReason,
    LogJoinRefused,
)
from vllm_evidence.errors import InputError
from vllm_evidence.serialize import assessment_document
from vllm_evidence.testing import serve_capture
from vllm_evidence.watch import Target

#: The recorded server's process_start_time_seconds (its /metrics), as a receipt has it.
REAL_START = "1.79601185221e+09"


def _decided(assessment: Assessment) -> tuple[object, object]:
    document = assessment_document(assessment)
    return document["decisions"], document["observations"]


def test_every_server_is_read_once_and_as_a_single_probe_reads_it() -> None:
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(5)]
        dead = nothing_listening()
        urls = [*(d.url for d in doors), dead, "not a url"]
        results = asyncio.run(read_fleet(urls, at_once=3))
        by_fleet = [len(d.requests) for d in doors]
        alone = {d.url: assess(readback_from_batch(probe_sync(d.url))) for d in doors}
        by_both = [len(d.requests) for d in doors]
    assert sorted(results) == sorted(urls)
    for url, single in alone.items():
        got = results[url]
        assert isinstance(got, Assessment)
        assert isinstance(got.capacity, CapacityEstablished)
        assert _decided(got) == _decided(single)
    # The fleet sent each server exactly the requests of one probe: as many as the single
    # probe after it (a server read twice, or not at all, would show here).
    assert by_fleet == [both - fleet for both, fleet in zip(by_both, by_fleet, strict=True)]
    assert all(by_fleet)
    dead_result = results[dead]
    assert isinstance(dead_result, Assessment)
    assert isinstance(dead_result.capacity, CapacityRefused)  # nothing answered: refused
    assert isinstance(results["not a url"], InputError)


def test_main_prints_a_line_a_server() -> None:
    with serve_capture(REAL) as door:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main([door.url, "not a url"])
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"{door.url}: vLLM 0.32.0, parallel ")
    assert lines[0].endswith("capacity established")
    assert lines[1].startswith("not a url: ")


def test_the_fleet_holds_its_bodies_within_its_budget_and_gives_every_batch_back() -> None:
    # The real capture's bodies: ~260 KB a server, reserved at the 8 MiB cap while read.
    budget = BodyBudget(100 * 1024 * 1024)
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(4)]
        results = asyncio.run(read_fleet([d.url for d in doors], body_budget=budget))
    for result in results.values():
        assert isinstance(result, Assessment)
        assert isinstance(result.capacity, CapacityEstablished)
    # Four probes of ten requests at the cap want 320 MiB at once: the budget held them
    # to 100 MiB, and they waited rather than failed.
    assert budget.high_water <= 100 * 1024 * 1024
    assert budget.waits > 0
    assert budget.held == 0


# --- a log and a receipt per target -------------------------------------------------------


def _receipt_file(path: Path, startup_log: StartupLog, signed_by: SigningKey | None) -> Path:
    document = receipt_document_for(startup_log, start=REAL_START, signed_by=signed_by)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_each_target_is_assessed_with_its_own_log_and_receipt(tmp_path: Path) -> None:
    log_path = REAL / "startup.log"
    startup_log = read_startup_log(log_path)
    assert isinstance(startup_log, StartupLog)
    signed = _receipt_file(tmp_path / "signed.json", startup_log, LAUNCHER_KEY)
    unsigned = _receipt_file(tmp_path / "unsigned.json", startup_log, None)
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(4)]
        targets: list[str | Target] = [
            Target(doors[0].url, startup_log=log_path, receipt=signed),
            Target(doors[1].url, startup_log=log_path, receipt=unsigned),
            Target(doors[2].url, startup_log=log_path),
            Target(doors[3].url, startup_log=log_path, receipt=tmp_path / "none.json"),
        ]
        key = LAUNCHER_KEY.verification_key
        results = asyncio.run(read_fleet(targets, receipt_key=key))
        unkeyed = asyncio.run(read_fleet(targets[:1]))
        alone = assess(
            readback_from_batch(probe_sync(doors[0].url)),
            startup_log,
            receipt=read_launch_receipt(signed, verification_key=key),
        )
    joined, not_signed, no_receipt, missing = (results[d.url] for d in doors)
    assert isinstance(joined, Assessment)
    assert isinstance(joined.log_join, LogJoined), joined.log_join
    # The replay is not on the log's port: only the verified receipt's start time
    # decides past that, as through a port forward.
    assert joined.log_join.port_note is not None
    assert _decided(joined) == _decided(alone)  # as the single probe with the same files
    without_key = unkeyed[doors[0].url]
    for refused in (not_signed, no_receipt, without_key):
        assert isinstance(refused, Assessment)
        assert isinstance(refused.log_join, LogJoinRefused)
        assert refused.log_join.reason is LogJoinReason.PORT_CONTRADICTED
    assert isinstance(missing, InputError)  # that target alone: its receipt is missing
    assert "none.json" in str(missing)


def test_main_reads_a_targets_file_with_logs_and_receipts(tmp_path: Path) -> None:
    log_path = REAL / "startup.log"
    startup_log = read_startup_log(log_path)
    assert isinstance(startup_log, StartupLog)
    _receipt_file(tmp_path / "r.json", startup_log, LAUNCHER_KEY)
    (tmp_path / "public.pem").write_bytes(LAUNCHER_KEY.verification_key.pem())
    with serve_capture(REAL) as door:
        listing = tmp_path / "fleet.txt"
        listing.write_text(f"{door.url} log={log_path} receipt=r.json\n", encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["--targets", str(listing), "--receipt-public-key", str(tmp_path / "public.pem")])
    (line,) = out.getvalue().splitlines()
    assert line.startswith(f"{door.url}: vLLM 0.32.0, parallel ")
    assert line.endswith(", log established")
