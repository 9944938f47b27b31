"""Parallel realization: is the parallel layout realized, with every rank present?

Two stages, each needing its own evidence:

1. **Resolved configuration** — tensor, pipeline (and prefill-context) parallel sizes
   as the server resolved them: the launch's engine-init line, or a parsed
   ``/server_info``, as :mod:`vllm_evidence._readback.parallel` resolves them.  A
   ``/get_world_size`` product never passes this stage: 2 is TP=2, PP=2 or DP=2 alike.
2. **Joined rank population** — the expected rank set is *derived* from the resolved
   configuration (ranks ``0 .. TP×PP×PCP - 1`` per DP engine), never given by a caller,
   and every one of those ranks must appear in a worker line of the *same* launch.

With a front door the subject is the serving process: a front door that was not
reached, answered only errors or restarted mid-batch establishes nothing, and the log's
ranks count only when the log-join decision joined the log to that front door (else
``log_not_joined``).  A log alone establishes the layout of its *launch*.
"""

from __future__ import annotations

import enum
from typing import TypeAlias, final

import attrs

from vllm_evidence._adapters.startup_log import Launch, ProcessTag, RankObservation
from vllm_evidence._readback.evidence import Evidence, Source, Subject, log_source, parsed
from vllm_evidence._readback.parallel import (
    COMPILE_CACHE_NAMES_DP_ENGINE,
    SHUTDOWN_KILL_NAMES_DESCENDANTS,
    GlobalRank,
    RankAttribution,
    ResolvedParallel,
    attribute,
    engine_disagreements,
    independent_engines,
    launch_parallel,
    layout_sizes,
    resolve_from_http,
    resolve_from_log,
    stated_engines,
    tree_engines,
    unmapped_reasons,
)
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions._common import (
    rank_ranges,
    refusal_summary,
    scope,
    serving_decision,
)
from vllm_evidence.decisions._life import Needs
from vllm_evidence.upstream import (
    Law,
    LawNotEstablished,
    ParallelEvidenceLaw,
    ReleaseLaws,
    Route,
)

__all__ = [
    "ParallelDecision",
    "ParallelEstablished",
    "ParallelReason",
    "ParallelRefused",
    "PresentRank",
    "ResolvedParallel",
]


class ParallelReason(enum.Enum):
    """Why the parallel layout is, or is not, established as realized (earliest first)."""

    ESTABLISHED = "established"
    FRONT_DOOR_UNREACHABLE = "front_door_unreachable"
    FRONT_DOOR_NOT_ANSWERING = "front_door_not_answering"
    FRONT_DOOR_RESTARTED = "front_door_restarted"
    FRONT_DOOR_SEVERAL_PROCESSES = "front_door_several_processes"
    LOG_NOT_JOINED = "log_not_joined"
    RANK_LOST = "rank_lost"
    ENGINE_DEAD = "engine_dead"
    LAUNCH_NEVER_STARTED = "launch_never_started"
    CONFIGURATION_UNOBSERVED = "configuration_unobserved"
    VERSION_UNOBSERVED = "version_unobserved"
    VERSION_NOT_ESTABLISHED = "version_not_established"
    CONFIGURATION_CONFLICT = "configuration_conflict"
    POPULATION_UNOBSERVED = "population_unobserved"
    JOIN_UNESTABLISHED = "join_unestablished"
    WORLD_SIZE_MISMATCH = "world_size_mismatch"
    RANKS_UNATTRIBUTED = "ranks_unattributed"
    RANKS_MISSING = "ranks_missing"


@final
@attrs.frozen(init=False, repr=False)
class PresentRank(Sealed):
    """One expected rank, seen in a worker line of the launch."""

    __public_constructor__ = "vllm_evidence.decisions.decide_parallel()"

    data_parallel_rank: int
    rank: int
    pid: int | None
    source: Source

    def _repr_summary(self) -> str:
        pid = "" if self.pid is None else f", pid {self.pid}"
        return f"rank {self.rank}, DP rank {self.data_parallel_rank}{pid}, {self.source.where}"


