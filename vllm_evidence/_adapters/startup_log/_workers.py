"""The lines a worker process prints about itself: its rank and world, the directory of
its torch.compile cache, the executor a worker's own process tag names, and that tag's
name read into its parts; and the lines the API server prints when it force-kills an
engine core and that engine's worker processes at shutdown (:class:`KillLine`).

Part of the startup-log grammar (:mod:`~vllm_evidence._adapters.startup_log._grammar`
dispatches to these once a message is known to be a worker line); kept apart because
rank presence is read from these lines alone.
"""

from __future__ import annotations

import enum
import re

import attrs

from vllm_evidence._adapters.startup_log._lexer import Header
from vllm_evidence._adapters.startup_log.observations import (
    CompileCacheForm,
    ExecutorMarker,
    ExecutorObservation,
    Observation,
    ProcessTag,
    RankForm,
    WorkerName,
    WorkerNameForm,
    _mint_compile_cache,
    _mint_executor,
    _mint_rank,
    _mint_worker,
)
from vllm_evidence._bounds import wire_int

__all__ = [
    "KillLine",
    "KillLineKind",
    "compile_cache_line",
    "kill_line",
    "rank_lines",
    "tag_markers",
    "worker_name",
]

_WORLD_RE = re.compile(
    r"world_size=(?P<ws>[0-9]+) rank=(?P<r>[0-9]+) local_rank=(?P<lr>[0-9]+) "
    r"distributed_init_method=\S* backend=(?P<b>\S+)\s*$"
)
_ASSIGN_RE = re.compile(
    r"rank (?P<r>[0-9]+) in world size (?P<ws>[0-9]+) is assigned as (?P<groups>.*?)\s*$"
)
_GROUP_RE = re.compile(r"(?P<g>[A-Z]+) rank (?P<v>[0-9]+|N/A)")
#: vLLM's torch.compile cache lines (``compilation/decorators.py``,
#: ``compilation/backends.py``; 0.32.0 puts the model's compile tag, ``[backbone] ``,
#: before each): the message's head, its form, and the text that ends the path.
_CACHE_HEADS: tuple[tuple[str, CompileCacheForm, str], ...] = (
    ("saved AOT compiled function to ", CompileCacheForm.AOT_SAVED, ""),
    (
        "Compiling model again due to a load failure from ",
        CompileCacheForm.AOT_LOAD_FAILED,
        ", reason: ",
    ),
    ("Using cache directory: ", CompileCacheForm.CACHE_DIRECTORY, " for vLLM's torch.compile"),
)
_COMPILE_TAG_RE = re.compile(r"\[[A-Za-z0-9_.-]{1,64}\] ")
_CACHE_SEGMENT_RE = re.compile(r"rank_(?P<r>[0-9]{1,9})_(?P<d>[0-9]{1,9})")


def compile_cache_line(msg: str, line: int, proc: ProcessTag | None) -> Observation | None:
    """A torch.compile cache line's ``rank_R_D`` directory, or ``None``.

    The path must end exactly as vLLM builds it: ``<cache>/rank_R_D/model`` for the AOT
    lines (``os.path.join(cache_dir, f"rank_{rank}_{dp_rank}")`` then ``"model"``), and
    ``<cache>/rank_R_D/<prefix>`` for the cache-directory line (``prefix`` has no
    ``/``; empty for the plain model).  Only the last two segments are read, so a
    ``rank_…`` directory higher in the path is never taken for the worker's own.
    """
    if (tag := _COMPILE_TAG_RE.match(msg)) is not None:
        msg = msg[tag.end() :]
    for head, form, end in _CACHE_HEADS:
        if not msg.startswith(head):
            continue
        path = msg[len(head) :].rstrip()
        if end:
            cut = path.find(end)
            if cut < 0 or (
                form is CompileCacheForm.CACHE_DIRECTORY and cut + len(end) != len(path)
            ):
                return None
            path = path[:cut]
        parts = path.rsplit("/", 2)
        if len(parts) != 3 or (
            form is not CompileCacheForm.CACHE_DIRECTORY and parts[2] != "model"
        ):
            return None
        segment = _CACHE_SEGMENT_RE.fullmatch(parts[1])
        if segment is None:
            return None
        return _mint_compile_cache(
            form=form,
            rank=int(segment["r"]),
            data_parallel_index=int(segment["d"]),
            line=line,
            process=proc,
        )
    return None


