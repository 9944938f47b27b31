"""Read a vLLM startup log: stream it, rejoin hard wraps, split it into launches.

:func:`read_startup_log` takes a path or a binary stream and returns a sealed
:class:`StartupLog` (its SHA-256 digest and its :class:`Launch` es) or a typed
:class:`LogReadFailure` (missing path, directory, binary file, empty file, unreadable).

**Streaming.**  The input is read in binary blocks of :data:`BLOCK_BYTES`, each cut at its
last newline; memory is bounded by the block size whatever the file size.  A physical
line longer than :data:`MAX_LINE_BYTES` keeps its first :data:`MAX_LINE_BYTES` bytes and
the rest is dropped.  Bytes are decoded as UTF-8 with replacement characters.  Without
hard wraps, lines that contain none of the keywords of
:data:`vllm_evidence.adapters.startup_log.KEYWORDS` are never decoded: each block is
searched with ``bytes.find`` (one pass per rare byte or keyword, at C speed) and line
numbers come from counting newlines between the lines found.

**Hard wraps.**  A terminal that wraps at W columns cuts a long record into a first
segment and prefix-less continuation segments of exactly W characters, the last one
shorter.  The first segment may look shorter than W when the terminal counted colour
codes that a later copy stripped (the real captures: 136 and 129 for W = 147).  The
reader therefore

1. *detects* W from the first :data:`SAMPLE_LINES` physical lines: the largest visible
   length (ANSI codes and carriage returns removed, ``#@`` annotation lines ignored) of at
   least 60 that ends two or more lines followed by a non-blank line that does not start
   a record (tag, vLLM/uvicorn/Python-logging prefix, wrapper), and that no line of the
   sample exceeds (an unwrapped log has lines longer than any such length), *and* at
   which at least one such line is cut mid-token — it ends in a non-blank character
   and its continuation starts with neither a blank nor an uppercase letter (a terminal
   cuts at a column, so some cut falls inside a word or a value; a complete line followed
   by a noise line such as ``Loading safetensors …`` does not qualify, and a log is
   never joined on that evidence alone); or takes ``wrap_width`` from the caller;
2. *joins* a physical line onto the logical line before it when W is known, the previous
   physical line's visible length is within :data:`WRAP_SLACK` of W (and not above), and
   the line is non-blank and does not start a record.

**Launches.**  A file often holds several launches (restarts appended to one file).  The
front end of every launch prints, once, some of: the version banner (logo), ``vLLM API
server version X`` / ``vLLM server version X, serving model M``, and ``non-default args:``.
These are *start markers*.  A new launch begins at a start marker when

* the current launch has already seen a start marker of the same kind, or
* the marker comes from an ``APIServer`` process whose pid differs from the API-server
  pid of the current launch's earlier markers, or
* the current launch has seen no start marker but already holds evidence (ranks,
  capacity, configuration, routes, …): the file began inside an earlier launch.

The engine-init line is not a marker (one per data-parallel engine).  Lines before the
first marker belong to launch 0; lines between launches belong to the earlier one.
Observations never cross a launch boundary: the two-line capacity pair is joined only
inside one launch.
"""

from __future__ import annotations

import enum
import errno
import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Literal, final

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.startup_log import (
    KEYWORDS,
    RECORD_HEAD_RE,
    RECORD_START_RE,
    AvailableMemoryObservation,
    BlocksObservation,
    CapacityFormat,
    CapacityObservation,
    ConcurrencyLine,
    DevModeWarning,
    EngineConfigObservation,
    ExecutorBackend,
    ExecutorMarker,
    ExecutorObservation,
    NonDefaultArgsObservation,
    Observation,
    ProcessTag,
    RankObservation,
    RouteObservation,
    SizeLine,
    VersionObservation,
    VersionSource,
    clean,
    parse_logical_line,
    tag_markers,
)
from vllm_evidence.adapters.startup_log import (
    _mint_capacity as mint_capacity,
)

__all__ = [
    "BLOCK_BYTES",
    "MAX_LINE_BYTES",
    "SCHEMA",
    "Launch",
    "LogReadFailure",
    "LogReadFailureReason",
    "StartupLog",
    "read_startup_log",
    "render_startup_log",
    "startup_log_document",
]

