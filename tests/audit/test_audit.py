"""The upstream audit's comparisons, both directions, without vLLM installed; and each
finding in full (verdict, expected, found, note and the law it checked), every field a
person reads in the audit's table written out by hand for one case of each check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from tests._evidence import release_laws as _laws
from tests._paths import REAL
from vllm_evidence._audit import (
    EXECUTOR_BACKENDS_KEY,
    Finding,
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
from vllm_evidence._audit.installed import app_routes
from vllm_evidence.upstream import (
    CacheConfigLabelsLaw,
    CapacityFormat,
    CapacityLaw,
    CapacityLogFormatLaw,
    CapacitySource,
    Route,
    RouteLaw,
    laws_for,
)
from vllm_evidence.upstream._releases import _read

# --- cache_config_info labels ------------------------------------------------------


def _labels_law(version: str = "0.32.0") -> CacheConfigLabelsLaw:
    law = _laws(version).cache_config_labels()
    assert isinstance(law, CacheConfigLabelsLaw)
    return law


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


def _fields(f: Finding) -> tuple[str, Verdict, str, str, str]:
    return (f.key, f.verdict, f.expected, f.found, f.note)


def test_labels_only_missing_or_only_unexpected_differ() -> None:
    law = _labels_law()
    only_missing = check_cache_config_labels(law, law.labels - {"kv_cache_layout"})
    assert _fields(only_missing) == (
        "metrics.cache_config_info.labels",
        Verdict.DIFFERS,
        "37 labels",
        "36; missing kv_cache_layout; unexpected none",
        "metrics_info() keys of a default CacheConfig, plus engine",
    )
    assert only_missing.law is law
    only_unexpected = check_cache_config_labels(law, law.labels | {"new_label"})
    assert only_unexpected.verdict is Verdict.DIFFERS
    assert only_unexpected.found == "38; missing none; unexpected new_label"


def test_a_not_checkable_finding_has_no_expected_or_found() -> None:
    law = _labels_law()
    finding = check_cache_config_labels(law, Unavailable("no CacheConfig"))
    assert _fields(finding) == (
        "metrics.cache_config_info.labels",
        Verdict.NOT_CHECKABLE,
        "",
        "",
        "no CacheConfig",
    )
    assert finding.law is law


# --- capacity label fields ------------------------------------------------------------


def _label_capacity_law(version: str) -> CapacityLaw:
    law = _laws(version).capacity(CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS)
    assert isinstance(law, CapacityLaw)
    return law


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


def test_capacity_label_fields_in_full() -> None:
    law = _label_capacity_law("0.32.0")
    finding = check_capacity_label(law, _labels_law().labels - {"kv_cache_max_concurrency"})
    assert _fields(finding) == (
        "capacity.label_kv_cache_size_tokens",
        Verdict.DIFFERS,
        "CacheConfig fields kv_cache_max_concurrency, kv_cache_size_tokens",
        "CacheConfig fields kv_cache_size_tokens",
        "whether the figure is group-aware is not visible in the fields",
    )
    assert finding.law is law
    blocks = _laws("0.32.0").capacity(CapacitySource.LABEL_BLOCKS_TIMES_BLOCK_SIZE)
    assert isinstance(blocks, CapacityLaw)
    assert check_capacity_label(blocks, frozenset()).note == (
        "what this source means is run-time behaviour"
    )
    absent = check_capacity_label(_label_capacity_law("0.20.0"), frozenset())
    assert (absent.verdict, absent.expected, absent.found) == (
        Verdict.HELD,
        "CacheConfig fields none",
        "CacheConfig fields none",
    )


# --- capacity log format ----------------------------------------------------------------


def _format_law(version: str) -> CapacityLogFormatLaw:
    law = _laws(version).capacity_log_format()
    assert isinstance(law, CapacityLogFormatLaw)
    return law


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
    assert capacity_formats_in_source(ONE_LINE_SOURCE) == {CapacityFormat.V1_ONE_LINE}
    assert capacity_formats_in_source(TWO_LINE_SOURCE) == {CapacityFormat.V1_TWO_LINE}
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


def test_capacity_log_format_in_full() -> None:
    law = _format_law("0.32.0")
    finding = check_capacity_log_format(law, TWO_LINE_SOURCE)
    assert _fields(finding) == (
        "capacity.log_format",
        Verdict.DIFFERS,
        "one_line",
        "two_line",
        "format strings in vllm/v1/core/kv_cache_utils.py",
    )
    assert finding.law is law
    assert check_capacity_log_format(law, "x = 1").found == "none"


def test_the_two_line_format_needs_both_of_its_lines() -> None:
    size_only = 'logger.info("GPU KV cache size: %s tokens", n)\n'
    concurrency_only = 'logger.info("Maximum concurrency for %s tokens per request: %.2fx", a)\n'
    assert capacity_formats_in_source(size_only) == frozenset()
    assert capacity_formats_in_source(concurrency_only) == frozenset()
    assert capacity_formats_in_source(size_only + concurrency_only) == {CapacityFormat.V1_TWO_LINE}


# --- routes ---------------------------------------------------------------------------


DEV_LOG = REAL / "startup.log"


def _route_law(version: str, route: Route) -> RouteLaw:
    law = _laws(version).route(route)
    assert isinstance(law, RouteLaw)
    return law


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


@dataclass
class _Route:  # starlette's Route / FastAPI's APIRoute: a path and its methods
    path: str
    methods: set[str] | None = None


@dataclass
class _Router:  # an APIRouter
    routes: list[object] = field(default_factory=list)


@dataclass
class _Include:  # FastAPI's _RouterIncludeContext (0.16x)
    prefix: str = ""


@dataclass
class _Included:  # FastAPI's _IncludedRouter (0.16x): one entry per include_router call
    original_router: _Router
    include_context: _Include


def test_an_apps_routes_are_read_whether_or_not_fastapi_flattens_included_routers() -> None:
    """FastAPI 0.136 copies an included router's routes into the app; 0.165 (installed
    beside vLLM 0.23.0) keeps one entry per include_router, so a flat read of
    ``app.routes`` saw no /version at all and the audit called every route law wrong."""
    flat = [_Route("/version", {"GET"}), _Route("/metrics", None), _Route("/health", {"GET"})]
    assert app_routes(flat) == frozenset({("/version", "GET"), ("/health", "GET")})
    nested = _Router([_Route("/server_info", {"GET"}), _Route("/collective_rpc", {"POST"})])
    dev = _Included(_Router([_Included(nested, _Include("/dev"))]), _Include())
    lazy = [_Included(_Router([_Route("/version", {"GET", "HEAD"})]), _Include()), dev]
    assert app_routes(lazy) == frozenset(
        {
            ("/version", "GET"),
            ("/version", "HEAD"),
            ("/dev/server_info", "GET"),
            ("/dev/collective_rpc", "POST"),
        }
    )


def test_a_route_of_an_unknown_kind_makes_the_table_unreadable_not_shorter() -> None:
    got = app_routes([_Route("/version", {"GET"}), object()])
    assert isinstance(got, Unavailable)
    assert "kind object has no path" in got.why


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


PLAIN_LOG = (
    Path(__file__).resolve().parents[1] / "fixtures/real/vllm-0.32.0-cpu/tp2-apikey/startup.log"
)


JSON_NOTE_TAIL = "a route table cannot show whether the query is honoured"


GUARD_NOTE = "the --api-key guard is not checked (not probed)"


def test_a_route_finding_in_full() -> None:
    dev, plain = _table(ALWAYS | DEV_ONLY), _table(ALWAYS)
    info = check_route(_route_law("0.32.0", Route.SERVER_INFO), dev, plain)
    assert _fields(info) == (
        "route./server_info",
        Verdict.HELD,
        "dev registered; plain not registered",
        "dev registered; plain not registered",
        f"GET /server_info; dev: test; plain: test; {GUARD_NOTE}",
    )
    json_info = check_route(_route_law("0.32.0", Route.SERVER_INFO_JSON), dev, plain)
    assert json_info.note == (
        f"GET /server_info; dev: test; plain: test; {JSON_NOTE_TAIL}; {GUARD_NOTE}"
    )


def test_a_route_with_only_the_plain_table() -> None:
    law = _route_law("0.32.0", Route.SERVER_INFO)
    finding = check_route(law, Unavailable("no dev log"), _table(ALWAYS))
    assert _fields(finding) == (
        "route./server_info",
        Verdict.NOT_CHECKABLE,
        "",
        "",
        "plain not registered as expected, but no route table for dev: no dev log",
    )
    both_gone = check_route(law, Unavailable("no dev log"), Unavailable("no plain log"))
    assert both_gone.note == "dev: no dev log; plain: no plain log"


def test_a_route_under_two_other_methods() -> None:
    law = _route_law("0.32.0", Route.COLLECTIVE_RPC)
    dev = _table(ALWAYS | {("/collective_rpc", "GET"), ("/collective_rpc", "PUT")})
    finding = check_route(law, dev, _table(ALWAYS))
    assert finding.found == "dev registered for GET, PUT only; plain not registered"


def test_a_log_of_the_wrong_mode_names_its_mode() -> None:
    assert route_table_from_log(DEV_LOG, development_mode=False) == (
        f"{DEV_LOG}: its launch ran with development mode on"
    )
    assert route_table_from_log(PLAIN_LOG, development_mode=True) == (
        f"{PLAIN_LOG}: its launch shows no development mode (no /server_info route, no warning)"
    )
    table = route_table_from_log(PLAIN_LOG, development_mode=False)
    assert isinstance(table, RouteTable)
    assert table.origin == "the route table of startup.log"


GUARDED = ("/v1", "/v2", "/inference", "/cohere")  # vLLM 0.32's GUARDED_PREFIX


def test_the_api_key_guard_is_checked_against_the_guarded_prefixes() -> None:
    dev, plain = _table(ALWAYS | DEV_ONLY), _table(ALWAYS)
    models = check_route(_route_law("0.32.0", Route.MODELS), dev, plain, GUARDED)
    assert _fields(models) == (
        "route./v1/models",
        Verdict.HELD,
        "dev registered; plain registered; --api-key guarded",
        "dev registered; plain registered; --api-key guarded",
        "GET /v1/models; dev: test; plain: test; guarded prefixes /cohere, /inference, /v1, /v2",
    )
    version = check_route(_route_law("0.32.0", Route.VERSION), dev, plain, GUARDED)
    assert (version.verdict, version.found) == (
        Verdict.HELD,
        "dev registered; plain registered; --api-key open",
    )
    everything = check_route(_route_law("0.32.0", Route.VERSION), dev, plain, ("/",))
    assert (everything.verdict, everything.expected, everything.found) == (
        Verdict.DIFFERS,
        "dev registered; plain registered; --api-key open",
        "dev registered; plain registered; --api-key guarded",
    )
    nothing = check_route(_route_law("0.32.0", Route.MODELS), dev, plain, ())
    assert (nothing.verdict, nothing.found) == (
        Verdict.DIFFERS,
        "dev registered; plain registered; --api-key open",
    )


def test_a_route_that_is_not_registered_has_no_guard_to_check() -> None:
    law = _route_law("0.13.0", Route.GET_WORLD_SIZE)
    finding = check_route(law, _table(ALWAYS), _table(ALWAYS), ("/",))
    assert (finding.verdict, finding.found) == (
        Verdict.HELD,
        "dev not registered; plain not registered",
    )


def test_a_guard_alone_is_not_enough_to_hold_a_route_law() -> None:
    law = _route_law("0.32.0", Route.MODELS)
    finding = check_route(law, Unavailable("no dev log"), Unavailable("no plain log"), GUARDED)
    assert _fields(finding) == (
        "route./v1/models",
        Verdict.NOT_CHECKABLE,
        "",
        "",
        (
            "--api-key guarded as expected, but no route table for dev: no dev log; "
            "plain: no plain log"
        ),
    )


# --- executor backends ----------------------------------------------------------------


def test_executor_backends_held_and_differs() -> None:
    held = check_executor_backends(("ray", "mp", "uni", "external_launcher"))
    assert held.verdict is Verdict.HELD
    differs = check_executor_backends(("ray", "mp", "uni"))
    assert differs.verdict is Verdict.DIFFERS
    assert differs.found == "mp, ray, uni"
    assert check_executor_backends(Unavailable("x")).verdict is Verdict.NOT_CHECKABLE


def test_executor_backends_in_full() -> None:
    finding = check_executor_backends(())
    assert _fields(finding) == (
        EXECUTOR_BACKENDS_KEY,
        Verdict.DIFFERS,
        "external_launcher, mp, ray, uni",
        "none",
        "DistributedExecutorBackend in vllm.config.parallel",
    )
    assert finding.law is None
    gone = check_executor_backends(Unavailable("no Literal"))
    assert _fields(gone) == (EXECUTOR_BACKENDS_KEY, Verdict.NOT_CHECKABLE, "", "", "no Literal")


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


def test_an_unread_release_leaves_every_field_empty() -> None:
    findings = audit(laws_for(Version("99.0")), _installed(version="99.0"))
    first = findings[0]
    assert (first.verdict, first.expected, first.found, first.law) == (
        Verdict.NOT_CHECKABLE,
        "",
        "",
        None,
    )


def test_a_read_release_keeps_its_commit() -> None:
    read = _read("0.11.0", "f71952c1c")
    assert (str(read.version), read.commit) == ("0.11.0", "f71952c1c")


def test_the_whole_audit_reads_the_guard_from_the_install() -> None:
    findings = audit(laws_for(Version("0.32.0")), _installed(guarded_prefixes=GUARDED))
    models = next(f for f in findings if f.key == "route./v1/models")
    assert models.found.endswith("; --api-key guarded")
    open_door = audit(laws_for(Version("0.32.0")), _installed(guarded_prefixes=("/",)))
    differs = sorted(f.key for f in open_door if f.verdict is Verdict.DIFFERS)
    assert differs == [
        "route./collective_rpc",
        "route./get_world_size",
        "route./health",
        "route./metrics",
        "route./server_info",
        "route./server_info?config_format=json",
        "route./version",
    ]


def test_dev_routes_registered_at_import_are_told_from_ones_registered_in_build_app() -> None:
    """0.13 and older test VLLM_SERVER_DEV_MODE at the top level of api_server.py (routes
    fixed when the module is imported); 0.14 on test it inside the registration."""
    from vllm_evidence._audit.installed import _IMPORT_TIME_DEV_ROUTES

    old = 'app = FastAPI()\n\nif envs.VLLM_SERVER_DEV_MODE:\n    @router.get("/server_info")\n'
    new = "def build_app(args):\n    if envs.VLLM_SERVER_DEV_MODE:\n        attach(app)\n"
    assert _IMPORT_TIME_DEV_ROUTES.search(old)
    assert not _IMPORT_TIME_DEV_ROUTES.search(new)
