"""What a caller chooses about the probe: :class:`ProbeSettings` and :class:`ProbeSession`.

Each setting is checked both ways: what it does on the wire (extra headers on every
request, a client certificate presented, how many servers a session reads at once, a
turn's wait not counted against a batch's deadline) and what it refuses.  Extra header
values are credentials: never in a repr or an error, scrubbed where a server reflects
them.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest

from tests._paths import REAL
from tests.capture._tls import make_certificate, with_tls_server
from tests.hostile._server import hostile_server, real_reply, response
from vllm_evidence._capture.batch import CaptureBatch, Transport
from vllm_evidence._capture.http import ProbeSession, ProbeSettings, probe, probe_sync
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import StubRequest, observe_requests, serve_capture

SECRET = "tenant-secret-8d1f"  # noqa: S105 - a test value


def test_probe_takes_every_setting_but_concurrency_and_by_the_same_names() -> None:
    fields = {field.name for field in attrs.fields(ProbeSettings)}
    for function in (probe, probe_sync):
        taken = set(inspect.signature(function).parameters) - {"url", "api_key", "body_budget"}
        assert taken == fields - {"concurrency"}


def test_the_defaults_are_the_documented_ones() -> None:
    settings = ProbeSettings()
    assert (settings.timeout, settings.deadline, settings.concurrency) == (10.0, 30.0, 64)
    assert (settings.verify, settings.development_routes, settings.headers) == (True, True, ())


# --- extra headers ---------------------------------------------------------------------


def test_extra_headers_go_on_every_request_after_the_probes_own() -> None:
    with serve_capture(REAL) as door:
        probe_sync(door.url, headers={"X-Tenant": SECRET, "X-Route": "blue"})
        received = list(door.requests)
    assert received
    for request in received:
        names = [name for name, _ in request.headers]
        assert names[:4] == ["host", "accept", "accept-encoding", "user-agent"]
        assert dict(request.headers)["x-tenant"] == SECRET
        assert dict(request.headers)["x-route"] == "blue"


def test_without_extra_headers_the_request_carries_only_the_probes_own() -> None:
    with serve_capture(REAL) as door:
        probe_sync(door.url)
        names = {tuple(name for name, _ in r.headers) for r in door.requests}
    assert names == {("host", "accept", "accept-encoding", "user-agent")}


def test_an_extra_header_value_is_never_shown() -> None:
    settings = ProbeSettings(headers=[("X-Tenant", SECRET)])
    assert SECRET not in repr(settings)
    assert SECRET not in str(settings)
    assert "X-Tenant" in repr(settings)  # the name is shown, the value is ***
    assert SECRET not in repr(ProbeSession(settings))


def test_an_extra_header_value_a_server_reflects_is_scrubbed() -> None:
    def reflect(target: str, headers: dict[str, str]) -> bytes:
        if target == "/metrics":
            return real_reply(target)
        return response(200, f'{{"echo":"{headers.get("x-tenant", "")}"}}'.encode())

    with hostile_server(reflect) as server:
        batch = probe_sync(server.url, headers={"X-Tenant": SECRET})
        sent = [r.headers.get("x-tenant") for r in server.requests]
    assert set(sent) == {SECRET}  # it went out
    bodies = [e.body for e in batch.exchanges if e.body is not None]
    assert bodies
    assert all(SECRET.encode() not in body for body in bodies)
    assert all(b'"echo":"***"' in body for body in bodies)


@pytest.mark.parametrize(
    "name", ["Host", "authorization", "ACCEPT", "Accept-Encoding", "Connection", "TE"]
)
def test_a_header_the_probe_writes_or_that_frames_the_answer_is_refused(name: str) -> None:
    with pytest.raises(InputError, match=f"extra header {name.lower()}:") as caught:
        ProbeSettings(headers={name: SECRET})
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    "headers",
    [
        {"X-A": f"{SECRET}\r\nX-B: 1"},
        {"X-A": f"caf\xe9 {SECRET}"},
        {"X A": SECRET},
        {"": SECRET},
    ],
)
def test_a_header_that_is_not_one_header_line_is_refused_without_its_value(
    headers: dict[str, str],
) -> None:
    with pytest.raises(InputError, match="not one header line") as caught:
        ProbeSettings(headers=headers)
    assert SECRET not in str(caught.value)


def test_a_header_named_twice_is_refused_whatever_the_case() -> None:
    with pytest.raises(InputError, match="named twice"):
        ProbeSettings(headers=[("X-A", "1"), ("x-a", "2")])
    assert ProbeSettings(headers=[("X-A", "1"), ("X-B", "2")]).headers == (
        ("X-A", "1"),
        ("X-B", "2"),
    )


# --- how many at once -------------------------------------------------------------------


def _order_of_keys(concurrency: int) -> list[str]:
    """Two stubs probed by one session at ``concurrency``, each probe under its own key:
    the key of every request in the order the stubs received them."""
    keys = ("sk-first-session-key", "sk-second-session-key")

    async def run(urls: list[str]) -> None:
        async with ProbeSession(ProbeSettings(concurrency=concurrency)) as session:
            await asyncio.gather(
                *(session.probe(u, api_key=k) for u, k in zip(urls, keys, strict=True))
            )

    seen: list[StubRequest]
    with (
        observe_requests() as seen,
        serve_capture(REAL, latency_s=0.05) as a,
        serve_capture(REAL, latency_s=0.05) as b,
    ):
        asyncio.run(run([a.url, b.url]))
    return [dict(r.headers)["authorization"].removeprefix("Bearer ") for r in seen]


def test_a_session_reads_no_more_servers_at_once_than_its_concurrency() -> None:
    one_at_a_time = _order_of_keys(1)
    # one probe's requests all came before the other's began
    changes = sum(1 for a, b in itertools.pairwise(one_at_a_time) if a != b)
    assert changes == 1
    # the other direction: two at once interleave
    together = _order_of_keys(2)
    assert sum(1 for a, b in itertools.pairwise(together) if a != b) > 1


def test_a_probe_waiting_for_its_turn_is_not_timed_while_it_waits() -> None:
    # One probe at a time, 1.5 s a batch; the slow server takes longer than that, so
    # the fast server's probe waits about 1.5 s: were the wait its time, every one of
    # its requests would find the deadline gone.
    settings = ProbeSettings(concurrency=1, deadline=1.5, timeout=1.0)

    async def run(slow: str, fast: str) -> tuple[CaptureBatch, CaptureBatch]:
        async with ProbeSession(settings) as session:
            first = asyncio.ensure_future(session.probe(slow))
            await asyncio.sleep(0)  # the slow server's probe takes the turn first
            second = await session.probe(fast)
            return await first, second

    with serve_capture(REAL, latency_s=0.4) as slow, serve_capture(REAL) as fast:
        held, waited = asyncio.run(run(slow.url, fast.url))
    assert Transport.TIMED_OUT in {e.transport for e in held.all_exchanges()}
    assert {e.transport for e in waited.all_exchanges()} == {Transport.ANSWERED}


# --- TLS: a client certificate ------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    where = tmp_path_factory.mktemp("tls")
    server_cert, server_key = make_certificate(where, "server")
    client_cert, client_key = make_certificate(where, "client")
    combined = where / "client-both.pem"
    combined.write_text(
        Path(client_cert).read_text(encoding="ascii") + Path(client_key).read_text("ascii"),
        encoding="ascii",
    )
    encrypted = where / "client-key-encrypted.pem"
    openssl = shutil.which("openssl")
    assert openssl is not None
    subprocess.run(
        [
            *(openssl, "pkey", "-in", client_key, "-aes256"),
            *("-passout", "pass:pw", "-out", str(encrypted)),
        ],
        check=True,
        capture_output=True,
    )
    return {
        "server_cert": server_cert,
        "server_key": server_key,
        "client_cert": client_cert,
        "client_key": client_key,
        "combined": str(combined),
        "encrypted": str(encrypted),
    }


def _outcomes(tls: dict[str, str], **settings: object) -> set[str]:
    async def run(url: str) -> CaptureBatch:
        return await probe(url, verify=tls["server_cert"], development_routes=False, **settings)  # type: ignore[arg-type]

    batch = asyncio.run(
        with_tls_server((tls["server_cert"], tls["server_key"]), run, client_ca=tls["client_cert"])
    )
    return {f"{e.transport.value} {e.status}" for e in batch.all_exchanges()}


def test_a_client_certificate_is_presented_to_a_server_that_asks_for_one(
    tls: dict[str, str],
) -> None:
    assert _outcomes(tls, client_certificate=tls["client_cert"], client_key=tls["client_key"]) == {
        "answered 404"
    }
    assert _outcomes(tls, client_certificate=tls["combined"]) == {"answered 404"}
    # the other direction: without one, the server ends every connection
    assert _outcomes(tls) == {"unreachable None"}


def test_an_encrypted_client_key_is_refused_not_prompted_for(tls: dict[str, str]) -> None:
    settings = ProbeSettings(client_certificate=tls["client_cert"], client_key=tls["encrypted"])
    with pytest.raises(InputError, match="encrypted key is not read"):
        ProbeSession(settings)


def test_a_client_certificate_that_is_no_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="client certificate"):
        ProbeSession(ProbeSettings(client_certificate=str(tmp_path / "missing.pem")))
    not_pem = tmp_path / "cert.pem"
    not_pem.write_text("not a certificate", encoding="utf-8")
    with pytest.raises(InputError, match="cannot load the client certificate"):
        ProbeSession(ProbeSettings(client_certificate=str(not_pem)))
