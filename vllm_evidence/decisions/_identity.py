"""Served identity: what a served model id establishes about the served artifact.

vLLM's ``/v1/models`` card has ``id`` (a served name, any string the operator chose)
and ``root`` (the model argument as configured).  A served id is taken as naming the
artifact only when it is *derivable* from the configured path: equal to it, or equal
to its final path component.  Anything else — ``tiny-llama:q4-alias``,
``deepseek-v4-flash:iq3s-split`` — is an alias, and an alias proves nothing about the
weights: a quantisation token in it is a claim nobody checked.  The id and the path
never "contradict": an alias is simply not evidence.

Even a derivable id establishes only the *configured path*: intent, not the bytes
that were loaded.

Every served card is judged, LoRA adapters included.  vLLM lists each adapter of
``--lora-modules NAME=PATH`` (and each one loaded at run time) as a card of its own after
the base cards: ``id`` NAME, ``root`` PATH, ``parent`` the base's served name (the
module's ``base_model_name`` when given, else the first served name).  An adapter is a
served artifact of its own (other weights on the base), so the same rule applies to it
against its *own* root: an adapter whose name is not derivable from its root (or that
has no root) refuses ``adapter_not_derivable``, naming it; an adapter whose ``parent``
names no base card of the same answer refuses ``adapter_parent_not_served`` (vLLM never
checks ``base_model_name`` against the served names, so such a parent is a label nobody
checked, and which base the adapter runs on is not read from the answer).  A derivable
adapter on a served base is named in the established arm (``adapters``), whose detail
says adapters are served too.  A log alone lists no cards: a launch whose non-default
args give ``lora_modules`` refuses ``adapters_unobserved`` (its adapters are printed
text, not served cards).

With a front door the subject is the serving process (nothing is established from a
front door that was not reached, answered only errors or restarted mid-batch; the log's
names count only when the log is joined to it, else ``log_not_joined``); a log alone
establishes what its *launch* served.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple, TypeAlias, final

import attrs

from vllm_evidence._readback.evidence import (
    Evidence,
    Source,
    Subject,
    arm_name,
    log_source,
    route_source,
)
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions._common import (
    refusal_summary,
    scope,
    serving_decision,
)
from vllm_evidence.decisions._life import Needs
from vllm_evidence.upstream import LawNotEstablished, ModelCardLaw, ReleaseLaws

__all__ = [
    "Derivation",
    "IdentityReason",
    "ServedAdapter",
    "ServedIdentityDecision",
    "ServedIdentityEstablished",
    "ServedIdentityRefused",
    "ServedName",
    "derivation",
]


class Derivation(enum.Enum):
    """How a served id relates to the configured path."""

    EQUALS_PATH = "equals_path"
    FINAL_PATH_COMPONENT = "final_path_component"
    NOT_DERIVABLE = "not_derivable"


class IdentityReason(enum.Enum):
    """Why the served ids do, or do not, identify the configured artifact."""

    ESTABLISHED = "established"
    FRONT_DOOR_UNREACHABLE = "front_door_unreachable"
    FRONT_DOOR_NOT_ANSWERING = "front_door_not_answering"
    LOG_NOT_JOINED = "log_not_joined"
    LAUNCH_NEVER_STARTED = "launch_never_started"
    MODELS_UNOBSERVED = "models_unobserved"
    FRONT_DOOR_RESTARTED = "front_door_restarted"
    FRONT_DOOR_SEVERAL_PROCESSES = "front_door_several_processes"
    SOURCES_CONFLICT = "sources_conflict"
    VERSION_UNOBSERVED = "version_unobserved"
    VERSION_NOT_ESTABLISHED = "version_not_established"
    CONFIGURED_PATH_UNOBSERVED = "configured_path_unobserved"
    SERVED_ID_NOT_DERIVABLE = "served_id_not_derivable"
    ADAPTERS_UNOBSERVED = "adapters_unobserved"
    ADAPTER_NOT_DERIVABLE = "adapter_not_derivable"
    ADAPTER_PARENT_NOT_SERVED = "adapter_parent_not_served"


@final
@attrs.frozen(init=False, repr=False)
class ServedName(Sealed):
    """One served id and how it relates to its configured path."""

    __public_constructor__ = "vllm_evidence.decisions.decide_served_identity()"

    served_id: str
    configured_path: str | None
    derivation: Derivation | None
    """``None`` when the configured path is unobserved."""

    def _repr_summary(self) -> str:
        how = "" if self.derivation is None else f" ({self.derivation.value})"
        return f"{self.served_id!r}{how}"


_mint_name = minter(ServedName, ServedName.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ServedAdapter(Sealed):
    """One LoRA adapter card of ``/v1/models``: a served artifact of its own (the
    adapter's weights on a base), judged against its own root.

    ``root`` is the adapter's path as configured: intent, not the bytes loaded.
    """

    __public_constructor__ = "vllm_evidence.decisions.decide_served_identity()"

    name: str
    """``id``: the adapter's served name (NAME of ``--lora-modules NAME=PATH``)."""
    root: str | None
    """``root``: the adapter's path as configured; ``None`` when the card has none."""
    parent: str
    """``parent``: the base served name the card says the adapter runs on."""
    derivation: Derivation | None
    """How ``name`` relates to ``root``; ``None`` when the card has no root."""

    def _repr_summary(self) -> str:
        how = "" if self.derivation is None else f" ({self.derivation.value})"
        return f"{self.name!r} on {self.parent!r}{how}"


_mint_adapter = minter(ServedAdapter, ServedAdapter.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ServedIdentityEstablished(Sealed):
    """Every served id is derivable from the configured path, and every LoRA adapter
    served beside it from its own (``adapters``; empty when none is served).

    This establishes the configured paths only — intent, not the bytes served.
    """

    __public_constructor__ = "vllm_evidence.decisions.decide_served_identity()"

    subject: Subject
    names: tuple[ServedName, ...]
    configured_path: str
    source: Source
    law: ModelCardLaw
    adapters: tuple[ServedAdapter, ...]
    """The LoRA adapters served beside the base, each derivable from its own root and
    on a served base card, in served order; empty when none is served."""

    @property
    def reason(self) -> IdentityReason:
        """Always :attr:`IdentityReason.ESTABLISHED`."""
        return IdentityReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        ids = ", ".join(repr(n.served_id) for n in self.names)
        adapters = (
            f"; LoRA adapter(s) {_adapters_text(self.adapters)} are served too, each named "
            "after its own path"
            if self.adapters
            else ""
        )
        return (
            f"served id(s) {ids} derive from the configured path {self.configured_path!r}"
            f"{adapters}; that is configuration intent, not proof of the weights' bytes"
        )

    def _repr_summary(self) -> str:
        adapters = [_adapters_summary(self.adapters)] if self.adapters else []
        return ", ".join([f"{_names_summary(self.names)} from {self.configured_path!r}", *adapters])


@final
@attrs.frozen(init=False, repr=False)
class ServedIdentityRefused(Sealed):
    """The served ids are not established as the artifact's identity, and why."""

    __public_constructor__ = "vllm_evidence.decisions.decide_served_identity()"

    subject: Subject
    reason: IdentityReason
    detail: str
    remedy: str
    names: tuple[ServedName, ...]
    configured_path: str | None
    source: Source | None
    law: ModelCardLaw | LawNotEstablished | None
    adapters: tuple[ServedAdapter, ...]
    """The LoRA adapter cards read (the one refused among them); empty before any card is
    read, and for a log, which lists none."""

    def _repr_summary(self) -> str:
        figures = [_names_summary(self.names)] if self.names else []
        if self.adapters:
            figures.append(_adapters_summary(self.adapters))
        return refusal_summary(self.reason, self.detail, *figures)


ServedIdentityDecision: TypeAlias = ServedIdentityEstablished | ServedIdentityRefused

_mint_established = minter(ServedIdentityEstablished, ServedIdentityEstablished.__attrs_init__)
_mint_refused = minter(ServedIdentityRefused, ServedIdentityRefused.__attrs_init__)


def derivation(served_id: str, configured_path: str) -> Derivation:
    """Whether ``served_id`` is the configured path or its final path component."""
    if served_id == configured_path:
        return Derivation.EQUALS_PATH
    stripped = configured_path.rstrip("/")
    final_component = stripped.rsplit("/", 1)[-1]
    if final_component and served_id == final_component and final_component != stripped:
        return Derivation.FINAL_PATH_COMPONENT
    return Derivation.NOT_DERIVABLE


class _Observed(NamedTuple):
    """What names the served models, from one source."""

    pairs: list[tuple[str, str | None]]
    """(served id, configured path) of each base card (or each served name of the log)."""
    adapters: tuple[ServedAdapter, ...]
    """The LoRA adapter cards (``/v1/models`` only)."""
    source: Source
    origin: str
    """``front_door`` or ``startup_log``: where the version that scopes the law comes from."""
    lora_modules: bool
    """Whether the log's launch was given ``lora_modules`` (adapters it lists no card of)."""


def _observed(evidence: Evidence) -> _Observed | str:
    """The served names, their source, and the version's origin.

    Returns a one-line reason when nothing names the served models.  An answer with an
    adapter card is the front door's even without a base card: its adapters are not
    set aside for a log's names.
    """
    models = evidence.models()
    if models is not None:
        base = [(c.served_id, c.root) for c in models.cards if c.parent is None]
        adapters = tuple(
            _mint_adapter(
                name=c.served_id,
                root=c.root,
                parent=c.parent,
                derivation=None if c.root is None else derivation(c.served_id, c.root),
            )
            for c in models.cards
            if c.parent is not None
        )
        if base or adapters:
            return _Observed(
                base, adapters, route_source("/v1/models"), "front_door", lora_modules=False
            )
    launch = evidence.launch
    if launch is not None:
        for args in launch.non_default_args:
            path = args.model
            names = args.served_model_names
            if names is None and path is not None:
                names = (path,)
            if names is not None:
                pairs = [(name, path) for name in names]
                lora_modules = args.get("lora_modules") not in (None, "None", "[]")
                source = log_source(launch, args.line, args.process)
                return _Observed(pairs, (), source, "startup_log", lora_modules=lora_modules)
    if evidence.front_door is not None:
        return f"/v1/models: {arm_name(evidence.front_door.models)}"
    return "no /v1/models answer and no launch naming its served models"


def decide_served_identity(evidence: Evidence) -> ServedIdentityDecision:
    """Whether the served ids identify the configured artifact (never the bytes): of the
    serving process with a front door, of the log's launch without one."""
    return serving_decision(
        evidence, _decide, ServedIdentityEstablished, _refusal, needs=Needs.STARTED
    )


def _refusal(
    evidence: Evidence, reason: str, detail: str, remedy: str, alone: ServedIdentityDecision | None
) -> ServedIdentityRefused:
    """A refusal before any name is read: the gate's, or ``log_not_joined``."""
    del alone  # such a refusal carries no names
    return _mint_refused(
        subject=evidence.subject,
        reason=IdentityReason(reason),
        detail=detail,
        remedy=remedy,
        names=(),
        configured_path=None,
        source=None,
        law=None,
        adapters=(),
    )


def _decide(evidence: Evidence) -> ServedIdentityDecision:
    observed = _observed(evidence)
    if isinstance(observed, str):
        remedy = (
            "probe with the API key (/v1/models is guarded by --api-key)"
            if "unauthorized" in observed
            else "probe /v1/models, or give the launch's startup log"
        )
        return _mint_refused(
            subject=evidence.subject,
            reason=IdentityReason.MODELS_UNOBSERVED,
            detail=observed,
            remedy=remedy,
            names=(),
            configured_path=None,
            source=None,
            law=None,
            adapters=(),
        )
    pairs, adapters, source, origin, lora_modules = observed
    version = evidence.front_door_version() if origin == "front_door" else evidence.launch_version()
    names = tuple(
        _mint_name(
            served_id=served_id,
            configured_path=path,
            derivation=None if path is None else derivation(served_id, path),
        )
        for served_id, path in pairs
    )
    paths = {path for _, path in pairs}
    configured = next(iter(paths)) if len(paths) == 1 else None

    def refuse(
        reason: IdentityReason,
        detail: str,
        remedy: str,
        law: ModelCardLaw | LawNotEstablished | None,
    ) -> ServedIdentityRefused:
        return _mint_refused(
            subject=evidence.subject,
            reason=reason,
            detail=detail,
            remedy=remedy,
            names=names,
            configured_path=configured,
            source=source,
            law=law,
            adapters=adapters,
        )

    conflict = evidence.sources_conflict() if origin == "startup_log" else None
    if conflict is not None:
        return refuse(
            IdentityReason.SOURCES_CONFLICT,
            conflict,
            "give the startup log of the serving launch, or probe /v1/models with the key",
            None,
        )
    laws = scope(version)
    if laws is None:
        return refuse(
            IdentityReason.VERSION_UNOBSERVED,
            f"no vLLM version alongside {source}",
            "read /version (or the launch's version banner) from the same source",
            None,
        )
    if not isinstance(laws, ReleaseLaws):
        return refuse(IdentityReason.VERSION_NOT_ESTABLISHED, laws.statement, "none", None)
    law = laws.model_card()
    if not isinstance(law, ModelCardLaw):
        return refuse(IdentityReason.VERSION_NOT_ESTABLISHED, law.statement, "none", law)
    if configured is None:
        # no pair: only the front door's adapter cards named anything (a log always names one)
        bare = " (LoRA adapter cards and no base card)" if not pairs else ""
        return refuse(
            IdentityReason.CONFIGURED_PATH_UNOBSERVED,
            f"{source} names no single configured path{bare}",
            "read /v1/models (root) or the launch's non-default args (model)",
            law,
        )
    aliases = [n.served_id for n in names if n.derivation is Derivation.NOT_DERIVABLE]
    if aliases:
        shown = ", ".join(repr(a) for a in aliases)
        return refuse(
            IdentityReason.SERVED_ID_NOT_DERIVABLE,
            f"served id(s) {shown} are not derivable from the configured path "
            f"{configured!r}: an alias is not evidence of the artifact",
            "serve under the configured path (or its final component), or check the "
            "weights out of band",
            law,
        )
    if lora_modules:
        return refuse(
            IdentityReason.ADAPTERS_UNOBSERVED,
            f"{source} gives lora_modules: a startup log prints the LoRA adapters as text, "
            "not as served cards, so which adapters are served, under which names, is not "
            "observed",
            "probe /v1/models (each LoRA adapter is a card of its own there)",
            law,
        )
    underived = [a for a in adapters if a.derivation in (None, Derivation.NOT_DERIVABLE)]
    if underived:
        return refuse(
            IdentityReason.ADAPTER_NOT_DERIVABLE,
            f"LoRA adapter(s) {_adapters_text(underived)} are served under a name not "
            "derivable from their own configured path: an alias is not evidence of the "
            "adapter's weights",
            "name each adapter after its path or the path's final component "
            "(--lora-modules NAME=PATH), or check the adapter's weights out of band",
            law,
        )
    served = {served_id for served_id, _ in pairs}
    orphans = [a for a in adapters if a.parent not in served]
    if orphans:
        shown = ", ".join(f"{a.name!r} (parent {a.parent!r})" for a in orphans)
        bases = ", ".join(repr(n.served_id) for n in names)
        return refuse(
            IdentityReason.ADAPTER_PARENT_NOT_SERVED,
            f"LoRA adapter(s) {shown} name no base card of this answer (served: {bases}): "
            "which base an adapter runs on is not established",
            "give the adapter a base_model_name that is a served name (or none, for the "
            "first), or check which base it runs on out of band",
            law,
        )
    return _mint_established(
        subject=evidence.subject,
        names=names,
        configured_path=configured,
        source=source,
        law=law,
        adapters=adapters,
    )


def _names_summary(names: tuple[ServedName, ...]) -> str:
    """The served ids, quoted (the first three, then a count)."""
    shown = [repr(n.served_id) for n in names[:3]]
    more = [f"…({len(names)} names)"] if len(names) > 3 else []
    return ", ".join(shown + more)


def _adapters_summary(adapters: tuple[ServedAdapter, ...]) -> str:
    """``adapters 'a', 'b'``: the adapters' names, quoted (the first three, then a count)."""
    shown = [repr(a.name) for a in adapters[:3]]
    more = [f"…({len(adapters)} adapters)"] if len(adapters) > 3 else []
    return "adapters " + ", ".join(shown + more)


def _adapters_text(adapters: Sequence[ServedAdapter]) -> str:
    """Each adapter with its root and parent: ``'a' from '/adapters/a' on 'm'``."""
    return ", ".join(
        f"{a.name!r} (no root) on {a.parent!r}"
        if a.root is None
        else f"{a.name!r} from {a.root!r} on {a.parent!r}"
        for a in adapters
    )
