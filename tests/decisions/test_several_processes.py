"""One URL, two processes: a balancer in front of replicas is refused by name.

Two stub replicas of the real 0.32 capture (another process: a later start time) behind
one port (``tests/_balancer.py``), alternating per request (nginx round-robin) or per
connection (a Kubernetes Service): every probe, with or without the development routes,
is refused ``several_processes`` and establishes no serving claim
(``front_door_several_processes``), and the log is not joined to it.  In the other
direction: one stub behind the same balancer (a sticky or single upstream) still joins,
and a stub restarted between the two ends is still ``marker_changed``.  The rules
themselves (which reads disagree, in which order) are pinned on generated batches, and
a capture saved before the twin reads still loads and joins, saying processes were not
counted, with the log join never resting on it.  Every expected word is written by hand.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests._balancer import Balancer, Per, balancer
from tests._evidence import log_port, real_log, receipt_for
from tests._paths import REAL
from tests._ports import serve_on_port
from tests._reseal import reseal
from tests._signing import CAPTURE_KEY
from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._adapters.receipt import LaunchReceipt
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture._signing import canonical
from vllm_evidence._capture.batch import CaptureBatch, CaptureOrigin
from vllm_evidence._capture.directory import save
from vllm_evidence._capture.generated import _answered_batch
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._capture.signing import SigningKey
from vllm_evidence._readback import CapturedReadback, load, readback_from_batch
from vllm_evidence.cli import main
from vllm_evidence.decisions import (
    JoinedIncarnation,
    JoinReason,
    JoinUnestablished,
    LogJoined,
    LogJoinReason,
    LogJoinRefused,
)
from vllm_evidence.errors import CaptureIntegrityError
from vllm_evidence.testing._stub import Fault, serve_capture
from vllm_evidence.upstream import Route

ROOT = Path(__file__).resolve().parents[2]
#: The real capture's marker, and the other replica's (the stub adds 1000 s per restart).
A_START = Decimal("1796011852.21")
B_START = Decimal("1796012852.21")
SERVING = ("parallel", "capacity", "served_identity", "health_coverage")
SEVERAL_REMEDY = (
    "probe the serving process itself (the pod's own address, not a Service or a "
    "balancer in front of several replicas)"
)
OPENING_SPLIT = (
    "the two opening /metrics reads, back to back, carried process_start_time_seconds "
    f"{A_START} then {B_START}"
)


@contextlib.contextmanager
def _replicas(
    per: Per, *, faults: tuple[Mapping[Route, Fault], Mapping[Route, Fault]] = ({}, {})
) -> Iterator[Balancer]:
    """Replica A (the real capture) and replica B (the same capture, another process:
    its start time 1000 s later) behind one balancer."""
    with (
        serve_capture(REAL, faults=faults[0]) as a,
        serve_capture(REAL, faults=faults[1], restart_after_metrics_reads=0) as b,
        balancer([a.url, b.url], per=per) as door,
    ):
        yield door


def _probe(url: str, *, development_routes: bool) -> CapturedReadback:
    return readback_from_batch(probe_sync(url, development_routes=development_routes))


def _refused_join(assessment: Assessment) -> JoinUnestablished:
    join = assessment.front_door_join
    assert isinstance(join, JoinUnestablished), join
    return join


# --- a balancer in front of two replicas: refused by name, in both route sets -------------


@pytest.mark.parametrize("development_routes", [True, False], ids=["dev", "no-dev"])
@pytest.mark.parametrize("per", ["request", "connection"])
def test_two_replicas_behind_one_url_are_several_processes(
    per: Per, development_routes: bool
) -> None:
    with _replicas(per) as door:
        readback = _probe(door.url, development_routes=development_routes)
        metrics_upstreams = door.upstreams_of("/metrics")
    # the balancer did split the two opening reads: A, then B
    assert metrics_upstreams[:2] == [0, 1]
    join = _refused_join(assess(readback))
    assert join.reason is JoinReason.SEVERAL_PROCESSES
    assert join.detail == f"several processes answer this URL: {OPENING_SPLIT}"
    assert join.remedy == SEVERAL_REMEDY
    assert join.law is None  # /version may be either process's: no release scopes it


@pytest.mark.parametrize("development_routes", [True, False], ids=["dev", "no-dev"])
@pytest.mark.parametrize("per", ["request", "connection"])
def test_several_processes_establish_no_serving_claim(per: Per, development_routes: bool) -> None:
    with _replicas(per) as door:
        readback = _probe(door.url, development_routes=development_routes)
    for startup_log in (None, real_log()):
        assessment = assess(readback, startup_log)
        for claim in SERVING:
            decision = getattr(assessment, claim)
            assert decision.reason.value == "front_door_several_processes", (claim, decision)
            assert type(decision.reason).FRONT_DOOR_SEVERAL_PROCESSES is decision.reason
            assert decision.detail == (
                f"several processes answer this URL ({OPENING_SPLIT}): /version, /health "
                "and the other routes may each have come from another one"
            )
            assert decision.remedy == SEVERAL_REMEDY
        assert assessment.front_door_join.reason is JoinReason.SEVERAL_PROCESSES


@pytest.mark.parametrize("dead", [0, 1], ids=["A-dead", "B-dead"])
def test_a_dead_replica_behind_the_balancer_is_not_covered_by_the_others_health(
    dead: int,
) -> None:
    """The issue's case: A's engine dead, B's /health 200 reported as A's.  Whichever
    replica /health reaches, the front door establishes no health coverage."""
    faults: list[Mapping[Route, Fault]] = [{}, {}]
    faults[dead] = {Route.HEALTH: Fault(status=503)}
    with _replicas("request", faults=(faults[0], faults[1])) as door:
        readback = _probe(door.url, development_routes=True)
    decision = assess(readback).health_coverage
    assert decision.reason.value == "front_door_several_processes", decision


def test_the_log_of_one_replica_is_not_joined_to_the_balancer() -> None:
    """Replica A's log and a receipt with A's start time: the balancer's /metrics reads
    may all reach A, the other routes B; the log join refuses it."""
    startup_log = real_log()
    with _replicas("request") as door:
        readback = _probe(door.url, development_routes=True)
    receipt = receipt_for(startup_log, start=str(A_START))
    assessment = assess(readback, startup_log, receipt=receipt)
    decision = assessment.log_join
    assert isinstance(decision, LogJoinRefused)
    assert decision.reason is LogJoinReason.MARKER_UNOBSERVED
    assert decision.detail == f"several processes answer this URL: {OPENING_SPLIT}"
    for claim in SERVING:
        assert getattr(assessment, claim).reason.value == "front_door_several_processes"


@pytest.mark.parametrize("development_routes", [True, False], ids=["dev", "no-dev"])
def test_the_cli_completes_and_a_required_serving_claim_exits_3(development_routes: bool) -> None:
    flags = [] if development_routes else ["--no-development-routes"]
    with _replicas("request") as door:
        plain = _run(["probe", door.url, "--json", *flags])
        required = _run(["probe", door.url, "--require", "capacity", *flags])
    status, out = plain
    assert status == 0  # a completed assessment, whatever its verdicts
    document = json.loads(out)
    assert _find(document, "front_door_join")["reason"] == "several_processes"
    assert required[0] == 3


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    return status, out.getvalue()


def _find(document: Any, key: str) -> Any:
    """The first value under ``key`` anywhere in a JSON document."""
    if isinstance(document, dict):
        if key in document:
            return document[key]
        values = list(document.values())
    elif isinstance(document, list):
        values = document
    else:
        return None
    for value in values:
        found = _find(value, key)
        if found is not None:
            return found
    return None


# --- the other direction: one process behind the balancer joins; a restart is a restart ---


@pytest.mark.parametrize("development_routes", [True, False], ids=["dev", "no-dev"])
@pytest.mark.parametrize("per", ["request", "connection"])
def test_one_process_behind_the_balancer_still_joins(per: Per, development_routes: bool) -> None:
    with serve_capture(REAL) as only, balancer([only.url], per=per) as door:
        readback = _probe(door.url, development_routes=development_routes)
    join = assess(readback).front_door_join
    assert isinstance(join, JoinedIncarnation), join
    assert join.process_start_seconds == A_START
    assert join.processes_counted
    for claim in SERVING:
        assert getattr(assess(readback), claim).reason.value != "front_door_several_processes"


@pytest.mark.parametrize("development_routes", [True, False], ids=["dev", "no-dev"])
@pytest.mark.parametrize("behind", [True, False], ids=["behind-balancer", "direct"])
def test_a_restart_between_the_ends_is_still_marker_changed(
    behind: bool, development_routes: bool
) -> None:
    with contextlib.ExitStack() as stack:
        stub = stack.enter_context(serve_capture(REAL, restart_after_metrics_reads=1))
        url = stack.enter_context(balancer([stub.url])).url if behind else stub.url
        readback = _probe(url, development_routes=development_routes)
    join = _refused_join(assess(readback))
    assert join.reason is JoinReason.MARKER_CHANGED
    assert join.detail == f"process_start_time_seconds {A_START} then {B_START}"
    for claim in SERVING:
        assert getattr(assess(readback), claim).reason.value == "front_door_restarted"


# --- the rules, on generated batches --------------------------------------------------------

_TEXT = (("content-type", "text/plain; version=1.0.0; charset=utf-8"),)
_JSON = (("content-type", "application/json"),)
REAL_METRICS = (REAL / "metrics.body").read_bytes()
LATER_METRICS = REAL_METRICS.replace(b"1.79601185221e+09", b"1.79601285221e+09")
NO_MARKER = b"# HELP x y\n# TYPE x gauge\nx 1.0\n"
ANSWERS = {
    Route.VERSION: (200, _JSON, b'{"version":"0.32.0"}'),
    Route.METRICS: (200, _TEXT, REAL_METRICS),
}

_A = (200, _TEXT, REAL_METRICS)
_B = (200, _TEXT, LATER_METRICS)
_NONE = (200, _TEXT, NO_MARKER)
_ERROR = (500, _JSON, b'{"detail":"Internal Server Error"}')


def _join(bracket: tuple[Any, Any, Any, Any]) -> Any:
    batch = _answered_batch("http://127.0.0.1:8000", ANSWERS, bracket_metrics=bracket)
    return assess(readback_from_batch(batch)).front_door_join


def _split(end: str, first: object, then: object) -> str:
    return (
        f"the two {end} /metrics reads, back to back, carried process_start_time_seconds "
        f"{first} then {then}"
    )


EARLIER_CLOSE = (
    f"the closing /metrics read's process started at {A_START}, before the opening "
    f"read's ({B_START}): both were running at once"
)


@pytest.mark.parametrize(
    ("bracket", "detail"),
    [
        ((_A, _B, _A, _A), _split("opening", A_START, B_START)),
        ((_A, _A, _A, _B), _split("closing", A_START, B_START)),
        ((_B, _A, _B, _B), _split("opening", B_START, A_START)),
        ((_A, _NONE, _A, _A), _split("opening", A_START, "absent")),
        # each end agrees, but the closing process started before the opening one: both
        # were running at once (a restart's replacement starts later)
        ((_B, _B, _A, _A), EARLIER_CLOSE),
        # definite, so named before a failed read elsewhere
        ((_ERROR, _ERROR, _A, _B), _split("closing", A_START, B_START)),
    ],
    ids=["opening", "closing", "opening-reversed", "marker-and-none", "earlier-close", "first"],
)
def test_reads_that_disagree_are_several_processes(
    bracket: tuple[Any, Any, Any, Any], detail: str
) -> None:
    join = _join(bracket)
    assert isinstance(join, JoinUnestablished), join
    assert join.reason is JoinReason.SEVERAL_PROCESSES
    assert join.detail == f"several processes answer this URL: {detail}"


def test_each_end_agreeing_and_a_later_close_is_a_restart() -> None:
    join = _join((_A, _A, _B, _B))
    assert isinstance(join, JoinUnestablished), join
    assert join.reason is JoinReason.MARKER_CHANGED


def test_four_agreeing_reads_join_with_processes_counted() -> None:
    join = _join((_A, _A, _A, _A))
    assert isinstance(join, JoinedIncarnation), join
    assert (join.process_start_seconds, join.processes_counted) == (A_START, True)


@pytest.mark.parametrize(
    ("bracket", "side"),
    [((_A, _ERROR, _A, _A), "opening"), ((_A, _A, _A, _ERROR), "closing")],
)
def test_a_twin_that_did_not_parse_leaves_the_processes_uncounted(
    bracket: tuple[Any, Any, Any, Any], side: str
) -> None:
    join = _join(bracket)
    assert isinstance(join, JoinUnestablished), join
    assert join.reason is JoinReason.BRACKET_READ_FAILED
    assert join.detail == (
        f"{side} twin /metrics read: HttpError (the processes behind this URL were not "
        "counted at that end)"
    )
    assert join.remedy == "probe again once /metrics answers"


def test_both_reads_of_an_end_without_the_marker_is_marker_absent() -> None:
    join = _join((_NONE, _NONE, _A, _A))
    assert isinstance(join, JoinUnestablished), join
    assert join.reason is JoinReason.MARKER_ABSENT


def test_the_bracket_reports_what_the_rules_read() -> None:
    split = _answered_batch("http://127.0.0.1:8000", ANSWERS, bracket_metrics=(_A, _B, _A, _A))
    bracket = readback_from_batch(split).bracket
    assert bracket.processes_counted
    assert bracket.several_processes() == OPENING_SPLIT
    assert not bracket.marker_changed()  # several processes, not a restart
    assert bracket.markers() == (A_START, A_START)


# --- captures saved before the twin reads ----------------------------------------------------

#: Saved after the probe read /metrics twice at each end (recorded this session).
SAVED_WITH_TWINS = {
    "vllm-0.31.0-cpu/tp1",
    "vllm-0.31.0-cpu/tp2",
    "vllm-0.32.0-cpu/dp2-eager",
    "vllm-0.32.0-cpu/tp1-hybrid",
}
OLD_CAPTURES = sorted(
    p
    for p in (ROOT / "tests" / "fixtures" / "real").glob("*/*/capture")
    if "/".join(p.parts[-3:-1]) not in SAVED_WITH_TWINS
)


def test_there_are_captures_saved_before_the_twin_reads() -> None:
    assert len(OLD_CAPTURES) >= 10
    for directory in OLD_CAPTURES:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        roles = [r["role"] for r in manifest["requests"]]
        assert roles.count("bracket_open") == roles.count("bracket_close") == 1, directory


@pytest.mark.parametrize("directory", OLD_CAPTURES, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_an_old_capture_loads_and_is_never_several_processes(directory: Path) -> None:
    loaded = load(directory)
    assert isinstance(loaded, CapturedReadback)
    assert not loaded.batch.processes_counted
    assert loaded.batch.bracket_open_twin is None
    assert loaded.batch.bracket_close_twin is None
    assert not loaded.bracket.processes_counted
    join = assess(loaded).front_door_join
    assert join.reason is not JoinReason.SEVERAL_PROCESSES
    if isinstance(join, JoinedIncarnation):
        assert not join.processes_counted
        assert join.detail == (
            f"both /metrics reads carried process_start_time_seconds "
            f"{join.process_start_seconds}; processes not counted: the capture was saved "
            "before the probe read /metrics twice at each end, so several processes behind "
            "this URL would not show"
        )


def _strip_twins(document: dict[str, Any]) -> None:
    """What a capture saved before the twin reads lists: one read at each end."""
    seen: set[str] = set()
    kept = []
    for request in document["requests"]:
        if request["role"] in seen:
            continue
        if request["role"] != "route":
            seen.add(request["role"])
        kept.append(request)
    document["requests"] = kept


def _old_format(batch: CaptureBatch, directory: Path, key: SigningKey) -> Path:
    """``batch`` saved signed under ``key``, then rewritten as a capture saved before the
    twin reads, sealed and signed again under the same key (as an older version would
    have written it)."""
    save(batch, directory, sign_key=key)
    for name in ("metrics__twin", "metrics__bracket_close__twin"):
        for suffix in (".body", ".headers"):
            (directory / f"{name}{suffix}").unlink()
    path = directory / "manifest.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    _strip_twins(document)
    covered = canonical(document, without="seal")
    document["seal"]["canonical_sha256"] = hashlib.sha256(covered).hexdigest()
    document["seal"]["signature"]["ed25519"] = key.sign(covered)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return directory


KEY = CAPTURE_KEY


def _probed_with_receipt() -> tuple[CapturedReadback, LaunchReceipt]:
    """The real capture served on its log's port and probed, and a receipt whose start
    time that front door carries: with the real log, joined."""
    startup_log = real_log()
    with serve_on_port(REAL, port=log_port(startup_log)) as door:
        readback = readback_from_batch(probe_sync(door.url))
    metrics = readback.metrics
    assert isinstance(metrics, Parsed)
    assert metrics.observation.process_start_time is not None
    start = str(metrics.observation.process_start_time.seconds)
    return readback, receipt_for(startup_log, start=start)


def test_a_signed_old_capture_joins_the_front_door_but_never_the_log(tmp_path: Path) -> None:
    """A capture saved before the twin reads, signed under the caller's key: its bytes are
    vouched for, so its front-door join stands (processes not counted), but a receipt's
    start time seen on its /metrics reads says nothing of the other routes when a
    balancer may stand in front: the log join refuses it.  The same capture with its
    twins joins the log."""
    readback, receipt = _probed_with_receipt()
    startup_log = real_log()
    assert isinstance(assess(readback, startup_log, receipt=receipt).log_join, LogJoined)
    counted = load(
        save(readback.batch, tmp_path / "new", sign_key=KEY), verify_key=KEY.verification_key
    )
    assert isinstance(counted, CapturedReadback)
    assert counted.batch.origin is CaptureOrigin.LOADED_SIGNED
    assert isinstance(assess(counted, startup_log, receipt=receipt).log_join, LogJoined)
    old = load(_old_format(readback.batch, tmp_path / "old", KEY), verify_key=KEY.verification_key)
    assert isinstance(old, CapturedReadback)
    assert old.batch.origin is CaptureOrigin.LOADED_SIGNED
    assert not old.batch.processes_counted
    assessment = assess(old, startup_log, receipt=receipt)
    join = assessment.front_door_join
    assert isinstance(join, JoinedIncarnation)
    assert not join.processes_counted
    decision = assessment.log_join
    assert isinstance(decision, LogJoinRefused)
    assert decision.reason is LogJoinReason.MARKER_UNOBSERVED
    assert decision.detail == join.detail
    assert decision.process_start_seconds == join.process_start_seconds


def test_stripping_the_twins_of_a_balancers_signed_capture_is_no_side_door(
    tmp_path: Path,
) -> None:
    """Dropping the twin reads that showed a balancer: a signed capture no longer
    verifies (only the key holder could re-sign it); unsigned, anyone could have edited
    any byte anyway, and the log join never rests on it (``capture_unverified``)."""
    with _replicas("request") as door:
        batch = probe_sync(door.url)
    assert assess(readback_from_batch(batch)).front_door_join.reason is (
        JoinReason.SEVERAL_PROCESSES
    )
    signed = save(batch, tmp_path / "signed", sign_key=KEY)
    for name in ("metrics__twin", "metrics__bracket_close__twin"):
        for suffix in (".body", ".headers"):
            (signed / f"{name}{suffix}").unlink()
    reseal(signed, _strip_twins)
    with pytest.raises(CaptureIntegrityError, match="does not verify"):
        load(signed, verify_key=KEY.verification_key)
    stripped = load(signed)  # read unverified: loaded bytes
    assert isinstance(stripped, CapturedReadback)
    assert stripped.batch.origin is CaptureOrigin.LOADED
    startup_log = real_log()
    receipt = receipt_for(startup_log, start=str(A_START))
    assessment = assess(stripped, startup_log, receipt=receipt)
    assert isinstance(assessment.front_door_join, JoinedIncarnation)
    assert not assessment.front_door_join.processes_counted
    assert assessment.log_join.reason is LogJoinReason.CAPTURE_UNVERIFIED


def test_the_captures_saved_since_carry_the_twin_reads() -> None:
    # The other direction: a capture saved by this version has both twins.
    for name in sorted(SAVED_WITH_TWINS):
        manifest = ROOT / "tests" / "fixtures" / "real" / name / "capture" / "manifest.json"
        assert manifest.read_text(encoding="utf-8").count('"bracket_close"') == 2, name
