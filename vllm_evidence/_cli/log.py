"""``vllm-evidence log FILE [--json]``: what a startup log shows, per launch."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from vllm_evidence._scrub import scrub

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``log`` subcommand."""
    parser = subparsers.add_parser(
        "log",
        help="read a vLLM startup log and summarise each launch",
        description=(
            "Read a vLLM startup log (streamed; restarts split into launches) and print "
            "what each launch shows: version, parallel configuration, ranks, executor "
            "backend, routes and capacity lines."
        ),
        epilog=(
            "examples:\n"
            "  vllm-evidence log vllm.log\n"
            "  journalctl -u vllm | vllm-evidence log - --json\n"
            "  vllm-evidence log tmux-capture.txt --wrap-width 147\n\n"
            "exit status: 0 read, 2 unreadable input (missing, a directory, empty, binary, or\n"
            "no line vLLM prints: not a vLLM startup log)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="the log file ('-' reads standard input)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--wrap-width",
        default="auto",
        help="terminal hard-wrap width to rejoin: 'auto' (default), 'off', or a number",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from vllm_evidence._adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence._cli._exit import EXIT_OK, EXIT_USAGE
    from vllm_evidence._output.startup_log import render_startup_log, startup_log_document

    wrap: Any = args.wrap_width
    if wrap not in ("auto", "off"):
        if not (str(wrap).isascii() and str(wrap).isdigit()) or len(str(wrap)) > 6 or int(wrap) < 1:
            sys.stderr.write(
                f"vllm-evidence log: --wrap-width must be auto, off or N, got {wrap!r}\n"
            )
            return EXIT_USAGE
        wrap = int(wrap)
    source = sys.stdin.buffer if args.file == "-" else args.file
    log = read_startup_log(source, wrap_width=wrap)
    if isinstance(log, LogReadFailure):
        sys.stderr.write(f"vllm-evidence log: {scrub(log.describe())}\n")
        return EXIT_USAGE
    if not any(launch.observed for launch in log.launches):
        name = "standard input" if args.file == "-" else args.file
        sys.stderr.write(
            f"vllm-evidence log: {scrub(name)}: no line vLLM prints in {log.line_count:,} "
            "line(s) (version, arguments, engine-init, rank, capacity, route or lifecycle): "
            "not a vLLM startup log\n"
        )
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(scrub(json.dumps(startup_log_document(log), indent=2), form="json"))
        sys.stdout.write("\n")
    else:
        # A log's served names and paths are text its writer chose: one line each.
        text = render_startup_log(log)
        sys.stdout.write("\n".join(scrub(line) for line in text.split("\n")))
    return EXIT_OK
