"""Assessments of a real recorded vLLM 0.32.0 TP=2 server, joined to its log as the
launcher joins them (a receipt whose start time is the one its front door serves), before
and after its worker's death; and a gate over the recorded server's URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._evidence import assess_witnessed
from tests.gate._proc import SCENARIO, recorded_launch
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment


def _log(path: Path) -> StartupLog:
    read = read_startup_log(path)
    assert isinstance(read, StartupLog), read
    return read


@pytest.fixture(scope="session")
def alive(tmp_path_factory: pytest.TempPathFactory) -> Assessment:
    """The server with both ranks, joined: parallel, capacity, health coverage hold."""
    tmp = tmp_path_factory.mktemp("alive")
    recorded_launch(tmp=tmp)  # writes before-death.log
    assessment = assess_witnessed(SCENARIO, _log(tmp / "before-death.log"))
    assert assessment.log_join.reason.value == "established", assessment.log_join
    return assessment


@pytest.fixture(scope="session")
def dead_rank() -> Assessment:
    """The same server, its whole log: rank 1's death at line 166 (and the engine's)."""
    assessment = assess_witnessed(SCENARIO, _log(SCENARIO / "startup.log"))
    assert assessment.log_join.reason.value == "established", assessment.log_join
    return assessment
