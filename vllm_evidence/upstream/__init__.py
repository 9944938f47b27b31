"""What this project knows about vLLM's behaviour, scoped to the releases it was read for.

Use :func:`laws_for` with a self-reported version::

    >>> import packaging.version
    >>> from vllm_evidence.upstream import laws_for, Route, RouteGate
    >>> laws = laws_for(Version("0.32.0"))
    >>> laws.route(Route.SERVER_INFO).gate is RouteGate.DEVELOPMENT_MODE
    True
    >>> laws_for(Version("99.0")).statement.startswith("vLLM 99.0 is outside")
    True
"""

from __future__ import annotations

import functools

import packaging.version

from vllm_evidence.upstream import _laws
from vllm_evidence.upstream._laws import (
    CacheConfigLabelsLaw,
    CapacityAuthority,
    CapacityFormat,
    CapacityLaw,
    CapacityLogFormatLaw,
    CapacitySource,
    ExecutorBackend,
    ExecutorMarker,
    ExecutorMarkerLaw,
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
)
from vllm_evidence.upstream._releases import (
    KNOWN_SPAN,
    READ_RELEASES,
    ReadHow,
    ReadRelease,
    ReleaseSpan,
    parse_release,
)
from vllm_evidence.upstream._routes import PROBE_ROUTES, ParallelEvidenceKind, Route
from vllm_evidence.upstream._table import (
    EXECUTOR_FILES,
    EXECUTOR_LAW_TABLE,
    LAW_TABLE,
    QUESTIONS,
)

__all__ = [
    "EXECUTOR_FILES",
    "EXECUTOR_LAW_TABLE",
    "KNOWN_SPAN",
    "LAW_TABLE",
    "PROBE_ROUTES",
    "QUESTIONS",
    "READ_RELEASES",
    "CacheConfigLabelsLaw",
    "CapacityAuthority",
    "CapacityFormat",
    "CapacityLaw",
    "CapacityLogFormatLaw",
    "CapacitySource",
    "ExecutorBackend",
    "ExecutorMarker",
    "ExecutorMarkerLaw",
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
    "ReadHow",
    "ReadRelease",
    "ReleaseLaws",
    "ReleaseSpan",
    "Route",
    "RouteGate",
    "RouteLaw",
    "VersionNotEstablished",
    "executor_marker_law",
    "executor_marker_laws",
    "laws_for",
    "parse_release",
]


def laws_for(version: packaging.version.Version) -> ReleaseLaws | VersionNotEstablished:
    """Every law that holds for a self-reported vLLM ``version``.

    Returns :class:`VersionNotEstablished` for a version outside every read release
    (older than 0.6.6.post1 or newer than 0.33.0): no law is borrowed from the nearest
    known release.  Within that span each question gets its law, or a
    :class:`LawNotEstablished` where the version falls between read releases that
    disagree.

    The answer is computed once per version spelling and shared (the laws are immutable
    and depend on the version alone): an assessment asks for them once per decision, a
    fleet once per server.
    """
    return _laws_for_release(str(version))


@functools.lru_cache(maxsize=256)
def _laws_for_release(release: str) -> ReleaseLaws | VersionNotEstablished:
    # Keyed by the spelling, not the Version: ``0.32`` and ``0.32.0`` are equal Versions
    # but their laws print the version as it was given.
    return _laws.release_laws(packaging.version.Version(release), LAW_TABLE)


def executor_marker_laws(marker: ExecutorMarker) -> tuple[ExecutorMarkerLaw, ...]:
    """Every law about ``marker``, over all read releases.

    Empty for the two markers that name their backend themselves (the engine-init
    ``distributed_executor_backend=`` field and the argument).
    """
    for q, laws in EXECUTOR_LAW_TABLE:
        if q.key == _laws.executor_marker_key(marker):
            return laws
    return ()


def executor_marker_law(
    marker: ExecutorMarker, version: packaging.version.Version
) -> ExecutorMarkerLaw | LawNotEstablished | None:
    """Which backends ``marker`` is consistent with in ``version``.

    :class:`LawNotEstablished` for a version outside every span read for the marker
    (older than the first, newer than the last, or between read releases that
    disagree); ``None`` for a marker that names its backend itself.
    """
    for q, laws in EXECUTOR_LAW_TABLE:
        if q.key == _laws.executor_marker_key(marker):
            return _laws.answer_for(q, laws, version)
    return None
