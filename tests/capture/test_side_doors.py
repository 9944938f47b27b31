"""No side door (issue 31): nothing a caller passes to the probe writes a probed batch.

The probe takes settings (timeouts, the body cap, TLS verification, a client
certificate, extra headers, how many servers at once), never a transport or a client
object: a batch whose origin is ``probed`` holds what the network peer sent over the
probe's own connections.  Every documented parameter of :func:`probe`,
:func:`probe_sync`, :class:`ProbeSettings` and :class:`ProbeSession` is tried here, both
ways:

* with what a caller could slip bytes in through (an object that writes answers, as
  ``httpx.MockTransport`` did through the old ``client=``; an SSL context whose
  ``sslobject_class`` forges the plaintext; a header that would end the request early):
  refused with a one-line :class:`InputError`, before any request;
* with a value it takes, against a port where nothing listens (the issue's forged
  "probe" of a host that does not exist): nothing is answered and no serving claim is
  established, while the default probe of a stub front door establishes one (so the
  check can fail).

The parameter lists are read from the signatures: a parameter added later fails
:func:`test_every_documented_parameter_is_tried` until it is tried here.
"""

from __future__ import annotations

import asyncio
import inspect
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import attrs
import pytest

from tests._paths import REAL
from tests._ports import nothing_listening
from tests.capture._tls import make_certificate, with_tls_server
from tests.hostile._server import HostileServer, hostile_server, real_reply
from vllm_evidence import Claim, assess, claim_established, readback_from_batch
from vllm_evidence._capture.batch import CaptureBatch, CaptureOrigin, Transport
from vllm_evidence._capture.http import BodyBudget, ProbeSession, ProbeSettings, probe, probe_sync
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import serve_capture

CLAIMS: tuple[Claim, ...] = get_args(Claim)

#: What a forging transport would hand back as the server's answer.
FORGED = b'HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n{"version":"0.32.0"}'


class ForgingTransport:
    """An object that writes answers (what ``httpx.MockTransport`` was to ``client=``),
    posing as a URL and as a path too."""

    def handle_async_request(self, request: object) -> bytes:
        return FORGED

    def __call__(self, *args: object, **kwargs: object) -> bytes:
        return FORGED

    def __str__(self) -> str:
        return "http://127.0.0.1:8000"

    def __fspath__(self) -> str:
        return str(REAL / "version.body")


class ForgingSSLObject(ssl.SSLObject):
    """A TLS object whose plaintext is the caller's."""

    def read(self, len: int = 1024, buffer: Any = None) -> Any:  # noqa: A002 - ssl's name
        return FORGED


class ForgingContext(ssl.SSLContext):
    """A context of a class of the caller's: its connections would be ForgingSSLObjects."""

    sslobject_class = ForgingSSLObject


def _context_with_forging_objects() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.sslobject_class = ForgingSSLObject  # the documented attribute
    return context


# Subclasses made at run time: the classes are final to the type checker, not to Python.
SettingsSubclass: Any = attrs.frozen(type("SettingsSubclass", (ProbeSettings,), {}))
BudgetSubclass: Any = type("BudgetSubclass", (BodyBudget,), {})

#: Per parameter, values that must be refused before any request.
REFUSED: dict[str, tuple[Callable[[], object], ...]] = {
    "url": (
        ForgingTransport,
        lambda: "http://user:pw@127.0.0.1:1",
        lambda: b"http://127.0.0.1:1",
    ),
    "api_key": (ForgingTransport, lambda: "key\r\nX-Injected: 1", lambda: b"bytes-key"),
    "timeout": (ForgingTransport, lambda: float("nan"), lambda: -1.0, lambda: True),
    "deadline": (ForgingTransport, lambda: float("inf"), lambda: 0, lambda: "30"),
    "development_routes": (ForgingTransport, lambda: 1, lambda: "yes"),
    "max_body_bytes": (ForgingTransport, lambda: 0, lambda: 1.5, lambda: True),
    "verify": (
        ForgingTransport,
        lambda: ForgingContext(ssl.PROTOCOL_TLS_CLIENT),
        _context_with_forging_objects,
        lambda: 1,
        lambda: b"ca.pem",
    ),
    "client_certificate": (ForgingTransport, lambda: b"cert.pem", lambda: 1),
    "client_key": (ForgingTransport, lambda: "key.pem"),  # without a certificate too
    "headers": (
        ForgingTransport,
        lambda: {"Host": "evil.example"},
        lambda: {"Content-Length": "0"},
        lambda: {"X-Split": "v\r\n\r\nGET /collective_rpc HTTP/1.1"},
        lambda: {"X-Tenant": "caf\xe9"},
        lambda: [("x-a",)],
        lambda: "x-a: b",
        lambda: [("X-A", "1"), ("x-a", "2")],
    ),
    "body_budget": (ForgingTransport, lambda: BudgetSubclass(1 << 30), lambda: 1 << 30),
    "concurrency": (ForgingTransport, lambda: 0, lambda: True, lambda: 2.0),
    "settings": (ForgingTransport, SettingsSubclass, lambda: {"timeout": 1.0}),
}


