"""Served identity: a served id names the artifact only when derivable from the path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests._evidence import (
    HEALTHY,
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
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import assess
from vllm_evidence._output.assessment import assessment_document
from vllm_evidence._readback import CapturedReadback, HistoricalBundle
from vllm_evidence.decisions import (
    Derivation,
    IdentityReason,
    ServedIdentityEstablished,
    ServedIdentityRefused,
)
from vllm_evidence.decisions._identity import derivation
from vllm_evidence.testing._stub import Fault, serve_capture
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


def test_lora_cards_are_not_judged_as_base_identity_but_as_their_own() -> None:
    body = public_capture("models/aibrix-runtime-lora-adapters.txt")
    refused = _refused(bundle(version_body("0.10.2"), {Route.MODELS: body}))
    # only the base card is a name of the base; lora-1 and lora-2 are adapters of their
    # own, and neither name derives from their root (the adapter's hub id)
    assert [n.served_id for n in refused.names] == ["Qwen/Qwen2.5-Coder-1.5B-Instruct"]
    assert refused.configured_path == "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    assert refused.reason is IdentityReason.ADAPTER_NOT_DERIVABLE
    root = "bharati2324/Qwen2.5-1.5B-Instruct-Code-LoRA-r16v2"
    base = "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    assert [(a.name, a.root, a.parent, a.derivation) for a in refused.adapters] == [
        ("lora-1", root, base, Derivation.NOT_DERIVABLE),
        ("lora-2", root, base, Derivation.NOT_DERIVABLE),
    ]


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


# --- LoRA adapters: every served card is judged, each adapter against its own root -------
# vLLM lists each adapter (``--lora-modules NAME=PATH``) after the base cards as a card of
# its own: ``id`` NAME, ``root`` PATH, ``parent`` the base's served name, no
# ``max_model_len``.  An adapter is other weights: it is named in the decision, and its
# name must derive from its own root as a base id must from the model's.

BASE = "/models/tiny-llama"
ADAPTER_ROOT = "/models/tiny-llama-lora"


def _cards(*cards: tuple[str, str | None, str | None]) -> dict[Route, bytes]:
    """``/v1/models`` with one card per ``(id, root, parent)`` in vLLM's shape: ``parent``
    ``None`` is a base card, anything else a LoRA adapter card (no ``max_model_len``)."""
    data = [
        {
            "id": served_id,
            "object": "model",
            "owned_by": "vllm",
            "root": root,
            "parent": parent,
            "max_model_len": 2048 if parent is None else None,
        }
        for served_id, root, parent in cards
    ]
    return {Route.MODELS: json.dumps({"object": "list", "data": data}).encode()}


def _lora(*adapters: tuple[str, str | None, str]) -> HistoricalBundle:
    """The issue's server (no ``--served-model-name``: the base id is the model path),
    with these adapter cards after the base card."""
    return bundle(
        version_body("0.32.0"), _cards((BASE, BASE, None), *((i, r, p) for i, r, p in adapters))
    )


def test_an_adapter_whose_name_is_not_its_path_refuses_naming_it() -> None:
    """``--lora-modules myadapter=/models/tiny-llama-lora``: the base id derives from its
    path, the adapter's name does not derive from its own."""
    refused = _refused(_lora(("myadapter", ADAPTER_ROOT, BASE)))
    assert refused.reason is IdentityReason.ADAPTER_NOT_DERIVABLE
    assert [(n.served_id, n.derivation) for n in refused.names] == [(BASE, Derivation.EQUALS_PATH)]
    assert refused.configured_path == BASE
    assert [(a.name, a.root, a.parent, a.derivation) for a in refused.adapters] == [
        ("myadapter", ADAPTER_ROOT, BASE, Derivation.NOT_DERIVABLE)
    ]
    assert "'myadapter'" in refused.detail
    assert "contradict" not in refused.detail.lower()
    assert isinstance(refused.law, ModelCardLaw)
    assert refused.source is not None
    assert refused.source.where == "GET /v1/models"


