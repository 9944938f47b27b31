"""The first live-tier test: every capture is complete and well formed.

The product's own assertions (probe replay, log reader, decisions) plug in next to this
file as ``tests/live/test_live_*.py``; see ``README.md`` here.
"""

from __future__ import annotations

import json
from pathlib import Path

STEMS = (
    "version",
    "v1_models",
    "metrics",
    "server_info",
    "server_info__config_format_json",
    "get_world_size",
    "health",
)


def read_dirs(scenario_dir: Path) -> list[Path]:
    """The directories of one scenario that each hold a full set of route reads."""
    name = scenario_dir.name
    if name == "restart-mid-batch":
        return [scenario_dir / "second"]
    if name == "tp2-apikey":
        return [scenario_dir, scenario_dir / "with-key"]
    return [scenario_dir]


def check_pair(body: Path) -> None:
    head = body.with_suffix(".headers").read_bytes()
    assert head.startswith(b"HTTP/1.1 "), body
    assert head.endswith(b"\r\n\r\n"), body
    lines = head[:-4].split(b"\r\n")
    fields = dict(line.split(b": ", 1) for line in lines[1:])
    assert fields[b"server"] == b"uvicorn"
    if b"content-length" in fields:
        assert int(fields[b"content-length"]) == len(body.read_bytes()), body


def test_scenario_files_complete(scenario_dir: Path) -> None:
    for d in read_dirs(scenario_dir):
        for stem in STEMS:
            check_pair(d / f"{stem}.body")
    logs = sorted(scenario_dir.rglob("startup.log"))
    expected = 2 if scenario_dir.name == "restart-mid-batch" else 1
    assert len(logs) == expected
    for log in logs:
        text = log.read_text("utf-8")
        assert "Starting vLLM server on http://127.0.0.1:" in text, log
        assert "Available routes are:" in text, log
    if scenario_dir.name == "restart-mid-batch":
        check_pair(scenario_dir / "first" / "metrics.body")


def test_scenario_json_matches_directory(scenario_dir: Path) -> None:
    doc = json.loads((scenario_dir / "scenario.json").read_text("utf-8"))
    assert doc["scenario"] == scenario_dir.name
    assert doc["vllm_version"] == "0.32.0"
    tp = doc["tensor_parallel_size"]
    assert ("--tensor-parallel-size 2" in doc["command"]) == (tp == 2)
    assert ("VLLM_SERVER_DEV_MODE=1" in doc["command"]) == doc["dev_mode"]
    assert ("--api-key <random secret>" in doc["command"]) == doc["api_key"]


def test_readme_describes_every_scenario(live_root: Path) -> None:
    readme = (live_root / "README.md").read_text("utf-8")
    for d in sorted(p for p in live_root.iterdir() if p.is_dir()):
        assert f"### `{d.name}/`" in readme