#: The calls with values their types do not allow (the point: callers outside mypy).
untyped_probe: Any = probe
untyped_probe_sync: Any = probe_sync
UntypedSettings: Any = ProbeSettings
UntypedSession: Any = ProbeSession


def _parameters(function: Callable[..., object]) -> set[str]:
    return {name for name in inspect.signature(function).parameters if name != "self"}


PROBE = _parameters(probe)
PROBE_SYNC = _parameters(probe_sync)
SETTINGS = {field.name for field in attrs.fields(ProbeSettings)}
SESSION = _parameters(ProbeSession.__init__) | _parameters(ProbeSession.probe)


def test_every_documented_parameter_is_tried() -> None:
    documented = PROBE | PROBE_SYNC | SETTINGS | SESSION
    assert documented == set(REFUSED) == set(ACCEPTED)
    # the transport door is shut: no parameter takes a client or a transport (the two
    # "client" names are a TLS client certificate's files)
    assert {name for name in documented if "client" in name or "transport" in name} == {
        "client_certificate",
        "client_key",
    }


@pytest.fixture
def server() -> Iterator[HostileServer]:
    """A server that records every request: a refusal happens before any."""
    with hostile_server(lambda target, headers: real_reply(target)) as running:
        yield running


def _refused(call: Callable[[], object]) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    text = str(caught.value)
    assert "\n" not in text
    assert "Traceback" not in text
    return caught.value


def _cases(names: set[str]) -> list[tuple[str, int]]:
    return [(name, index) for name in sorted(names) for index in range(len(REFUSED[name]))]


def _id(case: tuple[str, int]) -> str:
    return f"{case[0]}-{case[1]}"


@pytest.mark.parametrize("case", _cases(PROBE), ids=_id)
def test_probe_refuses_what_could_write_the_bytes(
    case: tuple[str, int], server: HostileServer
) -> None:
    name, index = case
    value = REFUSED[name][index]()

    def call() -> object:
        if name == "url":
            return asyncio.run(untyped_probe(value))
        return asyncio.run(untyped_probe(server.url, **{name: value}))

    _refused(call)
    assert server.requests == []


@pytest.mark.parametrize("case", _cases(PROBE_SYNC), ids=_id)
def test_probe_sync_refuses_what_could_write_the_bytes(
    case: tuple[str, int], server: HostileServer
) -> None:
    name, index = case
    value = REFUSED[name][index]()
    if name == "url":
        _refused(lambda: untyped_probe_sync(value))
    else:
        _refused(lambda: untyped_probe_sync(server.url, **{name: value}))
    assert server.requests == []


@pytest.mark.parametrize("case", _cases(SETTINGS), ids=_id)
def test_settings_refuse_what_could_write_the_bytes(case: tuple[str, int]) -> None:
    name, index = case
    value = REFUSED[name][index]()
    _refused(lambda: UntypedSettings(**{name: value}))


@pytest.mark.parametrize("case", _cases(SESSION), ids=_id)
def test_a_session_refuses_what_could_write_the_bytes(
    case: tuple[str, int], server: HostileServer
) -> None:
    name, index = case
    value = REFUSED[name][index]()

    async def call() -> object:
        if name in ("settings", "body_budget"):
            return UntypedSession(**{name: value})
        async with ProbeSession() as session:
            untyped: Any = session.probe
            if name == "url":
                return await untyped(value)
            return await untyped(server.url, **{name: value})

    _refused(lambda: asyncio.run(call()))
    assert server.requests == []


@pytest.mark.parametrize(
    "call",
    [
        lambda: untyped_probe_sync("http://127.0.0.1:1", client=ForgingTransport()),
        lambda: asyncio.run(untyped_probe("http://127.0.0.1:1", transport=ForgingTransport())),
        lambda: UntypedSettings(client=ForgingTransport()),
        lambda: UntypedSession(client=ForgingTransport()),
    ],
    ids=["probe_sync-client", "probe-transport", "settings-client", "session-client"],
)
def test_there_is_no_parameter_for_a_client_or_a_transport(call: Callable[[], object]) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        call()


# --- what is taken cannot make an answer ----------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


def _combined(pair: tuple[str, str]) -> str:
    """The certificate and its key in one PEM file."""
    both = Path(pair[0]).with_name("both.pem")
    both.write_text(Path(pair[0]).read_text("ascii") + Path(pair[1]).read_text("ascii"), "ascii")
    return str(both)


