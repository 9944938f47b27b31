"""Logs people paste: vLLM's messages under heads that are not vLLM's bytes.

Each form is read (the message is vLLM's), and each is marked transformed: its process
tag is never taken as the printing process's, so no rank comes from it.  The other
direction of every rule: vLLM's own head keeps its tag and its ranks.
"""

from __future__ import annotations

import io

from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._adapters.startup_log._lexer import split_header
from vllm_evidence._measure import BlockCount


def _launch(text: str):  # type: ignore[no-untyped-def]  # a Launch; the type is sealed-private
    log = read_startup_log(io.BytesIO(text.encode()), wrap_width="off")
    assert isinstance(log, StartupLog), log
    return log.launches[-1]


RANK = "world_size=2 rank=1 local_rank=1 distributed_init_method=tcp://127.0.0.1:1 backend=gloo"
VLLM_HEAD = "(VllmWorker rank=1 pid=31) INFO 10-01 18:03:16 [parallel_state.py:1] "


def test_markdown_backticks_are_read_as_transformed() -> None:
    size = "`INFO 10-01 18:03:16 [kv_cache_utils.py:849] GPU KV cache size: 1,024 tokens`\n"
    launch = _launch(size)
    assert [c.tokens.value for c in launch.capacity if c.tokens] == [1024]
    header = split_header(size.strip())
    assert header.transformed is True
    assert header.message == "GPU KV cache size: 1,024 tokens"


def test_a_rank_under_backticks_is_not_a_rank_but_under_vllms_head_it_is() -> None:
    pasted = _launch(f"`{VLLM_HEAD}{RANK}`\n")
    assert pasted.ranks == ()
    # What the paste names is kept apart, with no process: never evidence of one.
    (named,) = pasted.pasted_ranks
    assert (named.rank, named.world_size, named.process, named.pid) == (1, 2, None, None)
    own = _launch(f"{VLLM_HEAD}{RANK}\n")
    (rank,) = own.ranks
    assert (rank.rank, rank.world_size, rank.pid) == (1, 2, 31)
    assert own.pasted_ranks == ()


def test_a_host_logging_rank_line_is_named_not_a_rank() -> None:
    launch = _launch(
        HOST + "world_size=4 rank=3 local_rank=3 distributed_init_method=env:// backend=nccl\n"
    )
    assert launch.ranks == ()
    assert [(r.rank, r.world_size) for r in launch.pasted_ranks] == [(3, 4)]


def test_elided_fields_are_read_without_their_tag() -> None:
    line = (
        "(EngineCore pid=...) INFO ... [kv_cache_utils.py:1733] GPU KV cache size: 2,048 "
        "tokens, Maximum concurrency for 1,024 tokens per request: 2.00x\n"
    )
    (capacity,) = _launch(line).capacity
    assert capacity.tokens is not None
    assert capacity.tokens.value == 2048
    assert capacity.process is None
    assert split_header(line.strip()).file == "kv_cache_utils.py"


def test_an_unelided_head_is_vllms_own() -> None:
    line = "(EngineCore pid=7) INFO 10-01 18:03:16 [kv_cache_utils.py:1733] "
    line += "GPU KV cache size: 9 tokens"
    header = split_header(line)
    assert header.transformed is False
    assert header.tag is not None
    assert header.tag.pid == 7


HOST = "2024-10-01 18:03:16,895 vllm.executor.gpu_executor 3169096 INFO     "


def test_a_host_applications_logging_format_is_read() -> None:
    blocks = HOST + "# GPU blocks: 2222, # CPU blocks: 512\n"
    launch = _launch(blocks)
    (b,) = launch.blocks
    assert (b.device, b.device_blocks.value, b.process) == ("GPU", 2222, None)
    header = split_header(blocks.strip())
    assert (header.transformed, header.file) == (True, "gpu_executor.py")


def test_the_host_format_under_journald_is_read() -> None:
    line = "Oct 01 18:03:16 host app[12]: " + HOST + "# GPU blocks: 7, # CPU blocks: 1"
    header = split_header(line)
    assert header.transformed is True
    assert header.message == "# GPU blocks: 7, # CPU blocks: 1"


def test_a_bare_message_and_one_that_lost_its_hash() -> None:
    bare = _launch("# GPU blocks: 10, # CPU blocks: 2\n")
    assert [b.device_blocks.value for b in bare.blocks] == [10]
    lost = _launch("GPU blocks: 11, # CPU blocks: 2\n")
    assert [b.device_blocks.value for b in lost.blocks] == [11]
    # Without the CPU half nothing says it is vLLM's blocks line.
    assert _launch("GPU blocks: 12\n").blocks == ()


def test_the_oldest_engine_init_line_without_a_version() -> None:
    line = (
        "INFO 10-01 18:03:16 llm_engine.py:79] Initializing an LLM engine with config: "
        "model='m', tensor_parallel_size=2, block_size=16\n"
    )
    launch = _launch(line)
    config = launch.engine_config
    assert config is not None
    assert (config.version_text, config.tensor_parallel_size) == (None, 2)
    assert launch.versions == ()
    with_version = _launch(line.replace("LLM engine with", "LLM engine (v0.4.0) with"))
    assert with_version.engine_config is not None
    assert with_version.engine_config.version_text == "0.4.0"
    assert [v.text for v in with_version.versions] == ["0.4.0"]


