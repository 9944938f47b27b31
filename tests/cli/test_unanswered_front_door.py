"""A front door that answers nothing, or only errors, is a state, not an error.

Every mode prints the same assessment document for it: ``probe URL --json``, each line
of a fleet, ``explain`` of its saved capture, and the library's own assessment, with
every claim about the serving process refused for the front-door reason and the routes
saying what each request ended in.  The text report is printed too (a note on stderr
beside it); the exit status is 0, or 3 under ``--require``; 2 stays for bad usage.
And the other direction: a live front door still establishes what it did.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from tests._cli import run_cli
from tests._paths import REAL
from tests._ports import nothing_listening
from vllm_evidence import assess, probe_sync, readback_from_batch
from vllm_evidence._output.assessment import assessment_document
from vllm_evidence.cli import main
from vllm_evidence.serialize import schema
from vllm_evidence.testing._stub import Fault, serve_capture
from vllm_evidence.upstream._routes import Route

#: The decisions about the serving process: each refuses a front door that gave nothing.
SERVING = ("parallel", "capacity", "served_identity", "health_coverage")
_PUBLISHED = schema("assessment")
SCHEMA = _PUBLISHED["x-vllm-evidence-schema"]
_VALIDATOR = Draft202012Validator(_PUBLISHED)


def _assert_valid(document: object) -> None:
    error = best_match(_VALIDATOR.iter_errors(document))
    assert error is None, f"{list(error.absolute_path)}: {error.message[:500]}"


def _in_process(*argv: str) -> tuple[int, str, str]:
    """``main(argv)`` in this process: the exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def _one_document(stdout: str) -> dict[str, Any]:
    """The one JSON document ``stdout`` holds, validated against the published schema."""
    document: dict[str, Any] = json.loads(stdout)
    _assert_valid(document)
    return document


def _assert_refused_for(document: dict[str, Any], reason: str) -> None:
    assert document["schema"] == SCHEMA
    decisions = document["decisions"]
    for claim in SERVING:
        decision = decisions[claim]
        assert (decision["subject"], decision["verdict"], decision["reason"]) == (
            "serving",
            "refused",
            reason,
        ), claim
    assert decisions["front_door_join"]["verdict"] == "refused"


def _assert_unreachable(document: dict[str, Any], target: str) -> None:
    """Every serving claim refused ``front_door_unreachable``, and every route saying
    what its request ended in."""
    assert document["target"] == target
    _assert_refused_for(document, "front_door_unreachable")
    assert f"no request to {target} was answered" in document["decisions"]["parallel"]["detail"]
    routes = document["front_door"]["routes"]
    assert routes, document["front_door"]
    for name, route in routes.items():
        assert route["outcome"] in ("unreachable", "timed_out"), (name, route)
        assert route["detail"], (name, route)
    requests = document["front_door"]["source"]["requests"]
    assert {r["transport"] for r in requests} <= {"unreachable", "timed_out"}
    assert all(r["status"] is None for r in requests)


# --- one server ----------------------------------------------------------------------


def test_a_dead_front_door_is_one_schema_valid_assessment() -> None:
    dead = nothing_listening()
    status, out, err = _in_process("probe", dead, "--json", "--timeout", "2")
    assert status == 0, err
    _assert_unreachable(_one_document(out), dead)
    (line,) = err.splitlines()  # one short note beside the document
    assert line.startswith("vllm-evidence probe: note: ")
    assert dead in line
    assert "front_door_unreachable" in line


@pytest.mark.parametrize("claim", ["parallel", "capacity", "front_door_join", "log_join"])
def test_a_dead_front_door_under_require_exits_3_with_the_document(claim: str) -> None:
    dead = nothing_listening()
    status, out, err = _in_process("probe", dead, "--json", "--require", claim)
    assert status == 3
    _assert_unreachable(_one_document(out), dead)
    (line,) = err.splitlines()  # one line: the refused claim, and why
    assert line.endswith(
        f"for the serving process: {claim} ({dead} gave nothing to read: front_door_unreachable)"
    )


def test_a_dead_front_door_prints_the_report_in_text() -> None:
    dead = nothing_listening()
    status, out, err = _in_process("probe", dead)
    assert status == 0, err
    assert out.startswith(f"{dead}: vLLM (version unobserved)\n")
    for title in ("parallel layout", "KV-cache capacity", "served model", "/health covers"):
        assert f"  {title:<22} refused (front_door_unreachable)\n" in out
    assert "to move it: probe the address the server listens on" in out
    assert "evidence:" in out
    assert "unreachable (detail=" in out
    assert "error" not in err
    assert "front_door_unreachable" in err


