"""``law_json``, in process: the document ``vllm-evidence laws --json`` prints for each law.

The CLI tests read this document through a subprocess; these call it directly, one law of
each kind, with every key and value written out by hand.
"""

from __future__ import annotations

import re

from packaging.version import Version

from tests._evidence import release_laws as _laws
from tests._evidence import release_laws as _release_laws
from vllm_evidence._adapters.startup_log import ExecutorMarker
from vllm_evidence._output.laws import law_json
from vllm_evidence.upstream import (
    CapacitySource,
    ExecutorBackend,
    ExecutorMarkerLaw,
    Law,
    LawNotEstablished,
    Route,
    executor_marker_law,
)
from vllm_evidence.upstream._laws import CACHE_CONFIG_LABELS_KEY as _CACHE_KEY


def _common(law: Law | LawNotEstablished, key: str, first: str, last: str) -> dict[str, object]:
    assert not isinstance(law, LawNotEstablished)
    return {
        "question": key,
        "established": True,
        "statement": law.statement,
        "span": {"first": first, "last": last},
        "sources": list(law.sources),
    }


def test_a_route_law() -> None:
    law = _laws("0.32.0").route(Route.SERVER_INFO_JSON)
    doc = law_json(law)
    assert doc == {
        "question": "route./server_info?config_format=json",
        "established": True,
        "statement": "GET /server_info?config_format=json: development mode; "
        "not guarded by --api-key",
        "span": {"first": "0.11.0", "last": "0.33.0"},
        "sources": [
            "v0.11.0: entrypoints/openai/api_server.py L965-1055 (config_format)",
            "v0.14.0: entrypoints/serve/instrumentator/server_info.py L35-44",
            "v0.17.0: entrypoints/serve/instrumentator/server_info.py L43-52",
            "v0.20.0: entrypoints/serve/instrumentator/server_info.py L43-52",
            "v0.23.0: entrypoints/serve/dev/server_info/api_router.py L43-52",
            "v0.26.0: entrypoints/serve/dev/server_info/api_router.py L43-52",
            "v0.27.0: entrypoints/serve/dev/server_info/api_router.py L43-52",
            "v0.29.0: entrypoints/serve/dev/server_info/api_router.py L43-52",
            "v0.31.0: entrypoints/serve/dev/server_info/api_router.py L43-52",
            "v0.32.0: entrypoints/serve/dev/server_info/api_router.py L43-52",
            "v0.33.0: entrypoints/serve/dev/server_info/api_router.py L43-58",
        ],
        "route": "/server_info?config_format=json",
        "method": "GET",
        "gate": "development_mode",
        "api_key_guarded": False,
    }
    guarded = law_json(_laws("0.32.0").route(Route.MODELS))
    assert guarded["api_key_guarded"] is True
    assert guarded["statement"] == "GET /v1/models: always; guarded by --api-key"


def test_a_parallel_law() -> None:
    law = _laws("0.32.0").parallel_evidence(Route.SERVER_INFO)
    assert law_json(law) == _common(law, "parallel_evidence./server_info", "0.10.2", "0.33.0") | {
        "route": "/server_info",
        "kind": "resolved_configuration",
        "reports_data_parallel_size": True,
    }


def test_capacity_and_format_laws() -> None:
    laws = _laws("0.32.0")
    law = laws.capacity(CapacitySource.LOG_CAPACITY_LINE)
    assert law_json(law) == _common(law, "capacity.log_capacity_line", "0.20.1", "0.33.0") | {
        "source": "log_capacity_line",
        "authority": "authoritative",
    }
    fmt = laws.capacity_log_format()
    assert law_json(fmt) == _common(fmt, "capacity.log_format", "0.28.0", "0.33.0") | {
        "format": "one_line"
    }


