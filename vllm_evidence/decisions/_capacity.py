"""KV-cache capacity: how many tokens each DP engine can hold, and on whose authority.

The sources and their authority depend on the release (see the capacity laws):

* the startup log's capacity line is group-aware from 0.27 (authoritative); before
  that it is computed without regard to KV-cache groups and misreports hybrid models
  (*reported*, never established), and up to 0.11 it is logged once per worker before
  the minimum over ranks;
* the ``kv_cache_size_tokens`` label of ``vllm:cache_config_info`` (from 0.27) is the
  same group-aware figure, per DP engine (label ``engine``);
* V0's ``# GPU blocks`` line gives tokens only with the block size of the same launch;
* ``num_gpu_blocks × block_size`` from the labels is never a V1 capacity: the blocks
  are summed over DP engines and the block size is a minimum over groups.

When the log and the label disagree the decision says so and picks neither.

With a front door the subject is the serving process: nothing is established from a
front door that was not reached, answered only errors or restarted mid-batch, and the
log's figures count only when the log-join decision joined the log to that front door
(else ``log_not_joined``).  A log alone establishes the capacity of its *launch*.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TypeAlias, final

import attrs
from packaging.version import Version

from vllm_evidence._adapters.outcome import NotRequested
from vllm_evidence._readback.evidence import (
    Evidence,
    Subject,
    arm_name,
    parsed,
)
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions._capacity_figures import (
    EngineCapacity,
    figures_conflict,
    label_figures,
    log_figures,
    min_per_engine,
    missing_engines,
    product_engine,
    product_figures,
    resolved_dp,
    v0_block_size,
    v0_engine,
)
from vllm_evidence.decisions._common import (
    refusal_summary,
    scope,
    serving_decision,
)
from vllm_evidence.decisions._life import Needs
from vllm_evidence.upstream import (
    CapacityAuthority,
    CapacityLaw,
    CapacitySource,
    LawNotEstablished,
    ReleaseLaws,
)

__all__ = [
    "CapacityDecision",
    "CapacityEstablished",
    "CapacityReason",
    "CapacityRefused",
    "CapacityReported",
    "EngineCapacity",
]


class CapacityReason(enum.Enum):
    """Why capacity is established, only reported, or refused (earliest first)."""

    ESTABLISHED = "established"
    FRONT_DOOR_UNREACHABLE = "front_door_unreachable"
    FRONT_DOOR_NOT_ANSWERING = "front_door_not_answering"
    LOG_NOT_JOINED = "log_not_joined"
    ENGINE_DEAD = "engine_dead"
    LAUNCH_NEVER_STARTED = "launch_never_started"
    CAPACITY_UNOBSERVED = "capacity_unobserved"
    METRICS_UNPARSED = "metrics_unparsed"
    FRONT_DOOR_RESTARTED = "front_door_restarted"
    FRONT_DOOR_SEVERAL_PROCESSES = "front_door_several_processes"
    SOURCES_CONFLICT = "sources_conflict"
    VERSION_UNOBSERVED = "version_unobserved"
    VERSION_NOT_ESTABLISHED = "version_not_established"
    LAW_NOT_ESTABLISHED = "law_not_established"
    BLOCK_SIZE_UNOBSERVED = "block_size_unobserved"
    INSUFFICIENT_AUTHORITY = "insufficient_authority"
    SOURCES_DISAGREE = "sources_disagree"
    ENGINES_MISSING = "engines_missing"
    FIGURES_CONFLICT = "figures_conflict"
    NOT_GROUP_AWARE = "not_group_aware"
    PER_WORKER_BEFORE_REDUCTION = "per_worker_before_reduction"


@final
@attrs.frozen(init=False, repr=False)
class CapacityEstablished(Sealed):
    """Authoritative token capacity per DP engine."""

    __public_constructor__ = "vllm_evidence.decisions.decide_capacity()"

    subject: Subject
    engines: tuple[EngineCapacity, ...]
    laws: tuple[CapacityLaw, ...]
    corroborated_by: tuple[EngineCapacity, ...]
    """A second authoritative source that gave the same figures (log and label)."""

    @property
    def reason(self) -> CapacityReason:
        """Always :attr:`CapacityReason.ESTABLISHED`."""
        return CapacityReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        parts = ", ".join(
            f"engine {e.engine}: {e.tokens} ({e.source}"
            + (f"; {e.block_size_note}" if e.block_size_note else "")
            + ")"
            for e in self.engines
        )
        agree = " — the log and the label agree" if self.corroborated_by else ""
        return f"{parts}{agree}"

    def _repr_summary(self) -> str:
        return _engines_summary(self.engines)


@final
@attrs.frozen(init=False, repr=False)
class CapacityReported(Sealed):
    """A token figure the release prints, but which is not an authoritative capacity."""

    __public_constructor__ = "vllm_evidence.decisions.decide_capacity()"

    subject: Subject
    reason: CapacityReason
    detail: str
    remedy: str
    engines: tuple[EngineCapacity, ...]
    laws: tuple[CapacityLaw, ...]

    def _repr_summary(self) -> str:
        return refusal_summary(self.reason, self.detail, _engines_summary(self.engines))


@final
@attrs.frozen(init=False, repr=False)
class CapacityRefused(Sealed):
    """Capacity is not established, and the earliest missing piece."""

    __public_constructor__ = "vllm_evidence.decisions.decide_capacity()"

    subject: Subject
    reason: CapacityReason
    detail: str
    remedy: str
    engines: tuple[EngineCapacity, ...]
    """Figures seen but not accepted (e.g. both sides of a disagreement)."""
    laws: tuple[CapacityLaw | LawNotEstablished, ...]

    def _repr_summary(self) -> str:
        figures = [_engines_summary(self.engines)] if self.engines else []
        return refusal_summary(self.reason, self.detail, *figures)


CapacityDecision: TypeAlias = CapacityEstablished | CapacityReported | CapacityRefused

_mint_established = minter(CapacityEstablished, CapacityEstablished.__attrs_init__)
_mint_reported = minter(CapacityReported, CapacityReported.__attrs_init__)
_mint_refused = minter(CapacityRefused, CapacityRefused.__attrs_init__)


def _failure_reason(outcome: object) -> str:
    failure = getattr(outcome, "failure", None)
    reason = getattr(failure, "reason", None)
    return f" ({reason})" if isinstance(reason, str) else ""


def _law(version: Version | None, source: CapacitySource) -> CapacityLaw | LawNotEstablished | str:
    laws = scope(version)
    if laws is None:
        return "version_unobserved"
    if not isinstance(laws, ReleaseLaws):
        return laws.statement
    return laws.capacity(source)


def decide_capacity(evidence: Evidence) -> CapacityDecision:
    """Each DP engine's KV-cache token capacity, by the release's capacity laws: of the
    serving process with a front door, of the log's launch without one."""
    return serving_decision(evidence, _decide, CapacityEstablished, _refusal, needs=Needs.ENGINE)


