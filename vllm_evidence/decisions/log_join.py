"""Log join: whether a startup log's launch is the process behind the probed front door.

A startup log handed in beside a URL is a caller-supplied value: two identical replicas
print the same version and configuration, so agreement proves nothing.  The join is
established only by an *observed* witness — a launch receipt (written by
``vllm-evidence launch``) whose start time equals the front door's
``process_start_time_seconds`` as this probe read it, whose log digest is the digest of
the log read, whose launch is the log's one launch, and whose pid is the pid in the
launch's ``(APIServer pid=N)`` tags where the release prints them.

Refusals, earliest first: no log; no front door (the log then speaks for its launch);
a contradiction visible without any witness (another version, another configuration,
an API-server port that is not the probed port: definite, so named before what is
missing); the front door gives no observed incarnation marker (unreachable, only
errors, caller-assembled bodies, the marker absent) or restarted during the batch; no
witness; a witness without a start time (no ``/proc`` where it ran); and the witness's
contradictions (start time, log digest, launch, pid).  This decision is the only way
log evidence reaches a claim about the serving process.
"""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import TypeAlias, final
from urllib.parse import urlsplit

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.outcome import NotFound
from vllm_evidence.adapters.receipt import LaunchReceipt
from vllm_evidence.decisions._common import refusal_summary
from vllm_evidence.decisions._parallel_configuration import ResolvedParallel, resolve_from_log
from vllm_evidence.decisions.join import (
    JoinedIncarnation,
    JoinReason,
    decide_front_door_join,
)
from vllm_evidence.readback.evidence import Evidence, Subject
from vllm_evidence.readback.front_door import CapturedReadback

__all__ = [
    "LogJoinDecision",
    "LogJoinReason",
    "LogJoinRefused",
    "LogJoined",
    "decide_log_join",
    "log_not_joined",
]


class LogJoinReason(enum.Enum):
    """Why the log's launch is, or is not, joined to the front door (earliest first)."""

    ESTABLISHED = "established"
    NO_LOG = "no_log"
    """No startup log was given."""
    NO_FRONT_DOOR = "no_front_door"
    """A log alone: it speaks for its launch; there is no server to join it to."""
    VERSION_CONTRADICTED = "version_contradicted"
    """The launch's version banner and ``/version`` name different releases."""
    CONFIGURATION_CONTRADICTED = "configuration_contradicted"
    """The launch's configuration and the front door's disagree (parallel sizes,
    executor backend, served names, model path, the development routes its route table
    registered)."""
    PORT_CONTRADICTED = "port_contradicted"
    """The launch's API server was given another port than the one probed."""
    MARKER_UNOBSERVED = "marker_unobserved"
    """The front door gave no observed ``process_start_time_seconds``: unreachable,
    only errors, bodies supplied by a caller, or the marker absent (several API-server
    processes)."""
    FRONT_DOOR_RESTARTED = "front_door_restarted"
    """The marker changed during the batch: there is no one process to join."""
    NO_WITNESS = "no_witness"
    """No launch receipt: nothing observed ties the log to the process."""
    WITNESS_WITHOUT_START_TIME = "witness_without_start_time"
    """The receipt carries no start time (the launcher had no ``/proc``)."""
    START_TIME_CONTRADICTED = "start_time_contradicted"
    """The receipt's start time is not the front door's ``process_start_time_seconds``."""
    LOG_DIGEST_CONTRADICTED = "log_digest_contradicted"
    """The log read is not the bytes the receipt digested."""
    LAUNCH_CONTRADICTED = "launch_contradicted"
    """The assessed launch is not the one launch the receipt's log bytes hold."""
    PID_CONTRADICTED = "pid_contradicted"
    """The launch's ``(APIServer pid=N)`` tags name another pid than the receipt."""


