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

With a front door the subject is the serving process (nothing is established from a
front door that was not reached, answered only errors or restarted mid-batch; the log's
names count only when the log is joined to it, else ``log_not_joined``); a log alone
establishes what its *launch* served.
"""

from __future__ import annotations

import enum
from typing import TypeAlias, final

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.decisions._common import (
    refusal_summary,
    scope,
    serving_decision,
)
from vllm_evidence.readback.evidence import (
    Evidence,
    Source,
    Subject,
    arm_name,
    log_source,
    route_source,
)
from vllm_evidence.upstream import LawNotEstablished, ModelCardLaw, ReleaseLaws

__all__ = [
    "Derivation",
    "IdentityReason",
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
    MODELS_UNOBSERVED = "models_unobserved"
    FRONT_DOOR_RESTARTED = "front_door_restarted"
    SOURCES_CONFLICT = "sources_conflict"
    VERSION_UNOBSERVED = "version_unobserved"
    VERSION_NOT_ESTABLISHED = "version_not_established"
    CONFIGURED_PATH_UNOBSERVED = "configured_path_unobserved"
    SERVED_ID_NOT_DERIVABLE = "served_id_not_derivable"


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
class ServedIdentityEstablished(Sealed):
    """Every served id is derivable from the configured path.

    This establishes the configured path only — intent, not the bytes served.
    """

    __public_constructor__ = "vllm_evidence.decisions.decide_served_identity()"

    subject: Subject
    names: tuple[ServedName, ...]
    configured_path: str
    source: Source
    law: ModelCardLaw

    @property
    def reason(self) -> IdentityReason:
        """Always :attr:`IdentityReason.ESTABLISHED`."""
        return IdentityReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        ids = ", ".join(repr(n.served_id) for n in self.names)
        return (
            f"served id(s) {ids} derive from the configured path {self.configured_path!r}; "
            "that is configuration intent, not proof of the weights' bytes"
        )

    def _repr_summary(self) -> str:
        return f"{_names_summary(self.names)} from {self.configured_path!r}"


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

    def _repr_summary(self) -> str:
        figures = [_names_summary(self.names)] if self.names else []
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


def _observed(evidence: Evidence) -> tuple[list[tuple[str, str | None]], Source, str] | str:
    """(served id, configured path) pairs, their source, and the version's origin.

    Returns a one-line reason when nothing names the served models.
    """
    models = evidence.models()
    if models is not None:
        base = [(c.served_id, c.root) for c in models.cards if c.parent is None]
        if base:
            return base, route_source("/v1/models"), "front_door"
    launch = evidence.launch
    if launch is not None:
        for args in launch.non_default_args:
            path = args.model
            names = args.served_model_names
            if names is None and path is not None:
                names = (path,)
            if names is not None:
                pairs = [(name, path) for name in names]
                return pairs, log_source(launch, args.line, args.process), "startup_log"
    if evidence.front_door is not None:
        return f"/v1/models: {arm_name(evidence.front_door.models)}"
    return "no /v1/models answer and no launch naming its served models"


def decide_served_identity(evidence: Evidence) -> ServedIdentityDecision:
    """Whether the served ids identify the configured artifact (never the bytes): of the
    serving process with a front door, of the log's launch without one."""
    return serving_decision(evidence, _decide, ServedIdentityEstablished, _refusal)


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
        )
    pairs, source, origin = observed
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
        return refuse(
            IdentityReason.CONFIGURED_PATH_UNOBSERVED,
            f"{source} names no single configured path",
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
    return _mint_established(
        subject=evidence.subject, names=names, configured_path=configured, source=source, law=law
    )


def _names_summary(names: tuple[ServedName, ...]) -> str:
    """The served ids, quoted (the first three, then a count)."""
    shown = [repr(n.served_id) for n in names[:3]]
    more = [f"…({len(names)} names)"] if len(names) > 3 else []
    return ", ".join(shown + more)
