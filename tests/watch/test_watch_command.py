"""``vllm-evidence watch``: JSON lines validated against their schemas, exit statuses as
DESIGN §6 gives them, bad input in one line, and the live table on a terminal."""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.watch._kit import KILL
from vllm_evidence.cli import main
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.watch import ROUND_SCHEMA, TRANSITION_SCHEMA, Shard, Target


def validator(name: str) -> Draft202012Validator:
    text = resources.files("vllm_evidence").joinpath("schemas", f"{name}.json").read_text("utf-8")
    return Draft202012Validator(json.loads(text))


VALIDATORS = {
    ROUND_SCHEMA: validator("watch-round"),
    TRANSITION_SCHEMA: validator("watch-transition"),
}


def run(argv: list[str]) -> tuple[int, list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["watch", *argv])
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    for line in lines:
        errors = [e.message for e in VALIDATORS[line["schema"]].iter_errors(line)]
        assert errors == [], line
    return status, lines, err.getvalue()


def test_two_rounds_print_two_valid_round_lines_and_exit_0() -> None:
    with serve_capture(KILL) as door:
        status, lines, err = run([door.url, "--rounds", "2", "--json", "--interval", "50ms"])
    assert status == 0
    assert err == ""
    assert [(line["schema"], line["round"]) for line in lines] == [
        (ROUND_SCHEMA, 1),
        (ROUND_SCHEMA, 2),
    ]
    assert lines[0]["targets"][0]["target"] == door.url
    assert lines[0]["interval_s"] == 0.05


def test_a_required_claim_refused_in_the_last_round_exits_3() -> None:
    with serve_capture(KILL) as door:
        status, lines, err = run(
            [door.url, "--rounds", "1", "--interval", "50ms", "--require", "parallel"]
        )
    assert status == 3
    assert lines[0]["targets"][0]["ready"] is False
    assert err.count("\n") == 1
    assert "required claim(s) not established for the serving process: parallel" in err
    assert "round 1: 1 of 1 servers not ready" in err


def test_a_required_claim_established_exits_0() -> None:
    with serve_capture(KILL) as door:
        status, lines, _ = run(
            [door.url, "--rounds", "1", "--interval", "50ms", "--require", "served_identity"]
        )
    assert status == 0
    assert lines[0]["targets"][0]["ready"] is True


