"""Every closed list in a published JSON Schema is held to the Python enum it spells.

A schema's ``enum`` (and the route outcomes' ``const`` arms) is written beside the
Python enum whose values the documents carry; nothing generates one from the other, so
this test does the holding: each ``enum`` of each shipped schema is matched to its
Python source by :data:`SOURCES`, and must equal it (or, for the few listed with two
bounds, lie between what the documents can emit and what the enum holds).  A value
added to an enum and not to the schema, or the reverse, fails here; so does a schema
enum that :data:`SOURCES` does not place, or a pattern that no longer matches anything.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from typing import Any, get_args, get_origin

import pytest

from vllm_evidence._adapters.outcome import Outcome
from vllm_evidence._adapters.startup_log import CompileCacheForm, LifeKind, RankForm
from vllm_evidence._assessment import REGISTRY, Verdict
from vllm_evidence._audit import Verdict as AuditVerdict
from vllm_evidence._capture.batch import CaptureOrigin, ExchangeRole, ProvenanceKind, Transport
from vllm_evidence._capture.follow import FollowEvent, FollowState
from vllm_evidence._claims import GATE_CLAIMS, Claim
from vllm_evidence._readback.evidence import SourceKind, Subject, arm_name
from vllm_evidence._readback.parallel import RankAttribution
from vllm_evidence.decisions import ARMS, LogJoinReason
from vllm_evidence.serialize import SCHEMA_NAMES, schema
from vllm_evidence.upstream import (
    CapacityAuthority,
    CapacityFormat,
    CapacitySource,
    ExecutorBackend,
    ExecutorMarker,
    HealthCoverage,
    IncarnationMarker,
    ParallelEvidenceKind,
    ReadHow,
    RouteGate,
    executor_marker_laws,
)
from vllm_evidence.watch._round import Reach


def _values(members: Iterable[enum.Enum]) -> frozenset[object]:
    return frozenset(m.value for m in members)


def _law_markers() -> frozenset[object]:
    """The markers some law of the table answers (what a laws document can emit)."""
    return frozenset(m.value for m in ExecutorMarker if executor_marker_laws(m))


def _law_formats() -> frozenset[object]:
    """The V1 capacity formats as the laws and audit documents name them: a format law
    is only ever a V1 one, published without the ``v1_`` of its value."""
    v1 = (f.value for f in CapacityFormat if f.value.startswith("v1_"))
    return frozenset(v.removeprefix("v1_") for v in v1)


def _verdicts(claim: Claim) -> frozenset[object]:
    return frozenset(ARMS[claim].verdicts().values())


_VERDICTS: frozenset[object] = frozenset(get_args(Verdict))


def _exact(
    pattern: str, members: Iterable[enum.Enum]
) -> tuple[str, frozenset[object], frozenset[object]]:
    return pattern, _values(members), _values(members)


#: ``(pattern over "schema:/json/path", lowest, highest)``: the schema's enum must hold
#: every value of ``lowest`` and nothing outside ``highest`` (one set: exactly it).
SOURCES: tuple[tuple[str, frozenset[object], frozenset[object]], ...] = (
    *(
        (f"assessment:/$defs/{s.name}/properties/verdict", v, v)
        for s in REGISTRY
        for v in [_verdicts(s.name)]
    ),
    _exact("*/properties/subject", Subject),
    _exact("assessment:/$defs/log_join/properties/reason", LogJoinReason),
    _exact("*/properties/source/anyOf[0]", CapacitySource),
    _exact("*/$defs/engine/properties/source", CapacitySource),
    _exact("*/$defs/law_capacity/properties/source", CapacitySource),
    _exact("*/properties/coverage*", HealthCoverage),
    _exact("*/$defs/source/properties/kind", SourceKind),
    _exact("*/properties/origin", CaptureOrigin),
    # A captured source's provenance is never ``bare``: bare bodies load as a historical
    # bundle, which has no provenance section.
    (
        "*/provenance/oneOf[1]/properties/kind",
        _values(ProvenanceKind) - {ProvenanceKind.BARE.value},
        _values(ProvenanceKind),
    ),
    _exact("*/$defs/request/properties/role", ExchangeRole),
    _exact("*/$defs/request/properties/transport", Transport),
    _exact("*/compile_cache/items/properties/form", CompileCacheForm),
    _exact("*/pasted_ranks/items/properties/form", RankForm),
    _exact("*/properties/executor_backend/anyOf[0]", ExecutorBackend),
    _exact("*/properties/named/anyOf[0]", ExecutorBackend),
    _exact("*/$defs/law_health/properties/backend", ExecutorBackend),
    _exact("*/law_executor_marker/properties/backends/items", ExecutorBackend),
    _exact("*/executor_evidence/items/properties/marker", ExecutorMarker),
    _exact("*/executor_markers/items/properties/marker", ExecutorMarker),
    # A law answers only the markers that do not name their backend themselves; the
    # schema may name more (the configuration field and the argument), never others.
    ("*/$defs/law_executor_marker/properties/marker", _law_markers(), _values(ExecutorMarker)),
    _exact("*/life/properties/*/items/properties/kind", LifeKind),
    _exact("*/$defs/law_route/properties/gate", RouteGate),
    _exact("*/law_parallel_evidence/properties/kind", ParallelEvidenceKind),
    _exact("*/law_capacity/properties/authority", CapacityAuthority),
    (
        "*/law_capacity_log_format/properties/format",
        _law_formats(),
        _law_formats(),
    ),
    _exact("*/law_incarnation_marker/properties/marker", IncarnationMarker),
    _exact("laws:/$defs/read_release/properties/how", ReadHow),
    _exact("audit:/$defs/finding/properties/verdict", AuditVerdict),
    _exact("*/global_ranks/items/properties/attribution", RankAttribution),
    # The watch documents (issue 32).
    ("watch-*:/properties/required/items", frozenset(GATE_CLAIMS), frozenset(GATE_CLAIMS)),
    ("watch-transition:*/properties/claim", frozenset(GATE_CLAIMS), frozenset(GATE_CLAIMS)),
    ("watch-*:/$defs/verdict/properties/verdict", _VERDICTS, _VERDICTS),
    _exact("watch-*/properties/reach", Reach),
    _exact("watch-*/properties/state", FollowState),
    _exact("watch-*/properties/event", FollowEvent),
)

#: Closed lists that no Python enum spells, each with what does spell it.
NOT_ENUMS: dict[str, str] = {
    "watch-transition:/properties/change": "watch.documents: one 'change' per transition class",
    "*/life/properties/state": "output.startup_log.life_state()'s six strings",
    "*/$defs/launch/properties/head": "Launch.head: 'vllm' or 'transformed'",
    "audit:/properties/exit_status": "audit.exit_status(): 0 or 1",
}


def _enums(node: Any, path: str) -> Iterator[tuple[str, list[object]]]:
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            yield path, node["enum"]
        for key, value in node.items():
            yield from _enums(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _enums(value, f"{path}[{index}]")


FOUND = [
    (f"{name}:{path}", values) for name in SCHEMA_NAMES for path, values in _enums(schema(name), "")
]


def _matches(where: str, pattern: str) -> bool:
    """``pattern`` with ``*`` for any text (brackets and dots as written)."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), where) is not None


