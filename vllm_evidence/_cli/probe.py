"""``vllm-evidence probe URL [URL …]``: read live front doors and decide."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_evidence._cli._output import fail, styled
from vllm_evidence._cli._report import (
    add_report_arguments,
    check_requirements,
    print_fleet,
    print_report,
)

if TYPE_CHECKING:
    from vllm_evidence.adapters.startup_log import StartupLog
    from vllm_evidence.assessment import Assessment
    from vllm_evidence.capture.batch import CaptureBatch

PROG = "vllm-evidence probe"

EPILOG = """\
examples:
  vllm-evidence probe http://127.0.0.1:8000
  vllm-evidence probe http://127.0.0.1:8000 --startup-log vllm.log --receipt vllm.receipt \
      --require parallel capacity health_coverage
  VLLM_KEY=... vllm-evidence probe https://gpu-7:8000 --api-key-env VLLM_KEY --save capture/
  vllm-evidence probe http://a:8000 http://b:8000 http://c:8000 --json

Only GET requests are sent, only to /version, /v1/models, /metrics, /health and (unless
--no-development-routes) /server_info and /get_world_size.  The API key is sent as a
bearer header and never printed or saved.
exit status: 0 assessed (whatever the verdicts), 2 bad usage or unreadable input,
3 a --require'd claim is not established for the serving process (also when nothing
answered the probe).  A startup log counts for the server only with the launch receipt
`vllm-evidence launch` wrote for it (--receipt), whose start time the probe then reads
on /metrics; without it the log's facts stay claims about its launch.
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
    parser.add_argument("urls", nargs="+", metavar="URL", help="a vLLM server's base URL")
    parser.add_argument("--startup-log", metavar="FILE", help="the server's startup log")
    parser.add_argument(
        "--launch", type=int, metavar="N", help="which launch of the log (default: the last)"
    )
    parser.add_argument(
        "--receipt",
        metavar="FILE",
        help="the launch receipt `vllm-evidence launch` wrote for the log (joins the log "
        "to the server when its start time is the one /metrics shows)",
    )
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
        "--concurrency", type=int, default=8, metavar="N", help="servers probed at once"
    )
    parser.add_argument("--save", metavar="DIR", help="write the capture directory (or dirs)")
    parser.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    add_report_arguments(parser)
    parser.set_defaults(handler=run)


#: The largest key file read (an API key is one short line).
_KEY_FILE_LIMIT = 64 * 1024


def _api_key(args: argparse.Namespace) -> str | None:
    """The key from the environment or a file; raises InputError without echoing it."""
    from vllm_evidence.errors import InputError

    if args.api_key_env:
        value = os.environ.get(args.api_key_env)
        if not value:
            msg = f"--api-key-env: environment variable {args.api_key_env} is not set"
            raise InputError(msg)
        return value.strip()
    if args.api_key_file:
        try:
            # A key is one short line: read a bounded prefix, so /dev/zero or a huge file
            # is refused instead of filling memory.
            with Path(args.api_key_file).open("rb") as handle:
                raw = handle.read(_KEY_FILE_LIMIT + 1)
            if len(raw) > _KEY_FILE_LIMIT:
                msg = (
                    f"--api-key-file: {args.api_key_file} is larger than "
                    f"{_KEY_FILE_LIMIT} bytes; a key file holds one key"
                )
                raise InputError(msg)
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
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


def _read_log(path: str, first_bytes: int | None = None) -> StartupLog:
    from vllm_evidence.adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence.errors import InputError

    log = read_startup_log(path, first_bytes=first_bytes)
    if isinstance(log, LogReadFailure):
        raise InputError(log.describe())
    return log


def _unreachable(batch: CaptureBatch) -> str | None:
    """The transport failure when no request of the batch got an answer."""
    from vllm_evidence.capture.batch import Transport

    exchanges = batch.all_exchanges()
    if all(e.transport is not Transport.ANSWERED for e in exchanges):
        detail = exchanges[0].detail or exchanges[0].transport.value
        return f"cannot read {batch.target}: {detail}"
    return None


