"""What the text says, the JSON says: on every recorded real launch, the resolved sizes
and global ranks of ``log --json`` are the ones ``log`` prints (they once disagreed on
DP=2: the text resolved DP=2 and ranks 0, 1 while the JSON had only the engine-init
line's DP=1 and rank 0)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._output.startup_log import render_startup_log, startup_log_document

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
LOGS = sorted(REAL.rglob("startup.log"))


def _read(path: Path) -> StartupLog:
    read = read_startup_log(path)
    assert isinstance(read, StartupLog), read
    return read


@pytest.mark.parametrize("path", LOGS, ids=[str(p.relative_to(REAL)) for p in LOGS])
def test_the_json_carries_what_the_text_prints(path: Path) -> None:
    log = _read(path)
    text = render_startup_log(log)
    blocks = text.split("\nlaunch ")[1:]
    docs = startup_log_document(log)["launches"]
    assert len(blocks) == len(docs)
    for block, doc in zip(blocks, docs, strict=True):
        resolved = doc["resolved_parallel"]
        shown = re.search(r"resolved sizes:     TP=(\d+) PP=(\d+) DP=(\d+)", block)
        if shown is not None:  # printed where they differ from the engine-init line
            assert [
                resolved["tensor_parallel_size"],
                resolved["pipeline_parallel_size"],
                resolved["data_parallel_size"],
            ] == [int(g) for g in shown.groups()]
            ranks = re.search(r"global ranks:       ([^\n]*)", block)
            assert ranks is not None
            printed = [int(r) for r in re.findall(r"(?:^|, )(\d+)", ranks.group(1))]
            assert [g["rank"] for g in resolved["global_ranks"]] == printed
            # each rank's "(how)" in the text is the JSON's `how`, and none where it is null
            said = re.findall(r"(?:^|, )\d+(?: \(([^)]*)\))?", ranks.group(1))
            assert [g["how"] or "" for g in resolved["global_ranks"]] == said


def test_the_attribution_is_in_both_and_says_the_line_that_read_the_engine() -> None:
    """DP=2 ``--enforce-eager`` on 0.32.0: each worker's engine read from the shutdown's
    force-kill lines; a DP=2 launch on 0.29.0: from the compile cache; TP=2: no engine to
    read (no words, in the text or in the JSON)."""
    cases = {
        "vllm-0.32.0-cpu/dp2-eager": [
            ("shutdown_kill", "DP engine from the shutdown's force-kill line 221"),
            ("shutdown_kill", "DP engine from the shutdown's force-kill line 223"),
        ],
        "vllm-0.29.0-cpu/dp2": [
            ("compile_cache", "DP engine from compile-cache line 77"),
            ("compile_cache", "DP engine from compile-cache line 79"),
        ],
        "vllm-0.32.0-cpu/tp2-devmode": [("dp_wide_world", None), ("dp_wide_world", None)],
    }
    for where, expected in cases.items():
        log = _read(REAL / where / "startup.log")
        (launch,) = startup_log_document(log)["launches"]
        ranks = launch["resolved_parallel"]["global_ranks"]
        assert [(g["attribution"], g["how"]) for g in ranks] == expected, where
        text = render_startup_log(log)
        for _, how in expected:
            assert how is None or f"({how})" in text, where


def test_a_dp2_launch_says_dp2_and_both_ranks_in_the_json() -> None:
    log = _read(REAL / "vllm-0.29.0-cpu" / "dp2" / "startup.log")
    (launch,) = startup_log_document(log)["launches"]
    # Each engine printed its own engine-init line with DP=1 …
    assert launch["parallel"]["data_parallel_size"] == 1
    # … and the launch resolved to DP=2, ranks 0 and 1 (from each worker's compile cache).
    resolved = launch["resolved_parallel"]
    assert resolved["data_parallel_size"] == 2
    assert [(g["rank"], g["engine_line"]) for g in resolved["global_ranks"]] == [(0, 77), (1, 79)]


def test_a_tp2_launch_resolves_to_what_its_engine_init_line_prints() -> None:
    log = _read(REAL / "vllm-0.32.0-cpu" / "tp2-devmode" / "startup.log")
    (launch,) = startup_log_document(log)["launches"]
    resolved = launch["resolved_parallel"]
    assert (resolved["tensor_parallel_size"], resolved["data_parallel_size"]) == (2, 1)
    assert resolved["note"] is None
    assert [(g["rank"], g["pid"]) for g in resolved["global_ranks"]] == [(0, 9748), (1, 9749)]