SCHEMA = "vllm-evidence.startup-log/1"
BLOCK_BYTES = 4 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
SAMPLE_LINES = 4096
WRAP_SLACK = 32
_MIN_WRAP = 60
_THREAD_HASH_BYTES = 1024 * 1024
_PUBLIC = "vllm_evidence.capture.startup_log.read_startup_log()"


class LogReadFailureReason(enum.Enum):
    """Why a source could not be read as a log at all."""

    MISSING = "missing"
    DIRECTORY = "directory"
    NOT_A_FILE = "not_a_file"
    UNREADABLE = "unreadable"
    EMPTY = "empty"
    BINARY = "binary"


@final
@attrs.frozen(init=False)
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


@final
@attrs.frozen(init=False)
class Launch(Sealed):
    """One launch of vLLM inside a log, with everything it printed about itself."""

    __public_constructor__ = _PUBLIC

    index: int
    first_line: int
    last_line: int
    versions: tuple[VersionObservation, ...]
    non_default_args: tuple[NonDefaultArgsObservation, ...]
    engine_configs: tuple[EngineConfigObservation, ...]
    ranks: tuple[RankObservation, ...]
    executor_observations: tuple[ExecutorObservation, ...]
    routes: tuple[RouteObservation, ...]
    capacity: tuple[CapacityObservation, ...]
    blocks: tuple[BlocksObservation, ...]
    available_memory: tuple[AvailableMemoryObservation, ...]
    dev_mode_warning_lines: tuple[int, ...]
    api_server_pids: tuple[int, ...]

    @property
    def version(self) -> VersionObservation | None:
        """The self-reported version, when every version line of the launch agrees."""
        if not self.versions:
            return None
        first = self.versions[0]
        if first.version is None or any(v.version != first.version for v in self.versions):
            return None
        return first

    @property
    def engine_config(self) -> EngineConfigObservation | None:
        """The first engine-init line (one per data-parallel engine; they agree)."""
        return self.engine_configs[0] if self.engine_configs else None

    @property
    def served_model_names(self) -> tuple[str, ...] | None:
        """Served names as given (non-default args), else as the engine-init line prints."""
        for args in self.non_default_args:
            if args.served_model_names is not None:
                return args.served_model_names
        config = self.engine_config
        if config is not None and config.served_model_name is not None:
            return (config.served_model_name,)
        return None

    @property
    def executor_backend(self) -> ExecutorBackend | None:
        """The backend, when the markers seen decide it; ``None`` when they do not.

        The engine-init ``distributed_executor_backend=`` field, when printed, is the
        resolved value and alone decides.  Otherwise every marker's compatible set is
        intersected; one backend left decides, none or several does not.
        """
        version = self.version.version if self.version else None
        config = [
            o.compatible(version)
            for o in self.executor_observations
            if o.marker is ExecutorMarker.CONFIG_FIELD
        ]
        sets = config or [o.compatible(version) for o in self.executor_observations]
        if not sets:
            return None
        common = frozenset.intersection(*sets)
        return next(iter(common)) if len(common) == 1 else None

    @property
    def executor_evidence(self) -> tuple[ExecutorObservation, ...]:
        """The markers that decided :attr:`executor_backend` (empty when undecided)."""
        backend = self.executor_backend
        if backend is None:
            return ()
        version = self.version.version if self.version else None
        return tuple(o for o in self.executor_observations if backend in o.compatible(version))

    @property
    def development_mode(self) -> bool | None:
        """True: ``/server_info`` registered or the dev-mode warning printed; False: a route
        table was printed without either; None: no route table and no warning."""
        if self.dev_mode_warning_lines or any(r.path == "/server_info" for r in self.routes):
            return True
        return False if self.routes else None


_mint_launch = minter(Launch, Launch.__attrs_init__)


@final
@attrs.frozen(init=False)
class StartupLog(Sealed):
    """A read startup log: its digest and its launches."""

    __public_constructor__ = _PUBLIC

    source: str | None
    sha256: str
    size_bytes: int
    line_count: int
    wrap_width: int | None
    """The hard-wrap width that was detected or given; ``None`` when lines were not joined."""
    launches: tuple[Launch, ...]


_mint_log = minter(StartupLog, StartupLog.__attrs_init__)


# --------------------------------------------------------------------------------------
# Reading.


