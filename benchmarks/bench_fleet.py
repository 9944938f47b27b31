"""Benchmark: probe a fleet of loopback servers with the CLI against one after another.

Run: ``python benchmarks/bench_fleet.py [--servers 200 1000] [--pairs 5] [--concurrency 64]``.

A child process serves N front doors on 127.0.0.1 with the real vLLM 0.32.0 capture's
answers, each answering after ``--latency`` seconds (20 ms).  ``--stub lean`` (the
default) serves them from one asyncio loop, each route's answer recorded once from the
test kit's stub (``vllm_evidence.testing._stub``) and replayed byte for byte: ~0.1 ms of
CPU a request, as a real fleet's servers spend none of the prober's CPU.  ``--stub kit``
runs the test kit's stub itself (a thread and ``http.server`` parsing per connection):
on this two-core machine its process takes a whole core during a fleet run (~0.9 s of
CPU for 200 servers), so it, not the prober, sets the fleet's pace.
Each round runs, interleaved:

* ``vllm-evidence probe --targets FILE --json --concurrency C`` on the first 200 (and on
  all 1,000) servers, as a fresh process: wall time (interpreter start and imports
  included), CPU time of that process (``os.wait4``) and its peak RSS (``VmHWM``);
* the baseline: the same 200 servers probed one after another in this process, as a
  script using the library would (``probe_sync``, ``assess``, the assessment document),
  wall and CPU time;
* the same 200 as a fleet in this process (one ``ProbeSession``, ``--concurrency``
  probes at a time, each assessed as it ends): the library's figure without the CLI's
  interpreter start and imports.

Every fleet result is checked against the baseline's result for the same server
(decisions and observations identical).  The summary gives min and median of each,
the per-round ratios, CPU ms per server, and peak RSS.  ``--cli-pythonpath DIR`` runs
the CLI from another source tree (an older commit, to measure "before"; such a CLI gets
the URLs as arguments, since ``--targets`` is new).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "tests/fixtures/real/vllm-0.32.0-cpu/tp1-devmode-alias"

#: Runs the CLI and writes its peak RSS to stderr at exit: VmHWM, the peak of this
#: process image only (``ru_maxrss`` would also count the benchmark's own pages, which
#: the child held between fork and exec).
WRAP = """
import atexit, runpy, sys
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("peak_kib " + line.split()[1] + "\\n")
atexit.register(peak)
sys.argv = ["vllm-evidence", *sys.argv[1:]]
runpy.run_module("vllm_evidence", run_name="__main__")
"""

#: The test kit's stub front doors, one thread per connection (``--stub kit``).
HOST = """
import sys
from contextlib import ExitStack
from vllm_evidence.testing._stub import serve_capture
n, latency, directory = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
with ExitStack() as stack:
    for _ in range(n):
        door = stack.enter_context(serve_capture(directory, latency_s=latency))
        print(door.url)
    print("ready", flush=True)
    sys.stdin.read()
"""


#: One asyncio loop serving N ports with each route's answer recorded once from the
#: test kit's stub and replayed byte for byte after the latency (``--stub lean``).
LEAN_HOST = """
import asyncio, http.client, sys
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.upstream._routes import PROBE_ROUTES
n, latency, directory = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
answers = {}
with serve_capture(directory) as door:
    for route in PROBE_ROUTES:
        connection = http.client.HTTPConnection("127.0.0.1", door.port, timeout=30)
        connection.request(route.method, route.target)
        response = connection.getresponse()
        body = response.read()
        head = f"HTTP/1.1 {response.status} {response.reason}\\r\\n"
        head += "".join(f"{k}: {v}\\r\\n" for k, v in response.getheaders())
        answers[route.target.encode()] = head.encode("latin-1") + b"\\r\\n" + body
        connection.close()
missing = b"HTTP/1.1 404 Not Found\\r\\ncontent-length: 0\\r\\n\\r\\n"

async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            path = head.split(b" ", 2)[1]
            await asyncio.sleep(latency)
            writer.write(answers.get(path, missing))
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    servers = [await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512) for _ in range(n)]
    for server in servers:
        print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def run_cli(
    urls: list[str], listing: Path, concurrency: int, pythonpath: str | None
) -> tuple[float, float, float, list[dict[str, Any]]]:
    """Wall s, CPU s, peak RSS MiB and the JSON lines of one CLI fleet run."""
    env = dict(os.environ, NO_COLOR="1")
    argv = [sys.executable, "-c", WRAP, "probe", "--json"]
    argv += ["--concurrency", str(concurrency)]
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
        argv += urls
    else:
        argv += ["--targets", str(listing)]
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory() as elsewhere,
    ):
        start = time.perf_counter()
        # Run from an empty directory: ``python -c`` puts the working directory first on
        # sys.path, which from the repository root would import this tree's package
        # whatever PYTHONPATH names.
        child = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=elsewhere)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            msg = f"the CLI exited {child.returncode}"
            raise SystemExit(msg)
        out.seek(0)
        docs = [json.loads(line) for line in out.read().decode().splitlines()]
        err.seek(0)
        peaks = [int(w.split()[1]) for w in err.read().decode().splitlines() if "peak_kib" in w]
    return wall, usage.ru_utime + usage.ru_stime, max(peaks, default=0) / 1024, docs


