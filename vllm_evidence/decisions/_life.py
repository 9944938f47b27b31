"""A claim holds for a moment: what a launch's later lines, and a failing ``/health``,
end (DESIGN principle 14).

A serving claim is about a live process.  Three things end it before any decision reads
its evidence, each named by the earliest line that says so:

* **the engine never started** (``Engine core initialization failed``): the launch
  establishes nothing, not even served identity;
* **the engine died** — a line of the launch recorded before any shutdown began (the
  engine core's fatal error, ``EngineDeadError``, the client's engine monitor), or a
  ``/health`` answering the status the release's law gives only once the engine is dead
  (:class:`~vllm_evidence.upstream.HealthFailureLaw`): every claim that needs a live
  engine (parallel, capacity, health coverage) is refused; served identity may stay what
  the routes say;
* **a worker died** under the executor's monitor: its rank is not present, so parallel
  is refused, and a 200 from ``/health`` is inside the monitor's window (the release's
  health law states it), so health coverage is refused too.

The log says so by a line; the launcher's own process tree
(:class:`~vllm_evidence._adapters.process_tree.ProcessTree`, given to
:func:`~vllm_evidence._assessment.assess` as ``process_tree``) says so *before* any line
does: a worker the log names whose process is gone from the tree is its rank lost
(``rank_lost``, for what needs every worker), an engine core gone is the engine dead
(``engine_dead``, for what needs a live engine) — this round, ahead of ``/health``
(:func:`~vllm_evidence._readback.processes.lost_processes`).  A line that already says it
is the earlier evidence and is named first.

The log counts only where it speaks for the subject: with a log alone (the launch), or
with a front door the log is joined to.  A log not joined to the front door says nothing
about the serving process, alive or dead; nor, then, does the tree (its pids are named by
that log), nor a tree that is not the launch's own
(:meth:`~vllm_evidence._readback.evidence.Evidence.launch_tree`).
"""

from __future__ import annotations

import enum

from vllm_evidence._adapters.startup_log import Launch, LifeEvent
from vllm_evidence._readback.evidence import Evidence, parsed
from vllm_evidence._readback.parallel import ResolvedParallel, resolve_from_log
from vllm_evidence._readback.processes import ProcessRole, lost_processes
from vllm_evidence.upstream import HealthFailureLaw, ReleaseLaws, laws_for

__all__ = ["Needs", "life_gate", "lost_rank_text"]

LifeGate = tuple[str, str, str]
"""``(reason value, detail, remedy)``, as :data:`~vllm_evidence.decisions._common.ServingGate`."""


class Needs(enum.Enum):
    """What a claim needs of the launch's life."""

    STARTED = "started"
    """An engine that started (served identity)."""
    ENGINE = "engine"
    """A live engine (capacity)."""
    EVERY_WORKER = "every_worker"
    """A live engine and every worker alive (parallel, health coverage)."""


def life_gate(evidence: Evidence, needs: Needs, *, log_speaks: bool) -> LifeGate | None:
    """Why the claim does not hold now, earliest first; ``None`` when nothing ends it.

    ``log_speaks``: the launch speaks for the subject (no front door, or the log joined).
    """
    launch = evidence.launch if log_speaks else None
    if launch is not None and launch.init_failure is not None:
        line = launch.init_failure.line
        return (
            "launch_never_started",
            (
                f"the engine never started: line {line} of launch {launch.index} says its "
                "initialization failed; the launch established nothing"
            ),
            f"read the log above line {line} for the root cause, then launch again",
        )
    if needs is Needs.STARTED:
        return None
    if launch is not None and needs is Needs.EVERY_WORKER and launch.worker_deaths:
        death = launch.worker_deaths[0]
        return (
            "rank_lost",
            f"{lost_rank_text(launch, death)}; "
            + _engine_after(launch, death)
            + _health_window(evidence),
            "restart the server; a rank lost is not present again until a new launch",
        )
    if launch is not None and launch.engine_death is not None:
        death = launch.engine_death
        lost = launch.worker_deaths
        cause = f" after {lost_rank_text(launch, lost[0])}" if lost else ""
        return (
            "engine_dead",
            (
                f"the engine died at line {death.line} of launch {launch.index}"
                f"{cause}: nothing it served is there any more"
            ),
            "restart the server",
        )
    dead = _health_says_dead(evidence)
    if dead is not None:
        return ("engine_dead", dead, "restart the server")
    return _gone_from_tree(evidence, launch, needs)