_mint_present = minter(PresentRank, PresentRank.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ParallelEstablished(Sealed):
    """The layout is realized: every derived rank is present in the same launch."""

    __public_constructor__ = "vllm_evidence.decisions.decide_parallel()"

    subject: Subject
    configuration: ResolvedParallel
    ranks: tuple[PresentRank, ...]
    law: Law | LawNotEstablished | None
    """The law for the configuration's route: ``None``, because an established layout's
    configuration is always the launch's own engine-init line (ranks are only ever joined
    with the configuration of the same launch), which no route law scopes."""

    @property
    def reason(self) -> ParallelReason:
        """Always :attr:`ParallelReason.ESTABLISHED`."""
        return ParallelReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        c = self.configuration
        # A rank line printed before the worker's process tag (0.11) names no pid: its
        # place in the log says where it was seen instead.
        pids = ", ".join(
            f"rank {r.rank} pid {r.pid}" if r.pid is not None else f"rank {r.rank} ({r.source})"
            for r in self.ranks
        )
        return (
            f"TP={c.tensor_parallel_size} PP={c.pipeline_parallel_size} "
            f"DP={c.data_parallel_size} from {c.source}; every expected rank present ({pids})"
        )

    def _repr_summary(self) -> str:
        ranks = rank_ranges(r.rank for r in self.ranks)
        return f"{self.configuration._sizes_summary()}, ranks {ranks}"


@final
@attrs.frozen(init=False, repr=False)
class ParallelRefused(Sealed):
    """The layout is not established as realized, and the earliest missing piece."""

    __public_constructor__ = "vllm_evidence.decisions.decide_parallel()"

    subject: Subject
    reason: ParallelReason
    detail: str
    remedy: str
    configuration: ResolvedParallel | None
    """Stage 1's result, when stage 1 passed."""
    expected_ranks: tuple[int, ...] | None
    present: tuple[PresentRank, ...]
    missing_ranks: tuple[int, ...]
    world_size_product: int | None
    """``/get_world_size``, when read: it narrows, never decides."""
    law: Law | LawNotEstablished | None

    def _repr_summary(self) -> str:
        figures = [] if self.configuration is None else [self.configuration._sizes_summary()]
        if self.missing_ranks:
            figures.append(f"missing ranks {rank_ranges(self.missing_ranks)}")
        return refusal_summary(self.reason, self.detail, *figures)


ParallelDecision: TypeAlias = ParallelEstablished | ParallelRefused

_mint_established = minter(ParallelEstablished, ParallelEstablished.__attrs_init__)
_mint_refused = minter(ParallelRefused, ParallelRefused.__attrs_init__)


def _population(
    launch: Launch, configuration: ResolvedParallel
) -> tuple[ParallelReason, str, tuple[PresentRank, ...], tuple[int, ...]]:
    """Stage 2 on the launch's worker lines (global ranks in the DP-wide world)."""
    width = configuration.ranks_per_engine
    present: dict[int, tuple[RankObservation, GlobalRank]] = {}
    lines: list[RankObservation] = []
    untagged: list[RankObservation] = []
    independent = independent_engines(launch, configuration)
    # Independent engines' workers join worlds of their own: the engine of a bare
    # (Worker pid=N) comes from that process's own compile-cache lines, or the shutdown's
    # force kill of its engine's process tree, or from nothing.
    stated = stated_engines(launch) if independent else {}
    trees = tree_engines(launch) if independent else {}
    for obs in launch.ranks:
        found = attribute(obs, configuration, independent=independent, stated=stated, trees=trees)
        if found is None:
            if independent and obs.world_size == width:
                untagged.append(obs)
            continue
        lines.append(obs)
        present.setdefault(found.rank, (obs, found))
    # A worker that printed a rank line is judged by it: its tag adds nothing, and a
    # tag never overrides what the worker's own world says.  The workers seen only by
    # their tag are read as the log's own derivation reads them (launch_parallel).
    derived = launch_parallel(launch)
    tag_lines: dict[int, tuple[int, ProcessTag | None]] = {
        g.rank: (g.line, g.process)
        for g in derived.ranks
        if g.attribution is RankAttribution.WORKER_TAG and g.rank not in present
    }
    unmapped_tags = [tag.text for tag, _ in derived.unmapped_tags]
    expected = configuration.expected_ranks()
    ranks = tuple(
        _mint_present(
            data_parallel_rank=g // width,
            rank=g,
            pid=present[g][0].pid,
            # Where the global rank was read: the rank line, or the compile-cache line
            # of the same process that named its DP engine.
            source=log_source(
                launch, present[g][1].engine_line or present[g][0].line, present[g][0].process
            ),
        )
        for g in expected
        if g in present
    ) + tuple(
        _mint_present(
            data_parallel_rank=g // width,
            rank=g,
            pid=_pid(tag_lines[g][1]),
            source=log_source(launch, tag_lines[g][0], tag_lines[g][1]),
        )
        for g in expected
        if g not in present and g in tag_lines
    )
    ranks = tuple(sorted(ranks, key=lambda r: r.rank))
    missing = tuple(g for g in expected if g not in present and g not in tag_lines)
    if not missing and ranks:
        return ParallelReason.ESTABLISHED, "", ranks, missing
    if missing and unmapped_tags:
        shown = ", ".join(unmapped_tags[:4])
        return (
            ParallelReason.RANKS_UNATTRIBUTED,
            (
                f"ranks {list(missing)} not attributed: worker tag(s) {shown} do not map to "
                f"a global rank under TP={configuration.tensor_parallel_size} "
                f"PP={configuration.pipeline_parallel_size} "
                f"DP={configuration.data_parallel_size}"
            ),
            ranks,
            missing,
        )
    if not launch.ranks and not ranks:
        return (
            ParallelReason.POPULATION_UNOBSERVED,
            "the launch has no worker rank lines",
            ranks,
            missing,
        )
    if untagged and missing:
        where = ", ".join(str(obs.line) for obs in untagged[:5])
        pids = sorted({obs.pid for obs in untagged if obs.pid is not None})
        why = [
            *unmapped_reasons(stated),
            *unmapped_reasons(trees),
            *engine_disagreements([obs.process for obs in untagged], stated, trees),
        ][:3]
        return (
            ParallelReason.RANKS_UNATTRIBUTED,
            (
                f"ranks {list(missing)} not attributed: the worker lines of {len(pids)} "
                f"process(es) in one engine's own world of {width} (line {where}) carry "
                "no DP engine tag, and neither a compile-cache line of the same process "
                "nor the shutdown's force kill of an engine's process tree names one "
                f"engine, so {_OWN_WORLD}" + "".join(f"; {w}" for w in why)
            ),
            ranks,
            missing,
        )
    if not lines and not tag_lines:
        sizes = sorted({r.world_size for r in launch.ranks})
        return (
            ParallelReason.WORLD_SIZE_MISMATCH,
            (
                f"the launch's worker lines joined world size(s) {sizes}, "
                f"not {configuration.world_size}"
            ),
            ranks,
            missing,
        )
    if not missing:
        return ParallelReason.ESTABLISHED, "", ranks, missing
    collapsed = sum(r.repeated or 0 for r in launch.ranks)
    if collapsed:
        return (
            ParallelReason.RANKS_UNATTRIBUTED,
            (
                f"ranks {list(missing)} not attributed: Ray collapsed {collapsed} similar "
                "worker line(s) ('[repeated Nx across cluster]')"
            ),
            ranks,
            missing,
        )
    return (
        ParallelReason.RANKS_MISSING,
        f"expected ranks {list(missing)} have no worker line",
        ranks,
        missing,
    )


_OWN_WORLD = "which engine each belongs to is not printed"


def _pid(tag: ProcessTag | None) -> int | None:
    return tag.pid if tag is not None else None


def _engine_remedy(launch: Launch) -> str:
    """What the launch's release can print that ties a worker of an independent DP engine
    to its engine (:data:`COMPILE_CACHE_NAMES_DP_ENGINE`,
    :data:`SHUTDOWN_KILL_NAMES_DESCENDANTS`)."""
    version = launch.version.version if launch.version is not None else None
    ways = []
    if version is not None and COMPILE_CACHE_NAMES_DP_ENGINE.contains(version):
        ways.append(
            "run without --enforce-eager, so each worker's compile-cache line names its DP "
            f"engine (vLLM {COMPILE_CACHE_NAMES_DP_ENGINE})"
        )
    if version is not None and SHUTDOWN_KILL_NAMES_DESCENDANTS.contains(version):
        ways.append(
            "give the log through the server's shutdown, whose force-kill lines list each "
            f"engine core's worker processes (vLLM {SHUTDOWN_KILL_NAMES_DESCENDANTS})"
        )
    if not ways:
        return (
            "none from this log: no line this release is read for ties a worker of an "
            "independent DP engine to its engine; probe /server_info for the sizes"
        )
    return "; or ".join(ways)


def decide_parallel(evidence: Evidence) -> ParallelDecision:
    """Whether the resolved parallel layout is realized with every rank present: of the
    serving process with a front door, of the log's launch without one."""
    return serving_decision(
        evidence, _decide, ParallelEstablished, _refusal, needs=Needs.EVERY_WORKER
    )


def _refusal(
    evidence: Evidence, reason: str, detail: str, remedy: str, alone: ParallelDecision | None
) -> ParallelRefused:
    """A refusal before any configuration is resolved: the gate's, or ``log_not_joined``
    (which keeps the front door's own ``/get_world_size`` product)."""
    product = alone.world_size_product if isinstance(alone, ParallelRefused) else None
    return _mint_refused(
        subject=evidence.subject,
        reason=ParallelReason(reason),
        detail=detail,
        remedy=remedy,
        configuration=None,
        expected_ranks=None,
        present=(),
        missing_ranks=(),
        world_size_product=product,
        law=None,
    )


def _decide(evidence: Evidence) -> ParallelDecision:
    product_obs = None
    if evidence.front_door is not None:
        product_obs = parsed(evidence.front_door.world_size)
    product = product_obs.product if product_obs is not None else None

    def refuse(
        reason: ParallelReason,
        detail: str,
        remedy: str,
        *,
        configuration: ResolvedParallel | None = None,
        present: tuple[PresentRank, ...] = (),
        missing: tuple[int, ...] = (),
        law: Law | LawNotEstablished | None = None,
    ) -> ParallelRefused:
        return _mint_refused(
            subject=evidence.subject,
            reason=reason,
            detail=detail,
            remedy=remedy,
            configuration=configuration,
            expected_ranks=None if configuration is None else configuration.expected_ranks(),
            present=present,
            missing_ranks=missing,
            world_size_product=product,
            law=law,
        )

    launch = evidence.launch
    from_log = resolve_from_log(launch) if launch is not None else None
    from_http = resolve_from_http(evidence)
    candidates = [c for c in (from_log, from_http) if isinstance(c, ResolvedParallel)]
    if not candidates:
        why = [c for c in (from_log, from_http) if isinstance(c, str)]
        if product is not None:
            why.append(f"/get_world_size answered {product}, a product that is TP, PP or DP alike")
        detail = "; ".join(why) or "no /server_info answer and no engine-init line"
        return refuse(
            ParallelReason.CONFIGURATION_UNOBSERVED,
            detail,
            "give the launch's startup log (engine-init line), or probe /server_info "
            "with development mode on",
        )
    configuration = candidates[0]
    conflict = evidence.sources_conflict() if from_log is not None else None
    if conflict is not None:
        return refuse(
            ParallelReason.CONFIGURATION_CONFLICT,
            conflict,
            "give the startup log of the serving launch",
        )
    origin_version = (
        evidence.launch_version() if configuration is from_log else evidence.front_door_version()
    )
    laws = scope(origin_version)
    if laws is None:
        return refuse(
            ParallelReason.VERSION_UNOBSERVED,
            f"configuration from {configuration.source}, but no version from that source",
            "read the version from the same source",
            configuration=configuration,
        )
    if not isinstance(laws, ReleaseLaws):
        return refuse(
            ParallelReason.VERSION_NOT_ESTABLISHED,
            laws.statement,
            "none",
            configuration=configuration,
        )
    law: Law | LawNotEstablished | None = None
    if configuration is from_http:
        route = (
            Route.SERVER_INFO_JSON
            if "config_format=json" in configuration.source.where
            else Route.SERVER_INFO
        )
        law = laws.parallel_evidence(route)
        if not isinstance(law, ParallelEvidenceLaw):
            return refuse(
                ParallelReason.VERSION_NOT_ESTABLISHED,
                law.statement,
                "none",
                configuration=configuration,
                law=law,
            )
    if len(candidates) == 2 and layout_sizes(candidates[0]) != layout_sizes(candidates[1]):
        a, b = candidates
        return refuse(
            ParallelReason.CONFIGURATION_CONFLICT,
            f"{a.source} gives (TP, PP, DP, PCP) {layout_sizes(a)} but {b.source} gives "
            f"{layout_sizes(b)}: the log and the front door describe different servers or launches",
            "give the startup log of the serving launch",
        )
    if product is not None and product not in {
        configuration.world_size,
        configuration.ranks_per_engine,
    }:
        return refuse(
            ParallelReason.CONFIGURATION_CONFLICT,
            f"/get_world_size answered {product}, but the configuration gives "
            f"{configuration.ranks_per_engine} per engine × {configuration.data_parallel_size}",
            "check the sources describe one server",
            configuration=configuration,
            law=law,
        )
    if launch is None:
        return refuse(
            ParallelReason.POPULATION_UNOBSERVED,
            f"expected ranks {list(configuration.expected_ranks())}; no startup log shows "
            "which workers joined",
            "give the launch's startup log (per-rank worker lines)",
            configuration=configuration,
            law=law,
        )
    if from_log is None or not isinstance(from_log, ResolvedParallel):
        return refuse(
            ParallelReason.JOIN_UNESTABLISHED,
            f"configuration from {configuration.source}, worker lines from log launch "
            f"{launch.index}: nothing witnesses that the log belongs to the serving process",
            "give a log whose launch prints its engine-init line",
            configuration=configuration,
            law=law,
        )
    # From here the configuration is the launch's own engine-init line: a log-read
    # configuration has no route law.
    configuration = from_log
    reason, detail, present, missing = _population(launch, configuration)
    if reason is ParallelReason.ESTABLISHED:
        return _mint_established(
            subject=evidence.subject, configuration=configuration, ranks=present, law=None
        )
    remedy = {
        ParallelReason.POPULATION_UNOBSERVED: "give a log with the workers' start-up lines",
        ParallelReason.WORLD_SIZE_MISMATCH: "check the log belongs to this configuration",
        ParallelReason.RANKS_UNATTRIBUTED: (
            "run with Ray log deduplication off (RAY_DEDUP_LOGS=0)"
            if "Ray collapsed" in detail
            else _engine_remedy(launch)
            if _OWN_WORLD in detail
            else "give a log whose worker lines carry their process tags"
        ),
        ParallelReason.RANKS_MISSING: "a rank never started: look at that worker",
    }[reason]
    return refuse(
        reason,
        detail,
        remedy,
        configuration=configuration,
        present=present,
        missing=missing,
    )
