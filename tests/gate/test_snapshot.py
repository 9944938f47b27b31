"""The gate's snapshot, recorded round by round from real assessments and process trees:
each rule in both directions (a claim lost and held, ready and not, each counter moving
and not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._ports import nothing_listening
from tests.gate._proc import (
    DEATH_LINE,
    ENGINE_CORE,
    RANK1,
    RANK1_LINE,
    recorded_tree,
    target_of,
    tree_of,
    with_tree,
)
from vllm_evidence._assessment import Assessment, Claim, assess
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._gate import (
    CLOSED_REASONS,
    ClaimSource,
    Gate,
    GateTarget,
    TargetRound,
)
from vllm_evidence._gate.snapshot import TargetState
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import serve_capture

REQUIRED: tuple[Claim, ...] = ("parallel", "capacity", "health_coverage")


def _state(gate: Gate) -> TargetState:
    (state,) = gate.snapshot.targets
    return state


def _claim(state: TargetState, name: str) -> tuple[str, str, str]:
    claim = next(c for c in state.claims if c.claim == name)
    return claim.verdict, claim.reason, claim.by.value


def _gate(assessment: Assessment, required: tuple[Claim, ...] = REQUIRED) -> Gate:
    return Gate([GateTarget.of(target_of(assessment))], required)


def test_before_any_round_nothing_is_ready_and_every_claim_says_why(alive: Assessment) -> None:
    gate = _gate(alive)
    snapshot = gate.snapshot
    assert (snapshot.rounds, snapshot.ready, snapshot.last_round_end) == (0, False, None)
    state = _state(gate)
    assert not state.ready
    assert state.unassessed == "no round yet"
    assert {_claim(state, c) for c in REQUIRED} == {("refused", "not_assessed", "gate")}
    assert [c.claim for c in state.refusals] == list(REQUIRED)


def test_a_round_of_an_established_server_is_ready(alive: Assessment, tmp_path: Path) -> None:
    recorded_tree(tmp_path)
    gate = _gate(alive)
    snapshot = gate.record(
        [TargetRound(target_of(alive), with_tree(alive, tree_of(tmp_path)))],
        duration_s=0.25,
    )
    assert (snapshot.rounds, snapshot.ready, snapshot.last_round_duration_s) == (1, True, 0.25)
    state = snapshot.targets[0]
    for claim in REQUIRED:
        assert _claim(state, claim) == ("established", "established", "assessment")
    assert state.refusals == ()
    # Read by hand: vllm:cache_config_info{engine="0",kv_cache_size_tokens="8388608"}.
    assert [(e.engine, e.tokens) for e in state.capacity] == [("0", 8388608)]
    assert state.lost == ()
    assert state.probe_failures == 0


def test_a_worker_gone_from_the_tree_refuses_its_claims_this_round(
    alive: Assessment, tmp_path: Path
) -> None:
    recorded_tree(tmp_path / "before")
    recorded_tree(tmp_path / "after", without=(RANK1,))
    gate = _gate(alive)
    target = target_of(alive)
    gate.record(
        [TargetRound(target, with_tree(alive, tree_of(tmp_path / "before")))],
        duration_s=0,
    )
    snapshot = gate.record(
        [TargetRound(target, with_tree(alive, tree_of(tmp_path / "after")))],
        duration_s=0,
    )
    state = snapshot.targets[0]
    assert not state.ready
    assert not snapshot.ready
    assert _claim(state, "parallel") == ("refused", "rank_lost", "assessment")
    assert _claim(state, "health_coverage") == ("refused", "rank_lost", "assessment")
    # The engine lives: what needs only the engine holds, and so does what needs no worker.
    assert _claim(state, "capacity") == ("established", "established", "assessment")
    assert _claim(state, "served_identity")[0] == "established"
    detail = next(c.detail for c in state.claims if c.claim == "parallel")
    assert detail.startswith(f"rank 1 of world size 2 (pid {RANK1}, log line {RANK1_LINE}) is gone")
    assert "from the launcher's process tree" in detail
    assert [c.claim for c in state.refusals] == ["parallel", "health_coverage"]
    assert [p.pid for p in state.lost] == [RANK1]
    assert state.tree is not None
    assert len(state.tree.members) == 3


def test_a_round_without_a_tree_is_the_assessment_as_it_is(
    alive: Assessment, tmp_path: Path
) -> None:
    """The gate patches nothing: a round whose assessment has no tree keeps every claim
    the log and the front door establish, whatever an earlier round's tree showed."""
    recorded_tree(tmp_path, without=(RANK1,))
    gate = _gate(alive)
    target = target_of(alive)
    gate.record([TargetRound(target, with_tree(alive, tree_of(tmp_path)))], duration_s=0)
    state = gate.record([TargetRound(target, alive)], duration_s=0).targets[0]
    assert state.ready
    assert _claim(state, "parallel") == ("established", "established", "assessment")
    assert (state.lost, state.tree) == ((), None)


