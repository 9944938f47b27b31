"""Benchmark: no server slows another, and a fleet's memory is bounded in all.

Run: ``python benchmarks/bench_fleet_fairness.py [--part fairness|memory|both]
[--cli-pythonpath DIR]``.

A child process serves loopback front doors from one asyncio loop (each answer written
in 256 KiB pieces, waiting for the socket to drain, so the host holds little).

* **fairness**: a fleet of ``--servers`` (500) of which ``--costly`` (100, spread
  through the list) answer every JSON route with a body that is costly to parse (a JSON
  array of ``0``: ~0.25 us a byte, ``--costly-kib`` 512 KiB each) and the others the
  real vLLM 0.32.0 capture after ``--latency`` (20 ms).  ``vllm-evidence probe --targets
  FILE --json`` reads it as a fresh process, once with the default ``--timeout`` and once
  with ``--timeout 2``.  A healthy server is *misreported* when its decisions or
  observations differ from those of the same server probed alone (goal: 0), and *timed
  out* when any of its requests did.
* **memory**: a fleet of ``--memory-servers`` (64) that answer every route with a body
  just under the 8 MiB cap, cheap to parse (one JSON string), read at the default
  ``--concurrency`` (64) and ``--memory-budget`` (1024 MiB).  Prints the CLI's peak RSS
  (``VmHWM``), the peak of the CLI and its worker processes together (``/proc`` sampled
  every 10 ms), and whether each is within its bound: the budget plus
  :data:`CLI_OVER_BUDGET_MIB`, and plus :data:`TREE_OVER_BUDGET_MIB`.

``--cli-pythonpath DIR`` runs the CLI from another source tree (an older commit:
"before").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "tests/fixtures/real/vllm-0.32.0-cpu/tp1-devmode-alias"
MIB = 1024 * 1024
#: Just under the probe's body cap.
NEAR_CAP = 8 * MIB - 4096
#: The stated bound on a fleet's peak RSS (docs/security.md): the body budget plus this
#: much in the command's process (its imports, the body being read, what the allocator
#: keeps of the bodies it freed) ...
CLI_OVER_BUDGET_MIB = 256
#: ... and plus this much with its two worker processes (one batch each, and parsing).
TREE_OVER_BUDGET_MIB = 512

#: Runs the CLI and writes its peak RSS (VmHWM: this process image only) at exit.
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

#: One asyncio loop serving one port per line of its standard input's first line (a JSON
#: list of kinds): "healthy" (the real capture after the latency), "costly" (the JSON
#: routes answer a costly body) or "cap" (every route a body just under the cap).
HOST = """
import asyncio, http.client, json, sys
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.upstream._routes import PROBE_ROUTES
kinds, latency, directory, costly_bytes, near_cap = json.loads(sys.argv[1])
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

def whole(body):
    head = b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\n"
    return head + b"content-length: %d\\r\\n\\r\\n" % len(body) + body

