"""One capture batch: raw exchanges with the front door, and what each one's outcome is.

A batch is what one probe read: an opening ``/metrics`` read, the other routes read
concurrently, and a closing ``/metrics`` read.  Each :class:`Exchange` keeps the raw
body with its SHA-256 and its timestamps.  The outcome arm of an exchange is derived
from it (and from the route's adapter), never stored: a 404, an unparsed 200 and a
parsed body are different arms, and only :class:`Parsed` carries an observation.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Generic, TypeVar, final

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.failure import BodyParseFailure
from vllm_evidence.adapters.health import HealthAnswer, parse_health
from vllm_evidence.adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence.upstream.routes import Route

__all__ = [
    "CaptureBatch",
    "Exchange",
    "HttpError",
    "JoinEstablished",
    "JoinRefusal",
    "JoinRefused",
    "JoinStatus",
    "NotFound",
    "NotRequested",
    "Outcome",
    "Parsed",
    "Redirected",
    "TimedOut",
    "TooLarge",
    "Transport",
    "Unauthorized",
    "Unparsed",
    "Unreachable",
    "derive_join",
    "derive_outcome",
]

ObsT = TypeVar("ObsT")

#: Response headers kept in a capture (lower-case).  Nothing else is recorded.
RECORDED_HEADERS = frozenset(
    {
        "content-type",
        "content-length",
        "content-encoding",
        "location",
        "www-authenticate",
        "date",
        "server",
    }
)


class Transport(enum.Enum):
    """How an exchange ended at the transport level."""

    ANSWERED = "answered"
    """A status line and the whole body (within the cap) arrived."""
    TIMED_OUT = "timed_out"
    """The per-request timeout or the batch deadline ran out first."""
    UNREACHABLE = "unreachable"
    """No answer: connection refused, reset, TLS failure, protocol error."""
    TOO_LARGE = "too_large"
    """The body passed the size cap; the read was cut off and nothing of it kept."""


class ExchangeRole(enum.Enum):
    """Where an exchange sits in the batch."""

    BRACKET_OPEN = "bracket_open"
    ROUTE = "route"
    BRACKET_CLOSE = "bracket_close"


@final
@attrs.frozen(init=False)
class Exchange(Sealed):
    """One GET to one route, as it happened.  The API key is never part of it."""

    __public_constructor__ = "vllm_evidence.probe() or vllm_evidence.capture.directory.load()"

    route: Route
    role: ExchangeRole
    transport: Transport
    status: int | None
    """The HTTP status, or ``None`` when no status line arrived."""
    headers: tuple[tuple[str, str], ...]
    """The response headers that matter (:data:`RECORDED_HEADERS`), lower-cased names."""
    body: bytes | None
    """The raw body, or ``None`` when none was kept (timeout, unreachable, too large)."""
    body_sha256: str | None
    """Hex SHA-256 of :attr:`body`."""
    size_limit: int
    """The body cap the read ran under, in bytes."""
    started_monotonic_ns: int
    ended_monotonic_ns: int
    started_at: datetime
    """Wall-clock start, timezone-aware UTC."""
    ended_at: datetime
    detail: str
    """Why a non-answered exchange ended (an exception type and message), else ``""``."""

    def header(self, name: str) -> str | None:
        """A recorded header's value, or ``None``."""
        lowered = name.lower()
        for key, value in self.headers:
            if key == lowered:
                return value
        return None


_mint_exchange_raw = minter(Exchange, Exchange.__attrs_init__)