def test_the_engine_core_gone_refuses_capacity_too(alive: Assessment, tmp_path: Path) -> None:
    recorded_tree(tmp_path, without=(ENGINE_CORE,))
    gate = _gate(alive)
    state = gate.record(
        [TargetRound(target_of(alive), with_tree(alive, tree_of(tmp_path)))],
        duration_s=0,
    ).targets[0]
    assert _claim(state, "capacity") == ("refused", "engine_dead", "assessment")
    assert _claim(state, "parallel")[1] == "engine_dead"
    assert state.capacity == ()


def test_a_claim_not_required_does_not_hold_readiness(alive: Assessment, tmp_path: Path) -> None:
    recorded_tree(tmp_path, without=(RANK1,))
    gate = _gate(alive, ("capacity",))
    state = gate.record(
        [TargetRound(target_of(alive), with_tree(alive, tree_of(tmp_path)))],
        duration_s=0,
    ).targets[0]
    assert state.ready
    assert _claim(state, "parallel")[1] == "rank_lost"


def test_the_logs_own_death_line_is_the_assessments_refusal(dead_rank: Assessment) -> None:
    gate = _gate(dead_rank)
    state = gate.record([TargetRound(target_of(dead_rank), dead_rank)], duration_s=0).targets[0]
    assert _claim(state, "parallel") == ("refused", "rank_lost", "assessment")
    assert _claim(state, "capacity") == ("refused", "engine_dead", "assessment")
    assert not state.ready


def test_the_logs_own_death_line_is_named_before_the_tree(
    dead_rank: Assessment, tmp_path: Path
) -> None:
    recorded_tree(tmp_path, without=(RANK1,))
    gate = _gate(dead_rank)
    state = gate.record(
        [TargetRound(target_of(dead_rank), with_tree(dead_rank, tree_of(tmp_path)))],
        duration_s=0,
    ).targets[0]
    assert _claim(state, "parallel") == ("refused", "rank_lost", "assessment")
    detail = next(c.detail for c in state.claims if c.claim == "parallel")
    assert f"died at line {DEATH_LINE}" in detail
    assert "process tree" not in detail
    # The tree is shown all the same, with the process it no longer holds.
    assert [p.pid for p in state.lost] == [RANK1]


def test_a_ready_target_loses_readiness_and_gets_it_back(
    alive: Assessment, dead_rank: Assessment
) -> None:
    gate = _gate(alive)
    target = target_of(alive)
    ready = [
        gate.record([TargetRound(target, a)], duration_s=0).ready for a in (alive, dead_rank, alive)
    ]
    assert ready == [True, False, True]


def test_a_round_without_an_assessment_is_a_probe_failure(alive: Assessment) -> None:
    gate = _gate(alive)
    target = target_of(alive)
    gate.record([TargetRound(target, alive)], duration_s=0)
    assert _state(gate).probe_failures == 0
    gate.record([TargetRound(target, "the round failed: OSError: x")], duration_s=0)
    state = _state(gate)
    assert (state.probe_failures, state.ready, state.unassessed) == (
        1,
        False,
        "the round failed: OSError: x",
    )
    assert _claim(state, "parallel") == ("refused", "not_assessed", "gate")