costly = whole(b"[" + b"0," * (costly_bytes // 2 - 1) + b"0]")
cap = whole(b'"' + b"a" * (near_cap - 2) + b'"')
json_routes = {b"/version", b"/v1/models", b"/server_info", b"/get_world_size",
               b"/server_info?config_format=json"}

def answer(kind, path):
    if kind == "cap":
        return cap
    if kind == "costly" and path in json_routes:
        return costly
    return answers.get(path, missing)

async def handle(kind, reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            path = head.split(b" ", 2)[1]
            await asyncio.sleep(latency)
            data = memoryview(answer(kind, path))
            for start in range(0, len(data), 256 * 1024):
                writer.write(data[start:start + 256 * 1024])
                await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    servers = []
    for kind in kinds:
        server = await asyncio.start_server(
            lambda r, w, kind=kind: handle(kind, r, w), "127.0.0.1", 0, backlog=512)
        servers.append(server)
        print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


class Host:
    """The host process: ``urls`` in the order of ``kinds``."""

    def __init__(self, kinds: list[str], latency: float, costly_bytes: int) -> None:
        config = json.dumps([kinds, latency, str(REAL), costly_bytes, NEAR_CAP])
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOST, config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None  # noqa: S101 - piped above
        self.urls: list[str] = []
        for text in self.process.stdout:
            if text.strip() == "ready":
                break
            self.urls.append(text.strip())

    def close(self) -> None:
        assert self.process.stdin is not None  # noqa: S101 - piped above
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _descendants_rss_kib(root: int) -> int:
    """RSS of ``root`` and every process below it, from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page_kib = os.sysconf("SC_PAGESIZE") // 1024
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text(encoding="ascii", errors="replace")
            fields = text.rpartition(")")[2].split()
            parents[int(entry.name)] = int(fields[1])
            rss[int(entry.name)] = int(fields[21]) * page_kib
        except (OSError, ValueError, IndexError):
            continue
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(rss.get(pid, 0) for pid in tree)


def run_cli(
    listing: Path, extra: list[str], pythonpath: str | None
) -> tuple[float, float, float, list[dict[str, Any]]]:
    """Wall s, the CLI's peak RSS MiB, the CLI tree's sampled peak MiB, and its lines."""
    env = dict(os.environ, NO_COLOR="1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    argv = [sys.executable, "-c", WRAP, "probe", "--json", "--targets", str(listing), *extra]
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory() as elsewhere,
    ):
        start = time.perf_counter()
        # From an empty directory: ``-c`` puts the working directory first on sys.path.
        child = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=elsewhere)
        tree_peak = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                tree_peak[0] = max(tree_peak[0], _descendants_rss_kib(child.pid))
                stop.wait(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        child.wait()
        stop.set()
        sampler.join()
        wall = time.perf_counter() - start
        err.seek(0)
        errors = err.read().decode()
        if child.returncode not in (0, 3):
            msg = f"the CLI exited {child.returncode}: {errors[-2000:]}"
            raise SystemExit(msg)
        out.seek(0)
        text = out.read().decode()
        # A fleet: one document a line; one server: one indented document.
        lines = text.splitlines()
        docs = [json.loads(text)] if lines and lines[0] == "{" else list(map(json.loads, lines))
        peaks = [int(w.split()[1]) for w in errors.splitlines() if w.startswith("peak_kib")]
    return wall, max(peaks, default=0) / 1024, tree_peak[0] / 1024, docs


def reference(url: str, pythonpath: str | None) -> dict[str, Any]:
    """The document of ``url`` probed alone, by the same CLI as the fleet."""
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "one.txt"
        listing.write_text(url + "\n", encoding="utf-8")
        _, _, _, docs = run_cli(listing, [], pythonpath)
    return docs[0]


def _timed_out(doc: dict[str, Any]) -> bool:
    return '"timed_out"' in json.dumps(doc.get("front_door", {}))


def fairness(args: argparse.Namespace) -> None:
    n, costly = args.servers, args.costly
    step = n / costly if costly else n + 1
    costly_at = {int(i * step) for i in range(costly)}
    kinds = ["costly" if i in costly_at else "healthy" for i in range(n)]
    host = Host(kinds, args.latency, args.costly_kib * 1024)
    try:
        alone = reference(host.urls[kinds.index("healthy")], args.cli_pythonpath)
        healthy = {u for u, k in zip(host.urls, kinds, strict=True) if k == "healthy"}
        with tempfile.TemporaryDirectory() as tmp:
            listing = Path(tmp) / "fleet.txt"
            listing.write_text("\n".join(host.urls) + "\n", encoding="utf-8")
            print(
                f"{n} loopback servers, {costly} of them answering each JSON route with "
                f"{args.costly_kib} KiB of numbers (costly to parse), the others the real "
                f"capture after {args.latency * 1000:.0f} ms; --concurrency "
                f"{args.concurrency}"
            )
            for timeout in args.timeouts:
                extra = ["--concurrency", str(args.concurrency)]
                if timeout is not None:
                    extra += ["--timeout", str(timeout)]
                wall, peak, tree, docs = run_cli(listing, extra, args.cli_pythonpath)
                mine = [d for d in docs if d.get("target") in healthy]
                wrong = [
                    d
                    for d in mine
                    if any(d.get(k) != alone[k] for k in ("decisions", "observations"))
                ]
                late = [d for d in mine if _timed_out(d)]
                label = "default --timeout" if timeout is None else f"--timeout {timeout:g}"
                print(
                    f"  {label:<18} {len(docs)} lines in {wall:6.1f} s; healthy servers "
                    f"misreported: {len(wrong)} of {len(healthy)} (with a timed-out request: "
                    f"{len(late)}); peak RSS CLI {peak:.0f} MiB, with workers {tree:.0f} MiB"
                )
    finally:
        host.close()


def memory(args: argparse.Namespace) -> None:
    n = args.memory_servers
    host = Host(["cap"] * n, 0.0, 0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            listing = Path(tmp) / "fleet.txt"
            listing.write_text("\n".join(host.urls) + "\n", encoding="utf-8")
            extra = []
            if args.memory_budget is not None:
                extra = ["--memory-budget", str(args.memory_budget)]
            wall, peak, tree, docs = run_cli(listing, extra, args.cli_pythonpath)
        answered = sum(
            1
            for d in docs
            if '"too_large"' not in json.dumps(d.get("front_door", {})) and not _timed_out(d)
        )
        budget = 1024 if args.memory_budget is None else args.memory_budget
        print(
            f"{n} loopback servers answering every route with {NEAR_CAP:,} bytes, "
            f"default --concurrency (64), --memory-budget {budget} MiB"
        )
        print(f"  {len(docs)} lines in {wall:.1f} s, every request answered whole: {answered}")
        print(f"  peak RSS of the CLI process (VmHWM):             {peak:7.0f} MiB")
        print(f"  peak RSS of the CLI and its workers (sampled):   {tree:7.0f} MiB")
        for what, bound, figure in (
            ("the CLI process", budget + CLI_OVER_BUDGET_MIB, peak),
            ("the CLI and its workers", budget + TREE_OVER_BUDGET_MIB, tree),
        ):
            verdict = "met" if figure <= bound else "NOT met"
            print(f"  bound for {what}: the budget + {bound - budget} MiB = {bound} MiB: {verdict}")
    finally:
        host.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("fairness", "memory", "both"), default="both")
    parser.add_argument("--servers", type=int, default=500)
    parser.add_argument("--costly", type=int, default=100)
    parser.add_argument("--costly-kib", type=int, default=512)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--timeouts",
        type=lambda t: None if t == "default" else float(t),
        nargs="+",
        default=[None, 2.0],
        help="--timeout values to run the fairness fleet with ('default': none given)",
    )
    parser.add_argument("--memory-servers", type=int, default=64)
    parser.add_argument("--memory-budget", type=int)
    parser.add_argument("--cli-pythonpath")
    args = parser.parse_args()
    for tree in {str(HERE.parent), args.cli_pythonpath} - {None}:
        package = Path(str(tree)) / "vllm_evidence"
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    if args.part in ("fairness", "both"):
        fairness(args)
    if args.part in ("memory", "both"):
        memory(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
