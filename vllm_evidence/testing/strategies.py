"""Hypothesis strategies for vLLM front-door bodies, startup logs, and the sealed types.

Wire formats come back as ``bytes`` (what a server sends or a log file holds); the
sealed evidence types come back built only through this package's public functions
(:func:`~vllm_evidence.readback.historical_bundle`,
:func:`~vllm_evidence.capture.startup_log.read_startup_log`,
:func:`~vllm_evidence.assessment.assess`, and the stub front door with
:func:`~vllm_evidence.capture.http.probe_sync`).  Formats follow what each vLLM release
prints (label sets of ``vllm:cache_config_info``, log prefixes and capacity lines).

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TypeVar, final

import attrs

# httpx imports rich when it is installed, and rich draws from the global random at import
# time. The probe imports httpx lazily; importing it here keeps that out of a draw
# (hypothesis fails a strategy that touches the global random).
import httpx  # noqa: F401
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from packaging.version import Version

from vllm_evidence.adapters.failure import BodyParseFailure
from vllm_evidence.adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence.adapters.models import ServedModels, parse_models
from vllm_evidence.adapters.server_info import (
    ServerInfo,
    parse_server_info_json,
    parse_server_info_text,
)
from vllm_evidence.adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence.assessment import Assessment, assess
from vllm_evidence.capture.batch import CaptureBatch
from vllm_evidence.capture.http import probe_sync
from vllm_evidence.readback import (
    CapturedReadback,
    HistoricalBundle,
    historical_bundle,
    readback_from_batch,
)
from vllm_evidence.testing._capture import CaptureDirectory
from vllm_evidence.testing.stub import serve_capture
from vllm_evidence.upstream import CacheConfigLabelsLaw, ReleaseLaws, laws_for
from vllm_evidence.upstream.routes import Route

T = TypeVar("T")

__all__ = [
    "CACHE_CONFIG_LABELS",
    "RELEASES",
    "CaptureDirectory",
    "GeneratedCapacity",
    "GeneratedLaunch",
    "GeneratedLog",
    "assessments",
    "capture_batches",
    "capture_directories",
    "captured_readbacks",
    "historical_bundles",
    "metrics_bodies",
    "metrics_observations",
    "models_bodies",
    "read_startup_logs",
    "served_models",
    "server_info_jsons",
    "server_info_texts",
    "server_infos",
    "startup_log_examples",
    "startup_logs",
    "version_bodies",
]

# --------------------------------------------------------------------------------------
# Release facts (``vllm-upstream.md`` §3a, §4).

#: The vLLM releases the strategies know formats for, oldest first.
RELEASES: Final[tuple[str, ...]] = (
    "0.6.6.post1",
    "0.8.5",
    "0.9.2",
    "0.10.2",
    "0.11.0",
    "0.13.0",
    "0.20.0",
    "0.27.0",
    "0.32.0",
    "0.33.0",
)


def _law_labels(release: str) -> tuple[str, ...]:
    """The label names the law table gives ``release`` (sorted, as the exposition is)."""
    laws = laws_for(Version(release))
    assert isinstance(laws, ReleaseLaws), release  # noqa: S101  # every RELEASES member is read
    law = laws.cache_config_labels()
    assert isinstance(law, CacheConfigLabelsLaw), law.statement  # noqa: S101  # likewise
    return tuple(sorted(law.labels))


#: The label names of ``vllm:cache_config_info`` in each release (``engine`` from 0.9.2),
#: taken from the law table (``metrics.cache_config_info.labels``), one source of truth.
CACHE_CONFIG_LABELS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {release: _law_labels(release) for release in RELEASES}
)


def _at_least(release: str, floor: str) -> bool:
    return RELEASES.index(release) >= RELEASES.index(floor)


def _release(release: str | None) -> SearchStrategy[str]:
    if release is None:
        return st.sampled_from(RELEASES)
    if release not in RELEASES:
        msg = f"release must be one of {', '.join(RELEASES)}, not {release!r}"
        raise ValueError(msg)
    return st.just(release)


def _check_range(name: str, low: int, high: int, floor: int = 0) -> None:
    if low < floor or high < low:
        msg = f"need {floor} <= min_{name} <= max_{name}, got {low} and {high}"
        raise ValueError(msg)


# --------------------------------------------------------------------------------------
# Small pieces.

_NAME_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
# "None" (and "True"/"False") print like Python's constants in vLLM's repr-like config
# lines, where no reader can tell the name from the value: vLLM users cannot either.
_names = st.text(_NAME_ALPHABET, min_size=1, max_size=16).filter(
    lambda s: s[0].isalnum() and s not in {"None", "True", "False"}
)


@st.composite
def _model_paths(draw: st.DrawFn) -> str:
    """A model string as given on the CLI: an HF repo id or a local path."""
    org, name = draw(_names), draw(_names)
    return draw(st.sampled_from([f"{org}/{name}", f"/models/{name}", f"/mnt/{org}/{name}"]))


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


# --------------------------------------------------------------------------------------
# /server_info


@attrs.frozen
class _Parallel:
    tp: int
    pp: int
    dp: int
    pcp: int
    dcp: int
    backend: str


_parallels = st.builds(
    _Parallel,
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 1, 2]),
    dp=st.sampled_from([1, 1, 2, 4]),
    pcp=st.just(1),
    dcp=st.sampled_from([1, 1, 2]),
    backend=st.sampled_from(["mp", "ray", "uni", "external_launcher"]),
)


@attrs.frozen
class _Server:
    """One launch's configuration: every body of one drawn capture describes it."""

    model: str
    served: tuple[str, ...]
    parallel: _Parallel
    max_len: int


