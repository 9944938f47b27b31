"""What every strategy module shares: the releases, names, and one launch's configuration.

* :data:`RELEASES` lists the vLLM releases the strategies know formats for, and
  :data:`CACHE_CONFIG_LABELS` the ``vllm:cache_config_info`` label set of each, read
  from the law table (:mod:`vllm_evidence.upstream`).
* The small pieces drawn everywhere: names, model paths.
* :class:`_Server` (one launch's model, served names, parallel sizes and context
  length), which every body of one drawn capture describes, and
  :func:`_config_text`, the ``VllmConfig.__str__`` text that both ``/server_info`` and
  the startup log's engine-init line print.

A new release starts here: append it to :data:`RELEASES` (the law table must already
read it, or :data:`CACHE_CONFIG_LABELS` fails at import); gate what it changed with
``_at_least(release, "<the release>")`` in the module that draws that format
(:mod:`.bodies`, :mod:`.logs`, :mod:`.captures`).  A config-text field that appears in
a release goes in :func:`_config_text`.

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import attrs
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from packaging.version import Version

from vllm_evidence.upstream import (
    CacheConfigLabelsLaw,
    CapacityAuthority,
    CapacityLaw,
    CapacitySource,
    ReleaseLaws,
    laws_for,
)

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


def _group_aware(release: str) -> bool:
    """Whether the law table calls ``release``'s capacity line authoritative (group-aware:
    ``log.capacity_line``, from 0.27)."""
    laws = laws_for(Version(release))
    assert isinstance(laws, ReleaseLaws), release  # noqa: S101  # every RELEASES member is read
    law = laws.capacity(CapacitySource.LOG_CAPACITY_LINE)
    return isinstance(law, CapacityLaw) and law.authority is CapacityAuthority.AUTHORITATIVE


#: The releases whose startup log prints a group-aware (authoritative) capacity line, read
#: from the law table: the default draws of :func:`~.launches.launches` and the servers
#: favour them (see :mod:`.launches`).
GROUP_AWARE_RELEASES: Final[tuple[str, ...]] = tuple(r for r in RELEASES if _group_aware(r))


def _at_least(release: str, floor: str) -> bool:
    """Whether ``release`` is ``floor`` or later; ``floor`` need not be a drawn release (a
    format's first release, from the law table, often is not)."""
    return Version(release) >= Version(floor)


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
# Mapped, not filtered (a filter here rejected about 5% of whole draws), and one draw: a
# first character that is not alphanumeric becomes "a"; the three constants get a suffix.
def _name(text: str) -> str:
    name = text if text[0].isalnum() else "a" + text[1:]
    return name + "x" if name in {"None", "True", "False"} else name


_names = st.text(_NAME_ALPHABET, min_size=1, max_size=16).map(_name)


@st.composite
def _model_paths(draw: st.DrawFn) -> str:
    """A model string as given on the CLI: an HF repo id or a local path."""
    org, name = draw(_names), draw(_names)
    return draw(st.sampled_from([f"{org}/{name}", f"/models/{name}", f"/mnt/{org}/{name}"]))


# --------------------------------------------------------------------------------------
# One launch's configuration


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
