"""The audit's JSON document: its keys, its summary, and the law each finding checked."""

from __future__ import annotations

import json

from packaging.version import Version

from tests.audit.test_audit import _installed
from vllm_evidence._audit import (
    EXECUTOR_BACKENDS_KEY,
    SCHEMA,
    audit,
)
from vllm_evidence._output.audit import audit_document
from vllm_evidence.upstream import (
    laws_for,
)


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
