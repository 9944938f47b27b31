"""Every JSON document is built by the converter's hooks (issue 13, item 1).

A dict literal with string keys inside a function is how a JSON document used to be
written by hand.  In the package it may appear only inside a hook registered on the
converter (``register_rendering(cls, hook)``, or the assessment's
``_register(union, hook)``), or inside a function only such a hook reaches in the same
module.  The few dict literals that are not JSON documents are listed in
:data:`NOT_DOCUMENTS`, each with what it is.  ``testing/`` is out of scope: it builds
the *server's* bodies (what vLLM sends), not this package's documents.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TypeGuard

PACKAGE = Path(__file__).resolve().parents[2] / "vllm_evidence"

#: ``(module path, function)``: dict literals with string keys that are not documents.
NOT_DOCUMENTS: dict[tuple[str, str], str] = {
    ("_cli/audit.py", "run"): "the route tables given per launch mode",
    ("_adapters/startup_log/_lexer.py", "parse_bool_text"): "a lookup of Python's bool text",
    ("_capture/canary.py", "canary_body"): "the completion request the canary sends to vLLM",
    (
        "_rederive/_read.py",
        "_recorded_verdicts",
    ): "a read document's verdicts, checked, not written",
}


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _hooks(tree: ast.Module) -> set[str]:
    """Names of functions passed to a ``register…`` call in the module."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if "register" in name:
            found |= {arg.id for arg in node.args if isinstance(arg, ast.Name)}
    return found


def _reached(tree: ast.Module) -> set[str]:
    """The hooks and every module function they call, transitively."""
    functions = _functions(tree)
    reached = set(_hooks(tree))
    todo = list(reached)
    while todo:
        function = functions.get(todo.pop())
        if function is None:
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in functions
                and node.func.id not in reached
            ):
                reached.add(node.func.id)
                todo.append(node.func.id)
    return reached


def _string_keyed(node: ast.AST) -> TypeGuard[ast.Dict]:
    return (
        isinstance(node, ast.Dict)
        and bool(node.keys)
        and all(
            isinstance(key, ast.Constant) and isinstance(key.value, str)
            for key in node.keys
            if key is not None
        )
    )


def dicts_outside_hooks(root: Path) -> list[str]:
    """``module:function:line`` of every string-keyed dict literal outside the hooks."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("testing/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reached = _reached(tree)
        for name, function in _functions(tree).items():
            if name in reached or (relative, name) in NOT_DOCUMENTS:
                continue
            found.extend(
                f"{relative}:{name}:{node.lineno}"
                for node in ast.walk(function)
                if _string_keyed(node)
            )
    return found


def test_no_json_document_is_built_outside_the_converters_hooks() -> None:
    assert dicts_outside_hooks(PACKAGE) == []


def test_the_exceptions_still_exist() -> None:
    """An exception whose function is gone is a hole waiting for a hand-built document."""
    for module, name in NOT_DOCUMENTS:
        tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
        assert name in _functions(tree), f"{module}:{name} is gone: drop it from NOT_DOCUMENTS"


def test_a_hand_built_document_is_found(tmp_path: Path) -> None:
    """The check is not vacuous: a function that writes a document by hand is found."""
    import shutil

    copy = tmp_path / "vllm_evidence"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    target = copy / "_output" / "laws.py"
    target.write_text(
        target.read_text(encoding="utf-8")
        + '\n\ndef by_hand(law: Law) -> dict[str, object]:\n    return {"question": 1}\n',
        encoding="utf-8",
    )
    assert dicts_outside_hooks(copy) == ["_output/laws.py:by_hand:" + str(_last_line(target))]


def _last_line(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())
