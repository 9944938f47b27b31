"""The read-only front-door probe: one bracketed batch of GETs over a closed route set.

The HTTP layer here can be asked for a :class:`~vllm_evidence.upstream._routes.Route`
and nothing else: no free path, no method.  Every request is a GET to
``route.target``; redirects are not followed; bodies are streamed and cut off at a
cap; the API key travels only in the ``Authorization`` header and is kept nowhere: a
body, header or error text that reflects it keeps ``***`` in its place.

**The probe owns its transport.**  A caller chooses *settings* (:class:`ProbeSettings`:
timeouts, the body cap, TLS verification against a CA bundle or an
:class:`ssl.SSLContext`, a client certificate, extra request headers, how many servers
a :class:`ProbeSession` reads at once), never a transport or a client object: every
byte a batch records as :attr:`~vllm_evidence._capture.batch.CaptureOrigin.PROBED` came
from the network peer over connections this module opened (:mod:`._wire`).  A caller
who wants evidence it wrote itself gets it under its own origin
(:mod:`vllm_evidence.testing`: generated batches; a stub front door on loopback, which
the probe reads like any server).
"""

from __future__ import annotations

import asyncio
import math
import re
import ssl
import time
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Final, Literal, final

import attrs

from vllm_evidence._capture._target import clean_target
from vllm_evidence._capture._wire import (
    LocalProtocolError,
    ProbeClient,
    ProtocolError,
    Sends,
    default_context,
    header_line_ok,
    server_address,
)
from vllm_evidence._capture.batch import (
    NOT_SENT_DETAILS,
    SENT_TWICE_DETAIL,
    CaptureBatch,
    CaptureOrigin,
    Exchange,
    ExchangeRole,
    Transport,
    _new_batch,
    _new_exchange,
)
from vllm_evidence._scrub import REDACTED, remember, scrub_body
from vllm_evidence.errors import InputError
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

__all__ = [
    "CONNECTIONS_PER_PROBE",
    "DEFAULT_BODY_BUDGET_BYTES",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_TIMEOUT_S",
    "BodyBudget",
    "ProbeSession",
    "ProbeSettings",
    "clean_target",
    "probe",
    "probe_sync",
    "worst_case_body_bytes",
]

DEFAULT_MAX_BODY_BYTES: Final = 8 * 1024 * 1024
DEFAULT_TIMEOUT_S: Final = 10.0
DEFAULT_DEADLINE_S: Final = 30.0
#: How many servers a :class:`ProbeSession` reads at once by default (the command's
#: ``--concurrency``): from about this many a fleet is bound by the prober's CPU.
DEFAULT_CONCURRENCY: Final = 64
#: The response-body bytes a whole run may hold at once, by default (the CLI's fleet):
#: what its probes are reading and what waits to be assessed, however many servers.
#: 1 GiB is 128 requests at the default cap: two for each of the 64 servers a fleet
#: reads at once by default, what it keeps in flight on average (fewer throttled it).
DEFAULT_BODY_BUDGET_BYTES: Final = 1024 * 1024 * 1024

_CORE_ROUTES = (Route.VERSION, Route.MODELS, Route.HEALTH)
#: The most connections (sockets) one :func:`probe` holds at once: one for each route read
#: between the opening and the closing ``/metrics`` reads, when every lane stalls
#: (:data:`ROUTE_LANES`, :data:`LANE_STALL_S`).  A fleet of N probes at once may hold N
#: times this many.
CONNECTIONS_PER_PROBE: Final = len(PROBE_ROUTES) - 1
#: How many of the routes between the ``/metrics`` reads are read at once to begin with:
#: two, on the two connections the opening reads left open (the bracket read's and its
#: twin's).  Under a per-connection balancer every route then comes from a process one of
#: the opening reads reached, and a round opens two connections instead of six (a
#: loopback connect and close cost more than the request on it: a watched round's CPU
#: fell ~10 %).  The routes' wall time is about three answers instead of one.
ROUTE_LANES: Final = 2
#: Seconds without an answer after which one more route is read at once (on a new
#: connection): a server that holds some routes open holds the others back for at most
#: twice this each, and one that holds all of them costs a request's timeout plus about
#: this for each lane opened after the first two.
LANE_STALL_S: Final = 0.5


def _base_path(target: str) -> str:
    """The raw path of a cleaned target (empty, or ``/`` and the rest)."""
    _, _, rest = target.partition("://")
    _, slash, path = rest.partition("/")
    return slash + path


#: What a bearer token may hold on the wire: printable ASCII, no spaces or controls.
_TOKEN_RE = re.compile(r"[\x21-\x7e]+")


def _utc_now() -> datetime:
    return datetime.now(UTC)


#: What one send gives back: status, headers, body, transport and detail.
_Sent = tuple[int | None, tuple[tuple[str, str], ...], bytes | None, Transport, str]

