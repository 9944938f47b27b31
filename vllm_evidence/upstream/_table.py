"""The law table: every fact about vLLM's behaviour this project relies on.

Each entry answers one :class:`~vllm_evidence.upstream._laws.Question` over one span of
read releases and cites where it was read.  Citations are ``vX: path Lnn`` in vLLM's
released sources (see ``reference/vllm-upstream.md`` for the reading), or
``first-hand vX`` for what a real server of that release printed here.

Spans run between read releases that agree.  Where two read releases disagree, the
change point lies somewhere between them and neither law covers the gap: a release
there gets "not established", never a borrowed answer.
"""

from __future__ import annotations

from vllm_evidence.upstream._laws import (
    CACHE_CONFIG_LABELS_KEY,
    CAPACITY_LOG_FORMAT_KEY,
    HEALTH_FAILURE_KEY,
    INCARNATION_MARKER_KEY,
    MODEL_CARD_KEY,
    CapacityAuthority,
    CapacityFormat,
    CapacityLaw,
    CapacitySource,
    ExecutorBackend,
    ExecutorMarker,
    ExecutorMarkerLaw,
    HealthCoverage,
    HealthLaw,
    IncarnationMarker,
    Law,
    ParallelEvidenceLaw,
    Question,
    RouteGate,
    RouteLaw,
    capacity_key,
    executor_marker_key,
    health_key,
    parallel_key,
    question,
    route_key,
)
from vllm_evidence.upstream._laws import (
    _mint_capacity_law as _capacity_law,
)
from vllm_evidence.upstream._laws import (
    _mint_card_law as _card_law,
)
from vllm_evidence.upstream._laws import (
    _mint_executor_law as _executor_law,
)
from vllm_evidence.upstream._laws import (
    _mint_failure_law as _failure_law,
)
from vllm_evidence.upstream._laws import (
    _mint_format_law as _format_law,
)
from vllm_evidence.upstream._laws import (
    _mint_health_law as _health_law,
)
from vllm_evidence.upstream._laws import (
    _mint_labels_law as _labels_law,
)
from vllm_evidence.upstream._laws import (
    _mint_marker_law as _marker_law,
)
from vllm_evidence.upstream._laws import (
    _mint_parallel_law as _parallel_law,
)
from vllm_evidence.upstream._laws import (  # minted beside their classes
    _mint_route_law as _route_law,
)
from vllm_evidence.upstream._releases import span
from vllm_evidence.upstream._routes import Route

__all__ = ["EXECUTOR_FILES", "EXECUTOR_LAW_TABLE", "LAW_TABLE", "QUESTIONS"]


_OLDEST = "0.6.6.post1"


def _each(releases: str, where: str) -> tuple[str, ...]:
    """One citation per read release of ``releases`` (space-separated) for the same
    reading: the same code, read in each."""
    return tuple(f"v{release}: {where}" for release in releases.split())


_NEWEST = "0.33.0"

# --- routes -------------------------------------------------------------------------

_ROUTE_QUESTIONS = {
    route: question(route_key(route), f"How does vLLM register {route.method} {route.target}?")
    for route in Route
}


def _routes() -> list[tuple[Question, tuple[Law, ...]]]:
    def law(
        route: Route,
        first: str,
        last: str,
        gate: RouteGate,
        sources: tuple[str, ...],
        *,
        guarded: bool = False,
    ) -> RouteLaw:
        return _route_law(
            question=_ROUTE_QUESTIONS[route],
            span=span(first, last),
            sources=sources,
            route=route,
            gate=gate,
            api_key_guarded=guarded,
        )

    always_open = (
        "v0.33.0: entrypoints/serve/middleware/authenticate.py L10 "
        "(only /v1, /v2, /inference, /cohere)"
    )
    entries: dict[Route, tuple[Law, ...]] = {
        Route.VERSION: (
            law(
                Route.VERSION,
                _OLDEST,
                _NEWEST,
                RouteGate.ALWAYS,
                (
                    "v0.6.6.post1: entrypoints/openai/api_server.py L356",
                    "v0.33.0: entrypoints/serve/instrumentator/basic.py L53",
                    always_open,
                ),
            ),
        ),
        Route.MODELS: (
            law(
                Route.MODELS,
                _OLDEST,
                _NEWEST,
                RouteGate.ALWAYS,
                (
                    "v0.6.6.post1: entrypoints/openai/api_server.py L348, L581",
                    "v0.33.0: entrypoints/openai/models/api_router.py L20",
                    "v0.33.0: entrypoints/serve/middleware/authenticate.py L10",
                    "first-hand v0.32.0: 401 {'error':'Unauthorized'} without the key",
                ),
                guarded=True,
            ),
        ),
        Route.METRICS: (
            law(
                Route.METRICS,
                _OLDEST,
                _NEWEST,
                RouteGate.ALWAYS,
                (
                    "v0.6.6.post1: entrypoints/openai/api_server.py L252 (mount_metrics)",
                    "v0.33.0: entrypoints/serve/instrumentator/metrics.py L56",
                    always_open,
                ),
            ),
        ),
        Route.HEALTH: (
            law(
                Route.HEALTH,
                _OLDEST,
                _NEWEST,
                RouteGate.ALWAYS,
                (
                    "v0.6.6.post1: entrypoints/openai/api_server.py L311",
                    "v0.33.0: entrypoints/serve/instrumentator/health.py L22",
                    always_open,
                ),
            ),
        ),
        Route.SERVER_INFO: (
            law(
                Route.SERVER_INFO,
                _OLDEST,
                _OLDEST,
                RouteGate.NOT_REGISTERED,
                ("v0.6.6.post1: entrypoints/openai/api_server.py (no development mode)",),
            ),
            law(
                Route.SERVER_INFO,
                "0.8.5",
                _NEWEST,
                RouteGate.DEVELOPMENT_MODE,
                (
                    "v0.8.5: entrypoints/openai/api_server.py L689-735 (VLLM_SERVER_DEV_MODE)",
                    "v0.33.0: entrypoints/launchers/api_server/routers.py L46",
                    "v0.33.0: entrypoints/serve/dev/server_info/api_router.py L43-58",
                    "first-hand v0.32.0: 404 without development mode, 200 with it",
                ),
            ),
        ),
        Route.SERVER_INFO_JSON: (
            law(
                Route.SERVER_INFO_JSON,
                _OLDEST,
                _OLDEST,
                RouteGate.NOT_REGISTERED,
                ("v0.6.6.post1: entrypoints/openai/api_server.py (no development mode)",),
            ),
            law(
                Route.SERVER_INFO_JSON,
                "0.8.5",
                "0.10.2",
                RouteGate.DEVELOPMENT_MODE_QUERY_IGNORED,
                (
                    "v0.8.5: entrypoints/openai/api_server.py L691-694 (text form only)",
                    "v0.9.2: entrypoints/openai/api_server.py L916-919 (text form only)",
                    "first-hand v0.9.2: ?config_format=json returns the text form",
                    "v0.10.1.1: entrypoints/openai/api_server.py L1001 (text form only)",
                    "v0.10.2: entrypoints/openai/api_server.py L1054-1057",
                ),
            ),
            law(
                Route.SERVER_INFO_JSON,
                "0.11.0",
                _NEWEST,
                RouteGate.DEVELOPMENT_MODE,
                (
                    "v0.11.0: entrypoints/openai/api_server.py L965-1055 (config_format)",
                    "v0.14.0: entrypoints/serve/instrumentator/server_info.py L35-44",
                    *_each(
                        "0.17.0 0.20.0", "entrypoints/serve/instrumentator/server_info.py L43-52"
                    ),
                    *_each(
                        "0.23.0 0.26.0 0.27.0 0.29.0 0.31.0 0.32.0",
                        "entrypoints/serve/dev/server_info/api_router.py L43-52",
                    ),
                    "v0.33.0: entrypoints/serve/dev/server_info/api_router.py L43-58",
                ),
            ),
        ),
        Route.GET_WORLD_SIZE: (
            law(
                Route.GET_WORLD_SIZE,
                _OLDEST,
                "0.15.1",
                RouteGate.NOT_REGISTERED,
                (
                    "v0.13.0: entrypoints/serve/rlhf/api_router.py (no /get_world_size)",
                    *_each("0.14.0 0.14.1 0.15.0 0.15.1", "no /get_world_size anywhere in vllm/"),
                ),
            ),
            law(
                Route.GET_WORLD_SIZE,
                "0.16.0",
                "0.16.0",
                RouteGate.DEVELOPMENT_MODE,
                (
                    (
                        "v0.16.0: entrypoints/serve/rlhf/api_router.py L149, L169-172 "
                        "(VLLM_SERVER_DEV_MODE)"
                    ),
                    (
                        "v0.16.0: entrypoints/serve/__init__.py L67-71 and "
                        "entrypoints/openai/api_server.py L185-187 (every task)"
                    ),
                    "first-hand v0.16.0: /get_world_size answered with development mode",
                ),
            ),
            law(
                Route.GET_WORLD_SIZE,
                "0.17.0",
                "0.22.1",
                RouteGate.DEVELOPMENT_MODE_AND_GENERATE_TASK,
                (
                    "v0.17.0: entrypoints/serve/rlhf/api_router.py L149, L169-172",
                    "v0.17.0: entrypoints/openai/api_server.py L196-214 (generate task only)",
                    "v0.20.0: entrypoints/serve/rlhf/api_router.py L149, L169",
                    "v0.20.0: entrypoints/openai/api_server.py L198-215",
                    "v0.22.1: entrypoints/serve/rlhf/api_router.py L168, L188-191",
                    "v0.22.1: entrypoints/openai/api_server.py L198-215",
                ),
            ),
            law(
                Route.GET_WORLD_SIZE,
                "0.23.0",
                _NEWEST,
                RouteGate.DEVELOPMENT_MODE,
                (
                    "v0.23.0: entrypoints/openai/api_server.py L197-200 (VLLM_SERVER_DEV_MODE)",
                    "v0.23.0: entrypoints/serve/dev/rlhf/api_router.py L167",
                    "first-hand v0.23.0: /get_world_size answered with development mode",
                    "v0.26.0: entrypoints/serve/__init__.py L45-47, dev/rlhf/api_router.py L211",
                    "first-hand v0.26.0: /get_world_size answered with development mode",
                    "v0.27.0: entrypoints/serve/__init__.py register_vllm_dev_api_routers",
                    "v0.29.0: entrypoints/serve/dev/rlhf/api_router.py L229",
                    "v0.31.0: entrypoints/serve/dev/rlhf/api_router.py L228",
                    "v0.32.0: entrypoints/rl/online/api_router.py L266",
                    "v0.33.0: entrypoints/rl/online/api_router.py L269-289",
                ),
            ),
        ),
        Route.COLLECTIVE_RPC: (
            law(
                Route.COLLECTIVE_RPC,
                _OLDEST,
                "0.10.1.1",
                RouteGate.NOT_REGISTERED,
                (
                    "v0.9.2: entrypoints/openai/api_server.py (no /collective_rpc)",
                    "v0.10.1.1: no /collective_rpc anywhere in vllm/",
                ),
            ),
            law(
                Route.COLLECTIVE_RPC,
                "0.10.2",
                _NEWEST,
                RouteGate.DEVELOPMENT_MODE,
                (
                    "v0.10.2: entrypoints/openai/api_server.py L1100-1126",
                    "v0.11.0: entrypoints/openai/api_server.py L1028",
                    *_each("0.14.0 0.17.0 0.20.0", "entrypoints/serve/rpc/api_router.py L24"),
                    *_each(
                        "0.23.0 0.26.0 0.27.0 0.29.0 0.31.0 0.32.0",
                        "entrypoints/serve/dev/rpc/api_router.py L23",
                    ),
                    "v0.33.0: entrypoints/serve/dev/rpc/api_router.py",
                ),
            ),
        ),
    }
    return [(_ROUTE_QUESTIONS[route], entries[route]) for route in Route]


