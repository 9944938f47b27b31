"""The text report of one assessment, and the fleet table's row, from typed objects.

:func:`render_report` is what ``vllm-evidence probe`` and ``explain`` print without a
terminal.  It says, for each decision, its subject, its verdict and reason, why (the
decision's ``detail``), what would move it (``remedy``), and the first law it used with
the releases that law was read for; then where the evidence came from.  The JSON
document (:mod:`vllm_evidence._output.assessment`) and this report read the same typed
decisions; neither is derived from the other.  The claims, their order and their titles
come from :data:`vllm_evidence._assessment.REGISTRY`; each route's arm and its fields
from :func:`vllm_evidence._output.front_door.arm_fields`, which the JSON names too.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import attrs

from vllm_evidence._assessment import (
    REGISTRY,
    Assessment,
    Decision,
    Subject,
    summary_line,
    verdict,
)
from vllm_evidence._capture.batch import CaptureOrigin
from vllm_evidence._output.front_door import arm_fields, route_arms
from vllm_evidence._readback.front_door import CapturedReadback
from vllm_evidence._scrub import scrub
from vllm_evidence.decisions import CapacityRefused, HealthCoverageEstablished
from vllm_evidence.upstream._laws import Law, LawNotEstablished

__all__ = [
    "REPORT_WIDTH",
    "FleetRow",
    "ReportRow",
    "fleet_row",
    "observation_lines",
    "origin_line",
    "render_report",
    "report_lines",
    "report_rows",
    "subject_line",
    "title",
]


@attrs.frozen
class ReportRow:
    """One decision's line in the report."""

    title: str
    verdict: str
    """``established``, ``reported`` or ``refused``."""
    reason: str
    why: tuple[str, ...]
    """The detail, then ``→ to move it: …`` and ``law …`` lines where they apply."""
    words: str
    """The answer in plain words, verdict first: ``established``, ``refused (rank_lost)``,
    ``worker death: yes, within 9 s`` (what ``/health`` covers)."""


def _remedy(decision: Decision) -> str | None:
    remedy = getattr(decision, "remedy", None)
    return remedy if isinstance(remedy, str) else None


def _first_law(decision: Decision) -> Law | LawNotEstablished | None:
    laws = getattr(decision, "laws", None)
    if isinstance(laws, Sequence):
        return laws[0] if laws else None
    law = getattr(decision, "law", None)
    return law if isinstance(law, Law | LawNotEstablished) else None


def _law_line(law: Law | LawNotEstablished) -> str:
    if isinstance(law, LawNotEstablished):
        scope = "not established for this release"
    else:
        scope = f"{law.span.first} .. {law.span.last}"
    return f"law {law.question.key} (read for {scope})"


def report_rows(assessment: Assessment) -> list[ReportRow]:
    """The decisions, in report order (:data:`~vllm_evidence._assessment.REGISTRY`'s)."""
    rows = []
    for spec in REGISTRY:
        decision = spec.of(assessment)
        why = [decision.detail]
        remedy = _remedy(decision)
        if remedy and remedy != "none":
            why.append(f"→ to move it: {remedy}")
        law = _first_law(decision)
        if law is not None:
            why.append(_law_line(law))
        rows.append(
            ReportRow(
                spec.title, verdict(decision), decision.reason.value, tuple(why), _words(decision)
            )
        )
    return rows


#: What a 200 from /health covers, in the words an operator asks in.
_COVERAGE_WORDS = {
    "worker_death_reaches": "worker death: yes",
    "engine_process": "engine death: yes (its one worker runs inside the engine)",
    "workers_not_watched": "worker death: no (nothing watches the workers)",
    "api_server_only": "worker death: no (only the API server answering)",
}


def _words(decision: Decision) -> str:
    """The verdict once, in words."""
    match verdict(decision):
        case "refused":
            return f"refused ({decision.reason.value})"
        case "reported":
            return f"reported, not established ({decision.reason.value})"
        case _:
            pass
    if isinstance(decision, HealthCoverageEstablished):
        said = _COVERAGE_WORDS.get(decision.coverage.value, decision.coverage.value)
        delay = decision.law.worker_death_delay_s
        return f"{said}, within {delay} s" if delay is not None and "yes" in said else said
    return "established"


def subject_line(assessment: Assessment) -> str:
    """What every decision of the report is about."""
    if assessment.subject is Subject.SERVING:
        return "subject: serving (the process behind the front door)"
    return "subject: launch (what the log records; a log alone says nothing about a server)"


def origin_line(assessment: Assessment) -> str | None:
    """Where the front door's bytes came from, when this process did not probe them."""
    door = assessment.evidence.front_door
    if not isinstance(door, CapturedReadback):
        return None
    batch = door.batch
    match batch.origin:
        case CaptureOrigin.PROBED:
            return None
        case CaptureOrigin.GENERATED:
            return "provenance: generated by vllm_evidence.testing (test evidence)"
        case CaptureOrigin.LOADED | CaptureOrigin.LOADED_SIGNED:
            if batch.provenance is None:
                return "provenance: loaded from an evidence document (unsigned)"
            return f"provenance: {batch.provenance.describe()}"


