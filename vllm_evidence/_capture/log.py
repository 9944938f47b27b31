"""Read a log file as bytes: stream it, digest it, prefilter it, rejoin its hard wraps.

This module knows files and bytes, not what vLLM prints: the caller above it supplies
the line rules (:class:`LineRules`: how to clean a physical line, which lines start a
record, which keywords a line must hold to be worth decoding).
:func:`vllm_evidence._adapters.startup_log.read_startup_log` is the caller for vLLM's
startup log.

**Streaming.**  The input is read in binary blocks of :data:`BLOCK_BYTES`, each cut at its
last newline; memory is bounded by the block size whatever the file size.  A physical
line longer than :data:`MAX_LINE_BYTES` keeps its first :data:`MAX_LINE_BYTES` bytes and
the rest is dropped.  Bytes are decoded as UTF-8 with replacement characters.  Without
hard wraps, lines that contain none of the caller's keywords are never decoded (no
object is made for them): each block is searched once for all keywords by one
Aho-Corasick automaton (see :class:`KeywordScan`) and line numbers come from counting
newlines between the lines found.

**Hard wraps.**  A terminal that wraps at W columns cuts a long record into a first
segment and prefix-less continuation segments of exactly W characters, the last one
shorter.  The first segment may look shorter than W when the terminal counted colour
codes that a later copy stripped (the real captures: 136 and 129 for W = 147).  The
reader therefore

1. *detects* W from the first :data:`SAMPLE_LINES` physical lines: the largest visible
   length (cleaned by the caller's rules, ``#@`` annotation lines ignored) of at
   least 60 that ends two or more lines followed by a non-blank line that does not start
   a record (by the caller's rules), and that no line of the
   sample exceeds (an unwrapped log has lines longer than any such length), *and* at
   which at least one such line is cut mid-token — it ends in a non-blank character
   and its continuation starts with neither a blank, an uppercase letter nor ``# `` (a
   terminal cuts at a column, so some cut falls inside a word or a value; a complete
   line followed by a noise line such as ``Loading safetensors …``, or by a message
   pasted without its head such as ``# GPU blocks: …``, does not qualify, and a log is
   never joined on that evidence alone); or takes ``wrap_width`` from the caller;
2. *joins* a physical line onto the logical line before it when W is known, the previous
   physical line's visible length is within :data:`WRAP_SLACK` of W (and not above), and
   the line is non-blank and does not start a record.
"""

from __future__ import annotations

import enum
import errno
import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Literal, Protocol, TypeVar, final

import attrs

from vllm_evidence._capture._keyword_scan import KeywordScan
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.errors import EvidenceMismatchError, InputError

__all__ = [
    "BLOCK_BYTES",
    "MAX_LINE_BYTES",
    "SAMPLE_LINES",
    "WRAP_SLACK",
    "KeywordScan",
    "LineRules",
    "LogLines",
    "LogReadFailure",
    "LogReadFailureReason",
    "WrapWidth",
    "check_log_bytes",
    "detect_wrap_width",
    "read_log",
    "read_log_bytes",
]

BLOCK_BYTES = 4 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
SAMPLE_LINES = 4096
WRAP_SLACK = 32
_MIN_WRAP = 60
_THREAD_HASH_BYTES = 1024 * 1024
_PUBLIC = "vllm_evidence.read_startup_log()"

T = TypeVar("T")

#: ``"auto"`` detects terminal hard wraps, ``"off"`` never joins lines, an int joins at it.
WrapWidth = int | Literal["auto", "off"]


class LogReadFailureReason(enum.Enum):
    """Why a source could not be read as a log at all."""

    MISSING = "missing"
    DIRECTORY = "directory"
    NOT_A_FILE = "not_a_file"
    UNREADABLE = "unreadable"
    EMPTY = "empty"
    BINARY = "binary"


@final
@attrs.frozen(init=False, repr=False)
class LogReadFailure(Sealed):
    """A source that is not a readable text log."""

    __public_constructor__ = _PUBLIC

    reason: LogReadFailureReason
    source: str | None
    detail: str

    def describe(self) -> str:
        """One line for a person."""
        where = self.source if self.source is not None else "<stream>"
        return f"cannot read startup log {where}: {self.detail} ({self.reason.value})"