# --- parallel evidence --------------------------------------------------------------

_PARALLEL_ROUTES = (
    Route.SERVER_INFO,
    Route.SERVER_INFO_JSON,
    Route.GET_WORLD_SIZE,
    Route.COLLECTIVE_RPC,
)
_PARALLEL_QUESTIONS = {
    route: question(
        parallel_key(route), f"What can {route.target} establish about the parallel layout?"
    )
    for route in _PARALLEL_ROUTES
}


def _parallel() -> list[tuple[Question, tuple[Law, ...]]]:
    def law(
        route: Route,
        first: str,
        last: str,
        sources: tuple[str, ...],
        statement: str,
        *,
        dp: bool,
    ) -> ParallelEvidenceLaw:
        kind = route.parallel_evidence_kind
        assert kind is not None  # noqa: S101  # only parallel-evidence routes are listed
        return _parallel_law(
            question=_PARALLEL_QUESTIONS[route],
            span=span(first, last),
            sources=sources,
            route=route,
            kind=kind,
            reports_data_parallel_size=dp,
            statement=statement,
        )

    resolved = "the frontend's resolved VllmConfig: tensor_parallel_size and pipeline_parallel_size"
    entries: dict[Route, tuple[ParallelEvidenceLaw, ...]] = {
        Route.SERVER_INFO: (
            law(
                Route.SERVER_INFO,
                "0.8.5",
                "0.10.1.1",
                (
                    "v0.8.5: config.py L4052-4085 (VllmConfig.__str__: TP and PP only)",
                    "v0.9.2: config.py L4787-4788 (TP and PP only)",
                    "v0.10.1.1: config/__init__.py L3840 (TP and PP only)",
                ),
                f"{resolved}; no data_parallel_size in the text form",
                dp=False,
            ),
            law(
                Route.SERVER_INFO,
                "0.10.2",
                _NEWEST,
                (
                    "v0.10.2: config VllmConfig.__str__ (data_parallel_size=)",
                    "v0.11.0: config/__init__.py L678 (data_parallel_size=)",
                    *_each(
                        "0.14.0 0.17.0 0.20.0 0.23.0 0.26.0 0.27.0 0.29.0 0.31.0 0.32.0",
                        "config/vllm.py VllmConfig.__str__ (data_parallel_size=)",
                    ),
                    "v0.33.0: config/vllm.py L2809-2844",
                    "first-hand v0.32.0: tensor_parallel_size=, data_parallel_size= in text",
                ),
                f"{resolved}, data_parallel_size; no world size or executor backend",
                dp=True,
            ),
        ),
        Route.SERVER_INFO_JSON: (
            law(
                Route.SERVER_INFO_JSON,
                "0.11.0",
                _NEWEST,
                (
                    "v0.11.0: entrypoints/openai/api_server.py (TypeAdapter(VllmConfig) json)",
                    "v0.33.0: entrypoints/serve/dev/server_info/api_router.py L43-58",
                    "first-hand v0.32.0: vllm_config.parallel_config.* incl. backend",
                ),
                "the frontend's resolved parallel_config (TP, PP, DP, PCP, DCP, world_size, "
                "distributed_executor_backend) and instance_id",
                dp=True,
            ),
        ),
        Route.GET_WORLD_SIZE: (
            law(
                Route.GET_WORLD_SIZE,
                "0.16.0",
                _NEWEST,
                (
                    *_each(
                        "0.16.0 0.17.0",
                        "entrypoints/serve/rlhf/api_router.py L150-165 (world_size_across_dp)",
                    ),
                    "v0.23.0: entrypoints/serve/dev/rlhf/api_router.py L168-181",
                    "v0.33.0: entrypoints/rl/online/api_router.py L269-289",
                    "v0.33.0: config/parallel.py L627-629, L964-972",
                ),
                "a product world_size × data_parallel_size (world_size = PP×TP×PCP): "
                "2 is TP=2, PP=2 or DP=2 alike; it narrows and never decides",
                dp=False,
            ),
        ),
        Route.COLLECTIVE_RPC: (
            law(
                Route.COLLECTIVE_RPC,
                "0.10.2",
                _NEWEST,
                ("v0.33.0: entrypoints/serve/dev/rpc/api_router.py",),
                "runs an arbitrary method on every worker (POST); never called by this "
                "project, so it establishes nothing here",
                dp=False,
            ),
        ),
    }
    return [(_PARALLEL_QUESTIONS[route], entries[route]) for route in _PARALLEL_ROUTES]