def test_the_cli_document_is_the_librarys_assessment() -> None:
    """``probe URL --json`` prints the library's own assessment of the batch (with its
    ``target``): the same decisions, whatever mode produced it."""
    dead = nothing_listening()
    readback = readback_from_batch(probe_sync(dead))
    library: dict[str, Any] = json.loads(json.dumps(assessment_document(assess(readback, None))))
    _assert_valid(library)
    status, out, _ = _in_process("probe", dead, "--json")
    assert status == 0
    document = _one_document(out)
    assert document["target"] == dead
    assert "target" not in library
    assert list(document)[1:] == list(library)
    for claim, decision in library["decisions"].items():
        cli = document["decisions"][claim]
        assert (cli["verdict"], cli["reason"], cli["detail"]) == (
            decision["verdict"],
            decision["reason"],
            decision["detail"],
        ), claim


def test_a_timed_out_front_door_is_refused_unreachable() -> None:
    with serve_capture(REAL, latency_s=2.0) as door:
        status, out, err = _in_process("probe", door.url, "--json", "--timeout", "0.3")
    assert status == 0, err
    document = _one_document(out)
    _assert_unreachable(document, door.url)
    assert "timed_out" in {r["outcome"] for r in document["front_door"]["routes"].values()}


def test_a_tls_failure_is_refused_unreachable() -> None:
    """``https://`` to a plain-HTTP listener: the handshake fails on every request."""
    with serve_capture(REAL) as door:
        target = door.url.replace("http://", "https://", 1)
        status, out, err = _in_process("probe", target, "--json", "--timeout", "2")
    assert status == 0, err
    document = _one_document(out)
    _assert_unreachable(document, target)
    assert "SSL" in document["decisions"]["parallel"]["detail"]


def test_an_erroring_front_door_is_refused_not_answering() -> None:
    faults = {route: Fault(status=500) for route in Route if route.probe_readable}
    with serve_capture(REAL, faults=faults) as door:
        status, out, err = _in_process("probe", door.url, "--json")
        required, _, _ = _in_process("probe", door.url, "--json", "--require", "capacity")
    assert status == 0, err
    document = _one_document(out)
    _assert_refused_for(document, "front_door_not_answering")
    routes = document["front_door"]["routes"]
    health = routes.pop("health")  # a 5xx /health is read: the server says it is unhealthy
    assert (health["outcome"], document["observations"]["health"]) == ("parsed", {"status": 500})
    assert {r["outcome"] for r in routes.values()} == {"http_error"}
    assert "front_door_not_answering" in err
    assert required == 3


# Every route faulted, each its own way: what a dead or broken front door can answer
# (``/health`` answers no body: any 200 there would be an answer).
_BROKEN = [Fault(reset=True), Fault(status=500), Fault(status=503), Fault(status=404)]
_FAULTS = {
    route: st.sampled_from(_BROKEN if route is Route.HEALTH else [*_BROKEN, Fault(garbage=True)])
    for route in Route
    if route.probe_readable
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries(_FAULTS))
def test_a_front_door_that_gives_nothing_to_read_is_always_a_document(
    faults: dict[Route, Fault],
) -> None:
    with serve_capture(REAL, faults=faults) as door:
        status, out, err = _in_process("probe", door.url, "--json")
        required, _, _ = _in_process("probe", door.url, "--json", "--require", "parallel")
    assert (status, required) == (0, 3), err
    document = _one_document(out)
    everything_reset = all(f.reset for f in faults.values())
    reason = "front_door_unreachable" if everything_reset else "front_door_not_answering"
    _assert_refused_for(document, reason)
    (line,) = err.splitlines()
    assert line.endswith(
        f"gave nothing to read: {reason}; every claim about the serving process is refused"
    )


def test_a_live_front_door_still_establishes_and_prints_no_note() -> None:
    with serve_capture(REAL) as door:
        status, out, err = _in_process("probe", door.url, "--json", "--require", "capacity")
        text_status, text, _ = _in_process("probe", door.url)
    assert (status, text_status) == (0, 0)
    assert err == ""
    document = _one_document(out)
    decisions = document["decisions"]
    assert decisions["capacity"]["verdict"] == "established"
    assert decisions["front_door_join"]["verdict"] == "established"
    assert decisions["parallel"]["reason"] == "population_unobserved"  # no log: stage two
    assert all(decisions[c]["reason"] != "front_door_unreachable" for c in SERVING)
    assert "front_door_unreachable" not in text


