"""What a launch's parallel layout resolves to: its sizes and the global rank each worker
names.

Resolved, not decided: nothing here establishes or refuses a claim.
:mod:`vllm_evidence.decisions.parallel` decides from these, and the startup-log
renderers (the ``log`` text and its JSON) read the same derivation, :func:`launch_parallel`,
so what the text says the JSON says.

* The sizes (stage 1 of the parallel decision): tensor, pipeline, data and
  prefill-context parallel sizes read from the launch's engine-init line (with the
  non-default args for a DP size the line does not print, and the engines' own tags
  for independent DP engines that each print DP=1) or from a parsed ``/server_info``,
  as a :class:`ResolvedParallel` with its source; or, when that source is incomplete or
  names a world past any deployment, the reason why not.  A ``/get_world_size``
  product is never read here: 2 is TP=2, PP=2 or DP=2 alike.
* The global ranks: the rank a worker's rank line names in the DP-wide world, or, for
  independent engines, in its engine's own world with the engine from the line's tag
  or the same process's compile-cache lines (:func:`attribute`); the rank a worker's
  own tag name gives (:func:`worker_tag_rank`).
"""

from __future__ import annotations

from typing import final

import attrs

from vllm_evidence._bounds import MAX_WORLD_SIZE
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.startup_log import (
    CompileCacheObservation,
    Launch,
    ProcessTag,
    RankObservation,
    WorkerNameForm,
)
from vllm_evidence.readback.evidence import Evidence, Source, log_source
from vllm_evidence.upstream.releases import ReleaseSpan, span

__all__ = [
    "COMPILE_CACHE_NAMES_DP_ENGINE",
    "GlobalRank",
    "LaunchParallel",
    "ResolvedParallel",
    "StatedEngine",
    "attribute",
    "beyond_bounds",
    "data_parallel_engines",
    "global_rank",
    "independent_engines",
    "launch_parallel",
    "layout_sizes",
    "resolve_from_http",
    "resolve_from_log",
    "stated_engines",
    "unmapped_reasons",
    "worker_tag_rank",
    "worker_tags",
]


@final
@attrs.frozen(init=False, repr=False)
class ResolvedParallel(Sealed):
    """Resolved parallel sizes from one source (stage 1)."""

    __public_constructor__ = (
        "vllm_evidence.decisions.decide_parallel() or "
        "vllm_evidence.readback.parallel.launch_parallel()"
    )

    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    prefill_context_parallel_size: int
    source: Source
    data_parallel_note: str | None
    """How the DP size was read when the source does not print it (else ``None``)."""

    @property
    def ranks_per_engine(self) -> int:
        """TP × PP × PCP: the world size of one DP engine."""
        return (
            self.tensor_parallel_size
            * self.pipeline_parallel_size
            * self.prefill_context_parallel_size
        )

    @property
    def world_size(self) -> int:
        """TP × PP × PCP × DP: the world the workers join (``world_size_across_dp``)."""
        return self.ranks_per_engine * self.data_parallel_size

    def expected_ranks(self) -> tuple[int, ...]:
        """Every global rank that must be present: ``0 .. TP×PP×PCP×DP - 1``.

        vLLM numbers a worker of DP engine ``d`` as ``d × (TP×PP×PCP) + local rank``
        and logs that global rank with ``world_size_across_dp``
        (``distributed/parallel_state.py::init_distributed_environment``, v0.32.0
        L1840-1912).
        """
        return tuple(range(self.world_size))

    def _repr_summary(self) -> str:
        return f"{self._sizes_summary()}, from {self.source.where}"

    def _sizes_summary(self) -> str:
        """``TP=2 PP=1 DP=1`` (``PCP=…`` too, when it is not 1)."""
        pcp = self.prefill_context_parallel_size
        return (
            f"TP={self.tensor_parallel_size} PP={self.pipeline_parallel_size} "
            f"DP={self.data_parallel_size}" + (f" PCP={pcp}" if pcp != 1 else "")
        )


_mint_resolved = minter(ResolvedParallel, ResolvedParallel.__attrs_init__)


