"""The generation canary: one POST, what it establishes, and where it shows.

Each answer the stub gives is written here by hand (its status and body), so each
``generation`` verdict is checked against bytes the test chose, never against the code
that judges them."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest

from tests.gate._proc import SCENARIO
from vllm_evidence import assess, probe
from vllm_evidence._assessment import Assessment
from vllm_evidence._capture.canary import CANARY_PROMPT, CanaryExchange, send_canary
from vllm_evidence._gate import Gate, GateTarget, TargetRound
from vllm_evidence._gate.canary import (
    CanaryReason,
    CanaryResult,
    judge_canary,
    run_canary,
    served_base_model,
)
from vllm_evidence._gate.metrics import exposition, gate_registry
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.errors import InputError, SealedTypeError
from vllm_evidence.testing._stub import (
    COMPLETION_BODY,
    Fault,
    StubFrontDoor,
    forbidden_requests,
    serve_capture,
)
from vllm_evidence.upstream._routes import Route

_ZERO_TOKENS = b'{"choices":[{"text":""}],"usage":{"completion_tokens":0}}'
_TRUE_TOKENS = b'{"choices":[{"text":" a"}],"usage":{"completion_tokens":true}}'


def _canary(door: StubFrontDoor, model: str = "tiny-llama", **kwargs: object) -> CanaryResult:
    exchange = asyncio.run(send_canary(door.url, model, **kwargs))  # type: ignore[arg-type]
    return judge_canary(exchange)


def _posts(door: StubFrontDoor) -> list[str]:
    return [r.path for r in door.requests if r.method == "POST"]


# -- what one answer establishes -------------------------------------------------------------


def test_a_token_back_is_generation_established() -> None:
    with serve_capture(SCENARIO, completion=Fault()) as door:
        result = _canary(door)
        (request,) = door.requests
    assert (result.generated, result.reason) == (True, CanaryReason.GENERATED)
    assert (result.model, result.status) == ("tiny-llama", 200)
    assert result.detail.startswith("POST /v1/completions for 'tiny-llama': 1 token(s) in ")
    assert (request.method, request.path) == ("POST", "/v1/completions")
    assert forbidden_requests([request]) == [request]  # a probe may never send it
    assert forbidden_requests([request], canary=True) == []
    headers = dict(request.headers)
    assert headers["x-vllm-evidence-canary"] == "1"
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == str(
        len(
            json.dumps(
                {"model": "tiny-llama", "prompt": CANARY_PROMPT, "max_tokens": 1, "temperature": 0},
                separators=(",", ":"),
            )
        )
    )


@pytest.mark.parametrize(
    ("fault", "reason", "said"),
    [
        (Fault(status=500, body=b'{"error":"EngineDeadError"}'), "canary_http_error", "HTTP 500"),
        (Fault(status=503), "canary_http_error", "HTTP 503"),
        (Fault(status=404, body=b'{"detail":"Not Found"}'), "canary_http_error", "HTTP 404"),
        (Fault(garbage=True), "canary_unparsed", "not JSON"),
        (Fault(body=b"[" * 5000 + b"]" * 5000), "canary_unparsed", "not JSON"),
        (Fault(body=b'["a list"]'), "canary_unparsed", "not a JSON object"),
        (Fault(body=b'{"choices":[],"usage":{"completion_tokens":1}}'), "canary_no_token", ""),
        (Fault(body=_ZERO_TOKENS), "canary_no_token", "is 0"),
        (Fault(body=_TRUE_TOKENS), "canary_no_token", "is True"),
        (Fault(body=b'{"choices":[{"text":" a"}]}'), "canary_no_token", "is None"),
        (Fault(oversize_bytes=200_000), "canary_too_large", "larger than 65536 bytes"),
        (Fault(reset=True), "canary_unreachable", ""),
    ],
)
def test_anything_but_a_token_back_is_generation_refused(
    fault: Fault, reason: str, said: str
) -> None:
    with serve_capture(SCENARIO, completion=fault) as door:
        result = _canary(door)
        posts = _posts(door)
    assert result.generated is False
    assert result.reason.value == reason, result.detail
    assert said in result.detail
    assert posts == ["/v1/completions"]  # sent once, never again on a new connection


def test_a_float_in_the_answer_is_read_not_refused() -> None:
    body = (
        b'{"choices":[{"text":" a","logprobs":{"token_logprobs":[-0.25]}}],'
        b'"usage":{"completion_tokens":1}}'
    )
    with serve_capture(SCENARIO, completion=Fault(body=body)) as door:
        assert _canary(door).generated is True


def test_an_answer_after_the_deadline_is_timed_out() -> None:
    with serve_capture(SCENARIO, completion=Fault(delay_s=2.0)) as door:
        result = _canary(door, timeout_s=0.3)
    assert result.reason is CanaryReason.TIMED_OUT
    assert result.elapsed_s is not None
    assert result.elapsed_s < 1.5


def test_a_closed_port_is_unreachable() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
    exchange = asyncio.run(send_canary(f"http://127.0.0.1:{port}", "m", timeout_s=2))
    result = judge_canary(exchange)
    assert result.reason is CanaryReason.UNREACHABLE
    assert "ConnectionRefusedError" in result.detail


def test_the_api_key_goes_as_a_bearer_token_and_never_comes_back() -> None:
    key = "sk-canary-secret-0123456789"
    reflecting = COMPLETION_BODY.replace(b'"model":"stub"', b'"model":"' + key.encode() + b'"')
    with serve_capture(SCENARIO, api_key=key, completion=Fault(body=reflecting)) as door:
        without = _canary(door)
        exchange = asyncio.run(send_canary(door.url, "m", api_key=key))
        sent = [dict(r.headers).get("authorization") for r in door.requests]
    assert (without.reason, without.status) == (CanaryReason.HTTP_ERROR, 401)
    assert judge_canary(exchange).generated is True
    assert sent == [None, f"Bearer {key}"]
    assert exchange.body is not None
    assert key.encode() not in exchange.body
    assert b'"model":"***"' in exchange.body
    assert key not in repr(exchange)


@pytest.mark.parametrize(
    ("model", "kwargs", "said"),
    [
        ("", {}, "a model id of 1 to 1024 characters"),
        ("m" * 1025, {}, "a model id of 1 to 1024 characters"),
        ("m", {"api_key": "has space"}, "printable ASCII with no spaces"),
        ("m", {"timeout_s": 0}, "positive finite number of seconds"),
        ("m", {"timeout_s": float("inf")}, "positive finite number of seconds"),
    ],
)
def test_bad_input_is_an_input_error_before_anything_is_sent(
    model: str, kwargs: dict[str, object], said: str
) -> None:
    with serve_capture(SCENARIO, completion=Fault()) as door:
        with pytest.raises(InputError, match=said):
            asyncio.run(send_canary(door.url, model, **kwargs))  # type: ignore[arg-type]
        assert door.requests == []


def test_an_exchange_and_a_result_are_sealed() -> None:
    with pytest.raises(SealedTypeError):
        CanaryExchange()  # type: ignore[call-arg]
    with pytest.raises(SealedTypeError):
        CanaryResult()  # type: ignore[call-arg]


def test_the_probe_itself_never_sends_a_completion() -> None:
    with serve_capture(SCENARIO, completion=Fault()) as door:
        asyncio.run(probe(door.url))
        assert forbidden_requests(door.requests) == []
        assert _posts(door) == []


# -- which model, from the round's own /v1/models ---------------------------------------------


def _assessment(door: StubFrontDoor) -> Assessment:
    return assess(readback_from_batch(asyncio.run(probe(door.url))), None)


def test_the_canary_names_the_base_model_served_this_round() -> None:
    served = json.loads((SCENARIO / "v1_models.body").read_bytes())["data"][0]["id"]
    with serve_capture(SCENARIO, completion=Fault()) as door:
        assessment = _assessment(door)
        result = asyncio.run(run_canary(door.url, assessment))
    assert served_base_model(assessment) == served
    assert (result.generated, result.model) == (True, served)


def test_an_adapters_card_is_never_the_canarys_model(tmp_path: Path) -> None:
    directory = tmp_path / "capture"
    directory.mkdir()
    for path in SCENARIO.iterdir():
        if path.is_file():
            (directory / path.name).write_bytes(path.read_bytes())
    models = json.loads((SCENARIO / "v1_models.body").read_bytes())
    base = models["data"][0]
    adapter = {**base, "id": "my-adapter", "root": "/adapters/a", "parent": base["id"]}
    models["data"] = [adapter, base]
    (directory / "v1_models.body").write_text(json.dumps(models), encoding="utf-8")
    with serve_capture(directory, completion=Fault()) as door:
        assert served_base_model(_assessment(door)) == base["id"]


def test_no_models_this_round_sends_no_canary() -> None:
    faults = {Route.MODELS: Fault(status=500, body=b"{}")}
    with serve_capture(SCENARIO, faults=faults, completion=Fault()) as door:
        assessment = _assessment(door)
        result = asyncio.run(run_canary(door.url, assessment))
        posts = _posts(door)
    assert (result.generated, result.reason, result.model) == (
        False,
        CanaryReason.NO_MODEL,
        None,
    )
    assert posts == []


# -- the gate's claim -----------------------------------------------------------------------


def _result(door: StubFrontDoor) -> tuple[Assessment, CanaryResult]:
    assessment = _assessment(door)
    return assessment, asyncio.run(run_canary(door.url, assessment))


def test_generation_is_required_only_with_the_canary() -> None:
    target = GateTarget.of("http://127.0.0.1:9")
    with pytest.raises(InputError, match="require it with --canary"):
        Gate([target], ["generation"])
    without = Gate([target], ["parallel"])
    assert [c.claim for c in without.snapshot.targets[0].claims][-1] == "log_join"
    with_canary = Gate([target], ["generation"], canary=True)
    assert [c.claim for c in with_canary.snapshot.targets[0].claims][-1] == "generation"


def test_ready_on_generation_follows_this_rounds_canary_only() -> None:
    with serve_capture(SCENARIO, completion=Fault()) as door:
        gate = Gate([GateTarget.of(door.url)], ["generation"], canary=True)
        assessment, generated = _result(door)
        door.set_completion(Fault(status=500, body=b"{}"))
        _, failed = _result(door)
    first = gate.record([TargetRound(door.url, assessment, generated)], duration_s=0.1)
    (state,) = first.targets
    claim = state.claims[-1]
    assert (state.ready, claim.claim, claim.established, claim.by.value) == (
        True,
        "generation",
        True,
        "canary",
    )
    second = gate.record([TargetRound(door.url, assessment, failed)], duration_s=0.1)
    (state,) = second.targets
    assert state.ready is False
    assert [(c.claim, c.reason) for c in state.refusals] == [("generation", "canary_http_error")]
    # A round that sent no canary is not carried over from the one that generated.
    gate.record([TargetRound(door.url, assessment, generated)], duration_s=0.1)
    third = gate.record([TargetRound(door.url, assessment)], duration_s=0.1)
    (state,) = third.targets
    assert state.ready is False
    assert [(c.claim, c.reason, c.by.value) for c in state.refusals] == [
        ("generation", "not_assessed", "gate")
    ]


def test_a_failed_canary_holds_ready_only_when_generation_is_required() -> None:
    with serve_capture(SCENARIO, completion=Fault(status=503)) as door:
        assessment, failed = _result(door)
        gate = Gate([GateTarget.of(door.url)], ["served_identity"], canary=True)
    (state,) = gate.record([TargetRound(door.url, assessment, failed)], duration_s=0.1).targets
    assert state.claims[-1].established is False
    assert assessment.served_identity.reason.value == "established"
    assert state.ready is True


def test_the_generation_claim_is_a_metric() -> None:
    with serve_capture(SCENARIO, completion=Fault()) as door:
        assessment, generated = _result(door)
        gate = Gate([GateTarget.of(door.url)], ["generation"], canary=True)
    gate.record([TargetRound(door.url, assessment, generated)], duration_s=0.1)
    text = exposition(gate_registry(gate)).decode()
    assert f'vllm_evidence_claim_established{{claim="generation",target="{door.url}"}} 1.0' in text
    assert f'vllm_evidence_claim_required{{claim="generation",target="{door.url}"}} 1.0' in text
    info = next(
        line
        for line in text.splitlines()
        if line.startswith("vllm_evidence_claim_info{") and 'claim="generation"' in line
    )
    assert 'by="canary"' in info
    assert 'reason="generated"' in info


def test_the_request_guard_excuses_only_the_marked_canary() -> None:
    """A POST to the completions route without the canary's mark (a probe gone wrong)
    is still forbidden, and so is a marked request to any other route."""
    from vllm_evidence.testing._stub import StubRequest

    mark = (("x-vllm-evidence-canary", "1"),)
    unmarked = StubRequest("POST", "/v1/completions", ())
    elsewhere = StubRequest("POST", "/v1/chat/completions", mark)
    marked_get = StubRequest("GET", "/v1/completions", mark)
    canary = StubRequest("POST", "/v1/completions", mark)
    requests = [unmarked, elsewhere, marked_get, canary]
    assert forbidden_requests(requests, canary=True) == [unmarked, elsewhere, marked_get]


def test_ready_names_this_rounds_canary() -> None:
    from vllm_evidence._gate.documents import ready_document

    with serve_capture(SCENARIO, completion=Fault(status=500, body=b"{}")) as door:
        assessment, failed = _result(door)
        gate = Gate([GateTarget.of(door.url)], ["generation"], canary=True)
    before = ready_document(gate.snapshot)
    assert isinstance(before, dict)
    assert (before["canary"], before["targets"][0]["canary"]) == (True, None)
    gate.record([TargetRound(door.url, assessment, failed)], duration_s=0.1)
    document = ready_document(gate.snapshot)
    assert isinstance(document, dict)
    (target,) = document["targets"]
    record = target["canary"]
    assert (record["generated"], record["reason"], record["status"]) == (
        False,
        "canary_http_error",
        500,
    )
    assert record["model"] == served_base_model(assessment)
    assert isinstance(record["elapsed_s"], float)
    assert [r["claim"] for r in target["refusals"]] == ["generation"]
    plain = ready_document(Gate([GateTarget.of(door.url)], ["parallel"]).snapshot)
    assert isinstance(plain, dict)
    assert plain["canary"] is False