def mint_exchange(
    *,
    route: Route,
    role: ExchangeRole,
    transport: Transport,
    status: int | None,
    headers: tuple[tuple[str, str], ...],
    body: bytes | None,
    size_limit: int,
    started_monotonic_ns: int,
    ended_monotonic_ns: int,
    started_at: datetime,
    ended_at: datetime,
    detail: str,
) -> Exchange:
    """Mint an exchange, computing the body digest (package-internal)."""
    if started_at.tzinfo is None or ended_at.tzinfo is None:
        msg = "exchange timestamps must be timezone-aware"
        raise ValueError(msg)
    kept = tuple((k.lower(), v) for k, v in headers if k.lower() in RECORDED_HEADERS)
    return _mint_exchange_raw(
        route=route,
        role=role,
        transport=transport,
        status=status,
        headers=kept,
        body=body,
        body_sha256=None if body is None else hashlib.sha256(body).hexdigest(),
        size_limit=size_limit,
        started_monotonic_ns=started_monotonic_ns,
        ended_monotonic_ns=ended_monotonic_ns,
        started_at=started_at,
        ended_at=ended_at,
        detail=detail,
    )


@final
@attrs.frozen(init=False)
class CaptureBatch(Sealed):
    """One bracketed batch of GETs to one front door, kept as raw evidence."""

    __public_constructor__ = "vllm_evidence.probe() or vllm_evidence.capture.directory.load()"

    batch_id: str
    target: str
    """The base URL read, with any credentials removed."""
    bracket_open: Exchange
    """The opening ``/metrics`` read."""
    exchanges: tuple[Exchange, ...]
    """The other routes, in route order."""
    bracket_close: Exchange
    """The closing ``/metrics`` read."""

    def all_exchanges(self) -> tuple[Exchange, ...]:
        """Every exchange, opening bracket first."""
        return (self.bracket_open, *self.exchanges, self.bracket_close)

    def exchange(self, route: Route) -> Exchange | None:
        """The exchange for a non-bracket route, or ``None`` when it was not requested."""
        for item in self.exchanges:
            if item.route is route:
                return item
        return None


_mint_batch = minter(CaptureBatch, CaptureBatch.__attrs_init__)


def mint_batch(
    *,
    batch_id: str,
    target: str,
    bracket_open: Exchange,
    exchanges: tuple[Exchange, ...],
    bracket_close: Exchange,
) -> CaptureBatch:
    """Mint a batch, checking its shape (package-internal)."""
    if bracket_open.route is not Route.METRICS or bracket_close.route is not Route.METRICS:
        msg = "a batch is bracketed by two /metrics reads"
        raise ValueError(msg)
    routes = [e.route for e in exchanges]
    if Route.METRICS in routes or len(set(routes)) != len(routes):
        msg = "a batch reads each non-bracket route at most once"
        raise ValueError(msg)
    everything = (bracket_open, *exchanges, bracket_close)
    if any(e.ended_monotonic_ns < e.started_monotonic_ns for e in everything):
        msg = "an exchange cannot end before it started"
        raise ValueError(msg)
    if any(
        e.started_monotonic_ns < bracket_open.ended_monotonic_ns
        or e.ended_monotonic_ns > bracket_close.started_monotonic_ns
        for e in exchanges
    ):
        msg = "every route is read between the two bracketing /metrics reads"
        raise ValueError(msg)
    return _mint_batch(
        batch_id=batch_id,
        target=target,
        bracket_open=bracket_open,
        exchanges=exchanges,
        bracket_close=bracket_close,
    )


# ---------------------------------------------------------------------------- outcomes


@final
@attrs.frozen(init=False)
class Parsed(Sealed, Generic[ObsT]):
    """The route answered 200 and its adapter read the body: the only arm with knowledge."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    observation: ObsT


@final
@attrs.frozen(init=False)
class NotFound(Sealed):
    """404: the route is not registered (e.g. development mode off)."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route


@final
@attrs.frozen(init=False)
class Unauthorized(Sealed):
    """401 or 403: the route wants credentials this probe did not have."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    status: int


@final
@attrs.frozen(init=False)
class Unparsed(Sealed):
    """200, but the body is not what the route yields: answered is not knowledge."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    failure: BodyParseFailure