def run_cli_start(pythonpath: str | None) -> float:
    """CPU seconds of the command on two targets that refuse at once: its fixed cost
    (interpreter, imports, the event loop), apart from any server's."""
    import socket

    with socket.socket() as probe_port:
        probe_port.bind(("127.0.0.1", 0))
        port = probe_port.getsockname()[1]  # closed again before the command runs
    env = dict(os.environ, NO_COLOR="1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    refused = [f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/x"]
    with tempfile.TemporaryDirectory() as elsewhere:
        child = subprocess.Popen(
            [sys.executable, "-c", WRAP, "probe", "--json", *refused],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=elsewhere,
        )
        _, _, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime


def run_sequential(urls: list[str]) -> tuple[float, float, dict[str, dict[str, Any]]]:
    """Wall s, CPU s and documents of probing ``urls`` one after another in-process."""
    from vllm_evidence._assessment import assess
    from vllm_evidence._capture.http import probe_sync
    from vllm_evidence._output.assessment import assessment_document
    from vllm_evidence._readback import readback_from_batch

    docs: dict[str, dict[str, Any]] = {}
    start, cpu = time.perf_counter(), time.process_time()
    for url in urls:
        batch = probe_sync(url, deadline=30.0)
        docs[url] = dict(assessment_document(assess(readback_from_batch(batch), None)))
    return time.perf_counter() - start, time.process_time() - cpu, docs


def run_in_process_fleet(
    urls: list[str], concurrency: int
) -> tuple[float, float, dict[str, dict[str, Any]]]:
    """Wall s, CPU s and documents of probing ``urls`` in this process as a fleet: one
    :class:`ProbeSession`, ``concurrency`` probes at a time, each assessed as it ends."""
    import asyncio

    from vllm_evidence._assessment import assess
    from vllm_evidence._capture.http import ProbeSession, ProbeSettings
    from vllm_evidence._output.assessment import assessment_document
    from vllm_evidence._readback import readback_from_batch

    docs: dict[str, dict[str, Any]] = {}

    async def fleet() -> None:
        pending = iter(urls)
        settings = ProbeSettings(deadline=30.0, concurrency=concurrency)
        async with ProbeSession(settings) as session:

            async def worker() -> None:
                for url in pending:
                    batch = await session.probe(url)
                    document = assessment_document(assess(readback_from_batch(batch), None))
                    docs[url] = dict(document)

            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(urls)))))

    start, cpu = time.perf_counter(), time.process_time()
    asyncio.run(fleet())
    return time.perf_counter() - start, time.process_time() - cpu, docs


def same(fleet: list[dict[str, Any]], alone: dict[str, dict[str, Any]]) -> None:
    for doc in fleet:
        mine = alone[doc["target"]]
        for key in ("decisions", "observations"):
            if doc.get(key) != mine[key]:
                diff = [k for k in mine[key] if doc[key].get(k) != mine[key][k]]
                msg = f"{doc['target']}: {key} {diff} differ between the fleet and a single probe"
                raise SystemExit(msg)