def rank_lines(msg: str, h: Header, line: int, proc: ProcessTag | None) -> list[Observation]:
    if m := _WORLD_RE.match(msg):
        return [
            _mint_rank(
                form=RankForm.WORLD_SIZE,
                rank=int(m["r"]),
                world_size=int(m["ws"]),
                local_rank=int(m["lr"]),
                backend=m["b"],
                group_ranks=(),
                repeated=h.repeated,
                line=line,
                process=proc,
            )
        ]
    if m := _ASSIGN_RE.match(msg):
        groups = tuple(
            (g["g"], None if g["v"] == "N/A" else int(g["v"]))
            for g in _GROUP_RE.finditer(m["groups"])
        )
        return [
            _mint_rank(
                form=RankForm.ASSIGNMENT,
                rank=int(m["r"]),
                world_size=int(m["ws"]),
                local_rank=None,
                backend=None,
                group_ranks=groups,
                repeated=h.repeated,
                line=line,
                process=proc,
            )
        ]
    return []


def tag_markers(process: ProcessTag | None, line: int) -> list[ExecutorObservation]:
    """Executor markers carried by a recognised line's process tag."""
    if process is None or process.name is None:
        return []
    if process.name.startswith("RayWorkerWrapper"):
        marker = ExecutorMarker.RAY_WORKER_TAG
    elif process.name.startswith("VllmWorker"):
        marker = ExecutorMarker.VLLM_WORKER_TAG
    else:
        return []
    return [_mint_executor(marker=marker, named=None, line=line, process=process)]


# A worker process's tag name.  Group indexes are at most 6 digits (no deployment has a
# million ranks in one group); the older forms' ranks at most 18 (``wire_int``).
_GROUPS_NAME_RE = re.compile(r"(?:Vllm)?Worker(?P<fields>(?:_[A-Z]+[0-9]+)*)")
_GROUP_FIELD_RE = re.compile(r"_(?P<k>[A-Z]+)(?P<v>[0-9]+)")
_OLD_NAME_RE = re.compile(
    r"VllmWorker(?: rank=(?P<rank>[0-9]+)| TP(?P<tp>[0-9]+)|-(?P<proc>[0-9]+))"
)
_MAX_GROUP_DIGITS = 6


def worker_name(name: str | None) -> WorkerName | None:
    """A process tag's name read as a worker's, or ``None`` when it is not one (no
    ``Worker`` in it, or Ray's ``RayWorkerWrapper``, whose name says nothing of a rank).

    ``Worker_DP1_PP0_TP1`` → its groups; ``VllmWorker TP1`` → ``TP`` 1;
    ``VllmWorker rank=1`` → rank 1, and so is ``VllmWorker-1``: the name
    ``MultiprocExecutor`` gives the worker's process (``name=f"VllmWorker-{rank}"``, the
    rank in its engine's own world: v0.8.5 ``v1/executor/multiproc_executor.py`` L331,
    v0.31.0 L742, v0.32.0 L747 with ``rank = local_world_size × node_rank_within_dp +
    local_rank``, L178-191), which tags the worker's lines until it names itself
    ``Worker…`` (0.31.0 and 0.32.0 print a warning or two under it); any other worker's
    name is :attr:`~WorkerNameForm.UNREAD` (seen, nothing read from it).
    """
    if name is None or "Worker" not in name or name.startswith("Ray"):
        return None
    old = _OLD_NAME_RE.fullmatch(name)
    if old is not None:
        if old["rank"] is not None or old["proc"] is not None:
            rank = wire_int(old["rank"] if old["rank"] is not None else old["proc"])
            if rank is not None:
                return _mint_worker(form=WorkerNameForm.RANK, groups=(), rank=rank)
        else:
            tp = wire_int(old["tp"])
            if tp is not None:
                return _mint_worker(form=WorkerNameForm.TP, groups=(("TP", tp),), rank=None)
        return _unread()
    groups = _GROUPS_NAME_RE.fullmatch(name)
    if groups is None:
        return _unread()
    fields = [(f["k"], f["v"]) for f in _GROUP_FIELD_RE.finditer(groups["fields"])]
    if any(len(value) > _MAX_GROUP_DIGITS for _, value in fields):
        return _unread()
    return _mint_worker(
        form=WorkerNameForm.GROUPS,
        groups=tuple((key, int(value)) for key, value in fields),
        rank=None,
    )


