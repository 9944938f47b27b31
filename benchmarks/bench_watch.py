"""Benchmark: one ``watch`` over many loopback front doors, and the cost of following a log.

Run: ``python benchmarks/bench_watch.py [--targets 200 2000] [--rounds 20] [--interval 5]
[--log-sizes-mib 10 1024] [--append-mib 4]``.  It prints figures; it asserts nothing but
that every round read every server (all answering, no transition: the servers do not
change).

**Watch.**  A child process serves N front doors on 127.0.0.1 from one asyncio loop, each
route's answer recorded once from the test kit's stub serving the real vLLM 0.32.0
capture and replayed byte for byte after ``--latency`` (the lean host of
``bench_fleet.py``).  This process runs :func:`vllm_evidence.watch.watch` over them
(``keep_assessments=False``, as the CLI does) for ``--rounds`` rounds at ``--interval``,
and prints, per fleet size: each round's wall time against the interval, the CPU this
process spent per target per round (``time.process_time``: every thread of this process,
none of the host's), and the resident set after the first round, after round
:data:`WARM_ROUNDS` and after the last (its drift from the warm round on, the figure that
says whether a long watch grows).

**Follow.**  A log of each ``--log-sizes-mib`` size is written (one real vLLM launch, then
the access and throughput lines a serving vLLM keeps printing) and flushed to disk, and
read to its end once (the catch-up, timed apart); then, ``--repeats`` times and in turn
for each log, ``--append-mib`` of the same kind of lines are appended and one round's
read of the log (the follower's poll, the incremental reader's feed and the log as read)
is timed: the cost per appended MiB, which must not depend on how long the log already
is.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_fleet import LEAN_HOST, REAL  # noqa: E402  # the lean host, shared

from vllm_evidence.watch import Reach, Round, Target, watch  # noqa: E402
from vllm_evidence.watch._log import TargetLog  # noqa: E402

#: A launch's log, then what vLLM prints while it serves.
LAUNCH = REAL / "startup.log"
SERVING = (
    b'(APIServer pid=9635) INFO:     127.0.0.1:45930 - "GET /health HTTP/1.1" 200 OK\n'
    b"(APIServer pid=9635) INFO 11-30 05:09:12 [loggers.py:236] Engine 000: Avg prompt "
    b"throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, "
    b"Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n"
    b'(APIServer pid=9635) INFO:     10.0.0.7:51234 - "POST /v1/completions HTTP/1.1" 200 OK\n'
)
MIB = 1024 * 1024
#: The rounds after which the resident set is taken as warm (the allocator's arenas have
#: grown to what a round of ``--concurrency`` batches needs): drift is counted from there.
WARM_ROUNDS = 5


def rss_mib() -> float:
    with Path("/proc/self/status").open(encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def serve(count: int, latency: float) -> tuple[subprocess.Popen[str], list[str]]:
    """The lean host with ``count`` front doors, and their URLs."""
    code = (
        "import resource\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))\n" + LEAN_HOST
    )
    host = subprocess.Popen(
        [sys.executable, "-c", code, str(count), str(latency), str(REAL)],
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
    return host, urls


async def run_watch(
    urls: list[str], rounds: int, interval: float, concurrency: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per round: wall time, CPU seconds of this process, RSS after it; and late_s."""
    walls, cpus, rss, late = [], [], [], []
    cpu = time.process_time()
    async for round_ in watch(
        [Target(url) for url in urls],
        interval=interval,
        rounds=rounds,
        concurrency=concurrency,
        keep_assessments=False,
    ):
        now = time.process_time()
        check(round_, len(urls))
        walls.append(round_.duration_s)
        cpus.append(now - cpu)
        rss.append(rss_mib())
        late.append(round_.late_s)
        cpu = time.process_time()  # the wait between rounds is not the round's
    return walls, cpus, rss, late


def check(round_: Round, count: int) -> None:
    answering = sum(t.reach is Reach.ANSWERING for t in round_.targets)
    if answering != count or round_.transitions:
        msg = (
            f"round {round_.index}: {answering} of {count} answering, "
            f"{len(round_.transitions)} transitions"
        )
        raise SystemExit(msg)


