"""The public faces: which modules are public, what each exports, and one home a name.

The package has a few faces (:data:`FACES`); every other module's dotted name has a
part that begins with ``_``.  Each face's ``__all__`` is what it offers: every name in
it resolves, every other public attribute of the face is an import idiom
(``annotations``, ``TYPE_CHECKING``) or a module, and no name and no object is offered
by two faces (httpx's exports test, one per face).
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types
from collections import defaultdict
from typing import Literal, Union, get_args, get_origin

import pytest

import vllm_evidence

#: The public modules, and nothing else.
FACES = (
    "vllm_evidence",
    "vllm_evidence.cli",
    "vllm_evidence.decisions",
    "vllm_evidence.errors",
    "vllm_evidence.serialize",
    "vllm_evidence.testing",
    "vllm_evidence.upstream",
    "vllm_evidence.watch",
)

#: Public-looking attributes a face has by idiom, not by offer.
IDIOMS = frozenset({"annotations", "TYPE_CHECKING"})


@pytest.mark.parametrize("name", vllm_evidence.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    value = getattr(vllm_evidence, name)
    if get_origin(value) in (Literal, Union) or isinstance(value, types.UnionType):
        # a type alias (``Claim``, ``WrapWidth``, ``FrontDoor``): it has no name of its own
        assert get_args(value)
        return
    assert getattr(value, "__name__", name) == name


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(vllm_evidence, "no" + "pe")


def test_dir_is_the_public_api() -> None:
    assert dir(vllm_evidence) == sorted(vllm_evidence.__all__)


def test_importing_the_cli_does_not_import_httpx_or_rich() -> None:
    code = (
        "import sys, vllm_evidence.cli; "
        "vllm_evidence.cli.build_parser(); "
        "print(sorted(m for m in ('httpx', 'rich') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split(".")[1:])


def test_the_public_modules_are_the_faces() -> None:
    found = {
        info.name
        for info in pkgutil.walk_packages(vllm_evidence.__path__, "vllm_evidence.")
        if _public(info.name)
    }
    assert sorted({"vllm_evidence", *found}) == sorted(FACES)


def test_the_face_check_sees_a_public_module() -> None:
    """Not vacuous: a module without a leading ``_`` is public, one under ``_x`` is not."""
    assert _public("vllm_evidence.capture.http")
    assert _public("vllm_evidence.decisions")
    assert not _public("vllm_evidence._capture.http")
    assert not _public("vllm_evidence.decisions._capacity")


@pytest.mark.parametrize("face", FACES)
def test_a_face_offers_exactly_its_all(face: str) -> None:
    module = importlib.import_module(face)
    offered = list(module.__all__)
    assert len(offered) == len(set(offered)), face
    for name in offered:
        getattr(module, name)  # resolves (a lazy face imports it now)
    stray = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and name not in offered
        and name not in IDIOMS
        and not isinstance(value, types.ModuleType)
    ]
    assert stray == [], f"{face} has public names outside __all__: {stray}"


def test_each_name_and_each_object_has_one_home() -> None:
    names: defaultdict[str, list[str]] = defaultdict(list)
    objects: defaultdict[int, list[str]] = defaultdict(list)
    for face in FACES:
        module = importlib.import_module(face)
        for name in module.__all__:
            names[name].append(face)
            value = getattr(module, name)
            if not isinstance(value, str | int | float | bool | tuple | frozenset):
                objects[id(value)].append(f"{face}.{name}")
    assert {n: f for n, f in names.items() if len(f) > 1} == {}
    assert [h for h in objects.values() if len(h) > 1] == []
