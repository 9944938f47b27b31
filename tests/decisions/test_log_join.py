"""The log join: established only by an observed witness, refused earliest first.

Witnesses in both directions: a receipt whose start time the live front door serves,
whose digest is the log's and whose pid is the launch's joins the log; each piece
missing or contradicted refuses it with its own reason, and a decision reading the log
then refuses ``log_not_joined``.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests._evidence import (
    HEALTHY,
    LAUNCHER_KEY,
    WITNESSED_START,
    args,
    assess_joined,
    banner,
    bundle,
    engine_init,
    log,
    models_body,
    probe_stub,
    rank_line,
    receipt_for,
    server_info_json,
    sha256,
    version_body,
    witnessed_door,
)
from vllm_evidence._adapters.receipt import parse_launch_receipt
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture.generated import _answered_batch
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.decisions import (
    LogJoined,
    LogJoinReason,
    LogJoinRefused,
    ParallelEstablished,
    ParallelReason,
    Subject,
)
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import Fault
from vllm_evidence.upstream import Route

TP1 = banner("0.32.0") + engine_init(tp=1) + rank_line(0, 1)
DOOR = bundle(version_body("0.32.0"), server_info_json(tp=1), HEALTHY)


def _log(text: str = TP1) -> StartupLog:
    return log(text)


def _with(receipt_fields: dict[str, object] | None, text: str = TP1) -> Assessment:
    """The live replay of DOOR (marker WITNESSED_START) with ``text`` and a receipt."""
    startup_log = _log(text)
    receipt = None if receipt_fields is None else receipt_for(startup_log, **receipt_fields)  # type: ignore[arg-type]  # receipt_for's keywords
    return assess(witnessed_door(DOOR), startup_log, receipt=receipt)


def _refused(assessment: Assessment) -> LogJoinRefused:
    decision = assessment.log_join
    assert isinstance(decision, LogJoinRefused), decision
    return decision


# --- both directions ------------------------------------------------------------------


def test_an_observed_witness_joins_the_log() -> None:
    assessment = _with({})
    decision = assessment.log_join
    assert isinstance(decision, LogJoined), decision
    assert decision.subject is Subject.SERVING
    assert decision.pid == 100  # the APIServer tag of the hand-written log
    assert decision.pid_tagged
    assert str(decision.process_start_seconds) == "1.7E+9"
    assert isinstance(assessment.parallel, ParallelEstablished)
    assert assessment.parallel.subject is Subject.SERVING


def test_without_a_receipt_there_is_no_witness() -> None:
    assessment = _with(None)
    assert _refused(assessment).reason is LogJoinReason.NO_WITNESS
    assert assessment.parallel.reason is ParallelReason.LOG_NOT_JOINED


def test_a_start_time_only_asserted_is_refused() -> None:
    """A hand-written receipt naming a start time the front door does not serve."""
    refused = _refused(_with({"start": "1.70000001e+09"}))
    assert refused.reason is LogJoinReason.START_TIME_CONTRADICTED
    assert "1700000010" in refused.detail


def test_a_receipt_without_a_start_time_joins_nothing() -> None:
    refused = _refused(_with({"start": None}))
    assert refused.reason is LogJoinReason.WITNESS_WITHOUT_START_TIME
    assert "no /proc here" in refused.detail


def test_the_log_read_must_be_the_bytes_the_receipt_digested() -> None:
    refused = _refused(_with({"log_sha256": "0" * 64}))
    assert refused.reason is LogJoinReason.LOG_DIGEST_CONTRADICTED
    longer = _refused(_with({"log_bytes": 1}))
    assert longer.reason is LogJoinReason.LOG_DIGEST_CONTRADICTED


def test_the_receipts_pid_must_be_the_launchs() -> None:
    refused = _refused(_with({"pid": 4242}))
    assert refused.reason is LogJoinReason.PID_CONTRADICTED
    assert "[100]" in refused.detail
    assert "4242" in refused.detail


def test_a_log_with_two_launches_is_not_one_receipts() -> None:
    refused = _refused(_with({}, TP1 + TP1))
    assert refused.reason is LogJoinReason.LAUNCH_CONTRADICTED


def test_a_release_without_pid_tags_joins_on_start_time_and_digest() -> None:
    untagged = TP1.replace("(APIServer pid=100) ", "")
    decision = _with({"pid": 7}, untagged).log_join
    assert isinstance(decision, LogJoined), decision
    assert not decision.pid_tagged


# --- earliest first -------------------------------------------------------------------


def test_no_log_and_no_front_door() -> None:
    assert assess(probe_stub()).log_join.reason is LogJoinReason.NO_LOG
    alone = assess(None, _log())
    assert alone.log_join.reason is LogJoinReason.NO_FRONT_DOOR
    assert alone.log_join.subject is Subject.LAUNCH


def test_caller_assembled_bodies_carry_no_observed_marker() -> None:
    startup_log = _log()
    refused = _refused(assess(DOOR, startup_log, receipt=receipt_for(startup_log)))
    assert refused.reason is LogJoinReason.MARKER_UNOBSERVED
    assert "bracketed batch" in refused.detail


def test_a_front_door_without_the_marker_cannot_be_joined() -> None:
    """Several API-server processes: /metrics carries no process_start_time_seconds."""
    body = b"# HELP vllm:x x\n# TYPE vllm:x gauge\nvllm:x 1.0\n"
    door = witnessed_door(DOOR, faults={Route.METRICS: Fault(body=body)})
    startup_log = _log()
    refused = _refused(assess(door, startup_log, receipt=receipt_for(startup_log)))
    assert refused.reason is LogJoinReason.MARKER_UNOBSERVED
    assert "absent" in refused.detail


def test_an_unreachable_front_door_observes_no_marker() -> None:
    startup_log = _log()
    faults = {route: Fault(reset=True) for route in Route if route.probe_readable}
    door = witnessed_door(DOOR, faults=faults)
    assessment = assess(door, startup_log, receipt=receipt_for(startup_log))
    assert _refused(assessment).reason is LogJoinReason.MARKER_UNOBSERVED
    assert assessment.parallel.reason is ParallelReason.FRONT_DOOR_UNREACHABLE


def test_a_restart_mid_batch_has_no_one_process_to_join() -> None:
    startup_log = _log()
    door = probe_stub(restart_after_metrics_reads=1)
    refused = _refused(assess(door, startup_log, receipt=receipt_for(startup_log)))
    assert refused.reason is LogJoinReason.FRONT_DOOR_RESTARTED


def test_visible_contradictions_come_before_the_missing_witness() -> None:
    other_version = bundle(version_body("0.27.0"), server_info_json(tp=1), HEALTHY)
    assert (
        _refused(assess_joined(other_version, _log())).reason is LogJoinReason.VERSION_CONTRADICTED
    )
    tp2 = bundle(version_body("0.32.0"), server_info_json(tp=2), HEALTHY)
    refused = _refused(assess_joined(tp2, _log()))
    assert refused.reason is LogJoinReason.CONFIGURATION_CONTRADICTED
    assert "tensor_parallel_size 1 at log line 2 but 2" in refused.detail


def test_an_api_server_port_that_is_not_the_probed_one() -> None:
    startup_log = _log(banner("0.32.0") + args("{'port': 1}") + engine_init(tp=1))
    door = witnessed_door(DOOR)
    refused = _refused(assess(door, startup_log))
    assert refused.reason is LogJoinReason.PORT_CONTRADICTED
    assert "port 1 (line 2)" in refused.detail
    assert "the receipt's start time decides" in refused.remedy


def test_through_a_port_forward_the_receipts_start_time_decides() -> None:
    """The launch serves on port 1, the probe reads a forwarded port: with the receipt
    whose start time the front door serves, the join stands and says so."""
    startup_log = _log(banner("0.32.0") + args("{'port': 1}") + engine_init(tp=1))
    door = witnessed_door(DOOR)
    joined = assess(door, startup_log, receipt=receipt_for(startup_log)).log_join
    assert isinstance(joined, LogJoined)
    assert joined.port_note is not None
    assert "port 1 (line 2)" in joined.port_note
    assert "(a forward or a proxy)" in joined.detail
    other = receipt_for(startup_log, start="1.5e+09")
    refused = _refused(assess(door, startup_log, receipt=other))
    assert refused.reason is LogJoinReason.START_TIME_CONTRADICTED


@pytest.mark.parametrize(
    ("target", "printed", "contradicted"),
    [
        ("https://replica.example", 443, False),
        ("https://replica.example", 80, True),
        ("http://replica.example", 80, False),
        ("http://replica.example", 443, True),
    ],
)
def test_a_target_without_a_port_is_read_on_its_schemes_default_port(
    target: str, printed: int, contradicted: bool
) -> None:
    """No port in the target: the probe read 443 for https and 80 for http (RFC 9110
    section 4.2), so a launch given the other one is the visible contradiction."""
    answers = {
        route: (200, (("content-type", "application/json"),), body) for route, body in DOOR.bodies
    }
    door = readback_from_batch(_answered_batch(target, answers))
    startup_log = _log(banner("0.32.0") + args(f"{{'port': {printed}}}") + engine_init(tp=1))
    refused = _refused(assess(door, startup_log))
    assert (refused.reason is LogJoinReason.PORT_CONTRADICTED) is contradicted, refused
    if contradicted:
        probed = 443 if target.startswith("https") else 80
        assert f"but the probe read port {probed}" in refused.detail


@pytest.mark.parametrize("printed", ["\u00b2", "'1'", "None", "1" * 19])
def test_a_port_argument_that_is_not_a_plain_number_contradicts_nothing(printed: str) -> None:
    """The adapter reads ``--port`` as a plain number or not at all: a superscript two
    (which ``str.isdigit`` accepts and ``int`` refuses) once raised here."""
    startup_log = _log(banner("0.32.0") + args(f"{{'port': {printed}}}") + engine_init(tp=1))
    refused = _refused(assess(witnessed_door(DOOR), startup_log))
    assert refused.reason is LogJoinReason.NO_WITNESS, refused


def test_on_the_launchs_own_port_the_join_has_no_port_note() -> None:
    door = witnessed_door(DOOR)
    port = door.batch.target.rsplit(":", 1)[1]
    startup_log = _log(banner("0.32.0") + args(f"{{'port': {port}}}") + engine_init(tp=1))
    joined = assess(door, startup_log, receipt=receipt_for(startup_log)).log_join
    assert isinstance(joined, LogJoined)
    assert joined.port_note is None
    assert "forward" not in joined.detail


def test_served_names_that_differ_are_another_launch() -> None:
    door = bundle(version_body("0.32.0"), models_body(("a", "/models/a")), HEALTHY)
    text = banner("0.32.0") + args("{'model': '/models/b'}") + engine_init(tp=1)
    refused = _refused(assess_joined(door, _log(text)))
    assert refused.reason is LogJoinReason.CONFIGURATION_CONTRADICTED
    assert "/models/b" in refused.detail


# --- what a person reads ----------------------------------------------------------------


def test_the_established_detail_names_signer_start_digest_and_pid() -> None:
    decision = _with({}).log_join
    assert isinstance(decision, LogJoined)
    assert decision.detail == (
        f"the receipt, signed by key id {LAUNCHER_KEY.key_id} (verified): its start time "
        "1700000000 is the front door's process_start_time_seconds; "
        f"its digest of {_log().size_bytes:,} log bytes is the log's; the launch's "
        "APIServer tags name pid 100"
    )


def test_no_witness_names_the_launcher() -> None:
    refused = _refused(_with(None))
    assert "vllm-evidence launch" in refused.remedy


# --- the receipt as read ---------------------------------------------------------------


def _receipt_json(**fields: object) -> bytes:
    document: dict[str, object] = {
        "schema": "vllm-evidence.launch-receipt/1",
        "pid": 1,
        "process_start_time_seconds": WITNESSED_START,
        "start_time_unavailable": None,
        "argv": ["vllm", "serve", "--api-key", "sk-abc"],
        "host": "h",
        "log_path": None,
        "log_bytes": 0,
        "log_sha256": "0" * 64,
    }
    document.update(fields)
    return json.dumps(document).encode()


def test_a_receipt_read_scrubs_secrets_from_its_argv() -> None:
    receipt = parse_launch_receipt(_receipt_json())
    assert receipt.argv == ("vllm", "serve", "--api-key", "***")


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"schema": "other/1"}, "schema must be"),
        ({"pid": "1"}, "'pid'"),
        ({"pid": 0}, "pid must be positive"),
        ({"log_sha256": "xyz"}, "log_sha256"),
        ({"process_start_time_seconds": "soon"}, "not a number"),
        ({"process_start_time_seconds": "-1"}, "positive"),
        ({"process_start_time_seconds": None}, "no process_start_time_seconds"),
        ({"extra": 1}, "unknown field"),
    ],
)
def test_a_malformed_receipt_is_one_input_error(fields: dict[str, object], needle: str) -> None:
    with pytest.raises(InputError, match="launch receipt") as raised:
        parse_launch_receipt(_receipt_json(**fields))
    assert needle in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_pipeline_size_that_differs_is_named_with_both_sources() -> None:
    pp2 = _log(banner("0.32.0") + engine_init(tp=1, pp=2))
    refused = _refused(assess_joined(DOOR, pp2))
    assert refused.reason is LogJoinReason.CONFIGURATION_CONTRADICTED
    assert refused.detail == (
        "pipeline_parallel_size 2 at log line 2 but 1 at GET /server_info?config_format=json"
    )


def _models_with_lora(base_root: str) -> dict[Route, bytes]:
    """/v1/models: base card ``m`` at ``base_root`` and a LoRA card on it at /adapters/l."""
    data = [
        {"id": "m", "object": "model", "root": base_root, "parent": None},
        {"id": "lora1", "object": "model", "root": "/adapters/l", "parent": "m"},
    ]
    return {Route.MODELS: json.dumps({"object": "list", "data": data}).encode()}


def test_a_lora_cards_root_is_not_the_models_root() -> None:
    """The launch's model is compared with the base card's root only: a LoRA card's
    root (its adapter path) neither contradicts it nor hides a base root that does."""
    text = (
        banner("0.32.0")
        + args("{'model': '/models/m', 'served_model_name': ['m']}")
        + engine_init(tp=1)
    )
    other = bundle(version_body("0.32.0"), _models_with_lora("/models/other"), HEALTHY)
    refused = _refused(assess_joined(other, _log(text)))
    assert refused.reason is LogJoinReason.CONFIGURATION_CONTRADICTED
    assert refused.detail == (
        "the launch's model '/models/m' (line 2) is not /v1/models' root '/models/other'"
    )
    same = bundle(version_body("0.32.0"), _models_with_lora("/models/m"), HEALTHY)
    assert isinstance(assess_joined(same, _log(text)).log_join, LogJoined)


# --- what a witness refusal carries: the front door's marker and the receipt ----------


def test_each_witness_refusal_keeps_the_marker_and_the_receipt() -> None:
    """Past the marker, every refusal names the front door's start time it compared
    (1.7e+09, served by the live replay) and the receipt it read."""
    cases: tuple[tuple[dict[str, object], str, LogJoinReason], ...] = (
        ({"start": None}, TP1, LogJoinReason.WITNESS_WITHOUT_START_TIME),
        ({"start": "1.70000001e+09"}, TP1, LogJoinReason.START_TIME_CONTRADICTED),
        ({"log_sha256": "0" * 64}, TP1, LogJoinReason.LOG_DIGEST_CONTRADICTED),
        ({}, TP1 + TP1, LogJoinReason.LAUNCH_CONTRADICTED),
        ({"pid": 4242}, TP1, LogJoinReason.PID_CONTRADICTED),
    )
    for fields, text, reason in cases:
        refused = _refused(_with(fields, text))
        assert refused.reason is reason, refused
        assert refused.process_start_seconds == Decimal("1700000000"), refused
        assert refused.receipt is not None, refused
        assert refused.receipt.pid == fields.get("pid", 100)
        assert refused.receipt.log_sha256 == fields.get("log_sha256", sha256(text.encode()))


def test_a_digest_contradiction_shows_twelve_hex_digits_of_each() -> None:
    text = TP1
    refused = _refused(_with({"log_bytes": 1, "log_sha256": "0123456789abcdef" * 4}, text))
    assert refused.reason is LogJoinReason.LOG_DIGEST_CONTRADICTED
    assert len(text.encode()) == 445
    assert refused.detail == (
        "the log read is 445 bytes with SHA-256 "
        f"{sha256(text.encode())[:12]}…, the receipt digested 1 bytes with SHA-256 "
        "0123456789ab…"
    )


def test_a_front_door_that_did_not_answer_is_named_as_such() -> None:
    """Unreachable, or answering nothing readable: the log join names that, not the
    bracket read it leads to (each alone is enough)."""
    startup_log = _log()
    reset = {route: Fault(reset=True) for route in Route if route.probe_readable}
    errors = {route: Fault(status=500) for route in Route if route.probe_readable}
    unreachable = _refused(
        assess(witnessed_door(DOOR, faults=reset), startup_log, receipt=receipt_for(startup_log))
    )
    assert unreachable.reason is LogJoinReason.MARKER_UNOBSERVED
    assert unreachable.detail.startswith("no request to http://127.0.0.1:")
    assert unreachable.detail.endswith(
        " was answered (EOFError: the server closed the connection without answering)"
    )
    silent = _refused(
        assess(witnessed_door(DOOR, faults=errors), startup_log, receipt=receipt_for(startup_log))
    )
    assert silent.reason is LogJoinReason.MARKER_UNOBSERVED
    assert silent.detail == (
        "no route answered with something this package reads (/version http_error, "
        "/v1/models http_error, /metrics http_error, /server_info http_error, "
        "/server_info?config_format=json http_error, /get_world_size http_error, "
        "/health parsed)"
    )
    for refused in (unreachable, silent):
        assert refused.remedy == (
            "probe the server itself (one bracketed batch) while /metrics answers with "
            "process_start_time_seconds (one API-server process)"
        )
        assert refused.process_start_seconds is None
