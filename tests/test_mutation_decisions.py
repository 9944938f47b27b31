"""Small helpers of the decisions, pinned where mutation testing found them unwitnessed.

Every expected value is written by hand; each helper is checked in both directions.
"""

from __future__ import annotations

import pytest

from tests._evidence import (
    args,
    banner,
    bundle,
    cache_config_metrics,
    engine_init,
    log,
    one_line_capacity,
    two_line_capacity,
    version_body,
)
from vllm_evidence import assess
from vllm_evidence.decisions import CapacityEstablished, CapacityRefused, ParallelRefused
from vllm_evidence.decisions.identity import Derivation, derivation
from vllm_evidence.readback.evidence import arm_name, route_source


class NotFound:
    """Stands for a route outcome arm: only its class name is read."""


class Unauthorized:
    """Stands for a route outcome arm: only its class name is read."""


def test_arm_names_are_snake_case_without_a_leading_underscore() -> None:
    assert arm_name(NotFound()) == "not_found"
    assert arm_name(Unauthorized()) == "unauthorized"


def test_a_route_source_as_json() -> None:
    assert route_source("/metrics").as_json() == {"kind": "front_door", "where": "GET /metrics"}


@pytest.mark.parametrize(
    ("served", "path", "expected"),
    [
        ("/models/m/", "/models/m/", Derivation.EQUALS_PATH),
        ("m", "/models/m/", Derivation.FINAL_PATH_COMPONENT),
        ("mX", "/models/mX", Derivation.FINAL_PATH_COMPONENT),
        ("m", "/models/mX", Derivation.NOT_DERIVABLE),
        ("models/m", "/models/m", Derivation.NOT_DERIVABLE),
        ("m", "m/", Derivation.NOT_DERIVABLE),
    ],
)
def test_derivation(served: str, path: str, expected: Derivation) -> None:
    assert derivation(served, path) is expected


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("{'model': '/models/m'}", "/models/m"),
        ("{'model': \"it's\"}", "it's"),
        ("{'model': 'Qwen/Qwen3-0.6B', 'tensor_parallel_size': 2}", "Qwen/Qwen3-0.6B"),
        ("{'tensor_parallel_size': 2}", None),
    ],
)
def test_the_args_lines_model_is_read_without_its_quotes(
    printed: str, expected: str | None
) -> None:
    launch = log(banner("0.32.0") + args(printed)).launches[-1]
    assert launch.non_default_args[0].model == expected


# --- capacity: engine attribution, scanning order, provenance ------------------------


def _established_capacity(*args: object) -> CapacityEstablished:
    decision = assess(*args).capacity  # type: ignore[arg-type]  # front door / log as given
    assert isinstance(decision, CapacityEstablished), decision
    return decision


def test_engine_index_from_a_0_9_engine_core_tag() -> None:
    """0.8.5/0.9.2 name the engine process ``EngineCore_<i>``."""
    prefix = "(EngineCore_1 pid=201) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "
    decision = _established_capacity(
        None, log(banner("0.32.0") + one_line_capacity("1,024", prefix))
    )
    assert [(e.engine, e.tokens.value) for e in decision.engines] == [("1", 1024)]


def test_engine_index_defaults_to_zero_without_a_dp_tag() -> None:
    prefix = "(EngineCore pid=200) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "
    decision = _established_capacity(
        None, log(banner("0.32.0") + one_line_capacity("1,024", prefix))
    )
    assert decision.engines[0].engine == "0"


def test_a_series_without_the_label_does_not_stop_the_scan() -> None:
    front = bundle(
        version_body("0.32.0"),
        cache_config_metrics(
            'block_size="16",engine="0"', 'engine="1",kv_cache_size_tokens="2048"'
        ),
    )
    decision = _established_capacity(front)
    assert [(e.engine, e.tokens.value) for e in decision.engines] == [("1", 2048)]
    assert decision.engines[0].source.as_json() == {"kind": "front_door", "where": "GET /metrics"}


def test_a_series_without_an_engine_label_is_engine_zero() -> None:
    front = bundle(version_body("0.32.0"), cache_config_metrics('kv_cache_size_tokens="4096"'))
    assert _established_capacity(front).engines[0].engine == "0"


def test_a_v0_block_line_before_a_v1_line_does_not_stop_the_scan() -> None:
    text = (
        banner("0.32.0") + "(EngineCore pid=200) INFO 11-30 04:11:21 [executor_base.py:1] "
        "# cuda blocks: 10, # CPU blocks: 5\n" + one_line_capacity("3,000")
    )
    decision = _established_capacity(None, log(text))
    assert [e.tokens.value for e in decision.engines] == [3000]


def test_a_log_capacity_source_names_its_line_and_process() -> None:
    decision = _established_capacity(None, log(banner("0.32.0") + one_line_capacity("3,000")))
    assert decision.engines[0].source.as_json() == {
        "kind": "startup_log",
        "where": "log launch 0, line 2 (EngineCore pid=200)",
    }


def test_v0_block_size_from_the_engine_line() -> None:
    engine = (
        "INFO 12-27 10:00:05 llm_engine.py:234] Initializing an LLM engine (v0.6.6.post1) "
        "with config: model='/m', tensor_parallel_size=1, pipeline_parallel_size=1, "
        "block_size=32\n"
    )
    blocks = "INFO 12-27 10:00:20 gpu_executor.py:76] # GPU blocks: 100, # CPU blocks: 7\n"
    text = "INFO 12-27 10:00:00 api_server.py:651] vLLM API server version 0.6.6.post1\n"
    decision = _established_capacity(None, log(text + engine + blocks))
    assert decision.engines[0].tokens.value == 3200


def test_two_line_pre_0_27_is_not_established() -> None:
    decision = assess(None, log(banner("0.20.0") + two_line_capacity("5,000"))).capacity
    assert not isinstance(decision, CapacityEstablished | CapacityRefused)
    assert decision.reason.value == "not_group_aware"


# --- parallel: the DP note and the configuration's provenance ---------------------------


def test_the_dp_default_note_and_the_configuration_source() -> None:
    text = (
        banner("0.32.0") + "(APIServer pid=100) INFO 11-30 04:10:58 [api_utils.py:286] "
        "non-default args: {'model': '/m'}\n" + engine_init(dp=None)
    )
    decision = assess(None, log(text)).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.configuration is not None
    assert decision.configuration.data_parallel_note == (
        "data_parallel_size absent from the non-default args (line 2): the default, 1"
    )
    assert decision.configuration.source.as_json() == {
        "kind": "startup_log",
        "where": "log launch 0, line 3 (EngineCore pid=200)",
    }
