"""The probe against the stub front door serving the real capture, with injected faults."""

from __future__ import annotations

import asyncio
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests._evidence import front_door_join
from tests._paths import REAL
from tests.conftest import ALLOWED_TARGETS, forbidden
from vllm_evidence._adapters.metrics import MetricsObservation
from vllm_evidence._adapters.models import ServedModels
from vllm_evidence._adapters.outcome import (
    HttpError,
    NotFound,
    NotRequested,
    Parsed,
    Redirected,
    TimedOut,
    TooLarge,
    Unauthorized,
    Unparsed,
    Unreachable,
)
from vllm_evidence._adapters.server_info import ServerInfo
from vllm_evidence._adapters.version import SelfReportedVersion
from vllm_evidence._adapters.world_size import WorldSizeProduct
from vllm_evidence._capture._wire import ProbeClient
from vllm_evidence._capture.batch import (
    NOT_SENT_DETAILS,
    CaptureBatch,
    Exchange,
    ExchangeRole,
    Transport,
)
from vllm_evidence._capture.directory import save
from vllm_evidence._capture.http import (
    ProbeSession,
    ProbeSettings,
    _RouteClient,
    clean_target,
    probe,
    probe_sync,
)
from vllm_evidence._readback import CapturedReadback, readback_from_batch
from vllm_evidence.cli import main
from vllm_evidence.decisions import JoinedIncarnation, JoinReason, JoinUnestablished
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import Fault, StubRequest, serve_capture
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

DEV_ROUTES = (Route.SERVER_INFO, Route.SERVER_INFO_JSON, Route.GET_WORLD_SIZE)


def _is_parsed_or_unparsed(value: object) -> bool:
    return isinstance(value, Parsed | Unparsed)


def _probe(url: str, **kwargs: object) -> CapturedReadback:
    return readback_from_batch(probe_sync(url, **kwargs))  # type: ignore[arg-type]  # test pass-through


def test_clean_probe_parses_every_route_and_joins() -> None:
    with serve_capture(REAL) as door:
        readback = _probe(door.url)
    assert isinstance(readback.version, Parsed)
    assert isinstance(readback.version.observation, SelfReportedVersion)
    assert readback.version.observation.raw == "0.32.0"
    assert isinstance(readback.models, Parsed)
    assert isinstance(readback.models.observation, ServedModels)
    assert readback.models.observation.cards[0].served_id == "tiny-llama:q4-alias"
    assert isinstance(readback.metrics, Parsed)
    assert isinstance(readback.metrics.observation, MetricsObservation)
    assert isinstance(readback.server_info, Parsed)
    assert isinstance(readback.server_info_json, Parsed)
    assert isinstance(readback.server_info_json.observation, ServerInfo)
    assert readback.server_info_json.observation.instance_id == "1796011859079858751"
    assert isinstance(readback.world_size, Parsed)
    assert isinstance(readback.world_size.observation, WorldSizeProduct)
    assert isinstance(readback.health, Parsed)
    assert readback.health.observation.status == 200
    join = front_door_join(readback)
    assert join == front_door_join(readback)  # sealed values compare by value
    assert isinstance(join, JoinedIncarnation)
    assert join.process_start_seconds == Decimal("1796011852.21")
    # the raw evidence is kept with its digest and timestamps
    exchange = readback.batch.exchange(Route.VERSION)
    assert exchange is not None
    assert exchange.body == b'{"version":"0.32.0"}'
    assert exchange.body_sha256 is not None
    assert len(exchange.body_sha256) == 64
    assert exchange.started_at.tzinfo is not None
    assert exchange.ended_monotonic_ns >= exchange.started_monotonic_ns
    assert exchange.header("content-type") == "application/json"


def test_probe_sends_only_get_to_allowlisted_targets() -> None:
    with serve_capture(REAL) as door:
        sent = list(probe_sync(door.url).request_lines())
        received = list(door.requests)
    assert sorted(sent) == sorted(
        [("GET", "/metrics")] * 4  # two back to back at each end of the batch
        + [("GET", r.target) for r in Route if r.probe_readable and r is not Route.METRICS]
    )
    assert forbidden(received) == []
    assert {(r.method, r.path) for r in received} == set(sent)
    # /metrics opens and closes the batch, twice at each end
    assert [r.path for r in received[:2]] == ["/metrics", "/metrics"]
    assert [r.path for r in received[-2:]] == ["/metrics", "/metrics"]