class _Reader:
    """Blocks of whole lines from a binary stream, with digest and size."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.digest = hashlib.sha256()
        self.size = 0
        self.first = b""

    def blocks(self) -> Iterator[bytes]:
        # The digest of each block is taken on a second thread while the caller scans the
        # block (hashlib releases the GIL on large updates); updates stay in order because
        # each one is awaited before the next is submitted.
        with ThreadPoolExecutor(max_workers=1) as pool:
            hashing: Future[None] | None = None
            carry = b""
            dropping = False
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
                if dropping:
                    nl = data.find(b"\n")
                    if nl < 0:
                        continue
                    data, dropping = data[nl:], False
                buf = carry + data
                cut = buf.rfind(b"\n")
                if cut < 0:
                    carry = buf
                else:
                    yield buf[: cut + 1]
                    carry = buf[cut + 1 :]
                if len(carry) > MAX_LINE_BYTES:
                    carry, dropping = carry[:MAX_LINE_BYTES], True
        if carry:
            yield carry + b"\n"


def _visible(raw: bytes) -> str:
    return clean(raw.decode("utf-8", "replace").rstrip("\n"))


def _continues(text: str) -> bool:
    return (
        bool(text.strip())
        and RECORD_START_RE.match(text) is None
        and RECORD_HEAD_RE.search(text, 0, 80) is None
    )


def detect_wrap_width(lines: list[str]) -> int | None:
    """The hard-wrap width of a sample of cleaned physical lines, or ``None`` (see module)."""
    counts: Counter[int] = Counter()
    mid_token: set[int] = set()
    longest = 0
    for prev, nxt in zip(lines, [*lines[1:], ""], strict=True):
        if prev.startswith("#@"):
            continue
        longest = max(longest, len(prev))
        if len(prev) >= _MIN_WRAP and _continues(nxt):
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
_TOKEN_CONTINUES = re.compile(r"[^\sA-Z]")


def _cuts_a_token(prev: str, nxt: str) -> bool:
    """Whether a line break between ``prev`` and ``nxt`` falls inside a word or value."""
    return _TOKEN_END.search(prev) is not None and _TOKEN_CONTINUES.match(nxt) is not None


class _Assembler:
    """Observations in line order → launches (see the module docstring for the rules)."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []
        self._new(first_line=1)

    def _new(self, first_line: int) -> None:
        self.first_line = first_line
        self.markers: set[VersionSource | str] = set()
        self.evidence = False
        self.api_pids: list[int] = []
        self.versions: list[VersionObservation] = []
        self.args: list[NonDefaultArgsObservation] = []
        self.engines: list[EngineConfigObservation] = []
        self.ranks: list[RankObservation] = []
        self.executor: list[ExecutorObservation] = []
        self.routes: list[RouteObservation] = []
        self.capacity: list[CapacityObservation] = []
        self.blocks: list[BlocksObservation] = []
        self.memory: list[AvailableMemoryObservation] = []
        self.dev: list[int] = []
        self.pending: dict[str | None, SizeLine | BlocksObservation] = {}

    def _close(self, last_line: int) -> None:
        for key in list(self.pending):
            self._flush(key)
        self.launches.append(
            _mint_launch(
                index=len(self.launches),
                first_line=self.first_line,
                last_line=max(last_line, self.first_line),
                versions=tuple(self.versions),
                non_default_args=tuple(self.args),
                engine_configs=tuple(self.engines),
                ranks=tuple(self.ranks),
                executor_observations=tuple(self.executor),
                routes=tuple(self.routes),
                capacity=tuple(sorted(self.capacity, key=lambda c: c.line)),
                blocks=tuple(self.blocks),
                available_memory=tuple(self.memory),
                dev_mode_warning_lines=tuple(self.dev),
                api_server_pids=tuple(self.api_pids),
            )
        )

    def _marker(self, kind: VersionSource | str, process: ProcessTag | None, line: int) -> None:
        api_pid = (
            process.pid
            if process is not None and (process.name or "").lower().startswith("apiserver")
            else None
        )
        if (
            kind in self.markers
            or (api_pid is not None and self.api_pids and api_pid not in self.api_pids)
            or (not self.markers and self.evidence)
        ):
            self._close(line - 1)
            self._new(first_line=line)
        self.markers.add(kind)
        if api_pid is not None and api_pid not in self.api_pids:
            self.api_pids.append(api_pid)

    def _flush(self, key: str | None) -> None:
        item = self.pending.pop(key)
        self._emit(item, None)

    def _emit(
        self, item: SizeLine | BlocksObservation | None, conc: ConcurrencyLine | None
    ) -> None:
        if isinstance(item, BlocksObservation):
            fmt, device, tokens, line, proc = (
                CapacityFormat.V0_BLOCKS,
                item.device,
                None,
                item.line,
                item.process,
            )
        elif isinstance(item, SizeLine):
            fmt, device, tokens, line, proc = (
                CapacityFormat.V1_TWO_LINE,
                item.device,
                item.tokens,
                item.line,
                item.process,
            )
        else:
            assert conc is not None  # noqa: S101 - _emit is called with at least one half
            fmt, device, tokens, line, proc = (
                CapacityFormat.V1_TWO_LINE,
                None,
                None,
                conc.line,
                conc.process,
            )
        self.capacity.append(
            mint_capacity(
                format=fmt,
                device=device,
                tokens=tokens,
                max_model_len=conc.max_model_len if conc else None,
                max_concurrency=conc.max_concurrency if conc else None,
                line=line,
                concurrency_line=conc.line if conc else None,
                process=proc,
            )
        )

    def feed(self, obs: Observation) -> None:
        if isinstance(obs, VersionObservation):
            if obs.source is not VersionSource.ENGINE_INIT:
                self._marker(obs.source, obs.process, obs.line)
            self.versions.append(obs)
            return
        if isinstance(obs, NonDefaultArgsObservation):
            self._marker("non_default_args", obs.process, obs.line)
            self.args.append(obs)
            return
        if isinstance(obs, ExecutorObservation):
            self.executor.append(obs)
            return
        self.evidence = True
        process: ProcessTag | None = getattr(obs, "process", None)
        key = process.text if process is not None else None
        match obs:
            case EngineConfigObservation():
                self.engines.append(obs)
            case RankObservation():
                self.ranks.append(obs)
            case RouteObservation():
                self.routes.append(obs)
            case CapacityObservation():
                self.capacity.append(obs)
            case AvailableMemoryObservation():
                self.memory.append(obs)
            case DevModeWarning():
                self.dev.append(obs.line)
            case BlocksObservation():
                self.blocks.append(obs)
                if key in self.pending:
                    self._flush(key)
                self.pending[key] = obs
            case SizeLine():
                if key in self.pending:
                    self._flush(key)
                self.pending[key] = obs
            case ConcurrencyLine():
                self._emit(self.pending.pop(key, None), obs)

    def finish(self, last_line: int) -> tuple[Launch, ...]:
        self._close(last_line)
        return tuple(self.launches)


