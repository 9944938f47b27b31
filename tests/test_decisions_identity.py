"""Served identity: a served id names the artifact only when derivable from the path."""

from __future__ import annotations

from tests._evidence import args, banner, bundle, log, models_body, probe_stub, version_body
from tests._paths import public_capture
from vllm_evidence.adapters.startup_log import StartupLog
from vllm_evidence.assessment import assess
from vllm_evidence.decisions import (
    Derivation,
    IdentityReason,
    ServedIdentityEstablished,
    ServedIdentityRefused,
)
from vllm_evidence.readback import CapturedReadback, HistoricalBundle
from vllm_evidence.upstream import Route


def _established(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> ServedIdentityEstablished:
    decision = assess(front_door, startup_log).served_identity
    assert isinstance(decision, ServedIdentityEstablished), decision
    return decision


def _refused(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> ServedIdentityRefused:
    decision = assess(front_door, startup_log).served_identity
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