@final
@attrs.frozen(init=False)
class HttpError(Sealed):
    """Any other status (4xx, 5xx, or a 2xx other than 200)."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    status: int


@final
@attrs.frozen(init=False)
class Redirected(Sealed):
    """A 3xx.  Redirects are not followed: where it pointed is recorded, not read."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    status: int
    location: str | None


@final
@attrs.frozen(init=False)
class TimedOut(Sealed):
    """No complete answer within the per-request timeout or the batch deadline."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    detail: str


@final
@attrs.frozen(init=False)
class Unreachable(Sealed):
    """No answer at all (connection refused or reset, TLS failure, protocol error)."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    detail: str


@final
@attrs.frozen(init=False)
class TooLarge(Sealed):
    """The body passed the size cap; nothing of it was kept."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route
    limit: int


@final
@attrs.frozen(init=False)
class NotRequested(Sealed):
    """The route was not part of the read (development routes not asked for, or no body)."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_outcome()"
    route: Route


Outcome = (
    Parsed[ObsT]
    | NotFound
    | Unauthorized
    | Unparsed
    | HttpError
    | Redirected
    | TimedOut
    | Unreachable
    | TooLarge
    | NotRequested
)
"""The closed set of arms one route's read can end in."""

_mint_parsed = minter(Parsed, Parsed.__attrs_init__)
_mint_not_found = minter(NotFound, NotFound.__attrs_init__)
_mint_unauthorized = minter(Unauthorized, Unauthorized.__attrs_init__)
_mint_unparsed = minter(Unparsed, Unparsed.__attrs_init__)
_mint_http_error = minter(HttpError, HttpError.__attrs_init__)
_mint_redirected = minter(Redirected, Redirected.__attrs_init__)
_mint_timed_out = minter(TimedOut, TimedOut.__attrs_init__)
_mint_unreachable = minter(Unreachable, Unreachable.__attrs_init__)
_mint_too_large = minter(TooLarge, TooLarge.__attrs_init__)
_mint_not_requested = minter(NotRequested, NotRequested.__attrs_init__)


def not_requested(route: Route) -> NotRequested:
    """The arm for a route that was not read (package-internal)."""
    return _mint_not_requested(route=route)


def derive_outcome(
    route: Route,
    *,
    transport: Transport,
    status: int | None,
    body: bytes | None,
    location: str | None,
    detail: str,
    size_limit: int,
    adapter: Callable[[bytes], ObsT | BodyParseFailure],
) -> Outcome[ObsT]:
    """The outcome arm of one read, running the route's adapter on a 200 body."""
    if transport is Transport.TIMED_OUT:
        return _mint_timed_out(route=route, detail=detail)
    if transport is Transport.UNREACHABLE or status is None:
        return _mint_unreachable(route=route, detail=detail)
    if transport is Transport.TOO_LARGE:
        return _mint_too_large(route=route, limit=size_limit)
    if 300 <= status <= 399:
        return _mint_redirected(route=route, status=status, location=location)
    if status == 404:
        return _mint_not_found(route=route)
    if status in (401, 403):
        return _mint_unauthorized(route=route, status=status)
    if status != 200:
        return _mint_http_error(route=route, status=status)
    parsed = adapter(body if body is not None else b"")
    if isinstance(parsed, BodyParseFailure):
        return _mint_unparsed(route=route, failure=parsed)
    observed: Parsed[ObsT] = _mint_parsed(route=route, observation=parsed)
    return observed


def exchange_outcome(
    exchange: Exchange, adapter: Callable[[bytes], ObsT | BodyParseFailure]
) -> Outcome[ObsT]:
    """The outcome arm of a captured exchange."""
    return derive_outcome(
        exchange.route,
        transport=exchange.transport,
        status=exchange.status,
        body=exchange.body,
        location=exchange.header("location"),
        detail=exchange.detail,
        size_limit=exchange.size_limit,
        adapter=adapter,
    )