def _parse(text: str, line: int, assembler: _Assembler) -> None:
    try:
        observations = parse_logical_line(text, line)
    except ValueError:
        # A line that only looks like a record (e.g. a number past Python's int() digit
        # limit) is unrecognised, like any other: skipped, never guessed at.
        return
    if not observations:
        return
    proc: ProcessTag | None = None
    for obs in observations:
        assembler.feed(obs)
        proc = proc or getattr(obs, "process", None)
    for marker in tag_markers(proc, line):
        assembler.feed(marker)


#: Bytes of the keywords that are rare enough in vLLM logs to search for alone, rarest
#: first (per mille of the bytes of the real 0.32.0 capture: K 0.5 … = 10.0; the other
#: keyword bytes, ``I`` 11.1 to space 93.8, are not used).
_RARITY = b"KVDzxMwRkbfP-vyg="
#: A keyword's search bytes: its first three bytes in :data:`_RARITY` order, each with its
#: offset inside the keyword.
_CANDIDATES: tuple[tuple[bytes, tuple[tuple[int, int], ...]], ...] = tuple(
    (raw, tuple((byte, raw.index(byte)) for byte in _RARITY if byte in raw)[:3])
    for raw in (k.encode() for k in KEYWORDS)
)
_SAMPLE_BYTES = 64 * 1024
_SPARSE = 16
"""A byte seen at most this often in the first :data:`_SAMPLE_BYTES` of a block is sparse."""


