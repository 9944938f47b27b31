"""Benchmark: read a 1 GiB *serving* log against ``grep -c 'KV cache size'``, interleaved.

Run: ``python benchmarks/bench_startup_log.py [--gib 1.0] [--pairs 5]``.

The log is what a long-running server leaves behind, built from the real vLLM 0.32.0
log's own line shapes (``tests/fixtures/real/vllm-0.32.0-cpu/tp2-devmode/startup.log``):
the real startup (banner, args, engine init, ranks, capacity, route table), then serving
lines until half the size, the real shutdown, a second launch (the same startup again,
as a restart appended to one file), serving lines, the shutdown.  Serving lines are
uvicorn access lines as the real log prints them and, one line in ten, the periodic
stats line vLLM 0.32 prints every 10 s (``Engine 000: Avg prompt throughput: …, GPU KV
cache usage: …%, Prefix cache hit rate: …%``), which holds ``KV cache`` and used to send
every such line through head parsing.

The baseline is ``LC_ALL=C grep -F -c 'KV cache size'`` (a fixed string: grep's fastest
search).  The reader runs as a child process (``python -c`` reading the file with
``read_startup_log``), so its time includes interpreter start and imports, and its peak
RSS is its own.  Pairs are run interleaved (grep, reader, grep, reader, …) after one
warm-up read of the file; the summary gives min and median of each and of the per-pair
ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "tests/fixtures/real/vllm-0.32.0-cpu/tp2-devmode/startup.log"
STARTUP_END = b"INFO:     Application startup complete.\n"
SHUTDOWN_START = b"(APIServer pid=9635) INFO 11-30 05:04:15 [launcher.py:254] [shutdown]"

#: vLLM 0.32's periodic stats line (``v1/metrics/loggers.py``), under the real log's
#: API-server record head.
STATS = (
    "(APIServer pid=9635) INFO 11-30 {h:02d}:{m:02d}:{s:02d} [loggers.py:257] Engine 000: "
    "Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, "
    "Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: {u:.1f}%, "
    "Prefix cache hit rate: {c:.1f}%\n"
)
#: uvicorn's access line, as the real log prints it.
ACCESS = 'INFO:     127.0.0.1:{port} - "{route} HTTP/1.1" 200 OK\n'
ROUTES = (
    "POST /v1/chat/completions",
    "POST /v1/completions",
    "POST /v1/chat/completions",
    "GET /health",
    "GET /metrics",
    "POST /v1/chat/completions",
    "GET /v1/models",
    "POST /v1/completions",
    "POST /v1/chat/completions",
)

CHILD = """
import resource, sys, time
t0 = time.perf_counter()
from vllm_evidence._adapters.startup_log import read_startup_log
t1 = time.perf_counter()
log = read_startup_log(sys.argv[1])
t2 = time.perf_counter()
# VmHWM: this process image's own peak (ru_maxrss would count the driver's pages too)
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
caps = [(c.format.value, c.device, str(c.tokens), c.line) for l in log.launches for c in l.capacity]
print(t1 - t0, t2 - t1, rss, len(log.launches), len(caps), caps)
"""


def serving_chunk(lines: int, seed: int) -> bytes:
    """``lines`` serving lines: nine access lines, then one stats line, repeated."""
    out = []
    for i in range(lines):
        k = seed + i
        if i % 10 == 9:
            t = k // 10 * 10
            out.append(
                STATS.format(
                    h=(5 + t // 3600) % 24,
                    m=t // 60 % 60,
                    s=t % 60,
                    p=(k * 37) % 5000 / 3,
                    g=(k * 53) % 9000 / 7,
                    r=k % 64,
                    w=k % 5,
                    u=(k * 13) % 1000 / 10,
                    c=(k * 7) % 1000 / 10,
                )
            )
        else:
            out.append(ACCESS.format(port=32768 + k % 28000, route=ROUTES[k % len(ROUTES)]))
    return "".join(out).encode()


def build(path: Path, gib: float) -> None:
    """Write the serving log (see the module docstring) of about ``gib`` GiB to ``path``."""
    real = REAL.read_bytes()
    cut = real.index(STARTUP_END) + len(STARTUP_END)
    startup, rest = real[:cut], real[cut:]
    shutdown = rest[rest.index(SHUTDOWN_START) :]
    chunk = serving_chunk(100_000, 0)
    half = int(gib * 1024**3) // 2
    with path.open("wb") as out:
        for _launch in range(2):
            out.write(startup)
            written = len(startup) + len(shutdown)
            while written + len(chunk) <= half:
                out.write(chunk)
                written += len(chunk)
            out.write(serving_chunk((half - written) // 120, 7))
            out.write(shutdown)


def run_grep(path: Path) -> tuple[float, str]:
    env = {**os.environ, "LC_ALL": "C"}
    start = time.perf_counter()
    done = subprocess.run(
        ["grep", "-F", "-c", "KV cache size", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    return time.perf_counter() - start, done.stdout.strip()


def run_reader(path: Path) -> tuple[float, list[str]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
    )
    return time.perf_counter() - start, done.stdout.split(maxsplit=5)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build the log here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "serving.log"
        if not path.exists():
            build(path, args.gib)
        size = path.stat().st_size
        with path.open("rb") as f:  # warm the page cache for both sides alike
            while f.read(16 * 1024 * 1024):
                pass
        lines = sum(1 for _ in path.open("rb"))
        print(f"file: {size / 1024**3:.2f} GiB, {lines:,} lines, one stats line in ten")
        greps, reads, ratios, inner = [], [], [], []
        rss_kib = 0
        count = ""
        summary = ""
        for _pair in range(args.pairs):
            g, count = run_grep(path)
            r, out = run_reader(path)
            greps.append(g)
            reads.append(r)
            ratios.append(r / g)
            inner.append(float(out[1]))
            rss_kib = max(rss_kib, int(out[2]))
            summary = f"{out[3]} launches, {out[4]} capacity entries: {out[5]}"
        print(f"grep -F -c 'KV cache size' (LC_ALL=C): {count} lines")
        print(f"reader: {summary}")
        print()
        print(f"{'':<34}{'min':>9}{'median':>9}")
        for name, values in (
            ("grep -F -c 'KV cache size' (s)", greps),
            ("read_startup_log, process (s)", reads),
            ("read_startup_log, in-process (s)", inner),
            ("ratio reader/grep (per pair)", ratios),
        ):
            print(f"{name:<34}{min(values):>9.2f}{statistics.median(values):>9.2f}")
        print(f"reader throughput: {size / 1024**2 / statistics.median(inner):.0f} MiB/s")
        print(f"reader peak RSS: {rss_kib / 1024:.1f} MiB")
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"(this driver's own peak RSS: {own:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
