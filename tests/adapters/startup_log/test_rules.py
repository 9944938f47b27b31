"""Each reading rule of the lexer and the grammar, in both directions, on small
hand-written logs: record heads and wrappers, capacity lines, typed values.
"""

from __future__ import annotations

import io

import pytest

from tests._evidence import (
    args,
    banner,
    engine_init,
    log,
)
from vllm_evidence._adapters.startup_log import (
    CapacityFormat,
    ExecutorBackend,
    StartupLog,
    read_startup_log,
)
from vllm_evidence._readback.executor import resolve_executor

P = "(EngineCore_DP0 pid=10) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "


Q = "(EngineCore_DP1 pid=11) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "


def _log(text: str | bytes, **kw: object) -> StartupLog:
    data = text.encode() if isinstance(text, str) else text
    log = read_startup_log(io.BytesIO(data), **kw)  # type: ignore[arg-type]  # kw is wrap_width only
    assert isinstance(log, StartupLog), log
    return log


def test_two_line_pair_joins_within_one_process() -> None:
    log = _log(
        P
        + "GPU KV cache size: 1,234 tokens\n"
        + Q
        + "GPU KV cache size: 99 tokens\n"
        + P
        + "Maximum concurrency for 2,048 tokens per request: 3.50x\n"
    )
    caps = log.launches[0].capacity
    assert [(c.line, c.concurrency_line) for c in caps] == [(1, 3), (2, None)]
    assert caps[0].tokens is not None
    assert caps[0].tokens.value == 1234
    assert caps[1].tokens is not None
    assert caps[1].tokens.value == 99
    assert caps[1].max_concurrency is None  # DP1's size is not joined with DP0's concurrency


def test_lone_concurrency_line_has_null_size() -> None:
    caps = _log(P + "Maximum concurrency for 16 tokens per request: 1.00x\n").launches[0].capacity
    assert [(c.tokens, c.device, c.max_model_len is not None) for c in caps] == [(None, None, True)]


def test_one_line_format_devices() -> None:
    text = "".join(
        P + f"{dev} KV cache size: 10 tokens, Maximum concurrency for 5 tokens per request: 2.00x\n"
        for dev in ("GPU", "CPU", "XPU", "GPU + host")
    )
    caps = _log(text).launches[0].capacity
    assert [c.device for c in caps] == ["GPU", "CPU", "XPU", "GPU + host"]
    assert {c.format for c in caps} == {CapacityFormat.V1_ONE_LINE}


def test_lines_that_look_like_capacity_are_not_parsed() -> None:
    text = (
        P
        + "Multiplying the GPU KV cache size by the dcp_world_size 2.\n"
        + P
        + "GPU KV cache size: lots of tokens\n"
        + P
        + "Maximum concurrency for 16 tokens per request: nanx\n"
        + P
        + "the # GPU blocks: 12 later\n"
        + "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 5\n"
    )
    launch = _log(text).launches[0]
    assert launch.capacity == ()
    assert launch.blocks == ()


def test_v0_block_lines_every_device_word() -> None:
    text = (
        "INFO 12-27 10:00:00 gpu_executor.py:76] # GPU blocks: 507, # CPU blocks: 1024\n"
        "INFO 12-27 10:00:00 gpu_executor.py:80] Maximum concurrency for 2048 tokens per "
        "request: 3.96x\n"
        "INFO 09-03 02:11:14 [executor_base.py:113] # cuda blocks: 74510, # CPU blocks: 4681\n"
        "INFO 09-03 02:11:14 [executor_base.py:113] # CPU blocks: 300\n"
        "INFO 09-03 02:11:14 [executor_base.py:113] # TPU blocks: 8, # CPU blocks: 0\n"
    )
    launch = _log(text).launches[0]
    assert [(b.device, b.device_blocks.value, b.cpu_blocks) for b in launch.blocks][2:] == [
        ("CPU", 300, None),
        ("TPU", 8, launch.blocks[3].cpu_blocks),
    ]
    assert [(b.device, b.device_blocks.value) for b in launch.blocks][:2] == [
        ("GPU", 507),
        ("cuda", 74510),
    ]
    first = launch.capacity[0]
    assert first.format is CapacityFormat.V0_BLOCKS
    assert first.tokens is None  # V0 prints blocks, not tokens
    assert first.max_model_len is not None
    assert first.max_model_len.value == 2048
    assert first.concurrency_line == 2
    # the single-GPU executor file marks the uni backend
    assert resolve_executor(launch).backend is ExecutorBackend.UNI


