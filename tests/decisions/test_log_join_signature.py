"""The log join reads a receipt's start time only when the receipt is the launcher's own
(issue 31, "No side door", item 1): signed, and verified under the launcher's public key
the reader gives — or observed in process by the gate, by construction.

The attack: copy a log's own receipt and set its start time to the value the serving
process's ``/metrics`` shows (one GET).  Before, that log joined any front door.  Here it
is tried on generated mixed builds and on a recorded real restart (vLLM 0.26.0: the
first process's log and receipt handed in beside the second process's front door), each
way it can be dressed: unsigned, its launcher's signature kept, signed again by another
key, read without a key.  Each is refused with its own reason; the signed receipt of the
right launch joins.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests._evidence import (
    HEALTHY,
    LAUNCHER_KEY,
    OTHER_LAUNCHER_KEY,
    WITNESSED_START,
    args,
    banner,
    bundle,
    engine_init,
    log,
    rank_line,
    receipt_document_for,
    receipt_for,
    server_info_json,
    version_body,
    witnessed_door,
)
from tests._paths import CAPTURES
from tests._ports import serve_on_port
from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._adapters.receipt import (
    LaunchReceipt,
    ReceiptAuthentication,
    ReceiptRecord,
    _observed_in_process,
    parse_launch_receipt,
    read_launch_receipt,
)
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, Subject, assess, claim_established
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._capture.signing import SigningKey, VerificationKey
from vllm_evidence._readback import CapturedReadback, readback_from_batch
from vllm_evidence.decisions import LogJoined, LogJoinReason, LogJoinRefused
from vllm_evidence.testing._strategies import GeneratedServer, mixed_builds, servers

TP1 = banner("0.32.0") + engine_init(tp=1) + rank_line(0, 1)
DOOR = bundle(version_body("0.32.0"), server_info_json(tp=1), HEALTHY)
RECORDED = CAPTURES.parent / "real"
RESTART = RECORDED / "vllm-0.26.0-cpu" / "restart"
#: A policy's claims: what a router admits a replica on (all three, for the server).
POLICY = ("parallel", "capacity", "health_coverage")
PROPERTY = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _refused(decision: object) -> LogJoinRefused:
    assert isinstance(decision, LogJoinRefused), decision
    return decision


def _read(document: dict[str, Any], key: VerificationKey | None) -> LaunchReceipt:
    return parse_launch_receipt(json.dumps(document).encode(), verification_key=key)


def _edited(document: dict[str, Any], **fields: object) -> dict[str, Any]:
    """``document`` with ``fields`` changed and its signature kept as it was."""
    return {**document, **fields}


def _signed_by(document: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    """``document`` signed again, by ``key``, as a hand with that key would: the
    signature of the canonical rest (sorted keys, compact, ASCII), built here."""
    rest = {name: value for name, value in document.items() if name != "signature"}
    covered = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    signature = {
        "algorithm": "ed25519",
        "key_id": key.key_id,
        "ed25519": key.sign(covered.encode()),
    }
    return {**document, "signature": signature}


def _unsigned(receipt: bytes) -> dict[str, Any]:
    """A generated receipt's document, without whatever signature the kit gave it: this
    module signs it (or not) itself."""
    document: dict[str, Any] = json.loads(receipt)
    document["signature"] = None
    return document


def _admitted(assessment: Assessment) -> bool:
    return all(claim_established(assessment, claim) for claim in POLICY)  # type: ignore[arg-type]  # members of Claim


# --- each authentication, both ways ---------------------------------------------------


def _live(text: str = TP1) -> tuple[CapturedReadback, StartupLog]:
    return witnessed_door(DOOR), log(text)


def test_a_receipt_signed_by_the_launcher_and_verified_joins() -> None:
    door, startup_log = _live()
    receipt = receipt_for(startup_log)
    assert receipt.authentication is ReceiptAuthentication.VERIFIED
    joined = assess(door, startup_log, receipt=receipt).log_join
    assert isinstance(joined, LogJoined), joined
    assert f"signed by key id {LAUNCHER_KEY.key_id} (verified)" in joined.detail


@pytest.mark.parametrize(
    ("document", "key", "reason", "detail", "remedy"),
    [
        pytest.param(
            lambda log: receipt_document_for(log, signed_by=None),
            LAUNCHER_KEY.verification_key,
            LogJoinReason.WITNESS_UNSIGNED,
            "the receipt is unsigned: anyone can write one",
            "--receipt-signing-key",
            id="unsigned",
        ),
        pytest.param(
            receipt_document_for,
            None,
            LogJoinReason.WITNESS_UNVERIFIED,
            f"signed by key id {LAUNCHER_KEY.key_id}, but no public key was given",
            "--receipt-public-key PUBLIC.pem",
            id="no-key",
        ),
        pytest.param(
            lambda log: receipt_document_for(log, signed_by=OTHER_LAUNCHER_KEY),
            LAUNCHER_KEY.verification_key,
            LogJoinReason.WITNESS_OTHER_KEY,
            f"signed by key id {OTHER_LAUNCHER_KEY.key_id}, not by the key given "
            f"({LAUNCHER_KEY.key_id})",
            "the public key of the launcher that signed",
            id="other-key",
        ),
        pytest.param(
            lambda log: _edited(receipt_document_for(log), pid=101),
            LAUNCHER_KEY.verification_key,
            LogJoinReason.WITNESS_SIGNATURE_INVALID,
            f"signature by key id {LAUNCHER_KEY.key_id} does not verify",
            "exactly as the launcher wrote it",
            id="edited",
        ),
    ],
)
def test_a_receipt_that_is_not_the_launchers_own_joins_nothing(
    document: Any, key: VerificationKey | None, reason: LogJoinReason, detail: str, remedy: str
) -> None:
    door, startup_log = _live()
    receipt = _read(document(startup_log), key)
    refused = _refused(assess(door, startup_log, receipt=receipt).log_join)
    assert refused.reason is reason
    assert detail in refused.detail
    assert remedy in refused.remedy
    assert refused.receipt is receipt
    assert refused.process_start_seconds is not None  # the marker was observed: it is later


def test_the_same_receipt_verified_is_what_joins() -> None:
    """The other direction of each refusal above: the bytes unedited, under the key."""
    door, startup_log = _live()
    document = receipt_document_for(startup_log)
    assert isinstance(
        assess(door, startup_log, receipt=_read(document, LAUNCHER_KEY.verification_key)).log_join,
        LogJoined,
    )
    resigned = _signed_by(_edited(document, pid=100), LAUNCHER_KEY)  # the launcher's own
    assert isinstance(
        assess(door, startup_log, receipt=_read(resigned, LAUNCHER_KEY.verification_key)).log_join,
        LogJoined,
    )


def test_the_authentication_comes_before_what_the_receipt_says() -> None:
    """An unsigned receipt's start time, log failure and digest are not read: its first
    missing piece is its signature."""
    door, startup_log = _live()
    for fields in (
        {"start": None},
        {"start": "1.5e+09"},
        {"log_sha256": "0" * 64},
        {"pid": 4242},
    ):
        unsigned = receipt_for(startup_log, signed_by=None, **fields)
        refused = _refused(assess(door, startup_log, receipt=unsigned).log_join)
        assert refused.reason is LogJoinReason.WITNESS_UNSIGNED, fields
        signed = receipt_for(startup_log, **fields)
        assert _refused(assess(door, startup_log, receipt=signed).log_join).reason in {
            LogJoinReason.WITNESS_WITHOUT_START_TIME,
            LogJoinReason.START_TIME_CONTRADICTED,
            LogJoinReason.LOG_DIGEST_CONTRADICTED,
            LogJoinReason.PID_CONTRADICTED,
        }


def test_the_front_door_is_read_before_the_receipt() -> None:
    """Without an observed marker there is nothing to compare any receipt with."""
    startup_log = log(TP1)
    refused = _refused(
        assess(DOOR, startup_log, receipt=receipt_for(startup_log, signed_by=None)).log_join
    )
    assert refused.reason is LogJoinReason.MARKER_UNOBSERVED


def test_an_unauthenticated_receipt_does_not_excuse_another_port() -> None:
    """A port forward is believed only on the word of a receipt the launcher signed."""
    startup_log = log(banner("0.32.0") + args("{'port': 1}") + engine_init(tp=1))
    door = witnessed_door(DOOR)
    for unsigned in (
        receipt_for(startup_log, signed_by=None),
        receipt_for(startup_log, signed_by=OTHER_LAUNCHER_KEY),
    ):
        refused = _refused(assess(door, startup_log, receipt=unsigned).log_join)
        assert refused.reason is LogJoinReason.PORT_CONTRADICTED
    joined = assess(door, startup_log, receipt=receipt_for(startup_log)).log_join
    assert isinstance(joined, LogJoined)
    assert joined.port_note is not None


def test_recorded_receipts_written_before_signing_read_as_unsigned() -> None:
    """The receipts recorded from real launches carry no signature: read under any key,
    they are unsigned, and would join nothing."""
    recorded = sorted(RECORDED.glob("*/*/launch-receipt.json"))
    assert len(recorded) >= 20
    for path in recorded:
        receipt = read_launch_receipt(path, verification_key=LAUNCHER_KEY.verification_key)
        assert receipt.authentication is ReceiptAuthentication.UNSIGNED, path
        assert receipt.signer_key_id is None


# --- the edited-receipt attack on generated mixed builds ------------------------------


def _attack(
    honest: dict[str, Any], start: str
) -> Iterator[tuple[str, LaunchReceipt, LogJoinReason]]:
    """Another launch's receipt (``honest``, unsigned as the kit writes it) with the front
    door's start time ``start``, each way dressed; and that receipt as its launcher
    signed it, unedited."""
    assert honest["process_start_time_seconds"] != start
    signed = _signed_by(honest, LAUNCHER_KEY)  # what its launcher, holding the key, wrote
    edited = {"process_start_time_seconds": start}
    key = LAUNCHER_KEY.verification_key
    yield "unsigned", _read(_edited(honest, **edited), key), LogJoinReason.WITNESS_UNSIGNED
    yield "kept", _read(_edited(signed, **edited), key), LogJoinReason.WITNESS_SIGNATURE_INVALID
    resigned = _signed_by(_edited(signed, **edited), OTHER_LAUNCHER_KEY)
    yield "resigned", _read(resigned, key), LogJoinReason.WITNESS_OTHER_KEY
    yield "no key", _read(_edited(signed, **edited), None), LogJoinReason.WITNESS_UNVERIFIED
    yield "honest", _read(signed, key), LogJoinReason.START_TIME_CONTRADICTED


def _never_admitted_through_the_log(
    door: CapturedReadback, startup_log: StartupLog, honest: dict[str, Any], start: str
) -> None:
    """Each dressing is refused by its own reason — or by the contradiction the log
    shows without any receipt, which comes first — and whatever the policy then admits,
    it admits on the front door alone."""
    alone = assess(door, None)
    baseline = _refused(assess(door, startup_log).log_join).reason
    for how, receipt, reason in _attack(honest, start):
        assessment = assess(door, startup_log, receipt=receipt)
        refused = _refused(assessment.log_join)
        expected = reason if baseline is LogJoinReason.NO_WITNESS else baseline
        if baseline is LogJoinReason.PORT_CONTRADICTED and how == "honest":
            expected = reason  # a verified receipt's start time decides, not the port
        assert refused.reason is expected, (how, refused)
        assert _admitted(assessment) <= _admitted(alone), how
        for claim in POLICY:
            if claim_established(assessment, claim):  # type: ignore[arg-type]
                assert claim_established(alone, claim), (how, claim)  # type: ignore[arg-type]


@PROPERTY
@given(mixed_builds(backend="mp", release="0.32.0"))
def test_an_edited_receipt_never_joins_a_mixed_build(server: GeneratedServer) -> None:
    _never_admitted_through_the_log(
        server.readback(), server.startup_log(), _unsigned(server.receipt), server.start_time
    )


@PROPERTY
@given(servers(backend="mp", release="0.32.0"))
def test_an_identical_replicas_edited_receipt_never_joins(server: GeneratedServer) -> None:
    """The twin: a replica with the same log bytes, started later; its receipt edited to
    the serving process's start time.  Nothing but the receipt tells the two apart, so
    each dressing is refused by its own reason."""
    twin = _unsigned(server.receipt)
    twin["process_start_time_seconds"] = "1.89e+09"  # a later launch of the same bytes
    door, startup_log = server.readback(), server.startup_log()
    assert _refused(assess(door, startup_log).log_join).reason is LogJoinReason.NO_WITNESS
    _never_admitted_through_the_log(door, startup_log, twin, server.start_time)


@PROPERTY
@given(servers(backend="mp", release="0.32.0"))
def test_a_servers_own_receipt_signed_by_its_launcher_joins(server: GeneratedServer) -> None:
    own = _signed_by(_unsigned(server.receipt), LAUNCHER_KEY)
    receipt = _read(own, LAUNCHER_KEY.verification_key)
    assessment = assess(server.readback(), server.startup_log(), receipt=receipt)
    assert isinstance(assessment.log_join, LogJoined), assessment.log_join
    assert assessment.subject is Subject.SERVING


# --- the edited-receipt attack on a recorded real restart -----------------------------


def _real_log(name: str) -> StartupLog:
    read = read_startup_log(RESTART / name / "startup.log")
    assert isinstance(read, StartupLog), read
    return read


@pytest.fixture(scope="module")
def restarted() -> CapturedReadback:
    """The replica after its restart: the second process's front door, served on the
    port both launches were given, probed."""
    with serve_on_port(RESTART / "second", port=58787) as door:
        return readback_from_batch(probe_sync(door.url))


def _marker(door: CapturedReadback) -> str:
    assert isinstance(door.metrics, Parsed)
    marker = door.metrics.observation.process_start_time
    assert marker is not None
    return str(marker.seconds)


def test_the_recorded_restart_is_two_processes(restarted: CapturedReadback) -> None:
    first = (RESTART / "first" / "metrics.body").read_text(encoding="utf-8")
    assert "process_start_time_seconds 1.79611143436e+09" in first
    assert _marker(restarted) == "1796111564.67"


def test_the_old_log_with_an_edited_receipt_is_refused_on_real_data(
    restarted: CapturedReadback,
) -> None:
    old = _real_log("first")
    honest = receipt_document_for(old, start="1.79611143436e+09")
    assert honest["pid"] == 19809
    key = LAUNCHER_KEY.verification_key
    edited = {"process_start_time_seconds": _marker(restarted)}
    cases = (
        (_read(honest, key), LogJoinReason.START_TIME_CONTRADICTED),
        (_read(_edited(honest, **edited), key), LogJoinReason.WITNESS_SIGNATURE_INVALID),
        (
            _read(_edited(receipt_document_for(old, signed_by=None), **edited), key),
            LogJoinReason.WITNESS_UNSIGNED,
        ),
        (
            _read(_signed_by(_edited(honest, **edited), OTHER_LAUNCHER_KEY), key),
            LogJoinReason.WITNESS_OTHER_KEY,
        ),
        (_read(_edited(honest, **edited), None), LogJoinReason.WITNESS_UNVERIFIED),
    )
    for receipt, reason in cases:
        assessment = assess(restarted, old, receipt=receipt)
        assert _refused(assessment.log_join).reason is reason
        assert not _admitted(assessment), reason


def test_the_new_launchs_signed_receipt_joins_on_real_data(restarted: CapturedReadback) -> None:
    new = _real_log("second")
    receipt = receipt_for(new, start=_marker(restarted))
    assert receipt.pid == 20856
    assessment = assess(restarted, new, receipt=receipt)
    assert isinstance(assessment.log_join, LogJoined), assessment.log_join
    assert claim_established(assessment, "parallel")


# --- by construction: the gate's receipt, and no public way to claim one --------------


def _record(startup_log: StartupLog, start: str = WITNESSED_START) -> ReceiptRecord:
    document = receipt_document_for(startup_log, start=start, signed_by=None)
    fields = {name: value for name, value in document.items() if name != "signature"}
    return ReceiptRecord(**fields)  # type: ignore[arg-type]  # the document's own fields


def test_a_receipt_observed_in_process_joins_without_a_signature() -> None:
    door, startup_log = _live()
    receipt = _observed_in_process(_record(startup_log), "the launcher's own observation")
    assert receipt.authentication is ReceiptAuthentication.OBSERVED_IN_PROCESS
    assert receipt.signer_key_id is None
    joined = assess(door, startup_log, receipt=receipt).log_join
    assert isinstance(joined, LogJoined), joined
    assert "observed its own child in process (no receipt crossed)" in joined.detail
    # Its contradictions still refuse it: by construction is not "anything goes".
    other = _observed_in_process(_record(startup_log, "1.5e+09"), "the launcher")
    refused = _refused(assess(door, startup_log, receipt=other).log_join)
    assert refused.reason is LogJoinReason.START_TIME_CONTRADICTED


def test_the_same_bytes_read_by_any_public_reader_are_unsigned(tmp_path: Path) -> None:
    door, startup_log = _live()
    observed = _observed_in_process(_record(startup_log), "the launcher")
    path = tmp_path / "receipt.json"
    path.write_bytes(observed.raw)
    key = LAUNCHER_KEY.verification_key
    for read in (
        parse_launch_receipt(observed.raw),
        parse_launch_receipt(observed.raw, verification_key=key),
        read_launch_receipt(path),
        read_launch_receipt(path, verification_key=key),
        pickle.loads(pickle.dumps(observed)),  # noqa: S301  # our own pickle
    ):
        assert read.authentication is ReceiptAuthentication.UNSIGNED, read
        refused = _refused(assess(door, startup_log, receipt=read).log_join)
        assert refused.reason is LogJoinReason.WITNESS_UNSIGNED


def test_no_public_reader_takes_an_in_process_flag() -> None:
    """The readers' parameters are the bytes (or path), where, and the key: nothing a
    caller could set to say "observed in process"."""
    import inspect

    for reader in (parse_launch_receipt, read_launch_receipt):
        names = set(inspect.signature(reader).parameters)
        assert names <= {"data", "where", "path", "verification_key"}, names
    with pytest.raises(TypeError):
        parse_launch_receipt(b"{}", in_process=True)  # type: ignore[call-arg]  # no such parameter


def test_a_verified_receipt_pickles_verified_and_is_checked_again() -> None:
    startup_log = log(TP1)
    receipt = receipt_for(startup_log)
    again = pickle.loads(pickle.dumps(receipt))  # noqa: S301  # our own pickle
    assert again.authentication is ReceiptAuthentication.VERIFIED
    assert again == receipt