def resolve_from_log(launch: Launch) -> ResolvedParallel | str | None:
    """Stage 1 from the launch's engine-init line; a reason string when incomplete."""
    config = launch.engine_config
    if config is None:
        return None
    tp, pp = config.tensor_parallel_size, config.pipeline_parallel_size
    if tp is None or pp is None:
        return f"the engine-init line (line {config.line}) does not print TP and PP sizes"
    dp = config.data_parallel_size
    note = None
    if dp == 1:
        independent = _independent_engines(launch)
        if isinstance(independent, str):
            return independent
        if independent is not None:
            dp, note = independent
    if dp is None:
        args = launch.non_default_args[0] if launch.non_default_args else None
        if args is None:
            return (
                f"the engine-init line (line {config.line}) does not print "
                "data_parallel_size and the launch has no non-default args line"
            )
        if args.data_parallel_size is not None:
            dp = args.data_parallel_size
            note = f"data_parallel_size from the non-default args (line {args.line})"
        else:
            dp = 1
            note = (
                f"data_parallel_size absent from the non-default args (line {args.line}): "
                "the default, 1"
            )
    pcp = config.prefill_context_parallel_size or 1
    too_large = beyond_bounds(tp, pp, pcp, dp, f"the engine-init line (line {config.line})")
    if too_large is not None:
        return too_large
    return _mint_resolved(
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        data_parallel_size=dp,
        prefill_context_parallel_size=pcp,
        source=log_source(launch, config.line, config.process),
        data_parallel_note=note,
    )


def data_parallel_engines(launch: Launch) -> list[int]:
    """The DP engine indexes the launch's process tags name (``EngineCore_DP<i>``), over
    every observation that carries a tag."""
    tags: list[ProcessTag | None] = [
        *(o.process for o in launch.engine_configs),
        *(o.process for o in launch.capacity),
        *(o.process for o in launch.ranks),
        *(o.process for o in launch.available_memory),
        *(o.process for o in launch.executor_observations),
    ]
    return sorted({t.dp_engine for t in tags if t is not None and t.dp_engine is not None})


def _independent_engines(launch: Launch) -> tuple[int, str] | str | None:
    """The launch's DP size when its engine-init lines print DP=1 for independent engines.

    For a dense model vLLM runs each DP engine on its own and resets its parallel
    configuration to DP=1 before that engine prints its engine-init line
    (``ParallelConfig.reconfigure_for_independent_dp_rank()``, v0.29.0
    ``config/parallel.py`` L1070, ``v1/engine/core.py`` L1332-1336; the same reset inline
    from v0.20.0): the engine-init line then says DP=1 while the launch runs N engines
    (only the engine of local DP rank 0 prints it, v0.29.0 ``v1/engine/core.py`` L122).
    The N comes from the non-default args (as given) or, without them, from the
    ``EngineCore_DP<i>`` tags of the launch's lines (one capacity line per engine).
    ``None``: no sign of more than one engine; a string: the signs disagree.
    """
    engines = data_parallel_engines(launch)
    args = next((a for a in launch.non_default_args if a.data_parallel_size is not None), None)
    given = args.data_parallel_size if args is not None else None
    shown = f"lines from DP engines {engines}"
    if args is not None and given is not None and given > 1:
        if engines and engines[-1] >= given:
            return (
                f"the non-default args (line {args.line}) give data_parallel_size {given}, "
                f"but the log has {shown}"
            )
        return given, (
            "the engine-init line prints data_parallel_size=1 (a dense model's DP engines "
            f"run independently); data_parallel_size {given} from the "
            f"non-default args (line {args.line})" + (f", {shown}" if engines else "")
        )
    if len(engines) < 2:
        return None
    if engines != list(range(len(engines))):
        return f"{shown}: not the engines 0..{len(engines) - 1}, so the DP size is unknown"
    if launch.non_default_args:
        return (
            f"the non-default args (line {launch.non_default_args[0].line}) give "
            f"data_parallel_size {given or 1}, but the log has {shown}"
        )
    return len(engines), (
        "the engine-init line prints data_parallel_size=1 (a dense model's DP engines "
        f"run independently); {shown}, and no non-default args line"
    )


