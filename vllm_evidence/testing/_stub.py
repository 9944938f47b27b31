"""A stub vLLM front door: serves a capture directory on 127.0.0.1, with faults.

Public API::

    with serve_capture(directory, faults={Route.MODELS: Fault(status=401)}) as door:
        batch = probe_sync(door.url)
        door.requests  # every request received: (method, path, headers)

It serves ``<stem>.body`` for each route (status and content type from
``<stem>.headers`` when present) and answers 404 ``{"detail":"Not Found"}`` for a
route with no body and for any other path.  Every request, of any method, is logged
(on the stub's own ``requests`` and to every :func:`observe_requests` observer), and
:func:`forbidden_requests` names those that were not a GET to a front-door route.

Faults (:class:`Fault`, per route): a status override, a delay, a trickled body, an
oversize, truncated or garbage body, a connection reset (no answer at all), a
redirect.  A restart (a new ``process_start_time_seconds`` on ``/metrics``) is
:meth:`StubFrontDoor.restart` between requests, or ``restart_after_metrics_reads``.

``completion=Fault()`` makes ``POST /v1/completions`` answer one generated token as
vLLM does (:data:`COMPLETION_BODY`; the fault's status, body, delay or reset instead),
for the gate's generation canary; :meth:`StubFrontDoor.set_completion` changes it while
the stub runs (``None``: 405, as for any other non-GET request, the default).

A stub is one process: ``/metrics`` reads back to back (no other request between them,
as a probe reads two at each end of its batch) are one moment of it and answer alike;
``restart_after_metrics_reads`` and ``metrics_sequence`` count such runs of reads, so a
probe's two opening reads see one process and its two closing reads another.
"""

from __future__ import annotations

import errno
import re
import selectors
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, final

import attrs

from vllm_evidence._capture.canary import CANARY_HEADER
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

if TYPE_CHECKING:
    from vllm_evidence.testing._capture import CaptureDirectory
    from vllm_evidence.testing._scenarios import ReplayedFrontDoor

__all__ = [
    "ALLOWED_TARGETS",
    "COMPLETION_BODY",
    "GARBAGE_BODY",
    "Fault",
    "FrontDoorFactory",
    "StubFrontDoor",
    "StubRequest",
    "forbidden_requests",
    "observe_requests",
    "serve_capture",
]

#: The request targets a read-only client may send (GET only): the probe-readable routes.
ALLOWED_TARGETS: frozenset[str] = frozenset(route.target for route in PROBE_ROUTES)
#: What a ``Fault(garbage=True)`` answers: neither UTF-8, JSON nor exposition text.
GARBAGE_BODY = b"\x00\xff\xfe<html>\x8b\x1f garbage \xc3\x28{]"

#: What ``POST /v1/completions`` answers with ``completion=Fault()``: vLLM's
#: ``CompletionResponse`` of one token (``vllm/entrypoints/openai/protocol.py``).
COMPLETION_BODY = (
    b'{"id":"cmpl-stub","object":"text_completion","created":1764748800,'
    b'"model":"stub","choices":[{"index":0,"text":" the","logprobs":null,'
    b'"finish_reason":"length","stop_reason":null,"prompt_logprobs":null}],'
    b'"usage":{"prompt_tokens":6,"total_tokens":7,"completion_tokens":1,'
    b'"prompt_tokens_details":null},"kv_transfer_params":null}'
)
_NOT_FOUND = b'{"detail":"Not Found"}'
_JSON = {"content-type": "application/json"}
_START_LINE = re.compile(rb"^(process_start_time_seconds[ \t]+)(\S+)", re.MULTILINE)


@final
@attrs.frozen
class Fault:
    """What to do instead of (or on top of) serving a route's captured body."""

    status: int | None = None
    """Answer this status (with ``body`` or the captured body)."""
    body: bytes | None = None
    """Answer this body instead of the captured one."""
    delay_s: float = 0.0
    """Wait this long before answering."""
    oversize_bytes: int | None = None
    """Answer a body of this many bytes (``#`` characters) instead."""
    redirect_to: str | None = None
    """Answer ``302`` with this ``Location``."""
    trickle_bytes_per_s: float | None = None
    """Send the body at about this many bytes per second (the full length is declared)."""
    truncate_at: int | None = None
    """Answer only the first this-many bytes of the body (a complete, shorter answer)."""
    garbage: bool = False
    """Answer :data:`GARBAGE_BODY` instead of the body."""
    reset: bool = False
    """Close the connection (TCP reset) without any answer."""

    def __attrs_post_init__(self) -> None:
        if self.trickle_bytes_per_s is not None and self.trickle_bytes_per_s <= 0:
            msg = "trickle_bytes_per_s must be positive"
            raise ValueError(msg)
        if self.truncate_at is not None and self.truncate_at < 0:
            msg = "truncate_at must not be negative"
            raise ValueError(msg)
        if self.delay_s < 0:
            msg = "delay_s must not be negative"
            raise ValueError(msg)


