"""A launch's life: the lifecycle lines vLLM prints after (or instead of) start-up.

Every line below is a real one (``tests/fixtures/real/vllm-0.32.0-cpu/tp2-worker-kill`` and
the other lifecycle recordings, and the 0.9 to 0.29 fixtures' shutdowns) or copied from
the format string in vLLM's source for the release named; the expected fields are
written by hand.
"""

from __future__ import annotations

import pytest

from tests._evidence import banner, engine_init, log, rank_line
from vllm_evidence._adapters.startup_log import LifeEvent, LifeKind

E = "(EngineCore pid=200) ERROR 12-02 13:43:35 [multiproc_executor.py:315] "
A = "(APIServer pid=100) ERROR 12-02 13:43:40 [async_llm.py:906] "
WORKER_KILLED = (
    f"{E}Worker proc VllmWorker-1 died unexpectedly (exit code: -9), shutting down executor.\n"
)
FATAL = (
    "(EngineCore pid=200) ERROR 12-02 13:43:40 [core.py:1512] EngineCore encountered a fatal "
    "error.\n"
)
DEAD = (
    f"{A}vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
    "See stack trace (above) for the root cause.\n"
)
SERVING = "(APIServer pid=100) INFO:     Application startup complete.\n"
STOP = (
    "(APIServer pid=100) INFO 12-01 22:25:31 [launcher.py:100] [shutdown] API server: shutdown "
    "triggered\n"
)
HEAD = banner("0.32.0") + engine_init(tp=2) + rank_line(0, 2) + rank_line(1, 2)


def events(text: str) -> list[tuple[str, int]]:
    (launch,) = log(text).launches
    return [(e.kind.value, e.line) for e in launch.life]


def only(text: str) -> LifeEvent:
    (launch,) = log(HEAD + text).launches
    (event,) = launch.life
    return event


@pytest.mark.parametrize(
    ("line", "worker", "rank", "pid", "code"),
    [
        (WORKER_KILLED, "VllmWorker-1", 1, None, -9),
        # 0.9.2 to 0.2x: no exit code in the message.
        (
            f"{E}Worker proc VllmWorker-3 died unexpectedly, shutting down executor.\n",
            "VllmWorker-3",
            3,
            None,
            None,
        ),
        (
            (
                f"{E}Worker proc VllmWorker-0 died unexpectedly (exit code: None), shutting down "
                "executor.\n"
            ),
            "VllmWorker-0",
            0,
            None,
            None,
        ),
        # RayExecutorV2 (v1/executor/ray_executor_v2.py).
        (
            f"{E}RayWorkerProc rank=2 died unexpectedly, shutting down executor.\n",
            "rank=2",
            2,
            None,
            None,
        ),
        # RayExecutorV2 from 0.20 prints the rank as a list.
        (f"{E}RayWorkerProc rank=[1] died unexpectedly.\n", "rank=[1]", 1, None, None),
        # V0 mp (executor/multiproc_worker_utils.py): the name carries no rank, the pid is printed.
        (
            (
                "ERROR 12-01 10:00:00 [multiproc_worker_utils.py:124] Worker VllmWorkerProcess "
                "pid 4242 died, exit code: -9\n"
            ),
            "VllmWorkerProcess",
            None,
            4242,
            -9,
        ),
    ],
)
def test_a_worker_death_names_the_worker_as_printed(
    line: str, worker: str, rank: int | None, pid: int | None, code: int | None
) -> None:
    event = only(line)
    assert event.kind is LifeKind.WORKER_DIED
    assert (event.worker, event.worker_rank, event.worker_pid, event.exit_code) == (
        worker,
        rank,
        pid,
        code,
    )
    assert event.line == 5


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (FATAL, LifeKind.ENGINE_DEAD),
        (DEAD, LifeKind.ENGINE_DEAD),
        (f"{A}AsyncLLM output_handler failed.\n", LifeKind.ENGINE_DEAD),
        (
            (
                "(APIServer pid=100) WARNING 12-02 13:45:12 [core_client.py:817] [shutdown] "
                "MPClient: engine core exited unexpectedly; starting cleanup\n"
            ),
            LifeKind.ENGINE_DEAD,
        ),
        (
            (
                "(APIServer pid=100) ERROR 12-02 13:47:01 [serve.py:80] RuntimeError: Engine "
                "core initialization failed. See root cause above. Failed core proc(s): "
                "{'EngineCore': 1}\n"
            ),
            LifeKind.INIT_FAILED,
        ),
        (
            (
                "(APIServer pid=100) ERROR 09-06 03:10:08 [core_client.py:569] Engine core proc "
                "EngineCore_DP0 died unexpectedly, shutting down client.\n"
            ),
            LifeKind.ENGINE_DEAD,
        ),
        (
            (
                "(EngineCore_0 pid=1321) ERROR 09-06 03:10:08 [core.py:700] EngineCore failed "
                "to start.\n"
            ),
            LifeKind.INIT_FAILED,
        ),
        (
            (
                "ERROR 09-06 03:10:08 [engine.py:458] Engine process failed to start. See stack "
                "trace for the root cause.\n"
            ),
            LifeKind.INIT_FAILED,
        ),
        (
            (
                "(APIServer pid=100) INFO 12-02 13:43:42 [launcher.py:149] [shutdown] API server: "
                "shutting down FastAPI HTTP server\n"
            ),
            LifeKind.ENDED,
        ),
        (SERVING, LifeKind.SERVING),
        (
            (
                "(APIServer pid=100) INFO 12-02 13:43:31 [entry.py:140] Starting vLLM server on "
                "http://127.0.0.1:8000\n"
            ),
            LifeKind.SERVING,
        ),
        (
            (
                "INFO 12-01 07:45:12 [api_server.py:1287] Starting vLLM API server 0 on "
                "http://0.0.0.0:8000\n"
            ),
            LifeKind.SERVING,
        ),
        (
            (
                "INFO 12-01 07:48:00 [api_server.py:1090] Starting vLLM API server on "
                "http://127.0.0.1:59777\n"
            ),
            LifeKind.SERVING,
        ),
        (STOP, LifeKind.ENDED),
        (
            (
                "(EngineCore pid=200) INFO 12-01 22:25:31 [core.py:1178] [shutdown] EngineCore: "
                "trigger received signal=SIGTERM\n"
            ),
            LifeKind.ENDED,
        ),
        (
            "INFO 12-01 07:45:42 [launcher.py:80] Shutting down FastAPI HTTP server.\n",
            LifeKind.ENDED,
        ),
        ("INFO:     Shutting down\n", LifeKind.ENDED),
    ],
)
def test_each_lifecycle_form_is_read(line: str, kind: LifeKind) -> None:
    assert only(line).kind is kind


