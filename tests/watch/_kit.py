"""What the watch tests share: a real recorded server (vLLM 0.32.0, TP=2, whose worker 1
was killed with -9 at line 166 of its log), its log cut before the kill, and launch
receipts written as the launcher keeps them."""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import json
import re
import time
from pathlib import Path

from vllm_evidence._adapters.receipt import RECEIPT_SCHEMA, ReceiptRecord, signed_receipt_document
from vllm_evidence._capture.signing import SigningKey
from vllm_evidence.watch import Round, Watcher

ROOT = Path(__file__).resolve().parents[2]
#: The capture directory the stub serves (the server before the kill) and its log.
KILL = ROOT / "tests/fixtures/real/vllm-0.32.0-cpu/tp2-worker-kill"
#: ``process_start_time_seconds`` of the recorded server, as its /metrics prints it.
START = "1.79621892679e+09"
#: The recorded launch's API-server pid.
PID = 10538
#: The line (0-based) of the log that records the worker's death.
DEATH = 165
#: The launcher's signing key; a watch is given its public half (:data:`PUBLIC`).
KEY = SigningKey.generate()
PUBLIC = KEY.verification_key


def log_lines() -> list[bytes]:
    """The recorded log's physical lines, each with its newline."""
    return [line + b"\n" for line in (KILL / "startup.log").read_bytes().split(b"\n")[:-1]]


def write_receipt(
    receipt: Path, log: Path, *, start: str = START, pid: int = PID, key: SigningKey | None = None
) -> None:
    """The receipt ``vllm-evidence launch`` keeps, signed by the launcher's key (:data:`KEY`
    unless another is given): the log's bytes now, digested; written atomically, as the
    launcher writes it."""
    data = log.read_bytes()
    record = ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=pid,
        process_start_time_seconds=start,
        start_time_unavailable=None,
        argv=["vllm", "serve", "/models/tiny-llama", "--tensor-parallel-size", "2"],
        host="test-host",
        log_path=str(log),
        log_bytes=len(data),
        log_sha256=hashlib.sha256(data).hexdigest(),
    )
    document = signed_receipt_document(record, KEY if key is None else key)
    staging = receipt.with_name(receipt.name + ".new")
    staging.write_text(json.dumps(document), encoding="utf-8")
    staging.replace(receipt)


def launch_files(directory: Path) -> tuple[Path, Path]:
    """A log of the recorded launch up to just before the kill, and its receipt."""
    log, receipt = directory / "startup.log", directory / "launch-receipt.json"
    log.write_bytes(b"".join(log_lines()[:DEATH]))
    write_receipt(receipt, log)
    return log, receipt


def turn(watcher: Watcher) -> Round:
    """One round of ``watcher`` (on an event loop of its own: what happens between two
    rounds is the test's, written between two calls)."""
    return asyncio.run(watcher.round())


# -- a --listen process's routes

SERVING = re.compile(r"serving (http://127\.0\.0\.1:(\d+)) \(/ready /live /metrics /assessment\)")


def get_route(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def until_status(port: int, path: str, status: int, limit_s: float = 30.0) -> bytes:
    deadline = time.monotonic() + limit_s
    seen: tuple[int, bytes] | None = None
    while time.monotonic() < deadline:
        seen = get_route(port, path)
        if seen[0] == status:
            return seen[1]
        time.sleep(0.05)
    msg = f"{path}: never {status} in {limit_s} s (last: {seen!r})"
    raise AssertionError(msg)
