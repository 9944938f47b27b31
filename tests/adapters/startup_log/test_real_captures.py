"""The real captures: every figure below was copied by hand from the log text."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from tests._paths import CAPTURES
from vllm_evidence._adapters.startup_log import (
    CapacityFormat,
    ExecutorBackend,
    Launch,
    RankForm,
    StartupLog,
    read_startup_log,
)
from vllm_evidence._readback.executor import resolve_executor

PUBLIC = CAPTURES / "public" / "startup-log"


def _read(path: Path) -> StartupLog:
    log = read_startup_log(path)
    assert isinstance(log, StartupLog), log
    return log


def _one(path: Path) -> Launch:
    log = _read(path)
    assert len(log.launches) == 1
    return log.launches[0]


def test_every_log_capture_parses() -> None:
    paths = [CAPTURES / "vllm-0.32.0-cpu-tp1-devmode" / "startup.log", *PUBLIC.glob("*.txt")]
    assert len(paths) == 6
    for path in paths:
        assert _read(path).launches


def test_vllm_0_32_cpu_devmode() -> None:
    log = _read(CAPTURES / "vllm-0.32.0-cpu-tp1-devmode" / "startup.log")
    assert log.line_count == 192
    assert log.wrap_width is None
    (launch,) = log.launches
    assert (launch.first_line, launch.last_line) == (1, 192)
    assert launch.version is not None
    assert launch.version.text == "0.32.0"
    assert launch.served_model_names == ("tiny-llama:q4-alias",)
    config = launch.engine_config
    assert config is not None
    assert config.line == 20
    assert config.engine == "v1"
    assert (config.tensor_parallel_size, config.pipeline_parallel_size) == (1, 1)
    assert config.data_parallel_size == 1
    assert config.decode_context_parallel_size == 1
    assert config.max_seq_len is not None
    assert config.max_seq_len.value == 2048
    assert config.kv_cache_dtype == "auto"
    assert config.enable_prefix_caching is True
    assert [(r.form, r.rank, r.world_size, r.pid, r.line) for r in launch.ranks] == [
        (RankForm.WORLD_SIZE, 0, 1, 23986, 36),
        (RankForm.ASSIGNMENT, 0, 1, 23986, 37),
    ]
    assert launch.ranks[1].group_rank("TP") == 0
    assert launch.ranks[1].group_rank("EP") is None
    assert resolve_executor(launch).backend is ExecutorBackend.MP
    (cap,) = launch.capacity
    assert cap.format is CapacityFormat.V1_ONE_LINE
    assert (cap.line, cap.device) == (54, "CPU")
    assert cap.tokens is not None
    assert cap.tokens.value == 4194304
    assert cap.max_model_len is not None
    assert cap.max_model_len.value == 2048
    assert cap.max_concurrency is not None
    assert str(cap.max_concurrency.value) == "2048.00"
    assert cap.process is not None
    assert (cap.process.name, cap.process.pid) == ("EngineCore", 23974)
    assert len(launch.routes) == 58
    assert ("/server_info", ("GET",)) in [(r.path, r.methods) for r in launch.routes]
    assert ("/openapi.json", ("GET", "HEAD")) in [(r.path, r.methods) for r in launch.routes]
    assert launch.dev_mode_warning_lines == (61,)
    assert launch.development_mode is True
    assert launch.available_memory == ()
    assert launch.blocks == ()


def test_ray_four_nodes_ansi_nested_tags_and_repeated() -> None:
    launch = _one(PUBLIC / "dennislee22-v0.10.1.1-gptoss120b-ray-4nodes-ansi.txt")
    assert launch.version is not None
    assert launch.version.text == "0.10.1.1"
    assert launch.served_model_names == ("gpt-oss-120b",)
    (args,) = launch.non_default_args
    assert args.tensor_parallel_size == 4
    config = launch.engine_config
    assert config is not None
    assert config.tensor_parallel_size == 4
    assert config.data_parallel_size is None  # 0.10.1.1 does not print it
    assert [(r.rank, r.world_size, r.pid, r.line, r.repeated) for r in launch.ranks] == [
        (1, 4, 345, 78, None),
        (0, 4, 1273, 90, 3),
    ]
    tag = launch.ranks[0].process
    assert tag is not None
    assert (tag.name, tag.ip, tag.outer) == (
        "RayWorkerWrapper",
        "10.42.11.243",
        "EngineCore_0 pid=1159",
    )
    assert resolve_executor(launch).backend is ExecutorBackend.RAY
    assert 30 in [o.line for o in resolve_executor(launch).evidence]
    assert [(c.line, c.concurrency_line) for c in launch.capacity] == [
        (115, 116),
        (117, 118),
        (119, 120),
        (121, 122),
    ]
    for cap in launch.capacity:
        assert cap.format is CapacityFormat.V1_TWO_LINE
        assert cap.tokens is not None
        assert cap.tokens.value == 2640144
        assert cap.max_model_len is not None
        assert cap.max_model_len.value == 16384
        assert cap.max_concurrency is not None
        assert cap.max_concurrency.value == Decimal("284.25")
    assert [(m.text, m.line, m.repeated) for m in launch.available_memory] == [
        ("45.32", 111, None),
        ("45.32", 296, 3),
    ]
    assert len(launch.routes) == 31
    assert launch.development_mode is None  # no /server_info line: not observed, not "off"


def test_wrapped_147_ray_rejoins_split_lines() -> None:
    log = _read(PUBLIC / "dennislee22-v0.10.1.1-qwen2-7b-ray-2nodes-wrapped147.txt")
    assert log.wrap_width == 147
    (launch,) = log.launches
    # "Available KV cache me" / "mory: 11.03 GiB" on lines 109-110
    assert [(m.text, m.line) for m in launch.available_memory] == [("11.03", 109), ("11.03", 122)]
    # the non-default args line wraps inside the model name (lines 10-11)
    (args,) = launch.non_default_args
    assert args.line == 10
    assert args.get("model") == "'Qwen2-7B-Instruct'"
    assert args.tensor_parallel_size == 2
    config = launch.engine_config
    assert config is not None
    assert config.line == 17
    assert config.tensor_parallel_size == 2  # "tensor_parallel_si" / "ze=2" across lines 19-20
    assert config.max_seq_len is not None
    assert config.max_seq_len.value == 16384
    assert [(r.rank, r.world_size, r.line) for r in launch.ranks] == [(1, 2, 62), (0, 2, 82)]
    assert [(c.tokens.value if c.tokens else None, c.line) for c in launch.capacity] == [
        (412944, 111),
        (412944, 113),
    ]
    assert all(
        c.max_concurrency and str(c.max_concurrency.value) == "25.20" for c in launch.capacity
    )
    assert resolve_executor(launch).backend is ExecutorBackend.RAY


def test_tp2_mp_vllmworker() -> None:
    log = _read(PUBLIC / "dennislee22-v0.10.1.1-qwen2-7b-tp2-mp-vllmworker.txt")
    assert log.wrap_width == 147
    (launch,) = log.launches
    assert launch.version is not None
    assert launch.version.text == "0.10.1.1"
    assert [(r.rank, r.world_size, r.pid) for r in launch.ranks] == [(0, 2, 3974), (1, 2, 3975)]
    names = [r.process.name for r in launch.ranks if r.process]
    assert names == ["VllmWorker TP0", "VllmWorker TP1"]
    assert resolve_executor(launch).backend is ExecutorBackend.MP
    assert [(m.text, m.process.name if m.process else None) for m in launch.available_memory] == [
        ("31.83", "VllmWorker TP1"),
        ("31.83", "VllmWorker TP0"),
    ]
    assert [c.line for c in launch.capacity] == [95, 97]
    for cap in launch.capacity:
        assert cap.tokens is not None
        assert cap.tokens.value == 1192160
        assert cap.max_concurrency is not None
        assert str(cap.max_concurrency.value) == "72.76"


def test_negative_available_memory_is_kept() -> None:
    launch = _one(PUBLIC / "dennislee22-v0.10-negative-available-kv-memory.txt")
    (mem,) = launch.available_memory
    assert mem.gib.value == Decimal("-0.53")
    assert mem.line == 9
    assert launch.capacity == ()
    assert launch.version is None


def test_prefixless_dsv4_two_line_pair() -> None:
    launch = _one(PUBLIC / "miaai-dsv4flash-2x-dgx-spark-1m-context-prefixless.txt")
    (cap,) = launch.capacity
    assert (cap.line, cap.concurrency_line, cap.device) == (13, 14, "GPU")
    assert cap.tokens is not None
    assert cap.tokens.value == 2493464
    assert cap.max_model_len is not None
    assert cap.max_model_len.value == 1048576
    assert cap.max_concurrency is not None
    assert str(cap.max_concurrency.value) == "2.38"
    assert [m.text for m in launch.available_memory] == ["18.08"]