def keyword_line_starts(block: bytes) -> list[int]:
    """Start offsets, ascending, of the lines of ``block`` that hold a keyword.

    ``block`` is whole lines (it ends with a newline); keywords hold no newline.  Each
    keyword is found through the first of its search bytes that is sparse in this block:
    ``bytes.find`` of that one byte (memchr), the keyword checked in place at each hit;
    keywords that share the byte share the pass.  A keyword with no sparse byte, or whose
    byte turns out dense further on (more hits than a 1024th of the block), is found by
    ``bytes.find`` of the whole keyword.  Either way a line is reported iff it holds a
    keyword, exactly the lines one search of all keywords would find.
    """
    find, rfind, count = block.find, block.rfind, block.count
    seen: dict[int, int] = {}
    anchored: dict[int, list[tuple[bytes, int]]] = {}
    whole: list[bytes] = []
    for raw, candidates in _CANDIDATES:
        for byte, at in candidates:
            n = seen.get(byte)
            if n is None:
                n = seen[byte] = count(bytes((byte,)), 0, _SAMPLE_BYTES)
            if n <= _SPARSE:
                anchored.setdefault(byte, []).append((raw, at))
                break
        else:
            whole.append(raw)
    starts: set[int] = set()
    budget = max(64, len(block) >> 10)
    for byte, keywords in anchored.items():
        needle = bytes((byte,))
        hits = 0
        i = find(needle)
        while i >= 0:
            hits += 1
            if hits > budget:
                whole.extend(raw for raw, _ in keywords)
                break
            if any(i >= at and block.startswith(raw, i - at) for raw, at in keywords):
                starts.add(rfind(b"\n", 0, i) + 1)
                i = find(b"\n", i)
            i = find(needle, i + 1)
    for raw in whole:
        i = find(raw)
        while i >= 0:
            starts.add(rfind(b"\n", 0, i) + 1)
            i = find(raw, find(b"\n", i))
    return sorted(starts)


def _fast(blocks: Iterator[bytes], assembler: _Assembler, start_line: int) -> int:
    """No wrap joining: decode and parse only the lines that hold a keyword.

    Returns the number of the last line.
    """
    line = start_line - 1
    for block in blocks:
        counted = 0
        for begin in keyword_line_starts(block):
            line += block.count(b"\n", counted, begin)
            counted = begin
            _parse(_visible(block[begin : block.find(b"\n", begin)]), line + 1, assembler)
        line += block.count(b"\n", counted)
    return line


def _wrapped(lines: Iterator[str], assembler: _Assembler, width: int, start_line: int) -> int:
    """Join hard-wrapped continuation lines, then parse each logical line.

    Returns the number of the last physical line.
    """
    low = width - WRAP_SLACK
    pending: list[str] = []
    pending_line = start_line
    last_len = 0
    line = start_line - 1
    size = 0
    for text in lines:
        line += 1
        if pending and low <= last_len <= width and _continues(text) and not text.startswith("#@"):
            if size < MAX_LINE_BYTES:
                pending.append(text)
                size += len(text)
            last_len = len(text)
            continue
        if pending:
            _parse("".join(pending), pending_line, assembler)
        pending, pending_line, last_len, size = [text], line, len(text), len(text)
    if pending:
        _parse("".join(pending), pending_line, assembler)
    return line


def _split_lines(block: bytes) -> Iterator[str]:
    for raw in block.split(b"\n")[:-1]:
        yield clean(raw.decode("utf-8", "replace"))


def _read(
    stream: IO[bytes], source: str | None, wrap_width: int | Literal["auto", "off"]
) -> StartupLog | LogReadFailure:
    reader = _Reader(stream)
    blocks = reader.blocks()
    first = next(blocks, None)
    if first is None:
        return _mint_failure(reason=LogReadFailureReason.EMPTY, source=source, detail="empty file")
    if b"\x00" in first[:65536]:
        return _mint_failure(
            reason=LogReadFailureReason.BINARY,
            source=source,
            detail="binary data (NUL bytes), not a text log",
        )
    assembler = _Assembler()
    width: int | None
    if wrap_width == "off":
        width = None
    elif wrap_width == "auto":
        sample = [clean(r.decode("utf-8", "replace")) for r in first.split(b"\n", SAMPLE_LINES)]
        width = detect_wrap_width(sample[:SAMPLE_LINES])
    else:
        width = wrap_width

    def all_blocks() -> Iterator[bytes]:
        yield first
        yield from blocks

    if width is None:
        lines = _fast(all_blocks(), assembler, 1)
    else:
        lines = _wrapped((t for b in all_blocks() for t in _split_lines(b)), assembler, width, 1)
    launches = assembler.finish(lines)
    return _mint_log(
        source=source,
        sha256=reader.digest.hexdigest(),
        size_bytes=reader.size,
        line_count=lines,
        wrap_width=width,
        launches=launches,
    )


