"""The upstream audit's comparisons, both directions, without vLLM installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

from tests._paths import REAL
from vllm_evidence.audit import (
    EXECUTOR_BACKENDS_KEY,
    SCHEMA,
    Installed,
    RouteTable,
    Unavailable,
    Verdict,
    audit,
    capacity_formats_in_source,
    check_cache_config_labels,
    check_capacity_label,
    check_capacity_log_format,
    check_executor_backends,
    check_route,
    engine_label_added,
    exit_status,
    route_table_from_log,
)
from vllm_evidence.output.audit import audit_document
from vllm_evidence.upstream import (
    CacheConfigLabelsLaw,
    CapacityLaw,
    CapacityLogFormat,
    CapacityLogFormatLaw,
    CapacitySource,
    ReleaseLaws,
    Route,
    RouteLaw,
    laws_for,
)

DEV_LOG = REAL / "startup.log"


def _laws(text: str) -> ReleaseLaws:
    laws = laws_for(Version(text))
    assert isinstance(laws, ReleaseLaws)
    return laws


def _labels_law(version: str = "0.32.0") -> CacheConfigLabelsLaw:
    law = _laws(version).cache_config_labels()
    assert isinstance(law, CacheConfigLabelsLaw)
    return law


def _format_law(version: str) -> CapacityLogFormatLaw:
    law = _laws(version).capacity_log_format()
    assert isinstance(law, CapacityLogFormatLaw)
    return law


def _route_law(version: str, route: Route) -> RouteLaw:
    law = _laws(version).route(route)
    assert isinstance(law, RouteLaw)
    return law


def _label_capacity_law(version: str) -> CapacityLaw:
    law = _laws(version).capacity(CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS)
    assert isinstance(law, CapacityLaw)
    return law


# --- cache_config_info labels ------------------------------------------------------


def test_labels_held_when_the_sets_agree() -> None:
    law = _labels_law()
    finding = check_cache_config_labels(law, law.labels)
    assert finding.verdict is Verdict.HELD
    assert finding.found == "the same 37"


def test_labels_differ_naming_what_is_missing_and_unexpected() -> None:
    law = _labels_law()
    found = (law.labels - {"kv_cache_layout"}) | {"simple_cpu_offload_num_blocks"}
    finding = check_cache_config_labels(law, found)
    assert finding.verdict is Verdict.DIFFERS
    assert "missing kv_cache_layout" in finding.found
    assert "unexpected simple_cpu_offload_num_blocks" in finding.found
    assert exit_status([finding]) == 1


def test_labels_not_checkable_says_why() -> None:
    finding = check_cache_config_labels(_labels_law(), Unavailable("no CacheConfig"))
    assert finding.verdict is Verdict.NOT_CHECKABLE
    assert finding.detail == "no CacheConfig"


def test_engine_label_is_read_from_the_logger_source() -> None:
    assert engine_label_added('metrics_info["engine"] = str(engine_index)')
    assert engine_label_added("metrics_info['engine'] = ''")
    assert not engine_label_added("labelnames = ['model_name', 'engine']")


# --- capacity label fields ------------------------------------------------------------


def test_capacity_fields_held_and_differs_for_authoritative() -> None:
    law = _label_capacity_law("0.32.0")
    fields = _labels_law().labels
    assert check_capacity_label(law, fields).verdict is Verdict.HELD
    assert check_capacity_label(law, fields - {"kv_cache_size_tokens"}).verdict is Verdict.DIFFERS


def test_capacity_fields_held_and_differs_for_absent() -> None:
    law = _label_capacity_law("0.20.0")
    old = _labels_law("0.20.0").labels
    assert check_capacity_label(law, old).verdict is Verdict.HELD
    assert check_capacity_label(law, _labels_law().labels).verdict is Verdict.DIFFERS


def test_other_capacity_sources_are_not_checkable() -> None:
    law = _laws("0.32.0").capacity(CapacitySource.LABEL_BLOCKS_TIMES_BLOCK_SIZE)
    assert isinstance(law, CapacityLaw)
    assert check_capacity_label(law, frozenset()).verdict is Verdict.NOT_CHECKABLE


# --- capacity log format ----------------------------------------------------------------

ONE_LINE_SOURCE = """
def update_kv_cache_capacity(vllm_config, kv_cache_config):
    logger.info_once(
        "%s KV cache size: %s tokens, "
        "Maximum concurrency for %s tokens per request: %.2fx",
        pools, f"{num_tokens:,}", f"{max_model_len:,}", max_concurrency,
    )