#: Served names a ``VllmConfig.__str__`` text prints unquoted and a reader can split.
_config_safe_names = st.one_of(_names, st.builds(lambda a, b: f"{a}:{b}", _names, _names))


@st.composite
def _servers(draw: st.DrawFn) -> _Server:
    model = draw(_model_paths())
    served = draw(
        st.one_of(
            st.just((model,)),
            st.lists(_config_safe_names, min_size=1, max_size=3, unique=True).map(tuple),
        )
    )
    return _Server(model, served, draw(_parallels), draw(st.integers(1, 1 << 20)))


@st.composite
def _one_name_servers(draw: st.DrawFn, names: SearchStrategy[str]) -> _Server:
    """A launch serving one name: the model argument itself, or one drawn from ``names``."""
    model = draw(_model_paths())
    served = draw(st.one_of(st.just(model), names))
    return _Server(model, (served,), draw(_parallels), draw(st.integers(1, 1 << 20)))


def _config_text(release: str, model: str, served: str, p: _Parallel, max_len: int) -> str:
    parts = [
        f"model='{model}'",
        "speculative_config=None",
        f"tokenizer='{model}'",
        "skip_tokenizer_init=False",
        "tokenizer_mode=auto",
        "revision=None",
        "trust_remote_code=False",
        "dtype=torch.bfloat16",
        f"max_seq_len={max_len}",
        "download_dir=None",
        "load_format=auto",
        f"tensor_parallel_size={p.tp}",
        f"pipeline_parallel_size={p.pp}",
    ]
    if _at_least(release, "0.10.2"):
        parts.append(f"data_parallel_size={p.dp}")
    if _at_least(release, "0.11.0"):
        parts.append(f"decode_context_parallel_size={p.dcp}")
    parts.extend(
        [
            "disable_custom_all_reduce=False",
            "quantization=None",
            "enforce_eager=False",
            "kv_cache_dtype=auto",
            "device_config=cuda",
            (
                "structured_outputs_config=StructuredOutputsConfig(backend='auto', "
                "disable_any_whitespace=False, reasoning_parser='')"
            ),
            (
                "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
                "otlp_traces_endpoint=None, collect_detailed_traces=None)"
            ),
            "seed=0",
            f"served_model_name={served}",
            "enable_prefix_caching=True",
            "enable_chunked_prefill=True",
            "pooler_config=None",
            (
                "compilation_config={'level': 3, 'debug_dump_path': None, 'cache_dir': '', "
                "'custom_ops': ['none'], 'splitting_ops': ['vllm.unified_attention', "
                "'vllm.unified_attention_with_output'], 'cudagraph_capture_sizes': [512, 504]}"
            ),
        ]
    )
    return ", ".join(parts)


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
# Startup logs


