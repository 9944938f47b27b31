"""What a launch's parallel layout resolves to: its sizes and the global rank each worker
names.

Resolved, not decided: nothing here establishes or refuses a claim.
:mod:`vllm_evidence.decisions._parallel` decides from these, and the startup-log
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
  independent engines, in its engine's own world with the engine from the line's tag,
  the same process's compile-cache lines, or the shutdown's force kill of its engine's
  process tree (:func:`attribute`); the rank a worker's own tag name gives
  (:func:`worker_tag_rank`), each with how it was attributed (:class:`RankAttribution`).
"""

from __future__ import annotations

import enum
from typing import final

import attrs

from vllm_evidence._adapters.startup_log import (
    CompileCacheObservation,
    Launch,
    ProcessTag,
    RankObservation,
    WorkerNameForm,
)
from vllm_evidence._bounds import MAX_WORLD_SIZE
from vllm_evidence._readback.evidence import Evidence, Source, log_source
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._releases import ReleaseSpan, span

__all__ = [
    "COMPILE_CACHE_NAMES_DP_ENGINE",
    "SHUTDOWN_KILL_NAMES_DESCENDANTS",
    "GlobalRank",
    "KilledEngine",
    "LaunchParallel",
    "RankAttribution",
    "ResolvedParallel",
    "StatedEngine",
    "TaggedWorker",
    "attribute",
    "beyond_bounds",
    "data_parallel_engines",
    "engine_disagreements",
    "engine_local_rank",
    "global_rank",
    "independent_engines",
    "launch_parallel",
    "layout_sizes",
    "resolve_from_http",
    "resolve_from_log",
    "stated_engines",
    "tag_alone_rank",
    "tag_attribute",
    "tag_only_workers",
    "tree_engines",
    "unmapped_reasons",
    "worker_tag_rank",
    "worker_tags",
]


@final
@attrs.frozen(init=False, repr=False)
class ResolvedParallel(Sealed):
    """Resolved parallel sizes from one source (stage 1)."""

    __public_constructor__ = "vllm_evidence.decisions.decide_parallel() or vllm_evidence.assess()"

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
    tags = _observed_tags(launch)
    return sorted({t.dp_engine for t in tags if t is not None and t.dp_engine is not None})


def _observed_tags(launch: Launch) -> list[ProcessTag | None]:
    """The process tags of the launch's engine-init, capacity, rank, memory and executor
    lines."""
    return [
        *(o.process for o in launch.engine_configs),
        *(o.process for o in launch.capacity),
        *(o.process for o in launch.ranks),
        *(o.process for o in launch.available_memory),
        *(o.process for o in launch.executor_observations),
    ]


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


#: The releases whose shutdown names, one line each, the live descendants of every engine
#: core it force-kills: ``force killing remaining process EngineCore_DP<i> pid P`` and
#: then ``force killing sub process NAME pid C`` for each process of P's tree (v0.32.0
#: ``v1/utils.py`` ``shutdown()`` L648-658 calling ``utils/system_utils.py``
#: ``kill_process_tree()`` L207-233, which lists ``psutil.Process(P).children(
#: recursive=True)`` and logs each before it kills it).  Each engine core starts its own
#: ``mp`` workers as its children (``WorkerProc.make_worker_process``, v0.32.0
#: ``v1/executor/multiproc_executor.py`` L712-747) and names itself by its DP rank
#: (``EngineCore_DP{global_index}``, ``v1/engine/utils.py`` L284), so a worker listed in
#: the tree of ``EngineCore_DP<i>`` is engine i's.  0.29.0 and 0.31.0 kill the same tree
#: without the sub-process line (``utils/system_utils.py`` L256-278 and L206-228); 0.33.0
#: is not read for it.
SHUTDOWN_KILL_NAMES_DESCENDANTS: ReleaseSpan = span("0.32.0", "0.32.0")

KilledEngine = tuple[int, int]
"""``(DP engine, line)``: the engine whose force-killed process tree listed a pid, and the
line that listed it."""


def _engine_tags(launch: Launch) -> dict[int, set[int]]:
    """The DP engine each engine-core pid's own lines are tagged with
    (``EngineCore_DP<i> pid=P``), by pid."""
    tags = [*_observed_tags(launch), *(e.process for e in launch.life)]
    engines: dict[int, set[int]] = {}
    for tag in tags:
        if tag is not None and tag.dp_engine is not None and tag.outer is None:
            engines.setdefault(tag.pid, set()).add(tag.dp_engine)
    return engines


