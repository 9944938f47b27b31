"""Parallel realization, stage 1: the parallel sizes as the server resolved them.

What :mod:`vllm_evidence.decisions.parallel` derives the expected ranks from: tensor,
pipeline, data and prefill-context parallel sizes read from the launch's engine-init
line (with the non-default args for a DP size the line does not print) or from a parsed
``/server_info``, as a :class:`ResolvedParallel` with its source; or, when that source
is incomplete or names a world past any deployment, the reason why not.  A
``/get_world_size`` product is never read here: 2 is TP=2, PP=2 or DP=2 alike.
"""

from __future__ import annotations

from typing import final

import attrs

from vllm_evidence._bounds import MAX_WORLD_SIZE
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.startup_log import Launch
from vllm_evidence.readback.evidence import Evidence, Source, log_source

__all__ = [
    "ResolvedParallel",
    "beyond_bounds",
    "layout_sizes",
    "resolve_from_http",
    "resolve_from_log",
]


@final
@attrs.frozen(init=False, repr=False)
class ResolvedParallel(Sealed):
    """Resolved parallel sizes from one source (stage 1)."""

    __public_constructor__ = "vllm_evidence.decisions.decide_parallel()"

    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    prefill_context_parallel_size: int
    source: Source
    data_parallel_note: str | None
    """How the DP size was read when the source does not print it (else ``None``)."""

    @property
    def ranks_per_engine(self) -> int:
        """TP × PP × PCP: the world size of one DP engine."""
        return (
            self.tensor_parallel_size
            * self.pipeline_parallel_size
            * self.prefill_context_parallel_size
        )

    @property
    def world_size(self) -> int:
        """TP × PP × PCP × DP: the world the workers join (``world_size_across_dp``)."""
        return self.ranks_per_engine * self.data_parallel_size

    def expected_ranks(self) -> tuple[int, ...]:
        """Every global rank that must be present: ``0 .. TP×PP×PCP×DP - 1``.

        vLLM numbers a worker of DP engine ``d`` as ``d × (TP×PP×PCP) + local rank``
        and logs that global rank with ``world_size_across_dp``
        (``distributed/parallel_state.py::init_distributed_environment``, v0.32.0
        L1840-1912).
        """
        return tuple(range(self.world_size))

    def _repr_summary(self) -> str:
        return f"{self._sizes_summary()}, from {self.source.where}"

    def _sizes_summary(self) -> str:
        """``TP=2 PP=1 DP=1`` (``PCP=…`` too, when it is not 1)."""
        pcp = self.prefill_context_parallel_size
        return (
            f"TP={self.tensor_parallel_size} PP={self.pipeline_parallel_size} "
            f"DP={self.data_parallel_size}" + (f" PCP={pcp}" if pcp != 1 else "")
        )


_mint_resolved = minter(ResolvedParallel, ResolvedParallel.__attrs_init__)


def resolve_from_log(launch: Launch) -> ResolvedParallel | str | None:
    """Stage 1 from the launch's engine-init line; a reason string when incomplete."""
    config = launch.engine_config
    if config is None:
        return None
    tp, pp = config.tensor_parallel_size, config.pipeline_parallel_size
    if tp is None or pp is None:
        return f"the engine-init line (line {config.line}) does not print TP and PP sizes"
    dp = config.data_parallel_size
    note = None
    if dp is None:
        args = launch.non_default_args[0] if launch.non_default_args else None
        if args is None:
            return (
                f"the engine-init line (line {config.line}) does not print "
                "data_parallel_size and the launch has no non-default args line"
            )
        if args.data_parallel_size is not None:
            dp = args.data_parallel_size
            note = f"data_parallel_size from the non-default args (line {args.line})"
        else:
            dp = 1
            note = (
                f"data_parallel_size absent from the non-default args (line {args.line}): "
                "the default, 1"
            )
    pcp = config.prefill_context_parallel_size or 1
    too_large = beyond_bounds(tp, pp, pcp, dp, f"the engine-init line (line {config.line})")
    if too_large is not None:
        return too_large
    return _mint_resolved(
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        data_parallel_size=dp,
        prefill_context_parallel_size=pcp,
        source=log_source(launch, config.line, config.process),
        data_parallel_note=note,
    )


def beyond_bounds(tp: int, pp: int, pcp: int, dp: int, where: str) -> str | None:
    """Why sizes that multiply past :data:`MAX_WORLD_SIZE` ranks are not resolved.

    The expected ranks are derived from these sizes; a world larger than any deployment
    is refused here, before anything is built from it.
    """
    world = tp * pp * pcp * dp
    if world <= MAX_WORLD_SIZE:
        return None
    return (
        f"{where} gives TP×PP×PCP×DP = {world:,} ranks, more than any deployment this "
        f"package reads (at most {MAX_WORLD_SIZE:,})"
    )


def resolve_from_http(evidence: Evidence) -> ResolvedParallel | str | None:
    """Stage 1 from a parsed ``/server_info``; a reason string when incomplete."""
    info = evidence.server_info()
    if info is None:
        return None
    observed, source = info
    p = observed.parallel
    if p.tensor_parallel_size is None or p.pipeline_parallel_size is None:
        return f"{source} does not carry TP and PP sizes"
    if p.data_parallel_size is None:
        return f"{source} does not carry data_parallel_size (the text form before 0.10.2)"
    pcp = p.prefill_context_parallel_size or 1
    too_large = beyond_bounds(
        p.tensor_parallel_size, p.pipeline_parallel_size, pcp, p.data_parallel_size, str(source)
    )
    if too_large is not None:
        return too_large
    return _mint_resolved(
        tensor_parallel_size=p.tensor_parallel_size,
        pipeline_parallel_size=p.pipeline_parallel_size,
        data_parallel_size=p.data_parallel_size,
        prefill_context_parallel_size=pcp,
        source=source,
        data_parallel_note=None,
    )


def layout_sizes(c: ResolvedParallel) -> tuple[int, int, int, int]:
    return (
        c.tensor_parallel_size,
        c.pipeline_parallel_size,
        c.data_parallel_size,
        c.prefill_context_parallel_size,
    )
