"""Fuzzing every adapter and the whole pipeline with hostile bytes.

Each input is a valid body of its route (from the package's strategies) mutated — bytes
flipped, cut, duplicated, hostile tokens spliced in (deep brackets, 5,000-digit numbers,
sizes past any deployment, exponents past ``decimal``, control characters) — or JSON of
hostile values, or raw bytes.  Every adapter answers an observation or a typed failure;
the pipeline (bundle → assess → report, JSON, repr) never raises.

Marked ``slow``: ``VLLM_EVIDENCE_FUZZ_EXAMPLES`` is the examples of the whole module,
shared by :data:`WEIGHTS` (the default run is small, 600; ``.ci/run`` runs
``-m slow tests/hostile`` with 100,000).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.metrics import parse_metrics
from vllm_evidence._adapters.models import parse_models
from vllm_evidence._adapters.server_info import parse_server_info_json, parse_server_info_text
from vllm_evidence._adapters.startup_log import LogReadFailure, StartupLog, read_startup_log
from vllm_evidence._adapters.version import parse_version
from vllm_evidence._adapters.world_size import parse_world_size
from vllm_evidence._assessment import assess
from vllm_evidence._measure import BasisPoint, Concurrency, GiB, MeasureParseFailure, TokenCount
from vllm_evidence._output.assessment import assessment_document
from vllm_evidence._output.report import render_report
from vllm_evidence._readback import historical_bundle
from vllm_evidence.testing._strategies import (
    metrics_bodies,
    models_bodies,
    server_info_jsons,
    server_info_texts,
    startup_logs,
    version_bodies,
)
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

TOTAL = int(os.environ.get("VLLM_EVIDENCE_FUZZ_EXAMPLES", "600"))
#: Percent of :data:`TOTAL` per test: the cheap inputs get more examples.
WEIGHTS = {
    "measures": 25,
    "world_size": 15,
    "server_info_text": 10,
    "server_info_json": 10,
    "version": 8,
    "models": 8,
    "metrics": 8,
    "log": 8,
    "pipeline": 8,
}


def fuzz(name: str) -> settings:
    return settings(
        max_examples=max(1, TOTAL * WEIGHTS[name] // 100),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


pytestmark = pytest.mark.slow

TOKENS = [
    b"[" * 5_000,
    b"{" * 3_000,
    b"9" * 5_000,
    b"1e999999999",
    b"1e-999999999",
    b"30000000000",
    b"1000000000",
    b"65537",
    b"-1",
    b"-0",
    b"NaN",
    b"Infinity",
    b"\x00",
    b"\x1b[2J",
    "\u202e".encode(),
    b"\xff\xfe",
    b"\xc3\x28",
    b'"',
    b"\\",
    b"\n",
    b"\r\n",
    b",",
    b"}",
    b"]",
    b'engine="1"',
    b'engine="99999999999999999999"',
    b'kv_cache_size_tokens="4096"',
    b"vllm:cache_config_info{",
    b"vllm:cache_config_info " * 50,
    b"process_start_time_seconds 1e999999999\n",
    b'"data_parallel_size": 1000000000',
    b'"tensor_parallel_size": 30000000',
    b'"world_size": ' + b"9" * 5_000,
    b'"id": "evil\\u001b[31m"',
    b'"parent": "x"',
    b"Bearer sk-secret",
    b"(EngineCore_DP99999999 pid=1) ",
    b"data_parallel_size=1000000000",
]

KEYS = [
    "version",
    "data",
    "id",
    "root",
    "parent",
    "max_model_len",
    "object",
    "vllm_config",
    "parallel_config",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "world_size",
    "distributed_executor_backend",
    "model",
    "served_model_name",
]

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), inner, max_size=8)
    ),
    max_leaves=40,
)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        position = draw(st.integers(min_value=0, max_value=len(data)))
        match draw(st.integers(min_value=0, max_value=4)):
            case 0 if data:
                data[min(position, len(data) - 1)] ^= draw(st.integers(1, 255))
            case 1:
                end = draw(st.integers(min_value=position, max_value=len(data)))
                del data[position:end]
            case 2:
                data[position:position] = draw(st.sampled_from(TOKENS))
            case 3:
                end = draw(st.integers(min_value=position, max_value=len(data)))
                data[position:position] = data[position:end]
            case _:
                data[position:position] = draw(st.binary(max_size=16))
    return bytes(data)


def hostile(base: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        base,
        mutated(base),
        mutated(base),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=512),
        st.lists(st.sampled_from(TOKENS), max_size=8).map(b"".join),
    )


world_sizes = st.one_of(
    st.integers(min_value=0, max_value=2**70).map(lambda n: str(n).encode()),
    st.sampled_from(TOKENS),
)

ADAPTERS: dict[str, tuple[Callable[[bytes], object], st.SearchStrategy[bytes]]] = {
    "version": (parse_version, hostile(version_bodies())),
    "models": (parse_models, hostile(models_bodies())),
    "metrics": (parse_metrics, hostile(metrics_bodies())),
    "server_info_text": (parse_server_info_text, hostile(server_info_texts())),
    "server_info_json": (parse_server_info_json, hostile(server_info_jsons())),
    "world_size": (parse_world_size, hostile(world_sizes)),
}


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_adapter_answers_typed(name: str) -> None:
    adapter, bodies = ADAPTERS[name]

    @fuzz(name)
    @given(bodies)
    def check(body: bytes) -> None:
        result = adapter(body)
        if isinstance(result, BodyParseFailure):
            assert "\n" not in result.reason
        repr(result)

    check()


@fuzz("log")
@given(hostile(startup_logs()))
def test_the_log_reader_answers_typed(text: bytes) -> None:
    log = read_startup_log(io.BytesIO(text))
    assert isinstance(log, StartupLog | LogReadFailure)
    if isinstance(log, StartupLog):
        repr(log)


@fuzz("measures")
@given(
    st.sampled_from([BasisPoint, Concurrency, GiB, TokenCount]),
    st.one_of(st.text(max_size=60), st.sampled_from([t.decode("latin-1") for t in TOKENS])),
)
def test_every_measure_answers_typed(measure: Any, text: str) -> None:
    result = measure.parse(text)
    assert isinstance(result, measure | MeasureParseFailure)


ROUTE_BODIES: dict[Route, st.SearchStrategy[bytes]] = {
    Route.VERSION: hostile(version_bodies()),
    Route.MODELS: hostile(models_bodies()),
    Route.METRICS: hostile(metrics_bodies()),
    Route.SERVER_INFO: hostile(server_info_texts()),
    Route.SERVER_INFO_JSON: hostile(server_info_jsons()),
    Route.GET_WORLD_SIZE: hostile(world_sizes),
}


@st.composite
def bundles(draw: st.DrawFn) -> tuple[dict[Route, bytes], dict[Route, int]]:
    routes = draw(st.sets(st.sampled_from(list(ROUTE_BODIES))))
    bodies = {route: draw(ROUTE_BODIES[route]) for route in routes}
    statuses = {
        route: draw(st.sampled_from([200, 200, 200, 302, 401, 404, 500, 503]))
        for route in draw(st.sets(st.sampled_from(list(PROBE_ROUTES))))
        if route in bodies or route is Route.HEALTH
    }
    return bodies, statuses


@fuzz("pipeline")
@given(bundles(), st.none() | hostile(startup_logs()))
def test_the_whole_pipeline_never_raises(
    bundle: tuple[dict[Route, bytes], dict[Route, int]], log_text: bytes | None
) -> None:
    bodies, statuses = bundle
    front_door = historical_bundle(bodies, statuses=statuses)
    log = None if log_text is None else read_startup_log(io.BytesIO(log_text))
    assessment = assess(front_door, log if isinstance(log, StartupLog) else None)
    report = render_report(assessment)
    assert not [c for c in report if ord(c) < 0x20 and c != "\n"]
    json.dumps(assessment_document(assessment))
    repr(assessment)
    assert not [c for c in str(assessment) if ord(c) < 0x20]  # one line, nothing raw
