"""Read a vLLM startup log into launches: :func:`read_startup_log`.

:mod:`vllm_evidence._capture.log` streams the bytes, prefilters them by the grammar's
keywords and rejoins hard wraps; each logical line is read by the grammar
(:mod:`~vllm_evidence._adapters.startup_log._grammar`), and the observations are gathered
here into :class:`~vllm_evidence._adapters.startup_log.launch.Launch` es by the rules the
``launch`` module describes.
"""

from __future__ import annotations

import io
import os
from typing import IO

from vllm_evidence._adapters.startup_log._grammar import (
    KEYWORDS,
    Read,
    dp_engine,
    parse_logical_line,
)
from vllm_evidence._adapters.startup_log._lexer import clean, split_header, starts_record
from vllm_evidence._adapters.startup_log._workers import KillLine, KillLineKind, tag_markers
from vllm_evidence._adapters.startup_log.launch import (
    Launch,
    ShutdownKill,
    StartupLog,
    _mint_killed,
    _mint_launch,
    _mint_log,
    _mint_shutdown_kill,
)
from vllm_evidence._adapters.startup_log.observations import (
    AvailableMemoryObservation,
    BlocksObservation,
    CapacityFormat,
    CapacityObservation,
    CompileCacheObservation,
    ConcurrencyLine,
    DevModeWarning,
    EngineConfigObservation,
    ExecutorObservation,
    LifeEvent,
    NonDefaultArgsObservation,
    PastedRankLine,
    ProcessTag,
    RankObservation,
    RouteObservation,
    SizeLine,
    VersionObservation,
    VersionSource,
    WorkerTagLine,
    _mint_capacity,
)
from vllm_evidence._capture.log import (
    KeywordScan,
    LineRules,
    LogLines,
    LogReadFailure,
    WrapWidth,
    check_log_bytes,
    read_log,
)
from vllm_evidence.errors import EvidenceMismatchError, InputError

__all__ = ["keyword_line_starts", "read_startup_log"]


#: The lifecycle events one launch keeps (a hostile log cannot grow the list past it).
_MAX_LIFE_EVENTS = 256
#: The force-kill lines one launch keeps (a launch kills a few engines and their workers).
_MAX_KILL_LINES = 4096
_MAX_WORKER_TAGS = 4096