def line(name: str, values: list[float], unit: str = "", fmt: str = "{:9.2f}") -> None:
    cells = "".join(fmt.format(v) for v in (min(values), statistics.median(values)))
    print(f"{name:<44}{cells} {unit}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", type=int, nargs=2, default=[200, 1000])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--stub", choices=("lean", "kit"), default="lean")
    parser.add_argument("--cli-pythonpath")
    parser.add_argument(
        "--also-pythonpath",
        help="also run, interleaved, the CLI of another source tree on the small fleet",
    )
    args = parser.parse_args()
    small, large = args.servers
    # Byte-compile the trees the CLI runs from, as an install does: with
    # PYTHONDONTWRITEBYTECODE set, a module edited since its .pyc would be compiled
    # from source at every start of the CLI.
    for tree in {str(HERE.parent), args.cli_pythonpath, args.also_pythonpath} - {None}:
        package = Path(str(tree)) / "vllm_evidence"
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    host = subprocess.Popen(
        [
            sys.executable,
            "-c",
            LEAN_HOST if args.stub == "lean" else HOST,
            str(large),
            str(args.latency),
            str(REAL),
        ],
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
    try:
        with tempfile.TemporaryDirectory() as tmp:
            lists = {}
            for n in (small, large):
                lists[n] = Path(tmp) / f"fleet-{n}.txt"
                lists[n].write_text("\n".join(urls[:n]) + "\n", encoding="utf-8")
            fleet_s: dict[int, list[float]] = {small: [], large: []}
            fleet_cpu: dict[int, list[float]] = {small: [], large: []}
            rss: list[float] = []
            start_cpu: list[float] = []
            seq_s, seq_cpu, speedup, growth, other_s, other_vs = [], [], [], [], [], []
            lib_s, lib_cpu, lib_speedup = [], [], []
            other_cpu: list[float] = []
            other_speedup: list[float] = []
            fleet_docs: list[dict[str, Any]] = []
            for _round in range(args.pairs):
                start_cpu.append(run_cli_start(args.cli_pythonpath) * 1000)
                if args.also_pythonpath:
                    wall, cpu, _, _ = run_cli(
                        urls[:small], lists[small], args.concurrency, args.also_pythonpath
                    )
                    other_s.append(wall)
                    other_cpu.append(cpu * 1000 / small)
                for n in (small, large):
                    wall, cpu, peak, docs = run_cli(
                        urls[:n], lists[n], args.concurrency, args.cli_pythonpath
                    )
                    if len(docs) != n or any("error" in d for d in docs):
                        msg = f"the fleet run read {len(docs)} of {n} servers"
                        raise SystemExit(msg)
                    fleet_s[n].append(wall)
                    fleet_cpu[n].append(cpu * 1000 / n)
                    rss.append(peak)
                    if n == small:
                        fleet_docs = docs
                wall, cpu, alone = run_sequential(urls[:small])
                same(fleet_docs, alone)
                seq_s.append(wall)
                seq_cpu.append(cpu * 1000 / small)
                speedup.append(wall / fleet_s[small][-1])
                if other_s:
                    other_speedup.append(wall / other_s[-1])
                lib_wall, lib_cpu_s, lib_docs = run_in_process_fleet(urls[:small], args.concurrency)
                same([{"target": url, **doc} for url, doc in lib_docs.items()], alone)
                lib_s.append(lib_wall)
                lib_cpu.append(lib_cpu_s * 1000 / small)
                lib_speedup.append(wall / lib_wall)
                growth.append(fleet_s[large][-1] / fleet_s[small][-1])
                if other_s:
                    other_vs.append(other_s[-1] / fleet_s[small][-1])
        print(
            f"{small} and {large} loopback servers (--stub {args.stub}), "
            f"{args.latency * 1000:.0f} ms latency, "
            f"--concurrency {args.concurrency}, {args.pairs} interleaved rounds"
        )
        print(f"{'':<44}{'min':>9}{'median':>9}")
        line(f"CLI fleet, {small} servers (s)", fleet_s[small])
        line(f"one after another in-process, {small} (s)", seq_s)
        line(f"CLI fleet, {large} servers (s)", fleet_s[large])
        if other_s:
            line(f"other tree's CLI fleet, {small} (s)", other_s)
            line(f"other tree's CLI / this CLI, {small} (x)", other_vs)
            line(f"speed-up on {small}: one-by-one / other tree's CLI (x)", other_speedup)
        line(f"in-process fleet (library), {small} (s)", lib_s)
        line(f"speed-up on {small}: one-by-one / CLI fleet (x)", speedup)
        line(f"speed-up on {small}: one-by-one / in-process (x)", lib_speedup)
        line(f"{large} / {small} fleet time (x)", growth)
        line(f"CPU per server, fleet of {small} (ms)", fleet_cpu[small])
        line(f"CPU per server, fleet of {large} (ms)", fleet_cpu[large])
        if other_cpu:
            line(f"CPU per server, other tree's fleet of {small} (ms)", other_cpu)
        line("CPU per server, one after another (ms)", seq_cpu)
        line("CLI fixed cost, 2 refused targets (ms CPU)", start_cpu, fmt="{:9.0f}")
        line("CPU per server, in-process fleet (ms)", lib_cpu)
        print(f"CLI peak RSS (max over runs): {max(rss):.1f} MiB")
        print("every fleet result equals the single probe of that server: yes")
    finally:
        assert host.stdin is not None  # noqa: S101 - piped above
        host.stdin.close()
        host.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
