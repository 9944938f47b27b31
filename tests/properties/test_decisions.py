"""Properties: no caller-supplied value moves a decision past what its evidence carries."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests._evidence import bundle, cache_config_metrics, log, server_info_json, version_body
from vllm_evidence import decisions
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._bounds import MAX_WORLD_SIZE
from vllm_evidence._seal import Sealed, SealedTypeError
from vllm_evidence.decisions import (
    CapacityEstablished,
    IdentityReason,
    JoinReason,
    JoinUnestablished,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityEstablished,
)
from vllm_evidence.upstream import READ_RELEASES, Route

VERSIONS = [str(r.version) for r in READ_RELEASES]
V1_VERSIONS = [v for v in VERSIONS if v != "0.6.6.post1"]  # V1 from 0.8.5 on

sizes = st.integers(min_value=1, max_value=64)
texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@st.composite
def models_json(draw: st.DrawFn) -> bytes:
    cards = draw(
        st.lists(
            st.fixed_dictionaries(
                {"id": texts.filter(bool), "root": st.none() | texts, "parent": st.none() | texts}
            ),
            max_size=3,
        )
    )
    return json.dumps({"object": "list", "data": cards}).encode()


@given(
    product=st.integers(min_value=1, max_value=4096),
    models=models_json(),
    version=st.sampled_from(VERSIONS),
)
def test_products_and_model_lists_never_resolve_a_configuration(
    product: int, models: bytes, version: str
) -> None:
    front_door = bundle(
        version_body(version),
        {Route.GET_WORLD_SIZE: json.dumps({"world_size": product}).encode()},
        {Route.MODELS: models},
    )
    decision = assess(front_door).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert decision.configuration is None


@given(
    tp=sizes,
    pp=sizes,
    dp=sizes,
    backend=st.none() | st.sampled_from(["mp", "ray", "uni", "x.Custom"]),
    version=st.sampled_from(VERSIONS),
    product=st.none() | st.integers(min_value=1, max_value=4096),
)
def test_server_info_without_a_log_never_passes_stage_two(
    tp: int, pp: int, dp: int, backend: str | None, version: str, product: int | None
) -> None:
    # A world past MAX_WORLD_SIZE stops at stage 1 instead (tests/hostile/test_bounds.py).
    assume(tp * pp * dp <= MAX_WORLD_SIZE)
    extra = {} if product is None else {Route.GET_WORLD_SIZE: b'{"world_size":%d}' % product}
    front_door = bundle(
        version_body(version), server_info_json(tp=tp, pp=pp, dp=dp, backend=backend), extra
    )
    decision = assess(front_door).parallel
    assert not isinstance(decision, ParallelEstablished)
    assert decision.reason in {
        ParallelReason.POPULATION_UNOBSERVED,
        ParallelReason.CONFIGURATION_CONFLICT,
        ParallelReason.VERSION_NOT_ESTABLISHED,
    }


@given(
    blocks=st.integers(min_value=0, max_value=10**9),
    block_size=st.integers(min_value=0, max_value=4096),
    engine=st.none() | st.sampled_from(["0", "1", "7"]),
    version=st.sampled_from(V1_VERSIONS),
)
def test_block_fields_alone_are_never_a_v1_capacity(
    blocks: int, block_size: int, engine: str | None, version: str
) -> None:
    labels = f'block_size="{block_size}",num_gpu_blocks="{blocks}"'
    if engine is not None:
        labels += f',engine="{engine}"'
    decision = assess(bundle(version_body(version), cache_config_metrics(labels))).capacity
    assert not isinstance(decision, CapacityEstablished)


def _derivable(served_id: str, path: str) -> bool:
    """The test's own rule: the path itself, or its last component when it has several."""
    if served_id == path:
        return True
    trimmed = path
    while trimmed.endswith("/"):
        trimmed = trimmed[:-1]
    _, sep, last = trimmed.rpartition("/")
    return bool(sep) and last != "" and served_id == last