@final
@attrs.frozen(init=False, repr=False)
class LogJoined(Sealed):
    """The log's launch is the process behind the front door: the receipt's start time
    was observed on the front door, its digest is the log's, its pid the launch's."""

    __public_constructor__ = "vllm_evidence.decisions.decide_log_join()"

    subject: Subject
    process_start_seconds: Decimal
    """The start time the receipt names and both bracketing ``/metrics`` reads carried."""
    pid: int
    pid_tagged: bool
    """Whether the launch prints ``(APIServer pid=N)`` tags (then all name :attr:`pid`);
    ``False`` where the release prints none."""
    receipt: LaunchReceipt

    @property
    def reason(self) -> LogJoinReason:
        """Always :attr:`LogJoinReason.ESTABLISHED`."""
        return LogJoinReason.ESTABLISHED

    @property
    def detail(self) -> str:
        """One line for a person."""
        tags = (
            f"the launch's APIServer tags name pid {self.pid}"
            if self.pid_tagged
            else f"pid {self.pid} (the release prints no APIServer pid tags)"
        )
        return (
            f"the receipt's start time {_plain(self.process_start_seconds)} is the front door's "
            f"process_start_time_seconds; its digest of {self.receipt.log_bytes:,} log bytes "
            f"is the log's; {tags}"
        )

    def _repr_summary(self) -> str:
        return f"pid {self.pid}, process_start_time_seconds {_plain(self.process_start_seconds)}"


@final
@attrs.frozen(init=False, repr=False)
class LogJoinRefused(Sealed):
    """The log's launch is not established as the serving process, and why."""

    __public_constructor__ = "vllm_evidence.decisions.decide_log_join()"

    subject: Subject
    reason: LogJoinReason
    detail: str
    remedy: str
    process_start_seconds: Decimal | None
    """The front door's marker, when it observed one."""
    receipt: LaunchReceipt | None

    def _repr_summary(self) -> str:
        return refusal_summary(self.reason, self.detail)


LogJoinDecision: TypeAlias = LogJoined | LogJoinRefused

_mint_joined = minter(LogJoined, LogJoined.__attrs_init__)
_mint_refused = minter(LogJoinRefused, LogJoinRefused.__attrs_init__)

_OTHER_LOG = "give the startup log of the serving launch, with its launch receipt"
_REMEDIES = {
    LogJoinReason.NO_LOG: "give the launch's startup log and its receipt (vllm-evidence launch)",
    LogJoinReason.NO_FRONT_DOOR: "none: a log alone establishes claims about its launch only",
    LogJoinReason.VERSION_CONTRADICTED: _OTHER_LOG,
    LogJoinReason.CONFIGURATION_CONTRADICTED: _OTHER_LOG,
    LogJoinReason.PORT_CONTRADICTED: _OTHER_LOG + " (or probe the port it serves on)",
    LogJoinReason.MARKER_UNOBSERVED: (
        "probe the server itself (one bracketed batch) while /metrics answers with "
        "process_start_time_seconds (one API-server process)"
    ),
    LogJoinReason.FRONT_DOOR_RESTARTED: "probe again once the server is up",
    LogJoinReason.NO_WITNESS: (
        "start vLLM through `vllm-evidence launch --receipt FILE --log FILE -- vllm serve …` "
        "and give --receipt FILE"
    ),
    LogJoinReason.WITNESS_WITHOUT_START_TIME: (
        "launch where /proc is readable, so the receipt carries the start time"
    ),
    LogJoinReason.START_TIME_CONTRADICTED: _OTHER_LOG,
    LogJoinReason.LOG_DIGEST_CONTRADICTED: (
        "give the log file the receipt names, read to the receipt's length "
        "(vllm-evidence probe --receipt does this)"
    ),
    LogJoinReason.LAUNCH_CONTRADICTED: "give the log the launcher wrote for this launch alone",
    LogJoinReason.PID_CONTRADICTED: _OTHER_LOG,
}


def _plain(seconds: Decimal) -> str:
    """Seconds as a person reads them (``1796015019.85``), whatever exponent was printed."""
    return format(seconds, "f")


