"""Launch assembly: where one launch ends and the next begins, and what a launch decides
from its lines (executor backend, development mode, block size).
"""

from __future__ import annotations

import io

import pytest

from tests._evidence import args, banner, engine_init, log
from vllm_evidence.adapters.startup_log import (
    ExecutorBackend,
    StartupLog,
    read_startup_log,
)
from vllm_evidence.measure import TokenCount

P = "(EngineCore_DP0 pid=10) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "


API = "(APIServer pid={pid}) INFO 01-02 03:04:05 [api_server.py:1] "


def _log(text: str | bytes, **kw: object) -> StartupLog:
    data = text.encode() if isinstance(text, str) else text
    log = read_startup_log(io.BytesIO(data), **kw)  # type: ignore[arg-type]  # kw is wrap_width only
    assert isinstance(log, StartupLog), log
    return log


def test_restart_splits_launches_and_never_joins_across() -> None:
    text = (
        API.format(pid=1)
        + "vLLM API server version 0.10.1.1\n"
        + P
        + "GPU KV cache size: 100 tokens\n"
        + API.format(pid=2)
        + "vLLM API server version 0.10.1.1\n"
        + P
        + "Maximum concurrency for 16 tokens per request: 1.00x\n"
    )
    log = _log(text)
    assert [(lc.first_line, lc.last_line) for lc in log.launches] == [(1, 2), (3, 4)]
    first, second = log.launches
    assert [(c.tokens is not None, c.max_concurrency) for c in first.capacity] == [(True, None)]
    assert [c.tokens for c in second.capacity] == [None]
    assert first.api_server_pids == (1,)


def test_one_launch_with_banner_and_args_is_not_split() -> None:
    text = (
        API.format(pid=7)
        + "vLLM API server version 0.11.0\n"
        + API.format(pid=7)
        + "non-default args: {'model': 'm', 'tensor_parallel_size': 2}\n"
        + P
        + "GPU KV cache size: 100 tokens\n"
    )
    log = _log(text)
    assert len(log.launches) == 1
    assert log.launches[0].non_default_args[0].tensor_parallel_size == 2


def test_file_starting_inside_a_launch_is_split_at_the_first_marker() -> None:
    text = P + "GPU KV cache size: 5 tokens\n" + API.format(pid=3) + "vLLM API server version 1.0\n"
    assert [len(lc.capacity) for lc in _log(text).launches] == [1, 0]


def test_conflicting_markers_decide_nothing() -> None:
    text = (
        API.format(pid=1)
        + "vLLM API server version 0.10.1.1\n"
        + "(EngineCore_0 pid=2) INFO 01-02 03:04:05 [ray_distributed_executor.py:1] x executor\n"
        + "(VllmWorker TP0 pid=3) INFO 01-02 03:04:05 [gpu_worker.py:1] Available KV cache "
        "memory: 1.00 GiB\n"
    )
    launch = _log(text).launches[0]
    assert len(launch.executor_observations) == 2
    assert launch.executor_backend is None
    assert launch.executor_evidence == ()


def test_no_marker_no_backend() -> None:
    assert _log(P + "GPU KV cache size: 1 tokens\n").launches[0].executor_backend is None


def test_development_mode_three_ways() -> None:
    route = API.format(pid=1).replace("api_server.py", "launcher.py") + "Route: {p}, Methods: GET\n"
    on = _log(route.format(p="/server_info")).launches[0]
    off = _log(route.format(p="/health")).launches[0]
    unknown = _log(P + "GPU KV cache size: 1 tokens\n").launches[0]
    assert (on.development_mode, off.development_mode, unknown.development_mode) == (
        True,
        False,
        None,
    )


def test_sealed_types_have_no_public_constructor() -> None:
    with pytest.raises(TypeError, match="read_startup_log"):
        StartupLog(None)  # type: ignore[arg-type]  # the seal: no public constructor


# --- typed values and the executor laws, after the layer split ----------------------


MP, RAY = ExecutorBackend.MP, ExecutorBackend.RAY


def test_the_block_size_is_typed_from_the_args_else_the_engine_line() -> None:
    given = log(banner("0.9.2") + args("{'block_size': 32}") + engine_init("0.9.2"))
    assert given.launches[0].block_size == TokenCount(32)
    printed = engine_init("0.9.2").replace("with config: ", "with config: block_size=16, ")
    assert log(banner("0.9.2") + printed).launches[0].block_size == TokenCount(16)
    assert log(banner("0.9.2") + engine_init("0.9.2")).launches[0].block_size is None
    unreadable = args("{'block_size': 'auto'}")
    assert log(banner("0.9.2") + unreadable).launches[0].block_size is None


def _backend(version: str) -> ExecutorBackend | None:
    worker = "(VllmWorker TP1 pid=14) INFO 11-30 04:11:13 [parallel_state.py:1] "
    text = (
        banner(version)
        + f"{worker}world_size=2 rank=1 local_rank=1 distributed_init_method=tcp://h:1 "
        "backend=nccl\n"
    )
    return log(text).launches[0].executor_backend


def test_a_vllm_worker_decides_mp_only_where_a_law_says_so() -> None:
    assert _backend("0.10.1.1") is MP
    assert _backend("0.32.0") is None  # mp or Ray's V2 executor
    assert _backend("0.15.0") is None  # between read releases: not borrowed