def independent_engines(launch: Launch, configuration: ResolvedParallel) -> bool:
    """Whether the launch's engines each ran alone: its engine-init line says DP=1 and
    the launch resolved to DP>1 (:func:`resolve_from_log`)."""
    config = launch.engine_config
    return (
        config is not None
        and config.data_parallel_size == 1
        and configuration.data_parallel_size > 1
    )


#: The releases whose torch.compile cache directory ``rank_R_D`` names the worker's DP
#: engine in ``D``, also for a dense model's independent engines.  ``D`` is
#: ``parallel_config.data_parallel_index`` (``compilation/decorators.py`` L521-522 and
#: ``compilation/backends.py`` L1051-1052 in 0.20.0; L561-562, L1076-1077 in 0.26.0;
#: L563-564, L1076-1077 in 0.29.0; L583-584, L1083-1084 in 0.32.0), which the engine
#: process sets to its DP rank before it resets an independent engine to DP=1 and which
#: that reset leaves alone (``v1/engine/core.py`` L1098-1109 in 0.20.0, L1287-1298 in
#: 0.26.0, L1326-1335 in 0.29.0, L1472-1482 in 0.32.0, each with vLLM's comment "Note
#: that parallel_config.data_parallel_index will still reflect the original DP rank";
#: ``reconfigure_for_independent_dp_rank()`` resets ``data_parallel_rank`` only,
#: ``config/parallel.py`` L1070-1077 in 0.29.0, L1172-1180 in 0.32.0).  ``R`` is
#: ``parallel_config.rank``, the worker's rank in its engine's own world
#: (``v1/worker/worker_base.py`` L80 in 0.20.0, L81 in 0.26.0, L86 in 0.29.0 and
#: 0.32.0).  Up to 0.11.0 ``D`` is another field, ``data_parallel_rank``
#: (``compilation/backends.py`` L410 in 0.8.5, L497 in 0.9.2, L537 in 0.10.1.1 and
#: 0.11.0), which the releases from 0.20.0 reset to 0 in an independent engine; up to
#: 0.11.0 no engine is independent (every DP engine keeps its DP rank, ``v1/engine/core.py``
#: L689-695 in 0.11.0), so its workers' rank lines already name global ranks and the
#: cache line is not read there, nor between 0.11.0 and 0.20.0 (not read for this) or
#: after 0.32.0.
COMPILE_CACHE_NAMES_DP_ENGINE: ReleaseSpan = span("0.20.0", "0.32.0")

StatedEngine = tuple[int, int, int]
"""``(engine-local rank, DP engine, line)``: what a worker process's compile-cache lines
state, at the first line that stated it."""


def stated_engines(launch: Launch) -> dict[str, StatedEngine | str] | str:
    """What each worker process of the launch states about its own DP engine, by process
    tag: ``(rank, engine, line)`` when every compile-cache line of that process says the
    same ``rank_R_D``, else why not (two statements disagree: never guessed between).

    A string instead of a mapping: the launch's release is not one whose cache line names
    the engine (:data:`COMPILE_CACHE_NAMES_DP_ENGINE`), so no line is read.  One pass over
    the launch's cache lines.
    """
    if not launch.compile_cache:
        return {}
    version = launch.version
    if version is None or version.version is None:
        return "the launch's version is not established, so its compile-cache lines are not read"
    if not COMPILE_CACHE_NAMES_DP_ENGINE.contains(version.version):
        return (
            f"vLLM {version.text}'s compile-cache lines are read only for "
            f"{COMPILE_CACHE_NAMES_DP_ENGINE} (where their rank_R_D names the DP engine)"
        )
    stated: dict[str, StatedEngine | str] = {}
    first: dict[str, CompileCacheObservation] = {}
    for obs in launch.compile_cache:
        if obs.process is None:
            continue
        key = obs.process.text
        seen = first.setdefault(key, obs)
        if key not in stated:
            stated[key] = (obs.rank, obs.data_parallel_index, obs.line)
        elif isinstance(stated[key], tuple) and (seen.rank, seen.data_parallel_index) != (
            obs.rank,
            obs.data_parallel_index,
        ):
            stated[key] = (
                f"process ({key}) states {_cache_said(seen)} and {_cache_said(obs)} in its "
                "compile-cache lines"
            )
    return stated


