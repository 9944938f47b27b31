"""Route bodies, as each vLLM release serves them.

Bodies come back as ``bytes`` (what a server sends): ``/metrics`` (Prometheus text,
:func:`metrics_bodies`), ``/v1/models`` (:func:`models_bodies`), ``/version``
(:func:`version_bodies`), ``/server_info`` in its text and JSON forms
(:func:`server_info_texts`, :func:`server_info_jsons`), and the pieces
:mod:`.captures` puts next to them: ``/get_world_size``, ``/health``, and vLLM's 404
for a route a launch did not register.  (The sealed types parsed from these bodies
are drawn in :mod:`.captures`.)

A new release's format goes in the builder of the route it changed, gated on
``_at_least(release, "<the release>")`` (the ``vllm:cache_config_info`` label set
comes from the law table, through :data:`~._common.CACHE_CONFIG_LABELS`; a label with
a new kind of value gets its branch in :func:`_cache_config_values`).  A route that
appears in a release gets its ``_…_RELEASES`` tuple, as ``/server_info`` has.

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from vllm_evidence.testing._strategies._common import (
    CACHE_CONFIG_LABELS,
    RELEASES,
    _at_least,
    _check_range,
    _config_text,
    _model_paths,
    _names,
    _one_name_servers,
    _Parallel,
    _release,
    _Server,
)

__all__ = [
    "metrics_bodies",
    "models_bodies",
    "server_info_jsons",
    "server_info_texts",
    "version_bodies",
]

# --------------------------------------------------------------------------------------
# Small pieces.

#: Served names: plain, aliases with ``:``, and (rarely) names needing JSON or label escapes.
_served_names = st.one_of(
    _names,
    st.builds(lambda a, b: f"{a}:{b}", _names, _names),
    st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != ""),
)

_label_free_text = st.text(
    st.sampled_from(list('ab\\"\n{},= é')), min_size=1, max_size=12
) | st.text(st.characters(codec="utf-8"), max_size=8)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _float_text(draw: st.DrawFn) -> str:
    return repr(draw(st.floats(0, 1e6, allow_nan=False, allow_infinity=False)))


# --------------------------------------------------------------------------------------
# /metrics


def _cache_config_values(draw: st.DrawFn, release: str, engines: int) -> dict[str, str]:
    """The label values every engine's series shares (all but ``engine``)."""
    labels = CACHE_CONFIG_LABELS[release]
    block = draw(st.sampled_from([16, 32, 64, 128, 256]))
    per_engine_blocks = draw(st.integers(1, 500_000))
    shared: dict[str, str] = {}
    for label in labels:
        if label == "engine":
            continue
        if label == "block_size":
            shared[label] = str(block)
        elif label == "gpu_memory_utilization":
            shared[label] = draw(st.sampled_from(["0.9", "0.92", "0.855", "0.5"]))
        elif label == "num_gpu_blocks":
            # 0.8.5 V1 emitted before the handshake; ≥0.9.2 sums over DP engines.
            shared[label] = "None" if release == "0.8.5" else str(per_engine_blocks * engines)
        elif label in ("kv_cache_size_tokens",):
            shared[label] = str(draw(st.integers(0, 10**9)))
        elif label == "kv_cache_max_concurrency":
            shared[label] = repr(draw(st.floats(0, 1e5, allow_nan=False)))
        elif label in ("cache_dtype", "mamba_cache_dtype", "mamba_ssm_cache_dtype"):
            shared[label] = draw(st.sampled_from(["auto", "fp8", "fp8_e5m2", "float32"]))
        elif label in ("kv_cache_dtype_skip_layers", "prefix_caching_hash_algo"):
            shared[label] = draw(st.sampled_from(["[]", "sha256", "builtin"]) | _label_free_text)
        elif label.startswith(("enable_", "is_", "use_", "calculate_", "user_specified")) or (
            label in ("kv_sharing_fast_prefill", "_block_size_resolved", "swa_bounded_replay")
        ):
            shared[label] = draw(st.sampled_from(["True", "False"]))
        elif label in ("num_cpu_blocks", "num_gpu_blocks_override", "sliding_window"):
            shared[label] = draw(st.sampled_from(["None", str(draw(st.integers(0, 10**6)))]))
        elif label.endswith(("_bytes", "_gb", "swap_space", "_size")):
            shared[label] = draw(st.sampled_from(["0", "None", "4294967296", "4.0", "0.0"]))
        else:
            shared[label] = draw(st.sampled_from(["None", "0", "auto"]) | _label_free_text)
    return shared