#: Per parameter, a value it takes (other than its default); a callable gets the
#: certificate fixture's ``(cert, key)``.
ACCEPTED: dict[str, Callable[[tuple[str, str]], dict[str, Any]]] = {
    "url": lambda _: {},
    "api_key": lambda _: {"api_key": "sk-side-door-5150"},
    "timeout": lambda _: {"timeout": 2.0},
    "deadline": lambda _: {"deadline": 4.0},
    "development_routes": lambda _: {"development_routes": False},
    "max_body_bytes": lambda _: {"max_body_bytes": 4096},
    "verify": lambda pair: {"verify": ssl.create_default_context(cafile=pair[0])},
    "client_certificate": lambda pair: {"verify": False, "client_certificate": _combined(pair)},
    "client_key": lambda pair: {"client_certificate": pair[0], "client_key": pair[1]},
    "headers": lambda _: {"headers": {"X-Tenant": "tenant-7", "X-Route": "a"}},
    "body_budget": lambda _: {"body_budget": BodyBudget(1 << 30)},
    "concurrency": lambda _: {"concurrency": 3},
    "settings": lambda _: {"settings": ProbeSettings(timeout=2.0)},
}


def _no_claim(batch: CaptureBatch) -> bool:
    assessment = assess(readback_from_batch(batch))
    return not any(claim_established(assessment, claim) for claim in CLAIMS)


def test_the_check_can_fail_a_stub_front_door_establishes_a_claim() -> None:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    assert batch.origin is CaptureOrigin.PROBED
    assert not _no_claim(batch)


@pytest.mark.parametrize("name", sorted(PROBE | SETTINGS | SESSION))
def test_no_parameter_gets_an_answer_from_a_host_where_nothing_listens(
    name: str, certificate: tuple[str, str]
) -> None:
    given = ACCEPTED[name](certificate)
    dead = nothing_listening()

    async def run() -> CaptureBatch:
        settings = {k: v for k, v in given.items() if k in SETTINGS and k != "concurrency"}
        if name in ("settings", "concurrency"):
            chosen: ProbeSettings = given.get("settings") or UntypedSettings(**given)
            async with ProbeSession(chosen) as session:
                return await session.probe(dead)
        extra = {k: v for k, v in given.items() if k not in SETTINGS}
        batch: CaptureBatch = await untyped_probe(dead, **settings, **extra)
        return batch

    batch = asyncio.run(asyncio.wait_for(run(), 60))
    assert batch.origin is CaptureOrigin.PROBED  # honest: read by this process...
    assert {e.transport for e in batch.all_exchanges()} == {Transport.UNREACHABLE}
    assert all(e.body is None and e.status is None for e in batch.all_exchanges())
    assert _no_claim(batch)  # ...and nothing to establish a claim on


# --- an SSL context stays the ssl module's own ----------------------------------------


def _loops() -> list[str]:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return ["asyncio"]
    return ["asyncio", "uvloop"]


@pytest.mark.parametrize("loop", _loops())
def test_an_ssl_context_changed_after_the_session_was_made_wraps_no_connection(
    certificate: tuple[str, str], loop: str
) -> None:
    context = ssl.create_default_context(cafile=certificate[0])

    async def run(url: str) -> tuple[CaptureBatch, CaptureBatch]:
        settings = ProbeSettings(verify=context, development_routes=False)
        async with ProbeSession(settings) as session:
            honest = await session.probe(url)
            context.sslobject_class = ForgingSSLObject  # set once the settings were checked
            changed = await session.probe(url)
        return honest, changed

    def main() -> Any:
        return with_tls_server(certificate, run)

    if loop == "uvloop":
        import uvloop

        honest, changed = uvloop.run(main())
    else:
        honest, changed = asyncio.run(main())
    # the server's own answers, read through the standard SSLObject
    assert {(e.transport, e.status) for e in honest.all_exchanges()} == {(Transport.ANSWERED, 404)}
    # the changed context wraps nothing: no connection, no forged 200
    assert {e.transport for e in changed.all_exchanges()} == {Transport.UNREACHABLE}
    assert all("SSL context was changed" in e.detail for e in changed.all_exchanges())


def test_a_ca_path_that_is_a_served_file_is_read_as_pem_not_as_an_answer(
    tmp_path: Path,
) -> None:
    # A "CA bundle" that holds an HTTP answer is not PEM: refused, never read as bytes
    # of the server.
    path = tmp_path / "ca.pem"
    path.write_bytes(FORGED)
    _refused(lambda: ProbeSession(ProbeSettings(verify=str(path))))