def test_an_adapter_named_after_its_path_is_established_as_its_own_artifact() -> None:
    decision = _established(_lora(("tiny-llama-lora", ADAPTER_ROOT, BASE)))
    assert [n.served_id for n in decision.names] == [BASE]
    assert decision.configured_path == BASE
    assert [(a.name, a.root, a.parent, a.derivation) for a in decision.adapters] == [
        ("tiny-llama-lora", ADAPTER_ROOT, BASE, Derivation.FINAL_PATH_COMPONENT)
    ]
    equal = _established(_lora((ADAPTER_ROOT, ADAPTER_ROOT, BASE)))
    assert [a.derivation for a in equal.adapters] == [Derivation.EQUALS_PATH]


def test_a_policy_can_require_no_adapters_or_name_them() -> None:
    plain = _established(_served(BASE, BASE))
    assert plain.adapters == ()
    assert not plain.adapters
    two = _established(
        _lora(("sql-lora", "/adapters/sql-lora", BASE), ("chat", "/adapters/chat/", BASE))
    )
    assert [a.name for a in two.adapters] == ["sql-lora", "chat"]
    assert [a.root for a in two.adapters] == ["/adapters/sql-lora", "/adapters/chat/"]


def test_a_base_established_beside_an_adapter_says_so() -> None:
    decision = _established(_lora(("tiny-llama-lora", ADAPTER_ROOT, BASE)))
    assert decision.detail == (
        "served id(s) '/models/tiny-llama' derive from the configured path "
        "'/models/tiny-llama'; LoRA adapter(s) 'tiny-llama-lora' from "
        "'/models/tiny-llama-lora' on '/models/tiny-llama' are served too, each named after "
        "its own path; that is configuration intent, not proof of the weights' bytes"
    )
    alone = _established(_served(BASE, BASE))
    assert "LoRA" not in alone.detail


def test_one_underived_adapter_among_derived_ones_refuses_and_only_it_is_listed() -> None:
    refused = _refused(
        _lora(("tiny-llama-lora", ADAPTER_ROOT, BASE), ("alias", "/adapters/sql", BASE))
    )
    assert refused.reason is IdentityReason.ADAPTER_NOT_DERIVABLE
    assert "'alias' from '/adapters/sql'" in refused.detail
    assert "'tiny-llama-lora'" not in refused.detail
    # both cards are still carried, in served order
    assert [a.name for a in refused.adapters] == ["tiny-llama-lora", "alias"]


def test_an_adapter_card_without_a_root_is_not_derivable() -> None:
    refused = _refused(_lora(("x", None, BASE)))
    assert refused.reason is IdentityReason.ADAPTER_NOT_DERIVABLE
    assert [(a.name, a.root, a.derivation) for a in refused.adapters] == [("x", None, None)]
    assert "'x' (no root) on '/models/tiny-llama'" in refused.detail


def test_an_adapter_whose_parent_is_not_served_refuses() -> None:
    """``base_model_name`` is written by the operator and never checked by vLLM: a parent
    that no base card of the answer serves does not say which base the adapter runs on."""
    refused = _refused(_lora(("tiny-llama-lora", ADAPTER_ROOT, "meta-llama/Llama-2-7b")))
    assert refused.reason is IdentityReason.ADAPTER_PARENT_NOT_SERVED
    assert [(a.name, a.parent) for a in refused.adapters] == [
        ("tiny-llama-lora", "meta-llama/Llama-2-7b")
    ]
    assert "'meta-llama/Llama-2-7b'" in refused.detail


def test_an_adapters_parent_may_be_any_served_base_name() -> None:
    """Each --served-model-name is its own base card; an adapter on the second is on a
    served base all the same."""
    door = bundle(
        version_body("0.32.0"),
        _cards(
            ("tiny-llama", BASE, None),
            (BASE, BASE, None),
            ("tiny-llama-lora", ADAPTER_ROOT, BASE),
        ),
    )
    decision = _established(door)
    assert [a.parent for a in decision.adapters] == [BASE]


def test_a_base_alias_is_refused_before_the_adapters() -> None:
    refused = _refused(
        bundle(
            version_body("0.32.0"),
            _cards(("tiny:alias", BASE, None), ("myadapter", ADAPTER_ROOT, "tiny:alias")),
        )
    )
    assert refused.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE
    assert [a.name for a in refused.adapters] == ["myadapter"]


