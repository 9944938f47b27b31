"""``vllm-evidence explain DIRECTORY``: decide from a saved (or bare) capture directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vllm_evidence._cli._output import fail
from vllm_evidence._cli._report import add_report_arguments, check_requirements, print_report

PROG = "vllm-evidence explain"

EPILOG = """\
examples:
  vllm-evidence explain capture/                  a directory saved by `probe --save`
  vllm-evidence explain bodies/ --startup-log vllm.log --json
  vllm-evidence explain capture/ --require parallel

Every digest in a saved directory's manifest is verified and every observation is
re-derived from the raw bytes; a decision is never read back from JSON.  A directory
of bare <route>.body files loads as a historical bundle (never joined).  A
startup.log inside the directory is used unless --startup-log names another.
exit status: 0 assessed, 2 unreadable or tampered input, 3 a --require'd claim refused.
"""


def register(subparsers: Any) -> None:
    """Add the ``explain`` subcommand."""
    parser = subparsers.add_parser(
        "explain",
        help="decide from a saved capture directory (or a directory of bodies)",
        description=(
            "Load a capture directory (verifying its digests) or a directory of bare "
            "bodies, re-derive every observation from the bytes, and report what the "
            "evidence does and does not establish."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("directory", help="a directory saved by `probe`, or of <route>.body files")
    parser.add_argument("--startup-log", metavar="FILE", help="the server's startup log")
    parser.add_argument(
        "--launch", type=int, metavar="N", help="which launch of the log (default: the last)"
    )
    add_report_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Load the directory (and log), assess, print, and gate on ``--require``."""
    from vllm_evidence.adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence.assessment import assess
    from vllm_evidence.errors import InputError
    from vllm_evidence.readback import load

    try:
        readback = load(args.directory)
    except InputError as exc:
        return fail(PROG, str(exc))
    log_path = args.startup_log
    if log_path is None and (Path(args.directory) / "startup.log").is_file():
        log_path = str(Path(args.directory) / "startup.log")
    log = None
    if log_path is not None:
        read = read_startup_log(log_path)
        if isinstance(read, LogReadFailure):
            return fail(PROG, read.describe())
        log = read
    try:
        assessment = assess(readback, log, launch=args.launch)
    except InputError as exc:
        return fail(PROG, str(exc))
    print_report(assessment, json_out=args.json)
    return check_requirements([assessment], args.require)
