"""The pasted-logs accuracy benchmark scores a case read exactly, and names a miss."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_pasted_logs.py"

LOG = (
    "```\n"
    "INFO 09-13 22:25:41 [distributed_gpu_executor.py:57] # GPU blocks: 61913, "
    "# CPU blocks: 4096\n"
    "(EngineCore pid=9) INFO 10-22 09:33:49 [kv_cache_utils.py:1087] GPU KV cache size: "
    "162,704 tokens\n"
    "```\n"
)
READ: dict[str, object] = {
    "source": "a/b#1",
    "version": None,
    "tensor_parallel_size": None,
    "pipeline_parallel_size": None,
    "ranks": [],
    "capacity_tokens": [162704],
    "gpu_blocks": [61913],
}


def _run(tmp_path: Path, cases: dict[str, dict[str, object]]) -> str:
    for name, case in cases.items():
        (tmp_path / f"{name}.log").write_text(LOG, encoding="utf-8")
        (tmp_path / f"{name}.json").write_text(json.dumps(case), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "--show-misses"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_a_case_the_reader_gets_right_is_read_exactly(tmp_path: Path) -> None:
    out = _run(tmp_path, {"01": READ})
    assert out.splitlines()[0] == "read exactly: 1/1 (100.0 %)"


def test_a_fact_the_reader_does_not_give_is_a_miss_named_with_both_values(
    tmp_path: Path,
) -> None:
    wrong: dict[str, object] = {
        **READ,
        "source": "a/b#2",
        "gpu_blocks": [61914],
        "version": "0.6.3",
    }
    out = _run(tmp_path, {"01": READ, "02": wrong})
    lines = out.splitlines()
    assert lines[0] == "read exactly: 1/2 (50.0 %)"
    assert "  gpu_blocks               1/2" in lines
    assert "  capacity_tokens          2/2" in lines
    assert any(
        line.endswith("(a/b#2): gpu_blocks: read by a person [61914], by us [61913]")
        for line in lines
    )
    assert any(
        line.endswith("(a/b#2): version: read by a person '0.6.3', by us None") for line in lines
    )


def test_a_rank_named_only_in_its_own_engine_counts_apart(tmp_path: Path) -> None:
    """A bare Worker_TP1 tag is no global rank (independent DP engines share names): a
    miss for the strict figure, counted by the second figure, which still needs the
    person's ranks exactly."""
    log = "(Worker_TP1 pid=5) INFO 10-22 09:33:49 [gpu_model_runner.py:1] Model loading\n"
    for name, ranks in (("01", [1]), ("02", [0, 1])):
        (tmp_path / f"{name}.log").write_text(log, encoding="utf-8")
        case = {**READ, "ranks": ranks, "capacity_tokens": [], "gpu_blocks": []}
        (tmp_path / f"{name}.json").write_text(json.dumps(case), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "read exactly: 0/2 (0.0 %)"
    assert lines[-1] == "read exactly, a rank named only in its own engine counted: 1/2 (50.0 %)"
