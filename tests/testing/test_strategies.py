"""The test kit's strategies: bodies and logs parse to the drawn figures, captures describe
one launch, and ``st.from_type`` works for the public types.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version
from prometheus_client.parser import text_string_to_metric_families

from tests.adapters.test_metrics import assert_same
from vllm_evidence import Assessment, StartupLog, read_startup_log
from vllm_evidence._adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence._adapters.models import ServedModels, parse_models
from vllm_evidence._adapters.server_info import (
    ServerInfo,
    parse_server_info_json,
    parse_server_info_text,
)
from vllm_evidence._capture.batch import CaptureBatch
from vllm_evidence._readback import CapturedReadback, HistoricalBundle
from vllm_evidence.testing import (
    CACHE_CONFIG_LABELS,
    RELEASES,
    CaptureDirectory,
    GeneratedLog,
    capture_directories,
    metrics_bodies,
    models_bodies,
    server_info_jsons,
    server_info_texts,
    startup_log_examples,
)
from vllm_evidence.upstream._routes import Route

FAST = settings(max_examples=25, deadline=None)


@st.composite
def _release_and_metrics(draw: st.DrawFn) -> tuple[str, bytes]:
    release = draw(st.sampled_from(RELEASES))
    return release, draw(metrics_bodies(release=release, max_engines=3))


@given(_release_and_metrics())
def test_metrics_bodies_parse_and_carry_the_release_label_set(case: tuple[str, bytes]) -> None:
    release, body = case
    text = body.decode()
    assert_same(text)  # the scanner agrees with prometheus_client
    observation = parse_metrics(body)
    assert isinstance(observation, MetricsObservation)
    series = observation.cache_config_info
    assert series
    for one in series:
        assert sorted(dict(one.label_pairs)) == sorted(CACHE_CONFIG_LABELS[release])
    has_capacity = "kv_cache_size_tokens" in CACHE_CONFIG_LABELS[release]
    assert has_capacity == (release in ("0.27.0", "0.32.0", "0.33.0"))
    families = {f.name for f in text_string_to_metric_families(text)}
    assert "vllm:time_to_first_token_seconds" in families  # a histogram, parsed as one
    if "engine" not in CACHE_CONFIG_LABELS[release]:
        assert len(series) == 1
        assert series[0].engine is None


@given(metrics_bodies(release="0.33.0", min_engines=3, max_engines=3, process_start_time=False))
def test_several_dp_engines_each_get_a_series_and_no_marker(body: bytes) -> None:
    observation = parse_metrics(body)
    assert isinstance(observation, MetricsObservation)
    engines = [s.engine for s in observation.cache_config_info]
    assert len(engines) == 3
    assert len(set(engines)) == 3
    assert observation.process_start_time is None
    blocks = {s.label("num_gpu_blocks") for s in observation.cache_config_info}
    assert len(blocks) == 1  # the handshake sum, repeated on every engine's series


def test_metrics_label_values_exercise_escapes() -> None:
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None)
    @given(metrics_bodies())
    def collect(body: bytes) -> None:
        seen.update(e for e in ("\\\\", '\\"', "\\n") if e in body.decode())

    collect()
    assert seen == {"\\\\", '\\"', "\\n"}


@given(models_bodies(min_adapters=1))
def test_models_bodies_parse_with_aliases_and_adapters(body: bytes) -> None:
    models = parse_models(body)
    assert isinstance(models, ServedModels)
    data = json.loads(body)["data"]
    assert [c.served_id for c in models.cards] == [c["id"] for c in data]
    bases = [c for c in models.cards if c.parent is None]
    adapters = [c for c in models.cards if c.parent is not None]
    assert bases
    assert adapters
    assert len({c.root for c in bases}) == 1  # aliases of one configured model
    assert all(a.parent == bases[0].served_id and a.max_model_len is None for a in adapters)


@given(server_info_texts())
def test_server_info_texts_parse(body: bytes) -> None:
    info = parse_server_info_text(body)
    assert isinstance(info, ServerInfo)
    config = json.loads(body)["vllm_config"]
    tp = re.search(r"tensor_parallel_size=(\d+)", config)
    assert tp is not None
    assert info.parallel.tensor_parallel_size == int(tp[1])
    assert (info.parallel.data_parallel_size is None) == ("data_parallel_size=" not in config)


@given(server_info_jsons())
def test_server_info_jsons_parse(body: bytes) -> None:
    info = parse_server_info_json(body)
    assert isinstance(info, ServerInfo)
    parallel = json.loads(body)["vllm_config"]["parallel_config"]
    assert info.parallel.tensor_parallel_size == parallel["tensor_parallel_size"]
    assert info.parallel.distributed_executor_backend == parallel["distributed_executor_backend"]
    assert info.instance_id is not None


@given(startup_log_examples())
def test_startup_logs_read_with_the_generated_figures(example: GeneratedLog) -> None:
    log = read_startup_log(io.BytesIO(example.text))
    assert isinstance(log, StartupLog)
    assert len(log.launches) == len(example.launches)
    for gen, launch in zip(example.launches, log.launches, strict=True):
        assert launch.version is not None
        assert launch.version.text == gen.release
        config = launch.engine_config
        assert config is not None
        assert config.tensor_parallel_size == gen.tensor_parallel_size
        assert config.pipeline_parallel_size == gen.pipeline_parallel_size
        assert config.data_parallel_size == gen.data_parallel_size
        assert launch.served_model_names == (gen.served_model_name,)
        got = [
            (
                c.format.value,
                c.device,
                c.tokens.value if c.tokens else None,
                c.max_model_len.value if c.max_model_len else None,
                str(c.max_concurrency.value) if c.max_concurrency else None,
            )
            for c in launch.capacity
        ]
        want = [
            (c.format, c.device, c.tokens, c.max_model_len, c.concurrency) for c in gen.capacity
        ]
        assert got == want
        assert [m.text for m in launch.available_memory] == list(gen.available_memory)
        assert [(r.rank, r.world_size) for r in launch.ranks] == list(gen.ranks)
        if gen.api_server_pid is not None:
            assert launch.api_server_pids == (gen.api_server_pid,)
        assert launch.development_mode is gen.development_mode
        if gen.development_mode is not None:
            assert ("/v1/models", ("GET",)) in [(r.path, r.methods) for r in launch.routes]


@FAST
@given(capture_directories(development_mode=True))
def test_a_drawn_capture_describes_one_launch(capture: CaptureDirectory) -> None:
    """Every body of one capture names the same model, served names and parallel sizes."""
    version = json.loads(capture.bodies[Route.VERSION])["version"].split("+")[0]
    models = parse_models(capture.bodies[Route.MODELS])
    assert isinstance(models, ServedModels)
    base = [card for card in models.cards if card.parent is None]
    roots = {card.root for card in base}
    lengths = {card.max_model_len for card in base}
    parsed = []
    if capture.statuses.get(Route.SERVER_INFO, 200) == 200 and Route.SERVER_INFO in capture.bodies:
        parsed.append(parse_server_info_text(capture.bodies[Route.SERVER_INFO]))
    if capture.statuses.get(Route.SERVER_INFO_JSON, 200) == 200:
        parsed.append(parse_server_info_json(capture.bodies[Route.SERVER_INFO_JSON]))
    infos: list[ServerInfo] = []
    for info in parsed:
        assert isinstance(info, ServerInfo), info
        assert roots == {info.model}
        assert info.served_model_name == base[0].served_id
        infos.append(info)
    if len(infos) == 2:
        text, js = (info.parallel for info in infos)
        assert (text.tensor_parallel_size, text.pipeline_parallel_size) == (
            js.tensor_parallel_size,
            js.pipeline_parallel_size,
        )
        assert text.data_parallel_size == js.data_parallel_size
    assert len(lengths) == 1
    if capture.statuses.get(Route.GET_WORLD_SIZE, 200) == 200:
        assert infos, "a world size without /server_info"
        p = infos[-1].parallel
        dp = p.data_parallel_size or 1
        product = json.loads(capture.bodies[Route.GET_WORLD_SIZE])["world_size"]
        assert product == (p.tensor_parallel_size or 1) * (p.pipeline_parallel_size or 1) * dp
        assert Version(version) >= Version("0.20.0")
    metrics = parse_metrics(capture.bodies[Route.METRICS])
    assert isinstance(metrics, MetricsObservation)
    if infos and Version(version) >= Version("0.10.2"):
        assert len(metrics.cache_config_info) == infos[-1].parallel.data_parallel_size


@pytest.mark.parametrize(
    "kind", [Assessment, StartupLog, HistoricalBundle, MetricsObservation, ServedModels, ServerInfo]
)
def test_from_type_works_for_sealed_public_types(kind: type) -> None:
    drawn: list[object] = []

    @settings(max_examples=5, deadline=None)
    @given(st.from_type(kind))
    def draw(value: object) -> None:
        drawn.append(value)

    draw()
    assert drawn
    assert all(type(v) is kind for v in drawn)


def test_from_type_works_for_probed_types() -> None:
    drawn: list[object] = []

    @settings(max_examples=2, deadline=None)
    @given(st.from_type(CapturedReadback), st.from_type(CaptureBatch))
    def draw(readback: CapturedReadback, batch: CaptureBatch) -> None:
        drawn.extend([readback, batch])

    draw()
    assert drawn
    assert all(isinstance(v, CapturedReadback | CaptureBatch) for v in drawn)
