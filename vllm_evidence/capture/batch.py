"""One capture batch: raw exchanges with the front door, bytes only.

A batch is what one probe read: an opening ``/metrics`` read, the other routes read
concurrently, and a closing ``/metrics`` read.  Each :class:`Exchange` keeps the raw
body with its SHA-256 and its timestamps.  Nothing here parses a body: what a read
ended in (a 404, an unparsed 200, a parsed body) is derived by
:mod:`vllm_evidence.adapters.outcome`, and the bracket is compared by the front-door
join decision.
"""

from __future__ import annotations

import enum
import hashlib
from datetime import datetime
from typing import final

import attrs

from vllm_evidence._scrub import scrub
from vllm_evidence._seal import Reduction, Sealed, brief, minter
from vllm_evidence.errors import EvidenceMismatchError, InputError
from vllm_evidence.upstream.routes import Route

__all__ = [
    "RECORDED_HEADERS",
    "CaptureBatch",
    "Exchange",
    "ExchangeRole",
    "Transport",
]

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
@attrs.frozen(init=False, repr=False)
class Exchange(Sealed):
    """One GET to one route, as it happened.  The API key is never part of it."""

    __public_constructor__ = "vllm_evidence.probe() or vllm_evidence.load()"

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

    def __rederive__(self) -> Reduction[Exchange]:
        """Pickled as its raw fields; unpickling re-mints it and re-checks the digest."""
        return _rederive_exchange, (
            self.route,
            self.role,
            self.transport,
            self.status,
            self.headers,
            self.body,
            self.body_sha256,
            self.size_limit,
            self.started_monotonic_ns,
            self.ended_monotonic_ns,
            self.started_at,
            self.ended_at,
            self.detail,
        )

    def header(self, name: str) -> str | None:
        """A recorded header's value, or ``None``."""
        lowered = name.lower()
        for key, value in self.headers:
            if key == lowered:
                return value
        return None

    def _repr_summary(self) -> str:
        head = f"{self.route.method} {self.route.target}"
        if self.role is not ExchangeRole.ROUTE:
            head += f" ({self.role.value})"
        if self.status is not None:
            head += f" {self.status}"
        if self.transport is not Transport.ANSWERED:
            head += f" {self.transport.value}"
        if self.body is None or self.body_sha256 is None:
            tail = "no body"
        else:
            tail = f"{len(self.body):,} bytes sha256:{self.body_sha256[:12]}…"
        return f"{head}, {tail}" + (f", {brief(self.detail)}" if self.detail else "")


_mint_exchange_fields = minter(Exchange, Exchange.__attrs_init__)


def _new_exchange(
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
    """Mint an exchange, computing the body digest (package-internal).

    Recorded header values and the detail pass through :func:`~vllm_evidence._scrub.scrub`
    (secrets only): a server's ``Location`` or error text never carries a password, a
    bearer token or a remembered API key into an exchange, its repr or a saved manifest.
    """
    if started_at.tzinfo is None or ended_at.tzinfo is None:
        msg = "exchange timestamps must be timezone-aware"
        raise ValueError(msg)
    kept = tuple(
        (k.lower(), scrub(v, form="secrets")) for k, v in headers if k.lower() in RECORDED_HEADERS
    )
    return _mint_exchange_fields(
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
        detail=scrub(detail, form="secrets"),
    )


def _rederive_exchange(  # one parameter per raw field
    route: Route,
    role: ExchangeRole,
    transport: Transport,
    status: int | None,
    headers: tuple[tuple[str, str], ...],
    body: bytes | None,
    body_sha256: str | None,
    size_limit: int,
    started_monotonic_ns: int,
    ended_monotonic_ns: int,
    started_at: datetime,
    ended_at: datetime,
    detail: str,
) -> Exchange:
    """An exchange from its raw fields, its body digested again and compared with
    ``body_sha256`` (package-internal: unpickling and document loading)."""
    try:
        exchange = _new_exchange(
            route=route,
            role=role,
            transport=transport,
            status=status,
            headers=headers,
            body=body,
            size_limit=size_limit,
            started_monotonic_ns=started_monotonic_ns,
            ended_monotonic_ns=ended_monotonic_ns,
            started_at=started_at,
            ended_at=ended_at,
            detail=detail,
        )
    except ValueError as exc:
        msg = f"GET {route.target}: {exc}"
        raise InputError(msg) from exc
    if exchange.body_sha256 != body_sha256:
        msg = (
            f"GET {route.target}: the body's SHA-256 is {exchange.body_sha256} but "
            f"{body_sha256} was recorded; the evidence was altered and nothing is "
            "derived from it"
        )
        raise EvidenceMismatchError(msg)
    return exchange


@final
@attrs.frozen(init=False, repr=False)
class CaptureBatch(Sealed):
    """One bracketed batch of GETs to one front door, kept as raw evidence."""

    __public_constructor__ = "vllm_evidence.probe() or vllm_evidence.load()"

    batch_id: str
    target: str
    """The base URL read, with any credentials removed."""
    bracket_open: Exchange
    """The opening ``/metrics`` read."""
    exchanges: tuple[Exchange, ...]
    """The other routes, in route order."""
    bracket_close: Exchange
    """The closing ``/metrics`` read."""

    def __rederive__(self) -> Reduction[CaptureBatch]:
        """Pickled as its exchanges (each pickled as its raw fields); unpickling checks
        the batch's shape again."""
        return _rederive_batch, (
            self.batch_id,
            self.target,
            self.bracket_open,
            self.exchanges,
            self.bracket_close,
        )

    def all_exchanges(self) -> tuple[Exchange, ...]:
        """Every exchange, opening bracket first."""
        return (self.bracket_open, *self.exchanges, self.bracket_close)

    def exchange(self, route: Route) -> Exchange | None:
        """The exchange for a non-bracket route, or ``None`` when it was not requested."""
        for item in self.exchanges:
            if item.route is route:
                return item
        return None

    def _repr_summary(self) -> str:
        return (
            f"batch={self.batch_id[:12]}, target={self.target!r}, "
            f"{len(self.all_exchanges())} exchanges"
        )


_mint_batch = minter(CaptureBatch, CaptureBatch.__attrs_init__)


def _new_batch(
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


def _rederive_batch(
    batch_id: str,
    target: str,
    bracket_open: Exchange,
    exchanges: tuple[Exchange, ...],
    bracket_close: Exchange,
) -> CaptureBatch:
    """A batch from its exchanges, its shape checked and its target cleaned again
    (package-internal: unpickling and document loading)."""
    from vllm_evidence.capture._target import clean_target

    try:
        return _new_batch(
            batch_id=batch_id,
            # Pickle data or a hand-edited document may carry credentials: never keep them.
            target=clean_target(target),
            bracket_open=bracket_open,
            exchanges=exchanges,
            bracket_close=bracket_close,
        )
    except InputError:
        raise
    except ValueError as exc:
        msg = f"capture batch {batch_id!r}: {exc}"
        raise InputError(msg) from exc