def test_old_prefix_without_bracket_crlf_and_ansi() -> None:
    text = (
        "\x1b[1;36m(APIServer pid=5)\x1b[0;0m INFO 12-27 10:00:00 api_server.py:1] "
        "vLLM API server version 0.6.6.post1\r\n"
        "INFO 12-27 10:00:00 llm_engine.py:234] Initializing an LLM engine (v0.6.6.post1) with "
        "config: model='m', tensor_parallel_size=2, pipeline_parallel_size=1, "
        "distributed_executor_backend=ray, max_seq_len=4096\r\n"
    )
    launch = _log(text).launches[0]
    assert launch.version is not None
    assert str(launch.version.version) == "0.6.6.post1"
    config = launch.engine_config
    assert config is not None
    assert config.engine == "v0"
    assert config.tensor_parallel_size == 2
    assert resolve_executor(launch).backend is ExecutorBackend.RAY


def test_wrappers_journald_iso_and_python_logging() -> None:
    text = (
        "Sep 03 02:11:14 host vllm[12]: " + P + "GPU KV cache size: 7 tokens\n"
        "2025-09-03T02:11:14.123456789Z " + P + "Available KV cache memory: 2.00 GiB\n"
        "INFO:vllm.v1.core.kv_cache_utils:GPU KV cache size: 8 tokens\n"
    )
    launch = _log(text).launches[0]
    assert [c.tokens.value for c in launch.capacity if c.tokens] == [7, 8]
    assert [m.text for m in launch.available_memory] == ["2.00"]


# --- typed where the log is read: a DP engine index, an unquoted backend name -------


def test_an_engine_core_tag_carries_its_dp_engine_index() -> None:
    text = banner("0.32.0") + (
        "(EngineCore_DP1 pid=12) INFO 11-30 04:11:13 [kv_cache_utils.py:1] "
        "CPU KV cache size: 1,000 tokens, Maximum concurrency for 2,048 tokens per "
        "request: 2.00x\n"
        "(EngineCore_3 pid=13) INFO 11-30 04:11:13 [kv_cache_utils.py:1] "
        "CPU KV cache size: 2,000 tokens, Maximum concurrency for 2,048 tokens per "
        "request: 2.00x\n"
        "(VllmWorker TP1 pid=14) INFO 11-30 04:11:13 [kv_cache_utils.py:1] "
        "CPU KV cache size: 3,000 tokens, Maximum concurrency for 2,048 tokens per "
        "request: 2.00x\n"
    )
    capacity = log(text).launches[0].capacity
    assert [c.process.dp_engine if c.process else "-" for c in capacity] == [1, 3, None]


def test_the_backend_name_is_unquoted_and_none_is_no_name() -> None:
    quoted = log(banner("0.32.0") + engine_init(backend="'my.Executor'"))
    config = quoted.launches[0].engine_config
    assert config is not None
    assert config.distributed_executor_backend == "'my.Executor'"
    assert config.executor_backend_name == "my.Executor"
    unset = log(banner("0.32.0") + engine_init(backend="None")).launches[0].engine_config
    assert unset is not None
    assert unset.executor_backend_name is None


# --- the non-default args line (pinned by mutation testing) --------------------------


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("{'model': '/models/m'}", "/models/m"),
        ("{'model': \"it's\"}", "it's"),
        ("{'model': 'Qwen/Qwen3-0.6B', 'tensor_parallel_size': 2}", "Qwen/Qwen3-0.6B"),
        ("{'tensor_parallel_size': 2}", None),
    ],
)
def test_the_args_lines_model_is_read_without_its_quotes(
    printed: str, expected: str | None
) -> None:
    launch = log(banner("0.32.0") + args(printed)).launches[-1]
    assert launch.non_default_args[0].model == expected
