"""Law types: what vLLM does, scoped to the releases it was read for.

A *question* (:class:`Question`) is something a decision needs to know about vLLM —
"how is ``/server_info`` registered?", "how authoritative is the startup log's
capacity line?", "what does ``/health`` cover under the ``mp`` executor?".  A *law*
answers one question over one :class:`~vllm_evidence.upstream._releases.ReleaseSpan`
and cites where in vLLM it was read.  :func:`laws_for` answers every question for one
release, each with its law or a :class:`LawNotEstablished`.
"""

from __future__ import annotations

from typing import TypeAlias, TypeVar, final

import attrs
from packaging.version import Version

from vllm_evidence._seal import Sealed, brief, minter
from vllm_evidence.upstream._kinds import (
    CapacityAuthority,
    CapacityFormat,
    CapacitySource,
    ExecutorBackend,
    ExecutorMarker,
    HealthCoverage,
    IncarnationMarker,
    RouteGate,
)
from vllm_evidence.upstream._releases import KNOWN_SPAN, ReleaseSpan
from vllm_evidence.upstream._routes import ParallelEvidenceKind, Route

__all__ = [
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
    "ParallelEvidenceLaw",
    "Question",
    "ReleaseLaws",
    "RouteGate",
    "RouteLaw",
    "VersionNotEstablished",
]


@final
@attrs.frozen(init=False, repr=False)
class Question(Sealed):
    """A question about vLLM's behaviour that a law answers."""

    __public_constructor__ = "vllm_evidence.upstream.QUESTIONS"

    key: str
    """Stable identifier, e.g. ``"route./server_info"`` or ``"health.mp"``."""
    text: str

    def _repr_summary(self) -> str:
        return repr(self.key)


