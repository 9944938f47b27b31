"""Log shapes of releases the real captures do not cover, written from vLLM's format
strings (reference §4a/§4b) — each pinned with its figures."""

from __future__ import annotations

import io

from vllm_evidence import assess, read_startup_log
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._readback.executor import resolve_executor
from vllm_evidence.decisions import CapacityReported, ParallelEstablished
from vllm_evidence.upstream import ExecutorBackend

# 0.8.5: "[file:line]" prefix, workers tagged "(VllmWorker rank=N pid=P)".
V085 = """\
INFO 04-28 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5
INFO 04-28 10:00:00 [api_server.py:1044] args: Namespace(model='m', \
tensor_parallel_size=2, data_parallel_size=1, api_key=None)
INFO 04-28 10:00:05 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: \
model='m', tensor_parallel_size=2, pipeline_parallel_size=1, served_model_name=m
(VllmWorker rank=0 pid=2344) INFO 04-28 10:00:10 [parallel_state.py:957] rank 0 in world \
size 2 is assigned as DP rank 0, PP rank 0, TP rank 0
(VllmWorker rank=1 pid=2345) INFO 04-28 10:00:10 [parallel_state.py:957] rank 1 in world \
size 2 is assigned as DP rank 0, PP rank 0, TP rank 1
(VllmWorker rank=0 pid=2344) INFO 04-28 10:00:20 [kv_cache_utils.py:634] GPU KV cache \
size: 1,234,560 tokens
(VllmWorker rank=0 pid=2344) INFO 04-28 10:00:20 [kv_cache_utils.py:637] Maximum \
concurrency for 2,048 tokens per request: 602.81x
"""


def _log(text: str) -> StartupLog:
    read = read_startup_log(io.BytesIO(text.encode()))
    assert isinstance(read, StartupLog), read
    return read


def test_0_8_5_worker_tags_with_a_rank_word_are_read() -> None:
    launch = _log(V085).launches[0]
    assert [(r.rank, r.pid) for r in launch.ranks] == [(0, 2344), (1, 2345)]
    assert [r.process.name if r.process else None for r in launch.ranks] == [
        "VllmWorker rank=0",
        "VllmWorker rank=1",
    ]
    (capacity,) = launch.capacity
    assert capacity.tokens is not None
    assert capacity.tokens.value == 1234560
    assert capacity.max_concurrency is not None
    assert str(capacity.max_concurrency.value) == "602.81"
    assert resolve_executor(launch).backend is ExecutorBackend.MP


def test_0_8_5_decisions() -> None:
    assessment = assess(None, _log(V085))
    parallel = assessment.parallel
    assert isinstance(parallel, ParallelEstablished), parallel
    assert [r.pid for r in parallel.ranks] == [2344, 2345]
    capacity = assessment.capacity
    assert isinstance(capacity, CapacityReported), capacity
    assert capacity.reason.value == "per_worker_before_reduction"
    assert [e.tokens.value for e in capacity.engines] == [1234560]


def test_a_parenthesis_without_a_pid_is_no_tag() -> None:
    text = "(not a tag=1) INFO 04-28 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5\n"
    launch = _log(text).launches[0]
    assert launch.versions == () or all(v.process is None for v in launch.versions)


def test_a_vllm_logging_prefix_before_the_record_head_is_skipped() -> None:
    """``VLLM_LOGGING_PREFIX`` prepends any text to every record."""
    for prefix in ("[vllm] ", "MYPREFIX:", "gpu-7/"):
        text = (
            f"{prefix}INFO 11-30 04:10:58 [api_server.py:1] vLLM API server version 0.32.0\n"
            f"{prefix}(EngineCore pid=200) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] CPU KV "
            "cache size: 4,194,304 tokens, Maximum concurrency for 2,048 tokens per request: "
            "2048.00x\n"
        )
        read = _log(text)
        assert read.wrap_width is None
        (launch,) = read.launches
        assert launch.version is not None
        assert launch.version.text == "0.32.0"
        assert [(c.tokens.value if c.tokens else None) for c in launch.capacity] == [4194304]
        assert [c.process.pid if c.process else None for c in launch.capacity] == [200]


def test_a_message_quoting_a_record_head_is_not_split_there() -> None:
    """A recognised line keeps its own head even when its message quotes another."""
    text = (
        "(APIServer pid=1) INFO 11-30 04:10:58 [api_server.py:1] vLLM API server version 0.32.0\n"
    )
    (launch,) = _log(text).launches
    assert launch.version is not None
    assert launch.version.process is not None
    assert launch.version.process.pid == 1


def test_docker_json_file_and_cri_records_are_unwrapped() -> None:
    """``docker logs`` json-file lines and Kubernetes CRI lines carry vLLM's records."""
    import json

    records = [
        "(APIServer pid=1) INFO 11-30 04:10:58 [api_server.py:1] vLLM API server version 0.32.0",
        (
            "(APIServer pid=1) INFO 11-30 04:10:58 [api_utils.py:286] non-default args: "
            "{'model': '/m', 'served_model_name': ['a\"b']}"
        ),
        (
            "(EngineCore pid=200) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] CPU KV cache "
            "size: 4,194,304 tokens, Maximum concurrency for 2,048 tokens per request: 2048.00x"
        ),
    ]
    docker = "".join(
        json.dumps({"log": "\x1b[1;36m" + r + "\n", "stream": "stdout", "time": "t"}) + "\n"
        for r in records
    )
    cri = "".join(f"2026-11-30T04:11:21.123456789Z stdout F {r}\n" for r in records)
    for text in (docker, cri):
        read = _log(text)
        assert read.wrap_width is None
        (launch,) = read.launches
        assert launch.version is not None
        assert launch.version.text == "0.32.0"
        assert launch.served_model_names == ('a"b',)
        assert [(c.tokens.value if c.tokens else None) for c in launch.capacity] == [4194304]


def test_a_line_that_only_looks_like_docker_json_is_left_as_text() -> None:
    text = (
        '{"log": not json (APIServer pid=1) INFO 11-30 04:10:58 [a.py:1] '
        "vLLM API server version 0.32.0\n"
    )
    (launch,) = _log(text).launches
    assert launch.version is not None
    assert launch.version.text == "0.32.0"