def _cache_said(obs: CompileCacheObservation) -> str:
    """``rank_0_1 (line 9, aot_saved)``."""
    return f"rank_{obs.rank}_{obs.data_parallel_index} (line {obs.line}, {obs.form.value})"


def attribute(
    obs: RankObservation,
    configuration: ResolvedParallel,
    *,
    independent: bool,
    stated: dict[str, StatedEngine | str] | str | None = None,
) -> tuple[int, int | None] | None:
    """The global rank a worker line names, with the compile-cache line that named its
    engine (its line number) when one did, or ``None`` when it cannot be mapped.

    A line in the DP-wide world (``world_size_across_dp``) names its global rank.  With
    independent DP engines (``independent``: the engine-init line says DP=1 of a launch
    resolved to DP>1) each engine's workers join a world of their own (TP×PP×PCP,
    ranks from 0), so the line's rank is local to its engine, and the engine comes from
    the line's ``EngineCore_DP<i>`` tag or, for a bare ``(Worker pid=N)`` tag, from the
    same process's own compile-cache lines (``stated``, :func:`stated_engines`), which
    must name the same engine-local rank: global rank = i × (TP×PP×PCP) + local rank.
    An engine-local line whose engine neither says is never guessed at; nor is one whose
    tag and cache lines name different engines, or whose cache lines disagree.
    """
    width = configuration.ranks_per_engine
    if obs.world_size == configuration.world_size:
        return obs.rank, None
    if not independent or obs.world_size != width or obs.rank >= width:
        return None
    engine = obs.process.dp_engine if obs.process is not None else None
    via: int | None = None
    said = (
        stated.get(obs.process.text)
        if isinstance(stated, dict) and obs.process is not None
        else None
    )
    if isinstance(said, str):
        return None
    if said is not None:
        rank, said_engine, via = said
        if rank != obs.rank or (engine is not None and engine != said_engine):
            return None
        engine = said_engine
    if engine is None or engine >= configuration.data_parallel_size:
        return None
    return engine * width + obs.rank, via


def global_rank(
    obs: RankObservation,
    configuration: ResolvedParallel,
    *,
    independent: bool,
    stated: dict[str, StatedEngine | str] | str | None = None,
) -> int | None:
    """The global rank a worker line names (:func:`attribute`), or ``None``."""
    found = attribute(obs, configuration, independent=independent, stated=stated)
    return None if found is None else found[0]


def worker_tag_rank(tag: ProcessTag, configuration: ResolvedParallel) -> int | None:
    """The global rank a worker process's own tag names, or ``None`` when it cannot.

    vLLM names a MultiprocExecutor worker by its groups: ``Worker_DP1_PP0_TP1`` (v0.11 on:
    ``_DP``/``_PP``/``_PCP``/``_TP``/``_DCP``/``_EP``, each only when that group has more
    than one rank; v0.29.0 ``v1/executor/multiproc_executor.py`` L1080-1093),
    ``VllmWorker TP1`` (v0.10.1.1 L387-391) or ``VllmWorker rank=1`` (v0.8.5, v0.9.2
    L294, L346: the engine-local rank); the adapter reads the name into those parts
    (:class:`~vllm_evidence.adapters.startup_log.WorkerName`).  Ranks are laid out TP
    fastest, then PCP, then PP, then DP (``rank = dp × (PP×PCP×TP) + (pp × PCP + pcp) ×
    TP + tp``).  A group of more than one rank that the name leaves out, a group named
    twice, or an index past its size, is unmappable.
    """
    worker = tag.worker
    if worker is None or tag.outer is not None:
        return None
    c = configuration
    width = c.ranks_per_engine
    if worker.form is WorkerNameForm.RANK:
        local = worker.rank
        ok = local is not None and local < width and c.data_parallel_size == 1
        return local if ok else None
    if worker.form is WorkerNameForm.TP:
        tp = dict(worker.groups).get("TP")
        ok = tp is not None and tp < c.tensor_parallel_size and width == c.tensor_parallel_size
        return tp if ok and c.data_parallel_size == 1 else None
    if worker.form is not WorkerNameForm.GROUPS:
        return None
    fields: dict[str, int] = {}
    for key, value in worker.groups:
        if key in fields:
            return None
        fields[key] = value
    sizes = (
        ("DP", c.data_parallel_size),
        ("PP", c.pipeline_parallel_size),
        ("PCP", c.prefill_context_parallel_size),
        ("TP", c.tensor_parallel_size),
    )
    index: dict[str, int] = {}
    for key, size in sizes:
        found = fields.get(key)
        if found is None and size > 1:
            return None  # the group has several ranks but the name does not say which
        found = found or 0
        if found >= size:
            return None
        index[key] = found
    if set(fields) - {key for key, _ in sizes} - {"DCP", "EP"}:
        return None
    local = (index["PP"] * c.prefill_context_parallel_size + index["PCP"]) * c.tensor_parallel_size
    return index["DP"] * width + local + index["TP"]


