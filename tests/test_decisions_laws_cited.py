"""Every refusal carries the law it used (or says none applied), and the fields a caller
reads: the arm a policy sees is not enough, the report prints the law's scope too."""

from __future__ import annotations

from tests._evidence import (
    banner,
    bundle,
    cache_config_metrics,
    engine_init,
    log,
    models_body,
    one_line_capacity,
    probe_stub,
    rank_line,
    server_info_json,
    version_body,
)
from tests._paths import REAL
from vllm_evidence import assess
from vllm_evidence.decisions import (
    CapacityReason,
    CapacityRefused,
    HealthCoverageRefused,
    HealthReason,
    IdentityReason,
    JoinReason,
    JoinUnestablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityRefused,
)
from vllm_evidence.upstream import (
    CapacityLaw,
    IncarnationMarkerLaw,
    LawNotEstablished,
    ModelCardLaw,
    ParallelEvidenceLaw,
    Route,
)

JSON_ROUTE = "parallel_evidence./server_info?config_format=json"


def _parallel(*args: object) -> ParallelRefused:
    decision = assess(*args).parallel  # type: ignore[arg-type]  # front door, log
    assert isinstance(decision, ParallelRefused), decision
    return decision


def test_http_configuration_refusals_cite_the_route_law() -> None:
    alone = _parallel(bundle(version_body("0.32.0"), server_info_json(tp=2)))
    assert alone.reason is ParallelReason.POPULATION_UNOBSERVED
    assert isinstance(alone.law, ParallelEvidenceLaw)
    assert alone.law.question.key == JSON_ROUTE
    unjoined = _parallel(
        bundle(version_body("0.32.0"), server_info_json(tp=2)),
        log(banner("0.32.0") + rank_line(0, 2) + rank_line(1, 2)),
    )
    assert unjoined.reason is ParallelReason.JOIN_UNESTABLISHED
    assert isinstance(unjoined.law, ParallelEvidenceLaw)
    assert unjoined.present == ()


def test_a_conflicting_product_keeps_the_law_and_the_product() -> None:
    product = {Route.GET_WORLD_SIZE: b'{"world_size":4}'}
    refused = _parallel(bundle(version_body("0.32.0"), server_info_json(tp=2), product))
    assert refused.reason is ParallelReason.CONFIGURATION_CONFLICT
    assert isinstance(refused.law, ParallelEvidenceLaw)
    assert refused.world_size_product == 4


def test_a_json_form_before_its_law_cites_the_absence() -> None:
    refused = _parallel(bundle(version_body("0.10.2"), server_info_json(tp=2)))
    assert refused.reason is ParallelReason.VERSION_NOT_ESTABLISHED
    assert isinstance(refused.law, LawNotEstablished)
    assert refused.law.question.key == JSON_ROUTE


def test_log_configuration_refusals_cite_no_route_law_and_name_present_ranks() -> None:
    refused = _parallel(None, log(banner("0.32.0") + engine_init(tp=2) + rank_line(0, 2)))
    assert refused.reason is ParallelReason.RANKS_MISSING
    assert refused.law is None
    assert [(r.rank, r.pid) for r in refused.present] == [(0, 300)]
    assert refused.missing_ranks == (1,)
    assert refused.world_size_product is None


def test_a_product_alone_is_kept_on_the_stage_one_refusal() -> None:
    product = {Route.GET_WORLD_SIZE: b'{"world_size":2}'}
    refused = _parallel(bundle(version_body("0.32.0"), product))
    assert refused.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert refused.world_size_product == 2
    assert refused.configuration is None
    assert refused.expected_ranks is None


def test_identity_refusals_cite_the_model_card_law() -> None:
    alias = assess(bundle(version_body("0.32.0"), models_body(("alias", "/models/m"))))
    decision = alias.served_identity
    assert isinstance(decision, ServedIdentityRefused)
    assert decision.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE
    assert isinstance(decision.law, ModelCardLaw)
    assert decision.configured_path == "/models/m"
    assert decision.source is not None
    assert decision.source.where == "GET /v1/models"
    rootless = assess(bundle(version_body("0.32.0"), models_body(("m", None))))
    decision = rootless.served_identity
    assert isinstance(decision, ServedIdentityRefused)
    assert decision.reason is IdentityReason.CONFIGURED_PATH_UNOBSERVED
    assert isinstance(decision.law, ModelCardLaw)


def test_a_backend_without_a_law_cites_the_absence() -> None:
    decision = assess(
        bundle(version_body("0.32.0"), server_info_json(backend="ray"))
    ).health_coverage
    assert isinstance(decision, HealthCoverageRefused)
    assert decision.reason is HealthReason.LAW_NOT_ESTABLISHED
    assert isinstance(decision.law, LawNotEstablished)
    assert decision.law.question.key == "health.ray"
    assert decision.backend == "ray"
    assert decision.backend_source is not None
    assert decision.backend_source.where == "GET /server_info?config_format=json"


def test_join_refusals_cite_the_marker_law_when_the_version_is_known() -> None:
    assembled = assess(bundle(version_body("0.32.0"))).front_door_join
    assert isinstance(assembled, JoinUnestablished)
    assert assembled.reason is JoinReason.CALLER_ASSEMBLED
    assert isinstance(assembled.law, IncarnationMarkerLaw)
    none = assess(None, log(banner("0.32.0"))).front_door_join
    assert isinstance(none, JoinUnestablished)
    assert none.reason is JoinReason.NO_FRONT_DOOR
    assert none.law is None


def test_capacity_refusals_carry_every_law_they_weighed() -> None:
    label = 'engine="0",kv_cache_size_tokens="4096"'
    disagree = assess(
        bundle(version_body("0.32.0"), cache_config_metrics(label)),
        log(banner("0.32.0") + one_line_capacity("8,192")),
    ).capacity
    assert isinstance(disagree, CapacityRefused)
    assert disagree.reason is CapacityReason.SOURCES_DISAGREE
    assert [law.question.key for law in disagree.laws] == [
        "capacity.label_kv_cache_size_tokens",
        "capacity.log_capacity_line",
    ]
    assert sorted(e.tokens.value for e in disagree.engines) == [4096, 8192]
    blocks = assess(
        bundle(version_body("0.32.0"), cache_config_metrics('block_size="16",num_gpu_blocks="9"'))
    ).capacity
    assert isinstance(blocks, CapacityRefused)
    assert blocks.reason is CapacityReason.INSUFFICIENT_AUTHORITY
    assert all(isinstance(law, CapacityLaw) for law in blocks.laws)
    assert [law.question.key for law in blocks.laws] == ["capacity.label_blocks_times_block_size"]
    unknown = assess(bundle(version_body("0.25.0"), cache_config_metrics(label))).capacity
    assert isinstance(unknown, CapacityRefused)
    assert unknown.reason is CapacityReason.LAW_NOT_ESTABLISHED
    assert [type(law).__name__ for law in unknown.laws] == ["LawNotEstablished"]


def test_the_real_capture_alone_cites_its_laws() -> None:
    refused = _parallel(probe_stub(REAL))
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert isinstance(refused.law, ParallelEvidenceLaw)
    assert refused.law.span.first.public == "0.11.0"