def test_a_restart_is_a_transition_line_before_its_round_with_the_files_labels(
    tmp_path: Path,
) -> None:
    """The server restarts once the first round's line is out (the rounds are 2 s apart):
    the second round's transition line comes before it, and both carry the labels."""
    with serve_capture(KILL) as door:
        listed = tmp_path / "fleet.json"
        host = door.url.removeprefix("http://")
        listed.write_text(json.dumps([{"targets": [host], "labels": {"pool": "a"}}]), "utf-8")
        child = subprocess.Popen(
            [
                *(sys.executable, "-m", "vllm_evidence", "watch", "--targets", str(listed)),
                *("--rounds", "2", "--interval", "2s"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert child.stdout is not None
        first = child.stdout.readline()
        door.restart()
        rest, err = child.communicate(timeout=60)
    assert child.returncode == 0, err.decode()
    lines = [json.loads(line) for line in (first + rest).splitlines()]
    for line in lines:
        assert [e.message for e in VALIDATORS[line["schema"]].iter_errors(line)] == []
    assert [line["schema"] for line in lines] == [ROUND_SCHEMA, TRANSITION_SCHEMA, ROUND_SCHEMA]
    assert (lines[1]["change"], lines[1]["round"]) == ("restart", 2)
    assert lines[1]["after"] == {"process_start_time_seconds": "1796219926.79"}
    assert lines[0]["targets"][0]["labels"] == {"pool": "a"}
    assert lines[1]["labels"] == {"pool": "a"}
    assert lines[2]["targets"][0]["labels"] == {"pool": "a"}


def test_a_shard_watches_only_its_share(tmp_path: Path) -> None:
    urls = [f"http://127.0.0.{n}:9" for n in range(1, 9)]
    listed = tmp_path / "fleet.txt"
    listed.write_text("".join(f"{url}\n" for url in urls), "utf-8")
    mine = Shard(1, 3).take([Target(url) for url in urls])
    assert mine  # the test needs a non-empty share
    status, lines, _ = run(
        ["--targets", str(listed), "--shard", "1/3", "--rounds", "1", "--timeout", "1s"]
    )
    assert status == 0
    assert [t["target"] for t in lines[0]["targets"]] == [t.url for t in mine]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["http://a:1", "--receipt", "r.json"], "--receipt goes with --startup-log"),
        (["http://a:1", "http://b:1", "--startup-log", "l"], "--startup-log goes with one URL"),
        (["http://a:1", "--rounds", "0"], "--rounds must be at least 1"),
        (["http://a:1", "--interval", "1ms"], "--interval must be between 0.05 s"),
        (["http://a:1", "--concurrency", "0"], "--concurrency must be at least 1"),
        (["ftp://a"], "URL 1: not an http(s) URL"),
        ([], "the following arguments are required: URL (or --targets FILE)"),
        (["http://a:1", "--shard", "3/3"], "the index counts from 0"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(argv: list[str], words: str) -> None:
    status, lines, err = run(argv)
    assert status == 2
    assert lines == []
    assert err.count("\n") == 1
    assert err.startswith("vllm-evidence watch: error: ")
    assert words in err


def test_a_hostile_targets_file_is_one_line_naming_the_entry(tmp_path: Path) -> None:
    listed = tmp_path / "fleet.json"
    listed.write_text('[{"targets": ["ok:1"]}, {"targets": ["h:1"], "labels": {"a b": "x"}}]')
    status, lines, err = run(["--targets", str(listed), "--rounds", "1"])
    assert (status, lines) == (2, [])
    assert err.count("\n") == 1
    assert f"{listed} group 2:" in err
    assert "is not a Prometheus label name" in err


def test_a_shard_holding_no_server_is_refused(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"
    other = next(i for i in range(2) if not Shard(i, 2).holds(Target(url)))
    status, _, err = run([url, "--shard", f"{other}/2", "--rounds", "1"])
    assert status == 2
    assert "holds none of them" in err


def test_a_duration_that_is_not_one_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()) as err:
        main(["watch", "http://a:1", "--interval", "soon"])
    assert caught.value.code == 2
    assert "give a duration such as 15s, 500ms or 1m" in err.getvalue()


def test_on_a_terminal_the_rounds_are_a_live_table() -> None:
    with serve_capture(KILL) as door:
        leader, follower = os.openpty()
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        env.update(TERM="xterm-256color", COLUMNS="200", LINES="40")
        child = subprocess.Popen(
            [
                *(sys.executable, "-m", "vllm_evidence", "watch", door.url, "--rounds", "2"),
                *("--interval", "50ms", "--require", "served_identity"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=follower,
            env=env,
        )
        os.close(follower)
        seen = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            assert ready, "the CLI wrote nothing for 60 s"
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        child.wait(timeout=60)
        os.close(leader)
    text = seen.decode("utf-8", "replace")
    assert child.returncode == 0, text[-2000:]
    assert "round 2 · 1 servers · 1 answering · 1 ready" in text
    assert "parallel" in text  # a claim's column
    assert '"schema"' not in text  # a table, not JSON lines


def test_the_help_has_examples_and_the_exit_statuses() -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as caught, contextlib.redirect_stdout(out):
        main(["watch", "--help"])
    assert caught.value.code == 0
    assert "examples:" in out.getvalue()
    assert "exit status: 0" in out.getvalue()
    assert "--shard I/N" in out.getvalue()


def test_a_followed_log_joins_under_the_launchers_public_key(tmp_path: Path) -> None:
    from tests.watch._kit import PUBLIC, launch_files

    log, receipt = launch_files(tmp_path)
    public = tmp_path / "receipt-public.pem"
    public.write_bytes(PUBLIC.pem())
    with serve_capture(KILL) as door:
        argv = [door.url, "--startup-log", str(log), "--receipt", str(receipt)]
        status, lines, _ = run(
            [*argv, "--receipt-public-key", str(public), "--rounds", "1", "--require", "parallel"]
        )
        refused, unkeyed, _ = run([*argv, "--rounds", "1", "--require", "parallel"])
    assert status == 0
    served = lines[0]["targets"][0]
    assert served["claims"]["log_join"] == {"verdict": "established", "reason": "established"}
    assert served["log"]["read_bytes"] == log.stat().st_size
    assert refused == 3
    assert unkeyed[0]["targets"][0]["claims"]["log_join"]["verdict"] == "refused"
