"""The launch witness against a real vLLM 0.32.0 (issue 14, live tier).

``scripts/live-vllm check`` starts the ``tp2-devmode`` scenario through ``vllm-evidence
launch`` and, while it serves, runs the product's own ``vllm-evidence probe --json``
with its log and receipt, and with the ``tp2-apikey`` scenario's log (with that receipt,
and with none).  These tests read those documents: in the live tier the fresh ones, in
the ordinary suite the ones committed from such a run under
``tests/fixtures/real/launch-witness-0.32.0/`` (one launch: its capture, log, receipt and
the product's documents, neutralised), which the last test also re-derives from bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests._evidence import assess_witnessed
from vllm_evidence._adapters.receipt import RECEIPT_SCHEMAS
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import claim_established
from vllm_evidence.serialize import schema

SERVING_CLAIMS = (
    "parallel",
    "capacity",
    "served_identity",
    "health_coverage",
    "front_door_join",
    "log_join",
)


#: A ``scripts/live-vllm record tp2-apikey tp2-devmode`` run, committed: the launched
#: scenario's capture, log, receipt and witnessed-probe documents.
COMMITTED_WITNESS = Path(__file__).parents[1] / "fixtures" / "real" / "launch-witness-0.32.0"


@pytest.fixture(scope="module")
def witness_dir(live_root: Path, is_fresh: bool) -> Path:
    """The launched ``tp2-devmode`` scenario: this run's, or the committed recording."""
    return (live_root if is_fresh else COMMITTED_WITNESS) / "tp2-devmode"


def _document(witness_dir: Path, name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((witness_dir / f"{name}.json").read_text("utf-8"))
    return document


def test_the_launched_server_establishes_every_serving_claim(witness_dir: Path) -> None:
    decisions = _document(witness_dir, "witnessed-probe")["decisions"]
    for claim in SERVING_CLAIMS:
        decision = decisions[claim]
        assert (decision["subject"], decision["verdict"]) == ("serving", "established"), (
            claim,
            decision["reason"],
            decision["detail"],
        )
    log_join = decisions["log_join"]
    receipt = log_join["receipt"]
    assert log_join["process_start_time_seconds"] is not None
    assert receipt["pid"] == log_join["pid"]
    assert log_join["pid_tagged"] is True
    assert decisions["parallel"]["tensor_parallel_size"] == 2
    assert decisions["parallel"]["present_ranks"] == [0, 1]


@pytest.mark.parametrize(
    "name", ["witnessed-probe-other-log", "witnessed-probe-other-log-no-receipt"]
)
def test_the_other_scenarios_log_is_refused(witness_dir: Path, name: str) -> None:
    decisions = _document(witness_dir, name)["decisions"]
    assert decisions["log_join"]["verdict"] == "refused"
    assert decisions["parallel"]["verdict"] == "refused"
    assert decisions["parallel"]["reason"] == "log_not_joined"
    assert decisions["health_coverage"]["subject"] == "serving"


def test_the_receipt_names_the_launch_and_no_secret(witness_dir: Path, is_fresh: bool) -> None:
    path = witness_dir / "launch-receipt.json"
    receipt = json.loads(path.read_text(encoding="utf-8"))
    if is_fresh:
        # The receipt a real launch writes now is valid against the published schema
        # (the version is the schema file's own const), and signed by the run's key.
        published = schema("launch-receipt")
        jsonschema.validate(receipt, published)
        assert receipt["schema"] == published["properties"]["schema"]["const"]
        assert receipt["signature"]["algorithm"] == "ed25519"
    else:  # the committed recording: written by a launcher of before, still read
        assert receipt["schema"] in RECEIPT_SCHEMAS
    assert receipt["process_start_time_seconds"] is not None
    assert "--tensor-parallel-size" in receipt["argv"]


def test_a_replay_of_the_capture_joins_its_own_log(live_root: Path) -> None:
    """Committed or fresh: the capture's own log, with a receipt naming the start time
    its /metrics serves, is joined to its replay; every serving claim is established."""
    directory = live_root / "tp2-devmode"
    log = read_startup_log(directory / "startup.log")
    assert isinstance(log, StartupLog), log
    assessment = assess_witnessed(directory, log)
    for claim in SERVING_CLAIMS:
        assert claim_established(assessment, claim), (claim, getattr(assessment, claim))  # type: ignore[arg-type]  # members of Claim


def test_a_replay_of_the_launched_capture_joins_its_own_log(witness_dir: Path) -> None:
    """The launched scenario's own bytes, replayed: the log it wrote is joined to its
    front door through a receipt naming the start time its /metrics serves."""
    log = read_startup_log(witness_dir / "startup.log")
    assert isinstance(log, StartupLog), log
    assessment = assess_witnessed(witness_dir, log)
    for claim in SERVING_CLAIMS:
        assert claim_established(assessment, claim), (claim, getattr(assessment, claim))  # type: ignore[arg-type]  # members of Claim
    recorded = _document(witness_dir, "witnessed-probe")["decisions"]
    assert assessment.parallel.reason.value == recorded["parallel"]["reason"]
