"""The probe's own HTTP/1.1 connections: GET only, over asyncio streams, parsed by h11.

A fleet probe is bound by CPU per server, and nearly all of it was the client stack
(httpx, httpcore, anyio: URL models, request and response objects, cancel scopes and
stream wrappers for each of a probe's nine requests; ~12-14 ms a server on two shared
cores).  What the probe needs is narrow: one fixed request line per closed route, a few
fixed headers, a status, headers and a capped body.  :class:`ProbeClient` writes that
request itself, lets ``h11`` (the HTTP/1.1 state machine httpcore also uses) read the
answer, keeps connections alive per server, and builds its SSL context once, on the first
``https`` target (none at all for a fleet of ``http`` servers).

It reads no proxy or certificate settings from the environment, keeps no cookies and
follows no redirects: nothing it is not told.  Hostile servers: a response head is
bounded (:data:`MAX_HEAD_BYTES`), a body is cut off at the caller's cap, and a
connection that misbehaved in any way is closed, never reused.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Final, final

import h11

from vllm_evidence.errors import InputError

__all__ = [
    "MAX_HEAD_BYTES",
    "ProbeClient",
    "Reply",
    "ServerAddress",
    "declared_too_large",
    "server_address",
]

#: The most bytes of an unfinished response head kept (h11 refuses the answer once more
#: is buffered without the head's end; a head that ends within the next read can pass,
#: so no head takes more than this and one read).
MAX_HEAD_BYTES: Final = 64 * 1024

#: How much one read takes from the socket.
_READ_BYTES: Final = 64 * 1024

_DEFAULT_PORT: Final = {"http": 80, "https": 443}


def declared_too_large(content_length: str, max_body_bytes: int) -> bool:
    """Whether a ``Content-Length`` value declares a body past the cap (read without
    converting a number of more than 15 digits; a value that is no number declares
    nothing and the body is read up to the cap)."""
    return (
        content_length.isascii()
        and content_length.isdigit()
        and (len(content_length) > 15 or int(content_length) > max_body_bytes)
    )


@final
class ServerAddress:
    """Where one cleaned target's requests go: scheme, host, port and the ``Host`` header."""

    __slots__ = ("authority", "host", "port", "scheme")

    def __init__(self, scheme: str, host: str, port: int, authority: str) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.authority = authority

    @property
    def key(self) -> tuple[str, str, int]:
        """The pool key: connections are shared by targets with the same server."""
        return (self.scheme, self.host, self.port)


def server_address(target: str) -> ServerAddress:
    """The address of a target :func:`~vllm_evidence.capture._target.clean_target` made
    (``scheme://host[:port][/path]``, host ASCII, an IPv6 host in brackets)."""
    scheme, _, rest = target.partition("://")
    authority = rest.partition("/")[0]
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port_text = tail.removeprefix(":")
    else:
        host, colon, port_text = authority.rpartition(":")
        if not colon:
            host, port_text = authority, ""
    if scheme not in _DEFAULT_PORT or not host or not (port_text.isdigit() or not port_text):
        msg = f"not a cleaned target: {target!r}"
        raise InputError(msg)
    port = int(port_text) if port_text else _DEFAULT_PORT[scheme]
    return ServerAddress(scheme, host, port, authority)


