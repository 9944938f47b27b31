"""KV-cache capacity figures: each source's per-engine token figures, gathered and checked.

What :mod:`vllm_evidence.decisions._capacity` decides from: the ``kv_cache_size_tokens``
label of ``vllm:cache_config_info`` (one series per DP engine), the startup log's
capacity lines, V0's ``# GPU blocks`` line and the ``num_gpu_blocks × block_size``
labels, each as an :class:`EngineCapacity` with its source; and the checks on one
source's own figures: two figures for one engine, a figure for an engine the source
says does not exist, an engine the source resolves but gives no figure for.  Nothing
here chooses between sources or cites a law; the decision does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import final

import attrs

from vllm_evidence._adapters.metrics import CacheConfigSeries, MetricsObservation
from vllm_evidence._adapters.startup_log import (
    BlocksObservation,
    CapacityFormat,
    CapacityObservation,
    Launch,
    ProcessTag,
)
from vllm_evidence._bounds import MAX_WORLD_SIZE
from vllm_evidence._measure import BlockCount, Concurrency, MeasureParseFailure, TokenCount
from vllm_evidence._readback.evidence import Evidence, Source, log_source, route_source
from vllm_evidence._readback.parallel import ResolvedParallel, resolve_from_log
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream import CapacitySource

__all__ = [
    "EngineCapacity",
    "engine_of",
    "figures_conflict",
    "label_figures",
    "log_figures",
    "min_per_engine",
    "missing_engines",
    "missing_ranges",
    "product_engine",
    "product_figures",
    "resolved_dp",
    "v0_block_size",
    "v0_engine",
]


@final
@attrs.frozen(init=False, repr=False)
class EngineCapacity(Sealed):
    """One DP engine's token capacity from one source."""

    __public_constructor__ = "vllm_evidence.decisions.decide_capacity()"

    engine: str
    """The DP engine index as vLLM names it (``"0"``)."""
    engine_index: int | None
    """That index as a number; ``None`` when the source's text names no index (an
    ``engine`` label that is not ``str(index)``)."""
    tokens: TokenCount
    max_concurrency: Concurrency | None
    max_model_len: TokenCount | None
    source_kind: CapacitySource
    source: Source
    block_size_note: str | None
    """How the block size of a V0 block line's figure was read, when the launch did not
    print it (:func:`v0_block_size`); ``None`` otherwise."""

    def _repr_summary(self) -> str:
        return f"engine {self.engine}: {self.tokens}, {self.source_kind.value}"


_mint_engine = minter(EngineCapacity, EngineCapacity.__attrs_init__)


def engine_of(process: ProcessTag | None) -> str:
    """The DP engine a log line names, as the ``engine`` label spells it (else ``"0"``)."""
    return str(_engine_index(process))


def _engine_index(process: ProcessTag | None) -> int:
    """The DP engine a log line's tag names (``EngineCore_DP1``), else 0."""
    return 0 if process is None or process.dp_engine is None else process.dp_engine


def _series_engine(series: CacheConfigSeries) -> tuple[str, int | None]:
    """A series' engine as labelled and as an index: ``("0", 0)`` without the label (V0)."""
    return ("0", 0) if series.engine is None else (series.engine, series.engine_index)


def label_figures(
    metrics: MetricsObservation, max_model_len: TokenCount | None
) -> list[EngineCapacity]:
    out: list[EngineCapacity] = []
    for series in metrics.cache_config_info:
        tokens = TokenCount.parse(series.label("kv_cache_size_tokens") or "")
        if isinstance(tokens, MeasureParseFailure):
            continue
        concurrency_text = series.label("kv_cache_max_concurrency")
        concurrency = Concurrency.parse(concurrency_text) if concurrency_text else None
        engine, index = _series_engine(series)
        out.append(
            _mint_engine(
                engine=engine,
                engine_index=index,
                tokens=tokens,
                max_concurrency=concurrency if isinstance(concurrency, Concurrency) else None,
                max_model_len=max_model_len,
                source_kind=CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS,
                source=route_source("/metrics"),
                block_size_note=None,
            )
        )
    return out


def product_figures(
    metrics: MetricsObservation,
) -> list[tuple[CacheConfigSeries, BlockCount, TokenCount]]:
    out = []
    for series in metrics.cache_config_info:
        blocks = BlockCount.parse(series.label("num_gpu_blocks") or "")
        size = TokenCount.parse(series.label("block_size") or "")
        if isinstance(blocks, BlockCount) and isinstance(size, TokenCount):
            out.append((series, blocks, size))
    return out