@final
@attrs.frozen
class GeneratedCapacity:
    """One capacity report a generated log printed (what a reader must find)."""

    format: str
    """``"v0_blocks"``, ``"v1_two_line"`` or ``"v1_one_line"`` (the reader's format names)."""
    device: str
    tokens: int | None
    """``None`` for the V0 blocks format, which prints blocks, not tokens."""
    max_model_len: int
    concurrency: str
    """The concurrency exactly as printed (``"37.68"``)."""


@final
@attrs.frozen
class GeneratedLaunch:
    """One launch of a generated log, with the figures it printed."""

    release: str
    api_server_pid: int | None
    """``None`` before process tags (0.6.6)."""
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int | None
    """``None`` where the engine-init line does not print it (before 0.10.2)."""
    served_model_name: str
    capacity: tuple[GeneratedCapacity, ...]
    available_memory: tuple[str, ...]
    """Each worker's ``Available KV cache memory`` figure as printed."""
    ranks: tuple[tuple[int, int], ...]
    """``(rank, world_size)`` of each ``world_size=… rank=…`` line, in order."""
    development_mode: bool | None
    """Whether the printed route table has the development routes; ``None`` when the
    launch printed no route table."""


@final
@attrs.frozen
class GeneratedLog:
    """A generated startup log and what it holds, launch by launch."""

    text: bytes
    launches: tuple[GeneratedLaunch, ...]


_RECORD_NOISE = (
    "INFO {d} [__init__.py:241] Automatically detected platform cuda.",
    "WARNING {d} [system_utils.py:255] Found ulimit of 20000 and failed to automatically increase.",
    "INFO {d} [model.py:733] Resolved architecture: LlamaForCausalLM",
    "INFO {d} [cuda.py:328] Using Flash Attention backend on V1 engine.",
    "DEBUG {d} [utils.py:12] Waiting for 1 local, 0 remote core engine proc(s) to start.",
)
_BARE_NOISE = (
    "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:00<00:00,  3.21it/s]",
    "  warnings.warn(",
    "",
    "INFO:     Started server process [1]",
    'INFO:     127.0.0.1:50312 - "GET /metrics HTTP/1.1" 200 OK',
    "Capturing CUDA graphs: 10%|\u2588 | 1/10\rCapturing CUDA graphs: 100%|\u2588| 10/10",
    "[W1130 04:11:13.123456 ProcessGroupNCCL.cpp:4561] Warning: using the default backend.",
)
_BANNER = (
    "\u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version "
)
_DATE = "09-03 02:12:26"


def _engine_tag(release: str, index: int, dp: int) -> str:
    if release == "0.8.5":
        return "EngineCore_0"
    if release == "0.9.2":
        return f"EngineCore_{index}"
    if _at_least(release, "0.20.0") and dp == 1:
        return "EngineCore"
    return f"EngineCore_DP{index}"


def _worker_tag(release: str, rank: int) -> str:
    if release == "0.8.5":
        return f"VllmWorker rank={rank}"
    if _at_least(release, "0.32.0"):
        return f"Worker_TP{rank}"
    return f"VllmWorker TP{rank}"