def _configuration_contradiction(evidence: Evidence) -> str | None:
    """A configuration fact the launch and the front door both show, and disagree on."""
    launch = evidence.launch
    if launch is None:
        return None
    found: list[str] = []
    config = launch.engine_config
    info = evidence.server_info()
    if config is not None and info is not None:
        observed, source = info
        p = observed.parallel
        # Independent DP engines each print DP=1: the launch's DP is the resolved one.
        resolved = resolve_from_log(launch)
        log_dp = (
            resolved.data_parallel_size
            if isinstance(resolved, ResolvedParallel)
            else config.data_parallel_size
        )
        for name, log_value, door_value in (
            ("tensor_parallel_size", config.tensor_parallel_size, p.tensor_parallel_size),
            ("pipeline_parallel_size", config.pipeline_parallel_size, p.pipeline_parallel_size),
            ("data_parallel_size", log_dp, p.data_parallel_size),
        ):
            if log_value is not None and door_value is not None and log_value != door_value:
                found.append(
                    f"{name} {log_value} at log line {config.line} but {door_value} at {source}"
                )
        log_backend = config.executor_backend_name
        door_backend = p.distributed_executor_backend
        if log_backend is not None and door_backend is not None and log_backend != door_backend:
            found.append(
                f"executor {log_backend!r} at log line {config.line} but {door_backend!r} "
                f"at {source}"
            )
    models = evidence.models()
    names = launch.served_model_names
    if models is not None and names is not None:
        served = sorted({c.served_id for c in models.cards if c.parent is None})
        if served and sorted(set(names)) != served:
            found.append(f"the launch serves {sorted(set(names))} but /v1/models lists {served}")
    args = launch.non_default_args[0] if launch.non_default_args else None
    roots = (
        {c.root for c in models.cards if c.parent is None and c.root is not None}
        if models is not None
        else set()
    )
    if args is not None and args.model is not None and len(roots) == 1 and args.model not in roots:
        found.append(
            f"the launch's model {args.model!r} (line {args.line}) is not /v1/models' root "
            f"{next(iter(roots))!r}"
        )
    found.extend(_route_table_contradictions(evidence))
    return "; ".join(found) or None


def _route_table_contradictions(evidence: Evidence) -> list[str]:
    """Development routes the launch's route table and the front door disagree on: one
    the table lists that answered 404."""
    door, launch = evidence.front_door, evidence.launch
    if door is None or launch is None or not launch.routes:
        return []
    registered = {route.path for route in launch.routes}
    found = []
    for path, outcomes in (
        ("/server_info", (door.server_info, door.server_info_json)),
        ("/get_world_size", (door.world_size,)),
    ):
        # Only a listed route can contradict: real 0.8.5 to 0.20.0 servers (issue 18)
        # printed five 'Route:' lines while serving /server_info, so a route the table
        # lacks is not observed, never absent.
        if path in registered and all(isinstance(outcome, NotFound) for outcome in outcomes):
            found.append(f"the launch registered {path} but the front door answered it 404")
    return found


def _port_contradiction(evidence: Evidence) -> str | None:
    """The launch's ``--port`` when it is not the port the probe read."""
    door, launch = evidence.front_door, evidence.launch
    if not isinstance(door, CapturedReadback) or launch is None:
        return None
    for args in launch.non_default_args:
        printed = args.get("port")
        if printed is None or not printed.isdigit():
            continue
        parts = urlsplit(door.batch.target)
        try:
            probed = parts.port
        except ValueError:
            return None
        if probed is None:
            probed = 443 if parts.scheme == "https" else 80
        if int(printed) != probed:
            return (
                f"the launch's API server was given port {printed} (line {args.line}) but "
                f"the probe read port {probed}"
            )
    return None


