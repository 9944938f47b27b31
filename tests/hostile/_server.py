"""A hostile front door on 127.0.0.1: raw bytes per route, every request line recorded.

Unlike :mod:`vllm_evidence.testing._stub` (a well-behaved server with faults), this one
writes whatever bytes a mode asks for — malformed header lines, reflected credentials,
control characters — on a raw socket, so the probe meets what an adversary can send.
Each request's raw request line and headers are kept in ``requests``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

import attrs

from tests._paths import REAL

#: What a reply function gets: the request target and the request's headers (lower-cased).
Reply = Callable[[str, dict[str, str]], bytes]


@attrs.define
class Received:
    """One request as it arrived: the raw request line and its headers."""

    line: bytes
    headers: dict[str, str]

    @property
    def target(self) -> str:
        parts = self.line.split(b" ")
        return parts[1].decode("latin-1") if len(parts) == 3 else ""


def response(
    status: int, body: bytes, *, headers: tuple[tuple[str, str], ...] = (), raw: bytes = b""
) -> bytes:
    """A whole HTTP/1.1 response; ``raw`` is spliced into the header block verbatim."""
    head = f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\nconnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode("latin-1") + raw + b"\r\n" + body


_STEMS: Final = {
    "/version": "version",
    "/v1/models": "v1_models",
    "/metrics": "metrics",
    "/health": "health",
    "/server_info": "server_info",
    "/server_info?config_format=json": "server_info__config_format_json",
    "/get_world_size": "get_world_size",
}


def real_reply(target: str, overrides: dict[str, bytes] | None = None) -> bytes:
    """The real vLLM 0.32.0 capture's body for ``target`` (or an override), 200."""
    stem = _STEMS.get(target)
    if stem is None:
        return response(404, b'{"detail":"Not Found"}')
    body = (overrides or {}).get(stem)
    if body is None:
        body = (REAL / f"{stem}.body").read_bytes()
    return response(200, body)


def auth_of(headers: dict[str, str]) -> str:
    return headers.get("authorization", "")


# -- modes that reflect the Authorization header (item 6) --------------------------------


def reflect_in_malformed_header(target: str, headers: dict[str, str]) -> bytes:
    """A header line with no colon, quoting the key: the client's parser rejects it
    (``/metrics`` answers properly, so the batch is reported, not refused)."""
    if target == "/metrics":
        return real_reply(target)
    return response(200, b"{}", raw=f"X-Echo {auth_of(headers)}\r\n".encode("latin-1"))


def reflect_in_location(target: str, headers: dict[str, str]) -> bytes:
    """A redirect whose target carries the key (and a userinfo password)."""
    if target == "/metrics":
        return real_reply(target)
    token = auth_of(headers).removeprefix("Bearer ")
    where = f"http://mallory:Pw{token}@127.0.0.1:1/login?token={token}&auth={auth_of(headers)}"
    return response(302, b"", headers=(("location", where),))


def reflect_in_body(target: str, headers: dict[str, str]) -> bytes:
    """A 200 whose body is an error text quoting the key."""
    text = f'{{"object":"error","message":"bad credentials {auth_of(headers)}"}}'
    return response(200, text.encode("latin-1"))


@attrs.define
class HostileServer:
    """A running hostile server: ``url`` to probe, ``requests`` as received."""

    url: str
    requests: list[Received]