def test_session_guard_sees_the_probes_requests(stub_request_log: list[StubRequest]) -> None:
    before = len(stub_request_log)
    with serve_capture(REAL) as door:
        probe_sync(door.url, development_routes=False)
    new = stub_request_log[before:]
    assert {r.path for r in new} == {"/metrics", "/version", "/v1/models", "/health"}
    assert all(r.method == "GET" for r in new)
    assert {r.path for r in new} <= ALLOWED_TARGETS


def test_route_client_accepts_only_probe_readable_routes() -> None:
    async def attempt(route: object) -> None:
        async with ProbeClient() as client:
            layer = _RouteClient(
                client,
                "http://127.0.0.1:9",
                max_body_bytes=1,
                timeout_s=1,
                deadline=0,
                headers=[],
            )
            await layer.get(route)  # type: ignore[arg-type]  # the point: a non-Route is refused

    for bad in (Route.COLLECTIVE_RPC, "/collective_rpc", "/metrics", ("POST", "/metrics")):
        with pytest.raises(TypeError, match="probe-readable Route"):
            asyncio.run(attempt(bad))


def test_development_routes_off_are_not_requested() -> None:
    with serve_capture(REAL) as door:
        readback = _probe(door.url, development_routes=False)
        paths = {r.path for r in door.requests}
    for outcome in (readback.server_info, readback.server_info_json, readback.world_size):
        assert isinstance(outcome, NotRequested)
    assert "/server_info" not in paths
    assert isinstance(readback.version, Parsed)


def test_dev_routes_404_are_not_found_and_not_parsed(tmp_path: Path) -> None:
    faults = {r: Fault(status=404, body=b'{"detail":"Not Found"}') for r in DEV_ROUTES}
    with serve_capture(REAL, faults=faults) as door:
        readback = _probe(door.url)
    for outcome in (readback.server_info, readback.server_info_json, readback.world_size):
        assert isinstance(outcome, NotFound)
        assert not _is_parsed_or_unparsed(outcome)
    assert isinstance(readback.version, Parsed)
    assert isinstance(readback.models, Parsed)
    assert isinstance(front_door_join(readback), JoinedIncarnation)


def test_missing_body_in_directory_is_a_404(tmp_path: Path) -> None:
    directory = tmp_path / "cap"
    shutil.copytree(REAL, directory)
    (directory / "get_world_size.body").unlink()
    with serve_capture(directory) as door:
        readback = _probe(door.url)
    assert isinstance(readback.world_size, NotFound)


def test_models_401_without_key_parsed_with_key() -> None:
    key = "sk-test-very-secret-4417"
    with serve_capture(REAL, api_key=key) as door:
        without = _probe(door.url)
        with_key = _probe(door.url, api_key=key)
        auth_headers = [dict(r.headers).get("authorization") for r in door.requests]
    assert isinstance(without.models, Unauthorized)
    assert without.models.status == 401
    assert isinstance(without.version, Parsed)
    assert isinstance(without.metrics, Parsed)
    assert isinstance(with_key.models, Parsed)
    assert f"Bearer {key}" in auth_headers


def test_api_key_is_recorded_nowhere(tmp_path: Path) -> None:
    key = "sk-never-recorded-9931"
    with serve_capture(REAL, api_key=key) as door:
        batch = probe_sync(door.url, api_key=key)
    readback = readback_from_batch(batch)
    assert key not in repr(batch)
    assert key not in repr(readback)
    saved = save(batch, tmp_path / "saved")
    for path in saved.iterdir():
        assert key.encode() not in path.read_bytes(), path.name


