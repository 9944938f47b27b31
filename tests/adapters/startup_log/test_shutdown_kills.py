"""A shutdown's force kill of a process tree, as the launch assembler pairs its lines.

vLLM 0.32.0's engine manager logs ``[shutdown] Process manager: force killing remaining
process NAME pid P`` (``v1/utils.py`` L653) and then, from ``kill_process_tree(P)``, one
``[shutdown] force killing sub process NAME pid C`` per live descendant
(``utils/system_utils.py`` L225).  The expected trees are written out by hand from the
recorded logs (line numbers as ``cat -n`` shows them) and from the hand-written lines.
"""

from __future__ import annotations

from pathlib import Path

from tests._evidence import banner, log
from vllm_evidence._adapters.startup_log import Launch, StartupLog, read_startup_log

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "vllm-0.32.0-cpu"
_API = "(APIServer pid=100) WARNING 12-02 14:55:28 "


def _read(path: Path) -> Launch:
    read = read_startup_log(path)
    assert isinstance(read, StartupLog), read
    (launch,) = read.launches
    return launch


def _trees(launch: Launch) -> list[tuple[str, int, int, int | None, list[tuple[str, int, int]]]]:
    return [
        (
            k.root.name,
            k.root.pid,
            k.root.line,
            k.dp_engine,
            [(d.name, d.pid, d.line) for d in k.descendants],
        )
        for k in launch.shutdown_kills
    ]


def _root(name: str, pid: int, prefix: str = _API) -> str:
    return (
        f"{prefix}[utils.py:653] [shutdown] Process manager: force killing remaining process "
        f"{name} pid {pid}\n"
    )


def _child(pid: int, prefix: str = _API, name: str = "VLLM::Worker") -> str:
    return f"{prefix}[system_utils.py:225] [shutdown] force killing sub process {name} pid {pid}\n"


def test_the_dp2_eager_shutdown_kills_each_engine_and_its_worker() -> None:
    launch = _read(REAL / "dp2-eager" / "startup.log")
    assert _trees(launch) == [
        ("EngineCore_DP0", 19267, 213, 0, [("VLLM::Worker", 19927, 221)]),
        ("EngineCore_DP1", 19268, 222, 1, [("VLLM::Worker", 19921, 223)]),
    ]
    assert all(k.process.text == "APIServer pid=18627" for k in launch.shutdown_kills)


def test_the_tp2_shutdown_kills_the_engine_and_both_workers_across_other_lines() -> None:
    # Lines 168-170 are other processes' (the workers' own shutdown lines): not the
    # killer's, so they do not end its run of descendant lines.
    launch = _read(REAL / "tp2-devmode" / "startup.log")
    assert _trees(launch) == [
        (
            "EngineCore",
            9685,
            166,
            None,
            [("VLLM::Worker_TP0", 9748, 167), ("VLLM::Worker_TP1", 9749, 171)],
        )
    ]


def test_a_root_whose_tree_had_no_live_descendant_is_kept_without_any() -> None:
    launch = _read(REAL / "tp2-worker-kill" / "startup.log")
    assert [(name, descendants) for name, _, _, _, descendants in _trees(launch)] == [
        ("EngineCore", [])
    ]


def test_descendants_pair_only_with_the_same_processs_root_before_any_other_line() -> None:
    other = "(APIServer pid=101) WARNING 12-02 14:55:28 "
    text = (
        banner("0.32.0")
        + _root("EngineCore_DP0", 200)  # line 2
        + _child(400, prefix=other)  # 3: another process's
        + _child(401)  # 4: the root's
        + f"{_API}[launcher.py:254] [shutdown] API server: shutdown triggered\n"  # 5
        + _child(402)  # 6: after another line of the killer: no root's
        + _root("EngineCore_DP1", 201)  # 7
        + f"{_API}[utils.py:648] [shutdown] Process manager: force killing remaining "
        "processes count=1\n"  # 8: a new kill begins
         + _child(403)  # 9
    )
    (launch,) = log(text).launches
    assert _trees(launch) == [
        ("EngineCore_DP0", 200, 2, 0, [("VLLM::Worker", 401, 4)]),
        ("EngineCore_DP1", 201, 7, 1, []),
    ]


def test_untagged_or_pasted_kill_lines_pair_nothing() -> None:
    untagged = banner("0.32.0") + _root("EngineCore_DP0", 200, prefix="") + _child(401, prefix="")
    (launch,) = log(untagged).launches
    assert launch.shutdown_kills == ()
    # A markdown paste's backticked head: its tag is not trusted, so nothing pairs.
    pasted = banner("0.32.0") + "".join(
        f"`{line.rstrip()}`\n" for line in (_root("EngineCore_DP0", 200), _child(401))
    )
    (launch,) = log(pasted).launches
    assert launch.shutdown_kills == ()


def test_a_name_past_256_characters_or_a_pid_past_nine_digits_is_not_read() -> None:
    text = (
        banner("0.32.0")
        + _root("E" * 257, 200)
        + _root("EngineCore_DP0", 1_000_000_000)
        + _root("EngineCore_DP0", 200)
        + _child(401, name="W" * 257)
        + _child(402)
    )
    (launch,) = log(text).launches
    assert _trees(launch) == [("EngineCore_DP0", 200, 4, 0, [("VLLM::Worker", 402, 6)])]


def test_a_hostile_log_keeps_at_most_4096_kill_lines() -> None:
    text = banner("0.32.0") + _root("EngineCore_DP0", 200) + _child(1) * 5000
    (launch,) = log(text).launches
    (kill,) = launch.shutdown_kills
    assert len(kill.descendants) == 4095