@st.composite
def _launch(draw: st.DrawFn, release: str, api_pid: int) -> tuple[GeneratedLaunch, list[str]]:
    v0 = release == "0.6.6.post1"
    ansi = release in ("0.10.2", "0.11.0") or (
        not v0 and not _at_least(release, "0.33.0") and draw(st.booleans())
    )

    def rec(tag: str | None, pid: int, file: str, msg: str, level: str = "INFO") -> str:
        if v0:
            return f"{level} {_DATE} {file}:76] {msg}"
        t = f"({tag} pid={pid})"
        if ansi:
            t = f"\x1b[1;36m{t}\x1b[0;0m"
        return f"{t} {level} {_DATE} [{file}:{draw(st.integers(1, 3000))}] {msg}"

    tp = draw(st.sampled_from([1, 1, 2, 4]))
    pp = draw(st.sampled_from([1, 1, 2]))
    dp = draw(st.sampled_from([1, 1, 2])) if _at_least(release, "0.10.2") else 1
    model = draw(_model_paths())
    served = draw(st.one_of(st.just(model), _names))
    max_len = draw(st.integers(1, 10**7))
    lines: list[str] = []
    engine_lines: set[int] = set()
    if _at_least(release, "0.32.0"):
        lines.append(rec("APIServer", api_pid, "api_utils.py", _BANNER + release))
    else:
        lines.append(
            rec("APIServer", api_pid, "api_server.py", f"vLLM API server version {release}")
        )
    if _at_least(release, "0.10.2"):
        args = [f"'model': '{model}'", f"'served_model_name': ['{served}']"]
        args.extend(f"'tensor_parallel_size': {tp}" for _ in range(tp > 1))
        args.extend(f"'pipeline_parallel_size': {pp}" for _ in range(pp > 1))
        args.extend(f"'data_parallel_size': {dp}" for _ in range(dp > 1))
        lines.append(
            rec("APIServer", api_pid, "utils.py", "non-default args: {" + ", ".join(args) + "}")
        )
    parallel = _Parallel(tp=tp, pp=pp, dp=dp, pcp=1, dcp=1, backend="mp")
    config = _config_text(release, model, served, parallel, max_len)
    for i in range(dp):
        pid = api_pid + 1 + i
        head = "Initializing an LLM engine" if v0 else "Initializing a V1 LLM engine"
        engine_lines.add(len(lines))
        lines.append(
            rec(
                _engine_tag(release, i, dp),
                pid,
                "core.py" if not v0 else "llm_engine.py",
                f"{head} (v{release}) with config: {config}",
            )
        )
    workers = tp * pp
    ranks: list[tuple[int, int]] = []
    memory: list[str] = []
    if _at_least(release, "0.10.2") and dp == 1:
        for r in range(workers):
            ranks.append((r, workers))
            lines.append(
                rec(
                    _worker_tag(release, r % tp),
                    api_pid + 10 + r,
                    "parallel_state.py",
                    f"world_size={workers} rank={r} local_rank={r} "
                    "distributed_init_method=tcp://127.0.0.1:29500 backend=nccl",
                )
            )
        for r in range(workers):
            whole, cents = draw(st.integers(0, 80)), draw(st.integers(1, 99))
            sign = draw(st.sampled_from(["", "", "-"]))
            figure = (
                f"{sign}{whole}.{cents:02d}"
                if not _at_least(release, "0.20.0")
                else str(round(float(f"{sign}{whole}.{cents:02d}"), 2))
            )
            memory.append(figure)
            lines.append(
                rec(
                    _worker_tag(release, r % tp),
                    api_pid + 10 + r,
                    "gpu_worker.py",
                    f"Available KV cache memory: {figure} GiB",
                )
            )
    capacity: list[GeneratedCapacity] = []
    device = "GPU" if v0 else draw(st.sampled_from(["GPU", "GPU", "CPU", "XPU"]))
    repeats = workers if release in ("0.8.5", "0.9.2", "0.10.2", "0.11.0") else 1
    for i in range(dp):
        tokens = draw(st.integers(0, 10**9))
        conc = f"{draw(st.integers(0, 99999))}.{draw(st.integers(0, 99)):02d}"
        tag, pid = _engine_tag(release, i, dp), api_pid + 1 + i
        for _ in range(repeats):
            if v0:
                blocks = draw(st.integers(0, 10**6))
                lines.append(
                    rec(None, 0, "gpu_executor.py", f"# GPU blocks: {blocks}, # CPU blocks: 2048")
                )
                lines.append(
                    rec(
                        None,
                        0,
                        "gpu_executor.py",
                        f"Maximum concurrency for {max_len} tokens per request: {conc}x",
                    )
                )
                capacity.append(GeneratedCapacity("v0_blocks", "GPU", None, max_len, conc))
            elif _at_least(release, "0.32.0"):
                lines.append(
                    rec(
                        tag,
                        pid,
                        "kv_cache_utils.py",
                        f"{device} KV cache size: {tokens:,} tokens, Maximum concurrency for "
                        f"{max_len:,} tokens per request: {conc}x",
                    )
                )
                capacity.append(GeneratedCapacity("v1_one_line", device, tokens, max_len, conc))
            else:
                lines.append(
                    rec(tag, pid, "kv_cache_utils.py", f"{device} KV cache size: {tokens:,} tokens")
                )
                lines.append(
                    rec(
                        tag,
                        pid,
                        "kv_cache_utils.py",
                        f"Maximum concurrency for {max_len:,} tokens per request: {conc}x",
                    )
                )
                capacity.append(GeneratedCapacity("v1_two_line", device, tokens, max_len, conc))
    # The HTTP server's route table (launcher.py), printed once the engine is up; a log
    # cut before that has none. Development mode adds its routes (and, from 0.32, the
    # SECURITY WARNING line vLLM logs when it registers them).
    routes_printed = draw(st.booleans())
    development = draw(st.booleans()) if routes_printed and _at_least(release, "0.8.5") else False
    if routes_printed:
        if development and _at_least(release, "0.32.0"):
            lines.append(
                rec(
                    "APIServer",
                    api_pid,
                    "__init__.py",
                    "SECURITY WARNING: Development endpoints are enabled! This should NOT be "
                    "used in production!",
                    "WARNING",
                )
            )
        for path, methods in _route_table(release, development=development):
            lines.append(
                rec("APIServer", api_pid, "launcher.py", f"Route: {path}, Methods: {methods}")
            )
    # Noise anywhere after the launch's first line; a bare (prefix-less) line never
    # follows an engine-init line, the longest line (it would read as a hard wrap).
    for at in sorted(draw(st.lists(st.integers(1, len(lines)), max_size=6)), reverse=True):
        bare = draw(st.booleans()) and (at - 1) not in engine_lines
        if bare:
            noise = draw(st.sampled_from(_BARE_NOISE))
        else:
            template = draw(st.sampled_from(_RECORD_NOISE))
            level, _, rest = template.partition(" {d} ")
            file, _, msg = rest.partition("] ")
            noise = rec("APIServer", api_pid, file.strip("[").split(":")[0], msg, level)
        lines.insert(at, noise)
    launch = GeneratedLaunch(
        release=release,
        api_server_pid=None if v0 else api_pid,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        data_parallel_size=dp if _at_least(release, "0.10.2") else None,
        served_model_name=served,
        capacity=tuple(capacity),
        available_memory=tuple(memory),
        ranks=tuple(ranks),
        development_mode=development if routes_printed else None,
    )
    return launch, lines


