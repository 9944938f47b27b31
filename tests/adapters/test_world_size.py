"""``/get_world_size``: a product, never a configuration; each failure's words."""

from __future__ import annotations

import pytest

from tests._paths import real_body
from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.server_info import (
    ServerInfo,
)
from vllm_evidence._adapters.world_size import WorldSizeProduct, parse_world_size
from vllm_evidence.upstream._routes import ParallelEvidenceKind


def _is_a(value: object, cls: type) -> bool:
    return isinstance(value, cls)


def test_world_size_real_capture_is_a_product_not_a_configuration() -> None:
    parsed = parse_world_size(real_body("get_world_size"))
    assert isinstance(parsed, WorldSizeProduct)
    assert parsed.product == 1
    assert parsed.kind is ParallelEvidenceKind.WORLD_SIZE_PRODUCT
    assert not _is_a(parsed, ServerInfo)
    assert not hasattr(parsed, "tensor_parallel_size")
    assert not hasattr(parsed, "parallel")


@pytest.mark.parametrize("body", [b'{"world_size": 0}', b'{"world_size": "2"}', b"{}", b"2"])
def test_world_size_malformed_is_a_failure(body: bytes) -> None:
    assert isinstance(parse_world_size(body), BodyParseFailure)


# --- each failure's words (mutation testing found them untested) -----------------


def _reason(outcome: object) -> str:
    assert isinstance(outcome, BodyParseFailure), outcome
    return outcome.reason


NOT_JSON = "not JSON (Expecting value: line 1 column 1 (char 0))"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", NOT_JSON),
        (b"[]", "body is not a JSON object"),
        (b'{"world_size": "2"}', 'no "world_size" number in the body'),
        (b'{"world_size": 0}', "world_size '0' is not a positive integer"),
        (b'{"world_size": 2.5}', "world_size '2.5' is not a positive integer"),
    ],
)
def test_world_size_failures_say_what_is_wrong(body: bytes, reason: str) -> None:
    assert _reason(parse_world_size(body)) == reason
