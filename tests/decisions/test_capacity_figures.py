"""The engines a capacity source resolves but gives no figure for, as runs.

``missing_ranges`` is what ``engines_missing`` names when the resolved DP size is past
any real deployment: the engines ``0 .. size - 1`` without a figure, as ``"a"`` or
``"a..b"`` runs computed from the engines that have one (never by listing ``size``
engines).  Every expected run is written by hand.
"""

from __future__ import annotations

import pytest

from tests._evidence import (
    KV_DP0,
    banner,
    bundle,
    cache_config_metrics,
    engine_init,
    log,
    one_line_capacity,
    server_info_json,
    version_body,
)
from vllm_evidence import assess
from vllm_evidence._bounds import MAX_WORLD_SIZE
from vllm_evidence.decisions import CapacityReason, CapacityRefused
from vllm_evidence.decisions._capacity_figures import missing_ranges, v0_block_size


@pytest.mark.parametrize(
    ("size", "have", "runs"),
    [
        (0, set(), []),  # no engine resolved: nothing is missing
        (1, set(), ["0"]),
        (1, {0}, []),
        (2, set(), ["0..1"]),  # a run of two is a range, not two singles
        (5, set(), ["0..4"]),
        (5, {0}, ["1..4"]),  # a gap at the start
        (5, {4}, ["0..3"]),  # a gap at the end
        (5, {2}, ["0..1", "3..4"]),
        (5, {1, 3}, ["0", "2", "4"]),  # single engines between figures
        (5, {0, 1, 2, 3, 4}, []),
        (5, {0, 4}, ["1..3"]),
        (5, {3, 4}, ["0..2"]),
        (5, {0, 1}, ["2..4"]),
    ],
)
def test_missing_engines_are_runs_of_the_gaps(size: int, have: set[int], runs: list[str]) -> None:
    assert missing_ranges(size, have) == runs


def test_a_figure_past_the_resolved_size_is_not_a_gap_boundary() -> None:
    assert missing_ranges(5, {7}) == ["0..4"]
    assert missing_ranges(5, {5}) == ["0..4"]
    assert missing_ranges(5, {2, 9}) == ["0..1", "3..4"]


@pytest.mark.parametrize("label", ["-3", "+3", "\u0663", "03", "", "1" + "0" * 18])
def test_a_label_that_is_not_an_engine_index_is_no_figure_for_an_engine(label: str) -> None:
    """An ``engine`` label vLLM would not print (not ``str(index)``, or past 18 digits)
    names no engine: the adapter reads its ``engine_index`` as ``None``, so its figure is
    one for an engine the source does not resolve (a conflict), never engine 3's."""
    door = bundle(
        version_body("0.32.0"),
        server_info_json(dp=4),
        cache_config_metrics(
            *(f'engine="{i}",kv_cache_size_tokens="4096"' for i in range(4)),
            f'engine="{label}",kv_cache_size_tokens="4096"',
        ),
    )
    decision = assess(door).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.FIGURES_CONFLICT
    assert decision.detail == (
        f"the same source resolves 4 DP engine(s), but has capacity figures for engine(s) "
        f"{label} past it"
    )


def test_the_largest_engine_index_read_bounds_a_run() -> None:
    size = 10**19
    assert missing_ranges(size, {999_999_999_999_999_999}) == [
        "0..999999999999999998",
        "1000000000000000000..9999999999999999999",
    ]


def test_runs_are_computed_without_listing_every_engine() -> None:
    # A size no list of engine names could hold is answered from the two figures.
    assert missing_ranges(10**18, {0, 5}) == ["1..4", "6..999999999999999999"]


def test_engines_missing_past_the_world_bound_name_runs() -> None:
    dp = MAX_WORLD_SIZE + 1
    text = banner("0.32.0") + engine_init(tp=1, dp=dp) + one_line_capacity("4,096", KV_DP0)
    decision = assess(None, log(text)).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.ENGINES_MISSING
    # the size the source resolves, not the number of runs plus figures
    assert decision.detail == (
        "the same source resolves 65537 DP engines, but engine(s) 1..65536 have no capacity figure"
    )


