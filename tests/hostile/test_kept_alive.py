"""Kept-alive connections that go bad between requests, through the whole probe.

A server (or a balancer in front of it) may close a kept-alive connection after one
answer, or stop answering on it.  The probe sends a request that gets no byte back on a
reused connection once more, on a new connection, so the batch still reads every route;
a new connection's failure is the server's answer, never retried.  The request log
(``CaptureBatch.request_lines``) is what went on the wire: a request sent twice has two
lines, and every line the server received is in it.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests._evidence import front_door_join
from tests.hostile._server import real_reply
from vllm_evidence._capture.batch import SENT_TWICE_DETAIL, CaptureBatch, Transport
from vllm_evidence._capture.http import probe
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.decisions import JoinedIncarnation
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

#: What a server does with a connection's requests: ``(count on this connection, request
#: target) -> answer bytes``, ``close`` / ``reset`` / ``silent`` for no answer, or
#: ``answer, close`` for the route's answer and then hanging up at once.
Behaviour = Callable[[int, str], "bytes | str"]


def _keep_alive(target: str) -> bytes:
    """The real capture's answer for ``target``, framed to keep the connection open."""
    return real_reply(target).replace(b"connection: close\r\n", b"")


async def _serve(
    behaviour: Behaviour, run: Callable[[str], Awaitable[CaptureBatch]]
) -> tuple[CaptureBatch, list[tuple[str, str]], int]:
    """``run`` against a server that answers as ``behaviour`` says: the batch, every
    request line the server received, and how many connections it accepted."""
    received: list[tuple[str, str]] = []
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        count = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                count += 1
                method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
                received.append((method, target))
                answer = behaviour(count, target)
                if answer == "close":
                    return
                if answer == "reset":
                    sock = writer.transport.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                if answer == "silent":
                    await reader.read()  # until the client hangs up
                    return
                if answer == "answer, close":
                    writer.write(_keep_alive(target))
                    await writer.drain()
                    return
                assert isinstance(answer, bytes)
                writer.write(answer)
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        batch = await run(f"http://127.0.0.1:{port}")
    return batch, received, connections


@pytest.fixture(autouse=True)
def _short_reuse_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reused connection is taken for dead after 0.2 s without a byte (1 s by default),
    so that the silent server's cases end sooner."""
    from vllm_evidence._capture import _wire

    monkeypatch.setattr(_wire, "REUSE_SILENCE_S", 0.2)


def _probe(behaviour: Behaviour) -> tuple[CaptureBatch, list[tuple[str, str]], int]:
    async def run(url: str) -> CaptureBatch:
        return await probe(url, timeout=5)

    return asyncio.run(asyncio.wait_for(_serve(behaviour, run), 60))


def _answers_one_then(failure: str) -> Behaviour:
    def behaviour(count: int, target: str) -> bytes | str:
        return _keep_alive(target) if count == 1 else failure

    return behaviour


@pytest.mark.parametrize("failure", ["close", "reset", "silent"])
def test_a_server_that_fails_each_connections_second_request_is_still_read_whole(
    failure: str,
) -> None:
    batch, received, connections = _probe(_answers_one_then(failure))
    exchanges = batch.all_exchanges()
    # every route answered, each on a new connection where its kept one failed
    assert [(e.transport, e.status) for e in exchanges] == [(Transport.ANSWERED, 200)] * len(
        exchanges
    )
    assert len(exchanges) == len(PROBE_ROUTES) + 3
    twice = [(e.role.value, e.route.target) for e in exchanges if e.detail == SENT_TWICE_DETAIL]
    # sent twice: every route between (each lane reads on a kept connection: the opening
    # reads' first, then the one its previous route was read on), the closing read (on a
    # route's kept connection) and its twin (on the closing read's)
    routes = len(PROBE_ROUTES) - 1
    assert len(twice) == routes + 2
    assert sorted(target for role, target in twice[:routes] if role == "route") == sorted(
        r.target for r in PROBE_ROUTES if r is not Route.METRICS
    )
    assert twice[routes:] == [("bracket_close", "/metrics")] * 2
    assert all(e.detail in ("", SENT_TWICE_DETAIL) for e in exchanges)
    # the log is what went on the wire: the server received exactly those lines
    lines = batch.request_lines()
    assert collections.Counter(lines) == collections.Counter(received)
    assert len(lines) == len(exchanges) + len(twice)
    # every connection carried one answer: one per exchange
    assert connections == len(exchanges)
    assert isinstance(front_door_join(readback_from_batch(batch)), JoinedIncarnation)


def test_a_server_that_closes_idle_connections_at_once_is_read_whole() -> None:
    # a keep-alive answer, then the connection is closed while idle: the probe sees the
    # close before it reuses the connection (nothing sent on it), or after (sent twice)
    batch, received, _ = _probe(lambda count, target: "answer, close")
    assert {e.transport for e in batch.all_exchanges()} == {Transport.ANSWERED}
    lines = collections.Counter(batch.request_lines())
    # each line the server received is in the log, and the log has one line more only
    # for a request sent twice
    assert collections.Counter(received) - lines == collections.Counter()
    assert sum((lines - collections.Counter(received)).values()) <= sum(
        1 for e in batch.all_exchanges() if e.detail == SENT_TWICE_DETAIL
    )


def test_a_server_that_resets_every_new_connection_is_unreachable_not_retried() -> None:
    batch, received, connections = _probe(lambda count, target: "reset")
    exchanges = batch.all_exchanges()
    assert {e.transport for e in exchanges} == {Transport.UNREACHABLE}
    assert all(e.detail.startswith("ConnectionResetError") for e in exchanges), [
        e.detail for e in exchanges
    ]
    # one request, one connection each: a new connection's failure is never retried
    assert connections == len(received) == len(exchanges)
    assert collections.Counter(batch.request_lines()) == collections.Counter(received)


def test_a_request_sent_twice_keeps_both_lines_when_saved_and_loaded(tmp_path: Path) -> None:
    from vllm_evidence._capture.directory import save
    from vllm_evidence._readback import CapturedReadback, load

    batch, received, _ = _probe(_answers_one_then("close"))
    loaded = load(save(batch, tmp_path / "saved"))
    assert isinstance(loaded, CapturedReadback)
    assert loaded.batch.request_lines() == batch.request_lines()
    assert collections.Counter(loaded.batch.request_lines()) == collections.Counter(received)