# --- capacity -----------------------------------------------------------------------

_CAPACITY_QUESTIONS = {
    source: question(
        capacity_key(source), f"How far is {source.value.replace('_', ' ')} a token capacity?"
    )
    for source in CapacitySource
}
_FORMAT_QUESTION = question(CAPACITY_LOG_FORMAT_KEY, "What shape do the V1 capacity lines have?")


def _capacity() -> list[tuple[Question, tuple[Law, ...]]]:
    def law(
        source: CapacitySource,
        first: str,
        last: str,
        authority: CapacityAuthority,
        sources: tuple[str, ...],
        statement: str,
    ) -> CapacityLaw:
        return _capacity_law(
            question=_CAPACITY_QUESTIONS[source],
            span=span(first, last),
            sources=sources,
            source=source,
            authority=authority,
            statement=statement,
        )

    log = CapacitySource.LOG_CAPACITY_LINE
    v0 = CapacitySource.LOG_V0_BLOCKS
    label = CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS
    product = CapacitySource.LABEL_BLOCKS_TIMES_BLOCK_SIZE
    entries: dict[CapacitySource, tuple[CapacityLaw, ...]] = {
        log: (
            law(
                log,
                "0.8.5",
                "0.11.0",
                CapacityAuthority.PER_WORKER_BEFORE_REDUCTION,
                (
                    "v0.8.5: v1/core/kv_cache_utils.py L634, L637",
                    "v0.10.2: v1/core/kv_cache_utils.py L864, L868, L1028, L1032",
                    "v0.11.0: v1/core/kv_cache_utils.py L1087, L1091",
                ),
                "logged once per worker before the minimum over ranks, with "
                "num_blocks // groups × min block size: not group-aware; the engine's "
                "figure is the smallest per-rank value",
            ),
            law(
                log,
                "0.11.1",
                "0.20.0",
                CapacityAuthority.NOT_GROUP_AWARE,
                (
                    *_each(
                        "0.11.1 0.11.2",
                        "v1/core/kv_cache_utils.py L1202-1239 (_report_kv_cache_config; "
                        "size info_once, concurrency per rank), L1325-1338 (after the minimum)",
                    ),
                    "first-hand v0.11.1: one size line and one concurrency line per rank (TP=2)",
                    (
                        "v0.12.0: v1/core/kv_cache_utils.py L1254-1297 "
                        "(_report_kv_cache_config), L1380-1393 (after the minimum over ranks)"
                    ),
                    "v0.13.0: v1/core/kv_cache_utils.py L1291, L1296 (_report_kv_cache_config)",
                    "v0.14.0: v1/core/kv_cache_utils.py L1288-1292, L1564",
                    "v0.17.0: v1/core/kv_cache_utils.py L1297-1301, L1608",
                    "v0.20.0: v1/core/kv_cache_utils.py L1711, L1716",
                ),
                "logged once per engine after the minimum over ranks, but computed as "
                "num_blocks // groups × min block size: hybrid layouts are misreported "
                "(0.11.1 and 0.11.2 repeat the concurrency line once per rank)",
            ),
            law(
                log,
                "0.20.1",
                _NEWEST,
                CapacityAuthority.AUTHORITATIVE,
                (
                    (
                        "v0.20.1: v1/core/kv_cache_utils.py L1684-1715 (max_concurrency × "
                        "max_model_len), L2036-2049 (after the minimum over ranks)"
                    ),
                    "first-hand v0.20.1: kv_cache_utils.py:1708 and :1709 from EngineCore",
                    (
                        "v0.23.0: v1/core/kv_cache_utils.py L1720-1750 (max_concurrency × "
                        "max_model_len), L2075-2088 (after the minimum over ranks)"
                    ),
                    "first-hand v0.23.0: one two-line capacity report from EngineCore (TP=1, 2)",
                    "v0.26.0: v1/core/kv_cache_utils.py L2155-2183",
                    "v0.27.0: v1/core/kv_cache_utils.py L1877-1887, L2235-2236",
                    "v0.29.0: v1/core/kv_cache_utils.py L2029-2034",
                    "v0.31.0: v1/core/kv_cache_utils.py L2460-2466",
                    "v0.33.0: v1/core/kv_cache_utils.py L1062-1155 (update_kv_cache_capacity)",
                    "first-hand v0.32.0: one CPU KV cache size line from EngineCore",
                ),
                "group-aware token capacity per engine (max_concurrency × max_model_len), "
                "logged once per engine after the minimum over ranks",
            ),
        ),
        v0: (
            law(
                v0,
                _OLDEST,
                "0.10.2",
                CapacityAuthority.NEEDS_BLOCK_SIZE_FROM_SAME_LAUNCH,
                (
                    "v0.6.6.post1: executor/gpu_executor.py L76, L80",
                    "v0.6.6.post1: executor/distributed_gpu_executor.py L57, L61",
                    "v0.8.5: executor/executor_base.py L112-118",
                    "first-hand v0.8.5: V0 on CPU prints '# cpu blocks: N, # CPU blocks: M'",
                    "v0.9.2: executor/executor_base.py L113",
                    "v0.10.1.1: executor/executor_base.py L114",
                ),
                "V0 logs blocks, not tokens: tokens are num_gpu_blocks × block_size with "
                "the block size of the same launch (V0 was removed in 0.11)",
            ),
        ),
        label: (
            law(
                label,
                _OLDEST,
                "0.23.0",
                CapacityAuthority.ABSENT,
                (
                    "v0.20.0: config/cache.py CacheConfig (no kv_cache_size_tokens)",
                    "v0.23.0: no kv_cache_size_tokens anywhere in vllm/",
                    "first-hand v0.23.0: no kv_cache_size_tokens on vllm:cache_config_info",
                ),
                "vllm:cache_config_info has no kv_cache_size_tokens label (read up to 0.23.0)",
            ),
            law(
                label,
                "0.24.0",
                _NEWEST,
                CapacityAuthority.AUTHORITATIVE,
                (
                    "v0.24.0: config/cache.py L150, L215; v1/engine/core.py L312-316",
                    "v0.26.0: config/cache.py L156; v1/engine/core.py L315-319",
                    "first-hand v0.26.0: kv_cache_size_tokens on vllm:cache_config_info",
                    "v0.27.0: v1/core/kv_cache_utils.py L1877-1887 (get_kv_cache_capacity)",
                    "v0.33.0: v1/engine/core_client.py L851-890 (first non-None, not summed)",
                    "v0.33.0: config/cache.py L440-443 (metrics_info)",
                    "first-hand v0.32.0: kv_cache_size_tokens equals the log line",
                    "v0.32.0: config/cache.py L227, L231 (the two capacity fields)",
                ),
                "kv_cache_size_tokens is the group-aware token capacity of one DP engine "
                "(label engine), the same figure as the log line",
            ),
        ),
        product: (
            law(
                product,
                _OLDEST,
                _OLDEST,
                CapacityAuthority.AUTHORITATIVE,
                (
                    "v0.6.6.post1: engine/metrics.py L702-713, engine/llm_engine.py L382",
                    "v0.6.6.post1: executor/gpu_executor.py L76-80",
                ),
                "V0 (the only engine in 0.6.6): one engine, capacity is exactly "
                "num_gpu_blocks × block_size",
            ),
            law(
                product,
                "0.8.5",
                _NEWEST,
                CapacityAuthority.INSUFFICIENT,
                (
                    "v0.8.5: v1/metrics/loggers.py L348-366 (num_gpu_blocks 'None')",
                    "v0.33.0: v1/engine/core_client.py L851-890 (sum over DP engines)",
                    "v0.20.0: v1/engine/core.py L276 (block_size = min over groups)",
                    "v0.27.0: v1/engine/core.py L319; vllm-project/vllm#42966, #51163",
                ),
                "V1: num_gpu_blocks is summed over DP engines ('None' in 0.8.5) and "
                "block_size is a minimum over KV-cache groups, so their product is never "
                "a token capacity",
            ),
        ),
    }
    formats = (
        _format_law(
            question=_FORMAT_QUESTION,
            span=span("0.8.5", "0.27.1"),
            sources=(
                "v0.8.5: v1/core/kv_cache_utils.py L634, L637",
                *_each(
                    "0.9.2 0.10.1.1 0.11.0 0.14.0 0.17.0 0.20.0 0.23.0 0.26.0",
                    "v1/core/kv_cache_utils.py 'GPU KV cache size: %s tokens' alone",
                ),
                *_each("0.27.0 0.27.1", "v1/core/kv_cache_utils.py L2235, L2236"),
            ),
            format=CapacityFormat.V1_TWO_LINE,
            statement="'GPU KV cache size: N tokens' then "
            "'Maximum concurrency for L tokens per request: X.XXx' (thousands separators)",
        ),
        _format_law(
            question=_FORMAT_QUESTION,
            span=span("0.28.0", _NEWEST),
            sources=(
                "v0.28.0: v1/core/kv_cache_utils.py L1861-1876 (update_kv_cache_capacity)",
                "first-hand v0.28.0: kv_cache_utils.py:1869 one line",
                "v0.29.0: v1/core/kv_cache_utils.py L2032-2034 ('GPU KV cache size: …, ')",
                "first-hand v0.29.0: one capacity line per engine",
                "v0.31.0: v1/core/kv_cache_utils.py L2465 ('%s KV cache size: …')",
                "first-hand v0.32.0: kv_cache_utils.py:2327 one line",
                "v0.32.0: v1/core/kv_cache_utils.py L2317-2334 (update_kv_cache_capacity)",
                "v0.33.0: v1/core/kv_cache_utils.py L1147",
            ),
            format=CapacityFormat.V1_ONE_LINE,
            statement="'<DEVICE> KV cache size: N tokens, Maximum concurrency for L tokens "
            "per request: X.XXx' on one line (DEVICE: GPU only in 0.28 and 0.29; GPU, CPU, XPU, "
            "'GPU + host' from 0.31)",
        ),
    )
    out: list[tuple[Question, tuple[Law, ...]]] = [
        (_CAPACITY_QUESTIONS[source], entries[source]) for source in CapacitySource
    ]
    out.append((_FORMAT_QUESTION, formats))
    return out


