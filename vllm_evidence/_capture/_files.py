"""Reading files safely (package-internal): a capture directory's, and any file a caller
names.

Every file of a capture is opened relative to the directory's descriptor, never through
a symbolic link, must be a regular file, and has its size checked (``fstat``) before a
byte is read; a FIFO, a device, ``/dev/zero`` behind a link or a file that grows while
read is refused, never waited on or read whole.

A file a caller names on the command line or to the library (a launch receipt, a CA
file, an API-key file, a targets file) is read by :func:`read_named_file` under the
same rules, except that a symbolic link is followed (the path is the caller's own): it
is opened with ``O_NONBLOCK`` and checked with ``fstat`` before a byte is read, so a
FIFO, a device or a directory is refused at once and never blocks, and it is read to a
size cap, never whole.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from vllm_evidence.errors import CaptureIntegrityError, InputError

__all__ = [
    "NamedFileError",
    "integrity",
    "listing",
    "names_text",
    "open_dir",
    "open_regular",
    "plain_name",
    "read_file",
    "read_named_file",
]

_NAMED_FLAGS = (
    os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)


def integrity(path: object, problem: str) -> CaptureIntegrityError:
    return CaptureIntegrityError(
        f"{path}: {problem}; the capture was altered and nothing is derived from it"
    )


def plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\x00" not in name


def read_file(dir_fd: int, directory: Path, name: str, limit: int, *, exact: bool = False) -> bytes:
    """A regular file's bytes, never through a symbolic link, its size checked first
    (at most ``limit`` bytes, or exactly ``limit`` when ``exact``)."""
    path = directory / name
    if not plain_name(name):
        msg = f"{path}: not a plain file name"
        raise InputError(msg)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if path.is_symlink():
            raise integrity(path, "a symbolic link, which a capture never holds") from None
        msg = f"{path}: listed in the manifest but unreadable ({exc.strerror})"
        raise CaptureIntegrityError(msg) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise integrity(path, "not a regular file (a FIFO, device or directory)")
        if exact and info.st_size != limit:
            raise integrity(
                path, f"size {info.st_size:,} bytes does not match the manifest's {limit:,}"
            )
        if info.st_size > limit:
            raise integrity(path, f"{info.st_size:,} bytes, past the {limit:,} bytes allowed")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise integrity(path, f"grew past the {limit:,} bytes allowed while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_dir(directory: Path) -> int:
    try:
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        msg = f"{directory}: not a readable directory ({exc.strerror})"
        raise InputError(msg) from None


def listing(dir_fd: int) -> set[str]:
    """The names in an open directory (by descriptor: the directory read is the one opened)."""
    return set(os.listdir(dir_fd))  # pathlib cannot list a descriptor


def names_text(names: set[str]) -> str:
    shown = sorted(names)
    more = f", … ({len(shown) - 5} more)" if len(shown) > 5 else ""
    return ", ".join(repr(n) for n in shown[:5]) + more


class NamedFileError(InputError):
    """A file a caller named that is refused: ``str()`` is one line, ``problem`` the part
    after the file's name (for a caller that words the line its own way)."""

    def __init__(self, what: str, path: object, problem: str) -> None:
        super().__init__(f"{what} {path}: {problem}")
        self.problem = problem


def _refuse_irregular(mode: int, what: str, path: object) -> None:
    if stat.S_ISDIR(mode):
        raise NamedFileError(what, path, "is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise NamedFileError(
            what, path, "not a regular file (a FIFO, a socket or a device): refused, not waited on"
        )


def open_regular(path: str | os.PathLike[str], what: str) -> int:
    """A descriptor of the regular file at ``path`` (opened without blocking and checked
    by ``fstat``); the caller closes it.  Anything else is a :class:`NamedFileError`."""
    try:
        fd = os.open(path, _NAMED_FLAGS)
    except OSError as exc:
        raise NamedFileError(
            what, path, f"cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    try:
        _refuse_irregular(os.fstat(fd).st_mode, what, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_named_file(path: str | os.PathLike[str], limit: int, *, what: str) -> bytes:
    """The bytes of a regular file a caller named, at most ``limit`` of them.

    The file is opened with ``O_NONBLOCK`` (a FIFO never blocks the open) and checked by
    ``fstat`` before a byte is read: a FIFO, a socket, a device or a directory is refused
    at once; a size past ``limit`` is refused before reading, and a file that grows past
    it while read (or a ``/proc`` file that reports size 0) is refused after at most
    ``limit + 1`` bytes.  Every refusal is a :class:`NamedFileError` (an
    :class:`InputError`) whose line starts ``{what} {path}:``.
    """
    fd = open_regular(path, what)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise NamedFileError(
                what, path, f"{size:,} bytes, larger than the {limit:,} bytes allowed"
            )
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as exc:
                raise NamedFileError(
                    what, path, f"cannot be read ({exc.strerror or type(exc).__name__})"
                ) from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise NamedFileError(what, path, f"more than the {limit:,} bytes allowed")
        return b"".join(chunks)
    finally:
        os.close(fd)
