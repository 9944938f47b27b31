"""`assess` and `claim_established`: every decision for one server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests._evidence import (
    assess_witnessed,
    banner,
    engine_init,
    log,
    one_line_capacity,
    probe_stub,
    real_log,
)
from tests._paths import REAL
from vllm_evidence._assessment import CLAIMS, Subject, assess, claim_established
from vllm_evidence._output.assessment import AssessmentDocument, assessment_document
from vllm_evidence.errors import InputError


def _document(**kw: Any) -> AssessmentDocument:
    doc = assessment_document(assess(**kw))
    # the document is plain JSON: it survives a round trip unchanged
    assert json.loads(json.dumps(doc)) == doc
    return doc


def test_a_stub_probe_without_its_log_is_partly_established() -> None:
    assessment = assess(probe_stub())
    assert claim_established(assessment, "front_door_join")
    assert claim_established(assessment, "capacity")
    assert claim_established(assessment, "health_coverage")
    assert not claim_established(assessment, "parallel")
    assert not claim_established(assessment, "served_identity")
    with_log = assess(probe_stub(), real_log())
    assert not claim_established(with_log, "parallel")  # a log alone is not this server's
    assert not claim_established(with_log, "log_join")
    witnessed = assess_witnessed(REAL, real_log())
    assert claim_established(witnessed, "log_join")
    assert claim_established(witnessed, "parallel")
    with pytest.raises(ValueError, match="claim must be one of"):
        claim_established(assessment, "weights")  # type: ignore[arg-type]  # untyped caller


def test_the_last_launch_is_assessed_unless_one_is_named() -> None:
    tp1 = banner("0.32.0") + engine_init(tp=1)
    two = log(tp1 + tp1 + one_line_capacity("1,000"))
    assert len(two.launches) == 2
    assert claim_established(assess(None, two), "capacity", subject=Subject.LAUNCH)
    assert not claim_established(assess(None, two, launch=0), "capacity", subject=Subject.LAUNCH)
    log_doc = _document(startup_log=two, launch=0)["observations"]["startup_log"]
    assert log_doc is not None  # the document types say a log section may be absent
    assert log_doc["assessed_launch"] == 0
    with pytest.raises(InputError, match=r"launch must be 0\.\.1, got 2"):
        assess(None, two, launch=2)


def test_claims_are_the_literal_members_in_report_order() -> None:
    from typing import get_args

    from vllm_evidence import Claim

    assert get_args(Claim) == CLAIMS
    assert CLAIMS == (
        "parallel",
        "capacity",
        "served_identity",
        "health_coverage",
        "front_door_join",
        "log_join",
    )


def test_the_registry_is_the_one_list_of_the_claims() -> None:
    """The registry, the ``Claim`` names, the assessment's fields, the document's keys
    and the schema's ``decisions`` hold the same claims in the same order: adding a
    decision and forgetting one of them fails here."""
    from typing import get_type_hints

    import attrs

    from vllm_evidence._assessment import REGISTRY, Assessment
    from vllm_evidence._output.assessment import DecisionsDocument
    from vllm_evidence.serialize import schema

    names = tuple(spec.name for spec in REGISTRY)
    assert names == CLAIMS
    fields = tuple(f.name for f in attrs.fields(Assessment))
    assert fields == ("evidence", "startup_log", *names)
    assert tuple(get_type_hints(DecisionsDocument)) == names
    decisions = schema("assessment")["$defs"]["assessment"]["properties"]["decisions"]
    assert tuple(decisions["properties"]) == names
    assert tuple(decisions["required"]) == names
    assert [spec.title for spec in REGISTRY] == [
        "parallel layout",
        "KV-cache capacity",
        "served model",
        "/health covers",
        "one process",
        "log is this server's",
    ]


def test_each_claim_is_decided_by_its_function_and_its_arms_are_the_decisions_arms() -> None:
    """Each registered function decides its claim (the assessment holds its answer), and
    the arms ``ARMS`` names for it are exactly the arms of that decision's union."""
    from typing import get_args, get_type_hints

    from vllm_evidence._assessment import REGISTRY, claim_decisions, verdict
    from vllm_evidence.decisions import ARMS

    assert tuple(ARMS) == tuple(spec.name for spec in REGISTRY)

    assessment = assess_witnessed(REAL, real_log())
    decided = claim_decisions(assessment)
    for spec in REGISTRY:
        again = spec.decide(assessment.evidence)
        assert type(again) is type(decided[spec.name])
        assert again.reason is decided[spec.name].reason
        arms = set(get_args(get_type_hints(spec.decide)["return"]))
        named = ARMS[spec.name]
        assert set(named.verdicts()) == arms, spec.name
        # an arm's verdict is read from its class: a bare instance is enough to ask
        assert verdict(object.__new__(named.refused)) == "refused"
        assert verdict(object.__new__(named.established)) == "established"
    assert {claim: verdict(d) for claim, d in decided.items()} == {
        **dict.fromkeys(CLAIMS, "established"),
        "served_identity": "refused",  # the capture serves an alias of its path
    }
    alone = claim_decisions(assess(probe_stub()))
    assert verdict(alone["parallel"]) == "refused"
    assert verdict(alone["log_join"]) == "refused"
    reported = assess(None, log(banner("0.20.0") + _two_line("1,000")))
    assert verdict(reported.capacity) == "reported"


