"""Item 8 of issue 15: verdicts that overstate, and server text that reaches a terminal.

Against a hostile server on 127.0.0.1, through the command line: a capacity whose
sources contradict themselves is refused naming the conflict, and control characters
in server-supplied text are escaped in every text output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile._server import (
    CONTROL_IDS,
    control_characters_in_ids,
    dp1_with_two_engine_series,
    hostile_server,
    two_figures_for_one_engine,
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )


def _capacity(url: str) -> dict[str, object]:
    out = _cli("probe", url, "--json", "--timeout", "3")
    assert out.returncode == 0, out.stderr
    capacity: dict[str, object] = json.loads(out.stdout)["decisions"]["capacity"]
    return capacity


def test_dp1_with_series_for_two_engines_is_refused_naming_the_conflict() -> None:
    with hostile_server(dp1_with_two_engine_series) as server:
        capacity = _capacity(server.url)
    assert capacity["verdict"] == "refused"
    assert capacity["reason"] == "figures_conflict"
    assert "resolves 1 DP engine(s), but has capacity figures for engine(s) 1" in str(
        capacity["detail"]
    )


def test_two_figures_for_one_engine_are_refused_not_the_smaller() -> None:
    with hostile_server(two_figures_for_one_engine) as server:
        capacity = _capacity(server.url)
    assert capacity["verdict"] == "refused"
    assert capacity["reason"] == "figures_conflict"
    assert "2,097,152 tokens, 4,194,304 tokens" in str(capacity["detail"])


RAW = ("\x1b", "\x00", "\u202e")


@pytest.mark.parametrize("fleet", [False, True], ids=["report", "fleet"])
def test_control_characters_in_served_ids_are_escaped_in_text(fleet: bool) -> None:
    with hostile_server(control_characters_in_ids) as server:
        urls = [server.url, server.url + "/"] if fleet else [server.url]
        out = _cli("probe", *urls, "--timeout", "3")
    assert out.returncode == 0, out.stderr
    assert not [c for c in RAW if c in out.stdout + out.stderr]
    assert "evil\\x1b[2J\\x1b[31mRED" in out.stdout
    assert not [line for line in out.stdout.splitlines() if line.startswith("lines")]
    if fleet:  # a title, a header and one line per server: no row is split
        assert len(out.stdout.splitlines()) == 4, out.stdout


def test_control_characters_in_served_ids_stay_data_in_json() -> None:
    with hostile_server(control_characters_in_ids) as server:
        out = _cli("probe", server.url, "--json", "--timeout", "3")
    assert not [c for c in RAW if c in out.stdout]
    identity = json.loads(out.stdout)["decisions"]["served_identity"]
    assert _ids(identity) == set(CONTROL_IDS)  # JSON escapes them; a reader gets them back


def _ids(decision: object) -> set[str]:
    found: set[str] = set()
    if isinstance(decision, dict):
        for key, value in decision.items():
            if key == "served_id" and isinstance(value, str):
                found.add(value)
            else:
                found |= _ids(value)
    elif isinstance(decision, list):
        for item in decision:
            found |= _ids(item)
    return found


def test_control_characters_in_a_logs_served_names_are_escaped(tmp_path: Path) -> None:
    """A log's ANSI sequences are stripped by its reader; what is left is escaped."""
    from tests._evidence import args, banner

    log = tmp_path / "startup.log"
    names = "['evil\x07\x7fname', 'bidi\u202eexe', 'c1\x9bx']"
    log.write_text(banner("0.32.0") + args(f"{{'served_model_name': {names}}}"), encoding="utf-8")
    out = _cli("log", str(log))
    assert out.returncode == 0, out.stderr
    assert not [c for c in ("\x07", "\x7f", "\u202e", "\x9b") if c in out.stdout]
    assert "served names:       evil\\x07\\x7fname, bidi\\u202eexe, c1\\x9bx" in out.stdout
