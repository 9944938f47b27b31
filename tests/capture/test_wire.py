"""The probe's own HTTP/1.1 connections (``_capture/_wire.py``) against scripted servers.

Each server here is a raw asyncio server whose answers are written byte for byte, so
what the client does with each framing (length, chunks, until close), with a kept-alive
connection the server dropped, and with hostile heads and bodies is seen directly.
"""

from __future__ import annotations

import asyncio
import importlib.util
import ssl
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from vllm_evidence._capture._http11 import RemoteProtocolError
from vllm_evidence._capture._wire import (
    MAX_HEAD_BYTES,
    LocalProtocolError,
    ProbeClient,
    ProtocolError,
    Reply,
    Sends,
    server_address,
)
from vllm_evidence.errors import InputError

T = TypeVar("T")

#: uvloop is a test extra wherever it installs (not on Windows).
HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None


class _UnwatchingLoop(asyncio.SelectorEventLoop):
    """An event loop that cannot watch a socket for its user (as Windows' proactor
    cannot): plain connections then go through asyncio transports."""

    def add_reader(self, *args: object) -> None:
        raise NotImplementedError

    def add_writer(self, *args: object) -> None:
        raise NotImplementedError


def _run_unwatching(main: Awaitable[T]) -> T:
    with asyncio.Runner(loop_factory=_UnwatchingLoop) as runner:
        return runner.run(main)  # type: ignore[arg-type]  # a coroutine, as asyncio.run takes


@pytest.fixture(autouse=True, params=["asyncio", "uvloop", "transports"])
def event_loop_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on the standard event loop, on uvloop (the loop under
    uvicorn, where orchestration code calling the probe often runs: its transports
    are not ``asyncio.Transport`` instances) and on a loop that cannot watch sockets
    (plain connections through transports, as for TLS)."""
    kind: str = request.param
    if kind == "uvloop":
        if not HAVE_UVLOOP:  # pragma: no cover
            pytest.skip("uvloop does not install on this platform")
        import uvloop

        monkeypatch.setattr(asyncio, "run", uvloop.run)
    if kind == "transports":
        monkeypatch.setattr(asyncio, "run", _run_unwatching)
    return kind


#: What a scripted server does with one connection: read requests, write bytes.
Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

HEADERS = [("Accept", "*/*"), ("User-Agent", "vllm-evidence")]


async def _request(reader: asyncio.StreamReader) -> bytes:
    """One request head as it arrived (empty at end of stream)."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return b""


async def _serve(script: Script, run: Callable[[str], Awaitable[T]]) -> tuple[T, int]:
    """``run`` against a server that runs ``script`` on each connection: its result and
    how many connections the server accepted."""
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            await script(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with server:
            result = await run(f"http://127.0.0.1:{port}")
    finally:
        server.close()
    return result, connections


def _get(
    script: Script, *, paths: tuple[str, ...] = ("/metrics",), cap: int = 1 << 20
) -> tuple[list[Reply | BaseException], int]:
    async def run(target: str) -> list[Reply | BaseException]:
        address = server_address(target)
        out: list[Reply | BaseException] = []
        async with ProbeClient() as client:
            client.acquire(address)
            for path in paths:
                try:
                    out.append(await client.get(address, path, HEADERS, max_body_bytes=cap))
                except (OSError, EOFError, ProtocolError) as exc:
                    out.append(exc)
            client.release(address)
        return out

    # Bounded: a connection that never wakes its reader (or never closes) fails the
    # test instead of hanging it.
    return asyncio.run(asyncio.wait_for(_serve(script, run), 20))


def _reply(item: Reply | BaseException) -> Reply:
    assert isinstance(item, Reply), item
    return item


def _keep_alive(*bodies: bytes, extra: bytes = b"") -> Script:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for body in bodies:
            if not await _request(reader):
                return
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n" % (len(body), extra))
            writer.write(body)
            await writer.drain()

    return script


# --- framing ------------------------------------------------------------------------


def test_a_kept_alive_connection_carries_the_next_request() -> None:
    replies, connections = _get(_keep_alive(b"one", b"two"), paths=("/a", "/b"))
    assert [_reply(r).body for r in replies] == [b"one", b"two"]
    assert connections == 1


def test_a_chunked_body_is_read_whole_and_the_chunks_are_not_kept() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        await writer.drain()

    (reply,), _ = _get(script)
    assert _reply(reply).body == b"hello world"
    assert _reply(reply).status == 200


def test_a_body_read_until_close_ends_with_the_connection() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it")
        await writer.drain()

    (reply,), _ = _get(script)
    assert _reply(reply).body == b"all of it"
    assert ("content-type", "text/plain") in _reply(reply).headers


def test_headers_are_lower_case_and_repeats_joined_as_httpx_joins_them() -> None:
    extra = b"X-Seen: a\r\nx-seen: b\r\nServer: uvicorn\r\n"
    (reply,), _ = _get(_keep_alive(b"{}", extra=extra))
    headers = dict(_reply(reply).headers)
    assert headers["x-seen"] == "a, b"
    assert headers["server"] == "uvicorn"


def test_an_informational_answer_is_passed_over() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 X\r\ncontent-length: 2\r\n\r\nno")
        await writer.drain()

    (reply,), _ = _get(script)
    assert (_reply(reply).status, _reply(reply).body) == (503, b"no")


# --- connections the server dropped -------------------------------------------------


def test_a_kept_alive_connection_the_server_closed_is_retried_once_on_a_new_one() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Answers one request, says nothing of closing, then closes.
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()

    replies, connections = _get(script, paths=("/a", "/b"))
    assert [_reply(r).body for r in replies] == [b"ok", b"ok"]
    assert connections == 2


def test_a_new_connection_closed_without_an_answer_is_an_error_not_a_retry() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)

    (error,), connections = _get(script)
    assert isinstance(error, EOFError)
    assert str(error) == "the server closed the connection without answering"
    assert connections == 1


