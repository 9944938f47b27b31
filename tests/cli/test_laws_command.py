"""``vllm-evidence laws`` as a subprocess: answers by release, the whole table, bad input."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests._cli import run_cli
from vllm_evidence.upstream import (
    LAW_TABLE,
)

# --- the CLI ----------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("laws", *args, env={"PATH": ""})


def test_cli_answers_differ_by_release() -> None:
    docs = {}
    for v in ("0.32.0", "0.7.3", "99.0"):
        out = _cli("--version", v, "--json")
        assert out.returncode == 0, out.stderr
        docs[v] = json.loads(out.stdout)
    assert docs["0.32.0"]["schema"] == "vllm-evidence.laws/3"
    assert docs["0.32.0"]["established"] is True
    assert docs["99.0"]["established"] is False
    assert docs["99.0"]["answers"] == []
    held_32 = sum(a["established"] for a in docs["0.32.0"]["answers"])
    held_73 = sum(a["established"] for a in docs["0.7.3"]["answers"])
    assert held_32 > held_73 > 0
    by_key = {a["question"]: a for a in docs["0.32.0"]["answers"]}
    assert by_key["route./server_info"]["gate"] == "development_mode"
    assert by_key["route./server_info"]["span"] == {"first": "0.8.5", "last": "0.33.0"}


def test_cli_text_for_a_release() -> None:
    out = _cli("--version", "0.7.3")
    assert out.returncode == 0
    # The answer column wraps under itself at word boundaries (100 columns when piped).
    assert "not established for 0.7.3" in " ".join(out.stdout.split())
    assert "route./version" in out.stdout
    assert all(len(line) <= 100 or len(line.split()) <= 3 for line in out.stdout.splitlines())


def test_cli_whole_table_json() -> None:
    out = _cli("--json")
    doc = json.loads(out.stdout)
    assert len(LAW_TABLE) == len(doc["questions"])
    assert doc["read_releases"][0]["version"] == "0.6.6.post1"


@pytest.mark.parametrize("bad", [["--version", "banana"], ["--bogus"], ["--version"]])
def test_cli_bad_input_is_one_line_exit_2(bad: list[str]) -> None:
    out = _cli(*bad)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
