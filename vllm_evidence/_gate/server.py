"""The gate's HTTP server: ``/ready``, ``/live``, ``/metrics``, ``/assessment``.

**Why the standard library's server.**  The gate answers four GET routes to a kubelet, a
router and a Prometheus server; it needs no routing framework, no TLS (it listens inside
the pod, beside the process it vouches for) and no dependency the package does not
already have.  :class:`http.server.ThreadingHTTPServer` is a kept server: its request
line and header parsing (``http.client.parse_headers``) are the standard library's, and
bound the request line to 64 KiB (414), the header block to 100 lines of 64 KiB each
(431).  What it lacks for a hostile network is added around it, not inside its parser:

* **a deadline per connection** (:data:`CONNECTION_DEADLINE_S`): one watchdog thread
  shuts down a connection that has not been answered by then, so a client that sends a
  byte at a time (slowloris) holds a thread for seconds, never for ever; each read also
  times out after :data:`READ_TIMEOUT_S`;
* **a bound on connections at once** (:data:`MAX_CONNECTIONS`): one more is answered
  ``503`` at once and closed, never queued behind the slow ones;
* **a bound on the request target** (:data:`MAX_TARGET_CHARS`, 414) and its query (at
  most :data:`_MAX_QUERY_FIELDS` fields, each route's own names only: 400);
* **one answer per connection** (HTTP/1.0, ``Connection: close``), with a JSON body
  (:mod:`vllm_evidence._gate.documents`) for every status, the request never echoed;
* **GET only**: every other method is ``405`` with ``Allow: GET`` (an unknown method
  ``501``); an unknown path ``404`` naming the four routes;
* nothing written to stderr (the launcher's stderr is its child's).

An address already in use (or not this machine's, or a privileged port) is a one-line
:class:`~vllm_evidence.errors.InputError`, raised before anything else starts.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from vllm_evidence._gate.documents import (
    assessment_json,
    error_document,
    json_bytes,
    live_document,
    ready_document,
)
from vllm_evidence._gate.metrics import CONTENT_TYPE, exposition, gate_registry
from vllm_evidence._gate.snapshot import Gate
from vllm_evidence.errors import InputError

__all__ = [
    "CONNECTION_DEADLINE_S",
    "MAX_CONNECTIONS",
    "MAX_TARGET_CHARS",
    "READ_TIMEOUT_S",
    "ROUTES",
    "GateServer",
    "Liveness",
    "parse_address",
]

#: The routes the gate serves.
ROUTES = ("/ready", "/live", "/metrics", "/assessment")
#: The longest request target answered (a ``?target=`` URL included).
MAX_TARGET_CHARS = 4096
#: The most query fields read.
_MAX_QUERY_FIELDS = 4
#: How long one read of a request may wait for bytes.
READ_TIMEOUT_S = 5.0
#: How long a connection may take, from accept to answer, before it is shut down.
CONNECTION_DEADLINE_S = 10.0
#: The most connections answered at once.
MAX_CONNECTIONS = 32

_JSON = "application/json"
_ALLOW = "GET"
_BUSY_BODY = json_bytes(error_document(503, "too many connections"))
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)

Liveness = Callable[[], tuple[bool, str]]
"""``() -> (live, why)``: whether the gate's loop (and the launcher's child) run."""


def parse_address(text: str, option: str = "--serve") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9100``, ``:9100`` for every interface) as ``(host, port)``;
    an :class:`InputError` naming the form (and ``option``) otherwise."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or len(port_text) > 5:
        msg = f"{option} {text[:80]!r}: give HOST:PORT (127.0.0.1:9100, [::]:9100, :9100)"
        raise InputError(msg)
    port = int(port_text)
    if not 0 <= port <= 65535:
        msg = f"{option} {text[:80]!r}: the port must be 0..65535"
        raise InputError(msg)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if any(c.isspace() for c in host) or len(host) > 253:
        msg = f"{option} {text[:80]!r}: not a host name or address"
        raise InputError(msg)
    return host, port


class _Server(ThreadingHTTPServer):
    """The standard server with the bounds of the module added around it."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True  # a port in TIME_WAIT, not one another process listens on
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], family: int, owner: GateServer) -> None:
        self.address_family = family
        self.owner = owner
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)
            except OSError:
                pass
            super().shutdown_request(request)
            return
        with self._lock:
            self._deadlines[request] = time.monotonic() + CONNECTION_DEADLINE_S
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._forget(request)
            raise

    def _forget(self, request: Any) -> None:
        with self._lock:
            held = self._deadlines.pop(request, None)
        if held is not None:
            self._slots.release()

    def shutdown_request(self, request: Any) -> None:
        self._forget(request)
        super().shutdown_request(request)

    def expire(self) -> None:
        """Shut down every connection past its deadline (the watchdog's tick)."""
        now = time.monotonic()
        with self._lock:
            late = [s for s, deadline in self._deadlines.items() if deadline <= now]
        for sock in late:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up or timed out is its own business: nothing on stderr."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    server_version = "vllm-evidence-gate"
    sys_version = ""
    timeout = READ_TIMEOUT_S

    def version_string(self) -> str:
        """The ``Server`` header: the gate's name, no interpreter version."""
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  # the base's name
        """Nothing is logged: the launcher's stderr carries its child's output."""

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = _JSON,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.close_connection = True
        # An unparsed request line leaves the base at HTTP/0.9, which sends no status
        # line: every answer here has one (no client speaks 0.9 to a gate).
        self.request_version = self.protocol_version
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(
        self, status: int, document: object, headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self._send(status, json_bytes(document), headers=headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every error as JSON, in the status's own words: the request is not echoed."""
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self._json(code, error_document(code, phrase.lower()))

    def _refuse_method(self) -> None:
        self._json(
            405,
            error_document(405, "the gate answers GET only"),
            headers=(("Allow", _ALLOW),),
        )

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = (  # noqa: N815
        _refuse_method
    )

    def do_GET(self) -> None:
        """Answer one of :data:`ROUTES`."""
        if len(self.path) > MAX_TARGET_CHARS:
            why = f"request target over {MAX_TARGET_CHARS} characters"
            self._json(414, error_document(414, why))
            return
        parts = urlsplit(self.path)
        if parts.path not in ROUTES:
            why = f"no such route; the gate serves {', '.join(ROUTES)}"
            self._json(404, error_document(404, why))
            return
        answer = getattr(self, "_" + parts.path.strip("/"))
        try:
            fields = parse_qsl(
                parts.query, keep_blank_values=True, max_num_fields=_MAX_QUERY_FIELDS
            )
        except ValueError:
            self._json(400, error_document(400, f"more than {_MAX_QUERY_FIELDS} query fields"))
            return
        accepted = {"target"} if parts.path in ("/ready", "/assessment") else set()
        names = [name for name, _ in fields]
        if parts.path != "/metrics" and (set(names) - accepted or len(names) != len(set(names))):
            wanted = "?target=URL, once" if accepted else "no query"
            self._json(400, error_document(400, f"{parts.path} takes {wanted}"))
            return
        answer(dict(fields).get("target"))

    def _target(self, url: str | None) -> tuple[Any, bool]:
        """``(state or None, answered)``: the target asked for, else an answer sent."""
        snapshot = self.server.owner.gate.snapshot
        if url is None:
            return None, False
        state = snapshot.target(url)
        if state is None:
            self._json(404, error_document(404, "not a target of this gate"))
            return None, True
        return state, False

    def _ready(self, url: str | None) -> None:
        snapshot = self.server.owner.gate.snapshot
        state, answered = self._target(url)
        if answered:
            return
        document = ready_document(snapshot, state)
        ready = snapshot.rounds > 0 and (state.ready if state is not None else snapshot.ready)
        self._json(200 if ready else 503, document)

    def _live(self, _url: str | None) -> None:
        live, why = self.server.owner.liveness()
        snapshot = self.server.owner.gate.snapshot
        self._json(200 if live else 503, live_document(live=live, detail=why, snapshot=snapshot))

    def _metrics(self, _url: str | None) -> None:
        self._send(200, exposition(self.server.owner.registry), content_type=CONTENT_TYPE)

    def _assessment(self, url: str | None) -> None:
        snapshot = self.server.owner.gate.snapshot
        state, answered = self._target(url)
        if answered:
            return
        if state is None:
            if len(snapshot.targets) != 1:
                why = f"give ?target=URL: this gate has {len(snapshot.targets)} targets"
                self._json(400, error_document(400, why))
                return
            state = snapshot.targets[0]
        self._json(200 if state.assessment is not None else 503, assessment_json(state))


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


class GateServer:
    """The gate's routes over ``gate``, bound at construction (see the module).

    ``liveness`` answers ``/live``.  :meth:`start` serves on a thread of its own;
    :meth:`close` stops and releases the port."""

    def __init__(
        self,
        gate: Gate,
        address: tuple[str, int],
        liveness: Liveness,
        *,
        option: str = "--serve",
    ) -> None:
        host, port = address
        self.gate = gate
        self.liveness = liveness
        self.registry = gate_registry(gate)
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            self._server = _Server((host or "0.0.0.0", port), _family(host), self)  # noqa: S104  # ':PORT' asks for every interface
        except socket.gaierror as exc:
            msg = f"{option} {shown}: cannot resolve {host!r} ({exc.strerror or 'no such host'})"
            raise InputError(msg) from None
        except OSError as exc:
            why = {
                errno.EADDRINUSE: "the address is already in use (another process listens there)",
                errno.EADDRNOTAVAIL: "that address is not one of this machine's",
                errno.EACCES: "permission denied (a port below 1024 needs privileges)",
            }.get(exc.errno or 0, exc.strerror or type(exc).__name__)
            msg = f"{option} {shown}: {why}"
            raise InputError(msg) from None
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def address(self) -> tuple[str, int]:
        """The address bound (the port chosen, when 0 was asked)."""
        bound = self._server.server_address
        return str(bound[0]), int(bound[1])

    @property
    def url(self) -> str:
        """The base URL of the gate."""
        host, port = self.address
        shown = "127.0.0.1" if host == "0.0.0.0" else host  # noqa: S104
        return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"

    def start(self) -> None:
        """Serve on a daemon thread, with the connections' watchdog beside it."""
        serve = threading.Thread(target=self._server.serve_forever, args=(0.2,), daemon=True)
        watch = threading.Thread(target=self._watch, daemon=True)
        self._threads = [serve, watch]
        for thread in self._threads:
            thread.start()

    def _watch(self) -> None:
        while not self._stopped.wait(0.25):
            self._server.expire()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._stopped.set()
        if self._threads:
            self._server.shutdown()
        self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