def health_outcome(
    route: Route,
    *,
    transport: Transport,
    status: int | None,
    location: str | None,
    detail: str,
    size_limit: int,
) -> Outcome[HealthAnswer]:
    """``/health``'s arm: a 200 or a 5xx is a parsed answer about the engine."""
    if transport is Transport.ANSWERED and status is not None:
        answer = parse_health(status)
        if answer is not None:
            observed: Parsed[HealthAnswer] = _mint_parsed(route=route, observation=answer)
            return observed
    return derive_outcome(
        route,
        transport=transport,
        status=status,
        body=None,
        location=location,
        detail=detail,
        size_limit=size_limit,
        adapter=_no_body_adapter,
    )


def _no_body_adapter(body: bytes) -> HealthAnswer | BodyParseFailure:  # pragma: no cover
    msg = "health answers are read by status"
    raise AssertionError(msg)


# ------------------------------------------------------------------------------ join


class JoinRefusal(enum.Enum):
    """Why the observations of one read are not established as one incarnation."""

    BRACKET_READ_FAILED = "bracket_read_failed"
    """One of the two bracketing ``/metrics`` reads did not parse."""
    MARKER_ABSENT = "marker_absent"
    """``process_start_time_seconds`` is missing (multi-process registry mode: the
    default for DP>1 with internal load balancing since 0.20)."""
    MARKER_CHANGED = "marker_changed"
    """The marker differs between the two reads: the server restarted mid-read."""
    CALLER_ASSEMBLED = "caller_assembled"
    """The bodies were supplied by a caller, not read in one bracketed batch."""


@final
@attrs.frozen(init=False)
class JoinEstablished(Sealed):
    """Both bracket reads answered and carry the same process start time."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_join()"
    process_start_seconds: Decimal
    """The marker both reads carried, exact."""


@final
@attrs.frozen(init=False)
class JoinRefused(Sealed):
    """The cross-route join is not established, and why."""

    __public_constructor__ = "vllm_evidence.capture.batch.derive_join()"
    reason: JoinRefusal
    detail: str
    """One line naming what was seen (which read failed, the two markers)."""


JoinStatus = JoinEstablished | JoinRefused
"""Whether one batch's observations are joined into one server incarnation."""

_mint_joined = minter(JoinEstablished, JoinEstablished.__attrs_init__)
_mint_refused = minter(JoinRefused, JoinRefused.__attrs_init__)


def refuse_join(reason: JoinRefusal, detail: str) -> JoinRefused:
    """Mint a refusal (package-internal)."""
    return _mint_refused(reason=reason, detail=detail)


def _arm_name(outcome: object) -> str:
    return type(outcome).__name__


def derive_join(
    opening: Outcome[MetricsObservation], closing: Outcome[MetricsObservation]
) -> JoinStatus:
    """Compare the two bracket reads' ``process_start_time_seconds``, exactly."""
    if not isinstance(opening, Parsed):
        return refuse_join(
            JoinRefusal.BRACKET_READ_FAILED, f"opening /metrics read: {_arm_name(opening)}"
        )
    if not isinstance(closing, Parsed):
        return refuse_join(
            JoinRefusal.BRACKET_READ_FAILED, f"closing /metrics read: {_arm_name(closing)}"
        )
    first = opening.observation.process_start_time
    last = closing.observation.process_start_time
    if first is None or last is None:
        side = "opening" if first is None else "closing"
        return refuse_join(
            JoinRefusal.MARKER_ABSENT,
            f"process_start_time_seconds absent from the {side} /metrics read",
        )
    if first.seconds != last.seconds:
        return refuse_join(
            JoinRefusal.MARKER_CHANGED,
            f"process_start_time_seconds {first.seconds} then {last.seconds}",
        )
    return _mint_joined(process_start_seconds=first.seconds)


def metrics_outcome(exchange: Exchange) -> Outcome[MetricsObservation]:
    """A ``/metrics`` exchange's arm."""
    return exchange_outcome(exchange, parse_metrics)