@final
@attrs.frozen
class StubRequest:
    """One request the stub received."""

    method: str
    path: str
    """Path with query, as on the request line."""
    headers: tuple[tuple[str, str], ...]


_observers: list[Callable[[StubRequest], None]] = []
_observers_lock = threading.Lock()


@contextmanager
def observe_requests() -> Iterator[list[StubRequest]]:
    """Collect every request any stub receives while the context is open."""
    log: list[StubRequest] = []
    with _observers_lock:
        _observers.append(log.append)
    try:
        yield log
    finally:
        with _observers_lock:
            _observers.remove(log.append)


def forbidden_requests(
    requests: Iterable[StubRequest], *, canary: bool = False
) -> list[StubRequest]:
    """The requests that were not a GET to a probe-readable route's target; with
    ``canary``, the gate's generation canary (``POST /v1/completions`` marked by
    :data:`~vllm_evidence._capture.canary.CANARY_HEADER`) is not counted either."""
    return [
        r
        for r in requests
        if (r.method != "GET" or r.path not in ALLOWED_TARGETS) and not (canary and _is_canary(r))
    ]


def _is_canary(request: StubRequest) -> bool:
    name, value = CANARY_HEADER
    return (
        request.method == "POST"
        and request.path == "/v1/completions"
        and dict(request.headers).get(name.lower()) == value
    )


@attrs.frozen
class _Reply:
    status: int
    reason: str
    headers: dict[str, str]
    body: bytes
    trickle_bytes_per_s: float | None = None
    reset: bool = False


@attrs.frozen
class _Served:
    status: int
    reason: str
    content_type: str | None
    body: bytes


