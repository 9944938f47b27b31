"""What a person reads in the law table's ``repr``: each law's question, span and fields.

Written by hand: a law names its question's key, the span it was read for, then each of
its own fields (never the statement or citation); a missing law names its question and
version; a span of one release names it once.
"""

from __future__ import annotations

from packaging.version import Version

from tests._evidence import release_laws
from vllm_evidence.upstream import (
    CapacitySource,
    ExecutorBackend,
    HealthLaw,
    LawNotEstablished,
    Route,
    laws_for,
)
from vllm_evidence.upstream.releases import span


def test_a_law_names_its_question_span_and_own_fields() -> None:
    laws = release_laws("0.32.0")
    health = laws.health(ExecutorBackend.MP)
    assert repr(health) == (
        "HealthLaw('health.mp' read for 0.9.2 .. 0.33.0, backend=ExecutorBackend.MP, "
        "coverage=HealthCoverage.WORKER_DEATH_REACHES)"
    )
    assert repr(health.question) == "Question('health.mp')"
    assert repr(laws.capacity(CapacitySource.LOG_CAPACITY_LINE)) == (
        "CapacityLaw('capacity.log_capacity_line' read for 0.27.0 .. 0.33.0, "
        "source=CapacitySource.LOG_CAPACITY_LINE, authority=CapacityAuthority.AUTHORITATIVE)"
    )
    assert repr(laws.parallel_evidence(Route.SERVER_INFO_JSON)) == (
        "ParallelEvidenceLaw('parallel_evidence./server_info?config_format=json' read for "
        "0.11.0 .. 0.33.0, route=Route.SERVER_INFO_JSON, "
        "kind=ParallelEvidenceKind.RESOLVED_CONFIGURATION, reports_data_parallel_size=True)"
    )


def test_a_law_without_fields_of_its_own_names_its_question_and_span_only() -> None:
    assert repr(release_laws("0.32.0").model_card()) == (
        "ModelCardLaw('identity.model_card' read for 0.6.6.post1 .. 0.33.0)"
    )


def test_a_span_of_one_release_names_it_once() -> None:
    assert repr(span("0.32.0", "0.32.0")) == "ReleaseSpan(0.32.0)"
    assert repr(span("0.9.2", "0.33.0")) == "ReleaseSpan(0.9.2 .. 0.33.0)"
    v0 = release_laws("0.6.6.post1").health(ExecutorBackend.MP)
    assert isinstance(v0, HealthLaw)
    assert repr(v0.span) == "ReleaseSpan(0.6.6.post1)"


def test_a_missing_law_names_its_question_and_version() -> None:
    missing = release_laws("0.8.5").health(ExecutorBackend.EXTERNAL_LAUNCHER)
    assert isinstance(missing, LawNotEstablished)
    assert repr(missing) == "LawNotEstablished('health.external_launcher' for 0.8.5)"


def test_release_laws_name_their_version_and_how_many_answers() -> None:
    laws = release_laws("0.32.0")
    assert repr(laws) == f"ReleaseLaws(0.32.0, {len(laws.answers)} answers)"
    assert len(laws.answers) > 1  # the count is the table's, "answers" plural
    assert repr(laws_for(Version("99.0"))) == (
        "VersionNotEstablished(version=99.0, known=ReleaseSpan(0.6.6.post1 .. 0.33.0))"
    )
