"""The closed route set on the wire: every request line the probe sends, read by a server.

A plain HTTP server records each request line as it arrives (no stub front door: the
suite-wide guard would refuse the prefixed paths on purpose).  Whatever base URL a user
gives, the server sees GET requests whose path is the base path, kept as the user wrote
it, followed by exactly one closed route's target; a base path that would decode into
``?``, ``#`` or a control character is refused before anything is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import pytest

from vllm_evidence.capture.http import clean_target, probe_sync
from vllm_evidence.cli import main
from vllm_evidence.errors import InputError
from vllm_evidence.upstream.routes import PROBE_ROUTES

TARGETS = [route.target for route in PROBE_ROUTES]


class _Recorder(BaseHTTPRequestHandler):
    lines: list[str]

    def do_GET(self) -> None:  # the stdlib's naming
        self.lines.append(self.requestline)
        self.send_response(404)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_POST = do_GET  # noqa: N815  # the stdlib names handlers do_<METHOD>

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  # stdlib signature
        return


@contextmanager
def recording_server() -> Iterator[tuple[str, list[str]]]:
    lines: list[str] = []
    handler = type("Handler", (_Recorder,), {"lines": lines})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", lines
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "suffix",
    [
        "/collective_rpc%23",
        "/collective_rpc%23/",
        "/sleep%3Flevel=1%26x=",
        "/sleep%3flevel=1",
        "/a%00b",
        "/a%0d%0aX-Injected:%201",
        "/p%7f",
    ],
)
def test_a_base_path_that_would_end_a_route_is_refused_before_sending(suffix: str) -> None:
    with recording_server() as (base, lines):
        with pytest.raises(InputError, match="would read a different route"):
            probe_sync(base + suffix, timeout=2, deadline=5)
        assert lines == []


@pytest.mark.parametrize(
    "suffix",
    ["", "/", "/prefix", "/v1/proxy/", "/a%20b", "/%C3%BC", "/a%2Fb", "/collective_rpc"],
)
def test_every_request_line_is_the_base_path_then_one_closed_route(suffix: str) -> None:
    with recording_server() as (base, lines):
        probe_sync(base + suffix, timeout=2, deadline=5)
    raw_base = clean_target(base + suffix).removeprefix(base)
    assert len(lines) == len(TARGETS) + 1  # the /metrics bracket is read twice
    for line in lines:
        method, path, version = line.split(" ")
        assert method == "GET"
        assert version.startswith("HTTP/1.")
        assert path.startswith(raw_base)
        rest = path[len(raw_base) :]
        assert rest in TARGETS, line
        # decoded as a server routes it, the path still ends in that route, and the only
        # query is the route's own
        decoded = unquote(path.partition("?")[0])
        assert decoded.endswith(rest.partition("?")[0])
        assert path.count("?") == rest.count("?")


def test_the_base_path_is_kept_as_written_not_decoded() -> None:
    assert clean_target("http://h:8000/a%20b/") == "http://h:8000/a%20b"
    assert clean_target("http://h:8000/collective_rpc") == "http://h:8000/collective_rpc"
    with pytest.raises(InputError):
        clean_target("http://h:8000/collective_rpc%23")


@pytest.mark.parametrize(
    "argv",
    [
        ["probe", "http://127.0.0.1:9/a%00"],
        ["probe", "http://127.0.0.1:9/b%0d%0a"],
        ["probe", "http://127.0.0.1:9/collective_rpc%23"],
        ["probe", "http://127.0.0.1:9", "--timeout", "nan"],
        ["probe", "http://127.0.0.1:9", "--timeout", "inf"],
        ["probe", "http://127.0.0.1:9", "--timeout", "-1"],
        ["probe", "http://127.0.0.1:9", "--api-key-file", "/dev/zero"],
    ],
)
def test_bad_cli_input_is_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("vllm-evidence probe: error: ")
    assert "Traceback" not in err


def test_a_fleet_row_names_a_refused_base_path(capsys: pytest.CaptureFixture[str]) -> None:
    with recording_server() as (base, lines):
        status = main(["probe", base + "/a%00", base + "/b%0d%0a", "--timeout", "2"])
    out, _ = capsys.readouterr()
    assert status == 0
    assert out.count("would read a different route") == 2
    assert lines == []