path_parts = st.text(st.sampled_from("ab-_.:/"), min_size=0, max_size=8)


@given(served_id=path_parts.filter(bool), path=path_parts.filter(bool))
def test_only_derivable_ids_identify_the_configured_path(served_id: str, path: str) -> None:
    front_door = bundle(
        version_body("0.32.0"),
        {
            Route.MODELS: json.dumps(
                {"object": "list", "data": [{"id": served_id, "root": path}]}
            ).encode()
        },
    )
    decision = assess(front_door).served_identity
    if _derivable(served_id, path):
        assert isinstance(decision, ServedIdentityEstablished)
    else:
        assert not isinstance(decision, ServedIdentityEstablished)
        assert decision.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE


def test_the_derivability_rule_itself_both_ways() -> None:
    assert _derivable("Qwen2.5-Coder-1.5B-Instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct")
    assert _derivable("/m", "/m")
    assert _derivable("m", "/m")
    assert not _derivable("tiny-llama:q4-alias", "/models/tiny-llama")
    assert not _derivable("m", "m/")  # one component: only the path itself
    assert not _derivable("Qwen", "Qwen/Qwen2.5")


route_bodies = st.dictionaries(
    st.sampled_from([r for r in Route if r.probe_readable]),
    st.binary(max_size=64) | st.sampled_from([b'{"version":"0.32.0"}', b"x 1\n"]),
    max_size=7,
)


@given(bodies=route_bodies)
def test_a_historical_bundles_join_is_never_established(bodies: dict[Route, bytes]) -> None:
    decision = assess(bundle(bodies)).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.CALLER_ASSEMBLED


def test_a_historical_bundle_with_a_real_marker_is_still_caller_assembled() -> None:
    from tests._paths import REAL

    metrics = (REAL / "metrics.body").read_bytes()
    assert b"process_start_time_seconds 1.79601185221e+09" in metrics
    decision = assess(bundle({Route.METRICS: metrics})).front_door_join
    assert isinstance(decision, JoinUnestablished)
    assert decision.reason is JoinReason.CALLER_ASSEMBLED


DECISION_TYPES: list[type[Any]] = sorted(
    (
        cls
        for name in decisions.__all__
        if isinstance(cls := getattr(decisions, name), type)
        and attrs.has(cls)
        # the units decisions carry (TokenCount, GiB, …) are values anyone may write
        and (cls.__module__ != "vllm_evidence._measure" or issubclass(cls, Sealed))
    ),
    key=lambda c: c.__qualname__,
)


def test_the_sealed_census_covers_every_arm() -> None:
    names = {c.__qualname__ for c in DECISION_TYPES}
    assert {
        "ParallelEstablished",
        "ParallelRefused",
        "CapacityEstablished",
        "CapacityReported",
        "CapacityRefused",
        "ServedIdentityEstablished",
        "ServedIdentityRefused",
        "HealthCoverageEstablished",
        "HealthCoverageRefused",
        "JoinedIncarnation",
        "JoinUnestablished",
        "Evidence",
    } <= names


@pytest.mark.parametrize("cls", [*DECISION_TYPES, Assessment], ids=lambda c: c.__qualname__)
@given(data=st.data())
def test_callers_cannot_construct_a_decision(cls: type[Any], data: st.DataObject) -> None:
    kwargs = {
        a.name: data.draw(st.none() | st.integers() | st.text(max_size=3))
        for a in attrs.fields(cls)
    }
    with pytest.raises(SealedTypeError):
        cls(object())
    with pytest.raises(TypeError):
        cls(**kwargs)


def test_evolve_cannot_forge_an_established_arm() -> None:
    refused = assess(None, log("Initializing nothing\n")).parallel
    assert isinstance(refused, ParallelRefused)
    evolve: Any = attrs.evolve  # untyped: the attrs plugin cannot type a Never init
    with pytest.raises(TypeError):
        evolve(refused, reason=ParallelReason.ESTABLISHED)
