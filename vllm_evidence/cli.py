"""The ``vllm-evidence`` command line.

Exit status: 0 on a completed run whatever the verdicts; 2 on bad usage or unreadable
input (one line on stderr); 3 when ``--require`` names a claim that is not established.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from typing import TYPE_CHECKING

from vllm_evidence import _cli
from vllm_evidence._cli._exit import EXIT_OK, EXIT_REQUIREMENT_REFUSED, EXIT_USAGE

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXIT_OK", "EXIT_REQUIREMENT_REFUSED", "EXIT_USAGE", "VERSION", "build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]  # argparse types it NoReturn
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


#: The package's version, written here so that ``--version`` answers without
#: ``importlib.metadata`` (~30 ms of imports and a scan of the installed distributions).
#: A test keeps it equal to ``pyproject.toml`` and to the installed metadata.
VERSION = "0.1.0.dev0"


def build_parser() -> argparse.ArgumentParser:
    """The full parser, every subcommand registered."""
    parser = _Parser(
        prog="vllm-evidence",
        description=(
            "Read what a running vLLM server exposes (its HTTP front door and its "
            "startup log) and decide what that evidence does and does not establish."
        ),
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _cli.COMMAND_MODULES:
        module = importlib.import_module(f"vllm_evidence._cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (130 after a ^C: never a traceback)."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, where a closed pipe can still be caught
    except KeyboardInterrupt:  # before a command took the signal over (`launch` does)
        return 130  # 128 + SIGINT, as a shell reports a ^C
    except BrokenPipeError:
        return _closed_stdout()
    except BaseExceptionGroup as group:  # a fleet's writer tasks, each on the closed pipe
        if group.split(BrokenPipeError)[1] is None:
            return _closed_stdout()
        raise
    return status


def _closed_stdout() -> int:
    """The reader of stdout went away (``| head -1``): end quietly, as ``head`` meant.

    What is still buffered would be flushed again at exit and print "Exception
    ignored … BrokenPipeError": stdout is pointed at /dev/null first."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_OK


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list == ["--version"]:
        sys.stdout.write(f"vllm-evidence {VERSION}\n")
        return EXIT_OK
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.version:
        sys.stdout.write(f"vllm-evidence {VERSION}\n")
        return EXIT_OK
    handler = getattr(args, "handler", None)
    if handler is None:
        sys.stderr.write(
            "vllm-evidence: error: a command is required "
            "(probe, watch, explain, demo, log, laws, audit-upstream, launch, schema; see --help)\n"
        )
        return EXIT_USAGE
    status: int = handler(args)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