@final
class Reply:
    """What one GET read: status, headers (names lower-case, repeats joined by ``, ``
    as httpx joins them) and the body, or ``None`` with ``too_large`` when the body
    passed the cap (nothing of it is kept)."""

    __slots__ = ("body", "headers", "status", "too_large")

    def __init__(
        self,
        status: int,
        headers: tuple[tuple[str, str], ...],
        body: bytes | None,
        *,
        too_large: bool,
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.too_large = too_large


class _Connection:
    __slots__ = ("http", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)


class _StaleConnectionError(Exception):
    """A kept-alive connection the server had closed before this request reached it."""


def _joined(raw: list[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    """Header pairs decoded as httpx decodes them (names lower-case, values latin-1 or
    UTF-8 when they are valid UTF-8), repeated names joined with ``, `` in first order."""
    merged: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("ascii", "replace").lower()
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = value.decode("latin-1")
        merged[key] = f"{merged[key]}, {text}" if key in merged else text
    return tuple(merged.items())


@final
class ProbeClient:
    """Connections for one probe run, shared by every target of it.

    ``verify`` is TLS certificate verification: ``True`` (the CA bundle httpx uses,
    ``certifi``'s), ``False``, or an :class:`ssl.SSLContext` (a private CA).  The context
    is built once, on the first ``https`` target.  Up to ``connections_per_server``
    connections per server are kept alive between requests; a server's are closed when
    the last probe using it ends (:meth:`release`), so what is open is bounded by the
    servers being read at once, not by the servers read so far.  Use it as an async
    context manager, or :meth:`aclose` it.
    """

    def __init__(
        self, *, verify: bool | ssl.SSLContext = True, connections_per_server: int = 9
    ) -> None:
        self._verify = verify
        self._context: ssl.SSLContext | None = (
            verify if isinstance(verify, ssl.SSLContext) else None
        )
        self._per_server = connections_per_server
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._users: dict[tuple[str, str, int], int] = {}
        self._closing: set[asyncio.Future[None]] = set()
        self._closed = False

    async def __aenter__(self) -> ProbeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _ssl_context(self) -> ssl.SSLContext:
        if self._context is None:
            if self._verify:
                try:
                    import certifi
                except ImportError:  # pragma: no cover - certifi comes with httpx
                    context = ssl.create_default_context()
                else:
                    context = ssl.create_default_context(cafile=certifi.where())
            else:
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._context = context
        return self._context

    @property
    def open_servers(self) -> int:
        """How many servers have connections kept alive now."""
        return sum(1 for kept in self._idle.values() if kept)

    def acquire(self, address: ServerAddress) -> None:
        """A probe of ``address`` begins."""
        if self._closed:
            msg = "this ProbeClient is closed"
            raise InputError(msg)
        self._users[address.key] = self._users.get(address.key, 0) + 1

    def _discard(self, connection: _Connection) -> None:
        """Close ``connection``; :meth:`aclose` waits until its socket is closed."""
        connection.writer.close()
        waiting = asyncio.ensure_future(connection.writer.wait_closed())
        self._closing.add(waiting)
        waiting.add_done_callback(self._closed_one)

    def _closed_one(self, waiting: asyncio.Future[None]) -> None:
        self._closing.discard(waiting)
        if not waiting.cancelled():
            waiting.exception()  # a reset while closing is no news: retrieved, dropped

    def release(self, address: ServerAddress) -> None:
        """A probe of ``address`` ended: close its connections if no other probe uses them."""
        left = self._users.get(address.key, 1) - 1
        if left > 0:
            self._users[address.key] = left
            return
        self._users.pop(address.key, None)
        for connection in self._idle.pop(address.key, []):
            self._discard(connection)

    async def aclose(self) -> None:
        """Close every connection and wait until their sockets are closed; the client
        takes no more probes."""
        self._closed = True
        idle, self._idle = self._idle, {}
        self._users.clear()
        for kept in idle.values():
            for connection in kept:
                self._discard(connection)
        if self._closing:
            await asyncio.wait(list(self._closing))

    async def _connect(self, address: ServerAddress) -> _Connection:
        if address.scheme == "https":
            reader, writer = await asyncio.open_connection(
                address.host,
                address.port,
                ssl=self._ssl_context(),
                server_hostname=address.host,
                limit=_READ_BYTES,
            )
        else:
            reader, writer = await asyncio.open_connection(
                address.host, address.port, limit=_READ_BYTES
            )
        return _Connection(reader, writer)

    async def get(
        self,
        address: ServerAddress,
        path: str,
        headers: list[tuple[str, str]],
        *,
        max_body_bytes: int,
    ) -> Reply:
        """GET ``path`` (already checked: the base path then a closed route's target)
        from ``address`` with ``headers`` after ``Host``.  Raises :class:`OSError`,
        :class:`h11.ProtocolError` or :class:`EOFError` when no answer was read; the
        caller bounds the time."""
        request = h11.Request(
            method="GET", target=path, headers=[("Host", address.authority), *headers]
        )
        kept = self._idle.get(address.key)
        while kept:
            connection = kept.pop()
            try:
                return await self._exchange(connection, address, request, max_body_bytes)
            except _StaleConnectionError:
                continue
        connection = await self._connect(address)
        try:
            return await self._exchange(connection, address, request, max_body_bytes)
        except _StaleConnectionError:
            msg = "the server closed the connection without answering"
            raise EOFError(msg) from None

    async def _exchange(
        self,
        connection: _Connection,
        address: ServerAddress,
        request: h11.Request,
        max_body_bytes: int,
    ) -> Reply:
        """One request and its answer on ``connection``; the connection is kept for the
        next request only when both sides finished the message cleanly."""
        http = connection.http
        done = False
        received = False
        try:
            connection.writer.write(http.send(request) + http.send(h11.EndOfMessage()))
            status = 0
            headers: tuple[tuple[str, str], ...] = ()
            chunks: list[bytes] = []
            size = 0
            while True:
                event = http.next_event()
                if event is h11.NEED_DATA:
                    try:
                        data = await connection.reader.read(_READ_BYTES)
                    except ConnectionError:
                        if received:
                            raise
                        data = b""
                    if not data and not received:
                        # Nothing came back: a kept-alive connection the server had
                        # closed (the caller retries once on a new one), or a server
                        # that hung up on a new one (an error there).
                        raise _StaleConnectionError
                    received = received or bool(data)
                    http.receive_data(data)
                    continue
                if isinstance(event, h11.InformationalResponse):
                    continue
                if isinstance(event, h11.Response):
                    status = event.status_code
                    headers = _joined(list(event.headers))
                    if declared_too_large(dict(headers).get("content-length", ""), max_body_bytes):
                        return Reply(status, headers, None, too_large=True)
                    continue
                if isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > max_body_bytes:
                        return Reply(status, headers, None, too_large=True)
                    chunks.append(bytes(event.data))
                    continue
                if isinstance(event, h11.EndOfMessage):
                    done = True
                    return Reply(status, headers, b"".join(chunks), too_large=False)
                # h11.ConnectionClosed: the server hung up before the answer ended.
                msg = "the server closed the connection before the answer ended"
                raise EOFError(msg)
        finally:
            if done and http.our_state is h11.DONE and http.their_state is h11.DONE:
                http.start_next_cycle()
                kept = self._idle.setdefault(address.key, [])
                if len(kept) < self._per_server and not self._closed:
                    kept.append(connection)
                else:
                    self._discard(connection)
            else:
                self._discard(connection)
