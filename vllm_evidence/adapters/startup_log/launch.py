"""Split a vLLM startup log into launches: :func:`read_startup_log`.

:func:`read_startup_log` takes a path or a binary stream and returns a sealed
:class:`StartupLog` (its SHA-256 digest and its :class:`Launch` es) or a typed
:class:`~vllm_evidence.capture.log.LogReadFailure` (missing path, directory, binary
file, empty file, unreadable).  :mod:`vllm_evidence.capture.log` streams the bytes,
prefilters them by the grammar's keywords and rejoins hard wraps; each logical line is
read by the grammar, and the observations are gathered here.

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
first marker belong to launch 0; lines between launches belong to the earlier one, except
the development-mode warning, which the API-server module prints when it is imported,
before the banner: with nothing else after it, it belongs to the launch the next marker
opens (v0.9.2, v0.11.0 ``entrypoints/openai/api_server.py``), never to a phantom launch.
Observations never cross a launch boundary: the two-line capacity pair (a size line and
a concurrency line from the same process) is joined only inside one launch.
"""

from __future__ import annotations

import io
import os
from typing import IO, final

import attrs

from vllm_evidence._seal import Reduction, Sealed, SealedTypeError, minter
from vllm_evidence.adapters.startup_log._grammar import (
    KEYWORDS,
    parse_logical_line,
    tag_markers,
)
from vllm_evidence.adapters.startup_log._lexer import clean, split_header, starts_record
from vllm_evidence.adapters.startup_log.observations import (
    AvailableMemoryObservation,
    BlocksObservation,
    CapacityFormat,
    CapacityObservation,
    CompileCacheObservation,
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
    _mint_capacity,
)
from vllm_evidence.capture.log import (
    KeywordScan,
    LineRules,
    LogLines,
    LogReadFailure,
    WrapWidth,
    check_log_bytes,
    read_log,
    read_log_bytes,
)
from vllm_evidence.errors import EvidenceMismatchError, InputError
from vllm_evidence.measure import TokenCount

__all__ = ["Launch", "StartupLog", "keyword_line_starts", "read_startup_log"]

_PUBLIC = "vllm_evidence.adapters.startup_log.read_startup_log()"


@final
@attrs.frozen(init=False, repr=False)
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
    compile_cache: tuple[CompileCacheObservation, ...]
    """The workers' torch.compile cache lines (``rank_R_D``), in line order."""
    executor_observations: tuple[ExecutorObservation, ...]
    routes: tuple[RouteObservation, ...]
    capacity: tuple[CapacityObservation, ...]
    blocks: tuple[BlocksObservation, ...]
    available_memory: tuple[AvailableMemoryObservation, ...]
    dev_mode_warning_lines: tuple[int, ...]
    api_server_pids: tuple[int, ...]
    transformed_head_lines: tuple[int, ...]
    """The lines whose observations came from a record head that was not vLLM's own
    (markdown backticks, ``...``-elided fields, a host application's logging format,
    a journald prefix, a bare message): a pasted log.  Their process tags are never
    trusted (no rank, pid or engine comes from them)."""

    @property
    def head(self) -> str:
        """``"vllm"`` when every observed line has vLLM's own record head, else
        ``"transformed"`` (see :attr:`transformed_head_lines`)."""
        return "transformed" if self.transformed_head_lines else "vllm"

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
    def block_size(self) -> TokenCount | None:
        """The KV-cache block size the launch printed: as given among the non-default
        args, else as the engine-init line prints it; ``None`` when neither does."""
        for args in self.non_default_args:
            if args.block_size is not None:
                return args.block_size
        for config in self.engine_configs:
            if config.block_size is not None:
                return config.block_size
        return None

    @property
    def executor_backend(self) -> ExecutorBackend | None:
        """The backend, when the markers seen decide it; ``None`` when they do not.

        The engine-init ``distributed_executor_backend=`` field and the CPU platform's
        fallback line, when printed, are the resolved value and alone decide.  Otherwise
        every marker's compatible set is intersected; one backend left decides, none or
        several does not.
        """
        version = self.version.version if self.version else None
        config = [
            o.compatible(version)
            for o in self.executor_observations
            if o.marker in (ExecutorMarker.CONFIG_FIELD, ExecutorMarker.CPU_FALLBACK_LINE)
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
        """True: ``/server_info`` registered or the dev-mode warning printed; ``None``
        otherwise: a line's absence is not observed, never "off" (v0.8.5 prints no
        warning, and a pasted or cut log may lack any route line)."""
        if self.dev_mode_warning_lines or any(r.path == "/server_info" for r in self.routes):
            return True
        return None

    def _repr_summary(self) -> str:
        counts = [
            f"{field.name}={len(getattr(self, field.name))}"
            for field in attrs.fields(Launch)
            if isinstance(getattr(self, field.name), tuple) and getattr(self, field.name)
        ]
        return ", ".join(
            [f"index={self.index}", f"lines {self.first_line}-{self.last_line}", *counts]
        )


_mint_launch = minter(Launch, Launch.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
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

    def __rederive__(self) -> Reduction[StartupLog]:
        """Pickled as the log's bytes, read again now from :attr:`source` (only the
        first :attr:`size_bytes`, checked against :attr:`sha256`), so the receiving
        process need not see the file; unpickling reads those bytes again.  A log read
        from a stream kept neither its bytes nor a path and cannot be pickled."""
        if self.source is None:
            msg = (
                "StartupLog read from a stream keeps neither its bytes nor a path, so "
                "nothing can re-derive it and it cannot be pickled; read the log from a "
                "file, or send the bytes and read them again on the other side"
            )
            raise SealedTypeError(msg)
        data = read_log_bytes(self.source, size_bytes=self.size_bytes, sha256=self.sha256)
        return _startup_log_from_bytes, (
            data,
            self.source,
            self.wrap_width,
            self.size_bytes,
            self.sha256,
        )

    def _repr_summary(self) -> str:
        source = "(stream)" if self.source is None else repr(_tail(self.source))
        return (
            f"{source}, {self.size_bytes:,} bytes sha256:{self.sha256[:12]}…, "
            f"{self.line_count:,} lines, {len(self.launches)} "
            + ("launch" if len(self.launches) == 1 else "launches")
        )


_mint_log = minter(StartupLog, StartupLog.__attrs_init__)


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
        self.dev: list[int] = []
        self.transformed: list[int] = []
        self.pre_banner: list[int] = []
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
                dev_mode_warning_lines=tuple(self.dev),
                api_server_pids=tuple(self.api_pids),
                transformed_head_lines=tuple(self.transformed),
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
        if isinstance(obs, DevModeWarning):
            # Printed when the API-server module is imported, before the banner: it
            # belongs to the launch the next start marker opens, unless other evidence
            # follows it first (later releases print it while building the app).
            self.pre_banner.append(obs.line)
            return
        self._settle()
        self.evidence = True
        process: ProcessTag | None = getattr(obs, "process", None)
        key = process.text if process is not None else None
        match obs:
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
        if not isinstance(obs, CompileCacheObservation):
            # A compile-cache line states a rank, not the executor: its tag adds no
            # executor marker.
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
    :mod:`vllm_evidence.capture.log`), ``"off"`` never joins lines, an int joins at that
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


def _tail(path: str, keep: int = 48) -> str:
    """A long path cut from the left, where its least telling part is."""
    return path if len(path) <= keep else "…" + path[-(keep - 1) :]