def watch_figures(args: argparse.Namespace) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, urls = serve(max(args.targets), args.latency)
    try:
        for count in args.targets:
            gc.collect()
            walls, cpus, rss, late = asyncio.run(
                run_watch(urls[:count], args.rounds, args.interval, args.concurrency)
            )
            steady = cpus[1:] or cpus  # the first round pays for the imports and warm-up
            per_target = [c * 1000 / count for c in steady]
            print(f"watch over {count} targets, {args.rounds} rounds at {args.interval:g} s:")
            print(
                f"  round time  min {min(walls):.2f} s  median {statistics.median(walls):.2f} s"
                f"  max {max(walls):.2f} s  (interval {args.interval:g} s; "
                f"rounds begun late: {sum(x > 0.05 for x in late)})"
            )
            print(
                f"  CPU per target per round  median {statistics.median(per_target):.2f} ms"
                f"  min {min(per_target):.2f} ms  max {max(per_target):.2f} ms"
                f"  (first round {cpus[0] * 1000 / count:.2f} ms)"
            )
            warm = min(WARM_ROUNDS, len(rss)) - 1
            drift = (rss[-1] - rss[warm]) / rss[warm] * 100
            print(
                f"  RSS after round 1 {rss[0]:.1f} MiB, after round {warm + 1} (warm) "
                f"{rss[warm]:.1f} MiB, after round {len(rss)} {rss[-1]:.1f} MiB: drift "
                f"{drift:+.1f} % from round {warm + 1}; most {max(rss):.1f} MiB"
            )
    finally:
        assert host.stdin is not None  # noqa: S101 - piped above
        host.stdin.close()
        host.wait(timeout=30)
        soft_again = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft_again, hard))


def grow(path: Path, size: int) -> None:
    """Append serving lines to ``path`` until it holds ``size`` bytes."""
    block = SERVING * (MIB // len(SERVING))
    with path.open("ab") as handle:
        while handle.tell() < size:
            handle.write(block[: size - handle.tell()])


def follow_figures(args: argparse.Namespace) -> None:
    """Every log written (and flushed to disk) and caught up first; then the rounds with
    appended bytes alternate between the logs, so that both see the same machine."""
    import os

    appended = args.append_mib * MIB
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        logs: dict[int, tuple[Path, TargetLog]] = {}
        catch_up: dict[int, float] = {}
        for size_mib in args.log_sizes_mib:
            path = Path(scratch) / f"vllm-{size_mib}.log"
            path.write_bytes(LAUNCH.read_bytes())
            grow(path, size_mib * MIB)
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
            log = TargetLog(str(path), None)
            began = time.perf_counter()
            while log.read().view.read_bytes < path.stat().st_size:
                pass  # the catch-up, bounded per round: as many rounds as it takes
            catch_up[size_mib] = time.perf_counter() - began
            logs[size_mib] = (path, log)
        costs: dict[int, list[float]] = {size: [] for size in logs}
        idle: dict[int, float] = {}
        for _ in range(args.repeats):
            for size_mib, (path, log) in logs.items():
                grow(path, path.stat().st_size + appended)
                began = time.perf_counter()
                read = log.read()
                costs[size_mib].append((time.perf_counter() - began) / args.append_mib * 1000)
                if read.log is None or read.view.read_bytes != path.stat().st_size:
                    msg = f"the followed {size_mib} MiB log was not read to its end"
                    raise SystemExit(msg)
        for size_mib, (_, log) in logs.items():
            began = time.perf_counter()
            log.read()  # nothing appended
            idle[size_mib] = time.perf_counter() - began
        for size_mib in logs:
            spent = costs[size_mib]
            print(
                f"follow a {size_mib:,} MiB log: catch-up {catch_up[size_mib]:.2f} s "
                f"({size_mib / catch_up[size_mib]:.0f} MiB/s); then {args.append_mib} MiB "
                f"appended a round: median {statistics.median(spent):.1f} ms per appended "
                f"MiB (min {min(spent):.1f}, max {max(spent):.1f}); a round with nothing "
                f"appended {idle[size_mib] * 1000:.2f} ms"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--log-sizes-mib", type=int, nargs="+", default=[10, 1024])
    parser.add_argument("--append-mib", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scratch", help="where the logs are written (default: the temp dir)")
    parser.add_argument("--skip-watch", action="store_true")
    parser.add_argument("--skip-follow", action="store_true")
    args = parser.parse_args()
    if not args.skip_follow:
        follow_figures(args)
    if not args.skip_watch:
        watch_figures(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
