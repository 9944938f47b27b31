"""Benchmark: the targeted /metrics scanner against prometheus_client's full parse.

Builds a ~1 MB exposition body by replicating the real vLLM 0.32.0 capture's families
with varied label values, checks both give identical targeted samples, and prints the
timings and the speed ratio.  Run: ``python benchmarks/bench_metrics_scan.py``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from vllm_evidence.adapters.metrics import CACHE_CONFIG_INFO, PROCESS_START_TIME, scan_metrics

REAL = (
    Path(__file__).resolve().parent.parent
    / "tests/fixtures/captures/vllm-0.32.0-cpu-tp1-devmode/metrics.body"
)


def build_body(target_bytes: int = 1_000_000) -> str:
    """Replicate the real body's vllm: families with engine and model labels varied."""
    text = REAL.read_text(encoding="utf-8")
    header, vllm_part = [], []
    for line in text.splitlines():
        (vllm_part if "vllm:" in line else header).append(line)
    blocks = [header]
    copy = 0
    size = len(text)
    while size < target_bytes:
        copy += 1
        block = [
            re.sub(r'engine="0"', f'engine="{copy}"', line).replace(
                'model_name="', f'model_name="m{copy}-'
            )
            for line in vllm_part
            if not line.startswith("#")
        ]
        blocks.append(block)
        size += sum(len(line) + 1 for line in block)
    return "\n".join(line for block in blocks for line in block) + "\n"


def reference(text: str) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    return [
        (s.name, tuple(sorted(s.labels.items())), float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in (CACHE_CONFIG_INFO, PROCESS_START_TIME)
    ]


def ours(text: str) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    samples, _ = scan_metrics(text)
    return [(s.name, tuple(sorted(s.labels.items())), float(s.value)) for s in samples]


def best_of(n: int, fn: object, text: str) -> float:
    best = float("inf")
    for _ in range(n):
        start = time.perf_counter()
        fn(text)  # type: ignore[operator]  # benchmark helper: a callable
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    text = build_body()
    expected = reference(text)
    got = ours(text)
    if got != expected:
        msg = "scanner and prometheus_client disagree"
        raise SystemExit(msg)
    slow = best_of(3, reference, text)
    fast = best_of(20, ours, text)
    print(f"body: {len(text.encode()):,} bytes, {text.count(chr(10)):,} lines")
    print(f"targeted samples (identical in both): {len(got)}")
    print(f"prometheus_client full parse: {slow * 1000:8.1f} ms")
    print(f"targeted scanner:             {fast * 1000:8.2f} ms")
    print(f"speed ratio: {slow / fast:.0f}x")
    hostile()


def hostile() -> None:
    """Hostile bodies: one newline-free line repeating a targeted name, at doubling sizes.

    Linear time shows as a constant time per MB (the old per-hit line-start slice was
    quadratic: 2.16 MB took minutes).  The per-request timeout does not bound parsing,
    so the scanner itself must.
    """
    from vllm_evidence.adapters.metrics import parse_metrics

    for unit in ("process_start_time_seconds ", "vllm:cache_config_info{", "\t" * 7 + "x"):
        for repeat in (100_000, 200_000, 400_000):
            body = (unit * repeat).encode()[: 8 * 1024 * 1024]
            took = best_of(3, parse_metrics, body)  # type: ignore[arg-type]
            mb = len(body) / 1e6
            per_mb = took / mb * 1000
            name = repr(unit[:12])
            print(f"hostile {name:>16} {mb:6.2f} MB: {took * 1000:8.1f} ms = {per_mb:.1f} ms/MB")


if __name__ == "__main__":
    main()
