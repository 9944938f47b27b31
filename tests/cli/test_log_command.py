"""``vllm-evidence log`` as a subprocess: exit codes, JSON contract, one-line errors."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests._cli import run_cli
from tests._paths import CAPTURES


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("log", *args)


def test_json_contract_on_the_real_capture() -> None:
    result = _run(str(CAPTURES / "vllm-0.32.0-cpu-tp1-devmode" / "startup.log"), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "vllm-evidence.startup-log/6"
    (launch,) = doc["launches"]
    assert (launch["index"], launch["first_line"], launch["last_line"]) == (0, 1, 192)
    assert launch["version"] == "0.32.0"
    assert launch["served_model_names"] == ["tiny-llama:q4-alias"]
    assert launch["parallel"]["tensor_parallel_size"] == 1
    assert launch["executor_backend"] == "mp"
    assert {"path": "/server_info", "methods": ["GET"], "line": 86} in launch["routes"]
    assert launch["capacity"] == [
        {
            "line": 54,
            "concurrency_line": None,
            "format": "v1_one_line",
            "process": "EngineCore",
            "process_tag": {
                "name": "EngineCore",
                "pid": 23974,
                "ip": None,
                "tag": "EngineCore pid=23974",
            },
            "device": "CPU",
            "tokens": 4194304,
            "max_model_len": 2048,
            "max_concurrency": "2048.00",
        }
    ]
    assert launch["blocks"] == []
    assert launch["available_kv_cache_memory_gib"] == []
    assert launch["ranks"][0]["pid"] == 23986


def test_negative_memory_is_exact_text_in_json() -> None:
    path = (
        CAPTURES / "public" / "startup-log" / "dennislee22-v0.10-negative-available-kv-memory.txt"
    )
    doc = json.loads(_run(str(path), "--json").stdout)
    assert doc["launches"][0]["available_kv_cache_memory_gib"] == ["-0.53"]
    assert doc["launches"][0]["version"] is None


def test_summary_is_readable() -> None:
    result = _run(str(CAPTURES / "vllm-0.32.0-cpu-tp1-devmode" / "startup.log"))
    assert result.returncode == 0
    assert "launch 0 (lines 1-192)" in result.stdout
    assert "development mode on" in result.stdout


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)))
    for target in (tmp_path / "missing.log", tmp_path, empty, binary):
        result = _run(str(target))
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr
    bad_width = _run(str(empty), "--wrap-width", "wide")
    assert bad_width.returncode == 2
    assert bad_width.stderr.count("\n") == 1


def test_json_lists_each_workers_compile_cache_line() -> None:
    """The 0.29.0 DP=2 log: the two workers name their DP engine only in the cache
    directory they save to (``…/rank_0_0/…``, ``…/rank_0_1/…``); the document carries
    both lines, read here from the file itself."""
    log = Path(__file__).parents[1] / "fixtures/real/vllm-0.29.0-cpu/dp2/startup.log"
    expected = []
    for number, text in enumerate(log.read_bytes().decode().split("\n"), start=1):
        found = re.search(r"saved AOT compiled function to \S*/rank_(\d+)_(\d+)/", text)
        pid = re.match(r"\(Worker pid=(\d+)\)", text)
        if found and pid:
            rank, index = int(found.group(1)), int(found.group(2))
            expected.append(("aot_saved", rank, index, number, int(pid.group(1))))
    assert len(expected) == 2, "the fixture's two cache lines: nothing compared"
    result = _run(str(log), "--json")
    assert result.returncode == 0, result.stderr
    (launch,) = json.loads(result.stdout)["launches"]
    assert [
        (c["form"], c["rank"], c["data_parallel_index"], c["line"], c["process"]["pid"])
        for c in launch["compile_cache"]
    ] == expected
    assert sorted(c["data_parallel_index"] for c in launch["compile_cache"]) == [0, 1]


def test_a_file_with_no_vllm_line_is_not_a_log(tmp_path: Path) -> None:
    hostname = tmp_path / "hostname"
    hostname.write_text("vm\n", encoding="utf-8")
    access = tmp_path / "access.log"
    access.write_text('INFO:     127.0.0.1:43402 - "GET /metrics HTTP/1.1" 200 OK\n' * 3)
    for path, lines in ((hostname, "1 line(s)"), (access, "3 line(s)")):
        for extra in ((), ("--json",)):
            result = _run(str(path), *extra)
            assert result.returncode == 2
            assert result.stdout == ""
            assert result.stderr == (
                f"vllm-evidence log: {path}: no line vLLM prints in {lines} (version, "
                "arguments, engine-init, rank, capacity, route or lifecycle): not a vLLM "
                "startup log\n"
            )
    # One line vLLM prints is a launch: read, exit 0.
    one = tmp_path / "one.log"
    one.write_text("INFO 11-30 04:10:58 [api_server.py:1] vLLM API server version 0.32.0\n")
    result = _run(str(one))
    assert result.returncode == 0
    assert "version:            0.32.0" in result.stdout
