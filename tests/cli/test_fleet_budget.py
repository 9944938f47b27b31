"""``probe --memory-budget``: the bodies a fleet holds at once, bounded in all.

The command's fleet shares one body budget: its high-water mark never passes the
budget, and no server is refused for it (its requests wait, and every answer is read
whole).  A budget smaller than one server's worst case is refused with one line.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from contextlib import ExitStack
from typing import Any

import pytest

from tests._ports import nothing_listening
from tests.hostile._server import hostile_server, response
from vllm_evidence._capture.http import BodyBudget
from vllm_evidence._cli._fleet import MIB, _budget, _Fleet
from vllm_evidence.cli import build_parser

#: Every route's answer: 2 MiB, cheap to parse.
BODY = 2 * MIB


def big_answers(target: str, headers: dict[str, str]) -> bytes:
    return response(200, b"x" * BODY)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )


def _requests(document: dict[str, Any]) -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = document["front_door"]["source"]["requests"]
    return requests


@pytest.mark.parametrize(
    ("given", "least"), [("79", "80"), ("0", "80"), ("-5", "80")], ids=["79", "0", "negative"]
)
def test_a_budget_below_one_servers_worst_case_is_refused_in_one_line(
    given: str, least: str
) -> None:
    out = _run("probe", nothing_listening(), nothing_listening(), "--memory-budget", given)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("vllm-evidence probe: error: --memory-budget ")
    assert f"give at least {least}" in lines[0]


def test_without_development_routes_one_server_holds_less_and_the_least_budget_is_lower() -> None:
    # Seven requests of 8 MiB: 56 MiB, which 60 holds (the other direction of the above).
    out = _run(
        "probe",
        nothing_listening(),
        nothing_listening(),
        "--json",
        "--no-development-routes",
        "--memory-budget",
        "60",
        "--timeout",
        "1",
    )
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 2  # both assessed (nothing listens there)


def test_the_smallest_budget_reads_every_server_whole_through_the_command() -> None:
    with ExitStack() as stack:
        servers = [stack.enter_context(hostile_server(big_answers)) for _ in range(3)]
        out = _run("probe", *(s.url for s in servers), "--json", "--memory-budget", "80")
    assert out.returncode == 0, out.stderr
    documents = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(d["target"] for d in documents) == sorted(s.url for s in servers)
    for document in documents:
        requests = _requests(document)
        assert [r["transport"] for r in requests] == ["answered"] * 10
        assert all(r["status"] == 200 for r in requests)


def test_the_fleets_high_water_mark_stays_within_its_budget_and_no_server_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ExitStack() as stack:
        servers = [stack.enter_context(hostile_server(big_answers)) for _ in range(4)]
        urls = [s.url for s in servers]
        args = build_parser().parse_args(["probe", *urls, "--json", "--memory-budget", "100"])
        budget = _budget(args, None)
        assert isinstance(budget, BodyBudget)
        assert budget.max_bytes == 100 * MIB
        fleet = _Fleet(urls, args, None, None, budget)
        asyncio.run(fleet.run())
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert budget.high_water <= 100 * MIB
    # Four servers of ten requests at an 8 MiB cap want 320 MiB at once: they waited.
    assert budget.waits > 0
    assert budget.held == 0
    assert fleet.assessed == 4
    for document in documents:
        assert [r["transport"] for r in _requests(document)] == ["answered"] * 10
