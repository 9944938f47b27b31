"""The bytes of ``/proc`` at one moment: each process's ``stat`` file, as read.

What the launcher reads of its own process tree each round
(:func:`read_proc`), kept as bytes: which pid is whose child, which is a zombie, and when
each started are read from them one layer up
(:func:`vllm_evidence._adapters.process_tree.observe_process_tree`), never here.

Reading is bounded: at most :data:`MAX_PROCESSES` entries of ``/proc`` are read, each
``stat`` file at most :data:`STAT_BYTES` bytes, :data:`MAX_READ_BYTES` in all; past any
bound the read is *unavailable*, with why, and holds nothing.  An entry that ends between
the listing and its read, or that is not ours to read, is left out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import final

import attrs

from vllm_evidence._seal import Reduction, Sealed, minter
from vllm_evidence.errors import InputError

__all__ = ["MAX_PROCESSES", "MAX_READ_BYTES", "STAT_BYTES", "ProcRead", "read_proc"]

#: The most ``/proc`` entries read at once (a machine's ``pid_max`` is 4,194,304 at most;
#: a container holds a few hundred processes).
MAX_PROCESSES = 65536
#: The most bytes read of one ``/proc/<pid>/stat`` (a few hundred in practice; the
#: command name inside it is at most 64 bytes).
STAT_BYTES = 4096
#: The most bytes of ``stat`` files one read keeps.
MAX_READ_BYTES = 16 * 1024 * 1024
#: The longest pid, in digits (``pid_t`` is a signed 32-bit integer).
_PID_DIGITS = 10


@final
@attrs.frozen(init=False, repr=False)
class ProcRead(Sealed):
    """Every process's ``stat`` file under one ``/proc``, as one read found them."""

    __public_constructor__ = "vllm_evidence.read_proc()"

    directory: str
    """The ``/proc`` read (another path in tests)."""
    stats: tuple[tuple[int, bytes], ...]
    """``(pid, the first bytes of its stat file)``, by pid."""
    unavailable: str | None
    """Why nothing could be read (no ``/proc``, past a bound); ``None`` when it was."""

    def __rederive__(self) -> Reduction[ProcRead]:
        """Pickled as its bytes; unpickling checks their bounds again."""
        return _rederive_proc_read, (self.directory, self.stats, self.unavailable)

    def _repr_summary(self) -> str:
        if self.unavailable is not None:
            return f"{self.directory}: unread ({self.unavailable})"
        return f"{self.directory}: {len(self.stats)} processes"


_mint_read = minter(ProcRead, ProcRead.__attrs_init__)


def _unavailable(directory: str, why: str) -> ProcRead:
    return _mint_read(directory=directory, stats=(), unavailable=why)


def read_proc(directory: str = "/proc") -> ProcRead:
    """Read every process's ``stat`` file under ``directory`` now (see the module)."""
    base = Path(directory)
    try:
        with os.scandir(base) as entries:
            names = []
            for entry in entries:
                if entry.name.isdigit() and len(entry.name) <= _PID_DIGITS:
                    names.append(entry.name)
                    if len(names) > MAX_PROCESSES:
                        return _unavailable(
                            directory, f"{directory} lists more than {MAX_PROCESSES:,} processes"
                        )
    except OSError as exc:
        why = f"{directory} cannot be read ({exc.strerror or type(exc).__name__})"
        return _unavailable(directory, why)
    stats: list[tuple[int, bytes]] = []
    total = 0
    for name in names:
        try:
            with (base / name / "stat").open("rb") as handle:
                data = handle.read(STAT_BYTES)
        except OSError:
            continue  # it ended between the listing and the read, or is not ours to read
        total += len(data)
        if total > MAX_READ_BYTES:
            return _unavailable(
                directory, f"{directory} holds more than {MAX_READ_BYTES:,} bytes of stat files"
            )
        stats.append((int(name), data))
    stats.sort()
    return _mint_read(directory=directory, stats=tuple(stats), unavailable=None)


def _entry(entry: object) -> tuple[int, bytes] | None:
    """One ``(pid, stat bytes)`` pair within the bounds, or ``None``."""
    if not isinstance(entry, tuple) or len(entry) != 2:  # (pid, bytes)
        return None
    pid, data = entry
    if type(pid) is not int or not 0 <= pid < 10**_PID_DIGITS:
        return None
    if not isinstance(data, bytes) or len(data) > STAT_BYTES:
        return None
    return pid, data


def _rederive_proc_read(directory: object, stats: object, unavailable: object) -> ProcRead:
    """A read from its bytes, their bounds checked again (package-internal: unpickling)."""
    entries = (
        [_entry(entry) for entry in stats]
        if isinstance(stats, tuple) and len(stats) <= MAX_PROCESSES
        else [None]
    )
    checked = [entry for entry in entries if entry is not None]
    if (
        not isinstance(directory, str)
        or not (unavailable is None or isinstance(unavailable, str))
        or len(checked) != len(entries)
        or sum(len(data) for _, data in checked) > MAX_READ_BYTES
    ):
        msg = "a /proc read whose bytes are not the shape read_proc() gives"
        raise InputError(msg)
    return _mint_read(directory=directory, stats=tuple(sorted(checked)), unavailable=unavailable)
