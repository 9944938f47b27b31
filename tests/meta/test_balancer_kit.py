"""The test kit's round-robin balancer leaves nothing to the garbage collector.

A probe keeps its connection alive; when the balancer's context closes with that
connection still open, its handler must end and its transport be closed by the balancer's
own loop.  Left to the collector, the transport's ``ResourceWarning`` surfaced as an
unraisable-exception error in whichever test ran next (a CI run failed that way).
"""

from __future__ import annotations

import gc
import socket
import warnings

from tests._balancer import balancer
from tests._paths import REAL
from vllm_evidence.testing._stub import serve_capture


def test_a_kept_alive_connection_is_closed_when_the_balancer_stops() -> None:
    with serve_capture(REAL) as upstream:
        with balancer([upstream.url]) as door:
            host, port = door.url.removeprefix("http://").split(":")
            client = socket.create_connection((host, int(port)), timeout=10)
            client.sendall(b"GET /version HTTP/1.1\r\nHost: kit\r\n\r\n")
            assert client.recv(65536).startswith(b"HTTP/1.1 200")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gc.collect()
        # the balancer closed its side: the client reads the end of the stream
        assert client.recv(1) == b""
        client.close()
    leaked = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaked == [], [str(w.message) for w in leaked]
