"""Benchmark: the /metrics scanner against its previous implementation, interleaved.

Run: ``python benchmarks/bench_metrics_scan.py [--pairs 7] [--before 1569e3e]``.

Two bodies: the real vLLM 0.32.0 ``/metrics`` body
(``tests/fixtures/real/vllm-0.32.0-cpu/tp1-devmode-alias/metrics.body``) and a 2.2 MB
one built from it (each ``vllm:`` family's samples replicated under its one declaration
with varied engine and model labels, as a server with many engines serves it).  On each,
``parse_metrics`` (bytes to observation, what a probe runs) of this tree and of the
previous implementation (``_adapters/metrics.py`` at ``--before``, read with ``git
show``) run interleaved: one round times a batch of each, ``--pairs`` rounds.  The
summary gives MB/s (the scanning thread's CPU time, which a busy machine disturbs far
less than wall time), min and median, and the per-round ratio.  Both give the same
targeted samples and families, and prometheus_client's full parse the same samples
(checked first; its own speed is printed once, as the outside baseline).  Each round
also times ``str.count("#")`` over the body, one C pass: the host's own pace, against
which an absolute MB/s target can be read on a slower or faster machine.

The targets (>= 600 MB/s on the real body, >= 1 GB/s on a >= 2 MB one) were set where
the scanner of ``e798b9d`` read the real body at 424 MB/s.  ``--pace-of e798b9d=424``
(the default) times that scanner on the real body in every round too and prints this
tree's figures scaled by 424 / its rate in the same round: what they are at the pace of
the host the targets were set on, however fast this one runs today.

Then hostile bodies (one newline-free line repeating a targeted name, at doubling
sizes): linear time shows as a constant time per MB.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from vllm_evidence._adapters import metrics
from vllm_evidence._adapters.metrics import CACHE_CONFIG_INFO, PROCESS_START_TIME

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests/fixtures/real/vllm-0.32.0-cpu/tp1-devmode-alias/metrics.body"

Sample = tuple[str, tuple[tuple[str, str], ...], float]


def _relabelled(line: str, copy: int) -> str:
    return re.sub(r'engine="0"', f'engine="{copy}"', line).replace(
        'model_name="', f'model_name="m{copy}-'
    )


def build_body(target_bytes: int) -> bytes:
    """The real body as a server of many engines serves it: each ``vllm:`` family's
    ``# HELP``/``# TYPE`` once, then its samples for every engine (engine and model
    labels varied), families in the real body's order — so the declarations are spread
    through the body, as prometheus_client writes them, not gathered at its top."""
    text = REAL.read_text(encoding="utf-8")
    families: list[tuple[list[str], list[str]]] = []  # (declarations, samples)
    for line in text.splitlines():
        if line.startswith("# HELP") or not families:
            families.append(([], []))
        (families[-1][0] if line.startswith("#") else families[-1][1]).append(line)
    replicated = sum(
        len(line) + 1
        for declared, samples in families
        if any("vllm:" in d for d in declared)
        for line in samples
    )
    copies = max(0, -(-(target_bytes - len(text)) // replicated))
    out: list[str] = []
    for declared, samples in families:
        out += declared
        out += samples
        if any("vllm:" in d for d in declared):
            out += [_relabelled(line, c) for c in range(1, copies + 1) for line in samples]
    return ("\n".join(out) + "\n").encode()


def previous(rev: str) -> types.ModuleType:
    """``_adapters/metrics.py`` as it was at ``rev``, loaded as a module of its own."""
    # The module moved under _adapters/ in 0.1.0.dev0: a revision has one path or the other.
    shown = [
        subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:vllm_evidence/{where}/metrics.py"],
            capture_output=True,
            text=True,
            check=False,
        )
        for where in ("_adapters", "adapters")
    ]
    found = next((s for s in shown if s.returncode == 0), shown[-1])
    found.check_returncode()
    source = found.stdout
    # Named inside the package: its sealed types may only be declared there.
    module = types.ModuleType("vllm_evidence._adapters._metrics_before")
    exec(compile(source, f"{rev}:metrics.py", "exec"), module.__dict__)  # noqa: S102
    return module


def samples(module: Any, text: str) -> tuple[list[Sample], frozenset[str]]:
    found, families = module.scan_metrics(text)
    return [(s.name, tuple(sorted(s.labels.items())), float(s.value)) for s in found], families


def reference(text: str) -> list[Sample]:
    return [
        (s.name, tuple(sorted(s.labels.items())), float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in (CACHE_CONFIG_INFO, PROCESS_START_TIME)
    ]


def batch_seconds(fn: Callable[[bytes], object], body: bytes, reps: int) -> float:
    """CPU seconds of this thread per call: the best of three batches of ``reps`` calls.

    CPU time, not wall time: on a shared machine a preempted scan is not a slower one.
    """
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        for _ in range(reps):
            fn(body)
        best = min(best, (time.thread_time() - start) / reps)
    return best


def _one_pass(text: str) -> Callable[[bytes], object]:
    """One C pass over ``text`` (the body, decoded once): the host's plain scan speed."""
    return lambda _: text.count("#")


