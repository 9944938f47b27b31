"""What one read of one route ended in: the closed set of outcome arms.

The arm is derived from a captured exchange (or a caller-supplied body) and the route's
adapter, never stored: a 404, an unparsed 200 and a parsed body are different arms, and
only :class:`Parsed` carries an observation ("answered" is not knowledge).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar, final

import attrs

from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.health import HealthAnswer, parse_health
from vllm_evidence._capture.batch import Exchange, Transport
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import Route

__all__ = [
    "STATIC_BODIES",
    "HttpError",
    "NotFound",
    "NotRequested",
    "Outcome",
    "Parsed",
    "Redirected",
    "StaticBodyMemo",
    "TimedOut",
    "TooLarge",
    "Unauthorized",
    "Unparsed",
    "Unreachable",
    "derive_outcome",
    "exchange_outcome",
    "health_outcome",
    "not_requested",
]

ObsT = TypeVar("ObsT")

#: Where every arm comes from: a read route, or a body a caller supplied.
_PUBLIC = "vllm_evidence.readback_from_batch() or vllm_evidence.historical_bundle()"


@final
@attrs.frozen(init=False, repr=False)
class Parsed(Sealed, Generic[ObsT]):
    """The route answered 200 and its adapter read the body: the only arm with knowledge."""

    __public_constructor__ = _PUBLIC
    route: Route
    observation: ObsT


@final
@attrs.frozen(init=False, repr=False)
class NotFound(Sealed):
    """404: the route is not registered (e.g. development mode off)."""

    __public_constructor__ = _PUBLIC
    route: Route


@final
@attrs.frozen(init=False, repr=False)
class Unauthorized(Sealed):
    """401 or 403: the route wants credentials this probe did not have."""

    __public_constructor__ = _PUBLIC
    route: Route
    status: int


@final
@attrs.frozen(init=False, repr=False)
class Unparsed(Sealed):
    """200, but the body is not what the route yields: answered is not knowledge."""

    __public_constructor__ = _PUBLIC
    route: Route
    failure: BodyParseFailure


@final
@attrs.frozen(init=False, repr=False)
class HttpError(Sealed):
    """Any other status (4xx, 5xx, or a 2xx other than 200)."""

    __public_constructor__ = _PUBLIC
    route: Route
    status: int


@final
@attrs.frozen(init=False, repr=False)
class Redirected(Sealed):
    """A 3xx.  Redirects are not followed: where it pointed is recorded, not read."""

    __public_constructor__ = _PUBLIC
    route: Route
    status: int
    location: str | None


@final
@attrs.frozen(init=False, repr=False)
class TimedOut(Sealed):
    """No complete answer within the per-request timeout or the batch deadline."""

    __public_constructor__ = _PUBLIC
    route: Route
    detail: str


@final
@attrs.frozen(init=False, repr=False)
class Unreachable(Sealed):
    """No answer at all (connection refused or reset, TLS failure, protocol error)."""

    __public_constructor__ = _PUBLIC
    route: Route
    detail: str


@final
@attrs.frozen(init=False, repr=False)
class TooLarge(Sealed):
    """The body passed the size cap; nothing of it was kept."""

    __public_constructor__ = _PUBLIC
    route: Route
    limit: int


@final
@attrs.frozen(init=False, repr=False)
class NotRequested(Sealed):
    """The route was not part of the read (development routes not asked for, or no body)."""

    __public_constructor__ = _PUBLIC
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


@final
class StaticBodyMemo:
    """What an adapter made of a body, remembered by the body's SHA-256 (package-internal).

    An adapter is a function of the body's bytes alone, so the same bytes read again give
    the same observation or the same failure: remembering it changes no answer.  It pays
    where one process serves the same bytes read after read: ``/server_info`` (its config
    text and its JSON, ~45 KB of a vLLM 0.32 server's, whose parse was a tenth of a
    watched target's round) is fixed for the life of the process, so from a watch's second
    round on its parse is one digest and one lookup.  Never used for bodies that change
    with every read (``/metrics``, or ``/v1/models`` with its ``created`` clock): a
    lookup that always misses only costs.

    Bounded: at most ``capacity`` entries, the least recently used dropped first; an entry
    keeps the digest and the parsed result (a few hundred bytes), never the body.  A
    server whose bytes change every read only churns its own entries.  Safe to share
    between threads (the readback of a large batch runs on one).
    """

    __slots__ = ("_capacity", "_entries", "_lock")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            msg = "a memo holds at least one entry"
            raise ValueError(msg)
        self._capacity = capacity
        self._entries: OrderedDict[tuple[Callable[[bytes], Any], str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def adapted(
        self, adapter: Callable[[bytes], ObsT | BodyParseFailure], body: bytes, digest: str
    ) -> ObsT | BodyParseFailure:
        """``adapter(body)``, or what it returned for the body of SHA-256 ``digest``
        before; ``digest`` must be ``body``'s (an :class:`Exchange`'s own)."""
        key = (adapter, digest)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                found: ObsT | BodyParseFailure = self._entries[key]
                return found
        made = adapter(body)
        with self._lock:
            self._entries[key] = made
            if len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        return made


#: The process's memo for the routes a server answers with the same bytes for its life:
#: 8,192 entries (two routes of ~4,000 watched servers; a few MiB at most).
STATIC_BODIES: Final = StaticBodyMemo(8192)


def exchange_outcome(
    exchange: Exchange,
    adapter: Callable[[bytes], ObsT | BodyParseFailure],
    *,
    memo: StaticBodyMemo | None = None,
) -> Outcome[ObsT]:
    """The outcome arm of a captured exchange; ``memo``: parse its body through that
    memo (:class:`StaticBodyMemo`, for routes whose body does not change read to read)."""
    read = adapter
    digest = exchange.body_sha256 if memo is not None and exchange.status == 200 else None
    if memo is not None and digest is not None:
        known, digested = memo, digest

        def remembered(body: bytes) -> ObsT | BodyParseFailure:
            return known.adapted(adapter, body, digested)

        read = remembered
    return derive_outcome(
        exchange.route,
        transport=exchange.transport,
        status=exchange.status,
        body=exchange.body,
        location=exchange.header("location"),
        detail=exchange.detail,
        size_limit=exchange.size_limit,
        adapter=read,
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
