"""``vllm-evidence launch --receipt FILE [--log FILE] -- CMD …``: a witnessed launch."""

from __future__ import annotations

import argparse
from types import FrameType
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
SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to it (a signal before it has started
stops the launcher, exit 128+N).  The command dies with the launcher (on Linux, a
parent-death signal), even when the launcher is killed with SIGKILL.  The receipt (JSON,
`vllm-evidence schema launch-receipt`) names the child's pid and its start time as
/metrics prints process_start_time_seconds, the command line (secrets as ***), the host,
and the log's length and SHA-256; it is rewritten as the log grows.  A log that cannot be
written (a full disk) never stops the command: its output still reaches this terminal,
one line on stderr says so, and the receipt's log_write_failure records the byte the log
is incomplete from.  The log is not written through a symbolic link unless
--follow-symlinks is given, and must not be the receipt.  Without /proc the receipt has
no start time (a notice says so) and no log can be joined to the server.
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
    parser.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="write the log through a symbolic link (refused by default)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD …")
    parser.set_defaults(handler=_run)


class _Stopped(BaseException):
    """A forwarded signal before the launcher's own relay took over."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _run(args: argparse.Namespace) -> int:
    # Signals first, before any import that takes time: from here on SIGINT, SIGTERM,
    # SIGHUP and SIGQUIT stop the launcher quietly (exit 128+N) until the child exists,
    # and are forwarded to it after (capture.process.SignalRelay).  Blocked ones are
    # unblocked: a launcher started with them blocked would never forward one.
    import signal

    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        if not stopping:
            stopping.append(signum)
            raise _Stopped(signum)

    previous: dict[int, Any] = {}
    mask: set[int | signal.Signals] | None = None
    relay = None
    try:
        for sig in forwarded:
            previous[sig] = signal.signal(sig, stop)
        mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
        from vllm_evidence._cli._output import fail
        from vllm_evidence.capture.process import LauncherStopped, SignalRelay
        from vllm_evidence.errors import InputError
        from vllm_evidence.launch import launch

        try:
            relay = SignalRelay()
            relay.install()  # the same, until a child exists; then forwarded
            command = list(args.command)
            if command and command[0] == "--":
                command = command[1:]
            try:
                return launch(
                    command,
                    receipt=args.receipt,
                    log=args.log,
                    follow_symlinks=args.follow_symlinks,
                    signals=relay,
                )
            except InputError as exc:
                return fail(PROG, str(exc))
        except LauncherStopped as exc:
            return 128 + exc.signum
    except (_Stopped, KeyboardInterrupt) as exc:
        return 128 + (exc.signum if isinstance(exc, _Stopped) else signal.SIGINT)
    finally:
        stopping.append(0)  # from here `stop` ignores a signal: nothing raises in here
        if relay is not None:
            relay.uninstall()  # gives back `stop`, put back below
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
