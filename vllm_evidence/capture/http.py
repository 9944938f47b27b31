"""The read-only front-door probe: one bracketed batch of GETs over a closed route set.

The HTTP layer here can be asked for a :class:`~vllm_evidence.upstream.routes.Route`
and nothing else: no free path, no method.  Every request is a GET to
``route.target``; redirects are not followed; bodies are streamed and cut off at a
cap; the API key travels only in the ``Authorization`` header and is kept nowhere: a
body, header or error text that reflects it keeps ``***`` in its place.
"""

from __future__ import annotations

import asyncio
import math
import re
import ssl
import time
import uuid
from collections import deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal, final

from vllm_evidence._scrub import REDACTED, remember, scrub_body
from vllm_evidence.capture._target import clean_target
from vllm_evidence.capture._wire import (
    LocalProtocolError,
    ProbeClient,
    ProtocolError,
    Sends,
    declared_too_large,
    server_address,
)
from vllm_evidence.capture.batch import (
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
from vllm_evidence.errors import InputError
from vllm_evidence.upstream.routes import PROBE_ROUTES, Route

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

__all__ = [
    "CONNECTIONS_PER_PROBE",
    "DEFAULT_BODY_BUDGET_BYTES",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_TIMEOUT_S",
    "BodyBudget",
    "ProbeClient",
    "RouteClient",
    "clean_target",
    "new_client",
    "probe",
    "probe_sync",
    "worst_case_body_bytes",
]

DEFAULT_MAX_BODY_BYTES: Final = 8 * 1024 * 1024
DEFAULT_TIMEOUT_S: Final = 10.0
DEFAULT_DEADLINE_S: Final = 30.0
#: The response-body bytes a whole run may hold at once, by default (the CLI's fleet):
#: what its probes are reading and what waits to be assessed, however many servers.
#: 1 GiB is 128 requests at the default cap: two for each of the 64 servers a fleet
#: reads at once by default, what it keeps in flight on average (fewer throttled it).
DEFAULT_BODY_BUDGET_BYTES: Final = 1024 * 1024 * 1024

_CORE_ROUTES = (Route.VERSION, Route.MODELS, Route.HEALTH)
#: The most connections (sockets) one :func:`probe` holds at once: the routes read
#: between the opening and the closing ``/metrics`` reads, each on its own connection
#: (the two opening reads use two, which the routes then reuse).  A fleet of N probes at
#: once may hold N times this many.
CONNECTIONS_PER_PROBE: Final = len(PROBE_ROUTES) - 1


def _target_parts(target: str) -> tuple[str, str]:
    """``(scheme://host:port, raw path)`` of a cleaned target."""
    scheme, _, rest = target.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority}", slash + path


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
class RouteClient:
    """The closed-route HTTP layer: GET one probe-readable :class:`Route`, nothing else.

    ``client`` is a :class:`ProbeClient` (the probe's own connections) or an
    :class:`httpx.AsyncClient` (one with no auth and no request hooks)."""

    def __init__(
        self,
        client: ProbeClient | httpx.AsyncClient,
        target: str,
        *,
        max_body_bytes: int,
        timeout_s: float,
        deadline: float,
        headers: dict[str, str] | None = None,
        secrets: tuple[str, ...] = (),
        body_budget: tuple[BodyBudget, _Claim] | None = None,
    ) -> None:
        self._client = client
        #: The run's body budget and this probe's part of it (:func:`probe` opens it).
        self._budget = body_budget
        self._secrets = secrets
        self._target = target
        self._max_body_bytes = max_body_bytes
        self._timeout_s = timeout_s
        self._deadline = deadline
        self._headers = dict(headers or {})
        # Parsed once here, not once a request.
        self._origin, self._base_path = _target_parts(target)
        self._address = server_address(target) if isinstance(client, ProbeClient) else None
        self._header_list = list(self._headers.items())
        #: The connection that read the last answer (the probe's own connections only).
        self._last_connection: object = None

    async def get(
        self, route: Route, role: ExchangeRole = ExchangeRole.ROUTE, *, via: Via = "any"
    ) -> Exchange:
        """GET ``route`` and return the exchange, whatever happened.

        ``via`` chooses the connection (:data:`Via`) on the probe's own connections; a
        caller's :class:`httpx.AsyncClient` chooses its own."""
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
            elif isinstance(self._client, ProbeClient):
                sent = await self._send_wire(self._client, path, budget, via, sends)
            else:
                sent = await self._send_httpx(self._client, path, budget)
        except BaseException:
            if self._budget is not None:
                self._budget[0]._give_back(reserved)
            raise
        status, headers, body, transport, detail = sent
        if body is not None:
            kept = scrub_body(body, secrets=self._secrets)
            if kept != body:
                body = kept
                detail = "the API key was in the body and is replaced by ***"
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

    async def _send_wire(
        self, client: ProbeClient, path: str, budget: float, via: Via, sends: Sends
    ) -> _Sent:
        assert self._address is not None  # noqa: S101 - set with a ProbeClient
        on, self._last_connection = self._last_connection, None
        try:
            async with asyncio.timeout(budget):
                reply = await client.get(
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

    async def _send_httpx(self, client: httpx.AsyncClient, path: str, budget: float) -> _Sent:
        import httpx

        # The request's own headers (the key among them), never the client's: a client
        # shared by every target of a run carries no target's key.
        request = client.build_request(
            "GET",
            self._origin + path,
            headers=self._headers,
            timeout=httpx.Timeout(self._timeout_s),
        )
        if request.url.raw_path != path.encode("ascii") or str(
            request.url.copy_with(raw_path=b"")
        ).rstrip("/") != self._origin.rstrip("/"):
            msg = "the request line would not be the closed route's own target"
            raise InputError(msg)
        status: int | None = None
        headers: tuple[tuple[str, str], ...] = ()
        try:
            async with asyncio.timeout(budget):
                response = await client.send(request, stream=True, follow_redirects=False)
                try:
                    status = response.status_code
                    headers = tuple(response.headers.items())
                    declared = response.headers.get("content-length", "")
                    if declared_too_large(declared, self._max_body_bytes):
                        return status, headers, None, Transport.TOO_LARGE, self._too_large()
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_raw():
                        size += len(chunk)
                        if size > self._max_body_bytes:
                            return status, headers, None, Transport.TOO_LARGE, self._too_large()
                        chunks.append(chunk)
                    return status, headers, b"".join(chunks), Transport.ANSWERED, ""
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException) as exc:
            detail = f"no complete answer within {budget:.3g}s ({type(exc).__name__})"
            return status, headers, None, Transport.TIMED_OUT, detail
        except httpx.LocalProtocolError as exc:
            # Raised before anything is sent; its text can quote request headers (the key).
            return (
                None,
                (),
                None,
                Transport.UNREACHABLE,
                f"{type(exc).__name__} {NOT_SENT_DETAILS[1]}",
            )
        except httpx.TransportError as exc:
            return None, (), None, Transport.UNREACHABLE, f"{type(exc).__name__}: {exc}"


