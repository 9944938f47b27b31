"""Rounds and their transitions, against the stub front door serving a real recorded
server (:mod:`vllm_evidence.watch`).

Each change made between two rounds — a restart, the server going away and coming back,
a worker's death appended to the followed log, a new launch, a log deleted — is one
transition of its kind in the next round (one per claim it changes), and none in the
rounds after it; a steady server makes none.  One target's silence, slowness or error
is its own round's state: the others are read all the same.  Every expected transition is
written by hand from what the test did.
"""

from __future__ import annotations

import asyncio
import contextlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.watch._kit import (
    DEATH,
    KILL,
    PUBLIC,
    START,
    launch_files,
    log_lines,
    turn,
    write_receipt,
)
from vllm_evidence._capture.follow import FollowEvent, FollowState
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.upstream import Route
from vllm_evidence.watch import (
    ClaimChanged,
    LogChanged,
    Reach,
    ReachChanged,
    Restarted,
    Round,
    Target,
    Transition,
    Watcher,
    watch,
)

LATER = Decimal(START) + 1000  # what the stub serves after one restart


def kinds(round_: Round) -> list[tuple[str, ...]]:
    """Each transition as ``(kind, what changed)``, in order."""
    found: list[tuple[str, ...]] = []
    for t in round_.transitions:
        match t:
            case ClaimChanged():
                found.append(("claim", t.claim, t.before.verdict, t.after.verdict, t.after.reason))
            case Restarted():
                found.append(("restart", str(t.before), str(t.after)))
            case ReachChanged():
                found.append(("reach", t.before.value, t.after.value))
            case LogChanged():
                event = "" if t.event is None else t.event.value
                found.append(("log", t.before.value, t.after.value, event))
    return found


def verdicts(round_: Round, index: int = 0) -> dict[str, str]:
    return {c.claim: c.verdict for c in round_.targets[index].claims}


# --- steady, restarted, gone ---------------------------------------------------------


def test_a_steady_server_makes_no_transitions() -> None:
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url)])
        first, second, third = turn(watcher), turn(watcher), turn(watcher)
    assert first.targets[0].reach is Reach.ANSWERING
    assert first.targets[0].process_start_seconds == Decimal(START)
    assert len(first.targets[0].claims) == 6
    assert (first.transitions, second.transitions, third.transitions) == ((), (), ())
    assert [r.index for r in (first, second, third)] == [1, 2, 3]


def test_a_restart_between_rounds_is_one_restart_transition() -> None:
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url)])
        turn(watcher)
        door.restart()
        restarted, after = turn(watcher), turn(watcher)
    assert kinds(restarted) == [("restart", str(Decimal(START)), str(LATER))]
    assert restarted.targets[0].process_start_seconds == LATER
    assert after.transitions == ()


def test_a_server_that_goes_away_and_comes_back_is_one_transition_each_way() -> None:
    with contextlib.ExitStack() as stack:
        door = stack.enter_context(serve_capture(KILL))
        port = door.port
        watcher = Watcher([Target(door.url)], timeout=2, deadline=4)
        up = turn(watcher)
        stack.close()  # the server goes away
        gone, still_gone = turn(watcher), turn(watcher)
        stack.enter_context(serve_capture(KILL, port=port, bind_wait_s=5))
        back, steady = turn(watcher), turn(watcher)
    assert up.targets[0].reach is Reach.ANSWERING
    assert kinds(gone) == [("reach", "answering", "unreachable")]
    assert gone.targets[0].reach_detail is not None
    assert gone.targets[0].reach_detail.startswith("no request to http://127.0.0.1:")
    assert not gone.targets[0].ready
    assert still_gone.transitions == ()
    # The same process (the same start time) and the same verdicts: only its return.
    assert kinds(back) == [("reach", "unreachable", "answering")]
    assert steady.transitions == ()


def test_a_server_that_comes_back_restarted_shows_both() -> None:
    with contextlib.ExitStack() as stack:
        door = stack.enter_context(serve_capture(KILL))
        port = door.port
        watcher = Watcher([Target(door.url)], timeout=2, deadline=4)
        turn(watcher)
        stack.close()
        turn(watcher)
        again = stack.enter_context(serve_capture(KILL, port=port, bind_wait_s=5))
        again.restart()
        back = turn(watcher)
    assert kinds(back) == [
        ("reach", "unreachable", "answering"),
        ("restart", str(Decimal(START)), str(LATER)),
    ]