# --- health -------------------------------------------------------------------------

_HEALTH_QUESTIONS = {
    backend: question(
        health_key(backend),
        f"What does a 200 from /health cover under the {backend.value!r} executor?",
    )
    for backend in ExecutorBackend
}
_FAILURE_QUESTION = question(HEALTH_FAILURE_KEY, "What does /health answer once the engine died?")


_MP_MONITOR_SOURCES = (
    "v0.9.2: v1/engine/async_llm.py L553-556 (raises if errored)",
    "v0.9.2: v1/executor/multiproc_executor.py L119-146 (worker monitor)",
    "v0.10.1.1: v1/engine/async_llm.py L559-562 (raises if errored)",
    "v0.10.1.1: v1/executor/multiproc_executor.py L130-147 (worker monitor)",
    *_each(
        "0.11.0 0.14.0 0.17.0 0.20.0 0.23.0 0.26.0 0.27.0 0.29.0 0.31.0 0.32.0",
        "v1/engine/async_llm.py check_health raises if errored",
    ),
    "v0.33.0: v1/engine/async_llm.py L1129-1134, L1385-1386 (errored flag)",
    (
        "v0.33.0: v1/executor/multiproc_executor.py start_worker_monitor "
        "('Worker proc %s died unexpectedly') -> failure callback"
    ),
    "v0.33.0: v1/engine/core_client.py L822-848 (engine monitor)",
)
_MONITOR_ORDER = (
    "the monitor logs the death, then shutdown() waits for the surviving workers, and "
    "only then calls the failure callback that marks the engine dead"
)
#: How long a 200 may follow a worker's death under mp: the monitor's shutdown() first
#: (read in every release's v1/executor/multiproc_executor.py; first-hand on 0.32.0 TP=2:
#: the first 503 4.84 s and 5.50 s after a worker's kill -9, tests/fixtures/real/
#: vllm-0.32.0-cpu/tp2-worker-kill and tp2-keepalive-engine-death, health-after.txt).
_MP_DELAYS: tuple[tuple[str, str, tuple[int, str], tuple[str, ...]], ...] = (
    (
        "0.9.2",
        "0.14.1",
        (4, f"{_MONITOR_ORDER}: SIGTERM to the survivors at once, up to 4 s, then SIGKILL"),
        _each(
            "0.9.2 0.10.1.1 0.11.0 0.13.0 0.14.0 0.14.1",
            "v1/executor/multiproc_executor.py shutdown (SIGTERM at once, 4 s, SIGKILL)",
        ),
    ),
    (
        "0.15.0",
        "0.23.0",
        (8, f"{_MONITOR_ORDER}: up to 4 s for them to exit, then SIGTERM and up to 4 s more"),
        _each(
            "0.15.0 0.16.0 0.17.0 0.20.0 0.22.0 0.23.0",
            "v1/executor/multiproc_executor.py _ensure_worker_termination (4 s, SIGTERM, 4 s)",
        ),
    ),
    (
        "0.24.0",
        _NEWEST,
        (
            9,
            (
                f"{_MONITOR_ORDER}: up to VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS (default 5) "
                "for them to exit, then SIGTERM and up to 4 s more"
            ),
        ),
        (
            *_each(
                "0.24.0 0.26.0 0.29.0 0.31.0 0.32.0",
                "v1/executor/multiproc_executor.py _ensure_worker_termination "
                "(VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS, SIGTERM, 4 s)",
            ),
            "v0.24.0: envs.py VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS (new, default 5)",
            ("first-hand v0.32.0: the first 503 4.84 s and 5.50 s after a TP=2 worker's kill -9"),
        ),
    ),
)