def _refusal(
    evidence: Evidence, reason: str, detail: str, remedy: str, alone: CapacityDecision | None
) -> CapacityRefused:
    """A refusal before any figure is read: the gate's, or ``log_not_joined``."""
    del alone  # a capacity refusal of the gate or the join carries no figures
    return _mint_refused(
        subject=evidence.subject,
        reason=CapacityReason(reason),
        detail=detail,
        remedy=remedy,
        engines=(),
        laws=(),
    )


def _decide(evidence: Evidence) -> CapacityDecision:
    metrics = parsed(evidence.front_door.metrics) if evidence.front_door is not None else None
    launch = evidence.launch
    problems: list[tuple[CapacityReason, str]] = []
    if (
        evidence.front_door is not None
        and metrics is None
        and not isinstance(evidence.front_door.metrics, NotRequested)
    ):
        problems.append(
            (
                CapacityReason.METRICS_UNPARSED,
                f"/metrics: {arm_name(evidence.front_door.metrics)}"
                + _failure_reason(evidence.front_door.metrics),
            )
        )
    conflict = evidence.sources_conflict()
    if conflict is not None and launch is not None:
        # The log is another server's: none of its figures is this server's capacity.
        problems.append((CapacityReason.SOURCES_CONFLICT, conflict))
        launch = None
    models = evidence.models()
    base = [c for c in models.cards if c.parent is None] if models is not None else []
    max_model_len = base[0].max_model_len if len(base) == 1 else None
    label = label_figures(metrics, max_model_len) if metrics is not None else []
    log = log_figures(launch) if launch is not None else []
    blocks = list(launch.blocks) if launch is not None else []
    product = product_figures(metrics) if metrics is not None else []
    fd_version = evidence.front_door_version()
    log_version = evidence.launch_version()
    seen_laws: list[CapacityLaw | LawNotEstablished] = []

    def judge(
        figures: Sequence[object], version: Version | None, kind: CapacitySource
    ) -> CapacityLaw | None:
        if not figures:
            return None
        # A restarted front door never gets here: the serving gate refuses it first.
        law = _law(version, kind)
        if law == "version_unobserved":
            problems.append(
                (CapacityReason.VERSION_UNOBSERVED, f"{kind.value} seen, but no version scopes it")
            )
            return None
        if isinstance(law, str):
            problems.append((CapacityReason.VERSION_NOT_ESTABLISHED, law))
            return None
        seen_laws.append(law)
        if isinstance(law, LawNotEstablished):
            problems.append((CapacityReason.LAW_NOT_ESTABLISHED, f"{kind.value}: {law.statement}"))
            return None
        return law

    label_law = judge(label, fd_version, CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS)
    log_law = judge(log, log_version, CapacitySource.LOG_CAPACITY_LINE)
    authoritative: list[tuple[list[EngineCapacity], CapacityLaw]] = [
        (figures, law)
        for figures, law in ((label, label_law), (log, log_law))
        if law is not None and law.authority is CapacityAuthority.AUTHORITATIVE
    ]
    for own, own_law in authoritative:
        contradiction = figures_conflict(evidence, own)
        if contradiction is not None:
            return _mint_refused(
                subject=evidence.subject,
                reason=CapacityReason.FIGURES_CONFLICT,
                detail=contradiction,
                remedy=(
                    "check the startup log: its capacity lines name engines its own "
                    "configuration does not have"
                    if own[0].source_kind is CapacitySource.LOG_CAPACITY_LINE
                    else "probe again; if it persists, the server's /server_info and /metrics "
                    "describe different deployments"
                ),
                engines=(),
                laws=(own_law,),
            )
    if authoritative:
        primary, primary_law = authoritative[0]
        engines = min_per_engine(primary)
        missing = missing_engines(evidence, primary, engines)
        if missing:
            return _mint_refused(
                subject=evidence.subject,
                reason=CapacityReason.ENGINES_MISSING,
                detail=(
                    f"the same source resolves {resolved_dp(evidence, primary)} DP engines, but "
                    f"engine(s) {', '.join(missing)} have no capacity figure"
                ),
                remedy="read every DP engine (under external load balancing, each API "
                "server reports only its own engine)",
                engines=engines,
                laws=(primary_law,),
            )
        if len(authoritative) == 2:
            other, other_law = authoritative[1]
            others = min_per_engine(other)
            mine = {e.engine: e.tokens for e in engines}
            theirs = {e.engine: e.tokens for e in others}
            if mine != theirs:
                shown = "; ".join(
                    f"engine {e.engine}: {e.tokens} at {e.source}" for e in (*engines, *others)
                )
                return _mint_refused(
                    subject=evidence.subject,
                    reason=CapacityReason.SOURCES_DISAGREE,
                    detail=f"the authoritative sources disagree: {shown}",
                    remedy="check that the startup log belongs to this server",
                    engines=(*engines, *others),
                    laws=(primary_law, other_law),
                )
            return _mint_established(
                subject=evidence.subject,
                engines=engines,
                laws=(primary_law, other_law),
                corroborated_by=others,
            )
        return _mint_established(
            subject=evidence.subject, engines=engines, laws=(primary_law,), corroborated_by=()
        )
    if log_law is not None and log_law.authority in {
        CapacityAuthority.NOT_GROUP_AWARE,
        CapacityAuthority.PER_WORKER_BEFORE_REDUCTION,
    }:
        engines = min_per_engine(log)
        per_worker = log_law.authority is CapacityAuthority.PER_WORKER_BEFORE_REDUCTION
        reason = (
            CapacityReason.PER_WORKER_BEFORE_REDUCTION
            if per_worker
            else CapacityReason.NOT_GROUP_AWARE
        )
        figures = ", ".join(f"engine {e.engine}: {e.tokens}" for e in engines)
        return _mint_reported(
            subject=evidence.subject,
            reason=reason,
            detail=(
                f"{figures}, as the log prints it; in this release the figure is not "
                "group-aware, so it misreports hybrid (multi-group) models"
                + ("; logged per worker, the smallest shown" if per_worker else "")
            ),
            remedy="vLLM ≥0.27 logs and labels a group-aware capacity",
            engines=engines,
            laws=(log_law,),
        )
    if blocks:
        law = judge(blocks, log_version, CapacitySource.LOG_V0_BLOCKS)
        if law is not None and law.authority is CapacityAuthority.NEEDS_BLOCK_SIZE_FROM_SAME_LAUNCH:
            assert launch is not None  # noqa: S101  # blocks come from a launch
            size = launch.block_size
            derived = v0_block_size(launch, blocks[0]) if size is None else None
            engine = None
            if size is not None:
                engine = v0_engine(launch, blocks[0], size)
            elif isinstance(derived, tuple):
                engine = v0_engine(launch, blocks[0], *derived)
            else:
                problems.append(
                    (
                        CapacityReason.BLOCK_SIZE_UNOBSERVED,
                        (
                            f"V0 block line(s) seen ({blocks[0].device_blocks}, line "
                            f"{blocks[0].line}) but the launch never prints its block size, "
                            f"and {derived}"
                        ),
                    )
                )
            if engine is not None:
                return _mint_established(
                    subject=evidence.subject, engines=(engine,), laws=(law,), corroborated_by=()
                )
    if product:
        law = judge(product, fd_version, CapacitySource.LABEL_BLOCKS_TIMES_BLOCK_SIZE)
        if law is not None and law.authority is CapacityAuthority.AUTHORITATIVE:
            engines = tuple(product_engine(series, b, s) for series, b, s in product[:1])
            return _mint_established(
                subject=evidence.subject, engines=engines, laws=(law,), corroborated_by=()
            )
        if law is not None:
            _, b, s = product[0]
            problems.append(
                (
                    CapacityReason.INSUFFICIENT_AUTHORITY,
                    (
                        f"only num_gpu_blocks={b.value} and block_size={s.value} are "
                        f"labelled; {law.statement}"
                    ),
                )
            )
    if not problems:
        return _mint_refused(
            subject=evidence.subject,
            reason=CapacityReason.CAPACITY_UNOBSERVED,
            detail="no capacity line in the log and no kv_cache_size_tokens label",
            remedy="give the launch's startup log, or probe /metrics of a ≥0.27 server",
            engines=(),
            laws=tuple(seen_laws),
        )
    order = list(CapacityReason)
    reason, detail = min(problems, key=lambda p: order.index(p[0]))
    remedies: dict[CapacityReason, str] = {
        CapacityReason.METRICS_UNPARSED: "probe again once /metrics answers in the text format",
        CapacityReason.SOURCES_CONFLICT: "give the startup log of the serving launch",
        CapacityReason.VERSION_UNOBSERVED: "read the version from the same source",
        CapacityReason.VERSION_NOT_ESTABLISHED: "none: the release is outside the law table",
        CapacityReason.LAW_NOT_ESTABLISHED: "none: no law covers this source in this release",
        CapacityReason.BLOCK_SIZE_UNOBSERVED: "give a launch that prints its block size",
        CapacityReason.INSUFFICIENT_AUTHORITY: (
            "give the launch's startup log (its capacity line), or probe a ≥0.27 server "
            "(kv_cache_size_tokens)"
        ),
    }
    return _mint_refused(
        subject=evidence.subject,
        reason=reason,
        detail=detail,
        remedy=remedies[reason],
        engines=(),
        laws=tuple(seen_laws),
    )


def _engines_summary(engines: Sequence[EngineCapacity]) -> str:
    """``engine 0: 4,194,304 tokens`` for each engine (the first three, then a count).

    Never empty: an established or reported capacity has a figure, and a refusal shows
    its figures only when it holds some."""
    shown = [f"engine {e.engine}: {e.tokens}" for e in engines[:3]]
    more = [f"…({len(engines)} engines)"] if len(engines) > 3 else []
    return "; ".join(shown + more)