def _shutdown_kills(lines: list[KillLine]) -> tuple[ShutdownKill, ...]:
    """Pair each root line with the descendant lines its process printed after it (see
    :class:`~vllm_evidence._adapters.startup_log.launch.ShutdownKill`); one pass."""
    open_roots: dict[str, tuple[KillLine, list[KillLine]]] = {}
    kills: list[ShutdownKill] = []

    def close(key: str) -> None:
        found = open_roots.pop(key, None)
        if found is None:
            return
        root, descendants = found
        # A root line always has its name, pid and tag (kill_line, _kill).
        assert root.name is not None  # noqa: S101
        assert root.pid is not None  # noqa: S101
        assert root.process is not None  # noqa: S101
        kills.append(
            _mint_shutdown_kill(
                root=_mint_killed(name=root.name, pid=root.pid, line=root.line),
                dp_engine=dp_engine(root.name),
                descendants=tuple(
                    _mint_killed(name=d.name or "", pid=d.pid or 0, line=d.line)
                    for d in descendants
                ),
                process=root.process,
            )
        )

    for kill in lines:
        if kill.process is None:
            continue
        key = kill.process.text
        if kill.kind is KillLineKind.DESCENDANT:
            if key in open_roots:
                open_roots[key][1].append(kill)
            continue
        close(key)
        if kill.kind is KillLineKind.ROOT:
            open_roots[key] = (kill, [])
    for key in list(open_roots):
        close(key)
    return tuple(sorted(kills, key=lambda k: k.root.line))


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
        self.compile_cache: list[CompileCacheObservation] = []
        self.executor: list[ExecutorObservation] = []
        self.routes: list[RouteObservation] = []
        self.capacity: list[CapacityObservation] = []
        self.blocks: list[BlocksObservation] = []
        self.memory: list[AvailableMemoryObservation] = []
        self.life: list[LifeEvent] = []
        self.life_seen: set[tuple[object, ...]] = set()
        self.kills: list[KillLine] = []
        self.killers: dict[str, bool] = {}
        """Each killing process's tag, and whether its last kill line opened a tree."""
        self.dev: list[int] = []
        self.transformed: list[int] = []
        self.pre_banner: list[int] = []
        self.worker_tags: dict[str, tuple[ProcessTag, int]] = {}
        self.pasted_ranks: list[RankObservation] = []
        self.pending: dict[str | None, SizeLine | BlocksObservation] = {}

    def _close(self, last_line: int) -> None:
        self._settle()
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
                compile_cache=tuple(self.compile_cache),
                executor_observations=tuple(self.executor),
                routes=tuple(self.routes),
                capacity=tuple(sorted(self.capacity, key=lambda c: c.line)),
                blocks=tuple(self.blocks),
                available_memory=tuple(self.memory),
                life=tuple(self.life),
                shutdown_kills=_shutdown_kills(self.kills),
                dev_mode_warning_lines=tuple(self.dev),
                api_server_pids=tuple(self.api_pids),
                transformed_head_lines=tuple(self.transformed),
                worker_tags=tuple(self.worker_tags.values()),
                pasted_ranks=tuple(self.pasted_ranks),
            )
        )

    def _settle(self) -> None:
        """Keep the pending dev-mode warning lines in the current launch."""
        self.dev.extend(self.pre_banner)
        self.pre_banner = []

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
            carried = self.pre_banner
            self.pre_banner = []
            self._close((carried[0] if carried else line) - 1)
            self._new(first_line=carried[0] if carried else line)
            self.pre_banner = carried
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
            _mint_capacity(
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

    def _kill(self, kill: KillLine) -> None:
        if kill.process is None or len(self.kills) >= _MAX_KILL_LINES:
            return
        self.kills.append(kill)
        self.killers[kill.process.text] = kill.kind in (KillLineKind.ROOT, KillLineKind.DESCENDANT)

    def interrupt(self, process: ProcessTag | None, line: int) -> None:
        """A line of ``process`` that is no force-kill line: it ends that process's run
        of descendant lines, so a later one is never taken for the earlier root's."""
        if process is not None and self.killers.get(process.text):
            self._kill(KillLine(KillLineKind.BREAK, None, None, line, process))

    def feed(self, obs: Read) -> None:
        process: ProcessTag | None = getattr(obs, "process", None)
        key = process.text if process is not None else None
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
        if isinstance(obs, PastedRankLine):
            if len(self.pasted_ranks) < _MAX_WORKER_TAGS:
                self.pasted_ranks.append(obs.rank)
            return
        if isinstance(obs, WorkerTagLine):
            # The first line of each worker's tag, for at most _MAX_WORKER_TAGS workers.
            if len(self.worker_tags) < _MAX_WORKER_TAGS:
                self.worker_tags.setdefault(obs.process.text, (obs.process, obs.line))
            return
        if isinstance(obs, DevModeWarning):
            # Printed when the API-server module is imported, before the banner: it
            # belongs to the launch the next start marker opens, unless other evidence
            # follows it first (later releases print it while building the app).
            self.pre_banner.append(obs.line)
            return
        self._settle()
        self.evidence = True
        match obs:
            case KillLine():
                self._kill(obs)
            case EngineConfigObservation():
                self.engines.append(obs)
            case RankObservation():
                self.ranks.append(obs)
            case CompileCacheObservation():
                self.compile_cache.append(obs)
            case RouteObservation():
                self.routes.append(obs)
            case CapacityObservation():
                self.capacity.append(obs)
            case AvailableMemoryObservation():
                self.memory.append(obs)
            case LifeEvent():
                # A traceback repeats its lines: the first of each event from each
                # process is kept, and at most _MAX_LIFE_EVENTS in all.
                seen = (obs.kind, obs.worker, obs.worker_pid, key)
                if seen not in self.life_seen and len(self.life) < _MAX_LIFE_EVENTS:
                    self.life_seen.add(seen)
                    self.life.append(obs)
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
    if not any(isinstance(obs, KillLine) for obs in observations):
        for tag in {id(t): t for o in observations if (t := getattr(o, "process", None))}.values():
            assembler.interrupt(tag, line)
    proc: ProcessTag | None = None
    for obs in observations:
        assembler.feed(obs)
        if not isinstance(obs, CompileCacheObservation | KillLine | WorkerTagLine):
            # A compile-cache line states a rank, not the executor: its tag adds no
            # executor marker (nor does a force-kill line, printed by the API server, nor
            # a worker's tag on a line that says nothing else).
            proc = proc or getattr(obs, "process", None)
    for marker in tag_markers(proc, line):
        assembler.feed(marker)
    if split_header(text).transformed:  # after feeding: a banner line opens its launch
        assembler.transformed.append(line)


_RULES = LineRules(
    clean=clean,
    starts_record=starts_record,
    scan=KeywordScan([k.encode() for k in KEYWORDS]),
)


def keyword_line_starts(block: bytes) -> list[int]:
    """Start offsets, ascending, of the lines of ``block`` (whole lines) that hold one of
    the grammar's keywords: the lines the reader decodes when it joins no wraps."""
    return _RULES.scan.line_starts(block)


def _assemble(lines: LogLines) -> StartupLog:
    assembler = _Assembler()
    for line, text in lines:
        _parse(text, line, assembler)
    launches = assembler.finish(lines.line_count)
    return _mint_log(
        source=lines.source,
        sha256=lines.sha256,
        size_bytes=lines.size_bytes,
        line_count=lines.line_count,
        wrap_width=lines.wrap_width,
        launches=launches,
    )


def read_startup_log(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    wrap_width: WrapWidth = "auto",
    first_bytes: int | None = None,
) -> StartupLog | LogReadFailure:
    """Read a vLLM startup log from a path or a binary stream, in constant memory.

    ``wrap_width``: ``"auto"`` detects terminal hard wraps (see
    :mod:`vllm_evidence._capture.log`), ``"off"`` never joins lines, an int joins at that
    width.  ``first_bytes`` reads only the log's first bytes: a launch receipt's
    ``log_bytes``, the bytes its digest covers (the log keeps growing after it).
    """
    if first_bytes is not None and first_bytes < 0:
        msg = f"first_bytes must not be negative, got {first_bytes}"
        raise ValueError(msg)
    return read_log(source, _RULES, wrap_width, _assemble, limit=first_bytes)


def _startup_log_from_bytes(
    data: bytes, source: str | None, wrap_width: int | None, size_bytes: int, sha256: str
) -> StartupLog:
    """Read a log again from its bytes, under its recorded name and wrap width, after
    checking them against the recorded size and digest (package-internal: unpickling
    and document loading)."""
    check_log_bytes(data, source, size_bytes=size_bytes, sha256=sha256)
    log = read_log(
        io.BytesIO(data),
        _RULES,
        "off" if wrap_width is None else wrap_width,
        _assemble,
        name=source,
    )
    if isinstance(log, LogReadFailure):
        raise InputError(log.describe())
    return log


def _reread_startup_log(
    source: str, wrap_width: int | None, size_bytes: int, sha256: str
) -> StartupLog:
    """Read the log at ``source`` again, streaming only its first ``size_bytes``, and
    check the digest of what was read (package-internal: document loading)."""
    log = read_log(
        source,
        _RULES,
        "off" if wrap_width is None else wrap_width,
        _assemble,
        limit=size_bytes,
    )
    if isinstance(log, LogReadFailure):
        raise InputError(log.describe())
    if log.size_bytes != size_bytes or log.sha256 != sha256:
        msg = (
            f"startup log {source}: {log.size_bytes} bytes with SHA-256 {log.sha256}, "
            f"but {size_bytes} bytes with SHA-256 {sha256} were read; the log changed "
            "and nothing is derived from it"
        )
        raise EvidenceMismatchError(msg)
    return log