#: The largest CA file read (a system bundle is about 250 KB).
_CA_FILE_LIMIT = 16 * 1024 * 1024
_ASCII = bytes(range(128)) + b"?" * 128


def _ssl_verify(*, verify: bool | str | ssl.SSLContext) -> bool | ssl.SSLContext:
    """``verify`` as httpx takes it: a CA file or directory becomes an SSL context."""
    if isinstance(verify, str):
        from pathlib import Path

        from vllm_evidence.capture._files import read_named_file

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
    return verify


def new_client(*, verify: bool | str | ssl.SSLContext = True) -> ProbeClient:
    """One client for every target of a run: one SSL context, connections kept per server.

    ``verify`` is TLS certificate verification: ``True`` (the CA bundle httpx uses),
    ``False``, a CA file or directory, or an :class:`ssl.SSLContext` (a private CA).  A
    CA file is read here (an :class:`InputError` if it cannot be); the SSL context is
    built once, on the first ``https`` target, however many servers are read.  A server's
    connections are closed when the last :func:`probe` of it through this client ends, so
    what is open is bounded by how many servers are read at once
    (:data:`CONNECTIONS_PER_PROBE` sockets each: keep that many within the process's
    open-file limit).  The client carries no
    API key (each request carries its own), keeps no cookie, follows no redirect and
    reads no proxy or certificate settings from the environment; each :func:`probe`
    bounds its own requests.  Close it (``async with``) when done.
    """
    return ProbeClient(
        verify=_ssl_verify(verify=verify), connections_per_server=len(PROBE_ROUTES) + 1
    )


def _check_client(client: object) -> None:
    """Refuse a client that could change a request after the route check."""
    if isinstance(client, ProbeClient):
        return
    import httpx

    if not isinstance(client, httpx.AsyncClient):
        msg = "client must be a ProbeClient (new_client()) or an httpx.AsyncClient"
        raise InputError(msg)
    if client.auth is not None or client.event_hooks["request"]:
        msg = (
            "the probe's client must have no auth and no request hooks: either could "
            "change a request after its line is checked against the closed route set "
            "(use vllm_evidence.capture.http.new_client())"
        )
        raise InputError(msg)