def tree_engines(launch: Launch) -> dict[int, KilledEngine | str] | str:
    """The DP engine whose force-killed process tree listed each pid, by pid: ``(engine,
    line)``, or why not (the pid is listed under two engines, or the root's pid is tagged
    as another engine's in the launch's own lines: never guessed between).

    A string instead of a mapping: the launch's release is not one whose shutdown names
    the descendants (:data:`SHUTDOWN_KILL_NAMES_DESCENDANTS`), so no kill line is read.
    Only the trees of engine cores (``EngineCore_DP<i>``) are read.
    """
    kills = [k for k in launch.shutdown_kills if k.dp_engine is not None and k.descendants]
    if not kills:
        return {}
    version = launch.version
    if version is None or version.version is None:
        return "the launch's version is not established, so its force-kill lines are not read"
    if not SHUTDOWN_KILL_NAMES_DESCENDANTS.contains(version.version):
        return (
            f"vLLM {version.text}'s force-kill lines are read only for "
            f"{SHUTDOWN_KILL_NAMES_DESCENDANTS} (where they list each engine core's "
            "descendants)"
        )
    tagged = _engine_tags(launch)
    found: dict[int, KilledEngine | str] = {}
    for kill in kills:
        engine = kill.dp_engine
        assert engine is not None  # noqa: S101 - filtered above
        own = tagged.get(kill.root.pid, {engine})
        for child in kill.descendants:
            said = found.get(child.pid)
            if own != {engine}:
                found[child.pid] = (
                    f"line {kill.root.line} ({kill.process.text}) force-kills {kill.root.name} "
                    f"pid {kill.root.pid}, whose own lines are tagged as DP engine(s) "
                    f"{sorted(own)}"
                )
            elif said is None:
                found[child.pid] = (engine, child.line)
            elif isinstance(said, tuple) and said[0] != engine:
                found[child.pid] = (
                    f"pid {child.pid} is force-killed as a descendant of DP engine {said[0]} "
                    f"(line {said[1]}) and of DP engine {engine} (line {child.line})"
                )
    return found


class RankAttribution(enum.Enum):
    """How a global rank was read."""

    DP_WIDE_WORLD = "dp_wide_world"
    """The worker's rank line is in the DP-wide world (``world_size_across_dp``), or, with
    no sizes resolved, in the world of a launch whose lines say it has one engine
    (:func:`launch_parallel`): its rank is global."""
    ENGINE_TAG = "engine_tag"
    """A rank line in one engine's own world, under that engine's ``EngineCore_DP<i>``
    tag."""
    COMPILE_CACHE = "compile_cache"
    """A rank line in one engine's own world, the engine from the same process's
    compile-cache lines (``rank_R_D``)."""
    SHUTDOWN_KILL = "shutdown_kill"
    """A rank line in one engine's own world, the engine from the shutdown's force kill
    of that engine's process tree, which listed the worker's pid."""
    WORKER_TAG = "worker_tag"
    """No rank line: the worker's own tag name (``Worker_TP1``) under the resolved
    sizes."""
    WORKER_TAG_ALONE = "worker_tag_alone"
    """No rank line and no resolved sizes: the worker's tag names one parallel group
    (``Worker_TP1``) beside a bare ``EngineCore`` tag (one DP engine), and vLLM names
    every group of more than one rank (:func:`tag_alone_rank`), so the index is the
    global rank.  For the log's report: no decision takes a rank whose world size the
    log does not say."""


