"""The seal: no side door makes a new sealed instance from outside the package."""

from __future__ import annotations

import copy
import importlib
import pickle
import pkgutil
import sys
from typing import Any

import attrs
import cattrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, ResolutionFailed

import vllm_evidence
from vllm_evidence._seal import Sealed, SealedTypeError
from vllm_evidence.measure import MeasureParseFailure, TokenCount
from vllm_evidence.upstream import ReleaseLaws, Route, RouteLaw, laws_for
from vllm_evidence.upstream.releases import parse_release


def _all_sealed_classes() -> list[type[Any]]:
    for info in pkgutil.walk_packages(vllm_evidence.__path__, "vllm_evidence."):
        if info.name.endswith("__main__"):
            continue  # running it would run the CLI
        importlib.import_module(info.name)
    found: set[type[Any]] = set()
    todo: list[type[Any]] = [Sealed]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            # attrs replaces each class with a slotted copy; the discarded original can
            # linger in __subclasses__ until collected, so keep only the module's class.
            module = sys.modules[sub.__module__]
            if sub not in found and getattr(module, sub.__qualname__, None) is sub:
                found.add(sub)
                todo.append(sub)
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


def _a_route_law() -> RouteLaw:
    version = parse_release("0.32.0")
    assert version is not None
    laws = laws_for(version)
    assert isinstance(laws, ReleaseLaws)
    law = laws.route(Route.VERSION)
    assert isinstance(law, RouteLaw)
    return law


def _a_failure() -> MeasureParseFailure:
    failure = TokenCount.parse("-1")
    assert isinstance(failure, MeasureParseFailure)
    return failure


SEALED = _all_sealed_classes()


def test_the_package_has_sealed_types() -> None:
    """The census below is not vacuous."""
    names = {c.__qualname__ for c in SEALED}
    assert {"MeasureParseFailure", "RouteLaw", "ReleaseLaws", "LawNotEstablished"} <= names


@pytest.mark.parametrize("cls", SEALED, ids=lambda c: c.__qualname__)
def test_every_sealed_class_is_final_frozen_and_refuses_construction(cls: type[Any]) -> None:
    """Meta-test: final for the type checker, frozen attrs, and no public constructor."""
    ctor: Any = cls
    assert getattr(cls, "__final__", False) is True
    assert attrs.has(cls)
    assert Sealed in cls.__bases__
    with pytest.raises(TypeError):
        ctor()
    with pytest.raises(SealedTypeError, match="has no public constructor; use "):
        ctor(object())
    kwargs: dict[str, Any] = {a.name: None for a in attrs.fields(cls)}
    with pytest.raises(TypeError):
        ctor(**kwargs)


def test_direct_call_names_the_public_function() -> None:
    with pytest.raises(
        SealedTypeError, match=r"RouteLaw has no public constructor; use .*laws_for"
    ):
        RouteLaw(1)  # type: ignore[arg-type]  # the point of the test


def test_evolve_cannot_make_a_new_instance() -> None:
    law = _a_route_law()
    with pytest.raises(TypeError):
        attrs.evolve(law, api_key_guarded=True)  # type: ignore[misc]  # mypy rejects it too


def test_replace_dunder_refuses() -> None:
    failure = _a_failure()
    with pytest.raises(SealedTypeError, match="cannot be replaced"):
        failure.__replace__(text="7")


def test_copy_returns_the_same_immutable_value() -> None:
    failure = _a_failure()
    assert copy.copy(failure) is failure
    assert copy.deepcopy(failure) is failure
    law = _a_route_law()
    assert copy.deepcopy(law) is law


def test_pickle_is_refused() -> None:
    with pytest.raises(SealedTypeError, match="cannot be pickled"):
        pickle.dumps(_a_failure())
    with pytest.raises(SealedTypeError):
        pickle.dumps(_a_route_law(), protocol=0)


def test_bare_cattrs_cannot_structure_a_sealed_type() -> None:
    failure = _a_failure()
    raw = cattrs.Converter().unstructure(failure)
    assert raw["text"] == "-1"
    with pytest.raises(Exception) as excinfo:  # noqa: PT011  # cattrs wraps it in a group
        cattrs.Converter().structure(raw, MeasureParseFailure)
    assert "_sealed" in repr(excinfo.value.__cause__ or excinfo.value) or isinstance(
        excinfo.value, cattrs.errors.ClassValidationError
    )


def test_hypothesis_from_type_cannot_build_a_sealed_type() -> None:
    @given(st.from_type(MeasureParseFailure))
    def build(value: MeasureParseFailure) -> None:
        raise AssertionError(value)  # pragma: no cover - must never be reached

    with pytest.raises((InvalidArgument, ResolutionFailed, TypeError)):
        build()


def test_subclassing_a_sealed_type_fails() -> None:
    with pytest.raises(TypeError):

        class Sneaky(MeasureParseFailure):  # type: ignore[misc]  # final: the point of the test
            pass


def test_subclassing_the_mixin_outside_the_package_fails() -> None:
    with pytest.raises(SealedTypeError, match="from outside the package"):

        class Outsider(Sealed):
            pass


def test_a_frozen_sealed_value_cannot_be_mutated() -> None:
    failure = _a_failure()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        failure.text = "5"  # type: ignore[misc]  # frozen: the point of the test
