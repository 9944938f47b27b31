"""``vllm-evidence launch --receipt FILE [--log FILE] -- CMD …``: a witnessed launch;
``vllm-evidence launch --serve HOST:PORT --require CLAIM … -- CMD …``: the gate."""

from __future__ import annotations

import argparse
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vllm_evidence._capture.signing import SigningKey

__all__ = ["register"]

PROG = "vllm-evidence launch"
#: Where the receipt's signing key is read from when --receipt-signing-key is not given.
SIGNING_KEY_ENV = "VLLM_EVIDENCE_RECEIPT_SIGNING_KEY"

EPILOG = """\
examples:
  vllm-evidence launch --serve :9100 --require parallel capacity health_coverage -- \\
      vllm serve /models/m --port 8000                     (the gate: no receipt needed)
  openssl genpkey -algorithm ed25519 -out receipt-signing.pem
  openssl pkey -in receipt-signing.pem -pubout -out receipt-public.pem
  vllm-evidence launch --receipt /run/vllm.receipt --log /var/log/vllm.log \\
      --receipt-signing-key receipt-signing.pem -- vllm serve /models/m --port 8000
  vllm-evidence probe http://127.0.0.1:8000 --startup-log /var/log/vllm.log \\
      --receipt /run/vllm.receipt --receipt-public-key receipt-public.pem \\
      --require parallel capacity health_coverage

The command's stdout and stderr reach this terminal unchanged and are copied to the log;
SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to it (a signal before it has started
stops the launcher, exit 128+N).  The command dies with the launcher (on Linux, a
parent-death signal), even when the launcher is killed with SIGKILL.  The receipt (JSON,
`vllm-evidence schema launch-receipt`) names the child's pid and its start time as
/metrics prints process_start_time_seconds, the command line (secrets as ***), the host,
and the log's length and SHA-256; it is rewritten as the log grows, each time signed
(Ed25519) with --receipt-signing-key FILE (or the PEM text in
VLLM_EVIDENCE_RECEIPT_SIGNING_KEY).  A receipt crosses to whoever probes the server: an
unsigned one, or one whose signature does not verify under the public key the probe is
given (--receipt-public-key), joins no log.  The key is never printed and never written
into the receipt (only its id).  A log that cannot be written (a full disk) never
stops the command: its output still reaches this terminal, one line on stderr says so,
and the receipt's log_write_failure records the byte the log is incomplete from.  The
log is not written through a symbolic link unless --follow-symlinks is given, and must
not be the receipt.  Without /proc the receipt has no start time (a notice says so) and
no log can be joined to the server.

the gate (--serve): the launcher as the container's entrypoint.
  vllm-evidence launch --serve :9100 --require parallel capacity health_coverage \\
      --interval 5s -- vllm serve /models/m --port 8000 --tensor-parallel-size 2
Every --interval the launcher probes its own child on loopback (the --port of its
command line, 8000 by default; GET only), reads the log it tees and its own process
tree, and assesses with the log joined by construction: the receipt is built in memory
from what the launcher itself observed (no --receipt file and no key are needed; one
given is written too, unsigned).  A worker the log names that is gone from the process
tree is a lost rank that round, before vLLM's /health says so.  It serves, on HOST:PORT:
  /ready       200 when every --require'd claim is established for the serving
               process this round, else 503; the JSON body names each refusal
  /live        200 while the rounds run and the command does
  /metrics     the verdicts in Prometheus' text format (vllm_evidence_* series)
  /assessment  the assessment document, as `probe URL --json` prints it
GET only; other methods 405, other paths 404, bounded request size and time.
--canary adds the claim generation: each round, after the probe, one POST
/v1/completions (a fixed prompt, max_tokens 1, its own deadline, never retried) to the
first base model /v1/models served that round; established only when a token came back
that round (--require generation then holds /ready on it).  It costs the server one
short request per round; without --canary nothing but GETs is sent.  An
address already in use is a one-line error and the command is not started.  Without
--log the log is kept in an anonymous temporary file.
exit status: the command's (128+N when signal N ended it); 2 when it cannot be started.
"""


def register(subparsers: Any) -> None:
    """Add the ``launch`` subcommand."""
    parser = subparsers.add_parser(
        "launch",
        help="run vLLM as a child, tee its log, and write a receipt or serve the gate",
        description=(
            "Run a command (vllm serve …) as a child process, copy its output to the "
            "terminal and to a log file, and write a launch receipt that lets "
            "`vllm-evidence probe --receipt` join that log to the server it started; "
            "with --serve, assess the child every round and serve /ready, /live, "
            "/metrics and /assessment."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--receipt", metavar="FILE", help="receipt to write (required unless --serve)"
    )
    parser.add_argument("--log", metavar="FILE", help="log file to write (truncated first)")
    parser.add_argument(
        "--receipt-signing-key",
        metavar="FILE",
        help="sign the receipt with this Ed25519 private key (PEM; default: the PEM text in "
        f"${SIGNING_KEY_ENV}, if set); an unsigned receipt joins no log (not with --serve: "
        "the gate joins in process)",
    )
    parser.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="write the log through a symbolic link (refused by default)",
    )
    from vllm_evidence._claims import GATE_CLAIMS

    gate = parser.add_argument_group("the gate")
    gate.add_argument(
        "--serve",
        metavar="HOST:PORT",
        help="serve /ready, /live, /metrics and /assessment on HOST:PORT (:PORT: every interface)",
    )
    gate.add_argument(
        "--require",
        nargs="+",
        metavar="CLAIM",
        choices=GATE_CLAIMS,
        default=[],
        help=f"with --serve: the claims /ready requires ({', '.join(GATE_CLAIMS)}; "
        "generation with --canary)",
    )
    gate.add_argument(
        "--canary",
        action="store_true",
        help="with --serve: each round, send one completion (max_tokens 1) to the first "
        "served base model and serve the claim generation (a token came back this round)",
    )
    gate.add_argument(
        "--interval",
        metavar="DURATION",
        default=None,
        help="with --serve: time between rounds (5s by default; 500ms, 1m, …)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD …")
    parser.set_defaults(handler=_run)


