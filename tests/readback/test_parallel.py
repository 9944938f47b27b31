"""A launch's resolved sizes and global ranks, derived once (:func:`launch_parallel`) for
the ``log`` text and its JSON: what the text says, the JSON says.

Expected figures and sentences are written out by hand: from the DP=2 ``--enforce-eager``
recording's ``NOTES.md`` and log (two engines, one worker each, both printing
``world_size=1 rank=0`` under a bare ``(Worker pid=N)`` tag, lines 54 and 57, and no
compile-cache line, since nothing compiles), and from the hand-written logs below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._evidence import args, banner, engine_init, log, rank_line
from vllm_evidence.adapters.startup_log import Launch, StartupLog, read_startup_log
from vllm_evidence.output.startup_log import render_startup_log, startup_log_document
from vllm_evidence.readback.parallel import launch_parallel

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


def test_the_eager_dp2_launch_says_why_its_worker_lines_are_not_mapped_in_the_json_too() -> None:
    """Issue 33: the text gave a reason where the JSON's ``unmapped_why`` was empty."""
    startup_log = _read(EAGER)
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
