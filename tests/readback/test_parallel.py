"""A launch's resolved sizes and global ranks, derived once (:func:`launch_parallel`) for
the ``log`` text and its JSON: what the text says, the JSON says.

Expected figures and sentences are written out by hand: from the DP=2 ``--enforce-eager``
recording's ``NOTES.md`` and log (two engines, one worker each, both printing
``world_size=1 rank=0`` under a bare ``(Worker pid=N)`` tag, lines 54 and 57, and no
compile-cache line, since nothing compiles), and from the hand-written logs below.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tests._evidence import args, banner, engine_init, log, rank_line
from vllm_evidence._adapters.startup_log import Launch, StartupLog, read_startup_log
from vllm_evidence._output.startup_log import render_startup_log, startup_log_document
from vllm_evidence._readback.parallel import RankAttribution, engine_local_rank, launch_parallel

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
LOGS = sorted(REAL.rglob("startup.log"))
EAGER = REAL / "vllm-0.32.0-cpu" / "dp2-eager" / "startup.log"

_DP = "(EngineCore_DP{i} pid=20{i}) INFO 11-30 06:01:00 [core.py:100] "
_NOT_MAPPED = "worker line(s) in one engine's own world name no DP engine (not mapped)"


def _read(path: Path) -> StartupLog:
    read = read_startup_log(path)
    assert isinstance(read, StartupLog), read
    return read


def _ranks_line(text: str) -> str:
    found = re.search(r"\n  global ranks:       ([^\n]*)", text)
    assert found is not None, text
    return found.group(1)


def _head(path: Path, lines: int) -> StartupLog:
    """The first ``lines`` lines of a log, as a paste cut there would give them."""
    kept = b"".join(path.read_bytes().splitlines(keepends=True)[:lines])
    read = read_startup_log(io.BytesIO(kept))
    assert isinstance(read, StartupLog), read
    return read


def test_the_eager_dp2_launch_maps_each_worker_by_its_engines_force_killed_tree() -> None:
    """Issue 33: lines 213-223, the API server force-kills EngineCore_DP0 pid 19267 and then
    'sub process VLLM::Worker pid 19927' (line 221), EngineCore_DP1 pid 19268 and then pid
    19921 (line 223).  Ranks 0 and 1, each at its worker's last rank line (the assignment
    lines 59 and 58), and the JSON says the same."""
    startup_log = _read(EAGER)
    (launch,) = startup_log.launches
    resolved = launch_parallel(launch)
    assert resolved.configuration is not None
    assert resolved.configuration.data_parallel_size == 2
    got = [
        (g.rank, g.line, g.pid, g.attribution, g.engine_line, g.tree_line) for g in resolved.ranks
    ]
    assert got == [
        (0, 59, 19927, RankAttribution.SHUTDOWN_KILL, None, 221),
        (1, 58, 19921, RankAttribution.SHUTDOWN_KILL, None, 223),
    ]
    assert (resolved.unmapped_lines, resolved.unmapped_tags, resolved.unmapped_why) == ((), (), ())
    (document,) = startup_log_document(startup_log)["launches"]
    ranks = document["resolved_parallel"]["global_ranks"]
    assert [(r["rank"], r["pid"]) for r in ranks] == [(0, 19927), (1, 19921)]
    assert document["resolved_parallel"]["unmapped_why"] == []
    assert [r["how"] for r in ranks] == [
        "DP engine from the shutdown's force-kill line 221",
        "DP engine from the shutdown's force-kill line 223",
    ]
    assert _ranks_line(render_startup_log(startup_log)) == (
        "0 (DP engine from the shutdown's force-kill line 221), "
        "1 (DP engine from the shutdown's force-kill line 223)"
    )


def test_the_eager_dp2_launch_cut_before_its_shutdown_says_why_nothing_is_mapped() -> None:
    """The same log up to its route table (line 167): nothing names a worker's engine yet;
    the text and the JSON give the same reason."""
    startup_log = _head(EAGER, 167)
    (launch,) = startup_log.launches
    resolved = launch_parallel(launch)
    assert resolved.configuration is not None
    assert resolved.configuration.data_parallel_size == 2
    assert resolved.ranks == ()
    assert resolved.unmapped_lines == (54, 57, 58, 59)
    why = [f"4 {_NOT_MAPPED}"]
    assert list(resolved.unmapped_why) == why
    (document,) = startup_log_document(startup_log)["launches"]
    assert document["resolved_parallel"]["unmapped_rank_lines"] == [54, 57, 58, 59]
    assert document["resolved_parallel"]["unmapped_why"] == why
    assert _ranks_line(render_startup_log(startup_log)) == f"none; 4 {_NOT_MAPPED}"


@pytest.mark.parametrize("path", LOGS, ids=[str(p.relative_to(REAL)) for p in LOGS])
def test_every_reason_the_text_gives_for_unmapped_lines_is_in_the_json(path: Path) -> None:
    """Both ways: a launch with unmapped rank lines says why in the JSON, each reason as
    the text prints it after the mapped ranks; a launch without says nothing in either."""
    startup_log = _read(path)
    text = render_startup_log(startup_log)
    blocks = text.split("\nlaunch ")[1:]
    documents = startup_log_document(startup_log)["launches"]
    for block, document in zip(blocks, documents, strict=True):
        resolved = document["resolved_parallel"]
        if not resolved["unmapped_rank_lines"]:
            assert resolved["unmapped_why"] == []
            assert "not mapped" not in block
            continue
        assert resolved["unmapped_why"], document["index"]
        shown = _ranks_line("\n" + block).split("; ", 1)[1]
        assert shown == "; ".join(resolved["unmapped_why"])


def _independent(version: str, *lines: str) -> Launch:
    """Two DP engines of a dense model (each engine-init line prints DP=1) whose workers
    print rank lines under bare ``(Worker pid=N)`` tags."""
    text = banner(version) + args("{'model': '/models/m', 'data_parallel_size': 2}")
    for i in (0, 1):
        init = engine_init(version, tp=1, dp=1)
        text += init.replace(
            "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] ", _DP.format(i=i)
        )
    text += rank_line(0, 1, tag="Worker pid=400") + rank_line(0, 1, tag="Worker pid=401")
    (launch,) = log(text + "".join(lines)).launches
    return launch


def _saved(pid: int, dp_index: int) -> str:
    return (
        f"(Worker pid={pid}) INFO 12-01 07:12:34 [decorators.py:719] saved AOT compiled "
        f"function to /c/torch_aot_compile/5c6d/rank_0_{dp_index}/model\n"
    )


def test_each_workers_own_compile_cache_line_maps_it_and_leaves_nothing_unmapped() -> None:
    resolved = launch_parallel(_independent("0.29.0", _saved(401, 0), _saved(400, 1)))
    # Worker 401 (line 6) is engine 0's, worker 400 (line 5) engine 1's: ranks 0 and 1.
    assert [(g.rank, g.line, g.pid, g.engine_line) for g in resolved.ranks] == [
        (0, 6, 401, 7),
        (1, 5, 400, 8),
    ]
    assert (resolved.unmapped_lines, resolved.unmapped_why) == ((), ())


def test_a_process_that_states_two_engines_is_unmapped_and_says_so() -> None:
    launch = _independent("0.29.0", _saved(401, 0), _saved(400, 1), _saved(400, 0))
    resolved = launch_parallel(launch)
    assert [g.rank for g in resolved.ranks] == [0]
    assert resolved.unmapped_lines == (5,)
    assert resolved.unmapped_why == (
        f"1 {_NOT_MAPPED}",
        (
            "process (Worker pid=400) states rank_0_1 (line 8, aot_saved) and rank_0_0 "
            "(line 9, aot_saved) in its compile-cache lines"
        ),
    )


def test_a_release_whose_cache_lines_name_no_engine_says_they_are_not_read() -> None:
    resolved = launch_parallel(_independent("0.33.0", _saved(401, 0), _saved(400, 1)))
    assert resolved.ranks == ()
    assert resolved.unmapped_lines == (5, 6)
    assert resolved.unmapped_why == (
        f"2 {_NOT_MAPPED}",
        (
            "vLLM 0.33.0's compile-cache lines are read only for 0.20.0 .. 0.32.0 (where their "
            "rank_R_D names the DP engine)"
        ),
    )


def test_a_launch_that_does_not_resolve_says_why_and_maps_nothing() -> None:
    disagreeing = banner("0.29.0") + args("{'model': '/models/m'}")
    for i in (0, 1):
        init = engine_init("0.29.0", tp=1, dp=1)
        disagreeing += init.replace(
            "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] ", _DP.format(i=i)
        )
    (launch,) = log(disagreeing).launches
    resolved = launch_parallel(launch)
    assert resolved.configuration is None
    assert resolved.note == (
        "the non-default args (line 2) give data_parallel_size 1, but the log has lines "
        "from DP engines [0, 1]"
    )
    (bare,) = log(banner("0.29.0")).launches
    nothing = launch_parallel(bare)
    assert (nothing.configuration, nothing.note, nothing.ranks) == (None, "no engine-init line", ())


# --- the shutdown's force kill of an engine core's process tree (vLLM 0.32.0) ----------

_KILLER = "(APIServer pid=100) WARNING 12-02 14:55:28 "


def _root(name: str, pid: int, killer: str = _KILLER) -> str:
    return (
        f"{killer}[utils.py:653] [shutdown] Process manager: force killing remaining "
        f"process {name} pid {pid}\n"
    )


def _child(pid: int, killer: str = _KILLER, name: str = "VLLM::Worker") -> str:
    return f"{killer}[system_utils.py:225] [shutdown] force killing sub process {name} pid {pid}\n"


def _count(n: int) -> str:
    return (
        f"{_KILLER}[utils.py:648] [shutdown] Process manager: force killing remaining "
        f"processes count={n}\n"
    )


# _independent's engines are EngineCore_DP0 pid=200 and EngineCore_DP1 pid=201; its
# workers 400 (line 5) and 401 (line 6) print 'rank 0 in world 1'; kill lines from line 7.
_TREES = _count(2) + _root("EngineCore_DP0", 200) + _child(401) + _root("EngineCore_DP1", 201)
_TREES += _child(400)


def _mapped(launch: Launch) -> list[tuple[int, int | None, int | None]]:
    return [(g.rank, g.pid, g.tree_line) for g in launch_parallel(launch).ranks]


def test_each_worker_is_its_force_killed_engines() -> None:
    resolved = launch_parallel(_independent("0.32.0", _TREES))
    assert [(g.rank, g.pid, g.tree_line, g.attribution) for g in resolved.ranks] == [
        (0, 401, 9, RankAttribution.SHUTDOWN_KILL),
        (1, 400, 11, RankAttribution.SHUTDOWN_KILL),
    ]
    assert resolved.unmapped_why == ()


def test_a_release_whose_shutdown_does_not_name_the_descendants_is_not_read() -> None:
    # 0.31.0 kills the same tree without the sub-process line: such lines are not its.
    resolved = launch_parallel(_independent("0.31.0", _TREES))
    assert resolved.ranks == ()
    assert resolved.unmapped_why == (
        f"2 {_NOT_MAPPED}",
        (
            "vLLM 0.31.0's force-kill lines are read only for 0.32.0 (where they list each "
            "engine core's descendants)"
        ),
    )


def test_a_pid_killed_under_two_engines_is_not_mapped_and_says_so() -> None:
    trees = _root("EngineCore_DP0", 200) + _child(401) + _root("EngineCore_DP1", 201)
    trees += _child(401) + _child(400)
    resolved = launch_parallel(_independent("0.32.0", trees))
    assert [(g.rank, g.pid) for g in resolved.ranks] == [(1, 400)]
    assert resolved.unmapped_lines == (6,)
    assert resolved.unmapped_why == (
        f"1 {_NOT_MAPPED}",
        (
            "pid 401 is force-killed as a descendant of DP engine 0 (line 8) and of DP "
            "engine 1 (line 10)"
        ),
    )


def test_a_root_tagged_as_another_engine_maps_none_of_its_descendants() -> None:
    # pid 201 prints its own lines as EngineCore_DP1; a kill line calling it DP0 is not
    # taken for either.
    trees = _root("EngineCore_DP0", 201) + _child(401) + _root("EngineCore_DP1", 200)
    trees += _child(400)
    resolved = launch_parallel(_independent("0.32.0", trees))
    assert resolved.ranks == ()
    assert resolved.unmapped_why == (
        f"2 {_NOT_MAPPED}",
        (
            "line 7 (APIServer pid=100) force-kills EngineCore_DP0 pid 201, whose own lines "
            "are tagged as DP engine(s) [1]"
        ),
        (
            "line 9 (APIServer pid=100) force-kills EngineCore_DP1 pid 200, whose own lines "
            "are tagged as DP engine(s) [0]"
        ),
    )


def test_the_tree_and_the_compile_cache_naming_two_engines_map_nothing() -> None:
    saved = (
        "(Worker pid=401) INFO 12-01 07:12:34 [decorators.py:719] saved AOT compiled "
        "function to /c/torch_aot_compile/5c6d/rank_0_1/model\n"
    )
    resolved = launch_parallel(_independent("0.32.0", saved + _TREES))
    assert [(g.rank, g.pid) for g in resolved.ranks] == [(1, 400)]
    assert resolved.unmapped_why == (
        f"1 {_NOT_MAPPED}",
        (
            "process (Worker pid=401): its compile-cache line 7 names DP engine 1, the "
            "force-kill line 10 names DP engine 0"
        ),
    )
    # Agreeing, both are kept: the cache line, and the tree line.
    agreeing = saved.replace("rank_0_1", "rank_0_0")
    both = launch_parallel(_independent("0.32.0", agreeing + _TREES))
    assert [(g.rank, g.pid, g.engine_line, g.tree_line) for g in both.ranks] == [
        (0, 401, 7, 10),
        (1, 400, None, 12),
    ]


def test_only_the_descendant_lines_right_after_a_root_are_its() -> None:
    other = "(APIServer pid=101) WARNING 12-02 14:55:28 "
    interrupted = (
        _root("EngineCore_DP0", 200)
        + f"{_KILLER}[launcher.py:254] [shutdown] API server: shutdown triggered\n"
        + _child(401)
    )
    for trees in (
        _root("EngineCore_DP0", 200, killer=other) + _child(401),  # another process's root
        _root("EngineCore_DP0", 200) + _child(401, killer=other),  # another's descendant
        _root("EngineCore_DP0", 200) + _count(1) + _child(401),  # a new kill began
        interrupted,  # another line of the killing process came between
        _child(401) + _root("EngineCore_DP0", 200),  # a descendant before any root
        _root("EngineCore_DP0", 200).replace(_KILLER, "") + _child(401).replace(_KILLER, ""),
    ):
        assert _mapped(_independent("0.32.0", trees)) == [], trees
    assert _mapped(_independent("0.32.0", _root("EngineCore_DP0", 200) + _child(401))) == [
        (0, 401, 8)
    ]


def test_a_ray_workers_pid_is_not_looked_up_in_this_machines_tree() -> None:
    text = banner("0.32.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    for i in (0, 1):
        init = engine_init("0.32.0", tp=1, dp=1)
        text += init.replace(
            "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] ", _DP.format(i=i)
        )
    text += rank_line(0, 1, tag="RayWorkerWrapper pid=400, ip=10.0.0.2")
    text += rank_line(0, 1, tag="Worker pid=401")
    text += _root("EngineCore_DP0", 200) + _child(400) + _root("EngineCore_DP1", 201)
    text += _child(401)
    (launch,) = log(text).launches
    assert _mapped(launch) == [(1, 401, 10)]


# --- workers seen only by their tag ---------------------------------------------------


def _memory(tag: str) -> str:
    return f"({tag}) INFO 11-30 04:11:20 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB\n"


def test_worker_tags_with_no_engine_init_line_are_seen_not_mapped_in_the_json_too() -> None:
    """Issue 33: a fragment with (Worker_TP0 pid=…) and (Worker_TP1 pid=…) lines and no
    engine-init line said nothing of the tags; their name gives each worker's TP rank in
    its engine, not a global rank (independent DP engines print the same names)."""
    startup_log = log(
        banner("0.32.0") + _memory("Worker_TP0 pid=300") + _memory("Worker_TP1 pid=301")
    )
    (launch,) = startup_log.launches
    resolved = launch_parallel(launch)
    assert (resolved.configuration, resolved.ranks) == (None, ())
    assert [(t.text, line) for t, line in resolved.unmapped_tags] == [
        ("Worker_TP0 pid=300", 2),
        ("Worker_TP1 pid=301", 3),
    ]
    why = (
        "2 worker tag(s) with no rank line seen, not mapped: Worker_TP0 pid=300 (line 2: in "
        "its engine TP rank 0); Worker_TP1 pid=301 (line 3: in its engine TP rank 1): the "
        "launch's sizes are not resolved (no engine-init line), and no line under a bare "
        "EngineCore tag (0.20 on) says one engine: independent DP engines' workers have the "
        "same names"
    )
    assert resolved.unmapped_why == (why,)
    (document,) = startup_log_document(startup_log)["launches"]
    assert document["resolved_parallel"]["unmapped_why"] == [why]


def test_worker_tags_under_the_resolved_sizes_are_global_ranks() -> None:
    text = banner("0.32.0") + engine_init("0.32.0", tp=2)
    resolved = launch_parallel(
        log(text + _memory("Worker_TP1 pid=301") + _memory("VllmWorker-0 pid=300")).launches[0]
    )
    assert [(g.rank, g.line, g.pid, g.attribution) for g in resolved.ranks] == [
        (0, 4, 300, RankAttribution.WORKER_TAG),
        (1, 3, 301, RankAttribution.WORKER_TAG),
    ]
    assert (resolved.unmapped_tags, resolved.unmapped_why) == ((), ())
    # Under PP=2 the same names leave the stage out: seen, not mapped, and why.
    pp2 = launch_parallel(
        log(
            banner("0.32.0") + engine_init("0.32.0", tp=2, pp=2) + _memory("Worker_TP1 pid=301")
        ).launches[0]
    )
    assert pp2.ranks == ()
    assert pp2.unmapped_why == (
        (
            "1 worker tag(s) with no rank line seen, not mapped: Worker_TP1 pid=301 (line 3: "
            "in its engine TP rank 1): their names give no global rank under TP=2 PP=2 DP=1"
        ),
    )


def test_a_worker_tag_of_an_independent_engine_needs_its_engine_named() -> None:
    """Independent DP=2 engines of TP=2: each engine's workers are Worker_TP0 and
    Worker_TP1 (its DP group has one rank, so no _DP); the force-kill lines name whose."""
    text = banner("0.32.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    for i in (0, 1):
        init = engine_init("0.32.0", tp=2, dp=1)
        text += init.replace(
            "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] ", _DP.format(i=i)
        )
    text += _memory("Worker_TP1 pid=401") + _memory("Worker_TP1 pid=403")
    alone = launch_parallel(log(text).launches[0])
    assert alone.ranks == ()
    assert [t.text for t, _ in alone.unmapped_tags] == ["Worker_TP1 pid=401", "Worker_TP1 pid=403"]
    text += _root("EngineCore_DP0", 200) + _child(401) + _root("EngineCore_DP1", 201)
    text += _child(403)
    killed = launch_parallel(log(text).launches[0])
    assert [(g.rank, g.pid, g.tree_line) for g in killed.ranks] == [(1, 401, 8), (3, 403, 10)]
    assert killed.unmapped_tags == ()


# Every worker-tag form the releases print (_adapters/startup_log/_workers.py), on a memory
# line of a worker with no rank line: (tag, release, TP, PP, DP, the global rank its name
# gives under those sizes, or None).  Expected ranks by hand from vLLM's layout: TP
# fastest, then PP, then DP.
FORMS: list[tuple[str, str, int, int, int, int | None]] = [
    ("VllmWorkerProcess pid=7", "0.8.5", 2, 1, 1, None),  # V0's: its name says no rank
    ("VllmWorker rank=1 pid=7", "0.8.5", 2, 1, 1, 1),  # V1 0.8.5/0.9.2: engine-local rank
    ("VllmWorker TP1 pid=7", "0.10.1.1", 2, 1, 1, 1),
    ("VllmWorker-1 pid=7", "0.32.0", 2, 1, 1, 1),  # the process's name (0.31, 0.32)
    ("Worker pid=7", "0.32.0", 1, 1, 1, 0),  # every group of one rank
    ("Worker_TP1 pid=7", "0.32.0", 2, 1, 1, 1),
    ("Worker_PP1 pid=7", "0.29.0", 1, 2, 1, 1),
    ("Worker_PP1_TP1 pid=7", "0.32.0", 2, 2, 1, 3),
    ("Worker_TP1_EP1 pid=7", "0.32.0", 2, 1, 1, 1),
    ("Worker_TP0_EP0 pid=7", "0.32.0", 2, 1, 1, 0),
    ("Worker_DP1_TP0 pid=7", "0.32.0", 2, 1, 2, 2),  # a DP group of two: DP-wide names
    ("Worker_TP1 pid=7", "0.32.0", 2, 2, 1, None),  # PP=2: the stage is not named
    ("VllmWorker rank=1 pid=7", "0.9.2", 2, 1, 2, None),  # DP=2: the engine is not named
]


@pytest.mark.parametrize(("tag", "version", "tp", "pp", "dp", "rank"), FORMS)
def test_each_worker_tag_form_maps_where_its_name_and_the_sizes_say_and_not_elsewhere(
    tag: str, version: str, tp: int, pp: int, dp: int, rank: int | None
) -> None:
    text = banner(version) + engine_init(version, tp=tp, pp=pp, dp=dp) + _memory(tag)
    resolved = launch_parallel(log(text).launches[0])
    assert resolved.configuration is not None
    if rank is None:
        assert resolved.ranks == ()
        assert [t.text for t, _ in resolved.unmapped_tags] == [tag]
        assert resolved.unmapped_why
    else:
        assert [(g.rank, g.pid, g.attribution) for g in resolved.ranks] == [
            (rank, 7, RankAttribution.WORKER_TAG)
        ]
        assert resolved.unmapped_tags == ()
    # Cut before its engine-init line, the same tag is seen and not mapped, whatever it says.
    (cut,) = log(banner(version) + _memory(tag)).launches
    fragment = launch_parallel(cut)
    assert (fragment.configuration, fragment.ranks) == (None, ())
    assert [t.text for t, _ in fragment.unmapped_tags] == [tag]


def test_a_ray_worker_is_no_worker_tag_to_map_or_report() -> None:
    # RayWorkerWrapper names no rank: its rank lines carry the global rank, its tag nothing.
    ray = "RayWorkerWrapper pid=7, ip=10.0.0.1"
    resolved = launch_parallel(
        log(banner("0.10.1.1") + engine_init("0.10.1.1") + _memory(ray)).launches[0]
    )
    assert (resolved.ranks, resolved.unmapped_tags, resolved.unmapped_why) == ((), (), ())
    with_ranks = log(
        banner("0.10.1.1")
        + engine_init("0.10.1.1")
        + rank_line(0, 2, tag="RayWorkerWrapper pid=7, ip=10.0.0.1")
        + rank_line(1, 2, tag="RayWorkerWrapper pid=8, ip=10.0.0.2")
    )
    assert [(g.rank, g.attribution) for g in launch_parallel(with_ranks.launches[0]).ranks] == [
        (0, RankAttribution.DP_WIDE_WORLD),
        (1, RankAttribution.DP_WIDE_WORLD),
    ]


def test_rank_lines_with_no_engine_init_line_are_seen_not_mapped_and_with_one_mapped() -> None:
    # A paste from a TP=2 launch's worker lines on: 'world_size=2 rank=1' is rank 1 of a
    # world of two, but whether that world is the DP-wide one is the engine-init line's.
    workers = rank_line(0, 2) + rank_line(1, 2)
    (cut,) = log(banner("0.32.0") + workers).launches
    fragment = launch_parallel(cut)
    assert (fragment.configuration, fragment.ranks, fragment.unmapped_tags) == (None, (), ())
    assert fragment.unmapped_why == (
        (
            "2 worker rank line(s) seen, not mapped: the launch's sizes are not resolved "
            "(no engine-init line)"
        ),
    )
    (whole,) = log(banner("0.32.0") + engine_init("0.32.0", tp=2) + workers).launches
    assert [(g.rank, g.attribution) for g in launch_parallel(whole).ranks] == [
        (0, RankAttribution.DP_WIDE_WORLD),
        (1, RankAttribution.DP_WIDE_WORLD),
    ]
    assert launch_parallel(whole).unmapped_why == ()


def _loading(tag: str) -> str:
    """A worker line no observation takes: only its tag says the worker was there."""
    return f"({tag}) INFO 11-30 04:11:20 [gpu_model_runner.py:2600] Model loading took 3.1 GiB\n"


def _engine_capacity(tag: str) -> str:
    return f"({tag}) INFO 11-30 04:11:30 [kv_cache_utils.py:1087] GPU KV cache size: 9,000 tokens\n"


def _tags_and_ranks(text: str) -> tuple[list[tuple[int, int | None, str]], list[str]]:
    (launch,) = log(text).launches
    resolved = launch_parallel(launch)
    return (
        [(g.rank, g.pid, g.attribution.value) for g in resolved.ranks],
        [tag.text for tag, _ in resolved.unmapped_tags],
    )


def test_a_worker_tag_on_any_line_is_seen_and_in_the_json() -> None:
    """Issue 33: a paste of worker lines no rule reads still shows its workers."""
    startup_log = log(_loading("Worker_TP0 pid=300") + _loading("Worker_TP1 pid=301"))
    (launch,) = startup_log.launches
    assert [(t.text, line) for t, line in launch.worker_tags] == [
        ("Worker_TP0 pid=300", 1),
        ("Worker_TP1 pid=301", 2),
    ]
    (document,) = startup_log_document(startup_log)["launches"]
    assert document["resolved_parallel"]["global_ranks"] == []
    assert document["resolved_parallel"]["unmapped_worker_tags"] == [
        {
            "tag": "Worker_TP0 pid=300",
            "pid": 300,
            "line": 1,
            "groups": {"TP": 0},
            "engine_local_rank": 0,
        },
        {
            "tag": "Worker_TP1 pid=301",
            "pid": 301,
            "line": 2,
            "groups": {"TP": 1},
            "engine_local_rank": 1,
        },
    ]
    # The executor is not read from such lines: they name no executor.
    assert launch.executor_observations == ()


def test_a_worker_whose_name_says_nothing_or_a_pasted_tag_is_not_kept() -> None:
    text = _loading("VllmWorkerProcess pid=5") + "`" + _loading("Worker_TP1 pid=6").strip() + "`\n"
    (launch,) = log(text).launches
    assert launch.worker_tags == ()


def test_tags_alone_are_global_ranks_beside_a_bare_engine_core_tag_only() -> None:
    workers = _loading("Worker_TP0 pid=300") + _loading("Worker_TP1 pid=301")
    one_engine = workers + _engine_capacity("EngineCore pid=200")
    assert _tags_and_ranks(one_engine) == (
        [(0, 300, "worker_tag_alone"), (1, 301, "worker_tag_alone")],
        [],
    )
    # EngineCore_DP0: the name of one of several engines (or of any engine before 0.20):
    # independent engines' workers have the same names, so no global rank is read.
    several = workers + _engine_capacity("EngineCore_DP0 pid=200")
    assert _tags_and_ranks(several) == ([], ["Worker_TP0 pid=300", "Worker_TP1 pid=301"])
    assert _tags_and_ranks(workers) == ([], ["Worker_TP0 pid=300", "Worker_TP1 pid=301"])


def test_a_name_with_two_world_groups_or_names_that_disagree_give_no_rank_alone() -> None:
    engine = _engine_capacity("EngineCore pid=200")
    two = _loading("Worker_PP1_TP0 pid=300") + engine
    assert _tags_and_ranks(two) == ([], ["Worker_PP1_TP0 pid=300"])
    # One name says PP has several ranks, the other that it has one: no world is said.
    disagree = _loading("Worker_TP1 pid=301") + _loading("Worker_PP1 pid=302") + engine
    assert _tags_and_ranks(disagree) == ([], ["Worker_TP1 pid=301", "Worker_PP1 pid=302"])
    # A name beside DCP/EP still names one world group.
    assert _tags_and_ranks(_loading("Worker_TP1_EP1 pid=303") + engine) == (
        [(1, 303, "worker_tag_alone")],
        [],
    )


def test_the_text_prints_the_ranks_tags_alone_give_and_those_they_do_not() -> None:
    one = render_startup_log(
        log(_loading("Worker_TP1 pid=301") + _engine_capacity("EngineCore pid=200"))
    )
    assert "  global ranks:       1 (from its tag and the bare EngineCore tag" in one
    none = render_startup_log(log(_loading("Worker_TP1 pid=301")))
    assert "  global ranks:       none; 1 worker tag(s) with no rank line seen, not mapped" in none


def _v0_rank(tag: str | None, rank: int, world: int) -> str:
    head = f"({tag}) " if tag else ""
    return (
        f"{head}DEBUG 07-22 07:59:47 parallel_state.py:803] world_size={world} rank={rank} "
        f"local_rank={rank} distributed_init_method=tcp://127.0.0.1:1 backend=nccl\n"
    )


def test_a_v0_fragments_rank_lines_are_global_ranks_without_an_engine_init_line() -> None:
    """Issue 33: V0 (its workers tagged VllmWorkerProcess) has one engine, so a rank line
    of its world names the global rank even where the paste has no engine-init line."""
    text = _v0_rank(None, 0, 2) + _v0_rank("VllmWorkerProcess pid=51", 1, 2)
    (launch,) = log(text).launches
    resolved = launch_parallel(launch)
    assert resolved.configuration is None
    assert [(g.rank, g.pid, g.attribution) for g in resolved.ranks] == [
        (0, None, RankAttribution.DP_WIDE_WORLD),
        (1, 51, RankAttribution.DP_WIDE_WORLD),
    ]
    assert resolved.unmapped_why == ()


def test_rank_lines_with_nothing_that_says_one_engine_stay_unmapped() -> None:
    """The other direction: V1 workers' rank lines may be in one engine's own world of
    several (independent DP engines), so without a bare EngineCore tag or a V0 worker
    they name no global rank."""
    text = _v0_rank("VllmWorker rank=0 pid=50", 0, 2) + _v0_rank("VllmWorker rank=1 pid=51", 1, 2)
    resolved = launch_parallel(log(text).launches[0])
    assert resolved.ranks == ()
    why = (
        "2 worker rank line(s) seen, not mapped: the launch's sizes are not resolved "
        "(no engine-init line)"
    )
    assert resolved.unmapped_why == (why,)
    with_engine = text + _engine_capacity("EngineCore pid=40")
    assert [g.rank for g in launch_parallel(log(with_engine).launches[0]).ranks] == [0, 1]


@pytest.mark.parametrize(
    ("tag", "local"),
    [
        ("VllmWorker rank=3 pid=1", 3),
        ("Worker_TP1 pid=1", 1),
        ("Worker_TP1_EP5 pid=1", 1),
        ("Worker_DP1_TP2 pid=1", 2),
        ("Worker_DP1 pid=1", 0),
        ("Worker_PP1 pid=1", 1),
        # Two groups inside the engine need the inner one's size; a bare Worker and an
        # unread name say nothing; a group named twice is not a name vLLM gives.
        ("Worker_PP1_TP0 pid=1", None),
        ("Worker pid=1", None),
        ("VllmWorkerProcess pid=1", None),
        ("Worker_TP1_TP0 pid=1", None),
    ],
)
def test_the_rank_a_tag_names_in_its_own_engine(tag: str, local: int | None) -> None:
    (launch,) = log(_loading(tag)).launches
    seen = [t for t, _ in launch.worker_tags if t.text == tag]
    if not seen:  # a name that says no place is not kept as a worker's tag at all
        assert local is None
        return
    assert engine_local_rank(seen[0]) == local


def test_engine_zeros_own_rank_line_is_global_and_another_engines_is_not() -> None:
    """Without sizes: rank R printed by EngineCore_DP0's own process is global rank R in
    either world (0 × width + R, or the DP-wide world's R); engine 1's needs the width."""
    zero = launch_parallel(log(_v0_rank("EngineCore_DP0 pid=469", 0, 1)).launches[0])
    assert [(g.rank, g.pid, g.attribution) for g in zero.ranks] == [
        (0, 469, RankAttribution.ENGINE_TAG)
    ]
    one = launch_parallel(log(_v0_rank("EngineCore_DP1 pid=470", 0, 1)).launches[0])
    assert one.ranks == ()
    assert one.unmapped_why[0].startswith("1 worker rank line(s) seen, not mapped")
