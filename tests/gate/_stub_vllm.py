"""A stand-in for ``vllm serve`` under the launcher, made of a real vLLM 0.32.0 recording.

Run as ``python _stub_vllm.py serve MODEL --port N [other vllm arguments, ignored]``, it
acts as the TP=2 server of ``tests/fixtures/real/vllm-0.32.0-cpu/tp2-worker-kill`` did
before its worker was killed:

* it starts two worker processes (children of its own, as vLLM's ``mp`` executor's are
  descendants of the API server) and prints the recorded startup log up to the line
  before the worker's death, with the recorded pids replaced by its own (the API server
  and the engine core) and its workers' (ranks 0 and 1), and the recorded port by ``N``;
* it serves the recorded front door on ``127.0.0.1:N`` (the test kit's stub), with its
  own ``process_start_time_seconds`` on ``/metrics``, as vLLM's process collector prints
  it — so the launcher's receipt, built from what the launcher observed, joins its log;
* it answers ``POST /v1/completions`` with one token (the gate's ``--canary``);
* ``SIGUSR1`` makes ``/health`` answer 503 and a completion 500 (what 0.32.0 answers once
  its engine is dead), ``SIGUSR2`` puts both back; ``SIGTERM`` ends it (status 0), its
  workers with it.

Killing one of its workers (``kill -9``) is a rank lost, as on the real server.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from vllm_evidence._capture.process import process_start_time
from vllm_evidence.testing._stub import Fault, serve_capture
from vllm_evidence.upstream._routes import Route

SCENARIO = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "real"
    / "vllm-0.32.0-cpu"
    / "tp2-worker-kill"
)
#: The recorded pids: the API server, the engine core, the workers of ranks 0 and 1.
API_SERVER, ENGINE_CORE, WORKERS = 10538, 10820, (10884, 10885)
LOGGED_PORT = 47665
#: The recorded log's line of the worker's death (what is printed stops before it).
DEATH_LINE = 166

#: A worker: it lives until its parent is gone.
WORKER = (
    "import os, time\nparent = os.getppid()\nwhile os.getppid() == parent:\n    time.sleep(0.2)\n"
)


def startup_log(pid: int, workers: tuple[int, int], port: int) -> bytes:
    """The recorded log before the death, as this process and its workers print it."""
    lines = (SCENARIO / "startup.log").read_bytes().split(b"\n")[: DEATH_LINE - 1]
    text = b"\n".join(lines) + b"\n"
    pids = {API_SERVER: pid, ENGINE_CORE: pid, WORKERS[0]: workers[0], WORKERS[1]: workers[1]}
    text = re.sub(rb"pid=(\d+)", lambda m: b"pid=%d" % pids.get(int(m[1]), int(m[1])), text)
    return text.replace(b"'port': %d" % LOGGED_PORT, b"'port': %d" % port)


def metrics_body(start: str) -> bytes:
    """The recorded ``/metrics`` with this process's start time."""
    body = (SCENARIO / "metrics.body").read_bytes()
    return re.sub(
        rb"^process_start_time_seconds \S+$",
        b"process_start_time_seconds " + start.encode("ascii"),
        body,
        flags=re.MULTILINE,
    )


def main(argv: list[str]) -> int:
    port = int(argv[argv.index("--port") + 1])
    start, why = process_start_time(os.getpid())
    if start is None:
        sys.stderr.write(f"no start time: {why}\n")
        return 1
    wanted: list[bool] = [False]  # /health 503
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGTERM:
            stopping.append(signum)
        else:
            wanted[0] = signum == signal.SIGUSR1

    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, on_signal)
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER])  # our interpreter
        for _ in WORKERS
    ]
    metrics = metrics_body(start)
    try:
        served = None
        while not stopping:
            faults = {Route.HEALTH: Fault(status=503, body=b"")} if wanted[0] else {}
            # A dead engine answers a completion 500, as vLLM's EngineDeadError handler.
            completion = (
                Fault(status=500, body=b'{"error":{"message":"EngineCore encountered an issue"}}')
                if wanted[0]
                else Fault()
            )
            with serve_capture(
                SCENARIO,
                port=port,
                bind_wait_s=5.0,
                metrics_sequence=(metrics,),
                faults=faults,
                completion=completion,
            ):
                if served is None:
                    served = startup_log(os.getpid(), (workers[0].pid, workers[1].pid), port)
                    sys.stdout.buffer.write(served)
                    sys.stdout.flush()
                state = wanted[0]
                while not stopping and wanted[0] == state:
                    time.sleep(0.05)
                    for worker in workers:
                        worker.poll()  # a killed worker is reaped, as vLLM's executor does
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