def _cache_config_lines(draw: st.DrawFn, release: str, engines: int) -> list[str]:
    shared = _cache_config_values(draw, release, engines)
    has_engine = "engine" in CACHE_CONFIG_LABELS[release]
    # 0.9.2 emits engine 0 only; ≥0.10.2 one series per managed engine.
    indices = [0] if release == "0.9.2" else list(range(engines if has_engine else 1))
    first = draw(st.integers(0, 7))
    lines = [
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
        "# TYPE vllm:cache_config_info gauge",
    ]
    for index in indices:
        labels = dict(shared)
        if has_engine:
            labels["engine"] = str(first + index)
        order = draw(st.permutations(sorted(labels)))
        text = ",".join(f'{k}="{_escape_label(labels[k])}"' for k in order)
        lines.append(f"vllm:cache_config_info{{{text}}} 1.0")
    return lines


def _model_labels(model: str, engine: int | None) -> str:
    name = f'model_name="{_escape_label(model)}"'
    return name if engine is None else f'engine="{engine}",{name}'


def _other_families(draw: st.DrawFn, release: str, engines: int, model: str) -> list[list[str]]:
    v1 = _at_least(release, "0.8.5")
    engine_ids: list[int | None] = list(range(engines)) if v1 else [None]
    families: list[list[str]] = []
    gauge = ["# HELP vllm:num_requests_running Number of requests in model execution batches."]
    gauge.append("# TYPE vllm:num_requests_running gauge")
    gauge.extend(
        f"vllm:num_requests_running{{{_model_labels(model, e)}}} {float(draw(st.integers(0, 64)))}"
        for e in engine_ids
    )
    families.append(gauge)
    counter = [
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
        "# TYPE vllm:prompt_tokens_total counter",
    ]
    counter.extend(
        f"vllm:prompt_tokens_total{{{_model_labels(model, e)}}} "
        f"{float(draw(st.integers(0, 10**9)))}"
        for e in engine_ids
    )
    families.append(counter)
    if v1 and draw(st.booleans()):
        created = [
            "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_created gauge",
        ]
        created.extend(
            f"vllm:prompt_tokens_created{{{_model_labels(model, e)}}} 1.7960118843140595e+09"
            for e in engine_ids
        )
        families.append(created)
    histogram = [
        "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
        "# TYPE vllm:time_to_first_token_seconds histogram",
    ]
    bounds = ["0.001", "0.005", "0.01", "0.02", "0.04", "0.1", "0.5", "1.0", "5.0", "+Inf"]
    for e in engine_ids:
        counts = sorted(draw(st.lists(st.integers(0, 1000), min_size=10, max_size=10)))
        base = _model_labels(model, e)
        histogram.extend(
            f'vllm:time_to_first_token_seconds_bucket{{{base},le="{le}"}} {float(c)}'
            for le, c in zip(bounds, counts, strict=True)
        )
        histogram.append(f"vllm:time_to_first_token_seconds_count{{{base}}} {float(counts[-1])}")
        histogram.append(f"vllm:time_to_first_token_seconds_sum{{{base}}} {_float_text(draw)}")
    families.append(histogram)
    if draw(st.booleans()):
        adapters = ",".join(draw(st.lists(_names, max_size=3)))
        families.append(
            [
                "# HELP vllm:lora_requests_info Running stats on lora requests.",
                "# TYPE vllm:lora_requests_info gauge",
                (
                    f'vllm:lora_requests_info{{max_lora="4",running_lora_adapters="{adapters}",'
                    f'waiting_lora_adapters=""}} 1.7e+09'
                ),
            ]
        )
    return families


def _process_lines(start: str) -> list[str]:
    return [
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
        "# TYPE process_start_time_seconds gauge",
        f"process_start_time_seconds {start}",
        "# HELP process_open_fds Number of open file descriptors.",
        "# TYPE process_open_fds gauge",
        "process_open_fds 34.0",
    ]


@st.composite
def _metrics_body(
    draw: st.DrawFn,
    release: str,
    min_engines: int,
    max_engines: int,
    *,
    process_start_time: bool | None,
) -> bytes:
    engines = draw(st.integers(min_engines, max_engines))
    model = draw(_served_names)
    families = [_cache_config_lines(draw, release, engines)]
    families.extend(_other_families(draw, release, engines, model))
    families = draw(st.permutations(families))
    with_start = draw(st.booleans()) if process_start_time is None else process_start_time
    head = [
        "# HELP python_info Python platform information",
        "# TYPE python_info gauge",
        (
            'python_info{implementation="CPython",major="3",minor="12",patchlevel="3",'
            'version="3.12.3"} 1.0'
        ),
    ]
    if with_start:
        seconds = draw(st.integers(1_600_000_000, 1_900_000_000))
        hundredths = draw(st.integers(0, 99))
        start = draw(
            st.sampled_from(
                [f"{seconds}.{hundredths:02d}", f"{seconds / 1e9:.11f}e+09".replace("0e+", "e+")]
            )
        )
        head.extend(_process_lines(start))
    lines = head + [line for family in families for line in family]
    return ("\n".join(lines) + "\n").encode("utf-8")