def worker_tags(launch: Launch) -> list[tuple[ProcessTag, int]]:
    """Every worker process tag of the launch's observations, with the first line it
    tagged (rank lines, memory lines, executor markers), in line order."""
    seen: dict[str, tuple[ProcessTag, int]] = {}
    tagged = [
        *((o.process, o.line) for o in launch.ranks),
        *((o.process, o.line) for o in launch.available_memory),
        *((o.process, o.line) for o in launch.executor_observations),
    ]
    for tag, line in sorted(tagged, key=lambda pair: pair[1]):
        if tag is None or tag.worker is None:
            continue
        seen.setdefault(tag.text, (tag, line))
    return list(seen.values())


def beyond_bounds(tp: int, pp: int, pcp: int, dp: int, where: str) -> str | None:
    """Why sizes that multiply past :data:`MAX_WORLD_SIZE` ranks are not resolved.

    The expected ranks are derived from these sizes; a world larger than any deployment
    is refused here, before anything is built from it.
    """
    world = tp * pp * pcp * dp
    if world <= MAX_WORLD_SIZE:
        return None
    return (
        f"{where} gives TP×PP×PCP×DP = {world:,} ranks, more than any deployment this "
        f"package reads (at most {MAX_WORLD_SIZE:,})"
    )


def resolve_from_http(evidence: Evidence) -> ResolvedParallel | str | None:
    """Stage 1 from a parsed ``/server_info``; a reason string when incomplete."""
    info = evidence.server_info()
    if info is None:
        return None
    observed, source = info
    p = observed.parallel
    if p.tensor_parallel_size is None or p.pipeline_parallel_size is None:
        return f"{source} does not carry TP and PP sizes"
    if p.data_parallel_size is None:
        return f"{source} does not carry data_parallel_size (the text form before 0.10.2)"
    pcp = p.prefill_context_parallel_size or 1
    too_large = beyond_bounds(
        p.tensor_parallel_size, p.pipeline_parallel_size, pcp, p.data_parallel_size, str(source)
    )
    if too_large is not None:
        return too_large
    return _mint_resolved(
        tensor_parallel_size=p.tensor_parallel_size,
        pipeline_parallel_size=p.pipeline_parallel_size,
        data_parallel_size=p.data_parallel_size,
        prefill_context_parallel_size=pcp,
        source=source,
        data_parallel_note=None,
    )


def layout_sizes(c: ResolvedParallel) -> tuple[int, int, int, int]:
    return (
        c.tensor_parallel_size,
        c.pipeline_parallel_size,
        c.data_parallel_size,
        c.prefill_context_parallel_size,
    )


def unmapped_reasons(stated: dict[str, StatedEngine | str] | str) -> list[str]:
    """Why the compile-cache lines name no engine for a worker (:func:`stated_engines`):
    the release's lines are not read, or a process stated two engines."""
    if isinstance(stated, str):
        return [stated]
    return [said for said in stated.values() if isinstance(said, str)]