def test_a_launch_says_its_head_was_transformed_and_where() -> None:
    pasted = (
        "`INFO 10-01 18:03:16 [kv_cache_utils.py:849] GPU KV cache size: 1,024 tokens`\n"
        "some other line\n"
        f"`{VLLM_HEAD}{RANK}`\n"  # named (pasted_ranks), never a rank
        "(EngineCore pid=...) INFO ... [kv_cache_utils.py:1733] GPU KV cache size: 2,048 "
        "tokens, Maximum concurrency for 1,024 tokens per request: 2.00x\n"
    )
    launch = _launch(pasted)
    assert launch.head == "transformed"
    assert launch.transformed_head_lines == (1, 3, 4)
    assert launch.ranks == ()
    assert [(r.rank, r.world_size, r.line) for r in launch.pasted_ranks] == [(1, 2, 3)]


def test_vllms_own_heads_leave_the_launch_untransformed() -> None:
    own = "(EngineCore pid=7) INFO 10-01 18:03:16 [kv_cache_utils.py:1733] "
    own += "GPU KV cache size: 9 tokens\n" + f"{VLLM_HEAD}{RANK}\n"
    launch = _launch(own)
    assert launch.head == "vllm"
    assert launch.transformed_head_lines == ()


def test_the_document_and_the_report_say_transformed() -> None:
    from vllm_evidence._output.startup_log import render_startup_log, startup_log_document

    text = "`INFO 10-01 18:03:16 [kv_cache_utils.py:849] GPU KV cache size: 1,024 tokens`\n"
    log = read_startup_log(io.BytesIO(text.encode()), wrap_width="off")
    assert isinstance(log, StartupLog), log
    (launch,) = startup_log_document(log)["launches"]
    assert (launch["head"], launch["transformed_head_lines"]) == ("transformed", [1])
    report = render_startup_log(log)
    assert "head:               transformed (a pasted log) at line(s) 1:" in report


def test_a_hosts_prefix_after_a_timestamp_leaves_vllms_head_read() -> None:
    """Issue 33: a model server that wraps vLLM (its stamp, level, worker and logger
    before vLLM's own head) hid the head; the head is found after the stamp too."""
    prefix = "2024-09-13T22:25:41,496 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - "
    line = prefix + "INFO 09-13 22:25:41 distributed_gpu_executor.py:57] # GPU blocks: 6, "
    line += "# CPU blocks: 4\n"
    (blocks,) = _launch(line).blocks
    assert (blocks.device_blocks.value, blocks.cpu_blocks) == (6, BlockCount(4))
    assert split_header(line.strip()).file == "distributed_gpu_executor.py"
    # The head must start within 80 characters of the prefix: further in, it is text.
    far = prefix + "x" * 90 + " INFO 09-13 22:25:41 distributed_gpu_executor.py:57] hello"
    assert split_header(far).file is None


def test_a_head_that_starts_in_the_prefix_window_and_ends_past_it_is_found() -> None:
    stamp = "2026-01-01 00:00:00.000 my-long-application-name.service[123456] prefix text: "
    assert len(stamp) > 70
    line = stamp + "(EngineCore pid=7) INFO 10-01 18:03:16 [kv_cache_utils.py:1] GPU KV cache "
    line += "size: 9 tokens"
    header = split_header(line)
    assert header.tag is not None
    assert header.tag.pid == 7
    assert header.file == "kv_cache_utils.py"


def test_a_head_with_its_time_or_level_taken_out_is_read_as_transformed() -> None:
    """Issue 33: people keep only part of a head (``INFO [file.py:N]``, ``[file.py:N]``)."""
    for head in ("INFO [kv_cache_utils.py:1319] ", "[kv_cache_utils.py:1319] ", "INFO 10-01 "):
        line = f"{head}GPU KV cache size: 290,864 tokens"
        header = split_header(line)
        if head == "INFO 10-01 ":  # neither a whole head nor a partial one: not read
            assert header.message == line
            continue
        assert header.transformed is True
        assert header.file == "kv_cache_utils.py"
        assert [c.tokens.value for c in _launch(f"`{line}`\n").capacity if c.tokens] == [290864]
    # A whole head is vLLM's own, not a partial one.
    own = split_header("(EngineCore pid=7) INFO 10-01 18:03:16 [kv_cache_utils.py:1] x")
    assert own.transformed is False
    assert own.tag is not None
    # The tag before a partial head is not trusted: no rank comes from it.
    launch = _launch(f"(VllmWorker rank=1 pid=31) [parallel_state.py:1] {RANK}\n")
    assert launch.ranks == ()
    assert [(r.rank, r.world_size) for r in launch.pasted_ranks] == [(1, 2)]
