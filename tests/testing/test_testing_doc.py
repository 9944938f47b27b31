"""docs/testing.md runs: its Python code blocks, in order, are one test module, run with
pytest (the ``vllm_front_door`` fixture included) under a smaller example budget."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)

#: The examples the document promises (its four sections, and the fixture's).
PROMISED = {
    "test_admits_a_server_with_every_rank",
    "test_holds_a_server_with_a_missing_rank",
    "test_never_admits_without_the_receipt",
    "test_never_admits_a_mixed_build",
    "test_holds_a_server_that_restarted",
    "test_holds_a_replayed_server_that_restarts",
    "test_three_claims_never_admit_a_mixed_build",
    "test_three_claims_admit_a_default_server",
    "test_the_mixed_builds_catch_a_log_only_policy",
    "test_admits_the_recorded_tp2_server",
    "test_holds_when_every_route_answers_503",
    "test_a_metrics_sequence_replays_bodies_in_order",
}


def _module() -> str:
    return "\n\n".join(BLOCK.findall(DOC.read_text(encoding="utf-8")))


def test_the_document_holds_every_promised_example() -> None:
    tree = ast.parse(_module())
    tests = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    assert tests == PROMISED


def test_every_example_in_the_document_passes(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from hypothesis import settings\n"
        "settings.register_profile('doc', max_examples=15, deadline=None)\n"
        "settings.load_profile('doc')\n"
    )
    pytester.makepyfile(test_doc_examples=_module())
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "ignore", "-q")
    result.assert_outcomes(passed=len(PROMISED))


def test_a_broken_example_would_fail_the_run(pytester: pytest.Pytester) -> None:
    """The runner reports a failing block (it does not pass whatever it is given)."""
    broken = _module().replace(
        "assert not admits(server.assess())", "assert admits(server.assess())", 1
    )
    assert broken != _module()
    pytester.makepyfile(test_doc_examples=broken)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "ignore", "-q")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1