"""
TWO_LINE_SOURCE = """
logger.info("GPU KV cache size: %s tokens", num_tokens_str)
logger.info("Maximum concurrency for %s tokens per request: %.2fx", a, b)
"""


def test_format_strings_found_across_adjacent_literals() -> None:
    assert capacity_formats_in_source(ONE_LINE_SOURCE) == {CapacityLogFormat.ONE_LINE}
    assert capacity_formats_in_source(TWO_LINE_SOURCE) == {CapacityLogFormat.TWO_LINE}
    assert capacity_formats_in_source("x = 1") == frozenset()
    assert capacity_formats_in_source("def (:") == frozenset()


def test_format_held_and_differs() -> None:
    one, two = _format_law("0.32.0"), _format_law("0.27.0")
    assert check_capacity_log_format(one, ONE_LINE_SOURCE).verdict is Verdict.HELD
    assert check_capacity_log_format(two, TWO_LINE_SOURCE).verdict is Verdict.HELD
    differs = check_capacity_log_format(one, TWO_LINE_SOURCE)
    assert differs.verdict is Verdict.DIFFERS
    assert (differs.expected, differs.found) == ("one_line", "two_line")
    both = check_capacity_log_format(one, ONE_LINE_SOURCE + TWO_LINE_SOURCE)
    assert both.verdict is Verdict.DIFFERS


# --- routes ---------------------------------------------------------------------------

ALWAYS = {("/version", "GET"), ("/v1/models", "GET"), ("/metrics", "GET"), ("/health", "GET")}
DEV_ONLY = {("/server_info", "GET"), ("/get_world_size", "GET"), ("/collective_rpc", "POST")}


def _table(routes: set[tuple[str, str]]) -> RouteTable:
    return RouteTable(frozenset(routes), "test")


def test_route_gates_held() -> None:
    dev, plain = _table(ALWAYS | DEV_ONLY), _table(ALWAYS)
    for route in Route:
        assert check_route(_route_law("0.32.0", route), dev, plain).verdict is Verdict.HELD


def test_a_dev_route_registered_without_dev_mode_differs() -> None:
    law = _route_law("0.32.0", Route.SERVER_INFO)
    finding = check_route(law, _table(ALWAYS | DEV_ONLY), _table(ALWAYS | DEV_ONLY))
    assert finding.verdict is Verdict.DIFFERS
    assert finding.found == "dev registered; plain registered"


def test_a_route_under_another_method_differs() -> None:
    law = _route_law("0.32.0", Route.COLLECTIVE_RPC)
    dev = _table(ALWAYS | {("/collective_rpc", "GET")})
    finding = check_route(law, dev, _table(ALWAYS))
    assert finding.verdict is Verdict.DIFFERS
    assert "registered for GET only" in finding.found


def test_not_registered_held_and_differs() -> None:
    law = _route_law("0.13.0", Route.GET_WORLD_SIZE)
    assert check_route(law, _table(ALWAYS), _table(ALWAYS)).verdict is Verdict.HELD
    dev = _table(ALWAYS | {("/get_world_size", "GET")})
    assert check_route(law, dev, _table(ALWAYS)).verdict is Verdict.DIFFERS


def test_routes_with_one_table_missing() -> None:
    law = _route_law("0.32.0", Route.SERVER_INFO)
    gone = Unavailable("no plain log")
    agreeing = check_route(law, _table(DEV_ONLY), gone)
    assert agreeing.verdict is Verdict.NOT_CHECKABLE
    assert "no plain log" in agreeing.detail
    assert check_route(law, _table(ALWAYS), gone).verdict is Verdict.DIFFERS
    assert check_route(law, gone, gone).verdict is Verdict.NOT_CHECKABLE


def test_the_real_dev_log_route_table() -> None:
    table = route_table_from_log(DEV_LOG, development_mode=True)
    assert isinstance(table, RouteTable)
    assert {("/server_info", "GET"), ("/collective_rpc", "POST")} <= table.routes
    assert ("/docs", "HEAD") in table.routes


def test_a_log_of_the_wrong_mode_or_no_log_is_refused(tmp_path: Path) -> None:
    wrong = route_table_from_log(DEV_LOG, development_mode=False)
    assert isinstance(wrong, str)
    assert "development mode on" in wrong
    empty = tmp_path / "empty.log"
    empty.write_text("nothing here\n")
    assert "no route table" in str(route_table_from_log(empty, development_mode=True))
    assert "no such file" in str(route_table_from_log(tmp_path / "nope", development_mode=True))


# --- executor backends ----------------------------------------------------------------


def test_executor_backends_held_and_differs() -> None:
    held = check_executor_backends(("ray", "mp", "uni", "external_launcher"))
    assert held.verdict is Verdict.HELD
    differs = check_executor_backends(("ray", "mp", "uni"))
    assert differs.verdict is Verdict.DIFFERS
    assert differs.found == "mp, ray, uni"
    assert check_executor_backends(Unavailable("x")).verdict is Verdict.NOT_CHECKABLE


# --- the whole audit ------------------------------------------------------------------


def _installed(**changes: object) -> Installed:
    law = _labels_law()
    base: dict[str, object] = {
        "version": "0.32.0",
        "cache_config_labels": law.labels,
        "capacity_source": ONE_LINE_SOURCE,
        "executor_backends": ("ray", "mp", "uni", "external_launcher"),
        "dev_routes": _table(ALWAYS | DEV_ONLY),
        "plain_routes": _table(ALWAYS),
    }
    base.update(changes)
    return Installed(**base)  # type: ignore[arg-type]  # test data, keys as Installed's


def test_audit_of_a_matching_0_32_0_holds_every_checkable_law() -> None:
    findings = audit(laws_for(Version("0.32.0")), _installed())
    assert exit_status(findings) == 0
    held = {f.key for f in findings if f.verdict is Verdict.HELD}
    assert {
        "metrics.cache_config_info.labels",
        "capacity.log_format",
        "capacity.label_kv_cache_size_tokens",
        "route./server_info",
        EXECUTOR_BACKENDS_KEY,
    } <= held
    assert all(f.verdict is not Verdict.DIFFERS for f in findings)
    not_checkable = {f.key: f.note for f in findings if f.verdict is Verdict.NOT_CHECKABLE}
    assert "run-time" in not_checkable["health.mp"]
    assert not_checkable["health.ray"].startswith("no law")


def test_audit_exit_1_when_a_law_differs() -> None:
    findings = audit(laws_for(Version("0.32.0")), _installed(capacity_source=TWO_LINE_SOURCE))
    assert exit_status(findings) == 1
    assert [f.key for f in findings if f.verdict is Verdict.DIFFERS] == ["capacity.log_format"]


def test_a_version_outside_the_table_is_not_checkable_and_exits_0() -> None:
    findings = audit(laws_for(Version("99.0")), _installed(version="99.0"))
    assert exit_status(findings) == 0
    laws = [f for f in findings if f.key != EXECUTOR_BACKENDS_KEY]
    assert all(f.verdict is Verdict.NOT_CHECKABLE for f in laws)
    assert "outside the releases" in laws[0].note


def test_json_document_shape() -> None:
    findings = audit(laws_for(Version("0.32.0")), _installed())
    doc = json.loads(json.dumps(audit_document("0.32.0", findings)))
    assert doc["schema"] == SCHEMA
    assert doc["vllm_version"] == "0.32.0"
    assert doc["exit_status"] == 0
    assert sum(doc["summary"].values()) == len(doc["findings"]) == len(findings)
    assert set(doc["summary"]) == {"held", "differs", "not_checkable"}
    first = doc["findings"][0]
    assert set(first) == {"question", "verdict", "expected", "found", "note", "law"}
    assert first["law"]["question"] == first["question"]
    backends = next(f for f in doc["findings"] if f["question"] == EXECUTOR_BACKENDS_KEY)
    assert backends["law"] is None


# --- the CLI without vLLM ---------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "audit-upstream", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_without_vllm_is_one_line_exit_2() -> None:
    out = _cli()
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "vllm is not importable here:" in lines[0]


def test_cli_bad_log_is_one_line_exit_2(tmp_path: Path) -> None:
    out = _cli("--plain-log", str(DEV_LOG))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "--plain-log" in out.stderr
    out = _cli("--dev-log", str(tmp_path / "missing.log"))
    assert out.returncode == 2
    assert "no such file" in out.stderr
