"""Benchmark: read a ~1 GiB startup log (real lines in filler); peak RSS and time vs grep.

Run: ``python benchmarks/bench_startup_log.py [--gib 1.0]``.  Builds the file in a
temporary directory, reads it in a child process (so peak RSS is the reader's own), and
times ``grep -c -E`` with the reader's keyword patterns on the same file.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vllm_evidence.adapters.startup_log import KEYWORDS

HERE = Path(__file__).resolve().parent
REAL = (
    HERE.parent / "tests" / "fixtures" / "captures" / "vllm-0.32.0-cpu-tp1-devmode" / "startup.log"
)
FILLER = (
    b"(VllmWorker TP0 pid=3974) INFO 09-03 02:12:01 [gpu_model_runner.py:1985] "
    b"Loading model from scratch... step %d of the warmup loop\n"
)

CHILD = """
import resource, sys, time
from vllm_evidence.adapters.startup_log import read_startup_log
t = time.perf_counter()
log = read_startup_log(sys.argv[1])
dt = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(dt, rss, len(log.launches), sum(len(l.capacity) for l in log.launches))
"""


def build(path: Path, gib: float) -> None:
    real = REAL.read_bytes()
    target = int(gib * 1024**3)
    block = b"".join(FILLER % i for i in range(20000))
    with path.open("wb") as out:
        written = 0
        while written < target:
            out.write(block)
            out.write(real)
            written += len(block) + len(real)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.log"
        build(path, args.gib)
        size = path.stat().st_size
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
        ).stdout.split()
        seconds, rss_kib, launches, capacity = float(out[0]), int(out[1]), out[2], out[3]
        grep = shutil.which("grep")
        pattern = "|".join(re.escape(k) for k in KEYWORDS)
        t = time.perf_counter()
        count = subprocess.run(
            [grep or "grep", "-c", "-E", pattern, str(path)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        grep_s = time.perf_counter() - t
        print(f"file: {size / 1024**3:.2f} GiB")
        print(
            f"reader: {seconds:.2f} s, peak RSS {rss_kib / 1024:.1f} MiB, "
            f"{launches} launches, {capacity} capacity entries"
        )
        print(f"grep -c -E (same keywords): {grep_s:.2f} s, {count} matching lines")
        print(f"ratio reader/grep: {seconds / grep_s:.2f}x")

    return 0


if __name__ == "__main__":
    sys.exit(main())
