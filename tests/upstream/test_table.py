"""The law table, rebuilt inside the test and compared with a hand-written reading of it.

``LAW_TABLE`` is built once, when ``vllm_evidence.upstream`` is imported.  A test that
reads it sees the table as it was at import time, so a change to one of the builders in
``upstream.table`` made after import (a mutation, under ``scripts/mutation``) is never
seen by such a test.  These tests call the builders themselves, and check what they
return against expectations written out by hand below (one row per law: question key,
first and last release of its span, and the rule the law states), so that every span,
gate, authority, coverage, status and marker in the table is witnessed where it is made.
"""

from __future__ import annotations

import re

from packaging.version import Version

from vllm_evidence.upstream import (
    CacheConfigLabelsLaw,
    CapacityLaw,
    CapacityLogFormatLaw,
    ExecutorMarkerLaw,
    HealthFailureLaw,
    HealthLaw,
    IncarnationMarkerLaw,
    Law,
    ModelCardLaw,
    ParallelEvidenceLaw,
    Question,
    RouteLaw,
)
from vllm_evidence.upstream import _table as table_module

OLD = "0.6.6.post1"  # the oldest read release
NEW = "0.33.0"  # the newest read release

# (question key, first, last, the rule): written from the table's sources by hand.
EXPECTED: list[tuple[str, str, str, str]] = [
    ("route./version", OLD, NEW, "always, open"),
    ("route./v1/models", OLD, NEW, "always, guarded"),
    ("route./metrics", OLD, NEW, "always, open"),
    ("route./health", OLD, NEW, "always, open"),
    ("route./server_info", OLD, OLD, "not_registered, open"),
    ("route./server_info", "0.8.5", NEW, "development_mode, open"),
    ("route./server_info?config_format=json", OLD, OLD, "not_registered, open"),
    (
        "route./server_info?config_format=json",
        "0.8.5",
        "0.10.2",
        "development_mode_query_ignored, open",
    ),
    ("route./server_info?config_format=json", "0.11.0", NEW, "development_mode, open"),
    ("route./get_world_size", OLD, "0.15.1", "not_registered, open"),
    ("route./get_world_size", "0.16.0", "0.16.0", "development_mode, open"),
    ("route./get_world_size", "0.17.0", "0.22.1", "development_mode_and_generate_task, open"),
    ("route./get_world_size", "0.23.0", NEW, "development_mode, open"),
    ("route./collective_rpc", OLD, "0.10.1.1", "not_registered, open"),
    ("route./collective_rpc", "0.10.2", NEW, "development_mode, open"),
    ("parallel_evidence./server_info", "0.8.5", "0.10.1.1", "resolved_configuration, no dp"),
    ("parallel_evidence./server_info", "0.10.2", NEW, "resolved_configuration, dp"),
    (
        "parallel_evidence./server_info?config_format=json",
        "0.11.0",
        NEW,
        "resolved_configuration, dp",
    ),
    ("parallel_evidence./get_world_size", "0.16.0", NEW, "world_size_product, no dp"),
    ("parallel_evidence./collective_rpc", "0.10.2", NEW, "worker_fan_out, no dp"),
    ("identity.model_card", OLD, NEW, "model card"),
    ("capacity.log_capacity_line", "0.8.5", "0.11.0", "per_worker_before_reduction"),
    ("capacity.log_capacity_line", "0.11.1", "0.20.0", "not_group_aware"),
    ("capacity.log_capacity_line", "0.20.1", NEW, "authoritative"),
    ("capacity.log_v0_blocks", OLD, "0.10.2", "needs_block_size_from_same_launch"),
    ("capacity.label_kv_cache_size_tokens", OLD, "0.23.0", "absent"),
    ("capacity.label_kv_cache_size_tokens", "0.24.0", NEW, "authoritative"),
    ("capacity.label_blocks_times_block_size", OLD, OLD, "authoritative"),
    ("capacity.label_blocks_times_block_size", "0.8.5", NEW, "insufficient"),
    ("capacity.log_format", "0.8.5", "0.27.1", "v1_two_line"),
    ("capacity.log_format", "0.28.0", NEW, "v1_one_line"),
    ("metrics.cache_config_info.labels", OLD, OLD, "11 labels"),
    ("metrics.cache_config_info.labels", "0.8.5", "0.8.5", "14 labels"),
    ("metrics.cache_config_info.labels", "0.9.2", "0.9.2", "16 labels"),
    ("metrics.cache_config_info.labels", "0.10.2", "0.11.0", "21 labels"),
    ("metrics.cache_config_info.labels", "0.11.1", "0.14.1", "23 labels"),
    ("metrics.cache_config_info.labels", "0.15.0", "0.16.0", "24 labels"),
    ("metrics.cache_config_info.labels", "0.20.0", "0.23.0", "26 labels"),
    ("metrics.cache_config_info.labels", "0.26.0", "0.26.0", "29 labels"),
    ("metrics.cache_config_info.labels", "0.27.0", "0.27.1", "31 labels"),
    ("metrics.cache_config_info.labels", "0.28.0", "0.28.0", "30 labels"),
    ("metrics.cache_config_info.labels", "0.29.0", "0.29.0", "33 labels"),
    ("metrics.cache_config_info.labels", "0.31.0", "0.31.0", "36 labels"),
    ("metrics.cache_config_info.labels", "0.32.0", "0.32.0", "37 labels"),
    ("metrics.cache_config_info.labels", NEW, NEW, "38 labels"),
    ("health.mp", OLD, OLD, "worker_death_reaches"),
    ("health.mp", "0.8.5", "0.9.1", "api_server_only"),
    # One coverage, three waits before a worker's death reaches /health (4, 8, 9 s).
    ("health.mp", "0.9.2", "0.14.1", "worker_death_reaches"),
    ("health.mp", "0.15.0", "0.23.0", "worker_death_reaches"),
    ("health.mp", "0.24.0", NEW, "worker_death_reaches"),
    ("health.ray", OLD, OLD, "workers_not_watched"),
    ("health.ray", "0.8.5", "0.9.1", "api_server_only"),
    ("health.ray", "0.9.2", "0.20.2", "workers_not_watched"),
    ("health.ray", NEW, NEW, "worker_death_reaches"),
    ("health.uni", "0.8.5", "0.9.1", "api_server_only"),
    ("health.uni", "0.9.2", NEW, "engine_process"),
    ("health.failure_status", OLD, "0.10.2", "500"),
    ("health.failure_status", "0.11.0", NEW, "503"),
    ("incarnation.process_start_time_seconds", OLD, OLD, "absent_by_default"),
    (
        "incarnation.process_start_time_seconds",
        "0.8.5",
        "0.10.2",
        "present_unless_multiprocess_registry",
    ),
    (
        "incarnation.process_start_time_seconds",
        "0.11.0",
        "0.14.1",
        "present_unless_multiprocess_registry",
    ),
    ("incarnation.process_start_time_seconds", "0.15.0", NEW, "absent_by_default_with_dp"),
]

