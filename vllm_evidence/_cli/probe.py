"""``vllm-evidence probe URL [URL …]``: read live front doors and decide."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_evidence._cli._output import fail
from vllm_evidence._cli._report import add_report_arguments, gate_one, print_report

if TYPE_CHECKING:
    from vllm_evidence._capture.batch import CaptureBatch
    from vllm_evidence._capture.signing import SigningKey

from vllm_evidence._cli._fleet import (
    PROG,
    FleetTarget,
    _save,
    _verify,
    add_receipt_key_argument,
    read_log,
    receipt_public_key,
    run_fleet,
)

EPILOG = """\
examples:
  vllm-evidence probe http://127.0.0.1:8000
  vllm-evidence probe http://127.0.0.1:8000 --startup-log vllm.log --receipt vllm.receipt \
      --require parallel capacity health_coverage
  vllm-evidence probe http://127.0.0.1:8000 --startup-log vllm.log --receipt vllm.receipt \
      --receipt-public-key receipt-public.pem --require parallel capacity health_coverage
  VLLM_KEY=... vllm-evidence probe https://gpu-7:8000 --api-key-env VLLM_KEY --save capture/
  vllm-evidence probe http://a:8000 --save capture/ --sign-key capture-signing.pem
  vllm-evidence probe http://a:8000 http://b:8000 http://c:8000 --json
  vllm-evidence probe --targets fleet.txt --receipt-public-key receipt-public.pem --json

A targets file is one server a line: its URL, then optionally log=PATH (its startup log)
and receipt=PATH (its launch receipt), paths relative to the file (blank lines and #
comments skipped):  http://10.0.0.7:8000 log=logs/a.log receipt=logs/a.receipt

With several servers, --json prints one line per server as each one finishes (each line
names its "target"; lines of several runs concatenate into one fleet), and the table
lists the servers in the order given.  No server slows another: every request runs
on one event loop under its own --timeout, and a server's answers are parsed and
assessed after, in a worker process, so a server whose bodies are costly to parse
cannot make another time out.  Memory is bounded in all, not per server: the response
bodies of every server, being read or waiting to be assessed, stay within
--memory-budget (1024 MiB by default; the command and its two workers take at most about
512 MiB more); a request that would pass it waits before it is sent (its --timeout does
not count the wait) and is never refused.  Each server read at once holds up to six
connections: a --concurrency the open-file limit (ulimit -n) cannot hold is lowered,
with a note on stderr.  For a fleet beyond one process, shard the list and run one
probe per shard: split -n l/4 fleet.txt shard. && for f in shard.*; do vllm-evidence
probe --targets "$f" --json > "$f.jsonl" & done; wait; cat shard.*.jsonl > fleet.jsonl

