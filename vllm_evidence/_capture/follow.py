"""Follow a growing file by its appended bytes: ``tail -F``, with every change said.

A :class:`LogFollower` keeps, between polls, which file it read (device and inode), how
far (its offset) and the last bytes before that offset (a fingerprint).  Each
:meth:`~LogFollower.poll` opens the path again (a rotated log is a new file at the same
path), looks, and reads only what is new:

* a new file at the path (another device or inode): :attr:`FollowEvent.ROTATED`, read
  from its first byte;
* the same file, now shorter than the offset: :attr:`FollowEvent.TRUNCATED`, read from
  its first byte;
* the same file, as long as the offset or longer, whose bytes just before the offset are
  not the ones read (rewritten in place, or truncated and written past the offset again
  between two polls, as a launcher that empties its log on a restart does):
  :attr:`FollowEvent.REWRITTEN`, read from its first byte;
* a ``limit`` (the bytes a launch receipt covers) below the offset:
  :attr:`FollowEvent.REWOUND`, read from the first byte up to the limit;
* otherwise the bytes appended since the last poll, up to ``limit`` and at most
  ``max_bytes`` a poll (the rest on the next poll): a poll costs what was appended,
  however long the file already is.

The path missing is :attr:`FollowState.MISSING`, anything but a regular file or an I/O
error :attr:`FollowState.UNREADABLE`: states, never exceptions, and the file found again
is read from its first byte.  Nothing here decodes a byte: the caller above gets the
bytes and whether they begin the file again (:attr:`Poll.restart`).

The path is opened without blocking (a FIFO swapped in for the log is refused, never
waited on) and read with ``pread`` at the offset, so a writer appending at the same time
is never raced: at most the bytes it had written when the size was read are returned.
"""

from __future__ import annotations

import enum
import os
import stat
from typing import Final, final

import attrs

__all__ = [
    "FINGERPRINT_BYTES",
    "MAX_POLL_BYTES",
    "FollowEvent",
    "FollowState",
    "LogFollower",
    "Poll",
]

#: How many of the bytes just before the offset are kept and compared on the next poll.
FINGERPRINT_BYTES: Final = 4096
#: The most bytes one poll returns by default: a 10 GB log found at its full length is
#: read over several polls, each one bounded.
MAX_POLL_BYTES: Final = 256 * 1024 * 1024
_READ_BYTES: Final = 4 * 1024 * 1024
_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class FollowState(enum.Enum):
    """What the path held at the last poll."""

    FOLLOWING = "following"
    """A regular file, read up to :attr:`Poll.offset`."""
    MISSING = "missing"
    """No file at the path (never created yet, deleted, or moved away)."""
    UNREADABLE = "unreadable"
    """Something that is not a regular file, or a file that could not be read."""


class FollowEvent(enum.Enum):
    """Why a poll read the file from its first byte again."""

    ROTATED = "rotated"
    """Another file is at the path (another device or inode): a rotated or replaced log."""
    TRUNCATED = "truncated"
    """The file is shorter than what was read."""
    REWRITTEN = "rewritten"
    """The bytes just before the offset are not those read: the file was rewritten."""
    REWOUND = "rewound"
    """The caller's limit is below what was read (a receipt that covers fewer bytes)."""


@final
@attrs.frozen
class Poll:
    """What one poll of a followed path found."""

    state: FollowState
    event: FollowEvent | None
    """Why the file is read from its first byte again; ``None`` when it is not (or when
    it is the first read, or the first after a missing or unreadable path)."""
    restart: bool
    """Whether :attr:`data` begins the file again: the caller drops what it built from
    the earlier bytes.  True on the first read, on every :attr:`event`, and on the first
    read after the path was missing or unreadable."""
    data: bytes
    """The bytes read, from offset :attr:`start`."""
    start: int
    offset: int
    """How many bytes of the file have been read, :attr:`data` included."""
    file_bytes: int | None
    """The file's size at this poll (``None`` when there is no readable file)."""
    detail: str | None
    """One line for a person: why the path is missing or unreadable, or what the event was."""


