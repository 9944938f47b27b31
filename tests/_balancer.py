"""A stand-in round-robin front door: one port, several upstream servers behind it.

What nginx's ``upstream`` block (round-robin) or a Kubernetes Service does in front of
replicas, small enough to read: an asyncio TCP proxy on 127.0.0.1 that reads each HTTP/1.1
request head from the client, sends it to one upstream on a connection of its own, and
writes the upstream's whole answer back (every answer here declares its length).  ``per``
is what the choice of upstream follows:

* ``"request"``: the next upstream for every request, on a kept-alive client connection
  too (nginx, Envoy, an L7 ingress);
* ``"connection"``: the next upstream for every client connection, every request on it
  to the same one (kube-proxy, an L4 balancer).

With one upstream it is a sticky front door: everything reaches one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Literal, final

Per = Literal["request", "connection"]


@final
class Balancer:
    """A running balancer: ``url`` is its base URL; ``routed`` is ``(path, upstream)``
    for every request it forwarded, in arrival order."""

    def __init__(self, upstreams: Sequence[str], per: Per) -> None:
        if not upstreams:
            msg = "a balancer needs at least one upstream"
            raise ValueError(msg)
        self._ports = [int(url.rsplit(":", 1)[1]) for url in upstreams]
        self._per = per
        self._requests = 0
        self._connections = 0
        self.routed: list[tuple[str, int]] = []
        self._handlers: set[tuple[asyncio.Task[Any], asyncio.StreamWriter]] = set()
        self.url = ""

    def _choose(self, connection: int) -> int:
        turn = self._requests if self._per == "request" else connection
        self._requests += 1
        return turn % len(self._ports)

    async def _forward(self, head: bytes, upstream: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", self._ports[upstream])
        try:
            writer.write(head)
            await writer.drain()
            answer = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in answer.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            return answer + await reader.readexactly(length)
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = self._connections
        self._connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add((task, writer))
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                upstream = self._choose(connection)
                self.routed.append((head.split(b" ", 2)[1].decode("latin-1"), upstream))
                writer.write(await self._forward(head, upstream))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._handlers.discard((task, writer))
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve(self, started: Future[str], stop: asyncio.Event) -> None:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        started.set_result(f"http://127.0.0.1:{port}")
        await stop.wait()
        server.close()  # no new connection; then end those open (wait_closed waits for them)
        # A client's kept-alive connection still has its handler waiting on a read: end
        # each one here, so that its transport is closed by this loop, not left to the
        # garbage collector (a ResourceWarning in whatever test runs next).
        # Closing its transport ends the handler's read (end of stream) without a cancel.
        handlers = list(self._handlers)
        for _, writer in handlers:
            writer.close()
        await asyncio.gather(*(handler for handler, _ in handlers), return_exceptions=True)
        await server.wait_closed()
        for _ in range(3):  # let the transports closed above call connection_lost
            await asyncio.sleep(0)

    def upstreams_of(self, path: str) -> list[int]:
        """The upstream each request for ``path`` went to, in arrival order."""
        return [upstream for seen, upstream in self.routed if seen == path]


@contextmanager
def balancer(upstreams: Sequence[str], *, per: Per = "request") -> Iterator[Balancer]:
    """Serve a round-robin front door over ``upstreams`` (base URLs on 127.0.0.1) until
    the context closes."""
    door = Balancer(upstreams, per)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    started: Future[str] = Future()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(door._serve(started, stop))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        door.url = started.result(timeout=10)
        yield door
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        loop.close()