async def probe(
    url: str,
    *,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    deadline: float = DEFAULT_DEADLINE_S,
    development_routes: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    verify: bool | str | ssl.SSLContext = True,
    client: ProbeClient | httpx.AsyncClient | None = None,
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

    ``timeout`` bounds each request and ``deadline`` the whole batch (seconds).
    ``development_routes`` adds ``/server_info`` (both forms) and ``/get_world_size``.
    ``verify`` is TLS certificate verification (on by default; a CA file or directory or
    an :class:`ssl.SSLContext` for a private CA).  ``client`` is an
    :class:`httpx.AsyncClient` shared with other probes of the same run (best made by
    :func:`new_client`, whose ``verify`` then applies instead; any other must have no
    auth and no request hooks); without one, a client is made for this probe and closed.
    ``body_budget`` is a :class:`BodyBudget` shared by every probe of a run: the bytes of
    their bodies held at once stay within it (a request waits, before it is sent, until
    it fits); the caller gives each returned batch's bytes back with
    :meth:`BodyBudget.release` once done with it.  The returned batch carries its
    request log: :meth:`CaptureBatch.request_lines` is ``(method, path)`` of every
    request put on the wire.  Raises :class:`InputError` for
    a URL that is not one; every other failure is an exchange's outcome, never an
    exception.
    """
    target = clean_target(url)
    if not all(math.isfinite(v) and v > 0 for v in (timeout, deadline, max_body_bytes)):
        msg = "timeout, deadline and max_body_bytes must be positive finite numbers"
        raise InputError(msg)
    headers = {"Accept": "*/*", "Accept-Encoding": "identity", "User-Agent": "vllm-evidence"}
    if api_key is not None and not _TOKEN_RE.fullmatch(api_key):
        msg = "the API key must be printable ASCII without spaces (its value is not shown)"
        raise InputError(msg)
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
        # A server may reflect the key anywhere: nothing this process renders or saves
        # from now on carries it (vllm_evidence._scrub).
        remember(api_key)
    if client is not None:
        _check_client(client)
    routes = [
        r
        for r in PROBE_ROUTES
        if r is not Route.METRICS and (r in _CORE_ROUTES or development_routes)
    ]
    secrets = () if api_key is None else (api_key,)
    share: tuple[BodyBudget, _Claim] | None = None
    if body_budget is not None:
        # The four /metrics reads and the routes: this probe's worst case.
        requests = 4 + len(routes)
        share = body_budget, body_budget._open(requests, _reservation(max_body_bytes, secrets))
    end = time.monotonic() + deadline

    async def read(shared: ProbeClient | httpx.AsyncClient) -> CaptureBatch:
        layer = RouteClient(
            shared,
            target,
            max_body_bytes=max_body_bytes,
            timeout_s=timeout,
            deadline=end,
            headers=headers,
            secrets=secrets,
            body_budget=share,
        )
        opening = await layer.get(Route.METRICS, ExchangeRole.BRACKET_OPEN)
        opening_twin = await layer.get(Route.METRICS, ExchangeRole.BRACKET_OPEN, via="new")
        middle = await asyncio.gather(*(layer.get(r) for r in routes))
        closing = await layer.get(Route.METRICS, ExchangeRole.BRACKET_CLOSE)
        closing_twin = await layer.get(Route.METRICS, ExchangeRole.BRACKET_CLOSE, via="same")
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

    if share is None:
        return await _read_with(read, client, target, verify=verify)
    try:
        batch = await _read_with(read, client, target, verify=verify)
    except BaseException:
        share[0]._abandon(share[1])
        raise
    share[0]._finish(share[1], batch)
    return batch


async def _read_with(
    read: Callable[[ProbeClient | httpx.AsyncClient], Awaitable[CaptureBatch]],
    client: ProbeClient | httpx.AsyncClient | None,
    target: str,
    *,
    verify: bool | str | ssl.SSLContext,
) -> CaptureBatch:
    """``read`` through ``client``, or a client of its own (made and closed here)."""
    if client is None:
        async with new_client(verify=verify) as own:
            return await read(own)
    if not isinstance(client, ProbeClient):
        return await read(client)
    address = server_address(target)
    client.acquire(address)
    try:
        return await read(client)
    finally:
        client.release(address)


def probe_sync(
    url: str,
    *,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    deadline: float = DEFAULT_DEADLINE_S,
    development_routes: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    verify: bool | str | ssl.SSLContext = True,
    client: ProbeClient | httpx.AsyncClient | None = None,
) -> CaptureBatch:
    """:func:`probe`, run to completion on a fresh event loop (same parameters, same
    batch with its :meth:`~CaptureBatch.request_lines`).  A shared ``client`` must not
    have been used on another event loop."""
    return asyncio.run(
        probe(
            url,
            api_key=api_key,
            timeout=timeout,
            deadline=deadline,
            development_routes=development_routes,
            max_body_bytes=max_body_bytes,
            verify=verify,
            client=client,
        )
    )