# --- a followed log: a lost rank, a new launch ---------------------------------------


def test_a_lost_rank_is_one_transition_for_each_claim_it_ends(tmp_path: Path) -> None:
    log, receipt = launch_files(tmp_path)
    with serve_capture(KILL) as door:
        target = Target(door.url, startup_log=log, receipt=receipt)
        watcher = Watcher([target], require=("parallel",), receipt_key=PUBLIC)
        before = turn(watcher)
        with log.open("ab") as handle:  # the worker is killed: its death line is printed
            handle.write(log_lines()[DEATH])
        write_receipt(receipt, log)
        lost, after = turn(watcher), turn(watcher)
    assert verdicts(before)["log_join"] == "established"
    assert verdicts(before)["parallel"] == "established"
    assert before.targets[0].ready
    assert before.transitions == ()
    assert kinds(lost) == [
        ("claim", "parallel", "established", "refused", "rank_lost"),
        ("claim", "health_coverage", "established", "refused", "rank_lost"),
    ]
    assert not lost.targets[0].ready
    assert lost.targets[0].log is not None
    assert lost.targets[0].log.read_bytes == log.stat().st_size
    assert after.transitions == ()


def test_a_new_launch_brings_the_rank_back(tmp_path: Path) -> None:
    log, receipt = launch_files(tmp_path)
    lines = log_lines()
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url, startup_log=log, receipt=receipt)], receipt_key=PUBLIC)
        with log.open("ab") as handle:
            handle.write(lines[DEATH])
        write_receipt(receipt, log)
        lost = turn(watcher)
        # The launcher starts vLLM again: the log emptied and the new launch printed
        # (one access line fewer), its receipt naming the new process.
        door.restart()
        with log.open("r+b") as handle:
            handle.truncate(0)
            handle.write(b"".join(lines[: DEATH - 1]))
        write_receipt(receipt, log, start=str(LATER))
        back = turn(watcher)
    assert verdicts(lost)["parallel"] == "refused"
    assert kinds(back) == [
        ("restart", str(Decimal(START)), str(LATER)),
        ("log", "following", "following", "truncated"),
        ("claim", "parallel", "refused", "established", "established"),
        ("claim", "health_coverage", "refused", "established", "established"),
    ]


def test_a_restart_drops_the_log_join_until_the_new_launchs_receipt(tmp_path: Path) -> None:
    log, receipt = launch_files(tmp_path)
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url, startup_log=log, receipt=receipt)], receipt_key=PUBLIC)
        joined = turn(watcher)
        door.restart()  # a new process; the receipt still names the old one
        dropped = turn(watcher)
        still = turn(watcher)
        with log.open("ab") as handle:  # the new launch's log and receipt arrive
            handle.write(b'INFO:     127.0.0.1:40000 - "GET /health HTTP/1.1" 200 OK\n')
        write_receipt(receipt, log, start=str(LATER))
        rejoined = turn(watcher)
    assert verdicts(joined)["log_join"] == "established"
    assert ("restart", str(Decimal(START)), str(LATER)) in kinds(dropped)
    refused = dropped.targets[0].claim("log_join")
    assert refused is not None
    assert (refused.verdict, refused.reason) == ("refused", "start_time_contradicted")
    assert ("claim", "log_join", "established", "refused", "start_time_contradicted") in kinds(
        dropped
    )
    # What rests on the log is dropped with it: the ranks come only from the log.
    assert verdicts(dropped)["parallel"] == "refused"
    assert still.transitions == ()
    assert verdicts(rejoined)["log_join"] == "established"
    assert ("claim", "log_join", "refused", "established", "established") in kinds(rejoined)
    assert verdicts(rejoined)["parallel"] == "established"