@final
@attrs.frozen(init=False, repr=False)
class GlobalRank(Sealed):
    """The global rank one worker rank line names (:func:`attribute`)."""

    __public_constructor__ = "vllm_evidence.readback.parallel.launch_parallel()"

    rank: int
    line: int
    """The rank line."""
    pid: int | None
    engine_line: int | None
    """The compile-cache line that named the worker's DP engine, when one did."""

    def _repr_summary(self) -> str:
        via = "" if self.engine_line is None else f", engine from line {self.engine_line}"
        return f"rank {self.rank}, line {self.line}{via}"


_mint_global_rank = minter(GlobalRank, GlobalRank.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class LaunchParallel(Sealed):
    """A launch's resolved sizes and the global ranks its rank lines name, derived once
    for everything that shows them (the ``log`` text and its JSON)."""

    __public_constructor__ = "vllm_evidence.readback.parallel.launch_parallel()"

    configuration: ResolvedParallel | None
    """The sizes as resolved from the launch (:func:`resolve_from_log`), or ``None``."""
    note: str | None
    """How the DP size was read where the engine-init line does not give it (independent
    DP engines each print DP=1), or why nothing resolved; ``None`` when the engine-init
    line gives every size."""
    ranks: tuple[GlobalRank, ...]
    """One per global rank a rank line names, by rank."""
    unmapped_lines: tuple[int, ...]
    """Worker rank lines in one engine's own world that name no DP engine."""
    unmapped_why: tuple[str, ...]
    """Why those lines are not mapped, each as the text report prints it (empty when
    every line is mapped)."""

    def _repr_summary(self) -> str:
        sizes = (
            "not resolved" if self.configuration is None else self.configuration._sizes_summary()
        )
        unmapped = f", {len(self.unmapped_lines)} unmapped" if self.unmapped_lines else ""
        return f"{sizes}, {len(self.ranks)} global rank(s){unmapped}"


_mint_launch_parallel = minter(LaunchParallel, LaunchParallel.__attrs_init__)


def launch_parallel(launch: Launch) -> LaunchParallel:
    """The launch's resolved sizes and the global rank each of its rank lines names.

    A rank named by several lines is shown at the line that also gave its engine from a
    compile-cache line, when one did (else at the last such line).  A line in one
    engine's own world of independent engines that names no engine is *unmapped*, and
    :attr:`LaunchParallel.unmapped_why` says why: how many lines name no DP engine, then
    what the compile-cache lines do not say (:func:`unmapped_reasons`).
    """
    resolved = resolve_from_log(launch)
    if not isinstance(resolved, ResolvedParallel):
        unresolved = "no engine-init line" if resolved is None else resolved
        return _mint_launch_parallel(
            configuration=None, note=unresolved, ranks=(), unmapped_lines=(), unmapped_why=()
        )
    independent = independent_engines(launch, resolved)
    stated = stated_engines(launch) if independent else {}
    ranks: dict[int, GlobalRank] = {}
    unmapped: list[int] = []
    for r in launch.ranks:
        found = attribute(r, resolved, independent=independent, stated=stated)
        if found is None:
            if independent and r.world_size == resolved.ranks_per_engine:
                unmapped.append(r.line)
        elif found[0] not in ranks or ranks[found[0]].engine_line is None:
            ranks[found[0]] = _mint_global_rank(
                rank=found[0], line=r.line, pid=r.pid, engine_line=found[1]
            )
    why: tuple[str, ...] = ()
    if unmapped:
        count = (
            f"{len(unmapped)} worker line(s) in one engine's own world name no DP engine "
            "(not mapped)"
        )
        why = (count, *unmapped_reasons(stated))
    return _mint_launch_parallel(
        configuration=resolved,
        note=resolved.data_parallel_note,
        ranks=tuple(ranks[g] for g in sorted(ranks)),
        unmapped_lines=tuple(unmapped),
        unmapped_why=why,
    )
