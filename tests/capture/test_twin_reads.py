"""The twin ``/metrics`` reads: two back to back at each end of a probe's batch.

What makes several processes behind one URL visible is which connection each twin goes
on: the opening twin on a connection of its own (a per-connection balancer chooses again
for it), the closing twin on the closing read's kept-alive connection (a per-request
balancer chooses again for every request on one connection).  The twins travel with the
batch wherever it goes (a saved capture, an evidence document, a pickle), and a capture
saved before them (one read at each end) still loads.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from pathlib import Path

import pytest

from tests._paths import REAL
from tests._reseal import reseal
from vllm_evidence._assessment import assess
from vllm_evidence._capture.batch import CaptureBatch, ExchangeRole
from vllm_evidence._capture.directory import read, save
from vllm_evidence._capture.http import ProbeSession, probe, probe_sync
from vllm_evidence._readback import CapturedReadback, load, readback_from_batch
from vllm_evidence._rederive import dumps, loads
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.upstream._routes import Route

METRICS_BODY = (REAL / "metrics.body").read_bytes()


def _connections_of_each_request(development_routes: bool) -> list[tuple[int, str]]:
    """Probe a server that answers every request 200 with the real /metrics body, and
    return ``(connection number, path)`` of each request in arrival order."""
    seen: list[tuple[int, str]] = []
    opened = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal opened
        number = opened
        opened += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                seen.append((number, head.split(b" ", 2)[1].decode()))
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                    + f"content-length: {len(METRICS_BODY)}\r\n\r\n".encode()
                    + METRICS_BODY
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def run() -> CaptureBatch:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            return await probe(f"http://127.0.0.1:{port}", development_routes=development_routes)

    batch = asyncio.run(asyncio.wait_for(run(), 30))
    assert batch.processes_counted
    return seen


@pytest.mark.parametrize("development_routes", [True, False], ids=["dev", "no-dev"])
def test_the_opening_twin_has_a_connection_of_its_own_the_closing_twin_shares_one(
    development_routes: bool,
) -> None:
    seen = _connections_of_each_request(development_routes)
    (first, first_path), (twin, twin_path) = seen[:2]
    (last, last_path), (last_twin, last_twin_path) = seen[-2:]
    assert {first_path, twin_path, last_path, last_twin_path} == {"/metrics"}
    assert [path for _, path in seen].count("/metrics") == 4
    assert first != twin  # a per-connection balancer chooses again for the twin
    assert last == last_twin  # a per-request balancer chooses again on one connection


def test_a_probe_reads_each_end_twice_in_probe_order() -> None:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    assert batch.processes_counted
    assert batch.bracket_open_twin is not None
    assert batch.bracket_close_twin is not None
    everything = batch.all_exchanges()
    assert everything[:2] == (batch.bracket_open, batch.bracket_open_twin)
    assert everything[-2:] == (batch.bracket_close, batch.bracket_close_twin)
    assert [e.role for e in everything[:2]] == [ExchangeRole.BRACKET_OPEN] * 2
    assert [e.role for e in everything[-2:]] == [ExchangeRole.BRACKET_CLOSE] * 2
    assert batch.bracket_open_twin.started_monotonic_ns >= batch.bracket_open.ended_monotonic_ns
    assert batch.bracket_close_twin.started_monotonic_ns >= batch.bracket_close.ended_monotonic_ns
    # one stub is one process: every read carries its start time
    bodies = {e.body for e in everything if e.route is Route.METRICS}
    assert bodies == {METRICS_BODY}


def test_a_sessions_probes_read_the_twins_too() -> None:
    async def in_session(url: str) -> list[CaptureBatch]:
        async with ProbeSession() as session:
            return list(await asyncio.gather(session.probe(url), session.probe(url)))

    with serve_capture(REAL) as door:
        batches = asyncio.run(in_session(door.url))
        received = [r.path for r in door.requests]
    assert all(b.processes_counted for b in batches)
    assert [len(b.all_exchanges()) for b in batches] == [4 + 6, 4 + 6]
    assert received.count("/metrics") == 8  # two at each end of each batch


# --- the twins travel with the batch ------------------------------------------------------


@pytest.fixture(scope="module")
def batch() -> CaptureBatch:
    with serve_capture(REAL) as door:
        return probe_sync(door.url)


def test_a_saved_capture_lists_the_twins_after_their_ends(
    batch: CaptureBatch, tmp_path: Path
) -> None:
    saved = save(batch, tmp_path / "saved")
    manifest = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    metrics = [(r["role"], r["body_file"]) for r in manifest["requests"] if r["route"] == "metrics"]
    assert metrics == [
        ("bracket_open", "metrics.body"),
        ("bracket_open", "metrics__twin.body"),
        ("bracket_close", "metrics__bracket_close.body"),
        ("bracket_close", "metrics__bracket_close__twin.body"),
    ]
    loaded = read(saved)
    assert isinstance(loaded, CaptureBatch)
    assert loaded == batch
    assert loaded.bracket_open_twin == batch.bracket_open_twin
    assert loaded.bracket_close_twin == batch.bracket_close_twin


def test_an_evidence_document_and_a_pickle_keep_the_twins(batch: CaptureBatch) -> None:
    assessment = assess(readback_from_batch(batch))
    again = loads(dumps(assessment))
    door = again.evidence.front_door
    assert isinstance(door, CapturedReadback)
    assert door.batch == batch
    assert door.batch.processes_counted
    unpickled = pickle.loads(pickle.dumps(batch))  # noqa: S301 - our own bytes
    assert unpickled == batch
    assert unpickled.bracket_close_twin == batch.bracket_close_twin


def test_one_twin_without_the_other_is_refused(batch: CaptureBatch, tmp_path: Path) -> None:
    saved = save(batch, tmp_path / "saved")
    (saved / "metrics__twin.body").unlink()
    (saved / "metrics__twin.headers").unlink()

    def drop_opening_twin(document: dict[str, object]) -> None:
        requests = document["requests"]
        assert isinstance(requests, list)
        requests.pop(1)

    reseal(saved, drop_opening_twin)
    with pytest.raises(InputError, match="two /metrics reads at each end"):
        load(saved)


def test_a_twin_listed_before_its_first_read_is_refused(
    batch: CaptureBatch, tmp_path: Path
) -> None:
    saved = save(batch, tmp_path / "saved")

    def swap_closing_reads(document: dict[str, object]) -> None:
        requests = document["requests"]
        assert isinstance(requests, list)
        requests[-2], requests[-1] = requests[-1], requests[-2]

    reseal(saved, swap_closing_reads)
    with pytest.raises(InputError, match="twin /metrics read is sent after the first read"):
        load(saved)


def test_a_capture_saved_before_the_twin_reads_still_loads() -> None:
    old = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-0.23.0-cpu" / "tp1"
    loaded = load(old / "capture")
    assert isinstance(loaded, CapturedReadback)
    assert not loaded.batch.processes_counted
    assert len(loaded.batch.all_exchanges()) == 2 + len(loaded.batch.exchanges)