_mint_failure = minter(LogReadFailure, LogReadFailure.__attrs_init__)


@attrs.frozen
class LineRules:
    """What the reader above capture says about physical lines (capture knows no grammar)."""

    clean: Callable[[str], str]
    """The visible text of one decoded physical line (wrappers, colour codes removed)."""
    starts_record: Callable[[str], bool]
    """Whether a cleaned physical line begins a new record (never joined onto the last)."""
    scan: KeywordScan
    """The keywords a line must hold to be worth decoding when lines are not joined."""


# --------------------------------------------------------------------------------------
# Blocks.


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class _Prefix:
    """The first ``limit`` bytes of a stream, and nothing after them."""

    def __init__(self, stream: _Readable, limit: int) -> None:
        self._stream = stream
        self._left = limit

    def read(self, size: int, /) -> bytes:
        data = self._stream.read(min(size, self._left)) if self._left > 0 else b""
        self._left -= len(data)
        return data


_Run = tuple[bytes, int, int]
"""Whole lines ``buffer[start:end]`` of the input: ``(buffer, start, end)``."""


class _Reader:
    """Blocks of whole lines from a binary stream, with digest and size."""

    def __init__(self, stream: _Readable) -> None:
        self._stream = stream
        self.digest = hashlib.sha256()
        self.size = 0

    def blocks(self) -> Iterator[_Run]:
        """The input as runs of whole lines, in order, each line ending with a newline
        (one is added to a last line without one).

        A run is ``(buffer, start, end)``: its lines are ``buffer[start:end]``.  A block
        read is not copied: the line a read cut in two is joined into a small run of its
        own and the block's whole lines are a run of the block itself.  The first run is
        the whole first block (and the line it cut), so the caller may sample it.
        """
        # The digest of each block is taken on a second thread while the caller scans the
        # block (hashlib releases the GIL on large updates); updates stay in order because
        # each one is awaited before the next is submitted.
        with ThreadPoolExecutor(max_workers=1) as pool:
            hashing: Future[None] | None = None
            carry = b""
            dropping = False
            first = True
            while True:
                data = self._stream.read(BLOCK_BYTES)
                if hashing is not None:
                    hashing.result()
                    hashing = None
                if not data:
                    break
                if len(data) >= _THREAD_HASH_BYTES:
                    hashing = pool.submit(self.digest.update, data)
                else:
                    self.digest.update(data)
                self.size += len(data)
                start = 0
                if dropping:
                    nl = data.find(b"\n")
                    if nl < 0:
                        continue
                    start, dropping = nl, False
                cut = data.rfind(b"\n", start)
                if cut < 0:
                    carry += data[start:]
                elif first:
                    first = False
                    buf = carry + data[start : cut + 1]
                    yield buf, 0, len(buf)
                    carry = data[cut + 1 :]
                else:
                    if carry:
                        nl = data.find(b"\n", start)
                        joined = carry + data[start : nl + 1]
                        yield joined, 0, len(joined)
                        start = nl + 1
                    if start <= cut:
                        yield data, start, cut + 1
                    carry = data[cut + 1 :]
                if len(carry) > MAX_LINE_BYTES:
                    carry, dropping = carry[:MAX_LINE_BYTES], True
        if carry:
            yield carry + b"\n", 0, len(carry) + 1


# --------------------------------------------------------------------------------------
# Hard wraps.


def _continues(text: str, rules: LineRules) -> bool:
    return bool(text.strip()) and not rules.starts_record(text)


def detect_wrap_width(lines: list[str], rules: LineRules) -> int | None:
    """The hard-wrap width of a sample of cleaned physical lines, or ``None`` (see module)."""
    counts: Counter[int] = Counter()
    mid_token: set[int] = set()
    longest = 0
    for prev, nxt in zip(lines, [*lines[1:], ""], strict=True):
        if prev.startswith("#@"):
            continue
        longest = max(longest, len(prev))
        if len(prev) >= _MIN_WRAP and _continues(nxt, rules):
            counts[len(prev)] += 1
            if _cuts_a_token(prev, nxt):
                mid_token.add(len(prev))
    candidates = [width for width, n in counts.items() if n >= 2]
    if not candidates:
        return None
    width = max(candidates)
    if longest > width:
        return None
    # A wrap at W cuts some line mid-token; its first segment may be shorter than W
    # when the terminal counted colour codes (see the module docstring).
    if not any(width - WRAP_SLACK <= cut <= width for cut in mid_token):
        return None
    return width


