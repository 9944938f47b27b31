"""The startup-log reader after the layer split: typed values, and the executor laws.

The numbers the decisions use are typed where the log is read (a DP engine index, a
block size, an unquoted backend name), and which backends an executor marker is
consistent with is a version-scoped law of the table, in both directions.
"""

from __future__ import annotations

import itertools
import re

from packaging.version import Version

from tests._evidence import args, banner, engine_init, log
from vllm_evidence.adapters.startup_log import ExecutorBackend, ExecutorMarker
from vllm_evidence.measure import TokenCount
from vllm_evidence.output.laws import law_json
from vllm_evidence.upstream import (
    EXECUTOR_FILES,
    EXECUTOR_LAW_TABLE,
    ExecutorMarkerLaw,
    LawNotEstablished,
    executor_marker_law,
    executor_marker_laws,
)

MP, RAY = ExecutorBackend.MP, ExecutorBackend.RAY
CITATION = re.compile(r"(first-hand )?v0\.\d+\.\d+(\.post1|\.\d+)?: \S")


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


def test_the_block_size_is_typed_from_the_args_else_the_engine_line() -> None:
    given = log(banner("0.9.2") + args("{'block_size': 32}") + engine_init("0.9.2"))
    assert given.launches[0].block_size == TokenCount(32)
    printed = engine_init("0.9.2").replace("with config: ", "with config: block_size=16, ")
    assert log(banner("0.9.2") + printed).launches[0].block_size == TokenCount(16)
    assert log(banner("0.9.2") + engine_init("0.9.2")).launches[0].block_size is None
    unreadable = args("{'block_size': 'auto'}")
    assert log(banner("0.9.2") + unreadable).launches[0].block_size is None


def test_the_backend_name_is_unquoted_and_none_is_no_name() -> None:
    quoted = log(banner("0.32.0") + engine_init(backend="'my.Executor'"))
    config = quoted.launches[0].engine_config
    assert config is not None
    assert config.distributed_executor_backend == "'my.Executor'"
    assert config.executor_backend_name == "my.Executor"
    unset = log(banner("0.32.0") + engine_init(backend="None")).launches[0].engine_config
    assert unset is not None
    assert unset.executor_backend_name is None


def test_every_executor_file_is_named_by_a_law() -> None:
    assert set(EXECUTOR_FILES) == {
        "ray_distributed_executor.py",
        "ray_executor.py",
        "ray_executor_v2.py",
        "ray_gpu_executor.py",
        "mp_distributed_executor.py",
        "multiproc_gpu_executor.py",
        "multiproc_executor.py",
        "uniproc_executor.py",
        "gpu_executor.py",
    }
    assert EXECUTOR_FILES["multiproc_executor.py"] is ExecutorMarker.MULTIPROC_EXECUTOR_FILE


def test_every_executor_law_cites_a_release_and_spans_do_not_overlap() -> None:
    for _, laws in EXECUTOR_LAW_TABLE:
        assert laws
        for law in laws:
            assert law.sources
            for source in law.sources:
                assert CITATION.match(source), source
        for a, b in itertools.pairwise(laws):
            assert a.span.last < b.span.first


def test_a_shared_marker_is_mp_only_before_ray_v2_and_mp_or_ray_from_it() -> None:
    for marker in (ExecutorMarker.MULTIPROC_EXECUTOR_FILE, ExecutorMarker.VLLM_WORKER_TAG):
        before = executor_marker_law(marker, Version("0.10.1.1"))
        after = executor_marker_law(marker, Version("0.32.0"))
        assert isinstance(before, ExecutorMarkerLaw)
        assert before.backends == {MP}
        assert isinstance(after, ExecutorMarkerLaw)
        assert after.backends == {MP, RAY}
        between = executor_marker_law(marker, Version("0.15.0"))
        assert isinstance(between, LawNotEstablished)


def test_a_marker_that_names_its_backend_has_no_law() -> None:
    assert executor_marker_law(ExecutorMarker.CONFIG_FIELD, Version("0.32.0")) is None
    assert executor_marker_laws(ExecutorMarker.ARG) == ()


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


def test_an_executor_law_as_json_names_its_marker_backends_and_files() -> None:
    law = executor_marker_law(ExecutorMarker.MULTIPROC_EXECUTOR_FILE, Version("0.32.0"))
    assert isinstance(law, ExecutorMarkerLaw)
    doc = law_json(law)
    assert doc["question"] == "executor.multiproc_executor_file"
    assert doc["marker"] == "multiproc_executor_file"
    assert doc["backends"] == ["mp", "ray"]
    assert doc["files"] == ["multiproc_executor.py"]
    assert doc["span"] == {"first": "0.20.0", "last": "0.33.0"}
