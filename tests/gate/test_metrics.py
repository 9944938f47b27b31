"""The gate's series: Prometheus naming, exact values, and the cardinality bound — per
target and claim, over the closed reason set, whatever assessments the rounds give."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from tests.gate._proc import target_of
from vllm_evidence._assessment import Assessment
from vllm_evidence._claims import CLAIMS
from vllm_evidence._gate import CLOSED_REASONS, Gate, GateTarget, TargetRound
from vllm_evidence._gate.metrics import exposition, gate_registry, series_bound
from vllm_evidence.testing import assessments

_NAME = re.compile(r"vllm_evidence_[a-z_]+")


def _samples(gate: Gate) -> list[tuple[str, dict[str, str], float]]:
    text = exposition(gate_registry(gate)).decode()
    return [
        (s.name, dict(s.labels), float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def test_names_follow_the_conventions(alive: Assessment) -> None:
    gate = Gate([GateTarget.of(target_of(alive))], ["parallel"])
    gate.record([TargetRound(target_of(alive), alive)], duration_s=0.1)
    text = exposition(gate_registry(gate)).decode()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    assert all(_NAME.fullmatch(name) for name in types)
    counters = {name for name, kind in types.items() if kind == "counter"}
    assert counters == {
        "vllm_evidence_restarts_seen_total",
        "vllm_evidence_probe_failures_total",
        "vllm_evidence_rounds_total",
    }
    assert types["vllm_evidence_last_round_duration_seconds"] == "gauge"
    assert types["vllm_evidence_kv_cache_capacity_tokens"] == "gauge"
    # The text format has no info type: an info family is a gauge of 1 named _info.
    assert types["vllm_evidence_claim_info"] == "gauge"
    assert types["vllm_evidence_target_info"] == "gauge"
    assert all(not name.endswith("_total") for name, kind in types.items() if kind == "gauge")


def test_exactly_the_series_of_the_bound_for_one_established_target(alive: Assessment) -> None:
    gate = Gate([GateTarget.of(target_of(alive), [("zone", "a")])], ["parallel", "capacity"])
    gate.record([TargetRound(target_of(alive), alive)], duration_s=0.1)
    samples = _samples(gate)
    per_claim = [s for s in samples if s[0] == "vllm_evidence_claim_established"]
    info = [s for s in samples if s[0] == "vllm_evidence_claim_info"]
    required = [s for s in samples if s[0] == "vllm_evidence_claim_required"]
    assert len(per_claim) == len(info) == len(CLAIMS)
    assert sorted(s[1]["claim"] for s in required) == ["capacity", "parallel"]
    # 6 established + 6 info + 2 required + ready, restarts, failures, target info
    # + 1 engine's capacity + rounds, duration, timestamp.
    assert len(samples) == 6 + 6 + 2 + 4 + 1 + 3
    assert len(samples) <= series_bound(1)
    target_info = next(s for s in samples if s[0] == "vllm_evidence_target_info")
    assert target_info[1] == {"target": target_of(alive), "zone": "a"}


def test_before_any_round_there_is_no_round_duration_or_timestamp(alive: Assessment) -> None:
    gate = Gate([GateTarget.of(target_of(alive))], ["parallel"])
    names = {s[0] for s in _samples(gate)}
    assert "vllm_evidence_rounds_total" in names
    assert "vllm_evidence_last_round_duration_seconds" not in names
    assert "vllm_evidence_last_round_timestamp_seconds" not in names
    assert "vllm_evidence_kv_cache_capacity_tokens" not in names


TARGETS = ("http://10.0.0.1:8000", "http://10.0.0.2:8000", "http://10.0.0.3:8000")


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(st.lists(assessments(), min_size=3, max_size=3), min_size=1, max_size=3))
def test_cardinality_is_bounded_by_targets_claims_and_the_closed_reasons(
    rounds: list[list[Assessment]],
) -> None:
    gate = Gate([GateTarget.of(t) for t in TARGETS], ["parallel", "health_coverage"])
    label_sets: set[tuple[tuple[str, str], ...]] = set()
    for results in rounds:
        gate.record(
            [TargetRound(t, a) for t, a in zip(TARGETS, results, strict=True)], duration_s=0
        )
        samples = _samples(gate)
        assert len(samples) <= series_bound(len(TARGETS))
        for name, labels, value in samples:
            if name == "vllm_evidence_claim_info":
                assert labels["reason"] in CLOSED_REASONS
                assert labels["verdict"] in {"established", "reported", "refused"}
                assert labels["by"] in {"assessment", "gate"}
                assert value == 1.0
            if name == "vllm_evidence_claim_established":
                assert value in (0.0, 1.0)
            label_sets.add((("__name__", name), *sorted(labels.items())))
    # Over every round, still within targets × claims × verdicts × reasons × sources.
    info_sets = [s for s in label_sets if ("__name__", "vllm_evidence_claim_info") in s]
    assert len(info_sets) <= len(TARGETS) * len(CLAIMS) * 3 * len(CLOSED_REASONS) * 3
    # One info series per (target, claim) at a time.
    current = [s for s in _samples(gate) if s[0] == "vllm_evidence_claim_info"]
    assert len(current) == len(TARGETS) * len(CLAIMS)
