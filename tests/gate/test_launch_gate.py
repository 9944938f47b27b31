"""``vllm-evidence launch --serve``: the real launcher, its child a stand-in for ``vllm
serve`` made of a recorded real server (``_stub_vllm.py``): ``/ready`` turns 503 within
one round of a worker's ``kill -9`` and stays so, follows ``/health`` both ways, ``/live``
and the exit status follow the child, and bad usage is one line before anything starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from tests.gate._launch import CLI, Launched, free_port, get, get_json, launched, wait_for


def _refusals(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    (target,) = document["targets"]
    return [(r["claim"], r["reason"], r["by"]) for r in target["refusals"]]


def _metric_line(launcher: Launched, prefix: str) -> str:
    text = get(launcher.gate + "/metrics")[1].decode()
    return next(line for line in text.splitlines() if line.startswith(prefix))


def _ready(launcher: Launched) -> bool:
    return launcher.ready()[0] == 200


def test_ready_turns_503_within_one_round_of_a_killed_worker(tmp_path: Path) -> None:
    with launched(tmp_path) as launcher:
        wait_for("/ready 200 once the child serves", lambda: _ready(launcher))
        assert _metric_line(launcher, 'vllm_evidence_claim_established{claim="parallel"').endswith(
            " 1.0"
        )
        rank0, rank1 = launcher.worker_pids()
        os.kill(rank1, signal.SIGKILL)
        killed_after = launcher.rounds()
        # The round under way may have read the tree before the kill; the next one began
        # after it, and every round from then on must refuse.
        wait_for("two more rounds", lambda: launcher.rounds() >= killed_after + 2)
        status, document = launcher.ready()
        assert status == 503
        assert document["round"] >= killed_after + 2
        assert _refusals(document) == [
            ("parallel", "rank_lost", "assessment"),
            ("health_coverage", "rank_lost", "assessment"),
        ]
        (target,) = document["targets"]
        assert target["lost_processes"][0].startswith(f"rank 1 of world size 2 (pid {rank1},")
        # The assessment refuses, from the tree among its evidence (the log says nothing).
        assert target["refusals"][0]["detail"].startswith(
            f"rank 1 of world size 2 (pid {rank1}, log line 42) is gone from the launcher's "
            "process tree"
        )
        assert _metric_line(launcher, 'vllm_evidence_claim_established{claim="parallel"').endswith(
            " 0.0"
        )
        assert 'reason="rank_lost"' in _metric_line(
            launcher, 'vllm_evidence_claim_info{by="assessment",claim="parallel"'
        )
        assert _metric_line(launcher, "vllm_evidence_ready{").endswith(" 0.0")
        # A lost rank is not present again within the launch: later rounds still refuse.
        later = launcher.rounds()
        wait_for("two more rounds", lambda: launcher.rounds() >= later + 2)
        assert launcher.ready()[0] == 503
        assert get(launcher.gate + "/live")[0] == 200  # the child still runs
        os.kill(rank0, 0)  # the other worker too
        launcher.proc.send_signal(signal.SIGTERM)  # forwarded: the child ends, status 0
        assert launcher.proc.wait(30) == 0


def test_ready_follows_the_engines_health_both_ways(tmp_path: Path) -> None:
    with launched(tmp_path) as launcher:
        wait_for("/ready 200", lambda: _ready(launcher))
        child = launcher.child_pid()
        os.kill(child, signal.SIGUSR1)  # /health 503: vLLM 0.32.0's dead engine
        wait_for("/ready 503 on /health 503", lambda: launcher.ready()[0] == 503)
        assert ("capacity", "engine_dead", "assessment") in _refusals(launcher.ready()[1])
        os.kill(child, signal.SIGUSR2)  # /health 200 again
        wait_for("/ready 200 again", lambda: _ready(launcher))
        assert _refusals(launcher.ready()[1]) == []


def test_the_canary_serves_generation_and_follows_the_engine(tmp_path: Path) -> None:
    """--canary: ``generation`` established while the child generates (one POST a round,
    marked as the canary's), refused ``canary_http_error`` once a completion answers 500
    (the dead engine), established again when it generates again."""
    required = ("parallel", "generation")
    with launched(tmp_path, extra=("--canary",), required=required) as launcher:
        wait_for("/ready 200 with generation", lambda: _ready(launcher))
        assert _metric_line(
            launcher, 'vllm_evidence_claim_established{claim="generation"'
        ).endswith(" 1.0")
        assert 'by="canary"' in _metric_line(
            launcher, 'vllm_evidence_claim_info{by="canary",claim="generation"'
        )
        child = launcher.child_pid()
        os.kill(child, signal.SIGUSR1)  # /health 503 and a completion 500
        wait_for("/ready 503", lambda: launcher.ready()[0] == 503)
        wait_for(
            "generation refused",
            lambda: ("generation", "canary_http_error", "canary") in _refusals(launcher.ready()[1]),
        )
        os.kill(child, signal.SIGUSR2)
        wait_for("/ready 200 again", lambda: _ready(launcher))


def test_live_and_the_exit_status_follow_the_child(tmp_path: Path) -> None:
    marker = tmp_path / "go"
    child = (
        "import pathlib, sys, time\n"
        f"while not pathlib.Path({str(marker)!r}).exists(): time.sleep(0.05)\n"
        "sys.exit(7)\n"
    )
    err = tmp_path / "err"
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            [
                *CLI,
                "--serve",
                f"127.0.0.1:{free_port()}",
                "--require",
                "capacity",
                "--interval",
                "0.2s",
                "--",
                sys.executable,
                "-c",
                child,
                "--port",
                str(free_port()),
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_for("the notice", lambda: b"the gate serves" in err.read_bytes(), 30)
        gate = err.read_text().split("the gate serves ")[1].split()[0]
        wait_for("/live 200", lambda: get(gate + "/live")[0] == 200)
        wait_for("a round", lambda: get_json(gate + "/ready")[1]["round"] >= 1)
        status, document = get_json(gate + "/ready")
        assert status == 503  # nothing answers on the child's port
        assert ("capacity", "front_door_unreachable", "assessment") in _refusals(document)
        marker.touch()
        assert proc.wait(30) == 7
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(urllib.error.URLError):  # nothing listens any more
        get(gate + "/live")


def test_an_address_in_use_is_one_line_and_the_child_never_starts(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        out = subprocess.run(
            [
                *CLI,
                "--serve",
                f"127.0.0.1:{port}",
                "--require",
                "parallel",
                "--",
                sys.executable,
                "-c",
                f"open({str(marker)!r}, 'w')",
            ],
            capture_output=True,
            check=False,
            timeout=60,
        )
    assert out.returncode == 2
    assert out.stderr.decode() == (
        f"vllm-evidence launch: error: --serve 127.0.0.1:{port}: the address is already in "
        "use (another process listens there)\n"
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--serve", ":0", "--", "true"], "--serve needs --require CLAIM"),
        (["--require", "parallel", "--receipt", "r", "--", "true"], "--require goes with --serve"),
        (["--interval", "5s", "--receipt", "r", "--", "true"], "--interval goes with --serve"),
        (["--", "true"], "the following arguments are required: --receipt (or --serve"),
        (
            ["--serve", ":0", "--require", "parallel", "--interval", "5 parsecs", "--", "true"],
            "--interval '5 parsecs': give a duration such as 5s",
        ),
        (
            ["--serve", ":0", "--require", "parallel", "--interval", "0s", "--", "true"],
            "must be between",
        ),
        (["--serve", "nope", "--require", "parallel", "--", "true"], "give HOST:PORT"),
        (
            ["--serve", ":0", "--require", "parallel", "--", "vllm", "serve", "m", "--uds", "/s"],
            "serves on a Unix socket (--uds)",
        ),
        (
            ["--serve", ":0", "--require", "parallel", "--", "vllm", "serve", "--port", "http"],
            "the command's --port 'http' is not a port",
        ),
        (["--serve", ":0", "--require", "parallel"], "no command to launch"),
        (["--canary", "--receipt", "r", "--", "true"], "--canary goes with --serve"),
        (
            ["--serve", ":0", "--require", "generation", "--", "true"],
            "generation is decided by the canary: require it with --canary",
        ),
    ],
)
def test_bad_usage_is_one_line_before_anything_starts(
    arguments: list[str], expected: str, tmp_path: Path
) -> None:
    out = subprocess.run(
        [*CLI, *arguments], capture_output=True, check=False, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("vllm-evidence launch: error: ")
    assert expected in lines[0]