# --- explain -------------------------------------------------------------------------


def test_a_saved_dead_capture_explains_to_the_same_document(tmp_path: Path) -> None:
    dead = nothing_listening()
    saved = tmp_path / "capture"
    status, probed, _ = _in_process("probe", dead, "--save", str(saved), "--json")
    assert status == 0
    assert (saved / "manifest.json").is_file()
    explained_status, explained, note = _in_process("explain", str(saved), "--json")
    required, _, _ = _in_process("explain", str(saved), "--json", "--require", "parallel")
    text_status, text, _ = _in_process("explain", str(saved))
    assert (explained_status, required, text_status) == (0, 3, 0)
    a, b = _one_document(probed), _one_document(explained)
    _assert_unreachable(a, dead)
    assert b["schema"] == SCHEMA
    assert a["decisions"] == b["decisions"]
    assert a["observations"] == b["observations"]
    assert a["front_door"]["routes"] == b["front_door"]["routes"]
    assert "refused (front_door_unreachable)" in text
    (line,) = note.splitlines()
    assert line.startswith("vllm-evidence explain: note: the saved front door gave nothing")


# --- a fleet -------------------------------------------------------------------------


def _fleet_documents(stdout: str) -> dict[str, dict[str, Any]]:
    documents = [json.loads(line) for line in stdout.splitlines()]
    for document in documents:
        _assert_valid(document)
    by_target = {d["target"]: d for d in documents}
    assert len(by_target) == len(documents)
    return by_target


def test_a_fleet_of_dead_and_live_servers_prints_one_document_each() -> None:
    dead = nothing_listening()
    with serve_capture(REAL) as live:
        out = run_cli("probe", dead, live.url, "--json", "--timeout", "2")
        required = run_cli("probe", dead, live.url, "--json", "--require", "capacity")
        alone = run_cli("probe", live.url, "--json")
    assert out.returncode == 0, out.stderr
    documents = _fleet_documents(out.stdout)
    assert sorted(documents) == sorted([dead, live.url])
    for document in documents.values():
        assert document["schema"] == SCHEMA
        assert "error" not in document
    _assert_unreachable(documents[dead], dead)
    # the live server reads as it does alone: its claims established where they were
    single = json.loads(alone.stdout)
    assert documents[live.url]["decisions"] == single["decisions"]
    assert documents[live.url]["decisions"]["capacity"]["verdict"] == "established"
    assert "1 of 2 servers gave nothing to read" in out.stderr
    assert "error" not in out.stderr
    # under --require: both lines still printed; the dead one refuses the claim
    assert required.returncode == 3
    assert sorted(_fleet_documents(required.stdout)) == sorted([dead, live.url])
    (line,) = required.stderr.splitlines()
    assert "for the serving process: capacity (1 of 2 servers gave nothing to read: " in line


def test_a_fleet_from_a_targets_file_keeps_an_error_line_only_for_a_bad_url(
    tmp_path: Path,
) -> None:
    dead = nothing_listening()
    with serve_capture(REAL) as live:
        listing = tmp_path / "fleet.txt"
        listing.write_text(f"{dead}\nnot a url\n{live.url}\n", encoding="utf-8")
        out = run_cli("probe", "--targets", str(listing), "--json", "--timeout", "2")
    assert out.returncode == 0, out.stderr
    documents = _fleet_documents(out.stdout)
    assert set(documents) == {dead, "not a url", live.url}
    assert set(documents["not a url"]) == {"target", "error"}  # bad usage: an error line
    _assert_unreachable(documents[dead], dead)
    assert documents[live.url]["decisions"]["capacity"]["verdict"] == "established"


def test_a_fleet_table_shows_the_dead_server_refused() -> None:
    dead = nothing_listening()
    with serve_capture(REAL) as live:
        out = run_cli("probe", live.url, dead, "--timeout", "2")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()[2:]}
    assert rows[dead][1:] == ["?", "-", "refused", "refused", "refused", "front_door_unreachable"]
    assert rows[live.url][1] == "0.32.0"
    assert "front_door_unreachable" not in rows[live.url]