async def _probe_all(
    urls: list[str], args: argparse.Namespace, key: str | None
) -> list[tuple[str, CaptureBatch | str]]:
    import asyncio

    from vllm_evidence.capture.http import clean_target, probe
    from vllm_evidence.errors import InputError

    limit = asyncio.Semaphore(max(1, args.concurrency))
    results: list[tuple[str, CaptureBatch | str]] = []

    progress: Any = None
    task: Any = None
    if styled() and len(urls) > 1:
        from rich.progress import Progress

        progress = Progress(transient=True)
        progress.start()
        task = progress.add_task("probing", total=len(urls))

    async def one(url: str) -> tuple[str, CaptureBatch | str]:
        try:
            target = clean_target(url)
        except InputError as exc:
            return url, str(exc)
        async with limit:
            batch = await probe(
                url,
                api_key=key,
                timeout=args.timeout,
                deadline=max(args.timeout * 3, 30.0),
                development_routes=not args.no_development_routes,
                verify=not args.insecure,
            )
        if progress is not None:
            progress.advance(task)
        failure = _unreachable(batch)
        return target, failure if failure is not None else batch

    try:
        results = list(await asyncio.gather(*(one(u) for u in urls)))
    finally:
        if progress is not None:
            progress.stop()
    return results


def _save(batch: CaptureBatch, directory: Path) -> None:
    from vllm_evidence.capture.directory import save

    save(batch, directory)


def _slug(target: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in target.split("://", 1)[-1])


def run(args: argparse.Namespace) -> int:
    """Probe every URL, assess, print, and gate on ``--require``."""
    import asyncio

    from vllm_evidence.adapters.receipt import read_launch_receipt
    from vllm_evidence.assessment import assess
    from vllm_evidence.errors import InputError
    from vllm_evidence.readback import readback_from_batch

    if not math.isfinite(args.timeout) or args.timeout <= 0 or args.concurrency <= 0:
        return fail(
            PROG, "--timeout must be a positive finite number of seconds, --concurrency positive"
        )
    if args.startup_log and len(args.urls) > 1:
        return fail(PROG, "--startup-log goes with one URL: a log describes one server")
    if args.receipt and not args.startup_log:
        return fail(PROG, "--receipt goes with --startup-log: a receipt witnesses a log")
    try:
        key = _api_key(args)
        # The receipt first, then the log up to the receipt's length: the log keeps
        # growing after the receipt is written, and the receipt digests only its prefix.
        receipt = read_launch_receipt(args.receipt) if args.receipt else None
        log = (
            _read_log(args.startup_log, None if receipt is None else receipt.log_bytes)
            if args.startup_log
            else None
        )
        if len(args.urls) == 1:
            from vllm_evidence.capture.http import clean_target

            clean_target(args.urls[0])
        probed = asyncio.run(_probe_all(args.urls, args, key))
    except InputError as exc:
        return fail(PROG, _scrub(str(exc), args))
    if len(probed) == 1:
        target, batch = probed[0]
        if isinstance(batch, str):
            # Nothing answered: no claim about a serving process is established.
            return fail(PROG, _scrub(batch, args), 3 if args.require else 2)
        if args.save:
            try:
                _save(batch, Path(args.save))
            except (InputError, OSError) as exc:
                return fail(PROG, f"--save: {_scrub(str(exc), args)}")
        try:
            assessment = assess(
                readback_from_batch(batch), log, launch=args.launch, receipt=receipt
            )
        except InputError as exc:
            return fail(PROG, str(exc))
        print_report(assessment, json_out=args.json, target=target)
        return check_requirements([assessment], args.require)
    results: list[tuple[str, Assessment | str]] = []
    for target, batch in probed:
        if isinstance(batch, str):
            results.append((target, _scrub(batch, args)))
            continue
        if args.save:
            try:
                _save(batch, Path(args.save) / _slug(target))
            except (InputError, OSError) as exc:
                return fail(PROG, f"--save: {_scrub(str(exc), args)}")
        results.append((target, assess(readback_from_batch(batch), None)))
    print_fleet(results, json_out=args.json)
    assessed = [r for _, r in results if not isinstance(r, str)]
    if args.require and len(assessed) < len(results):
        sys.stderr.write("vllm-evidence: some servers could not be read\n")
        return 3
    return check_requirements(assessed, args.require)


def _scrub(text: str, args: argparse.Namespace) -> str:
    """Remove the API key from a message, whatever produced it."""
    try:
        key = _api_key(args)
    except Exception:  # noqa: BLE001  # scrubbing must never raise
        return text
    return text.replace(key, "***") if key else text
