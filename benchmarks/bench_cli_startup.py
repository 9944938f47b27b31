"""Benchmark: how long ``vllm-evidence --version``, ``--help`` and ``explain`` take.

Target: under 150 ms each on a 2-core machine.  Prints the median and the best of N
runs of each command as a fresh process (interpreter start included), next to
``python -c pass`` on the same machine, so the figures read as ratios too.  ``explain``
reads a capture this script saves first (``probe --save`` of a stub front door serving
the real 0.32.0 capture): it imports neither httpx nor asyncio.

    python benchmarks/bench_cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REAL = (
    Path(__file__).resolve().parent.parent / "tests/fixtures/real/vllm-0.32.0-cpu/tp1-devmode-alias"
)


def _time(argv: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    """Run each command ``--runs`` times and print milliseconds."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    # Byte-compile the package, as an install does: with PYTHONDONTWRITEBYTECODE set, a
    # module edited since its .pyc would be compiled from source at every start.
    package = Path(__file__).resolve().parent.parent / "vllm_evidence"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "capture"
        from vllm_evidence.testing._stub import serve_capture

        with serve_capture(REAL) as door:
            cli = [sys.executable, "-m", "vllm_evidence", "probe", door.url, "--save", str(saved)]
            subprocess.run(cli, capture_output=True, check=True)
        _cases(runs, saved)


def _cases(runs: int, saved: Path) -> None:
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "vllm-evidence --version": [sys.executable, "-m", "vllm_evidence", "--version"],
        "vllm-evidence --help": [sys.executable, "-m", "vllm_evidence", "--help"],
        "vllm-evidence probe --help": [sys.executable, "-m", "vllm_evidence", "probe", "--help"],
        "vllm-evidence explain DIR": [sys.executable, "-m", "vllm_evidence", "explain", str(saved)],
    }
    baseline = None
    for name, argv in cases.items():
        times = _time(argv, runs)
        median = statistics.median(times)
        baseline = baseline or median
        print(
            f"{name:<30} median {median:6.1f} ms  best {min(times):6.1f} ms  "
            f"({median / baseline:4.2f}× bare python)"
        )


if __name__ == "__main__":
    main()