def line(name: str, values: list[float], unit: str) -> None:
    print(f"{name:<40}{min(values):10.0f}{statistics.median(values):10.0f} {unit}")


def ratio_line(name: str, values: list[float]) -> None:
    print(f"{name:<40}{min(values):10.2f}{statistics.median(values):10.2f} x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--before", default="1569e3e", help="git revision of the baseline")
    parser.add_argument("--hostile", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--pace-of",
        default="e798b9d=424",
        metavar="REV=MBPS",
        help="scale this tree's figures to the host where REV parsed the real body at MBPS",
    )
    args = parser.parse_args()
    old = previous(args.before)
    pace_rev, _, pace_mbps = args.pace_of.partition("=")
    yardstick = old if pace_rev == args.before else previous(pace_rev)
    real = REAL.read_bytes()
    big = build_body(2_200_000)
    bodies = {"real 0.32.0 body": real, f"{len(big) / 1e6:.1f} MB body": big}
    for name, body in bodies.items():
        text = body.decode()
        got = samples(metrics, text)
        if got != samples(old, text) or got[0] != reference(text):
            msg = f"{name}: this scanner, the previous one and prometheus_client disagree"
            raise SystemExit(msg)
        print(
            f"{name}: {len(body):,} bytes, {len(got[0])} targeted samples and "
            f"{len(got[1])} vllm: families, identical in all three"
        )
    print(f"\nparse_metrics, this tree against {args.before}, {args.pairs} interleaved rounds")
    print(f"{'':<40}{'min':>10}{'median':>10}")
    for name, body in bodies.items():
        reps = max(3, 20_000_000 // len(body))
        mb = len(body) / 1e6
        text = body.decode()
        new_rate, old_rate, ratio, floor_rate, passes, paced = [], [], [], [], [], []
        real_reps = max(3, 20_000_000 // len(real))
        for _ in range(args.pairs):
            before = batch_seconds(old.parse_metrics, body, reps)
            now = batch_seconds(metrics.parse_metrics, body, reps)
            floor = batch_seconds(_one_pass(text), body, reps)
            yard = batch_seconds(yardstick.parse_metrics, real, real_reps)
            old_rate.append(mb / before)
            new_rate.append(mb / now)
            ratio.append(before / now)
            floor_rate.append(mb / floor)
            passes.append(now / floor)
            # This round's rate, at the pace where the yardstick read the real body at MBPS.
            paced.append(mb / now * float(pace_mbps) / (len(real) / 1e6 / yard))
        line(f"{name}, {args.before} (MB/s)", old_rate, "MB/s")
        line(f"{name}, this tree (MB/s)", new_rate, "MB/s")
        ratio_line(f"{name}, speed-up", ratio)
        # The host's own pace: one C pass over the text (what moves with the machine).
        line(f"{name}, str.count('#') (MB/s)", floor_rate, "MB/s")
        ratio_line(f"{name}, parse / one str.count", passes)
        line(f"{name}, at {pace_rev}={pace_mbps}'s pace", paced, "MB/s")
        prom = batch_seconds(lambda b: reference(b.decode()), body, 1)
        print(
            f"{name}, prometheus_client full parse: {mb / prom:,.0f} MB/s "
            f"(this tree {min(new_rate) * prom / mb:,.0f}x faster at its slowest)"
        )
    if args.hostile:
        hostile()


def hostile() -> None:
    """Hostile bodies: one newline-free line repeating a targeted name, at doubling sizes.

    Linear time shows as a constant time per MB (the old per-hit line-start slice was
    quadratic: 2.16 MB took minutes).  The per-request timeout does not bound parsing,
    so the scanner itself must.
    """
    print()
    for unit in (
        "process_start_time_seconds ",
        "vllm:cache_config_info{",
        "\t" * 7 + "x",
        "# TYPE ",
        "#",
    ):
        for repeat in (100_000, 200_000, 400_000):
            body = (unit * repeat).encode()[: 8 * 1024 * 1024]
            took = batch_seconds(metrics.parse_metrics, body, 1)
            mb = len(body) / 1e6
            per_mb = took / mb * 1000
            name = repr(unit[:12])
            print(f"hostile {name:>16} {mb:6.2f} MB: {took * 1000:8.1f} ms = {per_mb:.1f} ms/MB")


if __name__ == "__main__":
    main()
