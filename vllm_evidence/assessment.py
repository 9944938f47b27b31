"""One server's decisions together, and their plain-text report.

:func:`assess` runs every decision over one server's evidence — a front-door readback
and/or one launch of its startup log — and returns a sealed :class:`Assessment`.
Its JSON document is :func:`vllm_evidence.output.assessment.assessment_document`
(schema ``vllm-evidence.assessment/6``).  Its text report, :func:`render_report`, is
``str(assessment)`` and what the CLI prints without a terminal; it lives here rather
than in :mod:`vllm_evidence.output` so that ``Assessment.__str__`` can use it without
importing upward (:mod:`vllm_evidence.output.report` re-exports it).

Every decision carries its subject: with a front door, the serving process behind it
(log evidence reaches such a claim only through the log-join decision, i.e. a launch
receipt whose start time the front door is observed to carry); with a log alone, the
launch that log records.  :func:`claim_established` answers for the serving process
unless asked about the launch.

The report says, for each decision, its subject, its verdict and reason, why (the decision's
``detail``), what would move it (``remedy``), and the first law it used with the
releases that law was read for; then where the evidence came from.  The JSON document
and this report read the same typed decisions; neither is derived from the other.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any, Literal, final

import attrs
from packaging.version import Version

from vllm_evidence._claims import CLAIMS, Claim
from vllm_evidence._scrub import scrub
from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.adapters import outcome as arms
from vllm_evidence.adapters.receipt import LaunchReceipt
from vllm_evidence.adapters.startup_log import Launch, StartupLog
from vllm_evidence.capture.batch import CaptureBatch, CaptureOrigin
from vllm_evidence.decisions import (
    CapacityDecision,
    CapacityEstablished,
    CapacityReported,
    FrontDoorJoinDecision,
    HealthCoverageDecision,
    HealthCoverageEstablished,
    JoinedIncarnation,
    LogJoinDecision,
    LogJoined,
    ParallelDecision,
    ParallelEstablished,
    ServedIdentityDecision,
    ServedIdentityEstablished,
    decide_capacity,
    decide_front_door_join,
    decide_health_coverage,
    decide_log_join,
    decide_parallel,
    decide_served_identity,
)
from vllm_evidence.errors import EvidenceMismatchError, InputError, MisuseError
from vllm_evidence.readback.evidence import Evidence, FrontDoor, Subject, gather
from vllm_evidence.readback.front_door import CapturedReadback, HistoricalBundle
from vllm_evidence.upstream.laws import Law, LawNotEstablished

__all__ = [
    "CLAIMS",
    "TITLES",
    "Assessment",
    "Claim",
    "ReportRow",
    "Subject",
    "assess",
    "claim_established",
    "observation_lines",
    "render_report",
    "report_rows",
    "subject_line",
    "title",
    "verdict",
]


@final
@attrs.frozen(init=False, repr=False)
class Assessment(Sealed):
    """Every decision for one server, with the evidence they were made from."""

    __public_constructor__ = "vllm_evidence.assess()"

    evidence: Evidence
    startup_log: StartupLog | None
    parallel: ParallelDecision
    capacity: CapacityDecision
    served_identity: ServedIdentityDecision
    health_coverage: HealthCoverageDecision
    front_door_join: FrontDoorJoinDecision
    log_join: LogJoinDecision

    @property
    def subject(self) -> Subject:
        """What every decision here is about: the serving process (a front door was
        given) or the log's launch (a log alone)."""
        return self.evidence.subject

    @property
    def version(self) -> Version | None:
        """The self-reported version: ``/version``, else the launch's banner."""
        return self.evidence.front_door_version() or self.evidence.launch_version()

    def __str__(self) -> str:
        """The plain-text report: :func:`render_report` (``vllm-evidence explain``'s text)."""
        return render_report(self)

    def __rederive__(self) -> Reduction[Assessment]:
        """Pickled as its raw evidence and its verdicts as a check: the front door (its
        raw exchanges or bodies), the startup log (its bytes, see
        :meth:`StartupLog.__rederive__`), which launch was assessed, and the launch
        receipt (its bytes).  Unpickling runs
        :func:`assess` again and refuses (:class:`EvidenceMismatchError`) when the
        decisions do not come out as they did."""
        launch = self.evidence.launch
        return _rederive_assessment, (
            self.evidence.front_door,
            self.startup_log,
            None if launch is None else launch.index,
            _arms(self),
            self.evidence.receipt,
        )


def _arms(assessment: Assessment) -> tuple[tuple[str, str, str], ...]:
    """``(claim, arm, reason)`` of every decision, in :data:`CLAIMS` order."""
    decisions = (
        assessment.parallel,
        assessment.capacity,
        assessment.served_identity,
        assessment.health_coverage,
        assessment.front_door_join,
        assessment.log_join,
    )
    return tuple(
        (claim, type(d).__name__, d.reason.value)
        for claim, d in zip(CLAIMS, decisions, strict=True)
    )