def test_an_answer_cut_short_is_an_error() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf")
        await writer.drain()

    (error,), _ = _get(script)
    assert isinstance(error, RemoteProtocolError | EOFError), error


# --- one retry, only on a reused connection ------------------------------------------

OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"


def _reset(writer: asyncio.StreamWriter) -> None:
    """End the connection with a TCP reset (no FIN)."""
    import socket
    import struct

    sock = writer.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _answers_once_then(failure: str) -> Script:
    """Answers a connection's first request; on its second, ``failure``: ``close`` (read
    it, hang up), ``reset`` (read it, reset), ``silent`` (read it, say nothing until the
    client hangs up) or ``half`` (read it, send half an answer, hang up)."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not await _request(reader):
            return
        writer.write(OK)
        await writer.drain()
        if not await _request(reader):
            return
        if failure == "reset":
            _reset(writer)
        elif failure == "silent":
            await reader.read()  # until the client closes its side
        elif failure == "half":
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhal")
            await writer.drain()

    return script


def _sends(
    script: Script, *, paths: tuple[str, ...], pause_s: float = 0.0, limit_s: float = 20.0
) -> tuple[list[tuple[object, int]], int]:
    """Each GET's outcome (a body or the exception) and how many times it was put on the
    wire, on one client with a short reuse deadline; and the connections accepted."""

    async def run(target: str) -> list[tuple[object, int]]:
        address = server_address(target)
        out: list[tuple[object, int]] = []
        async with ProbeClient(reuse_silence_s=0.2) as client:
            client.acquire(address)
            for path in paths:
                sends = Sends()
                try:
                    reply = await asyncio.wait_for(
                        client.get(address, path, HEADERS, max_body_bytes=100, sends=sends),
                        limit_s,
                    )
                    out.append((reply.body, sends.count))
                except (OSError, EOFError, ProtocolError, TimeoutError) as exc:
                    out.append((type(exc), sends.count))
                await asyncio.sleep(pause_s)
            client.release(address)
        return out

    return asyncio.run(asyncio.wait_for(_serve(script, run), 30))


@pytest.mark.parametrize("failure", ["close", "reset", "silent"])
def test_a_reused_connection_that_fails_before_answering_is_retried_once_on_a_new_one(
    failure: str,
) -> None:
    outcomes, connections = _sends(_answers_once_then(failure), paths=("/a", "/b", "/c"))
    # /b goes on /a's connection, fails, and goes once more on a new one; /c likewise
    assert outcomes == [(b"ok", 1), (b"ok", 2), (b"ok", 2)]
    assert connections == 3


def test_a_reused_connection_that_answered_in_part_is_an_error_not_a_retry() -> None:
    outcomes, connections = _sends(_answers_once_then("half"), paths=("/a", "/b"))
    # the bytes that came are the server's answer, cut short: nothing is sent again
    assert outcomes == [(b"ok", 1), (RemoteProtocolError, 1)]
    assert connections == 1


def test_a_kept_connection_known_closed_is_not_sent_on_and_not_counted() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(OK)  # keep-alive framing, then hangs up at once
        await writer.drain()

    # the pause lets the client see the server's FIN before the next request
    outcomes, connections = _sends(script, paths=("/a", "/b"), pause_s=0.1)
    assert outcomes == [(b"ok", 1), (b"ok", 1)]
    assert connections == 2


def _fresh_then(failure: str) -> Script:
    """The first connection answers one request then fails its second (``failure``);
    every later connection fails its first request the same way."""
    seen = 0

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal seen
        seen += 1
        if seen == 1:
            await _answers_once_then(failure)(reader, writer)
            return
        if not await _request(reader):
            return
        if failure == "reset":
            _reset(writer)
        elif failure == "silent":
            await reader.read()

    return script


@pytest.mark.parametrize(
    ("failure", "error"),
    [("close", EOFError), ("reset", ConnectionResetError), ("silent", TimeoutError)],
)
def test_the_retry_on_a_new_connection_is_the_only_one(
    failure: str, error: type[BaseException]
) -> None:
    outcomes, connections = _sends(_fresh_then(failure), paths=("/a", "/b"), limit_s=1.0)
    # /b: once on the reused connection, once on a new one, whose failure stands (a
    # silent new connection waits out the caller's time: no reuse deadline on it)
    assert outcomes == [(b"ok", 1), (error, 2)]
    assert connections == 2


@pytest.mark.parametrize(
    ("failure", "error"),
    [("close", EOFError), ("reset", ConnectionResetError), ("silent", TimeoutError)],
)
def test_a_new_connection_that_fails_is_never_retried(
    failure: str, error: type[BaseException]
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not await _request(reader):
            return
        if failure == "reset":
            _reset(writer)
        elif failure == "silent":
            await reader.read()

    outcomes, connections = _sends(script, paths=("/a", "/b"), limit_s=1.0)
    assert outcomes == [(error, 1), (error, 1)]
    assert connections == 2


# --- hostile heads and bodies -------------------------------------------------------


def test_a_declared_length_past_the_cap_reads_nothing_of_the_body() -> None:
    (reply,), _ = _get(_keep_alive(b"x" * 100), cap=99)
    assert _reply(reply).too_large
    assert _reply(reply).body is None
    (reply,), _ = _get(_keep_alive(b"x" * 99), cap=99)
    assert not _reply(reply).too_large
    assert _reply(reply).body == b"x" * 99


def test_a_chunked_body_past_the_cap_is_cut_off() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for _ in range(1000):
            writer.write(b"400\r\n" + b"y" * 0x400 + b"\r\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    (reply,), _ = _get(script, cap=4096)
    assert _reply(reply).too_large
    assert _reply(reply).body is None


def test_a_head_past_its_bound_is_refused() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        # h11 refuses a head once more than the bound of it is buffered unfinished (a
        # head that ends within one more read can pass: the bound is on memory)
        writer.write(b"x-pad: " + b"p" * (3 * MAX_HEAD_BYTES) + b"\r\n\r\n")
        await writer.drain()

    (error,), _ = _get(script)
    assert isinstance(error, RemoteProtocolError), error


def test_garbage_instead_of_a_status_line_is_refused() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        await writer.drain()

    (error,), _ = _get(script)
    assert isinstance(error, RemoteProtocolError), error


def test_a_connection_that_failed_is_never_kept() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await _request(reader):
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n" + b"z" * 50)
            await writer.drain()

    # the first answer passes the cap (left unread, so the connection is closed); the
    # second goes on a new connection and is read whole
    async def run(target: str) -> tuple[bool, bytes | None, int]:
        address = server_address(target)
        async with ProbeClient() as client:
            first = await client.get(address, "/a", HEADERS, max_body_bytes=10)
            kept = client.open_servers
            second = await client.get(address, "/b", HEADERS, max_body_bytes=100)
            return first.too_large, second.body, kept

    (too_large, body, kept), connections = asyncio.run(_serve(script, run))
    assert too_large
    assert kept == 0
    assert body == b"z" * 50
    assert connections == 2


# --- the request ---------------------------------------------------------------------


def test_the_request_is_the_given_line_and_headers_after_host() -> None:
    seen: list[bytes] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await _request(reader))
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()

    (reply,), _ = _get(script, paths=("/v%7Eendor/server_info?config_format=json",))
    assert _reply(reply).status == 204
    lines = seen[0].decode("ascii").split("\r\n")
    assert lines[0] == "GET /v%7Eendor/server_info?config_format=json HTTP/1.1"
    assert lines[1].startswith("Host: 127.0.0.1:")
    assert lines[2:5] == ["Accept: */*", "User-Agent: vllm-evidence", ""]


def test_a_header_value_with_a_line_break_is_refused_before_sending() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)

    async def run(target: str) -> BaseException | None:
        address = server_address(target)
        async with ProbeClient() as client:
            try:
                await client.get(address, "/a", [("X", "a\r\nB: c")], max_body_bytes=10)
            except LocalProtocolError as exc:
                return exc
        return None

    error, _ = asyncio.run(_serve(script, run))
    assert isinstance(error, LocalProtocolError)


def test_a_request_larger_than_the_socket_takes_at_once_is_sent_whole() -> None:
    value = "v" * (8 << 20)  # far past a loopback socket's send buffer

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.1)  # the client's first send fills the buffers
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            chunk = await reader.read(1 << 20)
            if not chunk:
                return
            head += chunk
        body = str(len(head)).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()

    async def run(target: str) -> tuple[bytes | None, int]:
        address = server_address(target)
        async with ProbeClient() as client:
            reply = await client.get(address, "/a", [("X-Big", value)], max_body_bytes=100)
        sent = f"GET /a HTTP/1.1\r\nHost: {address.authority}\r\nX-Big: {value}\r\n\r\n"
        return reply.body, len(sent)

    (body, sent), _ = asyncio.run(asyncio.wait_for(_serve(script, run), 20))
    assert body == str(sent).encode()  # every byte of it arrived


# --- connecting ----------------------------------------------------------------------


async def _os_error(target: str) -> OSError | None:
    """What a GET of ``target`` raised, if an :class:`OSError`."""
    async with ProbeClient() as client:
        try:
            await client.get(server_address(target), "/a", HEADERS, max_body_bytes=10)
        except OSError as exc:
            return exc
    return None


def test_a_refused_connection_is_an_os_error_naming_the_address() -> None:
    async def run() -> OSError | None:
        listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        listener.close()
        await listener.wait_closed()
        return await _os_error(f"http://127.0.0.1:{port}")

    error = asyncio.run(run())
    assert isinstance(error, ConnectionRefusedError), error
    assert "127.0.0.1" in str(error)


def test_a_host_name_is_looked_up_and_its_addresses_tried_in_turn() -> None:
    """``localhost`` may name ``::1`` before ``127.0.0.1``; a server listening on the
    IPv4 address only is still reached."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()

    async def run(target: str) -> bytes | None:
        address = server_address(target.replace("127.0.0.1", "localhost"))
        async with ProbeClient() as client:
            return (await client.get(address, "/a", HEADERS, max_body_bytes=10)).body

    body, connections = asyncio.run(_serve(script, run))
    assert body == b"ok"
    assert connections == 1


