"""Parallel realization, the rank-mapping rules one at a time, each at its boundary.

Expected ranks are written by hand from vLLM's layout
``rank = dp × (PP×PCP×TP) + (pp × PCP + pcp) × TP + tp`` and its worker names
(``Worker_DP1_PP0_TP1``, ``VllmWorker TP1``, ``VllmWorker rank=1``); expected texts are
written out whole, as a person reads them.
"""

from __future__ import annotations

from tests._evidence import (
    args,
    assess_joined,
    banner,
    bundle,
    engine_init,
    log,
    rank_line,
    server_info_json,
    version_body,
)
from vllm_evidence._adapters.startup_log import Launch, StartupLog
from vllm_evidence._readback.parallel import (
    RankAttribution,
    ResolvedParallel,
    attribute,
    global_rank,
    independent_engines,
    resolve_from_log,
    stated_engines,
    worker_tag_rank,
    worker_tags,
)
from vllm_evidence.decisions import ParallelEstablished, ParallelReason, ParallelRefused

_MEM = "INFO 11-30 04:11:20 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB\n"
_CAP = "INFO 11-30 06:02:00 [kv_cache_utils.py:2032] GPU KV cache size: 2,097,152 tokens, "
_CAP += "Maximum concurrency for 2,048 tokens per request: 1024.00x\n"
_DP0 = "(EngineCore_DP0 pid=201) INFO 11-30 06:01:00 [core.py:100] "
_ENGINE = "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] "


def _tagged(*tags: str) -> str:
    """One worker line per tag that is not a rank line (a memory line)."""
    return "".join(f"({tag}) {_MEM}" for tag in tags)


def _refused(startup_log: StartupLog) -> ParallelRefused:
    decision = assess_joined(None, startup_log).parallel
    assert isinstance(decision, ParallelRefused), decision
    return decision


def _established(startup_log: StartupLog) -> ParallelEstablished:
    decision = assess_joined(None, startup_log).parallel
    assert isinstance(decision, ParallelEstablished), decision
    return decision


def _launch(text: str) -> Launch:
    read = log(text)
    assert len(read.launches) == 1, read.launches
    return read.launches[0]


def _resolved(launch: Launch) -> ResolvedParallel:
    resolved = resolve_from_log(launch)
    assert isinstance(resolved, ResolvedParallel), resolved
    return resolved


def _tag_ranks(
    names: tuple[str, ...],
    *,
    version: str = "0.32.0",
    tp: int = 2,
    pp: int = 1,
    dp: int = 1,
    pcp: int = 1,
) -> list[int | None]:
    """``worker_tag_rank`` of each name (as a worker's memory-line tag) under the sizes."""
    init = engine_init(version, tp=tp, pp=pp, dp=dp)
    if pcp != 1:
        init = init.replace(
            f"pipeline_parallel_size={pp}",
            f"pipeline_parallel_size={pp}, prefill_context_parallel_size={pcp}",
        )
    tagged = _tagged(*(f"{n} pid={p}" for p, n in enumerate(names, start=1)))
    launch = _launch(banner(version) + init + tagged)
    configuration = _resolved(launch)
    assert (
        configuration.tensor_parallel_size,
        configuration.pipeline_parallel_size,
        configuration.data_parallel_size,
        configuration.prefill_context_parallel_size,
    ) == (tp, pp, dp, pcp)
    tags = [o.process for o in launch.available_memory]
    assert [t.name if t is not None else None for t in tags] == list(names)
    return [worker_tag_rank(t, configuration) if t is not None else None for t in tags]


# --- worker_tag_rank: the names of vLLM 0.8.5 / 0.9.2 (VllmWorker rank=R) -------------


def test_an_old_rank_name_maps_inside_the_engine_and_not_past_it() -> None:
    # TP=2: the engine-local ranks are 0 and 1; rank=2 is past the engine's world.
    assert _tag_ranks(("VllmWorker rank=1", "VllmWorker rank=2"), version="0.9.2") == [1, None]


