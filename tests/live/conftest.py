"""Fixtures of the live tier: where the captures under test are.

``scripts/live-vllm check`` records every scenario from a real vLLM into a temporary
directory and runs this directory's tests with ``VLLM_EVIDENCE_LIVE_CAPTURES`` naming it.
In the ordinary suite the variable is unset and the committed captures are used, so the
same assertions also hold, with no vLLM, on the bytes in the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

COMMITTED = Path(__file__).parent.parent / "fixtures" / "real" / "vllm-0.32.0-cpu"
SCENARIOS = ("tp1-devmode-alias", "tp2-apikey", "tp2-devmode", "restart-mid-batch")


@pytest.fixture(scope="session")
def live_root() -> Path:
    """The directory holding one sub-directory per scenario."""
    root = Path(os.environ.get("VLLM_EVIDENCE_LIVE_CAPTURES") or COMMITTED)
    assert root.is_dir(), f"no live captures at {root}"
    return root


@pytest.fixture(scope="session")
def is_fresh() -> bool:
    """True when the captures were recorded by this very ``check`` run."""
    return bool(os.environ.get("VLLM_EVIDENCE_LIVE_CAPTURES"))


@pytest.fixture(params=SCENARIOS)
def scenario_dir(request: pytest.FixtureRequest, live_root: Path) -> Path:
    """Each scenario's directory in turn."""
    name: str = request.param
    return live_root / name
