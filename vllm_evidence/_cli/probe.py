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
    fleet_cells,
    fleet_json_line,
    print_fleet_table,
    print_report,
    refused_claims,
    report_refused,
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
  SIGN=... vllm-evidence probe http://a:8000 --save capture/ --sign-key-env SIGN
  vllm-evidence probe http://a:8000 http://b:8000 http://c:8000 --json
  vllm-evidence probe --targets fleet.txt --concurrency 64 --json > fleet.jsonl

With several servers, --json prints one line per server as each one finishes (each line
names its "target"; lines of several runs concatenate into one fleet), and the table
lists the servers in the order given.  Memory is bounded by --concurrency, not by the
number of servers.  For a fleet beyond one process, shard the list and run one probe per
shard: split -n l/4 fleet.txt shard. && for f in shard.*; do vllm-evidence probe
--targets "$f" --json > "$f.jsonl" & done; wait; cat shard.*.jsonl > fleet.jsonl

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
    parser.add_argument("urls", nargs="*", metavar="URL", help="a vLLM server's base URL")
    parser.add_argument(
        "--targets",
        metavar="FILE",
        help="more URLs, one a line ('-': standard input; blank lines and # comments skipped)",
    )
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
    parser.add_argument(
        "--sign-key-env",
        metavar="VAR",
        help="with --save: sign the manifest with the key in $VAR (HMAC-SHA256)",
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


def _targets(args: argparse.Namespace) -> list[str]:
    """The URLs given, then those of ``--targets`` (a file, or ``-`` for stdin)."""
    from vllm_evidence.errors import InputError

    urls = list(args.urls)
    if args.targets is None:
        return urls
    try:
        if args.targets == "-":
            text = sys.stdin.read()
        else:
            text = Path(args.targets).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"--targets: cannot read {args.targets}: {type(exc).__name__}"
        raise InputError(msg) from None
    for line in text.splitlines():
        url = line.strip()
        if url and not url.startswith("#"):
            urls.append(url)
    return urls


def _verify(args: argparse.Namespace) -> bool | str:
    return args.ca_cert if args.ca_cert else not args.insecure


async def _probe_one(url: str, args: argparse.Namespace, key: str | None) -> CaptureBatch:
    from vllm_evidence.capture.http import probe

    return await probe(
        url,
        api_key=key,
        timeout=args.timeout,
        deadline=max(args.timeout * 3, 30.0),
        development_routes=not args.no_development_routes,
        verify=_verify(args),
    )


class _Fleet:
    """Probe many servers through one client, handling each result as it completes.

    At most ``--concurrency`` batches are alive at once: each is saved, assessed and
    reduced to its JSON line (printed at once) or its table row (kept; printed in input
    order at the end) as soon as its server has been read.
    """

    def __init__(
        self, urls: list[str], args: argparse.Namespace, key: str | None, sign_key: bytes | None
    ) -> None:
        self.urls = urls
        self.args = args
        self.key = key
        self.sign_key = sign_key
        self.folders = _folders([_cleaned_or_raw(url) for url in urls])
        self.save_failures: list[str] = []
        self.rows: list[tuple[int, list[str]]] = []
        self.refused: set[str] = set()
        self.assessed = 0
        self.unreadable = 0
        self.refused_servers = 0
        self._live: Any = None
        self._console: Any = None

    async def run(self) -> None:
        import asyncio

        from vllm_evidence.capture.http import new_client

        args = self.args
        pending = iter(enumerate(self.urls))
        if styled():
            from rich.console import Console
            from rich.live import Live

            # On a terminal the table fills in as servers finish, under a line of counts;
            # the live view is then replaced by the whole table in input order.
            self._console = Console()
            self._live = Live(
                console=self._console,
                get_renderable=self._frame,
                refresh_per_second=8,
                transient=True,
            )
            self._live.start()
        try:
            async with new_client(verify=_verify(args), timeout=args.timeout) as client:

                async def worker() -> None:
                    for index, url in pending:
                        await self._one(index, url, client)

                async with asyncio.TaskGroup() as group:
                    for _ in range(min(args.concurrency, len(self.urls))):
                        group.create_task(worker())
        finally:
            if self._live is not None:
                self._live.stop()

    def progress_line(self) -> str:
        """Servers done, of all; how many were assessed, unreadable, refused a claim."""
        done = self.assessed + self.unreadable
        refused = (
            f", {self.refused_servers} refused a --require'd claim" if self.args.require else ""
        )
        return (
            f"{done}/{len(self.urls)} servers done: {self.assessed} assessed, "
            f"{self.unreadable} failed{refused}"
        )

    def _frame(self) -> Any:
        """The live view: the rows finished so far (as many as the terminal shows, the
        latest last) and the progress line."""
        from rich.console import Group
        from rich.markup import escape
        from rich.table import Table
        from rich.text import Text

        from vllm_evidence._cli._report import FLEET_COLUMNS
        from vllm_evidence._scrub import scrub

        line = Text(self.progress_line(), style="bold")
        if self.args.json:
            return line
        room = max(1, self._console.height - 6)
        table = Table(show_lines=False)
        for column in FLEET_COLUMNS:
            table.add_column(column, overflow="fold")
        for _, cells in self.rows[-room:]:
            table.add_row(*(escape(scrub(cell)) for cell in cells))
        return Group(table, line)

    async def _one(self, index: int, url: str, client: Any) -> None:
        from vllm_evidence._scrub import scrub
        from vllm_evidence.capture.http import clean_target, probe
        from vllm_evidence.errors import InputError

        args = self.args
        try:
            target = clean_target(url)
        except InputError as exc:
            # The row's label is what the person typed, less any password in it.
            self._done(index, scrub(url), str(exc))
            return
        batch = await probe(
            url,
            api_key=self.key,
            timeout=args.timeout,
            deadline=max(args.timeout * 3, 30.0),
            development_routes=not args.no_development_routes,
            client=client,
        )
        failure = _unreachable(batch)
        if failure is not None:
            self._done(index, target, failure)
            return
        if args.save:
            # A failed save is reported beside the results, never instead of them.
            failure = _save(batch, Path(args.save) / self.folders[index], args, self.sign_key)
            if failure is not None:
                self.save_failures.append(self._scrub(failure))
        from vllm_evidence.assessment import assess
        from vllm_evidence.readback import readback_from_batch

        self._done(index, target, assess(readback_from_batch(batch), None))

    def _scrub(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def _done(self, index: int, target: str, result: Assessment | str) -> None:
        if isinstance(result, str):
            result = self._scrub(result)
            self.unreadable += 1
        else:
            self.assessed += 1
            refused = refused_claims(result, self.args.require)
            self.refused.update(refused)
            self.refused_servers += bool(refused)
        if self.args.json:
            sys.stdout.write(fleet_json_line(target, result))
            sys.stdout.flush()
        else:
            self.rows.append((index, fleet_cells(target, result)))


def _fleet(
    urls: list[str], args: argparse.Namespace, key: str | None, sign_key: bytes | None
) -> int:
    import asyncio

    if args.save:
        try:
            Path(args.save).mkdir(exist_ok=True)
        except OSError as exc:
            return fail(PROG, f"--save {args.save}: {exc.strerror}")
    fleet = _Fleet(urls, args, key, sign_key)
    asyncio.run(fleet.run())
    if not args.json:
        print_fleet_table([cells for _, cells in sorted(fleet.rows, key=lambda r: r[0])])
    for failure in fleet.save_failures:
        fail(PROG, failure)
    if fleet.save_failures:
        return 2
    if args.require and fleet.unreadable:
        sys.stderr.write("vllm-evidence: some servers could not be read\n")
        return 3
    return report_refused(fleet.refused)


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


def _cleaned_or_raw(url: str) -> str:
    """The URL without credentials, for naming its folder (a bad URL is never saved)."""
    from vllm_evidence.capture.http import clean_target
    from vllm_evidence.errors import InputError

    try:
        return clean_target(url)
    except InputError:
        return url


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

    from vllm_evidence.adapters.receipt import read_launch_receipt
    from vllm_evidence.assessment import assess
    from vllm_evidence.errors import InputError
    from vllm_evidence.readback import readback_from_batch

    if not math.isfinite(args.timeout) or args.timeout <= 0 or args.concurrency <= 0:
        return fail(
            PROG, "--timeout must be a positive finite number of seconds, --concurrency positive"
        )
    try:
        urls = _targets(args)
    except InputError as exc:
        return fail(PROG, str(exc))
    if not urls:
        return fail(PROG, "the following arguments are required: URL (or --targets FILE)")
    if args.startup_log and len(urls) > 1:
        return fail(PROG, "--startup-log goes with one URL: a log describes one server")
    if args.receipt and not args.startup_log:
        return fail(PROG, "--receipt goes with --startup-log: a receipt witnesses a log")
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
        if len(urls) > 1:
            return _fleet(urls, args, key, sign_key)
        # The receipt first, then the log up to the receipt's length: the log keeps
        # growing after the receipt is written, and the receipt digests only its prefix.
        receipt = read_launch_receipt(args.receipt) if args.receipt else None
        log = (
            _read_log(args.startup_log, None if receipt is None else receipt.log_bytes)
            if args.startup_log
            else None
        )
        from vllm_evidence.capture.http import clean_target

        target = clean_target(urls[0])
        batch = asyncio.run(_probe_one(urls[0], args, key))
    except InputError as exc:
        return fail(PROG, _scrub(str(exc), args))
    failure = _unreachable(batch)
    if failure is not None:
        # Nothing answered: no claim about a serving process is established.
        return fail(PROG, _scrub(failure, args), 3 if args.require else 2)
    save_failure = _save(batch, Path(args.save), args, sign_key) if args.save else None
    try:
        assessment = assess(readback_from_batch(batch), log, launch=args.launch, receipt=receipt)
    except InputError as exc:
        return fail(PROG, str(exc))
    print_report(assessment, json_out=args.json, target=target)
    status = check_requirements([assessment], args.require)
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
