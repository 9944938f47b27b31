"""``vllm-evidence launch --receipt FILE [--log FILE] -- CMD …``: a witnessed launch."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]

PROG = "vllm-evidence launch"

EPILOG = """\
examples:
  vllm-evidence launch --receipt /run/vllm.receipt --log /var/log/vllm.log -- \\
      vllm serve /models/m --port 8000
  vllm-evidence probe http://127.0.0.1:8000 --startup-log /var/log/vllm.log \\
      --receipt /run/vllm.receipt --require parallel capacity health_coverage

The command's stdout and stderr reach this terminal unchanged and are copied to the log;
SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to it.  The receipt (JSON, `vllm-evidence
schema launch-receipt`) names the child's pid and its start time as /metrics prints
process_start_time_seconds, the command line (secrets as ***), the host, and the log's
length and SHA-256; it is rewritten as the log grows.  Without /proc the receipt has no
start time (a notice says so) and no log can be joined to the server.
exit status: the command's (128+N when signal N ended it); 2 when it cannot be started.
"""


def register(subparsers: Any) -> None:
    """Add the ``launch`` subcommand."""
    parser = subparsers.add_parser(
        "launch",
        help="run vLLM as a child, tee its log, and write a launch receipt",
        description=(
            "Run a command (vllm serve …) as a child process, copy its output to the "
            "terminal and to a log file, and write a launch receipt that lets "
            "`vllm-evidence probe --receipt` join that log to the server it started."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--receipt", required=True, metavar="FILE", help="receipt to write")
    parser.add_argument("--log", metavar="FILE", help="log file to write (truncated first)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD …")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from vllm_evidence._cli._output import fail
    from vllm_evidence.errors import InputError
    from vllm_evidence.launch import launch

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    try:
        return launch(command, receipt=args.receipt, log=args.log)
    except InputError as exc:
        return fail(PROG, str(exc))
