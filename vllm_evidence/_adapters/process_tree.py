"""A process tree, typed from one read of ``/proc``: which processes run under a root,
and since when.

:func:`observe_process_tree` reads the ``stat`` bytes of a
:class:`~vllm_evidence._capture.proc.ProcRead`: each entry's state, parent and start time
(clock ticks after boot), every field parsed strictly (a malformed entry is skipped,
never trusted).  The tree is the root and its running descendants; a zombie or a dead
process (state ``Z``, ``X``) is not running: a process that died has left the tree *at
once*, whether or not its parent has reaped it yet.

A pid can be taken again by another process once its first holder is gone.  So a tree
carries, beside what runs now, the start time each pid had when its observer first saw
it (:attr:`ProcessTree.first_seen`, carried from the ``earlier`` tree of the same root):
a pid that runs now with another start time is :attr:`ProcessState.REUSED`, its first
process gone.  Which pid is which rank is not said here: that comes from the launch's
log (:mod:`vllm_evidence._readback.processes`).
"""

from __future__ import annotations

import enum
from typing import final

import attrs

from vllm_evidence._capture.proc import ProcRead
from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.errors import InputError

__all__ = ["ProcessState", "ProcessTree", "observe_process_tree"]

#: The states of a process that is no longer running: zombie, dead.
_GONE_STATES = frozenset({b"Z", b"X", b"x"})
#: ``stat`` fields after the command name: state is the 1st, ppid the 2nd, starttime the
#: 20th (fields 3, 4 and 22 of ``proc(5)``, the command name being field 2).
_MIN_FIELDS = 20
_PID_MAX = 2**31


class ProcessState(enum.Enum):
    """What a tree shows of one pid."""

    RUNNING = "running"
    """In the tree, with the start time it was first seen with."""
    GONE = "gone"
    """Not in the tree: it exited (reaped, or a zombie), or it was never under the root."""
    REUSED = "reused"
    """In the tree with another start time than it was first seen with: the pid belongs
    to another process; the first one is gone."""
    UNREAD = "unread"
    """The tree could not be read: nothing is observed of any pid."""


@final
@attrs.frozen(init=False, repr=False)
class ProcessTree(Sealed):
    """The running processes under one root, as one read of ``/proc`` showed them."""

    __public_constructor__ = "vllm_evidence.observe_process_tree()"

    read: ProcRead
    """The bytes it was typed from."""
    root: int
    """The tree's root: the launcher's child."""
    members: tuple[tuple[int, int], ...]
    """``(pid, start time in clock ticks)`` of the root and every running descendant,
    by pid (zombies and dead processes are not members)."""
    first_seen: tuple[tuple[int, int], ...]
    """``(pid, start ticks)`` of every pid as its observer first saw it under this root
    (the earlier trees' and this one's), by pid."""

    @property
    def unavailable(self) -> str | None:
        """Why the tree could not be read (its read's reason); ``None`` when it was.  An
        unread tree observes nothing: every pid is :attr:`ProcessState.UNREAD`."""
        return self.read.unavailable

    def start_ticks(self, pid: int) -> int | None:
        """The start time (clock ticks after boot) of ``pid`` if it is a member."""
        return dict(self.members).get(pid)

    def state(self, pid: int) -> ProcessState:
        """What this tree shows of ``pid`` (see :class:`ProcessState`)."""
        if self.read.unavailable is not None:
            return ProcessState.UNREAD
        now = self.start_ticks(pid)
        if now is None:
            return ProcessState.GONE
        first = dict(self.first_seen).get(pid, now)
        return ProcessState.RUNNING if first == now else ProcessState.REUSED

    def __rederive__(self) -> Reduction[ProcessTree]:
        """Pickled as its read's bytes, its root and what was first seen; unpickling
        types the bytes again."""
        return _rederive_process_tree, (self.read, self.root, self.first_seen)

    def _repr_summary(self) -> str:
        if self.read.unavailable is not None:
            return f"root {self.root}: unread ({self.read.unavailable})"
        return f"root {self.root}: {len(self.members)} running"


_mint_tree = minter(ProcessTree, ProcessTree.__attrs_init__)


def _stat(pid: int, data: bytes) -> tuple[bytes, int, int] | None:
    """``(state, ppid, start ticks)`` of one ``stat`` file, or ``None`` when malformed."""
    # ``pid (comm) state ppid …``: comm may hold spaces and parentheses; the last ")"
    # ends it.
    close = data.rfind(b")")
    head = data[: max(close, 0)].split(b" (", 1)[0]
    if close < 0 or head != str(pid).encode("ascii"):
        return None
    fields = data[close + 1 :].split()
    if len(fields) < _MIN_FIELDS:
        return None
    state, ppid, start = fields[0], fields[1], fields[19]
    if not (ppid.isdigit() and start.isdigit() and len(ppid) <= 10 and len(start) <= 20):
        return None
    return state, int(ppid), int(start)


def _members(read: ProcRead, root: int) -> tuple[tuple[int, int], ...]:
    children: dict[int, list[int]] = {}
    running: dict[int, int] = {}
    for pid, data in read.stats:
        stat = _stat(pid, data)
        if stat is None or pid in running:
            continue
        state, ppid, start = stat
        if state in _GONE_STATES:
            continue
        running[pid] = start
        children.setdefault(ppid, []).append(pid)
    members: dict[int, int] = {}
    todo = [root] if root in running else []
    while todo:
        pid = todo.pop()
        if pid in members:
            continue
        members[pid] = running[pid]
        todo.extend(children.get(pid, ()))
    return tuple(sorted(members.items()))


def _tree(read: ProcRead, root: int, first_seen: dict[int, int]) -> ProcessTree:
    members = _members(read, root)
    for pid, ticks in members:
        first_seen.setdefault(pid, ticks)
    return _mint_tree(
        read=read, root=root, members=members, first_seen=tuple(sorted(first_seen.items()))
    )


def observe_process_tree(
    read: ProcRead, root: int, *, earlier: ProcessTree | None = None
) -> ProcessTree:
    """The tree under ``root`` in ``read`` (see the module).

    ``earlier``: the same observer's previous tree of this root, whose first-seen start
    times this one keeps (so a pid taken by another process since is
    :attr:`ProcessState.REUSED`); a tree of another root is not carried.  An
    :class:`~vllm_evidence.errors.InputError` for a root that is not a pid."""
    if not _is_pid(root):
        msg = f"a process tree's root must be a pid, got {root!r}"
        raise InputError(msg)
    seen = dict(earlier.first_seen) if earlier is not None and earlier.root == root else {}
    return _tree(read, root, seen)


def _is_pid(value: object) -> bool:
    """An ``int`` (not a ``bool``) a pid can be."""
    return type(value) is int and 0 < value < _PID_MAX


def _rederive_process_tree(read: object, root: object, first_seen: object) -> ProcessTree:
    """A tree typed again from its read (package-internal: unpickling)."""
    pairs = list(first_seen) if isinstance(first_seen, tuple) else [None]
    seen = {
        pair[0]: pair[1]
        for pair in pairs
        if isinstance(pair, tuple) and len(pair) == 2 and _is_pid(pair[0]) and type(pair[1]) is int
    }
    if not isinstance(read, ProcRead) or type(root) is not int or len(seen) != len(pairs):
        msg = "a process tree is re-derived from a /proc read, its root and (pid, ticks) pairs"
        raise InputError(msg)
    return _tree(read, root, seen)