def log_figures(launch: Launch) -> list[EngineCapacity]:
    out = []
    for obs in launch.capacity:
        if obs.format is CapacityFormat.V0_BLOCKS or obs.tokens is None:
            continue
        out.append(
            _mint_engine(
                engine=engine_of(obs.process),
                engine_index=_engine_index(obs.process),
                tokens=obs.tokens,
                max_concurrency=obs.max_concurrency,
                max_model_len=obs.max_model_len,
                source_kind=CapacitySource.LOG_CAPACITY_LINE,
                source=log_source(launch, obs.line, obs.process),
                block_size_note=None,
            )
        )
    return out


def resolved_dp(evidence: Evidence, figures: list[EngineCapacity]) -> int | None:
    """The DP size the figures' own source resolves (the log's, or /server_info's)."""
    from_log = figures[0].source_kind is CapacitySource.LOG_CAPACITY_LINE
    if from_log and evidence.launch is not None and evidence.launch.engine_config is not None:
        # Independent DP engines print DP=1 on the engine-init line: the launch's own
        # resolution (the non-default args or the engine tags) gives the engines.
        resolved = resolve_from_log(evidence.launch)
        if isinstance(resolved, ResolvedParallel):
            return resolved.data_parallel_size
        return evidence.launch.engine_config.data_parallel_size
    if not from_log:
        info = evidence.server_info()
        return None if info is None else info[0].parallel.data_parallel_size
    return None


def _shown(names: Sequence[str], limit: int = 8) -> str:
    """``a, b, c`` for the first ``limit`` names, then how many more."""
    more = f", … ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def figures_conflict(evidence: Evidence, figures: list[EngineCapacity]) -> str | None:
    """Why one source's figures contradict themselves, or ``None``.

    Two different figures for one engine from the front door (vLLM serves one
    ``cache_config_info`` series per engine), or a figure for an engine the same source
    says does not exist: neither the smaller figure nor the extra engine is a capacity.
    """
    if figures[0].source_kind is CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS:
        for engine, group in sorted(_by_engine(figures).items()):
            distinct = sorted({f.tokens for f in group})
            if len(distinct) > 1:
                return (
                    f"engine {engine} has {len(distinct)} different capacity figures from one "
                    f"source: {_shown([str(t) for t in distinct])} ({group[0].source})"
                )
    size = resolved_dp(evidence, figures)
    if size is None:
        return None
    extra = sorted({f.engine for f in figures if f.engine_index is None or f.engine_index >= size})
    if not extra:
        return None
    return (
        f"the same source resolves {size} DP engine(s), but has capacity figures for "
        f"engine(s) {_shown(extra)} past it"
    )


def missing_engines(
    evidence: Evidence, figures: list[EngineCapacity], engines: tuple[EngineCapacity, ...]
) -> list[str]:
    """DP engines the figures' own source resolves but gives no figure for."""
    size = resolved_dp(evidence, figures)
    if size is None:
        return []
    have = {e.engine_index for e in engines if e.engine_index is not None}
    if size > MAX_WORLD_SIZE:
        return missing_ranges(size, have)
    return [str(i) for i in range(size) if i not in have]


def missing_ranges(size: int, have: set[int]) -> list[str]:
    """The engines ``0 .. size - 1`` not in ``have``, as ``"a"`` or ``"a..b"`` runs.

    For a DP size past any real deployment: the runs are computed from the engines
    that do have a figure, never by listing ``size`` engines.
    """
    present = sorted(have)
    runs: list[str] = []
    start = 0
    for engine in [*(e for e in present if e < size), size]:
        if engine > start:
            runs.append(str(start) if engine - 1 == start else f"{start}..{engine - 1}")
        start = max(start, engine + 1)
    return runs


def _by_engine(figures: list[EngineCapacity]) -> dict[str, list[EngineCapacity]]:
    grouped: dict[str, list[EngineCapacity]] = {}
    for f in figures:
        grouped.setdefault(f.engine, []).append(f)
    return grouped


def min_per_engine(figures: list[EngineCapacity]) -> tuple[EngineCapacity, ...]:
    """One figure per engine: the smallest (vLLM takes the minimum over ranks)."""
    return tuple(
        min(group, key=lambda f: f.tokens) for _, group in sorted(_by_engine(figures).items())
    )


def v0_engine(
    launch: Launch,
    block: BlocksObservation,
    size: TokenCount,
    derived: tuple[CapacityObservation, str] | None = None,
) -> EngineCapacity:
    """A V0 ``# GPU blocks`` line's figure, with the block size of the same launch (as
    printed, or ``derived`` from its concurrency line by :func:`v0_block_size`)."""
    pair = derived[0] if derived is not None else None
    return _mint_engine(
        engine=engine_of(block.process),
        engine_index=_engine_index(block.process),
        tokens=block.device_blocks.times_block_size(size),
        max_concurrency=pair.max_concurrency if pair is not None else None,
        max_model_len=pair.max_model_len if pair is not None else None,
        source_kind=CapacitySource.LOG_V0_BLOCKS,
        source=log_source(launch, block.line, block.process),
        block_size_note=derived[1] if derived is not None else None,
    )