def test_a_front_door_that_answers_nothing_is_a_probe_failure() -> None:
    url = nothing_listening()
    gate = Gate([GateTarget.of(url)], ["parallel"])
    gone = assess(readback_from_batch(probe_sync(url, timeout=2, deadline=5)))
    state = gate.record([TargetRound(url, gone)], duration_s=0).targets[0]
    assert state.probe_failures == 1
    assert _claim(state, "parallel") == ("refused", "front_door_unreachable", "assessment")


def test_a_new_start_time_is_a_restart_seen() -> None:
    from tests.gate._proc import SCENARIO

    with serve_capture(SCENARIO) as door:
        first = assess(readback_from_batch(probe_sync(door.url)))
        again = assess(readback_from_batch(probe_sync(door.url)))
        door.restart()
        restarted = assess(readback_from_batch(probe_sync(door.url)))
    gate = Gate([GateTarget.of(door.url)], ["front_door_join"])
    seen = [
        gate.record([TargetRound(door.url, a)], duration_s=0).targets[0].restarts_seen
        for a in (first, again, restarted, restarted)
    ]
    assert seen == [0, 0, 1, 1]
    assert gate.snapshot.targets[0].process_start_seconds is not None


def test_a_target_keeps_its_state_through_a_round_without_it(alive: Assessment) -> None:
    other = nothing_listening()
    gate = Gate([GateTarget.of(target_of(alive)), GateTarget.of(other)], ["capacity"])
    gate.record([TargetRound(target_of(alive), alive)], duration_s=0)
    snapshot = gate.record([TargetRound(other, "not probed")], duration_s=0)
    assert [t.ready for t in snapshot.targets] == [True, False]
    assert not snapshot.ready
    assert snapshot.target(target_of(alive) + "/") is snapshot.targets[0]
    assert snapshot.target("not a url") is None


def test_every_reason_is_of_the_closed_set(alive: Assessment, dead_rank: Assessment) -> None:
    gate = _gate(alive)
    for assessment in (alive, dead_rank):
        state = gate.record([TargetRound(target_of(alive), assessment)], duration_s=0).targets[0]
        assert {c.reason for c in state.claims} <= CLOSED_REASONS
    assert {"rank_lost", "engine_dead", "not_assessed", "established", "no_witness"} <= (
        CLOSED_REASONS
    )


def test_bad_targets_labels_and_rounds_are_one_line_errors(alive: Assessment) -> None:
    with pytest.raises(InputError, match="at least one target"):
        Gate([], ["parallel"])
    with pytest.raises(InputError, match="unknown claim"):
        Gate([GateTarget.of("http://a:1")], ["paralel"])  # type: ignore[list-item]  # the point
    with pytest.raises(InputError, match="given twice"):
        Gate([GateTarget.of("http://a:1"), GateTarget.of("http://a:1/")], ["parallel"])
    with pytest.raises(InputError, match="not a Prometheus label name"):
        GateTarget.of("http://a:1", [("bad-name", "x")])
    with pytest.raises(InputError, match="the gate's own series use"):
        GateTarget.of("http://a:1", [("claim", "x")])
    with pytest.raises(InputError, match="longer than 256"):
        GateTarget.of("http://a:1", [("zone", "x" * 257)])
    assert GateTarget.of("http://a:1", [("zone", "b"), ("pool", "p")]).labels == (
        ("pool", "p"),
        ("zone", "b"),
    )
    gate = _gate(alive)
    with pytest.raises(InputError, match="is not a target of this gate"):
        gate.record([TargetRound("http://elsewhere:1", alive)], duration_s=0)
    assert gate.snapshot.rounds == 0


def test_claims_carry_their_source_names() -> None:
    assert [s.value for s in ClaimSource] == ["assessment", "gate", "canary"]
