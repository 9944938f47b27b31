"""Each audit finding in full: verdict, expected, found, note and the law it checked.

``test_audit`` decides the verdicts; here every field a person reads in the audit's
table (and its JSON) is written out by hand for one case of each check.
"""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from tests._paths import REAL
from tests.test_audit import (
    ALWAYS,
    DEV_ONLY,
    TWO_LINE_SOURCE,
    _format_law,
    _installed,
    _label_capacity_law,
    _labels_law,
    _laws,
    _route_law,
    _table,
)
from vllm_evidence.audit import (
    EXECUTOR_BACKENDS_KEY,
    Finding,
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
    route_table_from_log,
)
from vllm_evidence.upstream import CapacityLaw, CapacityLogFormat, CapacitySource, Route, laws_for
from vllm_evidence.upstream.releases import _read

PLAIN_LOG = Path(__file__).parent / "fixtures/real/vllm-0.32.0-cpu/tp2-apikey/startup.log"
DEV_LOG = REAL / "startup.log"


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
    assert capacity_formats_in_source(size_only + concurrency_only) == {CapacityLogFormat.TWO_LINE}


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


def test_an_unread_release_leaves_every_field_empty() -> None:
    findings = audit(laws_for(Version("99.0")), _installed(version="99.0"))
    first = findings[0]
    assert (first.verdict, first.expected, first.found, first.law) == (
        Verdict.NOT_CHECKABLE,
        "",
        "",
        None,
    )


def test_a_log_of_the_wrong_mode_names_its_mode() -> None:
    assert route_table_from_log(DEV_LOG, development_mode=False) == (
        f"{DEV_LOG}: its launch ran with development mode on"
    )
    assert route_table_from_log(PLAIN_LOG, development_mode=True) == (
        f"{PLAIN_LOG}: its launch ran with development mode off"
    )
    table = route_table_from_log(PLAIN_LOG, development_mode=False)
    assert isinstance(table, RouteTable)
    assert table.origin == "the route table of startup.log"


def test_a_read_release_keeps_its_commit() -> None:
    read = _read("0.11.0", "f71952c1c")
    assert (str(read.version), read.commit) == ("0.11.0", "f71952c1c")


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
