"""A startup log read as it grows: :class:`FollowedStartupLog`.

:func:`~vllm_evidence._adapters.startup_log.read_startup_log` reads a log from its first
byte to its end.  A log that is followed (``vllm-evidence watch``, the gate) grows while
it is read: this reader is fed the appended bytes (:mod:`vllm_evidence._capture.follow`
finds them) and parses only those, keeping between feeds what the reader keeps between
blocks — the running digest, the line count, the partial last line, the hard-wrap join
in progress and the launch assembler — so that a feed costs what was appended, however
long the log already is.

:meth:`FollowedStartupLog.startup_log` is, at any moment, the :class:`StartupLog` that
``read_startup_log`` gives for the bytes fed so far (a file of exactly those bytes: the
same digest, size, line count, wrap width and launches, the partial last line read as a
line), or the same :class:`~vllm_evidence._capture.log.LogReadFailure` (empty, binary).
It is made from a copy of the assembler's state, which the next feed does not see.

**Hard wraps.**  With ``wrap_width="auto"`` the width is detected from the log's first
lines (:func:`~vllm_evidence._capture.log.detect_wrap_width` over the first
:data:`~vllm_evidence._capture.log.SAMPLE_LINES` lines of the first
:data:`~vllm_evidence._capture.log.BLOCK_BYTES`, as the reader samples them).  While the
log is shorter than both, a later line can change what that sample says: the width is
provisional, the bytes are kept (at most one block), and a feed that changes the width
parses them again.  Once the sample is complete the width is final and the kept bytes
are let go.

**Long lines.**  A physical line keeps at most its first
:data:`~vllm_evidence._capture.log.MAX_LINE_BYTES` bytes, wherever the feeds cut it (the
whole-file reader cuts only a line that spans its blocks): a line of a megabyte or more
is never a line vLLM prints.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterator
from typing import Final

from vllm_evidence._adapters.startup_log.launch import StartupLog, _mint_log
from vllm_evidence._adapters.startup_log.reader import _RULES, _Assembler, _parse
from vllm_evidence._capture.log import (
    BLOCK_BYTES,
    MAX_LINE_BYTES,
    SAMPLE_LINES,
    WRAP_SLACK,
    LogReadFailure,
    LogReadFailureReason,
    WrapWidth,
    _continues,
    _mint_failure,
    detect_wrap_width,
)

__all__ = ["FollowedStartupLog"]

#: How far into the log a NUL byte makes it binary (as the whole-file reader checks).
_BINARY_WINDOW: Final = 65536

_Emit = Callable[[int, str], None]


class _Joiner:
    """The hard-wrap join in progress: physical lines in, logical lines out (as
    :meth:`vllm_evidence._capture.log.LogLines._joined` joins them)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.low = width - WRAP_SLACK
        self.pending: list[str] = []
        self.pending_line = 1
        self.last_len = 0
        self.size = 0

    def add(self, text: str, line: int, emit: _Emit) -> None:
        if (
            self.pending
            and self.low <= self.last_len <= self.width
            and _continues(text, _RULES)
            and not text.startswith("#@")
        ):
            if self.size < MAX_LINE_BYTES:
                self.pending.append(text)
                self.size += len(text)
            self.last_len = len(text)
            return
        if self.pending:
            emit(self.pending_line, "".join(self.pending))
        self.pending, self.pending_line = [text], line
        self.last_len = self.size = len(text)

    def flush(self, emit: _Emit) -> None:
        if self.pending:
            emit(self.pending_line, "".join(self.pending))

    def copy(self) -> _Joiner:
        twin = copy.copy(self)
        twin.pending = list(self.pending)
        return twin


def _clone(assembler: _Assembler) -> _Assembler:
    """A copy of the assembler that finishing does not share: its containers copied, the
    (immutable) observations in them shared."""
    twin = copy.copy(assembler)
    for name, value in vars(assembler).items():
        if isinstance(value, list | set | dict):
            setattr(twin, name, copy.copy(value))
    return twin


