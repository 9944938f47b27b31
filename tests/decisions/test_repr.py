"""What a person reads in each decision arm's ``repr``: its key figures, by hand.

Every sealed arm of every decision names its key figures between the parentheses
(``_repr_summary``); a refusal names its reason, its figures, then its detail cut at 60
characters.  Each summary's branches are read in both directions (with and without the
optional figure, under and over the three items shown).
"""

from __future__ import annotations

import json

from tests._evidence import (
    HEALTHY,
    KV_DP0,
    assess_joined,
    banner,
    bundle,
    cache_config_metrics,
    engine_init,
    log,
    models_body,
    one_line_capacity,
    rank_line,
    real_log,
    server_info_json,
    two_line_capacity,
    version_body,
)
from vllm_evidence import assess
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityRefused,
    CapacityReported,
    HealthCoverageEstablished,
    HealthCoverageRefused,
    JoinedIncarnation,
    JoinUnestablished,
    LogJoined,
    LogJoinRefused,
    ParallelEstablished,
    ParallelRefused,
    ServedIdentityEstablished,
    ServedIdentityRefused,
)
from vllm_evidence.decisions._common import rank_ranges
from vllm_evidence.upstream import Route

VERSION = version_body("0.32.0")


def _labels(count: int) -> dict[Route, bytes]:
    """``/metrics`` with engines ``0 .. count - 1`` holding 1,000, 2,000, … tokens."""
    return cache_config_metrics(
        *(f'engine="{i}",kv_cache_size_tokens="{1000 * (i + 1)}"' for i in range(count))
    )


# --- capacity -------------------------------------------------------------------------------


def test_an_engine_capacity_names_its_engine_figure_and_source() -> None:
    decision = assess(bundle(VERSION, _labels(1))).capacity
    assert isinstance(decision, CapacityEstablished)
    assert repr(decision.engines[0]) == (
        "EngineCapacity(engine 0: 1,000 tokens, label_kv_cache_size_tokens)"
    )


def test_an_established_capacity_shows_three_engines_then_a_count() -> None:
    one = assess(bundle(VERSION, _labels(1))).capacity
    assert repr(one) == "CapacityEstablished(engine 0: 1,000 tokens)"
    three = assess(bundle(VERSION, _labels(3))).capacity
    assert repr(three) == (
        "CapacityEstablished(engine 0: 1,000 tokens; engine 1: 2,000 tokens; "
        "engine 2: 3,000 tokens)"
    )
    four = assess(bundle(VERSION, _labels(4))).capacity
    assert isinstance(four, CapacityEstablished)
    assert len(four.engines) == 4
    assert repr(four) == (
        "CapacityEstablished(engine 0: 1,000 tokens; engine 1: 2,000 tokens; "
        "engine 2: 3,000 tokens; …(4 engines))"
    )


def test_a_reported_capacity_names_its_reason_figures_and_cut_detail() -> None:
    decision = assess(None, log(banner("0.20.0") + two_line_capacity("8,192"))).capacity
    assert isinstance(decision, CapacityReported)
    assert repr(decision) == (
        "CapacityReported(not_group_aware, engine 0: 8,192 tokens, "
        "'engine 0: 8,192 tokens, as the log prints it; in this relea'…(137 chars))"
    )


def test_a_refused_capacity_names_figures_only_when_it_holds_some() -> None:
    missing = log(banner("0.32.0") + engine_init(tp=1, dp=2) + one_line_capacity("4,096", KV_DP0))
    with_figures = assess(None, missing).capacity
    assert isinstance(with_figures, CapacityRefused)
    assert repr(with_figures) == (
        "CapacityRefused(engines_missing, engine 0: 4,096 tokens, "
        "'the same source resolves 2 DP engines, but engine(s) 1 have'…(78 chars))"
    )
    without = assess(None, log(banner("0.32.0"))).capacity
    assert isinstance(without, CapacityRefused)
    assert repr(without) == (
        "CapacityRefused(capacity_unobserved, "
        "'no capacity line in the log and no kv_cache_size_tokens lab'…(61 chars))"
    )


# --- parallel -------------------------------------------------------------------------------

TP2 = banner("0.32.0") + engine_init(tp=2)