def read_startup_log(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    wrap_width: int | Literal["auto", "off"] = "auto",
) -> StartupLog | LogReadFailure:
    """Read a vLLM startup log from a path or a binary stream, in constant memory.

    ``wrap_width``: ``"auto"`` detects terminal hard wraps (module docstring), ``"off"``
    never joins lines, an int joins at that width.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = str(path)
        try:
            path.stat()
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # a symlink loop, a denied directory, …
                return _mint_failure(
                    reason=LogReadFailureReason.UNREADABLE,
                    source=name,
                    detail=exc.strerror or type(exc).__name__,
                )
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
                return _read(stream, name, wrap_width)
        except OSError as exc:
            return _mint_failure(
                reason=LogReadFailureReason.UNREADABLE,
                source=name,
                detail=exc.strerror or type(exc).__name__,
            )
    try:
        return _read(source, None, wrap_width)
    except OSError as exc:
        return _mint_failure(
            reason=LogReadFailureReason.UNREADABLE,
            source=None,
            detail=exc.strerror or type(exc).__name__,
        )


# --------------------------------------------------------------------------------------
# Rendering.


def _proc(process: ProcessTag | None) -> dict[str, object] | None:
    return process.as_json() if process is not None else None


def _launch_document(launch: Launch) -> dict[str, object]:
    version = launch.version
    config = launch.engine_config
    backend = launch.executor_backend
    names = launch.served_model_names
    return {
        "index": launch.index,
        "first_line": launch.first_line,
        "last_line": launch.last_line,
        "version": version.text if version else None,
        "versions": [
            {"text": v.text, "source": v.source.value, "line": v.line, "process": _proc(v.process)}
            for v in launch.versions
        ],
        "served_model_names": list(names) if names is not None else None,
        "parallel": None
        if config is None
        else {
            "tensor_parallel_size": config.tensor_parallel_size,
            "pipeline_parallel_size": config.pipeline_parallel_size,
            "data_parallel_size": config.data_parallel_size,
            "decode_context_parallel_size": config.decode_context_parallel_size,
            "prefill_context_parallel_size": config.prefill_context_parallel_size,
            "line": config.line,
        },
        "engine_config": None
        if config is None
        else {
            "engine": config.engine,
            "version": config.version_text,
            "max_seq_len": config.max_seq_len.value if config.max_seq_len else None,
            "kv_cache_dtype": config.kv_cache_dtype,
            "enable_prefix_caching": config.enable_prefix_caching,
            "served_model_name": config.served_model_name,
            "distributed_executor_backend": config.distributed_executor_backend,
            "line": config.line,
            "entries": dict(config.entries),
        },
        "engine_config_lines": [c.line for c in launch.engine_configs],
        "non_default_args": [
            {
                "line": a.line,
                "served_model_names": list(a.served_model_names)
                if a.served_model_names is not None
                else None,
                "tensor_parallel_size": a.tensor_parallel_size,
                "pipeline_parallel_size": a.pipeline_parallel_size,
                "data_parallel_size": a.data_parallel_size,
                "args": dict(a.args),
            }
            for a in launch.non_default_args
        ],
        "ranks": [
            {
                "rank": r.rank,
                "world_size": r.world_size,
                "pid": r.pid,
                "line": r.line,
                "form": r.form.value,
                "local_rank": r.local_rank,
                "backend": r.backend,
                "group_ranks": dict(r.group_ranks),
                "repeated": r.repeated,
                "process": _proc(r.process),
            }
            for r in launch.ranks
        ],
        "executor_backend": backend.value if backend else None,
        "executor_evidence": [
            {"marker": o.marker.value, "line": o.line} for o in launch.executor_evidence
        ],
        "executor_markers": [
            {
                "marker": o.marker.value,
                "named": o.named.value if o.named else None,
                "line": o.line,
                "process": _proc(o.process),
            }
            for o in launch.executor_observations
        ],
        "routes": [
            {"path": r.path, "methods": list(r.methods), "line": r.line} for r in launch.routes
        ],
        "development_mode": launch.development_mode,
        "dev_mode_warning_lines": list(launch.dev_mode_warning_lines),
        "capacity": [
            {
                "line": c.line,
                "concurrency_line": c.concurrency_line,
                "format": c.format.value,
                "process": c.process.name if c.process else None,
                "process_tag": _proc(c.process),
                "device": c.device,
                "tokens": c.tokens.value if c.tokens else None,
                "max_model_len": c.max_model_len.value if c.max_model_len else None,
                "max_concurrency": str(c.max_concurrency.value) if c.max_concurrency else None,
            }
            for c in launch.capacity
        ],
        "blocks": [
            {
                "line": b.line,
                "device": b.device,
                "gpu_blocks": b.device_blocks.value,
                "cpu_blocks": b.cpu_blocks.value if b.cpu_blocks else None,
                "process": _proc(b.process),
            }
            for b in launch.blocks
        ],
        "available_kv_cache_memory_gib": [m.text for m in launch.available_memory],
        "available_kv_cache_memory": [
            {"gib": m.text, "line": m.line, "repeated": m.repeated, "process": _proc(m.process)}
            for m in launch.available_memory
        ],
        "api_server_pids": list(launch.api_server_pids),
    }


def startup_log_document(log: StartupLog) -> dict[str, object]:
    """The ``vllm-evidence.startup-log/1`` JSON document of a read log."""
    return {
        "schema": SCHEMA,
        "source": log.source,
        "sha256": log.sha256,
        "size_bytes": log.size_bytes,
        "line_count": log.line_count,
        "wrap_width": log.wrap_width,
        "launches": [_launch_document(launch) for launch in log.launches],
    }


def render_startup_log(log: StartupLog) -> str:
    """A readable summary, one block per launch."""
    out = [
        f"startup log {log.source or '<stream>'}: {log.line_count} lines, "
        f"sha256 {log.sha256[:16]}…, {len(log.launches)} launch(es)"
        + (f", hard wraps at {log.wrap_width} rejoined" if log.wrap_width else "")
    ]
    for launch in log.launches:
        version = launch.version
        config = launch.engine_config
        backend = launch.executor_backend
        names = launch.served_model_names
        out.append(f"\nlaunch {launch.index} (lines {launch.first_line}-{launch.last_line})")
        out.append(f"  version:            {version.text if version else 'not established'}")
        out.append(f"  served names:       {', '.join(names) if names else 'not printed'}")
        if config is None:
            out.append("  parallel:           no engine-init line")
        else:
            out.append(
                "  parallel:           "
                f"TP={config.tensor_parallel_size} PP={config.pipeline_parallel_size} "
                f"DP={config.data_parallel_size} (line {config.line})"
            )
        ranks = sorted({(r.rank, r.world_size) for r in launch.ranks})
        out.append(
            "  ranks seen:         "
            + (", ".join(f"{r}/{w}" for r, w in ranks) if ranks else "none")
        )
        evidence = ", ".join(f"{o.marker.value}@{o.line}" for o in launch.executor_evidence)
        out.append(
            "  executor backend:   "
            + (f"{backend.value} ({evidence})" if backend else "not established")
        )
        dev = launch.development_mode
        out.append(
            f"  routes:             {len(launch.routes)}; development mode "
            + ("unknown" if dev is None else ("on" if dev else "off"))
        )
        out.extend(
            f"  capacity line {c.line}: {c.format.value} {c.device or '?'} "
            f"tokens={c.tokens.value if c.tokens else None} "
            f"max_model_len={c.max_model_len.value if c.max_model_len else None} "
            f"concurrency={c.max_concurrency.value if c.max_concurrency else None} "
            f"[{c.process.text if c.process else '-'}]"
            for c in launch.capacity
        )
        out.extend(
            f"  blocks line {b.line}: {b.device} {b.device_blocks.value}"
            + (f", cpu {b.cpu_blocks.value}" if b.cpu_blocks else "")
            for b in launch.blocks
        )
        out.extend(
            f"  available KV memory line {m.line}: {m.text} GiB" for m in launch.available_memory
        )
    return "\n".join(out) + "\n"
