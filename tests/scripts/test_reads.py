"""The loopback reads: only the closed route set, the raw head kept, the key sent only when
asked; a recorded read or log neutralised with a true ``content-length``."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_vllm.common import LiveTierError
from live_vllm.reads import ROUTES, fix_content_length, get, record_route, save_log
from live_vllm.runs import Run
from live_vllm.scenarios import SCENARIOS

KEY = "live-tier-key-feedfacefeedface"


class _FrontDoor(http.server.BaseHTTPRequestHandler):
    """``/version`` names a machine path; ``/v1/models`` wants the key; the rest 404."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, str | None]] = []  # noqa: RUF012 - the requests received
    body_path = ""

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization")
        _FrontDoor.seen.append((self.command, self.path, auth))
        if self.path == "/version":
            status, body = 200, f'{{"version":"0.32.0","at":"{self.body_path}"}}'.encode()
        elif self.path == "/v1/models":
            ok = auth == f"Bearer {KEY}"
            status, body = (200, b'{"data":[]}') if ok else (401, b'{"error":"Unauthorized"}')
        else:
            status, body = 404, b'{"detail":"Not Found"}'
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        """Quiet."""


@pytest.fixture
def port(tmp_path: Path) -> Iterator[int]:
    _FrontDoor.seen = []
    _FrontDoor.body_path = str(tmp_path / "run" / "models" / "tiny-llama")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FrontDoor)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _run(tmp_path: Path, port: int) -> Run:
    return Run(env_dir=tmp_path / "venv", root=tmp_path / "run", port=port, api_key=KEY)


def test_the_routes_are_the_seven_the_fixtures_hold_in_order() -> None:
    assert [path for _, path in ROUTES] == [
        "/version",
        "/v1/models",
        "/metrics",
        "/server_info",
        "/server_info?config_format=json",
        "/get_world_size",
        "/health",
    ]
    assert ROUTES[4][0] == "server_info__config_format_json"


@pytest.mark.parametrize(
    "path", ["/v1/completions", "/", "/health?x=1", "/metrics/", "http://x/health"]
)
def test_a_path_outside_the_routes_is_refused_before_connecting(path: str, port: int) -> None:
    with pytest.raises(LiveTierError, match="not one of the recorded routes"):
        get(port, path)
    assert _FrontDoor.seen == []


def test_a_read_gives_the_status_the_raw_head_and_the_body(port: int) -> None:
    status, head, body = get(port, "/health")
    assert status == 404
    assert body == b'{"detail":"Not Found"}'
    assert head.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert b"\r\ncontent-length: 22\r\n" in head
    assert head.endswith(b"\r\n\r\n")
    assert _FrontDoor.seen == [("GET", "/health", None)]


def test_the_key_is_sent_only_when_given(port: int) -> None:
    assert get(port, "/v1/models")[0] == 401
    assert get(port, "/v1/models", token=KEY)[0] == 200
    assert [auth for _, _, auth in _FrontDoor.seen] == [None, f"Bearer {KEY}"]


def test_a_recorded_read_is_neutral_and_its_length_true(port: int, tmp_path: Path) -> None:
    run = _run(tmp_path, port)
    status, name = record_route(run, tmp_path / "out", "version", "/version")
    assert (status, name) == (200, "out/version")
    body = (tmp_path / "out" / "version.body").read_bytes()
    head = (tmp_path / "out" / "version.headers").read_bytes()
    assert body == b'{"version":"0.32.0","at":"/models/tiny-llama"}'
    assert f"\r\ncontent-length: {len(body)}\r\n".encode() in head


def test_the_content_length_is_set_to_the_bodys_and_nothing_else_changes() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 120\r\nx-content-length: 7\r\n\r\n"
    assert fix_content_length(head, b"12345") == (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nx-content-length: 7\r\n\r\n"
    )
    assert fix_content_length(b"HTTP/1.1 204 No Content\r\n\r\n", b"") == (
        b"HTTP/1.1 204 No Content\r\n\r\n"
    )


def test_a_saved_log_is_neutral(tmp_path: Path) -> None:
    run = _run(tmp_path, 1)
    src = tmp_path / "startup.log"
    src.write_bytes(f"model={run.model} 'api_key': '***' {KEY}\n".encode())
    tp2_apikey = SCENARIOS[1]
    save_log(run, src, tmp_path / "out" / "startup.log", tp2_apikey)
    saved = (tmp_path / "out" / "startup.log").read_bytes()
    assert saved == b"model=/models/tiny-llama 'api_key': '***' ***\n"
