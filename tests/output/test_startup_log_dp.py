"""The ``log`` text report of a launch whose engines ran alone (independent DP engines)."""

from __future__ import annotations

from tests._evidence import args, banner, engine_init, log, rank_line
from vllm_evidence._output.startup_log import render_startup_log

_DP = "(EngineCore_DP{i} pid=20{i}) INFO 11-30 06:01:00 [core.py:100] "


def _engine(i: int) -> str:
    line = engine_init("0.29.0", tp=1, dp=1)
    return line.replace("(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] ", _DP.format(i=i))


def test_the_report_gives_the_launchs_dp_and_global_ranks() -> None:
    text = banner("0.29.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    text += _engine(0) + _engine(1)
    text += rank_line(0, 1, tag="EngineCore_DP0 pid=200") + rank_line(
        0, 1, tag="EngineCore_DP1 pid=201"
    )
    report = render_startup_log(log(text))
    assert "  parallel:           TP=1 PP=1 DP=1 (line 3)\n" in report  # as printed
    assert "  resolved sizes:     TP=1 PP=1 DP=2 (the engine-init line prints" in report
    assert "  global ranks:       0, 1\n" in report


def test_a_single_engine_adds_no_resolved_line() -> None:
    text = banner("0.29.0") + _engine(0) + rank_line(0, 1, tag="EngineCore_DP0 pid=200")
    report = render_startup_log(log(text))
    assert "resolved sizes" not in report
    assert "global ranks" not in report


def test_a_disagreement_is_reported_not_resolved() -> None:
    text = banner("0.29.0") + args("{'model': '/models/m'}") + _engine(0) + _engine(1)
    report = render_startup_log(log(text))
    assert "  resolved sizes:     not established: the non-default args (line 2) give " in report


def _saved(pid: int, dp_index: int) -> str:
    return (
        f"(Worker pid={pid}) INFO 12-01 07:12:34 [decorators.py:719] saved AOT compiled "
        f"function to /c/torch_aot_compile/5c6d/rank_0_{dp_index}/model\n"
    )


def _bare(*cache: str) -> str:
    text = banner("0.29.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    text += _engine(0) + _engine(1)
    text += rank_line(0, 1, tag="Worker pid=400") + rank_line(0, 1, tag="Worker pid=401")
    return text + "".join(cache)


def test_the_report_names_the_compile_cache_line_that_gave_each_engine() -> None:
    report = render_startup_log(log(_bare(_saved(401, 0), _saved(400, 1))))
    assert (
        "  global ranks:       0 (DP engine from compile-cache line 7), "
        "1 (DP engine from compile-cache line 8)\n"
    ) in report


def test_the_report_names_a_process_that_stated_two_engines() -> None:
    report = render_startup_log(log(_bare(_saved(401, 0), _saved(400, 1), _saved(400, 0))))
    assert (
        "  global ranks:       0 (DP engine from compile-cache line 7); 1 worker line(s) in "
        "one engine's own world name no DP engine (not mapped); process (Worker pid=400) "
        "states rank_0_1 (line 8, aot_saved) and rank_0_0 (line 9, aot_saved) in its "
        "compile-cache lines\n"
    ) in report
