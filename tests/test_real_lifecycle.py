"""A launch has a life, on real vLLM 0.32.0 (``tests/fixtures/real/vllm-0.32.0-cpu/``,
recorded by ``scripts/live-vllm record tp2-worker-kill tp1-engine-kill
tp2-keepalive-engine-death failed-startup``: a process killed by pid from the recorder).

Each replay serves the recorded front door on the port its log names and joins the log
with a receipt of the start time that front door serves (``assess_witnessed``).  The log
is read whole, and cut just before its first lifecycle line: the same front door and
launch, before and after.  The expected values come from each fixture's log, read by
hand (the line numbers, the pid, the exit code).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.version import Version

from tests._evidence import assess_witnessed
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, Claim, assess, claim_established
from vllm_evidence._output.startup_log import render_startup_log
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReason,
    HealthCoverageEstablished,
    HealthReason,
    ParallelEstablished,
    ParallelReason,
    ServedIdentityEstablished,
)
from vllm_evidence.upstream import ExecutorBackend, HealthLaw, laws_for

REAL = Path(__file__).resolve().parent / "fixtures" / "real" / "vllm-0.32.0-cpu"
REQUIRED: tuple[Claim, ...] = ("parallel", "capacity", "health_coverage")


def _log(path: Path, *, before: int | None = None, tmp: Path | None = None) -> StartupLog:
    """The log, or its lines before line ``before`` (written to ``tmp``)."""
    if before is not None:
        assert tmp is not None
        # Lines end at "\n" only (a progress bar's "\r" is inside its line).
        lines = path.read_bytes().split(b"\n")[: before - 1]
        path = tmp / "cut.log"
        path.write_bytes(b"\n".join(lines) + b"\n")
    read = read_startup_log(path)
    assert isinstance(read, StartupLog), read
    return read


def _replay(directory: Path, log: StartupLog) -> Assessment:
    assessment = assess_witnessed(directory, log)
    assert assessment.log_join.reason.value == "established", assessment.log_join
    return assessment


def test_a_killed_worker_is_not_a_present_rank_from_its_death_line_on(tmp_path: Path) -> None:
    scenario = REAL / "tp2-worker-kill"
    # Line 166: "Worker proc VllmWorker-1 died unexpectedly (exit code: -9)"; line 191:
    # "EngineCore encountered a fatal error." (after the executor's 5 s shutdown wait).
    for cut in (167, 191, 192, None):
        log = _log(scenario / "startup.log", before=cut, tmp=tmp_path)
        assessment = _replay(scenario, log)
        parallel = assessment.parallel
        assert parallel.reason is ParallelReason.RANK_LOST, cut
        assert parallel.detail.startswith(
            "rank 1 (VllmWorker-1, pid 10885) died at line 166 of launch 0 (exit code -9)"
        )
        assert assessment.health_coverage.reason is HealthReason.RANK_LOST
        assert isinstance(assessment.served_identity, ServedIdentityEstablished)
        engine_dead = cut is None or cut > 191
        assert (assessment.capacity.reason is CapacityReason.ENGINE_DEAD) is engine_dead, cut
    before = _replay(scenario, _log(scenario / "startup.log", before=166, tmp=tmp_path))
    assert isinstance(before.parallel, ParallelEstablished)
    assert [r.pid for r in before.parallel.ranks] == [10884, 10885]
    assert isinstance(before.capacity, CapacityEstablished)
    assert isinstance(before.health_coverage, HealthCoverageEstablished)


def test_a_killed_engine_refuses_every_claim_that_needs_it(tmp_path: Path) -> None:
    scenario = REAL / "tp1-engine-kill"
    dead = _replay(scenario, _log(scenario / "startup.log"))
    assert dead.parallel.reason is ParallelReason.ENGINE_DEAD
    assert dead.capacity.reason is CapacityReason.ENGINE_DEAD
    assert dead.health_coverage.reason is HealthReason.ENGINE_DEAD
    assert dead.capacity.detail.startswith("the engine died at line 149 of launch 0")
    assert isinstance(dead.served_identity, ServedIdentityEstablished)
    alive = _replay(scenario, _log(scenario / "startup.log", before=149, tmp=tmp_path))
    for claim in REQUIRED:
        assert claim_established(alive, claim), getattr(alive, claim)


def test_a_kept_alive_front_door_of_a_dead_engine_establishes_no_live_claim(
    tmp_path: Path,
) -> None:
    scenario = REAL / "tp2-keepalive-engine-death"
    after = scenario / "after-death"
    # The front door read after the death (/health 503, every other route 200), with the
    # whole log, with the log cut before the death, and the front door alone.
    for log in (
        _log(scenario / "startup.log"),
        _log(scenario / "startup.log", before=168, tmp=tmp_path),
    ):
        assessment = assess_witnessed(after, log)
        assert not any(claim_established(assessment, c) for c in REQUIRED)
    alone = assess_witnessed(after, _log(scenario / "startup.log", before=168, tmp=tmp_path))
    assert alone.capacity.reason is CapacityReason.ENGINE_DEAD
    assert alone.capacity.detail.startswith("/health answered 503, which vLLM 0.32.0 answers")
    whole = assess_witnessed(after, _log(scenario / "startup.log"))
    assert whole.parallel.reason is ParallelReason.RANK_LOST
    assert "rank 1 (VllmWorker-1, pid 21493) died at line 168" in whole.parallel.detail
    # Before the kill the same launch established all three.
    before = _replay(scenario, _log(scenario / "startup.log", before=168, tmp=tmp_path))
    assert all(claim_established(before, c) for c in REQUIRED)


def test_a_failed_start_up_establishes_nothing_and_says_why() -> None:
    log = _log(REAL / "failed-startup" / "startup.log")
    assessment = assess(None, log)
    for claim in ("parallel", "capacity", "health_coverage", "served_identity"):
        decision = getattr(assessment, claim)
        assert decision.reason.value == "launch_never_started", decision
        assert "line 51 of launch 0 says its initialization failed" in decision.detail
    text = render_startup_log(log)
    assert "life:               never started: engine initialization failed at line 51" in text


def test_log_shows_the_death() -> None:
    text = render_startup_log(_log(REAL / "tp2-worker-kill" / "startup.log"))
    assert (
        "life:               engine dead: serving from line 84; VllmWorker-1 (engine-local "
        "rank 1, exit code -9) died at line 166; engine dead at line 191; shutdown from line 239"
    ) in text


_HEALTH = re.compile(r"^\+(?P<s>[0-9.]+) s (?P<status>\S+)", re.MULTILINE)


def _first_failure_s(scenario: str) -> float:
    text = (REAL / scenario / "health-after.txt").read_text(encoding="utf-8")
    return next(float(m["s"]) for m in _HEALTH.finditer(text) if m["status"] != "200")


@pytest.mark.parametrize("scenario", ["tp2-worker-kill", "tp2-keepalive-engine-death"])
def test_the_recorded_window_is_inside_the_one_the_law_states(scenario: str) -> None:
    law = laws_for(Version("0.32.0")).health(ExecutorBackend.MP)  # type: ignore[union-attr]
    assert isinstance(law, HealthLaw)
    assert law.worker_death_delay_s is not None
    seconds = _first_failure_s(scenario)
    # The monitor waits for the survivors before it fails the engine: not at once…
    assert seconds > 1.0
    # …and never past what the law states.
    assert seconds <= law.worker_death_delay_s


def test_an_engine_kill_reaches_health_at_once() -> None:
    assert _first_failure_s("tp1-engine-kill") < 1.0