def test_an_underived_adapter_is_refused_before_an_unserved_parent() -> None:
    refused = _refused(_lora(("myadapter", ADAPTER_ROOT, "elsewhere")))
    assert refused.reason is IdentityReason.ADAPTER_NOT_DERIVABLE


def test_adapter_cards_without_a_base_card_name_no_configured_path() -> None:
    """An answer with adapter cards is the front door's even without a base card: a
    joined log's names do not stand in for it (its adapters would go unjudged)."""
    startup_log = log(banner("0.32.0") + args(f"{{'model': '{BASE}'}}"))
    adapters_only = bundle(
        version_body("0.32.0"), _cards(("tiny-llama-lora", ADAPTER_ROOT, BASE)), HEALTHY
    )
    refused = _refused(adapters_only, startup_log)
    assert refused.reason is IdentityReason.CONFIGURED_PATH_UNOBSERVED
    assert refused.source is not None
    assert refused.source.where == "GET /v1/models"
    assert [a.name for a in refused.adapters] == ["tiny-llama-lora"]
    # an empty answer names nothing, and the joined log's names stand (as before)
    empty = bundle(version_body("0.32.0"), _cards(), HEALTHY)
    from_log = _established(empty, startup_log)
    assert [n.served_id for n in from_log.names] == [BASE]
    assert from_log.source.where.startswith("log launch 0, line 2")


LORA_MODULES = (
    "[LoRAModulePath(name='myadapter', path='/models/tiny-llama-lora', base_model_name=None)]"
)


def test_a_log_whose_launch_was_given_lora_modules_does_not_observe_its_adapters() -> None:
    head = banner("0.32.0")
    given = args(f"{{'model': '{BASE}', 'enable_lora': True, 'lora_modules': {LORA_MODULES}}}")
    refused = _refused(None, log(head + given))
    assert refused.reason is IdentityReason.ADAPTERS_UNOBSERVED
    assert [n.served_id for n in refused.names] == [BASE]
    assert refused.adapters == ()
    # enable_lora alone serves no adapter at start; a printed None or [] gives none
    for text in (
        f"{{'model': '{BASE}', 'enable_lora': True}}",
        f"{{'model': '{BASE}', 'lora_modules': None}}",
        f"{{'model': '{BASE}', 'lora_modules': []}}",
    ):
        assert _established(None, log(head + args(text))).adapters == ()


def test_a_base_alias_in_the_log_is_refused_before_its_lora_modules() -> None:
    text = (
        f"{{'model': '{BASE}', 'served_model_name': ['tiny:alias'], "
        f"'lora_modules': {LORA_MODULES}}}"
    )
    refused = _refused(None, log(banner("0.32.0") + args(text)))
    assert refused.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE


def test_an_adapters_repr_and_the_decisions_name_it() -> None:
    decision = _established(_lora(("tiny-llama-lora", ADAPTER_ROOT, BASE)))
    assert repr(decision) == (
        "ServedIdentityEstablished('/models/tiny-llama' from '/models/tiny-llama', "
        "adapters 'tiny-llama-lora')"
    )
    assert repr(decision.adapters[0]) == (
        "ServedAdapter('tiny-llama-lora' on '/models/tiny-llama' (final_path_component))"
    )
    four = _established(_lora(*((n, f"/adapters/{n}", BASE) for n in "abcd")))
    assert repr(four).endswith("adapters 'a', 'b', 'c', …(4 adapters))")
    refused = _refused(_lora(("x", None, BASE)))
    assert repr(refused.adapters[0]) == "ServedAdapter('x' on '/models/tiny-llama')"
    assert repr(refused).startswith(
        "ServedIdentityRefused(adapter_not_derivable, '/models/tiny-llama', adapters 'x', "
    )


