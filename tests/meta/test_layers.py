"""The architecture test: layers import one way (DESIGN principle 13).

The allowed direction is written down once, in :data:`LAYERS`: a module may import
from its own layer or from a lower one, never from a higher one.  Every ``import``
and ``from … import`` in the package is read from the source (including imports
inside functions and under ``TYPE_CHECKING``), so a lazy upward import is caught too.

Two rules narrow what may be imported from the decisions, even from above them:

* their private modules and names (``decisions._common``, ``decisions._life``, …) are
  theirs alone: what another layer needs of them belongs below (``readback/``);
* a renderer (``output/``, ``_cli/``) reads the decisions' *types* (to render an arm)
  and never calls a decision function (a ``decide_*``, or any function a decisions
  module defines): what it shows is what the assessment decided, or what the readback
  resolved, never a decision re-run at render time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "vllm_evidence"

#: Lowest first.  A module belongs to the first prefix that matches its dotted name.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "ground",
        (
            "_seal",
            "_bounds",
            "_lazy",
            "_scrub",
            "_measure",
            "errors",
            "_claims",
            "_converter",
            "upstream",
        ),
    ),
    ("capture", ("_capture",)),
    ("adapters", ("_adapters",)),
    ("readback", ("_readback",)),
    ("decisions", ("decisions", "_audit")),
    ("assessment", ("_assessment",)),
    ("output", ("_output", "_rederive", "serialize", "_launch")),
    ("watch", ("watch", "_gate")),
    ("commands", ("_cli", "testing")),
    ("entry points", ("cli", "__main__")),
)

#: Imported only for its lazy, typed re-exports; it sits above everything.
TOP = "vllm_evidence"

#: The decisions' package, whose private modules and names no other layer imports.
DECISIONS = f"{TOP}.decisions"

#: The renderers: they may read decision types, never call a decision function.
RENDERERS = ("_output", "_cli")


def layer_of(module: str) -> int:
    """The rank of a ``vllm_evidence.*`` module (its dotted name under the package)."""
    if module == TOP:
        return len(LAYERS)
    relative = module.removeprefix(TOP + ".")
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if relative == prefix or relative.startswith(prefix + "."):
                return rank
    msg = f"{module} is in no layer: add it to LAYERS"
    raise AssertionError(msg)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(line, imported module)`` for every package-internal import in a file."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target == TOP and not node.level:
                # ``from vllm_evidence import x``: x is a submodule or a lazy re-export
                found.extend((node.lineno, f"{TOP}.{alias.name}") for alias in node.names)
                continue
            found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, t) for line, t in found if t == TOP or t.startswith(TOP + ".")]


def _resolve(target: str) -> str:
    """A ``from vllm_evidence import name`` target that is a lazy re-export is the top."""
    relative = target.removeprefix(TOP + ".")
    is_module = (PACKAGE / relative).exists() or (PACKAGE / f"{relative}.py").exists()
    return TOP if "." not in relative and not is_module else target


def upward_imports(root: Path) -> list[str]:
    """Every import against the layer table, as ``file:line: a (layer) -> b (layer)``."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        source = module_name(path, root)
        if source == TOP:
            continue
        for line, imported in imports_of(path, root):
            target = _resolve(imported)
            if layer_of(target) > layer_of(source):
                bad.append(
                    f"{path.relative_to(root.parent)}:{line}: {source} "
                    f"({LAYERS[layer_of(source)][0]}) imports {target} "
                    f"({LAYERS[layer_of(target)][0] if target != TOP else 'top'})"
                )
    return bad