class LogFollower:
    """A file followed by its appended bytes (see the module)."""

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = MAX_POLL_BYTES) -> None:
        if max_bytes <= 0:
            msg = f"max_bytes must be positive, got {max_bytes}"
            raise ValueError(msg)
        self.path = os.fspath(path)
        self._max_bytes = max_bytes
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        self._fingerprint = b""

    @property
    def offset(self) -> int:
        """How many bytes of the current file have been read."""
        return self._offset

    def _forget(self) -> None:
        self._identity = None
        self._offset = 0
        self._fingerprint = b""

    def _nothing(self, state: FollowState, detail: str) -> Poll:
        self._forget()
        return Poll(
            state=state,
            event=None,
            restart=False,
            data=b"",
            start=0,
            offset=0,
            file_bytes=None,
            detail=detail,
        )

    def poll(self, *, limit: int | None = None) -> Poll:
        """Read what was appended since the last poll (at most up to ``limit`` bytes of
        the file, and at most ``max_bytes`` this poll).  Never raises for what the path
        holds: a missing or unreadable path is a :class:`Poll` of that state."""
        if limit is not None and limit < 0:
            msg = f"limit must not be negative, got {limit}"
            raise ValueError(msg)
        try:
            fd = os.open(self.path, _FLAGS)
        except FileNotFoundError:
            return self._nothing(FollowState.MISSING, "no such file")
        except OSError as exc:
            return self._nothing(FollowState.UNREADABLE, exc.strerror or type(exc).__name__)
        try:
            return self._read(fd, limit)
        except OSError as exc:
            return self._nothing(FollowState.UNREADABLE, exc.strerror or type(exc).__name__)
        finally:
            os.close(fd)

    def _read(self, fd: int, limit: int | None) -> Poll:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, a socket or a device"
            return self._nothing(FollowState.UNREADABLE, f"not a regular file ({kind})")
        identity = (info.st_dev, info.st_ino)
        size = info.st_size
        event, detail = self._event(fd, identity, size, limit)
        restart = self._identity is None or event is not None
        if restart:
            self._offset, self._fingerprint = 0, b""
        self._identity = identity
        start = self._offset
        end = size if limit is None else min(size, limit)
        data = _pread(fd, max(0, min(end - start, self._max_bytes)), start)
        self._offset = start + len(data)
        kept = self._fingerprint + data[-FINGERPRINT_BYTES:]
        self._fingerprint = kept[-FINGERPRINT_BYTES:]
        return Poll(
            state=FollowState.FOLLOWING,
            event=event,
            restart=restart,
            data=data,
            start=start,
            offset=self._offset,
            file_bytes=size,
            detail=detail,
        )

    def _event(
        self, fd: int, identity: tuple[int, int], size: int, limit: int | None
    ) -> tuple[FollowEvent | None, str | None]:
        if self._identity is None:
            return None, None
        read = self._offset
        if identity != self._identity:
            return FollowEvent.ROTATED, (
                f"another file is at the path (inode {self._identity[1]} → {identity[1]}): "
                "read from its start"
            )
        if size < read:
            return FollowEvent.TRUNCATED, (
                f"truncated from {read:,} to {size:,} bytes: read from its start"
            )
        if limit is not None and limit < read:
            return FollowEvent.REWOUND, (
                f"the receipt covers {limit:,} bytes, fewer than the {read:,} read: "
                "read again from the start"
            )
        kept = self._fingerprint
        if kept and _pread(fd, len(kept), read - len(kept)) != kept:
            return FollowEvent.REWRITTEN, (
                f"the bytes before offset {read:,} are not those read: the file was "
                "rewritten; read from its start"
            )
        return None, None


def _pread(fd: int, count: int, offset: int) -> bytes:
    """Up to ``count`` bytes at ``offset`` (fewer when the file ends first)."""
    chunks: list[bytes] = []
    got = 0
    while got < count:
        chunk = os.pread(fd, min(_READ_BYTES, count - got), offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