def test_an_old_rank_name_under_dp2_names_no_engine() -> None:
    # rank=R is local to one engine; with two engines which one is not printed.
    assert _tag_ranks(("VllmWorker rank=0",), version="0.9.2", dp=2) == [None]


# --- worker_tag_rank: the names of vLLM 0.10.1.1 (VllmWorker TP<i>) -------------------


def test_an_old_tp_name_maps_below_the_tp_size_and_not_at_it() -> None:
    assert _tag_ranks(("VllmWorker TP1", "VllmWorker TP2"), version="0.10.1.1") == [1, None]


def test_an_old_tp_name_names_no_pipeline_stage_nor_engine() -> None:
    # PP=2 or DP=2: the name leaves out the stage or the engine, so TP0 is not one rank.
    assert _tag_ranks(("VllmWorker TP0",), version="0.10.1.1", pp=2) == [None]
    assert _tag_ranks(("VllmWorker TP0",), version="0.10.1.1", dp=2) == [None]


# --- worker_tag_rank: Worker_<GROUP><i>... (v0.11 on) ----------------------------------


def test_a_group_named_twice_is_not_mapped() -> None:
    assert _tag_ranks(("Worker_TP1", "Worker_TP0_TP1")) == [1, None]


def test_a_group_index_of_six_digits_is_read_and_of_seven_is_not() -> None:
    assert _tag_ranks(("Worker_TP000001", "Worker_TP0000001")) == [1, None]


def test_dcp_and_ep_groups_are_passed_over_and_an_unknown_group_is_not() -> None:
    names = ("Worker_TP1_DCP1", "Worker_TP1_EP1", "Worker_TP1_XP1")
    assert _tag_ranks(names) == [1, 1, None]


def test_pcp_ranks_sit_between_tp_and_pp() -> None:
    # TP=2 PP=2 PCP=2: rank = (pp × 2 + pcp) × 2 + tp.
    names = (
        "Worker_PP0_PCP0_TP0",
        "Worker_PP0_PCP1_TP0",
        "Worker_PP0_PCP1_TP1",
        "Worker_PP1_PCP0_TP1",
        "Worker_PP1_PCP1_TP1",
    )
    assert _tag_ranks(names, pp=2, pcp=2) == [0, 2, 3, 5, 7]


# --- worker_tags: which processes are workers -------------------------------------------


_TP2 = banner("0.32.0") + engine_init(tp=2)


def test_a_worker_tag_without_a_rank_line_fills_the_rank_it_names() -> None:
    # Line 3 is rank 0's own rank line; line 4 is the TP1 worker's memory line.
    decision = _established(log(_TP2 + rank_line(0, 2) + _tagged("Worker_TP1 pid=301")))
    assert [(r.rank, r.pid, r.source.where) for r in decision.ranks] == [
        (0, 300, "log launch 0, line 3 (Worker_TP0 pid=300)"),
        (1, 301, "log launch 0, line 4 (Worker_TP1 pid=301)"),
    ]


def test_engine_and_ray_processes_are_not_workers_to_map() -> None:
    # An EngineCore process (a uniproc worker prints its memory line there) and Ray's
    # wrapper are no multiproc worker: rank 1 is plainly missing, no tag is "unmapped".
    for tag in ("EngineCore pid=200", "RayWorkerWrapper pid=345"):
        refused = _refused(log(_TP2 + rank_line(0, 2) + _tagged(tag)))
        assert refused.reason is ParallelReason.RANKS_MISSING, tag
        assert refused.detail == "expected ranks [1] have no worker line"


# --- _population: the reading goes on past a line it cannot use --------------------------


def test_a_rank_line_of_another_world_does_not_stop_the_reading() -> None:
    stray = rank_line(0, 4, tag="Worker_TP0 pid=299")
    decision = _established(log(_TP2 + stray + rank_line(0, 2) + rank_line(1, 2)))
    assert [(r.rank, r.pid) for r in decision.ranks] == [(0, 300), (1, 301)]


