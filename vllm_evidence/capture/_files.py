"""Reading a capture directory's files safely (package-internal).

Every file is opened relative to the directory's descriptor, never through a symbolic
link, must be a regular file, and has its size checked (``fstat``) before a byte is
read; a FIFO, a device, ``/dev/zero`` behind a link or a file that grows while read is
refused, never waited on or read whole.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from vllm_evidence.errors import CaptureIntegrityError, InputError

__all__ = ["integrity", "listing", "names_text", "open_dir", "plain_name", "read_file"]


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