def metrics_bodies(
    *,
    release: str | None = None,
    min_engines: int = 1,
    max_engines: int = 4,
    process_start_time: bool | None = None,
) -> SearchStrategy[bytes]:
    """``/metrics`` bodies (Prometheus text exposition) as ``release`` serves them.

    ``vllm:cache_config_info`` carries that release's label set (:data:`CACHE_CONFIG_LABELS`):
    one series without ``engine`` before 0.9.2, engine 0 only in 0.9.2, one series per
    DP engine from 0.10.2 (``num_gpu_blocks`` summed over engines), and
    ``kv_cache_size_tokens``/``kv_cache_max_concurrency`` from 0.27.  Other families
    (gauges, counters with ``_created``, a histogram with ``_bucket{le=…}``, LoRA info)
    come in any order; label values exercise the ``\\\\``, ``\\"`` and ``\\n`` escapes.
    ``process_start_time_seconds`` (the incarnation marker) is present, absent, or
    drawn (``None``).  ``release=None`` draws one of :data:`RELEASES`.
    """
    _check_range("engines", min_engines, max_engines, floor=1)
    return _release(release).flatmap(
        lambda r: _metrics_body(r, min_engines, max_engines, process_start_time=process_start_time)
    )


# --------------------------------------------------------------------------------------
# /v1/models, /version


@st.composite
def _models_body(
    draw: st.DrawFn,
    min_names: int,
    max_names: int,
    min_adapters: int,
    max_adapters: int,
    server: _Server | None = None,
) -> bytes:
    if server is None:
        root = draw(_model_paths())
        names = draw(st.lists(_served_names, min_size=min_names, max_size=max_names, unique=True))
    else:
        root, names = server.model, list(server.served)
    adapters = draw(
        st.lists(
            _names.filter(lambda n: n not in names),
            min_size=min_adapters,
            max_size=max_adapters,
            unique=True,
        )
    )
    max_model_len = draw(st.integers(1, 1 << 20)) if server is None else server.max_len
    created = draw(st.integers(1_600_000_000, 1_900_000_000))

    def permission(i: int) -> dict[str, object]:
        return {
            "id": f"modelperm-{i:032x}",
            "object": "model_permission",
            "created": created,
            "allow_create_engine": False,
            "allow_sampling": True,
            "allow_logprobs": True,
            "allow_search_indices": False,
            "allow_view": True,
            "allow_fine_tuning": False,
            "organization": "*",
            "group": None,
            "is_blocking": False,
        }

    cards: list[dict[str, object]] = [
        {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": root,
            "parent": None,
            "max_model_len": max_model_len,
            "permission": [permission(i)],
        }
        for i, name in enumerate(names)
    ]
    cards.extend(
        {
            "id": adapter,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": f"/adapters/{adapter}",
            "parent": names[0],
            "max_model_len": None,
            "permission": [permission(len(names) + i)],
        }
        for i, adapter in enumerate(adapters)
    )
    compact = draw(st.booleans())
    text = json.dumps(
        {"object": "list", "data": cards},
        separators=(",", ":") if compact else None,
        ensure_ascii=draw(st.booleans()),
    )
    return text.encode("utf-8")


def models_bodies(
    *,
    min_served_names: int = 1,
    max_served_names: int = 3,
    min_adapters: int = 0,
    max_adapters: int = 3,
) -> SearchStrategy[bytes]:
    """``/v1/models`` bodies: one base card per served name (aliases of one ``root``),
    then LoRA adapter cards (``parent`` = the first served name, no ``max_model_len``)."""
    _check_range("served_names", min_served_names, max_served_names, floor=1)
    _check_range("adapters", min_adapters, max_adapters)
    return _models_body(min_served_names, max_served_names, min_adapters, max_adapters)


def version_bodies(*, release: str | None = None) -> SearchStrategy[bytes]:
    """``/version`` bodies: ``{"version": "<release>"}``, sometimes with a local label."""
    return _release(release).flatmap(
        lambda r: st.sampled_from([r, f"{r}+cu124", f"{r}+cpu"]).map(
            lambda v: json.dumps({"version": v}).encode()
        )
    )


_TEXT_RELEASES = tuple(r for r in RELEASES if _at_least(r, "0.8.5"))
_JSON_RELEASES = tuple(r for r in RELEASES if _at_least(r, "0.11.0"))


