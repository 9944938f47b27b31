"""The joined view the decisions read: one server's evidence, by source, with the version
each carries.

Every decision takes an :class:`Evidence` — the front-door readback (or ``None``), one
launch of a startup log (or ``None``), the launch receipt, and the launcher's own process
tree (or ``None``) — and reads observations only through the helpers here, so that
"which source said this, and which release scopes it" has one answer everywhere:

* a front-door fact is scoped by ``/version`` of the same readback;
* a log fact is scoped by the version the same launch printed;
* every decision has a :class:`Subject`: with a front door, the serving process behind
  it; with a log alone, the launch that log records.  A log speaks for its launch, not
  for a server: log facts reach a claim about the serving process only through the
  log-join decision (a launch receipt whose start time is *observed* on the front
  door's ``process_start_time_seconds``), never through agreement of version or
  configuration;
* a process tree speaks of the launch whose receipt names its root
  (:meth:`Evidence.launch_tree`), and so only as far as that launch's log speaks.
"""

from __future__ import annotations

import enum
from typing import TypedDict, TypeVar, final

import attrs
from packaging.version import Version

from vllm_evidence._adapters.models import ServedModels
from vllm_evidence._adapters.outcome import Outcome, Parsed
from vllm_evidence._adapters.process_tree import ProcessTree
from vllm_evidence._adapters.receipt import LaunchReceipt
from vllm_evidence._adapters.server_info import ServerInfo
from vllm_evidence._adapters.startup_log import Launch, ProcessTag, StartupLog
from vllm_evidence._capture.batch import Transport
from vllm_evidence._converter import converter, register_rendering
from vllm_evidence._readback.front_door import CapturedReadback, HistoricalBundle, route_arms
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import Route

__all__ = [
    "Evidence",
    "FrontDoor",
    "Source",
    "SourceDocument",
    "SourceKind",
    "Subject",
    "arm_name",
    "gather",
    "log_source",
    "parsed",
    "route_source",
]

FrontDoor = CapturedReadback | HistoricalBundle
"""A front-door readback: one bracketed probe batch, or caller-supplied bodies."""

ObsT = TypeVar("ObsT")


class Subject(enum.Enum):
    """What a decision is about."""

    LAUNCH = "launch"
    """The launch a startup log records (a log alone: ``vllm-evidence log``)."""
    SERVING = "serving"
    """The serving process behind the probed (or given) front door."""


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


register_rendering(Source, _source_document)

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
    """One server's evidence: a front-door readback and/or one launch of its log, the
    launch receipt handed in with the log (if any), and the process tree of the launched
    process as its launcher read it (if any)."""

    __public_constructor__ = "vllm_evidence.assess()"

    front_door: FrontDoor | None
    launch: Launch | None
    startup_log: StartupLog | None
    """The log :attr:`launch` was read from (its digest is what a receipt witnesses)."""
    receipt: LaunchReceipt | None
    process_tree: ProcessTree | None
    """The launcher's read of its own process tree this round (``None``: not given)."""

    @property
    def subject(self) -> Subject:
        """:attr:`Subject.SERVING` with a front door, else :attr:`Subject.LAUNCH`."""
        return Subject.LAUNCH if self.front_door is None else Subject.SERVING

    def without_log(self) -> Evidence:
        """The same front door with no log: what the front door alone shows."""
        return _mint_evidence(
            front_door=self.front_door,
            launch=None,
            startup_log=None,
            receipt=None,
            process_tree=None,
        )

    def launch_tree(self) -> ProcessTree | None:
        """The process tree when it is the assessed launch's: a launch, its receipt, and
        a tree whose root is the pid the receipt witnesses (the launched process); else
        ``None``.  A tree of another process says nothing of this launch."""
        tree, receipt = self.process_tree, self.receipt
        if tree is None or receipt is None or self.launch is None or tree.root != receipt.pid:
            return None
        return tree

    def front_door_unreachable(self) -> str | None:
        """Why no request of the probe got an answer, or ``None`` (a caller's bodies were
        answered by definition)."""
        door = self.front_door
        if not isinstance(door, CapturedReadback):
            return None
        exchanges = door.batch.all_exchanges()
        if any(e.transport is Transport.ANSWERED for e in exchanges):
            return None
        first = exchanges[0]
        why = first.detail or first.transport.value
        return f"no request to {door.batch.target} was answered ({why})"

    def front_door_not_answering(self) -> str | None:
        """Why the front door gave no answer that parsed (every route an error), or
        ``None`` when some route parsed (a ``/health`` 5xx is not an answer here)."""
        door = self.front_door
        if door is None:
            return None
        arms = tuple(a for a in route_arms(door) if a.route is not Route.HEALTH)
        health = parsed(door.health)
        if any(isinstance(a, Parsed) for a in arms) or (health is not None and health.healthy):
            return None
        shown = ", ".join(f"{a.route.target} {arm_name(a)}" for a in (*arms, door.health))
        return f"no route answered with something this package reads ({shown})"

    def front_door_version(self) -> Version | None:
        """``/version`` of the readback, when parsed — and ``None`` when the server
        restarted during the read (:meth:`front_door_restarted`) or several processes
        answer its URL (:meth:`front_door_several_processes`): then ``/version`` may
        belong to another process than the route it would scope."""
        if (
            self.front_door is None
            or self.front_door_restarted()
            or self.front_door_several_processes() is not None
        ):
            return None
        return self.reported_front_door_version()

    def reported_front_door_version(self) -> Version | None:
        """``/version`` as parsed, whatever the batch's join (for comparisons only)."""
        if self.front_door is None:
            return None
        observed = parsed(self.front_door.version)
        return observed.version if observed is not None else None

    def front_door_restarted(self) -> bool:
        """Whether the bracket saw one incarnation replaced by a later one
        (``process_start_time_seconds`` changed between the ends, each end's reads
        agreeing): a restart mid-batch, not several processes at once."""
        bracket = None if self.front_door is None else self.front_door.bracket
        return bracket is not None and bracket.marker_changed()

    def front_door_several_processes(self) -> str | None:
        """Why the bracket shows several processes answering the front door's URL (a
        balancer in front: the routes between may come from any of them), or ``None``
        when it shows none (:meth:`~vllm_evidence._readback.Bracket.several_processes`)."""
        bracket = None if self.front_door is None else self.front_door.bracket
        return None if bracket is None else bracket.several_processes()

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


def gather(
    front_door: FrontDoor | None,
    launch: Launch | None,
    startup_log: StartupLog | None = None,
    receipt: LaunchReceipt | None = None,
    process_tree: ProcessTree | None = None,
) -> Evidence:
    """Bundle a server's sources (package-internal: :func:`vllm_evidence.assess`)."""
    return _mint_evidence(
        front_door=front_door,
        launch=launch,
        startup_log=startup_log if launch is not None else None,
        receipt=receipt,
        process_tree=process_tree,
    )
