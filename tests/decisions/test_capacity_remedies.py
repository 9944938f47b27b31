"""Every capacity refusal gathered from a problem has its remedy, and no remedy waits for
a problem that is never gathered (issue 29: ``front_door_restarted`` had one, although
the serving gate refuses a restarted front door before the capacity decision runs).

Read from the source of ``decisions/_capacity.py``'s ``_decide``: the reasons its
``problems.append`` calls name, and the keys of its ``remedies`` table.
"""

from __future__ import annotations

import ast
import inspect

from tests._evidence import probe_stub
from tests.decisions._wording import RESTARTED_REMEDY
from vllm_evidence import assess
from vllm_evidence.decisions import CapacityReason, CapacityRefused
from vllm_evidence.decisions import _capacity as capacity


def _reason(node: ast.expr) -> str | None:
    """``CapacityReason.X`` → ``"X"``."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "CapacityReason"
    ):
        return node.attr
    return None


def _decide() -> ast.FunctionDef:
    tree = ast.parse(inspect.getsource(capacity))
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_decide"]
    assert len(found) == 1
    return found[0]


def _gathered() -> set[str]:
    reasons = set()
    for node in ast.walk(_decide()):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "problems"
        ):
            (pair,) = node.args
            assert isinstance(pair, ast.Tuple)
            reason = _reason(pair.elts[0])
            assert reason is not None, ast.unparse(pair)
            reasons.add(reason)
    return reasons


def _remedied() -> set[str]:
    for node in ast.walk(_decide()):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "remedies"
            and isinstance(node.value, ast.Dict)
        ):
            keys = {_reason(k) for k in node.value.keys if k is not None}
            assert None not in keys
            return {k for k in keys if k is not None}
    msg = "no remedies table in capacity._decide"
    raise AssertionError(msg)


def test_the_problems_gathered_and_the_remedies_are_the_same_reasons() -> None:
    gathered = _gathered()
    assert gathered == {
        "METRICS_UNPARSED",
        "SOURCES_CONFLICT",
        "VERSION_UNOBSERVED",
        "VERSION_NOT_ESTABLISHED",
        "LAW_NOT_ESTABLISHED",
        "BLOCK_SIZE_UNOBSERVED",
        "INSUFFICIENT_AUTHORITY",
    }
    assert _remedied() == gathered


def test_a_restarted_front_door_is_refused_by_the_gate_with_its_own_remedy() -> None:
    """Why the table needs no ``front_door_restarted``: the gate answers first."""
    decision = assess(probe_stub(restart_after_metrics_reads=1)).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.FRONT_DOOR_RESTARTED
    assert decision.remedy == RESTARTED_REMEDY
