"""The gate's HTTP server over a gate recorded from real assessments: each route in both
directions, the transition of a lost rank on ``/ready`` and ``/metrics``, and hostile
requests (long targets, slow clients, too many connections, unknown paths, methods other
than GET, bad queries), and an address in use."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from prometheus_client.parser import text_string_to_metric_families

from tests.gate._proc import API_SERVER, RANK1, recorded_tree, target_of, tree_of, with_tree
from vllm_evidence._assessment import Assessment, Claim
from vllm_evidence._gate import Gate, GateTarget, TargetRound
from vllm_evidence._gate import server as gate_server
from vllm_evidence._gate.server import GateServer, parse_address
from vllm_evidence.errors import InputError
from vllm_evidence.serialize import schema

REQUIRED: tuple[Claim, ...] = ("parallel", "capacity", "health_coverage")


class Served:
    """A gate and its server on 127.0.0.1, with a liveness the test sets."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.live = (True, "rounds run")
        self.server = GateServer(gate, ("127.0.0.1", 0), lambda: self.live)
        self.server.start()
        self.port = self.server.address[1]

    def get(
        self, path: str, method: str = "GET", headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def json(self, path: str) -> tuple[int, dict[str, Any]]:
        status, headers, body = self.get(path)
        assert headers["Content-Type"] == "application/json"
        document: dict[str, Any] = json.loads(body)
        return status, document

    def raw(self, data: bytes) -> bytes:
        """Send ``data`` as is; everything the server answers before it closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(data)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks)


@pytest.fixture
def served(alive: Assessment) -> Iterator[Served]:
    gate = Gate([GateTarget.of(target_of(alive))], list(REQUIRED))
    one = Served(gate)
    try:
        yield one
    finally:
        one.server.close()


def _metric(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


# -- /ready --------------------------------------------------------------------------------


def test_ready_is_503_before_any_round_and_names_why(served: Served) -> None:
    status, document = served.json("/ready")
    assert status == 503
    assert document["schema"] == "vllm-evidence.gate-ready/1"
    assert (document["ready"], document["round"], document["round_end"]) == (False, 0, None)
    (target,) = document["targets"]
    assert [r["reason"] for r in target["refusals"]] == ["not_assessed"] * 3
    assert target["refusals"][0]["detail"] == "no round yet"
    assert (target["process_tree"], target["process_start_time_seconds"]) == (None, None)


def test_ready_turns_503_on_a_lost_rank_within_the_round_and_back(
    served: Served, alive: Assessment, dead_rank: Assessment, tmp_path: Path
) -> None:
    url = target_of(alive)
    recorded_tree(tmp_path / "all")
    recorded_tree(tmp_path / "lost", without=(RANK1,))
    whole = with_tree(alive, tree_of(tmp_path / "all"))
    lost = with_tree(alive, tree_of(tmp_path / "lost"))

    served.gate.record([TargetRound(url, whole)], duration_s=0.1)
    assert served.get("/ready")[0] == 200
    metrics = served.get("/metrics")[2].decode()
    assert _metric(metrics, "vllm_evidence_ready", target=url) == 1.0
    assert _metric(metrics, "vllm_evidence_claim_established", claim="parallel") == 1.0

    # The next round reads the tree without rank 1: not ready from that round on.
    served.gate.record([TargetRound(url, lost)], duration_s=0.1)
    status, document = served.json("/ready")
    assert status == 503
    assert document["round"] == 2
    (target,) = document["targets"]
    assert [(r["claim"], r["reason"], r["by"]) for r in target["refusals"]] == [
        ("parallel", "rank_lost", "assessment"),
        ("health_coverage", "rank_lost", "assessment"),
    ]
    assert "is gone from the launcher's process tree" in target["refusals"][0]["detail"]
    assert target["lost_processes"][0].startswith(f"rank 1 of world size 2 (pid {RANK1}")
    assert document["required"] == list(REQUIRED)
    # The tree read: the API server, the engine core and rank 0's worker still run.
    assert target["process_tree"] == {"root": API_SERVER, "running": 3, "unavailable": None}
    # The recorded /metrics: process_start_time_seconds 1.79621892679e+09.
    assert target["process_start_time_seconds"] == "1796218926.79"
    metrics = served.get("/metrics")[2].decode()
    assert _metric(metrics, "vllm_evidence_ready", target=url) == 0.0
    assert _metric(metrics, "vllm_evidence_claim_established", claim="parallel") == 0.0
    assert _metric(metrics, "vllm_evidence_claim_established", claim="capacity") == 1.0
    assert (
        _metric(
            metrics,
            "vllm_evidence_claim_info",
            claim="parallel",
            verdict="refused",
            reason="rank_lost",
            by="assessment",
        )
        == 1.0
    )

    # The round after, every rank is in the tree again: each round speaks for itself.
    served.gate.record([TargetRound(url, whole)], duration_s=0.1)
    assert served.get("/ready")[0] == 200
    metrics = served.get("/metrics")[2].decode()
    assert _metric(metrics, "vllm_evidence_ready", target=url) == 1.0
    assert _metric(metrics, "vllm_evidence_claim_established", claim="parallel") == 1.0

    # The log's own death line (the assessment refuses): 503 too, by the assessment.
    served.gate.record([TargetRound(url, dead_rank)], duration_s=0.1)
    status, document = served.json("/ready")
    assert status == 503
    (target,) = document["targets"]
    assert ("parallel", "rank_lost", "assessment") in [
        (r["claim"], r["reason"], r["by"]) for r in target["refusals"]
    ]
    served.gate.record([TargetRound(url, alive)], duration_s=0.1)
    assert served.get("/ready")[0] == 200


def test_ready_of_one_target_by_its_url(alive: Assessment) -> None:
    url = target_of(alive)
    gate = Gate([GateTarget.of(url), GateTarget.of("http://127.0.0.1:1")], ["capacity"])
    one = Served(gate)
    try:
        gate.record(
            [TargetRound(url, alive), TargetRound("http://127.0.0.1:1", "down")], duration_s=0
        )
        assert one.get(f"/ready?target={url}")[0] == 200
        assert one.get(f"/ready?target={url}/")[0] == 200  # cleaned as targets are
        assert one.get("/ready?target=http://127.0.0.1:1")[0] == 503
        status, document = one.json("/ready")
        assert status == 503  # not every target is ready
        assert len(document["targets"]) == 2
        status, document = one.json("/ready?target=http://elsewhere:9")
        assert (status, document["error"]) == (404, "not a target of this gate")
        assert one.json("/assessment")[0] == 400  # which one?
        assert one.json(f"/assessment?target={url}")[0] == 200
    finally:
        one.server.close()


# -- /live ---------------------------------------------------------------------------------


def test_live_answers_what_the_liveness_says(served: Served) -> None:
    status, document = served.json("/live")
    assert (status, document["live"], document["detail"]) == (200, True, "rounds run")
    served.live = (False, "the launched command is not running")
    status, document = served.json("/live")
    assert (status, document["live"]) == (503, False)
    assert document["detail"] == "the launched command is not running"


# -- /metrics ------------------------------------------------------------------------------


def test_metrics_is_the_text_exposition_of_the_gates_series_only(
    served: Served, alive: Assessment
) -> None:
    served.gate.record([TargetRound(target_of(alive), alive)], duration_s=0.5)
    status, headers, body = served.get("/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=")
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert names == {
        "vllm_evidence_claim_established",
        "vllm_evidence_claim_info",  # an info family, as the text format names it
        "vllm_evidence_claim_required",
        "vllm_evidence_ready",
        "vllm_evidence_restarts_seen",
        "vllm_evidence_probe_failures",
        "vllm_evidence_kv_cache_capacity_tokens",
        "vllm_evidence_target_info",
        "vllm_evidence_rounds",
        "vllm_evidence_last_round_duration_seconds",
        "vllm_evidence_last_round_timestamp_seconds",
    }
    text = body.decode()
    assert "vllm:" not in text  # vLLM's own series are not re-exported
    assert "process_cpu_seconds_total" not in text  # nor this process's (no global registry)
    assert _metric(text, "vllm_evidence_rounds_total") == 1.0
    assert _metric(text, "vllm_evidence_last_round_duration_seconds") == 0.5
    assert _metric(text, "vllm_evidence_kv_cache_capacity_tokens", engine="0") == 8388608.0


# -- /assessment ---------------------------------------------------------------------------


def test_assessment_is_probe_jsons_document(served: Served, alive: Assessment) -> None:
    status, document = served.json("/assessment")
    assert status == 503
    assert document == {"target": target_of(alive), "error": "no round yet"}
    served.gate.record([TargetRound(target_of(alive), alive)], duration_s=0)
    status, document = served.json("/assessment")
    assert status == 200
    assert document["target"] == target_of(alive)
    assert str(document["schema"]).startswith("vllm-evidence.assessment/")
    without_target = {k: v for k, v in document.items() if k != "target"}
    Draft202012Validator(schema("assessment")).validate(without_target)
    decisions = document["decisions"]
    assert isinstance(decisions, dict)
    assert decisions["parallel"]["verdict"] == "established"


# -- hostile requests ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_a_method_other_than_get_is_405(served: Served, method: str) -> None:
    status, headers, body = served.get("/ready", method)
    assert status == 405
    assert headers["Allow"] == "GET"
    if method != "HEAD":
        assert json.loads(body)["error"] == "the gate answers GET only"


def test_an_unknown_method_is_501_in_json(served: Served) -> None:
    answer = served.raw(b"BREW /ready HTTP/1.0\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 501 ")
    assert json.loads(body) == {
        "schema": "vllm-evidence.gate-error/1",
        "status": 501,
        "error": "not implemented",
    }


def test_an_unknown_path_is_404_naming_the_routes(served: Served) -> None:
    status, document = served.json("/readyz")
    assert status == 404
    assert document["error"] == (
        "no such route; the gate serves /ready, /live, /metrics, /assessment"
    )
    assert served.json("/")[0] == 404


def test_a_long_request_target_is_414(served: Served) -> None:
    status, document = served.json("/ready?target=http://a/" + "x" * 5000)
    assert (status, document["status"]) == (414, 414)
    # Longer than the standard library's request-line bound: refused by its parser.
    answer = served.raw(b"GET /" + b"y" * 70000 + b" HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.0 414 ")
    assert b"yyyy" not in answer  # the request is never echoed


def test_too_many_headers_is_431(served: Served) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    answer = served.raw(b"GET /ready HTTP/1.0\r\n" + headers + b"\r\n")
    assert answer.startswith(b"HTTP/1.0 431 ")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/ready?nope=1", "/ready takes ?target=URL, once"),
        ("/ready?target=a&target=b", "/ready takes ?target=URL, once"),
        ("/live?target=x", "/live takes no query"),
        ("/ready?a=1&b=2&c=3&d=4&e=5", "more than 4 query fields"),
    ],
)
def test_a_bad_query_is_400(served: Served, path: str, expected: str) -> None:
    status, document = served.json(path)
    assert (status, document["error"]) == (400, expected)


def test_a_garbled_request_line_is_400_and_not_echoed(served: Served) -> None:
    answer = served.raw(b"GET /ready HTTP/9\x00\x01\r\n\r\n")
    assert answer.startswith(b"HTTP/1.0 400 ")
    assert b"\x00" not in answer


def test_a_slow_client_is_cut_off_at_the_connections_deadline(
    alive: Assessment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_server, "CONNECTION_DEADLINE_S", 0.5)
    one = Served(Gate([GateTarget.of(target_of(alive))], ["capacity"]))
    try:
        with socket.create_connection(("127.0.0.1", one.port), timeout=10) as sock:
            begun = time.monotonic()
            closed = False
            while time.monotonic() - begun < 8:  # a byte at a time, never a whole request
                try:
                    sock.sendall(b"G")
                    sock.settimeout(0.2)
                    if sock.recv(1024) == b"":
                        closed = True
                        break
                except TimeoutError:
                    continue
                except OSError:
                    closed = True
                    break
            assert closed
        # And the server answers the next client.
        assert one.get("/live")[0] == 200
    finally:
        one.server.close()


def test_connections_beyond_the_bound_are_503_at_once(
    alive: Assessment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_server, "MAX_CONNECTIONS", 2)
    one = Served(Gate([GateTarget.of(target_of(alive))], ["capacity"]))
    idle = [socket.create_connection(("127.0.0.1", one.port), timeout=10) for _ in range(2)]
    try:
        time.sleep(0.2)  # let the server accept both
        status, _, body = one.get("/live")
        assert status == 503
        assert json.loads(body)["error"] == "too many connections"
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + 10
    while one.get("/live")[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert one.get("/live")[0] == 200
    one.server.close()


# -- the address ---------------------------------------------------------------------------


def test_an_address_in_use_is_a_one_line_error(alive: Assessment) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        gate = Gate([GateTarget.of(target_of(alive))], ["capacity"])
        with pytest.raises(InputError) as caught:
            GateServer(gate, ("127.0.0.1", port), lambda: (True, ""))
    assert str(caught.value) == (
        f"--serve 127.0.0.1:{port}: the address is already in use (another process listens there)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:9100", ("127.0.0.1", 9100)),
        (":9100", ("", 9100)),
        ("[::1]:9100", ("::1", 9100)),
        ("gate.local:0", ("gate.local", 0)),
    ],
)
def test_an_address_is_host_and_port(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9100", "give HOST:PORT"),
        ("host:port", "give HOST:PORT"),
        ("host:99999", "the port must be 0..65535"),
        ("a b:1", "not a host name or address"),
    ],
)
def test_a_bad_address_is_a_one_line_error(text: str, expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        parse_address(text)


def test_the_gate_serves_ipv6_loopback(alive: Assessment) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    gate = Gate([GateTarget.of(target_of(alive))], ["capacity"])
    try:
        server = GateServer(gate, ("::1", 0), lambda: (True, "ok"))
    except InputError as exc:
        pytest.skip(f"no IPv6 loopback here: {exc}")
    server.start()
    try:
        connection = http.client.HTTPConnection("::1", server.address[1], timeout=10)
        connection.request("GET", "/live")
        assert connection.getresponse().status == 200
        assert server.url.startswith("http://[::1]:")
    finally:
        server.close()