def test_engines_missing_within_the_world_bound_name_each_engine() -> None:
    text = (
        banner("0.32.0")
        + engine_init(tp=1, dp=4)
        + one_line_capacity("4,096", KV_DP0)
        + one_line_capacity("4,096", "(EngineCore_DP2 pid=203) INFO 11-30 04:11:21 [kv.py:1] ")
    )
    decision = assess(None, log(text)).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.detail == (
        "the same source resolves 4 DP engines, but engine(s) 1, 3 have no capacity figure"
    )


# --- the figures a conflict names: the first eight, then a count ------------------------


def _one_engine_figures(count: int) -> CapacityRefused:
    """Engine 0 labelled ``count`` times, with 1,001 .. 1,000 + count tokens."""
    series = [f'engine="0",kv_cache_size_tokens="{1001 + i}"' for i in range(count)]
    decision = assess(bundle(version_body("0.32.0"), cache_config_metrics(*series))).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.FIGURES_CONFLICT
    return decision


def test_eight_conflicting_figures_are_all_shown() -> None:
    assert _one_engine_figures(8).detail == (
        "engine 0 has 8 different capacity figures from one source: 1,001 tokens, "
        "1,002 tokens, 1,003 tokens, 1,004 tokens, 1,005 tokens, 1,006 tokens, 1,007 tokens, "
        "1,008 tokens (GET /metrics)"
    )


def test_a_ninth_conflicting_figure_is_counted_not_shown() -> None:
    assert _one_engine_figures(9).detail == (
        "engine 0 has 9 different capacity figures from one source: 1,001 tokens, "
        "1,002 tokens, 1,003 tokens, 1,004 tokens, 1,005 tokens, 1,006 tokens, 1,007 tokens, "
        "1,008 tokens, … (1 more) (GET /metrics)"
    )


def test_an_engine_label_that_is_not_a_number_is_past_the_resolved_size() -> None:
    """``engine="x"`` is no engine of DP=1: named as a conflict, never read as a number."""
    door = bundle(
        version_body("0.32.0"),
        server_info_json(dp=1),
        cache_config_metrics(
            'engine="0",kv_cache_size_tokens="4096"', 'engine="x",kv_cache_size_tokens="4096"'
        ),
    )
    decision = assess(door).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.FIGURES_CONFLICT
    assert decision.detail == (
        "the same source resolves 1 DP engine(s), but has capacity figures for engine(s) x past it"
    )


def test_engines_missing_at_the_world_bound_are_each_named() -> None:
    """DP = 65,536 exactly is within the bound: every missing engine is listed, not a run."""
    text = (
        banner("0.32.0") + engine_init(tp=1, dp=MAX_WORLD_SIZE) + one_line_capacity("4,096", KV_DP0)
    )
    decision = assess(None, log(text)).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.ENGINES_MISSING
    each = ", ".join(str(engine) for engine in range(1, 65_536))  # 1, 2, …, 65535
    assert decision.detail == (
        f"the same source resolves 65536 DP engines, but engine(s) {each} have no capacity figure"
    )


def test_a_later_v0_block_line_is_pinned_by_its_own_concurrency_line() -> None:
    v0 = "INFO 12-27 10:00:00 gpu_executor.py:76] "
    text = (
        banner("0.8.5")
        + v0
        + "# cpu blocks: 100, # CPU blocks: 0\n"
        + v0
        + "# cpu blocks: 65536, # CPU blocks: 0\n"
        + v0
        + "Maximum concurrency for 2048 tokens per request: 512.00x\n"
    )
    launch = log(text).launches[0]
    first, second = launch.blocks
    derived = v0_block_size(launch, second)
    assert not isinstance(derived, str), derived
    size, (pair, note) = derived
    assert size.value == 16  # 65,536 × 16 / 2048 = 512
    assert pair.line == 3
    assert note == (
        "block size 16: the only integer B with 65,536 × B / 2048 printed as 512.00x on "
        "line 4 (V0 prints no block size)"
    )
    assert v0_block_size(launch, first) == (
        "no 'Maximum concurrency' line of the same process follows the block line, "
        "so nothing pins the block size either"
    )
