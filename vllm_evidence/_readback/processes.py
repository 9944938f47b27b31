"""Which of a launch's processes a process tree no longer holds: resolved, not decided.

The launcher owns its child: every process of a vLLM launch it started on this machine
(the API server, each engine core, each worker of the ``mp`` executor) is the child or
one of its descendants.  A worker that dies leaves the tree *at once*
(:class:`~vllm_evidence._adapters.process_tree.ProcessTree`: a zombie is gone), while
vLLM's own ``/health`` answers 200 until the executor's monitor has failed the engine
(about 4 s on TP=2, vLLM 0.32.0).

Which pid is which process comes from the launch's log, never from the tree: each worker
prints its rank line under its own process tag (``(Worker pid=10885) … world_size=2
rank=1 …``), whose global rank is the one the launch resolves to
(:func:`vllm_evidence._readback.parallel.launch_parallel`: its rank line under the
resolved sizes, else the worker's own tag name); the engine core prints its
engine-init line under its tag (``(EngineCore pid=10820)``).  A pid is looked for only
where it can be in the launcher's tree: not a Ray worker's (``RayWorkerWrapper``, its tag
nested under the engine core's or naming an ``ip``: the raylet's process, or another
machine's).

A tree speaks of a launch only when it is that launch's tree: :meth:`Evidence.launch_tree
<vllm_evidence._readback.evidence.Evidence.launch_tree>` (its root is the pid the launch
receipt witnesses).  Whether the launch speaks for the subject at all is the decisions'
(:mod:`vllm_evidence.decisions._life`).
"""

from __future__ import annotations

import enum
from typing import final

import attrs

from vllm_evidence._adapters.process_tree import ProcessState, ProcessTree
from vllm_evidence._adapters.startup_log import Launch, ProcessTag
from vllm_evidence._readback.parallel import launch_parallel, worker_tags
from vllm_evidence._seal import Sealed, minter

__all__ = ["LostProcess", "ProcessRole", "lost_processes"]


class ProcessRole(enum.Enum):
    """What a launch's process was, as its log line showed it."""

    RANK = "rank"
    """A worker: its rank line (or its own tag) printed under its tag."""
    ENGINE_CORE = "engine_core"
    """An engine core: its engine-init line printed under its tag."""


@final
@attrs.frozen(init=False, repr=False)
class LostProcess(Sealed):
    """A process the launch's log names that its process tree no longer holds."""

    __public_constructor__ = "vllm_evidence.assess()"

    role: ProcessRole
    pid: int
    rank: int | None
    """The global rank the worker held (its rank line under the resolved sizes, else its
    own tag name), else ``None`` (an engine core, or a rank that does not resolve)."""
    world_size: int | None
    """The world that rank is in (the resolved sizes'; else the rank line's own)."""
    line: int
    """The log line that named the pid."""
    reused: bool
    """The pid is running again, as another process (another start time)."""

    @property
    def detail(self) -> str:
        """One line for a person, naming the rank, the pid and the process tree."""
        if self.role is ProcessRole.ENGINE_CORE:
            who = "the engine core"
        elif self.rank is None:
            who = "a worker"
        elif self.world_size is None:
            who = f"rank {self.rank}"
        else:
            who = f"rank {self.rank} of world size {self.world_size}"
        how = (
            "its pid now belongs to another process"
            if self.reused
            else "its process exited (read from /proc, before the log or /health says so)"
        )
        return (
            f"{who} (pid {self.pid}, log line {self.line}) is gone from the launcher's "
            f"process tree: {how}"
        )

    def _repr_summary(self) -> str:
        rank = "" if self.rank is None else f" {self.rank}"
        return f"{self.role.value}{rank} pid {self.pid} (line {self.line})"


_mint_lost = minter(LostProcess, LostProcess.__attrs_init__)


def _local(tag: ProcessTag | None) -> int | None:
    """The pid of a tag that can be in the launcher's tree, else ``None``: not a Ray
    worker (``RayWorkerWrapper``, nested under its engine core's tag, or with an ``ip``:
    the raylet's process, or another machine's)."""
    if tag is None or tag.ip is not None or tag.outer is not None:
        return None
    if tag.name is not None and tag.name.startswith("RayWorker"):
        return None
    return tag.pid


_Named = tuple[ProcessRole, int | None, int | None, int]
"""``(role, global rank, world size, line)`` of one pid the log names."""


def _named(launch: Launch) -> dict[int, _Named]:
    """Every local pid the launch's log names, with what it was (see the module)."""
    parallel = launch_parallel(launch)
    configuration = parallel.configuration
    by_line = {g.line: g for g in parallel.ranks}
    by_pid = {g.pid: g for g in parallel.ranks if g.pid is not None}

    def rank_of(pid: int, line: int) -> tuple[int | None, int | None]:
        found = by_line.get(line) or by_pid.get(pid)
        if found is None or configuration is None:
            return None, None
        return found.rank, configuration.world_size

    named: dict[int, _Named] = {}
    for config in launch.engine_configs:
        pid = _local(config.process)
        if pid is not None and pid not in named:
            named[pid] = (ProcessRole.ENGINE_CORE, None, None, config.line)
    for obs in launch.ranks:
        pid = _local(obs.process)
        if pid is None or (pid in named and named[pid][0] is ProcessRole.RANK):
            continue
        # A worker inside its engine core (TP=1) is its rank: the rank line names it.
        rank, world = rank_of(pid, obs.line)
        if configuration is None:  # no sizes resolved: the rank as its line printed it
            rank, world = obs.rank, obs.world_size
        named[pid] = (ProcessRole.RANK, rank, world, obs.line)
    for tag, line in worker_tags(launch):
        pid = _local(tag)
        if pid is not None and pid not in named:
            named[pid] = (ProcessRole.RANK, *rank_of(pid, line), line)
    return named


def lost_processes(launch: Launch, tree: ProcessTree) -> tuple[LostProcess, ...]:
    """The launch's workers and engine cores that ``tree`` no longer holds — exited, or
    their pid taken by another process — in log line order (see the module).

    Nothing is lost where nothing is observed: an unread tree, or a Ray worker."""
    lost = []
    for pid, (role, rank, world, line) in _named(launch).items():
        state = tree.state(pid)
        if state in (ProcessState.RUNNING, ProcessState.UNREAD):
            continue
        lost.append(
            _mint_lost(
                role=role,
                pid=pid,
                rank=rank,
                world_size=world,
                line=line,
                reused=state is ProcessState.REUSED,
            )
        )
    return tuple(sorted(lost, key=lambda p: p.line))
