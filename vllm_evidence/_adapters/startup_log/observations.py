"""The typed observations one line of a vLLM startup log can carry.

:mod:`~vllm_evidence._adapters.startup_log._grammar` mints them from a logical line;
:mod:`~vllm_evidence._adapters.startup_log.launch` gathers them into launches.  Every
number is typed here, when the line is read: token and block counts, concurrencies,
GiB, ranks, the API server's port, the data-parallel engine index and the worker name of
a process tag.  What the bytes say stops here: which backend the executor markers mean
in a release, or which global rank a worker name gives under the resolved sizes, is
derived one layer up (:mod:`vllm_evidence._readback.executor`,
:mod:`vllm_evidence._readback.parallel`).
"""

from __future__ import annotations

import enum
from typing import final

import attrs
from packaging.version import Version

from vllm_evidence._measure import BlockCount, Concurrency, GiB, TokenCount
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream import CapacityFormat, ExecutorBackend, ExecutorMarker

__all__ = [
    "AvailableMemoryObservation",
    "BlocksObservation",
    "CapacityFormat",
    "CapacityObservation",
    "CompileCacheForm",
    "CompileCacheObservation",
    "ConcurrencyLine",
    "DevModeWarning",
    "EngineConfigObservation",
    "ExecutorBackend",
    "ExecutorMarker",
    "ExecutorObservation",
    "LifeEvent",
    "LifeKind",
    "NonDefaultArgsObservation",
    "Observation",
    "ProcessTag",
    "RankForm",
    "RankObservation",
    "RouteObservation",
    "SizeLine",
    "VersionObservation",
    "VersionSource",
    "WorkerName",
    "WorkerNameForm",
]

_PUBLIC = "vllm_evidence.read_startup_log()"


class WorkerNameForm(enum.Enum):
    """Which of the names vLLM gives a worker process its tag prints."""

    GROUPS = "groups"
    """``Worker_DP1_PP0_TP1`` (v0.11 on; ``VllmWorker_…`` too): one ``_<GROUP><index>``
    per parallel group of more than one rank (``_DP``/``_PP``/``_PCP``/``_TP``/``_DCP``/
    ``_EP``; v0.29.0 ``v1/executor/multiproc_executor.py`` L1080-1093); a bare ``Worker``
    names none."""
    TP = "tp"
    """``VllmWorker TP1`` (v0.10.1.1 ``v1/executor/multiproc_executor.py`` L387-391)."""
    RANK = "rank"
    """``VllmWorker rank=1`` (v0.8.5, v0.9.2 L294, L346): the engine-local rank."""
    UNREAD = "unread"
    """A worker's name (it holds ``Worker``) in none of the forms above: nothing is read
    from it."""


@final
@attrs.frozen(init=False, repr=False)
class WorkerName(Sealed):
    """What a worker process's tag name prints about its place, read as printed: the
    groups and their indexes, or the engine-local rank (never mapped to a global rank
    here; :func:`vllm_evidence._readback.parallel.worker_tag_rank` does that under the
    resolved sizes)."""

    __public_constructor__ = _PUBLIC

    form: WorkerNameForm
    groups: tuple[tuple[str, int], ...]
    """Each ``(group, index)`` the name prints, in printed order (a repeated group kept):
    ``(("DP", 1), ("PP", 0), ("TP", 1))``; ``(("TP", 1),)`` for ``VllmWorker TP1``;
    empty for the other forms."""
    rank: int | None
    """The engine-local rank of the :attr:`WorkerNameForm.RANK` form; else ``None``."""


