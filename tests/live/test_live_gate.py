"""The gate against a real vLLM 0.32.0: ahead of ``/health`` on a real worker kill.

``tp2-gate-worker-kill`` runs TP=2 under ``vllm-evidence launch --serve … --require
parallel capacity health_coverage --interval 1s``.  Once the gate's ``/ready`` answered
200, the rank-1 worker was killed with ``kill -9``, and the gate's ``/ready`` and vLLM's
own ``/health`` were read every 0.2 s (``gate-after.txt``: ``+seconds ready=S health=S``).
vLLM's ``/health`` stays 200 for seconds after a worker dies at TP=2 (its executor waits
for the survivors before it fails the engine); the gate reads its own process tree each
round, so ``/ready`` turns 503 first, naming the rank lost.  In the live tier these
tests read the fresh recording; in the ordinary suite the committed one.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

SCENARIO = "tp2-gate-worker-kill"
#: The gate's interval in that scenario, and what one round may take besides.
INTERVAL_S = Decimal(1)
ROUND_SLACK_S = Decimal(2)


@pytest.fixture(scope="module")
def gate_dir(live_root: Path) -> Path:
    directory = live_root / SCENARIO
    assert directory.is_dir(), f"no {SCENARIO} recording under {live_root}"
    return directory


def _lines(gate_dir: Path) -> list[str]:
    return (gate_dir / "gate-after.txt").read_text(encoding="utf-8").splitlines()


def _json(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def first_not_200(lines: list[str], name: str) -> str | None:
    """The ``+seconds`` of the first line whose ``name=`` status is not 200."""
    for line in lines:
        stamp, _, *fields = line.split()
        if dict(f.split("=", 1) for f in fields).get(name) != "200":
            return stamp
    return None


def _seconds(stamp: str | None) -> Decimal | None:
    return None if stamp is None else Decimal(stamp.removeprefix("+"))


def test_the_gate_was_ready_before_the_kill(gate_dir: Path) -> None:
    before = _json(gate_dir / "ready-before.json")
    assert before["ready"] is True
    assert before["required"] == ["parallel", "capacity", "health_coverage"]
    (target,) = before["targets"]
    assert target["refusals"] == []
    assert target["lost_processes"] == []


def test_ready_turns_503_within_a_round_and_ahead_of_health(gate_dir: Path) -> None:
    lines = _lines(gate_dir)
    ready_at = _seconds(first_not_200(lines, "ready"))
    health_at = _seconds(first_not_200(lines, "health"))
    assert ready_at is not None, lines
    assert ready_at <= INTERVAL_S + ROUND_SLACK_S, lines
    # vLLM's /health said nothing yet when /ready refused: 200 at that read, or never
    # anything but 200 while the gate refused.
    assert health_at is None or ready_at < health_at, lines
    first = next(line for line in lines if "ready=200" not in line)
    assert first.endswith("health=200"), lines


def test_the_503_names_the_rank_lost(gate_dir: Path) -> None:
    after = _json(gate_dir / "ready-after.json")
    assert after["ready"] is False
    (target,) = after["targets"]
    refused = {r["claim"]: r for r in target["refusals"]}
    assert "parallel" in refused
    assert refused["parallel"]["reason"] == "rank_lost"
    assert "rank 1" in refused["parallel"]["detail"]
    assert any("rank 1" in lost for lost in target["lost_processes"])


def test_the_reading_of_the_series_can_fail() -> None:
    """The reading this file rests on finds a refusal, and finds none where there is none."""
    ok, late = "+0.10 s ready=200 health=200", "+0.30 s ready=503 health=200"
    assert first_not_200([ok, "+0.30 s ready=200 health=200"], "ready") is None
    assert first_not_200([ok, late], "ready") == "+0.30"
    assert first_not_200([ok, late], "health") is None
    assert first_not_200(["+0.10 s ready=503 health=refused(OSError)"], "health") == "+0.10"