def test_a_name_that_does_not_resolve_is_an_os_error() -> None:
    assert isinstance(asyncio.run(_os_error("http://no-such-host.invalid:80")), OSError)


# --- addresses and TLS ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "scheme", "host", "port", "authority"),
    [
        ("http://127.0.0.1:8000", "http", "127.0.0.1", 8000, "127.0.0.1:8000"),
        ("https://replica.example/v1", "https", "replica.example", 443, "replica.example"),
        ("http://replica.example", "http", "replica.example", 80, "replica.example"),
        ("http://[::1]:8000/x", "http", "::1", 8000, "[::1]:8000"),
        ("https://[::1]", "https", "::1", 443, "[::1]"),
    ],
)
def test_a_cleaned_targets_address(
    target: str, scheme: str, host: str, port: int, authority: str
) -> None:
    address = server_address(target)
    assert (address.scheme, address.host, address.port, address.authority) == (
        scheme,
        host,
        port,
        authority,
    )


@pytest.mark.parametrize("target", ["ftp://host", "http://", "http://host:80x", "host:80"])
def test_a_target_that_was_not_cleaned_is_refused(target: str) -> None:
    with pytest.raises(InputError, match="not a cleaned target"):
        server_address(target)


def test_the_ssl_context_is_built_once_and_only_for_https() -> None:
    client = ProbeClient()
    assert client._context is None  # nothing built for a fleet of http servers
    first = client._ssl_context()
    assert first is client._ssl_context()
    assert first.verify_mode is ssl.CERT_REQUIRED
    assert first.check_hostname
    insecure = ProbeClient(verify=False)._ssl_context()
    assert insecure.verify_mode is ssl.CERT_NONE
    assert not insecure.check_hostname
    own = ssl.create_default_context()
    assert ProbeClient(verify=own)._ssl_context() is own