#: Which connection a request goes on: any kept-alive one (or a new one), a new one,
#: or the one that read this client's previous answer (when it is still kept alive).
Via = Literal["any", "new", "same"]

#: A base path as it may go on the wire before a closed route's target: empty, or
#: ``/`` and the cleaned base path's characters.
_BASE_PATH_RE = re.compile(r"(?:/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*)?")


@final
class _Claim:
    """One probe's part of a :class:`BodyBudget`: what it holds, its requests waiting for
    room, and how long they have waited (its batch's deadline does not count that)."""

    __slots__ = ("held", "paused_s", "queued", "waiting", "waiting_since")

    def __init__(self) -> None:
        #: Body bytes its finished requests hold.
        self.held = 0
        #: Its requests waiting for room, in order.
        self.queued: list[_Waiter] = []
        self.waiting = 0
        self.waiting_since = 0.0
        self.paused_s = 0.0


@final
class _Waiter:
    """One request waiting for room: granted when its future is."""

    __slots__ = ("amount", "claim", "future")

    def __init__(self, claim: _Claim, amount: int, future: asyncio.Future[None]) -> None:
        self.claim = claim
        self.amount = amount
        self.future = future


@final
class BodyBudget:
    """The response-body bytes every :func:`probe` that shares it may hold at once: one
    bound for a whole run, however many servers it reads and however they size their
    answers.

    A request reserves its body cap (``max_body_bytes``) before it is sent, because a
    server may send that much; when its answer has been read the reservation shrinks to
    the body kept, which stays held until the caller :meth:`release`\\ s the batch (when
    done assessing it).  A request that does not fit **waits**, before it is sent: its
    own timeout, the exchange's timings and its batch's deadline do not count the wait,
    and no request is refused or cut short for want of budget.  So that waiting can never
    deadlock (probes holding bytes while each waits for more), the oldest probe in
    progress may use the whole budget and every other one leaves room for one probe's
    worst case (its requests times its cap): the budget must hold at least that (80 MiB
    with the default cap and every route), or :func:`probe` raises :class:`InputError`.

    :attr:`held` is what is reserved or kept now, :attr:`high_water` the most it has
    been, and :attr:`waits` how many requests had to wait.  A budget belongs to one event
    loop.
    """

    def __init__(self, max_bytes: int) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:  # type: ignore[redundant-expr]  # callers outside mypy can pass anything
            msg = "a body budget is a positive number of bytes"
            raise InputError(msg)
        self.max_bytes: Final = max_bytes
        self._used = 0
        self._high_water = 0
        self._waits = 0
        #: The room every probe but the oldest leaves: the largest worst case opened.
        self._headroom = 0
        #: Probes in progress, oldest first (a dict keeps insertion order).
        self._active: dict[_Claim, None] = {}
        #: Requests waiting for room, in order (one granted out of turn stays here, done).
        self._waiting: deque[_Waiter] = deque()
        self._batches: dict[str, int] = {}

    @property
    def held(self) -> int:
        """Body bytes reserved by requests in flight or kept by batches not released."""
        return self._used

    @property
    def high_water(self) -> int:
        """The most :attr:`held` has been (never more than :attr:`max_bytes`)."""
        return self._high_water

    @property
    def waits(self) -> int:
        """How many requests waited for room before they were sent."""
        return self._waits

    def release(self, batch: CaptureBatch) -> None:
        """Give back what ``batch``'s bodies hold: call it once the batch is no longer
        needed (assessed, saved).  Releasing a batch twice, or one read without this
        budget, does nothing."""
        kept = self._batches.pop(batch.batch_id, 0)
        if kept:
            self._used -= kept
            self._wake()

    def __repr__(self) -> str:
        return (
            f"BodyBudget({self.max_bytes:,} bytes: {self._used:,} held, high water "
            f"{self._high_water:,}, {self._waits} waits)"
        )

    # -- what probe() and RouteClient call ---------------------------------------------

    def _open(self, requests: int, per_request: int) -> _Claim:
        """A probe of ``requests`` requests of up to ``per_request`` bytes each begins."""
        worst = requests * per_request
        if worst > self.max_bytes:
            msg = (
                f"the body budget ({self.max_bytes:,} bytes) is smaller than one probe's "
                f"worst case ({requests} requests of up to {per_request:,} bytes)"
            )
            raise InputError(msg)
        claim = _Claim()
        self._headroom = max(self._headroom, worst)
        self._active[claim] = None
        return claim

    def _fits(self, claim: _Claim, amount: int) -> bool:
        oldest = next(iter(self._active), None)
        room = self.max_bytes if claim is oldest else self.max_bytes - self._headroom
        return self._used + amount <= room

    def _grant(self, amount: int) -> None:
        self._used += amount
        self._high_water = max(self._high_water, self._used)

    async def _reserve(self, claim: _Claim, amount: int) -> None:
        """Reserve ``amount`` for one request of ``claim``, waiting for room if need be."""
        if not self._waiting and self._fits(claim, amount):
            self._grant(amount)
            return
        loop = asyncio.get_running_loop()
        waiter = _Waiter(claim, amount, loop.create_future())
        self._waiting.append(waiter)
        claim.queued.append(waiter)
        self._wake()
        if waiter.future.done():
            return  # the oldest probe's request: granted past the queue
        self._waits += 1
        if not claim.waiting:
            claim.waiting_since = time.monotonic()
        claim.waiting += 1
        try:
            await waiter.future
        except BaseException:
            if waiter.future.done() and not waiter.future.cancelled():
                self._give_back(amount)  # granted, then cancelled before it ran
            else:
                waiter.future.cancel()  # passed over where it stands in the queue
                claim.queued.remove(waiter)
                self._wake()
            raise
        finally:
            claim.waiting -= 1
            if not claim.waiting:
                claim.paused_s += time.monotonic() - claim.waiting_since

    def _give_back(self, amount: int) -> None:
        """A reservation not used (the request was cancelled or failed to start)."""
        self._used -= amount
        self._wake()

    def _settle(self, claim: _Claim, reserved: int, kept: int) -> None:
        """A request reserved ``reserved`` and its answer keeps ``kept`` bytes."""
        self._used -= reserved - kept
        claim.held += kept
        if kept < reserved:
            self._wake()

    def _finish(self, claim: _Claim, batch: CaptureBatch) -> None:
        """The probe's reads are done: what it holds is the batch's until released."""
        self._active.pop(claim, None)
        if claim.held:
            self._batches[batch.batch_id] = self._batches.get(batch.batch_id, 0) + claim.held
        self._wake()

    def _abandon(self, claim: _Claim) -> None:
        """The probe ended without a batch (cancelled): give back what it holds."""
        self._active.pop(claim, None)
        self._used -= claim.held
        claim.held = 0
        self._wake()

    def _wake(self) -> None:
        """Grant waiting requests as far as they fit: first the oldest probe's (they alone
        may use the last room, and pass the others), then the others in the order they
        came, until one does not fit."""
        oldest = next(iter(self._active), None)
        if oldest is not None:
            while oldest.queued and self._used + oldest.queued[0].amount <= self.max_bytes:
                self._admit(oldest.queued[0])
        waiting = self._waiting
        while waiting:
            head = waiting[0]
            if head.future.done():
                waiting.popleft()  # granted out of turn, or cancelled
            elif self._fits(head.claim, head.amount):
                waiting.popleft()
                self._admit(head)
            else:
                return

    def _admit(self, waiter: _Waiter) -> None:
        waiter.claim.queued.remove(waiter)
        self._grant(waiter.amount)
        waiter.future.set_result(None)