def _health() -> list[tuple[Question, tuple[Law, ...]]]:
    def law(
        backend: ExecutorBackend,
        first: str,
        last: str,
        coverage: HealthCoverage,
        sources: tuple[str, ...],
        statement: str,
        delay: tuple[int, str] | None = None,
    ) -> HealthLaw:
        return _health_law(
            question=_HEALTH_QUESTIONS[backend],
            span=span(first, last),
            sources=sources,
            backend=backend,
            coverage=coverage,
            statement=statement,
            worker_death_delay_s=None if delay is None else delay[0],
            worker_death_delay=None if delay is None else delay[1],
        )

    v085 = (
        "v0.8.5: v1/engine/async_llm.py check_health (logs only, no errored check)",
        "v0.9.0.1: v1/engine/async_llm.py L475-476 (logs only, no errored check)",
        "v0.9.1: v1/engine/async_llm.py L487-488 (logs only, no errored check)",
    )
    flag = "v0.33.0: v1/engine/async_llm.py L1129-1134, L1385-1386 (errored flag)"
    nothing = (
        "V1 0.8.5 to 0.9.1: check_health only logs 'Called check_health.'; a 200 means "
        "the API server answered"
    )
    mp = ExecutorBackend.MP
    ray = ExecutorBackend.RAY
    uni = ExecutorBackend.UNI
    entries: dict[ExecutorBackend, tuple[HealthLaw, ...]] = {
        mp: (
            law(
                mp,
                _OLDEST,
                _OLDEST,
                HealthCoverage.WORKER_DEATH_REACHES,
                (
                    "v0.6.6.post1: executor/multiproc_gpu_executor.py L163-167",
                    "v0.6.6.post1: engine/multiprocessing/engine.py L182-190, L287-296",
                ),
                "V0 mp: the heartbeat calls the executor's check_health, which checks the "
                "worker monitor processes are alive",
            ),
            law(mp, "0.8.5", "0.9.1", HealthCoverage.API_SERVER_ONLY, v085, nothing),
            *(
                law(
                    mp,
                    first,
                    last,
                    HealthCoverage.WORKER_DEATH_REACHES,
                    _MP_MONITOR_SOURCES + delay_sources,
                    "MultiprocExecutor's monitor turns a worker process death into engine "
                    "death, which /health reads from a local flag; nothing contacts the "
                    "workers on the /health path",
                    delay,
                )
                for first, last, delay, delay_sources in _MP_DELAYS
            ),
        ),
        ray: (
            law(
                ray,
                _OLDEST,
                _OLDEST,
                HealthCoverage.WORKERS_NOT_WATCHED,
                ("v0.6.6.post1: RayGPUExecutor inherits GPUExecutor.check_health (no-op)",),
                "V0 ray: check_health returns at once; Ray workers are assumed healthy",
            ),
            law(ray, "0.8.5", "0.9.1", HealthCoverage.API_SERVER_ONLY, v085, nothing),
            law(
                ray,
                "0.9.2",
                "0.20.2",
                HealthCoverage.WORKERS_NOT_WATCHED,
                (
                    "v0.9.2: executor/ray_distributed_executor.py L698-701 (no-op)",
                    "v0.9.2: v1/executor/abstract.py L68 (register_failure_callback: pass)",
                    "v0.10.1.1: executor/ray_distributed_executor.py L694-697 (no-op)",
                    "v0.10.1.1: v1/executor/ray_distributed_executor.py L43 (subclasses it)",
                    flag,
                    (
                        "v0.10.2: executor/ray_distributed_executor.py L696 "
                        "('Assume that the Ray workers are healthy')"
                    ),
                    *_each("0.14.0 0.17.0", "v1/executor/ray_executor.py, no ray_executor_v2.py"),
                    (
                        "v0.20.0: v1/executor/ray_executor.py (no worker monitor); "
                        "VLLM_USE_RAY_V2_EXECUTOR_BACKEND defaults to 0"
                    ),
                    *_each(
                        "0.20.1 0.20.2",
                        "v1/executor/ray_executor.py as 0.20.0's; envs.py L778-779 "
                        "(VLLM_USE_RAY_V2_EXECUTOR_BACKEND defaults to 0)",
                    ),
                    (
                        "v0.21.0: envs.py L786-787 (VLLM_USE_RAY_V2_EXECUTOR_BACKEND defaults "
                        "to 1 from here; the legacy executor stays selectable: no law there)"
                    ),
                ),
                "the legacy Ray executor has no worker monitor: a dead Ray worker is not "
                "seen by /health until a request fails",
            ),
            law(
                ray,
                _NEWEST,
                _NEWEST,
                HealthCoverage.WORKER_DEATH_REACHES,
                (
                    flag,
                    "v0.33.0: v1/executor/ray_executor_v2.py L487-534 (RayWorkerMonitor)",
                    "v0.33.0: v1/executor/abstract.py L64-97 (ray -> RayExecutorV2 only)",
                ),
                "RayExecutorV2 (the only Ray executor in 0.33) watches its workers; a "
                "worker death reaches the engine-dead flag",
            ),
        ),
        uni: (
            law(uni, "0.8.5", "0.9.1", HealthCoverage.API_SERVER_ONLY, v085, nothing),
            law(
                uni,
                "0.9.2",
                _NEWEST,
                HealthCoverage.ENGINE_PROCESS,
                (
                    "v0.9.2: v1/engine/async_llm.py L553-556, executor/uniproc_executor.py L26-27",
                    "v0.10.1.1: v1/engine/async_llm.py L559-562, v1/executor/abstract.py L12-14",
                    *_each(
                        "0.11.0 0.14.0 0.17.0 0.20.0 0.23.0 0.26.0 0.27.0 0.29.0 0.31.0 0.32.0",
                        "v1/engine/async_llm.py check_health",
                    ),
                    flag,
                    "v0.33.0: v1/engine/core_client.py L822-848 (MPClientEngineMonitor)",
                    "v0.33.0: v1/executor/uniproc_executor.py check_health returns at once",
                ),
                "the single worker runs inside the engine-core process: its death is "
                "engine death, which reaches /health; nothing else is checked",
            ),
        ),
        ExecutorBackend.EXTERNAL_LAUNCHER: (),
    }
    failure = (
        _failure_law(
            question=_FAILURE_QUESTION,
            span=span(_OLDEST, "0.10.2"),
            sources=(
                "v0.6.6.post1: entrypoints/launcher.py RuntimeError handler",
                "v0.9.2: entrypoints/launcher.py L136-147",
                "v0.10.1.1: entrypoints/launcher.py (RuntimeError handler; no 503 on /health)",
                "v0.10.2: entrypoints/launcher.py L157-169",
            ),
            failure_status=500,
            statement="EngineDeadError reaches the launcher: 500, and the server shuts "
            "down unless VLLM_KEEP_ALIVE_ON_ENGINE_DEATH",
        ),
        _failure_law(
            question=_FAILURE_QUESTION,
            span=span("0.11.0", _NEWEST),
            sources=(
                "v0.11.0: entrypoints/openai/api_server.py L345-352",
                *_each("0.14.0 0.17.0", "entrypoints/serve/instrumentator/health.py L29"),
                *_each(
                    "0.20.0 0.23.0 0.26.0 0.27.0 0.29.0 0.31.0 0.32.0",
                    "entrypoints/serve/instrumentator/health.py L33",
                ),
                "v0.33.0: entrypoints/serve/instrumentator/health.py L22-34",
            ),
            failure_status=503,
            statement="EngineDeadError is caught: 503 with an empty body",
        ),
    )
    out: list[tuple[Question, tuple[Law, ...]]] = [
        (_HEALTH_QUESTIONS[backend], entries[backend]) for backend in ExecutorBackend
    ]
    out.append((_FAILURE_QUESTION, failure))
    return out


# --- served identity --------------------------------------------------------------

_CARD_QUESTION = question(MODEL_CARD_KEY, "What are a /v1/models card's id and root?")


def _identity() -> list[tuple[Question, tuple[Law, ...]]]:
    law = _card_law(
        question=_CARD_QUESTION,
        span=span(_OLDEST, _NEWEST),
        sources=(
            "v0.6.6.post1: entrypoints/openai/api_server.py L631-634",
            "v0.33.0: entrypoints/launchers/api_server/app_state.py L49-61",
            "v0.33.0: entrypoints/openai/models/serving.py L64-77, L149-165",
            "first-hand v0.32.0: id 'tiny-llama:q4-alias', root '/models/tiny-llama'",
        ),
        statement="each --served-model-name (else the model argument) is its own card id; "
        "root is the model argument as given on the command line (a hub id or a local "
        "path, before any download): configuration intent, not the weights' bytes; LoRA "
        "cards carry the adapter path as root and the base name as parent",
    )
    return [(_CARD_QUESTION, (law,))]


# --- incarnation marker -------------------------------------------------------------

_MARKER_QUESTION = question(
    INCARNATION_MARKER_KEY, "When does /metrics carry process_start_time_seconds?"
)