def _gone_from_tree(evidence: Evidence, launch: Launch | None, needs: Needs) -> LifeGate | None:
    """The earliest-named process the claim needs that the launch's own process tree no
    longer holds: an engine core (``engine_dead``), or, for what needs every worker, a
    worker too (``rank_lost``)."""
    tree = None if launch is None else evidence.launch_tree()
    if launch is None or tree is None:
        return None
    lost = [
        p
        for p in lost_processes(launch, tree)
        if needs is Needs.EVERY_WORKER or p.role is ProcessRole.ENGINE_CORE
    ]
    if not lost:
        return None
    first = lost[0]
    if first.role is ProcessRole.ENGINE_CORE:
        return (
            "engine_dead",
            f"{first.detail}; nothing the engine served is there any more",
            "restart the server",
        )
    return (
        "rank_lost",
        first.detail + _health_window(evidence),
        "restart the server; a rank lost is not present again until a new launch",
    )


def lost_rank_text(launch: Launch, death: LifeEvent) -> str:
    """``rank 1 (VllmWorker-1, pid 10885) died at line 166 (exit code -9)``."""
    who = death.worker or "a worker"
    rank, pid = _rank_and_pid(launch, death)
    inner = ", ".join(
        part for part in (who, None if pid is None else f"pid {pid}") if part is not None
    )
    head = f"rank {rank} ({inner})" if rank is not None else f"worker {inner}"
    code = "" if death.exit_code is None else f" (exit code {death.exit_code})"
    return f"{head} died at line {death.line} of launch {launch.index}{code}"


def _rank_and_pid(launch: Launch, death: LifeEvent) -> tuple[int | None, int | None]:
    """The global rank a dead worker held and its pid, where the launch says them.

    ``VllmWorker-N`` names the executor's rank ``N`` inside its engine; the engine is the
    printing engine core's (``EngineCore_DP1``), or the only one.
    """
    local = death.worker_rank
    configuration = resolve_from_log(launch)
    if local is None and death.worker_pid is not None:
        # V0 names every worker VllmWorkerProcess: its pid is its rank line's.
        said = [r.rank for r in launch.ranks if r.pid == death.worker_pid]
        return (said[0] if len(set(said)) == 1 else None), death.worker_pid
    if local is None or not isinstance(configuration, ResolvedParallel):
        return None, death.worker_pid
    engine = death.process.dp_engine if death.process is not None else None
    if engine is None:
        if configuration.data_parallel_size != 1:
            return None, death.worker_pid
        engine = 0
    width = configuration.ranks_per_engine
    if local >= width or engine >= configuration.data_parallel_size:
        return None, death.worker_pid
    rank = engine * width + local
    pid = death.worker_pid
    if pid is None:
        for obs in launch.ranks:
            in_world = obs.world_size == configuration.world_size and obs.rank == rank
            in_engine = configuration.data_parallel_size == 1 and obs.rank == local
            if obs.pid is not None and obs.line < death.line and (in_world or in_engine):
                pid = obs.pid
                break
    return rank, pid


def _engine_after(launch: Launch, death: LifeEvent) -> str:
    engine = launch.engine_death
    if engine is not None and engine.line >= death.line:
        return f"the engine died after it, at line {engine.line}"
    return "the executor's monitor fails the engine after it (its shutdown wait first)"


def _health_window(evidence: Evidence) -> str:
    """What a 200 after the death means: nothing yet (the monitor's window)."""
    door = evidence.front_door
    answer = None if door is None else parsed(door.health)
    if answer is not None and answer.healthy:
        return "; /health still answered 200: the answer is inside the monitor's window"
    return ""


def _health_says_dead(evidence: Evidence) -> str | None:
    """``/health`` answered the status its release gives only once the engine is dead."""
    door = evidence.front_door
    if door is None:
        return None
    answer = parsed(door.health)
    version = evidence.front_door_version()
    if answer is None or answer.healthy or version is None:
        return None
    laws = laws_for(version)
    if not isinstance(laws, ReleaseLaws):
        return None
    law = laws.health_failure()
    if not isinstance(law, HealthFailureLaw) or answer.status != law.failure_status:
        return None
    return (
        f"/health answered {answer.status}, which vLLM {version} answers once the engine "
        f"is dead ({law.statement}): no claim that needs a live engine holds"
    )