def worst_case_body_bytes(
    *,
    development_routes: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    api_key: str | None = None,
) -> int:
    """The most body bytes one :func:`probe` with these settings may hold: every request
    (four ``/metrics`` reads and each route) answering at its cap.  A
    :class:`BodyBudget` must hold at least this much."""
    routes = sum(
        1
        for r in PROBE_ROUTES
        if r is not Route.METRICS and (r in _CORE_ROUTES or development_routes)
    )
    secrets = () if api_key is None else (api_key,)
    return (4 + routes) * _reservation(max_body_bytes, secrets)


def _reservation(max_body_bytes: int, secrets: tuple[str, ...]) -> int:
    """What one request reserves of a body budget: the most its kept body may hold.  A
    key shorter than ``***`` grows a body that reflects it, up to three times."""
    growth = 3 if any(len(secret) < len(REDACTED) for secret in secrets) else 1
    return max_body_bytes * growth


@final
class _RouteClient:
    """The closed-route HTTP layer: GET one probe-readable :class:`Route`, nothing else,
    over the probe's own connections (:class:`~vllm_evidence._capture._wire.ProbeClient`)."""

    def __init__(
        self,
        client: ProbeClient,
        target: str,
        *,
        max_body_bytes: int,
        timeout_s: float,
        deadline: float,
        headers: list[tuple[str, str]],
        secrets: tuple[str, ...] = (),
        body_budget: tuple[BodyBudget, _Claim] | None = None,
    ) -> None:
        self._client = client
        #: The run's body budget and this probe's part of it (:func:`probe` opens it).
        self._budget = body_budget
        self._secrets = secrets
        self._max_body_bytes = max_body_bytes
        self._timeout_s = timeout_s
        self._deadline = deadline
        self._header_list = headers
        # Parsed once here, not once a request.
        self._base_path = _base_path(target)
        self._address = server_address(target)
        #: The connection that read the last answer.
        self._last_connection: object = None

    async def get(
        self, route: Route, role: ExchangeRole = ExchangeRole.ROUTE, *, via: Via = "any"
    ) -> Exchange:
        """GET ``route`` and return the exchange, whatever happened; ``via`` chooses the
        connection (:data:`Via`)."""
        if not isinstance(route, Route) or not route.probe_readable:  # type: ignore[redundant-expr]  # callers outside mypy can pass anything
            msg = f"the probe reads only probe-readable Route members, not {route!r}"
            raise TypeError(msg)
        path = self._base_path + route.target
        if not _BASE_PATH_RE.fullmatch(self._base_path):
            # Defence in depth: clean_target already refuses what could get here.
            msg = "the request line would not be the closed route's own target"
            raise InputError(msg)
        reserved = 0
        if self._budget is not None:
            # Before the clocks start: a wait for room is not this request's time.
            reserved = self.reservation
            await self._budget[0]._reserve(self._budget[1], reserved)
        try:
            started_ns = time.monotonic_ns()
            started_at = _utc_now()
            budget = min(self._timeout_s, self._deadline_now() - time.monotonic())
            sends = Sends()
            if budget <= 0:
                sent: _Sent = (None, (), None, Transport.TIMED_OUT, NOT_SENT_DETAILS[0])
            else:
                sent = await self._send(path, budget, via, sends)
        except BaseException:
            if self._budget is not None:
                self._budget[0]._give_back(reserved)
            raise
        status, headers, body, transport, detail = sent
        if body is not None:
            kept = scrub_body(body, secrets=self._secrets)
            if kept != body:
                body = kept
                detail = (
                    "a credential sent (the API key, a header's value) was in the body "
                    "and is replaced by ***"
                )
        if self._budget is not None:
            self._budget[0]._settle(self._budget[1], reserved, 0 if body is None else len(body))
        if sends.count > 1:  # the request log has both (CaptureBatch.request_lines)
            detail = f"{detail} {SENT_TWICE_DETAIL}" if detail else SENT_TWICE_DETAIL
        return _new_exchange(
            route=route,
            role=role,
            transport=transport,
            status=status if transport is not Transport.UNREACHABLE else None,
            headers=headers,
            body=body,
            size_limit=self._max_body_bytes,
            started_monotonic_ns=started_ns,
            ended_monotonic_ns=time.monotonic_ns(),
            started_at=started_at,
            ended_at=_utc_now(),
            detail=detail,
        )

    @property
    def reservation(self) -> int:
        """What one request reserves of a body budget (:func:`_reservation`)."""
        return _reservation(self._max_body_bytes, self._secrets)

    def _deadline_now(self) -> float:
        """The batch's deadline, moved on by the time its requests waited for budget."""
        if self._budget is None:
            return self._deadline
        return self._deadline + self._budget[1].paused_s

    def _too_large(self) -> str:
        return f"body larger than {self._max_body_bytes} bytes"

    async def _send(self, path: str, budget: float, via: Via, sends: Sends) -> _Sent:
        on, self._last_connection = self._last_connection, None
        try:
            async with asyncio.timeout(budget):
                reply = await self._client.get(
                    self._address,
                    path,
                    self._header_list,
                    max_body_bytes=self._max_body_bytes,
                    new_connection=via == "new",
                    on=on if via == "same" else None,
                    sends=sends,
                )
                self._last_connection = reply.connection
        except TimeoutError as exc:
            detail = f"no complete answer within {budget:.3g}s ({type(exc).__name__})"
            return None, (), None, Transport.TIMED_OUT, detail
        except LocalProtocolError as exc:
            # Raised before anything is sent; its text can quote request headers (the key).
            return (
                None,
                (),
                None,
                Transport.UNREACHABLE,
                f"{type(exc).__name__} {NOT_SENT_DETAILS[1]}",
            )
        except (OSError, EOFError, ProtocolError) as exc:
            return None, (), None, Transport.UNREACHABLE, f"{type(exc).__name__}: {exc}"
        if reply.too_large:
            return reply.status, reply.headers, None, Transport.TOO_LARGE, self._too_large()
        return reply.status, reply.headers, reply.body, Transport.ANSWERED, ""


