"""The law table's JSON: one law (or its absence) with its scope and sources.

Shared by ``vllm-evidence laws --json``, the assessment document's ``laws[]`` and the
audit document.
"""

from __future__ import annotations

from typing import assert_never

from vllm_evidence.upstream.laws import (
    CacheConfigLabelsLaw,
    CapacityLaw,
    CapacityLogFormatLaw,
    ExecutorMarkerLaw,
    HealthFailureLaw,
    HealthLaw,
    IncarnationMarkerLaw,
    Law,
    LawNotEstablished,
    ModelCardLaw,
    ParallelEvidenceLaw,
    RouteLaw,
)
from vllm_evidence.upstream.releases import ReleaseSpan

__all__ = ["law_json"]


def law_json(law: Law | LawNotEstablished) -> dict[str, object]:
    """A JSON-ready description of a law (or of its absence), with its scope and sources."""
    if isinstance(law, LawNotEstablished):
        return {
            "question": law.question.key,
            "established": False,
            "statement": law.statement,
            "known_spans": [_span_json(s) for s in law.known_spans],
        }
    doc: dict[str, object] = {
        "question": law.question.key,
        "established": True,
        "statement": law.statement,
        "span": _span_json(law.span),
        "sources": list(law.sources),
    }
    match law:
        case RouteLaw():
            doc |= {
                "route": law.route.target,
                "method": law.route.method,
                "gate": law.gate.value,
                "api_key_guarded": law.api_key_guarded,
            }
        case ModelCardLaw():
            pass
        case ParallelEvidenceLaw():
            doc |= {
                "route": law.route.target,
                "kind": law.kind.value,
                "reports_data_parallel_size": law.reports_data_parallel_size,
            }
        case CapacityLaw():
            doc |= {"source": law.source.value, "authority": law.authority.value}
        case CapacityLogFormatLaw():
            doc |= {"format": law.format.value}
        case CacheConfigLabelsLaw():
            doc |= {"labels": sorted(law.labels)}
        case HealthLaw():
            doc |= {"backend": law.backend.value, "coverage": law.coverage.value}
        case HealthFailureLaw():
            doc |= {"failure_status": law.failure_status}
        case IncarnationMarkerLaw():
            doc |= {"marker": law.marker.value}
        case ExecutorMarkerLaw():
            doc |= {
                "marker": law.marker.value,
                "backends": sorted(b.value for b in law.backends),
                "files": list(law.files),
            }
        case _:  # pragma: no cover
            assert_never(law)
    return doc


def _span_json(s: ReleaseSpan) -> dict[str, str]:
    return {"first": str(s.first), "last": str(s.last)}
