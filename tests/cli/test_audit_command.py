"""``vllm-evidence audit-upstream`` as a subprocess, without vLLM: one line and exit 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests._cli import run_cli
from tests._paths import REAL

DEV_LOG = REAL / "startup.log"


# --- the CLI without vLLM ---------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("audit-upstream", *args)


def test_cli_without_vllm_is_one_line_exit_2() -> None:
    out = _cli()
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "vllm is not importable here:" in lines[0]


def test_cli_bad_log_is_one_line_exit_2(tmp_path: Path) -> None:
    out = _cli("--plain-log", str(DEV_LOG))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "--plain-log" in out.stderr
    out = _cli("--dev-log", str(tmp_path / "missing.log"))
    assert out.returncode == 2
    assert "no such file" in out.stderr
