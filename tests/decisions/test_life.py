"""A claim holds for a moment (DESIGN principle 14): what a launch's later lines and a
failing ``/health`` end, in both directions.

* a worker's death refuses parallel and health coverage (``rank_lost``), naming the
  rank, its pid and the line; the same log cut before that line establishes both;
* the engine's death refuses parallel, capacity and health coverage (``engine_dead``);
  served identity stays what the routes and the log say;
* a launch whose engine never started establishes nothing (``launch_never_started``);
* ``/health`` answering the status the release's law gives a dead engine (503 from
  0.11, 500 before) is ``engine_dead`` for the serving process; another failing status
  is not;
* a log that is not joined to the front door says nothing about the serving process.

Every expected value is written by hand.
"""

from __future__ import annotations

from tests._evidence import (
    HEALTHY,
    assess_joined,
    banner,
    bundle,
    engine_init,
    log,
    one_line_capacity,
    rank_line,
    server_info_json,
    version_body,
)
from tests.adapters.startup_log.test_life import DEAD, FATAL, SERVING, STOP, WORKER_KILLED
from vllm_evidence import assess
from vllm_evidence._assessment import Assessment
from vllm_evidence._readback.evidence import Subject
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReason,
    HealthCoverageEstablished,
    HealthReason,
    IdentityReason,
    ParallelEstablished,
    ParallelReason,
    ServedIdentityEstablished,
)
from vllm_evidence.upstream import Route

ARGS = (
    "(APIServer pid=100) INFO 11-30 04:10:58 [utils.py:253] non-default args: {'model': "
    "'/models/m'}\n"
)
HEAD = (
    banner("0.32.0")
    + ARGS
    + engine_init(tp=2, backend="mp")
    + rank_line(0, 2)
    + rank_line(1, 2)
    + one_line_capacity("4,194,304")
    + SERVING
)
INIT_FAILED = (
    "(APIServer pid=100) ERROR 12-02 13:47:01 [serve.py:80] RuntimeError: Engine core "
    "initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}\n"
)
ENGINE_KILLED = (
    "(APIServer pid=100) WARNING 12-02 13:45:12 [core_client.py:817] [shutdown] MPClient: "
    "engine core exited unexpectedly; starting cleanup\n"
)
MODELS = {Route.MODELS: b'{"object":"list","data":[{"id":"/models/m","root":"/models/m"}]}'}


def launch_of(text: str) -> Assessment:
    return assess(None, log(text))


def serving(text: str) -> Assessment:
    return assess_joined(bundle(version_body("0.32.0"), MODELS, HEALTHY), log(text))


def test_a_worker_death_refuses_parallel_and_health_coverage_from_its_line_on() -> None:
    for assessment in (launch_of(HEAD + WORKER_KILLED), serving(HEAD + WORKER_KILLED)):
        parallel = assessment.parallel
        assert parallel.reason is ParallelReason.RANK_LOST
        assert parallel.detail.startswith(
            "rank 1 (VllmWorker-1, pid 301) died at line 8 of launch 0 (exit code -9)"
        )
        assert assessment.health_coverage.reason is HealthReason.RANK_LOST
        # The engine has not died yet: its capacity and served identity still hold.
        assert isinstance(assessment.capacity, CapacityEstablished)
        assert isinstance(assessment.served_identity, ServedIdentityEstablished)
    assert serving(HEAD + WORKER_KILLED).parallel.subject is Subject.SERVING
    assert "/health still answered 200" in serving(HEAD + WORKER_KILLED).parallel.detail


def test_before_the_death_line_everything_stays_established() -> None:
    for assessment in (launch_of(HEAD), serving(HEAD)):
        assert isinstance(assessment.parallel, ParallelEstablished)
        assert isinstance(assessment.health_coverage, HealthCoverageEstablished)
        assert isinstance(assessment.capacity, CapacityEstablished)


def test_the_engines_death_refuses_every_claim_that_needs_a_live_engine() -> None:
    for text in (HEAD + FATAL, HEAD + DEAD, HEAD + ENGINE_KILLED):
        for assessment in (launch_of(text), serving(text)):
            assert assessment.parallel.reason is ParallelReason.ENGINE_DEAD
            assert assessment.capacity.reason is CapacityReason.ENGINE_DEAD
            assert assessment.health_coverage.reason is HealthReason.ENGINE_DEAD
            assert assessment.capacity.detail.startswith("the engine died at line 8 of launch 0")
            assert isinstance(assessment.served_identity, ServedIdentityEstablished)