def names_imported(path: Path, root: Path) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` for every name a file imports from the package: the
    name is ``""`` for a plain ``import module``."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.extend((node.lineno, target, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, "") for alias in node.names)
    return [(line, m, n) for line, m, n in found if m == TOP or m.startswith(TOP + ".")]


def _in_decisions(module: str) -> bool:
    return module == DECISIONS or module.startswith(DECISIONS + ".")


def _is_module(root: Path, dotted: str) -> bool:
    relative = Path(*dotted.removeprefix(TOP + ".").split("."))
    return (root / relative).is_dir() or (root / relative).with_suffix(".py").is_file()


def decision_functions(root: Path) -> frozenset[str]:
    """Every function a decisions module defines at its top level (public or not)."""
    return frozenset(
        node.name
        for path in (root / "decisions").rglob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    )


def decision_import_breaches(root: Path) -> list[str]:
    """Every import outside ``decisions/`` of a private decisions module or name, and
    every renderer's import of a decision function (or of a decisions module itself,
    through which it could call one), as ``file:line: what``."""
    functions = decision_functions(root)
    bad = []
    for path in sorted(root.rglob("*.py")):
        source = module_name(path, root)
        if _in_decisions(source):
            continue
        relative = source.removeprefix(TOP + ".")
        renderer = any(relative == r or relative.startswith(r + ".") for r in RENDERERS)
        where = f"{path.relative_to(root.parent)}"
        for line, module, name in names_imported(path, root):
            full = f"{module}.{name}" if name else module
            if not _in_decisions(full) and not _in_decisions(module):
                continue
            dotted = full.removeprefix(DECISIONS).lstrip(".")
            if any(part.startswith("_") for part in dotted.split(".") if part):
                bad.append(f"{where}:{line}: {source} imports the decisions' private {full}")
            elif renderer and (
                name in functions or (_in_decisions(full) and _is_module(root, full))
            ):
                what = "decision function" if name in functions else "decisions module"
                bad.append(f"{where}:{line}: renderer {source} imports the {what} {full}")
    return bad


def test_layers_import_one_way() -> None:
    assert upward_imports(PACKAGE) == []


def test_no_other_layer_imports_the_decisions_private_parts_or_a_renderer_a_decision() -> None:
    assert decision_import_breaches(PACKAGE) == []


def test_every_module_has_a_layer() -> None:
    for path in PACKAGE.rglob("*.py"):
        layer_of(module_name(path, PACKAGE))


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("_capture/batch.py", "vllm_evidence._adapters.metrics"),
        ("upstream/_laws.py", "vllm_evidence._capture.batch"),
        ("_adapters/version.py", "vllm_evidence._readback"),
        ("_adapters/startup_log/launch.py", "vllm_evidence._readback.executor"),
        ("_readback/parallel.py", "vllm_evidence.decisions._parallel"),
        ("decisions/_join.py", "vllm_evidence._assessment"),
        ("_assessment.py", "vllm_evidence._output.report"),
        ("_output/report.py", "vllm_evidence._cli.probe"),
        ("_cli/demo.py", "vllm_evidence.cli"),
    ],
)
def test_an_upward_import_fails(tmp_path: Path, importer: str, imported: str) -> None:
    """The check is not vacuous: one upward import, added inside a function, is found."""
    import shutil

    copy = tmp_path / "vllm_evidence"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    target = copy / importer
    target.write_text(
        target.read_text(encoding="utf-8") + f"\n\ndef _upward() -> None:\n    import {imported}\n",
        encoding="utf-8",
    )
    found = upward_imports(copy)
    assert len(found) == 1, found
    assert importer in found[0]
    assert imported in found[0]


def test_a_downward_import_passes(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "vllm_evidence"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    target = copy / "_output" / "report.py"
    target.write_text(
        target.read_text(encoding="utf-8") + "\n\nimport vllm_evidence._capture.batch\n",
        encoding="utf-8",
    )
    assert upward_imports(copy) == []


def _copy_with(tmp_path: Path, importer: str, line: str) -> Path:
    """A copy of the package with ``line`` appended to ``importer`` inside a function."""
    import shutil

    copy = tmp_path / "vllm_evidence"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    target = copy / importer
    target.write_text(
        target.read_text(encoding="utf-8") + f"\n\ndef _added() -> None:\n    {line}\n",
        encoding="utf-8",
    )
    return copy


@pytest.mark.parametrize(
    ("importer", "line", "expected"),
    [
        (
            "_readback/parallel.py",
            "from vllm_evidence.decisions._common import scope",
            "imports the decisions' private vllm_evidence.decisions._common.scope",
        ),
        (
            "_assessment.py",
            "import vllm_evidence.decisions._life",
            "imports the decisions' private vllm_evidence.decisions._life",
        ),
        (
            "_output/laws.py",
            "from vllm_evidence.decisions import _capacity_figures",
            "imports the decisions' private vllm_evidence.decisions._capacity_figures",
        ),
        (
            "serialize.py",
            "from vllm_evidence.decisions._parallel import _population",
            "imports the decisions' private vllm_evidence.decisions._parallel._population",
        ),
        (
            "_output/startup_log.py",
            "from vllm_evidence.decisions import decide_parallel",
            (
                "renderer vllm_evidence._output.startup_log imports the decision function "
                "vllm_evidence.decisions.decide_parallel"
            ),
        ),
        (
            "_cli/log.py",
            "from vllm_evidence.decisions import decide_capacity",
            (
                "renderer vllm_evidence._cli.log imports the decision function "
                "vllm_evidence.decisions.decide_capacity"
            ),
        ),
        (
            "_output/laws.py",
            "from vllm_evidence.decisions._log_join import log_not_joined",
            "imports the decisions' private vllm_evidence.decisions._log_join.log_not_joined",
        ),
        (
            "_cli/explain.py",
            "import vllm_evidence.decisions",
            (
                "renderer vllm_evidence._cli.explain imports the decisions module "
                "vllm_evidence.decisions"
            ),
        ),
        (
            "_output/audit.py",
            "import vllm_evidence.decisions._capacity",
            "imports the decisions' private vllm_evidence.decisions._capacity",
        ),
    ],
)
def test_a_decisions_breach_fails(tmp_path: Path, importer: str, line: str, expected: str) -> None:
    """Each rule is not vacuous: one breach, added inside a function, is found, by name."""
    found = decision_import_breaches(_copy_with(tmp_path, importer, line))
    assert len(found) == 1, found
    assert importer in found[0]
    assert found[0].endswith(expected), found[0]


@pytest.mark.parametrize(
    ("importer", "line"),
    [
        # A renderer reads decision types: arms, reasons, unions.
        ("_output/startup_log.py", "from vllm_evidence.decisions import ParallelRefused"),
        ("_cli/log.py", "from vllm_evidence.decisions import CapacityReason"),
        ("_output/laws.py", "from vllm_evidence.decisions import ParallelDecision"),
        # A layer that decides (the assessment) calls the decision functions.
        ("_assessment.py", "from vllm_evidence.decisions import decide_parallel"),
        # And everything reads what the readback resolved.
        ("_output/startup_log.py", "from vllm_evidence._readback.parallel import attribute"),
        # Inside the decisions, the private modules are theirs.
        ("decisions/_health.py", "from vllm_evidence.decisions._common import scope"),
    ],
)
def test_what_the_decisions_rules_allow_passes(tmp_path: Path, importer: str, line: str) -> None:
    assert decision_import_breaches(_copy_with(tmp_path, importer, line)) == []
