"""One server's decisions together, and the registry of the claims they decide.

:func:`assess` runs every decision over one server's evidence — a front-door readback
and/or one launch of its startup log — and returns a sealed :class:`Assessment`.
Its JSON document is :func:`vllm_evidence._output.assessment.assessment_document`
(schema ``vllm-evidence.assessment/9``); its text report is
:func:`vllm_evidence._output.report.render_report`.  ``str(assessment)`` is one line:
what was read, its release, and the answer (:func:`summary_line`).

Every decision carries its subject: with a front door, the serving process behind it
(log evidence reaches such a claim only through the log-join decision, i.e. a launch
receipt whose start time the front door is observed to carry); with a log alone, the
launch that log records.  :func:`claim_established` answers for the serving process
unless asked about the launch.

:data:`REGISTRY` is the one list of the claims: each claim's name, its title in the
report and the function that decides it (its arms, by verdict, are the decisions' one
table, :data:`vllm_evidence.decisions.ARMS`).  The assessment,
its JSON document, the evidence document's verdicts, the report and ``--require`` all
iterate it (``--require`` through :data:`~vllm_evidence._claims.CLAIMS`, the names the
type checker knows, which a test holds equal to the registry's).
"""

from __future__ import annotations

import enum
import textwrap
from collections.abc import Callable
from typing import Any, Protocol, final

import attrs
from packaging.version import Version

from vllm_evidence._adapters.process_tree import ProcessTree
from vllm_evidence._adapters.receipt import LaunchReceipt
from vllm_evidence._adapters.startup_log import Launch, StartupLog
from vllm_evidence._capture.batch import CaptureBatch
from vllm_evidence._claims import CLAIMS, Claim, Verdict
from vllm_evidence._readback.evidence import Evidence, FrontDoor, Subject, gather
from vllm_evidence._readback.front_door import CapturedReadback, HistoricalBundle
from vllm_evidence._scrub import scrub
from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.decisions import (
    ARMS,
    CapacityDecision,
    FrontDoorJoinDecision,
    HealthCoverageDecision,
    LogJoinDecision,
    ParallelDecision,
    ServedIdentityDecision,
    decide_capacity,
    decide_front_door_join,
    decide_health_coverage,
    decide_log_join,
    decide_parallel,
    decide_served_identity,
)
from vllm_evidence.errors import EvidenceMismatchError, InputError, MisuseError

__all__ = [
    "CLAIMS",
    "REGISTRY",
    "Assessment",
    "Claim",
    "ClaimSpec",
    "Decision",
    "Subject",
    "Verdict",
    "assess",
    "claim_decisions",
    "claim_established",
    "summary_line",
    "verdict",
]


class Decision(Protocol):
    """What every arm of every decision has: its subject, its reason and its detail."""

    @property
    def subject(self) -> Subject: ...
    @property
    def reason(self) -> enum.Enum: ...
    @property
    def detail(self) -> str: ...


@attrs.frozen
class ClaimSpec:
    """One claim an assessment decides: the one place a claim is listed."""

    name: Claim
    """The claim's name: the :class:`Assessment` field, the JSON document's key under
    ``decisions``, what ``--require`` and :func:`claim_established` take."""
    title: str
    """What the claim answers, in words: its line in the report (``health_coverage`` is
    *what /health covers*, not whether the server is healthy)."""
    decide: Callable[[Evidence], Decision]
    """The decision function :func:`assess` runs; its arms, by verdict, are
    ``vllm_evidence.decisions.ARMS[name]``."""

    def of(self, assessment: Assessment) -> Decision:
        """This claim's decision in ``assessment``."""
        decision: Decision = getattr(assessment, self.name)
        return decision


#: Every claim, in report order.  Adding a decision: one line here, a field of
#: :class:`Assessment` and a name in :data:`~vllm_evidence._claims.Claim` (tests hold the
#: three equal), and its JSON hook and schema in ``output/``.
REGISTRY: tuple[ClaimSpec, ...] = (
    ClaimSpec("parallel", "parallel layout", decide_parallel),
    ClaimSpec("capacity", "KV-cache capacity", decide_capacity),
    ClaimSpec("served_identity", "served model", decide_served_identity),
    ClaimSpec("health_coverage", "/health covers", decide_health_coverage),
    ClaimSpec("front_door_join", "one process", decide_front_door_join),
    ClaimSpec("log_join", "log is this server's", decide_log_join),
)

_VERDICTS: dict[type, Verdict] = {
    arm: arm_verdict for arms in ARMS.values() for arm, arm_verdict in arms.verdicts().items()
}


def verdict(decision: object) -> Verdict:
    """``established``, ``reported`` or ``refused``: the arm of any decision (read from
    :data:`vllm_evidence.decisions.ARMS`); a value that is no decision is a ``TypeError``."""
    found = _VERDICTS.get(type(decision))
    if found is None:
        msg = f"verdict() takes a decision (an assessment's field), got {type(decision).__name__}"
        raise TypeError(msg)
    return found


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
        """One line: what was read, its release, and the answer (:func:`summary_line`),
        e.g. ``Assessment(http://10.0.0.5:8000, vLLM 0.32.0, serving claims: 4 of 6
        established — parallel refused: …)``.  The full report is
        :func:`vllm_evidence._output.report.render_report`."""
        version = self.version
        release = f"vLLM {version}" if version is not None else "vLLM (version unobserved)"
        line = f"Assessment({_what_was_read(self)}, {release}, {summary_line(self)})"
        return scrub(" ".join(line.split()))

    def __rederive__(self) -> Reduction[Assessment]:
        """Pickled as its raw evidence and its verdicts as a check: the front door (its
        raw exchanges or bodies), the startup log (its bytes, see
        :meth:`StartupLog.__rederive__`), which launch was assessed, the launch
        receipt (its bytes), and the process tree when one was given (its ``/proc``
        bytes; without one the reduction is what it was before trees).  Unpickling runs
        :func:`assess` again and refuses (:class:`EvidenceMismatchError`) when the
        decisions do not come out as they did."""
        launch = self.evidence.launch
        evidence: tuple[object, ...] = (
            self.evidence.front_door,
            self.startup_log,
            None if launch is None else launch.index,
            _arms(self),
            self.evidence.receipt,
        )
        tree = self.evidence.process_tree
        return _rederive_assessment, evidence if tree is None else (*evidence, tree)


