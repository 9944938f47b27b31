"""The closed set of routes read (GET only, loopback only), and how a read or a server's
log is recorded (neutralised)."""

from __future__ import annotations

import http.client
import re
from pathlib import Path

from live_vllm.common import HOST, REQUEST_TIMEOUT_S, LiveTierError, log
from live_vllm.runs import Run
from live_vllm.scenarios import Scenario

__all__ = [
    "GATE_ROUTES",
    "ROUTES",
    "fix_content_length",
    "gate_get",
    "get",
    "record_route",
    "save_log",
]

#: What the gate (``launch --serve``) serves, read in ``tp2-gate-worker-kill``. GET only.
GATE_ROUTES = frozenset({"/ready", "/live", "/metrics", "/assessment"})

#: The closed set of routes read, in order: (stem, path). GET only.
ROUTES: tuple[tuple[str, str], ...] = (
    ("version", "/version"),
    ("v1_models", "/v1/models"),
    ("metrics", "/metrics"),
    ("server_info", "/server_info"),
    ("server_info__config_format_json", "/server_info?config_format=json"),
    ("get_world_size", "/get_world_size"),
    ("health", "/health"),
)


def get(
    port: int, path: str, *, token: str | None = None, timeout: float = REQUEST_TIMEOUT_S
) -> tuple[int, bytes, bytes]:
    """GET ``path`` from the loopback server; return (status, raw head, body). A path not
    in :data:`ROUTES` is refused before any connection is made."""
    if path not in {p for _, p in ROUTES}:
        msg = f"refusing to read {path!r}: not one of the recorded routes"
        raise LiveTierError(msg)
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        version = {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(resp.version, "HTTP/1.1")
        lines = [f"{version} {resp.status} {resp.reason}"]
        lines += [f"{name}: {value}" for name, value in resp.getheaders()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return resp.status, head, body
    finally:
        conn.close()


def gate_get(port: int, path: str, *, timeout: float = 2.0) -> tuple[int, bytes]:
    """GET ``path`` from the gate on loopback; return (status, body). A path the gate does
    not serve is refused before any connection is made."""
    if path not in GATE_ROUTES:
        msg = f"refusing to read {path!r} from the gate: not one of its routes"
        raise LiveTierError(msg)
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def fix_content_length(head: bytes, body: bytes) -> bytes:
    """After neutralising a body, keep its ``content-length`` header true."""
    return re.sub(
        rb"(?im)^(content-length:\s*)\d+(\r?)$",
        lambda m: m.group(1) + str(len(body)).encode() + m.group(2),
        head,
    )


def record_route(
    run: Run, out: Path, stem: str, path: str, *, token: str | None = None
) -> tuple[int, str]:
    """Read ``path`` and write ``out/<stem>.body`` and ``out/<stem>.headers``, both
    neutralised; return (status, ``<out's name>/<stem>``)."""
    status, head, body = get(run.port, path, token=token)
    body = run.neutralise(body)
    head = fix_content_length(run.neutralise(head), body)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.body").write_bytes(body)
    (out / f"{stem}.headers").write_bytes(head)
    log(f"    GET {path}{' (with key)' if token else ''} -> {status} ({len(body)} bytes)")
    return status, f"{out.name}/{stem}"


def save_log(run: Run, src: Path, dst: Path, scenario: Scenario) -> None:
    """Copy the server log ``src`` to ``dst``, neutralised (saying whether the key was in
    it, and whether its non-default args line shows the key as ``'***'``)."""
    data = src.read_bytes()
    if scenario.api_key:
        if run.api_key.encode() in data:
            log("  NOTE: the API key appeared verbatim in the server log (scrubbed)")
        if b"'api_key': ['***']" not in data and b"'api_key': '***'" not in data:
            log("  NOTE: the log's non-default args line does not show the key as '***'")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(run.neutralise(data))