def _without_serve(args: argparse.Namespace) -> None:
    """The options that go with --serve only, refused without it; --receipt required."""
    from vllm_evidence.errors import InputError

    given_options = (
        (args.require, "--require"),
        (args.interval, "--interval"),
        (args.canary, "--canary"),
    )
    for given, name in given_options:
        if given:
            msg = f"{name} goes with --serve HOST:PORT (the gate)"
            raise InputError(msg)
    if args.receipt is None:
        msg = "the following arguments are required: --receipt (or --serve HOST:PORT)"
        raise InputError(msg)


def _signing_key(args: argparse.Namespace) -> SigningKey | None:
    """The receipt's signing key: the file given, else the environment's PEM text, else
    none.  Only ``launch --receipt`` signs: the gate (``--serve``) joins its child's log
    in process and needs no key (the environment's is not read; a file given is bad
    usage, as is one without --receipt)."""
    import os

    from vllm_evidence._capture.signing import environment_signing_key, read_signing_key
    from vllm_evidence.errors import InputError

    if args.receipt_signing_key is not None:
        if args.receipt is None or args.serve is not None:
            msg = (
                "--receipt-signing-key signs the receipt of `launch --receipt FILE`; the gate "
                "(--serve) joins its child's log in process and needs no key"
            )
            raise InputError(msg)
        return read_signing_key(args.receipt_signing_key, what="--receipt-signing-key")
    if args.receipt is None or args.serve is not None or not os.environ.get(SIGNING_KEY_ENV):
        return None
    return environment_signing_key("--receipt-signing-key", SIGNING_KEY_ENV)


def _run(args: argparse.Namespace) -> int:
    # Signals first, before any import that takes time: from here on SIGINT, SIGTERM,
    # SIGHUP and SIGQUIT stop the launcher quietly (exit 128+N) until the child exists,
    # and are forwarded to it after (capture.process.SignalRelay).  Blocked ones are
    # unblocked: a launcher started with them blocked would never forward one.  The
    # handler only keeps the first signal; the launcher stops for it at a safe point (an
    # exception raised from a handler can land in an import's weakref callback, where
    # Python prints "Exception ignored" and goes on, the signal lost).
    import signal

    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        if not stopping:
            stopping.append(signum)

    previous: dict[int, Any] = {}
    mask: set[int | signal.Signals] | None = None
    relay = None
    try:
        for sig in forwarded:
            previous[sig] = signal.signal(sig, stop)
        mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
        from vllm_evidence._capture.process import LauncherStopped, SignalRelay
        from vllm_evidence._cli._output import fail
        from vllm_evidence._launch import launch
        from vllm_evidence.errors import InputError

        try:
            relay = SignalRelay()
            relay.install()  # the same, until a child exists; then forwarded
            if stopping:  # taken while the launcher was importing
                return 128 + stopping[0]
            command = list(args.command)
            if command and command[0] == "--":
                command = command[1:]
            try:
                if args.serve is None:
                    _without_serve(args)
                    return launch(
                        command,
                        receipt=args.receipt,
                        log=args.log,
                        follow_symlinks=args.follow_symlinks,
                        signals=relay,
                        signing_key=_signing_key(args),
                    )
                from vllm_evidence._gate.launcher import launch_gate
                from vllm_evidence._gate.loop import parse_interval

                interval = 5.0 if args.interval is None else parse_interval(args.interval)
                _signing_key(args)  # a key file given with --serve is refused
                return launch_gate(
                    command,
                    serve=args.serve,
                    required=args.require,
                    interval_s=interval,
                    canary=args.canary,
                    receipt=args.receipt,
                    log=args.log,
                    follow_symlinks=args.follow_symlinks,
                    signals=relay,
                )
            except InputError as exc:
                return fail(PROG, str(exc))
        except LauncherStopped as exc:
            return 128 + exc.signum
    except KeyboardInterrupt:  # SIGINT before `stop` was installed
        return 128 + signal.SIGINT
    finally:
        stopping.append(0)  # `stop` keeps nothing more from here
        if relay is not None:
            relay.uninstall()  # gives back `stop`, put back below
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