# The questions in table order; health.external_launcher is asked and has no law.
EXPECTED_KEYS = [
    "route./version",
    "route./v1/models",
    "route./metrics",
    "route./health",
    "route./server_info",
    "route./server_info?config_format=json",
    "route./get_world_size",
    "route./collective_rpc",
    "parallel_evidence./server_info",
    "parallel_evidence./server_info?config_format=json",
    "parallel_evidence./get_world_size",
    "parallel_evidence./collective_rpc",
    "identity.model_card",
    "capacity.log_capacity_line",
    "capacity.log_v0_blocks",
    "capacity.label_kv_cache_size_tokens",
    "capacity.label_blocks_times_block_size",
    "capacity.log_format",
    "metrics.cache_config_info.labels",
    "health.mp",
    "health.ray",
    "health.uni",
    "health.external_launcher",
    "health.failure_status",
    "incarnation.process_start_time_seconds",
]

# "vX: path …" or "first-hand vX: what a real server printed" (see upstream/_table.py).
CITATION = re.compile(r"(first-hand )?v0\.\d+\.\d+(\.post1|\.\d+)?: \S")


def _rule(law: Law) -> str:
    """The rule a law states, in the words of the EXPECTED rows."""
    match law:
        case RouteLaw():
            return f"{law.gate.value}, {'guarded' if law.api_key_guarded else 'open'}"
        case ParallelEvidenceLaw():
            dp = "dp" if law.reports_data_parallel_size else "no dp"
            return f"{law.kind.value}, {dp}"
        case ModelCardLaw():
            return "model card"
        case CapacityLaw():
            return law.authority.value
        case CapacityLogFormatLaw():
            return law.format.value
        case HealthLaw():
            return law.coverage.value
        case HealthFailureLaw():
            return str(law.failure_status)
        case IncarnationMarkerLaw():
            return law.marker.value
        case CacheConfigLabelsLaw():
            return f"{len(law.labels)} labels"
        case ExecutorMarkerLaw():
            return ", ".join(sorted(b.value for b in law.backends))


