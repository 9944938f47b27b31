"""The joined view the decisions read: one server's evidence, by source, with the version
each carries.

Every decision takes an :class:`Evidence` — the front-door readback (or ``None``) and
one launch of a startup log (or ``None``) — and reads observations only through the
helpers here, so that "which source said this, and which release scopes it" has one
answer everywhere:

* a front-door fact is scoped by ``/version`` of the same readback;
* a log fact is scoped by the version the same launch printed;
* a front-door fact and a log fact are never joined into one claim: nothing over HTTP
  witnesses that a log belongs to the serving process (no pid, no engine id), so the
  cross-source join is never established by this version of the library.
"""

from __future__ import annotations

import enum
from typing import TypedDict, TypeVar, final

import attrs
from packaging.version import Version

from vllm_evidence._converter import converter
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.models import ServedModels
from vllm_evidence.adapters.outcome import Outcome, Parsed
from vllm_evidence.adapters.server_info import ServerInfo
from vllm_evidence.adapters.startup_log import Launch, ProcessTag
from vllm_evidence.readback.front_door import CapturedReadback, HistoricalBundle

__all__ = [
    "Evidence",
    "FrontDoor",
    "Source",
    "SourceDocument",
    "SourceKind",
    "arm_name",
    "gather",
    "log_source",
    "parsed",
    "route_source",
]

FrontDoor = CapturedReadback | HistoricalBundle
"""A front-door readback: one bracketed probe batch, or caller-supplied bodies."""

ObsT = TypeVar("ObsT")


class SourceKind(enum.Enum):
    """Which source an observation came from."""

    FRONT_DOOR = "front_door"
    STARTUP_LOG = "startup_log"


@final
@attrs.frozen(init=False, repr=False)
class Source(Sealed):
    """Where a decision's evidence sits: a route, or a launch's line."""

    __public_constructor__ = "vllm_evidence.assess()"

    kind: SourceKind
    where: str
    """``"GET /server_info?config_format=json"`` or ``"log launch 0, line 20 (EngineCore)"``."""

    def __str__(self) -> str:
        return self.where

    def as_json(self) -> SourceDocument:
        """``{"kind": "front_door" | "startup_log", "where": …}`` (through the converter)."""
        document: SourceDocument = converter.unstructure(self)
        return document

    def _repr_summary(self) -> str:
        return f"{self.kind.value}: {self.where}"


class SourceDocument(TypedDict):
    """A :class:`Source` in every JSON document."""

    kind: str
    where: str


def _source_document(source: Source) -> SourceDocument:
    return {"kind": source.kind.value, "where": source.where}


converter.register_unstructure_hook(Source, _source_document)

_mint_source = minter(Source, Source.__attrs_init__)


def route_source(target: str) -> Source:
    """The provenance of a front-door observation."""
    return _mint_source(kind=SourceKind.FRONT_DOOR, where=f"GET {target}")


def log_source(launch: Launch, line: int, process: ProcessTag | None = None) -> Source:
    """The provenance of a log observation."""
    who = f" ({process.text})" if process is not None else ""
    return _mint_source(
        kind=SourceKind.STARTUP_LOG, where=f"log launch {launch.index}, line {line}{who}"
    )


def parsed(outcome: Outcome[ObsT]) -> ObsT | None:
    """The observation of a parsed arm; ``None`` for every other arm."""
    return outcome.observation if isinstance(outcome, Parsed) else None


def arm_name(outcome: object) -> str:
    """A route outcome's arm in snake case (``not_found``, ``unauthorized``, …)."""
    name = type(outcome).__name__
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


@final
@attrs.frozen(init=False, repr=False)
class Evidence(Sealed):
    """One server's evidence: a front-door readback and/or one launch of its log."""

    __public_constructor__ = "vllm_evidence.assess()"

    front_door: FrontDoor | None
    launch: Launch | None

    def front_door_version(self) -> Version | None:
        """``/version`` of the readback, when parsed — and ``None`` when the server
        restarted during the read (:meth:`front_door_restarted`): then ``/version`` may
        belong to another process than the route it would scope."""
        if self.front_door is None or self.front_door_restarted():
            return None
        return self.reported_front_door_version()

    def reported_front_door_version(self) -> Version | None:
        """``/version`` as parsed, whatever the batch's join (for comparisons only)."""
        if self.front_door is None:
            return None
        observed = parsed(self.front_door.version)
        return observed.version if observed is not None else None

    def front_door_restarted(self) -> bool:
        """Whether the bracket saw two incarnations (``process_start_time_seconds`` changed)."""
        bracket = None if self.front_door is None else self.front_door.bracket
        return bracket is not None and bracket.marker_changed()

    def sources_conflict(self) -> str | None:
        """Why the log cannot describe the server behind the front door, or ``None``.

        Both sources report a version and the versions differ: they are two builds, so
        no fact of the log may be read as a fact of this front door (or combined with
        one).  Equal versions are no join either — just no evidence against one.
        """
        log_version = self.launch_version()
        door_version = self.reported_front_door_version()
        if log_version is None or door_version is None or log_version == door_version:
            return None
        return (
            f"the log's launch reports vLLM {log_version} but /version reports "
            f"{door_version}: they are not the same server"
        )

    def launch_version(self) -> Version | None:
        """The version the launch printed, when every version line agrees."""
        if self.launch is None:
            return None
        observed = self.launch.version
        return observed.version if observed is not None else None

    def server_info(self) -> tuple[ServerInfo, Source] | None:
        """Parsed ``/server_info``: the JSON form when it parsed, else the text form."""
        if self.front_door is None:
            return None
        json_form = parsed(self.front_door.server_info_json)
        if json_form is not None:
            return json_form, route_source("/server_info?config_format=json")
        text_form = parsed(self.front_door.server_info)
        if text_form is not None:
            return text_form, route_source("/server_info")
        return None

    def models(self) -> ServedModels | None:
        """Parsed ``/v1/models``."""
        return parsed(self.front_door.models) if self.front_door is not None else None


_mint_evidence = minter(Evidence, Evidence.__attrs_init__)


def gather(front_door: FrontDoor | None, launch: Launch | None) -> Evidence:
    """Bundle a server's sources (package-internal: :func:`vllm_evidence.assess`)."""
    return _mint_evidence(front_door=front_door, launch=launch)
