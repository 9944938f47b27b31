"""The assessment JSON contract (schema /2): public keys, exact figures, null refusals,
a subject on every decision, and the log join."""

from __future__ import annotations

import json
from typing import Any

from tests._evidence import assess_witnessed, banner, log, one_line_capacity, real_log
from tests._paths import REAL
from vllm_evidence._assessment import CLAIMS, assess
from vllm_evidence._output.assessment import AssessmentDocument, assessment_document
from vllm_evidence._readback import load


def _document(**kw: Any) -> AssessmentDocument:
    doc = assessment_document(assess(**kw))
    # the document is plain JSON: it survives a round trip unchanged
    assert json.loads(json.dumps(doc)) == doc
    return doc


def test_the_document_carries_the_public_keys() -> None:
    doc = assessment_document(assess_witnessed(REAL, real_log()))
    assert json.loads(json.dumps(doc)) == doc
    assert doc["schema"] == "vllm-evidence.assessment/9"
    assert doc["version"] == "0.32.0"
    decisions = doc["decisions"]
    assert set(decisions) == set(CLAIMS)
    assert {decisions[claim]["subject"] for claim in CLAIMS} == {"serving"}

    parallel = decisions["parallel"]
    assert (parallel["verdict"], parallel["reason"]) == ("established", "established")
    assert parallel["tensor_parallel_size"] == 1
    assert parallel["expected_ranks"] == [0]
    assert parallel["present_ranks"] == [0]

    capacity = decisions["capacity"]
    assert (capacity["verdict"], capacity["reason"]) == ("established", "established")
    assert capacity["source"] == "label_kv_cache_size_tokens"
    [engine] = capacity["engines"]
    assert engine["engine"] == "0"
    assert engine["tokens"] == 4194304
    assert type(engine["tokens"]) is int
    assert engine["max_concurrency"] == "2048.0"  # the label's text, exactly
    assert engine["max_model_len"] == 2048
    assert type(engine["max_model_len"]) is int

    identity = decisions["served_identity"]
    assert (identity["verdict"], identity["reason"]) == ("refused", "served_id_not_derivable")
    assert identity["served_ids"] == ["tiny-llama:q4-alias"]
    assert identity["configured_path"] == "/models/tiny-llama"

    health = decisions["health_coverage"]
    assert (health["verdict"], health["reason"], health["backend"]) == (
        "established",
        "established",
        "mp",
    )

    join = decisions["front_door_join"]
    assert (join["verdict"], join["reason"]) == ("established", "established")
    log_join = decisions["log_join"]
    assert (log_join["verdict"], log_join["reason"], log_join["remedy"]) == (
        "established",
        "established",
        None,
    )
    assert log_join["process_start_time_seconds"] == "1796011852.21"
    assert (log_join["pid"], log_join["pid_tagged"]) == (23930, True)
    receipt = log_join["receipt"]
    assert receipt is not None
    assert receipt["pid"] == 23930
    assert receipt["log_bytes"] == real_log().size_bytes
    assert "observations" in doc


def test_a_caller_assembled_front_door_never_joins_a_log() -> None:
    doc = _document(front_door=load(REAL, bodies=True), startup_log=real_log())
    decisions = doc["decisions"]
    assert decisions["front_door_join"]["reason"] == "caller_assembled"
    log_join = decisions["log_join"]
    assert (log_join["verdict"], log_join["reason"]) == ("refused", "marker_unobserved")
    assert log_join["receipt"] is None
    assert decisions["parallel"]["reason"] == "log_not_joined"
    assert decisions["capacity"]["reason"] == "established"  # the label, the front door's own


def test_a_log_alone_is_about_its_launch() -> None:
    doc = _document(startup_log=real_log())
    decisions = doc["decisions"]
    assert {decisions[claim]["subject"] for claim in CLAIMS} == {"launch"}
    assert decisions["parallel"]["verdict"] == "established"
    assert decisions["log_join"]["reason"] == "no_front_door"


def test_the_log_figure_keeps_its_printed_decimal() -> None:
    doc = _document(startup_log=log(banner("0.32.0") + one_line_capacity("4,194,304")))
    [engine] = doc["decisions"]["capacity"]["engines"]
    assert engine["max_concurrency"] == "2048.00"
    assert engine["tokens"] == 4194304
    assert doc["decisions"]["capacity"]["source"] == "log_capacity_line"


def test_refusals_render_with_null_configuration() -> None:
    doc = _document()
    parallel = doc["decisions"]["parallel"]
    assert (parallel["verdict"], parallel["reason"]) == ("refused", "configuration_unobserved")
    assert parallel["tensor_parallel_size"] is None
    assert parallel["expected_ranks"] is None
    assert parallel["present_ranks"] is None
    assert doc["decisions"]["capacity"]["engines"] == []
    assert doc["decisions"]["capacity"]["source"] is None
    assert doc["decisions"]["served_identity"]["served_ids"] == []
    assert doc["decisions"]["health_coverage"]["backend"] is None
    assert doc["decisions"]["front_door_join"]["reason"] == "no_front_door"
    assert doc["version"] is None


def test_a_reported_capacity_renders_as_reported() -> None:
    from tests._evidence import two_line_capacity

    doc = _document(startup_log=log(banner("0.20.0") + two_line_capacity("1,000")))
    capacity = doc["decisions"]["capacity"]
    assert (capacity["verdict"], capacity["reason"]) == ("reported", "not_group_aware")
    assert capacity["engines"][0]["tokens"] == 1000