def _fresh_table() -> list[tuple[Question, tuple[Law, ...]]]:
    """The table as its builders make it now (not the copy made at import)."""
    return (
        table_module._routes()
        + table_module._parallel()
        + table_module._identity()
        + table_module._capacity()
        + table_module._cache_config_labels()
        + table_module._health()
        + table_module._marker()
    )


def test_the_builders_make_the_hand_written_table() -> None:
    fresh = _fresh_table()
    assert [q.key for q, _ in fresh] == EXPECTED_KEYS
    rows = [
        (q.key, str(law.span.first), str(law.span.last), _rule(law))
        for q, laws in fresh
        for law in laws
    ]
    expected = [(k, str(Version(a)), str(Version(b)), rule) for k, a, b, rule in EXPECTED]
    assert rows == expected


def test_each_law_answers_its_own_question_and_route() -> None:
    for q, laws in _fresh_table():
        for law in laws:
            assert law.question is q
            match law:
                case RouteLaw() | ParallelEvidenceLaw():
                    assert q.key.endswith(f".{law.route.target}")
                case CapacityLaw():
                    assert q.key == f"capacity.{law.source.value}"
                case HealthLaw():
                    assert q.key == f"health.{law.backend.value}"
                case _:
                    assert "." in q.key


def test_every_fresh_citation_has_the_table_format() -> None:
    cited = [s for _, laws in _fresh_table() for law in laws for s in law.sources]
    assert len(cited) > len(EXPECTED)
    for source in cited:
        assert CITATION.match(source), source
        assert not re.search(r"\bl\d", source), f"line numbers are written Lnn: {source}"


def test_every_fresh_statement_is_a_sentence_of_its_own() -> None:
    statements = [
        law.statement for _, laws in _fresh_table() for law in laws if not isinstance(law, RouteLaw)
    ]
    assert len(statements) == len(EXPECTED) - sum(k.startswith("route.") for k, *_ in EXPECTED)
    for statement in statements:
        assert statement.strip() == statement
        assert len(statement.split()) >= 5, statement


# --- the executor-marker laws (beside LAW_TABLE), read the same way ---------------------

# (question key, first, last, backends the marker is consistent with, record-prefix files):
# written from vllm-upstream.md §5 and the laws' citations, by hand.
EXECUTOR_EXPECTED: list[tuple[str, str, str, str, tuple[str, ...]]] = [
    (
        "executor.ray_executor_file",
        OLD,
        NEW,
        "ray",
        (
            "ray_distributed_executor.py",
            "ray_executor.py",
            "ray_executor_v2.py",
            "ray_gpu_executor.py",
        ),
    ),
    ("executor.ray_worker_tag", OLD, NEW, "ray", ()),
    (
        "executor.mp_executor_file",
        OLD,
        NEW,
        "mp",
        ("mp_distributed_executor.py", "multiproc_gpu_executor.py"),
    ),
    ("executor.mp_leader_line", OLD, NEW, "mp", ()),
    ("executor.multiproc_executor_file", OLD, "0.17.0", "mp", ("multiproc_executor.py",)),
    ("executor.multiproc_executor_file", "0.20.0", NEW, "mp, ray", ("multiproc_executor.py",)),
    ("executor.vllm_worker_tag", OLD, "0.17.0", "mp", ()),
    ("executor.vllm_worker_tag", "0.20.0", NEW, "mp, ray", ()),
    (
        "executor.uniproc_executor_file",
        OLD,
        NEW,
        "external_launcher, uni",
        ("uniproc_executor.py",),
    ),
    ("executor.single_gpu_executor_file", OLD, OLD, "uni", ("gpu_executor.py",)),
]


def test_the_executor_builder_makes_the_hand_written_table() -> None:
    rows = [
        (q.key, str(law.span.first), str(law.span.last), _rule(law), tuple(sorted(law.files)))
        for q, laws in table_module._executor()
        for law in laws
    ]
    expected = [
        (key, str(Version(a)), str(Version(b)), rule, files)
        for key, a, b, rule, files in EXECUTOR_EXPECTED
    ]
    assert rows == expected


def test_each_executor_law_answers_its_own_marker_with_cited_sentences() -> None:
    fresh = table_module._executor()
    assert len(fresh) == len({key for key, *_ in EXECUTOR_EXPECTED})
    for q, laws in fresh:
        for law in laws:
            assert law.question is q
            assert q.key == f"executor.{law.marker.value}"
            assert law.sources
            for source in law.sources:
                assert CITATION.match(source), source
            assert law.statement.strip() == law.statement
            assert len(law.statement.split()) >= 5, law.statement
