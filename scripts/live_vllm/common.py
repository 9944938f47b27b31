"""What every part of the live tier shares: the repository's paths, the two errors (and the
exit status of a skip), the neutral names written into fixtures, the time limits, the
offline environment and the log line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

__all__ = [
    "API_KEY_PREFIX",
    "BASE_PYTHON_NEUTRAL",
    "BUILD_TIMEOUT_S",
    "HOME_NEUTRAL",
    "HOST",
    "HOST_NEUTRAL",
    "MODEL_NEUTRAL",
    "PIP_TIMEOUT_S",
    "PYTEST_TIMEOUT_S",
    "READY_TIMEOUT_S",
    "REAL",
    "RELEASE_READY_TIMEOUT_S",
    "REPO",
    "REQUEST_TIMEOUT_S",
    "SKIP_EXIT",
    "STOP_TIMEOUT_S",
    "STOP_TIMEOUT_STARTING_S",
    "TMP_NEUTRAL",
    "USER_NEUTRAL",
    "VENV_NEUTRAL",
    "LiveTierError",
    "LiveTierSkippedError",
    "log",
    "offline_env",
    "tail_text",
]

#: The repository this package lives in (``scripts/live_vllm/`` is two levels down).
REPO = Path(__file__).resolve().parents[2]
#: Where the real captures of every release are committed.
REAL = REPO / "tests" / "fixtures" / "real"

HOST = "127.0.0.1"
MODEL_NEUTRAL = "/models/tiny-llama"
VENV_NEUTRAL = "/opt/venv"
HOME_NEUTRAL = "/home/vllm"
TMP_NEUTRAL = "/var/tmp"  # noqa: S108 - a neutral name written into fixtures, never used
BASE_PYTHON_NEUTRAL = "/usr/local"
USER_NEUTRAL = "vllm"
#: The host name the receipts and probe documents of the recorded fixtures name.
HOST_NEUTRAL = "recorder"
API_KEY_PREFIX = "live-tier-key-"

READY_TIMEOUT_S = float(os.environ.get("VLLM_EVIDENCE_LIVE_READY_TIMEOUT", "240"))
# Older releases start slower (and share two cores with other work): wait generously.
RELEASE_READY_TIMEOUT_S = max(READY_TIMEOUT_S, 900.0)
STOP_TIMEOUT_S = 60.0  # a ready server shuts down in ~2 s
STOP_TIMEOUT_STARTING_S = 15.0  # while starting, vLLM 0.32.0 does not act on SIGTERM
REQUEST_TIMEOUT_S = 30.0
PIP_TIMEOUT_S = 3600.0
BUILD_TIMEOUT_S = 600.0
PYTEST_TIMEOUT_S = 1800.0

#: The exit status of a skipped live tier (unless ``VLLM_EVIDENCE_LIVE=optional``: 0).
SKIP_EXIT = 3


class LiveTierSkippedError(Exception):
    """The live tier cannot run here (no environment and no way to make one)."""


class LiveTierError(Exception):
    """A live-tier step failed."""


def offline_env(base: dict[str, str]) -> dict[str, str]:
    """``base`` plus the variables that keep vLLM and transformers off any model hub and
    any usage report."""
    env = dict(base)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
    )
    return env


def log(msg: str) -> None:
    """One progress line on stderr, with the time of day."""
    print(f"[live-vllm {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def tail_text(text: str, n: int = 40) -> str:
    """The last ``n`` lines of ``text``."""
    return "\n".join(text.splitlines()[-n:])
