"""The architecture test: layers import one way (DESIGN principle 13).

The allowed direction is written down once, in :data:`LAYERS`: a module may import
from its own layer or from a lower one, never from a higher one.  Every ``import``
and ``from … import`` in the package is read from the source (including imports
inside functions and under ``TYPE_CHECKING``), so a lazy upward import is caught too.
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
            "measure",
            "errors",
            "_claims",
            "_converter",
            "upstream",
        ),
    ),
    ("capture", ("capture",)),
    ("adapters", ("adapters",)),
    ("readback", ("readback",)),
    ("decisions", ("decisions", "audit")),
    ("assessment", ("assessment",)),
    ("output", ("output", "rederive", "serialize", "launch")),
    ("commands", ("_cli", "testing")),
    ("entry points", ("cli", "__main__")),
)

#: Imported only for its lazy, typed re-exports; it sits above everything.
TOP = "vllm_evidence"


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


def test_layers_import_one_way() -> None:
    assert upward_imports(PACKAGE) == []


def test_every_module_has_a_layer() -> None:
    for path in PACKAGE.rglob("*.py"):
        layer_of(module_name(path, PACKAGE))


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("capture/batch.py", "vllm_evidence.adapters.metrics"),
        ("upstream/laws.py", "vllm_evidence.capture.batch"),
        ("adapters/version.py", "vllm_evidence.readback"),
        ("decisions/join.py", "vllm_evidence.assessment"),
        ("assessment.py", "vllm_evidence.output.report"),
        ("output/report.py", "vllm_evidence._cli.probe"),
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
    target = copy / "output" / "report.py"
    target.write_text(
        target.read_text(encoding="utf-8") + "\n\nimport vllm_evidence.capture.batch\n",
        encoding="utf-8",
    )
    assert upward_imports(copy) == []