def test_after_a_worker_death_the_engine_death_names_it() -> None:
    assessment = launch_of(HEAD + WORKER_KILLED + FATAL)
    assert assessment.parallel.reason is ParallelReason.RANK_LOST  # the earlier line
    assert "the engine died after it, at line 9" in assessment.parallel.detail
    assert assessment.capacity.reason is CapacityReason.ENGINE_DEAD
    assert assessment.capacity.detail == (
        "the engine died at line 9 of launch 0 after rank 1 (VllmWorker-1, pid 301) died "
        "at line 8 of launch 0 (exit code -9): nothing it served is there any more"
    )


def test_a_clean_shutdown_ends_nothing_that_a_death_would() -> None:
    # vLLM logs EngineDeadError on every clean stop: after the shutdown began it is no death.
    assessment = launch_of(HEAD + STOP + DEAD + FATAL)
    assert isinstance(assessment.parallel, ParallelEstablished)
    assert isinstance(assessment.capacity, CapacityEstablished)


def test_a_launch_that_never_started_establishes_nothing() -> None:
    head = HEAD.replace(SERVING, "")
    assessment = launch_of(head + INIT_FAILED)
    for decision in (
        assessment.parallel,
        assessment.capacity,
        assessment.health_coverage,
        assessment.served_identity,
    ):
        assert decision.reason.value == "launch_never_started", decision
    assert assessment.served_identity.reason is IdentityReason.LAUNCH_NEVER_STARTED
    assert assessment.parallel.detail.startswith(
        "the engine never started: line 7 of launch 0 says its initialization failed"
    )
    assert isinstance(launch_of(head).served_identity, ServedIdentityEstablished)


def test_a_log_not_joined_says_nothing_about_the_serving_process() -> None:
    door = bundle(version_body("0.32.0"), MODELS, HEALTHY, server_info_json(tp=2, backend="mp"))
    assessment = assess(door, log(HEAD + WORKER_KILLED + FATAL))  # no receipt: not joined
    assert assessment.parallel.reason is ParallelReason.LOG_NOT_JOINED
    assert assessment.capacity.reason is not CapacityReason.ENGINE_DEAD
    assert isinstance(assessment.health_coverage, HealthCoverageEstablished)


def test_health_answering_the_dead_engine_status_is_engine_dead() -> None:
    info = server_info_json(tp=2, backend="mp")
    dead = assess(bundle(version_body("0.32.0"), info, statuses={Route.HEALTH: 503}))
    assert dead.parallel.reason is ParallelReason.ENGINE_DEAD
    assert dead.capacity.reason is CapacityReason.ENGINE_DEAD
    assert dead.health_coverage.reason is HealthReason.ENGINE_DEAD
    assert dead.parallel.detail.startswith(
        "/health answered 503, which vLLM 0.32.0 answers once the engine is dead"
    )
    # 500 is not what 0.32.0 answers for a dead engine: not a death, only no 200.
    other = assess(bundle(version_body("0.32.0"), info, statuses={Route.HEALTH: 500}))
    assert other.health_coverage.reason is HealthReason.HEALTH_NOT_OK
    assert other.parallel.reason is not ParallelReason.ENGINE_DEAD
    # Up to 0.10.2 EngineDeadError reached the launcher: 500 is the dead engine's answer.
    old = assess(bundle(version_body("0.10.2"), info, statuses={Route.HEALTH: 500}))
    assert old.health_coverage.reason is HealthReason.ENGINE_DEAD
    healthy = assess(bundle(version_body("0.32.0"), info, HEALTHY))
    assert isinstance(healthy.health_coverage, HealthCoverageEstablished)


def test_a_v0_worker_is_named_by_its_pid() -> None:
    # V0 names every worker VllmWorkerProcess and prints its pid (multiproc_worker_utils.py).
    death = (
        "ERROR 12-01 10:00:00 [multiproc_worker_utils.py:124] Worker VllmWorkerProcess pid 301 "
        "died, exit code: -9\n"
    )
    parallel = launch_of(HEAD + death).parallel
    assert parallel.reason is ParallelReason.RANK_LOST
    assert parallel.detail.startswith(
        "rank 1 (VllmWorkerProcess, pid 301) died at line 8 of launch 0 (exit code -9)"
    )
    unknown = launch_of(HEAD + death.replace("pid 301", "pid 999")).parallel
    assert unknown.detail.startswith("worker VllmWorkerProcess, pid 999 died at line 8")
