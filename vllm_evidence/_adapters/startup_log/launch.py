"""Split a vLLM startup log into launches: :func:`read_startup_log`.

:func:`read_startup_log` takes a path or a binary stream and returns a sealed
:class:`StartupLog` (its SHA-256 digest and its :class:`Launch` es) or a typed
:class:`~vllm_evidence._capture.log.LogReadFailure` (missing path, directory, binary
file, empty file, unreadable).  :mod:`vllm_evidence._capture.log` streams the bytes,
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

from typing import final

import attrs

from vllm_evidence._adapters.startup_log.observations import (
    AvailableMemoryObservation,
    BlocksObservation,
    CapacityObservation,
    CompileCacheObservation,
    EngineConfigObservation,
    ExecutorObservation,
    LifeEvent,
    LifeKind,
    NonDefaultArgsObservation,
    ProcessTag,
    RankObservation,
    RouteObservation,
    VersionObservation,
)
from vllm_evidence._measure import TokenCount
from vllm_evidence._seal import Reduction, Sealed, SealedTypeError, minter

__all__ = ["KilledProcess", "Launch", "ShutdownKill", "StartupLog"]

_PUBLIC = "vllm_evidence.read_startup_log()"


@final
@attrs.frozen(init=False, repr=False)
class KilledProcess(Sealed):
    """One process a shutdown's force-kill line names."""

    __public_constructor__ = _PUBLIC

    name: str
    """As printed: the manager's name for its process (``EngineCore_DP0``), or the
    descendant's process name (``VLLM::Worker_TP1``)."""
    pid: int
    line: int


_mint_killed = minter(KilledProcess, KilledProcess.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ShutdownKill(Sealed):
    """A shutdown's force kill of one process and of its process tree, as the killing
    process printed it: ``force killing remaining process EngineCore_DP0 pid 19267`` and
    then one ``force killing sub process VLLM::Worker pid 19927`` line per live
    descendant (vLLM 0.32.0, :func:`~vllm_evidence._adapters.startup_log._workers.kill_line`).

    Paired by the launch assembler: the descendant lines that the same process (the same
    tag) prints after the root line, before any other line of it that the reader
    recognises (another root, a ``count=`` line, any observation).  Lines without a
    process tag, or under a transformed head, are never paired.
    """

    __public_constructor__ = _PUBLIC

    root: KilledProcess
    dp_engine: int | None
    """The data-parallel engine the root's name gives (``EngineCore_DP1`` → 1); ``None``
    for any other process (``EngineCore`` of a launch without DP, the DP coordinator)."""
    descendants: tuple[KilledProcess, ...]
    """The root's live descendants at the kill, in line order (empty when it had none)."""
    process: ProcessTag
    """The killing process's tag (the API server's)."""

    def _repr_summary(self) -> str:
        return (
            f"{self.root.name} pid {self.root.pid} at line {self.root.line}, "
            f"{len(self.descendants)} descendant(s)"
        )


_mint_shutdown_kill = minter(ShutdownKill, ShutdownKill.__attrs_init__)


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
    """Every line that shows something about the executor backend, as printed; which
    backend they decide in the launch's release is
    :func:`vllm_evidence._readback.executor.resolve_executor`'s to say."""
    routes: tuple[RouteObservation, ...]
    capacity: tuple[CapacityObservation, ...]
    blocks: tuple[BlocksObservation, ...]
    available_memory: tuple[AvailableMemoryObservation, ...]
    life: tuple[LifeEvent, ...]
    """The lifecycle lines, in line order (the first of each event from each process):
    serving, a worker's death, the engine's death, a failed initialisation, the end."""
    shutdown_kills: tuple[ShutdownKill, ...]
    """The shutdown's force kills of process trees, by root line (:class:`ShutdownKill`):
    which worker processes were an engine core's descendants."""
    dev_mode_warning_lines: tuple[int, ...]
    api_server_pids: tuple[int, ...]
    transformed_head_lines: tuple[int, ...]
    """The lines whose observations came from a record head that was not vLLM's own
    (markdown backticks, ``...``-elided fields, a host application's logging format,
    a journald prefix, a bare message): a pasted log.  Their process tags are never
    trusted (no rank, pid or engine comes from them)."""
    worker_tags: tuple[tuple[ProcessTag, int], ...]
    """Each worker process tag whose name says its place (``Worker_TP1``, ``VllmWorker
    rank=1``), with the first line it tagged, in line order: under vLLM's own head only,
    on any line (a fragment of ``Model loading took …`` lines still shows its workers);
    at most 4,096."""
    pasted_ranks: tuple[RankObservation, ...]
    """The rank lines under a transformed head (:attr:`transformed_head_lines`), as
    printed and without a process: what a pasted log names.  Never among :attr:`ranks`:
    no rank, pid or engine is evidence from them, and no decision reads them."""

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
    def development_mode(self) -> bool | None:
        """True: ``/server_info`` registered or the dev-mode warning printed; ``None``
        otherwise: a line's absence is not observed, never "off" (v0.8.5 prints no
        warning, and a pasted or cut log may lack any route line)."""
        if self.dev_mode_warning_lines or any(r.path == "/server_info" for r in self.routes):
            return True
        return None

    @property
    def observed(self) -> bool:
        """Whether any line of the launch was read as something vLLM prints (a file with
        no such line — not a vLLM log — still reads as one empty launch)."""
        return any(
            isinstance(value, tuple) and value
            for value in (getattr(self, f.name) for f in attrs.fields(Launch))
        )

    # ---------------------------------------------------------------- the launch's life

    def _first(self, kind: LifeKind) -> LifeEvent | None:
        return next((e for e in self.life if e.kind is kind), None)

    @property
    def serving(self) -> LifeEvent | None:
        """The line from which the API server served, when the log shows it."""
        return self._first(LifeKind.SERVING)

    @property
    def ended(self) -> LifeEvent | None:
        """The first line of the launch's shutdown, when the log shows one."""
        return self._first(LifeKind.ENDED)

    def _before_end(self, kind: LifeKind) -> tuple[LifeEvent, ...]:
        end = self.ended
        return tuple(e for e in self.life if e.kind is kind and (end is None or e.line < end.line))

    @property
    def init_failure(self) -> LifeEvent | None:
        """The first line saying the engine's initialisation failed (``EngineCore failed to
        start.``, ``Engine core initialization failed``): the engine never started."""
        return self._first(LifeKind.INIT_FAILED)

    @property
    def worker_deaths(self) -> tuple[LifeEvent, ...]:
        """Workers that died unexpectedly while the launch lived (before any shutdown
        began: a worker stopping during a shutdown is part of it)."""
        return self._before_end(LifeKind.WORKER_DIED)

    @property
    def engine_death(self) -> LifeEvent | None:
        """The first line saying the engine died while the launch lived (before any
        shutdown began: vLLM logs ``EngineDeadError`` on every clean stop too)."""
        deaths = self._before_end(LifeKind.ENGINE_DEAD)
        return deaths[0] if deaths else None

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
        from vllm_evidence._adapters.startup_log.reader import _startup_log_from_bytes
        from vllm_evidence._capture.log import read_log_bytes  # the log reader, on demand

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


def _tail(path: str, keep: int = 48) -> str:
    """A long path cut from the left, where its least telling part is."""
    return path if len(path) <= keep else "…" + path[-(keep - 1) :]
