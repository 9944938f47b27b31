"""A client that hangs up mid-answer is no traceback on the stub's stderr; any other
error of a handler still is."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from tests._paths import REAL
from vllm_evidence.testing._stub import _Server, serve_capture

#: ``SO_LINGER`` on, zero seconds: ``close()`` sends RST, so the server's write fails.
_RESET = struct.pack("ii", 1, 0)


def _handled(server: _Server, error: BaseException) -> None:
    """``handle_error`` as socketserver calls it: inside the ``except`` of the error."""
    try:
        raise error
    except type(error):
        with socket.socket() as sock:
            server.handle_error(sock, ("127.0.0.1", 1))


def test_a_client_that_resets_leaves_stderr_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    with serve_capture(REAL) as door:
        host, _, port = door.url.removeprefix("http://").rstrip("/").partition(":")
        for _ in range(5):
            with socket.create_connection((host, int(port))) as conn:
                conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        time.sleep(0.3)
    assert "Traceback" not in capfd.readouterr().err


def test_any_other_error_is_still_reported(capfd: pytest.CaptureFixture[str]) -> None:
    server = _Server.__new__(_Server)  # handle_error reads nothing of the instance
    _handled(server, ValueError("a real bug in a handler"))
    assert "ValueError: a real bug in a handler" in capfd.readouterr().err
    _handled(server, ConnectionResetError("peer reset"))
    _handled(server, BrokenPipeError("peer gone"))
    assert capfd.readouterr().err == ""