# -- settings ----------------------------------------------------------------------------

#: Request headers the probe writes itself, or that would change how an answer is framed
#: or whether the connection is kept: an extra header may not name one.
_OWN_HEADERS: Final = frozenset(
    {
        *("host", "accept", "accept-encoding", "user-agent", "authorization"),
        *("connection", "keep-alive", "proxy-connection", "upgrade", "expect"),
        *("content-length", "transfer-encoding", "te", "trailer"),
    }
)


def _pair(item: object) -> tuple[str, str]:
    """One extra header as ``(name, value)``, checked (the value is never quoted)."""
    if not (
        isinstance(item, tuple)
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], str)
    ):
        msg = "headers are a mapping (or pairs) of header names to string values"
        raise InputError(msg)
    name, value = item
    if not header_line_ok(name, value):
        msg = (
            "an extra header is not one header line: its name must be a token and its "
            "value printable ASCII (the value is not shown)"
        )
        raise InputError(msg)
    if name.lower() in _OWN_HEADERS:
        msg = (
            f"extra header {name.lower()}: the probe writes it itself, or it would change "
            "how an answer is framed"
        )
        raise InputError(msg)
    return name, value


def _header_pairs(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
) -> tuple[tuple[str, str], ...]:
    """Extra request headers as checked pairs: each a header line, none the probe's own,
    no name twice."""
    return _pairs_of(headers)


