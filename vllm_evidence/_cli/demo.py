"""``vllm-evidence demo``: probe an embedded replay of a real vLLM server, on loopback."""

from __future__ import annotations

import argparse
from importlib import resources
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
  vllm-evidence demo --require parallel capacity      (exits 0)
  vllm-evidence demo --require served_identity        (exits 3: the served id is an alias)
  vllm-evidence demo --scenario tp2-apikey            (TP=2, --api-key, no development mode)

scenarios (all recorded from a real vLLM 0.32.0 CPU server):
  tp1-devmode   TP=1, development mode, served under an alias
  tp2-devmode   TP=2, development mode
  tp2-apikey    TP=2, --api-key (/v1/models answers 401 to the probe), no development mode

The demo serves a real vLLM 0.32.0 capture on 127.0.0.1 (a free port), probes it
exactly as a live server (GET only), reads its recorded startup log, and reports.
Nothing leaves the machine.
"""


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
    add_report_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve the scenario, probe it, assess with its log, print."""
    from vllm_evidence.adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence.assessment import assess
    from vllm_evidence.capture.http import probe_sync
    from vllm_evidence.readback import readback_from_batch
    from vllm_evidence.testing.stub import serve_capture

    data = resources.files("vllm_evidence") / "demo_data" / SCENARIOS[args.scenario]
    with resources.as_file(data) as directory:
        if not Path(directory).is_dir():  # pragma: no cover - a broken installation
            return fail(PROG, f"demo data missing from the installation: {directory}")
        with serve_capture(directory) as door:
            batch = probe_sync(door.url)
        log = None
        if not args.no_startup_log:
            read = read_startup_log(Path(directory) / "startup.log")
            if isinstance(read, LogReadFailure):  # pragma: no cover - shipped data
                return fail(PROG, read.describe())
            log = read
    assessment = assess(readback_from_batch(batch), log)
    print_report(assessment, json_out=args.json, target=f"demo:{args.scenario}")
    return check_requirements([assessment], args.require)