def _physical(raw: bytes) -> str:
    """A physical line's visible text (without its newline), cut at the line bound."""
    return _RULES.clean(raw[:MAX_LINE_BYTES].decode("utf-8", "replace"))


class FollowedStartupLog:
    """A startup log fed its bytes as they are appended (see the module).

    ``source`` is the name the read log carries (:attr:`StartupLog.source`: the path it
    is read from, which pickling reads again).  ``wrap_width`` is
    :func:`~vllm_evidence._adapters.startup_log.read_startup_log`'s.
    """

    def __init__(self, source: str, *, wrap_width: WrapWidth = "auto") -> None:
        if not (wrap_width in ("auto", "off") or (isinstance(wrap_width, int) and wrap_width > 0)):
            msg = f"wrap_width must be 'auto', 'off' or a positive width, got {wrap_width!r}"
            raise ValueError(msg)
        self.source = source
        self._wrap: WrapWidth = wrap_width
        self.reset()

    def reset(self) -> None:
        """Forget every byte fed: the log begins again (a rotated or truncated file)."""
        self._digest = hashlib.sha256()
        self._size = 0
        self._nul_at: int | None = None
        self._head_end = 0
        self._sample: list[str] = []
        self._final = self._wrap != "auto"
        self._width: int | None = self._wrap if isinstance(self._wrap, int) else None
        self._kept: bytearray | None = None if self._final else bytearray()
        self._cached: StartupLog | LogReadFailure | None = None
        self._restart_parse()

    def _restart_parse(self) -> None:
        self._assembler = _Assembler()
        self._lines = 0
        self._carry = bytearray()
        self._dropping = False
        self._joiner = None if self._width is None else _Joiner(self._width)

    @property
    def size_bytes(self) -> int:
        """How many bytes have been fed since the log began (or was reset)."""
        return self._size

    @property
    def sha256(self) -> str:
        """The SHA-256 of the bytes fed."""
        return self._digest.hexdigest()

    @property
    def wrap_width(self) -> int | None:
        """The hard-wrap width lines are joined at (``None``: not joined); provisional
        while the sample of first lines is incomplete (see the module)."""
        return self._width

    # -------------------------------------------------------------------------- feeding

    def feed(self, data: bytes) -> None:
        """Read ``data``, the bytes appended to the log since the last feed."""
        while data:
            if self._final:
                piece, data = data, b""
            else:
                room = BLOCK_BYTES - self._size
                piece, data = data[:room], data[room:]
            self._feed(piece)

    def _feed(self, piece: bytes) -> None:
        offset = self._size
        self._digest.update(piece)
        self._size += len(piece)
        self._cached = None
        if self._nul_at is None and offset < _BINARY_WINDOW:
            found = piece.find(b"\x00", 0, _BINARY_WINDOW - offset)
            if found >= 0:
                self._nul_at = offset + found
        if offset < BLOCK_BYTES:
            last = piece.rfind(b"\n", 0, BLOCK_BYTES - offset)
            if last >= 0:
                self._head_end = offset + last + 1
        if self._final:
            for run in self._runs(piece):
                self._parse_run(*run)
            return
        assert self._kept is not None  # noqa: S101 - kept while the width is provisional
        self._kept += piece
        sampled = len(self._sample)
        for run in self._runs(piece):
            self._sample_run(*run)
            self._parse_run(*run)
        if len(self._sample) != sampled or self._size >= BLOCK_BYTES:
            self._settle_width()

    def _runs(self, piece: bytes) -> Iterator[tuple[bytes, int, int]]:
        """Whole lines of ``piece`` with the partial line before it: ``(buffer, start,
        end)``, each ``buffer[start:end]`` ending in a newline; what follows the last
        newline is kept for the next feed (at most :data:`MAX_LINE_BYTES` of it)."""
        start = 0
        if self._dropping:
            newline = piece.find(b"\n")
            if newline < 0:
                return
            start, self._dropping = newline, False
        last = piece.rfind(b"\n", start)
        if last < 0:
            self._keep(piece[start:])
            return
        if self._carry:
            newline = piece.find(b"\n", start)
            line = bytes(self._carry) + piece[start : newline + 1]
            self._carry.clear()
            yield line, 0, len(line)
            start = newline + 1
        if start <= last:
            yield piece, start, last + 1
        self._keep(piece[last + 1 :])

    def _keep(self, tail: bytes) -> None:
        self._carry += tail
        if len(self._carry) > MAX_LINE_BYTES:
            del self._carry[MAX_LINE_BYTES:]
            self._dropping = True

    def _emit(self, line: int, text: str) -> None:
        _parse(text, line, self._assembler)

    def _parse_run(self, block: bytes, start: int, end: int) -> None:
        joiner = self._joiner
        if joiner is not None:
            for raw in block[start:end].split(b"\n")[:-1]:
                self._lines += 1
                joiner.add(_physical(raw), self._lines, self._emit)
            return
        counted = start
        for begin in _RULES.scan.line_starts(block, start, end):
            self._lines += block.count(b"\n", counted, begin)
            counted = begin
            self._emit(self._lines + 1, _physical(block[begin : block.find(b"\n", begin)]))
        self._lines += block.count(b"\n", counted, end)

    # ---------------------------------------------------------------------- hard wraps

    def _sample_run(self, block: bytes, start: int, end: int) -> None:
        room = SAMPLE_LINES - len(self._sample)
        if room > 0:
            # At most ``room`` lines: the last part is the empty tail after the run's last
            # newline, or the lines past ``room``.
            self._sample.extend(_physical(raw) for raw in block[start:end].split(b"\n", room)[:-1])

    def _settle_width(self) -> None:
        """Detect the width from the sample so far; parse the kept bytes again when it
        changed; let them go once the sample is complete."""
        final = len(self._sample) >= SAMPLE_LINES or self._size >= BLOCK_BYTES
        if self._sample:
            lines = self._sample[:SAMPLE_LINES]
            sample = lines if len(lines) >= SAMPLE_LINES else [*lines, ""]
            width = detect_wrap_width(sample, _RULES)
        else:
            width = None
        if width != self._width:
            self._width = width
            self._restart_parse()
            assert self._kept is not None  # noqa: S101 - kept while the width is provisional
            for run in self._runs(bytes(self._kept)):
                self._parse_run(*run)
        if final:
            self._final = True
            self._kept = None
            self._sample = []

    # ------------------------------------------------------------------------ the log

    def _binary(self) -> bool:
        if self._nul_at is None:
            return False
        # The whole-file reader looks for NUL in the first 64 KiB of its first run of
        # whole lines (the whole file when the first block holds no newline).
        has_newline = self._head_end > 0
        return not has_newline or self._nul_at < self._head_end

    def startup_log(self) -> StartupLog | LogReadFailure:
        """The log read so far: what ``read_startup_log`` gives for a file of exactly the
        bytes fed (see the module)."""
        if self._cached is not None:
            return self._cached
        if self._size == 0:
            result: StartupLog | LogReadFailure = _mint_failure(
                reason=LogReadFailureReason.EMPTY, source=self.source, detail="empty file"
            )
        elif self._binary():
            result = _mint_failure(
                reason=LogReadFailureReason.BINARY,
                source=self.source,
                detail="binary data (NUL bytes), not a text log",
            )
        else:
            result = self._snapshot()
        self._cached = result
        return result

    def _snapshot(self) -> StartupLog:
        assembler = _clone(self._assembler)

        def emit(line: int, text: str) -> None:
            _parse(text, line, assembler)

        lines = self._lines
        joiner = None if self._joiner is None else self._joiner.copy()
        if self._carry:  # the partial last line is read as a line, as the reader reads it
            lines += 1
            tail = bytes(self._carry)
            if joiner is not None:
                joiner.add(_physical(tail), lines, emit)
            elif _RULES.scan.line_starts(tail + b"\n"):
                emit(lines, _physical(tail))
        if joiner is not None:
            joiner.flush(emit)
        return _mint_log(
            source=self.source,
            sha256=self._digest.hexdigest(),
            size_bytes=self._size,
            line_count=lines,
            wrap_width=self._width,
            launches=assembler.finish(lines),
        )
