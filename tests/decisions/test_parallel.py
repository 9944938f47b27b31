"""Parallel realization: each rule refuses here and establishes there."""

from __future__ import annotations

import pytest

from tests._evidence import (
    API,
    HEALTHY,
    args,
    assess_joined,
    banner,
    bundle,
    dev_routes_404,
    engine_init,
    log,
    probe_stub,
    rank_line,
    real_log,
    server_info_json,
    version_body,
)
from tests._paths import REAL
from tests.decisions._wording import OUTSIDE_99, RESTARTED, RESTARTED_REMEDY
from tests.decisions._wording import says as _says
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import assess
from vllm_evidence._readback import CapturedReadback, HistoricalBundle, load
from vllm_evidence.decisions import (
    LogJoinReason,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
)
from vllm_evidence.upstream import (
    LawNotEstablished,
    ParallelEvidenceLaw,
    Route,
)

TP2 = banner("0.32.0") + engine_init(tp=2)


def _refused(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> ParallelRefused:
    decision = assess_joined(front_door, startup_log).parallel
    assert isinstance(decision, ParallelRefused), decision
    return decision


def _established(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None
) -> ParallelEstablished:
    decision = assess_joined(front_door, startup_log).parallel
    assert isinstance(decision, ParallelEstablished), decision
    return decision


# --- established: engine-init line + every rank, one launch --------------------------


def test_engine_init_and_every_rank_in_one_launch_is_established() -> None:
    decision = _established(None, log(TP2 + rank_line(0, 2) + rank_line(1, 2)))
    c = decision.configuration
    assert (c.tensor_parallel_size, c.pipeline_parallel_size, c.data_parallel_size) == (2, 1, 1)
    assert c.expected_ranks() == (0, 1)
    assert [(r.rank, r.pid) for r in decision.ranks] == [(0, 300), (1, 301)]
    assert decision.reason is ParallelReason.ESTABLISHED
    assert decision.law is None  # the configuration was read from the log


def test_tp2_pp2_needs_four_ranks() -> None:
    text = banner("0.32.0") + engine_init(tp=2, pp=2)
    three = "".join(rank_line(r, 4) for r in (0, 1, 2))
    refused = _refused(None, log(text + three))
    assert refused.reason is ParallelReason.RANKS_MISSING
    assert refused.missing_ranks == (3,)
    _established(None, log(text + three + rank_line(3, 4)))


# --- stage 1: resolved configuration ----------------------------------------------------


def test_nothing_at_all_is_configuration_unobserved() -> None:
    refused = _refused(None, None)
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert refused.configuration is None
    assert refused.expected_ranks is None


def test_a_world_size_product_alone_does_not_pass_stage_one() -> None:
    front_door = bundle(version_body("0.32.0"), {Route.GET_WORLD_SIZE: b'{"world_size":2}'})
    refused = _refused(front_door, None)
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert refused.world_size_product == 2
    assert refused.configuration is None
    assert "TP, PP or DP alike" in refused.detail
    # ... and not with a log of ranks either: the product never stands in for a config
    ranks = log(banner("0.32.0") + rank_line(0, 2) + rank_line(1, 2))
    assert _refused(front_door, ranks).reason is ParallelReason.CONFIGURATION_UNOBSERVED


def test_models_json_is_no_parallel_configuration() -> None:
    models = {Route.MODELS: b'{"object":"list","data":[{"id":"m","root":"m","parent":null}]}'}
    front_door = bundle(version_body("0.32.0"), models)
    assert _refused(front_door, None).reason is ParallelReason.CONFIGURATION_UNOBSERVED


# --- stage 2: the population -------------------------------------------------------------


def test_http_configuration_without_a_log_is_population_unobserved() -> None:
    front_door = bundle(version_body("0.32.0"), server_info_json(tp=2))
    refused = _refused(front_door, None)
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert refused.configuration is not None
    assert refused.configuration.tensor_parallel_size == 2
    assert refused.expected_ranks == (0, 1)
    assert refused.law is not None  # the /server_info?config_format=json law of 0.32


def test_engine_init_without_worker_lines_is_population_unobserved() -> None:
    refused = _refused(None, log(TP2))
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert refused.expected_ranks == (0, 1)


def test_http_configuration_with_log_ranks_is_not_joined() -> None:
    front_door = bundle(version_body("0.32.0"), server_info_json(tp=2))
    ranks = log(banner("0.32.0") + rank_line(0, 2) + rank_line(1, 2))
    refused = _refused(front_door, ranks)
    assert refused.reason is ParallelReason.JOIN_UNESTABLISHED
    assert refused.present == ()
    # the same ranks with the launch's own engine-init line do establish
    _established(front_door, log(TP2 + rank_line(0, 2) + rank_line(1, 2)))


def test_only_rank_zero_of_tp2_is_ranks_missing() -> None:
    refused = _refused(None, log(TP2 + rank_line(0, 2)))
    assert refused.reason is ParallelReason.RANKS_MISSING
    assert refused.missing_ranks == (1,)
    assert [r.rank for r in refused.present] == [0]


def test_workers_of_another_world_size_are_a_mismatch() -> None:
    refused = _refused(None, log(TP2 + rank_line(0, 4) + rank_line(1, 4)))
    assert refused.reason is ParallelReason.WORLD_SIZE_MISMATCH
    assert "[4]" in refused.detail


def test_ray_collapsed_worker_lines_are_unattributed() -> None:
    collapsed = rank_line(
        0, 2, tag="RayWorkerWrapper pid=401, ip=10.0.0.2", suffix=" [repeated 3x across cluster]"
    )
    refused = _refused(None, log(TP2 + rank_line(0, 2) + collapsed))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.missing_ranks == (1,)
    assert "RAY_DEDUP_LOGS=0" in refused.remedy
    # without the collapse marker the same gap is a missing rank, not an unattributed one
    plain = rank_line(0, 2, tag="RayWorkerWrapper pid=401, ip=10.0.0.2")
    assert _refused(None, log(TP2 + rank_line(0, 2) + plain)).reason is (
        ParallelReason.RANKS_MISSING
    )


def test_ranks_from_an_earlier_launch_do_not_count() -> None:
    first = TP2 + rank_line(0, 2) + rank_line(1, 2)
    second = TP2 + rank_line(0, 2)  # the restart: its own banner opens a second launch
    both = log(first + second)
    assert len(both.launches) == 2
    assert assess(None, both).parallel.reason is ParallelReason.RANKS_MISSING  # the last launch
    assert isinstance(assess(None, both, launch=0).parallel, ParallelEstablished)


# --- conflicts ----------------------------------------------------------------------------


def test_log_tp2_against_server_info_tp1_is_not_joined() -> None:
    ranks = log(TP2 + rank_line(0, 2) + rank_line(1, 2))
    conflicting = bundle(version_body("0.32.0"), server_info_json(tp=1))
    refused = _refused(conflicting, ranks)
    assert refused.reason is ParallelReason.LOG_NOT_JOINED
    assert "tensor_parallel_size 2 at log line 2 but 1" in refused.detail
    agreeing = bundle(version_body("0.32.0"), server_info_json(tp=2))
    _established(agreeing, ranks)


def test_log_and_front_door_versions_differ_is_not_joined() -> None:
    text = banner("0.32.0") + engine_init(tp=1) + rank_line(0, 1)
    other = bundle(version_body("0.27.0"), server_info_json(tp=1))
    refused = _refused(other, log(text))
    assert refused.reason is ParallelReason.LOG_NOT_JOINED
    assert "version_contradicted" in refused.detail
    assert "0.32.0" in refused.detail
    assert "0.27.0" in refused.detail
    same = bundle(version_body("0.32.0"), server_info_json(tp=1))
    _established(same, log(text))


def test_an_inconsistent_world_size_product_is_a_conflict() -> None:
    info = server_info_json(tp=2)
    four = bundle(version_body("0.32.0"), info, {Route.GET_WORLD_SIZE: b'{"world_size":4}'})
    refused = _refused(four, None)
    assert refused.reason is ParallelReason.CONFIGURATION_CONFLICT
    assert refused.world_size_product == 4
    two = bundle(version_body("0.32.0"), info, {Route.GET_WORLD_SIZE: b'{"world_size":2}'})
    assert _refused(two, None).reason is ParallelReason.POPULATION_UNOBSERVED


def test_product_consistent_with_dp_narrows_without_conflict() -> None:
    text = banner("0.32.0") + args("{'data_parallel_size': 2}") + engine_init(tp=1, dp=2)
    front_door = bundle(version_body("0.32.0"), {Route.GET_WORLD_SIZE: b'{"world_size":2}'})
    refused = _refused(front_door, log(text))
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert refused.configuration is not None
    assert refused.configuration.data_parallel_size == 2
    three = bundle(version_body("0.32.0"), {Route.GET_WORLD_SIZE: b'{"world_size":3}'})
    assert _refused(three, log(text)).reason is ParallelReason.CONFIGURATION_CONFLICT


# --- versions -----------------------------------------------------------------------------


def test_configuration_without_a_version_from_its_source_is_version_unobserved() -> None:
    refused = _refused(bundle(server_info_json(tp=1)), None)
    assert refused.reason is ParallelReason.VERSION_UNOBSERVED
    # the log's version does not scope the HTTP configuration's law
    assert _refused(bundle(server_info_json(tp=1)), log(banner("0.32.0"))).reason is (
        ParallelReason.VERSION_UNOBSERVED
    )
    assert _refused(bundle(version_body("0.32.0"), server_info_json(tp=1)), None).reason is (
        ParallelReason.POPULATION_UNOBSERVED
    )


def test_a_version_outside_the_law_table_is_not_established() -> None:
    front_door = bundle(version_body("99.0"), server_info_json(tp=1))
    refused = _refused(front_door, None)
    assert refused.reason is ParallelReason.VERSION_NOT_ESTABLISHED
    assert "99.0" in refused.detail
    from_log = log(engine_init("99.0", tp=1) + rank_line(0, 1))
    assert _refused(None, from_log).reason is ParallelReason.VERSION_NOT_ESTABLISHED
    _established(None, log(engine_init("0.32.0", tp=1) + rank_line(0, 1)))


def test_json_server_info_before_its_law_is_not_established() -> None:
    # /server_info?config_format=json answers the text form before 0.11.0: no law for JSON
    front_door = bundle(version_body("0.10.2"), server_info_json(tp=1))
    assert _refused(front_door, None).reason is ParallelReason.VERSION_NOT_ESTABLISHED
    front_door = bundle(version_body("0.11.0"), server_info_json(tp=1))
    assert _refused(front_door, None).reason is ParallelReason.POPULATION_UNOBSERVED


# --- data-parallel size --------------------------------------------------------------------


def test_dp_absent_from_engine_init_and_args_is_the_default_one_with_a_note() -> None:
    text = (
        banner("0.32.0")
        + args("{'model': '/models/m', 'tensor_parallel_size': 2}")
        + engine_init(tp=2, dp=None)
        + rank_line(0, 2)
        + rank_line(1, 2)
    )
    decision = _established(None, log(text))
    assert decision.configuration.data_parallel_size == 1
    note = decision.configuration.data_parallel_note
    assert note is not None
    assert "the default, 1" in note


def test_dp_from_the_non_default_args_when_the_engine_line_omits_it() -> None:
    text = banner("0.32.0") + args("{'data_parallel_size': 2}") + engine_init(tp=1, dp=None)
    refused = _refused(None, log(text))
    assert refused.configuration is not None
    assert refused.configuration.data_parallel_size == 2
    note = refused.configuration.data_parallel_note
    assert note is not None
    assert "from the non-default args" in note


def test_dp_absent_without_a_non_default_args_line_is_refused() -> None:
    text = banner("0.32.0") + engine_init(tp=2, dp=None) + rank_line(0, 2) + rank_line(1, 2)
    refused = _refused(None, log(text))
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert "data_parallel_size" in refused.detail


def test_engine_line_without_tp_and_pp_does_not_resolve() -> None:
    no_sizes = (
        "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] Initializing a V1 LLM engine "
        "(v0.32.0) with config: model='/models/m', data_parallel_size=1\n"
    )
    text = f"{API}vLLM API server version 0.32.0\n{no_sizes}"
    refused = _refused(None, log(text + rank_line(0, 1)))
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert "TP and PP" in refused.detail


# --- the acceptance, on the real 0.32.0 capture -------------------------------------


def test_real_capture_with_its_log_is_established_at_stage_two() -> None:
    decision = _established(load(REAL, bodies=True), real_log())
    c = decision.configuration
    assert (c.tensor_parallel_size, c.pipeline_parallel_size, c.data_parallel_size) == (1, 1, 1)
    assert [(r.rank, r.pid) for r in decision.ranks] == [(0, 23986)]


def test_real_capture_over_http_alone_stops_at_stage_two() -> None:
    refused = _refused(probe_stub(), None)
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert refused.configuration is not None
    assert refused.configuration.tensor_parallel_size == 1
    assert refused.world_size_product == 1


def test_real_capture_without_development_routes_stops_at_stage_one() -> None:
    refused = _refused(probe_stub(faults=dev_routes_404()), None)
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    saved = {
        Route.VERSION: (REAL / "version.body").read_bytes(),
        Route.SERVER_INFO: b'{"detail":"Not Found"}',
        Route.SERVER_INFO_JSON: b'{"detail":"Not Found"}',
        Route.GET_WORLD_SIZE: b'{"detail":"Not Found"}',
    }
    statuses = dict.fromkeys((Route.SERVER_INFO, Route.SERVER_INFO_JSON, Route.GET_WORLD_SIZE), 404)
    assert _refused(bundle(saved, statuses=statuses), None).reason is (
        ParallelReason.CONFIGURATION_UNOBSERVED
    )


# --- data parallelism: global ranks in the DP-wide world ---------------------------------


def test_dp2_tp2_needs_four_global_ranks_in_a_world_of_four() -> None:
    """vLLM logs rank = dp_rank × (TP×PP) + local rank, world_size = TP×PP×DP."""
    text = banner("0.32.0") + engine_init(tp=2, dp=2)
    tags = ["Worker_DP0_TP0 pid=300", "Worker_DP0_TP1 pid=301", "Worker_DP1_TP0 pid=302"]
    three = "".join(rank_line(g, 4, tag=tag) for g, tag in enumerate(tags))
    refused = _refused(None, log(text + three))
    assert refused.reason is ParallelReason.RANKS_MISSING
    assert refused.expected_ranks == (0, 1, 2, 3)
    assert refused.missing_ranks == (3,)
    decision = _established(None, log(text + three + rank_line(3, 4, tag="Worker_DP1_TP1 pid=303")))
    assert [(r.data_parallel_rank, r.rank, r.pid) for r in decision.ranks] == [
        (0, 0, 300),
        (0, 1, 301),
        (1, 2, 302),
        (1, 3, 303),
    ]


def test_dp2_workers_in_per_engine_worlds_are_a_mismatch() -> None:
    """Lines of world size 2 do not realize DP=2 × TP=2 (a world of 4)."""
    text = banner("0.32.0") + engine_init(tp=2, dp=2)
    refused = _refused(None, log(text + rank_line(0, 2) + rank_line(1, 2)))
    assert refused.reason is ParallelReason.WORLD_SIZE_MISMATCH


# --- the DP note and the configuration's provenance (pinned by mutation testing) ----


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


# --- what a refusal carries besides its words (witnessed in both directions) -----------


FrontDoor = CapturedReadback | HistoricalBundle


JSON_INFO = "GET /server_info?config_format=json"


def test_a_printed_dp_size_needs_no_note() -> None:
    text = banner("0.32.0") + engine_init(tp=1, dp=1) + rank_line(0, 1)
    decision = assess(None, log(text)).parallel
    assert isinstance(decision, ParallelEstablished)
    assert decision.configuration.data_parallel_note is None
    assert decision.law is None


def test_a_present_rank_is_sourced_to_its_worker_line() -> None:
    text = banner("0.32.0") + engine_init(tp=2) + rank_line(0, 2) + rank_line(1, 2)
    decision = assess(None, log(text)).parallel
    assert isinstance(decision, ParallelEstablished)
    assert [r.source.where for r in decision.ranks] == [
        "log launch 0, line 3 (Worker_TP0 pid=300)",
        "log launch 0, line 4 (Worker_TP1 pid=301)",
    ]


def test_a_log_without_engine_init_is_judged_at_the_join_not_as_a_conflict() -> None:
    ranks = log(banner("0.32.0") + rank_line(0, 2) + rank_line(1, 2))
    door = bundle(version_body("0.32.0"), server_info_json(tp=2))
    refused = _refused(door, ranks)
    assert refused.reason is ParallelReason.JOIN_UNESTABLISHED
    assert refused.configuration is not None
    assert refused.configuration.source.where == JSON_INFO


def test_the_text_server_info_is_scoped_by_its_own_route_law() -> None:
    text = (
        b'{"vllm_config": "model=\'/models/m\', tensor_parallel_size=1, '
        b'pipeline_parallel_size=1, data_parallel_size=1"}'
    )
    refused = _refused(bundle(version_body("0.10.2"), {Route.SERVER_INFO: text}))
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert refused.law is not None
    assert refused.law.question.key == "parallel_evidence./server_info"


def test_refusals_after_stage_one_keep_the_configuration() -> None:
    unversioned = _refused(bundle(server_info_json(tp=1)))
    outside = _refused(bundle(version_body("99.0"), server_info_json(tp=1)))
    no_json_law = _refused(bundle(version_body("0.10.2"), server_info_json(tp=1)))
    product = _refused(
        bundle(
            version_body("0.32.0"),
            server_info_json(tp=2),
            {Route.GET_WORLD_SIZE: b'{"world_size":4}'},
        )
    )
    unjoined = _refused(
        bundle(version_body("0.32.0"), server_info_json(tp=2)),
        log(banner("0.32.0") + rank_line(0, 2)),
    )
    for refused in (unversioned, outside, no_json_law, product, unjoined):
        assert refused.configuration is not None, refused
        assert refused.configuration.source.where == JSON_INFO
    assert (product.reason, unjoined.reason) == (
        ParallelReason.CONFIGURATION_CONFLICT,
        ParallelReason.JOIN_UNESTABLISHED,
    )


def test_a_product_conflict_keeps_the_http_route_law() -> None:
    door = bundle(
        version_body("0.32.0"), server_info_json(tp=2), {Route.GET_WORLD_SIZE: b'{"world_size":4}'}
    )
    refused = _refused(door)
    assert refused.reason is ParallelReason.CONFIGURATION_CONFLICT
    assert refused.law is not None
    assert refused.law.question.key == "parallel_evidence./server_info?config_format=json"


# --- the law each refusal used, or that none applied ---------------------------------


JSON_ROUTE = "parallel_evidence./server_info?config_format=json"


def test_http_configuration_refusals_cite_the_route_law() -> None:
    alone = _refused(bundle(version_body("0.32.0"), server_info_json(tp=2)))
    assert alone.reason is ParallelReason.POPULATION_UNOBSERVED
    assert isinstance(alone.law, ParallelEvidenceLaw)
    assert alone.law.question.key == JSON_ROUTE
    unjoined = _refused(
        bundle(version_body("0.32.0"), server_info_json(tp=2)),
        log(banner("0.32.0") + rank_line(0, 2) + rank_line(1, 2)),
    )
    assert unjoined.reason is ParallelReason.JOIN_UNESTABLISHED
    assert isinstance(unjoined.law, ParallelEvidenceLaw)
    assert unjoined.present == ()


def test_a_conflicting_product_keeps_the_law_and_the_product() -> None:
    product = {Route.GET_WORLD_SIZE: b'{"world_size":4}'}
    refused = _refused(bundle(version_body("0.32.0"), server_info_json(tp=2), product))
    assert refused.reason is ParallelReason.CONFIGURATION_CONFLICT
    assert isinstance(refused.law, ParallelEvidenceLaw)
    assert refused.world_size_product == 4


def test_a_json_form_before_its_law_cites_the_absence() -> None:
    refused = _refused(bundle(version_body("0.10.2"), server_info_json(tp=2)))
    assert refused.reason is ParallelReason.VERSION_NOT_ESTABLISHED
    assert isinstance(refused.law, LawNotEstablished)
    assert refused.law.question.key == JSON_ROUTE


def test_log_configuration_refusals_cite_no_route_law_and_name_present_ranks() -> None:
    refused = _refused(None, log(banner("0.32.0") + engine_init(tp=2) + rank_line(0, 2)))
    assert refused.reason is ParallelReason.RANKS_MISSING
    assert refused.law is None
    assert [(r.rank, r.pid) for r in refused.present] == [(0, 300)]
    assert refused.missing_ranks == (1,)
    assert refused.world_size_product is None


def test_a_product_alone_is_kept_on_the_stage_one_refusal() -> None:
    product = {Route.GET_WORLD_SIZE: b'{"world_size":2}'}
    refused = _refused(bundle(version_body("0.32.0"), product))
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert refused.world_size_product == 2
    assert refused.configuration is None
    assert refused.expected_ranks is None


def test_the_real_capture_alone_cites_its_laws() -> None:
    refused = _refused(probe_stub(REAL))
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert isinstance(refused.law, ParallelEvidenceLaw)
    assert refused.law.span.first.public == "0.11.0"


# --- what a person reads: each refusal's detail and remedy, written out by hand ---------
# A refusal names the earliest missing piece in words; the CLI prints them and policy
# authors quote them.  Each test below builds one case of one arm and writes the expected
# text out in full (the facts of the case filled in by hand), so that a changed word, a
# lost fact or a clause forced on or off fails here.  The tests above decide *which* arm a
# case reaches; these pin what the arm says.


ENGINE_LINE_2 = "log launch 0, line 2 (EngineCore pid=200)"


def test_parallel_established_detail_names_sizes_source_and_every_pid() -> None:
    decision = assess(None, log(TP2 + rank_line(0, 2) + rank_line(1, 2))).parallel
    assert isinstance(decision, ParallelEstablished)
    assert decision.detail == (
        f"TP=2 PP=1 DP=1 from {ENGINE_LINE_2}; every expected rank present "
        "(rank 0 pid 300, rank 1 pid 301)"
    )


def test_parallel_nothing_observed() -> None:
    _says(
        _refused(None, None),
        ParallelReason.CONFIGURATION_UNOBSERVED,
        "no /server_info answer and no engine-init line",
        "give the launch's startup log (engine-init line), or probe /server_info "
        "with development mode on",
    )


def test_parallel_a_product_alone_says_why_it_is_no_configuration() -> None:
    front_door = bundle(version_body("0.32.0"), {Route.GET_WORLD_SIZE: b'{"world_size":2}'})
    refused = _refused(front_door, None)
    assert refused.detail == "/get_world_size answered 2, a product that is TP, PP or DP alike"


def test_parallel_every_stage_one_shortfall_is_named_in_order() -> None:
    no_sizes = (
        "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] Initializing a V1 LLM engine "
        "(v0.32.0) with config: model='/models/m', data_parallel_size=1\n"
    )
    no_pp = b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": 2}}}'
    no_tp = bundle(version_body("0.32.0"), {Route.SERVER_INFO_JSON: no_pp})
    refused = _refused(no_tp, log(banner("0.32.0") + no_sizes))
    assert refused.detail == (
        "the engine-init line (line 2) does not print TP and PP sizes; "
        f"{JSON_INFO} does not carry TP and PP sizes"
    )


def test_parallel_dp_unprinted_without_an_args_line() -> None:
    refused = _refused(None, log(banner("0.32.0") + engine_init(tp=2, dp=None)))
    assert refused.detail == (
        "the engine-init line (line 2) does not print data_parallel_size and the launch "
        "has no non-default args line"
    )


def test_parallel_text_server_info_before_dp_was_printed() -> None:
    text = (
        b'{"vllm_config": "model=\'/models/m\', tensor_parallel_size=1, '
        b'pipeline_parallel_size=1, quantization=None"}'
    )
    refused = _refused(bundle(version_body("0.8.5"), {Route.SERVER_INFO: text}), None)
    assert refused.detail == (
        "GET /server_info does not carry data_parallel_size (the text form before 0.10.2)"
    )


def test_parallel_data_parallel_notes() -> None:
    absent = args("{'model': '/models/m', 'tensor_parallel_size': 2}")
    decision = assess(None, log(banner("0.32.0") + absent + engine_init(tp=2, dp=None))).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.configuration is not None
    assert decision.configuration.data_parallel_note == (
        "data_parallel_size absent from the non-default args (line 2): the default, 1"
    )
    given = args("{'data_parallel_size': 2}")
    decision = assess(None, log(banner("0.32.0") + given + engine_init(tp=1, dp=None))).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.configuration is not None
    assert decision.configuration.data_parallel_note == (
        "data_parallel_size from the non-default args (line 2)"
    )


def test_parallel_versions_of_two_builds() -> None:
    text = banner("0.32.0") + engine_init(tp=1) + rank_line(0, 1)
    other = bundle(version_body("0.27.0"), server_info_json(tp=1))
    _says(
        _refused(other, log(text)),
        ParallelReason.LOG_NOT_JOINED,
        "the startup log is not joined to this front door (version_contradicted: the log's "
        "launch reports vLLM 0.32.0 but /version reports 0.27.0: they are not the same "
        "server); the front door alone: expected ranks [0]; no startup log shows which "
        "workers joined",
        "give the startup log of the serving launch, with its launch receipt",
    )


def test_parallel_restarted_front_door() -> None:
    _says(
        _refused(probe_stub(REAL, restart_after_metrics_reads=1), None),
        ParallelReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_parallel_configuration_without_its_version() -> None:
    _says(
        _refused(bundle(server_info_json(tp=1)), None),
        ParallelReason.VERSION_UNOBSERVED,
        f"configuration from {JSON_INFO}, but no version from that source",
        "read the version from the same source",
    )


def test_parallel_version_outside_the_table() -> None:
    _says(
        _refused(bundle(version_body("99.0"), server_info_json(tp=1)), None),
        ParallelReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none",
    )


def test_parallel_route_without_a_law_in_that_release() -> None:
    refused = _refused(bundle(version_body("0.10.2"), server_info_json(tp=1)), None)
    _says(
        refused,
        ParallelReason.VERSION_NOT_ESTABLISHED,
        "not established for 0.10.2 (laws read for 0.11.0 .. 0.33.0)",
        "none",
    )
    assert refused.law is not None
    assert refused.law.statement == refused.detail


def test_parallel_log_and_front_door_sizes_differ() -> None:
    ranks = log(TP2 + rank_line(0, 2) + rank_line(1, 2))
    _says(
        _refused(bundle(version_body("0.32.0"), server_info_json(tp=1)), ranks),
        ParallelReason.LOG_NOT_JOINED,
        "the startup log is not joined to this front door (configuration_contradicted: "
        f"tensor_parallel_size 2 at log line 2 but 1 at {JSON_INFO}); the front door alone: "
        "expected ranks [0]; no startup log shows which workers joined",
        "give the startup log of the serving launch, with its launch receipt",
    )


def test_parallel_product_against_the_configuration() -> None:
    four = bundle(
        version_body("0.32.0"), server_info_json(tp=2), {Route.GET_WORLD_SIZE: b'{"world_size":4}'}
    )
    _says(
        _refused(four, None),
        ParallelReason.CONFIGURATION_CONFLICT,
        "/get_world_size answered 4, but the configuration gives 2 per engine × 1",
        "check the sources describe one server",
    )


def test_parallel_http_configuration_without_a_log() -> None:
    _says(
        _refused(bundle(version_body("0.32.0"), server_info_json(tp=2)), None),
        ParallelReason.POPULATION_UNOBSERVED,
        "expected ranks [0, 1]; no startup log shows which workers joined",
        "give the launch's startup log (per-rank worker lines)",
    )


def test_parallel_http_configuration_with_log_ranks() -> None:
    ranks = log(banner("0.32.0") + rank_line(0, 2) + rank_line(1, 2))
    _says(
        _refused(bundle(version_body("0.32.0"), server_info_json(tp=2)), ranks),
        ParallelReason.JOIN_UNESTABLISHED,
        f"configuration from {JSON_INFO}, worker lines from log launch 0: nothing witnesses "
        "that the log belongs to the serving process",
        "give a log whose launch prints its engine-init line",
    )


def test_parallel_launch_without_worker_lines() -> None:
    _says(
        _refused(None, log(TP2)),
        ParallelReason.POPULATION_UNOBSERVED,
        "the launch has no worker rank lines",
        "give a log with the workers' start-up lines",
    )


def test_parallel_workers_of_another_world() -> None:
    _says(
        _refused(None, log(TP2 + rank_line(0, 4) + rank_line(1, 4))),
        ParallelReason.WORLD_SIZE_MISMATCH,
        "the launch's worker lines joined world size(s) [4], not 2",
        "check the log belongs to this configuration",
    )


def test_parallel_ray_collapsed_lines() -> None:
    collapsed = rank_line(
        0, 2, tag="RayWorkerWrapper pid=401, ip=10.0.0.2", suffix=" [repeated 3x across cluster]"
    )
    _says(
        _refused(None, log(TP2 + rank_line(0, 2) + collapsed)),
        ParallelReason.RANKS_UNATTRIBUTED,
        "ranks [1] not attributed: Ray collapsed 3 similar worker line(s) "
        "('[repeated Nx across cluster]')",
        "run with Ray log deduplication off (RAY_DEDUP_LOGS=0)",
    )


def test_parallel_a_rank_that_never_started() -> None:
    _says(
        _refused(None, log(TP2 + rank_line(0, 2))),
        ParallelReason.RANKS_MISSING,
        "expected ranks [1] have no worker line",
        "a rank never started: look at that worker",
    )


# --- independent DP engines (issue 18: a real v0.29.0 server, --data-parallel-size 2) ---

_DP0 = "(EngineCore_DP0 pid=201) INFO 11-30 06:01:00 [core.py:100] "
_DP1 = "(EngineCore_DP1 pid=202) INFO 11-30 06:01:00 [core.py:100] "


def _engine_init_as(prefix: str, version: str = "0.29.0") -> str:
    """Each independent engine's own engine-init line: DP=1 after vLLM's reset."""
    return engine_init(version, tp=1, dp=1).replace(
        "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] ", prefix
    )


def _engine_rank(tag: str, rank: int = 0) -> str:
    return rank_line(rank, 1, tag=tag)


_CAP = "INFO 11-30 06:02:00 [kv_cache_utils.py:2032] GPU KV cache size: 2,097,152 tokens, "
_CAP += "Maximum concurrency for 2,048 tokens per request: 1024.00x\n"


def _dp2_log(*, with_args: bool = True, second_rank: bool = True) -> StartupLog:
    """As v0.29.0 prints it: one engine-init line (local DP rank 0 only, saying DP=1),
    then one capacity line per engine, each under its EngineCore_DP<i> tag."""
    text = banner("0.29.0")
    if with_args:
        text += args("{'model': '/models/m', 'data_parallel_size': 2}")
    text += _engine_init_as(_DP0)
    text += "(EngineCore_DP1 pid=202) " + _CAP + "(EngineCore_DP0 pid=201) " + _CAP
    text += _engine_rank("EngineCore_DP0 pid=201")
    if second_rank:
        text += _engine_rank("EngineCore_DP1 pid=202")
    return log(text)


def test_independent_dp_engines_resolve_to_the_launchs_dp_and_global_ranks() -> None:
    decision = _established(None, _dp2_log())
    c = decision.configuration
    assert (c.tensor_parallel_size, c.pipeline_parallel_size, c.data_parallel_size) == (1, 1, 2)
    assert c.data_parallel_note is not None
    assert "data_parallel_size 2 from the non-default args" in c.data_parallel_note
    assert [(r.data_parallel_rank, r.rank, r.pid) for r in decision.ranks] == [
        (0, 0, 201),
        (1, 1, 202),
    ]


def test_independent_dp_engines_without_args_count_the_engine_tags() -> None:
    decision = _established(None, _dp2_log(with_args=False))
    assert decision.configuration.data_parallel_size == 2
    assert "lines from DP engines [0, 1]" in (decision.configuration.data_parallel_note or "")


def test_an_engine_that_never_joined_is_a_missing_global_rank() -> None:
    refused = _refused(None, _dp2_log(second_rank=False))
    assert refused.reason is ParallelReason.RANKS_MISSING
    assert refused.missing_ranks == (1,)


def test_one_engine_at_dp1_stays_dp1() -> None:
    """The other direction: one engine-init line saying DP=1 and no other sign is DP=1."""
    text = banner("0.29.0") + _engine_init_as(_DP0) + _engine_rank("EngineCore_DP0 pid=201")
    decision = _established(None, log(text))
    assert decision.configuration.data_parallel_size == 1
    assert decision.configuration.data_parallel_note is None


def test_args_that_disagree_with_the_engine_tags_do_not_resolve() -> None:
    one = banner("0.29.0") + args("{'model': '/models/m'}")
    text = one + _engine_init_as(_DP0) + _engine_init_as(_DP1)
    refused = _refused(None, log(text))
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert "data_parallel_size 1, but the log has lines from DP engines [0, 1]" in (refused.detail)


def test_an_engine_local_rank_without_an_engine_tag_is_reported_not_guessed() -> None:
    text = banner("0.29.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    text += _engine_init_as(_DP0) + _engine_init_as(_DP1)
    text += rank_line(0, 1, tag="Worker pid=400") + rank_line(0, 1, tag="Worker pid=401")
    refused = _refused(None, log(text))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert "carry no DP engine tag" in refused.detail
    assert refused.missing_ranks == (0, 1)
    # The remedy names what 0.29.0 can print: the compile-cache lines (0.20.0-0.32.0),
    # not 0.32.0's force-kill lines.
    assert refused.remedy == (
        "run without --enforce-eager, so each worker's compile-cache line names its DP "
        "engine (vLLM 0.20.0 .. 0.32.0)"
    )


def test_the_remedy_names_the_force_kill_lines_only_where_the_release_prints_them() -> None:
    for version, remedy in (
        (
            "0.32.0",
            (
                "run without --enforce-eager, so each worker's compile-cache line names its "
                "DP engine (vLLM 0.20.0 .. 0.32.0); or give the log through the server's "
                "shutdown, whose force-kill lines list each engine core's worker processes "
                "(vLLM 0.32.0)"
            ),
        ),
        (
            "0.33.0",
            (
                "none from this log: no line this release is read for ties a worker of an "
                "independent DP engine to its engine; probe /server_info for the sizes"
            ),
        ),
    ):
        text = banner(version) + args("{'model': '/models/m', 'data_parallel_size': 2}")
        text += _engine_init_as(_DP0, version) + _engine_init_as(_DP1, version)
        text += rank_line(0, 1, tag="Worker pid=400") + rank_line(0, 1, tag="Worker pid=401")
        refused = _refused(None, log(text))
        assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
        assert refused.remedy == remedy


def _saved(pid: int, rank: int, dp_index: int) -> str:
    """A worker's 'saved AOT compiled function to …/rank_R_D/model' line (v0.29.0)."""
    return (
        f"(Worker pid={pid}) INFO 12-01 07:12:34 [decorators.py:719] saved AOT compiled "
        f"function to /srv/vllm-cache/torch_compile_cache/torch_aot_compile/5c6d/"
        f"rank_{rank}_{dp_index}/model\n"
    )


def _bare_workers(*cache: str, version: str = "0.29.0") -> StartupLog:
    """As the real v0.29.0 DP=2 server printed it: two bare-tagged workers, each 'rank 0
    in world 1', then whatever compile-cache lines are given."""
    text = banner(version) + args("{'model': '/models/m', 'data_parallel_size': 2}")
    text += _engine_init_as(_DP0, version)
    text += "(EngineCore_DP1 pid=202) " + _CAP + "(EngineCore_DP0 pid=201) " + _CAP
    text += rank_line(0, 1, tag="Worker pid=400") + rank_line(0, 1, tag="Worker pid=401")
    return log(text + "".join(cache))


def test_bare_workers_are_mapped_by_their_own_compile_cache_lines() -> None:
    decision = _established(None, _bare_workers(_saved(401, 0, 0), _saved(400, 0, 1)))
    assert [(r.rank, r.data_parallel_rank, r.pid) for r in decision.ranks] == [
        (0, 0, 401),
        (1, 1, 400),
    ]
    # Each rank is sourced to the line that named its engine (lines 8 and 9).
    assert [r.source.where for r in decision.ranks] == [
        "log launch 0, line 8 (Worker pid=401)",
        "log launch 0, line 9 (Worker pid=400)",
    ]


def test_a_worker_without_a_compile_cache_line_stays_unattributed() -> None:
    refused = _refused(None, _bare_workers(_saved(400, 0, 1)))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.missing_ranks == (0,)
    assert refused.detail.startswith("ranks [0] not attributed: ")
    assert [(r.rank, r.pid) for r in refused.present] == [(1, 400)]


def test_a_process_stating_two_dp_indexes_is_not_mapped() -> None:
    cache = (_saved(401, 0, 0), _saved(400, 0, 1), _saved(400, 0, 0))
    refused = _refused(None, _bare_workers(*cache))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.missing_ranks == (1,)
    assert [(r.rank, r.pid) for r in refused.present] == [(0, 401)]
    assert (
        "process (Worker pid=400) states rank_0_1 (line 9, aot_saved) and rank_0_0 "
        "(line 10, aot_saved) in its compile-cache lines"
    ) in refused.detail


def test_a_compile_cache_rank_other_than_the_rank_line_is_not_mapped() -> None:
    refused = _refused(None, _bare_workers(_saved(401, 0, 0), _saved(400, 1, 1)))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.missing_ranks == (1,)


def test_bare_workers_without_rank_lines_are_mapped_by_their_compile_cache_lines() -> None:
    text = banner("0.29.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    text += _engine_init_as(_DP0)
    text += "(EngineCore_DP1 pid=202) " + _CAP + "(EngineCore_DP0 pid=201) " + _CAP
    memory = _tagged("Worker pid=400", "Worker pid=401")
    refused = _refused(None, log(text + memory + _saved(400, 0, 1)))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert "Worker pid=401" in refused.detail
    assert refused.missing_ranks == (0,)
    decision = _established(None, log(text + memory + _saved(400, 0, 1) + _saved(401, 0, 0)))
    assert [(r.rank, r.pid, r.source.where) for r in decision.ranks] == [
        (0, 401, "log launch 0, line 9 (Worker pid=401)"),
        (1, 400, "log launch 0, line 8 (Worker pid=400)"),
    ]


def test_compile_cache_lines_of_a_release_outside_their_span_are_not_read() -> None:
    # 0.33.0's cache line is not read (past the span the source was read for).
    refused = _refused(None, _bare_workers(_saved(401, 0, 0), _saved(400, 0, 1), version="0.33.0"))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.missing_ranks == (0, 1)
    assert "compile-cache lines are read only for 0.20.0 .. 0.32.0" in refused.detail


def test_independent_dp_log_and_a_dp2_front_door_are_no_conflict() -> None:
    """/server_info?config_format=json says DP=2; each engine-init line says DP=1."""
    door = bundle(version_body("0.29.0"), server_info_json(tp=1, dp=2))
    decision = _established(door, _dp2_log())
    assert decision.configuration.data_parallel_size == 2
    assert [r.rank for r in decision.ranks] == [0, 1]


def test_independent_dp_log_and_a_dp1_front_door_still_disagree() -> None:
    door = bundle(version_body("0.29.0"), server_info_json(tp=1, dp=1))
    refused = _refused(door, _dp2_log())
    assert refused.reason is ParallelReason.LOG_NOT_JOINED
    assert "data_parallel_size 2 at log line 3 but 1 at" in refused.detail


# --- rank presence from a worker's own tag (issue 18) --------------------------------

_MEM = "INFO 11-30 04:11:20 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB\n"


def _tagged(*tags: str) -> str:
    """One worker line per tag that is not a rank line (a memory line)."""
    return "".join(f"({tag}) {_MEM}" for tag in tags)


def test_worker_tags_alone_realize_the_layout() -> None:
    text = banner("0.32.0") + engine_init(tp=2, pp=2)
    tags = ("Worker_PP0_TP0 pid=1", "Worker_PP0_TP1 pid=2", "Worker_PP1_TP0 pid=3")
    refused = _refused(None, log(text + _tagged(*tags)))
    assert refused.reason is ParallelReason.RANKS_MISSING
    assert refused.missing_ranks == (3,)
    decision = _established(None, log(text + _tagged(*tags, "Worker_PP1_TP1 pid=4")))
    assert [(r.rank, r.pid) for r in decision.ranks] == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_dp_and_ep_tags_map_through_the_resolved_sizes() -> None:
    text = banner("0.32.0") + engine_init(tp=2, dp=2)
    tags = (
        "Worker_DP0_TP0_EP0 pid=1",
        "Worker_DP0_TP1_EP1 pid=2",
        "Worker_DP1_TP0_EP2 pid=3",
        "Worker_DP1_TP1_EP3 pid=4",
    )
    decision = _established(None, log(text + _tagged(*tags)))
    assert [(r.data_parallel_rank, r.rank) for r in decision.ranks] == [
        (0, 0),
        (0, 1),
        (1, 2),
        (1, 3),
    ]


def test_old_worker_names_map_as_their_release_printed_them() -> None:
    text = banner("0.9.2") + engine_init("0.9.2", tp=2)
    decision = _established(
        None, log(text + _tagged("VllmWorker rank=0 pid=1", "VllmWorker rank=1 pid=2"))
    )
    assert [r.rank for r in decision.ranks] == [0, 1]
    text = banner("0.10.1.1") + engine_init("0.10.1.1", tp=2)
    decision = _established(
        None, log(text + _tagged("VllmWorker TP0 pid=1", "VllmWorker TP1 pid=2"))
    )
    assert [r.rank for r in decision.ranks] == [0, 1]


def test_a_tag_that_leaves_out_a_group_is_reported_not_guessed() -> None:
    # PP=2 but the tags name TP only: which pipeline stage each is, is not printed.
    text = banner("0.32.0") + engine_init(tp=2, pp=2)
    refused = _refused(None, log(text + _tagged("Worker_TP0 pid=1", "Worker_TP1 pid=2")))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert "Worker_TP0 pid=1" in refused.detail
    assert refused.present == ()
    # An index past its group's size maps to nothing either.
    beyond = _refused(None, log(banner("0.32.0") + engine_init(tp=2) + _tagged("Worker_TP2 pid=9")))
    assert beyond.reason is ParallelReason.RANKS_UNATTRIBUTED


# --- mutation survivors: arms a log reaches only joined, or beside a refused front door --


def test_a_joined_log_with_another_pcp_size_is_a_layout_conflict() -> None:
    """The log join compares TP, PP and DP; a prefill-context size that differs is left
    to this decision, which names both layouts (both directions)."""
    init = engine_init(tp=1).replace(
        "data_parallel_size=1", "data_parallel_size=1, prefill_context_parallel_size=2"
    )
    pcp2 = log(banner("0.32.0") + init + rank_line(0, 2) + rank_line(1, 2))
    door = bundle(version_body("0.32.0"), server_info_json(tp=1), HEALTHY)
    assessment = assess_joined(door, pcp2)
    assert assessment.log_join.reason is LogJoinReason.ESTABLISHED
    refused = assessment.parallel
    assert isinstance(refused, ParallelRefused)
    _says(
        refused,
        ParallelReason.CONFIGURATION_CONFLICT,
        "log launch 0, line 2 (EngineCore pid=200) gives (TP, PP, DP, PCP) (1, 1, 1, 2) but "
        f"{JSON_INFO} gives (1, 1, 1, 1): the log and the front door describe different "
        "servers or launches",
        "give the startup log of the serving launch",
    )
    pcp1 = log(banner("0.32.0") + engine_init(tp=1) + rank_line(0, 1))
    assert isinstance(assess_joined(door, pcp1).parallel, ParallelEstablished)


#: A front door refused on its own: ``/server_info`` says TP=2, ``/get_world_size`` 4.
_PRODUCT_4 = bundle(
    version_body("0.32.0"),
    server_info_json(tp=2),
    {Route.GET_WORLD_SIZE: b'{"world_size":4}'},
    HEALTHY,
)
_PRODUCT_4_DETAIL = "/get_world_size answered 4, but the configuration gives 2 per engine × 1"


@pytest.mark.parametrize(
    ("text", "join"),
    [
        # A TP=4 log (whose world 4 the product would fit) conflicts with the front
        # door's layout.
        (
            banner("0.32.0") + engine_init(tp=4) + "".join(rank_line(r, 4) for r in range(4)),
            LogJoinReason.CONFIGURATION_CONTRADICTED,
        ),
        # A log of another build (99.0, outside the table) is a sources conflict, read
        # before its version.
        (
            banner("99.0") + engine_init("99.0", tp=2) + rank_line(0, 2) + rank_line(1, 2),
            LogJoinReason.VERSION_CONTRADICTED,
        ),
    ],
    ids=["another-layout", "another-build"],
)
def test_an_unjoined_log_leaves_the_front_doors_refusal(text: str, join: LogJoinReason) -> None:
    """A log that is not joined changes nothing: the front door's own refusal stands."""
    assessment = assess(_PRODUCT_4, log(text))
    assert assessment.log_join.reason is join
    refused = assessment.parallel
    assert isinstance(refused, ParallelRefused)
    _says(
        refused,
        ParallelReason.CONFIGURATION_CONFLICT,
        _PRODUCT_4_DETAIL,
        "check the sources describe one server",
    )


# --- _population: compile-cache lines of workers without a rank line ----------------------


def _independent_text(*, tp: int) -> str:
    """Independent DP=2 engines of ``tp`` workers each (v0.29.0): DP=2 in the args, DP=1
    on engine 0's engine-init line (lines 1-3)."""
    text = banner("0.29.0") + args("{'model': '/models/m', 'data_parallel_size': 2}")
    return text + engine_init("0.29.0", tp=tp, dp=1).replace(
        "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] ", _DP0
    )


def test_compile_cache_lines_are_not_read_for_engines_that_are_not_independent() -> None:
    # TP=2, DP=1: the bare worker's cache line names rank_1_0, but no engine is independent.
    text = banner("0.29.0") + engine_init("0.29.0", tp=2) + rank_line(0, 2)
    refused = _refused(None, log(text + _tagged("Worker pid=400") + _saved(400, 1, 0)))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.detail == (
        "ranks [1] not attributed: worker tag(s) Worker pid=400 do not map to a global rank "
        "under TP=2 PP=1 DP=1"
    )


def test_a_stated_local_rank_maps_below_the_engine_width_and_not_at_it() -> None:
    memory = _tagged("Worker pid=400", "Worker pid=401")
    # Width 1: rank_1_0 names local rank 1, outside engine 0's world of 1.
    refused = _refused(
        None, log(_independent_text(tp=1) + memory + _saved(401, 0, 0) + _saved(400, 1, 0))
    )
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.detail == (
        "ranks [1] not attributed: worker tag(s) Worker pid=400 do not map to a global rank "
        "under TP=1 PP=1 DP=2"
    )
    # rank_0_2 names engine 2 of DP=2: no such engine.
    refused = _refused(
        None, log(_independent_text(tp=1) + memory + _saved(401, 0, 0) + _saved(400, 0, 2))
    )
    assert refused.detail == (
        "ranks [1] not attributed: worker tag(s) Worker pid=400 do not map to a global rank "
        "under TP=1 PP=1 DP=2"
    )


def test_a_stated_rank_is_engine_times_width_plus_local() -> None:
    # TP=2 independent DP=2: rank_R_D is global rank D × 2 + R.
    memory = _tagged(*(f"Worker pid={pid}" for pid in (400, 401, 402, 403)))
    cache = _saved(400, 1, 1) + _saved(401, 0, 1) + _saved(402, 1, 0) + _saved(403, 0, 0)
    decision = _established(None, log(_independent_text(tp=2) + memory + cache))
    assert [(r.data_parallel_rank, r.rank, r.pid) for r in decision.ranks] == [
        (0, 0, 403),
        (0, 1, 402),
        (1, 2, 401),
        (1, 3, 400),
    ]


def test_untagged_engine_local_lines_name_three_disagreeing_processes() -> None:
    # Four bare workers, each 'rank 0 in world 1' (lines 4-7), each stating two engines.
    ranks = "".join(rank_line(0, 1, tag=f"Worker pid={400 + i}") for i in range(4))
    cache = "".join(_saved(400 + i, 0, 0) + _saved(400 + i, 0, 1) for i in range(4))
    refused = _refused(None, log(_independent_text(tp=1) + ranks + cache))
    assert refused.reason is ParallelReason.RANKS_UNATTRIBUTED
    assert refused.detail == (
        "ranks [0, 1] not attributed: the worker lines of 4 process(es) in one engine's own "
        "world of 1 (line 4, 5, 6, 7) carry no DP engine tag, and neither a compile-cache "
        "line of the same process nor the shutdown's force kill of an engine's process tree "
        "names one engine, so which engine each belongs to is not printed"
        "; process (Worker pid=400) states rank_0_0 (line 8, aot_saved) and rank_0_1 "
        "(line 9, aot_saved) in its compile-cache lines"
        "; process (Worker pid=401) states rank_0_0 (line 10, aot_saved) and rank_0_1 "
        "(line 11, aot_saved) in its compile-cache lines"
        "; process (Worker pid=402) states rank_0_0 (line 12, aot_saved) and rank_0_1 "
        "(line 13, aot_saved) in its compile-cache lines"
    )