def _marker() -> list[tuple[Question, tuple[Law, ...]]]:
    what = "it is the API-server process's start time, not the engine's or the workers'"
    laws: tuple[Law, ...] = (
        _marker_law(
            question=_MARKER_QUESTION,
            span=span(_OLDEST, _OLDEST),
            sources=("v0.6.6.post1: entrypoints/openai/api_server.py L163-170",),
            marker=IncarnationMarker.ABSENT_BY_DEFAULT,
            statement="V0 MQLLMEngine (the default) sets PROMETHEUS_MULTIPROC_DIR: no "
            f"process_* metrics unless --disable-frontend-multiprocessing; {what}",
        ),
        _marker_law(
            question=_MARKER_QUESTION,
            span=span("0.8.5", "0.10.2"),
            sources=(
                (
                    "v0.8.5: entrypoints/openai/api_server.py L166-215 (V1 AsyncLLM; else V0 "
                    "MQLLMEngine, which sets PROMETHEUS_MULTIPROC_DIR)"
                ),
                "first-hand v0.8.5: V0 on CPU, no process_start_time_seconds",
                "v0.9.2: v1/metrics/prometheus.py get_prometheus_registry",
                *_each("0.9.2 0.10.1.1", "entrypoints/openai/api_server.py (MQLLMEngineClient)"),
            ),
            marker=IncarnationMarker.PRESENT_UNLESS_MULTIPROCESS_REGISTRY,
            statement="V1: present in single-registry mode (api_server_count 1, the default), "
            "absent with api_server_count > 1 or PROMETHEUS_MULTIPROC_DIR; the V0 engine "
            "(MQLLMEngine: where V1 is unsupported, always on CPU in 0.8.5) sets "
            "PROMETHEUS_MULTIPROC_DIR itself, so it is absent unless "
            f"--disable-frontend-multiprocessing; {what}",
        ),
        _marker_law(
            question=_MARKER_QUESTION,
            span=span("0.11.0", "0.14.1"),
            sources=(
                (
                    "v0.11.0: entrypoints/openai/api_server.py (no V0 engine, no "
                    "PROMETHEUS_MULTIPROC_DIR of its own)"
                ),
                "v0.13.0: entrypoints/cli/serve.py (api_server_count defaults to 1)",
                *_each(
                    "0.14.0 0.14.1",
                    "entrypoints/openai/cli_args.py L283-287 (--api-server-count default 1)",
                ),
            ),
            marker=IncarnationMarker.PRESENT_UNLESS_MULTIPROCESS_REGISTRY,
            statement="present in single-registry mode (api_server_count 1, the default); "
            f"absent with api_server_count > 1 or PROMETHEUS_MULTIPROC_DIR; {what}",
        ),
        _marker_law(
            question=_MARKER_QUESTION,
            span=span("0.15.0", _NEWEST),
            sources=(
                "v0.15.0: entrypoints/cli/serve.py L82-95 (api_server_count None -> DP size)",
                "v0.15.0: entrypoints/openai/cli_args.py L286-289 (--api-server-count None)",
                "v0.17.0: entrypoints/cli/serve.py L82-95 (api_server_count None -> DP size)",
                *_each(
                    "0.23.0 0.26.0 0.27.0 0.29.0 0.31.0 0.32.0",
                    "entrypoints/cli/serve.py (the same default)",
                ),
                "first-hand v0.29.0: python -m …api_server with DP=2 keeps the marker",
                "v0.33.0: entrypoints/cli/serve.py L107-126, L283",
                "first-hand v0.32.0: present with TP=1 and TP=2 (DP=1)",
            ),
            marker=IncarnationMarker.ABSENT_BY_DEFAULT_WITH_DP,
            statement="under 'vllm serve', api_server_count defaults to the DP size under "
            "internal load balancing, so DP>1 drops the marker by default ('python -m "
            "vllm.entrypoints.openai.api_server' runs one API server and keeps it); present "
            f"with one API server unless PROMETHEUS_MULTIPROC_DIR is set; {what}",
        ),
    )
    return [(_MARKER_QUESTION, laws)]


# --- vllm:cache_config_info labels ------------------------------------------------

_LABELS_QUESTION = question(
    CACHE_CONFIG_LABELS_KEY, "Which labels does vllm:cache_config_info carry?"
)


def _labels(text: str) -> frozenset[str]:
    return frozenset(text.split())


_LABELS_0_6_6 = _labels(
    """block_size gpu_memory_utilization swap_space_bytes num_gpu_blocks_override
    cache_dtype is_attention_free sliding_window enable_prefix_caching cpu_offload_gb
    num_gpu_blocks num_cpu_blocks"""
)
_LABELS_0_8_5 = _labels(
    """block_size gpu_memory_utilization swap_space cache_dtype is_attention_free
    num_gpu_blocks_override sliding_window enable_prefix_caching prefix_caching_hash_algo
    cpu_offload_gb calculate_kv_scales num_gpu_blocks num_cpu_blocks swap_space_bytes"""
)
_LABELS_0_9_2 = _LABELS_0_8_5 | _labels("cpu_kvcache_space_bytes engine")
_LABELS_0_10_2 = _LABELS_0_9_2 | _labels(
    """mamba_page_size_padded mamba_cache_dtype mamba_ssm_cache_dtype
    kv_sharing_fast_prefill kv_cache_memory_bytes"""
)
_LABELS_0_13_0 = _labels(
    """block_size gpu_memory_utilization swap_space cache_dtype is_attention_free
    num_gpu_blocks_override sliding_window enable_prefix_caching prefix_caching_hash_algo
    cpu_offload_gb calculate_kv_scales cpu_kvcache_space_bytes mamba_page_size_padded
    mamba_block_size mamba_cache_dtype mamba_ssm_cache_dtype num_gpu_blocks num_cpu_blocks
    kv_sharing_fast_prefill kv_cache_memory_bytes kv_offloading_size kv_offloading_backend
    engine"""
)
# 0.15.0 to 0.16.0 declare one field more (first-hand on 0.16.0's /metrics, CPU, TP=1).
_LABELS_0_15_0 = _LABELS_0_13_0 | _labels("mamba_cache_mode")
_LABELS_0_20_0 = _labels(
    """block_size user_specified_block_size user_specified_mamba_block_size hash_block_size
    gpu_memory_utilization cache_dtype is_attention_free num_gpu_blocks_override
    sliding_window enable_prefix_caching prefix_caching_hash_algo calculate_kv_scales
    kv_cache_dtype_skip_layers mamba_page_size_padded mamba_block_size mamba_cache_dtype
    mamba_ssm_cache_dtype mamba_cache_mode num_gpu_blocks num_cpu_blocks
    kv_sharing_fast_prefill kv_cache_memory_bytes kv_offloading_size kv_offloading_backend
    _block_size_resolved engine"""
)
# Written out by hand from the real captures' /metrics bodies (CPU, TP=1 and TP=2).
_LABELS_0_26_0 = _labels(
    """_block_size_resolved block_size cache_dtype calculate_kv_scales enable_prefix_caching
    engine gpu_memory_utilization is_attention_free kv_cache_dtype_skip_layers
    kv_cache_max_concurrency kv_cache_memory_bytes kv_cache_size_tokens
    kv_offloading_backend kv_offloading_size kv_sharing_fast_prefill mamba_block_size
    mamba_cache_dtype mamba_cache_mode mamba_page_size_padded mamba_ssm_cache_dtype
    num_cpu_blocks num_gpu_blocks num_gpu_blocks_override prefix_caching_hash_algo
    prefix_match_unit skip_page_size_padded sliding_window user_specified_block_size
    user_specified_mamba_block_size"""
)
_LABELS_0_29_0 = _labels(
    """_block_size_resolved block_size cache_dtype enable_prefix_caching engine
    gpu_memory_utilization is_attention_free kv_cache_dtype_skip_layers kv_cache_layout
    kv_cache_max_concurrency kv_cache_memory_bytes kv_cache_size_tokens
    kv_offloading_backend kv_offloading_size kv_sharing_fast_prefill mamba_block_size
    mamba_cache_dtype mamba_cache_mode mamba_page_size_padded mamba_ssm_cache_dtype
    num_cpu_blocks num_gpu_blocks num_gpu_blocks_override prefix_cache_retention_interval
    prefix_caching_hash_algo prefix_match_unit replayssm_buffer_len skip_page_size_padded
    sliding_window use_kda_recoverssm use_replayssm user_specified_block_size
    user_specified_mamba_block_size"""
)
_LABELS_0_27_0 = (_LABELS_0_20_0 - {"hash_block_size"}) | _labels(
    """prefix_match_unit skip_page_size_padded replayssm_buffer_len use_replayssm
    kv_cache_size_tokens kv_cache_max_concurrency"""
)
# 0.28.0 drops calculate_kv_scales (first-hand on its /metrics, CPU, TP=1).
_LABELS_0_28_0 = _LABELS_0_27_0 - _labels("calculate_kv_scales")
# Written out by hand from 0.31.0's CacheConfig (config/cache.py L73-316: 35 fields, none
# set undeclared in __post_init__ or by platforms/cpu.py) plus the engine label, and
# checked against the real captures' /metrics bodies (CPU, TP=1 and TP=2): 36 labels.
_LABELS_0_31_0 = _labels(
    """_block_size_resolved block_size cache_dtype effective_attention_block_size
    enable_mamba_shared_prefix_checkpoint enable_prefix_caching engine
    gpu_memory_utilization is_attention_free kv_cache_dtype_skip_layers kv_cache_layout
    kv_cache_max_concurrency kv_cache_memory_bytes kv_cache_size_tokens
    kv_offloading_backend kv_offloading_size kv_sharing_fast_prefill mamba_block_size
    mamba_cache_dtype mamba_cache_mode mamba_page_size_padded mamba_ssm_cache_dtype
    num_cpu_blocks num_gpu_blocks num_gpu_blocks_override prefix_cache_retention_interval
    prefix_caching_hash_algo prefix_match_unit replayssm_buffer_len skip_page_size_padded
    sliding_window swa_bounded_replay use_kda_recoverssm use_replayssm
    user_specified_block_size user_specified_mamba_block_size"""
)
# Written out by hand from the real capture's /metrics body (CPU, TP=1).
_LABELS_0_32_0 = _labels(
    """_block_size_resolved block_size cache_dtype cache_hit_alignment_tokens
    effective_attention_block_size enable_mamba_shared_prefix_checkpoint
    enable_prefix_caching engine gpu_memory_utilization hash_block_size is_attention_free
    kv_cache_dtype_skip_layers kv_cache_layout kv_cache_max_concurrency
    kv_cache_memory_bytes kv_cache_size_tokens kv_offloading_backend kv_offloading_size
    kv_sharing_fast_prefill mamba_block_size mamba_cache_dtype mamba_cache_mode
    mamba_page_size_padded mamba_ssm_cache_dtype num_cpu_blocks num_gpu_blocks
    num_gpu_blocks_override prefix_cache_retention_interval prefix_caching_hash_algo
    prefix_match_unit replayssm_buffer_len skip_page_size_padded sliding_window
    swa_bounded_replay use_kda_recoverssm use_replayssm user_specified_block_size"""
)
_LABELS_0_33_0 = _labels(
    """block_size user_specified_block_size kv_cache_layout prefix_match_unit
    gpu_memory_utilization cache_dtype is_attention_free num_gpu_blocks_override
    sliding_window enable_prefix_caching prefix_caching_hash_algo
    prefix_cache_retention_interval kv_cache_dtype_skip_layers mamba_page_size_padded
    skip_page_size_padded mamba_block_size mamba_cache_dtype mamba_ssm_cache_dtype
    mamba_cache_mode enable_mamba_shared_prefix_checkpoint replayssm_buffer_len
    use_replayssm use_kda_recoverssm num_gpu_blocks num_cpu_blocks
    simple_cpu_offload_num_blocks effective_attention_block_size kv_cache_size_tokens
    kv_cache_max_concurrency hash_block_size cache_hit_alignment_tokens
    kv_sharing_fast_prefill swa_bounded_replay kv_cache_memory_bytes kv_offloading_size
    kv_offloading_backend _block_size_resolved engine"""
)