def test_an_established_layout_names_its_sizes_and_rank_ranges() -> None:
    decision = assess(None, log(TP2 + rank_line(0, 2) + rank_line(1, 2))).parallel
    assert isinstance(decision, ParallelEstablished)
    assert repr(decision) == "ParallelEstablished(TP=2 PP=1 DP=1, ranks 0-1)"
    assert repr(decision.configuration) == (
        "ResolvedParallel(TP=2 PP=1 DP=1, from log launch 0, line 2 (EngineCore pid=200))"
    )


def test_a_present_rank_names_its_pid_only_when_the_line_has_one() -> None:
    tagged = assess(None, log(TP2 + rank_line(0, 2) + rank_line(1, 2))).parallel
    assert isinstance(tagged, ParallelEstablished)
    assert repr(tagged.ranks[0]) == (
        "PresentRank(rank 0, DP rank 0, pid 300, log launch 0, line 3 (Worker_TP0 pid=300))"
    )
    untagged_line = (
        "INFO 11-30 04:11:13 [parallel_state.py:1906] world_size=1 rank=0 local_rank=0 "
        "distributed_init_method=tcp://127.0.0.1:29500 backend=nccl\n"
    )
    untagged = assess(None, log(banner("0.32.0") + engine_init(tp=1) + untagged_line)).parallel
    assert isinstance(untagged, ParallelEstablished)
    assert repr(untagged.ranks[0]) == "PresentRank(rank 0, DP rank 0, log launch 0, line 3)"


def test_a_refused_layout_names_sizes_and_missing_ranks_only_when_it_has_them() -> None:
    missing = assess(None, log(TP2 + rank_line(0, 2))).parallel
    assert isinstance(missing, ParallelRefused)
    assert repr(missing) == (
        "ParallelRefused(ranks_missing, TP=2 PP=1 DP=1, missing ranks 1, "
        "'expected ranks [1] have no worker line')"
    )
    unresolved = assess(None, log(banner("0.32.0"))).parallel
    assert isinstance(unresolved, ParallelRefused)
    assert repr(unresolved) == (
        "ParallelRefused(configuration_unobserved, "
        "'no /server_info answer and no engine-init line')"
    )


def test_a_prefill_context_size_is_named_only_when_it_is_not_one() -> None:
    parallel = {
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "data_parallel_size": 1,
        "prefill_context_parallel_size": 2,
    }
    body = json.dumps({"vllm_config": {"parallel_config": parallel}}).encode()
    decision = assess(bundle(VERSION, {Route.SERVER_INFO_JSON: body})).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.missing_ranks == ()
    assert repr(decision) == (
        "ParallelRefused(population_unobserved, TP=1 PP=1 DP=1 PCP=2, "
        "'expected ranks [0, 1]; no startup log shows which workers j'…(64 chars))"
    )
    assert repr(decision.configuration) == (
        "ResolvedParallel(TP=1 PP=1 DP=1 PCP=2, from GET /server_info?config_format=json)"
    )
    plain = assess(bundle(VERSION, server_info_json(tp=1))).parallel
    assert isinstance(plain, ParallelRefused)
    assert repr(plain.configuration) == (
        "ResolvedParallel(TP=1 PP=1 DP=1, from GET /server_info?config_format=json)"
    )


def test_rank_ranges_join_runs_and_keep_singles() -> None:
    assert rank_ranges([]) == ""
    assert rank_ranges([4]) == "4"
    assert rank_ranges([0, 1]) == "0-1"
    assert rank_ranges([6, 3, 0, 1, 2, 2]) == "0-3,6"
    assert rank_ranges([0, 2, 4]) == "0,2,4"


# --- served identity ------------------------------------------------------------------------


def test_an_established_identity_names_its_ids_and_path() -> None:
    decision = assess(bundle(VERSION, models_body(("m", "/models/m")))).served_identity
    assert isinstance(decision, ServedIdentityEstablished)
    assert repr(decision) == "ServedIdentityEstablished('m' from '/models/m')"
    assert repr(decision.names[0]) == "ServedName('m' (final_path_component))"