def test_a_log_that_disappears_is_a_state_said_once(tmp_path: Path) -> None:
    log, receipt = launch_files(tmp_path)
    kept = log.read_bytes()
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url, startup_log=log, receipt=receipt)], receipt_key=PUBLIC)
        turn(watcher)
        log.unlink()
        gone, still_gone = turn(watcher), turn(watcher)
        log.write_bytes(kept)
        back = turn(watcher)
    view = gone.targets[0].log
    assert view is not None
    assert (view.state, view.read_bytes, view.file_bytes) == (FollowState.MISSING, 0, None)
    assert ("log", "following", "missing", "") in kinds(gone)
    # Without the log, the log join is refused: the bytes read before are not evidence
    # of what the file holds now.
    assert verdicts(gone)["log_join"] == "refused"
    assert any("startup log" in p and "missing" in p for p in gone.targets[0].problems)
    assert still_gone.transitions == ()
    assert ("log", "missing", "following", "") in kinds(back)
    assert verdicts(back)["log_join"] == "established"


def test_a_rotated_log_is_said_and_read_from_its_start(tmp_path: Path) -> None:
    log, receipt = launch_files(tmp_path)
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url, startup_log=log, receipt=receipt)], receipt_key=PUBLIC)
        turn(watcher)
        moved = log.read_bytes()
        log.rename(tmp_path / "startup.log.1")
        log.write_bytes(moved)  # a new file (another inode) with the same launch
        rotated = turn(watcher)
    view = rotated.targets[0].log
    assert view is not None
    assert view.event is FollowEvent.ROTATED
    assert kinds(rotated) == [("log", "following", "following", "rotated")]
    assert verdicts(rotated)["log_join"] == "established"


def test_an_unreadable_receipt_is_a_problem_and_joins_nothing(tmp_path: Path) -> None:
    log, _ = launch_files(tmp_path)
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url, startup_log=log, receipt=tmp_path)], receipt_key=PUBLIC)
        only = turn(watcher)
    target = only.targets[0]
    assert target.reach is Reach.ANSWERING
    assert any(p.startswith("launch receipt") and "directory" in p for p in target.problems)
    joined = target.claim("log_join")
    assert joined is not None
    assert joined.verdict == "refused"
    # No witness: the log's port decides, or nothing does (the stub's port is random).
    assert joined.reason in ("port_contradicted", "no_witness")


# --- no target stalls another --------------------------------------------------------


def test_a_silent_server_costs_its_deadline_and_holds_up_no_other() -> None:
    with serve_capture(KILL, latency_s=60) as slow, serve_capture(KILL) as fast:
        watcher = Watcher([Target(slow.url), Target(fast.url)], timeout=0.5, deadline=1.5)
        only = turn(watcher)
    silent, answering = only.targets
    assert silent.reach is Reach.UNREACHABLE
    assert not silent.ready
    assert answering.reach is Reach.ANSWERING
    assert answering.process_start_seconds == Decimal(START)


def test_an_error_in_one_targets_round_is_that_targets_failed_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vllm_evidence.watch._watcher as rounds

    real = rounds.probe  # type: ignore[attr-defined]  # the module's own import of it
    with serve_capture(KILL) as bad, serve_capture(KILL) as good:

        async def probe(url: str, **settings: Any) -> Any:
            if url == bad.url:
                msg = "a bug in one target's round"
                raise RuntimeError(msg)
            return await real(url, **settings)

        monkeypatch.setattr(rounds, "probe", probe)
        watcher = Watcher([Target(bad.url), Target(good.url)])
        failing = turn(watcher)
        monkeypatch.setattr(rounds, "probe", real)
        recovered = turn(watcher)
    broken, fine = failing.targets
    assert broken.reach is Reach.FAILED
    assert broken.claims == ()
    why = "RuntimeError: a bug in one target's round"
    assert broken.problems == (f"the watch could not finish this target's round ({why})",)
    assert fine.reach is Reach.ANSWERING
    assert kinds(recovered) == [("reach", "failed", "answering")]


def test_a_server_answering_only_errors_is_not_answering() -> None:
    faults = {route: _error() for route in Route if route.probe_readable}
    with serve_capture(KILL, faults=faults) as door:
        only = turn(Watcher([Target(door.url)]))
    assert only.targets[0].reach is Reach.NOT_ANSWERING
    assert only.targets[0].process_start_seconds is None


def _error() -> Any:
    from vllm_evidence.testing._stub import Fault

    return Fault(status=500, body=b"{}")


# --- readiness, documents kept, settings ---------------------------------------------


