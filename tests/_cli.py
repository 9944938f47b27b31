"""Run ``python -m vllm_evidence`` as a user would: a subprocess, no colour, text out."""

from __future__ import annotations

import os
import subprocess
import sys


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The command's exit status, stdout and stderr (``env`` added to this process's)."""
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=timeout,
    )