def attribute(
    obs: RankObservation,
    configuration: ResolvedParallel,
    *,
    independent: bool,
    stated: dict[str, StatedEngine | str] | str | None = None,
    trees: dict[int, KilledEngine | str] | str | None = None,
) -> GlobalRank | None:
    """The global rank a worker line names, with how it was attributed, or ``None`` when
    it cannot be mapped.

    A line in the DP-wide world (``world_size_across_dp``) names its global rank.  With
    independent DP engines (``independent``: the engine-init line says DP=1 of a launch
    resolved to DP>1) each engine's workers join a world of their own (TP×PP×PCP,
    ranks from 0), so the line's rank is local to its engine, and the engine comes from
    what the log says of the line's process: its ``EngineCore_DP<i>`` tag, its own
    compile-cache lines (``stated``, :func:`stated_engines`, which must name the same
    engine-local rank), the shutdown's force kill of its engine's tree (``trees``,
    :func:`tree_engines`, by pid): global rank = i × (TP×PP×PCP) + local rank.  Every one
    of those that speaks must name the same engine; a line whose engine none names, or
    two name differently, or whose own statements disagree, is never guessed at.
    """
    width = configuration.ranks_per_engine
    if obs.world_size == configuration.world_size:
        return _mint_global_rank(
            rank=obs.rank,
            line=obs.line,
            pid=obs.pid,
            process=obs.process,
            attribution=RankAttribution.DP_WIDE_WORLD,
            engine_line=None,
            tree_line=None,
        )
    if not independent or obs.world_size != width or obs.rank >= width:
        return None
    engine = _engine_of(obs.process, configuration, stated, trees, rank=obs.rank)
    if engine is None:
        return None
    index, attribution, via, tree_line = engine
    return _mint_global_rank(
        rank=index * width + obs.rank,
        line=obs.line,
        pid=obs.pid,
        process=obs.process,
        attribution=attribution,
        engine_line=via,
        tree_line=tree_line,
    )


def _engine_of(
    process: ProcessTag | None,
    configuration: ResolvedParallel,
    stated: dict[str, StatedEngine | str] | str | None,
    trees: dict[int, KilledEngine | str] | str | None,
    *,
    rank: int | None,
) -> tuple[int, RankAttribution, int | None, int | None] | None:
    """The DP engine of a worker process of independent engines, as the log names it:
    ``(engine, attribution, compile-cache line, force-kill line)``, or ``None``.

    ``rank``: the engine-local rank the process's own line states, which its
    compile-cache lines must state too (``None``: no such line; the cache lines' rank is
    then the process's rank, and must be inside one engine).
    """
    if process is None:
        return None
    named: list[tuple[int, RankAttribution]] = []
    if process.dp_engine is not None:
        named.append((process.dp_engine, RankAttribution.ENGINE_TAG))
    said = stated.get(process.text) if isinstance(stated, dict) else None
    if isinstance(said, str):
        return None
    via: int | None = None
    if said is not None:
        local, said_engine, via = said
        if (rank is not None and local != rank) or local >= configuration.ranks_per_engine:
            return None
        named.append((said_engine, RankAttribution.COMPILE_CACHE))
    # A pid is looked up only for a process of this machine's tree: not a Ray worker's
    # (nested under the engine's tag, or naming an ip: maybe another machine's pid).
    local_process = process.outer is None and process.ip is None
    killed = trees.get(process.pid) if isinstance(trees, dict) and local_process else None
    if isinstance(killed, str):
        return None
    tree_line: int | None = None
    if killed is not None:
        named.append((killed[0], RankAttribution.SHUTDOWN_KILL))
        tree_line = killed[1]
    engines = {engine for engine, _ in named}
    if len(engines) != 1:
        return None
    (engine,) = engines
    if engine >= configuration.data_parallel_size:
        return None
    return engine, named[0][1], via, tree_line


def global_rank(
    obs: RankObservation,
    configuration: ResolvedParallel,
    *,
    independent: bool,
    stated: dict[str, StatedEngine | str] | str | None = None,
    trees: dict[int, KilledEngine | str] | str | None = None,
) -> int | None:
    """The global rank a worker line names (:func:`attribute`), or ``None``."""
    found = attribute(obs, configuration, independent=independent, stated=stated, trees=trees)
    return None if found is None else found.rank


#: The groups whose sizes multiply into the world (``DCP`` lies inside TP and ``EP``
#: across DP×TP: they add no rank).
_WORLD_GROUPS = frozenset({"DP", "PP", "PCP", "TP"})