def _rederive_assessment(
    front_door: FrontDoor | None,
    startup_log: StartupLog | None,
    launch: int | None,
    arms: tuple[tuple[str, str, str], ...],
    receipt: LaunchReceipt | None = None,
) -> Assessment:
    """Every decision run again over re-derived evidence, checked against the arms the
    sender's decisions came out as (package-internal: unpickling)."""
    assessment = assess(front_door, startup_log, launch=launch, receipt=receipt)
    derived = _arms(assessment)
    if derived != tuple(tuple(arm) for arm in arms):
        differ = ", ".join(
            f"{new[0]}: {new[1]}/{new[2]} (recorded {old[1:]!r})"
            for new, old in zip(derived, arms, strict=False)
            if new != tuple(old)
        )
        msg = (
            "the evidence does not reproduce the recorded decisions "
            f"({differ or 'a different set of claims'}); nothing is derived from it"
        )
        raise EvidenceMismatchError(msg)
    return assessment


_mint_assessment = minter(Assessment, Assessment.__attrs_init__)


def assess(
    front_door: FrontDoor | None = None,
    startup_log: StartupLog | None = None,
    *,
    launch: int | None = None,
    receipt: LaunchReceipt | None = None,
) -> Assessment:
    """Run every decision over one server's evidence.

    ``launch`` picks which launch of the log to read (default: the last one, the
    process a restarted server is now running).  Evidence from two launches is never
    joined.  ``receipt`` is the launch receipt ``vllm-evidence launch`` wrote for the
    log (:func:`~vllm_evidence.adapters.receipt.read_launch_receipt`); read the log to
    the receipt's length (``read_startup_log(path, first_bytes=receipt.log_bytes)``),
    since the receipt digests only those bytes.  With a front door every decision is
    about the serving process, and the log counts only when ``log_join`` is
    established.  Raises :class:`~vllm_evidence.errors.InputError` for a launch index the
    log does not have.
    """
    _check_kinds(front_door, startup_log, receipt)
    chosen: Launch | None = None
    if startup_log is not None and startup_log.launches:
        if launch is None:
            chosen = startup_log.launches[-1]
        elif 0 <= launch < len(startup_log.launches):
            chosen = startup_log.launches[launch]
        else:
            msg = f"launch must be 0..{len(startup_log.launches) - 1}, got {launch}"
            raise InputError(msg)
    evidence = gather(front_door, chosen, startup_log, receipt)
    return _mint_assessment(
        evidence=evidence,
        startup_log=startup_log,
        parallel=decide_parallel(evidence),
        capacity=decide_capacity(evidence),
        served_identity=decide_served_identity(evidence),
        health_coverage=decide_health_coverage(evidence),
        front_door_join=decide_front_door_join(evidence),
        log_join=decide_log_join(evidence),
    )


def _check_kinds(front_door: object, startup_log: object, receipt: object) -> None:
    """The wrong kind of value gets words naming the right call, not an AttributeError
    deep inside a decision."""
    if front_door is not None and not isinstance(front_door, CapturedReadback | HistoricalBundle):
        if isinstance(front_door, CaptureBatch):
            hint = "a CaptureBatch is raw bytes: read it first with readback_from_batch(batch)"
        elif isinstance(front_door, StartupLog):
            hint = "a StartupLog is the second argument: assess(front_door, startup_log)"
        else:
            hint = (
                "give a readback: readback_from_batch(probe_sync(url)), load(directory) "
                "or historical_bundle(bodies)"
            )
        msg = f"assess() front_door is {type(front_door).__qualname__}; {hint}"
        raise MisuseError(msg)
    if startup_log is not None and not isinstance(startup_log, StartupLog):
        msg = (
            f"assess() startup_log is {type(startup_log).__qualname__}; give "
            "read_startup_log(path) (a StartupLog), or None"
        )
        raise MisuseError(msg)
    if receipt is not None and not isinstance(receipt, LaunchReceipt):
        msg = (
            f"assess() receipt is {type(receipt).__qualname__}; give "
            "read_launch_receipt(path) (a LaunchReceipt), or None"
        )
        raise MisuseError(msg)


def claim_established(
    assessment: Assessment, claim: Claim, *, subject: Subject = Subject.SERVING
) -> bool:
    """Whether the named claim (one of :data:`CLAIMS`) is established about ``subject``:
    by default the serving process (what ``--require`` asks); a claim established only
    for a log's launch does not count unless ``subject=Subject.LAUNCH`` is asked.

    ``claim`` is typed :data:`Claim`, so a misspelt name is a type error; at run time an
    unknown name (from untyped code) raises :class:`ValueError` naming the claims.
    """
    if claim not in CLAIMS:
        msg = f"claim must be one of {', '.join(CLAIMS)}, got {claim!r}"
        raise ValueError(msg)
    decision = _decisions(assessment)[claim]
    return decision.subject is subject and isinstance(decision, _ESTABLISHED)


