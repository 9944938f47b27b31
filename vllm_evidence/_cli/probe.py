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
  vllm-evidence probe http://127.0.0.1:8000 --startup-log vllm.log --require parallel capacity
  VLLM_KEY=... vllm-evidence probe https://gpu-7:8000 --api-key-env VLLM_KEY --save capture/
  SIGN=... vllm-evidence probe http://a:8000 --save capture/ --sign-key-env SIGN
  vllm-evidence probe http://a:8000 http://b:8000 http://c:8000 --json

Only GET requests are sent, only to /version, /v1/models, /metrics, /health and (unless
--no-development-routes) /server_info and /get_world_size.  The API key is sent as a
bearer header and never printed or saved.
exit status: 0 assessed (whatever the verdicts), 2 bad usage or unreadable input,
3 a --require'd claim is not established.
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
    parser.add_argument(
        "--sign-key-env",
        metavar="VAR",
        help="with --save: sign the manifest with the key in $VAR (HMAC-SHA256)",
    )
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


def _read_log(path: str) -> StartupLog:
    from vllm_evidence.adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence.errors import InputError

    log = read_startup_log(path)
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

    from vllm_evidence._scrub import scrub
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
            # The row's label is what the person typed, less any password in it.
            return scrub(url), str(exc)
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


def _save(
    batch: CaptureBatch, directory: Path, args: argparse.Namespace, sign_key: bytes | None
) -> str | None:
    """Save one capture; the failure as a line, or ``None``.  The capture is kept either
    way: a failed save is reported beside the report, never instead of it."""
    from vllm_evidence.capture.directory import save
    from vllm_evidence.errors import InputError

    try:
        save(batch, directory, startup_log=args.startup_log, sign_key=sign_key)
    except (InputError, OSError) as exc:
        return f"--save {directory}: {exc}"
    return None


def _sign_key(args: argparse.Namespace) -> bytes | None:
    from vllm_evidence.errors import InputError

    if args.sign_key_env is None:
        return None
    if not args.save:
        msg = "--sign-key-env signs a saved capture: give --save DIR"
        raise InputError(msg)
    value = os.environ.get(args.sign_key_env)
    if not value:
        msg = f"--sign-key-env: environment variable {args.sign_key_env} is not set"
        raise InputError(msg)
    return value.encode("utf-8", "surrogateescape")


def _slug(target: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in target.split("://", 1)[-1])


def _folders(targets: list[str]) -> list[str]:
    """One distinct folder name per server (``host_8000``, then ``host_8000-2``, …)."""
    taken: set[str] = set()
    names = []
    for target in targets:
        base = _slug(target) or "server"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        names.append(name)
    return names


def run(args: argparse.Namespace) -> int:
    """Probe every URL, assess, print, and gate on ``--require``."""
    import asyncio

    from vllm_evidence._scrub import remember
    from vllm_evidence.assessment import assess
    from vllm_evidence.errors import InputError
    from vllm_evidence.readback import readback_from_batch

    if not math.isfinite(args.timeout) or args.timeout <= 0 or args.concurrency <= 0:
        return fail(
            PROG, "--timeout must be a positive finite number of seconds, --concurrency positive"
        )
    if args.startup_log and len(args.urls) > 1:
        return fail(PROG, "--startup-log goes with one URL: a log describes one server")
    try:
        key = _api_key(args)
        remember(key)  # nothing printed or saved from here on carries it
        sign_key = _sign_key(args)
        log = _read_log(args.startup_log) if args.startup_log else None
        if len(args.urls) == 1:
            from vllm_evidence.capture.http import clean_target

            clean_target(args.urls[0])
        probed = asyncio.run(_probe_all(args.urls, args, key))
    except InputError as exc:
        return fail(PROG, str(exc))
    if len(probed) == 1:
        target, batch = probed[0]
        if isinstance(batch, str):
            return fail(PROG, batch)
        save_failure = _save(batch, Path(args.save), args, sign_key) if args.save else None
        try:
            assessment = assess(readback_from_batch(batch), log, launch=args.launch)
        except InputError as exc:
            return fail(PROG, str(exc))
        print_report(assessment, json_out=args.json, target=target)
        status = check_requirements([assessment], args.require)
        if save_failure is not None:
            return fail(PROG, save_failure)  # the report above stands; the save did not
        return status
    results: list[tuple[str, Assessment | str]] = []
    save_failures: list[str] = []
    saving = bool(args.save)
    if saving:
        try:
            Path(args.save).mkdir(exist_ok=True)
        except OSError as exc:
            save_failures.append(f"--save {args.save}: {exc.strerror}")
            saving = False
    folders = _folders([target for target, _ in probed])
    for (target, batch), folder in zip(probed, folders, strict=True):
        if isinstance(batch, str):
            results.append((target, batch))
            continue
        if saving:
            failure = _save(batch, Path(args.save) / folder, args, sign_key)
            if failure is not None:
                save_failures.append(failure)
        results.append((target, assess(readback_from_batch(batch), None)))
    print_fleet(results, json_out=args.json)
    assessed = [r for _, r in results if not isinstance(r, str)]
    for failure in save_failures:
        fail(PROG, failure)
    if save_failures:
        return 2
    if args.require and len(assessed) < len(results):
        sys.stderr.write("vllm-evidence: some servers could not be read\n")
        return 3
    return check_requirements(assessed, args.require)