def tag_alone_rank(tag: ProcessTag, launch: Launch) -> int | None:
    """The global rank a worker's tag names where no sizes resolved, or ``None``.

    Two of vLLM's own names say it together.  A bare ``EngineCore`` tag on any of the
    launch's lines says one DP engine: 0.20 on name the engine core ``EngineCore_DP<r>``
    when ``data_parallel_size > 1 or dp_rank > 0`` and ``EngineCore`` otherwise
    (v0.26.0 ``v1/engine/core.py`` L1264-1269, v0.32.0 L1405-1410; earlier releases
    print ``EngineCore_DP0``/``EngineCore_0`` even alone, never a bare one).  And the
    worker's name has every group of more than one rank (v0.29.0
    ``v1/executor/multiproc_executor.py`` L1080-1093, v0.32.0 L1088-1101), so one that
    names exactly one of PP, PCP and TP (``Worker_TP1``; ``_DCP``/``_EP`` beside it add
    no rank) has its index as its global rank.  Without the bare engine tag the name is
    a rank in its own engine only (independent DP engines' workers have the same
    names); a name with two world groups needs the inner one's size; the older forms
    give an engine-local rank: each is ``None``.
    """
    worker = tag.worker
    if worker is None or worker.form is not WorkerNameForm.GROUPS:
        return None
    if any(key == "DP" for key, _ in worker.groups) or not _one_engine(launch):
        return None
    return engine_local_rank(tag)  # one group inside the engine, its index


def engine_local_rank(tag: ProcessTag) -> int | None:
    """The rank a worker's tag names in its own engine, or ``None``: the engine-local
    rank of ``VllmWorker rank=1``, or the index of the one group inside its engine that
    a name prints (``Worker_TP1`` and ``Worker_DP1_TP1`` → 1: the engine's other groups
    have one rank each).  Which engine, a name without ``_DP`` does not say
    (:func:`tag_alone_rank` reads where the launch says one)."""
    worker = tag.worker
    if worker is None or tag.outer is not None:
        return None
    if worker.form is WorkerNameForm.RANK:
        return worker.rank
    if worker.form is not WorkerNameForm.GROUPS:
        return None
    keys = [key for key, _ in worker.groups]
    if len(set(keys)) != len(keys) or set(keys) - _WORLD_GROUPS - {"DCP", "EP"}:
        return None
    inner = [value for key, value in worker.groups if key in _WORLD_GROUPS - {"DP"}]
    if len(inner) == 1:
        return inner[0]
    # Worker_DP1: every group inside its engine has one rank.  A bare Worker is also the
    # name a worker has before it names itself: nothing is read from it.
    return 0 if not inner and "DP" in keys else None


def _no_engine_said(launch: Launch) -> str:
    """What else would map a worker's tag where no sizes resolved (:func:`tag_alone_rank`)."""
    if _one_engine(launch):
        return ""
    return (
        ", and no line under a bare EngineCore tag (0.20 on) says one engine: independent "
        "DP engines' workers have the same names"
    )


def _as_printed(obs: RankObservation, attribution: RankAttribution) -> GlobalRank:
    """The rank line's own rank as the global rank, read as ``attribution`` says."""
    return _mint_global_rank(
        rank=obs.rank,
        line=obs.line,
        pid=obs.pid,
        process=obs.process,
        attribution=attribution,
        engine_line=None,
        tree_line=None,
    )


def _one_engine(launch: Launch) -> bool:
    """Whether the launch's own lines say it has one engine, so its world is the whole
    world: a bare ``EngineCore`` tag (:func:`tag_alone_rank`), or a V0 launch, which has
    no data parallelism (``VllmWorkerProcess`` is V0's multiprocessing worker's tag,
    ``vllm/executor/multiproc_worker_utils.py``, v0.4 to v0.10; V1 names its workers
    ``VllmWorker``/``Worker…``)."""
    processes = (
        *_observed_tags(launch),
        *(e.process for e in launch.life),
        *(o.process for o in launch.blocks),
        *(o.process for o in launch.versions),
    )
    return any(
        p is not None and p.outer is None and p.name in ("EngineCore", "VllmWorkerProcess")
        for p in processes
    )


def worker_tag_rank(tag: ProcessTag, configuration: ResolvedParallel) -> int | None:
    """The global rank a worker process's own tag names, or ``None`` when it cannot.

    vLLM names a MultiprocExecutor worker by its groups: ``Worker_DP1_PP0_TP1`` (v0.11 on:
    ``_DP``/``_PP``/``_PCP``/``_TP``/``_DCP``/``_EP``, each only when that group has more
    than one rank; v0.29.0 ``v1/executor/multiproc_executor.py`` L1080-1093, v0.32.0
    L1070-1103), ``VllmWorker TP1`` (v0.10.1.1 L387-391) or ``VllmWorker rank=1``
    (v0.8.5, v0.9.2 L294, L346: the engine-local rank; ``VllmWorker-1``, the process's
    name, is read as the same); the adapter reads the name into those parts
    (:class:`~vllm_evidence._adapters.startup_log.WorkerName`).  Ranks are laid out TP
    fastest, then PCP, then PP, then DP (``rank = dp × (PP×PCP×TP) + (pp × PCP + pcp) ×
    TP + tp``).  A group of more than one rank that the name leaves out, a group named
    twice, or an index past its size, is unmappable.  So is a name of independent DP
    engines' workers (:func:`independent_engines`): each engine's DP group has one rank,
    so no name says the engine (:func:`tag_attribute` reads it from elsewhere).
    """
    return _tag_rank(tag, configuration, configuration.data_parallel_size)


