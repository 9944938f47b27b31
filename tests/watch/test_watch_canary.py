"""``watch(..., canary=True)`` and ``vllm-evidence watch --canary``: the generation claim.

The stub serves a real recorded server; what ``POST /v1/completions`` answers is set by
the test (a token, an HTTP 500, nothing at all), so every ``generation`` verdict below is
written by hand from what the stub was told to answer.  Without ``canary`` nothing but
GETs reaches the server; with it, one canary a target a round.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from jsonschema import Draft202012Validator

from tests.watch._kit import KILL, SERVING, get_route, turn, until_status
from tests.watch.test_documents import schema
from vllm_evidence.cli import main
from vllm_evidence.errors import InputError
from vllm_evidence.testing import Fault, StubFrontDoor, forbidden_requests, serve_capture
from vllm_evidence.watch import (
    ClaimChanged,
    Round,
    Target,
    Watcher,
    round_document,
    transition_document,
)


def _generation(round_: Round) -> tuple[str, str] | None:
    found = round_.targets[0].claim("generation")
    return None if found is None else (found.verdict, found.reason)


def _posts(door: StubFrontDoor) -> int:
    return sum(r.method == "POST" for r in door.requests)


def test_a_token_back_establishes_generation_and_one_canary_a_round_is_sent() -> None:
    with serve_capture(KILL, completion=Fault()) as door:
        watcher = Watcher([Target(door.url)], require=("generation",), canary=True)
        first = turn(watcher)
        second = turn(watcher)
        requests = list(door.requests)
    assert _generation(first) == ("established", "generated")
    assert first.targets[0].ready
    assert first.targets[0].canary is not None
    assert first.targets[0].canary.model == "/models/tiny-llama"  # the id v1_models.body serves
    assert _generation(second) == ("established", "generated")
    assert second.transitions == ()  # steady: no change to say
    assert sum(r.method == "POST" for r in requests) == 2  # one a round
    assert forbidden_requests(requests, canary=True) == []  # and nothing else but GETs


def test_without_the_canary_nothing_but_gets_and_no_generation_claim() -> None:
    with serve_capture(KILL, completion=Fault()) as door:
        round_ = turn(Watcher([Target(door.url)]))
        requests = list(door.requests)
    assert _generation(round_) is None
    assert round_.targets[0].canary is None
    assert [c.claim for c in round_.targets[0].claims] == [
        "parallel",
        "capacity",
        "served_identity",
        "health_coverage",
        "front_door_join",
        "log_join",
    ]
    assert forbidden_requests(requests) == []


def test_a_failing_canary_is_one_transition_each_way_and_holds_readiness() -> None:
    with serve_capture(KILL, completion=Fault()) as door:
        watcher = Watcher([Target(door.url)], require=("generation",), canary=True)
        turn(watcher)
        door.set_completion(Fault(status=500))
        failed = turn(watcher)
        still = turn(watcher)
        door.set_completion(Fault())
        back = turn(watcher)
    assert _generation(failed) == ("refused", "canary_http_error")
    assert not failed.targets[0].ready
    (lost,) = failed.transitions
    assert isinstance(lost, ClaimChanged)
    assert (lost.claim, lost.before.verdict, lost.after.verdict) == (
        "generation",
        "established",
        "refused",
    )
    assert still.transitions == ()  # said once
    assert not still.targets[0].ready
    (regained,) = back.transitions
    assert isinstance(regained, ClaimChanged)
    assert (regained.claim, regained.after.verdict) == ("generation", "established")
    assert back.targets[0].ready


def test_the_other_claims_do_not_wait_on_the_canary() -> None:
    """A canary refused does not make a server that is not required to generate unready."""
    with serve_capture(KILL, completion=None) as door:  # POST answers 405
        round_ = turn(Watcher([Target(door.url)], require=("served_identity",), canary=True))
    assert _generation(round_) == ("refused", "canary_http_error")
    assert round_.targets[0].ready


def test_generation_is_in_the_round_and_transition_documents_and_they_validate() -> None:
    with serve_capture(KILL, completion=Fault()) as door:
        watcher = Watcher([Target(door.url)], canary=True)
        turn(watcher)
        door.set_completion(Fault(status=503))
        round_ = turn(watcher)
    document = round_document(round_)
    assert document["targets"][0]["claims"]["generation"] == {
        "verdict": "refused",
        "reason": "canary_http_error",
    }
    assert not list(Draft202012Validator(schema("watch-round")).iter_errors(document))
    (change,) = round_.transitions
    line = transition_document(change)
    assert (line["claim"], line["after"]["verdict"]) == ("generation", "refused")
    assert not list(Draft202012Validator(schema("watch-transition")).iter_errors(line))


def test_requiring_generation_needs_the_canary() -> None:
    with pytest.raises(InputError, match="only the canary decides: give canary=True"):
        Watcher([Target("http://a:1")], require=("generation",))
    with pytest.raises(InputError, match="canary is True or False"):
        Watcher([Target("http://a:1")], canary="yes")  # type: ignore[arg-type]


# -- the command --------------------------------------------------------------------------


def test_the_command_gates_on_generation(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--rounds", "1", "--json", "--canary", "--require", "generation"]
    with serve_capture(KILL, completion=Fault()) as door:
        assert main(["watch", door.url, *argv]) == 0
        generated = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        door.set_completion(Fault(status=500))
        assert main(["watch", door.url, *argv]) == 3
        refused = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert generated[-1]["targets"][0]["claims"]["generation"]["verdict"] == "established"
    assert refused[-1]["targets"][0]["claims"]["generation"] == {
        "verdict": "refused",
        "reason": "canary_http_error",
    }


def test_the_command_refuses_generation_without_the_canary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["watch", "http://127.0.0.1:9", "--require", "generation"]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith(
        "--require generation goes with --canary: only the canary decides it"
    )
    assert len(err.strip().splitlines()) == 1


def test_listen_serves_the_canary_ready_503_and_back(tmp_path: Path) -> None:
    """``watch --listen --canary --require generation``: /ready for the target is 200 while
    a token comes back, 503 naming generation once the server answers the canary 500, and
    200 again; /metrics carries the generation series."""
    with serve_capture(KILL, completion=Fault()) as door:
        argv = [sys.executable, "-m", "vllm_evidence", "watch", door.url, "--canary"]
        argv += ["--listen", "127.0.0.1:0", "--interval", "200ms", "--json"]
        argv += ["--require", "generation", "--deadline", "2s"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert proc.stderr is not None
            found = SERVING.search(proc.stderr.readline().decode())
            assert found
            port = int(found.group(2))
            one = f"/ready?target={quote(door.url, safe='')}"
            assert json.loads(until_status(port, one, 200))["ready"]
            metrics = get_route(port, "/metrics")[1].decode()
            assert re.search(
                r'vllm_evidence_claim_established\{[^}]*claim="generation"[^}]*\} 1', metrics
            )
            door.set_completion(Fault(status=500))
            refused = json.loads(until_status(port, one, 503))
            (target,) = refused["targets"]
            assert [r["claim"] for r in target["refusals"]] == ["generation"]
            door.set_completion(Fault())
            assert json.loads(until_status(port, one, 200))["ready"]
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
    assert proc.returncode == 130