def test_credentials_in_url_are_refused_unquoted_and_nothing_is_sent() -> None:
    with serve_capture(REAL) as door:
        url = door.url.replace("http://", "http://alice:hunter2@") + "/"
        with pytest.raises(InputError, match="carries user information") as refused:
            probe_sync(url, development_routes=False)
        assert list(door.requests) == []
    assert "hunter2" not in str(refused.value)
    assert "alice" not in str(refused.value)


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1:1", "not a url", "http://127.0.0.1:1/?x=1", "http://:80"]
)
def test_bad_url_is_input_error(url: str) -> None:
    with pytest.raises(InputError):
        clean_target(url)


def test_restart_between_metrics_reads_refuses_the_join() -> None:
    with serve_capture(REAL, restart_after_metrics_reads=1) as door:
        readback = _probe(door.url)
    assert isinstance(front_door_join(readback), JoinUnestablished)
    assert front_door_join(readback).reason is JoinReason.MARKER_CHANGED
    assert "1796011852.21" in front_door_join(readback).detail
    assert "1796012852.21" in front_door_join(readback).detail
    # the other routes are still captured and parsed
    assert isinstance(readback.version, Parsed)
    assert isinstance(readback.server_info_json, Parsed)


def test_absent_marker_refuses_the_join(tmp_path: Path) -> None:
    directory = tmp_path / "cap"
    shutil.copytree(REAL, directory)
    metrics = (directory / "metrics.body").read_bytes()
    stripped = b"".join(
        line
        for line in metrics.splitlines(keepends=True)
        if not line.startswith(b"process_start_time_seconds")
    )
    (directory / "metrics.body").write_bytes(stripped)
    (directory / "metrics.headers").unlink()
    with serve_capture(directory) as door:
        readback = _probe(door.url)
    assert isinstance(readback.metrics, Parsed)
    assert isinstance(front_door_join(readback), JoinUnestablished)
    assert front_door_join(readback).reason is JoinReason.MARKER_ABSENT


def test_failed_bracket_read_refuses_the_join() -> None:
    with serve_capture(REAL, faults={Route.METRICS: Fault(status=500)}) as door:
        readback = _probe(door.url)
    assert isinstance(readback.metrics, HttpError)
    assert readback.metrics.status == 500
    assert isinstance(front_door_join(readback), JoinUnestablished)
    assert front_door_join(readback).reason is JoinReason.BRACKET_READ_FAILED
    assert isinstance(readback.version, Parsed)


def test_slow_route_times_out_others_still_captured() -> None:
    # Margins wide enough for a loaded machine: the other routes have a whole second.
    with serve_capture(REAL, faults={Route.VERSION: Fault(delay_s=4.0)}) as door:
        readback = _probe(door.url, timeout=1.0, deadline=10.0)
    assert isinstance(readback.version, TimedOut)
    exchange = readback.batch.exchange(Route.VERSION)
    assert exchange is not None
    assert exchange.transport is Transport.TIMED_OUT
    assert exchange.body is None
    assert isinstance(readback.models, Parsed)
    assert isinstance(front_door_join(readback), JoinedIncarnation)


def test_batch_deadline_bounds_the_whole_read() -> None:
    with serve_capture(REAL, faults={Route.VERSION: Fault(delay_s=0.6)}) as door:
        readback = _probe(door.url, timeout=5.0, deadline=0.3)
    assert isinstance(readback.version, TimedOut)
    # the closing bracket ran past the deadline, so the join cannot be established
    assert isinstance(front_door_join(readback), JoinUnestablished)
    assert front_door_join(readback).reason is JoinReason.BRACKET_READ_FAILED


def test_oversize_body_is_too_large_and_nothing_kept() -> None:
    faults = {Route.SERVER_INFO: Fault(oversize_bytes=256 * 1024)}
    with serve_capture(REAL, faults=faults) as door:
        readback = _probe(door.url, max_body_bytes=128 * 1024)
    assert isinstance(readback.server_info, TooLarge)
    assert readback.server_info.limit == 128 * 1024
    exchange = readback.batch.exchange(Route.SERVER_INFO)
    assert exchange is not None
    assert exchange.body is None
    assert isinstance(readback.server_info_json, Parsed)
    assert isinstance(readback.metrics, Parsed)


