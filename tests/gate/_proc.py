"""A hand-made ``/proc`` for the process-tree tests, and the recorded launch it mirrors.

The recorded TP=2 server (``tests/fixtures/real/vllm-0.32.0-cpu/tp2-worker-kill``,
its log read by hand): the API server pid 10538, its engine core 10820 (engine-init line
22), the workers 10884 (rank 0, rank line 47) and 10885 (rank 1, rank line 42).
"""

from __future__ import annotations

from pathlib import Path

from vllm_evidence._adapters.process_tree import ProcessTree, observe_process_tree
from vllm_evidence._adapters.startup_log import Launch, StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture.proc import read_proc
from vllm_evidence._readback import CapturedReadback

SCENARIO = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "real"
    / "vllm-0.32.0-cpu"
    / "tp2-worker-kill"
)
RAY_LOG = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "captures"
    / "public"
    / "startup-log"
    / "dennislee22-v0.10.1.1-qwen2-7b-ray-2nodes-wrapped147.txt"
)
API_SERVER, ENGINE_CORE, RANK0, RANK1 = 10538, 10820, 10884, 10885
#: The log lines that name each pid (read by hand).
ENGINE_LINE, RANK0_LINE, RANK1_LINE = 22, 47, 42
#: The line of the worker's death.
DEATH_LINE = 166


def write_stat(proc: Path, pid: int, ppid: int, start: int, state: str = "S") -> None:
    """``/proc/<pid>/stat`` as Linux prints it (``comm`` with a space and parentheses)."""
    directory = proc / str(pid)
    directory.mkdir(parents=True, exist_ok=True)
    zeros = " ".join(["0"] * 17)
    (directory / "stat").write_text(
        f"{pid} (vllm (x) y) {state} {ppid} {zeros} {start} 0 0 0\n", encoding="ascii"
    )


def recorded_tree(
    proc: Path, *, without: tuple[int, ...] = (), zombie: tuple[int, ...] = ()
) -> None:
    """The recorded server's processes (under pid 1), less ``without``; ``zombie`` ones
    in state ``Z``."""
    write_stat(proc, 1, 0, 1)
    parents = {API_SERVER: 1, ENGINE_CORE: API_SERVER, RANK0: ENGINE_CORE, RANK1: ENGINE_CORE}
    for pid, ppid in parents.items():
        if pid not in without:
            write_stat(proc, pid, ppid, 1000 + pid, "Z" if pid in zombie else "S")
    write_stat(proc, 4242, 1, 7)  # another process of the machine, not in the tree


def recorded_launch(*, whole: bool = False, tmp: Path | None = None) -> Launch:
    """The recorded launch: its log before the death (or whole)."""
    path = SCENARIO / "startup.log"
    if not whole:
        assert tmp is not None
        lines = path.read_bytes().split(b"\n")[: DEATH_LINE - 1]
        path = tmp / "before-death.log"
        path.write_bytes(b"\n".join(lines) + b"\n")
    log = read_startup_log(path)
    assert isinstance(log, StartupLog), log
    return log.launches[-1]


def target_of(assessment: Assessment) -> str:
    """The URL the assessment's front door was probed at."""
    door = assessment.evidence.front_door
    assert isinstance(door, CapturedReadback)
    return door.batch.target


def tree_of(proc: Path, root: int = API_SERVER, earlier: ProcessTree | None = None) -> ProcessTree:
    """The tree under ``root`` in the hand-made ``/proc`` at ``proc``."""
    return observe_process_tree(read_proc(str(proc)), root, earlier=earlier)


def with_tree(assessment: Assessment, tree: ProcessTree | None) -> Assessment:
    """``assessment``'s evidence assessed again with ``tree`` among it, as the launcher
    assesses each round."""
    evidence = assessment.evidence
    launch = None if evidence.launch is None else evidence.launch.index
    return assess(
        evidence.front_door,
        assessment.startup_log,
        launch=launch,
        receipt=evidence.receipt,
        process_tree=tree,
    )
