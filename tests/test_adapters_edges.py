"""Adapter edges mutation testing found untested: each failure's words, boundaries of
numeric rules, whitespace inside label sets, and the scanner's escapes and enum reprs.
Every expected value is written by hand.
"""

from __future__ import annotations

import pytest

from vllm_evidence.adapters._text import strict_top_level_pieces, top_level_pieces
from vllm_evidence.adapters.failure import BodyParseFailure
from vllm_evidence.adapters.health import parse_health
from vllm_evidence.adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence.adapters.models import parse_models
from vllm_evidence.adapters.server_info import parse_server_info_json
from vllm_evidence.adapters.version import SelfReportedVersion, parse_version
from vllm_evidence.adapters.world_size import parse_world_size


def _reason(outcome: object) -> str:
    assert isinstance(outcome, BodyParseFailure), outcome
    return outcome.reason


NOT_JSON = "not JSON (Expecting value: line 1 column 1 (char 0))"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", NOT_JSON),
        (b"[]", "body is not a JSON object"),
        (b'{"v": 1}', 'no "version" string in the body'),
        (b'{"version": "x"}', "'x' is not a PEP 440 version"),
        (b'{"version": "' + b"y" * 80 + b'"}', f"'{'y' * 80}' is not a PEP 440 version"),
        (b'{"version": "' + b"y" * 81 + b'"}', f"'{'y' * 77}...' is not a PEP 440 version"),
    ],
)
def test_version_failures_say_what_is_wrong(body: bytes, reason: str) -> None:
    assert _reason(parse_version(body)) == reason


def test_version_body_not_utf8() -> None:
    assert _reason(parse_version(b'{"version": "\xff"}')) == (
        "not UTF-8 (invalid start byte at byte 13)"
    )


def test_a_version_parses() -> None:
    assert isinstance(parse_version(b'{"version": "0.32.0"}'), SelfReportedVersion)


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


@pytest.mark.parametrize(
    ("status", "engine_answer"),
    [(200, True), (499, False), (500, True), (503, True), (599, True), (600, False), (404, False)],
)
def test_health_statuses_that_speak_about_the_engine(status: int, engine_answer: bool) -> None:
    answer = parse_health(status)
    assert (answer is not None) is engine_answer
    if answer is not None:
        assert answer.status == status


def test_label_sets_may_carry_blanks() -> None:
    body = (
        b"# TYPE vllm:cache_config_info gauge\n"
        b'vllm:cache_config_info{ engine = "0" ,\tblock_size="16" } 1.0\n'
    )
    metrics = parse_metrics(body)
    assert isinstance(metrics, MetricsObservation)
    (series,) = metrics.cache_config_info
    assert (series.label("engine"), series.label("block_size")) == ("0", "16")


@pytest.mark.parametrize(
    ("labels", "reason"),
    [
        ('{0a="1"}', "bad label name"),
        ('{a "1"}', "missing '=' after label name"),
        ("{a=1}", "label value is not quoted"),
        ('{a="1}', "unterminated label value"),
    ],
)
def test_a_damaged_label_set_says_what_is_wrong(labels: str, reason: str) -> None:
    body = f"# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{labels} 1.0\n"
    assert _reason(parse_metrics(body.encode())) == f"malformed targeted sample: {reason}"


def test_the_scanner_skips_escaped_quotes_and_reads_enum_reprs() -> None:
    assert top_level_pieces(r"a='x\', y', b=2") == [r"a='x\', y'", " b=2"]
    assert top_level_pieces("m=<Mode.X: 3, 4>, n=1") == ["m=<Mode.X: 3, 4>", " n=1"]
    assert top_level_pieces("a=1<2, b=3") == ["a=1<2", " b=3"]
    assert top_level_pieces("a=1, b=<") == ["a=1", " b=<"]
    assert top_level_pieces("a;b", ";") == ["a", "b"]
    assert top_level_pieces("x, y,z") == ["x", " y", "z"]


def test_the_strict_scanner_names_an_unclosed_enum_repr() -> None:
    damage = strict_top_level_pieces("a=<B, c=1")
    assert isinstance(damage, ValueError)
    assert str(damage) == "unclosed bracket, expected '>'"