def _cache_config_labels() -> list[tuple[Question, tuple[Law, ...]]]:
    def law(first: str, last: str, labels: frozenset[str], *sources: str, cpu: str = "") -> Law:
        return _labels_law(
            question=_LABELS_QUESTION,
            span=span(first, last),
            sources=sources,
            labels=labels,
            cpu_platform_labels=_labels(cpu),
        )

    fields = "config/cache.py CacheConfig fields and __post_init__ attributes"
    laws: tuple[Law, ...] = (
        law(
            _OLDEST,
            _OLDEST,
            _LABELS_0_6_6,
            "v0.6.6.post1: config.py ~L998 (metrics_info: every __dict__ key)",
            "v0.6.6.post1: engine/metrics.py L702-713 (no engine label)",
        ),
        law(
            "0.8.5",
            "0.8.5",
            _LABELS_0_8_5,
            f"v0.8.5: {fields}",
            "v0.8.5: v1/metrics/loggers.py L348-366 (no engine label)",
            "v0.8.5: platforms/cpu.py L105-110 (sets cache_config.cpu_kvcache_space_bytes, "
            "not a declared field)",
            "first-hand v0.8.5: 15 labels on a CPU server's /metrics (TP=1)",
            cpu="cpu_kvcache_space_bytes",
        ),
        law(
            "0.9.2",
            "0.9.2",
            _LABELS_0_9_2,
            f"v0.9.2: {fields}",
            "v0.9.2: async_llm.py L131-133 (log_engine_initialized; engine label)",
        ),
        law("0.10.2", "0.11.0", _LABELS_0_10_2, f"v0.10.2: {fields}", f"v0.11.0: {fields}"),
        law(
            "0.11.1",
            "0.14.1",
            _LABELS_0_13_0,
            *_each("0.11.1 0.11.2 0.12.0 0.13.0 0.14.0 0.14.1", fields),
            "first-hand v0.11.1: vllm:cache_config_info labels on /metrics (CPU, TP=2)",
        ),
        law(
            "0.15.0",
            "0.16.0",
            _LABELS_0_15_0,
            *_each("0.15.0 0.15.1 0.16.0", fields),
            "first-hand v0.16.0: vllm:cache_config_info labels on /metrics (CPU, TP=1)",
        ),
        law(
            "0.20.0",
            "0.23.0",
            _LABELS_0_20_0,
            *_each("0.20.0 0.20.1 0.22.1 0.23.0", fields),
            "first-hand v0.20.1: vllm:cache_config_info labels on /metrics (CPU, TP=1)",
            "first-hand v0.23.0: vllm:cache_config_info labels on /metrics (CPU, TP=1, TP=2)",
        ),
        law(
            "0.26.0",
            "0.26.0",
            _LABELS_0_26_0,
            "first-hand v0.26.0: vllm:cache_config_info labels on /metrics (CPU, TP=1, TP=2)",
            "v0.26.0: config/cache.py L232-235 (metrics_info: every __dict__ key)",
            "v0.26.0: v1/metrics/loggers.py L1076-1097 (engine label added)",
        ),
        law("0.27.0", "0.27.1", _LABELS_0_27_0, *_each("0.27.0 0.27.1", fields)),
        law(
            "0.28.0",
            "0.28.0",
            _LABELS_0_28_0,
            f"v0.28.0: {fields}",
            "first-hand v0.28.0: vllm:cache_config_info labels on /metrics (CPU, TP=1)",
        ),
        law(
            "0.29.0",
            "0.29.0",
            _LABELS_0_29_0,
            "first-hand v0.29.0: vllm:cache_config_info labels on /metrics (CPU, TP=2, PP=2, DP=2)",
        ),
        law(
            "0.31.0",
            "0.31.0",
            _LABELS_0_31_0,
            "first-hand v0.31.0: vllm:cache_config_info labels on /metrics (CPU, TP=1, TP=2)",
            f"v0.31.0: {fields}",
            "v0.31.0: config/cache.py L311-314 (metrics_info: every __dict__ key)",
            "v0.31.0: v1/metrics/loggers.py L1003-1024 (engine label added)",
        ),
        law(
            "0.32.0",
            "0.32.0",
            _LABELS_0_32_0,
            "first-hand v0.32.0: vllm:cache_config_info labels on /metrics (CPU, TP=1)",
            "v0.32.0: config/cache.py L322-325 (metrics_info: every __dict__ key)",
            "v0.32.0: v1/metrics/loggers.py L1114-1136 (engine label added)",
        ),
        law(
            _NEWEST,
            _NEWEST,
            _LABELS_0_33_0,
            f"v0.33.0: {fields}",
            "v0.33.0: config/cache.py L440-443 (metrics_info)",
            "v0.33.0: v1/metrics/loggers.py L1114-1136 (engine label added)",
        ),
    )
    return [(_LABELS_QUESTION, laws)]


# --- executor markers in the startup log ------------------------------------------

#: The markers a law answers: the other two (the config field and the argument) name
#: their backend themselves.
_MARKERS = (
    ExecutorMarker.RAY_EXECUTOR_FILE,
    ExecutorMarker.RAY_WORKER_TAG,
    ExecutorMarker.MP_EXECUTOR_FILE,
    ExecutorMarker.MP_LEADER_LINE,
    ExecutorMarker.MULTIPROC_EXECUTOR_FILE,
    ExecutorMarker.VLLM_WORKER_TAG,
    ExecutorMarker.UNIPROC_EXECUTOR_FILE,
    ExecutorMarker.SINGLE_GPU_EXECUTOR_FILE,
)
_EXECUTOR_QUESTIONS = {
    marker: question(
        executor_marker_key(marker),
        f"Which executor backends print the {marker.value.replace('_', ' ')} marker?",
    )
    for marker in _MARKERS
}