def _read_request(conn: socket.socket) -> Received | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head = data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    headers = {}
    for line in head[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return Received(head[0], headers)


@contextmanager
def hostile_server(reply: Reply) -> Iterator[HostileServer]:
    """Serve ``reply`` on 127.0.0.1 until the context closes."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.05)
    port = listener.getsockname()[1]
    server = HostileServer(url=f"http://127.0.0.1:{port}", requests=[])
    stopping = threading.Event()
    lock = threading.Lock()

    def handle(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                received = _read_request(conn)
                if received is None:
                    return
                with lock:
                    server.requests.append(received)
                conn.sendall(reply(received.target, received.headers))
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                return

    def serve() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stopping.set()
        thread.join(timeout=2)
        listener.close()


# -- modes whose verdicts must not overstate (item 8) -------------------------------------


def _real_text(stem: str) -> str:
    return (REAL / f"{stem}.body").read_text(encoding="utf-8")


def _with_engine_series(engine: str, tokens: str) -> bytes:
    """The real ``/metrics`` with one more ``cache_config_info`` series."""
    text = _real_text("metrics")
    line = next(ln for ln in text.splitlines() if ln.startswith("vllm:cache_config_info{"))
    extra = line.replace('engine="0"', f'engine="{engine}"').replace(
        'kv_cache_size_tokens="4194304"', f'kv_cache_size_tokens="{tokens}"'
    )
    return text.replace(line, f"{line}\n{extra}").encode()


def dp1_with_two_engine_series(target: str, headers: dict[str, str]) -> bytes:
    """``/server_info`` says DP=1; ``/metrics`` has capacity series for engines 0 and 1."""
    return real_reply(target, {"metrics": _with_engine_series("1", "4194304")})


def two_figures_for_one_engine(target: str, headers: dict[str, str]) -> bytes:
    """Two ``cache_config_info`` series for engine 0 with different capacities."""
    return real_reply(target, {"metrics": _with_engine_series("0", "2097152")})


#: Served ids a terminal would act on: ESC sequences, NUL, a newline, a bidi override.
CONTROL_IDS = ("evil\x1b[2J\x1b[31mRED", "nul\x00id", "two\nlines", "bidi\u202etxt.exe")


def control_characters_in_ids(target: str, headers: dict[str, str]) -> bytes:
    """``/v1/models`` serves ids holding control characters."""
    import json

    cards = [
        {"id": i, "object": "model", "root": "/m", "parent": None, "max_model_len": 2048}
        for i in CONTROL_IDS
    ]
    body = json.dumps({"object": "list", "data": cards}, ensure_ascii=False).encode()
    return real_reply(target, {"v1_models": body})


# -- modes that size allocations and parsing time (items 2-4) -----------------------------

#: Just under the probe's 8 MiB body cap: the largest body a server can make it parse.
NEAR_CAP = 8 * 1024 * 1024 - 4096


def _server_info_json_with(**parallel: object) -> bytes:
    import json

    document = json.loads(_real_text("server_info__config_format_json"))
    config = document["vllm_config"]["parallel_config"]
    config.update(parallel)
    return json.dumps(document).encode()


def sizes_past_any_deployment(target: str, headers: dict[str, str]) -> bytes:
    """DP 1,000,000,000 and TP 30,000,000 in /server_info; world size 1e9 (item 2)."""
    return real_reply(
        target,
        {
            "server_info__config_format_json": _server_info_json_with(
                data_parallel_size=1_000_000_000, tensor_parallel_size=30_000_000
            ),
            "get_world_size": b"1000000000",
        },
    )


def five_thousand_digits(target: str, headers: dict[str, str]) -> bytes:
    """5,000-digit sizes: past Python's own int() limit (item 4)."""
    body = _server_info_json_with(tensor_parallel_size=7_777_777)  # then made 5,000 digits
    body = body.replace(b"7777777", b"9" * 5000)
    return real_reply(
        target,
        {"server_info__config_format_json": body, "get_world_size": b"9" * 5000},
    )


def deep_json_near_the_cap(target: str, headers: dict[str, str]) -> bytes:
    """Every JSON route answers ``[`` repeated to just under the body cap (item 4)."""
    if target == "/metrics":
        return real_reply(target)
    return response(200, b"[" * NEAR_CAP)


def metrics_scan_worst_case(target: str, headers: dict[str, str]) -> bytes:
    """A newline-free /metrics line of repeated names just under the cap (item 3)."""
    if target != "/metrics":
        return real_reply(target)
    unit = b"vllm:cache_config_info "
    return response(200, unit * (NEAR_CAP // len(unit)))


#: The hostile modes, by what they try.
MODES: dict[str, Reply] = {
    "reflect-malformed-header": reflect_in_malformed_header,
    "reflect-location": reflect_in_location,
    "reflect-body": reflect_in_body,
    "dp1-two-engine-series": dp1_with_two_engine_series,
    "two-figures-one-engine": two_figures_for_one_engine,
    "control-characters-in-ids": control_characters_in_ids,
    "sizes-past-any-deployment": sizes_past_any_deployment,
    "five-thousand-digits": five_thousand_digits,
    "deep-json-near-the-cap": deep_json_near_the_cap,
    "metrics-scan-worst-case": metrics_scan_worst_case,
}