def claim_decisions(assessment: Assessment) -> dict[Claim, Decision]:
    """Every decision of ``assessment`` by its claim, in :data:`REGISTRY` order."""
    return {spec.name: spec.of(assessment) for spec in REGISTRY}


def _what_was_read(assessment: Assessment) -> str:
    """The front door's target, a caller's bodies, or the log's launch."""
    evidence = assessment.evidence
    door = evidence.front_door
    if isinstance(door, CapturedReadback):
        return door.batch.target
    if door is not None:
        return "bodies supplied by a caller"
    log = assessment.startup_log
    if log is None:
        return "no evidence"
    launch = "" if evidence.launch is None else f" launch {evidence.launch.index}"
    return f"startup log {log.source or '(stream)'}{launch}"


def _arms(assessment: Assessment) -> tuple[tuple[str, str, str], ...]:
    """``(claim, arm, reason)`` of every decision, in :data:`REGISTRY` order."""
    return tuple(
        (claim, type(d).__name__, d.reason.value)
        for claim, d in claim_decisions(assessment).items()
    )


def _rederive_assessment(
    front_door: FrontDoor | None,
    startup_log: StartupLog | None,
    launch: int | None,
    arms: tuple[tuple[str, str, str], ...],
    receipt: LaunchReceipt | None = None,
    process_tree: ProcessTree | None = None,
) -> Assessment:
    """Every decision run again over re-derived evidence, checked against the arms the
    sender's decisions came out as (package-internal: unpickling)."""
    assessment = assess(
        front_door, startup_log, launch=launch, receipt=receipt, process_tree=process_tree
    )
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
    process_tree: ProcessTree | None = None,
) -> Assessment:
    """Run every decision over one server's evidence.

    ``launch`` picks which launch of the log to read (default: the last one, the
    process a restarted server is now running).  Evidence from two launches is never
    joined.  ``receipt`` is the launch receipt ``vllm-evidence launch`` wrote for the
    log (:func:`~vllm_evidence._adapters.receipt.read_launch_receipt`); read the log to
    the receipt's length (``read_startup_log(path, first_bytes=receipt.log_bytes)``),
    since the receipt digests only those bytes.  With a front door every decision is
    about the serving process, and the log counts only when ``log_join`` is
    established.  ``process_tree`` is the launched process's tree as its launcher read
    it (:func:`~vllm_evidence._adapters.process_tree.observe_process_tree`): it speaks of
    the launch whose receipt names its root, as far as that launch's log speaks, and a
    worker or engine core the log names that is gone from it ends the claims that need
    it this round (``rank_lost``, ``engine_dead``), before ``/health`` says so.  Raises
    :class:`~vllm_evidence.errors.InputError` for a launch index the log does not have.
    """
    _check_kinds(front_door, startup_log, receipt, process_tree)
    chosen: Launch | None = None
    if startup_log is not None and startup_log.launches:
        if launch is None:
            chosen = startup_log.launches[-1]
        elif 0 <= launch < len(startup_log.launches):
            chosen = startup_log.launches[launch]
        else:
            msg = f"launch must be 0..{len(startup_log.launches) - 1}, got {launch}"
            raise InputError(msg)
    evidence = gather(front_door, chosen, startup_log, receipt, process_tree)
    decided: dict[str, Any] = {spec.name: spec.decide(evidence) for spec in REGISTRY}
    return _mint_assessment(evidence=evidence, startup_log=startup_log, **decided)


def _check_kinds(
    front_door: object, startup_log: object, receipt: object, process_tree: object = None
) -> None:
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
    if process_tree is not None and not isinstance(process_tree, ProcessTree):
        msg = (
            f"assess() process_tree is {type(process_tree).__qualname__}; give "
            "observe_process_tree(read_proc(), pid) (a ProcessTree), or None"
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
    decision = claim_decisions(assessment)[claim]
    return decision.subject is subject and verdict(decision) == "established"


def summary_line(assessment: Assessment) -> str:
    """The operator's question, answered first: how many claims hold, and the first that
    does not, with why (``serving claims: 4 of 6 established — parallel refused: …``).
    Not yet scrubbed: a detail may quote server-controlled text."""
    decisions = claim_decisions(assessment)
    held = sum(verdict(d) == "established" for d in decisions.values())
    about = "serving" if assessment.subject is Subject.SERVING else "launch"
    head = f"{about} claims: {held} of {len(decisions)} established"
    for claim, decision in decisions.items():
        if verdict(decision) != "established":
            first = textwrap.shorten(
                decision.detail.split("; ", 1)[0], _SUMMARY_CUT, placeholder=" …"
            )
            return f"{head} — {claim} {verdict(decision)}: {first}"
    return head


#: How much of the first refusal's detail the summary line quotes.
_SUMMARY_CUT = 100