def test_redirect_is_recorded_not_followed() -> None:
    faults = {Route.MODELS: Fault(redirect_to="/collective_rpc")}
    with serve_capture(REAL, faults=faults) as door:
        readback = _probe(door.url)
        paths = [r.path for r in door.requests]
    assert isinstance(readback.models, Redirected)
    assert readback.models.status == 302
    assert readback.models.location == "/collective_rpc"
    assert "/collective_rpc" not in paths
    assert isinstance(readback.version, Parsed)


def test_garbage_200_is_unparsed_not_parsed() -> None:
    faults = {Route.GET_WORLD_SIZE: Fault(body=b"<html>oops</html>")}
    with serve_capture(REAL, faults=faults) as door:
        readback = _probe(door.url)
    assert isinstance(readback.world_size, Unparsed)
    assert readback.world_size.failure.route is Route.GET_WORLD_SIZE
    assert not _is_parsed_or_unparsed(readback.world_size.failure)


def test_health_503_is_a_parsed_answer_about_the_engine() -> None:
    with serve_capture(REAL, faults={Route.HEALTH: Fault(status=503)}) as door:
        readback = _probe(door.url)
    assert isinstance(readback.health, Parsed)
    assert readback.health.observation.status == 503
    assert not readback.health.observation.healthy


def test_unreachable_server() -> None:
    with serve_capture(REAL) as door:
        url = door.url
    readback = _probe(url, timeout=1.0, deadline=2.0)
    for outcome in (readback.version, readback.models, readback.metrics, readback.health):
        assert isinstance(outcome, Unreachable)
    assert isinstance(front_door_join(readback), JoinUnestablished)
    assert front_door_join(readback).reason is JoinReason.BRACKET_READ_FAILED
    assert readback.batch.bracket_open.role is ExchangeRole.BRACKET_OPEN
    assert readback.batch.bracket_open.status is None


def test_async_probe_is_the_same_read() -> None:
    with serve_capture(REAL) as door:
        batch = asyncio.run(probe(door.url, development_routes=False))
    assert [e.route for e in batch.exchanges] == [Route.VERSION, Route.MODELS, Route.HEALTH]


# --------------------------------------------------------------------------------
# The closed route set on the wire: every request line the probe sends, read by a server.
#
# A plain HTTP server records each request line as it arrives (no stub front door: the
# suite-wide guard would refuse the prefixed paths on purpose).  Whatever base URL a user
# gives, the server sees GET requests whose path is the base path, kept as the user wrote
# it, followed by exactly one closed route's target; a base path that would decode into
# ``?``, ``#`` or a control character is refused before anything is sent.


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
    assert len(lines) == len(TARGETS) + 3  # /metrics is read twice at each end
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
    # The table's last column wraps at word boundaries: compare the words.
    assert " ".join(out.split()).count("would read a different route") == 2
    assert lines == []


# --------------------------------------------------------------------------------
# One session shared by every target of a run.


