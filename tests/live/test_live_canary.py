"""The gate's generation canary against a real vLLM 0.32.0, both ways.

``tp1-gate-canary`` runs TP=1 under ``vllm-evidence launch --serve … --canary --require
capacity health_coverage generation --interval 1s``.  Each round the gate sends one
marked ``POST /v1/completions`` (``max_tokens`` 1) to the first base model the front door
serves.  Once ``/ready`` answered 200 — a token came back from the real engine that round
— its body and ``/metrics`` were kept; then the EngineCore was killed with ``kill -9``, and
the first ``/ready`` that is not 200 was kept: ``generation`` refused by a ``canary_*``
reason, with no token.  In the live tier these tests read the fresh recording; in the
ordinary suite the committed one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SCENARIO = "tp1-gate-canary"
MODEL = "/models/tiny-llama-hd32"
#: The gate's interval there, and what one round may take besides.
INTERVAL_S = 1.0
ROUND_SLACK_S = 2.0


@pytest.fixture(scope="module")
def canary_dir(live_root: Path) -> Path:
    directory = live_root / SCENARIO
    assert directory.is_dir(), f"no {SCENARIO} recording under {live_root}"
    return directory


def _json(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def test_the_gate_was_ready_with_a_token_from_the_real_engine(canary_dir: Path) -> None:
    before = _json(canary_dir / "ready-before.json")
    assert before["ready"] is True
    assert before["canary"] is True
    assert before["required"] == ["capacity", "health_coverage", "generation"]
    (target,) = before["targets"]
    assert target["refusals"] == []
    canary = target["canary"]
    assert canary["generated"] is True, canary
    assert canary["reason"] == "generated"
    assert canary["status"] == 200
    assert canary["model"] == MODEL
    assert 0 < canary["elapsed_s"] < INTERVAL_S + ROUND_SLACK_S


def test_the_metrics_say_generation_is_established_by_the_canary(canary_dir: Path) -> None:
    lines = (canary_dir / "gate-metrics-before.txt").read_text(encoding="utf-8").splitlines()
    established = [line for line in lines if line.startswith("vllm_evidence_claim_established{")]
    generation = [line for line in established if 'claim="generation"' in line]
    assert len(generation) == 1, established
    assert generation[0].endswith(" 1.0"), generation
    info = [
        line
        for line in lines
        if line.startswith("vllm_evidence_claim_info{") and 'claim="generation"' in line
    ]
    assert len(info) == 1, info
    assert 'by="canary"' in info[0]
    assert 'verdict="established"' in info[0]


def test_after_the_engine_died_generation_is_refused_without_a_token(canary_dir: Path) -> None:
    after = _json(canary_dir / "ready-after.json")
    assert after["ready"] is False
    (target,) = after["targets"]
    refused = {r["claim"]: r for r in target["refusals"]}
    assert refused, target
    canary = target["canary"]
    if "generation" in refused:
        assert refused["generation"]["reason"].startswith("canary_"), refused
        assert refused["generation"]["by"] == "canary"
        assert canary is not None
        assert canary["generated"] is False
        assert canary["reason"] == refused["generation"]["reason"]
    else:
        # The tree saw the engine core gone before the round's completion was sent:
        # the round's other claims refused first; its canary named no token either.
        assert canary is None or canary["generated"] is False, target
        assert target["lost_processes"], target


def test_the_gate_refused_within_a_round_or_two_of_the_kill(canary_dir: Path) -> None:
    lines = (canary_dir / "gate-after.txt").read_text(encoding="utf-8").splitlines()
    first = next((line for line in lines if "ready=200" not in line), None)
    assert first is not None, lines
    assert float(first.split()[0].removeprefix("+")) <= 2 * INTERVAL_S + ROUND_SLACK_S, lines
