"""The inert-field census (DESIGN §2 principle 10), on the package and on fixtures.

The census itself is :mod:`tests.census`; its docstring says what it can and cannot
see.  The fixtures under ``tests/fixtures/census/`` are analysed, never imported.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import vllm_evidence
from tests.census import (
    REPO,
    CensusBuildError,
    Program,
    build_program,
    field_reads,
    find_inert_fields,
    inert_fields,
    sealed_fields,
)
from vllm_evidence._seal import Sealed

PACKAGE = REPO / "vllm_evidence"
FIXTURES = REPO / "tests" / "fixtures" / "census"
INERT = FIXTURES / "inert_module.py"
READER = FIXTURES / "reader_module.py"
ACCESS = FIXTURES / "access_module.py"
CONSTRUCTION = FIXTURES / "construction_module.py"
HOOK = FIXTURES / "hook_module.py"
FIXTURE_PACKAGE = "tests.fixtures.census"


@pytest.fixture(scope="module")
def program() -> Program:
    """One type-checked build of the package and the census fixtures."""
    return build_program([PACKAGE, FIXTURES])


def test_the_package_has_no_inert_fields() -> None:
    inert = find_inert_fields([PACKAGE])
    assert inert == [], (
        "fields of sealed types that nothing in the package reads outside construction "
        "(DESIGN §2 principle 10): " + ", ".join(inert)
    )


def test_the_census_reports_exactly_the_inert_fixture_field(program: Program) -> None:
    assert inert_fields(program, [INERT], [INERT]) == [
        f"{FIXTURE_PACKAGE}.inert_module.Gauge.calibration"
    ]


def test_a_read_of_a_same_named_field_on_another_class_does_not_count(program: Program) -> None:
    reads = field_reads(program, [INERT])
    # The attribute name `calibration` is read in the module -- of a Probe ...
    assert (f"{FIXTURE_PACKAGE}.inert_module.Probe", "calibration") in reads
    # ... so a name search would call Gauge.calibration live; the census does not.
    assert (f"{FIXTURE_PACKAGE}.inert_module.Gauge", "calibration") not in reads
    assert (f"{FIXTURE_PACKAGE}.inert_module.Gauge", "reading") in reads


def test_reads_count_only_inside_the_reader_roots(program: Program) -> None:
    # reader_module reads Gauge.calibration; like a test, it is not a reader by default.
    assert inert_fields(program, [INERT], [INERT]) != []
    assert inert_fields(program, [INERT], [INERT, READER]) == []


def test_every_credited_access_makes_its_field_live(program: Program) -> None:
    module = f"{FIXTURE_PACKAGE}.access_module"
    reads = field_reads(program, [ACCESS])
    credited = {
        ("Reading", "value"),  # keyword class pattern
        ("Reading", "unit"),  # positional class pattern, through __match_args__
        ("Left", "shared"),  # through a union
        ("Right", "shared"),  # through the same union
        ("Left", "label"),  # self.label in a property
        ("Right", "tag"),  # getattr with a literal name
        ("Bounded", "level"),  # through a type variable's bound
        ("Cpu", "count"),  # through a value-restricted type variable
        ("Gpu", "count"),  # through the same type variable
    }
    missing = {(cls, name) for cls, name in credited if (f"{module}.{cls}", name) not in reads}
    assert missing == set()
    assert inert_fields(program, [ACCESS], [ACCESS]) == [f"{module}.Reading.note"]


def test_construction_and_generic_dumps_do_not_make_a_field_live(program: Program) -> None:
    module = f"{FIXTURE_PACKAGE}.construction_module"
    assert inert_fields(program, [CONSTRUCTION], [CONSTRUCTION]) == [
        f"{module}.Checked.ceiling",  # read only by another field's @validator method
        f"{module}.Checked.dumped",  # read only by attrs.asdict
        f"{module}.Checked.floor",  # read only by a validator named in a field definition
        f"{module}.Checked.shown",  # read only by the repr's _repr_summary
        f"{module}.Checked.step",  # read by nothing (its validator gets the raw value)
        f"{module}.Checked.tagged",  # read only by a *_summary repr helper
    ]
    # summary is read by __attrs_post_init__ (construction) and by render(): live.


def test_a_read_inside_a_converter_hook_makes_its_field_live(program: Program) -> None:
    """Every JSON document is built by hooks on the one converter: their reads count,
    and a field that only a generic dump reaches stays inert."""
    module = f"{FIXTURE_PACKAGE}.hook_module"
    assert (f"{module}.Rendered", "shown") in field_reads(program, [HOOK])
    assert inert_fields(program, [HOOK], [HOOK]) == [f"{module}.Rendered.dumped"]


def _runtime_sealed_classes() -> list[type[Any]]:
    for info in pkgutil.walk_packages(vllm_evidence.__path__, "vllm_evidence."):
        if not info.name.endswith("__main__"):  # importing it would run the CLI
            importlib.import_module(info.name)
    # attrs replaces each class with a slotted copy; keep only the module's class.
    return [
        cls
        for cls in Sealed.__subclasses__()
        if getattr(sys.modules[cls.__module__], cls.__qualname__, None) is cls
    ]


def test_the_census_sees_every_sealed_class_and_field_that_exists_at_run_time(
    program: Program,
) -> None:
    static = sealed_fields(program, [PACKAGE])
    runtime = {
        f"{cls.__module__}.{cls.__qualname__}": tuple(a.name for a in attrs.fields(cls))
        for cls in _runtime_sealed_classes()
    }
    assert runtime  # the package has sealed classes; an empty census proves nothing
    assert static == runtime


def test_the_census_refuses_a_program_mypy_rejects(tmp_path: Path) -> None:
    broken = tmp_path / "census_broken_module.py"
    broken.write_text('x: int = "not an int"\n', encoding="utf-8")
    with pytest.raises(CensusBuildError, match="Incompatible types in assignment"):
        build_program([broken])