@pytest.mark.parametrize(
    "line",
    [
        # Look-alikes that say nothing about the launch's life.
        f"{E}[shutdown] Executor: waiting for worker exit count=1\n",
        (
            "(Worker pid=18314) INFO 12-01 07:51:13 [multiproc_executor.py:872] WorkerProc "
            "shutting down.\n"
        ),
        "(APIServer pid=100) INFO:     Waiting for application shutdown.\n",
        f"{A}    raise EngineDeadError() from e\n",  # a traceback's source line, not the error
        '(APIServer pid=100) INFO:     127.0.0.1:43402 - "GET /health HTTP/1.1" 200 OK\n',
        f"{E}Worker proc died unexpectedly\n",  # no name: not vLLM's form
    ],
)
def test_look_alikes_are_not_lifecycle_lines(line: str) -> None:
    (launch,) = log(HEAD + line).launches
    assert launch.life == ()


def test_a_killed_worker_is_a_death_then_the_engine_dies() -> None:
    (launch,) = log(HEAD + SERVING + WORKER_KILLED + FATAL + DEAD + STOP).launches
    assert [(e.kind.value, e.line) for e in launch.life] == [
        ("serving", 5),
        ("worker_died", 6),
        ("engine_dead", 7),
        ("engine_dead", 8),  # another process: the API server's
        ("ended", 9),
    ]
    assert launch.serving is not None
    assert launch.serving.line == 5
    assert [d.line for d in launch.worker_deaths] == [6]
    assert launch.engine_death is not None
    assert launch.engine_death.line == 7
    assert launch.ended is not None
    assert launch.ended.line == 9
    assert launch.init_failure is None


def test_an_engine_dead_line_inside_a_shutdown_is_not_a_death() -> None:
    # vLLM logs EngineDeadError on every clean stop (0.20 to 0.32 fixtures): after the
    # shutdown began, it is part of the shutdown.
    (launch,) = log(HEAD + SERVING + STOP + DEAD + WORKER_KILLED).launches
    assert launch.engine_death is None
    assert launch.worker_deaths == ()
    assert launch.ended is not None
    assert launch.ended.line == 6
    # …and before it, it is one.
    (before,) = log(HEAD + SERVING + DEAD + STOP).launches
    assert before.engine_death is not None
    assert before.engine_death.line == 6


def test_a_traceback_repeating_its_error_keeps_one_event_per_process() -> None:
    assert events(HEAD + DEAD * 50 + FATAL * 3) == [("engine_dead", 5), ("engine_dead", 55)]


def test_a_hostile_log_cannot_grow_the_events_past_their_bound() -> None:
    lines = "".join(
        (
            f"{E}Worker proc VllmWorker-{n} died unexpectedly (exit code: -9), shutting down "
            "executor.\n"
        )
        for n in range(1000)
    )
    (launch,) = log(HEAD + lines).launches
    assert len(launch.life) == 256
    assert launch.life[-1].worker == "VllmWorker-255"


def test_a_new_launch_starts_a_new_life() -> None:
    text = HEAD + SERVING + WORKER_KILLED + FATAL + STOP + HEAD + SERVING
    first, second = log(text).launches
    assert first.engine_death is not None
    assert first.worker_deaths
    assert second.life
    assert [e.kind for e in second.life] == [LifeKind.SERVING]
    assert second.engine_death is None
    assert second.worker_deaths == ()