def test_unmapped_worker_tags_are_named_up_to_four() -> None:
    # TP=2 PP=2, tags naming TP only: none maps.  Four are all named; of five, the first four.
    text = banner("0.32.0") + engine_init(tp=2, pp=2)
    four = _refused(log(text + _tagged(*(f"Worker_TP0 pid={p}" for p in (1, 2, 3, 4)))))
    assert four.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert four.detail == (
        "ranks [0, 1, 2, 3] not attributed: worker tag(s) Worker_TP0 pid=1, "
        "Worker_TP0 pid=2, Worker_TP0 pid=3, Worker_TP0 pid=4 do not map to a global rank "
        "under TP=2 PP=2 DP=1"
    )
    five = _refused(log(text + _tagged(*(f"Worker_TP0 pid={p}" for p in (1, 2, 3, 4, 5)))))
    assert five.detail == four.detail


def _untagged(count: int) -> StartupLog:
    """Independent DP=2 engines (TP=1) whose ``count`` workers print bare ``(Worker pid=N)``
    rank lines, 'rank 0 in world 1', from line 4 on, and no compile-cache line."""
    text = banner("0.29.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    text += engine_init("0.29.0", tp=1, dp=1).replace(_ENGINE, _DP0)
    text += "".join(rank_line(0, 1, tag=f"Worker pid={400 + i}") for i in range(count))
    return log(text)


def test_untagged_engine_local_lines_are_named_up_to_five() -> None:
    tail = (
        "carry no DP engine tag, and neither a compile-cache line of the same process nor "
        "the shutdown's force kill of an engine's process tree names one engine, so which "
        "engine each belongs to is not printed"
    )
    five = _refused(_untagged(5))
    assert five.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert five.detail == (
        "ranks [0, 1] not attributed: the worker lines of 5 process(es) in one engine's own "
        f"world of 1 (line 4, 5, 6, 7, 8) {tail}"
    )
    six = _refused(_untagged(6))
    assert six.detail == (
        "ranks [0, 1] not attributed: the worker lines of 6 process(es) in one engine's own "
        f"world of 1 (line 4, 5, 6, 7, 8) {tail}"
    )


# --- independent DP engines: the DP size and its note ----------------------------------

_NOTE_HEAD = (
    "the engine-init line prints data_parallel_size=1 (a dense model's DP engines "
    "run independently); "
)


def _engines(*, given: int | None, engines: int) -> StartupLog:
    """A v0.29.0 launch: the non-default args (line 2, with ``data_parallel_size`` when
    ``given``), the engine-init line of DP engine 0 saying DP=1 (line 3), and one
    capacity line for each of ``engines`` engines (none: the engine-init line is untagged)."""
    fields = "'model': '/models/m'" + (
        f", 'data_parallel_size': {given}" if given is not None else ""
    )
    text = banner("0.29.0") + args("{" + fields + "}")
    init = engine_init("0.29.0", tp=1, dp=1)
    text += init.replace(_ENGINE, _DP0) if engines else init
    text += "".join(f"(EngineCore_DP{i} pid={201 + i}) {_CAP}" for i in range(engines))
    return log(text)


def _configuration(startup_log: StartupLog) -> ResolvedParallel:
    return _resolved(startup_log.launches[0])


def test_args_giving_dp1_are_no_independent_engines() -> None:
    c = _configuration(_engines(given=1, engines=1))
    assert (c.data_parallel_size, c.data_parallel_note) == (1, None)


def test_args_dp_as_large_as_an_engine_index_disagree() -> None:
    # Engines 0, 1, 2 printed lines: DP=2 cannot hold engine 2; DP=3 holds them all.
    refused = _refused(_engines(given=2, engines=3))
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert refused.detail == (
        "the non-default args (line 2) give data_parallel_size 2, but the log has lines "
        "from DP engines [0, 1, 2]"
    )
    c = _configuration(_engines(given=3, engines=3))
    assert c.data_parallel_size == 3
    assert c.data_parallel_note == (
        f"{_NOTE_HEAD}data_parallel_size 3 from the non-default args (line 2), lines from "
        "DP engines [0, 1, 2]"
    )


def test_args_dp_without_engine_tags_is_noted_without_them() -> None:
    c = _configuration(_engines(given=2, engines=0))
    assert c.data_parallel_size == 2
    assert c.data_parallel_note == (
        f"{_NOTE_HEAD}data_parallel_size 2 from the non-default args (line 2)"
    )


def test_engine_tags_alone_give_the_dp_size_with_their_note() -> None:
    text = banner("0.29.0") + engine_init("0.29.0", tp=1, dp=1).replace(_ENGINE, _DP0)
    text += "".join(f"(EngineCore_DP{i} pid={201 + i}) {_CAP}" for i in (1, 0))
    c = _configuration(log(text))
    assert c.data_parallel_size == 2
    assert c.data_parallel_note == (
        f"{_NOTE_HEAD}lines from DP engines [0, 1], and no non-default args line"
    )


def test_engine_tags_with_a_gap_give_no_dp_size() -> None:
    text = banner("0.29.0") + engine_init("0.29.0", tp=1, dp=1).replace(_ENGINE, _DP0)
    text += "".join(f"(EngineCore_DP{i} pid={201 + i}) {_CAP}" for i in (0, 2))
    refused = _refused(log(text))
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert refused.detail == (
        "lines from DP engines [0, 2]: not the engines 0..1, so the DP size is unknown"
    )


def test_independent_engines_needs_a_launch_resolved_past_dp1() -> None:
    one = _launch(banner("0.29.0") + engine_init("0.29.0", tp=2, dp=1))
    assert independent_engines(one, _resolved(one)) is False
    two = _engines(given=2, engines=2).launches[0]
    assert independent_engines(two, _resolved(two)) is True


# --- attribute / global_rank: an engine-local rank line --------------------------------


def test_an_engine_local_rank_maps_only_inside_its_engine_world() -> None:
    # Independent DP=2, TP=1: each engine's world is 1 rank; the DP-wide world is 2.
    lines = (
        rank_line(0, 1, tag="EngineCore_DP1 pid=202")  # local 0 of engine 1: rank 1
        + rank_line(1, 1, tag="EngineCore_DP0 pid=201")  # local 1 in a world of 1: none
        + rank_line(0, 3, tag="EngineCore_DP1 pid=202")  # a world of 3: neither world
        + rank_line(1, 2, tag="EngineCore_DP0 pid=201")  # the DP-wide world: rank 1
    )
    launch = log(_engine_text(tp=1) + lines).launches[0]
    c = _resolved(launch)
    assert [global_rank(o, c, independent=True) for o in launch.ranks] == [1, None, None, 1]


def test_an_engine_local_rank_is_offset_by_its_engine() -> None:
    # Independent DP=2, TP=2: rank = engine × 2 + local.
    lines = "".join(
        rank_line(local, 2, tag=f"EngineCore_DP{engine} pid={201 + engine}")
        for engine in (0, 1)
        for local in (0, 1)
    )
    launch = log(_engine_text(tp=2) + lines).launches[0]
    c = _resolved(launch)
    assert [global_rank(o, c, independent=True) for o in launch.ranks] == [0, 1, 2, 3]


def _engine_text(*, tp: int) -> str:
    text = banner("0.29.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    return text + engine_init("0.29.0", tp=tp, dp=1).replace(_ENGINE, _DP0)


# --- resolve_from_http: the world bound ------------------------------------------------


def test_server_info_sizes_past_any_deployment_are_not_resolved() -> None:
    door = bundle(version_body("0.32.0"), server_info_json(tp=256, pp=256, dp=2))
    refused = assess_joined(door, None).parallel
    assert isinstance(refused, ParallelRefused), refused
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert refused.detail == (
        "GET /server_info?config_format=json gives TP×PP×PCP×DP = 131,072 ranks, more than "
        "any deployment this package reads (at most 65,536)"
    )
    at_bound = assess_joined(bundle(version_body("0.32.0"), server_info_json(tp=256, pp=256)), None)
    assert isinstance(at_bound.parallel, ParallelRefused), at_bound.parallel
    assert at_bound.parallel.reason is ParallelReason.POPULATION_UNOBSERVED


# --- stated_engines: what a worker's compile-cache lines say ---------------------------


def _saved(tag: str, rank: int, dp_index: int) -> str:
    """A 'saved AOT compiled function to …/rank_R_D/model' line (v0.29.0), under ``tag``."""
    prefix = f"({tag}) " if tag else ""
    return (
        f"{prefix}INFO 12-01 07:12:34 [decorators.py:719] saved AOT compiled function to "
        f"/srv/vllm-cache/torch_compile_cache/torch_aot_compile/5c6d/rank_{rank}_{dp_index}/model\n"
    )


def test_compile_cache_lines_of_a_launch_without_a_version_are_not_read() -> None:
    launch = _launch(_saved("Worker pid=400", 0, 1))
    assert launch.version is None
    assert stated_engines(launch) == (
        "the launch's version is not established, so its compile-cache lines are not read"
    )


def test_an_untagged_compile_cache_line_does_not_stop_the_reading() -> None:
    # Line 2 names no process; line 3's worker still states its engine.
    launch = _launch(banner("0.29.0") + _saved("", 0, 0) + _saved("Worker pid=400", 0, 1))
    assert stated_engines(launch) == {"Worker pid=400": (0, 1, 3)}


def test_a_process_is_judged_by_its_first_two_differing_statements() -> None:
    # pid 400 says rank_0_1 twice: one statement.  pid 401 says rank_0_0, rank_0_1 and
    # rank_0_2: the first disagreement is the one named.
    cache = (
        _saved("Worker pid=400", 0, 1)
        + _saved("Worker pid=400", 0, 1)
        + _saved("Worker pid=401", 0, 0)
        + _saved("Worker pid=401", 0, 1)
        + _saved("Worker pid=401", 0, 2)
    )
    assert stated_engines(_launch(banner("0.29.0") + cache)) == {
        "Worker pid=400": (0, 1, 2),
        "Worker pid=401": (
            "process (Worker pid=401) states rank_0_0 (line 4, aot_saved) and rank_0_1 "
            "(line 5, aot_saved) in its compile-cache lines"
        ),
    }


def test_a_stated_engine_maps_below_the_dp_size_and_not_at_it() -> None:
    # Independent DP=2, TP=1: bare workers, each 'rank 0 in world 1', stating engines 1 and 2.
    lines = (
        rank_line(0, 1, tag="Worker pid=400")
        + rank_line(0, 1, tag="Worker pid=401")
        + _saved("Worker pid=400", 0, 1)
        + _saved("Worker pid=401", 0, 2)
    )
    launch = _launch(_engine_text(tp=1) + lines)
    c = _resolved(launch)
    assert c.data_parallel_size == 2
    stated = stated_engines(launch)
    found = [attribute(o, c, independent=True, stated=stated) for o in launch.ranks]
    assert [None if g is None else (g.rank, g.engine_line, g.attribution) for g in found] == [
        # engine 1, local 0: global rank 1, its engine named on line 6
        (1, 6, RankAttribution.COMPILE_CACHE),
        None,  # engine 2 of DP=2: no such engine
    ]


def test_a_non_worker_tag_does_not_stop_the_worker_tags() -> None:
    # Line 3 is the EngineCore's memory line; line 4 a worker's.
    launch = _launch(_TP2 + _tagged("EngineCore pid=200", "Worker_TP1 pid=301"))
    assert [(tag.text, line) for tag, line in worker_tags(launch)] == [("Worker_TP1 pid=301", 4)]
