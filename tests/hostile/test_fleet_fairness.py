"""Item 6 of "Hostile input, round 3": one server costly to parse starves no other.

A server whose JSON routes answer millions of numbers takes seconds to parse (the
decoder builds a string per number, holding the GIL throughout).  When that parsing ran
on the event loop every server shares, the requests other servers had in flight meanwhile
saw their timeouts pass and were reported ``timed_out``.  Here one such server sits among
healthy ones (whose answers come back well within the timeout), and every healthy server
must come out with its real verdicts, not a timed-out request.  Not timed: the timeout is
generous for a healthy answer, and far shorter than the costly server's parse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import ExitStack
from typing import Any

from tests._paths import REAL
from tests.hostile._server import NEAR_CAP, hostile_server, real_reply, response
from vllm_evidence.testing import serve_capture

#: Just under the body cap of numbers: about 11 s to parse a batch of five on this
#: machine, against the healthy servers' 3-second timeout.
COSTLY = b"[" + b"0," * (NEAR_CAP // 2 - 1) + b"0]"
TIMEOUT_S = "3"
HEALTHY = 4


def costly_to_parse(target: str, headers: dict[str, str]) -> bytes:
    """Every JSON route answers :data:`COSTLY`; ``/metrics`` and ``/health`` are real."""
    if target in ("/metrics", "/health"):
        return real_reply(target)
    return response(200, COSTLY, headers=(("content-type", "application/json"),))


def _fleet(*urls: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "probe", *urls, "--json", "--timeout", TIMEOUT_S],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )


def _transports(document: dict[str, Any]) -> list[str]:
    return [request["transport"] for request in document["front_door"]["source"]["requests"]]


def test_a_server_costly_to_parse_times_out_no_healthy_server() -> None:
    with ExitStack() as stack:
        costly = stack.enter_context(hostile_server(costly_to_parse))
        # Each answer 1 s late: every healthy probe has requests in flight while the
        # costly server's bodies are parsed.
        doors = [stack.enter_context(serve_capture(REAL, latency_s=1.0)) for _ in range(HEALTHY)]
        out = _fleet(costly.url, *(door.url for door in doors))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    documents = {doc["target"]: doc for doc in map(json.loads, out.stdout.splitlines())}
    assert sorted(documents) == sorted([costly.url, *(door.url for door in doors)])
    for door in doors:
        healthy = documents[door.url]
        # Every request of the batch (four /metrics reads, six routes) answered in time.
        assert _transports(healthy) == ["answered"] * 10, door.url
        decisions = healthy["decisions"]
        assert decisions["capacity"]["verdict"] == "established"
        assert decisions["front_door_join"]["verdict"] == "established"
        assert decisions["health_coverage"]["verdict"] == "established"
    # The costly server is read whole too: its bodies waited for their parse, its
    # requests did not.
    assert _transports(documents[costly.url]) == ["answered"] * 10
    assert documents[costly.url]["decisions"]["capacity"]["verdict"] == "refused"


def test_healthy_servers_alone_are_read_the_same_way() -> None:
    # The other direction: without the costly server the healthy ones read the same
    # (the assertions above are about the costly server, not about the stub).
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL, latency_s=0.2)) for _ in range(2)]
        out = _fleet(*(door.url for door in doors))
    assert out.returncode == 0, out.stderr
    for doc in map(json.loads, out.stdout.splitlines()):
        assert _transports(doc) == ["answered"] * 10
        assert doc["decisions"]["capacity"]["verdict"] == "established"