Only GET requests are sent, only to /version, /v1/models, /metrics, /health and (unless
--no-development-routes) /server_info and /get_world_size.  The API key is sent as a
bearer header and never printed or saved.
exit status: 0 assessed (whatever the verdicts), 2 bad usage or unreadable input,
3 a --require'd claim is not established for the serving process.  A server that does
not answer (nothing listens, refused, timed out, TLS failed) or answers only errors is
assessed all the same: the report (or document) refuses every claim about the serving
process with front_door_unreachable or front_door_not_answering and shows what each
request ended in, and one line on stderr says so.  A startup log counts for the server
only with the launch receipt `vllm-evidence launch` wrote for it (--receipt), signed by
the launcher's key and verified under its public key (--receipt-public-key, or the PEM
text in VLLM_EVIDENCE_RECEIPT_PUBLIC_KEY), whose start time the probe then reads on
/metrics; without it the log's facts stay claims about its launch.  An unsigned receipt,
one read without the public key, one signed by another key and an edited one join
nothing, each refused by name.  The gate (`vllm-evidence launch --serve`) joins its own
child's log in process and needs no receipt: the recommended way.
"""


def register(subparsers: Any) -> None:
    """Add the ``probe`` subcommand."""
    parser = subparsers.add_parser(
        "probe",
        help="probe live vLLM servers (GET only) and decide what their evidence establishes",
        description=(
            "Read each server's front door in one bracketed batch of GET requests, "
            "optionally with its startup log, and report what the evidence does and does "
            "not establish."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("urls", nargs="*", metavar="URL", help="a vLLM server's base URL")
    parser.add_argument(
        "--targets",
        metavar="FILE",
        help="more servers, one a line: a URL, then optionally log=PATH and receipt=PATH "
        "('-': standard input; blank lines and # comments skipped)",
    )
    parser.add_argument("--startup-log", metavar="FILE", help="the server's startup log")
    parser.add_argument(
        "--launch", type=int, metavar="N", help="which launch of the log (default: the last)"
    )
    parser.add_argument(
        "--receipt",
        metavar="FILE",
        help="the launch receipt `vllm-evidence launch` wrote for the log (joins the log "
        "to the server when its signature verifies and its start time is the one /metrics "
        "shows)",
    )
    add_receipt_key_argument(parser)
    key = parser.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", metavar="VAR", help="read the API key from $VAR")
    key.add_argument("--api-key-file", metavar="F", help="read the API key from file F")
    parser.add_argument(
        "--no-development-routes",
        action="store_true",
        help="do not read /server_info or /get_world_size",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="per request (default 10)"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=64,
        metavar="N",
        help="servers probed at once (default 64)",
    )
    parser.add_argument(
        "--memory-budget",
        type=int,
        default=None,
        metavar="MIB",
        help="with several servers: the response bodies all of them may hold at once, "
        "being read or waiting to be assessed (default 1024; at least 80, one server's "
        "worst case); a server that would pass it waits, it is never refused",
    )
    parser.add_argument("--save", metavar="DIR", help="write the capture directory (or dirs)")
    sign = parser.add_mutually_exclusive_group()
    sign.add_argument(
        "--sign-key",
        metavar="FILE",
        help="with --save: sign the manifest with this Ed25519 private key (PEM)",
    )
    sign.add_argument(
        "--sign-key-env",
        metavar="VAR",
        help="with --save: sign the manifest with the Ed25519 private key whose PEM text is "
        "in $VAR",
    )
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    tls.add_argument(
        "--ca-cert", metavar="FILE", help="verify TLS against this CA file or directory"
    )
    add_report_arguments(parser)
    parser.set_defaults(handler=run)


#: The largest key file read (an API key is one short line).
_KEY_FILE_LIMIT = 64 * 1024
#: The largest ``--targets`` list read (a million URLs of 60 characters).
_TARGETS_LIMIT = 64 * 1024 * 1024


def _api_key(args: argparse.Namespace) -> str | None:
    """The key from the environment or a file; raises InputError without echoing it."""
    from vllm_evidence.errors import InputError

    if args.api_key_env:
        value = os.environ.get(args.api_key_env)
        if not value:
            state = "is not set" if value is None else "is empty"
            msg = f"--api-key-env: environment variable {args.api_key_env} {state}"
            raise InputError(msg)
        return value.strip()
    if args.api_key_file:
        from vllm_evidence._capture._files import NamedFileError, read_named_file

        try:
            # A key is one short line: a regular file read to a bounded size, so
            # /dev/zero, a FIFO or a huge file is refused instead of waited on or read.
            raw = read_named_file(args.api_key_file, _KEY_FILE_LIMIT, what="--api-key-file")
            text = raw.decode("utf-8")
        except NamedFileError as exc:
            msg = f"--api-key-file: cannot read {args.api_key_file}: {exc.problem}"
            raise InputError(msg) from None
        except UnicodeDecodeError as exc:
            msg = f"--api-key-file: cannot read {args.api_key_file}: {type(exc).__name__}"
            raise InputError(msg) from None
        lines = [line for line in text.strip().splitlines() if line.strip()]
        if not lines:
            msg = f"--api-key-file: {args.api_key_file} is empty"
            raise InputError(msg)
        if len(lines) > 1:
            msg = f"--api-key-file: {args.api_key_file} must hold one key on one line"
            raise InputError(msg)
        return lines[0].strip()
    return None


_TARGET_KEYS = ("log", "receipt")


def _target_line(line: str, root: Path, where: str) -> FleetTarget:
    """A targets file line: the URL, then ``log=PATH`` and ``receipt=PATH`` (each at most
    once, relative to ``root``).  A line whose words after the first are not all such
    fields is one target as typed (reported as not a URL, beside the others)."""
    from vllm_evidence.errors import InputError

    fields = line.split()
    given: dict[str, str] = {}
    for field in fields[1:]:
        key, equals, value = field.partition("=")
        if not equals or key not in _TARGET_KEYS:
            return FleetTarget(line)
        if not value or key in given:
            msg = f"--targets {where}: after the URL, log=PATH and receipt=PATH, each once"
            raise InputError(msg)
        given[key] = value if Path(value).is_absolute() else str(root / value)
    if "receipt" in given and "log" not in given:
        msg = f"--targets {where}: receipt= goes with log= (a receipt witnesses a log)"
        raise InputError(msg)
    return FleetTarget(fields[0], given.get("log"), given.get("receipt"))


def _targets(args: argparse.Namespace) -> list[FleetTarget]:
    """The URLs given, then the servers of ``--targets`` (a file, or ``-`` for stdin)."""
    from vllm_evidence.errors import InputError

    targets = [FleetTarget(url) for url in args.urls]
    if args.targets is None:
        return targets
    from vllm_evidence._capture._files import NamedFileError, read_named_file

    try:
        if args.targets == "-":
            raw = sys.stdin.buffer.read(_TARGETS_LIMIT + 1)
            if len(raw) > _TARGETS_LIMIT:
                msg = f"--targets: standard input holds more than {_TARGETS_LIMIT:,} bytes"
                raise InputError(msg)
        else:
            raw = read_named_file(args.targets, _TARGETS_LIMIT, what="--targets")
        text = raw.decode("utf-8")
    except NamedFileError as exc:
        msg = f"--targets: cannot read {args.targets}: {exc.problem} (- reads standard input)"
        raise InputError(msg) from None
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"--targets: cannot read {args.targets}: {type(exc).__name__}"
        raise InputError(msg) from None
    root = Path.cwd() if args.targets == "-" else Path(args.targets).parent
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            targets.append(_target_line(stripped, root, f"line {number}"))
    return targets


async def _probe_one(url: str, args: argparse.Namespace, key: str | None) -> CaptureBatch:
    from vllm_evidence._capture.http import probe

    return await probe(
        url,
        api_key=key,
        timeout=args.timeout,
        deadline=max(args.timeout * 3, 30.0),
        development_routes=not args.no_development_routes,
        verify=_verify(args),
    )


def _sign_key(args: argparse.Namespace) -> SigningKey | None:
    """The capture's Ed25519 signing key (``--sign-key FILE`` or ``--sign-key-env VAR``)."""
    from vllm_evidence.errors import InputError

    if args.sign_key is None and args.sign_key_env is None:
        return None
    option = "--sign-key" if args.sign_key is not None else "--sign-key-env"
    if not args.save:
        msg = f"{option} signs a saved capture: give --save DIR"
        raise InputError(msg)
    from vllm_evidence._capture.signing import environment_signing_key, read_signing_key

    if args.sign_key is not None:
        return read_signing_key(args.sign_key, what="--sign-key")
    return environment_signing_key("--sign-key-env", args.sign_key_env)