_mint_question = minter(Question, Question.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class RouteLaw(Sealed):
    """How a route is registered, and whether ``--api-key`` guards it."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    route: Route
    gate: RouteGate
    api_key_guarded: bool

    @property
    def statement(self) -> str:
        """The law in one sentence."""
        guard = "guarded by --api-key" if self.api_key_guarded else "not guarded by --api-key"
        if self.gate is RouteGate.NOT_REGISTERED:
            return f"{self.route.target} is not registered"
        return (
            f"{self.route.method} {self.route.target}: {self.gate.value.replace('_', ' ')}; {guard}"
        )

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class ParallelEvidenceLaw(Sealed):
    """What a parallel-evidence route can establish about the parallel layout."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    route: Route
    kind: ParallelEvidenceKind
    reports_data_parallel_size: bool
    """Whether the answer includes the data-parallel size (``/server_info`` text: ≥0.10.2)."""
    statement: str

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class CapacityLaw(Sealed):
    """How authoritative one capacity source is in a release."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    source: CapacitySource
    authority: CapacityAuthority
    statement: str

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class CapacityLogFormatLaw(Sealed):
    """The shape of the V1 capacity line(s) in a release."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    format: CapacityFormat
    statement: str

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class CacheConfigLabelsLaw(Sealed):
    """The label names of ``vllm:cache_config_info`` in a release.

    The labels are every key of ``CacheConfig.__dict__`` (``metrics_info``), plus
    ``engine`` from 0.9.2 on; a label-set difference between two read releases is a
    change point, so each span covers releases with the identical set.
    """

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    labels: frozenset[str]
    """The labels on every platform: ``CacheConfig``'s own attributes (and ``engine``)."""
    cpu_platform_labels: frozenset[str] = frozenset()
    """Labels a CPU server also carries: attributes the CPU platform sets on its
    ``CacheConfig`` at start-up (``platforms/cpu.py``), which ``metrics_info`` then
    reports like any other.  Empty where the platform adds none (or declares them)."""

    @property
    def statement(self) -> str:
        """The law in one sentence."""
        text = f"vllm:cache_config_info has {len(self.labels)} labels: " + ", ".join(
            sorted(self.labels)
        )
        if self.cpu_platform_labels:
            text += "; on the CPU platform also " + ", ".join(sorted(self.cpu_platform_labels))
        return text

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class HealthLaw(Sealed):
    """What a 200 from ``/health`` covers under one executor backend."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    backend: ExecutorBackend
    coverage: HealthCoverage
    statement: str
    worker_death_delay_s: int | None
    """How long after a worker's death ``/health`` may still answer 200, at vLLM's
    defaults (the executor's monitor waits for the surviving workers before it fails the
    engine); ``None`` where no such wait was read (a backend whose death reaches
    ``/health`` at once, or not at all, or whose monitor was not read for it)."""
    worker_death_delay: str | None
    """Why, with the setting that moves it, when :attr:`worker_death_delay_s` is set."""

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class HealthFailureLaw(Sealed):
    """The status ``/health`` answers once the engine is known dead."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    failure_status: int
    statement: str

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class IncarnationMarkerLaw(Sealed):
    """When ``/metrics`` carries ``process_start_time_seconds``, and what it marks."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    marker: IncarnationMarker
    statement: str

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class ModelCardLaw(Sealed):
    """What the ``id`` and ``root`` of a ``/v1/models`` card are."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    statement: str

    def _repr_summary(self) -> str:
        return _law_summary(self)


@final
@attrs.frozen(init=False, repr=False)
class ExecutorMarkerLaw(Sealed):
    """Which executor backends can print one kind of startup-log marker in a release."""

    __public_constructor__ = "vllm_evidence.upstream.executor_marker_law()"

    question: Question
    span: ReleaseSpan
    sources: tuple[str, ...]
    marker: ExecutorMarker
    backends: frozenset[ExecutorBackend]
    files: tuple[str, ...]
    """The record-prefix file names that show this marker (empty for a tag or a line)."""
    statement: str

    def _repr_summary(self) -> str:
        return _law_summary(self)


Law: TypeAlias = (
    RouteLaw
    | ModelCardLaw
    | ParallelEvidenceLaw
    | CapacityLaw
    | CapacityLogFormatLaw
    | CacheConfigLabelsLaw
    | HealthLaw
    | HealthFailureLaw
    | IncarnationMarkerLaw
    | ExecutorMarkerLaw
)


L = TypeVar("L", bound=Sealed)


@final
@attrs.frozen(init=False, repr=False)
class LawNotEstablished(Sealed):
    """No law answers ``question`` for ``version``: it lies outside every read span."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    question: Question
    version: Version
    known_spans: tuple[ReleaseSpan, ...]
    """The spans where *some* law answers the question (empty: none anywhere)."""

    @property
    def statement(self) -> str:
        """Why nothing is claimed."""
        if not self.known_spans:
            return f"not established for any release: {self.question.text}"
        spans = ", ".join(str(s) for s in self.known_spans)
        return f"not established for {self.version} (laws read for {spans})"

    def _repr_summary(self) -> str:
        return f"{self.question.key!r} for {self.version}"


@final
@attrs.frozen(init=False, repr=False)
class VersionNotEstablished(Sealed):
    """The version lies outside every release the law table was read from."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    version: Version
    known: ReleaseSpan

    @property
    def statement(self) -> str:
        """Why no law is given for this version at all."""
        return (
            f"vLLM {self.version} is outside the releases this law table was read from "
            f"({self.known}); nothing is established for it"
        )


@final
@attrs.frozen(init=False, repr=False)
class ReleaseLaws(Sealed):
    """Every question's answer for one self-reported release."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    version: Version
    answers: tuple[tuple[Question, Law | LawNotEstablished], ...]

    def answer(self, key: str) -> Law | LawNotEstablished:
        """The answer to the question with ``key``; ``KeyError`` for an unknown key."""
        for question, answer in self.answers:
            if question.key == key:
                return answer
        raise KeyError(key)

    def _typed(self, key: str, kind: type[L]) -> L | LawNotEstablished:
        """The answer to ``key``, which the table guarantees is a ``kind`` law or none."""
        answer = self.answer(key)
        if isinstance(answer, kind | LawNotEstablished):
            return answer
        msg = f"law table invariant: {key} is answered by a {type(answer).__name__}"
        raise AssertionError(msg)  # pragma: no cover - tests check the table's shape

    def route(self, route: Route) -> RouteLaw | LawNotEstablished:
        """How ``route`` is registered in this release."""
        return self._typed(route_key(route), RouteLaw)

    def parallel_evidence(self, route: Route) -> ParallelEvidenceLaw | LawNotEstablished:
        """What ``route`` can establish about the parallel layout in this release."""
        return self._typed(parallel_key(route), ParallelEvidenceLaw)

    def model_card(self) -> ModelCardLaw | LawNotEstablished:
        """What a ``/v1/models`` card's ``id`` and ``root`` are in this release."""
        return self._typed(MODEL_CARD_KEY, ModelCardLaw)

    def capacity(self, source: CapacitySource) -> CapacityLaw | LawNotEstablished:
        """How authoritative ``source`` is in this release."""
        return self._typed(capacity_key(source), CapacityLaw)

    def capacity_log_format(self) -> CapacityLogFormatLaw | LawNotEstablished:
        """The shape of the V1 capacity line(s) in this release."""
        return self._typed(CAPACITY_LOG_FORMAT_KEY, CapacityLogFormatLaw)

    def cache_config_labels(self) -> CacheConfigLabelsLaw | LawNotEstablished:
        """The label names of ``vllm:cache_config_info`` in this release."""
        return self._typed(CACHE_CONFIG_LABELS_KEY, CacheConfigLabelsLaw)

    def health(self, backend: ExecutorBackend) -> HealthLaw | LawNotEstablished:
        """What ``/health`` covers under ``backend`` in this release."""
        return self._typed(health_key(backend), HealthLaw)

    def health_failure(self) -> HealthFailureLaw | LawNotEstablished:
        """The status ``/health`` answers once the engine is dead."""
        return self._typed(HEALTH_FAILURE_KEY, HealthFailureLaw)

    def incarnation_marker(self) -> IncarnationMarkerLaw | LawNotEstablished:
        """When ``process_start_time_seconds`` is on ``/metrics``."""
        return self._typed(INCARNATION_MARKER_KEY, IncarnationMarkerLaw)

    def _repr_summary(self) -> str:
        return f"{self.version}, {len(self.answers)} answers"


_mint_release_laws = minter(ReleaseLaws, ReleaseLaws.__attrs_init__)
_mint_not_established = minter(LawNotEstablished, LawNotEstablished.__attrs_init__)
_mint_version_not_established = minter(VersionNotEstablished, VersionNotEstablished.__attrs_init__)


def route_key(route: Route) -> str:
    """The question key for how ``route`` is registered."""
    return f"route.{route.target}"


def parallel_key(route: Route) -> str:
    """The question key for what ``route`` establishes about parallelism."""
    return f"parallel_evidence.{route.target}"


def capacity_key(source: CapacitySource) -> str:
    """The question key for a capacity source's authority."""
    return f"capacity.{source.value}"


def executor_marker_key(marker: ExecutorMarker) -> str:
    """The question key for which backends a startup-log ``marker`` is consistent with."""
    return f"executor.{marker.value}"


def health_key(backend: ExecutorBackend) -> str:
    """The question key for ``/health`` coverage under ``backend``."""
    return f"health.{backend.value}"


CAPACITY_LOG_FORMAT_KEY = "capacity.log_format"
CACHE_CONFIG_LABELS_KEY = "metrics.cache_config_info.labels"
MODEL_CARD_KEY = "identity.model_card"
HEALTH_FAILURE_KEY = "health.failure_status"
INCARNATION_MARKER_KEY = "incarnation.process_start_time_seconds"


def question(key: str, text: str) -> Question:
    """Mint a question (package-internal: the table in ``upstream.table``)."""
    return _mint_question(key=key, text=text)


AnyLaw = TypeVar("AnyLaw", bound=Law)


def answer_for(
    q: Question, laws: tuple[AnyLaw, ...], version: Version
) -> AnyLaw | LawNotEstablished:
    """The law among ``laws`` (all answering ``q``) whose span holds ``version``."""
    holding = [law for law in laws if law.span.contains(version)]
    if len(holding) > 1:  # pragma: no cover - the table's own test forbids overlaps
        msg = f"overlapping laws for {q.key} at {version}"
        raise AssertionError(msg)
    if holding:
        return holding[0]
    return _mint_not_established(
        question=q,
        version=version,
        known_spans=tuple(law.span for law in laws),
    )


def release_laws(
    version: Version, table: tuple[tuple[Question, tuple[Law, ...]], ...]
) -> ReleaseLaws | VersionNotEstablished:
    """Answer every question in ``table`` for ``version``."""
    if not KNOWN_SPAN.contains(version):
        return _mint_version_not_established(version=version, known=KNOWN_SPAN)
    answers = tuple((q, answer_for(q, laws, version)) for q, laws in table)
    return _mint_release_laws(version=version, answers=answers)


# The law table's entries (``upstream/_table.py``) are minted here, beside their classes.
_mint_route_law = minter(RouteLaw, RouteLaw.__attrs_init__)
_mint_parallel_law = minter(ParallelEvidenceLaw, ParallelEvidenceLaw.__attrs_init__)
_mint_capacity_law = minter(CapacityLaw, CapacityLaw.__attrs_init__)
_mint_format_law = minter(CapacityLogFormatLaw, CapacityLogFormatLaw.__attrs_init__)
_mint_health_law = minter(HealthLaw, HealthLaw.__attrs_init__)
_mint_failure_law = minter(HealthFailureLaw, HealthFailureLaw.__attrs_init__)
_mint_card_law = minter(ModelCardLaw, ModelCardLaw.__attrs_init__)
_mint_marker_law = minter(IncarnationMarkerLaw, IncarnationMarkerLaw.__attrs_init__)
_mint_labels_law = minter(CacheConfigLabelsLaw, CacheConfigLabelsLaw.__attrs_init__)
_mint_executor_law = minter(ExecutorMarkerLaw, ExecutorMarkerLaw.__attrs_init__)


#: Fields every law has, left out of its ``repr`` (the question is its key, the span its text).
_LAW_COMMON = frozenset({"question", "span", "sources", "statement"})


def _law_summary(law: Law) -> str:
    """``'health.mp' read for 0.9.2 .. 0.33.0, backend=ExecutorBackend.MP, …``."""
    parts = [f"{law.question.key!r} read for {law.span}"]
    parts.extend(
        f"{field.name}={brief(getattr(law, field.name))}"
        for field in attrs.fields(type(law))
        if field.name not in _LAW_COMMON and field.name not in _LAW_PROSE
    )
    return ", ".join(parts)


#: A law's prose beside its figure (the figure is in the repr, the why is not).
_LAW_PROSE = frozenset({"worker_death_delay"})
