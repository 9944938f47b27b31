"""Launch assembly: where one launch ends and the next begins, and what a launch decides
from its lines (executor backend, development mode, block size).
"""

from __future__ import annotations

import io

import pytest

from tests._evidence import args, banner, engine_init, log
from vllm_evidence._adapters.startup_log import (
    ExecutorBackend,
    StartupLog,
    read_startup_log,
)
from vllm_evidence._measure import TokenCount
from vllm_evidence._readback.executor import resolve_executor

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
    assert resolve_executor(launch).backend is None
    assert resolve_executor(launch).evidence == ()


def test_no_marker_no_backend() -> None:
    assert resolve_executor(_log(P + "GPU KV cache size: 1 tokens\n").launches[0]).backend is None


def test_development_mode_is_on_or_not_observed_never_off() -> None:
    route = API.format(pid=1).replace("api_server.py", "launcher.py") + "Route: {p}, Methods: GET\n"
    on = _log(route.format(p="/server_info")).launches[0]
    warned = _log(API.format(pid=1) + DEV_WARNING + "\n").launches[0]
    # A route table without /server_info is not "off": v0.8.5 prints no warning at all,
    # and a pasted log may lack the one route line that would have said "on".
    no_dev_route = _log(route.format(p="/health")).launches[0]
    unknown = _log(P + "GPU KV cache size: 1 tokens\n").launches[0]
    assert (on.development_mode, warned.development_mode) == (True, True)
    assert (no_dev_route.development_mode, unknown.development_mode) == (None, None)


DEV_WARNING = (
    "SECURITY WARNING: Development endpoints are enabled! This should NOT be used in production!"
)
W = "WARNING 11-30 06:00:00 [api_server.py:913] "


def test_warning_before_the_banner_belongs_to_the_launch_it_opens() -> None:
    # v0.9.2 and v0.11.0 print the warning when api_server.py is imported, first of all.
    text = (
        W + DEV_WARNING + "\n"
        "INFO 11-30 06:00:01 [api_server.py:1395] vLLM API server version 0.9.2\n"
        + P
        + "GPU KV cache size: 100 tokens\n"
    )
    log = _log(text)
    assert len(log.launches) == 1
    (launch,) = log.launches
    assert (launch.first_line, launch.dev_mode_warning_lines) == (1, (1,))
    assert launch.development_mode is True


def test_restart_carries_its_own_pre_banner_warning() -> None:
    banner_line = "INFO 11-30 06:00:01 [api_server.py:1395] vLLM API server version 0.9.2\n"
    size = P + "GPU KV cache size: 100 tokens\n"
    text = W + DEV_WARNING + "\n" + banner_line + size + W + DEV_WARNING + "\n" + banner_line + size
    first, second = _log(text).launches
    assert (first.first_line, first.last_line, first.dev_mode_warning_lines) == (1, 3, (1,))
    assert (second.first_line, second.dev_mode_warning_lines) == (4, (4,))


def test_warning_followed_by_evidence_stays_in_its_launch() -> None:
    # Later releases print the warning while building the app, after the banner: with
    # evidence after it, it is this launch's, not the next one's.
    banner_line = "INFO 11-30 06:00:01 [api_server.py:1] vLLM API server version 0.32.0\n"
    route = API.format(pid=1).replace("api_server.py", "launcher.py")
    route += "Route: /health, Methods: GET\n"
    text = banner_line + W + DEV_WARNING + "\n" + route + banner_line + route
    first, second = _log(text).launches
    assert first.dev_mode_warning_lines == (2,)
    assert second.dev_mode_warning_lines == ()
    assert (first.development_mode, second.development_mode) == (True, None)


def test_evidence_before_the_first_banner_still_splits() -> None:
    # The other direction: a capacity line before any banner is an earlier launch's.
    text = (
        W
        + DEV_WARNING
        + "\n"
        + P
        + "GPU KV cache size: 5 tokens\n"
        + API.format(pid=3)
        + ("vLLM API server version 1.0\n")
    )
    first, second = _log(text).launches
    assert (len(first.capacity), first.dev_mode_warning_lines) == (1, (1,))
    assert second.dev_mode_warning_lines == ()


V0_INIT = (
    "INFO 11-30 06:01:00 [llm_engine.py:242] Initializing a V0 LLM engine (v0.8.5) with "
    "config: model='/m', speculative_config=None, tokenizer='/m', skip_tokenizer_init=False, "
    "tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=True, "
    "quantization=None, enforce_eager=True, kv_cache_dtype=auto, device_config=cpu, "
    "seed=None, served_model_name=tiny, num_scheduler_steps=1, "
    "enable_prefix_caching=None, use_async_output_proc=False, use_cached_outputs=True, \n"
)
FALLBACK = (
    "WARNING 11-30 06:01:00 [cpu.py:119] uni is not supported on CPU, fallback to mp "
    "distributed executor backend.\n"
)


def test_v0_engine_init_and_cpu_fallback_are_read() -> None:
    banner_line = "INFO 11-30 06:00:59 [api_server.py:1043] vLLM API server version 0.8.5\n"
    launch = _log(banner_line + FALLBACK + V0_INIT).launches[0]
    config = launch.engine_config
    assert config is not None
    assert (config.engine, config.version_text, config.tensor_parallel_size) == ("v0", "0.8.5", 1)
    assert config.served_model_name == "tiny"
    assert launch.version is not None
    assert str(launch.version.version) == "0.8.5"
    assert resolve_executor(launch).backend is ExecutorBackend.MP
    assert [o.marker.value for o in resolve_executor(launch).evidence] == ["cpu_fallback_line"]


def test_v1_engine_init_is_v1_and_no_fallback_decides_nothing() -> None:
    v1 = V0_INIT.replace("V0 LLM engine", "V1 LLM engine")
    launch = _log(v1).launches[0]
    assert launch.engine_config is not None
    assert launch.engine_config.engine == "v1"
    assert resolve_executor(launch).backend is None
    # A fallback line for some other device says nothing about the backend.
    other = FALLBACK.replace("on CPU", "on XPU")
    assert resolve_executor(_log(other + v1).launches[0]).backend is None


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
    return resolve_executor(log(text).launches[0]).backend


def test_a_vllm_worker_decides_mp_only_where_a_law_says_so() -> None:
    assert _backend("0.10.1.1") is MP
    assert _backend("0.32.0") is None  # mp or Ray's V2 executor
    assert _backend("0.15.0") is MP  # read 0.14.0 and 0.17.0: no Ray V2 executor yet
    assert _backend("0.18.0") is None  # between 0.17.0 and 0.20.0: not borrowed
