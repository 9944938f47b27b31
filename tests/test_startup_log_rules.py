"""Each reading rule, in both directions, on small hand-written logs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from vllm_evidence.adapters.startup_log import (
    CapacityFormat,
    ExecutorBackend,
    LogReadFailure,
    LogReadFailureReason,
    StartupLog,
    read_startup_log,
    split_top_level,
)

P = "(EngineCore_DP0 pid=10) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "
Q = "(EngineCore_DP1 pid=11) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "
API = "(APIServer pid={pid}) INFO 01-02 03:04:05 [api_server.py:1] "


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
    assert launch.executor_backend is ExecutorBackend.UNI


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
    assert launch.executor_backend is ExecutorBackend.RAY


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


def test_wrap_detection_needs_repeated_full_width_lines() -> None:
    long = P + "Available KV cache memory: 12.50 GiB"
    cut = 60
    wrapped = (long[:cut] + "\n" + long[cut:] + "\n") * 3
    detected = _log(wrapped)
    assert detected.wrap_width == cut
    assert [m.text for m in detected.launches[0].available_memory] == ["12.50"] * 3
    # a single cut line is not enough evidence of a terminal width
    once = _log(long[:cut] + "\n" + long[cut:] + "\n")
    assert once.wrap_width is None
    assert once.launches[0].available_memory == ()
    joined = _log(long[:cut] + "\n" + long[cut:] + "\n", wrap_width=cut)
    assert [m.text for m in joined.launches[0].available_memory] == ["12.50"]
    # without a wrap width, prefix-less lines are never joined
    off = _log(wrapped, wrap_width="off")
    assert off.wrap_width is None
    assert off.launches[0].available_memory == ()


def test_invalid_utf8_and_very_long_line() -> None:
    junk = b"\xff\xfe" + b"x" * (3 * 1024 * 1024) + b"\n"
    text = junk + (P + "Available KV cache memory: -1.50 GiB\n").encode()
    launch = _log(text).launches[0]
    assert [(m.text, m.line) for m in launch.available_memory] == [("-1.50", 2)]


def test_wrappers_journald_iso_and_python_logging() -> None:
    text = (
        "Sep 03 02:11:14 host vllm[12]: " + P + "GPU KV cache size: 7 tokens\n"
        "2025-09-03T02:11:14.123456789Z " + P + "Available KV cache memory: 2.00 GiB\n"
        "INFO:vllm.v1.core.kv_cache_utils:GPU KV cache size: 8 tokens\n"
    )
    launch = _log(text).launches[0]
    assert [c.tokens.value for c in launch.capacity if c.tokens] == [7, 8]
    assert [m.text for m in launch.available_memory] == ["2.00"]


def test_split_top_level_respects_brackets_and_quotes() -> None:
    pieces = list(split_top_level("a='x, y', b=[1, 2], c={'k': (3, 4)}, d=<E.X: 2>, e=5"))
    assert pieces == ["a='x, y'", "b=[1, 2]", "c={'k': (3, 4)}", "d=<E.X: 2>", "e=5"]


def test_failures_are_typed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "bin.log"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    cases = {
        tmp_path / "missing.log": LogReadFailureReason.MISSING,
        tmp_path: LogReadFailureReason.DIRECTORY,
        empty: LogReadFailureReason.EMPTY,
        binary: LogReadFailureReason.BINARY,
    }
    for path, reason in cases.items():
        result = read_startup_log(path)
        assert isinstance(result, LogReadFailure)
        assert result.reason is reason
        assert "\n" not in result.describe()


def test_symbolic_links_that_lead_nowhere_say_so(tmp_path: Path) -> None:
    dangling = tmp_path / "dangling.log"
    dangling.symlink_to(tmp_path / "gone.log")
    loop = tmp_path / "loop.log"
    loop.symlink_to(tmp_path / "loop.log")
    missing = read_startup_log(dangling)
    assert isinstance(missing, LogReadFailure)
    assert (missing.reason, missing.detail) == (
        LogReadFailureReason.MISSING,
        "a symbolic link to a missing file",
    )
    looping = read_startup_log(loop)
    assert isinstance(looping, LogReadFailure)
    assert looping.reason is LogReadFailureReason.UNREADABLE
    assert looping.detail == "Too many levels of symbolic links"
    plain = read_startup_log(tmp_path / "never.log")
    assert isinstance(plain, LogReadFailure)
    assert (plain.reason, plain.detail) == (LogReadFailureReason.MISSING, "no such file")
    (tmp_path / "gone.log").write_text("INFO 1 x.py:1] hello\n")
    assert not isinstance(read_startup_log(dangling), LogReadFailure)


def test_sealed_types_have_no_public_constructor() -> None:
    with pytest.raises(TypeError, match="read_startup_log"):
        StartupLog(None)  # type: ignore[arg-type]  # the seal: no public constructor


def test_equal_length_lines_before_noise_are_not_a_terminal_wrap() -> None:
    """Found by hypothesis: complete lines of one length, each followed by a prefix-less
    noise line, looked like a wrap at that length and merged three launches into one."""
    noise = "Loading safetensors checkpoint shards: 100% Completed | 1/1\n"
    text = "".join(
        f"(APIServer pid={pid}) INFO 01-02 03:04:05 [api_server.py:1] "
        f"vLLM API server version 0.10.1.1\n{noise}"
        for pid in (100, 200, 300)
    )
    read = _log(text)
    assert read.wrap_width is None
    assert [launch.api_server_pids for launch in read.launches] == [(100,), (200,), (300,)]


def test_compose_column_starts_a_record_so_equal_engine_lines_are_not_a_wrap() -> None:
    """Every line of a docker-compose log starts with the service column."""
    col = "vllm-1  | "
    engine = (
        "(EngineCore_DP{i} pid=10{i}) INFO 01-02 03:04:05 [core.py:74] Initializing a V1 LLM "
        "engine (v0.10.2) with config: model='/m', tensor_parallel_size=1, "
        "pipeline_parallel_size=1, data_parallel_size=2\n"
    )
    text = (
        col + "(APIServer pid=9) INFO 01-02 03:04:05 [api_server.py:1] vLLM API server "
        "version 0.10.2\n"
        + col
        + engine.format(i=0)
        + col
        + engine.format(i=1)
        + col
        + "(EngineCore_DP0 pid=100) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "
        "GPU KV cache size: 1,000 tokens\n"
    )
    read = _log(text)
    assert read.wrap_width is None
    launch = read.launches[0]
    assert len(launch.engine_configs) == 2
    assert [c.tokens.value if c.tokens else None for c in launch.capacity] == [1000]


def test_the_strict_and_tolerant_splits_share_one_scanner() -> None:
    from vllm_evidence.adapters.server_info import split_config_text

    text = "mode=<CompilationMode.VLLM_COMPILE: 3>, sizes=[1, 2], name='a, b'"
    assert list(split_top_level(text)) == [
        "mode=<CompilationMode.VLLM_COMPILE: 3>",
        "sizes=[1, 2]",
        "name='a, b'",
    ]
    assert split_config_text(text) == {
        "mode": "<CompilationMode.VLLM_COMPILE: 3>",
        "sizes": "[1, 2]",
        "name": "'a, b'",
    }
    # damage: the log reader takes what it can, the HTTP adapter says where it broke
    assert list(split_top_level("a=1), b=2")) == ["a=1)", "b=2"]
    assert str(split_config_text("a=1), b=2")) == "unbalanced ')' at offset 3"
    assert list(split_top_level("a='x, b=2")) == ["a='x, b=2"]
    assert str(split_config_text("a='x, b=2")) == "unterminated quoted string"
    assert str(split_config_text("a=[1, b=2")) == "unclosed bracket, expected ']'"