def _route_table(release: str, *, development: bool) -> list[tuple[str, str]]:
    """The routes a launch registers, as its route table prints them."""
    table = [
        ("/openapi.json", "HEAD, GET"),
        ("/docs", "HEAD, GET"),
        ("/health", "GET"),
        ("/metrics", "GET"),
        ("/tokenize", "POST"),
        ("/version", "GET"),
        ("/v1/models", "GET"),
        ("/v1/chat/completions", "POST"),
        ("/v1/completions", "POST"),
    ]
    if development:
        table += [("/server_info", "GET"), ("/reset_prefix_cache", "POST")]
        if _at_least(release, "0.10.2"):
            table.append(("/collective_rpc", "POST"))
        if _at_least(release, "0.20.0"):
            table.append(("/get_world_size", "GET"))
    return table


# What a collector puts before each line: nothing, a docker timestamp, or a
# docker-compose service column.
_WRAPPERS = ("", "2025-09-03T02:11:14.123456789Z ", "vllm-1  | ", "vllm-server-1  | ")


@st.composite
def _log(
    draw: st.DrawFn, release: str | None, min_launches: int, max_launches: int
) -> GeneratedLog:
    count = draw(st.integers(min_launches, max_launches))
    chosen = draw(_release(release))
    launches: list[GeneratedLaunch] = []
    lines: list[str] = []
    for i in range(count):
        launch, text = draw(_launch(chosen, 100 * (i + 1) + draw(st.integers(0, 40))))
        launches.append(launch)
        lines.extend(text)
    wrapper = draw(st.sampled_from(_WRAPPERS))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    body = "".join(f"{wrapper}{line}{end}" for line in lines)
    return GeneratedLog(text=body.encode("utf-8"), launches=tuple(launches))


