"""``vllm-evidence demo``: probe an embedded replay of a real vLLM server, on loopback."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from vllm_evidence._cli._output import fail
from vllm_evidence._cli._report import add_report_arguments, check_requirements, print_report

PROG = "vllm-evidence demo"

#: Scenario name → directory under ``vllm_evidence/demo_data``.
SCENARIOS: dict[str, str] = {
    "tp1-devmode": "vllm-0.32.0-cpu-tp1-devmode",
    "tp2-devmode": "vllm-0.32.0-cpu-tp2-devmode",
    "tp2-apikey": "vllm-0.32.0-cpu-tp2-apikey",
}

EPILOG = """\
examples:
  vllm-evidence demo
  vllm-evidence demo --json
  vllm-evidence demo --require parallel capacity      (exits 0: the log is joined)
  vllm-evidence demo --no-receipt --require parallel  (exits 3: a log alone is its launch's)
  vllm-evidence demo --require served_identity        (exits 3: the served id is an alias)
  vllm-evidence demo --scenario tp2-apikey            (TP=2, --api-key, no development mode)

scenarios (all recorded from a real vLLM 0.32.0 CPU server):
  tp1-devmode   TP=1, development mode, served under an alias
  tp2-devmode   TP=2, development mode
  tp2-apikey    TP=2, --api-key (/v1/models answers 401 to the probe), no development mode

The demo serves a real vLLM 0.32.0 capture on 127.0.0.1 (on the port its log names,
else a free one), probes it exactly as a live server (GET only), reads its recorded
startup log with the launch receipt of that launch, and reports: the log is joined to the
replayed front door as `vllm-evidence launch` + `probe --receipt` join it to a live one.
The demo's receipts are signed with a key made for the demo (only its public half ships,
demo_data/receipt-public-key.pem, and the demo checks them with it), as a launcher with
--receipt-signing-key signs its own.  --no-receipt shows the same probe with the log
alone (log facts then stay the launch's).  Nothing leaves the machine.
"""

#: The public half of the key the demo's receipts were signed with (under demo_data).
DEMO_RECEIPT_PUBLIC_KEY = "receipt-public-key.pem"


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="probe an embedded replay of a real vLLM server (no network beyond loopback)",
        description=(
            "Start a local replay of a recorded vLLM server, probe it like a live one, "
            "and print the report."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--scenario",
        choices=sorted(SCENARIOS),
        default="tp1-devmode",
        help="which recorded server to replay (default: tp1-devmode)",
    )
    parser.add_argument("--no-startup-log", action="store_true", help="probe the front door alone")
    parser.add_argument(
        "--no-receipt",
        action="store_true",
        help="give the startup log without its launch receipt (not joined to the server)",
    )
    add_report_arguments(parser)
    parser.set_defaults(handler=run)


def _port(log_path: Path) -> int:
    """The ``'port': N`` of the recorded launch's non-default args (0: none)."""
    import re

    found = re.search(rb"'port': ([0-9]+)", log_path.read_bytes())
    return int(found.group(1)) if found else 0


def run(args: argparse.Namespace) -> int:
    """Serve the scenario, probe it, assess with its log and receipt, print."""
    from importlib import resources  # here: ~5 ms of imports every command would pay

    from vllm_evidence._adapters.receipt import read_launch_receipt
    from vllm_evidence._adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence._assessment import assess
    from vllm_evidence._capture.http import probe_sync
    from vllm_evidence._capture.signing import read_verification_key
    from vllm_evidence._readback import readback_from_batch
    from vllm_evidence.testing._stub import serve_capture

    shipped = resources.files("vllm_evidence") / "demo_data"
    with resources.as_file(shipped / DEMO_RECEIPT_PUBLIC_KEY) as key_path:
        demo_key = read_verification_key(key_path, what="demo receipt key")
    data = shipped / SCENARIOS[args.scenario]
    with resources.as_file(data) as directory:
        if not Path(directory).is_dir():  # pragma: no cover - a broken installation
            return fail(PROG, f"demo data missing from the installation: {directory}")
        log_path = Path(directory) / "startup.log"
        witnessed = not args.no_startup_log and not args.no_receipt
        port = _port(log_path) if witnessed else 0
        with contextlib.ExitStack() as stack:
            try:
                door = stack.enter_context(serve_capture(directory, port=port))
            except OSError:  # the log's port is taken here: a free one, as behind a
                # port forward (the receipt's start time still joins the log)
                door = stack.enter_context(serve_capture(directory))
            batch = probe_sync(door.url)
        log = None
        receipt = (
            read_launch_receipt(Path(directory) / "launch-receipt.json", verification_key=demo_key)
            if witnessed
            else None
        )
        if not args.no_startup_log:
            read = read_startup_log(log_path)
            if isinstance(read, LogReadFailure):  # pragma: no cover - shipped data
                return fail(PROG, read.describe())
            log = read
    assessment = assess(readback_from_batch(batch), log, receipt=receipt)
    print_report(assessment, json_out=args.json, target=f"demo:{args.scenario}")
    if not args.json:
        sys.stdout.write(NEXT_STEPS)
    return check_requirements([assessment], args.require)


#: What the demo's reader runs next, on a server of their own.
NEXT_STEPS = """
next, on your own server:
  vllm-evidence probe http://HOST:8000
  vllm-evidence launch --serve :9100 --require parallel capacity health_coverage -- \\
      vllm serve MODEL --port 8000        (the gate: the log joined in process, /ready)
  or, with a signed receipt another process checks (openssl genpkey -algorithm ed25519):
  vllm-evidence launch --receipt vllm.receipt --log vllm.log \\
      --receipt-signing-key signing.pem -- vllm serve MODEL --port 8000
  vllm-evidence probe http://127.0.0.1:8000 --startup-log vllm.log --receipt vllm.receipt \\
      --receipt-public-key public.pem --require parallel capacity health_coverage
"""