def _executor() -> list[tuple[Question, tuple[ExecutorMarkerLaw, ...]]]:
    def law(
        marker: ExecutorMarker,
        first: str,
        last: str,
        backends: frozenset[ExecutorBackend],
        files: tuple[str, ...],
        sources: tuple[str, ...],
        statement: str,
    ) -> ExecutorMarkerLaw:
        return _executor_law(
            question=_EXECUTOR_QUESTIONS[marker],
            span=span(first, last),
            sources=sources,
            marker=marker,
            backends=backends,
            files=files,
            statement=statement,
        )

    mp, ray = ExecutorBackend.MP, ExecutorBackend.RAY
    uni, external = ExecutorBackend.UNI, ExecutorBackend.EXTERNAL_LAUNCHER
    v2 = (
        "v0.20.0: v1/executor/ray_executor_v2.py (RayExecutorV2 subclasses MultiprocExecutor "
        "and its WorkerProc; opt-in by VLLM_USE_RAY_V2_EXECUTOR_BACKEND)"
    )
    v2_only = "v0.33.0: v1/executor/abstract.py L64-97 (ray -> RayExecutorV2 only)"
    no_v2 = _each(
        "0.13.0 0.14.0 0.17.0",
        "v1/executor/ray_executor.py (Ray's V1 executor; no ray_executor_v2.py, no "
        "MultiprocExecutor subclass)",
    )
    shared = "mp, or from 0.20.0 Ray's V2 executor, which shares MultiprocExecutor's code"
    entries: dict[ExecutorMarker, tuple[ExecutorMarkerLaw, ...]] = {
        ExecutorMarker.RAY_EXECUTOR_FILE: (
            law(
                ExecutorMarker.RAY_EXECUTOR_FILE,
                _OLDEST,
                _NEWEST,
                frozenset({ray}),
                (
                    "ray_gpu_executor.py",
                    "ray_distributed_executor.py",
                    "ray_executor.py",
                    "ray_executor_v2.py",
                ),
                (
                    "v0.6.6.post1: executor/ray_gpu_executor.py (RayGPUExecutor)",
                    "v0.9.2: executor/ray_distributed_executor.py L698-701",
                    "v0.10.1.1: v1/executor/ray_distributed_executor.py L43 (subclasses it)",
                    "v0.20.0: v1/executor/ray_executor.py",
                    "v0.33.0: v1/executor/ray_executor_v2.py L487-534 (RayWorkerMonitor)",
                ),
                "a record from a Ray executor file is printed by the ray backend only",
            ),
        ),
        ExecutorMarker.RAY_WORKER_TAG: (
            law(
                ExecutorMarker.RAY_WORKER_TAG,
                _OLDEST,
                _NEWEST,
                frozenset({ray}),
                (),
                ("v0.6.6.post1: executor/ray_utils.py (RayWorkerWrapper, the Ray actor)",),
                "a (RayWorkerWrapper pid=…) process tag is a Ray worker: the ray backend only",
            ),
        ),
        ExecutorMarker.MP_EXECUTOR_FILE: (
            law(
                ExecutorMarker.MP_EXECUTOR_FILE,
                _OLDEST,
                _NEWEST,
                frozenset({mp}),
                ("mp_distributed_executor.py", "multiproc_gpu_executor.py"),
                (
                    "v0.6.6.post1: executor/multiproc_gpu_executor.py L163-167",
                    "v0.8.5: executor/mp_distributed_executor.py (V0 mp executor)",
                ),
                "a record from V0's multiprocessing executor files is printed by mp only",
            ),
        ),
        ExecutorMarker.MP_LEADER_LINE: (
            law(
                ExecutorMarker.MP_LEADER_LINE,
                _OLDEST,
                _NEWEST,
                frozenset({mp}),
                (),
                (
                    (
                        "v0.33.0: v1/executor/multiproc_executor.py "
                        "MultiprocExecutor._init_executor ('DP group leader: …')"
                    ),
                    "v0.33.0: v1/executor/ray_executor_v2.py (overrides _init_executor)",
                ),
                "'DP group leader:' from multiproc_executor.py is MultiprocExecutor's own "
                "start-up line, which Ray's V2 executor overrides: mp only",
            ),
        ),
        ExecutorMarker.MULTIPROC_EXECUTOR_FILE: (
            law(
                ExecutorMarker.MULTIPROC_EXECUTOR_FILE,
                _OLDEST,
                "0.17.0",
                frozenset({mp}),
                ("multiproc_executor.py",),
                (
                    "v0.9.2: v1/executor/multiproc_executor.py L119-146 (MultiprocExecutor)",
                    *no_v2,
                ),
                "a record from multiproc_executor.py is MultiprocExecutor's: mp only",
            ),
            law(
                ExecutorMarker.MULTIPROC_EXECUTOR_FILE,
                "0.20.0",
                _NEWEST,
                frozenset({mp, ray}),
                ("multiproc_executor.py",),
                (v2, v2_only),
                f"a record from multiproc_executor.py is {shared}",
            ),
        ),
        ExecutorMarker.VLLM_WORKER_TAG: (
            law(
                ExecutorMarker.VLLM_WORKER_TAG,
                _OLDEST,
                "0.17.0",
                frozenset({mp}),
                (),
                (
                    "v0.9.2: v1/executor/multiproc_executor.py (WorkerProc: the VllmWorker tag)",
                    *no_v2,
                ),
                "a (VllmWorker …) process tag is a MultiprocExecutor worker: mp only",
            ),
            law(
                ExecutorMarker.VLLM_WORKER_TAG,
                "0.20.0",
                _NEWEST,
                frozenset({mp, ray}),
                (),
                (v2, v2_only),
                f"a (VllmWorker …) process tag is a WorkerProc worker: {shared}",
            ),
        ),
        ExecutorMarker.UNIPROC_EXECUTOR_FILE: (
            law(
                ExecutorMarker.UNIPROC_EXECUTOR_FILE,
                _OLDEST,
                _NEWEST,
                frozenset({uni, external}),
                ("uniproc_executor.py",),
                (
                    "v0.9.2: executor/uniproc_executor.py L26-27",
                    (
                        "v0.33.0: v1/executor/abstract.py L64-97 (uni -> UniProcExecutor, "
                        "external_launcher -> ExecutorWithExternalLauncher)"
                    ),
                ),
                "a record from uniproc_executor.py is the uni executor or the "
                "external-launcher executor built on it",
            ),
        ),
        ExecutorMarker.SINGLE_GPU_EXECUTOR_FILE: (
            law(
                ExecutorMarker.SINGLE_GPU_EXECUTOR_FILE,
                _OLDEST,
                _OLDEST,
                frozenset({uni}),
                ("gpu_executor.py",),
                (
                    "v0.6.6.post1: executor/gpu_executor.py L76, L80 (GPUExecutor, one GPU)",
                    "v0.6.6.post1: CLI backends ray and mp only; one GPU used GPUExecutor",
                ),
                "a record from gpu_executor.py is V0's single-GPU executor, today's uni",
            ),
        ),
    }
    return [(_EXECUTOR_QUESTIONS[marker], entries[marker]) for marker in _MARKERS]


#: Every question, with the laws answering it (spans never overlap within a question).
LAW_TABLE: tuple[tuple[Question, tuple[Law, ...]], ...] = tuple(
    _routes()
    + _parallel()
    + _identity()
    + _capacity()
    + _cache_config_labels()
    + _health()
    + _marker()
)

#: Every question the table answers, by key.
QUESTIONS: dict[str, Question] = {q.key: q for q, _ in LAW_TABLE}

#: Which backends each startup-log executor marker is consistent with, per release.
#: Kept beside :data:`LAW_TABLE`, not in it, so that ``vllm-evidence laws`` still prints
#: the table it printed before these laws moved here.
EXECUTOR_LAW_TABLE: tuple[tuple[Question, tuple[ExecutorMarkerLaw, ...]], ...] = tuple(_executor())

#: The record-prefix file names that show an executor marker, in any read release.
EXECUTOR_FILES: dict[str, ExecutorMarker] = {
    file: law.marker for _, laws in EXECUTOR_LAW_TABLE for law in laws for file in law.files
}