def startup_log_examples(
    *, release: str | None = None, min_launches: int = 1, max_launches: int = 3
) -> SearchStrategy[GeneratedLog]:
    """Generated startup logs with the figures each launch printed.

    Every launch (a restart appends one) is in one release's format (``release=None``
    draws the release):
    0.6.6's prefix without ``[`` and V0 ``# GPU blocks`` lines; process tags (ANSI
    cyan where that release colours them) and per-release engine-core and worker
    names; two-line V1 capacity with thousands separators (per worker before 0.13),
    the one-line format from 0.32; engine-init lines per DP engine; rank and
    available-memory lines; the HTTP server's route table (or none, as when a log stops
    before the server started), with the development routes when development mode is
    drawn (and, from 0.32, its ``SECURITY WARNING`` line).  Real-world noise is
    interleaved (uvicorn, progress bars with carriage returns, warnings, glog lines),
    and the whole log may be wrapped by docker timestamps or a docker-compose service
    column (``vllm-1  | ``), with CRLF line ends.
    """
    _check_range("launches", min_launches, max_launches, floor=1)
    return _log(release, min_launches, max_launches)


def startup_logs(
    *, release: str | None = None, min_launches: int = 1, max_launches: int = 3
) -> SearchStrategy[bytes]:
    """The bytes of :func:`startup_log_examples` (a log file's content)."""
    return startup_log_examples(
        release=release, min_launches=min_launches, max_launches=max_launches
    ).map(lambda example: example.text)


def _read_log(text: bytes) -> StartupLog:
    log = read_startup_log(io.BytesIO(text))
    if not isinstance(log, StartupLog):  # pragma: no cover - generated logs are never empty
        raise TypeError(log.describe())
    return log


def read_startup_logs(*, logs: SearchStrategy[bytes] | None = None) -> SearchStrategy[StartupLog]:
    """:class:`StartupLog` values, read by ``read_startup_log`` from ``logs``
    (default :func:`startup_logs`)."""
    return (startup_logs() if logs is None else logs).map(_read_log)


# --------------------------------------------------------------------------------------
# Capture directories and the sealed types


_NOT_FOUND = b'{"detail":"Not Found"}'


@st.composite
def _capture_directory(
    draw: st.DrawFn,
    release: str,
    *,
    development_mode: bool | None,
    startup_log: bool | None,
) -> CaptureDirectory:
    dev = draw(st.booleans()) if development_mode is None else development_mode
    server = draw(_servers())
    p = server.parallel
    engines = p.dp if _at_least(release, "0.10.2") else 1
    bodies: dict[Route, bytes] = {
        Route.VERSION: draw(version_bodies(release=release)),
        Route.MODELS: draw(_models_body(1, 1, 0, 2, server)),
        Route.METRICS: draw(_metrics_body(release, engines, engines, process_start_time=True)),
        Route.HEALTH: b"",
    }
    statuses: dict[Route, int] = {Route.HEALTH: draw(st.sampled_from([200, 200, 200, 503]))}
    has_text = _at_least(release, "0.8.5")
    has_json = _at_least(release, "0.11.0")
    if dev and has_text:
        bodies[Route.SERVER_INFO] = draw(_server_info_text(release, server))
        if _at_least(release, "0.20.0"):  # /get_world_size exists from 0.20 (dev mode)
            product = p.tp * p.pp * p.pcp * p.dp
            bodies[Route.GET_WORLD_SIZE] = json.dumps({"world_size": product}).encode()
        else:
            bodies[Route.GET_WORLD_SIZE] = _NOT_FOUND
            statuses[Route.GET_WORLD_SIZE] = 404
    else:
        for route in (Route.SERVER_INFO, Route.GET_WORLD_SIZE):
            bodies[route] = _NOT_FOUND
            statuses[route] = 404
    if dev and has_json:
        bodies[Route.SERVER_INFO_JSON] = draw(_server_info_json(release, server))
    else:
        bodies[Route.SERVER_INFO_JSON] = _NOT_FOUND
        statuses[Route.SERVER_INFO_JSON] = 404
    with_log = draw(st.booleans()) if startup_log is None else startup_log
    log = draw(startup_logs(release=release, max_launches=2)) if with_log else None
    return CaptureDirectory(
        bodies=MappingProxyType(bodies), statuses=MappingProxyType(statuses), startup_log=log
    )


