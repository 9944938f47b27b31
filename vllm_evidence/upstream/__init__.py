"""What this project knows about vLLM's behaviour, scoped to the releases it was read for.

Use :func:`laws_for` with a self-reported version::

    >>> from packaging.version import Version
    >>> from vllm_evidence.upstream import laws_for, Route, RouteGate
    >>> laws = laws_for(Version("0.32.0"))
    >>> laws.route(Route.SERVER_INFO).gate is RouteGate.DEVELOPMENT_MODE
    True
    >>> laws_for(Version("99.0")).statement.startswith("vLLM 99.0 is outside")
    True
"""

from __future__ import annotations

from packaging.version import Version

from vllm_evidence.upstream.laws import (
    CacheConfigLabelsLaw,
    CapacityAuthority,
    CapacityLaw,
    CapacityLogFormat,
    CapacityLogFormatLaw,
    CapacitySource,
    ExecutorBackend,
    HealthCoverage,
    HealthFailureLaw,
    HealthLaw,
    IncarnationMarker,
    IncarnationMarkerLaw,
    Law,
    LawNotEstablished,
    ModelCardLaw,
    ParallelEvidenceLaw,
    Question,
    ReleaseLaws,
    RouteGate,
    RouteLaw,
    VersionNotEstablished,
    release_laws,
)
from vllm_evidence.upstream.releases import (
    KNOWN_SPAN,
    READ_RELEASES,
    ReadRelease,
    ReleaseSpan,
    SourceKind,
    parse_release,
)
from vllm_evidence.upstream.routes import PROBE_ROUTES, ParallelEvidenceKind, Route
from vllm_evidence.upstream.table import LAW_TABLE, QUESTIONS

__all__ = [
    "KNOWN_SPAN",
    "LAW_TABLE",
    "PROBE_ROUTES",
    "QUESTIONS",
    "READ_RELEASES",
    "CacheConfigLabelsLaw",
    "CapacityAuthority",
    "CapacityLaw",
    "CapacityLogFormat",
    "CapacityLogFormatLaw",
    "CapacitySource",
    "ExecutorBackend",
    "HealthCoverage",
    "HealthFailureLaw",
    "HealthLaw",
    "IncarnationMarker",
    "IncarnationMarkerLaw",
    "Law",
    "LawNotEstablished",
    "ModelCardLaw",
    "ParallelEvidenceKind",
    "ParallelEvidenceLaw",
    "Question",
    "ReadRelease",
    "ReleaseLaws",
    "ReleaseSpan",
    "Route",
    "RouteGate",
    "RouteLaw",
    "SourceKind",
    "VersionNotEstablished",
    "laws_for",
    "parse_release",
]


def laws_for(version: Version) -> ReleaseLaws | VersionNotEstablished:
    """Every law that holds for a self-reported vLLM ``version``.

    Returns :class:`VersionNotEstablished` for a version outside every read release
    (older than 0.6.6.post1 or newer than 0.33.0): no law is borrowed from the nearest
    known release.  Within that span each question gets its law, or a
    :class:`LawNotEstablished` where the version falls between read releases that
    disagree.
    """
    return release_laws(version, LAW_TABLE)