_mint_worker = minter(WorkerName, WorkerName.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ProcessTag(Sealed):
    """The process a line came from, as its ``(name pid=N[, ip=A])`` tag printed it."""

    __public_constructor__ = _PUBLIC

    name: str | None
    """``EngineCore_DP0``, ``VllmWorker TP1``, ``RayWorkerWrapper``; ``None`` for Ray's bare
    ``(pid=…)``."""
    pid: int
    ip: str | None
    outer: str | None
    """The enclosing tag as printed (``EngineCore_0 pid=1159``) for a nested Ray tag."""
    dp_engine: int | None
    """The data-parallel engine index an engine-core tag names (``EngineCore_DP1`` and
    ``EngineCore_1`` → 1); ``None`` for any other process."""
    worker: WorkerName | None
    """The name read as a worker's (a name holding ``Worker`` that is not Ray's
    ``RayWorkerWrapper``); ``None`` for any other process."""

    @property
    def text(self) -> str:
        """The tag as one string: ``EngineCore_0 pid=1159 > RayWorkerWrapper pid=345, ip=…``."""
        inner = f"{self.name + ' ' if self.name else ''}pid={self.pid}"
        if self.ip is not None:
            inner += f", ip={self.ip}"
        return f"{self.outer} > {inner}" if self.outer else inner


_mint_tag = minter(ProcessTag, ProcessTag.__attrs_init__)


class VersionSource(enum.Enum):
    """Which line a self-reported version came from."""

    BANNER = "banner"
    API_SERVER = "api_server_version"
    SERVER = "server_version"
    ENGINE_INIT = "engine_init"


@final
@attrs.frozen(init=False, repr=False)
class VersionObservation(Sealed):
    """A version the process printed about itself (self-reported, not proof of code)."""

    __public_constructor__ = _PUBLIC

    text: str
    version: Version | None
    """``None`` when ``text`` is not a PEP 440 version."""
    source: VersionSource
    line: int
    process: ProcessTag | None


_mint_version = minter(VersionObservation, VersionObservation.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class NonDefaultArgsObservation(Sealed):
    """The ``non-default args: {...}`` line: what the operator gave, not what resolved."""

    __public_constructor__ = _PUBLIC

    args: tuple[tuple[str, str], ...]
    """Every top-level ``key: value`` pair, value as printed."""
    served_model_names: tuple[str, ...] | None
    tensor_parallel_size: int | None
    pipeline_parallel_size: int | None
    data_parallel_size: int | None
    block_size: TokenCount | None
    """The ``block_size`` argument, when given as a plain number."""
    port: int | None
    """The ``port`` argument (the API server's ``--port``), when given as a plain number."""
    line: int
    process: ProcessTag | None

    def get(self, key: str) -> str | None:
        """The printed value of ``key``, or ``None``."""
        return dict(self.args).get(key)

    @property
    def model(self) -> str | None:
        """The ``model`` argument without its quotes (a hub id or a local path), or ``None``."""
        from vllm_evidence._adapters.startup_log._lexer import unquote  # the log grammar's

        printed = self.get("model")
        return None if printed is None else (unquote(printed) or printed)


_mint_args = minter(NonDefaultArgsObservation, NonDefaultArgsObservation.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class EngineConfigObservation(Sealed):
    """The engine-init line: the engine's resolved configuration as it printed it."""

    __public_constructor__ = _PUBLIC

    engine: str
    """``"v1"`` (``Initializing a V1 LLM engine``) or ``"v0"``."""
    version_text: str | None
    """The ``(vX)`` of the line; ``None`` for the oldest form, which prints none."""
    entries: tuple[tuple[str, str], ...]
    """Every top-level ``key=value`` pair, value as printed."""
    tensor_parallel_size: int | None
    pipeline_parallel_size: int | None
    data_parallel_size: int | None
    decode_context_parallel_size: int | None
    prefill_context_parallel_size: int | None
    max_seq_len: TokenCount | None
    kv_cache_dtype: str | None
    enable_prefix_caching: bool | None
    served_model_name: str | None
    distributed_executor_backend: str | None
    """The ``distributed_executor_backend=`` value as printed (quoted or not)."""
    executor_backend_name: str | None
    """That value without its quotes: a backend vLLM defines or a custom executor's name;
    ``None`` when the line prints none (or ``None``)."""
    block_size: TokenCount | None
    """The ``block_size=`` entry, when printed as a plain number."""
    line: int
    process: ProcessTag | None

    def get(self, key: str) -> str | None:
        """The printed value of ``key``, or ``None`` when the line does not print it."""
        return dict(self.entries).get(key)


_mint_engine = minter(EngineConfigObservation, EngineConfigObservation.__attrs_init__)


class RankForm(enum.Enum):
    """Which per-rank line a rank observation came from."""

    WORLD_SIZE = "world_size"
    """``world_size=2 rank=1 local_rank=1 distributed_init_method=… backend=nccl``"""
    ASSIGNMENT = "assignment"
    """``rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1, …``"""


@final
@attrs.frozen(init=False, repr=False)
class RankObservation(Sealed):
    """One worker's line naming its global rank and the world size it joined."""

    __public_constructor__ = _PUBLIC

    form: RankForm
    rank: int
    world_size: int
    local_rank: int | None
    backend: str | None
    """The torch.distributed backend (``nccl``, ``gloo``) on the world-size form."""
    group_ranks: tuple[tuple[str, int | None], ...]
    """``(("DP", 0), ("PP", 0), ("TP", 1), ("EP", None))`` on the assignment form."""
    repeated: int | None
    """Ray's ``[repeated Nx across cluster]``: N more workers printed a similar line."""
    line: int
    process: ProcessTag | None

    @property
    def pid(self) -> int | None:
        """The pid of the worker process, from its tag."""
        return self.process.pid if self.process else None

    def group_rank(self, group: str) -> int | None:
        """The rank in ``group`` (``"TP"``, ``"PP"``, ``"DP"``, …), or ``None``."""
        return dict(self.group_ranks).get(group)


_mint_rank = minter(RankObservation, RankObservation.__attrs_init__)


class CompileCacheForm(enum.Enum):
    """Which torch.compile cache line a :class:`CompileCacheObservation` came from."""

    AOT_SAVED = "aot_saved"
    """``saved AOT compiled function to …/rank_R_D/model`` (``compilation/decorators.py``)"""
    AOT_LOAD_FAILED = "aot_load_failed"
    """``Compiling model again due to a load failure from …/rank_R_D/model, reason: …``"""
    CACHE_DIRECTORY = "cache_directory"
    """``Using cache directory: …/rank_R_D/<prefix> for vLLM's torch.compile``
    (``compilation/backends.py``)"""


@final
@attrs.frozen(init=False, repr=False)
class CompileCacheObservation(Sealed):
    """A worker's torch.compile cache directory ``rank_R_D``: the worker's own statement
    of its engine-local rank ``R`` and of the DP index ``D`` vLLM built the directory
    from.

    Which field fills ``D`` depends on the release (``data_parallel_rank`` up to 0.11.0,
    ``data_parallel_index`` from 0.20.0): whether ``D`` names the worker's DP engine is
    read per release by :mod:`vllm_evidence._readback.parallel`, never here.
    """

    __public_constructor__ = _PUBLIC

    form: CompileCacheForm
    rank: int
    data_parallel_index: int
    line: int
    process: ProcessTag | None

    @property
    def pid(self) -> int | None:
        """The pid of the worker process, from its tag."""
        return self.process.pid if self.process else None


_mint_compile_cache = minter(CompileCacheObservation, CompileCacheObservation.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class RouteObservation(Sealed):
    """One ``Route: /path, Methods: GET, HEAD`` line of the registered route table."""

    __public_constructor__ = _PUBLIC

    path: str
    methods: tuple[str, ...]
    line: int


_mint_route = minter(RouteObservation, RouteObservation.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class CapacityObservation(Sealed):
    """One capacity report; a figure the log did not print is ``None``, never 0."""

    __public_constructor__ = _PUBLIC

    format: CapacityFormat
    device: str | None
    """``GPU``, ``CPU``, ``XPU``, ``GPU + host``, or V0's device word (``cuda``)."""
    tokens: TokenCount | None
    max_model_len: TokenCount | None
    max_concurrency: Concurrency | None
    line: int
    """The first line of the entry (the size, blocks, or concurrency line)."""
    concurrency_line: int | None
    """The line the concurrency figure came from, when it is a separate line."""
    process: ProcessTag | None


_mint_capacity = minter(CapacityObservation, CapacityObservation.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class BlocksObservation(Sealed):
    """A V0 ``# <device> blocks: N[, # CPU blocks: M]`` line."""

    __public_constructor__ = _PUBLIC

    device: str
    device_blocks: BlockCount
    cpu_blocks: BlockCount | None
    line: int
    process: ProcessTag | None


_mint_blocks = minter(BlocksObservation, BlocksObservation.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class AvailableMemoryObservation(Sealed):
    """A worker's ``Available KV cache memory: X GiB`` (negative values are kept)."""

    __public_constructor__ = _PUBLIC

    gib: GiB
    repeated: int | None
    line: int
    process: ProcessTag | None

    @property
    def text(self) -> str:
        """The figure exactly as printed (``"-0.53"``): the exact decimal, never rounded."""
        return str(self.gib.value)


_mint_memory = minter(AvailableMemoryObservation, AvailableMemoryObservation.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ExecutorObservation(Sealed):
    """One line showing something about the executor backend, and where."""

    __public_constructor__ = _PUBLIC

    marker: ExecutorMarker
    named: ExecutorBackend | None
    """The backend the line names, for the config-field and argument markers."""
    line: int
    process: ProcessTag | None


_mint_executor = minter(ExecutorObservation, ExecutorObservation.__attrs_init__)


class LifeKind(enum.Enum):
    """What a lifecycle line says happened to the launch (``vllm-upstream.md``, "Lifecycle
    after start-up"; each form read in vLLM's source for the releases it names)."""

    SERVING = "serving"
    """The API server started serving: uvicorn's ``Application startup complete.``, or
    ``Starting vLLM API server N on …`` (≤ 0.2x) / ``Starting vLLM server on …`` (0.3x)."""
    WORKER_DIED = "worker_died"
    """A worker process died under the executor's monitor: ``Worker proc VllmWorker-N died
    unexpectedly[ (exit code: C)], shutting down executor.`` (V1 ``MultiprocExecutor``),
    ``RayWorkerProc rank=N died unexpectedly`` (``RayExecutorV2``), ``Worker NAME pid P
    died, exit code: C`` (V0 ``multiproc_worker_utils``)."""
    ENGINE_DEAD = "engine_dead"
    """The engine died: ``EngineCore encountered a fatal error.`` (engine core),
    ``EngineDeadError`` (API server), ``AsyncLLM output_handler failed.``, ``[shutdown]
    MPClient: engine core exited unexpectedly`` (the client's engine monitor)."""
    INIT_FAILED = "init_failed"
    """The engine never started: ``Engine core initialization failed.`` (V1
    ``v1/engine/utils.py`` ``wait_for_engine_startup``)."""
    ENDED = "ended"
    """A shutdown began: ``[shutdown] API server: shutdown triggered``, ``[shutdown]
    EngineCore: trigger received signal=…``, ``Shutting down FastAPI HTTP server.``,
    uvicorn's ``Shutting down``.  An engine-dead line after it is part of the shutdown
    (vLLM logs ``EngineDeadError`` on every clean stop), not a death."""


@final
@attrs.frozen(init=False, repr=False)
class LifeEvent(Sealed):
    """One lifecycle line of a launch: what happened, where, and to which process."""

    __public_constructor__ = _PUBLIC

    kind: LifeKind
    line: int
    process: ProcessTag | None
    """The printing process's tag (the engine core for a worker's death)."""
    worker: str | None
    """A dead worker's process name as printed (``VllmWorker-1``, ``rank=1``)."""
    worker_rank: int | None
    """The engine-local rank that name carries (``VllmWorker-N``: the executor's rank
    ``N`` within its engine, ``v1/executor/multiproc_executor.py`` ``name=f"VllmWorker-{rank}"``);
    ``None`` when the name carries none."""
    worker_pid: int | None
    """A dead worker's pid, when the line prints it (V0's form)."""
    exit_code: int | None
    """The dead worker's exit code, when printed as a number (``-9``: SIGKILL)."""

    def _repr_summary(self) -> str:
        who = f" {self.worker}" if self.worker else ""
        return f"{self.kind.value}{who} at line {self.line}"


_mint_life = minter(LifeEvent, LifeEvent.__attrs_init__)


# --------------------------------------------------------------------------------------
# Two-line capacity halves (paired by the launch assembler) and the dev-mode warning.


@attrs.frozen
class SizeLine:
    """``GPU KV cache size: N tokens`` alone (internal; the launch assembler pairs it)."""

    device: str
    tokens: TokenCount
    line: int
    process: ProcessTag | None


@attrs.frozen
class ConcurrencyLine:
    """``Maximum concurrency for L tokens per request: X.XXx`` alone (internal)."""

    max_model_len: TokenCount
    max_concurrency: Concurrency
    line: int
    process: ProcessTag | None


@attrs.frozen
class WorkerTagLine:
    """A worker process's own tag on a line no other observation took (internal; the
    launch assembler keeps the first line of each tag): the worker was there, printing."""

    process: ProcessTag
    line: int


@attrs.frozen
class PastedRankLine:
    """A rank line under a transformed head (internal): what a paste names, kept apart
    from the ranks (:attr:`~vllm_evidence._adapters.startup_log.Launch.pasted_ranks`)."""

    rank: RankObservation
    line: int


@attrs.frozen
class DevModeWarning:
    """``SECURITY WARNING: Development endpoints are enabled!`` (internal)."""

    line: int


Observation = (
    VersionObservation
    | NonDefaultArgsObservation
    | EngineConfigObservation
    | RankObservation
    | CompileCacheObservation
    | RouteObservation
    | CapacityObservation
    | BlocksObservation
    | AvailableMemoryObservation
    | ExecutorObservation
    | LifeEvent
    | SizeLine
    | ConcurrencyLine
    | WorkerTagLine
    | PastedRankLine
    | DevModeWarning
)
