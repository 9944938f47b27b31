"""The seal's rules, read from the source: who may mint a sealed class, and how it is named.

* Only the module that defines a sealed class calls :func:`~vllm_evidence._seal.minter`
  for it, and the minter is bound to a private name (``_mint_…``).
* No public function mints: a public name that builds a sealed value from arbitrary
  fields would be a side door around the parsers and decisions.
* Every sealed class's ``__public_constructor__`` names public objects that exist:
  the error message a user reads points somewhere real.
"""

from __future__ import annotations

import ast
import gc
import importlib
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import vllm_evidence
from vllm_evidence._seal import Sealed

PACKAGE = Path(vllm_evidence.__file__).parent


def minting_violations(source: str, where: str) -> list[str]:
    """Every breach of the minting rules in one module's source."""
    tree = ast.parse(source)
    defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    bad: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "mint"
        ):
            bad.append(f"{where}:{node.lineno}: public minting function {node.name}")
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        value = node.value
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "minter"
        ):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        bad.extend(
            f"{where}:{node.lineno}: a minter bound to a public name"
            for target in targets
            if not (isinstance(target, ast.Name) and target.id.startswith("_"))
        )
        first = value.args[0] if value.args else None
        if not (isinstance(first, ast.Name) and first.id in defined):
            name = ast.unparse(first) if first is not None else "?"
            bad.append(f"{where}:{node.lineno}: minter for {name}, defined in another module")
    return bad


def test_only_the_defining_module_mints() -> None:
    bad: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_seal.py":
            continue
        rel = path.relative_to(PACKAGE.parent).as_posix()
        bad += minting_violations(path.read_text(encoding="utf-8"), rel)
    assert bad == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from x import Foreign\n_mint = minter(Foreign, Foreign.__attrs_init__)\n", "another"),
        ("class A: ...\nmint_a = minter(A, A.__attrs_init__)\n", "public name"),
        ("def mint_batch(**kw): ...\n", "public minting function"),
    ],
)
def test_each_rule_catches_its_breach(source: str, expected: str) -> None:
    found = minting_violations(source, "m.py")
    assert len(found) == 1
    assert expected in found[0]


def test_the_defining_module_may_mint_privately() -> None:
    source = "class A: ...\n_mint_a = minter(A, A.__attrs_init__)\n"
    assert minting_violations(source, "m.py") == []


def _sealed_classes() -> list[type[Sealed]]:
    for info in pkgutil.walk_packages(vllm_evidence.__path__, "vllm_evidence."):
        if info.name.endswith((".__main__", ".installed")):
            continue  # runs the CLI / imports vLLM itself
        importlib.import_module(info.name)
    # attrs replaces a slotted class by a new one; until the old one is collected it is
    # still a subclass, so collect first and keep only the class its module names.
    gc.collect()
    return sorted(
        (c for c in Sealed.__subclasses__() if _named_by_its_module(c)),
        key=lambda c: f"{c.__module__}.{c.__qualname__}",
    )


def _named_by_its_module(cls: type) -> bool:
    obj: object = sys.modules[cls.__module__]
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is cls


_NAME = re.compile(r"\bvllm_evidence(?:\.\w+)+(?:\(\))?")
#: A maker that is a command, not a function: the gate's (``launch --serve``, ``watch --listen``).
_COMMAND = re.compile(r"\bvllm-evidence (launch|watch) --")


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise AssertionError(dotted)


@pytest.mark.parametrize("cls", _sealed_classes(), ids=lambda c: c.__qualname__)
def test_public_constructor_names_real_public_objects(cls: type[Sealed]) -> None:
    text = cls.__public_constructor__
    names = _NAME.findall(text)
    if not names:  # made only by a command (the gate): it names the command
        assert _COMMAND.search(text), text
        return
    for name in names:
        dotted = name.removesuffix("()")
        assert not any(part.startswith("_") for part in dotted.split(".")), name
        obj = _resolve(dotted)
        if name.endswith("()"):
            assert callable(obj), name


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("vllm_evidence.assess()", "function"),
        ("the gate (vllm-evidence launch --serve, vllm-evidence watch --listen)", "command"),
        ("the gate", None),
        ("vllm_evidence._capture.canary.send_canary()", "function"),  # private: refused above
    ],
)
def test_a_public_constructor_names_a_function_or_a_command(text: str, named: str | None) -> None:
    """The rule both ways: a maker is a dotted name or one of the gate's commands; words
    that name neither are no way to make one."""
    found = "function" if _NAME.search(text) else "command" if _COMMAND.search(text) else None
    assert found == named