def test_a_refused_identity_shows_three_names_then_a_count() -> None:
    two = models_body(("a", "/models/m"), ("b", "/models/m"))
    decision = assess(bundle(VERSION, two)).served_identity
    assert isinstance(decision, ServedIdentityRefused)
    assert repr(decision) == (
        "ServedIdentityRefused(served_id_not_derivable, 'a', 'b', "
        "\"served id(s) 'a', 'b' are not derivable from the configured\"…(118 chars))"
    )
    three = models_body(*((name, "/models/m") for name in "abc"))
    shown = assess(bundle(VERSION, three)).served_identity
    assert isinstance(shown, ServedIdentityRefused)
    assert repr(shown) == (
        "ServedIdentityRefused(served_id_not_derivable, 'a', 'b', 'c', "
        "\"served id(s) 'a', 'b', 'c' are not derivable from the confi\"…(123 chars))"
    )
    four = models_body(*((name, "/models/m") for name in "abcd"))
    many = assess(bundle(VERSION, four)).served_identity
    assert isinstance(many, ServedIdentityRefused)
    assert repr(many) == (
        "ServedIdentityRefused(served_id_not_derivable, 'a', 'b', 'c', …(4 names), "
        "\"served id(s) 'a', 'b', 'c', 'd' are not derivable from the \"…(128 chars))"
    )


def test_a_refused_identity_without_names_shows_none_and_a_name_without_a_path_no_derivation() -> (
    None
):
    unobserved = assess(bundle(VERSION)).served_identity
    assert isinstance(unobserved, ServedIdentityRefused)
    assert repr(unobserved) == (
        "ServedIdentityRefused(models_unobserved, '/v1/models: not_requested')"
    )
    rootless = assess(bundle(VERSION, models_body(("m", None)))).served_identity
    assert isinstance(rootless, ServedIdentityRefused)
    assert repr(rootless.names[0]) == "ServedName('m')"


# --- health coverage ------------------------------------------------------------------------


def test_an_established_coverage_names_the_health_status_only_for_a_front_door() -> None:
    served = assess(bundle(VERSION, server_info_json(backend="mp"), HEALTHY)).health_coverage
    assert isinstance(served, HealthCoverageEstablished)
    assert repr(served) == "HealthCoverageEstablished(mp: worker_death_reaches, /health 200)"
    launch = assess(None, real_log()).health_coverage
    assert isinstance(launch, HealthCoverageEstablished)
    assert repr(launch) == "HealthCoverageEstablished(mp: worker_death_reaches)"


def test_a_refused_coverage_names_its_backend_only_when_one_was_observed() -> None:
    custom = bundle(VERSION, server_info_json(backend="my.Custom"), HEALTHY)
    named = assess(custom).health_coverage
    assert isinstance(named, HealthCoverageRefused)
    assert repr(named) == (
        "HealthCoverageRefused(backend_unknown, backend my.Custom, "
        "\"executor 'my.Custom' is not one of vLLM's named backends (a\"…(76 chars))"
    )
    unnamed = assess(bundle(VERSION, HEALTHY)).health_coverage
    assert isinstance(unnamed, HealthCoverageRefused)
    assert repr(unnamed) == (
        "HealthCoverageRefused(backend_unobserved, "
        "'the executor backend is unobserved (no /server_info JSON, n'…(72 chars))"
    )


# --- the joins ------------------------------------------------------------------------------


def test_the_joins_name_the_start_time_and_pid() -> None:
    joined = assess_joined(bundle(VERSION, HEALTHY), real_log())
    log_join = joined.log_join
    assert isinstance(log_join, LogJoined)
    # the receipt's "1.7e+09", as a person reads seconds
    assert repr(log_join) == "LogJoined(pid 23930, process_start_time_seconds 1700000000)"
    front = joined.front_door_join
    assert isinstance(front, JoinedIncarnation)
    assert repr(front) == "JoinedIncarnation(process_start_time_seconds 1.7E+9)"


def test_the_joins_refusals_name_their_reason_and_detail() -> None:
    alone = assess(None, real_log())
    log_join = alone.log_join
    assert isinstance(log_join, LogJoinRefused)
    assert repr(log_join) == (
        "LogJoinRefused(no_front_door, "
        "'log launch 0 alone: it speaks for its launch, not for a ser'…(62 chars))"
    )
    front = alone.front_door_join
    assert isinstance(front, JoinUnestablished)
    assert repr(front) == "JoinUnestablished(no_front_door, 'no front-door readback was given')"
