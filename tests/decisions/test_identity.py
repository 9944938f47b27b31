"""Served identity: a served id names the artifact only when derivable from the path."""

from __future__ import annotations

import pytest

from tests._evidence import (
    args,
    assess_joined,
    banner,
    bundle,
    log,
    models_body,
    probe_stub,
    version_body,
)
from tests._paths import REAL, public_capture
from tests.decisions._wording import OUTSIDE_99, RESTARTED, RESTARTED_REMEDY
from tests.decisions._wording import says as _says
from vllm_evidence.adapters.startup_log import StartupLog
from vllm_evidence.assessment import assess
from vllm_evidence.decisions import (
    Derivation,
    IdentityReason,
    ServedIdentityEstablished,
    ServedIdentityRefused,
)
from vllm_evidence.decisions.identity import derivation
from vllm_evidence.readback import CapturedReadback, HistoricalBundle
from vllm_evidence.upstream import (
    ModelCardLaw,
    Route,
)


def _established(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> ServedIdentityEstablished:
    decision = assess_joined(front_door, startup_log).served_identity
    assert isinstance(decision, ServedIdentityEstablished), decision
    return decision


def _refused(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> ServedIdentityRefused:
    decision = assess_joined(front_door, startup_log).served_identity
    assert isinstance(decision, ServedIdentityRefused), decision
    return decision


def _served(served_id: str, root: str, version: str = "0.32.0") -> HistoricalBundle:
    return bundle(version_body(version), models_body((served_id, root)))


def test_an_id_equal_to_the_path_is_established() -> None:
    decision = _established(_served("/models/tiny-llama", "/models/tiny-llama"))
    assert decision.configured_path == "/models/tiny-llama"
    assert [n.derivation for n in decision.names] == [Derivation.EQUALS_PATH]
    assert "not proof of the weights' bytes" in decision.detail


def test_an_id_equal_to_the_final_path_component_is_established() -> None:
    decision = _established(
        _served("Qwen2.5-Coder-1.5B-Instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct")
    )
    assert [n.derivation for n in decision.names] == [Derivation.FINAL_PATH_COMPONENT]
    assert decision.configured_path == "Qwen/Qwen2.5-Coder-1.5B-Instruct"


def test_an_alias_is_not_derivable_and_never_a_contradiction() -> None:
    for alias, root in (
        ("tiny-llama:q4-alias", "/models/tiny-llama"),
        ("deepseek-v4-flash:iq3s-split", "/models/deepseek-v4-flash"),
        ("Qwen2.5-Coder", "Qwen/Qwen2.5-Coder-1.5B-Instruct"),  # a prefix is not the component
        ("Qwen", "Qwen/Qwen2.5-Coder-1.5B-Instruct"),  # nor is the first component
    ):
        refused = _refused(_served(alias, root))
        assert refused.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE, alias
        assert [n.derivation for n in refused.names] == [Derivation.NOT_DERIVABLE]
        assert refused.configured_path == root
        assert "contradict" not in refused.detail.lower()
        assert "contradict" not in refused.remedy.lower()


def test_one_alias_among_derivable_ids_refuses_the_set() -> None:
    front_door = bundle(
        version_body("0.32.0"), models_body(("m", "/models/m"), ("m:fp8", "/models/m"))
    )
    refused = _refused(front_door)
    assert refused.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE
    assert "'m:fp8'" in refused.detail
    assert "'m'," not in refused.detail


def test_the_real_capture_serves_an_alias() -> None:
    refused = _refused(probe_stub())
    assert refused.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE
    assert [n.served_id for n in refused.names] == ["tiny-llama:q4-alias"]
    assert refused.configured_path == "/models/tiny-llama"
    assert "contradict" not in refused.detail.lower()


def test_unauthorized_models_is_unobserved_with_an_api_key_remedy() -> None:
    refused = _refused(probe_stub(api_key="secret"))
    assert refused.reason is IdentityReason.MODELS_UNOBSERVED
    assert "API key" in refused.remedy
    assert "unauthorized" in refused.detail
    saved = bundle(
        version_body("0.32.0"),
        {Route.MODELS: b'{"error":"Unauthorized"}'},
        statuses={Route.MODELS: 401},
    )
    assert "API key" in _refused(saved).remedy
    # a route never probed gets a different remedy
    not_probed = _refused(bundle(version_body("0.32.0")))
    assert not_probed.reason is IdentityReason.MODELS_UNOBSERVED
    assert "API key" not in not_probed.remedy


def test_the_logs_non_default_args_name_the_served_models() -> None:
    head = banner("0.32.0")
    named = args("{'model': '/models/tiny-llama', 'served_model_name': ['tiny-llama']}")
    decision = _established(None, log(head + named))
    assert [n.served_id for n in decision.names] == ["tiny-llama"]
    assert decision.configured_path == "/models/tiny-llama"
    assert decision.source.where.startswith("log launch 0, line 2")
    aliased = args("{'model': '/models/tiny-llama', 'served_model_name': ['tiny-llama:q4-alias']}")
    refused = _refused(None, log(head + aliased))
    assert refused.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE
    # no served_model_name: the model argument is the one served id
    plain = _established(None, log(head + args("{'model': 'Qwen/Qwen2.5-7B'}")))
    assert [n.served_id for n in plain.names] == ["Qwen/Qwen2.5-7B"]


def test_served_names_without_a_model_argument_have_no_configured_path() -> None:
    text = banner("0.32.0") + args("{'served_model_name': ['tiny-llama']}")
    refused = _refused(None, log(text))
    assert refused.reason is IdentityReason.CONFIGURED_PATH_UNOBSERVED


def test_a_card_without_root_has_no_configured_path() -> None:
    front_door = bundle(
        version_body("0.32.0"), {Route.MODELS: b'{"object":"list","data":[{"id":"m"}]}'}
    )
    assert _refused(front_door).reason is IdentityReason.CONFIGURED_PATH_UNOBSERVED


def test_lora_cards_are_not_judged_as_base_identity() -> None:
    body = public_capture("models/aibrix-runtime-lora-adapters.txt")
    decision = _established(bundle(version_body("0.10.2"), {Route.MODELS: body}))
    # only the base card; lora-1 and lora-2 (root: the adapter path) are not names of it
    assert [n.served_id for n in decision.names] == ["Qwen/Qwen2.5-Coder-1.5B-Instruct"]
    assert decision.configured_path == "Qwen/Qwen2.5-Coder-1.5B-Instruct"


def test_identity_needs_a_version_from_its_own_source() -> None:
    refused = _refused(bundle(models_body(("m", "/models/m"))))
    assert refused.reason is IdentityReason.VERSION_UNOBSERVED
    outside = _refused(_served("m", "/models/m", version="99.0"))
    assert outside.reason is IdentityReason.VERSION_NOT_ESTABLISHED
    _established(_served("m", "/models/m", version="0.6.6.post1"))
    unversioned_log = log(args("{'model': '/models/m'}"))
    assert _refused(None, unversioned_log).reason is IdentityReason.VERSION_UNOBSERVED


def test_nothing_names_the_models() -> None:
    refused = _refused(None, None)
    assert refused.reason is IdentityReason.MODELS_UNOBSERVED
    assert refused.names == ()


# --- the derivation rule itself, both ways -----------------------------------------


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


# --- what a refusal carries besides its words (witnessed in both directions) -----------


def test_a_log_named_identity_keeps_the_args_lines_process() -> None:
    text = banner("0.32.0") + args("{'model': '/models/m'}")
    decision = assess(None, log(text)).served_identity
    assert isinstance(decision, ServedIdentityEstablished)
    assert decision.source.where == "log launch 0, line 2 (APIServer pid=100)"
    assert [(n.served_id, n.configured_path) for n in decision.names] == [
        ("/models/m", "/models/m")
    ]


def test_each_served_name_carries_its_configured_path() -> None:
    door = bundle(version_body("0.32.0"), models_body(("m", "/models/m"), ("x", "/models/m")))
    decision = assess(door).served_identity
    assert isinstance(decision, ServedIdentityRefused)
    assert [(n.served_id, n.configured_path) for n in decision.names] == [
        ("m", "/models/m"),
        ("x", "/models/m"),
    ]


def test_two_configured_paths_are_no_single_path() -> None:
    door = bundle(version_body("0.32.0"), models_body(("a", "/models/a"), ("b", "/models/b")))
    refused = assess(door).served_identity
    assert isinstance(refused, ServedIdentityRefused)
    assert refused.reason is IdentityReason.CONFIGURED_PATH_UNOBSERVED
    assert refused.configured_path is None
    one = bundle(version_body("0.32.0"), models_body(("a", "/models/a")))
    assert isinstance(assess(one).served_identity, ServedIdentityEstablished)


def test_a_front_door_identity_ignores_a_log_of_another_build() -> None:
    door = bundle(version_body("0.27.0"), models_body(("m", "/models/m")))
    decision = assess(door, log(banner("0.32.0"))).served_identity
    assert isinstance(decision, ServedIdentityEstablished)
    assert decision.source.where == "GET /v1/models"


def test_several_aliases_are_listed() -> None:
    door = bundle(version_body("0.32.0"), models_body(("a", "/models/m"), ("b", "/models/m")))
    refused = assess(door).served_identity
    assert isinstance(refused, ServedIdentityRefused)
    assert refused.detail.startswith("served id(s) 'a', 'b' are not derivable")


# --- the law each refusal used, or that none applied ---------------------------------


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


# --- what a person reads: each refusal's detail and remedy, written out by hand ---------
# A refusal names the earliest missing piece in words; the CLI prints them and policy
# authors quote them.  Each test below builds one case of one arm and writes the expected
# text out in full (the facts of the case filled in by hand), so that a changed word, a
# lost fact or a clause forced on or off fails here.  The tests above decide *which* arm a
# case reaches; these pin what the arm says.


FrontDoor = CapturedReadback | HistoricalBundle


def _identity(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> ServedIdentityRefused:
    decision = assess_joined(front_door, startup_log).served_identity
    assert isinstance(decision, ServedIdentityRefused), decision
    return decision


def test_identity_established_says_intent_not_bytes() -> None:
    door = bundle(version_body("0.32.0"), models_body(("m", "/models/m")))
    decision = assess(door).served_identity
    assert isinstance(decision, ServedIdentityEstablished)
    assert decision.detail == (
        "served id(s) 'm' derive from the configured path '/models/m'; that is configuration "
        "intent, not proof of the weights' bytes"
    )


def test_identity_nothing_names_the_models() -> None:
    _says(
        _identity(None),
        IdentityReason.MODELS_UNOBSERVED,
        "no /v1/models answer and no launch naming its served models",
        "probe /v1/models, or give the launch's startup log",
    )
    _says(
        _identity(bundle(version_body("0.32.0"))),
        IdentityReason.MODELS_UNOBSERVED,
        "/v1/models: not_requested",
        "probe /v1/models, or give the launch's startup log",
    )


def test_identity_behind_an_api_key() -> None:
    _says(
        _identity(probe_stub(api_key="secret")),
        IdentityReason.MODELS_UNOBSERVED,
        "/v1/models: unauthorized",
        "probe with the API key (/v1/models is guarded by --api-key)",
    )


def test_identity_restarted_front_door() -> None:
    _says(
        _identity(probe_stub(REAL, restart_after_metrics_reads=1)),
        IdentityReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_identity_log_of_another_build() -> None:
    _says(
        _identity(bundle(version_body("0.27.0")), log(banner("0.32.0") + args("{'model': 'm'}"))),
        IdentityReason.LOG_NOT_JOINED,
        "the startup log is not joined to this front door (version_contradicted: the log's "
        "launch reports vLLM 0.32.0 but /version reports 0.27.0: they are not the same "
        "server); the front door alone: /v1/models: not_found",
        "give the startup log of the serving launch, with its launch receipt",
    )


def test_identity_without_its_version() -> None:
    _says(
        _identity(bundle(models_body(("m", "/models/m")))),
        IdentityReason.VERSION_UNOBSERVED,
        "no vLLM version alongside GET /v1/models",
        "read /version (or the launch's version banner) from the same source",
    )


def test_identity_release_outside_the_table() -> None:
    _says(
        _identity(bundle(version_body("99.0"), models_body(("m", "/models/m")))),
        IdentityReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none",
    )


def test_identity_card_without_a_root() -> None:
    _says(
        _identity(bundle(version_body("0.32.0"), models_body(("m", None)))),
        IdentityReason.CONFIGURED_PATH_UNOBSERVED,
        "GET /v1/models names no single configured path",
        "read /v1/models (root) or the launch's non-default args (model)",
    )


def test_identity_alias() -> None:
    _says(
        _identity(bundle(version_body("0.32.0"), models_body(("tiny:alias", "/models/tiny")))),
        IdentityReason.SERVED_ID_NOT_DERIVABLE,
        "served id(s) 'tiny:alias' are not derivable from the configured path '/models/tiny': "
        "an alias is not evidence of the artifact",
        "serve under the configured path (or its final component), or check the weights out "
        "of band",
    )


def test_a_log_of_another_build_does_not_turn_a_front_door_alias_into_log_not_joined() -> None:
    """/v1/models names the served ids, so the identity is the front door's: a 0.32.0 log
    beside a 0.33.0 front door is not read for it, and the alias refusal stands as the
    front door gives it (not ``log_not_joined``)."""
    door = bundle(version_body("0.33.0"), models_body(("alias", "/models/m")))
    _says(
        _identity(door, log(banner("0.32.0") + args("{'model': '/models/m'}"))),
        IdentityReason.SERVED_ID_NOT_DERIVABLE,
        "served id(s) 'alias' are not derivable from the configured path '/models/m': an "
        "alias is not evidence of the artifact",
        "serve under the configured path (or its final component), or check the weights out "
        "of band",
    )