def title(assessment: Assessment, target: str | None) -> str:
    """``<target>: vLLM <version>``."""
    version = assessment.version
    head = f"vLLM {version if version is not None else '(version unobserved)'}"
    return f"{target}: {head}" if target else head


def observation_lines(assessment: Assessment) -> list[str]:
    """Where the evidence came from: the batch's requests, each route's arm, the log."""
    lines: list[str] = []
    evidence = assessment.evidence
    front = evidence.front_door
    if front is not None:
        if isinstance(front, CapturedReadback):
            batch = front.batch
            opened = batch.bracket_open.started_at.isoformat()
            lines.append(
                f"front door {batch.target} (batch {batch.batch_id[:12]}, read from {opened})"
            )
            for e in batch.all_exchanges():
                digest = (e.body_sha256 or "-")[:12]
                elapsed = (e.ended_monotonic_ns - e.started_monotonic_ns) // 1_000_000
                lines.append(
                    f"  {e.route.stem:<33} {e.role.value:<13} status {e.status!s:<5} "
                    f"{elapsed:>5} ms  sha256 {digest}"
                )
        else:
            lines.append("front door: bodies supplied by a caller (no bracketed batch)")
        for outcome in route_arms(front):
            name, fields = arm_fields(outcome)
            extra = ", ".join(f"{k}={v}" for k, v in fields)
            lines.append(f"  {outcome.route.stem:<33} {name}" + (f" ({extra})" if extra else ""))
    log = assessment.startup_log
    if log is not None:
        assessed = None if evidence.launch is None else evidence.launch.index
        lines.append(
            f"startup log {log.source or '(stream)'}: {len(log.launches)} launch(es), "
            f"sha256 {log.sha256[:12]}, assessed launch {assessed}"
        )
    return lines


#: The width a report is wrapped to when no terminal says otherwise.
REPORT_WIDTH = 100


def render_report(
    assessment: Assessment, *, target: str | None = None, width: int = REPORT_WIDTH
) -> str:
    """The plain-text report: what ``vllm-evidence probe`` and ``explain`` print without
    a terminal (with ``target``, the server it read, in the title).

    For a person first: the answer (how many claims hold, and the first that does not),
    then one line per claim in plain words with its verdict shown once, wrapped to
    ``width`` at word boundaries (a hanging indent under the claim), then the evidence.
    Every line passes through :func:`~vllm_evidence._scrub.scrub`: a served id, a
    redirect target or a transport detail is server-controlled text, so its control
    characters are escaped and no secret survives."""
    return "".join(scrub(line) + "\n" for line in report_lines(assessment, target, width))


_TITLE_WIDTH = 22


def report_lines(assessment: Assessment, target: str | None, width: int) -> list[str]:
    """The report's lines, wrapped to ``width`` (not yet scrubbed)."""
    width = max(width, 40)
    out = [title(assessment, target)]
    out += _wrap(summary_line(assessment), width, "  ", "    ")
    out += _wrap(subject_line(assessment), width, "  ", "    ")
    origin = origin_line(assessment)
    if origin is not None:
        out += _wrap(origin, width, "  ", "    ")
    hang = " " * (2 + _TITLE_WIDTH + 1)
    for row in report_rows(assessment):
        out += _wrap(f"{row.title:<{_TITLE_WIDTH}} {row.words}", width, "  ", hang)
        for part in row.why:
            out += _wrap(part, width, hang, hang + "  ")
    out.append("evidence:")
    out += [line for text in observation_lines(assessment) for line in _wrap_kept(text, width)]
    return out


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """``text`` wrapped at word boundaries; a word longer than a line stays whole."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _wrap_kept(text: str, width: int) -> list[str]:
    """An evidence line, its own indent kept."""
    indent = "  " + " " * (len(text) - len(text.lstrip(" ")))
    return _wrap(text.strip(), width, indent, indent + "    ")


@attrs.frozen
class FleetRow:
    """One server's row in the fleet table."""

    target: str
    version: str | None
    served_ids: tuple[str, ...]
    parallel: str
    tensor_parallel_size: int | None
    capacity: str
    capacity_tokens: int | None
    join: str
    health_coverage: str


def fleet_row(target: str, assessment: Assessment) -> FleetRow:
    """The fleet table's summary of one assessment."""
    parallel = assessment.parallel
    capacity = assessment.capacity
    health = assessment.health_coverage
    tokens = (
        None
        if isinstance(capacity, CapacityRefused) or not capacity.engines
        else sum(e.tokens.value for e in capacity.engines)
    )
    config = parallel.configuration
    version = assessment.version
    return FleetRow(
        target=target,
        version=None if version is None else str(version),
        served_ids=tuple(n.served_id for n in assessment.served_identity.names),
        parallel=verdict(parallel),
        tensor_parallel_size=None if config is None else config.tensor_parallel_size,
        capacity=verdict(capacity),
        capacity_tokens=tokens,
        join=verdict(assessment.front_door_join),
        health_coverage=health.coverage.value
        if isinstance(health, HealthCoverageEstablished)
        else health.reason.value,
    )
