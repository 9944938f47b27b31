"""A V0-era (0.6.x) startup log, written from vLLM 0.6.6.post1's own format strings.

Before the ``non-default args`` line existed, the API server logged every argument as
``args: Namespace(…)`` — including ``api_key`` in clear.  The reader takes the served
names, sizes and block size from it, and never keeps a secret's value.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from vllm_evidence import assess, read_startup_log
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._output.startup_log import startup_log_document
from vllm_evidence.decisions import (
    CapacityEstablished,
    IdentityReason,
    ParallelReason,
    ParallelRefused,
    ServedIdentityEstablished,
)
from vllm_evidence.serialize import assessment_document
from vllm_evidence.upstream import CapacitySource

SECRET = "sk-v0-secret-never-printed"  # noqa: S105  # asserted absent from every output

V0_LOG = (
    "INFO 12-27 10:00:00 api_server.py:651] vLLM API server version 0.6.6.post1\n"
    "INFO 12-27 10:00:00 api_server.py:652] args: Namespace(subparser='serve', "
    "model_tag='facebook/opt-125m', config='', host=None, port=8000, "
    "uvicorn_log_level='info', allow_credentials=False, allowed_origins=['*'], "
    f"api_key='{SECRET}', lora_modules=None, chat_template=None, "
    "model='facebook/opt-125m', task='auto', tokenizer=None, hf_token=None, "
    "download_dir=None, block_size=16, tensor_parallel_size=2, "
    "pipeline_parallel_size=1, distributed_executor_backend=None, "
    "served_model_name=None, gpu_memory_utilization=0.9, dispatch_function=<function "
    "serve at 0x7f00deadbeef>)\n"
    "INFO 12-27 10:00:05 llm_engine.py:234] Initializing an LLM engine (v0.6.6.post1) "
    "with config: model='facebook/opt-125m', speculative_config=None, "
    "tokenizer='facebook/opt-125m', skip_tokenizer_init=False, dtype=torch.float16, "
    "max_seq_len=2048, download_dir=None, load_format=LoadFormat.AUTO, "
    "tensor_parallel_size=2, pipeline_parallel_size=1, disable_custom_all_reduce=False, "
    "quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
    "seed=0, served_model_name=facebook/opt-125m, enable_prefix_caching=False\n"
    "INFO 12-27 10:00:20 distributed_gpu_executor.py:57] # GPU blocks: 27648, "
    "# CPU blocks: 7281\n"
    "INFO 12-27 10:00:20 distributed_gpu_executor.py:61] Maximum concurrency for 2048 "
    "tokens per request: 216.00x\n"
)


def _log() -> StartupLog:
    read = read_startup_log(io.BytesIO(V0_LOG.encode()))
    assert isinstance(read, StartupLog), read
    return read


def test_namespace_args_are_read() -> None:
    launch = _log().launches[0]
    assert launch.version is not None
    assert str(launch.version.version) == "0.6.6.post1"
    (args,) = launch.non_default_args
    assert args.get("model") == "'facebook/opt-125m'"
    assert args.get("block_size") == "16"
    assert args.tensor_parallel_size == 2
    assert args.served_model_names is None


def test_the_api_key_is_never_kept() -> None:
    launch = _log().launches[0]
    assert launch.non_default_args[0].get("api_key") == "'***'"
    assert launch.non_default_args[0].get("hf_token") == "None"
    assert SECRET not in repr(launch)
    assert SECRET not in json.dumps(startup_log_document(_log()))
    assert SECRET not in json.dumps(assessment_document(assess(None, _log())))


def test_the_cli_never_prints_the_key(tmp_path: Path) -> None:
    path = tmp_path / "v0.log"
    path.write_text(V0_LOG, encoding="utf-8")
    for argv in (["log", str(path), "--json"], ["log", str(path)]):
        out = subprocess.run(
            [sys.executable, "-m", "vllm_evidence", *argv],
            capture_output=True,
            text=True,
            check=True,
        )
        assert SECRET not in out.stdout + out.stderr
        assert "facebook/opt-125m" in out.stdout


def test_v0_capacity_is_blocks_times_the_launch_block_size() -> None:
    decision = assess(None, _log()).capacity
    assert isinstance(decision, CapacityEstablished), decision
    (engine,) = decision.engines
    assert engine.source_kind is CapacitySource.LOG_V0_BLOCKS
    assert engine.tokens.value == 27648 * 16


def test_v0_served_identity_and_parallel() -> None:
    assessment = assess(None, _log())
    identity = assessment.served_identity
    assert isinstance(identity, ServedIdentityEstablished), identity
    assert identity.reason is IdentityReason.ESTABLISHED
    assert [n.served_id for n in identity.names] == ["facebook/opt-125m"]
    parallel = assessment.parallel
    assert isinstance(parallel, ParallelRefused)
    assert parallel.reason is ParallelReason.POPULATION_UNOBSERVED
    assert parallel.expected_ranks == (0, 1)


def test_without_a_block_size_v0_blocks_are_refused() -> None:
    text = V0_LOG.replace("block_size=16, ", "")
    concurrency = text[text.index("INFO 12-27 10:00:20 distributed_gpu_executor.py:61]") :]
    read = read_startup_log(io.BytesIO(text.replace(concurrency, "").encode()))
    assert isinstance(read, StartupLog)
    decision = assess(None, read).capacity
    assert not isinstance(decision, CapacityEstablished)
    assert decision.reason.value == "block_size_unobserved"


def test_without_a_block_size_the_concurrency_line_pins_it() -> None:
    # 27,648 × B / 2048 printed as 216.00: only B = 16 fits.
    text = V0_LOG.replace("block_size=16, ", "")
    read = read_startup_log(io.BytesIO(text.encode()))
    assert isinstance(read, StartupLog)
    decision = assess(None, read).capacity
    assert isinstance(decision, CapacityEstablished), decision
    assert decision.engines[0].tokens.value == 442_368  # 27,648 × 16