def _pairs_of(headers: object) -> tuple[tuple[str, str], ...]:
    items: Iterable[object]
    if isinstance(headers, Mapping):
        items = tuple(headers.items())
    elif isinstance(headers, str | bytes) or not isinstance(headers, Iterable):
        msg = "headers are a mapping (or pairs) of header names to string values"
        raise InputError(msg)
    else:
        items = headers
    pairs = tuple(_pair(item) for item in items)
    names = [name.lower() for name, _ in pairs]
    if len(set(names)) != len(names):
        msg = "an extra header is named twice (names are case-insensitive)"
        raise InputError(msg)
    return pairs


def _names_only(pairs: tuple[tuple[str, str], ...]) -> str:
    """A repr of extra headers that shows their names, never their values."""
    return repr(tuple((name, REDACTED) for name, _ in pairs))


def _check_seconds(value: object, name: str) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        msg = f"{name} must be a positive finite number of seconds"
        raise InputError(msg)


def _check_count(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        msg = f"{name} must be a positive whole number"
        raise InputError(msg)


def _check_flag(value: object, name: str) -> None:
    if not isinstance(value, bool):
        msg = f"{name} is True or False"
        raise InputError(msg)


def _check_tls(verify: object, certificate: object, key: object) -> None:
    """Settings for TLS that the probe's connections can use, and nothing that could
    stand between them and the server's bytes."""
    if isinstance(verify, ssl.SSLContext):
        if type(verify) is not ssl.SSLContext or vars(verify):
            msg = (
                "verify: an ssl.SSLContext as the ssl module makes it: not a subclass, and "
                "no attribute set on it (such as sslobject_class): the probe's connections "
                "are wrapped by the standard SSLObject only"
            )
            raise InputError(msg)
        if certificate is not None:
            msg = (
                "client_certificate goes with verify=True/False or a CA bundle; with an "
                "ssl.SSLContext, load the certificate into it (load_cert_chain)"
            )
            raise InputError(msg)
    elif not isinstance(verify, bool | str):
        msg = "verify is True, False, a CA file or directory, or an ssl.SSLContext"
        raise InputError(msg)
    if certificate is not None and not isinstance(certificate, str):
        msg = "client_certificate is the path of a PEM file"
        raise InputError(msg)
    if key is not None and (certificate is None or not isinstance(key, str)):
        msg = "client_key is the path of a PEM file, given with client_certificate"
        raise InputError(msg)


@final
@attrs.frozen
class ProbeSettings:
    """How the probe reads front doors: every choice a caller has about its connections
    and requests, and nothing that writes or reads the bytes.

    There is no setting for a transport, a client object or a connection: the probe's
    connections are always its own, so a batch it returns holds what the server sent.
    Every value is checked when the settings are made (:class:`InputError`); files
    (a CA bundle, a client certificate) are read when a :class:`ProbeSession` is.
    """

    timeout: float = DEFAULT_TIMEOUT_S
    """Seconds each request may take (its connection included)."""
    deadline: float = DEFAULT_DEADLINE_S
    """Seconds the whole batch may take; a request not sent by then is never sent."""
    development_routes: bool = True
    """Also read ``/server_info`` (both forms) and ``/get_world_size``."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest body read; a longer one is recorded as too large, none of it kept."""
    verify: bool | str | ssl.SSLContext = True
    """TLS certificate verification: ``True`` (the ``certifi`` CA bundle), ``False``, a
    CA file or directory (a private CA), or an :class:`ssl.SSLContext` as
    :func:`ssl.create_default_context` makes it (no subclass, no attribute such as
    ``sslobject_class`` set on it; each connection is wrapped by the standard
    :class:`ssl.SSLObject` whatever is set later)."""
    client_certificate: str | None = None
    """A PEM file with the client certificate (and its key, unless ``client_key``), for
    a front door that asks for one; not with an :class:`ssl.SSLContext` ``verify``."""
    client_key: str | None = None
    """A PEM file with the client certificate's key (not encrypted)."""
    headers: tuple[tuple[str, str], ...] = attrs.field(
        default=(), converter=_header_pairs, repr=_names_only
    )
    """Extra request headers (a mapping or ``(name, value)`` pairs), sent after the
    probe's own on every request.  Each value is taken for a credential, as the API key
    is: never shown (not in this repr), and, once a session is made with it, replaced by
    ``***`` in whatever this process renders or saves (a value under 8 characters only
    where it stands alone).  Names the probe writes itself or that change the framing (``Host``,
    ``Authorization``, ``Accept``, ``Content-Length``, ``Connection``…) are refused."""
    concurrency: int = DEFAULT_CONCURRENCY
    """How many servers one :class:`ProbeSession` reads at once; a probe past it waits
    for its turn before any request (its deadline does not count the wait)."""

    def __attrs_post_init__(self) -> None:
        _check_seconds(self.timeout, "timeout")
        _check_seconds(self.deadline, "deadline")
        _check_count(self.max_body_bytes, "max_body_bytes")
        _check_count(self.concurrency, "concurrency")
        _check_flag(self.development_routes, "development_routes")
        _check_tls(self.verify, self.client_certificate, self.client_key)


#: The largest CA, certificate or key file read (a system CA bundle is about 250 KB).
_CA_FILE_LIMIT = 16 * 1024 * 1024
_ASCII = bytes(range(128)) + b"?" * 128


def _ca_context(verify: str) -> ssl.SSLContext:
    """An SSL context trusting the CA file or directory ``verify``."""
    from pathlib import Path

    from vllm_evidence._capture._files import read_named_file

    where = Path(verify)
    try:
        if where.is_dir():
            return ssl.create_default_context(capath=verify)
        # Read here, bounded, never from a FIFO or a device (OpenSSL's own read would
        # block); PEM is ASCII, so a byte of a non-ASCII comment is read as "?".
        pem = read_named_file(verify, _CA_FILE_LIMIT, what="CA file").translate(_ASCII)
        if not pem.strip():  # an empty cadata would load the system's CAs instead
            msg = f"cannot load CA certificates from {verify}: the file is empty"
            raise InputError(msg)
        return ssl.create_default_context(cadata=pem.decode("ascii"))
    except (OSError, ssl.SSLError) as exc:
        msg = f"cannot load CA certificates from {verify}: {exc}"
        raise InputError(msg) from None


def _no_password() -> bytes:
    """OpenSSL's callback for an encrypted key: no password (it would prompt otherwise)."""
    return b""


def _load_client_certificate(context: ssl.SSLContext, certificate: str, key: str | None) -> None:
    from vllm_evidence._capture._files import read_named_file

    # Checked first as files this process may read (regular, bounded): OpenSSL's own
    # read of a FIFO would block.
    read_named_file(certificate, _CA_FILE_LIMIT, what="client certificate")
    if key is not None:
        read_named_file(key, _CA_FILE_LIMIT, what="client key")
    try:
        context.load_cert_chain(certificate, key, password=_no_password)
    except (OSError, ssl.SSLError) as exc:
        msg = (
            f"cannot load the client certificate from {certificate}"
            f"{'' if key is None else f' and {key}'}: {exc} (the key goes in the same file "
            "or in client_key; an encrypted key is not read)"
        )
        raise InputError(msg) from None


def _tls(settings: ProbeSettings) -> bool | ssl.SSLContext:
    """What the session's connections verify with: a bool (the context built on the
    first ``https`` target) or a context built now (a CA file, a client certificate)."""
    verify = settings.verify
    if isinstance(verify, ssl.SSLContext):
        return verify
    certificate = settings.client_certificate
    if certificate is None:
        return verify if isinstance(verify, bool) else _ca_context(verify)
    context = _ca_context(verify) if isinstance(verify, str) else default_context(verify=verify)
    _load_client_certificate(context, certificate, settings.client_key)
    return context


def _check_key(api_key: object) -> None:
    if api_key is not None and not (isinstance(api_key, str) and _TOKEN_RE.fullmatch(api_key)):
        msg = "the API key must be printable ASCII without spaces (its value is not shown)"
        raise InputError(msg)


def _exactly(value: object, kind: type) -> bool:
    return type(value) is kind


# -- the probe -------------------------------------------------------------------------


@final
class ProbeSession:
    """The probe's connections for a run of probes, made and owned here: one TLS context,
    each server's connections kept alive for its probe and closed when the last probe of
    it ends (what is open is bounded by the servers being read, at most
    :data:`CONNECTIONS_PER_PROBE` sockets each: keep ``settings.concurrency`` times that
    within the process's open-file limit).

    It takes :class:`ProbeSettings` (the same for every probe of the run) and a
    :class:`BodyBudget` every probe of the run shares, and nothing that writes or reads
    bytes.  At most ``settings.concurrency`` probes read at once; more wait their turn.
    The connections carry no API key (each probe's requests carry their own), keep no
    cookie, follow no redirect and read no proxy or certificate settings from the
    environment.  A CA file and a client certificate are read here
    (:class:`InputError` if one cannot be).  A session belongs to one event loop; use it
    as an async context manager (or :meth:`aclose` it).
    """

    def __init__(
        self, settings: ProbeSettings | None = None, *, body_budget: BodyBudget | None = None
    ) -> None:
        chosen = ProbeSettings() if settings is None else settings
        if not _exactly(chosen, ProbeSettings):
            msg = "settings must be a ProbeSettings"
            raise InputError(msg)
        if body_budget is not None and not _exactly(body_budget, BodyBudget):
            msg = "body_budget must be a BodyBudget"
            raise InputError(msg)
        self._settings = chosen
        self._budget = body_budget
        self._client = ProbeClient(
            verify=_tls(chosen), connections_per_server=len(PROBE_ROUTES) + 1
        )
        for _, value in chosen.headers:
            remember(value)  # scrubbed from whatever a server reflects, as a key is
        self._routes = tuple(
            r
            for r in PROBE_ROUTES
            if r is not Route.METRICS and (r in _CORE_ROUTES or chosen.development_routes)
        )
        self._slots: asyncio.Semaphore | None = None
        self._closed = False

    @property
    def settings(self) -> ProbeSettings:
        """The settings every probe of this session reads with."""
        return self._settings

    @property
    def open_servers(self) -> int:
        """How many servers have connections kept alive now."""
        return self._client.open_servers

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self.open_servers} servers open"
        return f"ProbeSession({self._settings!r}, {state})"

    async def __aenter__(self) -> ProbeSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection; the session takes no more probes."""
        self._closed = True
        await self._client.aclose()

    async def probe(self, url: str, *, api_key: str | None = None) -> CaptureBatch:
        """Read one front door with this session's settings and connections (what
        :func:`probe` describes), its requests carrying ``api_key`` when given."""
        target = clean_target(url)
        _check_key(api_key)
        if self._closed:
            msg = "this probe session is closed"
            raise InputError(msg)
        settings = self._settings
        headers = [
            ("Accept", "*/*"),
            ("Accept-Encoding", "identity"),
            ("User-Agent", "vllm-evidence"),
            *settings.headers,
        ]
        if api_key is not None:
            headers.append(("Authorization", f"Bearer {api_key}"))
            # A server may reflect the key anywhere: nothing this process renders or
            # saves from now on carries it (vllm_evidence._scrub).
            remember(api_key)
        secrets = tuple(secret for secret in (api_key, *(v for _, v in settings.headers)) if secret)
        if self._slots is None:
            self._slots = asyncio.Semaphore(settings.concurrency)
        async with self._slots:
            # Its part of the budget is opened once it reads, never while it waits for
            # its turn: the oldest probe in progress must be one that is reading.
            if self._budget is None:
                return await self._read(target, headers, secrets, None)
            # The four /metrics reads and the routes: this probe's worst case (refused
            # before any request when the budget is smaller).
            requests = 4 + len(self._routes)
            claim = self._budget._open(requests, _reservation(settings.max_body_bytes, secrets))
            share = self._budget, claim
            try:
                batch = await self._read(target, headers, secrets, share)
            except BaseException:
                self._budget._abandon(claim)
                raise
            self._budget._finish(claim, batch)
            return batch

    async def _read(
        self,
        target: str,
        headers: list[tuple[str, str]],
        secrets: tuple[str, ...],
        share: tuple[BodyBudget, _Claim] | None,
    ) -> CaptureBatch:
        settings = self._settings
        layer = _RouteClient(
            self._client,
            target,
            max_body_bytes=settings.max_body_bytes,
            timeout_s=settings.timeout,
            deadline=time.monotonic() + settings.deadline,
            headers=headers,
            secrets=secrets,
            body_budget=share,
        )
        address = server_address(target)
        self._client.acquire(address)
        try:
            opening = await layer.get(Route.METRICS, ExchangeRole.BRACKET_OPEN)
            opening_twin = await layer.get(Route.METRICS, ExchangeRole.BRACKET_OPEN, via="new")
            middle = await _read_between(layer, self._routes)
            closing = await layer.get(Route.METRICS, ExchangeRole.BRACKET_CLOSE)
            closing_twin = await layer.get(Route.METRICS, ExchangeRole.BRACKET_CLOSE, via="same")
        finally:
            self._client.release(address)
        return _new_batch(
            batch_id=uuid.uuid4().hex,
            target=target,
            bracket_open=opening,
            exchanges=tuple(middle),
            bracket_close=closing,
            bracket_open_twin=opening_twin,
            bracket_close_twin=closing_twin,
            origin=CaptureOrigin.PROBED,
        )


async def _read_between(layer: _RouteClient, routes: tuple[Route, ...]) -> tuple[Exchange, ...]:
    """Read ``routes`` on :data:`ROUTE_LANES` lanes at once, one more lane opened after
    each :data:`LANE_STALL_S` in which no answer came while routes still wait (at most a
    lane a route): the exchanges in ``routes``' order.  An error (a programming error:
    every failure of a read is its exchange) ends every lane and is raised."""
    read: dict[int, Exchange] = {}
    waiting = deque(enumerate(routes))
    answers = 0

    async def lane() -> None:
        nonlocal answers
        while waiting:
            index, route = waiting.popleft()
            read[index] = await layer.get(route)
            answers += 1

    lanes = [asyncio.ensure_future(lane()) for _ in range(min(ROUTE_LANES, len(routes)))]
    try:
        seen = 0
        while True:
            # One wait (one timer) a round of lanes: a server that answers each route
            # within LANE_STALL_S is read in one.
            done, pending = await asyncio.wait(
                lanes, timeout=LANE_STALL_S, return_when=asyncio.FIRST_EXCEPTION
            )
            for task in done:
                error = None if task.cancelled() else task.exception()
                if error is not None:
                    raise error
            if not pending:
                break
            if waiting and answers == seen:
                lanes.append(asyncio.ensure_future(lane()))
            seen = answers
    finally:
        # Every lane ended before the probe gives its connections back (a lane's own
        # cleanup gives back its part of the body budget), every error retrieved.
        for task in lanes:
            task.cancel()
        await asyncio.gather(*lanes, return_exceptions=True)
    return tuple(read[index] for index in range(len(routes)))


async def probe(
    url: str,
    *,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    deadline: float = DEFAULT_DEADLINE_S,
    development_routes: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    verify: bool | str | ssl.SSLContext = True,
    client_certificate: str | None = None,
    client_key: str | None = None,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    body_budget: BodyBudget | None = None,
) -> CaptureBatch:
    """Read one front door: ``/metrics`` twice, the other routes concurrently, ``/metrics`` twice.

    Each end of the batch is two ``/metrics`` reads back to back, the second sent when
    the first has ended: at the opening end on a connection of its own (a per-connection
    balancer, such as a Kubernetes Service, chooses again for it), at the closing end on
    the first read's kept-alive connection (a per-request balancer, such as nginx, chooses
    again for every request on one connection).  Two reads of one end that carry
    different ``process_start_time_seconds`` are several processes behind one URL, and
    the front-door join refuses them by name (``several_processes``).

    ``api_key`` goes in an ``Authorization: Bearer`` header.  ``timeout``, ``deadline``,
    ``development_routes``, ``max_body_bytes``, ``verify``, ``client_certificate``,
    ``client_key`` and ``headers`` are the :class:`ProbeSettings` of the same names.
    ``body_budget`` is a :class:`BodyBudget` shared by every probe of a run: the bytes
    of their bodies held at once stay within it (a request waits, before it is sent,
    until it fits); the caller gives each returned batch's bytes back with
    :meth:`BodyBudget.release` once done with it.  The connections are the probe's own,
    opened for this probe and closed after it; to read many servers with one TLS
    context and connections kept per server, use a :class:`ProbeSession`.

    The returned batch carries its request log: :meth:`CaptureBatch.request_lines` is
    ``(method, path)`` of every request put on the wire.  Raises :class:`InputError` for
    a URL that is not one or a setting that is not one; every other failure is an
    exchange's outcome, never an exception.
    """
    target = clean_target(url)  # a string that is not a URL: refused before anything
    settings = ProbeSettings(
        timeout=timeout,
        deadline=deadline,
        development_routes=development_routes,
        max_body_bytes=max_body_bytes,
        verify=verify,
        client_certificate=client_certificate,
        client_key=client_key,
        headers=headers,
        concurrency=1,
    )
    async with ProbeSession(settings, body_budget=body_budget) as session:
        return await session.probe(target, api_key=api_key)


def probe_sync(
    url: str,
    *,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    deadline: float = DEFAULT_DEADLINE_S,
    development_routes: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    verify: bool | str | ssl.SSLContext = True,
    client_certificate: str | None = None,
    client_key: str | None = None,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
) -> CaptureBatch:
    """:func:`probe`, run to completion on a fresh event loop (same parameters, same
    batch with its :meth:`~CaptureBatch.request_lines`)."""
    return asyncio.run(
        probe(
            url,
            api_key=api_key,
            timeout=timeout,
            deadline=deadline,
            development_routes=development_routes,
            max_body_bytes=max_body_bytes,
            verify=verify,
            client_certificate=client_certificate,
            client_key=client_key,
            headers=headers,
        )
    )
