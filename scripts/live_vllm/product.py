"""The product run as a user runs it against the live server: ``vllm-evidence probe``
(front door saved, with the log and the receipt), ``explain`` on the saved capture, and
the check that the launcher's terminal copy is the log it wrote."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from live_vllm.common import HOST, REPO, REQUEST_TIMEOUT_S, LiveTierError, log
from live_vllm.documents import neutral_host
from live_vllm.reads import fix_content_length
from live_vllm.runs import Run
from live_vllm.scenarios import OTHER_LOG_SCENARIO
from live_vllm.server import Server

__all__ = [
    "check_tee",
    "neutralise_capture",
    "probe_witnessed",
    "product_capture",
    "product_probe",
    "run_product",
]


def product_capture(run: Run, server: Server, out: Path) -> list[str]:
    """The product as a user runs it on the live server: ``probe URL --save capture/``
    (front door only), then ``probe URL --startup-log LOG [--receipt R] --json``."""
    facts: list[str] = []
    url = f"http://{HOST}:{run.port}"
    cap = out / "capture"
    base = [sys.executable, "-m", "vllm_evidence", "probe", url]
    saved = run_product([*base, "--save", str(cap), "--json"], run)
    facts.append(f"- `vllm-evidence probe URL --save capture/` exited {saved.returncode}.")
    if cap.is_dir():
        neutralise_capture(run, cap)
        (out / "probe.json").write_bytes(neutral_host(run.neutralise(saved.stdout)))
    argv = [*base, "--startup-log", str(server.log_path), "--json"]
    if server.scenario.launched and server.receipt_path.exists():
        argv += ["--receipt", str(server.receipt_path)]
        argv += ["--receipt-public-key", str(run.receipt_keys[1])]
    witnessed = run_product(argv, run)
    facts.append(
        "- `vllm-evidence probe URL --startup-log startup.log"
        + (" --receipt launch-receipt.json" if "--receipt" in argv else "")
        + f" --json` exited {witnessed.returncode} (`witnessed-probe.json`)."
    )
    (out / "witnessed-probe.json").write_bytes(neutral_host(run.neutralise(witnessed.stdout)))
    facts += [
        f"  stderr: `{run.neutralise(p.stderr).decode(errors='replace')[-300:].strip()}`"
        for p in (saved, witnessed)
        if p.returncode not in (0, 3)
    ]
    return facts


def run_product(argv: list[str], run: Run) -> subprocess.CompletedProcess[bytes]:
    """Run one of the product's commands (bounded, from the repository), saying its exit."""
    proc = subprocess.run(
        argv, capture_output=True, timeout=REQUEST_TIMEOUT_S * 4, check=False, cwd=REPO
    )
    flags = " ".join(a for a in argv[5:] if a.startswith("--"))
    log(f"    vllm-evidence {argv[3]} {flags} -> exit {proc.returncode}")
    return proc


def neutralise_capture(run: Run, cap: Path) -> None:
    """Neutralise a saved capture's files like every other recorded file, then bring its
    manifest's digests, sizes and ``content-length`` pairs up to date and recompute its
    (unkeyed) seal, exactly as the product computes it."""
    manifest_path = cap / "manifest.json"
    doc = json.loads(manifest_path.read_text(encoding="utf-8"))
    for entry in doc["requests"]:
        body_file, headers_file = entry.get("body_file"), entry.get("headers_file")
        if body_file:
            body = run.neutralise((cap / body_file).read_bytes())
            (cap / body_file).write_bytes(body)
            entry["sha256"] = hashlib.sha256(body).hexdigest()
            entry["size"] = len(body)
            entry["headers"] = [
                [k, str(len(body)) if k.lower() == "content-length" else run.neutralise_text(v)]
                for k, v in entry.get("headers", [])
            ]
            if headers_file:
                head = (cap / headers_file).read_bytes()
                head = fix_content_length(run.neutralise(head), body)
                (cap / headers_file).write_bytes(head)
                entry["headers_sha256"] = hashlib.sha256(head).hexdigest()
    doc = json.loads(run.neutralise_text(json.dumps(doc)))
    unsealed = {k: v for k, v in doc.items() if k != "seal"}
    canonical = json.dumps(unsealed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    doc["seal"] = {
        "canonical_sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "signature": None,
    }
    manifest_path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    check = run_product([sys.executable, "-m", "vllm_evidence", "explain", str(cap), "--json"], run)
    if check.returncode != 0:
        msg = f"the neutralised capture does not read back: {check.stderr.decode()[-400:]}"
        raise LiveTierError(msg)


def product_probe(run: Run, out: Path, name: str, log_path: Path, receipt: Path | None) -> None:
    """Run the product's own ``vllm-evidence probe --json`` on the live server; keep its
    document (neutralised) as ``out/<name>.json``."""
    argv = [
        sys.executable,
        "-m",
        "vllm_evidence",
        "probe",
        f"http://{HOST}:{run.port}",
        "--startup-log",
        str(log_path),
        "--json",
    ]
    if receipt is not None:
        argv += ["--receipt", str(receipt), "--receipt-public-key", str(run.receipt_keys[1])]
    proc = subprocess.run(
        argv, capture_output=True, timeout=REQUEST_TIMEOUT_S * 4, check=False, cwd=REPO
    )
    if proc.returncode != 0:
        msg = f"probe for {name} exited {proc.returncode}: {proc.stderr.decode()[-400:]}"
        raise LiveTierError(msg)
    (out / f"{name}.json").write_bytes(run.neutralise(proc.stdout))
    log(f"    vllm-evidence probe ({name}) -> exit 0")


def probe_witnessed(run: Run, server: Server, out: Path) -> None:
    """The launch witness, live: the probe with the scenario's own log and receipt, then
    with another scenario's log (with and without the receipt)."""
    if not server.receipt_path.exists():
        msg = "the launcher wrote no receipt"
        raise LiveTierError(msg)
    product_probe(run, out, "witnessed-probe", server.log_path, server.receipt_path)
    other = run.root / "logs" / OTHER_LOG_SCENARIO / "startup.log"
    if other.exists():
        product_probe(run, out, "witnessed-probe-other-log", other, server.receipt_path)
        product_probe(run, out, "witnessed-probe-other-log-no-receipt", other, None)


def check_tee(server: Server) -> None:
    """The launcher copied to its terminal exactly the bytes it wrote to the log."""
    teed = server.terminal_path.read_bytes()
    written = server.log_path.read_bytes()
    # stdout and stderr reach the terminal through two streams: the bytes are the same,
    # their interleaving may differ.
    if len(teed) != len(written) or sorted(teed) != sorted(written):
        msg = (
            f"the launcher's terminal copy ({len(teed)} bytes) is not the log it wrote "
            f"({len(written)} bytes)"
        )
        raise LiveTierError(msg)
