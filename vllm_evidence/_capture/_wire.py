"""The probe's own HTTP/1.1 connections: GET only, read as the bytes arrive.

A fleet probe is bound by CPU per server, and nearly all of it was a general client
stack (httpx, httpcore, anyio: URL models, request and response objects, cancel scopes
and stream wrappers for each of a probe's nine requests; ~12-14 ms a server on two
shared cores, ~5 ms with this module).  What the probe needs is narrow: one fixed
request line per closed route, a few fixed headers, a status, headers and a capped
body.  :class:`ProbeClient` writes that request itself, reads the answer as it arrives
with :class:`~vllm_evidence._capture._http11.ResponseReader` (h11's grammar, without its
general state machine; no stream objects either: the bytes go from the event loop's
callback straight to the reader), keeps connections alive per server, and builds its
SSL context once, on the first ``https`` target (none at all for a fleet of ``http``
servers).  A plain connection is a socket the event loop watches for this module (half
the CPU of an asyncio transport); TLS, and a loop that cannot watch sockets, go through
transports.

It reads no proxy or certificate settings from the environment, keeps no cookies and
follows no redirects: nothing it is not told.  No code of a caller's stands between it
and the server: a TLS connection is wrapped by the standard :class:`ssl.SSLObject`,
whatever a caller's :class:`ssl.SSLContext` has had set on it since
(:class:`_StandardTLS`).  Hostile servers: a response head is bounded
(:data:`MAX_HEAD_BYTES`), a body is cut off at the caller's cap, and a connection that
misbehaved in any way is closed, never reused.

**One retry, only on a reused connection.**  A server may close a kept-alive connection
between two requests (an idle timeout), reset it, or stop answering on it (a balancer
that forgot it).  A GET sent on a reused connection that fails before any byte of its
answer arrives — the connection ended or was reset, or no byte came within
:data:`REUSE_SILENCE_S` — is sent once more, on a new connection.  Every request here is
an idempotent GET, and none was answered, so nothing is read twice.  A GET on a new
connection is never retried: its failure is the server's answer (a server that resets
every new connection is unreachable, once per request).  :class:`Sends` counts how many
times a request went on the wire, so that the request log says so.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any, Final, cast, final

from vllm_evidence._capture._http11 import (
    LocalProtocolError,
    ProtocolError,
    ResponseReader,
    declared_too_large,
    header_line_ok,
    request_bytes,
)
from vllm_evidence.errors import InputError

__all__ = [
    "MAX_HEAD_BYTES",
    "REUSE_SILENCE_S",
    "LocalProtocolError",
    "ProbeClient",
    "ProtocolError",
    "Reply",
    "Sends",
    "ServerAddress",
    "declared_too_large",
    "default_context",
    "header_line_ok",
    "server_address",
]

#: The longest response head (and chunk-size or trailer line) read; a longer one is
#: refused.
MAX_HEAD_BYTES: Final = 64 * 1024

#: How long a request sent on a reused kept-alive connection waits for the first byte of
#: its answer before the connection is taken for dead and the request is sent once more
#: on a new connection (seconds).  A front door that answered on this connection moments
#: ago answers a GET's first byte in milliseconds; a slower one costs one repeated GET,
#: logged as such, and its new connection waits for the rest of the request's time.
REUSE_SILENCE_S: Final = 1.0

_DEFAULT_PORT: Final = {"http": 80, "https": 443}


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
    """The address of a target :func:`~vllm_evidence._capture._target.clean_target` made
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

    __slots__ = ("body", "connection", "headers", "status", "too_large")

    def __init__(
        self,
        status: int,
        headers: tuple[tuple[str, str], ...],
        body: bytes | None,
        *,
        too_large: bool,
        connection: object = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.too_large = too_large
        #: The connection that read it (opaque: what ``ProbeClient.get(on=...)`` takes).
        self.connection = connection


class _StaleConnectionError(Exception):
    """Nothing at all came back on a connection: it ended, was reset (``error``), or
    stayed silent past the reuse deadline (``silent``)."""

    def __init__(self, error: Exception | None = None, *, silent: bool = False) -> None:
        super().__init__()
        self.error = error
        self.silent = silent


@final
class Sends:
    """How many times one :meth:`ProbeClient.get` put its request on the wire: 0 (it
    never left: no connection, or refused before sending), 1, or 2 (a reused
    connection failed before answering and the request went again on a new one).
    The caller passes one in and reads it after the call, whatever the call raised
    (a timeout included)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


#: How much one read takes from a plain socket (as asyncio's transports read).  Reads
#: land in one buffer per :class:`ProbeClient`, reused: a fresh 256 KiB buffer a read
#: (``sock.recv``) is past glibc's mmap threshold, so each was mapped, shrunk with
#: ``mremap`` and unmapped again, its pages faulted in afresh (a fleet of 200 from the
#: command line: 14-15 K page faults, now 9 K).
_READ_SIZE: Final = 256 * 1024
#: Created non-blocking where the platform can (Linux): no ``ioctl`` per socket after.
_NON_BLOCKING: Final = getattr(socket, "SOCK_NONBLOCK", 0)


class _Link:
    """What a connection does with what arrives: hands it to the current request's reader
    and wakes the request when its answer is complete, or failed.  Two kinds below: a
    plain socket the event loop watches, and an asyncio transport (TLS)."""

    def __init__(self) -> None:
        self.reader: ResponseReader | None = None
        self.waiter: asyncio.Future[None] | None = None
        #: The server spoke out of turn, closed its side, or the connection failed:
        #: it carries no further request.
        self.broken = False

    def intact(self) -> bool:
        """Whether the connection can carry a request (its callbacks may change this at
        any await: a method, so that no type checker holds on to an earlier answer)."""
        raise NotImplementedError

    def send(self, request: bytes) -> None:
        """Put ``request`` on the wire (what does not fit now goes when it can)."""
        raise NotImplementedError

    def close(self) -> asyncio.Future[None] | None:
        """Close the connection; returns what to wait on until its socket is closed."""
        raise NotImplementedError

    def _received(self, data: bytes | memoryview) -> None:
        reader = self.reader
        if reader is None or reader.done:
            self.broken = True  # bytes nobody asked for
            return
        try:
            if reader.feed(data):
                self._wake(None)
        except ProtocolError as exc:
            self.broken = True
            self._wake(exc)

    def _ended(self, exc: Exception | None) -> None:
        """The server's side ended (cleanly, or with ``exc``) while a request may wait."""
        self.broken = True
        reader = self.reader
        if reader is None or reader.done:
            return
        if exc is not None and reader.received:
            self._wake(exc)
            return
        try:
            complete = reader.feed_eof()
        except ProtocolError as error:
            self._wake(error)
            return
        # Nothing at all came back: a kept-alive connection the server had closed or
        # reset (the caller retries once on a new one), or a server that hung up on a
        # new one (its answer).
        self._wake(None if complete else _StaleConnectionError(exc))

    def went_silent(self, reader: ResponseReader) -> None:
        """The reuse deadline passed: if no byte of ``reader``'s answer came, the
        connection is taken for dead (closed by the caller, never reused)."""
        if self.reader is reader and not reader.received:
            self.broken = True
            self._wake(_StaleConnectionError(silent=True))

    def _wake(self, exc: BaseException | None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if exc is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(exc)


@final
class _SocketConnection(_Link):
    """A plain connection: a non-blocking socket whose readiness the event loop reports
    straight to this object.  An asyncio transport and protocol cost twice the CPU per
    connection (the transport object, its buffers and the callbacks scheduled to set it
    up), and a fleet probe opens two connections a server (up to six when its routes
    stall)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, scratch: memoryview
    ) -> None:
        super().__init__()
        self._loop = loop
        self._sock: socket.socket | None = sock
        self._fd = sock.fileno()
        #: Where reads land (shared by the client's connections: the reader copies what
        #: it keeps before the next read, and every read runs on the loop's thread).
        self._scratch = scratch
        self._unsent = bytearray()  # what the socket did not take yet
        loop.add_reader(self._fd, self._read_ready)

    def intact(self) -> bool:
        return not self.broken and self._sock is not None

    def send(self, request: bytes) -> None:
        sock = self._sock
        if sock is None:
            return
        if self._unsent:
            self._unsent += request
            return
        try:
            sent = sock.send(request)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._ended(exc)
            return
        if sent < len(request):
            self._unsent += request[sent:]
            self._loop.add_writer(self._fd, self._write_ready)

    def _write_ready(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            sent = sock.send(self._unsent)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._loop.remove_writer(self._fd)
            self._unsent.clear()
            self._ended(exc)
            return
        del self._unsent[:sent]
        if not self._unsent:
            self._loop.remove_writer(self._fd)

    def _read_ready(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            count = sock.recv_into(self._scratch)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._stop_reading()
            self._ended(exc)
            return
        if count:
            with self._scratch[:count] as data:
                self._received(data)
        else:
            self._stop_reading()
            self._ended(None)

    def _stop_reading(self) -> None:
        self._loop.remove_reader(self._fd)

    def close(self) -> None:
        self.broken = True
        sock, self._sock = self._sock, None
        if sock is not None:
            self._loop.remove_reader(self._fd)
            if self._unsent:
                self._loop.remove_writer(self._fd)
                self._unsent.clear()
            sock.close()


@final
class _TransportConnection(_Link, asyncio.Protocol):
    """A connection through an asyncio transport: TLS, and any event loop that cannot
    watch a socket for the probe (one without ``add_reader``)."""

    def __init__(self) -> None:
        super().__init__()
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def intact(self) -> bool:
        return not self.broken and self.transport is not None

    def send(self, request: bytes) -> None:
        if self.transport is not None:
            self.transport.write(request)

    def close(self) -> asyncio.Future[None] | None:
        self.broken = True
        if self.transport is not None:
            self.transport.close()
        return None if self.closed.done() else self.closed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though not always an asyncio.Transport instance: uvloop's
        # (the loop under uvicorn, where orchestration code often runs) is its own type.
        self.transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        self._received(data)

    def eof_received(self) -> bool:
        self._ended(None)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended(exc)
        if not self.closed.done():
            self.closed.set_result(None)


_Connection = _SocketConnection | _TransportConnection


def _literal_address(host: str, port: int) -> list[tuple[int, tuple[Any, ...]]]:
    """``host`` as the socket address of an IP literal (no name lookup), or nothing."""
    try:
        socket.inet_pton(socket.AF_INET, host)
    except OSError:
        pass
    else:
        return [(socket.AF_INET, (host, port))]
    try:
        socket.inet_pton(socket.AF_INET6, host)
    except OSError:
        return []
    return [(socket.AF_INET6, (host, port, 0, 0))]


async def _open_socket(
    loop: asyncio.AbstractEventLoop, host: str, port: int, *, watch: bool
) -> socket.socket:
    """A connected non-blocking TCP socket to ``host``: each address it resolves to is
    tried in turn, failing as :meth:`asyncio.loop.create_connection` fails.  ``watch``:
    wait for the connection by watching the socket (:func:`_connect_watched`); raises
    :class:`NotImplementedError` where the loop cannot."""
    addresses = _literal_address(host, port)
    if not addresses:
        resolved = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [(family, address) for family, _, _, _, address in resolved]
        if not addresses:
            msg = "getaddrinfo() returned empty list"
            raise OSError(msg)
    failures: list[OSError] = []
    for family, address in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM | _NON_BLOCKING, socket.IPPROTO_TCP)
        try:
            if not _NON_BLOCKING:
                sock.setblocking(False)  # noqa: FBT003 - the socket API
            if watch:
                await _connect_watched(loop, sock, address)
            else:
                await loop.sock_connect(sock, address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            sock.close()
            failures.append(exc)
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    if len(failures) == 1 or all(str(exc) == str(failures[0]) for exc in failures):
        raise failures[0]
    msg = f"Multiple exceptions: {', '.join(str(exc) for exc in failures)}"
    raise OSError(msg)


async def _connect_watched(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, address: tuple[Any, ...]
) -> None:
    """Connect ``sock``, waiting until it is writable: what ``loop.sock_connect`` does
    (with the same error), without its second address check, callback partials and
    done-callbacks (a tenth of a fleet probe's CPU went there)."""
    fd = sock.fileno()
    writable: asyncio.Future[None] = loop.create_future()
    # Watched before connecting: a loop that cannot watch sockets says so before a
    # connection is attempted.
    loop.add_writer(fd, _settle, writable)
    try:
        try:
            sock.connect(address)
        except (BlockingIOError, InterruptedError):
            await writable
        else:
            return
    finally:
        loop.remove_writer(fd)
    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if error:
        raise OSError(error, f"Connect call failed {address}")


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def default_context(*, verify: bool) -> ssl.SSLContext:
    """A client SSL context: ``certifi``'s CA bundle and host names checked, or (``verify``
    false) no certificate check at all."""
    if verify:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@final
class _StandardTLS:
    """What the event loop's TLS protocol is given in place of the SSL context: it wraps
    each connection with the standard :class:`ssl.SSLObject`, and refuses to when the
    context is not the ssl module's own class or has an attribute set on it (its
    documented ``sslobject_class``, a ``wrap_bio`` of its own: either would put other
    code between the connection and the server's bytes).  Checked as each connection is
    made, so setting one after the session was made changes nothing either."""

    __slots__ = ("_context",)

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context

    def check(self) -> None:
        """Refuse a context that is no longer the ssl module's own (before any socket)."""
        context = self._context
        if type(context) is not ssl.SSLContext or vars(context):
            msg = "the SSL context was changed after it was given (an attribute set on it)"
            raise ssl.SSLError(msg)

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,  # noqa: FBT001, FBT002 - asyncio passes it so
        server_hostname: str | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        self.check()  # again: it may have changed while the connection was being made
        return ssl.SSLContext.wrap_bio(
            self._context,
            incoming,
            outgoing,
            server_side=server_side,
            server_hostname=server_hostname,
            session=session,
        )


@final
class ProbeClient:
    """Connections for one probe run, shared by every target of it.

    ``verify`` is TLS certificate verification: ``True`` (``certifi``'s CA bundle),
    ``False``, or an :class:`ssl.SSLContext` (a private CA, a client certificate).  The
    context is built once, on the first ``https`` target.  Up to ``connections_per_server``
    connections per server are kept alive between requests; a server's are closed when
    the last probe using it ends (:meth:`release`), so what is open is bounded by the
    servers being read at once, not by the servers read so far.  ``reuse_silence_s`` is
    how long a request on a reused connection waits for a first byte before it is sent
    again on a new connection (:data:`REUSE_SILENCE_S`).  Use it as an async context
    manager, or :meth:`aclose` it.
    """

    def __init__(
        self,
        *,
        verify: bool | ssl.SSLContext = True,
        connections_per_server: int = 9,
        reuse_silence_s: float | None = None,
    ) -> None:
        self._verify = verify
        self._reuse_silence_s = REUSE_SILENCE_S if reuse_silence_s is None else reuse_silence_s
        self._context: ssl.SSLContext | None = (
            verify if isinstance(verify, ssl.SSLContext) else None
        )
        self._per_server = connections_per_server
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._users: dict[tuple[str, str, int], int] = {}
        self._closing: set[asyncio.Future[None]] = set()
        self._closed = False
        #: Plain connections are sockets the loop watches, unless the loop cannot.
        self._watch_sockets = True
        self._scratch: memoryview | None = None

    async def __aenter__(self) -> ProbeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _ssl_context(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = default_context(verify=bool(self._verify))
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
        closed = connection.close()
        if closed is not None:
            self._closing.add(closed)
            closed.add_done_callback(self._closing.discard)

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
        loop = asyncio.get_running_loop()
        if address.scheme == "https":
            standard = _StandardTLS(self._ssl_context())
            standard.check()
            _, tls = await loop.create_connection(
                _TransportConnection,
                address.host,
                address.port,
                # asyncio's TLS protocol calls the context's wrap_bio, and nothing else
                ssl=cast("ssl.SSLContext", standard),
                server_hostname=address.host,
            )
            return tls
        if self._watch_sockets:
            watched: socket.socket | None = None
            try:
                watched = await _open_socket(loop, address.host, address.port, watch=True)
                if self._scratch is None:
                    self._scratch = memoryview(bytearray(_READ_SIZE))
                return _SocketConnection(loop, watched, self._scratch)
            except NotImplementedError:
                # A loop that cannot watch sockets (Windows' proactor): transports
                # from now on (a socket already connected is closed: a new one below).
                self._watch_sockets = False
                if watched is not None:
                    watched.close()
        sock = await _open_socket(loop, address.host, address.port, watch=False)
        try:
            _, plain = await loop.create_connection(_TransportConnection, sock=sock)
        except BaseException:
            sock.close()
            raise
        return plain

    async def get(
        self,
        address: ServerAddress,
        path: str,
        headers: list[tuple[str, str]],
        *,
        max_body_bytes: int,
        new_connection: bool = False,
        on: object = None,
        sends: Sends | None = None,
    ) -> Reply:
        """GET ``path`` (already checked: the base path then a closed route's target)
        from ``address`` with ``headers`` after ``Host``.  Raises :class:`OSError`,
        :class:`ProtocolError` (:class:`LocalProtocolError` before anything is sent) or
        :class:`EOFError` when no answer was read; the caller bounds the time.

        ``new_connection`` sends it on a connection opened for it (kept alive after,
        like any other); ``on`` (an earlier :class:`Reply`'s ``connection``) sends it on
        that connection when it is still kept alive and idle, else as usual.  What a
        balancer in front does with each: a per-connection one (a Kubernetes Service,
        an L4 balancer) chooses again for a new connection only; a per-request one
        (nginx, Envoy) chooses again for every request, on a kept-alive connection too.

        A request on a reused connection that gets no byte back (the connection ended,
        was reset, or stayed silent for ``reuse_silence_s``) is sent once more on a new
        connection; one on a new connection is never sent twice.  ``sends`` counts
        what went on the wire (:class:`Sends`).
        """
        request = request_bytes(path, address.authority, headers)
        count = sends if sends is not None else Sends()
        reused = self._idle_connection(address, on=on, new_connection=new_connection)
        if reused is not None:
            try:
                return await self._exchange(
                    reused, address, request, max_body_bytes, count, reused=True
                )
            except _StaleConnectionError:
                pass  # nothing came back: once more, on a new connection
        connection = await self._connect(address)
        try:
            return await self._exchange(
                connection, address, request, max_body_bytes, count, reused=False
            )
        except _StaleConnectionError as stale:
            if isinstance(stale.error, OSError):
                raise stale.error from None  # a reset: named as the socket named it
            msg = "the server closed the connection without answering"
            raise EOFError(msg) from None

    async def post_once(
        self,
        address: ServerAddress,
        path: str,
        headers: list[tuple[str, str]],
        json_body: bytes,
        *,
        max_body_bytes: int,
    ) -> Reply:
        """POST ``json_body`` to ``path`` on a connection opened for it and closed after:
        never on a kept-alive connection, never kept, and never sent twice (a POST is no
        idempotent read: a request that got no answer is not retried).  Raises as
        :meth:`get` does; the caller bounds the time."""
        request = request_bytes(path, address.authority, headers, json_body=json_body)
        connection = await self._connect(address)
        try:
            return await self._exchange(
                connection, address, request, max_body_bytes, Sends(), reused=False, keep=False
            )
        except _StaleConnectionError as stale:
            if isinstance(stale.error, OSError):
                raise stale.error from None
            msg = "the server closed the connection without answering"
            raise EOFError(msg) from None

    def _idle_connection(
        self, address: ServerAddress, *, on: object, new_connection: bool
    ) -> _Connection | None:
        """The kept-alive connection a request goes on (``on`` first), or ``None`` for a
        new one.  One already known to be closed is discarded here: nothing was sent on
        it, so taking the next is no retry."""
        kept = self._idle.get(address.key)
        if not kept:
            return None
        if on is not None and any(c is on for c in kept):
            same = next(c for c in kept if c is on)
            kept.remove(same)
            if same.intact():
                return same
            self._discard(same)
        while kept and not new_connection:
            connection = kept.pop()
            if connection.intact():
                return connection
            self._discard(connection)
        return None

    async def _exchange(
        self,
        connection: _Connection,
        address: ServerAddress,
        request: bytes,
        max_body_bytes: int,
        sends: Sends,
        *,
        reused: bool,
        keep: bool = True,
    ) -> Reply:
        """One request and its answer on ``connection``; the connection is kept for the
        next request only when the answer ended cleanly and may be followed by another.
        On a ``reused`` connection, no byte within the reuse deadline is
        :class:`_StaleConnectionError`."""
        if not connection.intact():
            self._discard(connection)
            raise _StaleConnectionError
        reader = ResponseReader(max_head_bytes=MAX_HEAD_BYTES, max_body_bytes=max_body_bytes)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        connection.reader = reader
        connection.waiter = waiter
        deadline = (
            loop.call_later(self._reuse_silence_s, connection.went_silent, reader)
            if reused
            else None
        )
        try:
            sends.count += 1
            connection.send(request)
            await waiter
            return Reply(
                reader.status,
                reader.headers,
                reader.body,
                too_large=reader.too_large,
                connection=connection,
            )
        finally:
            if deadline is not None:
                deadline.cancel()
            connection.reader = None
            connection.waiter = None
            kept = self._idle.setdefault(address.key, [])
            if (
                keep
                and reader.reusable  # only an answer read whole, with nothing after it
                and connection.intact()
                and not self._closed
                and len(kept) < self._per_server
            ):
                kept.append(connection)
            else:
                self._discard(connection)