def decide_log_join(evidence: Evidence) -> LogJoinDecision:
    """Whether the log's launch is the process behind the front door (see the module)."""
    receipt = evidence.receipt

    def refuse(reason: LogJoinReason, detail: str, marker: Decimal | None = None) -> LogJoinRefused:
        return _mint_refused(
            subject=evidence.subject,
            reason=reason,
            detail=detail,
            remedy=_REMEDIES[reason],
            process_start_seconds=marker,
            receipt=receipt,
        )

    launch, log = evidence.launch, evidence.startup_log
    if launch is None or log is None:
        return refuse(LogJoinReason.NO_LOG, "no startup log (or no launch in it) was given")
    if evidence.front_door is None:
        return refuse(
            LogJoinReason.NO_FRONT_DOOR,
            f"log launch {launch.index} alone: it speaks for its launch, not for a server",
        )
    conflict = evidence.sources_conflict()
    if conflict is not None:
        return refuse(LogJoinReason.VERSION_CONTRADICTED, conflict)
    configuration = _configuration_contradiction(evidence)
    if configuration is not None:
        return refuse(LogJoinReason.CONFIGURATION_CONTRADICTED, configuration)
    port = _port_contradiction(evidence)
    if port is not None:
        return refuse(LogJoinReason.PORT_CONTRADICTED, port)
    unreachable = evidence.front_door_unreachable() or evidence.front_door_not_answering()
    if unreachable is not None:
        return refuse(LogJoinReason.MARKER_UNOBSERVED, unreachable)
    join = decide_front_door_join(evidence)
    if not isinstance(join, JoinedIncarnation):
        if join.reason is JoinReason.MARKER_CHANGED:
            return refuse(LogJoinReason.FRONT_DOOR_RESTARTED, join.detail)
        return refuse(LogJoinReason.MARKER_UNOBSERVED, join.detail)
    marker = join.process_start_seconds
    if receipt is None:
        return refuse(
            LogJoinReason.NO_WITNESS,
            "no launch receipt: nothing observed ties the log to the process behind the "
            "front door (an identical replica prints the same version and configuration)",
            marker,
        )
    if receipt.process_start_seconds is None:
        return refuse(
            LogJoinReason.WITNESS_WITHOUT_START_TIME,
            f"the receipt has no start time ({receipt.start_time_unavailable})",
            marker,
        )
    if receipt.process_start_seconds != marker:
        return refuse(
            LogJoinReason.START_TIME_CONTRADICTED,
            f"the receipt's process started at {_plain(receipt.process_start_seconds)}, the "
            f"front door's at {_plain(marker)}: another process",
            marker,
        )
    if log.size_bytes != receipt.log_bytes or log.sha256 != receipt.log_sha256:
        return refuse(
            LogJoinReason.LOG_DIGEST_CONTRADICTED,
            f"the log read is {log.size_bytes:,} bytes with SHA-256 {log.sha256[:12]}…, the "
            f"receipt digested {receipt.log_bytes:,} bytes with SHA-256 "
            f"{receipt.log_sha256[:12]}…",
            marker,
        )
    if len(log.launches) != 1:
        return refuse(
            LogJoinReason.LAUNCH_CONTRADICTED,
            f"the receipt's log bytes hold {len(log.launches)} launches; the receipt witnesses one",
            marker,
        )
    others = sorted({pid for pid in launch.api_server_pids if pid != receipt.pid})
    if others:
        return refuse(
            LogJoinReason.PID_CONTRADICTED,
            f"the launch's APIServer tags name pid(s) {others}, the receipt pid {receipt.pid}",
            marker,
        )
    return _mint_joined(
        subject=evidence.subject,
        process_start_seconds=marker,
        pid=receipt.pid,
        pid_tagged=bool(launch.api_server_pids),
        receipt=receipt,
    )


def log_not_joined(evidence: Evidence) -> LogJoinRefused | None:
    """The refusal that keeps the log out of a serving claim, or ``None`` when the log
    may be read (it is joined, or there is no log, or no front door: a launch claim)."""
    if evidence.launch is None or evidence.subject is Subject.LAUNCH:
        return None
    decision = decide_log_join(evidence)
    return decision if isinstance(decision, LogJoinRefused) else None