def _unread() -> WorkerName:
    return _mint_worker(form=WorkerNameForm.UNREAD, groups=(), rank=None)


# --------------------------------------------------------------------------------------
# A shutdown's force kill (vLLM 0.32.0 ``v1/utils.py`` ``shutdown()`` L605-658 and
# ``utils/system_utils.py`` ``kill_process_tree()`` L207-233).


class KillLineKind(enum.Enum):
    """Which line of a shutdown's force kill a :class:`KillLine` is."""

    START = "start"
    """``[shutdown] Process manager: force killing remaining processes count=N`` (or the
    ``Subprocess manager``'s, which names no parent before its sub-process lines)."""
    ROOT = "root"
    """``[shutdown] Process manager: force killing remaining process NAME pid P``: the
    manager kills the process tree of P next."""
    DESCENDANT = "descendant"
    """``[shutdown] force killing sub process NAME pid C``: C is a live descendant of the
    process whose tree is being killed."""
    BREAK = "break"
    """Any other recognised line from the same process (internal: it ends the run of
    descendant lines, so a later one is never taken for the earlier root's)."""


@attrs.frozen
class KillLine:
    """One line of a shutdown's force kill (internal; the launch assembler pairs a root
    line with the descendant lines the same process prints after it)."""

    kind: KillLineKind
    name: str | None
    """The process's name as printed (``EngineCore_DP0``, ``VLLM::Worker_TP1``)."""
    pid: int | None
    line: int
    process: ProcessTag | None
    """The printing process's tag (the API server's)."""


_KILL_START_RE = re.compile(
    r"\[shutdown\] (?:Process|Subprocess) manager: force killing remaining processes "
    r"count=[0-9]{1,9}\s*$"
)
_KILL_ROOT_RE = re.compile(
    r"\[shutdown\] Process manager: force killing remaining process (?P<name>\S{1,256}) "
    r"pid (?P<pid>[0-9]{1,9})\s*$"
)
_KILL_DESCENDANT_RE = re.compile(
    r"\[shutdown\] force killing sub process (?P<name>\S{1,256}) pid (?P<pid>[0-9]{1,9})\s*$"
)


def kill_line(msg: str, line: int, proc: ProcessTag | None) -> KillLine | None:
    """A shutdown's force-kill line, or ``None``.

    vLLM's engine manager stops its engine cores with ``shutdown(procs)``: for each
    process still alive after the grace period it logs ``force killing remaining process
    NAME pid P`` and calls ``kill_process_tree(P)``, which lists P's descendants
    (``psutil.Process(P).children(recursive=True)``) and, from 0.32.0, logs ``force
    killing sub process NAME pid C`` for each before it kills them and then P (v0.32.0
    ``v1/utils.py`` L648-658, ``utils/system_utils.py`` L207-233; 0.29.0 and 0.31.0 kill
    the same tree without the sub-process line).  A worker of the ``mp`` executor is a
    child of its engine core (``WorkerProc.make_worker_process``, v0.32.0
    ``v1/executor/multiproc_executor.py`` L712-747), so the descendant lines after the
    root line of one engine name that engine's workers.
    """
    if m := _KILL_ROOT_RE.match(msg):
        kind = KillLineKind.ROOT
    elif m := _KILL_DESCENDANT_RE.match(msg):
        kind = KillLineKind.DESCENDANT
    elif _KILL_START_RE.match(msg):
        return KillLine(kind=KillLineKind.START, name=None, pid=None, line=line, process=proc)
    else:
        return None
    return KillLine(kind=kind, name=m["name"], pid=int(m["pid"]), line=line, process=proc)
