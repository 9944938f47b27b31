"""The audit's JSON document (schema ``vllm-evidence.audit/3``), through the converter."""

from __future__ import annotations

from typing import Any

import attrs

from vllm_evidence._audit import SCHEMA, Finding, Verdict, exit_status
from vllm_evidence._converter import converter, register_rendering
from vllm_evidence._output.laws import law_json

__all__ = ["AuditReport", "audit_document"]


@attrs.frozen
class AuditReport:
    """The findings of one audit of an installed vLLM release."""

    version: str
    findings: tuple[Finding, ...]


def audit_document(version: str, findings: tuple[Finding, ...]) -> dict[str, Any]:
    """The ``--json`` document (schema ``vllm-evidence.audit/3``)."""
    document: dict[str, Any] = converter.unstructure(AuditReport(version, findings))
    return document


def _finding_json(f: Finding) -> dict[str, object]:
    return {
        "question": f.key,
        "verdict": f.verdict.value,
        "expected": f.expected,
        "found": f.found,
        "note": f.note,
        "law": None if f.law is None else law_json(f.law),
    }


def _report_json(report: AuditReport) -> dict[str, object]:
    findings = report.findings
    return {
        "schema": SCHEMA,
        "vllm_version": report.version,
        "summary": {v.value: sum(1 for f in findings if f.verdict is v) for v in Verdict},
        "exit_status": exit_status(findings),
        "findings": [converter.unstructure(f) for f in findings],
    }


register_rendering(Finding, _finding_json)
register_rendering(AuditReport, _report_json)
