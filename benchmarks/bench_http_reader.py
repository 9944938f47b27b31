"""Benchmark: the probe's HTTP/1.1 reader against h11, alone and in a fleet.

Run: ``python benchmarks/bench_http_reader.py [--pairs 7] [--probes 200]`` (the reader
alone) or ``python benchmarks/bench_http_reader.py --fleet [--pairs 9]`` (a fleet).

:class:`H11Reader` is h11 in place of
:class:`~vllm_evidence._capture._http11.ResponseReader`: the same interface (bytes fed as
they arrive, the same bounds: a head of at most 64 KiB, the body cap, at most 32
informational answers), h11's ``Connection`` doing the reading, as it did for the probe
before the hand-written reader and as it does in httpcore.

* The reader alone: the ten answers of one batch (four ``/metrics`` reads and the six
  routes) of the real vLLM 0.32.0 capture (``tests/fixtures/real/vllm-0.32.0-cpu/
  tp1-devmode-alias``), each framed as a server frames it and fed in the 256 KiB reads
  the probe's sockets make, ``--probes`` batches a round with each reader, interleaved,
  in this thread's CPU time: µs per batch.
* ``--fleet``: ``bench_fleet.py``'s lean host (one asyncio loop serving 200 front doors
  with the recorded answers after 20 ms) and the library's fleet of 200 in this process
  (one :class:`~vllm_evidence._capture.http.ProbeSession`, 64 at a time, each assessed as
  it ends), with each reader in turn in the probe's connections
  (``capture._wire.ResponseReader``), interleaved; and the one-by-one loop (the fleet
  target's baseline: ``probe_sync`` one server after another) three times.  Wall time,
  CPU per server, the speed-up over the one-by-one loop, and h11 / the reader per round.

Both readers must read the batch alike first (and ``bench_fleet.py`` checks every fleet
result against a single probe).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Final, cast, final

import h11

from vllm_evidence._capture import _wire
from vllm_evidence._capture._http11 import (
    MAX_INFORMATIONAL,
    RemoteProtocolError,
    ResponseReader,
    declared_too_large,
)

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "tests/fixtures/real/vllm-0.32.0-cpu/tp1-devmode-alias"
STEMS = (
    *("metrics", "metrics", "version", "v1_models", "health", "server_info"),
    *("server_info__config_format_json", "get_world_size", "metrics", "metrics"),
)
READ: Final = 256 * 1024
CAP: Final = 8 * 1024 * 1024
HEAD: Final = 64 * 1024

#: What each reader's h11 connection is told was sent (the wire carries the probe's own
#: request): only that a GET went.
_GET = h11.Request(method="GET", target="/", headers=[("Host", "probe")])
_END = h11.EndOfMessage()


def _decoded(fields: list[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    merged: dict[str, list[str]] = {}
    for name, value in fields:
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = value.decode("latin-1")
        merged.setdefault(name.decode("ascii"), []).append(text)
    return tuple((key, ", ".join(values)) for key, values in merged.items())


@final
class H11Reader:
    """h11 reading one answer, with :class:`ResponseReader`'s interface and bounds."""

    __slots__ = (
        "_chunks",
        "_http",
        "_informational",
        "_max_body",
        "_size",
        "body",
        "done",
        "headers",
        "received",
        "reusable",
        "status",
        "too_large",
    )

    def __init__(self, *, max_head_bytes: int, max_body_bytes: int) -> None:
        http = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_head_bytes)
        http.send(_GET)
        http.send(_END)
        self._http = http
        self._max_body = max_body_bytes
        self._chunks: list[bytes | bytearray] = []
        self._size = 0
        self._informational = 0
        self.done = False
        self.received = False
        self.status = 0
        self.headers: tuple[tuple[str, str], ...] = ()
        self.body: bytes | None = None
        self.too_large = False
        self.reusable = False

    def feed(self, data: bytes | memoryview) -> bool:
        if self.done:
            self.reusable = False
            return True
        if data:
            self.received = True
            self._http.receive_data(cast("bytes", data))  # copied into h11's buffer
        self._advance()
        return self.done

    def feed_eof(self) -> bool:
        if self.done:
            return True
        if not self.received:
            return False
        self._http.receive_data(b"")
        self._advance()
        return self._ended_whole()

    def _ended_whole(self) -> bool:
        if not self.done:
            msg = "peer closed connection without sending complete message"
            raise RemoteProtocolError(msg)
        return True

    def _advance(self) -> None:
        http = self._http
        try:
            while not self.done:
                event = http.next_event()
                if isinstance(event, h11.Data):
                    self._take(event.data)
                elif event is h11.NEED_DATA or event is h11.PAUSED:
                    return
                elif isinstance(event, h11.Response):
                    self._head(event)
                elif isinstance(event, h11.EndOfMessage):
                    self._finish()
                elif isinstance(event, h11.InformationalResponse):
                    self._informational += 1
                    if self._informational > MAX_INFORMATIONAL:
                        msg = f"more than {MAX_INFORMATIONAL} informational answers"
                        raise RemoteProtocolError(msg)
                else:
                    msg = "peer closed connection without sending complete message"
                    raise RemoteProtocolError(msg)
        except h11.RemoteProtocolError as exc:
            text = str(exc)
            raise RemoteProtocolError(text[:100]) from None

    def _head(self, event: h11.Response) -> None:
        self.status = event.status_code
        fields = list(event.headers)
        self.headers = _decoded(fields)
        if self.status in (204, 304) or any(n == b"transfer-encoding" for n, _ in fields):
            return
        length = next((v for n, v in fields if n == b"content-length"), None)
        if length is not None and declared_too_large(length.decode("ascii"), self._max_body):
            self._cut_off()

    def _take(self, data: bytes | bytearray) -> None:
        self._size += len(data)
        if self._size > self._max_body:
            self._cut_off()
            return
        self._chunks.append(data)

    def _finish(self) -> None:
        http = self._http
        self.done = True
        self.body = b"".join(self._chunks)
        self._chunks = []
        trailing, closed = http.trailing_data
        self.reusable = http.their_state is h11.DONE and not trailing and not closed

    def _cut_off(self) -> None:
        self.done = True
        self.too_large = True
        self.body = None
        self._chunks = []
        self.reusable = False


