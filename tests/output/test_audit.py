"""The audit's JSON document: its keys, its summary, and the law each finding checked."""

from __future__ import annotations

import json

from packaging.version import Version

from tests._evidence import release_laws as _laws
from vllm_evidence.audit import (
    EXECUTOR_BACKENDS_KEY,
    SCHEMA,
    Installed,
    RouteTable,
    audit,
)
from vllm_evidence.output.audit import audit_document
from vllm_evidence.upstream import (
    CacheConfigLabelsLaw,
    laws_for,
)


def _labels_law(version: str = "0.32.0") -> CacheConfigLabelsLaw:
    law = _laws(version).cache_config_labels()
    assert isinstance(law, CacheConfigLabelsLaw)
    return law


# --- capacity log format ----------------------------------------------------------------


ONE_LINE_SOURCE = """
def update_kv_cache_capacity(vllm_config, kv_cache_config):
    logger.info_once(
        "%s KV cache size: %s tokens, "
        "Maximum concurrency for %s tokens per request: %.2fx",
        pools, f"{num_tokens:,}", f"{max_model_len:,}", max_concurrency,
    )
"""


# --- routes ---------------------------------------------------------------------------


ALWAYS = {("/version", "GET"), ("/v1/models", "GET"), ("/metrics", "GET"), ("/health", "GET")}


DEV_ONLY = {("/server_info", "GET"), ("/get_world_size", "GET"), ("/collective_rpc", "POST")}


def _table(routes: set[tuple[str, str]]) -> RouteTable:
    return RouteTable(frozenset(routes), "test")


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