def test_the_document_lists_the_adapters() -> None:
    served = assessment_document(assess(_lora(("myadapter", ADAPTER_ROOT, BASE))))
    identity = served["decisions"]["served_identity"]
    assert (identity["verdict"], identity["reason"]) == ("refused", "adapter_not_derivable")
    assert identity["adapters"] == [
        {
            "name": "myadapter",
            "root": "/models/tiny-llama-lora",
            "parent": "/models/tiny-llama",
            "derivation": "not_derivable",
        }
    ]
    assert identity["served_ids"] == ["/models/tiny-llama"]
    rootless = assessment_document(assess(_lora(("x", None, BASE))))
    assert rootless["decisions"]["served_identity"]["adapters"] == [
        {"name": "x", "root": None, "parent": "/models/tiny-llama", "derivation": None}
    ]
    plain = assessment_document(assess(_served(BASE, BASE)))
    assert plain["decisions"]["served_identity"]["adapters"] == []


# the adapters' refusals, word for word


def test_identity_adapter_not_derivable() -> None:
    _says(
        _identity(_lora(("myadapter", ADAPTER_ROOT, BASE))),
        IdentityReason.ADAPTER_NOT_DERIVABLE,
        "LoRA adapter(s) 'myadapter' from '/models/tiny-llama-lora' on '/models/tiny-llama' "
        "are served under a name not derivable from their own configured path: an alias is "
        "not evidence of the adapter's weights",
        "name each adapter after its path or the path's final component "
        "(--lora-modules NAME=PATH), or check the adapter's weights out of band",
    )


def test_identity_adapter_parent_not_served() -> None:
    _says(
        _identity(_lora(("tiny-llama-lora", ADAPTER_ROOT, "llama-2"))),
        IdentityReason.ADAPTER_PARENT_NOT_SERVED,
        "LoRA adapter(s) 'tiny-llama-lora' (parent 'llama-2') name no base card of this "
        "answer (served: '/models/tiny-llama'): which base an adapter runs on is not "
        "established",
        "give the adapter a base_model_name that is a served name (or none, for the first), "
        "or check which base it runs on out of band",
    )


def test_identity_adapters_unobserved_in_a_log() -> None:
    given = args(f"{{'model': '{BASE}', 'lora_modules': {LORA_MODULES}}}")
    _says(
        _identity(None, log(banner("0.32.0") + given)),
        IdentityReason.ADAPTERS_UNOBSERVED,
        "log launch 0, line 2 (APIServer pid=100) gives lora_modules: a startup log prints "
        "the LoRA adapters as text, not as served cards, so which adapters are served, under "
        "which names, is not observed",
        "probe /v1/models (each LoRA adapter is a card of its own there)",
    )


def test_identity_adapter_cards_and_no_base_card() -> None:
    _says(
        _identity(bundle(version_body("0.32.0"), _cards(("a", "/adapters/a", BASE)))),
        IdentityReason.CONFIGURED_PATH_UNOBSERVED,
        "GET /v1/models names no single configured path (LoRA adapter cards and no base card)",
        "read /v1/models (root) or the launch's non-default args (model)",
    )


# --- the command line: --require served_identity with an adapter served ------------------


def _require_served_identity(models: bytes) -> subprocess.CompletedProcess[str]:
    """``probe URL --require served_identity`` against the stub front door serving the
    real capture with this ``/v1/models`` body."""
    with serve_capture(REAL, faults={Route.MODELS: Fault(status=200, body=models)}) as door:
        return subprocess.run(
            [sys.executable, "-m", "vllm_evidence", "probe", door.url, "--require",
             "served_identity"],
            capture_output=True, text=True, check=False, timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )  # fmt: skip


def test_require_served_identity_exits_3_for_an_underived_adapter() -> None:
    refused = _require_served_identity(
        _cards((BASE, BASE, None), ("myadapter", ADAPTER_ROOT, BASE))[Route.MODELS]
    )
    assert refused.returncode == 3, (refused.stdout, refused.stderr)
    assert refused.stderr.strip().endswith("for the serving process: served_identity")
    assert "adapter_not_derivable" in refused.stdout
    derived = _require_served_identity(
        _cards((BASE, BASE, None), ("tiny-llama-lora", ADAPTER_ROOT, BASE))[Route.MODELS]
    )
    assert derived.returncode == 0, (derived.stdout, derived.stderr)