def run(args: argparse.Namespace) -> int:
    """Probe every URL, assess, print, and gate on ``--require``."""
    import asyncio

    from vllm_evidence._adapters.receipt import read_launch_receipt
    from vllm_evidence._assessment import assess
    from vllm_evidence._readback import readback_from_batch
    from vllm_evidence.errors import InputError

    if not math.isfinite(args.timeout) or args.timeout <= 0 or args.concurrency <= 0:
        return fail(
            PROG, "--timeout must be a positive finite number of seconds, --concurrency positive"
        )
    try:
        targets = _targets(args)
    except InputError as exc:
        return fail(PROG, str(exc))
    if not targets:
        return fail(PROG, "the following arguments are required: URL (or --targets FILE)")
    if args.startup_log and len(targets) > 1:
        return fail(
            PROG,
            "--startup-log goes with one URL: a log describes one server (in a targets "
            "file, give each server's as log=PATH receipt=PATH)",
        )
    if args.receipt and not args.startup_log:
        return fail(PROG, "--receipt goes with --startup-log: a receipt witnesses a log")
    if args.startup_log and targets[0].startup_log is not None:
        return fail(PROG, "--startup-log and the targets file's log= both name the server's log")
    if args.startup_log:
        targets = [FleetTarget(targets[0].url, args.startup_log, args.receipt)]
    from vllm_evidence._scrub import SHORT_SECRET, remember

    try:
        key = _api_key(args)
        remember(key)  # nothing printed or saved from here on carries it
        if key is not None and len(key) < SHORT_SECRET:
            sys.stderr.write(
                f"{PROG}: note: the API key has fewer than {SHORT_SECRET} characters: it is "
                "guessable, and it is scrubbed from output only where it stands alone\n"
            )
        sign_key = _sign_key(args)
        receipt_key = receipt_public_key(
            args.receipt_public_key, receipts=any(t.receipt is not None for t in targets)
        )
        if len(targets) > 1:
            return run_fleet(targets, args, key, sign_key, receipt_key)
        (one,) = targets
        # The receipt first, then the log up to the receipt's length: the log keeps
        # growing after the receipt is written, and the receipt digests only its prefix.
        receipt = (
            read_launch_receipt(one.receipt, verification_key=receipt_key) if one.receipt else None
        )
        log = (
            read_log(one.startup_log, None if receipt is None else receipt.log_bytes)
            if one.startup_log
            else None
        )
        from vllm_evidence._capture.http import clean_target

        target = clean_target(one.url)
        batch = asyncio.run(_probe_one(one.url, args, key))
    except InputError as exc:
        return fail(PROG, _scrub(str(exc), args))
    # A front door that answered nothing (or only errors) is a state, not an error: it is
    # saved and assessed like any other, every serving claim refused with its reason.
    save_failure = _save(batch, Path(args.save), one.startup_log, sign_key) if args.save else None
    try:
        assessment = assess(readback_from_batch(batch), log, launch=args.launch, receipt=receipt)
    except InputError as exc:
        return fail(PROG, str(exc))
    print_report(assessment, json_out=args.json, target=target)
    status = gate_one(PROG, assessment, args.require, target)
    if save_failure is not None:
        return fail(PROG, _scrub(save_failure, args))  # the report above stands; the save did not
    return status


def _scrub(text: str, args: argparse.Namespace) -> str:
    """Remove the API key from a message, whatever produced it."""
    try:
        key = _api_key(args)
    except Exception:  # noqa: BLE001  # scrubbing must never raise
        return text
    return text.replace(key, "***") if key else text