# -- the plain-text report ---------------------------------------------------------------

Decision = (
    ParallelDecision
    | CapacityDecision
    | ServedIdentityDecision
    | HealthCoverageDecision
    | FrontDoorJoinDecision
    | LogJoinDecision
)

#: Each claim's title in the report, in report order: what the claim answers, in words
#: (``health_coverage`` is *what /health covers*, not whether the server is healthy).
TITLES: tuple[tuple[Claim, str], ...] = (
    ("parallel", "parallel layout"),
    ("capacity", "KV-cache capacity"),
    ("served_identity", "served model"),
    ("health_coverage", "/health covers"),
    ("front_door_join", "one process"),
    ("log_join", "log is this server's"),
)

#: The arm of any decision, as the documents and the report name it.
Verdict = Literal["established", "reported", "refused"]

_ESTABLISHED = (
    ParallelEstablished,
    CapacityEstablished,
    ServedIdentityEstablished,
    HealthCoverageEstablished,
    JoinedIncarnation,
    LogJoined,
)


def verdict(decision: object) -> Verdict:
    """``established``, ``reported`` or ``refused``: the arm of any decision."""
    if isinstance(decision, CapacityReported):
        return "reported"
    return "established" if isinstance(decision, _ESTABLISHED) else "refused"


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


def _decisions(assessment: Assessment) -> dict[Claim, Decision]:
    return {
        "parallel": assessment.parallel,
        "capacity": assessment.capacity,
        "served_identity": assessment.served_identity,
        "health_coverage": assessment.health_coverage,
        "front_door_join": assessment.front_door_join,
        "log_join": assessment.log_join,
    }


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
    """The decisions, in report order."""
    decisions = _decisions(assessment)
    rows = []
    for key, name in TITLES:
        decision = decisions[key]
        why = [decision.detail]
        remedy = _remedy(decision)
        if remedy and remedy != "none":
            why.append(f"→ to move it: {remedy}")
        law = _first_law(decision)
        if law is not None:
            why.append(_law_line(law))
        rows.append(
            ReportRow(name, verdict(decision), decision.reason.value, tuple(why), _words(decision))
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


def summary_line(assessment: Assessment) -> str:
    """The operator's question, answered first: how many claims hold, and the first that
    does not, with why (``serving claims: 4 of 6 established — parallel refused: …``)."""
    decisions = _decisions(assessment)
    held = sum(verdict(d) == "established" for d in decisions.values())
    about = "serving" if assessment.subject is Subject.SERVING else "launch"
    head = f"{about} claims: {held} of {len(decisions)} established"
    for key, _ in TITLES:
        decision = decisions[key]
        if verdict(decision) != "established":
            first = textwrap.shorten(
                decision.detail.split("; ", 1)[0], _SUMMARY_CUT, placeholder=" …"
            )
            return f"{head} — {key} {verdict(decision)}: {first}"
    return head


#: How much of the first refusal's detail the summary line quotes.
_SUMMARY_CUT = 100


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


def _arm_text(outcome: arms.Outcome[Any]) -> tuple[str, tuple[tuple[str, object], ...]]:
    """An outcome arm's name and its fields, as the JSON document's route section names them."""
    match outcome:
        case arms.Parsed():
            return "parsed", ()
        case arms.NotFound():
            return "not_found", ()
        case arms.Unauthorized(status=status):
            return "unauthorized", (("status", status),)
        case arms.Unparsed(failure=failure):
            return "unparsed", (("reason", failure.reason),)
        case arms.HttpError(status=status):
            return "http_error", (("status", status),)
        case arms.Redirected(status=status, location=location):
            return "redirected", (("status", status), ("location", location))
        case arms.TimedOut(detail=detail):
            return "timed_out", (("detail", detail),)
        case arms.Unreachable(detail=detail):
            return "unreachable", (("detail", detail),)
        case arms.TooLarge(limit=limit):
            return "too_large", (("limit_bytes", limit),)
        case arms.NotRequested():
            return "not_requested", ()


def _route_arms(readback: CapturedReadback | HistoricalBundle) -> dict[str, arms.Outcome[Any]]:
    return {
        "version": readback.version,
        "v1_models": readback.models,
        "metrics": readback.metrics,
        "health": readback.health,
        "server_info": readback.server_info,
        "server_info__config_format_json": readback.server_info_json,
        "get_world_size": readback.world_size,
    }


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
        for stem, outcome in _route_arms(front).items():
            name, fields = _arm_text(outcome)
            extra = ", ".join(f"{k}={v}" for k, v in fields)
            lines.append(f"  {stem:<33} {name}" + (f" ({extra})" if extra else ""))
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
    """The plain-text report: ``str(assessment)``, and what ``vllm-evidence probe`` prints
    without a terminal (with ``target``, the server it read, in the title).

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