def test_a_session_reads_each_target_like_a_lone_probe() -> None:
    key = "sk-shared-session-5521"

    async def both(a: str, b: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        async with ProbeSession() as session:
            batch_a, batch_b = await asyncio.gather(
                session.probe(a, api_key=key),
                session.probe(b),
            )
            # each server's connections close when its probe ends: what is open is
            # bounded by the servers being read, not by the servers read so far
            assert session.open_servers == 0
        return list(batch_a.request_lines()), list(batch_b.request_lines())

    with serve_capture(REAL, api_key=key) as a, serve_capture(REAL) as b:
        sent_a, sent_b = asyncio.run(both(a.url, b.url))
        alone = probe_sync(b.url)
        got_a, got_b = list(a.requests), list(b.requests)
    assert forbidden(got_a + got_b) == []
    assert sorted(sent_a) == sorted(sent_b)
    assert {(r.method, r.path) for r in got_a} == set(sent_a)
    # the key goes with its own target's requests only, and the headers are the same
    # in a session as in a lone probe
    assert all(dict(r.headers).get("authorization") == f"Bearer {key}" for r in got_a)
    assert all("authorization" not in dict(r.headers) for r in got_b)
    shared_headers = {tuple(k for k, _ in r.headers) for r in got_b[: len(got_b) // 2]}
    own_headers = {tuple(k for k, _ in r.headers) for r in got_b[len(got_b) // 2 :]}
    assert shared_headers == own_headers
    assert [e.route for e in alone.exchanges] == [r for r in PROBE_ROUTES if r is not Route.METRICS]


def test_a_closed_session_takes_no_more_probes() -> None:
    async def run() -> None:
        session = ProbeSession()
        await session.aclose()
        await session.probe("http://127.0.0.1:9")

    with pytest.raises(InputError, match="session is closed"):
        asyncio.run(run())


def test_verify_takes_a_ca_file_or_a_context(tmp_path: Path) -> None:
    import ssl

    ProbeSession(ProbeSettings(verify=ssl.create_default_context()))
    ProbeSession(ProbeSettings(verify=False))
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate", encoding="utf-8")
    with pytest.raises(InputError, match="cannot load CA certificates"):
        ProbeSession(ProbeSettings(verify=str(bad)))


def test_no_module_is_looked_up_again_on_later_probes() -> None:
    # httpcore once imported sniffio at every lock it made (~56 failed imports a probe
    # when sniffio was missing): a probe after the first imports nothing.
    import sys

    looked_up: list[str] = []

    class Spy:
        def find_spec(self, name: str, path: object = None, target: object = None) -> None:
            looked_up.append(name)

    with serve_capture(REAL) as door:
        probe_sync(door.url)
        sys.meta_path.insert(0, Spy())
        try:
            for _ in range(3):
                probe_sync(door.url)
        finally:
            sys.meta_path.pop(0)
    assert looked_up == []


# --------------------------------------------------------------------------------
# The request log: the batch carries the request lines it put on the wire.


def test_request_lines_are_the_raw_lines_a_server_received_under_a_base_path() -> None:
    from tests.hostile._server import hostile_server, real_reply

    def reply(target: str, headers: dict[str, str]) -> bytes:
        return real_reply(target.removeprefix("/v%7Eendor"))

    with hostile_server(reply) as server:
        batch = probe_sync(server.url + "/v%7Eendor/", development_routes=False)
        raw = [r.line.decode("latin-1") for r in server.requests]
    lines = batch.request_lines()
    assert sorted(f"{method} {path} HTTP/1.1" for method, path in lines) == sorted(raw)
    assert lines[0] == lines[-1] == ("GET", "/v%7Eendor/metrics")
    assert {path for _, path in lines} == {
        "/v%7Eendor" + r.target for r in (Route.METRICS, Route.VERSION, Route.MODELS, Route.HEALTH)
    }


def test_a_request_never_sent_has_no_request_line() -> None:
    with serve_capture(REAL, faults={Route.VERSION: Fault(delay_s=0.6)}) as door:
        batch = probe_sync(door.url, timeout=5.0, deadline=0.3)
        received = [(r.method, r.path) for r in door.requests]
    # the closing bracket's budget was spent: it never left, and has no line
    assert batch.bracket_close.transport is Transport.TIMED_OUT
    assert batch.bracket_close.detail == NOT_SENT_DETAILS[0]
    assert batch.bracket_close_twin is not None
    assert batch.bracket_close_twin.detail == NOT_SENT_DETAILS[0]
    lines = batch.request_lines()
    assert lines.count(("GET", "/metrics")) == 2  # the two opening reads
    assert sorted(lines) == sorted(received)
    # the slow route was sent (and timed out): it keeps its line
    assert ("GET", "/version") in lines


def test_request_lines_survive_saving_and_loading(tmp_path: Path) -> None:
    from vllm_evidence._readback import load

    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    loaded = load(save(batch, tmp_path / "saved"))
    assert isinstance(loaded, CapturedReadback)
    assert loaded.batch.request_lines() == batch.request_lines()
    assert len(batch.request_lines()) == 4 + len(PROBE_ROUTES) - 1


#: A response's ``Date`` is the second it was sent in (RFC 9110 IMF-fixdate).
_HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT")


def _seen(batch: CaptureBatch) -> list[tuple[object, ...]]:
    """What two probes of one stub must read alike: everything but the ``Date`` value.

    The stub's ``Date`` is the second it answered in, so two probes (or one probe's two
    ends) may straddle a second: its value is checked to be a date, and compared by
    nothing else; the other headers, in order, are compared whole."""
    rows: list[tuple[object, ...]] = []
    for e in batch.all_exchanges():
        dates = [value for name, value in e.headers if name == "date"]
        assert len(dates) == 1
        assert _HTTP_DATE.fullmatch(dates[0]), dates
        headers = tuple((n, "<date>" if n == "date" else v) for n, v in e.headers)
        rows.append((e.route, e.role, e.transport, e.status, e.body, e.detail, headers))
    return rows


@pytest.fixture
def patient_reuse(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reused connection waits 30 s (not 1 s) for its first byte before the request is
    sent again: on a loaded machine a stub thread can take a second to answer, and a
    request sent twice reads the same answer but another detail and request log."""
    from vllm_evidence._capture import _wire

    monkeypatch.setattr(_wire, "REUSE_SILENCE_S", 30.0)


@pytest.mark.usefixtures("patient_reuse")
def test_a_sessions_probe_and_a_lone_probe_read_the_same_batch() -> None:
    async def in_session(url: str) -> CaptureBatch:
        async with ProbeSession() as session:
            await session.probe(url)  # its connections are closed after it: a fresh start
            return await session.probe(url)

    with serve_capture(REAL) as door:
        alone = probe_sync(door.url)
        shared = asyncio.run(in_session(door.url))
    assert _seen(shared) == _seen(alone)
    assert shared.request_lines() == alone.request_lines()


@pytest.mark.usefixtures("patient_reuse")
def test_a_probe_on_uvloop_reads_the_batch_a_probe_on_asyncio_reads() -> None:
    """Orchestration code often runs on uvloop (under uvicorn): the probe's own
    connections read the same exchanges there, none of them timed out."""
    uvloop = pytest.importorskip("uvloop")

    with serve_capture(REAL) as door:
        standard = probe_sync(door.url)
        on_uvloop = uvloop.run(asyncio.wait_for(probe(door.url), 30))

    assert _seen(on_uvloop) == _seen(standard)
    assert {e.transport for e in on_uvloop.all_exchanges()} == {Transport.ANSWERED}


def _probe_a_counting_server(
    pause_s: float, *, development_routes: bool = True, hang: frozenset[str] = frozenset()
) -> tuple[CaptureBatch, int, list[tuple[str, int]]]:
    """Probe a server that answers every request 404, each route but ``/metrics`` after
    ``pause_s`` (never, for a path in ``hang``), with a 5 s timeout: the batch, the most
    connections open at once, and each request's path with the number of the connection
    it came on (in the order they came)."""
    open_now = most = 0
    opened = 0
    requests: list[tuple[str, int]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_now, most, opened
        open_now += 1
        opened += 1
        number = opened
        most = max(most, open_now)
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                path = head.split(b" ", 2)[1].decode()
                requests.append((path, number))
                if path in hang:
                    await asyncio.sleep(3600)
                if path != "/metrics":
                    await asyncio.sleep(pause_s)
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            open_now -= 1
            writer.close()

    async def run() -> CaptureBatch:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            return await probe(
                f"http://127.0.0.1:{port}", development_routes=development_routes, timeout=5.0
            )

    batch = asyncio.run(asyncio.wait_for(run(), 30))
    return batch, most, requests


@pytest.mark.parametrize("development_routes", [True, False])
def test_a_prompt_server_is_read_on_the_two_connections_the_opening_reads_open(
    development_routes: bool,
) -> None:
    """The routes between the /metrics reads go on the opening reads' two connections
    (ROUTE_LANES), so under a per-connection balancer each comes from a process an
    opening read reached, and a probe opens two connections, not one a route."""
    from vllm_evidence._capture.http import ROUTE_LANES

    batch, most, requests = _probe_a_counting_server(0.01, development_routes=development_routes)
    assert {e.status for e in batch.all_exchanges()} == {404}
    assert ROUTE_LANES == 2
    assert most == 2
    # The opening read on connection 1, its twin on a new one (2); nothing else opened.
    assert requests[:2] == [("/metrics", 1), ("/metrics", 2)]
    assert {number for _, number in requests} == {1, 2}
    middle = len(PROBE_ROUTES) - 1 if development_routes else 3
    assert len(requests) == 4 + middle
    # The batch keeps the routes' own order, whichever lane read each.
    assert [e.route for e in batch.exchanges] == [
        r
        for r in PROBE_ROUTES
        if r is not Route.METRICS
        and (development_routes or r in (Route.VERSION, Route.MODELS, Route.HEALTH))
    ]


@pytest.mark.parametrize("development_routes", [True, False])
def test_a_probe_holds_at_most_connections_per_probe_sockets_at_once(
    development_routes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the fleet's open-file arithmetic rests on: one probe never has more than
    CONNECTIONS_PER_PROBE connections open at once — and exactly one a route while the
    routes between the two /metrics reads all stall past LANE_STALL_S (a lane opened
    each time none answered)."""
    from vllm_evidence._capture import http
    from vllm_evidence._capture._wire import REUSE_SILENCE_S

    # Lanes open every 0.1 s; no route answers before every lane is open, and every one
    # answers before a reused connection counts as gone silent (which would send it again).
    monkeypatch.setattr(http, "LANE_STALL_S", 0.1)
    pause = 0.1 * len(PROBE_ROUTES) + 0.1
    assert pause < REUSE_SILENCE_S
    batch, most, _ = _probe_a_counting_server(pause, development_routes=development_routes)
    assert {e.status for e in batch.all_exchanges()} == {404}
    assert not any(e.detail for e in batch.all_exchanges())  # nothing sent twice
    middle = len(PROBE_ROUTES) - 1 if development_routes else 3
    assert most == middle
    assert most <= http.CONNECTIONS_PER_PROBE


def test_routes_a_server_holds_open_do_not_hold_the_others_back() -> None:
    """Two routes that never answer take both first lanes; the others are still read,
    on lanes opened after LANE_STALL_S each, long before the held ones time out."""
    hung = frozenset({"/version", "/v1/models"})
    batch, _, requests = _probe_a_counting_server(0.0, hang=hung)
    by_route = {e.route: e for e in batch.exchanges}
    assert {by_route[Route.VERSION].transport, by_route[Route.MODELS].transport} == {
        Transport.TIMED_OUT
    }
    others = [e for r, e in by_route.items() if r not in (Route.VERSION, Route.MODELS)]
    assert others
    assert {e.status for e in others} == {404}
    # Each of the others began well before the held ones' 5 s timeout ran out.
    first = min(e.started_monotonic_ns for e in batch.exchanges)
    assert all(e.started_monotonic_ns - first < 4e9 for e in others)
    assert {"/version", "/v1/models"} <= {path for path, _ in requests}


def test_an_error_in_one_route_ends_the_probe_with_that_error_and_every_lane(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A read that raises (a programming error: a failed read is an exchange) is raised
    as itself, not wrapped in a group; no other lane is left running or unread."""
    from vllm_evidence._capture import http

    real = http._RouteClient.get
    started: list[Route] = []

    async def get(
        self: http._RouteClient,
        route: Route,
        role: ExchangeRole = ExchangeRole.ROUTE,
        *,
        via: http.Via = "any",
    ) -> Exchange:
        if role is ExchangeRole.ROUTE:
            started.append(route)
        if route is Route.MODELS:
            msg = "a route's read broke"
            raise RuntimeError(msg)
        return await real(self, route, role, via=via)

    monkeypatch.setattr(http._RouteClient, "get", get)
    with caplog.at_level("ERROR", logger="asyncio"), pytest.raises(RuntimeError, match="broke"):
        _probe_a_counting_server(0.2)
    assert Route.MODELS in started
    assert len(started) < len(PROBE_ROUTES) - 1  # the lanes stopped reading
    assert "never retrieved" not in caplog.text
