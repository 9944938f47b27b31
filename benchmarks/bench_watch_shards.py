"""Benchmark: a fleet watched in shards, scraped by one real Prometheus.

Run: ``python benchmarks/bench_watch_shards.py [--targets 4000] [--shards 4]
[--interval 30] [--rounds 3] [--prometheus prometheus]``.  It needs a ``prometheus``
binary (the distribution's package).  It prints figures, and fails (exit 1) only when
Prometheus's count of ready servers is not the fleet's size.

What it does is the README's recipe "A fleet, in shards", at scale on one machine:

1. A child process serves ``--targets`` front doors on 127.0.0.1 (the lean host of
   ``bench_fleet.py``: the real vLLM 0.32.0 capture replayed byte for byte), and one
   targets file lists them all, in Prometheus file-based service discovery form with a
   ``pool`` label.
2. ``--shards`` watcher processes run ``vllm-evidence watch --targets FILE --shard I/N
   --listen 127.0.0.1:0 --require capacity``: each takes its stable share of the
   file and serves ``/metrics`` for it.
3. One real Prometheus scrapes the watchers every ``--scrape`` seconds.  Once every
   watcher has finished ``--rounds`` rounds and been scraped since, the fleet's ready
   count is one PromQL query, ``sum(vllm_evidence_ready)``, and it must equal the number
   of front doors.  Then one watcher is stopped: ``up == 0`` names its shard (the
   shipped ``VllmEvidenceGateDown`` alert fires on it), and the ready count drops by its
   share, which is why the recipe's ready count is read beside ``up``.

Printed: each shard's share of the targets, its round time against the interval, the CPU
its process spent per target per round (user + system from ``/proc``, rounds 2 and on),
its resident set; Prometheus's scrape duration and samples per watcher; the query's
answer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_watch import serve  # noqa: E402  # the lean host, shared

SERVING = re.compile(rb"serving (http://127\.0\.0\.1:(\d+)) \(/ready")
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def get(url: str, timeout: float = 30.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 - loopback
        body: bytes = answer.read()
        return body


class Prometheus:
    def __init__(self, binary: str, scratch: Path, listeners: list[str], scrape: float) -> None:
        targets = ", ".join(f"'{u.removeprefix('http://')}'" for u in listeners)
        (scratch / "prometheus.yml").write_text(
            "global:\n"
            f"  scrape_interval: {scrape:g}s\n"
            f"  scrape_timeout: {min(scrape, 10):g}s\n"
            "scrape_configs:\n"
            "  - job_name: vllm-evidence-watch\n"
            "    static_configs:\n"
            f"      - targets: [{targets}]\n",
            encoding="utf-8",
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (scratch / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [
                binary,
                f"--config.file={scratch / 'prometheus.yml'}",
                f"--storage.tsdb.path={scratch / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=self.log,
            cwd=scratch,
        )
        until("Prometheus ready", lambda: get(self.url + "/-/ready") is not None, 120)

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        body = get(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
        document = json.loads(body)
        if document["status"] != "success":
            msg = f"{promql}: {document}"
            raise SystemExit(msg)
        return [(r["metric"], float(r["value"][1])) for r in document["data"]["result"]]

    def one(self, promql: str) -> float | None:
        result = self.query(promql)
        return result[0][1] if result else None

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def until(what: str, check: Callable[[], object], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError as error:
            last = error
        time.sleep(0.5)
    msg = f"{what}: not within {limit_s:g} s ({last})"
    raise SystemExit(msg)


def start_watcher(
    listing: Path, index: int, shards: int, interval: float
) -> tuple[subprocess.Popen[bytes], str]:
    argv = [sys.executable, "-m", "vllm_evidence", "watch", "--targets", str(listing)]
    argv += ["--shard", f"{index}/{shards}", "--listen", "127.0.0.1:0"]
    argv += ["--interval", f"{interval:g}s", "--require", "capacity", "--json"]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(HERE.parent)),
    )
    assert proc.stderr is not None  # noqa: S101 - piped above
    line = proc.stderr.readline()
    found = SERVING.search(line)
    if found is None:
        proc.kill()
        msg = f"watcher {index}/{shards} did not serve: {line!r}"
        raise SystemExit(msg)
    return proc, found.group(1).decode()


def scalar(metrics: bytes, name: str) -> float | None:
    found = re.search(rb"^" + name.encode() + rb" (\S+)$", metrics, re.MULTILINE)
    return None if found is None else float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", type=int, default=4000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--interval", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scrape", type=float, default=5.0)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    args = parser.parse_args()
    if shutil.which(args.prometheus) is None:
        print(f"no {args.prometheus!r} binary (apt-get install prometheus)", file=sys.stderr)
        return 2
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, urls = serve(args.targets, args.latency)
    watchers: list[tuple[subprocess.Popen[bytes], str]] = []
    prometheus: Prometheus | None = None
    failed = False
    try:
        with tempfile.TemporaryDirectory() as scratch_dir:
            scratch = Path(scratch_dir)
            listing = scratch / "fleet.json"
            pools = [
                {
                    "targets": [u.removeprefix("http://") for u in urls[p::4]],
                    "labels": {"pool": f"p{p}"},
                }
                for p in range(4)
            ]
            listing.write_text(json.dumps(pools), encoding="utf-8")
            began = time.monotonic()
            watchers = [
                start_watcher(listing, i, args.shards, args.interval) for i in range(args.shards)
            ]
            prometheus = Prometheus(args.prometheus, scratch, [u for _, u in watchers], args.scrape)

            def rounds(url: str) -> float:
                return scalar(get(url + "/metrics"), "vllm_evidence_rounds_total") or 0.0

            cpu_after_first: dict[int, tuple[float, float]] = {}

            def all_done() -> bool:
                done = True
                for i, (proc, url) in enumerate(watchers):
                    seen = rounds(url)
                    if seen >= 1 and i not in cpu_after_first:
                        cpu_after_first[i] = (cpu_seconds(proc.pid), seen)
                    done = done and seen >= args.rounds
                return done

            limit = args.interval * (args.rounds + 2) + 600
            until(f"{args.rounds} rounds in every watcher", all_done, limit)
            cpu_done = {i: cpu_seconds(proc.pid) for i, (proc, _) in enumerate(watchers)}
            # Every watcher scraped after its last round: two scrape intervals.
            time.sleep(2 * args.scrape + 1)
            print(
                f"{args.targets} front doors, {args.shards} watchers (--shard I/{args.shards}),"
                f" interval {args.interval:g} s, scraped every {args.scrape:g} s by one"
                f" Prometheus; {args.rounds} rounds in {time.monotonic() - began:.0f} s"
            )
            shares = prometheus.query("count by (instance) (vllm_evidence_ready)")
            share_of = {m["instance"]: v for m, v in shares}
            durations = {
                m["instance"]: v
                for m, v in prometheus.query("vllm_evidence_last_round_duration_seconds")
            }
            scrape_s = {
                m["instance"]: v
                for m, v in prometheus.query('scrape_duration_seconds{job="vllm-evidence-watch"}')
            }
            samples = {
                m["instance"]: v
                for m, v in prometheus.query('scrape_samples_scraped{job="vllm-evidence-watch"}')
            }
            for i, (proc, url) in enumerate(watchers):
                instance = url.removeprefix("http://")
                share = share_of.get(instance, 0.0)
                first_cpu, first_rounds = cpu_after_first.get(i, (0.0, 0.0))
                later = rounds(url) - first_rounds
                per = (cpu_done[i] - first_cpu) / max(later, 1) / max(share, 1) * 1000
                print(
                    f"  shard {i}/{args.shards}: {share:.0f} targets; last round"
                    f" {durations.get(instance, float('nan')):.1f} s; CPU {per:.2f} ms per"
                    f" target per round; RSS {rss_mib(proc.pid):.0f} MiB; scrape"
                    f" {scrape_s.get(instance, float('nan')) * 1000:.0f} ms,"
                    f" {samples.get(instance, 0):.0f} samples"
                )
            ready = prometheus.one("sum(vllm_evidence_ready)")
            print(
                f"  sum(vllm_evidence_ready) = {ready:.0f}" if ready is not None else "  no answer"
            )
            by_pool = prometheus.query(
                "sum by (pool) (vllm_evidence_ready * on (instance, target) group_left (pool)"
                " vllm_evidence_target_info)"
            )
            print(
                "  ready by pool: "
                + ", ".join(f"{m.get('pool', '?')} {v:.0f}" for m, v in sorted(by_pool, key=str))
            )
            if ready != args.targets:
                print(f"  FAILED: expected {args.targets} ready", file=sys.stderr)
                failed = True
            stopped, stopped_url = watchers[-1]
            stopped.send_signal(signal.SIGINT)
            stopped.wait(60)
            time.sleep(3 * args.scrape + 1)
            down = prometheus.query('up{job="vllm-evidence-watch"} == 0')
            after = prometheus.one("sum(vllm_evidence_ready)")
            print(
                f"  watcher {args.shards - 1} stopped: up == 0 for"
                f" {[m['instance'] for m, _ in down]} (its own {stopped_url});"
                f" sum(vllm_evidence_ready) = {after}"
            )
    finally:
        for proc, _ in watchers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc, _ in watchers:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        if prometheus is not None:
            prometheus.stop()
        assert host.stdin is not None  # noqa: S101 - piped above
        host.stdin.close()
        host.wait(timeout=60)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, hard), hard))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
