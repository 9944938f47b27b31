"""The seal: no side door makes a new sealed instance from outside the package."""

from __future__ import annotations

import copy
import copyreg
import importlib
import io
import pickle
import pkgutil
import sys
from pathlib import Path
from typing import Any, cast

import attrs
import cattrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, ResolutionFailed

import vllm_evidence
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._measure import MeasureParseFailure, TokenCount
from vllm_evidence._readback import HistoricalBundle, historical_bundle, load
from vllm_evidence._seal import Sealed, SealedTypeError
from vllm_evidence.errors import EvidenceMismatchError
from vllm_evidence.upstream import ReleaseLaws, Route, RouteLaw, laws_for
from vllm_evidence.upstream._releases import parse_release


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


DEMO = Path(vllm_evidence.__file__).parent / "demo_data" / "vllm-0.32.0-cpu-tp2-devmode"

#: The sealed types that pickle by re-derivation; every other one refuses.
REDERIVABLE = {
    "Assessment",
    "CaptureBatch",
    "CapturedReadback",
    "Exchange",
    "HistoricalBundle",
    "LaunchReceipt",
    "ProcRead",
    "ProcessTree",
    "StartupLog",
}


def _an_assessment() -> Assessment:
    log = read_startup_log(DEMO / "startup.log")
    assert isinstance(log, StartupLog)
    return assess(load(DEMO, bodies=True), log)


def _unpickle(data: bytes) -> Any:
    return pickle.loads(data)  # noqa: S301  # bytes this test pickled itself: the point of it


class _Crafted:
    """Pickles as whatever reduction it is given: a hand-crafted pickle."""

    def __init__(self, *reduction: object) -> None:
        self.reduction = reduction

    def __reduce__(self) -> tuple[object, ...]:
        return self.reduction


def test_exactly_the_types_with_raw_evidence_declare_a_re_derivation() -> None:
    declared = {c.__qualname__ for c in SEALED if c.__rederive__ is not Sealed.__rederive__}
    assert declared == REDERIVABLE


def test_pickle_is_refused_where_nothing_re_derives() -> None:
    assessment = _an_assessment()
    refused = [
        _a_failure(),
        _a_route_law(),
        assessment.parallel,
        assessment.evidence,
        assessment.evidence.launch,
        assessment.front_door_join,
    ]
    for value in refused:
        assert type(value).__qualname__ not in REDERIVABLE
        with pytest.raises(SealedTypeError, match="cannot be pickled") as excinfo:
            pickle.dumps(value)
        assert "send its raw evidence instead" in str(excinfo.value)
        assert "vllm_evidence.serialize" not in str(excinfo.value)
    with pytest.raises(SealedTypeError):
        pickle.dumps(_a_route_law(), protocol=0)


def test_pickle_re_derives_the_types_with_raw_evidence() -> None:
    assessment = _an_assessment()
    bundle = assessment.evidence.front_door
    assert isinstance(bundle, HistoricalBundle)
    for value in (assessment, bundle, assessment.startup_log):
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = _unpickle(pickle.dumps(value, protocol=protocol))
            assert back == value
            assert back is not value


def test_the_reduction_names_a_package_function_and_raw_evidence_only() -> None:
    assessment = _an_assessment()
    function, args = assessment.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    assert function.__module__ == "vllm_evidence._assessment"
    front_door, log, launch, arms, receipt = cast("tuple[Any, ...]", args)
    assert receipt is None
    assert front_door is assessment.evidence.front_door
    assert log is assessment.startup_log
    assert launch == 0
    assert [arm[0] for arm in arms] == [
        "parallel",
        "capacity",
        "served_identity",
        "health_coverage",
        "front_door_join",
        "log_join",
    ]
    bundle = assessment.evidence.front_door
    assert isinstance(bundle, HistoricalBundle)
    rebuild, (bodies, _statuses) = cast("tuple[Any, tuple[Any, ...]]", bundle.__reduce__())
    assert rebuild.__module__ == "vllm_evidence._readback.front_door"
    assert all(isinstance(body, bytes) for _, body in bodies)


def test_a_crafted_pickle_gets_what_the_parsers_derive_from_its_bytes() -> None:
    bundle = historical_bundle({Route.VERSION: b'{"version": "0.32.0"}'})
    function, _ = bundle.__reduce__()
    fabricated = ((Route.VERSION, b'{"version": "not a version"}'),)
    crafted = _unpickle(pickle.dumps(_Crafted(function, (fabricated, ()))))
    assert crafted == historical_bundle(dict(fabricated))
    assert crafted.version != bundle.version


def test_a_crafted_pickle_cannot_bring_a_verdict_the_bytes_do_not_give() -> None:
    assessment = _an_assessment()
    reduction = cast("tuple[Any, tuple[Any, ...]]", assessment.__reduce__())
    function, (front_door, log, launch, arms, receipt) = reduction
    forged = tuple((claim, "JoinedIncarnation", "joined") for claim, _, _ in arms)
    with pytest.raises(EvidenceMismatchError, match="does not reproduce"):
        _unpickle(pickle.dumps(_Crafted(function, (front_door, log, launch, forged, receipt))))


def test_pickled_state_cannot_set_the_fields_of_a_bare_instance() -> None:
    state = {"measure": "TokenCount", "text": "7", "reason": None}
    crafted = _Crafted(copyreg._reconstructor, (MeasureParseFailure, object, None), state)  # type: ignore[attr-defined]  # private, the point of the test
    with pytest.raises(SealedTypeError, match="cannot be restored from pickled state"):
        _unpickle(pickle.dumps(crafted))
    assert "__setstate__" not in vars(MeasureParseFailure)


def test_a_log_read_from_a_stream_cannot_be_pickled() -> None:
    log = read_startup_log(io.BytesIO((DEMO / "startup.log").read_bytes()))
    assert isinstance(log, StartupLog)
    with pytest.raises(SealedTypeError, match="read from a stream"):
        pickle.dumps(log)


def test_copy_of_a_re_derivable_value_is_still_the_value() -> None:
    assessment = _an_assessment()
    assert copy.copy(assessment) is assessment
    assert copy.deepcopy(assessment) is assessment


def test_bare_cattrs_cannot_structure_a_sealed_type() -> None:
    failure = _a_failure()
    raw = cattrs.Converter().unstructure(failure)
    assert raw["text"] == "-1"
    with pytest.raises(Exception) as excinfo:  # noqa: PT011  # cattrs wraps it in a group
        cattrs.Converter().structure(raw, MeasureParseFailure)
    assert "_sealed" in repr(excinfo.value.__cause__ or excinfo.value) or isinstance(
        excinfo.value, cattrs.errors.ClassValidationError
    )


# Whether hypothesis warns first depends on whether some import loaded the ``attr``
# module (it refuses attrs classes outright then): the refusal is the point, not that.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.SmallSearchSpaceWarning")
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