READERS: Final[dict[str, type[ResponseReader | H11Reader]]] = {
    "reader": ResponseReader,
    "h11": H11Reader,
}


def answers() -> list[list[bytes]]:
    """Each answer of one batch, as the reads that bring it."""
    out = []
    for stem in STEMS:
        body = (REAL / f"{stem}.body").read_bytes()
        head = (
            "HTTP/1.1 200 OK\r\ndate: Tue, 02 Dec 2026 10:00:00 GMT\r\nserver: uvicorn\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        wire = head.encode("ascii") + body
        out.append([wire[i : i + READ] for i in range(0, len(wire), READ)])
    return out


def read_batch(kind: type[ResponseReader | H11Reader], batch: list[list[bytes]]) -> list[object]:
    read: list[object] = []
    for pieces in batch:
        reader = kind(max_head_bytes=HEAD, max_body_bytes=CAP)
        for piece in pieces:
            reader.feed(piece)
        read.append((reader.status, reader.headers, reader.body, reader.reusable))
    return read


def line(label: str, values: list[float], fmt: str = "{:9.2f}") -> None:
    cells = "".join(fmt.format(v) for v in (min(values), statistics.median(values)))
    print(f"{label:<52}{cells}")


def alone(pairs: int, probes: int) -> None:
    batch = answers()
    if read_batch(ResponseReader, batch) != read_batch(H11Reader, batch):
        msg = "the two readers read the batch differently"
        raise SystemExit(msg)
    times: dict[str, list[float]] = {name: [] for name in READERS}
    for _ in range(pairs):
        for name, kind in READERS.items():
            start = time.thread_time()
            for _ in range(probes):
                read_batch(kind, batch)
            times[name].append((time.thread_time() - start) * 1e6 / probes)
    size = sum(len(p) for pieces in batch for p in pieces)
    print(f"one batch: {len(batch)} answers, {size:,} bytes; {pairs} interleaved rounds")
    print(f"{'':<52}{'min':>9}{'median':>9}")
    line("ResponseReader (µs per batch)", times["reader"], "{:9.1f}")
    line("h11 (µs per batch)", times["h11"], "{:9.1f}")
    ratio = [b / a for a, b in zip(times["reader"], times["h11"], strict=True)]
    line("h11 / ResponseReader, per round (x)", ratio)


def _use(kind: type[ResponseReader | H11Reader]) -> None:
    """Read every answer of the probe's connections with ``kind`` from now on."""
    vars(_wire)["ResponseReader"] = kind


def fleet(pairs: int) -> None:
    sys.path.insert(0, str(HERE))
    import bench_fleet

    from vllm_evidence._assessment import assess
    from vllm_evidence._capture.http import ProbeSession, ProbeSettings, probe_sync
    from vllm_evidence._output.assessment import assessment_document
    from vllm_evidence._readback import readback_from_batch

    servers = 200
    host = subprocess.Popen(
        [sys.executable, "-c", bench_fleet.LEAN_HOST, str(servers), "0.02", str(REAL)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert host.stdout is not None  # noqa: S101 - piped above
    urls = []
    for text in host.stdout:
        if text.strip() == "ready":
            break
        urls.append(text.strip())

    def documents() -> tuple[float, float, list[object]]:
        docs: list[object] = []

        async def run() -> None:
            pending = iter(urls)
            settings = ProbeSettings(deadline=30.0, concurrency=64)
            async with ProbeSession(settings) as session:

                async def worker() -> None:
                    for url in pending:
                        batch = await session.probe(url)
                        docs.append(assessment_document(assess(readback_from_batch(batch))))

                await asyncio.gather(*(worker() for _ in range(64)))

        wall, cpu = time.perf_counter(), time.process_time()
        asyncio.run(run())
        return time.perf_counter() - wall, time.process_time() - cpu, docs

    def one_by_one() -> float:
        wall = time.perf_counter()
        for url in urls:
            assessment_document(assess(readback_from_batch(probe_sync(url, deadline=30.0))))
        return time.perf_counter() - wall

    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in READERS}
    baseline: list[float] = []
    try:
        for round_ in range(pairs):
            order = list(READERS) if round_ % 2 == 0 else list(READERS)[::-1]
            for name in order:
                _use(READERS[name])
                wall, cpu, docs = documents()
                if len(docs) != servers:
                    msg = f"the fleet read {len(docs)} of {servers} servers"
                    raise SystemExit(msg)
                runs[name].append((wall, cpu * 1000 / servers))
            if round_ in (0, pairs // 2, pairs - 1):
                _use(ResponseReader)
                baseline.append(one_by_one())
    finally:
        _use(ResponseReader)
        assert host.stdin is not None  # noqa: S101 - piped above
        host.stdin.close()
        host.wait(timeout=60)
    base = statistics.median(baseline)
    print(f"{servers} loopback servers (lean host), 20 ms latency, 64 at a time, {pairs} rounds")
    print(f"{'':<52}{'min':>9}{'median':>9}")
    line(f"one after another, {servers} (s)", baseline)
    for name in READERS:
        line(f"in-process fleet, {name} (s)", [w for w, _ in runs[name]])
        line(f"CPU per server, {name} (ms)", [c for _, c in runs[name]])
        line(
            f"speed-up: one-by-one (median) / fleet, {name} (x)", [base / w for w, _ in runs[name]]
        )
    for index, what in ((1, "CPU"), (0, "wall")):
        ratio = [b[index] / a[index] for a, b in zip(runs["reader"], runs["h11"], strict=True)]
        line(f"h11 / ResponseReader, {what} per round (x)", ratio, "{:9.3f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--fleet", action="store_true")
    args = parser.parse_args()
    if args.fleet:
        fleet(args.pairs)
    else:
        alone(args.pairs, args.probes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