def test_health_failure_marker_and_card_laws() -> None:
    laws = _laws("0.10.2")
    health = laws.health(ExecutorBackend.RAY)
    assert law_json(health) == _common(health, "health.ray", "0.9.2", "0.20.2") | {
        "backend": "ray",
        "coverage": "workers_not_watched",
        "worker_death_delay_s": None,  # no monitor: nothing to wait for
        "worker_death_delay": None,
    }
    failure = laws.health_failure()
    assert law_json(failure) == _common(
        failure, "health.failure_status", "0.6.6.post1", "0.10.2"
    ) | {"failure_status": 500}
    marker = laws.incarnation_marker()
    assert law_json(marker) == _common(
        marker, "incarnation.process_start_time_seconds", "0.8.5", "0.10.2"
    ) | {"marker": "present_unless_multiprocess_registry"}
    card = laws.model_card()
    assert law_json(card) == _common(card, "identity.model_card", "0.6.6.post1", "0.33.0")


def test_a_law_not_established_lists_the_known_spans() -> None:
    law = _laws("0.24.0rc1").capacity(CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS)
    assert isinstance(law, LawNotEstablished)
    assert law_json(law) == {
        "question": "capacity.label_kv_cache_size_tokens",
        "established": False,
        "statement": "not established for 0.24.0rc1 (laws read for 0.6.6.post1 .. 0.23.0, "
        "0.24.0 .. 0.33.0)",
        "known_spans": [
            {"first": "0.6.6.post1", "last": "0.23.0"},
            {"first": "0.24.0", "last": "0.33.0"},
        ],
    }
    single = law_json(_laws("0.7.3").route(Route.SERVER_INFO))
    assert single["statement"] == (
        "not established for 0.7.3 (laws read for 0.6.6.post1, 0.8.5 .. 0.33.0)"
    )
    nowhere = law_json(_laws("0.32.0").health(ExecutorBackend.EXTERNAL_LAUNCHER))
    assert nowhere["known_spans"] == []
    assert str(nowhere["statement"]).startswith("not established for any release: ")


# --- the cache_config_info label law, against the real capture's labels -------------


def _capture_labels() -> frozenset[str]:
    from tests._paths import real_body

    line = next(
        line
        for line in real_body("metrics").decode().splitlines()
        if line.startswith("vllm:cache_config_info{")
    )
    return frozenset(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', line))


def test_cache_config_labels_json() -> None:
    doc = law_json(_release_laws("0.32.0").cache_config_labels())
    assert doc["question"] == _CACHE_KEY
    assert doc["labels"] == sorted(_capture_labels())
    assert law_json(_release_laws("0.30.0").cache_config_labels())["established"] is False


# --- an executor-marker law -----------------------------------------------------


def test_an_executor_law_as_json_names_its_marker_backends_and_files() -> None:
    law = executor_marker_law(ExecutorMarker.MULTIPROC_EXECUTOR_FILE, Version("0.32.0"))
    assert isinstance(law, ExecutorMarkerLaw)
    doc = law_json(law)
    assert doc["question"] == "executor.multiproc_executor_file"
    assert doc["marker"] == "multiproc_executor_file"
    assert doc["backends"] == ["mp", "ray"]
    assert doc["files"] == ["multiproc_executor.py"]
    assert doc["span"] == {"first": "0.20.0", "last": "0.33.0"}


def test_the_mp_health_law_states_its_window() -> None:
    # Written from each release's v1/executor/multiproc_executor.py: the monitor's
    # shutdown() before the failure callback (SIGTERM 4 s; 4 s + 4 s; 5 s + 4 s).
    for release, seconds in (("0.9.2", 4), ("0.14.1", 4), ("0.15.0", 8), ("0.23.0", 8)):
        law = _laws(release).health(ExecutorBackend.MP)
        assert law_json(law)["worker_death_delay_s"] == seconds, release
    law = _laws("0.24.0").health(ExecutorBackend.MP)
    doc = law_json(law)
    assert doc["worker_death_delay_s"] == 9
    assert "VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS (default 5)" in str(doc["worker_death_delay"])
    # Before 0.9.2 /health covered the API server only: no window to state.
    assert law_json(_laws("0.9.1").health(ExecutorBackend.MP))["worker_death_delay_s"] is None