def capture_directories(
    *,
    release: str | None = None,
    development_mode: bool | None = None,
    startup_log: bool | None = None,
) -> SearchStrategy[CaptureDirectory]:
    """One server's front door (every probe route) and optionally its startup log.

    All bodies are in ``release``'s formats and describe one launch: ``/v1/models``
    (served names, ``root``, ``max_model_len``), both ``/server_info`` forms,
    ``/get_world_size`` (TP×PP×PCP×DP) and the ``vllm:cache_config_info`` engines (one
    per DP engine from 0.10.2) agree.  The startup log is drawn on its own (same
    release, its own launch).  Without development mode (or before the route existed)
    ``/server_info`` and ``/get_world_size`` answer 404, as vLLM does; ``/health``
    answers 200 or 503 (an empty body).  ``None`` draws a flag.
    """
    return _release(release).flatmap(
        lambda r: _capture_directory(r, development_mode=development_mode, startup_log=startup_log)
    )


def historical_bundles(
    *, directories: SearchStrategy[CaptureDirectory] | None = None
) -> SearchStrategy[HistoricalBundle]:
    """:class:`HistoricalBundle` values made by ``historical_bundle`` from capture bodies."""
    source = capture_directories() if directories is None else directories
    return source.map(lambda c: historical_bundle(c.bodies, statuses=c.statuses))


def _probe_directory(capture: CaptureDirectory) -> CapturedReadback:
    with (
        tempfile.TemporaryDirectory(prefix="vllm-evidence-capture-") as tmp,
        serve_capture(capture.write(tmp)) as door,
    ):
        batch = probe_sync(door.url, timeout=5.0, deadline=10.0)
    return readback_from_batch(batch)


def captured_readbacks(
    *, directories: SearchStrategy[CaptureDirectory] | None = None
) -> SearchStrategy[CapturedReadback]:
    """:class:`CapturedReadback` values from real probes of the stub front door.

    Each draw serves a capture directory on 127.0.0.1 and probes it with ``probe_sync``
    (GET only), so each example costs a few tens of milliseconds.
    """
    source = capture_directories() if directories is None else directories
    return source.map(_probe_directory)


def capture_batches(
    *, directories: SearchStrategy[CaptureDirectory] | None = None
) -> SearchStrategy[CaptureBatch]:
    """The :class:`CaptureBatch` of :func:`captured_readbacks` (a real probe's batch)."""
    return captured_readbacks(directories=directories).map(lambda r: r.batch)


def assessments(
    *,
    front_doors: SearchStrategy[CapturedReadback | HistoricalBundle | None] | None = None,
    startup_logs: SearchStrategy[StartupLog | None] | None = None,
) -> SearchStrategy[Assessment]:
    """:class:`Assessment` values made by ``assess`` from a front door and/or a log.

    Defaults: a historical bundle or none, and a read startup log or none.
    """
    doors = st.none() | historical_bundles() if front_doors is None else front_doors
    logs = st.none() | read_startup_logs() if startup_logs is None else startup_logs
    return st.builds(assess, doors, logs)


def _ok(value: T | BodyParseFailure) -> T:
    if isinstance(value, BodyParseFailure):  # pragma: no cover - generated bodies parse
        raise TypeError(value.reason)
    return value


def _metrics(body: bytes) -> MetricsObservation:
    return _ok(parse_metrics(body))


def _models(body: bytes) -> ServedModels:
    return _ok(parse_models(body))


def _info_text(body: bytes) -> ServerInfo:
    return _ok(parse_server_info_text(body))


def _info_json(body: bytes) -> ServerInfo:
    return _ok(parse_server_info_json(body))


def metrics_observations(
    *, bodies: SearchStrategy[bytes] | None = None
) -> SearchStrategy[MetricsObservation]:
    """Parsed ``/metrics`` observations (``parse_metrics`` of :func:`metrics_bodies`)."""
    return (metrics_bodies() if bodies is None else bodies).map(_metrics)


def served_models(*, bodies: SearchStrategy[bytes] | None = None) -> SearchStrategy[ServedModels]:
    """Parsed ``/v1/models`` answers (``parse_models`` of :func:`models_bodies`)."""
    return (models_bodies() if bodies is None else bodies).map(_models)


def server_infos() -> SearchStrategy[ServerInfo]:
    """Parsed ``/server_info`` answers of both forms."""
    return server_info_texts().map(_info_text) | server_info_jsons().map(_info_json)
