"""``/v1/models``: the real capture, LoRA cards, and malformed bodies with their words."""

from __future__ import annotations

import pytest

from tests._paths import public_capture, real_body
from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.models import ServedModels, parse_models
from vllm_evidence._measure import TokenCount
from vllm_evidence.upstream._routes import Route


def test_models_real_capture() -> None:
    parsed = parse_models(real_body("v1_models"))
    assert isinstance(parsed, ServedModels)
    assert len(parsed.cards) == 1
    card = parsed.cards[0]
    assert card.served_id == "tiny-llama:q4-alias"
    assert card.owned_by == "vllm"
    assert card.root == "/models/tiny-llama"
    assert card.parent is None
    assert card.max_model_len == TokenCount(2048)


def test_models_lora_cards() -> None:
    parsed = parse_models(public_capture("models/aibrix-runtime-lora-adapters.txt"))
    assert isinstance(parsed, ServedModels)
    assert [c.served_id for c in parsed.cards] == [
        "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "lora-1",
        "lora-2",
    ]
    base, lora1, lora2 = parsed.cards
    assert base.parent is None
    assert base.max_model_len == TokenCount(32768)
    assert lora1.parent == "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    assert lora1.root == "bharati2324/Qwen2.5-1.5B-Instruct-Code-LoRA-r16v2"
    assert lora1.max_model_len is None
    assert lora2.root == lora1.root


def test_an_adapter_card_as_vllm_lists_it_beside_the_base() -> None:
    """``--enable-lora --lora-modules myadapter=/models/tiny-llama-lora``, no
    ``--served-model-name``: the base card, then the adapter's (``parent`` the base's id,
    ``root`` the adapter path, ``max_model_len`` null)."""
    body = (
        b'{"object":"list","data":['
        b'{"id":"/models/tiny-llama","object":"model","created":1,"owned_by":"vllm",'
        b'"root":"/models/tiny-llama","parent":null,"max_model_len":2048,"permission":[]},'
        b'{"id":"myadapter","object":"model","created":1,"owned_by":"vllm",'
        b'"root":"/models/tiny-llama-lora","parent":"/models/tiny-llama",'
        b'"max_model_len":null,"permission":[]}]}'
    )
    parsed = parse_models(body)
    assert isinstance(parsed, ServedModels)
    base, adapter = parsed.cards
    assert (base.served_id, base.root, base.parent) == (
        "/models/tiny-llama",
        "/models/tiny-llama",
        None,
    )
    assert (adapter.served_id, adapter.root, adapter.parent, adapter.max_model_len) == (
        "myadapter",
        "/models/tiny-llama-lora",
        "/models/tiny-llama",
        None,
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"data": [{"id": "m", "max_model_len": 2048.5}]}',
        b'{"data": [{"id": "m", "max_model_len": "2048"}]}',
        b'{"data": [{"id": "m", "max_model_len": -1}]}',
        b'{"data": [{"root": "/x"}]}',
        b'{"data": [{"id": "m", "parent": 3}]}',
        b'{"object": "list"}',
        b'{"error": "Unauthorized"}',
        b"not json",
    ],
)
def test_models_malformed_is_a_failure(body: bytes) -> None:
    parsed = parse_models(body)
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route is Route.MODELS


# --- each failure's words (mutation testing found them untested) -----------------


def _reason(outcome: object) -> str:
    assert isinstance(outcome, BodyParseFailure), outcome
    return outcome.reason


NOT_JSON = "not JSON (Expecting value: line 1 column 1 (char 0))"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", NOT_JSON),
        (b'{"data": {}}', 'body is not an object with a "data" list'),
    ],
)
def test_models_failures_say_what_is_wrong(body: bytes, reason: str) -> None:
    assert _reason(parse_models(body)) == reason


def test_a_card_with_an_empty_id_is_refused_and_a_named_one_is_not() -> None:
    empty = b'{"data": [{"id": "", "root": "/m", "parent": null}]}'
    assert isinstance(parse_models(empty), BodyParseFailure)
    named = b'{"data": [{"id": "m", "root": "/m", "parent": null}]}'
    assert not isinstance(parse_models(named), BodyParseFailure)