#: Fewer digits than vLLM's ``%.2f`` would let the rounding bound grow; more is not
#: vLLM's format.  Either way the line is not read for a block size.
_CONCURRENCY_DECIMALS = 2


def v0_block_size(
    launch: Launch, block: BlocksObservation
) -> tuple[TokenCount, tuple[CapacityObservation, str]] | str:
    """The block size a V0 block line's own concurrency line pins down, or why it does not.

    V0 never prints its block size on CPU: not on the engine-init line
    (``VllmConfig.__str__``, v0.8.5 ``config.py`` L4052-4085, prints no ``block_size``),
    and the API server's ``block_size=None`` is resolved later by the platform (16, or
    128 with IPEX: v0.8.5 ``platforms/cpu.py`` L74-75), so neither is read.  But the
    executor prints, in one call, ``# <dev> blocks: N`` (``%d``) and then ``Maximum
    concurrency for L tokens per request: C`` with C = ``N × block_size / L``
    formatted ``%.2f`` (v0.6.6.post1 ``executor/gpu_executor.py`` L76-81 and
    ``executor/distributed_gpu_executor.py`` L57-62; v0.8.5 ``executor/executor_base.py``
    L112-118; v0.9.2 L113-119; v0.10.1.1 and v0.10.2 L114-120: the whole span of the V0
    block-line law).  C is rounded, so C × L is *not* a token figure; but ``block_size``
    is an integer (v0.6.6.post1 ``config.py`` L971 ``block_size: int``; a ``BlockSize``
    ``Literal`` of integers in v0.8.5 ``config.py`` L1290, v0.9.2 ``config.py`` L1476,
    v0.10.1.1 and v0.10.2 ``config/cache.py`` L24), so every block size B consistent with
    the line satisfies ``|N × B / L - C| ≤ 0.005`` (plus the float division's relative
    error, below 2**-52, allowed for).  When exactly one integer B does, B is the block
    size, and N × B the tokens, exactly; when several do (a coarse concurrency) or none
    (the lines disagree), nothing is derived.
    """
    pair = next(
        (
            c
            for c in launch.capacity
            if c.format is CapacityFormat.V0_BLOCKS
            and c.line == block.line
            and c.concurrency_line is not None
        ),
        None,
    )
    if pair is None or pair.max_concurrency is None or pair.max_model_len is None:
        return (
            "no 'Maximum concurrency' line of the same process follows the block line, "
            "so nothing pins the block size either"
        )
    conc, length, blocks = (
        pair.max_concurrency.value,
        pair.max_model_len.value,
        block.device_blocks.value,
    )
    where = f"the concurrency line (line {pair.concurrency_line}: {conc}x for {length} tokens)"
    exponent = conc.as_tuple().exponent
    if not isinstance(exponent, int) or -exponent != _CONCURRENCY_DECIMALS:
        return f"{where} is not printed with vLLM's 2 decimals, so it bounds nothing"
    if blocks == 0 or length == 0:
        return f"{where}: with {blocks} blocks and max_model_len {length} it pins no block size"
    c = Fraction(conc)
    half = Fraction(1, 2 * 10**_CONCURRENCY_DECIMALS)
    slack = (c + 1) / 2**50
    low = math.ceil((c - half - slack) * length / blocks)
    high = math.floor((c + half + slack) * length / blocks)
    low = max(low, 1)
    if low > high:
        return f"{where} fits no integer block size with {blocks:,} blocks: the two lines disagree"
    if low < high:
        return (
            f"{where} fits block sizes {low} to {high} with {blocks:,} blocks (vLLM rounds "
            "it to 2 decimals), so it does not pin one"
        )
    note = (
        f"block size {low}: the only integer B with {blocks:,} × B / {length} printed as "
        f"{conc}x on line {pair.concurrency_line} (V0 prints no block size)"
    )
    return TokenCount(low), (pair, note)


def product_engine(
    series: CacheConfigSeries, blocks: BlockCount, size: TokenCount
) -> EngineCapacity:
    """``num_gpu_blocks × block_size`` from one series' labels, as one engine's figure."""
    engine, index = _series_engine(series)
    return _mint_engine(
        engine=engine,
        engine_index=index,
        tokens=blocks.times_block_size(size),
        max_concurrency=None,
        max_model_len=None,
        source_kind=CapacitySource.LABEL_BLOCKS_TIMES_BLOCK_SIZE,
        source=route_source("/metrics"),
        block_size_note=None,
    )
