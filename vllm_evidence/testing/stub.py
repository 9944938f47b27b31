"""A stub vLLM front door: serves a capture directory on 127.0.0.1, with faults.

Public API::

    with serve_capture(directory, faults={Route.MODELS: Fault(status=401)}) as door:
        batch = probe_sync(door.url)
        door.requests  # every request received: (method, path, headers)

It serves ``<stem>.body`` for each route (status and content type from
``<stem>.headers`` when present) and answers 404 ``{"detail":"Not Found"}`` for a
route with no body and for any other path.  Every request, of any method, is logged.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import final

import attrs

from vllm_evidence.upstream.routes import Route

__all__ = ["Fault", "StubFrontDoor", "StubRequest", "observe_requests", "serve_capture"]

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
    """A running stub.  ``url`` is its base URL; ``requests`` is its request log."""

    def __init__(
        self,
        directory: Path,
        faults: Mapping[Route, Fault],
        api_key: str | None,
        restart_after_metrics_reads: int | None,
    ) -> None:
        self._served = {r: _read_served(directory, r) for r in Route}
        self._faults = dict(faults)
        self._api_key = api_key
        self._restart_after = restart_after_metrics_reads
        self._metrics_reads = 0
        self._lock = threading.Lock()
        self.requests: list[StubRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"

    def _start(self) -> None:
        self._thread.start()

    def _stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _log(self, request: StubRequest) -> None:
        with self._lock:
            self.requests.append(request)
        with _observers_lock:
            observers = list(_observers)
        for observer in observers:
            observer(request)

    def _answer(
        self, method: str, path: str, authorization: str | None
    ) -> tuple[int, str, dict[str, str], bytes]:
        route = next((r for r in Route if r.target == path and r.probe_readable), None)
        if method != "GET":
            return 405, "Method Not Allowed", {}, b'{"detail":"Method Not Allowed"}'
        if route is None:
            return 404, "Not Found", _JSON, _NOT_FOUND
        fault = self._faults.get(route)
        if fault is not None and fault.delay_s > 0:
            time.sleep(fault.delay_s)
        if fault is not None and fault.redirect_to is not None:
            return 302, "Found", {"location": fault.redirect_to}, b""
        if (
            self._api_key is not None
            and route is Route.MODELS
            and authorization != f"Bearer {self._api_key}"
        ):
            return (
                401,
                "Unauthorized",
                {"content-type": "application/json"},
                b'{"error":"Unauthorized"}',
            )
        served = self._served[route]
        if served is None:
            status, reason, headers, body = (
                404,
                "Not Found",
                {"content-type": "application/json"},
                _NOT_FOUND,
            )
        else:
            status, reason, body = served.status, served.reason, served.body
            headers = {"content-type": served.content_type} if served.content_type else {}
        if route is Route.METRICS:
            body = self._metrics_body(body)
        if fault is not None:
            if fault.oversize_bytes is not None:
                body = b"#" * fault.oversize_bytes
            if fault.body is not None:
                body = fault.body
            if fault.status is not None:
                status, reason = fault.status, "Injected"
        return status, reason, headers, body

    def _metrics_body(self, body: bytes) -> bytes:
        with self._lock:
            self._metrics_reads += 1
            reads = self._metrics_reads
        if self._restart_after is None or reads <= self._restart_after:
            return body

        def later(match: re.Match[bytes]) -> bytes:
            restarted = Decimal(match.group(2).decode("ascii")) + 1000
            return match.group(1) + str(restarted).encode("ascii")

        return _START_LINE.sub(later, body)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        door = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

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
                status, reason, headers, body = door._answer(
                    self.command, self.path, self.headers.get("authorization")
                )
                self.send_response(status, reason)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle  # noqa: N815

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                """Keep test output quiet."""

        return Handler


@contextmanager
def serve_capture(
    directory: str | Path,
    *,
    faults: Mapping[Route, Fault] | None = None,
    api_key: str | None = None,
    restart_after_metrics_reads: int | None = None,
) -> Iterator[StubFrontDoor]:
    """Serve ``directory`` on a free port of 127.0.0.1 until the context closes.

    ``api_key`` makes ``/v1/models`` answer 401 without ``Authorization: Bearer <key>``
    (as vLLM does).  ``restart_after_metrics_reads=N`` serves a later
    ``process_start_time_seconds`` on every ``/metrics`` read after the N-th: a restart.
    """
    door = StubFrontDoor(Path(directory), faults or {}, api_key, restart_after_metrics_reads)
    door._start()
    try:
        yield door
    finally:
        door._stop()