def _tag_rank(tag: ProcessTag, c: ResolvedParallel, dp_size: int) -> int | None:
    """:func:`worker_tag_rank` in a world of ``dp_size`` DP ranks (1: one engine's own)."""
    worker = tag.worker
    if worker is None or tag.outer is not None:
        return None
    width = c.ranks_per_engine
    if worker.form is WorkerNameForm.RANK:
        local = worker.rank
        ok = local is not None and local < width and dp_size == 1
        return local if ok else None
    if worker.form is WorkerNameForm.TP:
        tp = dict(worker.groups).get("TP")
        ok = tp is not None and tp < c.tensor_parallel_size and width == c.tensor_parallel_size
        return tp if ok and dp_size == 1 else None
    if worker.form is not WorkerNameForm.GROUPS:
        return None
    fields: dict[str, int] = {}
    for key, value in worker.groups:
        if key in fields:
            return None
        fields[key] = value
    sizes = (
        ("DP", dp_size),
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


def tag_attribute(
    tag: ProcessTag,
    line: int,
    configuration: ResolvedParallel,
    *,
    independent: bool,
    stated: dict[str, StatedEngine | str] | str | None = None,
    trees: dict[int, KilledEngine | str] | str | None = None,
) -> GlobalRank | None:
    """The global rank a worker that printed no rank line has, from its own tag name
    (first seen at ``line``), or ``None``.

    Without independent engines the name gives it (:func:`worker_tag_rank`).  With them,
    the name gives the rank in the worker's engine (its DP group has one rank), and the
    engine comes from what the log says of the same process, as for a rank line
    (:func:`attribute`); a worker whose name gives no rank but whose own compile-cache
    lines state ``rank_R_D`` is rank ``D × (TP×PP×PCP) + R``, at that cache line.
    """
    if not independent:
        g = worker_tag_rank(tag, configuration)
        if g is None:
            return None
        return _from_tag(tag, line, g, RankAttribution.WORKER_TAG)
    local = _tag_rank(tag, configuration, 1)
    engine = _engine_of(tag, configuration, stated, trees, rank=local)
    if engine is None:
        return None
    index, _, via, tree_line = engine
    if local is None:
        said = stated.get(tag.text) if isinstance(stated, dict) else None
        if not isinstance(said, tuple):
            return None
        local = said[0]
    if via is not None:
        line = via  # the cache line that stated the engine (and the rank, if not the name)
    return _mint_global_rank(
        rank=index * configuration.ranks_per_engine + local,
        line=line,
        pid=tag.pid,
        process=tag,
        attribution=RankAttribution.WORKER_TAG,
        engine_line=via,
        tree_line=tree_line,
    )


def worker_tags(launch: Launch) -> list[tuple[ProcessTag, int]]:
    """Every worker process tag of the launch's observations, with the first line it
    tagged (rank lines, memory lines, executor markers, compile-cache lines, and any
    line with a worker's tag that names its place: :attr:`Launch.worker_tags`), in line
    order."""
    seen: dict[str, tuple[ProcessTag, int]] = {}
    tagged: list[tuple[ProcessTag | None, int]] = [
        *((o.process, o.line) for o in launch.ranks),
        *((o.process, o.line) for o in launch.compile_cache),
        *((o.process, o.line) for o in launch.available_memory),
        *((o.process, o.line) for o in launch.executor_observations),
        *launch.worker_tags,
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


def unmapped_reasons(
    stated: dict[str, StatedEngine | str] | dict[int, KilledEngine | str] | str,
) -> list[str]:
    """Why the compile-cache lines (:func:`stated_engines`) or the force-kill lines
    (:func:`tree_engines`) name no engine for a worker: the release's lines are not read,
    or a process is said to be two engines'."""
    if isinstance(stated, str):
        return [stated]
    return [said for said in stated.values() if isinstance(said, str)]


def engine_disagreements(
    processes: list[ProcessTag | None],
    stated: dict[str, StatedEngine | str] | str,
    trees: dict[int, KilledEngine | str] | str,
) -> list[str]:
    """For each of ``processes`` (once each) whose tag, compile-cache lines and force-kill
    line each name an engine, but not the same one: which says which (never guessed
    between)."""
    out: list[str] = []
    seen: set[str] = set()
    for process in processes:
        if process is None or process.text in seen:
            continue
        seen.add(process.text)
        said: list[tuple[int, str]] = []
        if process.dp_engine is not None:
            said.append((process.dp_engine, "its tag"))
        cache = stated.get(process.text) if isinstance(stated, dict) else None
        if isinstance(cache, tuple):
            said.append((cache[1], f"its compile-cache line {cache[2]}"))
        local = process.outer is None and process.ip is None
        tree = trees.get(process.pid) if isinstance(trees, dict) and local else None
        if isinstance(tree, tuple):
            said.append((tree[0], f"the force-kill line {tree[1]}"))
        if len({engine for engine, _ in said}) > 1:
            shown = ", ".join(f"{who} names DP engine {engine}" for engine, who in said)
            out.append(f"process ({process.text}): {shown}")
    return out


def tag_only_workers(launch: Launch) -> list[TaggedWorker]:
    """The worker tags (:func:`worker_tags`) of processes that printed no rank line: not
    the tag of a rank line, nor, for a process that names no ``ip`` (one machine's pids),
    a tag with the pid of one (a worker renames itself, ``Worker`` then ``Worker_TP1``;
    two workers' writes can run into one line, ``(Worker_TP0 pid=1) (Worker_TP1 pid=2)``).
    A tag nested under another is not read as a worker's either: whose line it is, is not
    certain (two processes' writes run together, or Ray's forwarding)."""
    texts = {r.process.text for r in launch.ranks if r.process is not None}
    pids = {r.process.pid for r in launch.ranks if r.process is not None and r.process.ip is None}
    return [
        (tag, line)
        for tag, line in worker_tags(launch)
        if tag.outer is None and tag.text not in texts and not (tag.ip is None and tag.pid in pids)
    ]


TaggedWorker = tuple[ProcessTag, int]
"""A worker process's tag and the first line it tagged (:func:`worker_tags`)."""


@final
@attrs.frozen(init=False, repr=False)
class GlobalRank(Sealed):
    """The global rank one worker names (:func:`attribute`, :func:`tag_attribute`), and how
    the log says it."""

    __public_constructor__ = "vllm_evidence.assess()"

    rank: int
    line: int
    """The rank line (or, for a worker with none, the first line its tag tagged, or the
    compile-cache line that stated its rank)."""
    pid: int | None
    process: ProcessTag | None
    """The worker's tag on that line."""
    attribution: RankAttribution
    engine_line: int | None
    """The compile-cache line that named the worker's DP engine, when one did."""
    tree_line: int | None
    """The shutdown's force-kill line that listed the worker's pid in its DP engine's
    process tree, when one did."""

    @property
    def how(self) -> str | None:
        """How the worker's DP engine was read, where its rank line is in one engine's
        own world, for a renderer to print after the rank: ``DP engine from compile-cache
        line 77``, ``DP engine from the shutdown's force-kill line 221`` (both, when both
        named it); ``from the worker's own tag`` for a rank read from a tag's name (``… alone:
        no sizes resolved`` where no sizes were); ``None``
        when no engine had to be read (a rank line in the DP-wide world, or an engine's
        own tag)."""
        said = []
        if self.engine_line is not None:
            said.append(f"compile-cache line {self.engine_line}")
        if self.tree_line is not None:
            said.append(f"the shutdown's force-kill line {self.tree_line}")
        if not said:
            if self.attribution is RankAttribution.WORKER_TAG:
                return "from the worker's own tag"
            if self.attribution is RankAttribution.WORKER_TAG_ALONE:
                return "from its tag and the bare EngineCore tag: no sizes resolved"
            return None
        return "DP engine from " + " and ".join(said)

    def _repr_summary(self) -> str:
        via = "" if self.engine_line is None else f", engine from line {self.engine_line}"
        if self.tree_line is not None:
            via += f", engine's tree at line {self.tree_line}"
        return f"rank {self.rank}, line {self.line}, {self.attribution.value}{via}"


_mint_global_rank = minter(GlobalRank, GlobalRank.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class LaunchParallel(Sealed):
    """A launch's resolved sizes and the global ranks its rank lines and worker tags name,
    derived once for everything that shows them (the ``log`` text and its JSON)."""

    __public_constructor__ = "vllm_evidence.assess()"

    configuration: ResolvedParallel | None
    """The sizes as resolved from the launch (:func:`resolve_from_log`), or ``None``."""
    note: str | None
    """How the DP size was read where the engine-init line does not give it (independent
    DP engines each print DP=1), or why nothing resolved; ``None`` when the engine-init
    line gives every size."""
    ranks: tuple[GlobalRank, ...]
    """One per global rank a rank line (or, for a worker without one, its tag) names, by
    rank."""
    unmapped_lines: tuple[int, ...]
    """Worker rank lines in one engine's own world that name no DP engine."""
    unmapped_tags: tuple[TaggedWorker, ...]
    """Worker processes seen only by their tag (no rank line) whose tag maps to no global
    rank: every such tag when the sizes are not resolved."""
    unmapped_why: tuple[str, ...]
    """Why those lines and tags are not mapped, each as the text report prints it (empty
    when everything seen is mapped)."""

    def _repr_summary(self) -> str:
        sizes = (
            "not resolved" if self.configuration is None else self.configuration._sizes_summary()
        )
        unmapped = len(self.unmapped_lines) + len(self.unmapped_tags)
        shown = f", {unmapped} unmapped" if unmapped else ""
        return f"{sizes}, {len(self.ranks)} global rank(s){shown}"


_mint_launch_parallel = minter(LaunchParallel, LaunchParallel.__attrs_init__)


def _tag_says(tag: ProcessTag) -> str:
    """What a worker's tag name says of its place, as printed (``TP 1``, ``rank 0``)."""
    worker = tag.worker
    if worker is None or worker.form is WorkerNameForm.UNREAD:
        return "its name says no rank"
    if worker.form is WorkerNameForm.RANK:
        return f"engine-local rank {worker.rank}"
    if not worker.groups:
        return "every group of its engine has one rank"
    return "in its engine " + ", ".join(f"{key} rank {value}" for key, value in worker.groups)


def _world_groups(launch: Launch) -> set[frozenset[str]]:
    """The distinct sets of world groups the launch's group-form worker names print."""
    return {
        frozenset(key for key, _ in tag.worker.groups if key in _WORLD_GROUPS)
        for tag, _ in worker_tags(launch)
        if tag.worker is not None and tag.worker.form is WorkerNameForm.GROUPS
    }


def _from_tag(tag: ProcessTag, line: int, rank: int, attribution: RankAttribution) -> GlobalRank:
    """A worker's global rank read from its tag (first seen at ``line``)."""
    return _mint_global_rank(
        rank=rank,
        line=line,
        pid=tag.pid,
        process=tag,
        attribution=attribution,
        engine_line=None,
        tree_line=None,
    )


def _unmapped_tags_why(tags: list[TaggedWorker], why: str) -> str:
    shown = "; ".join(f"{tag.text} (line {line}: {_tag_says(tag)})" for tag, line in tags[:4])
    more = f"; and {len(tags) - 4} more" if len(tags) > 4 else ""
    return f"{len(tags)} worker tag(s) with no rank line seen, not mapped: {shown}{more}: {why}"


def launch_parallel(launch: Launch) -> LaunchParallel:
    """The launch's resolved sizes and the global rank each of its rank lines names (and,
    for a worker that printed none, its tag).

    A rank named by several lines is shown at the line that also gave its engine from a
    compile-cache line, when one did (else at the last such line); a worker's tag counts
    only for a worker without a rank line, and only for a rank no rank line names.  A
    line in one engine's own world of independent engines that names no engine is
    *unmapped*, and so is a worker tag that names no rank; :attr:`LaunchParallel.
    unmapped_why` says why: how many lines name no DP engine, then what the
    compile-cache and force-kill lines do not say (:func:`unmapped_reasons`), then the
    tags.
    """
    resolved = resolve_from_log(launch)
    only_tags = tag_only_workers(launch)
    if not isinstance(resolved, ResolvedParallel):
        unresolved = "no engine-init line" if resolved is None else resolved
        why_not = f"the launch's sizes are not resolved ({unresolved})"
        alone: dict[int, GlobalRank] = {}
        rest: list[TaggedWorker] = []
        lines = sorted({r.line for r in launch.ranks})
        if lines and _one_engine(launch):
            # One engine's world is the whole world: a rank line of the largest world
            # printed names its global rank (a smaller one is a group's, not read).
            world = max(r.world_size for r in launch.ranks)
            for r in launch.ranks:
                if r.world_size == world and r.rank < world:
                    whole = _as_printed(r, RankAttribution.DP_WIDE_WORLD)
                    if whole.rank not in alone or alone[whole.rank].pid is None:
                        alone[whole.rank] = whole
            lines = sorted({r.line for r in launch.ranks if r.world_size != world})
        for r in launch.ranks:
            # Printed by engine 0's own process (TP=1: the worker is the engine core):
            # rank R of its world is global rank 0 × (its width) + R in an engine's own
            # world, and R in the DP-wide world: R either way, whatever the sizes.
            process = r.process
            if process is not None and process.outer is None and process.dp_engine == 0:
                if r.rank < r.world_size and r.rank not in alone:
                    alone[r.rank] = _as_printed(r, RankAttribution.ENGINE_TAG)
                lines = [n for n in lines if n != r.line]
        # Names that disagree on which groups have several ranks (Worker_TP1 beside
        # Worker_PP1_TP0) say no world: no tag alone is read then.
        agree = len(_world_groups(launch)) <= 1
        for tag, line in only_tags:
            g = tag_alone_rank(tag, launch) if agree else None
            if g is None or (g in alone and alone[g].pid != tag.pid):
                rest.append((tag, line))  # two workers naming one rank: neither is read
                continue
            alone.setdefault(g, _from_tag(tag, line, g, RankAttribution.WORKER_TAG_ALONE))
        unresolved_why = (
            *((f"{len(lines)} worker rank line(s) seen, not mapped: {why_not}",) if lines else ()),
            *((_unmapped_tags_why(rest, why_not + _no_engine_said(launch)),) if rest else ()),
        )
        return _mint_launch_parallel(
            configuration=None,
            note=unresolved,
            ranks=tuple(alone[g] for g in sorted(alone)),
            unmapped_lines=(),
            unmapped_tags=tuple(rest),
            unmapped_why=unresolved_why,
        )
    independent = independent_engines(launch, resolved)
    stated = stated_engines(launch) if independent else {}
    trees = tree_engines(launch) if independent else {}
    ranks: dict[int, GlobalRank] = {}
    unmapped: list[int] = []
    for r in launch.ranks:
        found = attribute(r, resolved, independent=independent, stated=stated, trees=trees)
        if found is None:
            if independent and r.world_size == resolved.ranks_per_engine:
                unmapped.append(r.line)
        elif found.rank not in ranks or ranks[found.rank].engine_line is None:
            ranks[found.rank] = found
    unmapped_tags: list[TaggedWorker] = []
    for tag, line in only_tags:
        found = tag_attribute(
            tag, line, resolved, independent=independent, stated=stated, trees=trees
        )
        if found is None:
            unmapped_tags.append((tag, line))
        else:
            ranks.setdefault(found.rank, found)
    why: list[str] = []
    if unmapped or unmapped_tags:
        unmapped_processes = [r.process for r in launch.ranks if r.line in set(unmapped)]
        reasons = [
            *unmapped_reasons(stated),
            *unmapped_reasons(trees),
            *engine_disagreements(
                unmapped_processes + [tag for tag, _ in unmapped_tags], stated, trees
            ),
        ]
        if unmapped:
            why.append(
                f"{len(unmapped)} worker line(s) in one engine's own world name no DP engine "
                "(not mapped)"
            )
            why.extend(reasons)
        if unmapped_tags:
            sizes = resolved._sizes_summary()
            tag_why = (
                f"under {sizes} of independent engines no worker's name says its engine, and "
                "no line of the same process names one"
                if independent
                else f"their names give no global rank under {sizes}"
            )
            why.append(_unmapped_tags_why(unmapped_tags, tag_why))
            if not unmapped:
                why.extend(reasons)
    return _mint_launch_parallel(
        configuration=resolved,
        note=resolved.data_parallel_note,
        ranks=tuple(ranks[g] for g in sorted(ranks)),
        unmapped_lines=tuple(unmapped),
        unmapped_tags=tuple(unmapped_tags),
        unmapped_why=tuple(why),
    )
