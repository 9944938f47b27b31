"""The law table: each law answers inside its span and nowhere else."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys

import pytest
from packaging.version import Version

from vllm_evidence.output.laws import law_json
from vllm_evidence.upstream import (
    LAW_TABLE,
    READ_RELEASES,
    CacheConfigLabelsLaw,
    CapacityAuthority,
    CapacityLaw,
    CapacitySource,
    ExecutorBackend,
    HealthCoverage,
    HealthFailureLaw,
    HealthLaw,
    Law,
    LawNotEstablished,
    ReleaseLaws,
    Route,
    RouteGate,
    RouteLaw,
    VersionNotEstablished,
    laws_for,
    parse_release,
)
from vllm_evidence.upstream.laws import CACHE_CONFIG_LABELS_KEY as _CACHE_KEY

READ = [r.version for r in READ_RELEASES]


def _laws(text: str) -> ReleaseLaws:
    laws = laws_for(Version(text))
    assert isinstance(laws, ReleaseLaws), text
    return laws


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


def _failure_status(version: str) -> int:
    law = _laws(version).health_failure()
    assert isinstance(law, HealthFailureLaw), law.statement
    return law.failure_status


def test_development_routes_by_release() -> None:
    assert _gate("0.32.0", Route.SERVER_INFO) == RouteGate.DEVELOPMENT_MODE
    assert _gate("0.6.6.post1", Route.SERVER_INFO) == RouteGate.NOT_REGISTERED
    assert isinstance(_laws("0.7.3").route(Route.SERVER_INFO), LawNotEstablished)
    assert _gate("0.13.0", Route.GET_WORLD_SIZE) == RouteGate.NOT_REGISTERED
    assert isinstance(_laws("0.15.0").route(Route.GET_WORLD_SIZE), LawNotEstablished)
    assert _gate("0.10.1.1", Route.SERVER_INFO_JSON) == RouteGate.DEVELOPMENT_MODE_QUERY_IGNORED


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
    assert isinstance(_laws("0.25.0").capacity(label), LawNotEstablished)
    assert isinstance(_laws("0.27.0.dev3").capacity(label), LawNotEstablished)
    assert _authority("0.27.0", line) == CapacityAuthority.AUTHORITATIVE
    assert _authority("0.15.1", line) == CapacityAuthority.NOT_GROUP_AWARE
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
    # no-op); 0.9.0 and 0.9.1 lie between 0.8.5 (check_health logs only) and 0.9.2:
    assert _coverage("0.10.1.1", ExecutorBackend.RAY) == HealthCoverage.WORKERS_NOT_WATCHED
    assert _coverage("0.10.1.1", ExecutorBackend.MP) == HealthCoverage.WORKER_DEATH_REACHES
    assert _coverage("0.9.2", ExecutorBackend.MP) == HealthCoverage.WORKER_DEATH_REACHES
    assert _coverage("0.9.2", ExecutorBackend.UNI) == HealthCoverage.ENGINE_PROCESS
    assert _coverage("0.9.2", ExecutorBackend.RAY) == HealthCoverage.WORKERS_NOT_WATCHED
    assert isinstance(_laws("0.9.1").health(ExecutorBackend.RAY), LawNotEstablished)
    assert isinstance(_laws("0.9.1").health(ExecutorBackend.MP), LawNotEstablished)
    assert isinstance(_laws("0.32.0").health(ExecutorBackend.RAY), LawNotEstablished)
    assert isinstance(_laws("0.32.0").health(ExecutorBackend.EXTERNAL_LAUNCHER), LawNotEstablished)
    assert _failure_status("0.32.0") == 503
    assert _failure_status("0.10.1.1") == 500
    assert _failure_status("0.9.2") == 500


def test_local_labels_are_builds_of_the_same_release() -> None:
    assert _gate("0.33.0+cpu", Route.SERVER_INFO) == RouteGate.DEVELOPMENT_MODE


@pytest.mark.parametrize("text", ["99.0", "0.33.1", "0.34.0.dev0", "0.6.5", "0.6.6"])
def test_versions_outside_every_read_release_get_nothing(text: str) -> None:
    result = laws_for(Version(text))
    assert isinstance(result, VersionNotEstablished)
    assert result.statement.startswith(f"vLLM {text} is outside")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.25.2.dev0+g752a3a504.d20260714", "0.25.2.dev0+g752a3a504.d20260714"),
        ("0.6.6.post1", "0.6.6.post1"),
        (" 0.32.0\n", "0.32.0"),
    ],
)
def test_parse_release_accepts_pep440(text: str, expected: str) -> None:
    assert Version(expected) == parse_release(text)


@pytest.mark.parametrize("text", ["banana", "", "0.32.0 beta", "v0..1"])
def test_parse_release_refuses_non_versions(text: str) -> None:
    assert parse_release(text) is None


# --- the CLI ----------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "laws", *args],
        capture_output=True,
        text=True,
        check=False,
        env={"NO_COLOR": "1", "PATH": ""},
    )


def test_cli_answers_differ_by_release() -> None:
    docs = {}
    for v in ("0.32.0", "0.7.3", "99.0"):
        out = _cli("--version", v, "--json")
        assert out.returncode == 0, out.stderr
        docs[v] = json.loads(out.stdout)
    assert docs["0.32.0"]["schema"] == "vllm-evidence.laws/1"
    assert docs["0.32.0"]["established"] is True
    assert docs["99.0"]["established"] is False
    assert docs["99.0"]["answers"] == []
    held_32 = sum(a["established"] for a in docs["0.32.0"]["answers"])
    held_73 = sum(a["established"] for a in docs["0.7.3"]["answers"])
    assert held_32 > held_73 > 0
    by_key = {a["question"]: a for a in docs["0.32.0"]["answers"]}
    assert by_key["route./server_info"]["gate"] == "development_mode"
    assert by_key["route./server_info"]["span"] == {"first": "0.8.5", "last": "0.33.0"}


def test_cli_text_for_a_release() -> None:
    out = _cli("--version", "0.7.3")
    assert out.returncode == 0
    assert "not established for 0.7.3" in out.stdout
    assert "route./version" in out.stdout


def test_cli_whole_table_json() -> None:
    out = _cli("--json")
    doc = json.loads(out.stdout)
    assert len(LAW_TABLE) == len(doc["questions"])
    assert doc["read_releases"][0]["version"] == "0.6.6.post1"


@pytest.mark.parametrize("bad", [["--version", "banana"], ["--bogus"], ["--version"]])
def test_cli_bad_input_is_one_line_exit_2(bad: list[str]) -> None:
    out = _cli(*bad)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr


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
    assert _cache_labels("0.33.0") - _cache_labels("0.32.0") == {"simple_cpu_offload_num_blocks"}
    assert _cache_labels("0.32.0") - _cache_labels("0.33.0") == set()


def test_cache_config_labels_are_not_borrowed_between_read_releases() -> None:
    for between in ("0.7.0", "0.10.0", "0.12.0", "0.25.0", "0.30.0"):
        assert isinstance(_laws(between).cache_config_labels(), LawNotEstablished), between


def test_adjacent_label_laws_differ() -> None:
    """One span per identical set: two neighbouring laws never carry the same labels."""
    (_, laws) = next((q, laws) for q, laws in LAW_TABLE if q.key == _CACHE_KEY)
    labels = [law.labels for law in laws if isinstance(law, CacheConfigLabelsLaw)]
    assert len(labels) == len(laws) == 9
    assert all(a != b for a, b in itertools.pairwise(labels))


def test_cache_config_labels_json() -> None:
    doc = law_json(_laws("0.32.0").cache_config_labels())
    assert doc["question"] == _CACHE_KEY
    assert doc["labels"] == sorted(_capture_labels())
    assert law_json(_laws("0.30.0").cache_config_labels())["established"] is False


# --- small contracts of the table's building blocks -------------------------------------


def test_answer_of_an_unknown_question_is_a_key_error() -> None:
    laws = laws_for(Version("0.32.0"))
    assert isinstance(laws, ReleaseLaws)
    assert laws.answer("route./version").question.key == "route./version"
    with pytest.raises(KeyError, match=r"no\.such\.question"):
        laws.answer("no.such.question")


def test_a_span_runs_only_between_read_releases_in_order() -> None:
    from vllm_evidence.upstream.releases import span

    ok = span("0.8.5", "0.11.0")
    assert (ok.first, ok.last) == (Version("0.8.5"), Version("0.11.0"))
    for first, last in (("0.8.4", "0.11.0"), ("0.8.5", "0.12.0"), ("0.11.0", "0.8.5")):
        with pytest.raises(ValueError, match=rf"got {first}\.\.{last}$"):
            span(first, last)


def test_development_routes_are_the_four_dev_mode_routes() -> None:
    dev = {route.value for route in Route if route.development_only}
    assert dev == {
        "server_info",
        "server_info__config_format_json",
        "get_world_size",
        "collective_rpc",
    }


def test_a_file_stem_names_a_route_or_nothing() -> None:
    assert Route.from_stem("v1_models") is Route.MODELS
    assert Route.from_stem("server_info__config_format_json") is Route.SERVER_INFO_JSON
    assert Route.from_stem("v1/models") is None
    assert Route.from_stem("") is None