_TOKEN_END = re.compile(r"\S\Z")
_TOKEN_CONTINUES = re.compile(r"(?!# )[^\sA-Z]")


def _cuts_a_token(prev: str, nxt: str) -> bool:
    """Whether a line break between ``prev`` and ``nxt`` falls inside a word or value."""
    return _TOKEN_END.search(prev) is not None and _TOKEN_CONTINUES.match(nxt) is not None


# --------------------------------------------------------------------------------------
# Logical lines.


class LogLines:
    """The logical lines of one log, read once, in order.

    Iterating yields ``(line, text)``: the number of the logical line's first physical
    line and its cleaned text (hard-wrapped continuations joined on).  Without wrap
    joining only the lines holding a keyword are yielded.  :attr:`sha256`,
    :attr:`size_bytes` and :attr:`line_count` are complete once iteration has ended.
    """

    def __init__(
        self,
        reader: _Reader,
        blocks: Iterator[_Run],
        first: _Run,
        rules: LineRules,
        source: str | None,
        wrap_width: int | None,
    ) -> None:
        self._reader = reader
        self._blocks = blocks
        self._first = first
        self._rules = rules
        self.source = source
        self.wrap_width = wrap_width
        """The hard-wrap width that was detected or given; ``None``: lines are not joined."""
        self.line_count = 0

    @property
    def sha256(self) -> str:
        """The SHA-256 of every byte read."""
        return self._reader.digest.hexdigest()

    @property
    def size_bytes(self) -> int:
        """The number of bytes read."""
        return self._reader.size

    def _all_blocks(self) -> Iterator[_Run]:
        yield self._first
        yield from self._blocks

    def __iter__(self) -> Iterator[tuple[int, str]]:
        if self.wrap_width is None:
            return self._keyword_lines()
        return self._joined(self.wrap_width)

    def _visible(self, raw: bytes) -> str:
        return self._rules.clean(raw.decode("utf-8", "replace").rstrip("\n"))

    def _keyword_lines(self) -> Iterator[tuple[int, str]]:
        """No wrap joining: decode only the lines that hold a keyword."""
        line = 0
        line_starts = self._rules.scan.line_starts
        for block, start, end in self._all_blocks():
            counted = start
            for begin in line_starts(block, start, end):
                line += block.count(b"\n", counted, begin)
                counted = begin
                yield line + 1, self._visible(block[begin : block.find(b"\n", begin)])
            line += block.count(b"\n", counted, end)
            self.line_count = line

    def _physical(self) -> Iterator[str]:
        clean = self._rules.clean
        for block, start, end in self._all_blocks():
            for raw in block[start:end].split(b"\n")[:-1]:
                yield clean(raw.decode("utf-8", "replace"))

    def _joined(self, width: int) -> Iterator[tuple[int, str]]:
        """Join hard-wrapped continuation lines onto the logical line they continue."""
        low = width - WRAP_SLACK
        pending: list[str] = []
        pending_line = 1
        last_len = 0
        line = 0
        size = 0
        for text in self._physical():
            line += 1
            self.line_count = line
            if (
                pending
                and low <= last_len <= width
                and _continues(text, self._rules)
                and not text.startswith("#@")
            ):
                if size < MAX_LINE_BYTES:
                    pending.append(text)
                    size += len(text)
                last_len = len(text)
                continue
            if pending:
                yield pending_line, "".join(pending)
            pending, pending_line, last_len, size = [text], line, len(text), len(text)
        if pending:
            yield pending_line, "".join(pending)


def _lines(
    stream: _Readable, source: str | None, rules: LineRules, wrap_width: WrapWidth
) -> LogLines | LogReadFailure:
    reader = _Reader(stream)
    blocks = reader.blocks()
    first = next(blocks, None)
    if first is None:
        return _mint_failure(reason=LogReadFailureReason.EMPTY, source=source, detail="empty file")
    head = first[0]  # the whole first block (see _Reader.blocks)
    if b"\x00" in head[:65536]:
        return _mint_failure(
            reason=LogReadFailureReason.BINARY,
            source=source,
            detail="binary data (NUL bytes), not a text log",
        )
    width: int | None
    if wrap_width == "off":
        width = None
    elif wrap_width == "auto":
        sample = [
            rules.clean(r.decode("utf-8", "replace")) for r in head.split(b"\n", SAMPLE_LINES)
        ]
        width = detect_wrap_width(sample[:SAMPLE_LINES], rules)
    else:
        width = wrap_width
    return LogLines(reader, blocks, first, rules, source, width)