def _placed(where: str) -> list[str]:
    return [p for p in (*(p for p, _, _ in SOURCES), *NOT_ENUMS) if _matches(where, p)]


@pytest.mark.parametrize(("where", "values"), FOUND, ids=[w for w, _ in FOUND])
def test_each_schema_enum_is_its_python_enum(where: str, values: list[object]) -> None:
    placed = _placed(where)
    assert len(placed) == 1, f"{where}: placed by {placed or 'nothing'}; add it to SOURCES"
    assert len(set(values)) == len(values), f"{where}: a value listed twice"
    listed = {v for v in values if v is not None}  # ``null`` in an enum: the key may be null
    for pattern, lowest, highest in SOURCES:
        if pattern == placed[0]:
            assert lowest <= listed, f"{where}: lacks {sorted(map(str, lowest - listed))}"
            assert listed <= highest, f"{where}: has {sorted(map(str, listed - highest))}"


def test_every_source_still_matches_a_schema_enum() -> None:
    """A pattern that matches nothing is a list the schemas no longer hold."""
    for pattern in (*(p for p, _, _ in SOURCES), *NOT_ENUMS):
        assert any(_matches(where, pattern) for where, _ in FOUND), pattern


def test_the_route_outcome_arms_are_the_outcome_classes() -> None:
    """The schema's ``arm_*`` definitions are the outcome arms, each ``outcome`` const the
    arm's name (:func:`~vllm_evidence._readback.evidence.arm_name`: its class, in snake
    case)."""
    defs = schema("assessment")["$defs"]
    arms = {k: v for k, v in defs.items() if k.startswith("arm_")}
    consts = {k: v["properties"]["outcome"]["const"] for k, v in arms.items()}
    assert all(k == f"arm_{c}" for k, c in consts.items())
    classes = [get_origin(a) or a for a in get_args(Outcome)]
    # an arm's name is read from its class: a bare instance is enough to ask
    names = {arm_name(object.__new__(cls)) for cls in classes}
    assert set(consts.values()) == names
    assert len(names) == len(classes)


def test_a_drifted_enum_is_caught() -> None:
    """The check is not vacuous: an enum with one value fewer, or one more, fails."""
    where, values = next((w, v) for w, v in FOUND if w.endswith("/$defs/request/properties/role"))
    (pattern,) = _placed(where)
    lowest, highest = next((lo, hi) for p, lo, hi in SOURCES if p == pattern)
    assert not lowest <= set(values[1:])
    assert not {*values, "bracket_middle"} <= highest