def _two_line(tokens: str) -> str:
    from tests._evidence import two_line_capacity

    return two_line_capacity(tokens)


def test_str_is_one_line_naming_what_was_read_and_the_answer() -> None:
    """``str(assessment)`` is the short form: the target (or the log's launch), the
    release, the summary; the report is ``output.report.render_report``."""
    import re

    probed = assess(probe_stub())
    assert re.fullmatch(
        r"Assessment\(http://127\.0\.0\.1:[0-9]+, vLLM 0\.32\.0, serving claims: 3 of 6 "
        r"established — parallel refused: [^\n]+\)",
        str(probed),
    ), str(probed)
    witnessed = assess_witnessed(REAL, real_log())
    assert str(witnessed).endswith(
        ", vLLM 0.32.0, serving claims: 5 of 6 established — served_identity refused: "
        "served id(s) 'tiny-llama:q4-alias' are not derivable from the configured path "
        "'/models/tiny- …)"
    )
    alone = assess(None, real_log())
    assert str(alone).startswith("Assessment(startup log ")
    assert " launch 0, vLLM 0.32.0, launch claims: " in str(alone)
    assert str(assess()).startswith(
        "Assessment(no evidence, vLLM (version unobserved), launch claims: 0 of 6 "
        "established — parallel refused: "
    )
    for one in (probed, witnessed, alone):
        assert "\n" not in str(one)
        assert repr(one).startswith("Assessment(evidence=Evidence(")  # repr stays the fields


def test_a_launch_claim_is_not_a_serving_claim() -> None:
    """A log alone establishes claims about its launch; claim_established answers for the
    serving process unless asked about the launch, and a serving claim is not a launch's."""
    launch_only = assess(None, real_log())
    assert launch_only.subject is Subject.LAUNCH
    assert claim_established(launch_only, "parallel", subject=Subject.LAUNCH)
    assert not claim_established(launch_only, "parallel")
    serving = assess(probe_stub())
    assert claim_established(serving, "capacity")
    assert not claim_established(serving, "capacity", subject=Subject.LAUNCH)


def test_a_verdict_is_asked_of_a_decision_only() -> None:
    """An arm's verdict comes from the decisions' one list of arms; a value that is no
    arm (a reason, an assessment, a string) is a TypeError, never a quiet "refused"."""
    from vllm_evidence._assessment import verdict

    assessment = assess(probe_stub())
    assert verdict(assessment.parallel) == "refused"
    for value in (assessment, assessment.parallel.reason, "refused", None):
        with pytest.raises(TypeError, match=r"verdict\(\) takes a decision"):
            verdict(value)
