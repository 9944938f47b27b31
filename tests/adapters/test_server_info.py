"""``/server_info`` in its text and JSON forms: real bodies, older releases, failures."""

from __future__ import annotations

import pytest

from tests._paths import real_body
from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.server_info import (
    ServerInfo,
    ServerInfoForm,
    parse_server_info_json,
    parse_server_info_text,
    split_config_text,
)
from vllm_evidence.upstream._routes import Route


def test_server_info_text_real_capture() -> None:
    parsed = parse_server_info_text(real_body("server_info"))
    assert isinstance(parsed, ServerInfo)
    assert parsed.form is ServerInfoForm.TEXT
    assert parsed.parallel.tensor_parallel_size == 1
    assert parsed.parallel.pipeline_parallel_size == 1
    assert parsed.parallel.data_parallel_size == 1
    assert parsed.parallel.decode_context_parallel_size == 1
    assert parsed.parallel.world_size is None
    assert parsed.parallel.distributed_executor_backend is None
    assert parsed.model == "/models/tiny-llama"
    assert parsed.served_model_name == "tiny-llama:q4-alias"
    assert parsed.instance_id is None


def test_server_info_json_real_capture() -> None:
    parsed = parse_server_info_json(real_body("server_info__config_format_json"))
    assert isinstance(parsed, ServerInfo)
    assert parsed.form is ServerInfoForm.JSON
    p = parsed.parallel
    assert (p.tensor_parallel_size, p.pipeline_parallel_size, p.data_parallel_size) == (1, 1, 1)
    assert p.prefill_context_parallel_size == 1
    assert p.world_size == 1
    assert p.distributed_executor_backend == "mp"
    assert parsed.instance_id == "1796011859079858751"


def test_server_info_text_before_0_10_2_has_no_dp() -> None:
    config = (
        "model='m', speculative_config=None, tokenizer='m', dtype=torch.float16, "
        "tensor_parallel_size=4, pipeline_parallel_size=2, "
        "compilation_config={\"level\": 3, 'x': [1, (2, 3)], 'q': 'a, b=c'}, "
        "served_model_name=m"
    )
    body = ('{"vllm_config": ' + __import__("json").dumps(config) + "}").encode()
    parsed = parse_server_info_text(body)
    assert isinstance(parsed, ServerInfo)
    assert parsed.parallel.tensor_parallel_size == 4
    assert parsed.parallel.pipeline_parallel_size == 2
    assert parsed.parallel.data_parallel_size is None


def test_split_config_text_respects_nesting_and_quotes() -> None:
    items = split_config_text("a=1, b={'k': [1, 2], 'j': (3, 4)}, c='x, y=z', d=f(1, 2)")
    assert items == {"a": "1", "b": "{'k': [1, 2], 'j': (3, 4)}", "c": "'x, y=z'", "d": "f(1, 2)"}
    assert isinstance(split_config_text("a=1, a=2"), ValueError)
    assert isinstance(split_config_text("a=(1, 2"), ValueError)


@pytest.mark.parametrize(
    ("parser", "body"),
    [
        (parse_server_info_text, real_body("server_info__config_format_json")),
        (parse_server_info_json, real_body("server_info")),
        (parse_server_info_text, b'{"vllm_config": "model=\'m\', dtype=auto"}'),
        (parse_server_info_text, b'{"vllm_config": "tensor_parallel_size=two"}'),
        (parse_server_info_json, b'{"vllm_config": {"parallel_config": {}}}'),
        (
            parse_server_info_json,
            b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": "2"}}}',
        ),
        (parse_server_info_text, b"model='m', tensor_parallel_size=1"),
    ],
)
def test_server_info_wrong_form_or_garbage_is_a_failure(parser: object, body: bytes) -> None:
    parsed = parser(body)  # type: ignore[operator]  # the parametrised parsers are callables
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route in (Route.SERVER_INFO, Route.SERVER_INFO_JSON)


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
        (b'{"vllm_config": "x"}', '"vllm_config" is not an object (is this the text form?)'),
        (
            b'{"vllm_config": {"parallel_config": 1}}',
            "vllm_config.parallel_config is not an object",
        ),
        (
            b'{"vllm_config": {"parallel_config": {"pipeline_parallel_size": 1}}}',
            "parallel_config has no tensor_parallel_size",
        ),
        (
            b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": "2"}}}',
            "parallel_config.tensor_parallel_size is not a number",
        ),
        (
            (
                b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": 2, '
                b'"distributed_executor_backend": 3}}}'
            ),
            "parallel_config.distributed_executor_backend is not a string",
        ),
        (
            (
                b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": 2}, '
                b'"model_config": {"model": 3}}}'
            ),
            "model_config.model or served_model_name is not a string",
        ),
        (
            b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": 2}, "instance_id": 3}}',
            "vllm_config.instance_id is not a string",
        ),
    ],
)
def test_server_info_json_failures_say_what_is_wrong(body: bytes, reason: str) -> None:
    assert _reason(parse_server_info_json(body)) == reason


def test_server_info_json_without_model_config_has_no_model() -> None:
    body = (
        b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": 2, '
        b'"decode_context_parallel_size": 2}}}'
    )
    info = parse_server_info_json(body)
    assert not isinstance(info, BodyParseFailure)
    assert (info.model, info.served_model_name) == (None, None)
    assert info.parallel.decode_context_parallel_size == 2
