"""The audit's JSON document (schema ``vllm-evidence.audit/1``)."""

from __future__ import annotations

from vllm_evidence.audit import SCHEMA, Finding, Verdict, exit_status
from vllm_evidence.output.laws import law_json

__all__ = ["audit_document"]


def audit_document(version: str, findings: tuple[Finding, ...]) -> dict[str, object]:
    """The ``--json`` document (schema ``vllm-evidence.audit/1``)."""
    counts = {v.value: sum(1 for f in findings if f.verdict is v) for v in Verdict}
    return {
        "schema": SCHEMA,
        "vllm_version": version,
        "summary": counts,
        "exit_status": exit_status(findings),
        "findings": [
            {
                "question": f.key,
                "verdict": f.verdict.value,
                "expected": f.expected,
                "found": f.found,
                "note": f.note,
                "law": None if f.law is None else law_json(f.law),
            }
            for f in findings
        ],
    }
