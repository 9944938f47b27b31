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
from vllm_evidence.assessment import CLAIMS, Subject, assess, claim_established
from vllm_evidence.errors import InputError
from vllm_evidence.output.assessment import AssessmentDocument, assessment_document


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
