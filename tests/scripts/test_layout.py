"""The live tier's package: standard library only, modules importing one way (each only
from those listed above it in the package docstring), every module in that list."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scripts" / "live_vllm"

#: The order the package docstring gives, lowest first (written out here by hand).
ORDER = (
    "common",
    "releases",
    "shim",
    "environments",
    "models",
    "scenarios",
    "runs",
    "reads",
    "server",
    "documents",
    "product",
    "lifecycle",
    "recording",
    "check",
    "cli",
)


def imports_of(source: str) -> set[str]:
    """Every module a source imports, by its absolute dotted name (``from live_vllm import
    x`` imports ``live_vllm.x``; a relative import is named ``.name``, and never allowed)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "live_vllm" and not node.level:
            found.update(f"live_vllm.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


def violations(module: str, source: str) -> list[str]:
    """What is wrong with the imports of ``module`` (a name in :data:`ORDER`)."""
    bad: list[str] = []
    rank = ORDER.index(module) if module in ORDER else len(ORDER)
    for target in sorted(imports_of(source)):
        top = target.split(".")[0]
        if target.startswith("."):
            bad.append(f"{target}: a relative import")
        elif top == "live_vllm":
            inner = target.removeprefix("live_vllm.").split(".")[0]
            if inner not in ORDER or ORDER.index(inner) >= rank:
                bad.append(f"{target}: not below {module}")
        elif top != "__future__" and top not in sys.stdlib_module_names:
            bad.append(f"{target}: not in the standard library")
    return bad


def modules() -> list[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("__"))


def test_the_docstring_names_every_module_in_this_order() -> None:
    doc = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    named = re.findall(r":mod:`~live_vllm\.(\w+)`", doc)
    assert named == list(ORDER)
    assert sorted(named) == modules()


@pytest.mark.parametrize("module", modules())
def test_imports_go_one_way_and_stay_in_the_standard_library(module: str) -> None:
    assert violations(module, (PACKAGE / f"{module}.py").read_text(encoding="utf-8")) == []


def test_the_entry_points_import_only_the_command_line() -> None:
    for name in ("__init__", "__main__"):
        targets = imports_of((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        assert targets - {"__future__", "sys"} <= {"live_vllm.cli"}


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("from live_vllm.cli import main", "live_vllm.cli: not below runs"),
        ("import live_vllm.runs", "live_vllm.runs: not below runs"),
        ("from vllm_evidence import probe", "vllm_evidence: not in the standard library"),
        ("import httpx", "httpx: not in the standard library"),
        ("from . import common", ".: a relative import"),
    ],
)
def test_the_rule_finds_each_kind_of_bad_import(source: str, why: str) -> None:
    assert violations("runs", source) == [why]


def test_the_rule_passes_lower_modules_and_the_standard_library() -> None:
    source = "import json\nfrom live_vllm.common import REPO\nfrom live_vllm import releases\n"
    assert violations("runs", source) == []
    assert violations("common", "import os\nimport http.client\n") == []