def _extras(release: str, served: str) -> dict[str, object]:
    if not _at_least(release, "0.20.0"):
        return {}
    return {
        "vllm_env": {"VLLM_USE_V1": True, "VLLM_LOGGING_LEVEL": "INFO"},
        "system_env": {
            "torch_version": "2.9.0+cu128",
            "cuda_runtime_version": "12.8.93",
            "nvidia_gpu_models": "GPU 0: NVIDIA H100 80GB HBM3",
            "vllm_version": release,
            "env_vars": f"SERVED={served}",
        },
    }


@st.composite
def _server_info_text(draw: st.DrawFn, release: str, server: _Server | None = None) -> bytes:
    if server is None:
        server = draw(_one_name_servers(_names))
    model, served, p, max_len = server.model, server.served[0], server.parallel, server.max_len
    config = _config_text(release, model, served, p, max_len)
    return json.dumps({"vllm_config": config, **_extras(release, served)}).encode()


def server_info_texts(*, release: str | None = None) -> SearchStrategy[bytes]:
    """``/server_info`` bodies, text form: ``{"vllm_config": "model='…', …"}``.

    The config string is ``VllmConfig.__str__`` with nested brackets and quotes;
    ``data_parallel_size`` from 0.10.2; ``vllm_env``/``system_env`` from 0.20.
    Releases before 0.8.5 had no ``/server_info``; ``release=None`` draws from 0.8.5 on.
    """
    if release is not None and release not in _TEXT_RELEASES:
        msg = f"/server_info exists from 0.8.5; release must be one of {_TEXT_RELEASES}"
        raise ValueError(msg)
    releases = st.sampled_from(_TEXT_RELEASES) if release is None else st.just(release)
    return releases.flatmap(_server_info_text)


@st.composite
def _server_info_json(draw: st.DrawFn, release: str, server: _Server | None = None) -> bytes:
    if server is None:
        server = draw(_one_name_servers(_served_names))
    model, served, p, max_len = server.model, server.served[0], server.parallel, server.max_len
    parallel: dict[str, object] = {
        "pipeline_parallel_size": p.pp,
        "tensor_parallel_size": p.tp,
        "data_parallel_size": p.dp,
        "data_parallel_size_local": p.dp,
        "data_parallel_rank": 0,
        "decode_context_parallel_size": p.dcp,
        "world_size": p.pp * p.tp * p.pcp,
        "rank": 0,
        "distributed_executor_backend": p.backend,
        "enable_expert_parallel": draw(st.booleans()),
    }
    if _at_least(release, "0.13.0"):
        parallel["prefill_context_parallel_size"] = p.pcp
    instance = (
        str(draw(st.integers(1_700_000_000 * 10**9, 1_900_000_000 * 10**9)))
        if _at_least(release, "0.13.0")
        else draw(st.text("0123456789abcdef", min_size=5, max_size=5))
    )
    config = {
        "model_config": {
            "model": model,
            "tokenizer": model,
            "dtype": "torch.bfloat16",
            "max_model_len": max_len,
            "served_model_name": served,
        },
        "cache_config": {
            "block_size": draw(st.sampled_from([16, 32, 64, 128])),
            "gpu_memory_utilization": 0.92 if _at_least(release, "0.20.0") else 0.9,
            "num_gpu_blocks": draw(st.integers(1, 10**6)),
        },
        "parallel_config": parallel,
        "instance_id": instance,
    }
    return json.dumps({"vllm_config": config, **_extras(release, served)}).encode()


def server_info_jsons(*, release: str | None = None) -> SearchStrategy[bytes]:
    """``/server_info?config_format=json`` bodies (0.11 on): ``vllm_config`` nested, with
    ``parallel_config`` (sizes, ``world_size`` = PP×TP×PCP, the executor backend),
    ``model_config`` and ``instance_id`` (a nanosecond timestamp from 0.13)."""
    if release is not None and release not in _JSON_RELEASES:
        msg = f"the JSON form exists from 0.11.0; release must be one of {_JSON_RELEASES}"
        raise ValueError(msg)
    releases = st.sampled_from(_JSON_RELEASES) if release is None else st.just(release)
    return releases.flatmap(_server_info_json)


# --------------------------------------------------------------------------------------
# /get_world_size, /health, and a route the launch did not register

#: vLLM's answer (status 404) to a route the launch did not register.
_NOT_FOUND = b'{"detail":"Not Found"}'

#: ``/health``'s body: empty, whatever the status.
_HEALTH_BODY = b""

#: ``/health``'s status: mostly 200, sometimes 503 (a dead engine).
_health_statuses = st.sampled_from([200, 200, 200, 503])


def _world_size_body(p: _Parallel) -> bytes:
    """``/get_world_size`` (0.20 on, development mode): TP×PP×PCP×DP."""
    return json.dumps({"world_size": p.tp * p.pp * p.pcp * p.dp}).encode()