def _read_served(directory: Path, route: Route) -> _Served | None:
    body_path = directory / f"{route.stem}.body"
    if not body_path.is_file():
        return None
    status, reason, content_type = 200, "OK", None
    headers_path = directory / f"{route.stem}.headers"
    if headers_path.is_file():
        lines = headers_path.read_text(encoding="utf-8").splitlines()
        parts = lines[0].split(" ", 2) if lines else []
        if len(parts) >= 2 and parts[1].isdigit():
            status = int(parts[1])
            reason = parts[2] if len(parts) > 2 else ""
        for line in lines[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == "content-type":
                content_type = value.strip()
    return _Served(status, reason, content_type, body_path.read_bytes())


@final
class StubFrontDoor:
    """A running stub.  ``url`` is its base URL; ``requests`` is its request log.

    Made by :func:`serve_capture` (or the ``vllm_front_door`` pytest fixture).
    """

    def __init__(
        self,
        directory: Path,
        faults: Mapping[Route, Fault],
        api_key: str | None,
        restart_after_metrics_reads: int | None,
        metrics_sequence: Sequence[bytes] = (),
        latency_s: float = 0.0,
        port: int = 0,
        bind_wait_s: float = 0.0,
        completion: Fault | None = None,
    ) -> None:
        if latency_s < 0 or bind_wait_s < 0:
            msg = "latency_s and bind_wait_s must not be negative"
            raise ValueError(msg)
        self._latency_s = latency_s
        self._served = {r: _read_served(directory, r) for r in Route}
        self._sequence = tuple(metrics_sequence)
        self._faults = dict(faults)
        self._api_key = api_key
        self._completion = completion
        self._restart_after = restart_after_metrics_reads
        self._metrics_reads = 0
        #: Whether the last request answered was a /metrics read (then the next one is
        #: the same run: the same moment of this one process).
        self._last_was_metrics = False
        self._restarts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self.requests: list[StubRequest] = []
        self._server = _bind(port, self._handler_class(), bind_wait_s)
        self._server.daemon_threads = True
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"

    def _start(self) -> None:
        self._thread.start()

    def restart(self) -> None:
        """Act as a restarted server: later ``/metrics`` reads serve a new start time."""
        with self._lock:
            self._restarts += 1

    def set_completion(self, fault: Fault | None) -> None:
        """How ``POST /v1/completions`` answers from now on (``None``: 405)."""
        with self._lock:
            self._completion = fault

    def _complete(self, authorization: str | None) -> _Reply:
        with self._lock:
            fault = self._completion
        if fault is None:
            return _Reply(405, "Method Not Allowed", {}, b'{"detail":"Method Not Allowed"}')
        if fault.delay_s > 0:
            time.sleep(fault.delay_s)
        if fault.reset:
            return _Reply(0, "", {}, b"", reset=True)
        if self._api_key is not None and authorization != f"Bearer {self._api_key}":
            return _Reply(401, "Unauthorized", dict(_JSON), b'{"error":"Unauthorized"}')
        body = COMPLETION_BODY if fault.body is None else fault.body
        if fault.garbage:
            body = GARBAGE_BODY
        if fault.oversize_bytes is not None:
            body = b"#" * fault.oversize_bytes
        if fault.status is not None:
            return _Reply(fault.status, "Injected", dict(_JSON), body)
        return _Reply(200, "OK", dict(_JSON), body)

    @property
    def port(self) -> int:
        """The port on 127.0.0.1 the stub listens on."""
        return int(self.url.rsplit(":", 1)[1])

    def _serve(self) -> None:
        """Accept connections until stopped, asleep when idle: the loop waits on the
        listening socket and a wake-up socket, never on a polling interval."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._server, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self._server and not self._stopping.is_set():
                        self._server.handle_request()  # readable: accepts without waiting

    def _stop(self) -> None:
        self._stopping.set()
        self._wake_w.send(b"\0")
        self._thread.join(timeout=5)
        self._server.server_close()
        self._wake_r.close()
        self._wake_w.close()

    def _log(self, request: StubRequest) -> None:
        with self._lock:
            self.requests.append(request)
        with _observers_lock:
            observers = list(_observers)
        for observer in observers:
            observer(request)

    def _answer(self, method: str, path: str, authorization: str | None) -> _Reply:
        route = next((r for r in Route if r.target == path and r.probe_readable), None)
        if route is not Route.METRICS:
            with self._lock:
                self._last_was_metrics = False
        if method == "POST" and path == "/v1/completions":
            return self._complete(authorization)
        if method != "GET":
            return _Reply(405, "Method Not Allowed", {}, b'{"detail":"Method Not Allowed"}')
        if route is None:
            return _Reply(404, "Not Found", dict(_JSON), _NOT_FOUND)
        if self._latency_s > 0:
            time.sleep(self._latency_s)
        fault = self._faults.get(route)
        if fault is not None and fault.delay_s > 0:
            time.sleep(fault.delay_s)
        if fault is not None and fault.reset:
            return _Reply(0, "", {}, b"", reset=True)
        if fault is not None and fault.redirect_to is not None:
            return _Reply(302, "Found", {"location": fault.redirect_to}, b"")
        if (
            self._api_key is not None
            and route is Route.MODELS
            and authorization != f"Bearer {self._api_key}"
        ):
            return _Reply(401, "Unauthorized", dict(_JSON), b'{"error":"Unauthorized"}')
        served = self._served[route]
        if served is None:
            status, reason, headers, body = 404, "Not Found", dict(_JSON), _NOT_FOUND
        else:
            status, reason, body = served.status, served.reason, served.body
            headers = {"content-type": served.content_type} if served.content_type else {}
        if route is Route.METRICS:
            body = self._metrics_body(body)
        if fault is None:
            return _Reply(status, reason, headers, body)
        if fault.oversize_bytes is not None:
            body = b"#" * fault.oversize_bytes
        if fault.body is not None:
            body = fault.body
        if fault.garbage:
            body = GARBAGE_BODY
        if fault.truncate_at is not None:
            body = body[: fault.truncate_at]
        if fault.status is not None:
            status, reason = fault.status, "Injected"
        return _Reply(status, reason, headers, body, trickle_bytes_per_s=fault.trickle_bytes_per_s)

    def _metrics_body(self, body: bytes) -> bytes:
        with self._lock:
            if not self._last_was_metrics:
                self._metrics_reads += 1
            self._last_was_metrics = True
            reads = self._metrics_reads
            restarts = self._restarts
        if self._sequence:
            body = self._sequence[min(reads, len(self._sequence)) - 1]
        if self._restart_after is not None and reads > self._restart_after:
            restarts += 1
        if restarts == 0:
            return body

        def later(match: re.Match[bytes]) -> bytes:
            restarted = Decimal(match.group(2).decode("ascii")) + 1000 * restarts
            return match.group(1) + str(restarted).encode("ascii")

        return _START_LINE.sub(later, body)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        door = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; without TCP_NODELAY the body of a
            # keep-alive answer waited ~40 ms for the client's delayed ACK (Nagle).
            disable_nagle_algorithm = True

            def _handle(self) -> None:
                door._log(
                    StubRequest(
                        method=self.command,
                        path=self.path,
                        headers=tuple((k.lower(), v) for k, v in self.headers.items()),
                    )
                )
                length = self.headers.get("content-length")
                if length is not None and length.isdigit():
                    self.rfile.read(int(length))
                reply = door._answer(self.command, self.path, self.headers.get("authorization"))
                if reply.reset:
                    # SO_LINGER 0: closing sends a TCP reset, not an orderly end.
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    return
                self.send_response(reply.status, reply.reason)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                try:
                    if reply.trickle_bytes_per_s is None:
                        self.wfile.write(reply.body)
                    else:
                        self._trickle(reply.body, reply.trickle_bytes_per_s)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _trickle(self, body: bytes, rate: float) -> None:
                step = max(1, int(rate / 50))
                self.wfile.flush()
                for start in range(0, len(body), step):
                    if door._stopping.is_set():
                        self.close_connection = True
                        return
                    self.wfile.write(body[start : start + step])
                    self.wfile.flush()
                    time.sleep(step / rate)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle  # noqa: N815

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                """Keep test output quiet."""

        return Handler


class FrontDoorFactory(Protocol):
    """The type of the ``vllm_front_door`` fixture (for annotating a test's argument)."""

    scenarios: tuple[str, ...]
    """The recorded real servers :meth:`replay` knows."""

    def __call__(
        self,
        directory: str | Path | CaptureDirectory | None = None,
        *,
        faults: Mapping[Route, Fault] | None = None,
        api_key: str | None = None,
        restart_after_metrics_reads: int | None = None,
        metrics_sequence: Sequence[bytes] = (),
    ) -> StubFrontDoor: ...

    def replay(
        self,
        name: str = ...,
        *,
        faults: Mapping[Route, Fault] | None = None,
        restart_after_metrics_reads: int | None = None,
        metrics_sequence: Sequence[bytes] = (),
    ) -> ReplayedFrontDoor: ...


class _Server(ThreadingHTTPServer):
    """The stub's HTTP server: a client that hangs up mid-answer (a probe's deadline, a
    test's abandoned connection) is the client's business, not a traceback on stderr."""

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


def _bind(port: int, handler: type[BaseHTTPRequestHandler], wait_s: float) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port``; a fixed port another listener holds is tried
    again for up to ``wait_s`` seconds (another suite's replay of the same log)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return _Server(("127.0.0.1", port), handler)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or not port or time.monotonic() >= deadline:
                raise
        time.sleep(0.05)


@contextmanager
def serve_capture(
    directory: str | Path,
    *,
    faults: Mapping[Route, Fault] | None = None,
    api_key: str | None = None,
    restart_after_metrics_reads: int | None = None,
    metrics_sequence: Sequence[bytes] = (),
    latency_s: float = 0.0,
    port: int = 0,
    bind_wait_s: float = 0.0,
    completion: Fault | None = None,
) -> Iterator[StubFrontDoor]:
    """Serve ``directory`` on a free port of 127.0.0.1 (or on ``port``: e.g. the port
    a real capture's log names, so that its log can be joined) until the context closes.

    ``faults`` maps a route to the :class:`Fault` it answers with.  ``api_key`` makes
    ``/v1/models`` answer 401 without ``Authorization: Bearer <key>`` (as vLLM does).
    ``restart_after_metrics_reads=N`` serves a later ``process_start_time_seconds`` on
    every ``/metrics`` read after the N-th run of them (reads back to back, with no other
    request between, are one run: a probe's two reads at one end of its batch): a restart
    (see also :meth:`StubFrontDoor.restart`).  ``metrics_sequence`` replays recorded
    ``/metrics`` bodies in order — the N-th run of reads gets the N-th body, later runs
    the last — e.g. the two ends of a probe of a real server restarted between them.
    ``latency_s`` delays every answer to a front-door route by that long (a server's own
    latency, before any fault).
    ``bind_wait_s``: a fixed ``port`` that another listener holds is tried again for up
    to that long before :class:`OSError` (two test suites replaying the same log).
    ``completion``: how ``POST /v1/completions`` answers (see the module; ``None``: 405).
    """
    door = StubFrontDoor(
        Path(directory),
        faults or {},
        api_key,
        restart_after_metrics_reads,
        metrics_sequence,
        latency_s=latency_s,
        port=port,
        bind_wait_s=bind_wait_s,
        completion=completion,
    )
    door._start()
    try:
        yield door
    finally:
        door._stop()
