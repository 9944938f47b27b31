"""TLS on 127.0.0.1 for the probe's tests: certificates made by ``openssl``, and a server
answering every request ``404`` with no body."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def make_certificate(where: Path, name: str = "server") -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key: ``(cert.pem, key.pem)``."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "openssl is needed to make the test certificate"
    cert, key = str(where / f"{name}-cert.pem"), str(where / f"{name}-key.pem")
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


async def _answer_404(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(b"HTTP/1.1 404 X\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


async def with_tls_server(
    certificate: tuple[str, str],
    run: Callable[[str], Awaitable[T]],
    *,
    client_ca: str | None = None,
) -> T:
    """``run(url)`` against a TLS server on 127.0.0.1 presenting ``certificate``; with
    ``client_ca`` it asks every client for a certificate that CA signed."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(*certificate)
    if client_ca is not None:
        server_context.verify_mode = ssl.CERT_REQUIRED
        server_context.load_verify_locations(cafile=client_ca)
    server = await asyncio.start_server(_answer_404, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    async with server:
        return await run(f"https://127.0.0.1:{port}")