def test_a_closed_client_takes_no_more_probes() -> None:
    async def run() -> None:
        client = ProbeClient()
        await client.aclose()
        client.acquire(server_address("http://127.0.0.1:9"))

    with pytest.raises(InputError, match="closed"):
        asyncio.run(run())


# --- TLS through the public probe -----------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key (made by openssl)."""
    import shutil
    import subprocess

    openssl = shutil.which("openssl")
    assert openssl is not None, "openssl is needed to make the test certificate"
    where = tmp_path_factory.mktemp("tls")
    cert, key = str(where / "cert.pem"), str(where / "key.pem")
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", key, "-out", cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def _tls_probe(certificate: tuple[str, str], verify: bool | str) -> list[tuple[str, str]]:
    """Probe a TLS server answering 404 to everything: ``(route, transport + detail)``."""
    from vllm_evidence._capture.http import probe

    cert, key = certificate
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await _request(reader):
            writer.write(b"HTTP/1.1 404 X\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()

    async def main() -> list[tuple[str, str]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await script(reader, writer)
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        async with server:
            batch = await probe(
                f"https://127.0.0.1:{port}", verify=verify, development_routes=False
            )
        return [
            (e.route.name, f"{e.transport.value} {e.status} {e.detail}")
            for e in batch.all_exchanges()
        ]

    return asyncio.run(main())


def test_tls_verifies_against_the_given_ca_and_refuses_an_unknown_one(
    certificate: tuple[str, str],
) -> None:
    trusted = _tls_probe(certificate, certificate[0])
    assert {outcome for _, outcome in trusted} == {"answered 404 "}
    untrusted = _tls_probe(certificate, True)
    assert all(
        outcome.startswith("unreachable None SSLCertVerificationError") for _, outcome in untrusted
    ), untrusted
    insecure = _tls_probe(certificate, False)
    assert {outcome for _, outcome in insecure} == {"answered 404 "}


def test_concurrent_answers_larger_than_a_read_each_arrive_whole_and_unmixed() -> None:
    # Every plain connection of a client reads into one shared buffer: eight answers of
    # ~300 KB, each past one read and written in pieces, interleave on the loop.
    def body(index: int) -> bytes:
        return bytes([65 + index]) * (300_000 + index) + b"end %d" % index

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await _request(reader)
        index = int(head.split(b" ")[1].rsplit(b"/", 1)[1])
        data = body(index)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(data))
        for at in range(0, len(data), 70_000):
            writer.write(data[at : at + 70_000])
            await writer.drain()
            await asyncio.sleep(0)

    async def run(target: str) -> list[bytes | None]:
        address = server_address(target)
        async with ProbeClient() as client:
            client.acquire(address)
            replies = await asyncio.gather(
                *(
                    client.get(address, f"/r/{index}", HEADERS, max_body_bytes=1 << 20)
                    for index in range(8)
                )
            )
            client.release(address)
        return [reply.body for reply in replies]

    bodies, connections = asyncio.run(asyncio.wait_for(_serve(script, run), 20))
    assert connections == 8
    assert bodies == [body(index) for index in range(8)]
