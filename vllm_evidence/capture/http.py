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
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal, final

from vllm_evidence._scrub import remember, scrub_body
from vllm_evidence.capture._target import clean_target
from vllm_evidence.capture._wire import (
    LocalProtocolError,
    ProbeClient,
    ProtocolError,
    declared_too_large,
    server_address,
)
from vllm_evidence.capture.batch import (
    NOT_SENT_DETAILS,
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
    import httpx

__all__ = [
    "CONNECTIONS_PER_PROBE",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_TIMEOUT_S",
    "ProbeClient",
    "RouteClient",
    "clean_target",
    "new_client",
    "probe",
    "probe_sync",
]

DEFAULT_MAX_BODY_BYTES: Final = 8 * 1024 * 1024
DEFAULT_TIMEOUT_S: Final = 10.0
DEFAULT_DEADLINE_S: Final = 30.0

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
    ) -> None:
        self._client = client
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
        started_ns = time.monotonic_ns()
        started_at = _utc_now()
        budget = min(self._timeout_s, self._deadline - time.monotonic())
        if budget <= 0:
            sent: _Sent = (None, (), None, Transport.TIMED_OUT, NOT_SENT_DETAILS[0])
        elif isinstance(self._client, ProbeClient):
            sent = await self._send_wire(self._client, path, budget, via)
        else:
            sent = await self._send_httpx(self._client, path, budget)
        status, headers, body, transport, detail = sent
        if body is not None:
            kept = scrub_body(body, secrets=self._secrets)
            if kept != body:
                body = kept
                detail = "the API key was in the body and is replaced by ***"
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

    def _too_large(self) -> str:
        return f"body larger than {self._max_body_bytes} bytes"

    async def _send_wire(self, client: ProbeClient, path: str, budget: float, via: Via) -> _Sent:
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


def _ssl_verify(*, verify: bool | str | ssl.SSLContext) -> bool | ssl.SSLContext:
    """``verify`` as httpx takes it: a CA file or directory becomes an SSL context."""
    if isinstance(verify, str):
        from pathlib import Path

        where = Path(verify)
        try:
            if where.is_dir():
                return ssl.create_default_context(capath=verify)
            return ssl.create_default_context(cafile=verify)
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
    The returned batch carries its request log: :meth:`CaptureBatch.request_lines` is
    ``(method, path)`` of every request put on the wire.  Raises :class:`InputError` for
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
    end = time.monotonic() + deadline

    async def read(shared: ProbeClient | httpx.AsyncClient) -> CaptureBatch:
        layer = RouteClient(
            shared,
            target,
            max_body_bytes=max_body_bytes,
            timeout_s=timeout,
            deadline=end,
            headers=headers,
            secrets=() if api_key is None else (api_key,),
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
