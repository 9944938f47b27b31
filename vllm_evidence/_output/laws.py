"""The law table's JSON: one law (or its absence) with its scope and sources, and the
``vllm-evidence.laws/3`` documents (the whole table, or one release's answers).

The hooks here render every law kind on the package's converter
(:mod:`vllm_evidence._converter`); the same rendering is the assessment document's
``laws[]``, the audit's ``law`` and ``vllm-evidence laws --json``.  Each law kind is a
variant of a union tagged by its ``question`` (``route.*``, ``parallel_evidence.*``, …)
and by its own keys; ``vllm-evidence schema laws`` publishes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never, get_args

import attrs

from vllm_evidence._converter import converter, register_rendering
from vllm_evidence.upstream._laws import (
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
    Question,
    ReleaseLaws,
    RouteLaw,
    VersionNotEstablished,
)
from vllm_evidence.upstream._releases import KNOWN_SPAN, ReadRelease, ReleaseSpan

__all__ = ["SCHEMA", "LawTable", "law_json", "laws_document"]

SCHEMA = "vllm-evidence.laws/3"


def law_json(law: Law | LawNotEstablished) -> dict[str, Any]:
    """A JSON-ready description of a law (or of its absence), with its scope and sources."""
    document: dict[str, Any] = converter.unstructure(law)
    return document


@attrs.frozen
class LawTable:
    """The whole law table and the releases it was read from: the document of
    ``vllm-evidence laws --json`` without ``--version``."""

    questions: Sequence[tuple[Question, Sequence[Law]]]
    releases: Sequence[ReadRelease]


def laws_document(laws: LawTable | ReleaseLaws | VersionNotEstablished) -> dict[str, Any]:
    """The ``vllm-evidence.laws/3`` document: the whole table, or one release's answers."""
    document: dict[str, Any] = converter.unstructure(laws)
    return document


def _span_json(s: ReleaseSpan) -> dict[str, str]:
    return {"first": str(s.first), "last": str(s.last)}


def _not_established_json(law: LawNotEstablished) -> dict[str, object]:
    return {
        "question": law.question.key,
        "established": False,
        "statement": law.statement,
        "known_spans": [converter.unstructure(s) for s in law.known_spans],
    }


def _law_json(law: Law) -> dict[str, object]:
    doc: dict[str, object] = {
        "question": law.question.key,
        "established": True,
        "statement": law.statement,
        "span": converter.unstructure(law.span),
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
            # The published name of a V1 format has no ``v1_`` (laws/N: ``two_line``).
            doc |= {"format": law.format.value.removeprefix("v1_")}
        case CacheConfigLabelsLaw():
            doc |= {
                "labels": sorted(law.labels),
                "cpu_platform_labels": sorted(law.cpu_platform_labels),
            }
        case HealthLaw():
            doc |= {
                "backend": law.backend.value,
                "coverage": law.coverage.value,
                "worker_death_delay_s": law.worker_death_delay_s,
                "worker_death_delay": law.worker_death_delay,
            }
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


def _release_json(r: ReadRelease) -> dict[str, object]:
    return {"version": str(r.version), "commit": r.commit, "how": r.how.value}


def _table_json(table: LawTable) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "version": None,
        "read_releases": [converter.unstructure(r) for r in table.releases],
        "questions": [
            {"key": q.key, "text": q.text, "laws": [converter.unstructure(law) for law in laws]}
            for q, laws in table.questions
        ],
    }


def _release_laws_json(laws: ReleaseLaws) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "version": str(laws.version),
        "established": True,
        "known_span": converter.unstructure(KNOWN_SPAN),
        "answers": [converter.unstructure(answer) for _, answer in laws.answers],
    }


def _version_not_established_json(laws: VersionNotEstablished) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "version": str(laws.version),
        "established": False,
        "statement": laws.statement,
        "known_span": converter.unstructure(laws.known),
        "answers": [],
    }


register_rendering(ReleaseSpan, _span_json)
register_rendering(LawNotEstablished, _not_established_json)
for _kind in get_args(Law):
    register_rendering(_kind, _law_json)
register_rendering(ReadRelease, _release_json)
register_rendering(LawTable, _table_json)
register_rendering(ReleaseLaws, _release_laws_json)
register_rendering(VersionNotEstablished, _version_not_established_json)