def _unreadable(source: str | None, exc: OSError) -> LogReadFailure:
    return _mint_failure(
        reason=LogReadFailureReason.UNREADABLE,
        source=source,
        detail=exc.strerror or type(exc).__name__,
    )


def read_log(
    source: str | os.PathLike[str] | IO[bytes],
    rules: LineRules,
    wrap_width: WrapWidth,
    consume: Callable[[LogLines], T],
    *,
    name: str | None = None,
    limit: int | None = None,
) -> T | LogReadFailure:
    """Open ``source`` (a path or a binary stream) and hand its logical lines to ``consume``.

    ``consume`` runs while the file is open; what it returns is returned.  A source that
    cannot be read as a text log (missing, a directory, empty, binary, an I/O error while
    reading) is a :class:`LogReadFailure` instead.  ``name`` is what a stream is called
    (a path is called by itself); ``limit`` reads only the first ``limit`` bytes (a log
    re-read as it was when first read, whatever was appended since).
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = str(path)
        try:
            path.stat()
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # a symlink loop, a denied directory, …
                return _unreadable(name, exc)
            dangling = path.is_symlink()
            return _mint_failure(
                reason=LogReadFailureReason.MISSING,
                source=name,
                detail="a symbolic link to a missing file" if dangling else "no such file",
            )
        if path.is_dir():
            return _mint_failure(
                reason=LogReadFailureReason.DIRECTORY,
                source=name,
                detail="is a directory, not a log file",
            )
        if not path.is_file():
            return _mint_failure(
                reason=LogReadFailureReason.NOT_A_FILE, source=name, detail="not a regular file"
            )
        try:
            with path.open("rb") as stream:
                lines = _lines(_bounded(stream, limit), name, rules, wrap_width)
                return lines if isinstance(lines, LogReadFailure) else consume(lines)
        except OSError as exc:
            return _unreadable(name, exc)
    try:
        lines = _lines(_bounded(source, limit), name, rules, wrap_width)
        return lines if isinstance(lines, LogReadFailure) else consume(lines)
    except OSError as exc:
        return _unreadable(name, exc)


def _bounded(stream: _Readable, limit: int | None) -> _Readable:
    return stream if limit is None else _Prefix(stream, limit)


def read_log_bytes(path: str, *, size_bytes: int, sha256: str) -> bytes:
    """The first ``size_bytes`` bytes of the log at ``path``, checked against ``sha256``.

    A log is re-read as it was when first read: bytes appended since are not read.  A
    file that cannot be read is an :class:`~vllm_evidence.errors.InputError`; one that
    is shorter, or whose first ``size_bytes`` bytes have another digest, an
    :class:`~vllm_evidence.errors.EvidenceMismatchError`.
    """
    try:
        with Path(path).open("rb") as stream:
            data = stream.read(size_bytes)
    except OSError as exc:
        msg = f"startup log {path}: cannot be read again ({exc.strerror or type(exc).__name__})"
        raise InputError(msg) from exc
    check_log_bytes(data, path, size_bytes=size_bytes, sha256=sha256)
    return data


def check_log_bytes(data: bytes, where: str | None, *, size_bytes: int, sha256: str) -> None:
    """Raise :class:`~vllm_evidence.errors.EvidenceMismatchError` unless ``data`` is
    ``size_bytes`` long with SHA-256 ``sha256``."""
    actual = hashlib.sha256(data).hexdigest()
    if len(data) != size_bytes or actual != sha256:
        msg = (
            f"startup log {where or '<embedded>'}: {len(data)} bytes with SHA-256 {actual}, "
            f"but {size_bytes} bytes with SHA-256 {sha256} were read; the log changed "
            "and nothing is derived from it"
        )
        raise EvidenceMismatchError(msg)