def test_ready_is_every_required_claim_established_for_an_answering_server() -> None:
    with serve_capture(KILL) as door:
        served = turn(Watcher([Target(door.url)], require=("served_identity",)))
        ranks = turn(Watcher([Target(door.url)], require=("parallel",)))
    assert served.targets[0].ready  # the routes alone establish the served model
    assert served.ready
    assert not ranks.targets[0].ready  # the ranks need the joined log
    assert not ranks.ready


def test_the_assessment_is_kept_only_when_asked() -> None:
    with serve_capture(KILL) as door:
        kept = turn(Watcher([Target(door.url)]))
        lean = turn(Watcher([Target(door.url)], keep_assessments=False))
    document = kept.targets[0].assessment_document()
    assert document is not None
    assert document["schema"].startswith("vllm-evidence.assessment/")
    assert lean.targets[0].assessment is None
    assert lean.targets[0].assessment_document() is None
    assert lean.targets[0].claims == kept.targets[0].claims


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"require": ("paralel",)}, "require names claims"),
        ({"concurrency": 0}, "concurrency must be a positive integer"),
        ({"interval": float("nan")}, "interval must be a positive finite number"),
        ({"timeout": -1}, "timeout must be a positive finite number"),
        ({"body_budget_bytes": 1024}, "one server's answers may hold"),
    ],
)
def test_a_setting_that_is_not_one_is_refused(settings: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=words):
        Watcher([Target("http://a:1")], **settings)


def test_a_server_given_twice_is_refused() -> None:
    with pytest.raises(InputError, match="listed twice"):
        Watcher([Target("http://a:1"), Target("HTTP://A:1/")])


def test_watch_yields_the_rounds_asked_for_at_the_interval() -> None:
    async def run(url: str) -> list[Round]:
        return [r async for r in watch([Target(url)], interval=0.05, rounds=3)]

    with serve_capture(KILL) as door:
        done = asyncio.run(run(door.url))
    assert [r.index for r in done] == [1, 2, 3]
    assert all(r.interval_s == 0.05 for r in done)
    assert all(r.late_s >= 0 for r in done)
    assert done[0].late_s == 0


def test_watch_refuses_a_round_count_that_is_not_one() -> None:
    async def run() -> list[Transition]:
        return [t async for r in watch([Target("http://a:1")], rounds=0) for t in r.transitions]

    with pytest.raises(InputError, match="rounds must be a positive integer"):
        asyncio.run(run())


def test_a_round_reads_only_what_was_appended_to_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_evidence._adapters.startup_log.followed import FollowedStartupLog

    fed: list[int] = []
    feed = FollowedStartupLog.feed

    def counting(self: FollowedStartupLog, data: bytes) -> None:
        fed.append(len(data))
        feed(self, data)

    monkeypatch.setattr(FollowedStartupLog, "feed", counting)
    log, receipt = launch_files(tmp_path)
    size = log.stat().st_size
    death = log_lines()[DEATH]
    with serve_capture(KILL) as door:
        watcher = Watcher([Target(door.url, startup_log=log, receipt=receipt)], receipt_key=PUBLIC)
        turn(watcher)
        turn(watcher)
        with log.open("ab") as handle:
            handle.write(death)
        write_receipt(receipt, log)
        turn(watcher)
    assert fed == [size, 0, len(death)]


def test_only_a_receipt_signed_by_the_launchers_key_joins_the_log(tmp_path: Path) -> None:
    import re

    from vllm_evidence._capture.signing import SigningKey

    log, receipt = launch_files(tmp_path)
    # On the port the launch was given, so that no port stands before the signature.
    found = re.search(rb"'port': ([0-9]+)", log.read_bytes())
    assert found is not None
    with serve_capture(KILL, port=int(found.group(1)), bind_wait_s=5) as door:
        target = Target(door.url, startup_log=log, receipt=receipt)
        signed = turn(Watcher([target], receipt_key=PUBLIC))
        unchecked = turn(Watcher([target]))
        write_receipt(receipt, log, key=SigningKey.generate())
        forged = turn(Watcher([target], receipt_key=PUBLIC))
    assert verdicts(signed)["log_join"] == "established"
    for round_, reason in ((unchecked, "witness_unverified"), (forged, "witness_other_key")):
        joined = round_.targets[0].claim("log_join")
        assert joined is not None
        assert (joined.verdict, joined.reason) == ("refused", reason)
        assert verdicts(round_)["parallel"] == "refused"
