"""The kinds a law speaks of: route gates, capacity sources and authority, the capacity
line's format, executor backends and markers, what ``/health`` covers, and the
incarnation marker's presence.

Plain enums, shared by the law types (:mod:`vllm_evidence.upstream._laws`), the law table
and the decisions; :mod:`vllm_evidence.upstream._laws` re-exports every one.
"""

from __future__ import annotations

import enum

__all__ = [
    "CapacityAuthority",
    "CapacityFormat",
    "CapacitySource",
    "ExecutorBackend",
    "ExecutorMarker",
    "HealthCoverage",
    "IncarnationMarker",
    "RouteGate",
]


class RouteGate(enum.Enum):
    """How a release registers a route."""

    ALWAYS = "always"
    DEVELOPMENT_MODE = "development_mode"
    """Only with ``VLLM_SERVER_DEV_MODE=1``."""
    DEVELOPMENT_MODE_AND_GENERATE_TASK = "development_mode_and_generate_task"
    """Only with development mode *and* a model that supports the ``generate`` task."""
    DEVELOPMENT_MODE_QUERY_IGNORED = "development_mode_query_ignored"
    """The path exists in development mode, but the query is ignored (text form answers)."""
    NOT_REGISTERED = "not_registered"


class CapacitySource(enum.Enum):
    """Where a KV-cache capacity figure can come from."""

    LOG_CAPACITY_LINE = "log_capacity_line"
    """The startup log's ``<DEVICE> KV cache size: N tokens`` line (V1)."""
    LOG_V0_BLOCKS = "log_v0_blocks"
    """The startup log's ``# GPU blocks: N, # CPU blocks: M`` line (V0)."""
    LABEL_KV_CACHE_SIZE_TOKENS = "label_kv_cache_size_tokens"
    """The ``kv_cache_size_tokens`` label of ``vllm:cache_config_info``."""
    LABEL_BLOCKS_TIMES_BLOCK_SIZE = "label_blocks_times_block_size"
    """``num_gpu_blocks × block_size`` from ``vllm:cache_config_info`` labels."""


class CapacityAuthority(enum.Enum):
    """How far a capacity source can be trusted as the engine's token capacity."""

    AUTHORITATIVE = "authoritative"
    """Group-aware token capacity per engine."""
    NOT_GROUP_AWARE = "not_group_aware"
    """A token figure that misreports hybrid (multi-group) layouts; reported, not established."""
    PER_WORKER_BEFORE_REDUCTION = "per_worker_before_reduction"
    """Logged by each worker before the minimum over ranks; not group-aware either."""
    NEEDS_BLOCK_SIZE_FROM_SAME_LAUNCH = "needs_block_size_from_same_launch"
    """Blocks only: tokens need the block size from the same launch (V0)."""
    INSUFFICIENT = "insufficient"
    """Never a token capacity in this release (see the law's statement)."""
    ABSENT = "absent"
    """The release does not produce this source."""


class CapacityFormat(enum.Enum):
    """The shape of a capacity report in a startup log: the one list that the reader's
    observations (:class:`~vllm_evidence._adapters.startup_log.CapacityObservation`), the
    format law (:class:`~vllm_evidence.upstream.CapacityLogFormatLaw`, V1 formats only)
    and the audit all name.

    The laws and audit documents name a V1 format without its ``v1_`` prefix
    (``two_line``, ``one_line``); the startup-log document carries the value whole.
    """

    V0_BLOCKS = "v0_blocks"
    """V0: ``# GPU blocks: N, # CPU blocks: M`` (blocks; tokens need the block size)."""
    V1_TWO_LINE = "v1_two_line"
    """``GPU KV cache size: N tokens`` then ``Maximum concurrency for …`` (up to 0.27)."""
    V1_ONE_LINE = "v1_one_line"
    """``<DEVICE> KV cache size: N tokens, Maximum concurrency for …`` (from 0.28.0)."""


class ExecutorBackend(enum.Enum):
    """``distributed_executor_backend`` values vLLM accepts (``config/parallel.py``)."""

    MP = "mp"
    RAY = "ray"
    UNI = "uni"
    EXTERNAL_LAUNCHER = "external_launcher"


class ExecutorMarker(enum.Enum):
    """What a line showed about the executor backend."""

    CONFIG_FIELD = "config_field"
    """``distributed_executor_backend=ray`` in the engine-init configuration (resolved)."""
    ARG = "non_default_arg"
    """``'distributed_executor_backend': 'mp'`` among the non-default args (as given)."""
    RAY_EXECUTOR_FILE = "ray_executor_file"
    """A record from a Ray executor file (``ray_distributed_executor.py``, ``ray_executor*.py``)."""
    RAY_WORKER_TAG = "ray_worker_tag"
    """A ``(RayWorkerWrapper pid=…)`` process tag."""
    MP_EXECUTOR_FILE = "mp_executor_file"
    """A record from ``mp_distributed_executor.py`` or ``multiproc_gpu_executor.py`` (V0)."""
    MP_LEADER_LINE = "mp_leader_line"
    """``DP group leader: …`` (``MultiprocExecutor._init_executor``; Ray V2 overrides it)."""
    MULTIPROC_EXECUTOR_FILE = "multiproc_executor_file"
    """Any other record from ``multiproc_executor.py``: mp, or from v0.20 Ray's V2
    executor, which subclasses ``MultiprocExecutor`` and shares its worker code."""
    VLLM_WORKER_TAG = "vllm_worker_tag"
    """A ``(VllmWorker …)`` tag: MultiprocExecutor's workers; from v0.20 Ray V2's workers
    subclass the same ``WorkerProc``."""
    UNIPROC_EXECUTOR_FILE = "uniproc_executor_file"
    """A record from ``uniproc_executor.py`` (uni, or the external-launcher executor)."""
    SINGLE_GPU_EXECUTOR_FILE = "single_gpu_executor_file"
    """A record from v0.6.6's ``gpu_executor.py`` (single-GPU executor, today's ``uni``)."""
    CPU_FALLBACK_LINE = "cpu_fallback_line"
    """``uni is not supported on CPU, fallback to mp distributed executor backend.``: the
    CPU platform rewrote the backend to ``mp`` (v0.8.5, v0.9.2 ``platforms/cpu.py``);
    resolved, like the configuration field."""


class HealthCoverage(enum.Enum):
    """What a 200 from ``/health`` covers."""

    API_SERVER_ONLY = "api_server_only"
    """Only that the API server answered; nothing is checked."""
    ENGINE_PROCESS = "engine_process"
    """Engine-core process death reaches ``/health``; worker death does not."""
    WORKER_DEATH_REACHES = "worker_death_reaches"
    """Worker process death reaches ``/health`` (through the executor's monitor)."""
    WORKERS_NOT_WATCHED = "workers_not_watched"
    """The executor does not watch its workers: a dead worker still answers 200."""


class IncarnationMarker(enum.Enum):
    """When ``process_start_time_seconds`` is on ``/metrics``."""

    ABSENT_BY_DEFAULT = "absent_by_default"
    """Multi-process registry mode is the default: no marker."""
    PRESENT_UNLESS_MULTIPROCESS_REGISTRY = "present_unless_multiprocess_registry"
    """Present unless ``api_server_count > 1`` or ``PROMETHEUS_MULTIPROC_DIR`` is set."""
    ABSENT_BY_DEFAULT_WITH_DP = "absent_by_default_with_dp"
    """As above, and ``api_server_count`` defaults to the DP size: DP>1 drops it."""
